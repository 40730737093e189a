//! One numeric column (integers, floats) of one row group as a Parquet column chunk, written
//! by our code: dictionary-encoded while the row group's distinct values fit the dictionary
//! page limit (`fixed_dictionary.rs`), otherwise PLAIN; or, where the properties ask for it
//! (the index columns), DELTA_BINARY_PACKED (`delta_binary_packed.rs`). parquet-rs's dictionary encoder
//! hashes every value through its generic interner and, when the dictionary outgrows the
//! limit, has already spent that work
//! before falling back to PLAIN for the rest of the chunk (a third of the export of an N-D
//! float array); here values are compared as 4- or 8-byte integers, a repeated
//! value costs one comparison, and a chunk whose dictionary overflows is written PLAIN
//! throughout (no larger than parquet-rs's half-dictionary chunk). A column without nulls is
//! read where it lies, in its Arrow arrays (`values.rs`); others are first gathered as 64-bit
//! values.
//!
//! Statistics follow parquet-rs's rules: NaN is never a minimum or maximum (a page of only
//! NaN is declined, since parquet-rs then drops the column index), a zero minimum is written
//! -0.0 and a zero maximum +0.0, unsigned integers compare unsigned.

use arrow::array::{Array, ArrayRef, ArrowPrimitiveType, AsArray, PrimitiveArray};
use arrow::datatypes::{
    DataType, Float32Type, Float64Type, Int8Type, Int16Type, Int32Type, Int64Type, UInt8Type,
    UInt16Type, UInt32Type, UInt64Type,
};
use datafusion::error::{DataFusionError, Result};
use parquet::basic::{Encoding, Type as PhysicalType};
use parquet::file::properties::WriterProperties;
use parquet::file::statistics::{Statistics, ValueStatistics};
use parquet::schema::types::ColumnDescPtr;

use super::chunk::{self, BoundaryOrderTracker, ChunkWriter, DataPage, EncodedChunk};
use super::delta_binary_packed as delta;
use super::fixed_dictionary::{Dictionary, Span, key_values};
use super::rle;
use super::values::{Values, with_pieces};

/// How a column's values are stored and ordered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Signed,
    Unsigned,
    Float,
}

/// A numeric column's physical layout: its value width in bytes (4 or 8) and its order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Layout {
    width: usize,
    kind: Kind,
}

impl Layout {
    /// The layout parquet-rs gives the Arrow type `data_type` as the physical type `physical`.
    fn of(data_type: &DataType, physical: PhysicalType) -> Option<Self> {
        let (width, kind) = match (data_type, physical) {
            (DataType::Int8 | DataType::Int16 | DataType::Int32, PhysicalType::INT32) => {
                (4, Kind::Signed)
            }
            (DataType::UInt8 | DataType::UInt16 | DataType::UInt32, PhysicalType::INT32) => {
                (4, Kind::Unsigned)
            }
            (DataType::Int64, PhysicalType::INT64) => (8, Kind::Signed),
            (DataType::UInt64, PhysicalType::INT64) => (8, Kind::Unsigned),
            (DataType::Float32, PhysicalType::FLOAT) => (4, Kind::Float),
            (DataType::Float64, PhysicalType::DOUBLE) => (8, Kind::Float),
            _ => return None,
        };
        Some(Self { width, kind })
    }

    /// `bits` (a value's physical bits, zero-extended) as an unsigned integer that orders as
    /// the values do, with both zeros equal; `None` for NaN.
    #[inline]
    fn order(self, bits: u64) -> Option<u64> {
        let sign = 1u64 << (self.width * 8 - 1);
        let magnitude = bits & (sign - 1);
        match self.kind {
            Kind::Unsigned => Some(bits),
            Kind::Signed => Some(bits ^ sign),
            Kind::Float => {
                let infinity = if self.width == 4 {
                    0x7f80_0000
                } else {
                    0x7ff0_0000_0000_0000
                };
                if magnitude > infinity {
                    None
                } else if magnitude == 0 {
                    Some(sign)
                } else if bits & sign != 0 {
                    Some(!bits & (sign | (sign - 1)))
                } else {
                    Some(bits | sign)
                }
            }
        }
    }

    /// The physical bits of the value whose [`Layout::order`] is `order`; a float zero as
    /// -0.0 when it is a minimum and +0.0 when it is a maximum (`maximum`).
    fn bits(self, order: u64, maximum: bool) -> u64 {
        let sign = 1u64 << (self.width * 8 - 1);
        match self.kind {
            Kind::Unsigned => order,
            Kind::Signed => order ^ sign,
            Kind::Float if order == sign => {
                if maximum {
                    0
                } else {
                    sign
                }
            }
            Kind::Float if order & sign != 0 => order & (sign - 1),
            Kind::Float => !order & (sign | (sign - 1)),
        }
    }

    /// `bits` as the column index stores a value: little-endian, `width` bytes.
    fn plain(self, bits: u64) -> Vec<u8> {
        bits.to_le_bytes()[..self.width].to_vec()
    }

    /// The chunk statistics of the physical type, from the bits of its minimum and maximum;
    /// `signed` (a signed sort order) also fills the deprecated min/max fields, as parquet-rs
    /// does.
    fn statistics(
        physical: PhysicalType,
        min_max: Option<(u64, u64)>,
        nulls: u64,
        signed: bool,
    ) -> Statistics {
        fn value<T>(
            min_max: Option<(u64, u64)>,
            nulls: u64,
            signed: bool,
            convert: impl Fn(u64) -> T,
        ) -> ValueStatistics<T> {
            let (min, max) = (min_max.map(|m| convert(m.0)), min_max.map(|m| convert(m.1)));
            ValueStatistics::new(min, max, None, Some(nulls), false)
                .with_backwards_compatible_min_max(signed)
        }
        match physical {
            PhysicalType::INT32 => {
                Statistics::Int32(value(min_max, nulls, signed, |b| b as u32 as i32))
            }
            PhysicalType::INT64 => Statistics::Int64(value(min_max, nulls, signed, |b| b as i64)),
            PhysicalType::FLOAT => {
                Statistics::Float(value(min_max, nulls, signed, |b| f32::from_bits(b as u32)))
            }
            _ => Statistics::Double(value(min_max, nulls, signed, f64::from_bits)),
        }
    }
}

/// How a column's values are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// A dictionary while it fits, else PLAIN.
    Dictionary,
    /// PLAIN (the dictionary disabled).
    Plain,
    /// DELTA_BINARY_PACKED (integers, the dictionary disabled).
    Delta,
}

impl Mode {
    /// The mode the properties give a column of `layout`, if we write it.
    fn of(descr: &ColumnDescPtr, props: &WriterProperties, layout: Layout) -> Option<Self> {
        let path = descr.path();
        match (props.dictionary_enabled(path), props.encoding(path)) {
            (true, None) => Some(Mode::Dictionary),
            (false, None | Some(Encoding::PLAIN)) => Some(Mode::Plain),
            (false, Some(Encoding::DELTA_BINARY_PACKED)) if layout.kind != Kind::Float => {
                Some(Mode::Delta)
            }
            _ => None,
        }
    }
}

/// Whether [`encode`] may write this column: a top-level integer or float column of a type
/// parquet-rs stores as its own physical type, dictionary-encoded, PLAIN or delta-encoded,
/// with settings `chunk.rs` writes.
pub(super) fn supported(
    descr: &ColumnDescPtr,
    props: &WriterProperties,
    data_type: &DataType,
) -> bool {
    Layout::of(data_type, descr.physical_type())
        .and_then(|layout| Mode::of(descr, props, layout))
        .is_some()
        && chunk::settings_supported(descr, props)
}

/// The encoder's working memory, kept from one row group to the next.
#[derive(Default)]
pub(super) struct Scratch {
    dictionary: Option<Dictionary>,
    /// The non-null values' bits, in row order.
    bits: Vec<u64>,
    /// Their dictionary keys.
    keys: Vec<u32>,
    /// Whether each row is non-null; empty when no row is null.
    valid: Vec<bool>,
    /// The distinct values [`clearly_over`] samples.
    sample: hashbrown::HashSet<u64, foldhash::fast::FixedState>,
}

/// Appends the bits of `array`'s non-null values to `bits` (and, for a column with nulls,
/// each row's validity to `valid`), each value converted as parquet-rs stores it (`to_bits`).
fn gather<T: ArrowPrimitiveType>(
    array: &PrimitiveArray<T>,
    nullable: bool,
    bits: &mut Vec<u64>,
    valid: &mut Vec<bool>,
    to_bits: impl Fn(T::Native) -> u64,
) {
    match array.nulls().filter(|n| n.null_count() > 0) {
        None => bits.extend(array.values().iter().map(|&v| to_bits(v))),
        Some(nulls) => {
            let values = array.values();
            bits.extend(nulls.valid_indices().map(|i| to_bits(values[i])));
        }
    }
    if nullable {
        match array.nulls() {
            None => valid.extend(std::iter::repeat_n(true, array.len())),
            Some(nulls) => valid.extend(nulls.iter()),
        }
    }
}

/// Collects the rows of `arrays` into `bits` and `valid`, and their [`Span`]
/// into `span` (only where `span` is given: a dictionary will be tried).
fn gather_rows(
    arrays: &[ArrayRef],
    bits: &mut Vec<u64>,
    valid: &mut Vec<bool>,
    mut span: Option<&mut Span>,
) -> Result<()> {
    let nullable = arrays.iter().any(|a| a.null_count() > 0);
    bits.clear();
    valid.clear();
    for array in arrays {
        let start = bits.len();
        match array.data_type() {
            DataType::Int8 => gather(
                array.as_primitive::<Int8Type>(),
                nullable,
                bits,
                valid,
                |v| u64::from(i32::from(v) as u32),
            ),
            DataType::Int16 => gather(
                array.as_primitive::<Int16Type>(),
                nullable,
                bits,
                valid,
                |v| u64::from(i32::from(v) as u32),
            ),
            DataType::Int32 => gather(
                array.as_primitive::<Int32Type>(),
                nullable,
                bits,
                valid,
                |v| u64::from(v as u32),
            ),
            DataType::Int64 => gather(
                array.as_primitive::<Int64Type>(),
                nullable,
                bits,
                valid,
                |v| v as u64,
            ),
            DataType::UInt8 => gather(
                array.as_primitive::<UInt8Type>(),
                nullable,
                bits,
                valid,
                u64::from,
            ),
            DataType::UInt16 => gather(
                array.as_primitive::<UInt16Type>(),
                nullable,
                bits,
                valid,
                u64::from,
            ),
            DataType::UInt32 => gather(
                array.as_primitive::<UInt32Type>(),
                nullable,
                bits,
                valid,
                u64::from,
            ),
            DataType::UInt64 => gather(
                array.as_primitive::<UInt64Type>(),
                nullable,
                bits,
                valid,
                |v| v,
            ),
            DataType::Float32 => gather(
                array.as_primitive::<Float32Type>(),
                nullable,
                bits,
                valid,
                |v| u64::from(v.to_bits()),
            ),
            DataType::Float64 => gather(
                array.as_primitive::<Float64Type>(),
                nullable,
                bits,
                valid,
                |v| v.to_bits(),
            ),
            other => {
                return Err(DataFusionError::Internal(format!(
                    "the numeric writer was given a {other} column"
                )));
            }
        }
        if let Some(span) = span.as_deref_mut() {
            span.add(bits[start..].iter().copied());
        }
    }
    Ok(())
}

/// Encodes one row group's values of the column `descr` (the arrays in row order) as a column
/// chunk. `None` when a page holds only NaN: the caller then writes the column with
/// parquet-rs.
pub(super) fn encode(
    descr: &ColumnDescPtr,
    props: &WriterProperties,
    arrays: &[ArrayRef],
    scratch: &mut Scratch,
) -> Result<Option<EncodedChunk>> {
    let path = descr.path();
    let physical = descr.physical_type();
    let data_type = arrays.first().map(|a| a.data_type().clone());
    let Some(layout) = data_type.and_then(|t| Layout::of(&t, physical)) else {
        return Ok(None);
    };
    let Some(mode) = Mode::of(descr, props, layout) else {
        return Ok(None);
    };
    let mut span = Span::new(1u64 << (layout.width * 8 - 1));
    let dictionary_tried = mode == Mode::Dictionary;
    let rows: usize = arrays.iter().map(|a| a.len()).sum();
    let limit = props.column_dictionary_page_size_limit(path) / layout.width;
    // A column without nulls is read where it lies (`values.rs`); others are gathered into
    // `scratch.bits` first.
    let in_place = Values::of(arrays);
    let Scratch {
        dictionary,
        bits,
        keys,
        valid: validity,
        sample,
    } = scratch;
    let dictionary = dictionary.get_or_insert_with(Dictionary::new);
    // PLAIN and delta columns never read the dictionary (`key_values` empties it only for a
    // chunk it keys).
    let keyed = match &in_place {
        Some(values) => {
            bits.clear();
            validity.clear();
            if dictionary_tried {
                values.add_to(&mut span);
            }
            dictionary_tried
                && with_pieces!(values, pieces => {
                    key_values(dictionary, || pieces.bits(), rows, &span, limit, keys, Some(sample))
                })
        }
        None => {
            gather_rows(
                arrays,
                bits,
                validity,
                dictionary_tried.then_some(&mut span),
            )?;
            dictionary_tried
                && key_values(
                    dictionary,
                    || bits.iter().copied(),
                    bits.len(),
                    &span,
                    limit,
                    keys,
                    Some(sample),
                )
        }
    };
    let bit_width = rle::bit_width(dictionary.values.len().saturating_sub(1) as u32);

    let page_limit = props.column_data_page_size_limit(path);
    let page_rows = match keyed {
        true => page_limit.saturating_mul(8) / usize::from(bit_width),
        // Delta pages are at most as large as PLAIN ones.
        false => page_limit / layout.width,
    };
    let page_rows = props.data_page_row_count_limit().min(page_rows).max(1);
    let estimate = match keyed {
        true => dictionary.values.len() * layout.width + keys.len() * 4,
        false if in_place.is_some() => rows * layout.width,
        false => bits.len() * layout.width,
    };
    let Some(mut chunk) = ChunkWriter::new(descr, props, estimate / 2 + 4096)? else {
        return Ok(None);
    };
    if keyed {
        let mut page = Vec::new();
        plain(&dictionary.values, layout.width, &mut page);
        chunk.dictionary_page(page, dictionary.values.len())?;
    }

    let mut boundary = BoundaryOrderTracker::new();
    let mut chunk_min_max: Option<(u64, u64)> = None;
    let (mut row, mut value) = (0, 0);
    while row < rows {
        let page_rows = page_rows.min(rows - row);
        let valid = match validity.is_empty() {
            true => None,
            false => Some(&validity[row..row + page_rows]),
        };
        let values = valid.map_or(page_rows, |v| v.iter().filter(|&&b| b).count());
        let page_values = value..value + values;
        let page_bits = match in_place {
            Some(_) => &[][..],
            None => &bits[page_values.clone()],
        };
        let page_min_max = match &in_place {
            Some(in_place) => in_place
                .min_max(page_values.clone())
                .and_then(|(min, max)| Some((layout.order(min)?, layout.order(max)?))),
            None => min_max(layout, page_bits),
        };
        if page_min_max.is_none() && values > 0 {
            // Only NaN: parquet-rs writes no column index for such a chunk.
            return Ok(None);
        }
        let encoded = match keyed {
            true => {
                let mut encoded = Vec::with_capacity(values * usize::from(bit_width) / 8 + 16);
                encoded.push(bit_width);
                rle::encode(&keys[value..value + values], bit_width, &mut encoded);
                encoded
            }
            false if mode == Mode::Delta => {
                let mut encoded = Vec::with_capacity(values / 8 + 64);
                match &in_place {
                    Some(in_place) => in_place.delta(page_values, layout.width, &mut encoded),
                    None => delta::encode(
                        page_bits.iter().copied(),
                        page_bits.len(),
                        layout.width,
                        &mut encoded,
                    ),
                }
                encoded
            }
            false => {
                let mut encoded = Vec::with_capacity(values * layout.width);
                match &in_place {
                    Some(in_place) => in_place.plain(page_values, &mut encoded),
                    None => plain(page_bits, layout.width, &mut encoded),
                }
                encoded
            }
        };
        let bounds = page_min_max.map(|(min, max)| {
            (
                layout.plain(layout.bits(min, false)),
                layout.plain(layout.bits(max, true)),
            )
        });
        chunk.data_page(DataPage {
            rows: page_rows,
            valid,
            encoding: match (keyed, mode) {
                (true, _) => Encoding::RLE_DICTIONARY,
                (false, Mode::Delta) => Encoding::DELTA_BINARY_PACKED,
                (false, _) => Encoding::PLAIN,
            },
            values: encoded,
            min_max: bounds,
            unencoded_bytes: None,
        })?;
        if let Some(page) = page_min_max {
            boundary.page(page, |a, b| a.cmp(&b));
            chunk_min_max = Some(match chunk_min_max {
                None => page,
                Some((min, max)) => (min.min(page.0), max.max(page.1)),
            });
        }
        row += page_rows;
        value += values;
    }
    let bits = chunk_min_max.map(|(min, max)| (layout.bits(min, false), layout.bits(max, true)));
    let signed = descr.sort_order().is_signed();
    let statistics = Layout::statistics(physical, bits, chunk.nulls(), signed);
    chunk.finish(statistics, boundary.order()).map(Some)
}

/// Appends `bits` PLAIN-encoded: each value's `width` low bytes, little-endian.
fn plain(bits: &[u64], width: usize, out: &mut Vec<u8>) {
    let start = out.len();
    out.resize(start + bits.len() * width, 0);
    let out = &mut out[start..];
    match width {
        4 => {
            for (to, &b) in out.chunks_exact_mut(4).zip(bits) {
                to.copy_from_slice(&(b as u32).to_le_bytes());
            }
        }
        _ => {
            for (to, &b) in out.chunks_exact_mut(8).zip(bits) {
                to.copy_from_slice(&b.to_le_bytes());
            }
        }
    }
}

/// The [`Layout::order`] of the smallest and largest non-NaN value of `bits`, if any.
fn min_max(layout: Layout, bits: &[u64]) -> Option<(u64, u64)> {
    let (mut min, mut max) = (u64::MAX, 0);
    match layout.kind {
        // Integers: no NaN, so a loop the compiler vectorises.
        Kind::Unsigned | Kind::Signed => {
            let flip = match layout.kind {
                Kind::Signed => 1u64 << (layout.width * 8 - 1),
                _ => 0,
            };
            for &b in bits {
                (min, max) = (min.min(b ^ flip), max.max(b ^ flip));
            }
            (!bits.is_empty()).then_some((min, max))
        }
        Kind::Float => {
            let mut any = false;
            for &b in bits {
                if let Some(order) = layout.order(b) {
                    (min, max, any) = (min.min(order), max.max(order), true);
                }
            }
            any.then_some((min, max))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `order` sorts floats as their values do (both zeros equal, NaN excluded), and `bits`
    /// inverts it.
    #[test]
    fn float_order_is_numeric_order() {
        let values = [
            f32::NEG_INFINITY,
            -3.5,
            -1e-40,
            -0.0,
            0.0,
            1e-40,
            2.0,
            f32::INFINITY,
        ];
        let layout = Layout {
            width: 4,
            kind: Kind::Float,
        };
        let orders: Vec<u64> = values
            .iter()
            .map(|v| layout.order(u64::from(v.to_bits())).unwrap())
            .collect();
        for (i, pair) in orders.windows(2).enumerate() {
            let equal = values[i] == values[i + 1];
            assert_eq!(pair[0] == pair[1], equal, "{} {}", values[i], values[i + 1]);
            assert!(pair[0] <= pair[1], "{} {}", values[i], values[i + 1]);
        }
        for (v, o) in values.iter().zip(&orders) {
            let back = f32::from_bits(layout.bits(*o, true) as u32);
            assert_eq!(back, *v);
        }
        assert_eq!(layout.bits(layout.order(0).unwrap(), false), 0x8000_0000);
        assert_eq!(layout.order(u64::from(f32::NAN.to_bits())), None);
        assert_eq!(layout.order(u64::from((-f32::NAN).to_bits())), None);
        let double = Layout {
            width: 8,
            kind: Kind::Float,
        };
        let d = [-2.0f64, -0.0, 0.5, 1e300];
        let o: Vec<u64> = d
            .iter()
            .map(|v| double.order(v.to_bits()).unwrap())
            .collect();
        assert!(o[0] < o[1] && o[1] < o[2] && o[2] < o[3]);
        assert_eq!(f64::from_bits(double.bits(o[0], false)), -2.0);
        assert_eq!(double.order(f64::NAN.to_bits()), None);
    }

    #[test]
    fn integer_order_is_numeric_order() {
        let signed = Layout {
            width: 4,
            kind: Kind::Signed,
        };
        let values = [i32::MIN, -1, 0, 1, i32::MAX];
        let orders: Vec<u64> = values
            .iter()
            .map(|&v| signed.order(u64::from(v as u32)).unwrap())
            .collect();
        assert!(orders.windows(2).all(|p| p[0] < p[1]));
        assert_eq!(signed.bits(orders[1], false) as u32 as i32, -1);
        let long = Layout {
            width: 8,
            kind: Kind::Signed,
        };
        assert!(long.order(-5i64 as u64) < long.order(3));
        let unsigned = Layout {
            width: 4,
            kind: Kind::Unsigned,
        };
        assert!(unsigned.order(u64::from(u32::MAX)) > unsigned.order(7));
    }
}
