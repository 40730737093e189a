//! The transcoding kernels of datafusion-zarr: pure functions from decoded `fixed_length_utf32`
//! chunk bytes (native-endian code units, as zarrs' `bytes` codec hands them over) to Arrow
//! arrays. No I/O, no DataFusion: kept in their own crate so they build and benchmark quickly.
//!
//! Each element is `width` bytes: `width / 4` code units, padded with U+0000. Only trailing
//! U+0000 is removed; leading and interior U+0000 are kept, as NumPy keeps them.

#![warn(missing_docs)]

use arrow_array::{FixedSizeBinaryArray, GenericStringArray, OffsetSizeTrait, StringViewArray};
use arrow_buffer::{Buffer, NullBuffer, OffsetBuffer, ScalarBuffer};

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
    while n > 0 && unit(element, n - 1) == 0 {
        n -= 1;
    }
    n
}

/// Marks the elements equal to `fill` (`fill_as_null`): `true` means the element is NULL.
pub fn fill_mask(input: &[u8], width: usize, fill: &[u8]) -> Vec<bool> {
    input.chunks_exact(width).map(|e| e == fill).collect()
}

/// Transcodes `input` (elements of `width` bytes) to UTF-8 with offsets of type `O`.
///
/// `nulls_in` marks elements that are already NULL (for example by `fill_as_null`); they are
/// neither validated nor transcoded.
pub fn to_utf8<O: OffsetSizeTrait>(
    input: &[u8],
    width: usize,
    mode: InvalidUtf32,
    nulls_in: Option<&[bool]>,
) -> Result<GenericStringArray<O>, TranscodeError> {
    let n = input.len().checked_div(width).unwrap_or(0);
    let mut offsets: Vec<O> = Vec::with_capacity(n + 1);
    offsets.push(O::usize_as(0));
    // UTF-8 never takes more bytes than UTF-32 (U+FFFD takes 3 bytes for a 4-byte unit),
    // so this is the only allocation of the values buffer.
    let mut values: Vec<u8> = Vec::with_capacity(input.len());
    let mut valid: Option<Vec<bool>> = nulls_in.map(|m| m.iter().map(|null| !null).collect());
    for (i, element) in input.chunks_exact(width.max(1)).take(n).enumerate() {
        let is_null = valid.as_ref().is_some_and(|v| !v[i]);
        if !is_null {
            let start = values.len();
            let len = trimmed_units(element);
            let all_ascii = (0..len).all(|k| unit(element, k) < 0x80);
            if all_ascii {
                values.extend((0..len).map(|k| unit(element, k) as u8));
            } else {
                for k in 0..len {
                    let u = unit(element, k);
                    if u < 0x80 {
                        values.push(u as u8);
                    } else if let Some(c) = char::from_u32(u) {
                        let mut buf = [0u8; 4];
                        values.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                    } else {
                        match mode {
                            InvalidUtf32::Error => {
                                return Err(TranscodeError::Invalid {
                                    index: i,
                                    code_unit: u,
                                });
                            }
                            InvalidUtf32::Replace => {
                                values.extend_from_slice("\u{FFFD}".as_bytes());
                            }
                            InvalidUtf32::Null => {
                                values.truncate(start);
                                valid.get_or_insert_with(|| vec![true; n])[i] = false;
                                break;
                            }
                        }
                    }
                }
            }
        }
        offsets.push(O::from_usize(values.len()).ok_or(TranscodeError::OffsetOverflow)?);
    }
    let nulls = valid.map(NullBuffer::from);
    let offsets = OffsetBuffer::new(ScalarBuffer::from(offsets));
    // SAFETY: `values` holds only whole UTF-8 sequences written by `char::encode_utf8`
    // (or ASCII bytes), and each offset marks the end of one element, so every offset lies on
    // a character boundary and offsets never decrease.
    Ok(unsafe { GenericStringArray::<O>::new_unchecked(offsets, Buffer::from(values), nulls) })
}

/// Transcodes to `Utf8View`.
pub fn to_utf8_view(
    input: &[u8],
    width: usize,
    mode: InvalidUtf32,
    nulls_in: Option<&[bool]>,
) -> Result<StringViewArray, TranscodeError> {
    let utf8 = to_utf8::<i64>(input, width, mode, nulls_in)?;
    Ok(StringViewArray::from_iter(utf8.iter()))
}

/// The raw code units as UTF-32LE in a `FixedSizeBinary(width)` array. Invalid code units
/// follow `mode` as in [`to_utf8`]: an error, U+FFFD, or a NULL element.
pub fn to_fixed_size_binary(
    input: &[u8],
    width: usize,
    mode: InvalidUtf32,
    nulls_in: Option<&[bool]>,
) -> Result<FixedSizeBinaryArray, TranscodeError> {
    let n = input.len().checked_div(width).unwrap_or(0);
    let mut out: Vec<u8> = Vec::with_capacity(n * width);
    let mut valid: Option<Vec<bool>> = nulls_in.map(|m| m.iter().map(|null| !null).collect());
    for (i, element) in input.chunks_exact(width.max(1)).take(n).enumerate() {
        let start = out.len();
        if valid.as_ref().is_some_and(|v| !v[i]) {
            out.resize(start + width, 0);
            continue;
        }
        for k in 0..width / 4 {
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
}
