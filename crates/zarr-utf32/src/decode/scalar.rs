//! The portable element encoder of the decoding kernels; it also handles, for every path, the
//! elements that hold an invalid code unit.

use crate::{trim_zero_bytes, trimmed_units, unit};
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
