//! [`ArrayNode`], an opened array: its zarrs metadata and codecs, the kind of its elements
//! ([`ElementKind`]), its CF decoding and netCDF characters, a sharded array's inner chunks,
//! and its chunks' keys.

use std::sync::Arc;

use serde_json::Value;
use zarrs::array::Array;

use super::Attributes;
use super::element_kind::ElementKind;
use crate::cf::{CfDecoding, TextEncoding};
use crate::codecs::shard_index::ShardIndexLayout;
use crate::error::{Result, ZarrError};

/// A zarrs array used for its metadata and codecs only: all I/O goes through [`ZarrStore`].
pub type ZarrsArray = Array<()>;

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
    /// The node's metadata document, without its attributes (V2: `.zarray`), as compact JSON
    /// text: [`ArrayNode::document`] parses it (a group of 100,000 arrays kept as values took
    /// 4 KB each).
    pub metadata: Arc<str>,
    /// Its attributes (V2: `.zattrs`).
    pub attributes: Attributes,
    /// For sharded arrays, the layout of each shard's index (checked before decoding).
    pub shard_index: Option<ShardIndexLayout>,
    /// For arrays whose only codec is `sharding_indexed`: how to read single inner chunks.
    pub inner: Option<Arc<InnerChunks>>,
    /// What the CF attributes ask of the stored numbers (applied under `decode_cf`).
    pub cf: Option<CfDecoding>,
    /// The text encoding of bytes whose `_Encoding` names one: strings under `decode_cf`.
    pub text: Option<TextEncoding>,
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

    /// The store key (below the store root) of the object holding the chunk at `indices`,
    /// by the array's own chunk key encoding as zarrs parsed it (`c/0/1`, `c.0.1`, V2's
    /// `0.1`); a joined netCDF character array's chunk is its character array's at
    /// `[indices…, 0]` ([`ArrayNode::chunk_keys_of`]). The "unsupported data type" error when
    /// zarrs has no array.
    pub(crate) fn chunk_key(&self, indices: &[u64]) -> Result<String> {
        let key = match &self.chunk_keys_of {
            Some(characters) => characters.chunk_key(&[indices, &[0]].concat()),
            None => self.zarrs()?.chunk_key(indices),
        };
        Ok(key.to_string())
    }

    /// The metadata document without its attributes, parsed.
    pub fn document(&self) -> Value {
        serde_json::from_str(&self.metadata).unwrap_or(Value::Null)
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
