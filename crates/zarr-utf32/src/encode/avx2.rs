//! The AVX2 element encoder and code point counter of the encoding kernels (x86_64, chosen at
//! run time; see [`crate::encode`]).

use core::arch::x86_64::*;
use std::mem::MaybeUninit;

use arrow_buffer::NullBuffer;

use super::{EncodeError, Job, Source};

/// Whether this CPU runs the functions of this module: AVX2, BMI1 (`tzcnt`) and POPCNT, which
/// every AVX2 CPU has.
pub(crate) fn available() -> bool {
    std::is_x86_feature_detected!("avx2")
        && std::is_x86_feature_detected!("bmi1")
        && std::is_x86_feature_detected!("popcnt")
}

/// [`super::drive`] compiled for AVX2, with [`element`] as the element encoder.
///
/// # Safety
///
/// The CPU must support AVX2, BMI1 and POPCNT ([`available`]).
#[target_feature(enable = "avx2,bmi1,popcnt")]
pub(crate) unsafe fn drive<S: Source>(
    source: &S,
    nulls: Option<&NullBuffer>,
    job: Job,
    slots: &mut [MaybeUninit<u8>],
) -> Result<(), EncodeError> {
    // SAFETY (all four): AVX2, BMI1 and POPCNT are enabled here, and `drive` hands each
    // element a slot of at least `4 * job.units + SLACK` bytes, SLACK >= 60.
    let units = job.units;
    use super::drive as encode;
    match (job.big, units <= 16) {
        (false, true) => encode(source, nulls, job, slots, |b, s, l, slot| unsafe {
            element::<false, true>(b, s, l, slot, units)
        }),
        (false, false) => encode(source, nulls, job, slots, |b, s, l, slot| unsafe {
            element::<false, false>(b, s, l, slot, units)
        }),
        (true, true) => encode(source, nulls, job, slots, |b, s, l, slot| unsafe {
            element::<true, true>(b, s, l, slot, units)
        }),
        (true, false) => encode(source, nulls, job, slots, |b, s, l, slot| unsafe {
            element::<true, false>(b, s, l, slot, units)
        }),
    }
}

/// The 16 bytes of `buf` from `at`, zero past the end of `buf`.
#[target_feature(enable = "avx2,bmi1,popcnt")]
#[inline]
fn load16(buf: &[u8], at: usize) -> __m128i {
    match buf.get(at..).and_then(|rest| rest.first_chunk::<16>()) {
        // SAFETY: `b` has 16 bytes.
        Some(b) => unsafe { _mm_loadu_si128(b.as_ptr().cast()) },
        None => load16_tail(buf, at),
    }
}

#[cold]
#[target_feature(enable = "avx2,bmi1,popcnt")]
fn load16_tail(buf: &[u8], at: usize) -> __m128i {
    let mut b = [0u8; 16];
    let rest = buf.get(at..).unwrap_or(&[]);
    let n = rest.len().min(16);
    b[..n].copy_from_slice(&rest[..n]);
    // SAFETY: `b` has 16 bytes.
    unsafe { _mm_loadu_si128(b.as_ptr().cast()) }
}

/// `KEEP[16 - r..][..16]` keeps the first `r` bytes of a 16-byte register, `r` in 0..=16.
static KEEP: [u8; 32] = {
    let mut t = [0u8; 32];
    let mut i = 0;
    while i < 16 {
        t[i] = 0xFF;
        i += 1;
    }
    t
};

/// Writes the slot of `buf[start..start + len]` and returns whether code points were left out.
///
/// Its first `units` bytes are read 16 at a time (the masked-off bytes past the element too,
/// within `buf`) and widened to 16 code units, two 32-byte stores, the whole slot rounded up
/// to 16 code units, without a branch on the length. If one of those bytes is not ASCII, the
/// element goes to [`non_ascii`] (when `ONE`, `units <= 16`: a single step, tested before it
/// stores; else the steps already stored are overwritten).
///
/// # Safety
///
/// The CPU must support AVX2, BMI1 and POPCNT, and `slot` must hold at least `4 * units + 60`
/// bytes.
#[target_feature(enable = "avx2,bmi1,popcnt")]
#[inline]
unsafe fn element<const BIG: bool, const ONE: bool>(
    buf: &[u8],
    start: usize,
    len: usize,
    slot: &mut [MaybeUninit<u8>],
    units: usize,
) -> bool {
    let head = len.min(units);
    let dst = slot.as_mut_ptr().cast::<u8>();
    let steps = if ONE { 1 } else { units.div_ceil(16) };
    let mut high = 0;
    for b in 0..steps {
        // Bytes of the head left from byte 16 * b on, at most 16: the mask keeps those.
        let r = if ONE {
            head.min(16)
        } else {
            head.saturating_sub(16 * b).min(16)
        };
        // SAFETY: 16 - r + 16 <= 32 = KEEP.len().
        let keep = unsafe { _mm_loadu_si128(KEEP.as_ptr().add(16 - r).cast()) };
        let v = _mm_and_si128(load16(buf, start.saturating_add(16 * b)), keep);
        high |= _mm_movemask_epi8(v);
        if ONE && high != 0 {
            break;
        }
        let mut lo = _mm256_cvtepu8_epi32(v);
        let mut hi = _mm256_cvtepu8_epi32(_mm_unpackhi_epi64(v, v));
        if BIG {
            lo = _mm256_slli_epi32::<24>(lo);
            hi = _mm256_slli_epi32::<24>(hi);
        }
        // SAFETY: b < units.div_ceil(16) (b = 0 and units <= 16 if ONE), so the 64 bytes from
        // 64 * b end within 4 * units + 60 bytes of the slot.
        unsafe {
            _mm256_storeu_si256(dst.add(64 * b).cast(), lo);
            _mm256_storeu_si256(dst.add(64 * b + 32).cast(), hi);
        }
    }
    if high != 0 {
        // SAFETY: as for `element`.
        return unsafe { non_ascii::<BIG, ONE>(buf, start, len, slot, units) };
    }
    len > units
}

/// Bytes read by a step of [`non_ascii`]: 64 for the lead byte mask, and 16 from the first
/// character of each group of 4, which starts at most 64 bytes in.
const WINDOW: usize = 80;

/// The `WINDOW` bytes of `buf` from `at`, or `None` near the end of `buf` ([`window_tail`]).
#[inline(always)]
fn window(buf: &[u8], at: usize) -> Option<&[u8; WINDOW]> {
    buf.get(at..).and_then(|rest| rest.first_chunk::<WINDOW>())
}

/// The bytes of `buf` from `at` (fewer than `WINDOW`), then zeros.
#[cold]
fn window_tail(buf: &[u8], at: usize) -> [u8; WINDOW] {
    let mut copy = [0u8; WINDOW];
    let rest = buf.get(at..).unwrap_or(&[]);
    let n = rest.len().min(WINDOW);
    copy[..n].copy_from_slice(&rest[..n]);
    copy
}

/// The 32 bytes of `w` from `at` (`at <= WINDOW - 32`).
#[target_feature(enable = "avx2,bmi1,popcnt")]
#[inline]
fn load32_at(w: &[u8; WINDOW], at: usize) -> __m256i {
    let b: &[u8; 32] = w[at..].first_chunk().unwrap_or(&[0; 32]);
    // SAFETY: `b` has 32 bytes.
    unsafe { _mm256_loadu_si256(b.as_ptr().cast()) }
}

/// The 16 bytes of `w` from `at` (`at <= WINDOW - 16`).
#[target_feature(enable = "avx2,bmi1,popcnt")]
#[inline]
fn load16_at(w: &[u8; WINDOW], at: usize) -> __m128i {
    let b: &[u8; 16] = w[at.min(WINDOW - 16)..].first_chunk().unwrap_or(&[0; 16]);
    // SAFETY: `b` has 16 bytes.
    unsafe { _mm_loadu_si128(b.as_ptr().cast()) }
}

/// Per 128-bit lane, by the high nibble of a lead byte: how far left to shift the four
/// bytes' 6-bit groups (see [`decode`]) so that the lead byte's marker bits drop out, and
/// then how far right to shift them. Nibbles 0-7: ASCII (7 data bits); 8-B (continuation
/// bytes, never a lead byte in UTF-8): as ASCII; C-D: 2 bytes (11 bits); E: 3 (16); F: 4 (21).
static LEFT: [u8; 16] = [7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 9, 9, 10, 11];
static RIGHT: [u8; 16] = [
    25, 25, 25, 25, 25, 25, 25, 25, 25, 25, 25, 25, 21, 21, 16, 11,
];

/// `STRIDE[s]` (`s` in 2..=4): a lead byte every `s` bytes, from bit 0 on.
const STRIDE: [u64; 5] = [
    0,
    0,
    0x5555_5555_5555_5555,
    0x9249_2492_4924_9249,
    0x1111_1111_1111_1111,
];

/// `UNIFORM[s]` (`s` in 2..=4): the shuffle control that puts 4 characters of `s` bytes, from
/// byte 0 of a 128-bit lane, in its 4 lanes (`s * i + 0..4` in lane `i`).
static UNIFORM: [[u8; 32]; 5] = {
    let mut t = [[0u8; 32]; 5];
    let mut s = 2;
    while s <= 4 {
        let mut b = 0;
        while b < 32 {
            t[s][b] = (s * ((b % 16) / 4) + b % 4) as u8;
            b += 1;
        }
        s += 1;
    }
    t
};

/// The element encoder for elements with a non-ASCII character in their first `units`
/// bytes: 16 characters per step, `units.div_ceil(16)` steps, each storing 16 code units
/// (zero past the last character), so the padding costs nothing more. When `ONE`
/// (`units <= 16`) that is one step; else the steps after the last character only store
/// zeros. (One function, steps and all: split, the step would not be inlined.)
///
/// A step reads the 64 bytes from its position (16 characters of at most 4 bytes fit), and
/// takes the positions of the characters from the mask of non-continuation bytes: when they
/// are evenly spaced (2, 3 or 4 bytes each: Cyrillic, CJK, emoji...) from a table, else one at
/// a time. Then per group of 4 characters (a 128-bit lane), which fit in the 16 bytes from the
/// first of them, a shuffle puts the (up to) 4 bytes of each character in its 32-bit lane,
/// lead byte lowest, and [`decode`] makes the code points.
///
/// Bytes that are not UTF-8 give junk code units, but no out-of-bounds read, and the position
/// always moves forward.
///
/// # Safety
///
/// The CPU must support AVX2, BMI1 and POPCNT, and `slot` must hold at least `4 * units + 60`
/// bytes.
#[target_feature(enable = "avx2,bmi1,popcnt")]
#[inline(never)]
unsafe fn non_ascii<const BIG: bool, const ONE: bool>(
    buf: &[u8],
    start: usize,
    len: usize,
    slot: &mut [MaybeUninit<u8>],
    units: usize,
) -> bool {
    let dst = slot.as_mut_ptr().cast::<u8>();
    let steps = if ONE { 1 } else { units.div_ceil(16) };
    let mut pos = 0usize;
    let mut total = 0usize;
    for g in 0..steps {
        if !ONE && pos >= len {
            // SAFETY: as below.
            unsafe {
                _mm256_storeu_si256(dst.add(64 * g).cast(), _mm256_setzero_si256());
                _mm256_storeu_si256(dst.add(64 * g + 32).cast(), _mm256_setzero_si256());
            }
            continue;
        }
        let at = start.saturating_add(pos);
        let copy;
        let w = match window(buf, at) {
            Some(w) => w,
            None => {
                copy = window_tail(buf, at);
                &copy
            }
        };
        let first = load32_at(w, 0);
        let second = load32_at(w, 32);
        let limit = _mm256_set1_epi8(-0x41);
        let lead = u64::from(_mm256_movemask_epi8(_mm256_cmpgt_epi8(first, limit)) as u32)
            | u64::from(_mm256_movemask_epi8(_mm256_cmpgt_epi8(second, limit)) as u32) << 32;
        // Lead bytes among the bytes left (at most 64), and a mark at their end if within 64.
        let end = len.saturating_sub(pos).min(64);
        let below = u64::MAX.checked_shr(64 - end as u32).unwrap_or(0);
        let mark = 1u64.checked_shl(end as u32).unwrap_or(0);
        let m = (lead & below) | mark;
        let chars = m.count_ones() as usize - usize::from(end < 64);
        // Evenly spaced characters of `stride` bytes up to the end or the 17th character.
        let stride = (m & m.wrapping_sub(1)).trailing_zeros() as usize;
        let uniform = (2..=4).contains(&stride) && {
            let e = end.min(16 * stride);
            let pattern = STRIDE[stride];
            // Bits 0..=e (all 64 when e = 64).
            let upto = (2u64 << e.min(63)).wrapping_sub(1);
            // With bit e: the mark of the end, or the 17th character's lead byte, both where
            // the pattern has one (else the characters are not all of `stride` bytes).
            (m & upto) == (pattern & upto)
        };
        let (control0, control1, offsets, count, next);
        if uniform {
            // SAFETY: stride is 2..=4 and each entry has 32 bytes.
            let c = unsafe { _mm256_loadu_si256(UNIFORM[stride].as_ptr().cast()) };
            (control0, control1) = (c, c);
            offsets = [4 * stride, 8 * stride, 12 * stride];
            count = chars.min(16);
            next = if count == 16 {
                pos.saturating_add(16 * stride)
            } else {
                len
            };
        } else {
            // Starts of characters 1 to 16 (64 past the last one).
            let mut p = [0u64; 17];
            let mut rest = m;
            for q in p.iter_mut().skip(1) {
                rest &= rest.wrapping_sub(1);
                *q = u64::from(rest.trailing_zeros());
            }
            let spread = _mm256_setr_epi8(
                0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, //
                4, 4, 4, 4, 5, 5, 5, 5, 6, 6, 6, 6, 7, 7, 7, 7,
            );
            // Per group of 4, the positions relative to its first character, one byte each
            // (the starts only grow: no wrapping, but junk rather than a panic if they did).
            let packed = |q: &[u64]| {
                let d = |i: usize, from: usize| q[i].wrapping_sub(q[from]) & 0xFF;
                let low = d(1, 0) << 8 | d(2, 0) << 16 | d(3, 0) << 24;
                let high = d(5, 4) << 8 | d(6, 4) << 16 | d(7, 4) << 24;
                let index = _mm256_broadcastq_epi64(_mm_cvtsi64_si128((low | high << 32) as i64));
                _mm256_add_epi8(
                    _mm256_shuffle_epi8(index, spread),
                    _mm256_set1_epi32(0x0302_0100),
                )
            };
            control0 = packed(&p[0..8]);
            control1 = packed(&p[8..16]);
            offsets = [p[4] as usize, p[8] as usize, p[12] as usize];
            count = chars.min(16);
            next = if count == 16 {
                pos.saturating_add(p[16] as usize)
            } else {
                len
            };
        }
        // Each group's first character starts at most 64 bytes in (64 past the last one).
        let data0 = _mm256_inserti128_si256::<1>(first, load16_at(w, offsets[0]));
        let data1 = _mm256_inserti128_si256::<1>(
            _mm256_castsi128_si256(load16_at(w, offsets[1])),
            load16_at(w, offsets[2]),
        );
        let lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        let keep0 = _mm256_cmpgt_epi32(_mm256_set1_epi32(count as i32), lanes);
        let keep1 = _mm256_cmpgt_epi32(_mm256_set1_epi32(count as i32 - 8), lanes);
        let lo = _mm256_and_si256(decode::<BIG>(_mm256_shuffle_epi8(data0, control0)), keep0);
        let hi = _mm256_and_si256(decode::<BIG>(_mm256_shuffle_epi8(data1, control1)), keep1);
        total += count;
        pos = next;
        // SAFETY: g < units.div_ceil(16) (g = 0 and units <= 16 if ONE), so the 64 bytes
        // from 64 * g end within 4 * units + 60 bytes of the slot.
        unsafe {
            _mm256_storeu_si256(dst.add(64 * g).cast(), lo);
            _mm256_storeu_si256(dst.add(64 * g + 32).cast(), hi);
        }
    }
    pos < len || total > units
}

/// The code points of 8 characters, each lane holding its (up to) 4 bytes, lead byte lowest
/// (see [`non_ascii`]), in the output byte order.
#[target_feature(enable = "avx2,bmi1,popcnt")]
#[inline]
fn decode<const BIG: bool>(v: __m256i) -> __m256i {
    let t = _mm256_and_si256(v, _mm256_set1_epi32(0x3F3F_3F7F));
    let x = _mm256_madd_epi16(
        _mm256_maddubs_epi16(t, _mm256_set1_epi16(0x0140)),
        _mm256_set1_epi32(0x0001_1000),
    );
    let nibble = _mm256_or_si256(
        _mm256_and_si256(_mm256_srli_epi32::<4>(v), _mm256_set1_epi32(0x0F)),
        _mm256_set1_epi32(0x8080_8000_u32 as i32),
    );
    // SAFETY: the tables have 16 bytes.
    let (left, right) = unsafe {
        (
            _mm256_broadcastsi128_si256(_mm_loadu_si128(LEFT.as_ptr().cast())),
            _mm256_broadcastsi128_si256(_mm_loadu_si128(RIGHT.as_ptr().cast())),
        )
    };
    let code = _mm256_srlv_epi32(
        _mm256_sllv_epi32(x, _mm256_shuffle_epi8(left, nibble)),
        _mm256_shuffle_epi8(right, nibble),
    );
    if BIG {
        let swap = _mm256_setr_epi8(
            3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8, 15, 14, 13, 12, //
            3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8, 15, 14, 13, 12,
        );
        _mm256_shuffle_epi8(code, swap)
    } else {
        code
    }
}

/// [`super::max_code_points`] with the code points of each element counted 32 bytes
/// at a time.
///
/// # Safety
///
/// The CPU must support AVX2, BMI1 and POPCNT.
#[target_feature(enable = "avx2,bmi1,popcnt")]
pub(crate) unsafe fn max_code_points<S: Source>(source: &S, nulls: Option<&NullBuffer>) -> usize {
    super::max_loop(source, nulls, |buf, start, len| {
        // SAFETY: AVX2, BMI1 and POPCNT are enabled here.
        unsafe { count(buf, start, len) }
    })
}

/// Code points of `buf[start..start + len]`: its bytes that are not continuation bytes,
/// counted with a comparison, a movemask and a popcount per 32 bytes; up to 64 bytes without a
/// loop, from the 64 bytes at `start` (a copy near the end of `buf`).
///
/// # Safety
///
/// The CPU must support AVX2, BMI1 and POPCNT.
#[target_feature(enable = "avx2,bmi1,popcnt")]
#[inline]
unsafe fn count(buf: &[u8], start: usize, len: usize) -> usize {
    // Continuation bytes are 0x80..=0xBF, below -0x40 as i8.
    let limit = _mm256_set1_epi8(-0x41);
    let leads = |v: __m256i| _mm256_movemask_epi8(_mm256_cmpgt_epi8(v, limit)) as u32;
    if len <= 64 {
        let copy;
        let w = match window(buf, start) {
            Some(w) => w,
            None => {
                copy = window_tail(buf, start);
                &copy
            }
        };
        let m = u64::from(leads(load32_at(w, 0))) | u64::from(leads(load32_at(w, 32))) << 32;
        let below = u64::MAX.checked_shr(64 - len as u32).unwrap_or(0);
        return (m & below).count_ones() as usize;
    }
    let bytes = super::bytes_of(buf, start, len);
    let mut chunks = bytes.chunks_exact(32);
    let mut n = 0;
    for c in &mut chunks {
        // SAFETY: `c` has 32 bytes.
        let v = unsafe { _mm256_loadu_si256(c.as_ptr().cast()) };
        n += leads(v).count_ones() as usize;
    }
    n + super::count_code_points(chunks.remainder())
}
