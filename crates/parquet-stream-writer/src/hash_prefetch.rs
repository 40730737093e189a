//! A software prefetch, for the dictionary encoders' hash tables (`strings.rs`, `numbers.rs`),
//! which are larger than L2: a batch of rows prefetches its slots before probing them, so that
//! the cache misses overlap. A demand load instead (tried) stalls the reorder buffer on each
//! miss, and std has no stable safe prefetch.

/// Asks the CPU to bring the cache line holding `value` closer, without waiting for it.
#[inline(always)]
pub(super) fn prefetch<T>(value: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `_mm_prefetch` needs SSE, which every x86_64 CPU has; a prefetch never faults
    // and reads nothing into the program, and `value` is a valid reference anyway.
    unsafe {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        _mm_prefetch::<_MM_HINT_T0>((value as *const T).cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = value;
}
