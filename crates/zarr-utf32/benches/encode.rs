//! Arrow string → padded UTF-32 kernels (the writer's direction), side by side, in bytes of
//! UTF-8 input per second.
//!
//! ```text
//! cargo bench -p zarr-utf32 --features bench-simdutf --bench encode -- --warm-up-time 1 --measurement-time 3
//! ```
//!
//! (Without `--features bench-simdutf` the simdutf reference, which compiles C++, is left
//! out.) `ZARR_UTF32_BENCH_ELEMENTS` sets the number of elements (default 1,048,576).
//!
//! The inputs are those of `benches/kernel.rs`, as `StringArray`s, encoded at width 64 bytes
//! (16 code units), lengths uniform in 1..=16 code points unless noted: `ascii`;
//! `mostly_ascii` (5% of characters accented Latin, 2-byte UTF-8); `cjk` (3-byte); `emoji`
//! (70% emoji, 4-byte, 30% ASCII); `empty_or_full` (half empty, half 16 ASCII).
//!
//! Each input runs through:
//! - `zarr_utf32` — `utf8_to_utf32` into a fresh `Vec` (`array.len() * 64` bytes, the padding
//!   included; the path printed first: avx2 or scalar);
//! - `zarr_utf32_reused` — the same into a `Vec` cleared and reused from run to run, as a
//!   writer that encodes chunk after chunk can do: no page faults;
//! - `zarr_utf32_scalar` — the portable encoder, into a fresh `Vec`;
//! - `simdutf` — simdutf's `convert_utf8_to_utf32` on the whole values buffer as one string,
//!   into a freshly allocated buffer of one code unit per input byte (the upper bound): the
//!   reference transcoder. No padding, no offsets, no per-element work: it writes 4 bytes per
//!   character where the others write 64 per element. simdutf picks its own kernel at run
//!   time (AVX-512 "icelake" where available);
//! - `simdutf_reused` — the same into a buffer allocated once: its transcoding alone, to set
//!   beside `zarr_utf32_reused`;
//! - `chars_loop` — `chars()` per element, each pushed as 4 bytes, then the padding: what a
//!   straightforward writer does;
//! - `memcpy` — copying the UTF-8 values into a buffer allocated (and touched) once, outside
//!   the timing: the memory-bandwidth limit of reading the input.

use std::hint::black_box;

use arrow_array::{Array, StringArray};
use criterion::{BenchmarkId, Criterion, Throughput};
use zarr_utf32::encode::{kernel_path, utf8_to_utf32_scalar};
use zarr_utf32::{ByteOrder, Overflow, utf8_to_utf32};

#[path = "common/inputs.rs"]
mod inputs;

use inputs::{UNITS, WIDTH};

fn inputs(n: usize) -> Vec<(&'static str, StringArray)> {
    inputs::strings(n)
        .into_iter()
        .map(|(name, strings)| (name, StringArray::from(strings)))
        .collect()
}

/// What a straightforward writer does: `chars()` per element, then the padding.
fn chars_loop(array: &StringArray) -> Vec<u8> {
    let mut out = Vec::with_capacity(array.len() * WIDTH);
    for s in array.iter() {
        let start = out.len();
        for c in s.unwrap_or("").chars().take(UNITS) {
            out.extend_from_slice(&u32::from(c).to_le_bytes());
        }
        out.resize(start + WIDTH, 0);
    }
    out
}

#[cfg(feature = "bench-simdutf")]
fn simdutf(utf8: &[u8]) -> Vec<u32> {
    let mut out: Vec<u32> = Vec::with_capacity(utf8.len());
    simdutf_into(utf8, &mut out);
    out
}

/// simdutf's transcoding of `utf8` into `out`, emptied first.
#[cfg(feature = "bench-simdutf")]
fn simdutf_into(utf8: &[u8], out: &mut Vec<u32>) {
    out.clear();
    out.reserve(utf8.len());
    // SAFETY: `utf8` is valid for `utf8.len()` bytes; UTF-32 takes at most one code unit per
    // UTF-8 byte, so `out` has room for the whole output.
    let written =
        unsafe { simdutf::convert_utf8_to_utf32(utf8.as_ptr(), utf8.len(), out.as_mut_ptr()) };
    assert!(written > 0 || utf8.is_empty(), "simdutf rejected the input");
    // SAFETY: simdutf wrote `written` code units.
    unsafe { out.set_len(written) };
}

fn main() {
    let n: usize = std::env::var("ZARR_UTF32_BENCH_ELEMENTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1 << 20);
    println!(
        "zarr-utf32 encode path: {} ({n} elements, width {WIDTH} bytes)",
        kernel_path()
    );
    let mut c = Criterion::default().sample_size(10).configure_from_args();
    let mut reused: Vec<u8> = Vec::new();
    for (name, array) in inputs(n) {
        let utf8 = &array.values()[array.value_offsets()[0] as usize..];
        let mut copy_dst = vec![0u8; utf8.len()];
        let mut group = c.benchmark_group(name);
        group.throughput(Throughput::Bytes(utf8.len() as u64));
        let encode = |out: &mut Vec<u8>| {
            utf8_to_utf32(
                black_box(&array),
                WIDTH,
                ByteOrder::Little,
                Overflow::Error,
                out,
            )
        };
        group.bench_function(BenchmarkId::new("zarr_utf32", name), |b| {
            b.iter(|| {
                let mut out = Vec::new();
                encode(&mut out).unwrap();
                out
            })
        });
        group.bench_function(BenchmarkId::new("zarr_utf32_reused", name), |b| {
            b.iter(|| {
                reused.clear();
                encode(&mut reused).unwrap();
                black_box(reused.as_ptr());
            })
        });
        group.bench_function(BenchmarkId::new("zarr_utf32_scalar", name), |b| {
            b.iter(|| {
                let mut out = Vec::new();
                utf8_to_utf32_scalar(
                    black_box(&array),
                    WIDTH,
                    ByteOrder::Little,
                    Overflow::Error,
                    &mut out,
                )
                .unwrap();
                out
            })
        });
        #[cfg(feature = "bench-simdutf")]
        group.bench_function(BenchmarkId::new("simdutf", name), |b| {
            b.iter(|| simdutf(black_box(utf8)))
        });
        #[cfg(feature = "bench-simdutf")]
        {
            let mut simdutf_dst: Vec<u32> = Vec::with_capacity(utf8.len());
            group.bench_function(BenchmarkId::new("simdutf_reused", name), |b| {
                b.iter(|| simdutf_into(black_box(utf8), &mut simdutf_dst))
            });
        }
        group.bench_function(BenchmarkId::new("chars_loop", name), |b| {
            b.iter(|| chars_loop(black_box(&array)))
        });
        group.bench_function(BenchmarkId::new("memcpy", name), |b| {
            b.iter(|| {
                copy_dst.copy_from_slice(black_box(utf8));
                black_box(copy_dst.as_ptr());
            })
        });
        group.finish();
    }
    c.final_summary();
}
