//! Zarr V2 arrays: `.zarray` (with `.zattrs` for xarray's dimension names) handed to zarrs.

use serde_json::{Value, json};
use zarrs::array::{ArrayMetadata, ArrayMetadataV2};

use super::{
    ArrayNode, Attributes, ElementKind, array, characters, display_in, numpy_types, validate,
};
use crate::error::{Result, ZarrError};
use crate::limits::Limits;

/// Builds a V2 array node from `.zarray` (and `.zattrs`), with its strings joined when it is
/// a netCDF character array.
pub(super) fn array(
    location: &str,
    path: &str,
    zarray: Value,
    zattrs: Attributes,
    limits: &Limits,
) -> Result<ArrayNode> {
    let node = as_written(location, path, zarray, zattrs, limits)?;
    let joined = |doc: Value, zattrs| as_written(location, path, doc, zattrs, limits);
    Ok(characters::attach(node, limits, &joined))
}

/// Builds a V2 array node from `.zarray` (and `.zattrs`) as written.
fn as_written(
    location: &str,
    path: &str,
    mut zarray: Value,
    attributes: Attributes,
    limits: &Limits,
) -> Result<ArrayNode> {
    let display = display_in(location, path);
    validate::zarr_format(&display, &zarray, 2)?;
    let dtype = zarray.get("dtype").cloned().unwrap_or(Value::Null);
    let data_type_name = match &dtype {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    // netCDF-C 4.9.0's NCZarr writes netCDF's `char` as `<U1` holding one byte per element
    // (4.9.1 and later write `|S1`): read as the bytes they are (zarr-python cannot).
    let nczarr_char =
        zarray.get("_NCZARR_ARRAY").is_some() && matches!(data_type_name.as_str(), "<U1" | ">U1");
    let data_type_name = match nczarr_char {
        true => "|S1".to_string(),
        false => data_type_name,
    };
    let is_unicode = is_v2_unicode(&data_type_name);
    // zarr-python 2 writes `null` for "no fill value"; on `<U` zarrs maps it to 0 and then
    // rejects it. A missing fill reads as the empty string, as zarr-python reads it.
    if is_unicode && zarray.get("fill_value").is_some_and(Value::is_null) {
        zarray["fill_value"] = Value::String(String::new());
    }
    let shape_len = zarray
        .get("shape")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    // xarray's names of the dimensions: a list of strings (xarray refuses anything else).
    let names = (attributes.get("_ARRAY_DIMENSIONS")).filter(|n| !n.is_null());
    let listed = names.map(|names| {
        let names = names
            .as_array()
            .filter(|l| l.iter().all(|n| n.is_string() || n.is_null()));
        names.ok_or_else(|| {
            ZarrError::metadata(
                &display,
                "_ARRAY_DIMENSIONS must be a list of strings (the names of the dimensions)",
            )
        })
    });
    let dimension_names: Vec<Option<String>> = match listed.transpose()? {
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
        // NCZarr without xarray's attribute names them in `.zarray` (as paths `/group/dim`),
        // where xarray reads them too.
        // Of the wrong length, an error as `_ARRAY_DIMENSIONS` is (xarray fails on both).
        None => match nczarr_dimension_names(&zarray) {
            Some(names) if names.len() == shape_len => names.into_iter().map(Some).collect(),
            Some(names) => {
                return Err(ZarrError::metadata(
                    &display,
                    format!(
                        "_NCZARR_ARRAY.dimrefs has {} names for {shape_len} dimensions",
                        names.len()
                    ),
                ));
            }
            None => vec![None; shape_len],
        },
    };
    // The filters and the compressor (zarrs divided by a shuffle's elementsize 0 given as
    // the compressor: the checks ran on filters only).
    let filters = zarray.get("filters").and_then(Value::as_array);
    let compressor = zarray.get("compressor").filter(|c| c.is_object());
    let codecs = filters.into_iter().flatten().chain(compressor);
    validate::codec_configurations(&display, codecs, shape_len)?;
    // zarrs is given the storage of a NumPy type it does not read as we map it.
    let fill = zarray.get("fill_value").cloned().unwrap_or(Value::Null);
    let mut for_zarrs = zarray.clone();
    let filters = filter_ids(&zarray);
    // zarrs reads every `|O` array as strings; `vlen-bytes` writes bytes the same way.
    let vlen_bytes = data_type_name == "|O" && filters.contains(&"vlen-bytes");
    // zarr-python 2 writes `0` as the fill of a `vlen-utf8` array (`zarr.zeros(dtype=str)`);
    // zarr-python 3 reads the number as its decimal string, and so do we.
    let vlen_utf8 = data_type_name == "|O" && filters.contains(&"vlen-utf8");
    if let (true, Value::Number(n)) = (vlen_utf8, &fill) {
        for_zarrs["fill_value"] = json!(n.to_string());
    }
    let kind = match numpy_types::v2(&display, &data_type_name, &fill, limits)? {
        None if vlen_bytes => Some(ElementKind::VariableBytes),
        Some(mapped) => mapped.read.map(|storage| {
            for_zarrs["dtype"] = storage.data_type;
            for_zarrs["fill_value"] = storage.fill_value;
            storage.kind
        }),
        None => None,
    };
    // A type we do not read is an unsupported array, not invalid metadata (its group stays
    // readable): zarrs is given one-byte elements without the object codec, so that the
    // shape, chunks and compressor are still checked.
    let unsupported = unsupported_type(&dtype, &filters);
    if unsupported.is_some() {
        for_zarrs["dtype"] = json!("|u1");
        for_zarrs["fill_value"] = Value::Null;
        for_zarrs["filters"] = Value::Null;
    }
    let meta: ArrayMetadataV2 = serde_json::from_value(for_zarrs)
        .map_err(|e| ZarrError::metadata(&display, format!("invalid .zarray: {e}")))?;
    let parsed = array::Parsed {
        display,
        zarr_format: 2,
        data_type_name,
        dimension_names,
        meta: ArrayMetadata::V2(meta),
        doc: zarray,
        attributes,
        kind,
    };
    let mut node = array::finish(parsed, path, limits)?;
    if let Some(name) = unsupported {
        node.data_type_name = name;
        (node.kind, node.array, node.cf, node.text) = (None, None, None, None);
    }
    Ok(node)
}

/// The `id` of each filter of `.zarray`.
fn filter_ids(zarray: &Value) -> Vec<&str> {
    let filters = zarray.get("filters").and_then(Value::as_array);
    (filters.into_iter().flatten())
        .filter_map(|f| f.get("id").and_then(Value::as_str))
        .collect()
}

/// The data type as shown, when zarr-python 2 writes it and we do not read it: NumPy's
/// structured (a list of fields) and void (`|V8`) types, and object arrays of other codecs
/// than `vlen-utf8` and `vlen-bytes` (`json2`, `msgpack2`, `pickle`, `vlen-array`).
fn unsupported_type(dtype: &Value, filters: &[&str]) -> Option<String> {
    match dtype {
        // `get`, not indexing: a dtype may begin with a character of several bytes.
        Value::String(d) if d.get(1..).is_some_and(|t| t.starts_with('V')) => Some(d.clone()),
        Value::String(d) if d == "|O" => {
            let read = filters
                .iter()
                .any(|id| matches!(*id, "vlen-utf8" | "vlen-bytes"));
            let codec = filters.first().copied().unwrap_or("no object codec");
            (!read).then(|| format!("|O ({codec})"))
        }
        Value::String(_) => None,
        other => Some(other.to_string()),
    }
}

/// The dimension names NCZarr writes in `_NCZARR_ARRAY.dimrefs`, the last segment of each
/// path, as xarray reads them.
fn nczarr_dimension_names(zarray: &Value) -> Option<Vec<String>> {
    let refs = zarray.pointer("/_NCZARR_ARRAY/dimrefs")?.as_array()?;
    let name = |r: &Value| {
        let name = r.as_str()?.rsplit('/').next()?;
        (!name.is_empty()).then(|| name.to_string())
    };
    refs.iter().map(name).collect()
}

fn is_v2_unicode(dtype: &str) -> bool {
    let b = dtype.as_bytes();
    b.len() > 2
        && (b[0] == b'<' || b[0] == b'>')
        && b[1] == b'U'
        && b[2..].iter().all(u8::is_ascii_digit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_we_do_not_read_are_named() {
        assert_eq!(unsupported_type(&json!("|V4"), &[]).as_deref(), Some("|V4"));
        assert_eq!(
            unsupported_type(&json!("|O"), &["json2"]).as_deref(),
            Some("|O (json2)")
        );
        assert_eq!(unsupported_type(&json!("|O"), &["vlen-utf8"]), None);
        assert_eq!(
            unsupported_type(&json!([["a", "<i4"]]), &[]).as_deref(),
            Some(r#"[["a","<i4"]]"#)
        );
        // A dtype beginning with a character of several bytes is no slicing panic.
        assert_eq!(unsupported_type(&json!("éV"), &[]), None);
        assert_eq!(unsupported_type(&json!("é"), &[]), None);
    }
}
