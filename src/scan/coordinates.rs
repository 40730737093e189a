//! Expands a unit's coordinate values into a batch's coordinate column: along a dimension of
//! stride `s` and extent `e`, each value covers `s` consecutive rows, and the values cycle
//! every `s × e` rows. Built by whole runs and slices rather than by Arrow's `take` with
//! one index per row, which copied the station strings of `temp(station, hour)` one call per
//! row: assembling the batches was 29% of the CPU samples of its full scan.

use std::ops::Range;

use arrow::array::{
    Array, ArrayRef, ArrowPrimitiveType, AsArray, GenericByteArray, PrimitiveArray, UInt64Array,
    downcast_primitive_array,
};
use arrow::buffer::OffsetBuffer;
use arrow::compute::take;
use arrow::datatypes::{ArrowNativeType, ByteArrayType, DataType};
use arrow::error::ArrowError;

/// A stretch of a coordinate column: one value repeated, or consecutive values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Segment {
    /// `values[index]`, `count` times.
    Repeat { index: usize, count: usize },
    /// `values[start..start + len]`.
    Slice { start: usize, len: usize },
}

/// The segments of unit rows `rows` along a dimension of stride `stride` and extent
/// `extent`: row `r` takes value `(r / stride) % extent`.
fn segments(rows: Range<usize>, stride: u64, extent: u64) -> Vec<Segment> {
    let (stride, extent) = (stride.max(1), extent.max(1));
    let mut left = rows.len() as u64;
    if extent == 1 && left > 0 {
        // One value for every row (a dimension of length 1 in the unit), not a slice per row.
        return vec![Segment::Repeat {
            index: 0,
            count: rows.len(),
        }];
    }
    let mut out = Vec::new();
    let first = rows.start as u64;
    let mut index = (first / stride) % extent;
    if stride == 1 {
        while left > 0 {
            let len = (extent - index).min(left);
            out.push(Segment::Slice {
                start: index as usize,
                len: len as usize,
            });
            left -= len;
            index = 0;
        }
        return out;
    }
    let mut run = stride - first % stride;
    while left > 0 {
        let count = run.min(left);
        out.push(Segment::Repeat {
            index: index as usize,
            count: count as usize,
        });
        left -= count;
        index = if index + 1 >= extent { 0 } else { index + 1 };
        run = stride;
    }
    out
}

/// The coordinates along one dimension of the unit rows `rows` (contiguous, C order), each
/// plus `base` (an index column's origin, added in the same pass): runs of `stride` equal
/// values cycling through `0..extent`. One division per batch instead of two per row (the
/// index columns of an export were 3% of its time).
pub(super) fn contiguous_coords(
    rows: Range<usize>,
    stride: u64,
    extent: u64,
    base: u64,
) -> Vec<u64> {
    row_indices(&segments(rows, stride, extent), base)
}

/// Each row's index into the values by `segments`, plus `base`.
fn row_indices(segments: &[Segment], base: u64) -> Vec<u64> {
    let mut out = Vec::with_capacity(segments.iter().map(segment_rows).sum());
    for segment in segments {
        match *segment {
            Segment::Repeat { index, count } => {
                out.extend(std::iter::repeat_n(base + index as u64, count));
            }
            Segment::Slice { start, len } => {
                out.extend(base + start as u64..base + (start + len) as u64);
            }
        }
    }
    out
}

/// The coordinate column of unit rows `rows`: row `r` takes `values[(r / stride) % extent]`.
/// Values with nulls, and types without a kernel here, go through `take`.
pub(super) fn expand(
    values: &ArrayRef,
    rows: Range<usize>,
    stride: u64,
    extent: u64,
) -> Result<ArrayRef, ArrowError> {
    let segments = segments(rows, stride, extent);
    let in_range = segments.iter().all(|s| match *s {
        Segment::Repeat { index, .. } => index < values.len(),
        Segment::Slice { start, len } => start + len <= values.len(),
    });
    if !in_range {
        return Err(ArrowError::InvalidArgumentError(format!(
            "a coordinate index beyond the {} values of the unit's coordinate",
            values.len()
        )));
    }
    if values.null_count() > 0 {
        return take_segments(values, &segments);
    }
    downcast_primitive_array!(
        values => Ok(repeat_primitive(values, &segments)),
        DataType::Utf8 => repeat_bytes(values.as_string::<i32>(), &segments),
        DataType::LargeUtf8 => repeat_bytes(values.as_string::<i64>(), &segments),
        DataType::Binary => repeat_bytes(values.as_binary::<i32>(), &segments),
        DataType::LargeBinary => repeat_bytes(values.as_binary::<i64>(), &segments),
        _ => take_segments(values, &segments),
    )
}

/// `values` expanded by `segments`, with `values`' own data type (a time zone kept).
fn repeat_primitive<T: ArrowPrimitiveType>(
    values: &PrimitiveArray<T>,
    segments: &[Segment],
) -> ArrayRef {
    let source = values.values();
    let rows = segments.iter().map(segment_rows).sum();
    let mut out: Vec<T::Native> = Vec::with_capacity(rows);
    for segment in segments {
        match *segment {
            Segment::Repeat { index, count } => {
                out.extend(std::iter::repeat_n(source[index], count));
            }
            Segment::Slice { start, len } => out.extend_from_slice(&source[start..start + len]),
        }
    }
    let array =
        PrimitiveArray::<T>::new(out.into(), None).with_data_type(values.data_type().clone());
    std::sync::Arc::new(array)
}

/// `values` (strings or bytes, without nulls) expanded by `segments`: a repeated value is
/// copied once and then doubled in place, a slice copied whole.
fn repeat_bytes<T: ByteArrayType>(
    values: &GenericByteArray<T>,
    segments: &[Segment],
) -> Result<ArrayRef, ArrowError> {
    let offsets = values.value_offsets();
    let bytes = values.value_data();
    let rows: usize = segments.iter().map(segment_rows).sum();
    let mut ends: Vec<T::Offset> = Vec::with_capacity(rows + 1);
    ends.push(T::Offset::usize_as(0));
    let mut data: Vec<u8> = Vec::new();
    for segment in segments {
        match *segment {
            Segment::Repeat { index, count } => {
                let value = &bytes[offsets[index].as_usize()..offsets[index + 1].as_usize()];
                let start = data.len();
                let total = value.len().saturating_mul(count);
                offset::<T>(start.saturating_add(total))?; // The run's largest offset fits.
                data.reserve(total);
                data.extend_from_slice(value);
                while data.len() - start < total {
                    let copied = data.len() - start;
                    data.extend_from_within(start..start + copied.min(total - copied));
                }
                let len = value.len();
                ends.extend((1..=count).map(|i| T::Offset::usize_as(start + i * len)));
            }
            Segment::Slice { start, len } => {
                let (from, to) = (offsets[start].as_usize(), offsets[start + len].as_usize());
                let base = data.len();
                offset::<T>(base + to - from)?; // The largest offset of the slice fits.
                data.extend_from_slice(&bytes[from..to]);
                let slice = &offsets[start + 1..=start + len];
                ends.extend(
                    slice
                        .iter()
                        .map(|end| T::Offset::usize_as(base + end.as_usize() - from)),
                );
            }
        }
    }
    let offsets = OffsetBuffer::new(ends.into());
    // SAFETY: `data` holds whole values of `values`, a valid array of the same type, one after
    // another, and `offsets` starts at 0 and ends each copied value, so the offsets rise, stay
    // within `data`, fit the offset type (each segment's largest is checked above, and they
    // only rise) and fall on value boundaries (UTF-8 character boundaries for strings).
    // `try_new` would check every offset and the UTF-8 of every byte again: a third of this
    // function's time.
    let array = unsafe { GenericByteArray::<T>::new_unchecked(offsets, data.into(), None) };
    Ok(std::sync::Arc::new(array))
}

/// `at` as an offset of `T`, or an error past its range (2 GiB for 32-bit offsets; a
/// saturated sum is past every range).
fn offset<T: ByteArrayType>(at: usize) -> Result<T::Offset, ArrowError> {
    T::Offset::from_usize(at).ok_or_else(|| {
        ArrowError::InvalidArgumentError(format!(
            "coordinate values of {at} bytes overflow the column's offsets"
        ))
    })
}

fn segment_rows(segment: &Segment) -> usize {
    match *segment {
        Segment::Repeat { count, .. } => count,
        Segment::Slice { len, .. } => len,
    }
}

/// `values` expanded by `segments` through `take` (nulls, other types).
fn take_segments(values: &ArrayRef, segments: &[Segment]) -> Result<ArrayRef, ArrowError> {
    take(
        values.as_ref(),
        &UInt64Array::from(row_indices(segments, 0)),
        None,
    )
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{
        BinaryArray, BooleanArray, Decimal128Array, Int64Array, LargeBinaryArray, LargeStringArray,
        StringArray, StringViewArray, TimestampSecondArray, UInt32Array,
    };

    use super::*;

    /// The column row by row, as `take` with one index per row builds it.
    fn reference(values: &ArrayRef, rows: Range<usize>, stride: u64, extent: u64) -> ArrayRef {
        let idx: Vec<u32> = rows
            .map(|r| ((r as u64 / stride) % extent) as u32)
            .collect();
        take(values.as_ref(), &UInt32Array::from(idx), None).unwrap()
    }

    #[test]
    fn expansions_equal_a_row_by_row_take() {
        // Empty strings, multi-byte UTF-8, and arrays that are slices of larger ones.
        let strings: Vec<String> = (0..7).map(|i| "aé€😀".repeat(i)).collect();
        let longer: Vec<String> = (0..10).map(|i| format!("x{i}")).collect();
        let arrays: Vec<ArrayRef> = vec![
            Arc::new(StringArray::from_iter_values(&longer).slice(2, 7)),
            Arc::new(Int64Array::from_iter_values(0..10).slice(3, 7)),
            Arc::new(BinaryArray::from_iter_values(
                strings.iter().map(|s| s.as_bytes()),
            )),
            Arc::new(LargeBinaryArray::from_iter_values(
                strings.iter().map(|s| s.as_bytes()),
            )),
            Arc::new(Int64Array::from_iter_values(10..17)),
            Arc::new(TimestampSecondArray::from_iter_values(0..7).with_timezone("Europe/Paris")),
            Arc::new(
                Decimal128Array::from_iter_values(0..7)
                    .with_precision_and_scale(10, 2)
                    .unwrap(),
            ),
            Arc::new(StringArray::from_iter_values(&strings)),
            Arc::new(LargeStringArray::from_iter_values(&strings)),
            Arc::new(StringViewArray::from_iter_values(&strings)),
            Arc::new(BooleanArray::from(vec![
                true, false, true, true, false, false, true,
            ])),
            Arc::new(StringArray::from(vec![
                Some("x"),
                None,
                Some("z"),
                Some(""),
                None,
                Some("w"),
                Some("v"),
            ])),
        ];
        for values in &arrays {
            for (stride, extent) in [(1, 1), (1, 7), (3, 1), (3, 5), (2, 7), (100, 7), (7, 3)] {
                let unit_rows = (stride * extent * 2) as usize;
                for start in 0..unit_rows {
                    for len in [0, 1, 2, 5, stride as usize + 1, unit_rows - start] {
                        let end = (start + len).min(unit_rows);
                        let got = expand(values, start..end, stride, extent).unwrap();
                        // Every offset and byte, as `try_new` would check them.
                        got.to_data().validate_full().unwrap();
                        let want = reference(values, start..end, stride, extent);
                        assert_eq!(
                            &got,
                            &want,
                            "{} stride {stride} extent {extent} rows {start}..{end}",
                            values.data_type()
                        );
                    }
                }
            }
        }
    }

    /// The runs equal the coordinate computed row by row, for every start inside the unit.
    #[test]
    fn contiguous_coords_equal_row_by_row_division() {
        for (stride, extent) in [(1, 1), (1, 7), (3, 1), (3, 5), (100, 10), (7, 3)] {
            let unit_rows = (stride * extent * 2) as usize;
            for start in 0..unit_rows {
                for len in [0, 1, 2, 5, stride as usize + 1, unit_rows - start] {
                    let end = (start + len).min(unit_rows);
                    let expected: Vec<u64> = (start..end)
                        .map(|r| 7 + (r as u64 / stride) % extent)
                        .collect();
                    assert_eq!(
                        contiguous_coords(start..end, stride, extent, 7),
                        expected,
                        "stride {stride}, extent {extent}, rows {start}..{end}"
                    );
                }
            }
        }
    }

    #[test]
    fn an_index_beyond_the_values_is_an_error() {
        let values: ArrayRef = Arc::new(StringArray::from_iter_values(["a", "b"]));
        assert!(expand(&values, 0..10, 1, 5).is_err());
        assert!(expand(&values, 0..10, 2, 3).is_err());
        assert!(expand(&values, 0..4, 2, 2).is_ok());
    }
}
