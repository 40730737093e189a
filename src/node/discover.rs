//! Finding nodes: the one place metadata is fetched. A node is located by its metadata keys,
//! never by listing chunks; a group's children come from consolidated metadata when present,
//! else from one level of listing.

use std::borrow::Cow;

use bytes::Bytes;
use serde_json::Value;
use serde_json::value::RawValue;

use super::document::{Document, entries, entry};
use super::json::normalized;
use super::{
    ArrayNode, Attributes, GroupNode, Node, UnreadableArray, characters, display_in, v2, v3,
    validate,
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
    if let Node::Group(group) = &mut node {
        group.inherited = inherited_coordinates(store, group, limits).await;
    }
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

/// The coordinates `group` inherits, as xarray's DataTree does: for each dimension of its
/// arrays without an array of its name in the group, the 1-D array of that name along it in
/// each ancestor, nearest first. An ancestor that cannot be opened gives none.
async fn inherited_coordinates(
    store: &ZarrStore,
    group: &GroupNode,
    limits: &Limits,
) -> Vec<ArrayNode> {
    let mut missing: Vec<String> = (group.arrays.iter())
        .flat_map(|a| a.dimension_names.iter().flatten())
        .filter(|d| !group.arrays.iter().any(|a| &a.name == *d))
        .cloned()
        .collect();
    missing.sort();
    missing.dedup();
    let mut inherited = Vec::new();
    let mut path = group.path.as_str();
    while !missing.is_empty() && !path.is_empty() {
        path = path.rsplit_once('/').map_or("", |(parent, _)| parent);
        let Ok(Node::Group(ancestor)) = open_at(store, path, limits, Some(&missing)).await else {
            continue;
        };
        let along_itself = |a: &ArrayNode| {
            a.shape.len() == 1
                && a.kind.is_some()
                && a.dimension_names.first().and_then(Option::as_ref) == Some(&a.name)
        };
        (ancestor.arrays.into_iter())
            .filter(|a| missing.contains(&a.name) && along_itself(a))
            .for_each(|a| inherited.push(a));
    }
    inherited
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
    let text = normalized(document);
    let doc = Document::parse(&text).map_err(|e| ZarrError::metadata(&display, invalid(e)))?;
    let attributes = read_attributes(&display, doc.attributes)?;
    match doc.fields.get("zarr_format").and_then(Value::as_u64) {
        Some(2) => v2::array(location, path, doc.fields, attributes, limits),
        _ => {
            validate::zarr_format(&display, &doc.fields, 3)?;
            v3::array(location, path, doc.fields, attributes, limits)
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
    let key = join_key(&path, "zarr.json");
    if let Some(text) = fetch(store, &key, limits).await? {
        let doc = parse(store, &key, &text)?;
        return open_v3(store, &path, doc, limits, wanted).await;
    }
    // Zarr V2: an array's `.zarray` or a group's `.zgroup`, asked for at once (one round
    // trip less for a group on a remote store).
    let key = join_key(&path, ".zarray");
    let group_key = join_key(&path, ".zgroup");
    let (zarray, zgroup) =
        futures::future::join(fetch(store, &key, limits), fetch(store, &group_key, limits)).await;
    if let Some(text) = zarray? {
        let zarray = parse(store, &key, &text)?;
        let zattrs = v2_attributes(store, &path, limits).await?;
        return Ok(Node::Array(v2::array(
            store.display_location(),
            &path,
            zarray.fields,
            zattrs,
            limits,
        )?));
    }
    let key = group_key;
    if let Some(text) = zgroup? {
        let zgroup = parse(store, &key, &text)?;
        return open_v2_group(store, &path, zgroup.fields, limits, wanted).await;
    }
    Err(ZarrError::metadata(display, NO_NODE))
}

/// Orders `arrays` as a group's consolidated metadata lists them (`listed`), the order their
/// writer gave (zarr-python sorts them by name; datafusion-zarr's writer keeps the table's
/// column order, so that a table reads back as it was written), or by name when the group has
/// none (a listing's order is the store's, not the writer's).
fn in_listed_order<'a>(arrays: &mut [ArrayNode], listed: Option<impl Iterator<Item = &'a str>>) {
    let Some(listed) = listed else {
        arrays.sort_by(|a, b| a.name.cmp(&b.name));
        return;
    };
    let position: std::collections::HashMap<&str, usize> =
        listed.enumerate().map(|(i, name)| (name, i)).collect();
    arrays.sort_by(|a, b| {
        let at = |x: &ArrayNode| position.get(x.name.as_str()).copied().unwrap_or(usize::MAX);
        at(a).cmp(&at(b)).then_with(|| a.name.cmp(&b.name))
    });
}

/// Why a path holds no node: none of its metadata documents exists.
const NO_NODE: &str = "no Zarr node here: none of zarr.json, .zarray or .zgroup exists";

/// Whether `e` says that a path holds no node (where an Icechunk repository may be instead).
pub(crate) fn is_no_node(e: &ZarrError) -> bool {
    matches!(e, ZarrError::Metadata { message, .. } if message == NO_NODE)
}

fn node_display(store: &ZarrStore, path: &str) -> String {
    display_in(store.display_location(), path)
}

/// The document at `key` as JSON text (bare non-finite numbers quoted), if there is one.
async fn fetch(store: &ZarrStore, key: &str, limits: &Limits) -> Result<Option<Bytes>> {
    let Some(bytes) = store.get(key, limits.metadata).await? else {
        return Ok(None);
    };
    let text = match normalized(&bytes) {
        Cow::Borrowed(_) => None,
        Cow::Owned(quoted) => Some(Bytes::from(quoted)),
    };
    Ok(Some(text.unwrap_or(bytes)))
}

/// The document `text` fetched from `key`.
fn parse<'a>(store: &ZarrStore, key: &str, text: &'a [u8]) -> Result<Document<'a>> {
    Document::parse(text).map_err(|e| ZarrError::metadata(node_display(store, key), invalid(e)))
}

/// The message of a document that cannot be read.
fn invalid(error: String) -> String {
    let mut message = format!("not valid JSON: {error}");
    if message.contains("hex escape") || message.contains("surrogate") {
        message.push_str(
            " (a lone UTF-16 surrogate escape such as \"\\ud800\", which zarr-python can \
             write, is not a Unicode scalar value)",
        );
    }
    message
}

/// The attributes `raw` of the node `display`.
fn read_attributes(display: &str, raw: Option<&RawValue>) -> Result<Attributes> {
    Attributes::read(raw).map_err(|e| ZarrError::metadata(display, e))
}

/// The attributes of the V2 node at `path` (its `.zattrs`).
async fn v2_attributes(store: &ZarrStore, path: &str, limits: &Limits) -> Result<Attributes> {
    let key = join_key(path, ".zattrs");
    let Some(text) = fetch(store, &key, limits).await? else {
        return Ok(Attributes::default());
    };
    let raw: &RawValue = serde_json::from_slice(&text)
        .map_err(|e| ZarrError::metadata(node_display(store, &key), invalid(e.to_string())))?;
    read_attributes(&node_display(store, path), Some(raw))
}

async fn open_v3(
    store: &ZarrStore,
    path: &str,
    doc: Document<'_>,
    limits: &Limits,
    wanted: Option<&[String]>,
) -> Result<Node> {
    let display = node_display(store, path);
    validate::zarr_format(&display, &doc.fields, 3)?;
    let attributes = read_attributes(&display, doc.attributes)?;
    match doc.fields.get("node_type").and_then(Value::as_str) {
        Some("array") => Ok(Node::Array(v3::array(
            store.display_location(),
            path,
            doc.fields,
            attributes,
            limits,
        )?)),
        Some("group") => {
            let (mut arrays, mut unreadable, mut groups) = (Vec::new(), Vec::new(), Vec::new());
            // zarr-python's inline consolidated metadata: keys are paths relative to this
            // group; direct children have no '/'.
            let own = match doc.consolidated {
                Some(consolidated) => {
                    let invalid = |e: String| {
                        ZarrError::metadata(&display, format!("consolidated_metadata: {e}"))
                    };
                    let metadata = entry(consolidated, "metadata").map_err(invalid)?;
                    let direct = metadata.map(|metadata| {
                        entries(metadata.get().as_bytes(), &|k| !k.contains('/'))
                            .map_err(|e| invalid(e.to_string()))
                    });
                    direct.transpose()?.map(|direct| {
                        (direct.into_iter())
                            .map(|(name, raw)| (name.into_owned(), raw.to_owned()))
                            .collect()
                    })
                }
                None => None,
            };
            // A group below one whose consolidated metadata describes it is described by that
            // document, as zarr-python reads every descendant of a consolidated root.
            let consolidated = match own {
                Some(own) => Some(own),
                None => consolidated_by_ancestor(store, path, limits).await?,
            };
            if let Some(entries) = &consolidated {
                let why = "consolidated metadata entry has no valid node_type";
                let names = entries.iter().map(|(name, _)| name.as_str());
                for name in chosen(names.clone(), wanted, &[]) {
                    let child = consolidated_entry(entries, name);
                    let found = (&mut arrays, &mut unreadable, &mut groups);
                    place_v3_child(store, path, name, child, limits, found, why)?;
                }
                if wanted.is_some() {
                    let more = coordinates_to_probe(&arrays, wanted);
                    for name in chosen(names, None, &more) {
                        let child = consolidated_entry(entries, name);
                        let found = (&mut arrays, &mut unreadable, &mut groups);
                        place_v3_child(store, path, name, child, limits, found, why)?;
                    }
                }
            } else {
                let found = (&mut arrays, &mut unreadable, &mut groups);
                open_unconsolidated(store, path, 3, wanted, limits, found).await?;
            }
            let listed = consolidated
                .as_ref()
                .map(|e| e.iter().map(|(name, _)| name.as_str()));
            in_listed_order(&mut arrays, listed);
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
                metadata: doc.fields,
                inherited: Vec::new(),
            }))
        }
        _ => Err(ZarrError::metadata(
            display,
            "zarr.json has no valid node_type (\"array\" or \"group\")",
        )),
    }
}

/// The `names` of a group's consolidated children to open: those `wanted` names (the `arrays`
/// option) or all, or when `more` is not empty those among it.
fn chosen<'n>(
    names: impl Iterator<Item = &'n str>,
    wanted: Option<&[String]>,
    more: &[String],
) -> Vec<&'n str> {
    let named = |name: &&str| match (more.is_empty(), wanted) {
        (false, _) => more.iter().any(|m| m == name),
        (true, Some(wanted)) => wanted.iter().any(|w| w == name),
        (true, None) => true,
    };
    names.filter(named).collect()
}

/// The document of the consolidated child `name`.
fn consolidated_entry<'e>(entries: &'e [(String, Box<RawValue>)], name: &str) -> &'e [u8] {
    let found = entries.iter().find(|(n, _)| n == name);
    found.map_or(&b"null"[..], |(_, raw)| raw.get().as_bytes())
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
        let Some(text) = fetch(store, &key, limits).await? else {
            continue;
        };
        let found = (&mut *arrays, &mut *unreadable, &mut *groups);
        let why = "zarr.json has no valid node_type (\"array\" or \"group\")";
        place_v3_child(store, path, &name, &text, limits, found, why)?;
    }
    Ok(())
}

/// Files the V3 child `name` of the group at `path`, whose document is the text `child`, as
/// an array (readable or not) or a group; `why` is the error when it is neither.
fn place_v3_child(
    store: &ZarrStore,
    path: &str,
    name: &str,
    child: &[u8],
    limits: &Limits,
    (arrays, unreadable, groups): Found<'_>,
    why: &str,
) -> Result<()> {
    let child_path = join_key(path, name);
    let display = node_display(store, &child_path);
    let child = Document::parse(child).map_err(|e| ZarrError::metadata(&display, invalid(e)))?;
    validate::zarr_format(&display, &child.fields, 3)?;
    match child.fields.get("node_type").and_then(Value::as_str) {
        Some("array") => {
            room_for_another(store, path, (arrays, unreadable), limits)?;
            let array = read_attributes(&display, child.attributes).and_then(|attributes| {
                let location = store.display_location();
                v3::array(location, &child_path, child.fields, attributes, limits)
            });
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
        let key = join_key(&child_path, ".zarray");
        if let Some(text) = fetch(store, &key, limits).await? {
            room_for_another(store, path, (arrays, unreadable), limits)?;
            let zattrs = v2_attributes(store, &child_path, limits).await;
            let location = store.display_location();
            let array = parse(store, &key, &text).and_then(|zarray| {
                zattrs.and_then(|zattrs| {
                    v2::array(location, &child_path, zarray.fields, zattrs, limits)
                })
            });
            keep(array, &name, arrays, unreadable)?;
        } else if let Some(text) = fetch(store, &join_key(&child_path, ".zgroup"), limits).await? {
            // A group's document is read as JSON only to know it is one.
            parse(store, &join_key(&child_path, ".zgroup"), &text)?;
            groups.push(name);
        }
    }
    Ok(())
}

/// The direct children of the group at `path` that an ancestor's `zarr.json` describes in
/// its consolidated metadata, keyed by name: zarr-python consolidates at the root and reads
/// every descendant from that document. `None` when no ancestor describes the group.
async fn consolidated_by_ancestor(
    store: &ZarrStore,
    path: &str,
    limits: &Limits,
) -> Result<Option<Vec<(String, Box<RawValue>)>>> {
    if path.is_empty() {
        return Ok(None);
    }
    let parts: Vec<&str> = path.split('/').collect();
    for depth in 0..parts.len() {
        let ancestor = parts[..depth].join("/");
        let key = join_key(&ancestor, "zarr.json");
        let Some(text) = fetch(store, &key, limits).await? else {
            continue;
        };
        let doc = parse(store, &key, &text)?;
        let invalid = |e: String| {
            let display = node_display(store, &ancestor);
            ZarrError::metadata(display, format!("consolidated_metadata: {e}"))
        };
        let Some(consolidated) = doc.consolidated else {
            continue;
        };
        let Some(metadata) = entry(consolidated, "metadata").map_err(invalid)? else {
            continue;
        };
        // The group's own entry and its direct children, the others unparsed.
        let relative = parts[depth..].join("/");
        let prefix = format!("{relative}/");
        let direct = |k: &str| k.strip_prefix(&prefix).is_some_and(|n| !n.contains('/'));
        let found = entries(metadata.get().as_bytes(), &|k| k == relative || direct(k))
            .map_err(|e| invalid(e.to_string()))?;
        let is_group = found.iter().any(|(k, v)| {
            *k == relative
                && entry(v, "node_type").ok().flatten().map(RawValue::get) == Some("\"group\"")
        });
        if !is_group {
            continue;
        }
        let below = (found.into_iter())
            .filter_map(|(k, v)| Some((k.strip_prefix(&prefix)?.to_string(), v.to_owned())))
            .collect();
        return Ok(Some(below));
    }
    Ok(None)
}

/// An error when the group at `path` has opened `limits.arrays` arrays already (each holds a
/// few KB of parsed metadata and codecs: a group of 100,000 arrays took 540 MB).
fn room_for_another(
    store: &ZarrStore,
    path: &str,
    opened: (&[ArrayNode], &[UnreadableArray]),
    limits: &Limits,
) -> Result<()> {
    let count = opened.0.len().saturating_add(opened.1.len());
    match u64::try_from(count).is_ok_and(|n| n < limits.arrays) {
        true => Ok(()),
        false => Err(ZarrError::metadata(
            node_display(store, path),
            format!(
                "it has more than {} arrays, the most a table opens (max_arrays): name the \
                 arrays the table needs with the option 'arrays', or raise max_arrays",
                limits.arrays
            ),
        )),
    }
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

async fn open_v2_group(
    store: &ZarrStore,
    path: &str,
    zgroup: Value,
    limits: &Limits,
    wanted: Option<&[String]>,
) -> Result<Node> {
    let display = node_display(store, path);
    validate::zarr_format(&display, &zgroup, 2)?;
    let attributes = v2_attributes(store, path, limits).await?;
    let (mut arrays, mut unreadable, mut groups) = (Vec::new(), Vec::new(), Vec::new());
    // zarr-python 2's consolidated metadata lives in `.zmetadata` at the store root.
    let consolidated = fetch(store, ".zmetadata", limits).await?;
    // The children in the order `.zmetadata` lists them.
    let mut listed: Option<Vec<String>> = None;
    if let Some(text) = consolidated {
        let invalid = |e: serde_json::Error| {
            let message = format!("invalid .zmetadata: {e}");
            ZarrError::metadata(node_display(store, ".zmetadata"), message)
        };
        let prefix = match path.is_empty() {
            true => String::new(),
            false => format!("{path}/"),
        };
        // The documents of the direct children, the others unparsed.
        let child_file = |key: &str| child_of(key, &prefix).is_some();
        let metadata = entries(&text, &|k| k == "metadata").map_err(invalid)?;
        let entries = match metadata.first() {
            Some((_, metadata)) => {
                entries(metadata.get().as_bytes(), &child_file).map_err(invalid)?
            }
            None => Vec::new(),
        };
        // Each child once, in the order the document lists them.
        let mut names: Vec<&str> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for name in entries.iter().filter_map(|(k, _)| child_of(k, &prefix)) {
            if seen.insert(name) {
                names.push(name);
            }
        }
        listed = Some(names.iter().map(|n| n.to_string()).collect());
        if metadata.is_empty() {
            let found = (&mut arrays, &mut unreadable, &mut groups);
            open_unconsolidated(store, path, 2, wanted, limits, found).await?;
        }
        let mut chosen_names = chosen(names.iter().copied(), wanted, &[]);
        if wanted.is_some() {
            // The named arrays, then the coordinates of their dimensions.
            for name in chosen_names {
                let found = (&mut arrays, &mut unreadable, &mut groups);
                open_v2_consolidated(store, path, name, &entries, limits, found)?;
            }
            let more = coordinates_to_probe(&arrays, wanted);
            chosen_names = chosen(names.iter().copied(), None, &more);
        }
        for name in chosen_names {
            let found = (&mut arrays, &mut unreadable, &mut groups);
            open_v2_consolidated(store, path, name, &entries, limits, found)?;
        }
    } else {
        let found = (&mut arrays, &mut unreadable, &mut groups);
        open_unconsolidated(store, path, 2, wanted, limits, found).await?;
    }
    in_listed_order(
        &mut arrays,
        listed.as_ref().map(|n| n.iter().map(String::as_str)),
    );
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
        inherited: Vec::new(),
    }))
}

/// Opens the V2 child `name` of the group at `path` from the consolidated documents.
fn open_v2_consolidated(
    store: &ZarrStore,
    path: &str,
    name: &str,
    entries: &[(Cow<'_, str>, &RawValue)],
    limits: &Limits,
    (arrays, unreadable, groups): Found<'_>,
) -> Result<()> {
    let document = |key: &str| entries.iter().find(|(k, _)| k == key).map(|(_, v)| *v);
    let child_path = join_key(path, name);
    let child_display = node_display(store, &child_path);
    let Some(zarray) = document(&format!("{child_path}/.zarray")) else {
        if document(&format!("{child_path}/.zgroup")).is_some() {
            groups.push(name.to_string());
        }
        return Ok(());
    };
    room_for_another(store, path, (arrays, unreadable), limits)?;
    let zattrs = document(&format!("{child_path}/.zattrs"));
    let array = Document::parse(zarray.get().as_bytes())
        .map_err(|e| ZarrError::metadata(&child_display, invalid_entry(e)))
        .and_then(|zarray| {
            let zattrs = read_attributes(&child_display, zattrs)?;
            let location = store.display_location();
            v2::array(location, &child_path, zarray.fields, zattrs, limits)
        });
    keep(array, name, arrays, unreadable)
}

/// The name of the direct child whose document `key` of `.zmetadata` is, the group's keys
/// beginning with `prefix`.
fn child_of<'k>(key: &'k str, prefix: &str) -> Option<&'k str> {
    let (name, file) = key.strip_prefix(prefix)?.split_once('/')?;
    let file = [".zarray", ".zattrs", ".zgroup"].contains(&file);
    (file && !name.contains('/')).then_some(name)
}

/// The message of a consolidated entry that is not a document.
fn invalid_entry(error: String) -> String {
    format!("its consolidated metadata entry: {error}")
}
