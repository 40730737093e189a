//! Zarr V2 arrays: `.zarray` (with `.zattrs` for xarray's dimension names) handed to zarrs.

use serde_json::{Map, Value, json};
use zarrs::array::{ArrayMetadata, ArrayMetadataV2};

use super::{ArrayNode, ElementKind, array, characters, display_in, numpy_types, validate};
use crate::error::{Result, ZarrError};
use crate::limits::Limits;

/// Builds a V2 array node from `.zarray` (and `.zattrs`), with its strings joined when it is
/// a netCDF character array.
pub(super) fn array(
    location: &str,
    path: &str,
    zarray: Value,
    zattrs: Option<Value>,
    limits: &Limits,
) -> Result<ArrayNode> {
    let node = as_written(location, path, zarray, zattrs, limits)?;
    let joined = |mut doc: Value| {
        let zattrs = doc.as_object_mut().and_then(|d| d.remove("attributes"));
        as_written(location, path, doc, zattrs, limits)
    };
    Ok(characters::attach(node, limits, &joined))
}

/// Builds a V2 array node from `.zarray` (and `.zattrs`) as written.
fn as_written(
    location: &str,
    path: &str,
    mut zarray: Value,
    zattrs: Option<Value>,
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
    let attributes = zattrs.unwrap_or_else(|| Value::Object(Map::new()));
    let shape_len = zarray
        .get("shape")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    // xarray's names of the dimensions: a list of strings (xarray refuses anything else).
    let names = attributes.get("_ARRAY_DIMENSIONS").filter(|n| !n.is_null());
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
        None => match nczarr_dimension_names(&zarray) {
            Some(names) if names.len() == shape_len => names.into_iter().map(Some).collect(),
            _ => vec![None; shape_len],
        },
    };
    validate::codec_configurations(&display, zarray.get("filters"), shape_len)?;
    // zarrs is given the storage of a NumPy type it does not read as we map it.
    let fill = zarray.get("fill_value").cloned().unwrap_or(Value::Null);
    let mut for_zarrs = zarray.clone();
    // zarrs reads every `|O` array as strings; `vlen-bytes` writes bytes the same way.
    let vlen_bytes = data_type_name == "|O"
        && zarray
            .get("filters")
            .and_then(Value::as_array)
            .is_some_and(|f| f.iter().any(|f| f.get("id") == Some(&json!("vlen-bytes"))));
    let kind = match numpy_types::v2(&display, &data_type_name, &fill, limits)? {
        None if vlen_bytes => Some(ElementKind::VariableBytes),
        Some(mapped) => mapped.read.map(|storage| {
            for_zarrs["dtype"] = storage.data_type;
            for_zarrs["fill_value"] = storage.fill_value;
            storage.kind
        }),
        None => None,
    };
    let meta: ArrayMetadataV2 = serde_json::from_value(for_zarrs)
        .map_err(|e| ZarrError::metadata(&display, format!("invalid .zarray: {e}")))?;
    let mut doc = zarray;
    doc["attributes"] = attributes;
    let parsed = array::Parsed {
        display,
        zarr_format: 2,
        data_type_name,
        dimension_names,
        meta: ArrayMetadata::V2(meta),
        doc,
        kind,
    };
    array::finish(parsed, path, limits)
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
