//! Opened metadata: the arrays and groups of a store, read the way zarr-python writes them
//! (`zarr.json`, zarr-python's inline consolidated metadata, and Zarr V2's `.zarray`,
//! `.zgroup`, `.zattrs` and `.zmetadata`).
//!
//! zarrs parses the metadata and builds the codec chain. What is ours: locating nodes without
//! listing chunks, the V2 `null` fill on `<U` (which zarrs rejects), and the checks where the
//! `fixed_length_utf32` specification is stricter than zarr-python.

use std::sync::Arc;

use arrow::datatypes::DataType as ArrowType;
use serde_json::{Map, Value};
use zarrs::array::data_type::{
    BoolDataType, FixedLengthUTF32DataType, Float16DataType, Float32DataType, Float64DataType,
    Int8DataType, Int16DataType, Int32DataType, Int64DataType, StringDataType, UInt8DataType,
    UInt16DataType, UInt32DataType, UInt64DataType,
};
use zarrs::array::{Array, ArrayCreateError, ArrayMetadata, ArrayMetadataV2, ArrayMetadataV3};

use crate::error::{Result, ZarrError};
use crate::guards::bounded_codecs;
use crate::guards::shard_index::ShardIndexLayout;
use crate::options::ZarrOptions;
use crate::store::{ZarrStore, join_key, normalize_node_path};

/// A zarrs array used for its metadata and codecs only: all I/O goes through [`ZarrStore`].
pub type ZarrsArray = Array<()>;

/// How the elements of an array are laid out and which Arrow type they become.
#[derive(Debug, Clone, PartialEq)]
pub enum ElementKind {
    /// `fixed_length_utf32` with `length_bytes` bytes per element.
    Utf32 {
        /// Bytes per element (a positive multiple of 4).
        length_bytes: usize,
    },
    /// The variable-length `string` data type.
    String,
    /// A fixed-size numeric or boolean type, held in native byte order.
    Primitive(ArrowType),
}

/// An array node.
#[derive(Debug, Clone)]
pub struct ArrayNode {
    /// The store and path, as shown in errors (`file:///data/x.zarr/labels`).
    pub display: String,
    /// Path relative to the store root (`""` for the root).
    pub path: String,
    /// The last path segment, or `value` for an array at the store root.
    pub name: String,
    /// 2 or 3.
    pub zarr_format: u8,
    /// The data type as written in the metadata (V3 `data_type` JSON, V2 `dtype`).
    pub data_type_name: String,
    /// The element kind, or `None` when the data type has no Arrow mapping.
    pub kind: Option<ElementKind>,
    /// The zarrs array (metadata and codecs); `None` when unsupported.
    pub array: Option<Arc<ZarrsArray>>,
    /// One entry per dimension.
    pub dimension_names: Vec<Option<String>>,
    /// The array shape.
    pub shape: Vec<u64>,
    /// The node's metadata document(s) as JSON (V2: `.zarray` with `.zattrs` under `attributes`).
    pub metadata: Value,
    /// For sharded arrays, the layout of each shard's index (checked before decoding).
    pub shard_index: Option<ShardIndexLayout>,
    /// For arrays whose only codec is `sharding_indexed`: how to read single inner chunks.
    pub inner: Option<Arc<InnerChunks>>,
}

/// How to read the inner chunks of a sharded array one at a time (byte ranges of a shard).
#[derive(Debug)]
pub struct InnerChunks {
    /// The inner chunk shape.
    pub shape: Vec<u64>,
    /// Inner chunks per shard along each dimension.
    pub per_shard: Vec<u64>,
    /// The codecs of one inner chunk.
    pub codecs: Arc<zarrs::array::CodecChain>,
    /// The shard index layout.
    pub layout: ShardIndexLayout,
}

/// The inner chunk reader of an exclusively sharded V3 array with a regular grid, if it is one.
fn inner_chunks(doc: &Value, shard_index: &Option<ShardIndexLayout>) -> Option<InnerChunks> {
    let layout = shard_index.clone()?;
    let codecs = doc.get("codecs")?.as_array()?;
    let [sharding] = codecs.as_slice() else {
        return None;
    };
    if doc.pointer("/chunk_grid/name")?.as_str()? != "regular" {
        return None;
    }
    let shard_shape: Vec<u64> = doc
        .pointer("/chunk_grid/configuration/chunk_shape")?
        .as_array()?
        .iter()
        .map(Value::as_u64)
        .collect::<Option<_>>()?;
    let shape: Vec<u64> = sharding
        .pointer("/configuration/chunk_shape")?
        .as_array()?
        .iter()
        .map(Value::as_u64)
        .collect::<Option<_>>()?;
    if shape.len() != shard_shape.len()
        || shape
            .iter()
            .zip(&shard_shape)
            .any(|(i, s)| *i == 0 || s % i != 0)
    {
        return None;
    }
    let per_shard = shard_shape.iter().zip(&shape).map(|(s, i)| s / i).collect();
    let inner: Vec<zarrs::metadata::v3::MetadataV3> =
        serde_json::from_value(sharding.pointer("/configuration/codecs")?.clone()).ok()?;
    let codecs = zarrs::array::CodecChain::from_metadata(&inner).ok()?;
    Some(InnerChunks {
        shape,
        per_shard,
        codecs: Arc::new(codecs),
        layout,
    })
}

impl ArrayNode {
    /// The zarrs array, or the "unsupported data type" error.
    pub fn zarrs(&self) -> Result<&Arc<ZarrsArray>> {
        self.array
            .as_ref()
            .ok_or_else(|| ZarrError::UnsupportedDataType {
                data_type: self.data_type_name.clone(),
                array: self.display.clone(),
            })
    }

    /// The element kind, or the "unsupported data type" error.
    pub fn element_kind(&self) -> Result<&ElementKind> {
        self.kind
            .as_ref()
            .ok_or_else(|| ZarrError::UnsupportedDataType {
                data_type: self.data_type_name.clone(),
                array: self.display.clone(),
            })
    }
}

/// A group node and its direct children.
#[derive(Debug, Clone)]
pub struct GroupNode {
    /// The store and path, as shown in errors.
    pub display: String,
    /// Path relative to the store root.
    pub path: String,
    /// 2 or 3.
    pub zarr_format: u8,
    /// Group attributes.
    pub attributes: Map<String, Value>,
    /// Direct child arrays, sorted by name.
    pub arrays: Vec<ArrayNode>,
    /// Names of direct child groups, sorted.
    pub groups: Vec<String>,
    /// The group's metadata document.
    pub metadata: Value,
}

/// An opened node.
#[derive(Debug, Clone)]
pub enum Node {
    /// An array.
    Array(ArrayNode),
    /// A group.
    Group(GroupNode),
}

/// Opens the node at `options.path`.
pub async fn open_node(store: &ZarrStore, options: &ZarrOptions) -> Result<Node> {
    bounded_codecs::register();
    crate::codecs::register();
    bounded_codecs::allow_unbounded_up_to(options.max_chunk_bytes);
    let path = normalize_node_path(&options.path)?;
    let limit = options.max_metadata_bytes;
    let display = node_display(store, &path);
    if let Some(doc) = get_json(store, &join_key(&path, "zarr.json"), limit).await? {
        return open_v3(store, &path, doc, limit).await;
    }
    if let Some(zarray) = get_json(store, &join_key(&path, ".zarray"), limit).await? {
        let zattrs = get_json(store, &join_key(&path, ".zattrs"), limit).await?;
        return Ok(Node::Array(array_v2(
            store.display_location(),
            &path,
            zarray,
            zattrs,
        )?));
    }
    if let Some(zgroup) = get_json(store, &join_key(&path, ".zgroup"), limit).await? {
        return open_v2_group(store, &path, zgroup, limit).await;
    }
    Err(ZarrError::metadata(
        display,
        "no Zarr node here: none of zarr.json, .zarray or .zgroup exists",
    ))
}

fn node_display(store: &ZarrStore, path: &str) -> String {
    display_in(store.display_location(), path)
}

fn display_in(location: &str, path: &str) -> String {
    if path.is_empty() {
        location.to_string()
    } else {
        format!("{location}/{path}")
    }
}

async fn get_json(store: &ZarrStore, key: &str, limit: u64) -> Result<Option<Value>> {
    let Some(bytes) = store.get(key, limit, "max_metadata_bytes").await? else {
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

/// Parses one array's metadata document (`zarr.json`, or `.zarray` for Zarr V2) without I/O:
/// what `open_node` does for an array, for tools and fuzzing.
pub fn parse_array(location: &str, path: &str, document: &[u8]) -> Result<ArrayNode> {
    bounded_codecs::register();
    crate::codecs::register();
    let display = display_in(location, path);
    let doc = parse_json(document)
        .map_err(|e| ZarrError::metadata(&display, format!("not valid JSON: {e}")))?;
    match doc.get("zarr_format").and_then(Value::as_u64) {
        Some(2) => array_v2(location, path, doc, None),
        _ => {
            check_zarr_format(&display, &doc, 3)?;
            array_v3(location, path, doc)
        }
    }
}

/// Parses JSON with serde_json's nesting limit (128), so deeply nested input is an error, not
/// a stack overflow.
fn parse_json(bytes: &[u8]) -> std::result::Result<Value, serde_json::Error> {
    serde_json::from_slice(bytes)
}

async fn open_v3(store: &ZarrStore, path: &str, doc: Value, limit: u64) -> Result<Node> {
    let display = node_display(store, path);
    check_zarr_format(&display, &doc, 3)?;
    match doc.get("node_type").and_then(Value::as_str) {
        Some("array") => Ok(Node::Array(array_v3(store.display_location(), path, doc)?)),
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
                        Some("array") => arrays.push(array_v3(
                            store.display_location(),
                            &child_path,
                            child.clone(),
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
                    let Some(child) = get_json(store, &key, limit).await? else {
                        continue; // a directory that is not a node (e.g. a chunk prefix)
                    };
                    check_zarr_format(&node_display(store, &child_path), &child, 3)?;
                    match child.get("node_type").and_then(Value::as_str) {
                        Some("array") => {
                            arrays.push(array_v3(store.display_location(), &child_path, child)?)
                        }
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

fn check_zarr_format(display: &str, doc: &Value, expected: u64) -> Result<()> {
    match doc.get("zarr_format").and_then(Value::as_u64) {
        Some(v) if v == expected => Ok(()),
        other => Err(ZarrError::metadata(
            display,
            format!(
                "zarr_format is {}, expected {expected}",
                other.map_or_else(
                    || doc
                        .get("zarr_format")
                        .map_or("missing".into(), Value::to_string),
                    |v| v.to_string()
                )
            ),
        )),
    }
}

fn attributes_of(doc: &Value) -> Map<String, Value> {
    doc.get("attributes")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}

fn array_name(path: &str) -> String {
    match path.rsplit('/').next() {
        Some(last) if !last.is_empty() => last.to_string(),
        _ => "value".to_string(),
    }
}

/// Builds a V3 array node from its `zarr.json`.
fn array_v3(location: &str, path: &str, doc: Value) -> Result<ArrayNode> {
    let display = display_in(location, path);
    let data_type = doc
        .get("data_type")
        .ok_or_else(|| ZarrError::metadata(&display, "array metadata has no data_type"))?;
    let data_type_name = match data_type {
        Value::String(s) => s.clone(),
        Value::Object(o) => o
            .get("name")
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| data_type.to_string()),
        other => other.to_string(),
    };
    check_top_level_keys(&display, &doc)?;
    if data_type_name == "fixed_length_utf32" {
        check_fixed_length_utf32_v3(&display, &doc)?;
    }
    if !matches!(data_type_name.as_str(), "bool" | "int8" | "uint8") {
        check_bytes_endian(&display, doc.get("codecs"))?;
    }
    let meta: ArrayMetadataV3 = serde_json::from_value(doc.clone())
        .map_err(|e| ZarrError::metadata(&display, format!("invalid array metadata: {e}")))?;
    let dimension_names = match &meta.dimension_names {
        Some(names) => names.clone(),
        None => vec![None; meta.shape.len()],
    };
    finish_array(
        display,
        path,
        3,
        data_type_name,
        dimension_names,
        ArrayMetadata::V3(meta),
        doc,
    )
}

/// Checks where the `fixed_length_utf32` specification is stricter than zarr-python.
fn check_fixed_length_utf32_v3(display: &str, doc: &Value) -> Result<()> {
    let rule = |m: String| {
        ZarrError::metadata(
            display,
            format!("{m} (fixed_length_utf32 specification; zarr-python is looser here)"),
        )
    };
    let config = doc
        .get("data_type")
        .and_then(|d| d.get("configuration"))
        .and_then(Value::as_object)
        .ok_or_else(|| rule("data_type needs a configuration with length_bytes".into()))?;
    let length_bytes = match config.get("length_bytes") {
        Some(Value::Number(n)) => n.as_u64().filter(|v| *v > 0 && v % 4 == 0),
        _ => None,
    }
    .ok_or_else(|| {
        rule(format!(
            "length_bytes must be a positive multiple of 4, got {}",
            config
                .get("length_bytes")
                .map_or("nothing".to_string(), Value::to_string)
        ))
    })?;
    if let Some(extra) = config.keys().find(|k| k.as_str() != "length_bytes") {
        return Err(rule(format!(
            "unknown key '{extra}' in the data_type configuration"
        )));
    }
    match doc.get("fill_value") {
        Some(Value::String(s)) => {
            let n = s.chars().count() as u64;
            if n > length_bytes / 4 {
                return Err(rule(format!(
                    "fill_value has {n} code points, more than length_bytes / 4 = {}",
                    length_bytes / 4
                )));
            }
        }
        other => {
            return Err(rule(format!(
                "fill_value must be a JSON string, got {}",
                other.map_or("nothing".to_string(), Value::to_string)
            )));
        }
    }
    let codecs = doc.get("codecs").and_then(Value::as_array);
    for codec in codecs.into_iter().flatten() {
        let name = codec.get("name").and_then(Value::as_str).unwrap_or("");
        if name.starts_with("vlen") {
            return Err(rule(format!(
                "codec '{name}' is variable-length and not compatible with this data type"
            )));
        }
    }
    Ok(())
}

/// Zarr V3: an unknown top-level key must be an object with `"must_understand": false`.
fn check_top_level_keys(display: &str, doc: &Value) -> Result<()> {
    const KNOWN: &[&str] = &[
        "zarr_format",
        "node_type",
        "shape",
        "data_type",
        "chunk_grid",
        "chunk_key_encoding",
        "fill_value",
        "codecs",
        "attributes",
        "storage_transformers",
        "dimension_names",
    ];
    for (key, value) in doc.as_object().into_iter().flatten() {
        let optional = value.get("must_understand") == Some(&Value::Bool(false));
        if !KNOWN.contains(&key.as_str()) && !optional {
            return Err(ZarrError::metadata(
                display,
                format!(
                    "unknown key '{key}' in array metadata is not marked \"must_understand\": false"
                ),
            ));
        }
    }
    Ok(())
}

/// The `bytes` codec must say its byte order for multi-byte elements (zarrs does not check).
fn check_bytes_endian(display: &str, codecs: Option<&Value>) -> Result<()> {
    for codec in codecs.and_then(Value::as_array).into_iter().flatten() {
        match codec.get("name").and_then(Value::as_str) {
            Some("bytes") if codec.pointer("/configuration/endian").is_none() => {
                return Err(ZarrError::metadata(
                    display,
                    "the bytes codec has no endian, which multi-byte data types require",
                ));
            }
            Some("sharding_indexed") => {
                check_bytes_endian(display, codec.pointer("/configuration/codecs"))?;
            }
            _ => {}
        }
    }
    Ok(())
}

/// Builds a V2 array node from `.zarray` (and `.zattrs`).
fn array_v2(
    location: &str,
    path: &str,
    mut zarray: Value,
    zattrs: Option<Value>,
) -> Result<ArrayNode> {
    let display = display_in(location, path);
    check_zarr_format(&display, &zarray, 2)?;
    let dtype = zarray.get("dtype").cloned().unwrap_or(Value::Null);
    let data_type_name = match &dtype {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let is_unicode = is_v2_unicode(&data_type_name);
    // zarr-python 2 writes `null` for "no fill value"; on `<U` zarrs maps it to 0 and then
    // rejects it. A missing fill reads as the empty string, as zarr-python reads it.
    if is_unicode && zarray.get("fill_value").is_some_and(Value::is_null) {
        zarray["fill_value"] = Value::String(String::new());
    }
    let attributes = zattrs.unwrap_or_else(|| Value::Object(Map::new()));
    let shape_len = zarray
        .get("shape")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    let dimension_names: Vec<Option<String>> = match attributes
        .get("_ARRAY_DIMENSIONS")
        .and_then(Value::as_array)
    {
        Some(names) if names.len() == shape_len => names
            .iter()
            .map(|n| n.as_str().map(str::to_string))
            .collect(),
        Some(names) => {
            return Err(ZarrError::metadata(
                &display,
                format!(
                    "_ARRAY_DIMENSIONS has {} names for {shape_len} dimensions",
                    names.len()
                ),
            ));
        }
        None => vec![None; shape_len],
    };
    let meta: ArrayMetadataV2 = serde_json::from_value(zarray.clone())
        .map_err(|e| ZarrError::metadata(&display, format!("invalid .zarray: {e}")))?;
    let mut doc = zarray;
    doc["attributes"] = attributes;
    finish_array(
        display,
        path,
        2,
        data_type_name,
        dimension_names,
        ArrayMetadata::V2(meta),
        doc,
    )
}

fn is_v2_unicode(dtype: &str) -> bool {
    let b = dtype.as_bytes();
    b.len() > 2
        && (b[0] == b'<' || b[0] == b'>')
        && b[1] == b'U'
        && b[2..].iter().all(u8::is_ascii_digit)
}

fn finish_array(
    display: String,
    path: &str,
    zarr_format: u8,
    data_type_name: String,
    dimension_names: Vec<Option<String>>,
    meta: ArrayMetadata,
    doc: Value,
) -> Result<ArrayNode> {
    // zarrs multiplies shapes unchecked: reject element counts that overflow first.
    let shape_of = |key: &str| -> Vec<u64> {
        doc.get(key)
            .and_then(Value::as_array)
            .map(|s| s.iter().filter_map(Value::as_u64).collect())
            .unwrap_or_default()
    };
    let declared_shape = shape_of("shape");
    if declared_shape
        .iter()
        .try_fold(1u64, |acc, &d| acc.checked_mul(d))
        .is_none()
    {
        return Err(ZarrError::metadata(
            &display,
            format!("shape {declared_shape:?} has more elements than fit in u64"),
        ));
    }
    let node_path = format!("/{path}");
    let (array, kind) = match ZarrsArray::new_with_metadata(Arc::new(()), &node_path, meta) {
        Ok(array) => {
            let kind = element_kind(&array);
            (kind.is_some().then(|| Arc::new(array)), kind)
        }
        // A data type zarrs does not know: the array is unsupported, which is an error only
        // when it is used.
        Err(ArrayCreateError::DataTypeCreateError(_)) => (None, None),
        Err(e) => {
            return Err(ZarrError::metadata(
                &display,
                format!("invalid array metadata: {e}"),
            ));
        }
    };
    let shape = match &array {
        Some(a) => a.shape().to_vec(),
        None => doc
            .get("shape")
            .and_then(Value::as_array)
            .map(|s| s.iter().filter_map(Value::as_u64).collect())
            .unwrap_or_default(),
    };
    let shard_index = match (&array, zarr_format) {
        (Some(_), 3) => {
            let shard_shape: Vec<u64> = doc
                .pointer("/chunk_grid/configuration/chunk_shape")
                .and_then(Value::as_array)
                .map(|s| s.iter().filter_map(Value::as_u64).collect())
                .unwrap_or_default();
            ShardIndexLayout::from_metadata(&doc, &shard_shape)
                .map_err(|e| ZarrError::metadata(&display, e))?
        }
        _ => None,
    };
    let inner = inner_chunks(&doc, &shard_index).map(Arc::new);
    Ok(ArrayNode {
        display,
        path: path.to_string(),
        name: array_name(path),
        zarr_format,
        data_type_name,
        kind,
        array,
        dimension_names,
        shape,
        metadata: doc,
        shard_index,
        inner,
    })
}

fn element_kind(array: &ZarrsArray) -> Option<ElementKind> {
    let dt = array.data_type();
    if let Some(t) = dt.downcast_ref::<FixedLengthUTF32DataType>() {
        return usize::try_from(t.length_bytes().get())
            .ok()
            .map(|length_bytes| ElementKind::Utf32 { length_bytes });
    }
    if dt.is::<StringDataType>() {
        return Some(ElementKind::String);
    }
    let arrow = if dt.is::<BoolDataType>() {
        ArrowType::Boolean
    } else if dt.is::<Int8DataType>() {
        ArrowType::Int8
    } else if dt.is::<Int16DataType>() {
        ArrowType::Int16
    } else if dt.is::<Int32DataType>() {
        ArrowType::Int32
    } else if dt.is::<Int64DataType>() {
        ArrowType::Int64
    } else if dt.is::<UInt8DataType>() {
        ArrowType::UInt8
    } else if dt.is::<UInt16DataType>() {
        ArrowType::UInt16
    } else if dt.is::<UInt32DataType>() {
        ArrowType::UInt32
    } else if dt.is::<UInt64DataType>() {
        ArrowType::UInt64
    } else if dt.is::<Float16DataType>() {
        ArrowType::Float16
    } else if dt.is::<Float32DataType>() {
        ArrowType::Float32
    } else if dt.is::<Float64DataType>() {
        ArrowType::Float64
    } else {
        return None;
    };
    Some(ElementKind::Primitive(arrow))
}

async fn open_v2_group(store: &ZarrStore, path: &str, zgroup: Value, limit: u64) -> Result<Node> {
    let display = node_display(store, path);
    check_zarr_format(&display, &zgroup, 2)?;
    let attributes = get_json(store, &join_key(path, ".zattrs"), limit)
        .await?
        .and_then(|v| v.as_object().cloned())
        .unwrap_or_default();
    let mut arrays = Vec::new();
    let mut groups = Vec::new();
    // zarr-python 2's consolidated metadata lives in `.zmetadata` at the store root.
    let consolidated = get_json(store, ".zmetadata", limit)
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
                arrays.push(array_v2(
                    store.display_location(),
                    &child_path,
                    zarray.clone(),
                    zattrs,
                )?);
            } else {
                groups.push(name.to_string());
            }
        }
    } else {
        for name in store.list_children(path).await? {
            let child_path = join_key(path, &name);
            if let Some(zarray) = get_json(store, &join_key(&child_path, ".zarray"), limit).await? {
                let zattrs = get_json(store, &join_key(&child_path, ".zattrs"), limit).await?;
                arrays.push(array_v2(
                    store.display_location(),
                    &child_path,
                    zarray,
                    zattrs,
                )?);
            } else if get_json(store, &join_key(&child_path, ".zgroup"), limit)
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
