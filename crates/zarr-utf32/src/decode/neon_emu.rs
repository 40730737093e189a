//! Scalar stand-ins, with the signatures of `core::arch::aarch64`, for the NEON intrinsics
//! that `neon.rs` uses, so that its logic is tested on targets without NEON. Little-endian
//! lane order, as on aarch64.
#![allow(non_camel_case_types)]

#[derive(Clone, Copy)]
pub(crate) struct uint8x16_t([u8; 16]);
#[derive(Clone, Copy)]
pub(crate) struct uint32x4_t([u32; 4]);
#[derive(Clone, Copy)]
pub(crate) struct uint16x4_t([u16; 4]);
#[derive(Clone, Copy)]
pub(crate) struct uint16x8_t([u16; 8]);
#[derive(Clone, Copy)]
pub(crate) struct uint8x8_t([u8; 8]);

pub(crate) unsafe fn vld1q_u8(ptr: *const u8) -> uint8x16_t {
    // SAFETY: the caller guarantees 16 readable bytes.
    uint8x16_t(unsafe { ptr.cast::<[u8; 16]>().read_unaligned() })
}

pub(crate) unsafe fn vst1_u8(ptr: *mut u8, a: uint8x8_t) {
    // SAFETY: the caller guarantees 8 writable bytes.
    unsafe { ptr.cast::<[u8; 8]>().write_unaligned(a.0) }
}

pub(crate) fn vreinterpretq_u32_u8(a: uint8x16_t) -> uint32x4_t {
    let b = a.0;
    uint32x4_t(std::array::from_fn(|i| {
        u32::from_le_bytes([b[4 * i], b[4 * i + 1], b[4 * i + 2], b[4 * i + 3]])
    }))
}

pub(crate) fn vdupq_n_u32(value: u32) -> uint32x4_t {
    uint32x4_t([value; 4])
}

pub(crate) fn vorrq_u32(a: uint32x4_t, b: uint32x4_t) -> uint32x4_t {
    uint32x4_t(std::array::from_fn(|i| a.0[i] | b.0[i]))
}

pub(crate) fn vmaxvq_u32(a: uint32x4_t) -> u32 {
    a.0.into_iter().fold(0, u32::max)
}

pub(crate) fn vmovn_u32(a: uint32x4_t) -> uint16x4_t {
    uint16x4_t(a.0.map(|x| x as u16))
}

pub(crate) fn vcombine_u16(low: uint16x4_t, high: uint16x4_t) -> uint16x8_t {
    uint16x8_t(std::array::from_fn(|i| {
        if i < 4 { low.0[i] } else { high.0[i - 4] }
    }))
}

pub(crate) fn vmovn_u16(a: uint16x8_t) -> uint8x8_t {
    uint8x8_t(a.0.map(|x| x as u8))
}
