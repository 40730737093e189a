//! A numeric column without nulls read where it lies, in its Arrow arrays, for `numbers.rs`:
//! its values' bits for the dictionary and the delta encoding, an integer column's span and
//! each page's smallest and largest value by comparisons the compiler vectorises, and PLAIN
//! pages copied as they are. The general path (columns with nulls, 1- and 2-byte integers)
//! first widens every value to 64 bits in a buffer of its own and compares them one by one
//! (floats in an order that must step around NaN): for the float array of an N-D export, 8 MB
//! written and read three times per row group, and 12–14% of the export's profile in
//! `numbers::encode`.

use std::ops::Range;

use arrow::array::{ArrayRef, AsArray};
use arrow::datatypes::{
    ArrowPrimitiveType, DataType, Float32Type, Float64Type, Int32Type, Int64Type, ToByteSlice,
    UInt32Type, UInt64Type,
};

use super::delta_binary_packed as delta;
use super::fixed_dictionary::Span;

/// A 4- or 8-byte value type as this module reads it.
pub(super) trait Native: arrow::datatypes::ArrowNativeType + PartialOrd {
    /// The start of a minimum: no value is larger.
    const HIGHEST: Self;
    /// The start of a maximum: no value is smaller.
    const LOWEST: Self;
    /// The value's bits, zero-extended to 64 (as `numbers.rs` gathers them).
    fn bits(self) -> u64;
}

macro_rules! native {
    ($t:ty, $highest:expr, $lowest:expr, $bits:expr) => {
        impl Native for $t {
            const HIGHEST: Self = $highest;
            const LOWEST: Self = $lowest;
            #[inline]
            fn bits(self) -> u64 {
                $bits(self)
            }
        }
    };
}
native!(i32, i32::MAX, i32::MIN, |v: i32| u64::from(v as u32));
native!(i64, i64::MAX, i64::MIN, |v: i64| v as u64);
native!(u32, u32::MAX, u32::MIN, u64::from);
native!(u64, u64::MAX, u64::MIN, |v: u64| v);
native!(f32, f32::INFINITY, f32::NEG_INFINITY, |v: f32| u64::from(
    v.to_bits()
));
native!(f64, f64::INFINITY, f64::NEG_INFINITY, f64::to_bits);

/// An integer type read in both orders of its bits, as a [`Span`] keeps them: unsigned, and
/// signed (the sign bit flipped).
pub(super) trait Integer: Native {
    /// Whether the type's own order is the signed one.
    const SIGNED: bool;
    type Unsigned: Native;
    type Signed: Native;
    fn unsigned(self) -> Self::Unsigned;
    fn signed(self) -> Self::Signed;
}

macro_rules! integer {
    ($t:ty, $unsigned:ty, $signed:ty) => {
        impl Integer for $t {
            const SIGNED: bool = <$t>::MIN != 0;
            type Unsigned = $unsigned;
            type Signed = $signed;
            #[inline]
            fn unsigned(self) -> $unsigned {
                self as $unsigned
            }
            #[inline]
            fn signed(self) -> $signed {
                self as $signed
            }
        }
    };
}
integer!(i32, u32, i32);
integer!(u32, u32, i32);
integer!(i64, u64, i64);
integer!(u64, u64, i64);

/// The values of a column chunk's arrays, in row order, by type.
pub(super) enum Values<'a> {
    I32(Pieces<'a, i32>),
    I64(Pieces<'a, i64>),
    U32(Pieces<'a, u32>),
    U64(Pieces<'a, u64>),
    F32(Pieces<'a, f32>),
    F64(Pieces<'a, f64>),
}

/// Evaluates `$body` with `$pieces` bound to the [`Pieces`] of `$values`, whatever its type.
macro_rules! with_pieces {
    ($values:expr, $pieces:ident => $body:expr) => {
        match $values {
            Values::I32($pieces) => $body,
            Values::I64($pieces) => $body,
            Values::U32($pieces) => $body,
            Values::U64($pieces) => $body,
            Values::F32($pieces) => $body,
            Values::F64($pieces) => $body,
        }
    };
}
pub(super) use with_pieces;

/// Each array's values.
pub(super) struct Pieces<'a, T> {
    values: Vec<&'a [T]>,
}

impl<'a, T: Native> Pieces<'a, T> {
    fn of<A: ArrowPrimitiveType<Native = T>>(arrays: &'a [ArrayRef]) -> Self {
        let values = arrays.iter().map(|a| &a.as_primitive::<A>().values()[..]);
        Self {
            values: values.collect(),
        }
    }

    /// Every value's bits (zero-extended), in row order.
    pub(super) fn bits(&self) -> impl Iterator<Item = u64> + '_ {
        self.bits_of(0..self.values.iter().map(|piece| piece.len()).sum())
    }

    /// The bits of `rows`' values (zero-extended), in row order.
    fn bits_of(&self, rows: Range<usize>) -> impl Iterator<Item = u64> + '_ {
        self.within(rows)
            .flat_map(|(i, range)| self.values[i][range].iter().map(|v| v.bits()))
    }

    /// `(piece, range within it)` for each piece `rows` overlaps.
    fn within(&self, rows: Range<usize>) -> impl Iterator<Item = (usize, Range<usize>)> + '_ {
        let mut start = 0;
        self.values
            .iter()
            .enumerate()
            .filter_map(move |(i, piece)| {
                let (from, to) = (start, start + piece.len());
                start = to;
                let (lo, hi) = (rows.start.max(from), rows.end.min(to));
                (lo < hi).then(|| (i, lo - from..hi - from))
            })
    }

    /// The bits of the smallest and largest value of `rows` in the type's order (NaN
    /// excluded; of two zeros, either); `None` when all are NaN or there are none.
    fn min_max(&self, rows: Range<usize>) -> Option<(u64, u64)> {
        let (mut lo, mut hi) = (T::HIGHEST, T::LOWEST);
        for (i, range) in self.within(rows) {
            (lo, hi) = min_max(&self.values[i][range], lo, hi);
        }
        // Still the starting pair only when every value was NaN (or none was given).
        (lo <= hi).then(|| (lo.bits(), hi.bits()))
    }

    /// Appends `rows` PLAIN-encoded (little-endian).
    fn plain(&self, rows: Range<usize>, out: &mut Vec<u8>) {
        let width = std::mem::size_of::<T>();
        for (i, range) in self.within(rows) {
            let bytes = self.values[i][range].to_byte_slice();
            if cfg!(target_endian = "little") {
                out.extend_from_slice(bytes);
            } else {
                for value in bytes.chunks_exact(width) {
                    out.extend(value.iter().rev());
                }
            }
        }
    }
}

impl<T: Integer> Pieces<'_, T> {
    /// Adds every value to `span`. One vectorised pass finds the extremes in the type's own
    /// order. The other order (the sign bit flipped) needs a pass of its own only for values
    /// across the sign bit that span at least half the type's range: values on one side of
    /// it have the same extremes in both orders, and values across it spanning less than half
    /// span more than half in the other order, which [`Span`] then never picks, so that order
    /// is given as the whole range. (A value-by-value pass over the bits, [`Span::add`], took
    /// 9% of a `COPY` of an int32 column; one vectorised pass per order, 8%: the passes wait
    /// on memory.)
    fn add_to(&self, span: &mut Span) {
        let mut own = (T::HIGHEST, T::LOWEST);
        for piece in &self.values {
            own = min_max(piece, own.0, own.1);
        }
        if own.0 > own.1 {
            return; // No values.
        }
        let (lo, hi) = (own.0.bits(), own.1.bits());
        let top = 1u64 << (8 * std::mem::size_of::<T>() - 1);
        let flip = if T::SIGNED { top } else { 0 };
        let across = (lo ^ hi) & top != 0;
        let whole = (0, top | (top - 1));
        if !across {
            span.add_extremes((lo, hi), (lo, hi));
        } else if (hi ^ flip) - (lo ^ flip) < top {
            match T::SIGNED {
                true => span.add_extremes(whole, (lo, hi)),
                false => span.add_extremes((lo, hi), (whole.0 ^ top, whole.1 ^ top)),
            }
        } else {
            let (mut unsigned, mut signed) = (
                (T::Unsigned::HIGHEST, T::Unsigned::LOWEST),
                (T::Signed::HIGHEST, T::Signed::LOWEST),
            );
            for piece in &self.values {
                unsigned = min_max_by(piece, T::unsigned, unsigned.0, unsigned.1);
                signed = min_max_by(piece, T::signed, signed.0, signed.1);
            }
            span.add_extremes(
                (unsigned.0.bits(), unsigned.1.bits()),
                (signed.0.bits(), signed.1.bits()),
            );
        }
    }
}

impl<'a> Values<'a> {
    /// The values of `arrays` if all are of one 4- or 8-byte numeric type and none holds a
    /// null.
    pub(super) fn of(arrays: &'a [ArrayRef]) -> Option<Self> {
        if arrays.iter().any(|a| a.null_count() > 0) {
            return None;
        }
        let first = arrays.first()?.data_type();
        if arrays.iter().any(|a| a.data_type() != first) {
            return None;
        }
        Some(match first {
            DataType::Int32 => Self::I32(Pieces::of::<Int32Type>(arrays)),
            DataType::Int64 => Self::I64(Pieces::of::<Int64Type>(arrays)),
            DataType::UInt32 => Self::U32(Pieces::of::<UInt32Type>(arrays)),
            DataType::UInt64 => Self::U64(Pieces::of::<UInt64Type>(arrays)),
            DataType::Float32 => Self::F32(Pieces::of::<Float32Type>(arrays)),
            DataType::Float64 => Self::F64(Pieces::of::<Float64Type>(arrays)),
            _ => return None,
        })
    }

    /// See [`Pieces::min_max`].
    pub(super) fn min_max(&self, rows: Range<usize>) -> Option<(u64, u64)> {
        with_pieces!(self, p => p.min_max(rows))
    }

    /// Adds an integer column's values to `span`; a float column's are not (its span is
    /// wide whatever its values, and its sample decides).
    pub(super) fn add_to(&self, span: &mut Span) {
        match self {
            Self::I32(pieces) => pieces.add_to(span),
            Self::I64(pieces) => pieces.add_to(span),
            Self::U32(pieces) => pieces.add_to(span),
            Self::U64(pieces) => pieces.add_to(span),
            Self::F32(_) | Self::F64(_) => {}
        }
    }

    /// Appends `rows`' values delta-encoded ([`delta::encode`]).
    pub(super) fn delta(&self, rows: Range<usize>, width: usize, out: &mut Vec<u8>) {
        let len = rows.len();
        with_pieces!(self, p => delta::encode(p.bits_of(rows), len, width, out))
    }

    /// See [`Pieces::plain`].
    pub(super) fn plain(&self, rows: Range<usize>, out: &mut Vec<u8>) {
        with_pieces!(self, p => p.plain(rows, out))
    }
}

/// `lo` and `hi` narrowed by the values of `values` (NaN excepted). Branch-free selects over
/// sixteen lanes, which the compiler turns into SIMD minimum and maximum instructions where
/// the target has them: NaN compares false, so it never replaces a lane's value, as the x86
/// float instructions do for their second operand.
fn min_max<T: Native>(values: &[T], lo: T, hi: T) -> (T, T) {
    min_max_by(values, |v| v, lo, hi)
}

/// [`min_max`] of `values` each read as `read` gives them (an integer as unsigned or signed).
#[inline]
fn min_max_by<T: Copy, U: Native>(values: &[T], read: impl Fn(T) -> U, lo: U, hi: U) -> (U, U) {
    const LANES: usize = 16;
    let (mut los, mut his) = ([lo; LANES], [hi; LANES]);
    let mut chunks = values.chunks_exact(LANES);
    for chunk in &mut chunks {
        for ((l, h), &v) in los.iter_mut().zip(his.iter_mut()).zip(chunk) {
            let v = read(v);
            *l = if v < *l { v } else { *l };
            *h = if v > *h { v } else { *h };
        }
    }
    let (mut lo, mut hi) = (lo, hi);
    let rest = chunks.remainder().iter().map(|&v| read(v));
    for v in los.iter().copied().chain(rest.clone()) {
        lo = if v < lo { v } else { lo };
    }
    for v in his.iter().copied().chain(rest) {
        hi = if v > hi { v } else { hi };
    }
    (lo, hi)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{Float32Array, Float64Array, Int8Array, Int32Array, UInt64Array};

    use super::*;

    /// A fixed pseudo-random sequence (xorshift64), so the tests need no extra dependency.
    fn xorshift() -> impl FnMut() -> u64 {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        }
    }

    /// The smallest and largest non-NaN values, one at a time, as the reference.
    fn reference<T: Native>(values: &[T]) -> Option<(T, T)> {
        let mut found: Option<(T, T)> = None;
        for &v in values.iter().filter(|v| v.partial_cmp(v).is_some()) {
            found = Some(match found {
                None => (v, v),
                Some((lo, hi)) => (if v < lo { v } else { lo }, if v > hi { v } else { hi }),
            });
        }
        found
    }

    /// Any row range across arrays of any length gives the reference's bounds, with NaN,
    /// both zeros, infinities and subnormals among the values; a range of NaN only gives none;
    /// the PLAIN bytes are the values' little-endian bytes.
    #[test]
    fn bounds_and_bytes_match_a_value_by_value_reading() {
        let special = [
            f32::NAN,
            -0.0,
            0.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            1e-40,
            -1e-40,
        ];
        let mut next = xorshift();
        let values: Vec<f32> = (0..1000)
            .map(|i| {
                let state = next();
                match (i / 100, state % 9) {
                    // Rows 300..400: NaN only.
                    (3, _) => f32::NAN,
                    (_, 0) => special[(state >> 8) as usize % special.len()],
                    _ => (state >> 20) as f32 / 1e9 - 5000.0,
                }
            })
            .collect();
        let lengths = [0, 1, 17, 250, 3, 0, 329, 400];
        let mut at = 0;
        let arrays: Vec<ArrayRef> = lengths
            .iter()
            .map(|&n| {
                at += n;
                Arc::new(Float32Array::from(values[at - n..at].to_vec())) as ArrayRef
            })
            .collect();
        let floats = Values::of(&arrays).unwrap();
        for rows in [
            0..1000,
            5..20,
            17..18,
            300..400,
            299..401,
            0..0,
            400..1000,
            640..999,
        ] {
            let want = reference(&values[rows.clone()]);
            let got = floats
                .min_max(rows.clone())
                .map(|(lo, hi)| (f32::from_bits(lo as u32), f32::from_bits(hi as u32)));
            assert_eq!(got, want, "{rows:?}");
            let mut plain = Vec::new();
            floats.plain(rows.clone(), &mut plain);
            let bytes: Vec<u8> = values[rows].iter().flat_map(|v| v.to_le_bytes()).collect();
            assert_eq!(plain, bytes);
        }
        let bits: Vec<u64> = values.iter().map(|v| u64::from(v.to_bits())).collect();
        assert_eq!(
            with_pieces!(&floats, p => p.bits().collect::<Vec<_>>()),
            bits
        );

        let doubles: Vec<f64> = values.iter().map(|&v| f64::from(v) * 1e200).collect();
        let arrays: Vec<ArrayRef> = vec![Arc::new(Float64Array::from(doubles.clone()))];
        let floats = Values::of(&arrays).unwrap();
        let got = floats
            .min_max(0..1000)
            .map(|(lo, hi)| (f64::from_bits(lo), f64::from_bits(hi)));
        assert_eq!(got, reference(&doubles));
        // Nulls, or two types, are not for this module.
        let with_null: Vec<ArrayRef> = vec![Arc::new(Float32Array::from(vec![Some(1.0), None]))];
        assert!(Values::of(&with_null).is_none());
        let mixed: Vec<ArrayRef> = vec![arrays[0].clone(), Arc::new(Float32Array::from(vec![1.0]))];
        assert!(Values::of(&mixed).is_none());
        let bytes: Vec<ArrayRef> = vec![Arc::new(Int8Array::from(vec![1i8]))];
        assert!(Values::of(&bytes).is_none());
    }

    /// Integers keep their own order (signed or not) from the extremes inward, and their bits
    /// are zero-extended as `numbers.rs` gathers them.
    #[test]
    fn integers_keep_their_order() {
        let signed: Vec<i32> = (0..300)
            .map(|i: i32| match i {
                7 => i32::MIN,
                250 => i32::MAX,
                _ => i.wrapping_mul(0x9e37_79b9_u32 as i32),
            })
            .collect();
        let arrays: Vec<ArrayRef> = signed
            .chunks(70)
            .map(|c| Arc::new(Int32Array::from(c.to_vec())) as ArrayRef)
            .collect();
        let values = Values::of(&arrays).unwrap();
        for rows in [0..300, 8..250, 100..101, 0..0] {
            let want = reference(&signed[rows.clone()])
                .map(|(lo, hi)| (u64::from(lo as u32), u64::from(hi as u32)));
            assert_eq!(values.min_max(rows.clone()), want, "{rows:?}");
        }
        let bits: Vec<u64> = signed.iter().map(|&v| u64::from(v as u32)).collect();
        assert_eq!(
            with_pieces!(&values, p => p.bits().collect::<Vec<_>>()),
            bits
        );

        let unsigned: Vec<u64> = (0..300u64)
            .map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15))
            .collect();
        let arrays: Vec<ArrayRef> = vec![Arc::new(UInt64Array::from(unsigned.clone()))];
        let values = Values::of(&arrays).unwrap();
        assert_eq!(values.min_max(0..300), reference(&unsigned));
        let mut plain = Vec::new();
        values.plain(10..12, &mut plain);
        assert_eq!(plain[..8], unsigned[10].to_le_bytes());
        assert_eq!(plain[8..], unsigned[11].to_le_bytes());
    }

    /// An integer column's span read in place picks the order and range that the span of its
    /// bits added one by one picks, for
    /// every 4- and 8-byte integer type, with values on one side of the sign bit, across it,
    /// at the types' extremes, and over arrays of any length (empty ones too).
    #[test]
    fn spans_match_a_value_by_value_reading() {
        fn check<A: ArrowPrimitiveType>(case: &str, values: &[A::Native], width: usize)
        where
            A::Native: Native,
        {
            let lengths = [0, 1, 17, 250, 3, 0, 329];
            let mut at = 0;
            let arrays: Vec<ArrayRef> = lengths
                .iter()
                .map(|&n| {
                    let (from, to) = (at.min(values.len()), (at + n).min(values.len()));
                    at += n;
                    let piece = values[from..to].to_vec();
                    Arc::new(arrow::array::PrimitiveArray::<A>::from_iter_values(piece)) as ArrayRef
                })
                .collect();
            let sign = 1u64 << (width * 8 - 1);
            let (mut got, mut want) = (Span::new(sign), Span::new(sign));
            Values::of(&arrays).unwrap().add_to(&mut got);
            want.add(values.iter().map(|v| v.bits()));
            let what = format!("{case}: {} values of {}", values.len(), A::DATA_TYPE);
            assert_eq!(got.closest(), want.closest(), "{what}");
        }
        let mut next = xorshift();
        let wide: Vec<u64> = (0..600).map(|_| next()).collect();
        let near_zero: Vec<i64> = (0..600).map(|_| (next() % 2001) as i64 - 1000).collect();
        for (case, i64s) in [
            ("wide", wide.iter().map(|&v| v as i64).collect::<Vec<_>>()),
            ("near zero", near_zero.clone()),
            ("positive", near_zero.iter().map(|v| v + 5000).collect()),
            ("negative", near_zero.iter().map(|v| v - 5000).collect()),
            ("extremes", vec![i64::MIN, -1, 0, i64::MAX, 1]),
            ("none", vec![]),
        ] {
            let i32s: Vec<i32> = i64s.iter().map(|&v| v as i32).collect();
            let u32s: Vec<u32> = i32s.iter().map(|&v| v as u32).collect();
            let u64s: Vec<u64> = i64s.iter().map(|&v| v as u64).collect();
            check::<Int32Type>(case, &i32s, 4);
            check::<UInt32Type>(case, &u32s, 4);
            check::<Int64Type>(case, &i64s, 8);
            check::<UInt64Type>(case, &u64s, 8);
        }
        check::<Int32Type>("int32 extremes", &[i32::MIN, i32::MAX], 4);
        check::<UInt32Type>("uint32 around the sign bit", &[u32::MAX, 0, 1 << 31], 4);
        check::<UInt32Type>("uint32 just across", &[(1 << 31) - 3, (1 << 31) + 5], 4);
        check::<Int64Type>("int64 across both ends", &[i64::MIN + 2, i64::MAX - 1], 8);
    }
}
