//! Zarr V3 arrays: `zarr.json` checked and handed to zarrs.

use serde_json::Value;
use zarrs::array::{ArrayMetadata, ArrayMetadataV3};

use super::{ArrayNode, array, display_in, validate};
use crate::error::{Result, ZarrError};
use crate::limits::Limits;

/// Builds a V3 array node from its `zarr.json`.
pub(super) fn array(
    location: &str,
    path: &str,
    mut doc: Value,
    limits: &Limits,
) -> Result<ArrayNode> {
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
    numcodecs_filters_in_byte_order(&display, doc.get_mut("codecs"))?;
    let rank = doc
        .get("shape")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    validate::codec_configurations(&display, doc.get("codecs"), rank)?;
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

/// numcodecs' filters that we decode as bytes (`codecs/plugin.rs`).
const NUMCODECS_FILTERS: [&str; 7] = [
    "numcodecs.astype",
    "numcodecs.bitround",
    "numcodecs.categorize",
    "numcodecs.delta",
    "numcodecs.fixedscaleoffset",
    "numcodecs.packbits",
    "numcodecs.quantize",
];

/// zarr-python applies numcodecs' filters to arrays in memory and the `bytes` codec after them
/// writes the result in its byte order, whatever the filter's dtype strings say (`"f8"`, or
/// `"<f4"` before a big-endian `bytes`). Our decoders read those filters' bytes, so this writes
/// that byte order into their dtypes. A filter before another array-to-bytes codec (sharding:
/// it would be given the shard's bytes) is refused; inside a shard's codecs it is read.
fn numcodecs_filters_in_byte_order(display: &str, codecs: Option<&mut Value>) -> Result<()> {
    let Some(codecs) = codecs.and_then(Value::as_array_mut) else {
        return Ok(());
    };
    let name = |codec: &Value| codec.get("name").and_then(Value::as_str).map(str::to_owned);
    let filters = codecs
        .iter()
        .take_while(|c| name(c).is_some_and(|n| n != "bytes" && n != "sharding_indexed"))
        .filter(|c| name(c).is_some_and(|n| NUMCODECS_FILTERS.contains(&n.as_str())))
        .count();
    let Some(at) = codecs
        .iter()
        .position(|c| name(c).is_some_and(|n| n == "bytes" || n == "sharding_indexed"))
    else {
        return Ok(());
    };
    if name(&codecs[at]).as_deref() == Some("sharding_indexed") {
        if filters > 0 {
            return Err(ZarrError::metadata(
                display,
                "a numcodecs filter before sharding_indexed is not read (zarr-python puts \
                 filters inside the shard's codecs)",
            ));
        }
        return numcodecs_filters_in_byte_order(
            display,
            codecs[at].pointer_mut("/configuration/codecs"),
        );
    }
    let order = match codecs[at]
        .pointer("/configuration/endian")
        .and_then(Value::as_str)
    {
        Some("big") => '>',
        _ => '<',
    };
    for codec in &mut codecs[..at] {
        if !name(codec).is_some_and(|n| NUMCODECS_FILTERS.contains(&n.as_str())) {
            continue;
        }
        let Some(configuration) = codec
            .get_mut("configuration")
            .and_then(Value::as_object_mut)
        else {
            continue;
        };
        for key in ["dtype", "astype", "encode_dtype", "decode_dtype"] {
            if let Some(Value::String(dtype)) = configuration.get_mut(key) {
                let bare = dtype.trim_start_matches(['<', '>', '|', '=']);
                *dtype = format!("{order}{bare}");
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn numcodecs_filters_take_the_byte_order_of_bytes() {
        let mut codecs = json!([
            {"name": "numcodecs.fixedscaleoffset",
             "configuration": {"dtype": "f8", "astype": "<i4", "scale": 1, "offset": 0}},
            {"name": "transpose", "configuration": {"order": [0]}},
            {"name": "bytes", "configuration": {"endian": "big"}},
            {"name": "zstd", "configuration": {"level": 0}}
        ]);
        numcodecs_filters_in_byte_order("a", Some(&mut codecs)).unwrap();
        assert_eq!(codecs[0]["configuration"]["dtype"], ">f8");
        assert_eq!(codecs[0]["configuration"]["astype"], ">i4");

        let mut sharded = json!([
            {"name": "sharding_indexed", "configuration": {"codecs": [
                {"name": "numcodecs.quantize", "configuration": {"dtype": "f4", "digits": 1}},
                {"name": "bytes", "configuration": {"endian": "little"}}
            ]}}
        ]);
        numcodecs_filters_in_byte_order("a", Some(&mut sharded)).unwrap();
        assert_eq!(
            sharded[0]["configuration"]["codecs"][0]["configuration"]["dtype"],
            "<f4"
        );

        let mut outside = json!([
            {"name": "numcodecs.packbits", "configuration": {}},
            {"name": "sharding_indexed", "configuration": {"codecs": []}}
        ]);
        let e = numcodecs_filters_in_byte_order("a", Some(&mut outside)).unwrap_err();
        assert!(e.to_string().contains("before sharding_indexed"), "{e}");
    }
}
