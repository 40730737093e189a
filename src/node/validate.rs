//! Checks where Zarr and the `fixed_length_utf32` specification are stricter than
//! zarr-python or zarrs: each names the node and the rule broken.

use serde_json::Value;

use crate::error::{Result, ZarrError};

pub(super) fn zarr_format(display: &str, doc: &Value, expected: u64) -> Result<()> {
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

/// Checks where the `fixed_length_utf32` specification is stricter than zarr-python.
pub(super) fn fixed_length_utf32_v3(display: &str, doc: &Value) -> Result<()> {
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

/// The top-level keys of a Zarr V3 array's `zarr.json`.
pub(super) const V3_KEYS: &[&str] = &[
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

/// Zarr V3: an unknown top-level key must be an object with `"must_understand": false`.
pub(super) fn top_level_keys(display: &str, doc: &Value) -> Result<()> {
    const KNOWN: &[&str] = V3_KEYS;
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
pub(super) fn bytes_endian(display: &str, codecs: Option<&Value>) -> Result<()> {
    for codec in codecs.and_then(Value::as_array).into_iter().flatten() {
        match codec.get("name").and_then(Value::as_str) {
            Some("bytes") if codec.pointer("/configuration/endian").is_none() => {
                return Err(ZarrError::metadata(
                    display,
                    "the bytes codec has no endian, which multi-byte data types require",
                ));
            }
            Some("sharding_indexed") => {
                bytes_endian(display, codec.pointer("/configuration/codecs"))?;
            }
            _ => {}
        }
    }
    Ok(())
}

/// Codec configurations zarrs refuses with a message that names no rule ("data did not match
/// any variant of untagged enum …") or reads until a chunk fails: a `transpose` order that is
/// not a permutation of the array's `rank` dimensions, a shuffle's `elementsize` that is not a
/// positive integer. `codecs` are V3 codecs (`name`, `configuration`, also inside
/// `sharding_indexed`) or V2 filters and the V2 compressor (`id` and the configuration beside
/// it): one check wherever a numcodecs configuration appears.
pub(super) fn codec_configurations<'a>(
    display: &str,
    codecs: impl IntoIterator<Item = &'a Value>,
    rank: usize,
) -> Result<()> {
    for codec in codecs {
        let (name, configuration) = match codec.get("name") {
            Some(name) => (name.as_str(), codec.get("configuration")),
            None => (codec.get("id").and_then(Value::as_str), Some(codec)),
        };
        let setting = |key: &str| configuration.and_then(|c| c.get(key));
        match name.unwrap_or("") {
            "transpose" => {
                let order = setting("order");
                let mut seen = vec![false; rank];
                let permutation = order.and_then(Value::as_array).is_some_and(|order| {
                    order.len() == rank
                        && order.iter().all(|i| {
                            let slot = i
                                .as_u64()
                                .and_then(|i| seen.get_mut(usize::try_from(i).ok()?));
                            slot.is_some_and(|seen| !std::mem::replace(seen, true))
                        })
                });
                if !permutation {
                    let order = order.map_or("missing".to_string(), Value::to_string);
                    return Err(ZarrError::metadata(
                        display,
                        format!(
                            "transpose order {order} is not a permutation of the array's \
                             dimensions (it has {rank})"
                        ),
                    ));
                }
            }
            "shuffle" | "numcodecs.shuffle" => match setting("elementsize") {
                Some(size) if size.as_u64().is_none_or(|n| n == 0) => {
                    return Err(ZarrError::metadata(
                        display,
                        format!("shuffle elementsize {size} is not a positive integer"),
                    ));
                }
                _ => {}
            },
            "sharding_indexed" => {
                let inner = setting("codecs").and_then(Value::as_array);
                codec_configurations(display, inner.into_iter().flatten(), rank)?;
            }
            _ => {}
        }
    }
    Ok(())
}

/// The element count of `shape` must fit in `u64` (zarrs multiplies shapes unchecked).
pub(super) fn element_count(display: &str, shape: &[u64]) -> Result<()> {
    if shape
        .iter()
        .try_fold(1u64, |acc, &d| acc.checked_mul(d))
        .is_none()
    {
        return Err(ZarrError::metadata(
            display,
            format!("shape {shape:?} has more elements than fit in u64"),
        ));
    }
    Ok(())
}
