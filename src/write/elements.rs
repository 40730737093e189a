//! Arrow arrays as the elements Zarr stores: fixed-size values in native byte order (NULLs
//! as the column's NULL rule says), strings as padded UTF-32 code units, and variable-length
//! values with their offsets. Errors name the column and the row.

use arrow::array::{Array, ArrayRef, AsArray};
use arrow::compute::cast;
use arrow::datatypes::DataType;

use super::column::{ColumnSpec, NullRule, Storage, Utf32Width};
use crate::cf::NAT;
use crate::cf::encode::{EncodeError, encode_exactly};
use crate::error::{Result, ZarrError};

/// The error for row `row` of `column`.
pub(crate) fn row_error(column: &str, row: u64, rule: &str) -> ZarrError {
    ZarrError::Row {
        column: column.to_string(),
        row,
        message: rule.to_string(),
    }
}

/// `array` as the column stores it (cast to its storage type, or encoded as its source was);
/// its first row is row `first` of the table.
pub(crate) fn prepared(spec: &ColumnSpec, array: &ArrayRef, first: u64) -> Result<ArrayRef> {
    if let Some(cf) = &spec.cf {
        let row = |index: usize| first.saturating_add(index as u64);
        return encode_exactly(array, cf).map_err(|e| match e {
            EncodeError::Cast { to, error } => ZarrError::Option(format!(
                "column {}: cannot store it as {to}: {error}",
                spec.name
            )),
            EncodeError::Temporal(error) => {
                ZarrError::Option(format!("column {}: {error}", spec.name))
            }
            EncodeError::NotWhole { index } => row_error(
                &spec.name,
                row(index),
                &format!(
                    "the value is not a whole number of its source's units ({}): give \
                     keep_attributes 'false' to write it in the writer's units",
                    spec.attributes
                        .get("units")
                        .unwrap_or(&serde_json::Value::Null)
                ),
            ),
            EncodeError::DoesNotFit { index } => row_error(
                &spec.name,
                row(index),
                &format!(
                    "the value does not fit its source's encoding ({}{}): give \
                     keep_attributes 'false' to write it as it is",
                    spec.v3_type,
                    match cf.scale {
                        Some((scale, offset)) => {
                            format!(", scale_factor {scale}, add_offset {offset}")
                        }
                        None => String::new(),
                    }
                ),
            ),
        });
    }
    match &spec.cast_to {
        Some(to) => cast(array, to).map_err(|e| {
            ZarrError::Option(format!(
                "column {}: cannot store it as {to}: {e}",
                spec.name
            ))
        }),
        None => Ok(array.clone()),
    }
}

/// The element a NULL of `spec` becomes, as the column's NULL rule says, before it is fitted
/// to the element's width: NaN of the float's size, NaT, or the `null_value` (strings in
/// `fixed_length_utf32` as its UTF-32 code units, native order); `None` when NULLs are refused.
pub(crate) fn null_element(spec: &ColumnSpec) -> Option<Vec<u8>> {
    Some(match (&spec.null, spec.storage) {
        (NullRule::NaN, Storage::Fixed { size: 2 }) => half::f16::NAN.to_ne_bytes().to_vec(),
        (NullRule::NaN, Storage::Fixed { size: 4 }) => f32::NAN.to_ne_bytes().to_vec(),
        (NullRule::NaN, _) => f64::NAN.to_ne_bytes().to_vec(),
        (NullRule::NaT, _) => NAT.to_ne_bytes().to_vec(),
        (NullRule::Value { bytes, .. }, Storage::Utf32) => {
            let text = std::str::from_utf8(bytes).unwrap_or_default();
            text.chars()
                .flat_map(|c| u32::from(c).to_ne_bytes())
                .collect()
        }
        (NullRule::Value { bytes, .. }, _) => bytes.clone(),
        (NullRule::Refused, _) => return None,
    })
}

/// The message of a NULL the column's type cannot hold.
const NULL_REFUSED: &str = "NULL, which Zarr cannot hold in this type (floats hold NaN, times \
                            NaT): give the option null_value to say what it becomes";

/// Appends the fixed-size elements of `array` (already [`prepared`], its first row is row
/// `first` of the table) to `out`; returns whether it held a NULL.
pub(crate) fn append_fixed(
    spec: &ColumnSpec,
    array: &ArrayRef,
    first: u64,
    out: &mut Vec<u8>,
) -> Result<bool> {
    let Storage::Fixed { size } = spec.storage else {
        return Err(ZarrError::internal(
            "fixed elements of a column that is not",
        ));
    };
    let start = out.len();
    if let DataType::Boolean = array.data_type() {
        let values = array.as_boolean();
        out.extend(values.values().iter().map(u8::from));
    } else {
        let data = array.to_data();
        let begin = data.offset().saturating_mul(size);
        let end = begin.saturating_add(data.len().saturating_mul(size));
        let bytes = data
            .buffers()
            .first()
            .and_then(|b| b.as_slice().get(begin..end));
        let bytes = bytes.ok_or_else(|| ZarrError::internal("a primitive array's buffer"))?;
        out.extend_from_slice(bytes);
    }
    if array.null_count() == 0 {
        return Ok(false);
    }
    let Some(null) = null_element(spec) else {
        let row = (0..array.len()).find(|&i| array.is_null(i)).unwrap_or(0);
        out.truncate(start);
        return Err(row_error(
            &spec.name,
            first.saturating_add(row as u64),
            NULL_REFUSED,
        ));
    };
    for i in (0..array.len()).filter(|&i| array.is_null(i)) {
        let at = start.saturating_add(i.saturating_mul(size));
        if let Some(slot) = out.get_mut(at..at.saturating_add(size)) {
            slot.copy_from_slice(null.get(..size).unwrap_or_default());
        }
    }
    Ok(true)
}

/// A column's strings, one by one (`None` for NULL).
pub(crate) fn strings(array: &ArrayRef) -> Result<Box<dyn Iterator<Item = Option<&str>> + '_>> {
    Ok(match array.data_type() {
        DataType::Utf8 => Box::new(array.as_string::<i32>().iter()),
        DataType::LargeUtf8 => Box::new(array.as_string::<i64>().iter()),
        DataType::Utf8View => Box::new(array.as_string_view().iter()),
        other => return Err(ZarrError::internal(format!("strings of {other}"))),
    })
}

/// A column's binary values, one by one.
fn binaries(array: &ArrayRef) -> Result<Box<dyn Iterator<Item = Option<&[u8]>> + '_>> {
    Ok(match array.data_type() {
        DataType::Binary => Box::new(array.as_binary::<i32>().iter()),
        DataType::LargeBinary => Box::new(array.as_binary::<i64>().iter()),
        DataType::BinaryView => Box::new(array.as_binary_view().iter()),
        other => return Err(ZarrError::internal(format!("binary values of {other}"))),
    })
}

/// The value a NULL string or binary becomes, or the error naming it.
fn null_bytes(spec: &ColumnSpec, row: u64) -> Result<&[u8]> {
    match &spec.null {
        NullRule::Value { bytes, .. } => Ok(bytes),
        _ => Err(row_error(&spec.name, row, NULL_REFUSED)),
    }
}

/// The longest string of `array` in code points, checking each string (no trailing U+0000,
/// no NULL without a `null_value`); returns it and whether a NULL was seen.
pub(crate) fn longest_string(
    spec: &ColumnSpec,
    array: &ArrayRef,
    first: u64,
) -> Result<(u64, bool)> {
    longest_string_checked(spec, array, first, true)
}

/// [`longest_string`], checking for a trailing U+0000 only when `trailing_nul` (a string to
/// be cut is checked once cut, by [`append_utf32`]).
pub(crate) fn longest_string_checked(
    spec: &ColumnSpec,
    array: &ArrayRef,
    first: u64,
    trailing_nul: bool,
) -> Result<(u64, bool)> {
    if array.null_count() == 0 {
        // The kernel counts code points; the trailing U+0000 check reads one byte a string.
        let longest = match array.data_type() {
            DataType::Utf8 => zarr_utf32::max_code_points(array.as_string::<i32>()),
            DataType::LargeUtf8 => zarr_utf32::max_code_points(array.as_string::<i64>()),
            DataType::Utf8View => zarr_utf32::max_code_points_view(array.as_string_view()),
            other => return Err(ZarrError::internal(format!("strings of {other}"))),
        };
        if trailing_nul {
            let ends_in_nul = strings(array)?.position(|v| v.is_some_and(|v| v.ends_with('\0')));
            if let Some(i) = ends_in_nul {
                return Err(trailing_nul_error(spec, first.saturating_add(i as u64)));
            }
        }
        return Ok((longest as u64, false));
    }
    let mut longest = 0u64;
    let mut saw_null = false;
    for (i, value) in strings(array)?.enumerate() {
        let row = first.saturating_add(i as u64);
        let value = match value {
            Some(v) => v.as_bytes(),
            None => {
                saw_null = true;
                null_bytes(spec, row)?
            }
        };
        if trailing_nul && value.last() == Some(&0) {
            return Err(row_error(
                &spec.name,
                row,
                "the string ends with U+0000, which fixed_length_utf32 strips on reading",
            ));
        }
        // Code points: the bytes that do not continue a UTF-8 sequence.
        let count = value.iter().filter(|&&b| (b as i8) >= -0x40).count() as u64;
        longest = longest.max(count);
    }
    Ok((longest, saw_null))
}

/// Appends the strings of `array` as `width`-wide UTF-32 elements in native byte order
/// (zarr-utf32's encoding kernel); a longer one is cut when `truncate`, else an error naming
/// its row and `hint` (what sets the width). A NULL is the column's `null_value` or an error;
/// what is kept must not end in U+0000 (a reader strips it). On error `out` is as it was.
pub(crate) fn append_utf32(
    spec: &ColumnSpec,
    array: &ArrayRef,
    first: u64,
    width: Utf32Width,
    truncate: bool,
    out: &mut Vec<u8>,
    hint: &str,
) -> Result<()> {
    let start = out.len();
    let result = encode_strings(spec, array, first, width, truncate, out, hint);
    if result.is_err() {
        out.truncate(start);
    }
    result
}

fn encode_strings(
    spec: &ColumnSpec,
    array: &ArrayRef,
    first: u64,
    width: Utf32Width,
    truncate: bool,
    out: &mut Vec<u8>,
    hint: &str,
) -> Result<()> {
    use zarr_utf32::{ByteOrder, EncodeError, Overflow, utf8_to_utf32, utf8_view_to_utf32};
    let units = usize::try_from(width.code_points());
    let width = usize::try_from(width.bytes());
    let (Ok(width), Ok(units)) = (width, units) else {
        return Err(ZarrError::internal("a string width"));
    };
    let unit_bytes = Utf32Width::CODE_UNIT_BYTES as usize;
    let start = out.len();
    let overflow = if truncate {
        Overflow::Truncate
    } else {
        Overflow::Error
    };
    let order = ByteOrder::NATIVE;
    let encoded = match array.data_type() {
        DataType::Utf8 => utf8_to_utf32(array.as_string::<i32>(), width, order, overflow, out),
        DataType::LargeUtf8 => utf8_to_utf32(array.as_string::<i64>(), width, order, overflow, out),
        DataType::Utf8View => {
            utf8_view_to_utf32(array.as_string_view(), width, order, overflow, out)
        }
        other => return Err(ZarrError::internal(format!("strings of {other}"))),
    };
    match encoded {
        Ok(()) => {}
        Err(EncodeError::TooLong(too_long)) => {
            return Err(row_error(
                &spec.name,
                first.saturating_add(too_long.index as u64),
                &format!(
                    "a string of {} code points, longer than {units} ({hint})",
                    too_long.code_points
                ),
            ));
        }
        Err(e) => return Err(ZarrError::internal(format!("encoding strings: {e}"))),
    }
    let slot = |i: usize| {
        let at = start.saturating_add(i.saturating_mul(width));
        at..at.saturating_add(width)
    };
    for (i, value) in strings(array)?.enumerate() {
        let row = first.saturating_add(i as u64);
        let kept_units = match value {
            // The kernel wrote zeros: the null value goes there.
            None => {
                let Some(mut units_of) = null_element(spec) else {
                    return Err(row_error(&spec.name, row, NULL_REFUSED));
                };
                let code_points = units_of.len() / unit_bytes;
                if units_of.len() > width && !truncate {
                    return Err(row_error(
                        &spec.name,
                        row,
                        &format!("null_value is longer than {units} code points ({hint})"),
                    ));
                }
                units_of.resize(width, 0);
                if let Some(cell) = out.get_mut(slot(i)) {
                    cell.copy_from_slice(&units_of);
                }
                code_points.min(units)
            }
            Some(v) if !truncate => {
                if v.as_bytes().last() == Some(&0) {
                    return Err(trailing_nul_error(spec, row));
                }
                continue;
            }
            Some(v) => v.chars().count().min(units),
        };
        // The last code point kept must not be U+0000 (a cut can leave one).
        let last = slot(i)
            .start
            .saturating_add(kept_units.saturating_sub(1).saturating_mul(unit_bytes));
        let code_unit = out.get(last..last.saturating_add(unit_bytes));
        if kept_units > 0 && code_unit.is_some_and(|unit| unit.iter().all(|&b| b == 0)) {
            return Err(trailing_nul_error(spec, row));
        }
    }
    Ok(())
}

fn trailing_nul_error(spec: &ColumnSpec, row: u64) -> ZarrError {
    row_error(
        &spec.name,
        row,
        "the string ends with U+0000, which fixed_length_utf32 strips on reading",
    )
}

/// The bytes of the variable-length values of `array` (strings as UTF-8, or bytes), NULLs
/// none: what a variable-length column of it holds.
pub(crate) fn vlen_bytes(spec: &ColumnSpec, array: &ArrayRef) -> Result<u64> {
    let sum = |lengths: &mut dyn Iterator<Item = usize>| lengths.map(|n| n as u64).sum::<u64>();
    Ok(match spec.storage {
        Storage::VlenUtf8 => sum(&mut strings(array)?.map(|v| v.map_or(0, str::len))),
        _ => sum(&mut binaries(array)?.map(|v| v.map_or(0, <[u8]>::len))),
    })
}

/// Appends the variable-length values of `array` (strings as UTF-8, or bytes) to `bytes`,
/// and each value's end to `offsets`; returns whether a NULL was seen.
pub(crate) fn append_vlen(
    spec: &ColumnSpec,
    array: &ArrayRef,
    first: u64,
    bytes: &mut Vec<u8>,
    offsets: &mut Vec<usize>,
) -> Result<bool> {
    let mut saw_null = false;
    let mut push = |i: usize, value: Option<&[u8]>| -> Result<()> {
        let row = first.saturating_add(i as u64);
        let value = match value {
            Some(v) => v,
            None => {
                saw_null = true;
                null_bytes(spec, row)?
            }
        };
        bytes.extend_from_slice(value);
        offsets.push(bytes.len());
        Ok(())
    };
    match spec.storage {
        Storage::VlenUtf8 => {
            for (i, v) in strings(array)?.enumerate() {
                push(i, v.map(str::as_bytes))?;
            }
        }
        _ => {
            for (i, v) in binaries(array)?.enumerate() {
                push(i, v)?;
            }
        }
    }
    Ok(saw_null)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{Int32Array, StringArray};
    use arrow::datatypes::Field;

    use super::*;
    use crate::write::column::column_spec;
    use crate::write::options::WriteOptions;

    #[test]
    fn nulls_follow_the_rule_and_errors_name_column_and_row() -> Result<()> {
        let options = WriteOptions::default();
        let ints = Field::new("n", DataType::Int32, true);
        let spec = column_spec(&ints, &options)?;
        let array: ArrayRef = Arc::new(Int32Array::from(vec![Some(1), None]));
        let mut out = Vec::new();
        let message = append_fixed(&spec, &array, 10, &mut out)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(message.contains("column n, row 11"), "{message}");
        assert!(out.is_empty());
        let with_value = WriteOptions {
            null_value: Some("-1".into()),
            ..WriteOptions::default()
        };
        let spec = column_spec(&ints, &with_value)?;
        assert!(append_fixed(&spec, &array, 0, &mut out)?);
        assert_eq!(out, [1i32.to_ne_bytes(), (-1i32).to_ne_bytes()].concat());

        let text = Field::new("s", DataType::Utf8, true);
        let spec = column_spec(&text, &options)?;
        let array: ArrayRef = Arc::new(StringArray::from(vec!["a😀", "abc"]));
        assert_eq!(longest_string(&spec, &array, 0)?, (3, false));
        let mut out = Vec::new();
        let two = Utf32Width::of_code_points(2);
        let error = append_utf32(&spec, &array, 5, two, false, &mut out, "");
        assert!(error.is_err_and(|e| e.to_string().contains("row 6")));
        append_utf32(&spec, &array, 5, two, true, &mut out, "")?;
        let units: Vec<u32> = out
            .chunks(4)
            .map(|c| u32::from_ne_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        assert_eq!(units, ['a' as u32, 0x1F600, 'a' as u32, 'b' as u32]);
        let zero: ArrayRef = Arc::new(StringArray::from(vec!["x\0"]));
        assert!(longest_string(&spec, &zero, 0).is_err());
        Ok(())
    }
}
