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
//! [`json`] parses documents as Python writes them (bare `NaN`); [`document`] reads a document
//! as far as it is used, [`attributes`] keeps a node's attributes as written and parses the
//! used ones; [`characters`] joins netCDF character arrays into strings as xarray does;
//! [`array`] builds the [`ArrayNode`] ([`array_node`]: the zarrs array, the element kind, the
//! shard layout, the chunk keys; [`element_kind`] the kinds of elements), reading the CF
//! conventions of its attributes (times, packed numbers) through the crate's `cf`;
//! [`group_node`] holds the group and [`Node`] types.

mod array;
mod array_node;
mod attributes;
mod characters;
mod discover;
mod document;
mod element_kind;
mod group_node;
mod json;
mod numpy_types;
mod v2;
mod v3;
mod validate;

pub(crate) use array::display_in;
pub use array_node::{ArrayNode, InnerChunks, ZarrsArray};
pub use attributes::Attributes;
pub(crate) use discover::{is_no_node, open_node, parse_array};
pub use element_kind::ElementKind;
pub use group_node::{GroupNode, Node, UnreadableArray};
