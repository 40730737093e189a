//! Zarr V3 arrays: `zarr.json` checked and handed to zarrs.

use serde_json::Value;
use zarrs::array::{ArrayMetadata, ArrayMetadataV3};

use super::{ArrayNode, Attributes, array, characters, display_in, numpy_types, validate};
use crate::error::{Result, ZarrError};
use crate::limits::Limits;

/// Builds a V3 array node from its `zarr.json`, with its strings joined when it is a netCDF
/// character array.
pub(super) fn array(
    location: &str,
    path: &str,
    doc: Value,
    attributes: Attributes,
    limits: &Limits,
) -> Result<ArrayNode> {
    let node = as_written(location, path, doc, attributes, limits)?;
    let joined = |doc: Value, attributes| as_written(location, path, doc, attributes, limits);
    Ok(characters::attach(node, limits, &joined))
}

/// Builds a V3 array node from its `zarr.json` (without its attributes) as written.
fn as_written(
    location: &str,
    path: &str,
    mut doc: Value,
    attributes: Attributes,
    limits: &Limits,
) -> Result<ArrayNode> {
    let display = display_in(location, path);
    let data_type = doc
        .get("data_type")
        .cloned()
        .ok_or_else(|| ZarrError::metadata(&display, "array metadata has no data_type"))?;
    let data_type_name = match &data_type {
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
    let fill = doc.get("fill_value").cloned().unwrap_or(Value::Null);
    let mapped = numpy_types::v3(&display, &data_type, &fill, limits)?;
    // Only the types we read need the rule: another type (an extension zarrs lacks, with
    // single-byte elements) leaves its array unsupported, not its group unreadable.
    if MULTI_BYTE.contains(&data_type_name.as_str()) {
        validate::bytes_endian(&display, doc.get("codecs"))?;
    }
    numcodecs_filters_in_byte_order(&display, doc.get_mut("codecs"))?;
    let rank = doc
        .get("shape")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    let codecs = doc.get("codecs").and_then(Value::as_array);
    validate::codec_configurations(&display, codecs.into_iter().flatten(), rank)?;
    // zarrs is given the storage of a NumPy type it does not read as we map it.
    let mut for_zarrs = doc.clone();
    let (data_type_name, kind) = match mapped {
        Some(mapped) => match mapped.read {
            Some(storage) => {
                for_zarrs["data_type"] = storage.data_type;
                for_zarrs["fill_value"] = storage.fill_value;
                (mapped.name, Some(storage.kind))
            }
            None => (mapped.name, None),
        },
        None => (data_type_name, None),
    };
    let meta: ArrayMetadataV3 = serde_json::from_value(for_zarrs)
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
        attributes,
        kind,
    };
    array::finish(parsed, path, limits)
}

/// The data types we read whose elements span several bytes: their `bytes` codec must name
/// its byte order.
const MULTI_BYTE: [&str; 12] = [
    "int16",
    "int32",
    "int64",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "float32",
    "float64",
    "fixed_length_utf32",
    "numpy.datetime64",
    "numpy.timedelta64",
];

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

/// numcodecs' filters that decode each element alone: their place among the array-to-array
/// codecs does not matter (ours decode as bytes, after any `transpose`).
const ELEMENTWISE: [&str; 5] = [
    "numcodecs.astype",
    "numcodecs.bitround",
    "numcodecs.categorize",
    "numcodecs.fixedscaleoffset",
    "numcodecs.quantize",
];

/// zarr-python applies numcodecs' filters to arrays in memory and the `bytes` codec after them
/// writes the result in its byte order, whatever the filter's dtype strings say (`"f8"`,
/// `"float32"`, or `"<f4"` before a big-endian `bytes`). Our decoders read those filters'
/// bytes, so this writes that byte order into their dtypes (NumPy's names as `<f4`). A filter
/// we would read in another place than zarr-python wrote it is refused: before an
/// array-to-bytes codec other than `bytes` (sharding: it would be given the shard's bytes;
/// inside a shard's codecs it is read), or before a `transpose` when it is not elementwise.
fn numcodecs_filters_in_byte_order(display: &str, codecs: Option<&mut Value>) -> Result<()> {
    let Some(codecs) = codecs.and_then(Value::as_array_mut) else {
        return Ok(());
    };
    let name = |codec: &Value| {
        let name = codec.get("name").and_then(Value::as_str);
        name.unwrap_or_default().to_owned()
    };
    let misplaced = |filter: &str, before: &str| {
        ZarrError::metadata(
            display,
            format!(
                "{filter} before {before} is not read: numcodecs filters are read just before \
                 the bytes codec (zarr-python puts them there, and inside a shard's codecs)"
            ),
        )
    };
    let mut filters: Vec<usize> = Vec::new();
    for at in 0..codecs.len() {
        let here = name(&codecs[at]);
        match here.as_str() {
            filter if NUMCODECS_FILTERS.contains(&filter) => filters.push(at),
            "bytes" => {
                let order = match codecs[at]
                    .pointer("/configuration/endian")
                    .and_then(Value::as_str)
                {
                    Some("big") => '>',
                    _ => '<',
                };
                for &filter in &filters {
                    in_byte_order(&mut codecs[filter], order);
                }
                return Ok(());
            }
            "sharding_indexed" => {
                if let Some(&filter) = filters.first() {
                    return Err(misplaced(&name(&codecs[filter]), &here));
                }
                return numcodecs_filters_in_byte_order(
                    display,
                    codecs[at].pointer_mut("/configuration/codecs"),
                );
            }
            "transpose" => {
                let moved = filters.iter().map(|&f| name(&codecs[f]));
                if let Some(filter) = moved
                    .into_iter()
                    .find(|f| !ELEMENTWISE.contains(&f.as_str()))
                {
                    return Err(misplaced(&filter, &here));
                }
            }
            _ => {
                if let Some(&filter) = filters.first() {
                    return Err(misplaced(&name(&codecs[filter]), &here));
                }
            }
        }
    }
    Ok(())
}

/// Writes `order` (`<` or `>`) into the dtypes of a numcodecs filter's configuration, NumPy's
/// names (`float32`, `uint16`) as the short codes our decoders read (`f4`, `u2`).
fn in_byte_order(codec: &mut Value, order: char) {
    let Some(configuration) = codec
        .get_mut("configuration")
        .and_then(Value::as_object_mut)
    else {
        return;
    };
    for key in ["dtype", "astype", "encode_dtype", "decode_dtype"] {
        if let Some(Value::String(dtype)) = configuration.get_mut(key) {
            let bare = dtype.trim_start_matches(['<', '>', '|', '=']);
            let code = match bare {
                "int8" => "i1",
                "int16" => "i2",
                "int32" => "i4",
                "int64" => "i8",
                "uint8" => "u1",
                "uint16" => "u2",
                "uint32" => "u4",
                "uint64" => "u8",
                "float16" => "f2",
                "float32" => "f4",
                "float64" => "f8",
                other => other,
            };
            *dtype = format!("{order}{code}");
        }
    }
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
        assert!(
            e.to_string()
                .contains("numcodecs.packbits before sharding_indexed is not read"),
            "{e}"
        );

        // NumPy's names, as zarr-python writes what it is given.
        let mut named = json!([
            {"name": "numcodecs.fixedscaleoffset",
             "configuration": {"dtype": "float32", "astype": "int16", "scale": 10, "offset": 1}},
            {"name": "bytes", "configuration": {"endian": "little"}}
        ]);
        numcodecs_filters_in_byte_order("a", Some(&mut named)).unwrap();
        assert_eq!(named[0]["configuration"]["dtype"], "<f4");
        assert_eq!(named[0]["configuration"]["astype"], "<i2");

        // Read in another place than written: before another serializer, or a delta before a
        // transpose (an elementwise filter there is read as written).
        for (codecs, rule) in [
            (
                json!([{"name": "numcodecs.quantize", "configuration": {"dtype": "f8", "digits": 1}},
                       {"name": "numcodecs.pcodec", "configuration": {}}]),
                "numcodecs.quantize before numcodecs.pcodec is not read",
            ),
            (
                json!([{"name": "numcodecs.delta", "configuration": {"dtype": "i4"}},
                       {"name": "transpose", "configuration": {"order": [1, 0]}},
                       {"name": "bytes", "configuration": {"endian": "little"}}]),
                "numcodecs.delta before transpose is not read",
            ),
        ] {
            let mut codecs = codecs;
            let e = numcodecs_filters_in_byte_order("a", Some(&mut codecs)).unwrap_err();
            assert!(e.to_string().contains(rule), "{e}");
        }
        let mut elementwise = json!([
            {"name": "numcodecs.astype", "configuration": {"encode_dtype": "f4", "decode_dtype": "f8"}},
            {"name": "transpose", "configuration": {"order": [1, 0]}},
            {"name": "bytes", "configuration": {"endian": "little"}}
        ]);
        numcodecs_filters_in_byte_order("a", Some(&mut elementwise)).unwrap();
        assert_eq!(elementwise[0]["configuration"]["encode_dtype"], "<f4");
    }
}
