//! Finding nodes: the one place metadata is fetched. A node is located by its metadata keys,
//! never by listing chunks; a group's children come from consolidated metadata when present,
//! else from one level of listing.

use serde_json::{Map, Value};

use super::json::parse_json;
use super::{GroupNode, Node, display_in, v2, v3, validate};
use crate::error::{Result, ZarrError};
use crate::limits::Limits;
use crate::store::{ZarrStore, join_key, normalize_node_path};

/// Opens the node at `path` within `limits` (metadata documents, and the sizes the metadata
/// declares).
pub(crate) async fn open_node(store: &ZarrStore, path: &str, limits: &Limits) -> Result<Node> {
    crate::codecs::register();
    let path = normalize_node_path(path)?;
    let display = node_display(store, &path);
    if let Some(doc) = get_json(store, &join_key(&path, "zarr.json"), limits).await? {
        return open_v3(store, &path, doc, limits).await;
    }
    if let Some(zarray) = get_json(store, &join_key(&path, ".zarray"), limits).await? {
        let zattrs = get_json(store, &join_key(&path, ".zattrs"), limits).await?;
        return Ok(Node::Array(v2::array(
            store.display_location(),
            &path,
            zarray,
            zattrs,
            limits,
        )?));
    }
    if let Some(zgroup) = get_json(store, &join_key(&path, ".zgroup"), limits).await? {
        return open_v2_group(store, &path, zgroup, limits).await;
    }
    Err(ZarrError::metadata(
        display,
        "no Zarr node here: none of zarr.json, .zarray or .zgroup exists",
    ))
}

fn node_display(store: &ZarrStore, path: &str) -> String {
    display_in(store.display_location(), path)
}

async fn get_json(store: &ZarrStore, key: &str, limits: &Limits) -> Result<Option<Value>> {
    let Some(bytes) = store.get(key, limits.metadata).await? else {
        return Ok(None);
    };
    let doc = parse_json(&bytes).map_err(|e| {
        let mut message = format!("not valid JSON: {e}");
        if message.contains("hex escape") || message.contains("surrogate") {
            message.push_str(
                " (a lone UTF-16 surrogate escape such as \"\\ud800\", which zarr-python can \
                 write, is not a Unicode scalar value)",
            );
        }
        ZarrError::metadata(node_display(store, key), message)
    })?;
    Ok(Some(doc))
}

async fn open_v3(store: &ZarrStore, path: &str, doc: Value, limits: &Limits) -> Result<Node> {
    let display = node_display(store, path);
    validate::zarr_format(&display, &doc, 3)?;
    match doc.get("node_type").and_then(Value::as_str) {
        Some("array") => Ok(Node::Array(v3::array(
            store.display_location(),
            path,
            doc,
            limits,
        )?)),
        Some("group") => {
            let attributes = attributes_of(&doc);
            let mut arrays = Vec::new();
            let mut groups = Vec::new();
            let consolidated = doc
                .get("consolidated_metadata")
                .and_then(|c| c.get("metadata"))
                .and_then(Value::as_object);
            if let Some(entries) = consolidated {
                // zarr-python's inline consolidated metadata: keys are paths relative to
                // this group; direct children have no '/'.
                for (name, child) in entries.iter().filter(|(k, _)| !k.contains('/')) {
                    let child_path = join_key(path, name);
                    match child.get("node_type").and_then(Value::as_str) {
                        Some("array") => arrays.push(v3::array(
                            store.display_location(),
                            &child_path,
                            child.clone(),
                            limits,
                        )?),
                        Some("group") => groups.push(name.clone()),
                        _ => {
                            return Err(ZarrError::metadata(
                                node_display(store, &child_path),
                                "consolidated metadata entry has no valid node_type",
                            ));
                        }
                    }
                }
            } else {
                for name in store.list_children(path).await? {
                    let child_path = join_key(path, &name);
                    let key = join_key(&child_path, "zarr.json");
                    let Some(child) = get_json(store, &key, limits).await? else {
                        continue; // a directory that is not a node (e.g. a chunk prefix)
                    };
                    validate::zarr_format(&node_display(store, &child_path), &child, 3)?;
                    match child.get("node_type").and_then(Value::as_str) {
                        Some("array") => arrays.push(v3::array(
                            store.display_location(),
                            &child_path,
                            child,
                            limits,
                        )?),
                        Some("group") => groups.push(name),
                        _ => {
                            return Err(ZarrError::metadata(
                                node_display(store, &child_path),
                                "zarr.json has no valid node_type (\"array\" or \"group\")",
                            ));
                        }
                    }
                }
            }
            arrays.sort_by(|a, b| a.name.cmp(&b.name));
            groups.sort();
            Ok(Node::Group(GroupNode {
                display,
                path: path.to_string(),
                zarr_format: 3,
                attributes,
                arrays,
                groups,
                metadata: doc,
            }))
        }
        _ => Err(ZarrError::metadata(
            display,
            "zarr.json has no valid node_type (\"array\" or \"group\")",
        )),
    }
}

fn attributes_of(doc: &Value) -> Map<String, Value> {
    doc.get("attributes")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}

async fn open_v2_group(
    store: &ZarrStore,
    path: &str,
    zgroup: Value,
    limits: &Limits,
) -> Result<Node> {
    let display = node_display(store, path);
    validate::zarr_format(&display, &zgroup, 2)?;
    let attributes = get_json(store, &join_key(path, ".zattrs"), limits)
        .await?
        .and_then(|v| v.as_object().cloned())
        .unwrap_or_default();
    let mut arrays = Vec::new();
    let mut groups = Vec::new();
    // zarr-python 2's consolidated metadata lives in `.zmetadata` at the store root.
    let consolidated = get_json(store, ".zmetadata", limits)
        .await?
        .and_then(|v| v.get("metadata").and_then(Value::as_object).cloned());
    if let Some(entries) = consolidated {
        let prefix = if path.is_empty() {
            String::new()
        } else {
            format!("{path}/")
        };
        let mut names: Vec<&str> = entries
            .keys()
            .filter_map(|k| k.strip_prefix(prefix.as_str()))
            .filter_map(|rest| rest.split_once('/'))
            .filter(|(name, file)| {
                !name.contains('/') && (*file == ".zarray" || *file == ".zgroup")
            })
            .map(|(name, _)| name)
            .collect();
        names.sort_unstable();
        names.dedup();
        for name in names {
            let child_path = join_key(path, name);
            if let Some(zarray) = entries.get(&format!("{child_path}/.zarray")) {
                let zattrs = entries.get(&format!("{child_path}/.zattrs")).cloned();
                arrays.push(v2::array(
                    store.display_location(),
                    &child_path,
                    zarray.clone(),
                    zattrs,
                    limits,
                )?);
            } else {
                groups.push(name.to_string());
            }
        }
    } else {
        for name in store.list_children(path).await? {
            let child_path = join_key(path, &name);
            if let Some(zarray) = get_json(store, &join_key(&child_path, ".zarray"), limits).await?
            {
                let zattrs = get_json(store, &join_key(&child_path, ".zattrs"), limits).await?;
                arrays.push(v2::array(
                    store.display_location(),
                    &child_path,
                    zarray,
                    zattrs,
                    limits,
                )?);
            } else if get_json(store, &join_key(&child_path, ".zgroup"), limits)
                .await?
                .is_some()
            {
                groups.push(name);
            }
        }
    }
    arrays.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(Node::Group(GroupNode {
        display,
        path: path.to_string(),
        zarr_format: 2,
        attributes,
        arrays,
        groups,
        metadata: zgroup,
    }))
}
