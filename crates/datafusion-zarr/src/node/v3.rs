//! Zarr V3 arrays: `zarr.json` checked and handed to zarrs.

use serde_json::Value;
use zarrs::array::{ArrayMetadata, ArrayMetadataV3};

use super::{ArrayNode, array, display_in, validate};
use crate::error::{Result, ZarrError};
use crate::limits::Limits;

/// Builds a V3 array node from its `zarr.json`.
pub(super) fn array(location: &str, path: &str, doc: Value, limits: &Limits) -> Result<ArrayNode> {
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
    validate::top_level_keys(&display, &doc)?;
    if data_type_name == "fixed_length_utf32" {
        validate::fixed_length_utf32_v3(&display, &doc)?;
    }
    if !matches!(data_type_name.as_str(), "bool" | "int8" | "uint8") {
        validate::bytes_endian(&display, doc.get("codecs"))?;
    }
    let meta: ArrayMetadataV3 = serde_json::from_value(doc.clone())
        .map_err(|e| ZarrError::metadata(&display, format!("invalid array metadata: {e}")))?;
    let dimension_names = match &meta.dimension_names {
        Some(names) => names.clone(),
        None => vec![None; meta.shape.len()],
    };
    let parsed = array::Parsed {
        display,
        zarr_format: 3,
        data_type_name,
        dimension_names,
        meta: ArrayMetadata::V3(meta),
        doc,
    };
    array::finish(parsed, path, limits)
}
