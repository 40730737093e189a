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

#![warn(missing_docs)]

#[cfg(target_arch = "x86_64")]
mod avx2;
pub mod encode;
#[cfg(target_arch = "x86_64")]
mod encode_avx2;
#[cfg(test)]
mod encode_proptests;
#[cfg(any(all(target_arch = "aarch64", target_endian = "little"), test))]
mod neon;
#[cfg(all(test, not(all(target_arch = "aarch64", target_endian = "little"))))]
mod neon_emu;
pub mod predicate;
#[cfg(test)]
mod proptests;

pub use encode::{
    ByteOrder, EncodeError, Overflow, TooLong, max_code_points, max_code_points_view,
    utf8_to_utf32, utf8_view_to_utf32,
};

use arrow_array::{FixedSizeBinaryArray, GenericStringArray, OffsetSizeTrait, StringViewArray};
use arrow_buffer::{BooleanBuffer, Buffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use std::hint::select_unpredictable;

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

/// Bytes of room the values buffer keeps past its upper bound: the vector encoders store whole
/// registers and encode masked-off lanes, so they may write (never read back) up to 15 + 12
/// bytes past an element's UTF-8; the view sink zeroes 16 bytes ahead.
const SLACK: usize = 64;

/// The validity bitmap of the output, built only when some element is NULL.
struct Validity {
    len: usize,
    /// One bit per element, set when valid; `None` while every element is valid.
    bits: Option<Vec<u8>>,
}

impl Validity {
    fn new(len: usize, nulls_in: Option<&[bool]>) -> Self {
        let mut v = Validity { len, bits: None };
        if let Some(mask) = nulls_in {
            // Keep the input's NullBuffer even when it marks no element, as before.
            v.bits = Some(vec![0xFF; len.div_ceil(8)]);
            for (i, _) in mask.iter().take(len).enumerate().filter(|(_, null)| **null) {
                v.set_null(i);
            }
        }
        v
    }

    #[inline]
    fn set_null(&mut self, i: usize) {
        let len = self.len;
        let bits = self.bits.get_or_insert_with(|| vec![0xFF; len.div_ceil(8)]);
        if let Some(byte) = bits.get_mut(i / 8) {
            *byte &= !(1 << (i % 8));
        }
    }

    fn finish(self) -> Option<NullBuffer> {
        self.bits
            .map(|bits| NullBuffer::new(BooleanBuffer::new(Buffer::from(bits), 0, self.len)))
    }
}

/// Where the kernel loop puts each element.
///
/// # Safety
///
/// Implementors guarantee that `dst()` points to at least `width + SLACK` writable bytes (in
/// the allocation of the values buffer) past everything pushed so far, for every element of
/// the batch, as long as each pushed `len` is at most the element's `width`.
unsafe trait Sink {
    /// Where the next element's UTF-8 is written.
    fn dst(&mut self) -> *mut u8;
    /// The next element's `len` bytes of UTF-8 have been written at `dst()`.
    ///
    /// # Safety
    ///
    /// Those `len` bytes are initialized, valid UTF-8, and `len` is at most the width.
    unsafe fn push(&mut self, len: usize);
    /// The next element is NULL.
    fn push_null(&mut self);
}

/// The element loop shared by every encoder. `encode(element, dst)` writes the element's
/// UTF-8 at `dst` (it may write up to `SLACK` bytes further, and is only called with such a
/// `dst`) and returns its length after trimming, or `None` when it leaves the element to the
/// scalar encoder (which knows the [`InvalidUtf32`] rules).
///
/// Always inlined, so that a `#[target_feature]` caller compiles it, and the `encode` closure
/// it passes, with its features.
#[inline(always)]
fn drive<S: Sink>(
    input: &[u8],
    width: usize,
    mode: InvalidUtf32,
    nulls_in: Option<&[bool]>,
    index_base: usize,
    mut sink: S,
    mut encode: impl FnMut(&[u8], *mut u8) -> Option<usize>,
) -> Result<S, TranscodeError> {
    if width == 0 {
        return Ok(sink);
    }
    let replace = mode == InvalidUtf32::Replace;
    for (i, element) in input.chunks_exact(width).enumerate() {
        if nulls_in.is_some_and(|m| m.get(index_base + i).copied().unwrap_or(false)) {
            sink.push_null();
            continue;
        }
        let dst = sink.dst();
        let len = match encode(element, dst) {
            Some(len) => len,
            // SAFETY: `dst` has room for `width + SLACK` bytes (the `Sink` contract) and the
            // scalar encoder writes at most `width` bytes.
            None => match unsafe { scalar::encode(element, dst, replace) } {
                Ok(len) => len,
                Err(code_unit) if mode == InvalidUtf32::Error => {
                    return Err(TranscodeError::Invalid {
                        index: index_base + i,
                        code_unit,
                    });
                }
                Err(_) => {
                    sink.push_null();
                    continue;
                }
            },
        };
        // SAFETY: the encoders write the element's whole UTF-8 (at most 4 bytes per code unit,
        // 3 for U+FFFD, so at most `width` bytes) at `dst` and return its length.
        unsafe { sink.push(len) };
    }
    Ok(sink)
}

/// Runs [`drive`] with the element encoder of `path`.
fn dispatch<S: Sink>(
    path: Path,
    input: &[u8],
    width: usize,
    mode: InvalidUtf32,
    nulls_in: Option<&[bool]>,
    index_base: usize,
    sink: S,
) -> Result<S, TranscodeError> {
    match path {
        // SAFETY: `Path::Avx2` is only chosen after `is_x86_feature_detected!("avx2")`.
        #[cfg(target_arch = "x86_64")]
        Path::Avx2 => unsafe { avx2::drive(input, width, mode, nulls_in, index_base, sink) },
        #[cfg(any(all(target_arch = "aarch64", target_endian = "little"), test))]
        Path::Neon => neon::drive(input, width, mode, nulls_in, index_base, sink),
        Path::Scalar => drive(input, width, mode, nulls_in, index_base, sink, |e, dst| {
            // SAFETY: `drive` hands `encode` a `dst` with room for `width + SLACK` bytes.
            unsafe { scalar::encode(e, dst, false).ok() }
        }),
    }
}

/// The portable element encoder.
mod scalar {
    use super::{trim_zero_bytes, trimmed_units, unit};
    use std::mem::MaybeUninit;

    /// Writes the UTF-8 of `element` (trailing U+0000 trimmed) at `dst` and returns its length.
    /// An invalid code unit becomes U+FFFD when `replace`, else it is returned as the error.
    ///
    /// # Safety
    ///
    /// `dst` must be valid for writes of `element.len()` bytes.
    #[inline]
    pub(crate) unsafe fn encode(element: &[u8], dst: *mut u8, replace: bool) -> Result<usize, u32> {
        // ASCII first, over the whole element (a fixed-length loop the compiler vectorizes):
        // narrow every code unit, padding included, then trim the zero bytes.
        let w = element.len() / 4;
        let units = &element[..w * 4];
        let any = units.chunks_exact(4).fold(0u32, |acc, b| {
            acc | u32::from_ne_bytes([b[0], b[1], b[2], b[3]])
        });
        if any < 0x80 {
            // SAFETY: `dst` is valid for writes of `element.len() >= w` bytes.
            let out = unsafe { std::slice::from_raw_parts_mut(dst.cast::<MaybeUninit<u8>>(), w) };
            for (o, b) in out.iter_mut().zip(units.chunks_exact(4)) {
                o.write(u32::from_ne_bytes([b[0], b[1], b[2], b[3]]) as u8);
            }
            // SAFETY: the w bytes were all written just above.
            return Ok(trim_zero_bytes(unsafe {
                std::slice::from_raw_parts(dst, w)
            }));
        }
        let len = trimmed_units(element);
        let mut out = 0usize;
        for k in 0..len {
            let u = unit(element, k);
            // SAFETY (every write below): code unit k, read from 4 bytes of `element`, adds at
            // most 4 bytes, so `out` stays within the `element.len()` bytes of `dst`.
            unsafe {
                if u < 0x80 {
                    *dst.add(out) = u as u8;
                    out += 1;
                } else if u < 0x800 {
                    *dst.add(out) = 0xC0 | (u >> 6) as u8;
                    *dst.add(out + 1) = 0x80 | (u & 0x3F) as u8;
                    out += 2;
                } else if u < 0x10000 && !(0xD800..=0xDFFF).contains(&u) {
                    *dst.add(out) = 0xE0 | (u >> 12) as u8;
                    *dst.add(out + 1) = 0x80 | ((u >> 6) & 0x3F) as u8;
                    *dst.add(out + 2) = 0x80 | (u & 0x3F) as u8;
                    out += 3;
                } else if (0x10000..=0x10FFFF).contains(&u) {
                    *dst.add(out) = 0xF0 | (u >> 18) as u8;
                    *dst.add(out + 1) = 0x80 | ((u >> 12) & 0x3F) as u8;
                    *dst.add(out + 2) = 0x80 | ((u >> 6) & 0x3F) as u8;
                    *dst.add(out + 3) = 0x80 | (u & 0x3F) as u8;
                    out += 4;
                } else if replace {
                    *dst.add(out) = 0xEF;
                    *dst.add(out + 1) = 0xBF;
                    *dst.add(out + 2) = 0xBD;
                    out += 3;
                } else {
                    return Err(u);
                }
            }
        }
        Ok(out)
    }
}

/// Offsets and values of a `Utf8`/`LargeUtf8` array under construction.
struct Utf8Sink<O: OffsetSizeTrait> {
    values: Vec<u8>,
    /// Bytes of `values` written so far (its initialized prefix; `values.len()` stays 0).
    pos: usize,
    offsets: Vec<O>,
    validity: Validity,
}

impl<O: OffsetSizeTrait> Utf8Sink<O> {
    fn new(n: usize, input_len: usize, nulls_in: Option<&[bool]>) -> Self {
        let mut offsets = Vec::with_capacity(n + 1);
        offsets.push(O::usize_as(0));
        Utf8Sink {
            // UTF-8 never takes more bytes than UTF-32 (U+FFFD takes 3 bytes for a 4-byte
            // unit), so this is the only allocation of the values buffer.
            values: Vec::with_capacity(input_len + SLACK),
            pos: 0,
            offsets,
            validity: Validity::new(n, nulls_in),
        }
    }

    fn finish(mut self) -> Result<GenericStringArray<O>, TranscodeError> {
        // Offsets never decrease, so the last one is the only one that can overflow (the
        // others were stored with a wrapping cast and are discarded with the error).
        if O::from_usize(self.pos).is_none() {
            return Err(TranscodeError::OffsetOverflow);
        }
        // SAFETY: the first `pos` bytes were written by the encoders (`Sink::push`), and
        // `pos <= input_len < capacity`.
        unsafe { self.values.set_len(self.pos) };
        // The buffer was sized for the UTF-32 input, typically several times the UTF-8 (a
        // `<U16` chunk of short labels: 6.4 MB for 1 MB). Arrays live on in batches, row
        // groups and sorts, so the rest goes back to the allocator, in place: keeping it held
        // half the peak heap of a group table's export.
        self.values.shrink_to_fit();
        let offsets = OffsetBuffer::new(ScalarBuffer::from(self.offsets));
        let nulls = self.validity.finish();
        // SAFETY: `values` holds only whole UTF-8 sequences (ASCII bytes and the encodings of
        // scalar values or U+FFFD), and each offset marks the end of one element, so every
        // offset lies on a character boundary and offsets never decrease.
        Ok(unsafe {
            GenericStringArray::<O>::new_unchecked(offsets, Buffer::from(self.values), nulls)
        })
    }
}

// SAFETY: `values` has capacity `input_len + SLACK`, and `pos`, the sum of the pushed lengths,
// is at most the sum of the widths of the elements pushed so far, so `dst()` has room for
// `width + SLACK` bytes for every element.
unsafe impl<O: OffsetSizeTrait> Sink for Utf8Sink<O> {
    #[inline(always)]
    fn dst(&mut self) -> *mut u8 {
        // SAFETY: `pos` is within the allocation (see the `Sink` impl comment).
        unsafe { self.values.as_mut_ptr().add(self.pos) }
    }

    #[inline(always)]
    unsafe fn push(&mut self, len: usize) {
        self.pos += len;
        // The capacity was reserved up front: this push never reallocates.
        self.offsets.push(O::usize_as(self.pos));
    }

    #[inline(always)]
    fn push_null(&mut self) {
        self.validity.set_null(self.offsets.len() - 1);
        self.offsets.push(O::usize_as(self.pos));
    }
}

/// Views and data buffers of a `Utf8View` array under construction. Strings of at most 12
/// bytes live in their view; longer ones in the current data buffer.
struct ViewSink {
    views: Vec<u128>,
    validity: Validity,
    buffers: Vec<Buffer>,
    /// The data buffer being filled, with capacity `group_len + SLACK`.
    data: Vec<u8>,
    /// Bytes of `data` kept so far (long strings only; short ones are overwritten).
    pos: usize,
}

impl ViewSink {
    fn new(n: usize, nulls_in: Option<&[bool]>) -> Self {
        ViewSink {
            views: Vec::with_capacity(n),
            validity: Validity::new(n, nulls_in),
            buffers: Vec::new(),
            data: Vec::new(),
            pos: 0,
        }
    }

    /// Starts a data buffer for a group of elements of `group_len` input bytes in total,
    /// which must be at most `u32::MAX` so that view offsets fit.
    fn start_group(&mut self, group_len: usize) {
        self.data = Vec::with_capacity(group_len + SLACK);
        self.pos = 0;
    }

    fn end_group(&mut self) {
        let mut data = std::mem::take(&mut self.data);
        if self.pos > 0 {
            // SAFETY: the first `pos` bytes were written by the encoders (`Sink::push`).
            unsafe { data.set_len(self.pos) };
            // As in `Utf8Sink::finish`: the buffer was sized for the UTF-32 input.
            data.shrink_to_fit();
            self.buffers.push(Buffer::from(data));
        }
        self.pos = 0;
    }

    fn finish(self) -> StringViewArray {
        let nulls = self.validity.finish();
        // SAFETY: every view is either inline (length <= 12, the string's bytes after the
        // length, zero after them) or refers to `length` bytes at `offset` of buffer
        // `buffer_index` with the first 4 as prefix, and all those bytes are whole UTF-8
        // strings written by the encoders.
        unsafe {
            StringViewArray::new_unchecked(ScalarBuffer::from(self.views), self.buffers, nulls)
        }
    }
}

// SAFETY: `data` has capacity `group_len + SLACK`, and `pos` is at most the sum of the lengths
// pushed in this group, which is at most the sum of the widths of its elements so far.
unsafe impl Sink for ViewSink {
    #[inline(always)]
    fn dst(&mut self) -> *mut u8 {
        // SAFETY: `pos` is within the allocation (see the `Sink` impl comment), with at least
        // SLACK >= 16 bytes after it. Zeroing the first 16 bytes lets `push` read them whole
        // whatever the length of the string written there.
        unsafe {
            let p = self.data.as_mut_ptr().add(self.pos);
            p.write_bytes(0, 16);
            p
        }
    }

    #[inline(always)]
    unsafe fn push(&mut self, len: usize) {
        // SAFETY: `dst()` zeroed these 16 bytes, then the encoder wrote the string over them.
        let raw = u128::from_le_bytes(unsafe {
            self.data
                .as_ptr()
                .add(self.pos)
                .cast::<[u8; 16]>()
                .read_unaligned()
        });
        // Both views are built and one is picked without a branch: lengths are random.
        let short = len <= 12;
        let inline = len as u128 | (raw & ((1u128 << (8 * len.min(12))) - 1)) << 32;
        // `pos` and `len` fit in u32: the group holds at most `u32::MAX` input bytes.
        let long = len as u128
            | (raw as u32 as u128) << 32
            | (self.buffers.len() as u128) << 64
            | (self.pos as u128) << 96;
        // Long strings stay in the buffer; short ones are overwritten by the next element.
        self.pos += select_unpredictable(short, 0, len);
        // The capacity was reserved up front: this push never reallocates.
        self.views.push(select_unpredictable(short, inline, long));
    }

    #[inline(always)]
    fn push_null(&mut self) {
        self.validity.set_null(self.views.len());
        self.views.push(0);
    }
}

/// Number of elements in `input` (the trailing partial element, if any, is ignored).
fn element_count(input: &[u8], width: usize) -> usize {
    input.len().checked_div(width).unwrap_or(0)
}

fn to_utf8_with<O: OffsetSizeTrait>(
    path: Path,
    input: &[u8],
    width: usize,
    mode: InvalidUtf32,
    nulls_in: Option<&[bool]>,
) -> Result<GenericStringArray<O>, TranscodeError> {
    let n = element_count(input, width);
    let input = &input[..n * width];
    let sink = Utf8Sink::<O>::new(n, input.len(), nulls_in);
    dispatch(path, input, width, mode, nulls_in, 0, sink)?.finish()
}

/// Input bytes per data buffer of a view array: view offsets are `u32`.
const VIEW_GROUP_BYTES: usize = u32::MAX as usize;

fn to_utf8_view_with(
    path: Path,
    input: &[u8],
    width: usize,
    mode: InvalidUtf32,
    nulls_in: Option<&[bool]>,
    group_bytes: usize,
) -> Result<StringViewArray, TranscodeError> {
    let n = element_count(input, width);
    let input = &input[..n * width];
    let mut sink = ViewSink::new(n, nulls_in);
    if n > 0 {
        let per_group = (group_bytes / width).max(1);
        if per_group == 1 && width > u32::MAX as usize {
            return Err(TranscodeError::OffsetOverflow);
        }
        for (g, group) in input.chunks(per_group * width).enumerate() {
            sink.start_group(group.len());
            sink = dispatch(path, group, width, mode, nulls_in, g * per_group, sink)?;
            sink.end_group();
        }
    }
    Ok(sink.finish())
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
