//! Opened metadata: the arrays and groups of a store, read the way zarr-python writes them
//! (`zarr.json`, zarr-python's inline consolidated metadata, and Zarr V2's `.zarray`,
//! `.zgroup`, `.zattrs` and `.zmetadata`).
//!
//! zarrs parses the metadata and builds the codec chain. What is ours, one room each:
//! [`discover`] finds nodes and their children without listing chunks (the only I/O here);
//! [`v3`] and [`v2`] turn one array's documents into zarrs metadata (the V2 `null` fill on
//! `<U`, which zarrs rejects, included); [`numpy_types`] NumPy's datetime, timedelta and `S`
//! types, handed to zarrs as the storage it reads; [`validate`] holds the checks where the
//! `fixed_length_utf32` specification and Zarr are stricter than zarr-python or zarrs;
//! [`cf_attributes`] reads the CF conventions of its attributes (times, packed numbers); [`json`] parses
//! documents as Python writes them (bare `NaN`); [`characters`] joins netCDF character
//! arrays into strings as xarray does; [`array`] builds the [`ArrayNode`]: the zarrs array, the element kind, the shard layout.

mod array;
pub mod cf_attributes;
mod characters;
mod discover;
mod json;
mod numpy_types;
mod v2;
mod v3;
mod validate;

use std::sync::Arc;

use arrow::datatypes::DataType as ArrowType;
use serde_json::{Map, Value};
use zarrs::array::Array;

use crate::codecs::shard_index::ShardIndexLayout;
use crate::error::{Result, ZarrError};
use crate::limits::Limits;
use json::parse_json;

pub(crate) use discover::open_node;
pub(crate) use numpy_types::NAT;

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
    /// Variable-length bytes (V3 `variable_length_bytes`, V2 `|O` with the `vlen-bytes`
    /// filter), read as `Binary`.
    VariableBytes,
    /// NumPy's `S` (`null_terminated_bytes`, V2 `|S3`): `length_bytes` bytes per element, read
    /// as `Binary` without their trailing NULs.
    Bytes {
        /// Bytes per element.
        length_bytes: usize,
    },
    /// A fixed-size numeric, boolean or temporal type, held in native byte order. NumPy's
    /// `datetime64`/`timedelta64` are `int64` in storage (NaT is null); `D` becomes `Date32`.
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
    /// What the CF attributes ask of the stored numbers (applied under `decode_cf`).
    pub cf: Option<cf_attributes::CfDecoding>,
    /// The text encoding of bytes whose `_Encoding` names one: strings under `decode_cf`.
    pub text: Option<cf_attributes::TextEncoding>,
    /// A netCDF character array (`S1`, its last dimension the string length) as xarray joins
    /// it, one string per row of that dimension: what tables read under `decode_cf`, or why
    /// it cannot be read so ([`characters`]).
    pub characters: Option<std::result::Result<Arc<ArrayNode>, String>>,
    /// For such a joined array: the character array, whose stored chunks it reads (its chunk
    /// at `[i, j]` is the character array's at `[i, j, 0]`).
    pub chunk_keys_of: Option<Arc<ZarrsArray>>,
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

impl InnerChunks {
    /// The shard holding the inner chunk at `indices` (over the inner chunk grid), and the
    /// inner chunk's position inside it (C order): its entry in the shard index.
    pub(crate) fn locate(&self, indices: &[u64]) -> (Vec<u64>, u64) {
        let shard = indices
            .iter()
            .zip(&self.per_shard)
            .map(|(i, &p)| i / p.max(1))
            .collect();
        let within = indices
            .iter()
            .zip(&self.per_shard)
            .fold(0u64, |acc, (i, &p)| acc * p + i % p.max(1));
        (shard, within)
    }
}

impl ArrayNode {
    /// The decoded size of one element as the metadata declares it: a variable-length
    /// element takes at least its offset ([`crate::limits::VARIABLE_ELEMENT_BYTES`]).
    pub(crate) fn element_bytes(&self) -> u64 {
        self.zarrs()
            .ok()
            .and_then(|a| a.data_type().fixed_size())
            .map_or(crate::limits::VARIABLE_ELEMENT_BYTES, |size| size as u64)
    }

    /// The decoded size of a box of `extent` of the array as its metadata declares it,
    /// saturating: the estimate budgets and bounds compare before reading.
    pub(crate) fn declared_bytes(&self, extent: &[u64]) -> u64 {
        (extent.iter()).fold(self.element_bytes(), |acc, &e| acc.saturating_mul(e))
    }

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

/// A child array whose metadata could not be read.
#[derive(Debug, Clone)]
pub struct UnreadableArray {
    /// The last path segment.
    pub name: String,
    /// Why, with the array's location.
    pub error: String,
}

impl UnreadableArray {
    /// The error to raise where the array is needed, in group `group`.
    pub fn error(&self, group: &str) -> ZarrError {
        ZarrError::metadata(
            group,
            format!(
                "its array {} cannot be read ({}); choose the others with the option 'arrays' \
                 (comma-separated)",
                self.name, self.error
            ),
        )
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
    /// Direct child arrays whose metadata is invalid, sorted by name: the group stays
    /// readable (its other arrays can be named), and a table of it all names them.
    pub unreadable: Vec<UnreadableArray>,
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

pub(crate) fn display_in(location: &str, path: &str) -> String {
    if path.is_empty() {
        location.to_string()
    } else {
        format!("{location}/{path}")
    }
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

fn array_name(path: &str) -> String {
    match path.rsplit('/').next() {
        Some(last) if !last.is_empty() => last.to_string(),
        _ => "value".to_string(),
    }
}
