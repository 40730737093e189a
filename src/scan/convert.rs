//! Decoded elements → Arrow arrays, for every element kind we map. The Arrow type is the
//! column's, decided once by the table model; the conversion dispatches on it.

use std::ops::Range;
use std::sync::Arc;

use arrow::array::{
    ArrayData, ArrayRef, AsArray, BinaryArray, BooleanArray, Date32Array, StringArray, make_array,
};
use arrow::buffer::{BooleanBuffer, Buffer, MutableBuffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow::datatypes::DataType as ArrowType;

use crate::error::{Result, ZarrError};
use crate::node::{ArrayNode, ElementKind};
use crate::scan::read::Elements;
use crate::table::ValuePlan;
use zarr_utf32::{self as utf32, TranscodeError};

/// Locates element `row` of a region for error messages: returns (chunk key, index in chunk).
pub(crate) type Locate<'a> = &'a dyn Fn(usize) -> (String, u64);

/// Converts elements `rows` of `elements` (an array of kind `node.kind`) to an Arrow array as
/// the column's `plan` says (its type, CF decoding, fill as NULL, invalid UTF-32).
pub(crate) fn to_arrow(
    node: &ArrayNode,
    elements: &Elements,
    rows: Range<usize>,
    plan: &ValuePlan,
    locate: Locate<'_>,
) -> Result<ArrayRef> {
    convert(node, elements, rows, plan, locate, false)
}

/// [`to_arrow`], with numbers that need no conversion (no CF decoding) sharing the elements'
/// buffer instead of being copied: for arrays that stay in the scan (a filter's operands),
/// never for batches that leave it (a slice would hold the whole chunk's memory, and
/// DataFusion would count all of it for every batch).
pub(crate) fn to_arrow_shared(
    node: &ArrayNode,
    elements: &Elements,
    rows: Range<usize>,
    plan: &ValuePlan,
    locate: Locate<'_>,
) -> Result<ArrayRef> {
    convert(node, elements, rows, plan, locate, true)
}

fn convert(
    node: &ArrayNode,
    elements: &Elements,
    rows: Range<usize>,
    plan: &ValuePlan,
    locate: Locate<'_>,
    share: bool,
) -> Result<ArrayRef> {
    let data_type = &plan.data_type;
    let array = node.zarrs()?;
    let fill = array.fill_value().as_ne_bytes();
    let kind = node.element_kind()?;
    match (kind, elements) {
        (ElementKind::Utf32 { length_bytes }, Elements::Fixed { bytes, size }) => {
            let width = *length_bytes;
            debug_assert_eq!(width, *size);
            let input = fixed_rows(bytes, width, &rows, node, locate)?;
            let mask = plan
                .fill_as_null
                .then(|| utf32::fill_mask(input, width, fill));
            let mask = mask.as_deref();
            let mode = plan.invalid_utf32;
            let result: std::result::Result<ArrayRef, TranscodeError> = match data_type {
                ArrowType::Utf8 => {
                    utf32::to_utf8::<i32>(input, width, mode, mask).map(|a| Arc::new(a) as _)
                }
                ArrowType::LargeUtf8 => {
                    utf32::to_utf8::<i64>(input, width, mode, mask).map(|a| Arc::new(a) as _)
                }
                ArrowType::Utf8View => {
                    utf32::to_utf8_view(input, width, mode, mask).map(|a| Arc::new(a) as _)
                }
                ArrowType::FixedSizeBinary(_) => {
                    utf32::to_fixed_size_binary(input, width, mode, mask).map(|a| Arc::new(a) as _)
                }
                other => {
                    return Err(ZarrError::internal(format!(
                        "converting fixed_length_utf32 to {other}, which the table model \
                         does not map it to"
                    )));
                }
            };
            result.map_err(|e| match e {
                TranscodeError::Invalid { index, code_unit } => {
                    let (chunk, index) = locate(rows.start + index);
                    ZarrError::InvalidUtf32 {
                        array: node.display.clone(),
                        chunk,
                        index,
                        code_unit,
                    }
                }
                TranscodeError::OffsetOverflow => ZarrError::Chunk {
                    array: node.display.clone(),
                    chunk: locate(rows.start).0,
                    message: "a batch holds more than 2 GiB of UTF-8; use string_type \
                              'large_utf8' or a smaller batch size"
                        .into(),
                },
            })
        }
        (
            kind @ (ElementKind::String | ElementKind::VariableBytes),
            Elements::Variable { bytes, offsets },
        ) => {
            let fail = |message: String| ZarrError::Chunk {
                array: node.display.clone(),
                chunk: locate(rows.start).0,
                message,
            };
            // The offsets of `rows` and their bytes, checked (decoded offsets never decrease
            // and end within the bytes; rows past them are an error, not a panic).
            let window = offsets.get(rows.start..=rows.end).ok_or_else(|| {
                fail(format!(
                    "elements {}..{} are past the {} elements decoded",
                    rows.start,
                    rows.end,
                    offsets.len().saturating_sub(1)
                ))
            })?;
            let (&base, &end) = window.first().zip(window.last()).ok_or_else(|| {
                fail(format!("elements {}..{} are no rows", rows.start, rows.end))
            })?;
            let values = bytes.get(base..end).ok_or_else(|| {
                fail(format!(
                    "element offsets {base}..{end} are past the {} bytes decoded",
                    bytes.len()
                ))
            })?;
            let mut out_offsets = Vec::with_capacity(window.len());
            let mut previous = base;
            for &o in window {
                if o < previous {
                    return Err(fail(format!(
                        "element offsets decrease ({previous}, then {o})"
                    )));
                }
                previous = o;
                out_offsets.push(
                    i32::try_from(o - base)
                        .map_err(|_| fail("a batch holds more than 2 GiB of strings".into()))?,
                );
            }
            let nulls = plan.fill_as_null.then(|| {
                NullBuffer::from(
                    window
                        .windows(2)
                        .map(|w| bytes.get(w[0]..w[1]) != Some(fill))
                        .collect::<Vec<bool>>(),
                )
            });
            let offsets = OffsetBuffer::new(ScalarBuffer::from(out_offsets));
            if *kind == ElementKind::VariableBytes {
                let binary = BinaryArray::new(offsets, values.to_vec().into(), nulls);
                return as_binary_type(Arc::new(binary), data_type, node, plan, rows.start, locate);
            }
            let a = StringArray::try_new(offsets, values.to_vec().into(), nulls).map_err(|e| {
                ZarrError::Chunk {
                    array: node.display.clone(),
                    chunk: locate(rows.start).0,
                    message: format!("string elements are not valid UTF-8: {e}"),
                }
            })?;
            Ok(Arc::new(a))
        }
        (ElementKind::Bytes { .. }, Elements::Fixed { bytes, size }) => {
            let input = fixed_rows(bytes, *size, &rows, node, locate)?;
            let fail = |message: String| ZarrError::Chunk {
                array: node.display.clone(),
                chunk: locate(rows.start).0,
                message,
            };
            let binary =
                byte_strings(input, *size, plan.fill_as_null.then_some(fill)).ok_or_else(|| {
                    fail("a batch holds more than 2 GiB of bytes; use a smaller batch size".into())
                })?;
            as_binary_type(binary, data_type, node, plan, rows.start, locate)
        }
        (ElementKind::Primitive(stored), Elements::Fixed { bytes, size }) => {
            let t = stored;
            let input = fixed_rows(bytes, *size, &rows, node, locate)?;
            let temporal = is_temporal(t);
            let nulls = if plan.fill_as_null || temporal {
                let nan_fill = is_nan(t, fill);
                let nat = crate::cf::NAT.to_ne_bytes();
                let fill = plan.fill_as_null.then_some(fill);
                let null = |e: &[u8]| {
                    Some(e) == fill || (nan_fill && is_nan(t, e)) || (temporal && e == nat)
                };
                // 64 elements a word, not a `Vec<bool>` packed afterwards.
                let valid = BooleanBuffer::collect_bool(rows.len(), |i| {
                    !null(&input[i * size..(i + 1) * size])
                });
                Some(NullBuffer::new(valid))
            } else {
                None
            };
            let fail = |message: String| ZarrError::Chunk {
                array: node.display.clone(),
                chunk: locate(rows.start).0,
                message,
            };
            if *t == ArrowType::Date32 {
                return days(input, nulls).map_err(|index| {
                    let (chunk, index) = locate(rows.start + index);
                    ZarrError::Chunk {
                        array: node.display.clone(),
                        chunk,
                        message: format!(
                            "element {index}: a datetime64[D] beyond the days Date32 holds \
                             (±2^31 from 1970)"
                        ),
                    }
                });
            }
            let raw = match share && *t != ArrowType::Boolean {
                // `fixed_rows` checked that these rows lie within the bytes.
                true => shared(
                    t,
                    bytes.slice_with_length(rows.start * size, input.len()),
                    nulls,
                ),
                false => primitive(t, input, rows.len(), nulls),
            }
            .map_err(|e| fail(e.to_string()))?;
            let Some(cf) = &plan.cf else {
                return Ok(raw);
            };
            crate::cf::decode::decode(&raw, cf).map_err(|failure| match failure.index {
                Some(index) => {
                    let (chunk, index) = locate(rows.start + index);
                    ZarrError::Chunk {
                        array: node.display.clone(),
                        chunk,
                        message: format!("element {index}: {}", failure.message),
                    }
                }
                None => fail(failure.message),
            })
        }
        _ => Err(ZarrError::Chunk {
            array: node.display.clone(),
            chunk: locate(rows.start).0,
            message: "decoded elements do not match the data type".into(),
        }),
    }
}

/// The bytes of elements `rows` (`size` bytes each) of `bytes`, or an error naming the chunk:
/// rows past the decoded elements are an error, not a panic.
fn fixed_rows<'a>(
    bytes: &'a [u8],
    size: usize,
    rows: &Range<usize>,
    node: &ArrayNode,
    locate: Locate<'_>,
) -> Result<&'a [u8]> {
    let start = rows.start.checked_mul(size);
    let end = rows.end.checked_mul(size);
    let input = start
        .zip(end)
        .and_then(|(start, end)| bytes.get(start..end));
    input.ok_or_else(|| ZarrError::Chunk {
        array: node.display.clone(),
        chunk: locate(rows.start).0,
        message: format!(
            "elements {}..{} are past the {} elements of {size} bytes decoded",
            rows.start,
            rows.end,
            bytes.len() / size.max(1)
        ),
    })
}

/// Bytes as the column's type: `Binary`, or (`binary_as_string`, `_Encoding`) a string type, each element
/// checked as UTF-8 and the first that is not named. `start` is the batch's first row.
fn as_binary_type(
    binary: ArrayRef,
    data_type: &ArrowType,
    node: &ArrayNode,
    plan: &ValuePlan,
    start: usize,
    locate: Locate<'_>,
) -> Result<ArrayRef> {
    if *data_type == ArrowType::Binary {
        return Ok(binary);
    }
    if plan.ascii_only {
        let elements = binary.as_binary::<i32>();
        let bad = elements
            .iter()
            .position(|e| e.is_some_and(|b| !b.is_ascii()));
        if let Some(index) = bad {
            let (chunk, index) = locate(start + index);
            return Err(ZarrError::Chunk {
                array: node.display.clone(),
                chunk,
                message: format!(
                    "element {index} is not ASCII, which its _Encoding attribute says it is"
                ),
            });
        }
    }
    // arrow's cast checks the UTF-8 (unsafe: an error, not NULL).
    let checked = arrow::compute::CastOptions {
        safe: false,
        ..Default::default()
    };
    arrow::compute::cast_with_options(&binary, data_type, &checked).map_err(|e| {
        let bad = binary
            .as_binary::<i32>()
            .iter()
            .position(|element| element.is_some_and(|bytes| std::str::from_utf8(bytes).is_err()));
        let (chunk, message) = match bad {
            Some(index) => {
                let (chunk, index) = locate(start + index);
                let why = match node.text {
                    Some(_) => "its _Encoding attribute says it is",
                    None => "binary_as_string needs",
                };
                let message = format!("element {index} is not UTF-8, which {why}");
                (chunk, message)
            }
            None => (locate(start).0, format!("binary_as_string: {e}")),
        };
        ZarrError::Chunk {
            array: node.display.clone(),
            chunk,
            message,
        }
    })
}

/// Whether `t` is one of the types NumPy's `datetime64`/`timedelta64` map to, whose NaT is
/// null.
fn is_temporal(t: &ArrowType) -> bool {
    matches!(
        t,
        ArrowType::Timestamp(..) | ArrowType::Duration(_) | ArrowType::Date32
    )
}

/// NumPy `S` elements of `width` bytes as `Binary`, each without its trailing NULs (as NumPy
/// returns them; an inner NUL is kept), null where the element is `fill`. `None` when the
/// bytes overflow `i32` offsets.
fn byte_strings(input: &[u8], width: usize, fill: Option<&[u8]>) -> Option<ArrayRef> {
    let len = input.len() / width.max(1);
    let mut offsets: Vec<i32> = Vec::with_capacity(len + 1);
    let mut values: Vec<u8> = Vec::with_capacity(input.len());
    offsets.push(0);
    let mut valid = Vec::with_capacity(if fill.is_some() { len } else { 0 });
    for element in input.chunks_exact(width.max(1)) {
        let end = element.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
        values.extend_from_slice(&element[..end]);
        offsets.push(i32::try_from(values.len()).ok()?);
        if let Some(fill) = fill {
            valid.push(element != fill);
        }
    }
    let nulls = fill.map(|_| NullBuffer::from(valid));
    let offsets = OffsetBuffer::new(ScalarBuffer::from(offsets));
    Some(Arc::new(BinaryArray::new(offsets, values.into(), nulls)))
}

/// NumPy `datetime64[D]` (days in `i64`) as `Date32`, or the index of the first day beyond
/// `i32`.
fn days(input: &[u8], nulls: Option<NullBuffer>) -> std::result::Result<ArrayRef, usize> {
    let mut out = Vec::with_capacity(input.len() / 8);
    for (index, element) in input.chunks_exact(8).enumerate() {
        let mut b = [0u8; 8];
        b.copy_from_slice(element);
        let day = i64::from_ne_bytes(b);
        let is_null = nulls.as_ref().is_some_and(|n| n.is_null(index));
        out.push(match i32::try_from(day) {
            Ok(day) => day,
            Err(_) if is_null => 0,
            Err(_) => return Err(index),
        });
    }
    Ok(Arc::new(Date32Array::new(out.into(), nulls)))
}

fn is_nan(t: &ArrowType, bytes: &[u8]) -> bool {
    match (t, bytes.len()) {
        (ArrowType::Float16, 2) => half::f16::from_ne_bytes([bytes[0], bytes[1]]).is_nan(),
        (ArrowType::Float32, 4) => {
            f32::from_ne_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]).is_nan()
        }
        (ArrowType::Float64, 8) => {
            let mut b = [0u8; 8];
            b.copy_from_slice(bytes);
            f64::from_ne_bytes(b).is_nan()
        }
        _ => false,
    }
}

/// Fixed-width numbers of type `t` in `buffer`, without a copy unless the buffer is not aligned
/// as `t` needs.
fn shared(
    t: &ArrowType,
    buffer: Buffer,
    nulls: Option<NullBuffer>,
) -> std::result::Result<ArrayRef, arrow::error::ArrowError> {
    let width = t.primitive_width().unwrap_or(1).max(1);
    let data = ArrayData::builder(t.clone())
        .len(buffer.len() / width)
        .add_buffer(buffer)
        .nulls(nulls)
        .align_buffers(true)
        .build()?;
    Ok(make_array(data))
}

fn primitive(
    t: &ArrowType,
    input: &[u8],
    len: usize,
    nulls: Option<NullBuffer>,
) -> std::result::Result<ArrayRef, arrow::error::ArrowError> {
    if *t == ArrowType::Boolean {
        let values: Vec<bool> = input.iter().map(|b| *b != 0).collect();
        return Ok(Arc::new(BooleanArray::new(values.into(), nulls)));
    }
    // A MutableBuffer is 64-byte aligned, as typed Arrow buffers need.
    let mut buffer = MutableBuffer::new(input.len());
    buffer.extend_from_slice(input);
    let data = ArrayData::builder(t.clone())
        .len(len)
        .add_buffer(buffer.into())
        .nulls(nulls)
        .build()?;
    Ok(make_array(data))
}
