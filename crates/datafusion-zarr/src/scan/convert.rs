//! Decoded elements → Arrow arrays, for every element kind we map. The Arrow type is the
//! column's, decided once by the table model; the conversion dispatches on it.

use std::ops::Range;
use std::sync::Arc;

use arrow::array::{ArrayData, ArrayRef, BooleanArray, StringArray, make_array};
use arrow::buffer::{MutableBuffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow::datatypes::DataType as ArrowType;

use crate::error::{Result, ZarrError};
use crate::node::{ArrayNode, ElementKind};
use crate::options::ZarrOptions;
use crate::scan::read::Elements;
use zarr_utf32::{self as utf32, TranscodeError};

/// Locates element `row` of a region for error messages: returns (chunk key, index in chunk).
pub(crate) type Locate<'a> = &'a dyn Fn(usize) -> (String, u64);

/// Converts elements `rows` of `elements` (an array of kind `node.kind`) to an Arrow array of
/// type `data_type` (the column's).
pub(crate) fn to_arrow(
    node: &ArrayNode,
    elements: &Elements,
    rows: Range<usize>,
    data_type: &ArrowType,
    options: &ZarrOptions,
    locate: Locate<'_>,
) -> Result<ArrayRef> {
    let array = node.zarrs()?;
    let fill = array.fill_value().as_ne_bytes();
    let kind = node.element_kind()?;
    match (kind, elements) {
        (ElementKind::Utf32 { length_bytes }, Elements::Fixed { bytes, size }) => {
            let width = *length_bytes;
            debug_assert_eq!(width, *size);
            let input = &bytes[rows.start * width..rows.end * width];
            let mask = options
                .fill_as_null
                .then(|| utf32::fill_mask(input, width, fill));
            let mask = mask.as_deref();
            let mode = options.invalid_utf32;
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
        (ElementKind::String, Elements::Variable { bytes, offsets }) => {
            let base = offsets[rows.start];
            let mut out_offsets = Vec::with_capacity(rows.len() + 1);
            for &o in &offsets[rows.start..=rows.end] {
                out_offsets.push(i32::try_from(o - base).map_err(|_| ZarrError::Chunk {
                    array: node.display.clone(),
                    chunk: locate(rows.start).0,
                    message: "a batch holds more than 2 GiB of strings".into(),
                })?);
            }
            let values = &bytes[base..offsets[rows.end]];
            let nulls = options.fill_as_null.then(|| {
                NullBuffer::from(
                    rows.clone()
                        .map(|i| &bytes[offsets[i]..offsets[i + 1]] != fill)
                        .collect::<Vec<bool>>(),
                )
            });
            let a = StringArray::try_new(
                OffsetBuffer::new(ScalarBuffer::from(out_offsets)),
                values.to_vec().into(),
                nulls,
            )
            .map_err(|e| ZarrError::Chunk {
                array: node.display.clone(),
                chunk: locate(rows.start).0,
                message: format!("string elements are not valid UTF-8: {e}"),
            })?;
            Ok(Arc::new(a))
        }
        (ElementKind::Primitive(_), Elements::Fixed { bytes, size }) => {
            let t = data_type;
            let input = &bytes[rows.start * size..rows.end * size];
            let nulls = if options.fill_as_null {
                let nan_fill = is_nan(t, fill);
                Some(NullBuffer::from(
                    input
                        .chunks_exact(*size)
                        .map(|e| !(e == fill || (nan_fill && is_nan(t, e))))
                        .collect::<Vec<bool>>(),
                ))
            } else {
                None
            };
            primitive(t, input, rows.len(), nulls).map_err(|e| ZarrError::Chunk {
                array: node.display.clone(),
                chunk: locate(rows.start).0,
                message: e.to_string(),
            })
        }
        _ => Err(ZarrError::Chunk {
            array: node.display.clone(),
            chunk: locate(rows.start).0,
            message: "decoded elements do not match the data type".into(),
        }),
    }
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
