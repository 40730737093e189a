//! The AVX2 element encoder (x86_64, chosen at run time).
//!
//! An element is read 16 code units (two registers) at a time, the last partial pair with
//! masked loads, so nothing past the element is read. For each pair:
//! - the zero masks of both registers give the position of the last non-zero code unit (the
//!   trim point) with one `lzcnt`, kept without a branch;
//! - all-ASCII pairs are narrowed to 16 bytes with `packus_epi32`, `packus_epi16` and a
//!   permute, and stored at once. That test is a branch only while the data has been pure
//!   ASCII for a while ([`ASCII_STREAK`]); on mixed data a branch there would be mispredicted
//!   about as often as a non-ASCII character appears, so pairs go straight to:
//! - if all 16 units are below 0x800 (ASCII and 2-byte, e.g. accented Latin): narrowing to
//!   16-bit lanes, 1 or 2 bytes per lane, one table-driven `shuffle_epi8` per 8 lanes;
//! - otherwise each block of 8 is validated (surrogates, > 0x10FFFF: the element goes to the
//!   scalar encoder) and encoded: every 32-bit lane gets its 1 to 4 UTF-8 bytes (6-bit groups
//!   spread to bytes, ORed with the marker bits of its length), and a `shuffle_epi8` with a
//!   mask looked up from the four lengths of each 128-bit half puts them in order and packs
//!   them; 16 bytes are stored per half and the position advances by the real length.
//!
//! Stores are whole registers: the bytes past the real length are overwritten by the next
//! ones (the caller leaves room). Trailing U+0000 are encoded like other ASCII (one `0x00`
//! byte each, also for the masked-off lanes) and the returned length leaves them out. The next
//! input is prefetched ahead of each element.

use core::arch::x86_64::*;
use core::hint::select_unpredictable;

use super::Sink;
use crate::{InvalidUtf32, TranscodeError};

/// [`super::drive`] compiled for AVX2, with [`encode`] as the element encoder.
///
/// # Safety
///
/// The CPU must support AVX2.
#[target_feature(enable = "avx2")]
pub(crate) unsafe fn drive<S: Sink>(
    input: &[u8],
    width: usize,
    mode: InvalidUtf32,
    nulls_in: Option<&[bool]>,
    index_base: usize,
    sink: S,
) -> Result<S, TranscodeError> {
    let mut streak = 0;
    super::drive(input, width, mode, nulls_in, index_base, sink, |e, dst| {
        // SAFETY: AVX2 is enabled in this function (and so in this closure), and `drive`
        // hands `encode` a `dst` with room for `width + SLACK` bytes.
        unsafe { encode(e, dst, &mut streak) }
    })
}

/// `SHUFFLE[key]`: the `shuffle_epi8` mask that packs four 32-bit lanes holding 1 to 4 UTF-8
/// bytes each into consecutive bytes; `LENGTH[key]` is the number of bytes. Lane `i` holds
/// `1 + bit i + 2 * bit (i + 4)` of `key` bytes, stored last byte lowest (see [`block`]), so
/// the mask reads each lane from its highest used byte down to byte 0.
static SHUFFLE: [[u8; 16]; 256] = shuffle_table().0;
static LENGTH: [u8; 256] = shuffle_table().1;

const fn shuffle_table() -> ([[u8; 16]; 256], [u8; 256]) {
    let mut masks = [[0x80u8; 16]; 256];
    let mut lengths = [0u8; 256];
    let mut key = 0;
    while key < 256 {
        let mut out = 0;
        let mut lane = 0;
        while lane < 4 {
            let len = 1 + ((key >> lane) & 1) + 2 * ((key >> (lane + 4)) & 1);
            let mut b = len;
            while b > 0 {
                b -= 1;
                masks[key][out] = (4 * lane + b) as u8;
                out += 1;
            }
            lane += 1;
        }
        lengths[key] = out as u8;
        key += 1;
    }
    (masks, lengths)
}

/// `SHUFFLE2[key]`: the `shuffle_epi8` mask that packs eight 16-bit lanes holding 1 or 2
/// UTF-8 bytes each (2 when bit `i` of `key` is set; lead byte lowest); `LENGTH2[key]` is the
/// number of bytes.
static SHUFFLE2: [[u8; 16]; 256] = shuffle2_table().0;
static LENGTH2: [u8; 256] = shuffle2_table().1;

const fn shuffle2_table() -> ([[u8; 16]; 256], [u8; 256]) {
    let mut masks = [[0x80u8; 16]; 256];
    let mut lengths = [0u8; 256];
    let mut key = 0;
    while key < 256 {
        let mut out = 0;
        let mut lane = 0;
        while lane < 8 {
            masks[key][out] = (2 * lane) as u8;
            out += 1;
            if (key >> lane) & 1 == 1 {
                masks[key][out] = (2 * lane + 1) as u8;
                out += 1;
            }
            lane += 1;
        }
        lengths[key] = out as u8;
        key += 1;
    }
    (masks, lengths)
}

/// How far ahead of each element the input is prefetched, in bytes.
const PREFETCH: usize = 1024;

/// `LOAD_MASK[8 - r..][..8]` is the mask of a load of the first `r` lanes.
static LOAD_MASK: [i32; 16] = [-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0];

/// Pairs of blocks that were all ASCII in a row; from [`ASCII_STREAK`] on, the encoder tries
/// the ASCII narrowing first (a branch that pure-ASCII data predicts perfectly), below it goes
/// straight to the branch-free 1-2 byte path (which mixed data would otherwise mispredict).
const ASCII_STREAK: u32 = 16;

/// Writes the UTF-8 of `element` at `dst` and returns its length without the trailing U+0000,
/// or `None` if the element holds an invalid code unit. `streak` carries the count of
/// all-ASCII pairs seen in a row from one element to the next.
///
/// # Safety
///
/// The CPU must support AVX2, and `dst` must be valid for writes of `element.len() + 15 + 16`
/// bytes (the UTF-8 of the element rounded up to 16 code units, plus one 16-byte store).
#[target_feature(enable = "avx2")]
#[inline]
pub(crate) unsafe fn encode(element: &[u8], dst: *mut u8, streak: &mut u32) -> Option<usize> {
    let w = element.len() / 4;
    let src = element.as_ptr();
    // Bytes written, code units consumed, and code units up to the last non-zero one.
    let mut pos = 0usize;
    let mut k = 0usize;
    let mut end = 0usize;
    // Prefetching never faults, even past the end of the input.
    _mm_prefetch::<_MM_HINT_T0>(src.wrapping_add(PREFETCH).cast());
    while k + 16 <= w {
        // SAFETY: code units k..k + 16 are within `element`.
        let (a, b) = unsafe {
            (
                _mm256_loadu_si256(src.add(4 * k).cast()),
                _mm256_loadu_si256(src.add(4 * k + 32).cast()),
            )
        };
        // SAFETY: as for `encode`.
        pos = unsafe { pair(a, b, dst, pos, k, &mut end, streak) }?;
        k += 16;
    }
    if k < w {
        let left = w - k;
        // SAFETY: the masks select only the code units left (masked-off lanes are 0 and not
        // read, so the address of `b` may lie past the element). LOAD_MASK[8 - r..][..8] is
        // in bounds for r <= 8.
        let (a, b) = unsafe {
            let ra = left.min(8);
            let rb = left - ra;
            let ma = _mm256_loadu_si256(LOAD_MASK.as_ptr().add(8 - ra).cast());
            let mb = _mm256_loadu_si256(LOAD_MASK.as_ptr().add(8 - rb).cast());
            (
                _mm256_maskload_epi32(src.add(4 * k).cast(), ma),
                _mm256_maskload_epi32(src.wrapping_add(4 * k + 32).cast(), mb),
            )
        };
        // SAFETY: as for `encode`.
        pos = unsafe { pair(a, b, dst, pos, k, &mut end, streak) }?;
        k += 16;
    }
    // The k - end trailing zero lanes (padding, or masked-off lanes) each wrote one byte.
    Some(pos - (k - end))
}

/// Encodes 16 code units (`a` then `b`, the first at unit `k` of the element) at `dst + pos`;
/// returns the new position, or `None` if a unit is not a scalar value. Moves `end` past the
/// last non-zero unit, if any.
///
/// # Safety
///
/// The CPU must support AVX2, and `dst + pos` must be valid for writes of the UTF-8 of these
/// 16 code units plus 12 bytes.
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn pair(
    a: __m256i,
    b: __m256i,
    dst: *mut u8,
    pos: usize,
    k: usize,
    end: &mut usize,
    streak: &mut u32,
) -> Option<usize> {
    let zero = _mm256_setzero_si256();
    let za = _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(a, zero))) as u32;
    let zb = _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(b, zero))) as u32;
    let non_zero = !(za | zb << 8) & 0xFFFF;
    // Branch-free: lengths are random, and so is whether a block is all padding.
    *end = select_unpredictable(
        non_zero != 0,
        k + 32 - non_zero.leading_zeros() as usize,
        *end,
    );
    let any = _mm256_or_si256(a, b);
    let not_ascii = _mm256_set1_epi32(!0x7F);
    if *streak >= ASCII_STREAK {
        if _mm256_testz_si256(any, not_ascii) != 0 {
            // Lanes [a0-3 b0-3 .. | a4-7 b4-7 ..] as bytes, dwords reordered to a0-7 b0-7.
            let packed = _mm256_packus_epi16(_mm256_packus_epi32(a, b), zero);
            let order = _mm256_setr_epi32(0, 4, 1, 5, 2, 3, 6, 7);
            let packed = _mm256_permutevar8x32_epi32(packed, order);
            // SAFETY: these 16 bytes are the UTF-8 of these 16 code units.
            unsafe { _mm_storeu_si128(dst.add(pos).cast(), _mm256_castsi256_si128(packed)) };
            return Some(pos + 16);
        }
        *streak = 0;
    } else {
        // 1 if all ASCII, else 0, without a branch.
        let ascii = _mm256_testz_si256(any, not_ascii) as u32;
        *streak = (*streak + 1) * ascii;
    }
    if _mm256_testz_si256(any, _mm256_set1_epi32(!0x7FF)) != 0 {
        // SAFETY: as for `pair`; writes the UTF-8 of the pair plus at most 8 bytes.
        Some(unsafe { pair_two_bytes(a, b, dst, pos) })
    } else {
        // SAFETY: as for `pair`; each block writes its UTF-8 plus at most 12 bytes.
        unsafe { block(b, dst, block(a, dst, pos)?) }
    }
}

/// Validates and encodes 8 code units at `dst + pos`; returns the new position, or `None` if
/// a unit is not a scalar value.
///
/// Each lane becomes its 6-bit groups, one per byte, last group lowest
/// (`B0 | B1 << 8 | B2 << 16 | B3 << 24`; all 7 bits in `B0` for ASCII), ORed with the UTF-8
/// marker bits of its length (lead byte prefix in byte `len - 1`, `0x80` below it); the
/// shuffle then emits bytes `len - 1` down to 0 of each lane, so no per-length blend is
/// needed.
///
/// # Safety
///
/// The CPU must support AVX2, and `dst + pos` must be valid for writes of the UTF-8 of these
/// 8 code units plus 12 bytes.
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn block(v: __m256i, dst: *mut u8, pos: usize) -> Option<usize> {
    // Surrogates are 0xD800..=0xDFFF; beyond 0x10FFFF, `v >> 16` exceeds 0x10.
    let surrogate = _mm256_cmpeq_epi32(
        _mm256_and_si256(v, _mm256_set1_epi32(0xFFFF_F800_u32 as i32)),
        _mm256_set1_epi32(0xD800),
    );
    let too_big = _mm256_cmpgt_epi32(_mm256_srli_epi32::<16>(v), _mm256_set1_epi32(0x10));
    let invalid = _mm256_or_si256(surrogate, too_big);
    if _mm256_testz_si256(invalid, invalid) == 0 {
        return None;
    }
    // All lanes are now at most 0x10FFFF, so signed comparisons are exact.
    let two = _mm256_cmpgt_epi32(v, _mm256_set1_epi32(0x7F));
    let three = _mm256_cmpgt_epi32(v, _mm256_set1_epi32(0x7FF));
    let four = _mm256_cmpgt_epi32(v, _mm256_set1_epi32(0xFFFF));

    // Byte 0 keeps 7 bits for ASCII lanes and 6 for the others.
    let low = _mm256_andnot_si256(
        _mm256_and_si256(two, _mm256_set1_epi32(0x40)),
        _mm256_and_si256(v, _mm256_set1_epi32(0x7F)),
    );
    let groups = _mm256_or_si256(
        _mm256_or_si256(
            low,
            _mm256_and_si256(_mm256_slli_epi32::<2>(v), _mm256_set1_epi32(0x3F00)),
        ),
        _mm256_or_si256(
            _mm256_and_si256(_mm256_slli_epi32::<4>(v), _mm256_set1_epi32(0x3F_0000)),
            _mm256_and_si256(_mm256_slli_epi32::<6>(v), _mm256_set1_epi32(0x0700_0000)),
        ),
    );
    // Length 2: C0 80; 3: E0 80 80; 4: F0 80 80 80 (lead byte highest).
    let marker = _mm256_xor_si256(
        _mm256_xor_si256(
            _mm256_and_si256(two, _mm256_set1_epi32(0x0000_C080)),
            _mm256_and_si256(three, _mm256_set1_epi32(0x00E0_4000)),
        ),
        _mm256_and_si256(four, _mm256_set1_epi32(0xF060_0000_u32 as i32)),
    );
    let bytes = _mm256_or_si256(groups, marker);

    // Length - 1 in two bits per lane: bit 0 = two ^ three ^ four, bit 1 = three.
    let bit0 = _mm256_xor_si256(_mm256_xor_si256(two, three), four);
    let m0 = _mm256_movemask_ps(_mm256_castsi256_ps(bit0)) as usize;
    let m1 = _mm256_movemask_ps(_mm256_castsi256_ps(three)) as usize;
    let key_lo = (m0 & 0x0F) | (m1 & 0x0F) << 4;
    let key_hi = (m0 >> 4) | (m1 & 0xF0);
    // SAFETY: the keys are below 256; each mask is 16 bytes.
    let shuffle = unsafe {
        _mm256_inserti128_si256::<1>(
            _mm256_castsi128_si256(_mm_loadu_si128(SHUFFLE[key_lo].as_ptr().cast())),
            _mm_loadu_si128(SHUFFLE[key_hi].as_ptr().cast()),
        )
    };
    let packed = _mm256_shuffle_epi8(bytes, shuffle);
    let len_lo = LENGTH[key_lo] as usize;
    let len_hi = LENGTH[key_hi] as usize;
    // SAFETY: the caller guarantees room for the UTF-8 of the block (len_lo + len_hi bytes,
    // at least 4 per half) plus 12 bytes, which covers both 16-byte stores.
    unsafe {
        _mm_storeu_si128(dst.add(pos).cast(), _mm256_castsi256_si128(packed));
        _mm_storeu_si128(
            dst.add(pos + len_lo).cast(),
            _mm256_extracti128_si256::<1>(packed),
        );
    }
    Some(pos + len_lo + len_hi)
}

/// Encodes 16 code units, all below 0x800 (so valid, with 1 or 2 UTF-8 bytes each), at
/// `dst + pos`; returns the new position. They are narrowed to 16-bit lanes, each lane gets its
/// 1 or 2 bytes, and one table-driven shuffle per 128-bit half packs 8 lanes.
///
/// # Safety
///
/// The CPU must support AVX2, and `dst + pos` must be valid for writes of the UTF-8 of these
/// 16 code units plus 8 bytes.
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn pair_two_bytes(a: __m256i, b: __m256i, dst: *mut u8, pos: usize) -> usize {
    // 16-bit lanes [a0-3 b0-3 | a4-7 b4-7], reordered to [a0-7 | b0-7].
    let u = _mm256_permute4x64_epi64::<0b11_01_10_00>(_mm256_packus_epi32(a, b));
    let two = _mm256_cmpgt_epi16(u, _mm256_set1_epi16(0x7F));
    let lead = _mm256_or_si256(_mm256_srli_epi16::<6>(u), _mm256_set1_epi16(0xC0));
    let cont = _mm256_or_si256(
        _mm256_and_si256(u, _mm256_set1_epi16(0x3F)),
        _mm256_set1_epi16(0x80),
    );
    let bytes = _mm256_blendv_epi8(u, _mm256_or_si256(lead, _mm256_slli_epi16::<8>(cont)), two);
    // One bit per 16-bit lane: bits 0-7 for the low half, 16-23 for the high half.
    let mask =
        _mm256_movemask_epi8(_mm256_packs_epi16(two, _mm256_setzero_si256())) as u32 as usize;
    let key_lo = mask & 0xFF;
    let key_hi = (mask >> 16) & 0xFF;
    // SAFETY: the keys are below 256; each mask is 16 bytes.
    let shuffle = unsafe {
        _mm256_inserti128_si256::<1>(
            _mm256_castsi128_si256(_mm_loadu_si128(SHUFFLE2[key_lo].as_ptr().cast())),
            _mm_loadu_si128(SHUFFLE2[key_hi].as_ptr().cast()),
        )
    };
    let packed = _mm256_shuffle_epi8(bytes, shuffle);
    let len_lo = LENGTH2[key_lo] as usize;
    let len_hi = LENGTH2[key_hi] as usize;
    // SAFETY: the caller guarantees room for the UTF-8 (at least 8 bytes per half) plus 8.
    unsafe {
        _mm_storeu_si128(dst.add(pos).cast(), _mm256_castsi256_si128(packed));
        _mm_storeu_si128(
            dst.add(pos + len_lo).cast(),
            _mm256_extracti128_si256::<1>(packed),
        );
    }
    pos + len_lo + len_hi
}
