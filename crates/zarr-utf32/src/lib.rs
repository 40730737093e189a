//! The transcoding kernels of datafusion-zarr: pure functions from decoded `fixed_length_utf32`
//! chunk bytes (native-endian code units, as zarrs' `bytes` codec hands them over) to Arrow
//! arrays, and back ([`encode`]: Arrow string arrays to padded UTF-32 in either byte order, for
//! the Zarr writer). No I/O, no DataFusion: kept in their own crate so they build and benchmark
//! quickly.
//!
//! Each element is `width` bytes: `width / 4` code units, padded with U+0000. Only trailing
//! U+0000 is removed; leading and interior U+0000 are kept, as NumPy keeps them.
//!
//! # How the string kernels work
//!
//! [`to_utf8`] and [`to_utf8_view`] make one pass over the input, writing each element's UTF-8
//! straight into the values buffer, which is allocated once at its upper bound (UTF-8 never
//! takes more bytes than UTF-32). The vector encoders encode an element whole, its trailing
//! U+0000 included (each becomes one `0x00` byte), and the write position then steps back over
//! those bytes, so the trim point costs nothing but the position of the last non-zero code
//! unit, read off the same comparison masks. [`to_utf8_view`] builds each view as its element
//! is written (the string inline when it has at most 12 bytes, else length, prefix, buffer and
//! offset), keeping only the long strings in the data buffer.
//!
//! Three element encoders exist, picked once per call (see [`kernel_path`]):
//! - `avx2` (x86_64, chosen at run time): 16 code units at a time; all-ASCII pairs of
//!   registers are narrowed with two saturating packs and a permute, pairs below U+0800 go
//!   through 16-bit lanes, others are validated and encoded 8 code units at a time with a
//!   table-driven byte compaction (1 to 4 UTF-8 bytes each).
//! - `neon` (little-endian aarch64): an ASCII fast path, 8 code units at a time; other
//!   elements go to the scalar encoder.
//! - `scalar`: portable; also handles, for every path, the elements that hold an invalid code
//!   unit (so the [`InvalidUtf32`] rules live in one place).
//!
//! # Layout
//!
//! This file holds the public API of the decoding direction and the small items both directions
//! share (the choice of encoder, the code unit helpers); `decode/` holds the decoding driver
//! (output sinks, element loop, dispatch) and its element encoders (`scalar`, `avx2`, `neon`),
//! and [`encode`] (`encode/`) the encoding direction, laid out the same way.

#![warn(missing_docs)]

mod decode;
pub mod encode;
pub mod predicate;

pub use encode::{
    ByteOrder, EncodeError, Overflow, TooLong, max_code_points, max_code_points_view,
    utf8_to_utf32, utf8_view_to_utf32,
};

use arrow_array::{FixedSizeBinaryArray, GenericStringArray, OffsetSizeTrait, StringViewArray};
use arrow_buffer::{Buffer, NullBuffer};

use decode::{VIEW_GROUP_BYTES, element_count, to_utf8_view_with, to_utf8_with};

/// What to do with a code unit that is not a Unicode scalar value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum InvalidUtf32 {
    /// Fail with [`TranscodeError::Invalid`] (the default).
    #[default]
    Error,
    /// Replace each invalid code unit with U+FFFD.
    Replace,
    /// Make the whole element NULL.
    Null,
}

/// Why a batch could not be transcoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TranscodeError {
    /// Element `index` (of the input slice) holds `code_unit`, which is not a Unicode scalar
    /// value, and the mode is [`InvalidUtf32::Error`].
    Invalid {
        /// Element index within the input.
        index: usize,
        /// The offending code unit.
        code_unit: u32,
    },
    /// The UTF-8 output does not fit the offset type (more than 2 GiB for `Utf8`).
    OffsetOverflow,
}

#[inline]
fn unit(bytes: &[u8], i: usize) -> u32 {
    let b = &bytes[i * 4..i * 4 + 4];
    u32::from_ne_bytes([b[0], b[1], b[2], b[3]])
}

/// Number of code units of `element` before its trailing U+0000 padding.
#[inline]
pub fn trimmed_units(element: &[u8]) -> usize {
    let mut n = element.len() / 4;
    // Two code units (8 bytes) at a time while both are padding, then one at a time.
    while n >= 2 {
        let b = &element[(n - 2) * 4..n * 4];
        let pair = u64::from_ne_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]);
        if pair != 0 {
            break;
        }
        n -= 2;
    }
    while n > 0 && unit(element, n - 1) == 0 {
        n -= 1;
    }
    n
}

/// Length of `bytes` without its trailing zero bytes, 8 at a time.
#[inline]
fn trim_zero_bytes(bytes: &[u8]) -> usize {
    let mut n = bytes.len();
    while n >= 8 {
        let b = &bytes[n - 8..n];
        let word = u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]);
        if word != 0 {
            // The highest non-zero byte of the little-endian word is the last non-zero byte.
            return n - 8 + (63 - word.leading_zeros() as usize) / 8 + 1;
        }
        n -= 8;
    }
    while n > 0 && bytes[n - 1] == 0 {
        n -= 1;
    }
    n
}

/// Marks the elements equal to `fill` (`fill_as_null`): `true` means the element is NULL.
pub fn fill_mask(input: &[u8], width: usize, fill: &[u8]) -> Vec<bool> {
    input.chunks_exact(width).map(|e| e == fill).collect()
}

/// Which element encoder a kernel call uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Path {
    Scalar,
    #[cfg(target_arch = "x86_64")]
    Avx2,
    #[cfg(any(all(target_arch = "aarch64", target_endian = "little"), test))]
    Neon,
}

impl Path {
    /// The fastest encoder this CPU runs.
    #[inline]
    fn detect() -> Path {
        #[cfg(target_arch = "x86_64")]
        {
            if std::is_x86_feature_detected!("avx2") {
                return Path::Avx2;
            }
        }
        #[cfg(all(target_arch = "aarch64", target_endian = "little"))]
        {
            return Path::Neon;
        }
        #[allow(unreachable_code)]
        Path::Scalar
    }

    fn name(self) -> &'static str {
        match self {
            Path::Scalar => "scalar",
            #[cfg(target_arch = "x86_64")]
            Path::Avx2 => "avx2",
            #[cfg(any(all(target_arch = "aarch64", target_endian = "little"), test))]
            Path::Neon => "neon",
        }
    }
}

/// Which implementation [`to_utf8`] and [`to_utf8_view`] run on this CPU: `"avx2"` (x86_64
/// with AVX2, detected at run time), `"neon"` (aarch64) or `"scalar"` (the portable fallback,
/// which [`to_utf8_scalar`] and [`to_utf8_view_scalar`] always use).
pub fn kernel_path() -> &'static str {
    Path::detect().name()
}

/// Transcodes `input` (elements of `width` bytes) to UTF-8 with offsets of type `O`.
///
/// `nulls_in` marks elements that are already NULL (for example by `fill_as_null`); they are
/// neither validated nor transcoded. Runs the fastest encoder of this CPU ([`kernel_path`]).
pub fn to_utf8<O: OffsetSizeTrait>(
    input: &[u8],
    width: usize,
    mode: InvalidUtf32,
    nulls_in: Option<&[bool]>,
) -> Result<GenericStringArray<O>, TranscodeError> {
    to_utf8_with(Path::detect(), input, width, mode, nulls_in)
}

/// [`to_utf8`] with the portable scalar encoder, whatever the CPU (for tests and benchmarks).
pub fn to_utf8_scalar<O: OffsetSizeTrait>(
    input: &[u8],
    width: usize,
    mode: InvalidUtf32,
    nulls_in: Option<&[bool]>,
) -> Result<GenericStringArray<O>, TranscodeError> {
    to_utf8_with(Path::Scalar, input, width, mode, nulls_in)
}

/// Transcodes to `Utf8View`: strings of at most 12 bytes are stored in their view, longer ones
/// in data buffers written in the same pass (one buffer per 4 GiB of input).
pub fn to_utf8_view(
    input: &[u8],
    width: usize,
    mode: InvalidUtf32,
    nulls_in: Option<&[bool]>,
) -> Result<StringViewArray, TranscodeError> {
    to_utf8_view_with(
        Path::detect(),
        input,
        width,
        mode,
        nulls_in,
        VIEW_GROUP_BYTES,
    )
}

/// [`to_utf8_view`] with the portable scalar encoder, whatever the CPU.
pub fn to_utf8_view_scalar(
    input: &[u8],
    width: usize,
    mode: InvalidUtf32,
    nulls_in: Option<&[bool]>,
) -> Result<StringViewArray, TranscodeError> {
    to_utf8_view_with(Path::Scalar, input, width, mode, nulls_in, VIEW_GROUP_BYTES)
}

/// The raw code units as UTF-32LE in a `FixedSizeBinary(width)` array. Invalid code units
/// follow `mode` as in [`to_utf8`]: an error, U+FFFD, or a NULL element.
pub fn to_fixed_size_binary(
    input: &[u8],
    width: usize,
    mode: InvalidUtf32,
    nulls_in: Option<&[bool]>,
) -> Result<FixedSizeBinaryArray, TranscodeError> {
    let n = element_count(input, width);
    let mut out: Vec<u8> = Vec::with_capacity(n * width);
    // One entry per element, whatever the mask's length (an element past it is not NULL).
    let mut valid: Option<Vec<bool>> = nulls_in.map(|m| {
        (0..n)
            .map(|i| !m.get(i).copied().unwrap_or(false))
            .collect()
    });
    for (i, element) in input.chunks_exact(width.max(1)).take(n).enumerate() {
        let start = out.len();
        if valid.as_ref().is_some_and(|v| !v[i]) {
            out.resize(start + width, 0);
            continue;
        }
        let units = width / 4;
        for k in 0..units {
            let u = unit(element, k);
            let u = if char::from_u32(u).is_some() {
                u
            } else {
                match mode {
                    InvalidUtf32::Error => {
                        return Err(TranscodeError::Invalid {
                            index: i,
                            code_unit: u,
                        });
                    }
                    InvalidUtf32::Replace => 0xFFFD,
                    InvalidUtf32::Null => {
                        valid.get_or_insert_with(|| vec![true; n])[i] = false;
                        0
                    }
                }
            };
            out.extend_from_slice(&u.to_le_bytes());
        }
        // A width that is not a multiple of 4 ends in a partial code unit: kept as it is, so
        // that every element takes `width` bytes.
        out.extend_from_slice(&element[units * 4..]);
        if valid.as_ref().is_some_and(|v| !v[i]) {
            out[start..].fill(0);
        }
    }
    let nulls = valid.map(NullBuffer::from);
    let size = i32::try_from(width).map_err(|_| TranscodeError::OffsetOverflow)?;
    Ok(FixedSizeBinaryArray::new(size, Buffer::from(out), nulls))
}

/// A simple element-at-a-time reference decoder, used to test the kernels: `None` is NULL.
pub fn reference_decode(
    input: &[u8],
    width: usize,
    mode: InvalidUtf32,
) -> Result<Vec<Option<String>>, TranscodeError> {
    let mut out = Vec::new();
    for (index, element) in input.chunks_exact(width).enumerate() {
        let units: Vec<u32> = element
            .chunks_exact(4)
            .map(|b| u32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        let end = units.iter().rposition(|&u| u != 0).map_or(0, |p| p + 1);
        let mut s = String::new();
        let mut null = false;
        for &u in &units[..end] {
            match char::from_u32(u) {
                Some(c) => s.push(c),
                None => match mode {
                    InvalidUtf32::Error => {
                        return Err(TranscodeError::Invalid {
                            index,
                            code_unit: u,
                        });
                    }
                    InvalidUtf32::Replace => s.push('\u{FFFD}'),
                    InvalidUtf32::Null => null = true,
                },
            }
        }
        out.push(if null { None } else { Some(s) });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::Array;

    fn encode(strings: &[&[u32]], width: usize) -> Vec<u8> {
        let mut out = Vec::new();
        for s in strings {
            let mut units = s.to_vec();
            units.resize(width / 4, 0);
            for u in units {
                out.extend_from_slice(&u.to_ne_bytes());
            }
        }
        out
    }

    #[test]
    fn trailing_nul_is_stripped_interior_and_leading_kept() {
        let input = encode(&[&[0, 0x41, 0, 0x42], &[0x41], &[], &[0x1F680, 0xE9]], 24);
        let a = to_utf8::<i32>(&input, 24, InvalidUtf32::Error, None).unwrap();
        assert_eq!(a.value(0), "\0A\0B");
        assert_eq!(a.value(1), "A");
        assert_eq!(a.value(2), "");
        assert_eq!(a.value(3), "🚀é");
        assert_eq!(a.null_count(), 0);
    }

    #[test]
    fn invalid_code_units_follow_the_mode() {
        let input = encode(
            &[&[0x41], &[0x41, 0xD800], &[0x110000], &[0xFFFF_FFFF, 0x42]],
            8,
        );
        let e = to_utf8::<i32>(&input, 8, InvalidUtf32::Error, None).unwrap_err();
        assert_eq!(
            e,
            TranscodeError::Invalid {
                index: 1,
                code_unit: 0xD800
            }
        );
        let r = to_utf8::<i64>(&input, 8, InvalidUtf32::Replace, None).unwrap();
        assert_eq!(r.value(1), "A\u{FFFD}");
        assert_eq!(r.value(2), "\u{FFFD}");
        assert_eq!(r.value(3), "\u{FFFD}B");
        let n = to_utf8::<i32>(&input, 8, InvalidUtf32::Null, None).unwrap();
        assert!(n.is_valid(0) && n.is_null(1) && n.is_null(2) && n.is_null(3));
        assert_eq!(n.value(0), "A");
        let f = to_fixed_size_binary(&input, 8, InvalidUtf32::Null, None).unwrap();
        assert!(f.is_valid(0) && f.is_null(1));
        assert_eq!(f.value(0), &[0x41, 0, 0, 0, 0, 0, 0, 0]);
    }

    #[test]
    fn kernels_match_the_reference_on_pseudo_random_input() {
        // A small xorshift generator keeps this test free of extra dependencies.
        let mut state = 0x9E37_79B9_7F4A_7C15_u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for width_units in 1..=9usize {
            let width = width_units * 4;
            let mut input = Vec::new();
            for _ in 0..200 {
                let len = (next() % (width_units as u64 + 1)) as usize;
                for k in 0..width_units {
                    let u = if k >= len {
                        0
                    } else {
                        match next() % 8 {
                            0 => 0,
                            1 => (next() % 0x80) as u32,
                            2 => 0x80 + (next() % 0x780) as u32,
                            3 => 0x800 + (next() % 0xF800) as u32,
                            4 => 0x10000 + (next() % 0x100000) as u32,
                            5 if next() % 16 == 0 => 0xD800 + (next() % 0x800) as u32,
                            6 if next() % 16 == 0 => 0x110000 + (next() % 1000) as u32,
                            _ => (next() % 0x7F) as u32 + 1,
                        }
                    };
                    input.extend_from_slice(&u.to_ne_bytes());
                }
            }
            for mode in [
                InvalidUtf32::Error,
                InvalidUtf32::Replace,
                InvalidUtf32::Null,
            ] {
                let expected = reference_decode(&input, width, mode);
                let got = to_utf8::<i32>(&input, width, mode, None)
                    .map(|a| a.iter().map(|v| v.map(str::to_string)).collect::<Vec<_>>());
                assert_eq!(got, expected, "width {width}, mode {mode:?}");
                let view = to_utf8_view(&input, width, mode, None)
                    .map(|a| a.iter().map(|v| v.map(str::to_string)).collect::<Vec<_>>());
                assert_eq!(view, expected, "view, width {width}, mode {mode:?}");
            }
        }
    }

    /// `to_fixed_size_binary` is a public function: a mask shorter or longer than the
    /// elements, a width that is not a multiple of 4 or a width of 0 is no panic. A short mask
    /// indexed past its end, and a partial code unit was dropped, leaving a buffer shorter
    /// than its elements that `FixedSizeBinaryArray::new` refused with a panic.
    #[test]
    fn fixed_size_binary_takes_any_mask_and_width() {
        let input = encode(&[&[0x41], &[0xD800], &[0x42]], 4);
        for mask in [&[][..], &[false][..], &[true, false, false, true, true][..]] {
            for mode in [InvalidUtf32::Null, InvalidUtf32::Replace] {
                let f = to_fixed_size_binary(&input, 4, mode, Some(mask)).unwrap();
                assert_eq!(f.len(), 3, "{mask:?} {mode:?}");
                assert_eq!(f.is_null(0), mask.first() == Some(&true), "{mask:?}");
                assert_eq!(f.value(2), &[0x42, 0, 0, 0]);
            }
        }
        // Six bytes an element: one code unit and two bytes kept as they are.
        let six = [0x41, 0, 0, 0, 7, 8, 0x42, 0, 0, 0, 9, 10, 0xFF];
        let f = to_fixed_size_binary(&six, 6, InvalidUtf32::Error, Some(&[false, true])).unwrap();
        assert_eq!((f.len(), f.value_length()), (2, 6));
        assert_eq!(f.value(0), &[0x41, 0, 0, 0, 7, 8]);
        assert!(f.is_null(1));
        let none = to_fixed_size_binary(&six, 0, InvalidUtf32::Error, Some(&[true])).unwrap();
        assert_eq!(none.len(), 0);
    }
}
