//! The NEON element encoder (little-endian aarch64, where NEON is part of the base target):
//! an ASCII fast path, 8 code units at a time (two loads, one OR into the accumulator, two
//! narrowing moves to 8 bytes). Elements with a non-ASCII code unit go to the scalar encoder.
//!
//! On other targets this module is only built for tests, against the scalar stand-ins of the
//! intrinsics in `neon_emu`, so its logic is tested on x86_64 too.

#[cfg(all(target_arch = "aarch64", target_endian = "little"))]
use core::arch::aarch64::{
    vcombine_u16, vdupq_n_u32, vld1q_u8, vmaxvq_u32, vmovn_u16, vmovn_u32, vorrq_u32,
    vreinterpretq_u32_u8, vst1_u8,
};

#[cfg(not(all(target_arch = "aarch64", target_endian = "little")))]
use super::neon_emu::{
    vcombine_u16, vdupq_n_u32, vld1q_u8, vmaxvq_u32, vmovn_u16, vmovn_u32, vorrq_u32,
    vreinterpretq_u32_u8, vst1_u8,
};

use super::Sink;
use crate::{InvalidUtf32, TranscodeError};

/// [`super::drive`] with [`encode`] as the element encoder.
pub(crate) fn drive<S: Sink>(
    input: &[u8],
    width: usize,
    mode: InvalidUtf32,
    nulls_in: Option<&[bool]>,
    index_base: usize,
    sink: S,
) -> Result<S, TranscodeError> {
    super::drive(input, width, mode, nulls_in, index_base, sink, |e, dst| {
        // SAFETY: `drive` hands `encode` a `dst` with room for `width + SLACK` bytes.
        unsafe { encode(e, dst) }
    })
}

/// Writes the UTF-8 of an all-ASCII `element` at `dst` and returns its length without the
/// trailing U+0000, or `None` (having written unspecified bytes) if a code unit is not ASCII.
///
/// # Safety
///
/// `dst` must be valid for writes of `element.len() / 4` bytes.
#[inline]
pub(crate) unsafe fn encode(element: &[u8], dst: *mut u8) -> Option<usize> {
    let w = element.len() / 4;
    let src = element.as_ptr();
    let mut k = 0usize;
    // SAFETY: loads read code units k..k + 8 < w of `element` (any alignment: byte loads),
    // stores write bytes k..k + 8 < w of `dst`.
    let any = unsafe {
        let mut acc = vdupq_n_u32(0);
        while k + 8 <= w {
            let a = vreinterpretq_u32_u8(vld1q_u8(src.add(4 * k)));
            let b = vreinterpretq_u32_u8(vld1q_u8(src.add(4 * k + 16)));
            acc = vorrq_u32(acc, vorrq_u32(a, b));
            vst1_u8(
                dst.add(k),
                vmovn_u16(vcombine_u16(vmovn_u32(a), vmovn_u32(b))),
            );
            k += 8;
        }
        vmaxvq_u32(acc)
    };
    if any >= 0x80 {
        return None;
    }
    while k < w {
        let u = crate::unit(element, k);
        if u >= 0x80 {
            return None;
        }
        // SAFETY: k < w.
        unsafe { *dst.add(k) = u as u8 };
        k += 1;
    }
    // The w bytes at `dst` are now the element's code units: drop the trailing zero bytes.
    // SAFETY: bytes 0..w were written above.
    Some(crate::trim_zero_bytes(unsafe {
        std::slice::from_raw_parts(dst, w)
    }))
}
