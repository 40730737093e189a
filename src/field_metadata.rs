//! The Zarr metadata a table's columns carry as Arrow field metadata, and a group table as its
//! schema's metadata, under the keys below: other DataFusion code and Python (pyarrow's
//! `field.metadata`) see where a column came from, DataFusion carries it through projections,
//! aliases, filters, sorts, unions and joins (a computed column carries none), and the writer
//! writes a column back with its source's attributes (`write/column.rs`). docs/table-model.md
//! shows what a column carries.

use std::collections::HashMap;

use serde_json::{Map, Value};

use crate::node::{ArrayNode, GroupNode};

/// The array's attributes as written (a JSON object; `.zattrs` in Zarr V2).
pub const ATTRIBUTES: &str = "zarr.attributes";
/// Its data type as its metadata names it (Zarr V3 `data_type` as JSON, V2 `dtype`).
pub const DATA_TYPE: &str = "zarr.data_type";
/// Its fill value as JSON (`fill_value`).
pub const FILL_VALUE: &str = "zarr.fill_value";
/// Its dimension names as a JSON array (`null` for an unnamed one).
pub const DIMENSION_NAMES: &str = "zarr.dimension_names";
/// The Zarr format of the array: `2` or `3` (in V2, xarray's `_FillValue` is the array's
/// `fill_value`).
pub const ZARR_FORMAT: &str = "zarr.zarr_format";
/// The schema metadata of a group's table: the group's attributes as written (a JSON object).
pub const GROUP_ATTRIBUTES: &str = "zarr.group_attributes";

/// The field metadata of a column read from `array`.
pub(crate) fn of_array(array: &ArrayNode) -> HashMap<String, String> {
    let document = array.document();
    let mut metadata = HashMap::new();
    // As written, not parsed: an attribute may hold a long list (the reader keeps a table's
    // memory within a few times its metadata's size).
    metadata.insert(ATTRIBUTES.into(), array.attributes.as_written().to_string());
    let data_type = match array.zarr_format {
        2 => document.get("dtype"),
        _ => document.get("data_type"),
    };
    let data_type = match data_type {
        Some(Value::String(name)) => name.clone(),
        Some(other) => other.to_string(),
        None => array.data_type_name.clone(),
    };
    metadata.insert(DATA_TYPE.into(), data_type);
    if let Some(fill) = document.get("fill_value") {
        metadata.insert(FILL_VALUE.into(), fill.to_string());
    }
    let names: Vec<Value> = (array.dimension_names.iter())
        .map(|n| n.clone().map_or(Value::Null, Value::String))
        .collect();
    metadata.insert(DIMENSION_NAMES.into(), Value::Array(names).to_string());
    metadata.insert(ZARR_FORMAT.into(), array.zarr_format.to_string());
    metadata
}

/// The value that a column read from a Zarr array was masked by, as xarray masks it: its
/// `_FillValue` attribute, or in Zarr V2 its `fill_value` (`None`: none, or not carried).
pub(crate) fn mask_in(metadata: &HashMap<String, String>) -> Option<Value> {
    if let Some(fill) = attributes_in(metadata, ATTRIBUTES).and_then(|mut a| a.remove("_FillValue"))
    {
        return Some(fill);
    }
    v2_fill_in(metadata)
}

/// A Zarr V2 array's `fill_value` (xarray's `_FillValue` there), if the column was read from
/// one that has one.
pub(crate) fn v2_fill_in(metadata: &HashMap<String, String>) -> Option<Value> {
    if metadata.get(ZARR_FORMAT).map(String::as_str) != Some("2") {
        return None;
    }
    serde_json::from_str::<Value>(metadata.get(FILL_VALUE)?)
        .ok()
        .filter(|fill| !fill.is_null())
}

/// The schema metadata of a group's table.
pub(crate) fn of_group(group: &GroupNode) -> HashMap<String, String> {
    HashMap::from([(
        GROUP_ATTRIBUTES.into(),
        group.attributes.as_written().to_string(),
    )])
}

/// The attributes an object of field or schema metadata carries under `key` (`None`: none,
/// or not a JSON object).
pub(crate) fn attributes_in(
    metadata: &HashMap<String, String>,
    key: &str,
) -> Option<Map<String, Value>> {
    match serde_json::from_str(metadata.get(key)?) {
        Ok(Value::Object(map)) => Some(map),
        _ => None,
    }
}
