//! A float column without nulls read where it lies, in its Arrow arrays, for the PLAIN pages
//! of `numbers.rs`: each page's smallest and largest value by comparisons the compiler
//! vectorises, and its bytes copied as they are. The general path first widens every value
//! to 64 bits in a buffer of its own and compares them one by one (an order that must step
//! around NaN): for the float array of an N-D export, 8 MB written and read three times per
//! row group, and a sixth of the export's CPU in `numbers::encode` (issue #14).

use std::ops::Range;

use arrow::array::{ArrayRef, AsArray};
use arrow::datatypes::{DataType, Float32Type, Float64Type};

/// A float type as this module reads it.
pub(super) trait Float: Copy + PartialOrd {
    const INFINITY: Self;
    const NEG_INFINITY: Self;
    /// The value's bits, zero-extended.
    fn bits(self) -> u64;
}

impl Float for f32 {
    const INFINITY: Self = f32::INFINITY;
    const NEG_INFINITY: Self = f32::NEG_INFINITY;
    fn bits(self) -> u64 {
        u64::from(self.to_bits())
    }
}

impl Float for f64 {
    const INFINITY: Self = f64::INFINITY;
    const NEG_INFINITY: Self = f64::NEG_INFINITY;
    fn bits(self) -> u64 {
        self.to_bits()
    }
}

/// The values of a float column chunk's arrays, in row order, and each array's bytes.
pub(super) enum Floats<'a> {
    F32(Pieces<'a, f32>),
    F64(Pieces<'a, f64>),
}

/// Each array's values and the same values as bytes (native byte order).
pub(super) struct Pieces<'a, T> {
    values: Vec<&'a [T]>,
    bytes: Vec<&'a [u8]>,
}

impl<'a> Floats<'a> {
    /// The values of `arrays` if all are of one float type and none holds a null.
    pub(super) fn of(arrays: &'a [ArrayRef]) -> Option<Self> {
        if arrays.iter().any(|a| a.null_count() > 0) {
            return None;
        }
        let first = arrays.first()?.data_type();
        if arrays.iter().any(|a| a.data_type() != first) {
            return None;
        }
        match first {
            DataType::Float32 => Some(Self::F32(Pieces {
                values: arrays
                    .iter()
                    .map(|a| &**a.as_primitive::<Float32Type>().values())
                    .collect(),
                bytes: arrays
                    .iter()
                    .map(|a| a.as_primitive::<Float32Type>().values().inner().as_slice())
                    .collect(),
            })),
            DataType::Float64 => Some(Self::F64(Pieces {
                values: arrays
                    .iter()
                    .map(|a| &**a.as_primitive::<Float64Type>().values())
                    .collect(),
                bytes: arrays
                    .iter()
                    .map(|a| a.as_primitive::<Float64Type>().values().inner().as_slice())
                    .collect(),
            })),
            _ => None,
        }
    }

    /// Every value's bits (zero-extended), in row order.
    pub(super) fn bits(&self) -> impl Iterator<Item = u64> + '_ {
        let (f32s, f64s) = match self {
            Self::F32(p) => (Some(p.bits()), None),
            Self::F64(p) => (None, Some(p.bits())),
        };
        f32s.into_iter().flatten().chain(f64s.into_iter().flatten())
    }

    /// The bits of the smallest and largest non-NaN value of `rows` (either zero, whichever
    /// came first); `None` when all are NaN or there are none.
    pub(super) fn min_max(&self, rows: Range<usize>) -> Option<(u64, u64)> {
        match self {
            Self::F32(p) => p.min_max(rows),
            Self::F64(p) => p.min_max(rows),
        }
    }

    /// Appends `rows` PLAIN-encoded (little-endian).
    pub(super) fn plain(&self, rows: Range<usize>, out: &mut Vec<u8>) {
        match self {
            Self::F32(p) => p.plain(rows, out, 4),
            Self::F64(p) => p.plain(rows, out, 8),
        }
    }
}

impl<T: Float> Pieces<'_, T> {
    fn bits(&self) -> impl Iterator<Item = u64> + '_ {
        self.values
            .iter()
            .flat_map(|piece| piece.iter().map(|v| v.bits()))
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

    fn min_max(&self, rows: Range<usize>) -> Option<(u64, u64)> {
        let (mut lo, mut hi) = (T::INFINITY, T::NEG_INFINITY);
        for (i, range) in self.within(rows) {
            (lo, hi) = min_max(&self.values[i][range], lo, hi);
        }
        // Still the starting pair only when every value was NaN (or none was given).
        (lo <= hi).then(|| (lo.bits(), hi.bits()))
    }

    fn plain(&self, rows: Range<usize>, out: &mut Vec<u8>, width: usize) {
        for (i, range) in self.within(rows) {
            let bytes = &self.bytes[i][range.start * width..range.end * width];
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

/// `lo` and `hi` narrowed by the non-NaN values of `values`. Branch-free selects over sixteen
/// lanes, which the compiler turns into SIMD minimum and maximum instructions: NaN compares
/// false, so it never replaces a lane's value, as the x86 instructions do for their second
/// operand. Of two zeros either may stay; the caller's order does not tell them apart.
fn min_max<T: Float>(values: &[T], lo: T, hi: T) -> (T, T) {
    const LANES: usize = 16;
    let (mut los, mut his) = ([lo; LANES], [hi; LANES]);
    let mut chunks = values.chunks_exact(LANES);
    for chunk in &mut chunks {
        for ((l, h), &v) in los.iter_mut().zip(his.iter_mut()).zip(chunk) {
            *l = if v < *l { v } else { *l };
            *h = if v > *h { v } else { *h };
        }
    }
    let (mut lo, mut hi) = (lo, hi);
    for &v in los.iter().chain(chunks.remainder()) {
        lo = if v < lo { v } else { lo };
    }
    for &v in his.iter().chain(chunks.remainder()) {
        hi = if v > hi { v } else { hi };
    }
    (lo, hi)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{Float32Array, Float64Array};

    use super::*;

    /// The smallest and largest non-NaN values, one at a time, as the reference.
    fn reference<T: Float>(values: &[T]) -> Option<(T, T)> {
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
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let values: Vec<f32> = (0..1000)
            .map(|i| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
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
        let floats = Floats::of(&arrays).unwrap();
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
        assert_eq!(floats.bits().collect::<Vec<_>>(), bits);

        let doubles: Vec<f64> = values.iter().map(|&v| f64::from(v) * 1e200).collect();
        let arrays: Vec<ArrayRef> = vec![Arc::new(Float64Array::from(doubles.clone()))];
        let floats = Floats::of(&arrays).unwrap();
        let got = floats
            .min_max(0..1000)
            .map(|(lo, hi)| (f64::from_bits(lo), f64::from_bits(hi)));
        assert_eq!(got, reference(&doubles));
        // Nulls, or two types, are not for this module.
        let with_null: Vec<ArrayRef> = vec![Arc::new(Float32Array::from(vec![Some(1.0), None]))];
        assert!(Floats::of(&with_null).is_none());
        let mixed: Vec<ArrayRef> = vec![arrays[0].clone(), Arc::new(Float32Array::from(vec![1.0]))];
        assert!(Floats::of(&mixed).is_none());
    }
}
