//! The encoding kernels, the writer's direction: Arrow string arrays to padded fixed-width
//! UTF-32 (`fixed_length_utf32`, NumPy `<U`/`>U`), and the longest element in code points.
//!
//! # How they work
//!
//! The output is reserved once (`array.len() * width_bytes` bytes plus 64 of slack) and every
//! element's slot, code points and zero padding alike, is written once into that spare
//! capacity, in element order; the length of `out` is set when all slots are written, so on an
//! error `out` keeps its original length. Element encoders store whole vector registers and may
//! write up to 60 bytes past a slot: the next slot overwrites them, and after the last they
//! stay in spare capacity. NULL elements are encoded as the empty string (all zero), whatever
//! bytes their offsets span.
//!
//! Element encoders, picked once per call like the decoder's ([`crate::kernel_path`]):
//! - `avx2` (x86_64 with AVX2, BMI1 and POPCNT, chosen at run time): the first `width / 4`
//!   bytes of an element, 16 at a time, masked to the element, tested for ASCII and widened
//!   with `vpmovzxbd`, two 32-byte stores per 16 code units of the slot, padding included, with
//!   no branch on the length. Other elements are decoded 16 characters per step: the starts
//!   of the characters come from the mask of non-continuation bytes (from a table when they
//!   are evenly spaced: all 2, 3 or 4 bytes, as in Cyrillic, CJK or emoji strings), a byte
//!   shuffle brings each character's (up to) 4 bytes into a 32-bit lane, and two
//!   multiply-adds and two shifts by per-lane amounts, looked up from the lead byte's high
//!   nibble, give the code points.
//! - `scalar` (also used on aarch64): the same ASCII steps as fixed-size loops the compiler
//!   vectorizes (SSE2, NEON), else one character at a time.
//!
//! The input is valid UTF-8 by construction (Arrow string arrays), so the encoders do not
//! validate it; on bytes that are not UTF-8 they still neither panic nor read out of bounds.

#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(test)]
mod proptests;
mod scalar;

use std::mem::MaybeUninit;

use arrow_array::{Array, GenericStringArray, OffsetSizeTrait, StringViewArray};
use arrow_buffer::NullBuffer;

use crate::Path;

/// The order of the bytes of each UTF-32 code unit in the output (Zarr's `bytes` codec
/// `endian`; NumPy's `<U` is little, `>U` big).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ByteOrder {
    /// Least significant byte first (`<U`).
    Little,
    /// Most significant byte first (`>U`).
    Big,
}

impl ByteOrder {
    /// The byte order of this machine.
    pub const NATIVE: ByteOrder = if cfg!(target_endian = "big") {
        ByteOrder::Big
    } else {
        ByteOrder::Little
    };
}

/// What to do with a string longer than the width.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Overflow {
    /// Fail with [`EncodeError::TooLong`] (the default).
    #[default]
    Error,
    /// Keep the first `width_bytes / 4` code points.
    Truncate,
}

/// A string longer than the width ([`Overflow::Error`]): its index in the array and its length
/// in code points.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooLong {
    /// Index of the element in the (sliced) array.
    pub index: usize,
    /// Its length in code points.
    pub code_points: usize,
}

/// Why an array could not be encoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EncodeError {
    /// An element has more code points than the width holds, and the mode is
    /// [`Overflow::Error`]. The first such element is reported.
    TooLong(TooLong),
    /// The width is not a multiple of 4 bytes.
    Width {
        /// The width asked for.
        width_bytes: usize,
    },
    /// `elements * width_bytes` bytes overflow `usize` or cannot be allocated.
    OutputTooLarge {
        /// Elements of the array.
        elements: usize,
        /// The width asked for.
        width_bytes: usize,
    },
}

impl std::fmt::Display for EncodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EncodeError::TooLong(TooLong { index, code_points }) => write!(
                f,
                "string {index} has {code_points} code points, more than the width holds"
            ),
            EncodeError::Width { width_bytes } => write!(
                f,
                "a fixed_length_utf32 width must be a multiple of 4 bytes, not {width_bytes}"
            ),
            EncodeError::OutputTooLarge {
                elements,
                width_bytes,
            } => write!(
                f,
                "{elements} strings of {width_bytes} bytes do not fit in memory"
            ),
        }
    }
}

impl std::error::Error for EncodeError {}

/// Bytes of room kept past the last slot: the vector encoders write 16 code units (64 bytes)
/// at a time, so up to 60 bytes past a slot whose width is not a multiple of 64.
pub(crate) const SLACK: usize = 64;

/// Appends `array.len() * width_bytes` bytes to `out`: each element's code points as `u32` in
/// `order`, padded with zero code units to `width_bytes` (a multiple of 4). NULL elements
/// become all zero (the empty string).
///
/// A string longer than `width_bytes / 4` code points is an error or is cut there, by
/// `overflow`. On an error `out` keeps its original length.
pub fn utf8_to_utf32<O: OffsetSizeTrait>(
    array: &GenericStringArray<O>,
    width_bytes: usize,
    order: ByteOrder,
    overflow: Overflow,
    out: &mut Vec<u8>,
) -> Result<(), EncodeError> {
    let source = Offsets {
        offsets: array.value_offsets(),
        values: array.values().as_slice(),
    };
    encode_with(
        path(),
        &source,
        array.nulls(),
        width_bytes,
        order,
        overflow,
        out,
    )
}

/// [`utf8_to_utf32`] with the portable scalar encoder, whatever the CPU (for tests and
/// benchmarks).
pub fn utf8_to_utf32_scalar<O: OffsetSizeTrait>(
    array: &GenericStringArray<O>,
    width_bytes: usize,
    order: ByteOrder,
    overflow: Overflow,
    out: &mut Vec<u8>,
) -> Result<(), EncodeError> {
    let source = Offsets {
        offsets: array.value_offsets(),
        values: array.values().as_slice(),
    };
    encode_with(
        Path::Scalar,
        &source,
        array.nulls(),
        width_bytes,
        order,
        overflow,
        out,
    )
}

/// [`utf8_to_utf32`] for a `Utf8View` array.
pub fn utf8_view_to_utf32(
    array: &StringViewArray,
    width_bytes: usize,
    order: ByteOrder,
    overflow: Overflow,
    out: &mut Vec<u8>,
) -> Result<(), EncodeError> {
    encode_with(
        path(),
        &Views::new(array),
        array.nulls(),
        width_bytes,
        order,
        overflow,
        out,
    )
}

/// The longest element of `array` in code points (NULL elements count 0): the smallest width,
/// in code units, that holds every element.
pub fn max_code_points<O: OffsetSizeTrait>(array: &GenericStringArray<O>) -> usize {
    let source = Offsets {
        offsets: array.value_offsets(),
        values: array.values().as_slice(),
    };
    max_with(path(), &source, array.nulls())
}

/// [`max_code_points`] for a `Utf8View` array.
pub fn max_code_points_view(array: &StringViewArray) -> usize {
    max_with(path(), &Views::new(array), array.nulls())
}

/// The encoder this CPU runs: AVX2 where [`Path::detect`] finds it, with the BMI1 and POPCNT
/// that the AVX2 encoder also uses (which every AVX2 CPU has); else the portable one, which
/// the compiler vectorizes (so also on aarch64).
pub(crate) fn path() -> Path {
    match Path::detect() {
        #[cfg(target_arch = "x86_64")]
        Path::Avx2 if avx2::available() => Path::Avx2,
        _ => Path::Scalar,
    }
}

/// Which implementation [`utf8_to_utf32`], [`utf8_view_to_utf32`] and the `max_code_points`
/// functions run on this CPU: `"avx2"` (x86_64 with AVX2, detected at run time) or `"scalar"`
/// (the portable one, which [`utf8_to_utf32_scalar`] always uses).
pub fn kernel_path() -> &'static str {
    path().name()
}

/// Where the elements' bytes are. `elements()` gives, for each element in order, a buffer and
/// the start and length of the element in it; the buffer may go on past the element (the
/// vector encoders read ahead within it). For an invalid array (never one built by arrow's
/// checked constructors) it gives an empty element instead of reading out of bounds.
pub(crate) trait Source {
    fn len(&self) -> usize;
    fn elements(&self) -> impl Iterator<Item = (&[u8], usize, usize)>;
}

/// A `Utf8`/`LargeUtf8` array: offsets (already those of the slice) into the values.
pub(crate) struct Offsets<'a, O> {
    pub(crate) offsets: &'a [O],
    pub(crate) values: &'a [u8],
}

impl<O: OffsetSizeTrait> Source for Offsets<'_, O> {
    #[inline(always)]
    fn len(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }

    #[inline(always)]
    fn elements(&self) -> impl Iterator<Item = (&[u8], usize, usize)> {
        self.offsets.windows(2).map(|w| {
            let (start, end) = (w[0].as_usize(), w[1].as_usize());
            if start <= end && end <= self.values.len() {
                (self.values, start, end - start)
            } else {
                (&[][..], 0, 0)
            }
        })
    }
}

/// A `Utf8View` array: strings of at most 12 bytes are read from the views themselves.
pub(crate) struct Views<'a> {
    views: &'a [u128],
    /// The same views as bytes, in memory order (inline strings start at byte 4 of a view).
    view_bytes: &'a [u8],
    buffers: &'a [arrow_buffer::Buffer],
}

impl<'a> Views<'a> {
    pub(crate) fn new(array: &'a StringViewArray) -> Self {
        Views {
            views: array.views(),
            view_bytes: array.views().inner().as_slice(),
            buffers: array.data_buffers(),
        }
    }
}

impl Source for Views<'_> {
    #[inline(always)]
    fn len(&self) -> usize {
        self.views.len()
    }

    #[inline(always)]
    fn elements(&self) -> impl Iterator<Item = (&[u8], usize, usize)> {
        self.views.iter().enumerate().map(|(i, &view)| {
            let len = view as u32 as usize;
            if len <= 12 {
                // i < views.len(), so 16 * i + 16 <= view_bytes.len(): no overflow.
                return (self.view_bytes, 16 * i + 4, len);
            }
            let buffer = (view >> 64) as u32 as usize;
            let offset = (view >> 96) as u32 as usize;
            match self.buffers.get(buffer) {
                Some(b) if offset.checked_add(len).is_some_and(|end| end <= b.len()) => {
                    (b.as_slice(), offset, len)
                }
                _ => (&[][..], 0, 0),
            }
        })
    }
}

/// The bytes of an element: `buf[start..start + len]`, or nothing when out of range.
#[inline(always)]
pub(crate) fn bytes_of(buf: &[u8], start: usize, len: usize) -> &[u8] {
    start
        .checked_add(len)
        .and_then(|end| buf.get(start..end))
        .unwrap_or(&[])
}

/// Code points of valid UTF-8: the bytes that are not continuation bytes (`0b10xx_xxxx`).
#[inline]
pub(crate) fn count_code_points(bytes: &[u8]) -> usize {
    bytes.iter().filter(|&&b| (b as i8) >= -0x40).count()
}

pub(crate) fn encode_with<S: Source>(
    path: Path,
    source: &S,
    nulls: Option<&NullBuffer>,
    width_bytes: usize,
    order: ByteOrder,
    overflow: Overflow,
    out: &mut Vec<u8>,
) -> Result<(), EncodeError> {
    if !width_bytes.is_multiple_of(4) {
        return Err(EncodeError::Width { width_bytes });
    }
    let n = source.len();
    let too_large = EncodeError::OutputTooLarge {
        elements: n,
        width_bytes,
    };
    let total = n.checked_mul(width_bytes).ok_or(too_large.clone())?;
    let room = total.checked_add(SLACK).ok_or(too_large.clone())?;
    out.try_reserve(room).map_err(|_| too_large)?;
    let start = out.len();
    let slots = out.spare_capacity_mut();
    let job = Job {
        units: width_bytes / 4,
        big: order == ByteOrder::Big,
        overflow,
    };
    dispatch(path, source, nulls, job, slots)?;
    // SAFETY: `dispatch` returned Ok, so it wrote every byte of the `n` slots of
    // `width_bytes` bytes at the start of the spare capacity (see `drive`), and
    // `try_reserve` made that capacity at least `total + SLACK`.
    unsafe { out.set_len(start + total) };
    Ok(())
}

/// What one call encodes to.
#[derive(Clone, Copy)]
pub(crate) struct Job {
    /// Code units per element (`width_bytes / 4`).
    pub(crate) units: usize,
    /// Big-endian code units.
    pub(crate) big: bool,
    pub(crate) overflow: Overflow,
}

/// Runs [`drive`] with the element encoder of `path`.
fn dispatch<S: Source>(
    path: Path,
    source: &S,
    nulls: Option<&NullBuffer>,
    job: Job,
    slots: &mut [MaybeUninit<u8>],
) -> Result<(), EncodeError> {
    match path {
        // SAFETY: `path()` only picks `Path::Avx2` if `avx2::available()`.
        #[cfg(target_arch = "x86_64")]
        Path::Avx2 => unsafe { avx2::drive(source, nulls, job, slots) },
        // `path()` never picks `Path::Neon`: the portable encoder is what aarch64 runs.
        _ => drive(source, nulls, job, slots, |buf, start, len, slot| {
            scalar::element(buf, start, len, slot, job)
        }),
    }
}

/// The element loop shared by every encoder. `encode(buf, start, len, slot)` writes the whole
/// slot of the element `buf[start..start + len]` (its first `4 * job.units` bytes: at most
/// `job.units` code points, then zeros; it may write up to [`SLACK`] more bytes) and returns
/// whether it left code points out. NULL elements are encoded as the empty string.
///
/// `slots` must hold `source.len() * 4 * job.units + SLACK` bytes (else nothing is written and
/// the result is [`EncodeError::OutputTooLarge`]); each slot handed to `encode` then has at
/// least `4 * job.units + SLACK` bytes. On return with `Ok`, the first
/// `source.len() * 4 * job.units` bytes of `slots` are written.
///
/// Always inlined, so that a `#[target_feature]` caller compiles it, and the `encode` closure
/// it passes, with its features.
#[inline(always)]
pub(crate) fn drive<S: Source>(
    source: &S,
    nulls: Option<&NullBuffer>,
    job: Job,
    slots: &mut [MaybeUninit<u8>],
    encode: impl FnMut(&[u8], usize, usize, &mut [MaybeUninit<u8>]) -> bool,
) -> Result<(), EncodeError> {
    let width = 4 * job.units;
    let n = source.len();
    if slots.len() < n.saturating_mul(width).saturating_add(SLACK) {
        return Err(EncodeError::OutputTooLarge {
            elements: n,
            width_bytes: width,
        });
    }
    // Two loops, so that an array without NULLs does not test them.
    match nulls {
        None => drive_loop(source.elements(), job, slots, encode),
        Some(nulls) => drive_loop(
            source
                .elements()
                .zip(nulls.iter())
                .map(|((buf, start, len), valid)| (buf, start, if valid { len } else { 0 })),
            job,
            slots,
            encode,
        ),
    }
}

/// The loop of [`drive`] over `elements` (NULL elements given length 0: the empty string,
/// whatever bytes their offsets span), with `slots` checked.
#[inline(always)]
fn drive_loop<'a>(
    elements: impl Iterator<Item = (&'a [u8], usize, usize)>,
    job: Job,
    slots: &mut [MaybeUninit<u8>],
    mut encode: impl FnMut(&[u8], usize, usize, &mut [MaybeUninit<u8>]) -> bool,
) -> Result<(), EncodeError> {
    let width = 4 * job.units;
    for (i, (buf, start, len)) in elements.enumerate() {
        // In bounds: i * width + SLACK <= n * width + SLACK <= slots.len() (checked by `drive`).
        let slot = &mut slots[i * width..];
        if encode(buf, start, len, slot) && job.overflow == Overflow::Error {
            return Err(EncodeError::TooLong(too_long(i, bytes_of(buf, start, len))));
        }
    }
    Ok(())
}

#[cold]
#[inline(never)]
fn too_long(index: usize, bytes: &[u8]) -> TooLong {
    TooLong {
        index,
        code_points: count_code_points(bytes),
    }
}

pub(crate) fn max_with<S: Source>(path: Path, source: &S, nulls: Option<&NullBuffer>) -> usize {
    match path {
        // SAFETY: `path()` only picks `Path::Avx2` if `avx2::available()`.
        #[cfg(target_arch = "x86_64")]
        Path::Avx2 => unsafe { avx2::max_code_points(source, nulls) },
        _ => max_loop(source, nulls, |buf, start, len| {
            count_code_points(bytes_of(buf, start, len))
        }),
    }
}

/// The loop of [`max_code_points`], with `count(buf, start, len)` counting the code points of
/// an element (as [`Source::elements`] gives it). An element of no more bytes than the longest
/// so far cannot be longer in code points, and is skipped.
#[inline(always)]
pub(crate) fn max_loop<S: Source>(
    source: &S,
    nulls: Option<&NullBuffer>,
    mut count: impl FnMut(&[u8], usize, usize) -> usize,
) -> usize {
    let mut best = 0;
    let mut each = |(buf, start, len): (&[u8], usize, usize)| {
        if len > best {
            best = best.max(count(buf, start, len));
        }
    };
    match nulls {
        None => source.elements().for_each(&mut each),
        Some(nulls) => source
            .elements()
            .zip(nulls.iter())
            .filter(|(_, valid)| *valid)
            .for_each(|(e, _)| each(e)),
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::StringArray;

    #[test]
    fn a_width_not_multiple_of_4_is_an_error() {
        let a = StringArray::from(vec!["a"]);
        let mut out = vec![7];
        for w in [1, 2, 3, 5, 7] {
            let e = utf8_to_utf32(&a, w, ByteOrder::Little, Overflow::Error, &mut out);
            assert_eq!(e, Err(EncodeError::Width { width_bytes: w }));
        }
        assert_eq!(out, [7]);
        let e = utf8_to_utf32(
            &a,
            usize::MAX - 3,
            ByteOrder::Big,
            Overflow::Error,
            &mut out,
        );
        assert!(
            matches!(e, Err(EncodeError::OutputTooLarge { .. })),
            "{e:?}"
        );
    }
}
