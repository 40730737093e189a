//! Finding nodes: the one place metadata is fetched. A node is located by its metadata keys,
//! never by listing chunks; a group's children come from consolidated metadata when present,
//! else from one level of listing.

use serde_json::{Map, Value};

use super::json::parse_json;
use super::{
    ArrayNode, GroupNode, Node, UnreadableArray, characters, display_in, v2, v3, validate,
};
use crate::error::{Result, ZarrError};
use crate::limits::Limits;
use crate::store::{ZarrStore, join_key, normalize_node_path};

/// Opens the node at `path` within `limits` (metadata documents, and the sizes the metadata
/// declares). For a group, `wanted` (the `arrays` option) names the arrays a table needs: a
/// group without consolidated metadata is then not listed (an HTTP server may not list), its
/// named arrays and the coordinates their dimensions name are opened by their keys.
pub(crate) async fn open_node(
    store: &ZarrStore,
    path: &str,
    limits: &Limits,
    wanted: Option<&[String]>,
) -> Result<Node> {
    crate::codecs::register();
    let path = normalize_node_path(path)?;
    let mut node = open_at(store, &path, limits, wanted).await?;
    // Whether a character array's strings join depends on its group's other arrays, as in
    // xarray: an array opened alone is judged among them (alone at the store's root).
    if let Node::Array(array) = &mut node
        && array.characters.is_some()
    {
        let parent = match path.rsplit_once('/') {
            Some((parent, _)) => Some(parent),
            None => (!path.is_empty()).then_some(""),
        };
        let siblings = match parent {
            Some(parent) => match open_at(store, parent, limits, None).await {
                Ok(Node::Group(group)) => group.arrays,
                _ => Vec::new(),
            },
            None => Vec::new(),
        };
        let stacked = match siblings.iter().find(|a| a.path == array.path) {
            Some(judged) => judged.characters.is_some(),
            None => {
                let mut alone = [array.clone()];
                characters::keep_stackable(&mut alone);
                alone[0].characters.is_some()
            }
        };
        if !stacked {
            array.characters = None;
        }
    }
    Ok(node)
}

/// Parses one array's metadata document (`zarr.json`, or `.zarray` for Zarr V2) without I/O:
/// what `open_node` does for an array, for tools and fuzzing.
pub(crate) fn parse_array(
    location: &str,
    path: &str,
    document: &[u8],
    limits: &Limits,
) -> Result<ArrayNode> {
    crate::codecs::register();
    let display = display_in(location, path);
    let doc = parse_json(document)
        .map_err(|e| ZarrError::metadata(&display, format!("not valid JSON: {e}")))?;
    match doc.get("zarr_format").and_then(Value::as_u64) {
        Some(2) => v2::array(location, path, doc, None, limits),
        _ => {
            validate::zarr_format(&display, &doc, 3)?;
            v3::array(location, path, doc, limits)
        }
    }
}

/// Opens the node at the normalized `path`.
async fn open_at(
    store: &ZarrStore,
    path: &str,
    limits: &Limits,
    wanted: Option<&[String]>,
) -> Result<Node> {
    let path = path.to_string();
    let display = node_display(store, &path);
    if let Some(doc) = get_json(store, &join_key(&path, "zarr.json"), limits).await? {
        return open_v3(store, &path, doc, limits, wanted).await;
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
        return open_v2_group(store, &path, zgroup, limits, wanted).await;
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

async fn open_v3(
    store: &ZarrStore,
    path: &str,
    doc: Value,
    limits: &Limits,
    wanted: Option<&[String]>,
) -> Result<Node> {
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
            let (mut arrays, mut unreadable, mut groups) = (Vec::new(), Vec::new(), Vec::new());
            let own = doc
                .get("consolidated_metadata")
                .and_then(|c| c.get("metadata"))
                .and_then(Value::as_object)
                .cloned();
            // A group below one whose consolidated metadata describes it is described by that
            // document, as zarr-python reads every descendant of a consolidated root.
            let consolidated = match own {
                Some(own) => Some(own),
                None => consolidated_by_ancestor(store, path, limits).await?,
            };
            if let Some(entries) = &consolidated {
                // zarr-python's inline consolidated metadata: keys are paths relative to
                // this group; direct children have no '/'.
                for (name, child) in entries.iter().filter(|(k, _)| !k.contains('/')) {
                    let found = (&mut arrays, &mut unreadable, &mut groups);
                    let why = "consolidated metadata entry has no valid node_type";
                    place_v3_child(store, path, name, child.clone(), limits, found, why)?;
                }
            } else {
                let found = (&mut arrays, &mut unreadable, &mut groups);
                open_unconsolidated(store, path, 3, wanted, limits, found).await?;
            }
            arrays.sort_by(|a, b| a.name.cmp(&b.name));
            characters::keep_stackable(&mut arrays);
            unreadable.sort_by(|a, b| a.name.cmp(&b.name));
            groups.sort();
            Ok(Node::Group(GroupNode {
                display,
                path: path.to_string(),
                zarr_format: 3,
                attributes,
                arrays,
                unreadable,
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

/// What a group's opening found: its readable arrays, its unreadable ones, its child groups.
type Found<'a> = (
    &'a mut Vec<ArrayNode>,
    &'a mut Vec<UnreadableArray>,
    &'a mut Vec<String>,
);

/// The children of a group (Zarr `zarr_format`) without consolidated metadata: listed, or,
/// when `wanted` names the arrays, those and then the coordinates their dimensions name.
async fn open_unconsolidated(
    store: &ZarrStore,
    path: &str,
    zarr_format: u8,
    wanted: Option<&[String]>,
    limits: &Limits,
    (arrays, unreadable, groups): Found<'_>,
) -> Result<()> {
    let names = children(store, path, wanted, limits).await?;
    let found = (&mut *arrays, &mut *unreadable, &mut *groups);
    open_children(store, path, zarr_format, names, limits, found).await?;
    if wanted.is_some() {
        // The named arrays are open: now the coordinates of their dimensions.
        let more = coordinates_to_probe(arrays, wanted);
        open_children(
            store,
            path,
            zarr_format,
            more,
            limits,
            (arrays, unreadable, groups),
        )
        .await?;
    }
    Ok(())
}

/// Opens the children `names` of the group at `path` by their Zarr `zarr_format` keys.
async fn open_children(
    store: &ZarrStore,
    path: &str,
    zarr_format: u8,
    names: Vec<String>,
    limits: &Limits,
    found: Found<'_>,
) -> Result<()> {
    match zarr_format {
        2 => open_v2_children(store, path, names, limits, found).await,
        _ => open_v3_children(store, path, names, limits, found).await,
    }
}

/// The names to try as a group's children when it has no consolidated metadata: the arrays
/// `wanted` names (no listing: an HTTP server may not list), else one level of listing.
async fn children(
    store: &ZarrStore,
    path: &str,
    wanted: Option<&[String]>,
    limits: &Limits,
) -> Result<Vec<String>> {
    match wanted {
        Some(names) => Ok(names.to_vec()),
        None => store.list_children(path, limits.metadata).await,
    }
}

/// The dimensions of the `arrays` opened that are not among `wanted`: the coordinates a table
/// of the named arrays looks for, opened by their keys where they exist.
fn coordinates_to_probe(arrays: &[ArrayNode], wanted: Option<&[String]>) -> Vec<String> {
    let mut dimensions: Vec<String> = arrays
        .iter()
        .flat_map(|a| a.dimension_names.iter().flatten().cloned())
        .filter(|d| !wanted.is_some_and(|w| w.contains(d)))
        .filter(|d| !d.is_empty() && !d.contains('/') && d != "." && d != "..")
        .collect();
    dimensions.sort();
    dimensions.dedup();
    dimensions
}

/// Opens the V3 children `names` of the group at `path` by their `zarr.json`; a name with
/// none is skipped (a directory that is not a node, e.g. a chunk prefix).
async fn open_v3_children(
    store: &ZarrStore,
    path: &str,
    names: Vec<String>,
    limits: &Limits,
    (arrays, unreadable, groups): Found<'_>,
) -> Result<()> {
    for name in names {
        let child_path = join_key(path, &name);
        let key = join_key(&child_path, "zarr.json");
        let Some(child) = get_json(store, &key, limits).await? else {
            continue;
        };
        validate::zarr_format(&node_display(store, &child_path), &child, 3)?;
        let found = (&mut *arrays, &mut *unreadable, &mut *groups);
        let why = "zarr.json has no valid node_type (\"array\" or \"group\")";
        place_v3_child(store, path, &name, child, limits, found, why)?;
    }
    Ok(())
}

/// Files the V3 child `name` of the group at `path`, whose document is `child`, as an array
/// (readable or not) or a group; `why` is the error when it is neither.
fn place_v3_child(
    store: &ZarrStore,
    path: &str,
    name: &str,
    child: Value,
    limits: &Limits,
    (arrays, unreadable, groups): Found<'_>,
    why: &str,
) -> Result<()> {
    let child_path = join_key(path, name);
    match child.get("node_type").and_then(Value::as_str) {
        Some("array") => {
            let array = v3::array(store.display_location(), &child_path, child, limits);
            keep(array, name, arrays, unreadable)
        }
        Some("group") => {
            groups.push(name.to_string());
            Ok(())
        }
        _ => Err(ZarrError::metadata(node_display(store, &child_path), why)),
    }
}

/// Opens the V2 children `names` of the group at `path` by their `.zarray` (with `.zattrs`) or
/// `.zgroup`; a name with neither is skipped.
async fn open_v2_children(
    store: &ZarrStore,
    path: &str,
    names: Vec<String>,
    limits: &Limits,
    (arrays, unreadable, groups): Found<'_>,
) -> Result<()> {
    for name in names {
        let child_path = join_key(path, &name);
        if let Some(zarray) = get_json(store, &join_key(&child_path, ".zarray"), limits).await? {
            let zattrs = get_json(store, &join_key(&child_path, ".zattrs"), limits).await;
            let location = store.display_location();
            let array =
                zattrs.and_then(|zattrs| v2::array(location, &child_path, zarray, zattrs, limits));
            keep(array, &name, arrays, unreadable)?;
        } else if get_json(store, &join_key(&child_path, ".zgroup"), limits)
            .await?
            .is_some()
        {
            groups.push(name);
        }
    }
    Ok(())
}

/// The consolidated metadata an ancestor's `zarr.json` holds for the group at `path`, keyed
/// relative to it: zarr-python consolidates at the root and reads every descendant from that
/// document. `None` when no ancestor describes it.
async fn consolidated_by_ancestor(
    store: &ZarrStore,
    path: &str,
    limits: &Limits,
) -> Result<Option<Map<String, Value>>> {
    if path.is_empty() {
        return Ok(None);
    }
    let parts: Vec<&str> = path.split('/').collect();
    for depth in 0..parts.len() {
        let ancestor = parts[..depth].join("/");
        let Some(doc) = get_json(store, &join_key(&ancestor, "zarr.json"), limits).await? else {
            continue;
        };
        let Some(entries) = doc
            .pointer("/consolidated_metadata/metadata")
            .and_then(Value::as_object)
        else {
            continue;
        };
        let relative = parts[depth..].join("/");
        let is_group = entries
            .get(&relative)
            .and_then(|e| e.get("node_type"))
            .and_then(Value::as_str)
            == Some("group");
        if !is_group {
            continue;
        }
        let prefix = format!("{relative}/");
        let below: Map<String, Value> = entries
            .iter()
            .filter_map(|(k, v)| Some((k.strip_prefix(&prefix)?.to_string(), v.clone())))
            .collect();
        return Ok(Some(below));
    }
    Ok(None)
}

/// A child array as read: kept, or (invalid metadata, a size beyond a limit) noted as
/// unreadable so that one bad array does not make its group unreadable. Errors of the store
/// itself (I/O) end the group's opening.
fn keep(
    array: Result<ArrayNode>,
    name: &str,
    arrays: &mut Vec<ArrayNode>,
    unreadable: &mut Vec<UnreadableArray>,
) -> Result<()> {
    match array {
        Ok(array) => arrays.push(array),
        Err(e @ (ZarrError::Metadata { .. } | ZarrError::Limit { .. })) => {
            unreadable.push(UnreadableArray {
                name: name.to_string(),
                error: e.to_string(),
            })
        }
        Err(e) => return Err(e),
    }
    Ok(())
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
    wanted: Option<&[String]>,
) -> Result<Node> {
    let display = node_display(store, path);
    validate::zarr_format(&display, &zgroup, 2)?;
    let attributes = get_json(store, &join_key(path, ".zattrs"), limits)
        .await?
        .and_then(|v| v.as_object().cloned())
        .unwrap_or_default();
    let (mut arrays, mut unreadable, mut groups) = (Vec::new(), Vec::new(), Vec::new());
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
                let location = store.display_location();
                let array = v2::array(location, &child_path, zarray.clone(), zattrs, limits);
                keep(array, name, &mut arrays, &mut unreadable)?;
            } else {
                groups.push(name.to_string());
            }
        }
    } else {
        let found = (&mut arrays, &mut unreadable, &mut groups);
        open_unconsolidated(store, path, 2, wanted, limits, found).await?;
    }
    arrays.sort_by(|a, b| a.name.cmp(&b.name));
    characters::keep_stackable(&mut arrays);
    unreadable.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(Node::Group(GroupNode {
        display,
        path: path.to_string(),
        zarr_format: 2,
        attributes,
        arrays,
        unreadable,
        groups,
        metadata: zgroup,
    }))
}
