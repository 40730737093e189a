//! The portable element encoder of the encoding kernels: fixed-size ASCII loops the compiler
//! vectorizes, else one character at a time (also what aarch64 runs).

use super::Job;
use std::mem::MaybeUninit;

/// Writes code unit `k` of the slot.
#[inline(always)]
fn put(slot: &mut [MaybeUninit<u8>], k: usize, unit: u32, big: bool) {
    let bytes = if big {
        unit.to_be_bytes()
    } else {
        unit.to_le_bytes()
    };
    if let Some(dst) = slot.get_mut(4 * k..4 * k + 4) {
        for (d, b) in dst.iter_mut().zip(bytes) {
            d.write(b);
        }
    }
}

/// Decodes the character at `bytes[i]`: its code point and its length in bytes. Never
/// panics: bytes that are not UTF-8 decode to something, and a truncated sequence reads
/// missing continuation bytes as zero.
#[inline(always)]
fn decode(bytes: &[u8], i: usize) -> (u32, usize) {
    let b0 = bytes.get(i).copied().unwrap_or(0);
    if b0 < 0x80 {
        return (u32::from(b0), 1);
    }
    let cont = |j: usize| bytes.get(i + j).map_or(0, |&b| u32::from(b & 0x3F));
    match b0.leading_ones() {
        0..=2 => ((u32::from(b0 & 0x1F) << 6) | cont(1), 2),
        3 => ((u32::from(b0 & 0x0F) << 12) | (cont(1) << 6) | cont(2), 3),
        _ => (
            (u32::from(b0 & 0x07) << 18) | (cont(1) << 12) | (cont(2) << 6) | cont(3),
            4,
        ),
    }
}

/// Writes the slot of the element `bytes` one character at a time, then the padding;
/// returns whether code points were left out.
#[inline(never)]
fn by_character(bytes: &[u8], slot: &mut [MaybeUninit<u8>], units: usize, big: bool) -> bool {
    let mut at = 0;
    let mut k = 0;
    while at < bytes.len() && k < units {
        let (unit, len) = decode(bytes, at);
        put(slot, k, unit, big);
        at += len;
        k += 1;
    }
    if let Some(rest) = slot.get_mut(4 * k..4 * units) {
        rest.fill(MaybeUninit::new(0));
    }
    at < bytes.len()
}

/// `KEEP[16 - r..][..16]` keeps the first `r` of 16 bytes, `r` in 0..=16.
const KEEP: [u8; 32] = {
    let mut t = [0u8; 32];
    let mut i = 0;
    while i < 16 {
        t[i] = 0xFF;
        i += 1;
    }
    t
};

/// The element encoder. The first `job.units` bytes are taken 16 at a time (16 bytes of
/// `buf` masked to the element, or a copy near its end), widened to 16 code units, 64
/// bytes of the slot, padding included: fixed-size loops the compiler vectorizes (SSE2,
/// NEON). If one of those bytes is not ASCII, the element is encoded one character at a
/// time instead.
#[inline]
pub(crate) fn element(
    buf: &[u8],
    start: usize,
    len: usize,
    slot: &mut [MaybeUninit<u8>],
    job: Job,
) -> bool {
    if job.big {
        element_in::<true>(buf, start, len, slot, job.units)
    } else {
        element_in::<false>(buf, start, len, slot, job.units)
    }
}

#[inline(always)]
fn element_in<const BIG: bool>(
    buf: &[u8],
    start: usize,
    len: usize,
    slot: &mut [MaybeUninit<u8>],
    units: usize,
) -> bool {
    let head = len.min(units);
    let mut high = 0u128;
    for b in 0..units.div_ceil(16) {
        let at = start.saturating_add(16 * b);
        let chunk = match buf.get(at..).and_then(|rest| rest.first_chunk::<16>()) {
            Some(w) => *w,
            None => {
                let mut chunk = [0u8; 16];
                let rest = buf.get(at..).unwrap_or(&[]);
                let n = rest.len().min(16);
                chunk[..n].copy_from_slice(&rest[..n]);
                chunk
            }
        };
        // Keep the bytes of the head from byte 16 * b on, at most 16.
        let r = head.saturating_sub(16 * b).min(16);
        let keep: &[u8; 16] = KEEP[16 - r..].first_chunk().unwrap_or(&[0; 16]);
        let mut kept = [0u8; 16];
        for ((k, &c), &m) in kept.iter_mut().zip(&chunk).zip(keep) {
            *k = c & m;
        }
        high |= u128::from_ne_bytes(kept);
        let mut units = [0u8; 64];
        for (u, &k) in units.chunks_exact_mut(4).zip(&kept) {
            u.copy_from_slice(&if BIG {
                u32::from(k).to_be_bytes()
            } else {
                u32::from(k).to_le_bytes()
            });
        }
        // Within the slot's 4 * units + SLACK bytes: 64 * b + 64 <= 4 * units + 60.
        if let Some(dst) = slot.get_mut(64 * b..64 * b + 64) {
            dst.write_copy_of_slice(&units);
        }
    }
    if high & 0x8080_8080_8080_8080_8080_8080_8080_8080 != 0 {
        return by_character(super::bytes_of(buf, start, len), slot, units, BIG);
    }
    len > units
}
