//! netCDF character arrays as xarray reads them: an `S1` array with named dimensions, whose
//! last dimension is the string length (`name(station, strlen)`, as netCDF stores `char`
//! and xarray writes it back), is one string per row of that dimension (`name(station)`),
//! without its trailing NULs.
//!
//! The joined array is the character array's metadata rewritten: one dimension fewer, `S{k}`
//! elements (NumPy's `view` of the rows), the same codecs. When the chunks hold whole strings
//! (their last dimension is the string length, as netCDF and xarray chunk it) a chunk of the
//! joined array is byte for byte a chunk of the character array, so it reads the same stored
//! objects, by the character array's keys with a last index 0 ([`ArrayNode::chunk_keys_of`]).
//! Tables read the joined array under `decode_cf` (xarray's `concat_characters`), where
//! xarray joins it: along a string-length dimension no other kind of array uses
//! ([`keep_stackable`]).

use std::sync::Arc;

use base64::Engine;
use base64::prelude::BASE64_STANDARD;
use serde_json::{Value, json};

use super::{ArrayNode, Attributes, ElementKind};
use crate::error::Result;
use crate::limits::Limits;

/// Builds an array node, without joining characters, from its metadata document as the node
/// keeps it ([`ArrayNode::metadata`]) and its attributes.
pub(super) type Build<'a> = &'a dyn Fn(Value, Attributes) -> Result<ArrayNode>;

/// `node` with its joined array ([`ArrayNode::characters`]) when it is a character array:
/// `S1` elements and every dimension named (xarray's data). Whether its group lets it join
/// is decided with the group's other arrays ([`keep_stackable`]).
pub(super) fn attach(mut node: ArrayNode, limits: &Limits, build: Build<'_>) -> ArrayNode {
    let is_characters = node.kind == Some(ElementKind::Bytes { length_bytes: 1 })
        && !node.shape.is_empty()
        && node.dimension_names.iter().all(Option::is_some);
    if !is_characters {
        return node;
    }
    let joined = joined_document(&node, limits)
        .and_then(|(document, attributes)| build(document, attributes).map_err(|e| e.to_string()))
        .map(|mut joined| {
            joined.chunk_keys_of = node.array.clone();
            Arc::new(joined)
        });
    node.characters = Some(joined);
    node
}

/// Leaves joined only the character arrays whose string-length dimension xarray "stacks"
/// (`conventions.decode_cf_variables`): no array of the group is named after it, and every
/// array along it holds bytes (`S`) with it last. A one-byte flag (`qc(time)` beside
/// `temp(time)`, Argo's `PSAL_QC(N_PROF, N_LEVELS)`) stays one character per row.
pub(super) fn keep_stackable(arrays: &mut [ArrayNode]) {
    let last_dimension = |a: &ArrayNode| a.dimension_names.last().cloned().flatten();
    let stackable = |dim: &str| {
        let along = |a: &&ArrayNode| a.dimension_names.iter().flatten().any(|d| d == dim);
        !arrays.iter().any(|a| a.name == dim)
            && arrays.iter().filter(along).all(|a| {
                matches!(a.kind, Some(ElementKind::Bytes { .. }))
                    && last_dimension(a).as_deref() == Some(dim)
            })
    };
    let unstacked: Vec<bool> = arrays
        .iter()
        .map(|a| a.characters.is_some() && !last_dimension(a).is_some_and(|d| stackable(&d)))
        .collect();
    for (array, unstacked) in arrays.iter_mut().zip(unstacked) {
        if unstacked {
            array.characters = None;
        }
    }
}

/// The joined array's metadata and attributes, or why the character array cannot be read
/// joined.
fn joined_document(
    node: &ArrayNode,
    limits: &Limits,
) -> std::result::Result<(Value, Attributes), String> {
    let rank = node.shape.len();
    let Some(&length) = node.shape.last() else {
        return Err("it has no dimensions".into());
    };
    let doc = &node.document();
    // Strings of no characters (a string length of 0, which netCDF allows): nothing is
    // stored, and each reads as the fill of one NUL, the empty string.
    let empty = length == 0;
    let width = length.max(1);
    limits
        .chunk
        .check(&node.display, "one joined string", Some(width))
        .map_err(|e| e.to_string())?;
    let length_bytes = usize::try_from(width).map_err(|e| e.to_string())?;
    let fill = match empty {
        true => Value::Null,
        false => joined_fill(doc.get("fill_value"), length_bytes)?,
    };
    let length = (!empty).then_some(length);
    let mut doc = doc.clone();
    drop_last(&mut doc, "shape", rank)?;
    doc["fill_value"] = fill;
    if node.zarr_format == 2 {
        whole_strings(doc.get("chunks"), rank, length, "chunk shape")?;
        drop_last(&mut doc, "chunks", rank)?;
        if rank > 1 && doc.get("order").and_then(Value::as_str) == Some("F") {
            return Err(
                "its chunks are in Fortran order (\"order\": \"F\"): a string's \
                        characters are not together"
                    .into(),
            );
        }
        doc["dtype"] = json!(format!("|S{width}"));
        let mut attributes = node.attributes.clone();
        if let Some(names) = attributes.get("_ARRAY_DIMENSIONS") {
            let mut names = json!({ "_ARRAY_DIMENSIONS": names });
            drop_last(&mut names, "_ARRAY_DIMENSIONS", rank)?;
            attributes = attributes.with("_ARRAY_DIMENSIONS", names["_ARRAY_DIMENSIONS"].take());
        }
        if let Some(nczarr) = doc.get_mut("_NCZARR_ARRAY") {
            drop_last(nczarr, "dimrefs", rank)?;
        }
        Ok((doc, attributes))
    } else {
        let chunk_shape = "/chunk_grid/configuration/chunk_shape";
        whole_strings(doc.pointer(chunk_shape), rank, length, "chunk shape")?;
        if let Some(shape) = doc.pointer_mut(chunk_shape) {
            drop_last(shape, "", rank)?;
        }
        drop_last(&mut doc, "dimension_names", rank)?;
        if empty {
            doc["fill_value"] = json!("");
        }
        doc["data_type"] = json!({"name": "null_terminated_bytes",
                                  "configuration": {"length_bytes": width}});
        if let Some(codecs) = doc.get_mut("codecs") {
            joined_codecs(codecs, rank, length)?;
        }
        Ok((doc, node.attributes.clone()))
    }
}

/// The codecs of the joined array: a `transpose` loses its last axis (which must stay last),
/// a `sharding_indexed` its inner chunks' last dimension (which must be whole strings).
fn joined_codecs(
    codecs: &mut Value,
    rank: usize,
    length: Option<u64>,
) -> std::result::Result<(), String> {
    let Some(codecs) = codecs.as_array_mut() else {
        return Ok(());
    };
    for codec in codecs {
        let name = codec
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let name = name.to_string();
        let Some(config) = codec.get_mut("configuration") else {
            continue;
        };
        if name == "transpose" {
            let order = config.get("order").and_then(Value::as_array);
            let last = order.filter(|o| o.len() == rank).and_then(|o| o.last());
            if last.and_then(Value::as_u64) != Some(rank as u64 - 1) {
                return Err(
                    "a transpose codec moves its string-length (last) dimension: \
                            a string's characters are not together"
                        .into(),
                );
            }
            drop_last(config, "order", rank)?;
        } else if name == "sharding_indexed" {
            whole_strings(config.get("chunk_shape"), rank, length, "inner chunk shape")?;
            drop_last(config, "chunk_shape", rank)?;
            if let Some(inner) = config.get_mut("codecs") {
                joined_codecs(inner, rank, length)?;
            }
        }
    }
    Ok(())
}

/// Checks that the last of a chunk shape's `rank` entries is the string length (`None`:
/// strings of no characters, which no chunk holds).
fn whole_strings(
    chunk_shape: Option<&Value>,
    rank: usize,
    length: Option<u64>,
    what: &str,
) -> std::result::Result<(), String> {
    let last = chunk_shape
        .and_then(Value::as_array)
        .filter(|s| s.len() == rank)
        .and_then(|s| s.last())
        .and_then(Value::as_u64);
    let Some(length) = length else {
        return last
            .map(|_| ())
            .ok_or_else(|| format!("its {what} is not a list of {rank} sizes"));
    };
    match last {
        Some(last) if last == length => Ok(()),
        Some(last) if last < length => Err(format!(
            "its {what} splits the {length} characters of a string into chunks of {last}: \
             each chunk must hold whole strings"
        )),
        Some(last) => Err(format!(
            "its {what} holds {last} characters where a string has {length}: each chunk must \
             hold whole strings, exactly"
        )),
        None => Err(format!("its {what} is not a list of {rank} sizes")),
    }
}

/// Removes the last of the `rank` entries of the list at `key` (`""`: `value` itself).
fn drop_last(value: &mut Value, key: &str, rank: usize) -> std::result::Result<(), String> {
    let list = if key.is_empty() {
        Some(value)
    } else {
        value.get_mut(key)
    };
    match list {
        None | Some(Value::Null) => Ok(()),
        Some(Value::Array(list)) if list.len() == rank => {
            list.pop();
            Ok(())
        }
        Some(other) => Err(format!("its {key} {other} does not have {rank} entries")),
    }
}

/// The fill value of a string: the character's (base64, as zarr-python writes `S`) repeated
/// `length_bytes` times, as NumPy views a row of it; `null` stays `null`.
fn joined_fill(fill: Option<&Value>, length_bytes: usize) -> std::result::Result<Value, String> {
    let encoded = match fill {
        None | Some(Value::Null) => return Ok(Value::Null),
        Some(Value::String(s)) => s,
        Some(other) => return Err(format!("its fill_value {other} is not a base64 string")),
    };
    let character = BASE64_STANDARD
        .decode(encoded)
        .map_err(|e| format!("its fill_value {encoded:?} is not base64: {e}"))?;
    match character.as_slice() {
        [] => Ok(json!("")),
        [c] => Ok(json!(BASE64_STANDARD.encode(vec![*c; length_bytes]))),
        _ => Err(format!(
            "its fill_value holds {} bytes, more than one character",
            character.len()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fill_values_repeat_the_character() {
        assert_eq!(joined_fill(None, 3).unwrap(), Value::Null);
        assert_eq!(joined_fill(Some(&json!("")), 3).unwrap(), json!(""));
        assert_eq!(joined_fill(Some(&json!("eA==")), 3).unwrap(), json!("eHh4"));
        assert!(joined_fill(Some(&json!("eHh4")), 3).is_err());
        assert!(joined_fill(Some(&json!(7)), 3).is_err());
    }

    #[test]
    fn codecs_lose_the_string_dimension() {
        let mut codecs = json!([
            {"name": "transpose", "configuration": {"order": [1, 0, 2]}},
            {"name": "sharding_indexed", "configuration": {
                "chunk_shape": [2, 3, 8],
                "codecs": [{"name": "bytes"}, {"name": "zstd", "configuration": {"level": 1}}],
                "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}]}}
        ]);
        joined_codecs(&mut codecs, 3, Some(8)).unwrap();
        assert_eq!(codecs[0]["configuration"]["order"], json!([1, 0]));
        assert_eq!(codecs[1]["configuration"]["chunk_shape"], json!([2, 3]));
        let mut moved = json!([{"name": "transpose", "configuration": {"order": [1, 0]}}]);
        let e = joined_codecs(&mut moved, 2, Some(8)).unwrap_err();
        assert!(e.contains("moves its string-length"), "{e}");
        let mut split = json!([{"name": "sharding_indexed", "configuration": {
            "chunk_shape": [2, 4], "codecs": [], "index_codecs": []}}]);
        let e = joined_codecs(&mut split, 2, Some(8)).unwrap_err();
        assert!(e.contains("into chunks of 4"), "{e}");
    }
}
