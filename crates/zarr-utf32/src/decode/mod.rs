//! The decoding kernels' driver: the output sinks (`Utf8`/`LargeUtf8` offsets and values,
//! `Utf8View` views and data buffers), the element loop they share, and the dispatch to the
//! element encoder of a [`Path`].

#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(any(all(target_arch = "aarch64", target_endian = "little"), test))]
mod neon;
#[cfg(all(test, not(all(target_arch = "aarch64", target_endian = "little"))))]
mod neon_emu;
#[cfg(test)]
pub(crate) mod proptests;
mod scalar;

use arrow_array::{GenericStringArray, OffsetSizeTrait, StringViewArray};
use arrow_buffer::{BooleanBuffer, Buffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use std::hint::select_unpredictable;

use crate::{InvalidUtf32, Path, TranscodeError};

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
pub(crate) fn element_count(input: &[u8], width: usize) -> usize {
    input.len().checked_div(width).unwrap_or(0)
}

pub(crate) fn to_utf8_with<O: OffsetSizeTrait>(
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
pub(crate) const VIEW_GROUP_BYTES: usize = u32::MAX as usize;

pub(crate) fn to_utf8_view_with(
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
