//! UTF-32 → Arrow string kernels, side by side, in bytes of UTF-32 input per second.
//!
//! ```text
//! cargo bench -p zarr-utf32 --features bench-simdutf --bench kernel -- --warm-up-time 1 --measurement-time 3
//! ```
//!
//! (Without `--features bench-simdutf` the simdutf reference, which compiles C++, is left
//! out.) `ZARR_UTF32_BENCH_ELEMENTS` sets the number of elements (default 1,048,576 of 64
//! bytes: 64 MiB of input per run).
//!
//! Inputs, all of width 64 bytes (16 code units), lengths uniform in 1..=16 unless noted:
//! `ascii`; `mostly_ascii` (5% of characters accented Latin, 2-byte UTF-8); `cjk` (3-byte);
//! `emoji` (70% emoji, 4-byte, 30% ASCII); `empty_or_full` (half empty, half 16 ASCII).
//!
//! Each input runs through:
//! - `zarr_utf32` — `to_utf8::<i32>` (the path printed first: avx2, neon or scalar);
//! - `zarr_utf32_scalar` — `to_utf8_scalar::<i32>`, the portable encoder;
//! - `zarr_utf32_view` — `to_utf8_view`;
//! - `simdutf` — simdutf's `convert_utf32_to_utf8` on the same padded buffer as one string
//!   (validation included, no trimming, no offsets; the padding comes out as `0x00` bytes)
//!   into a freshly allocated buffer of the same upper bound as ours: the reference
//!   transcoder. simdutf picks its own kernel at run time (AVX-512 "icelake" where available);
//! - `char_loop` — `char::from_u32` per code unit into a `String`, trimmed, appended to a
//!   `StringBuilder` one element at a time: what a straightforward reader does;
//! - `memcpy` — copying the input bytes into a buffer allocated (and touched) once, outside
//!   the timing: the memory-bandwidth limit. The others allocate their output on every run,
//!   as a reader must, and so also pay the page faults of fresh memory.

use std::hint::black_box;

use arrow_array::builder::StringBuilder;
use criterion::{BenchmarkId, Criterion, Throughput};
use zarr_utf32::{InvalidUtf32, kernel_path, to_utf8, to_utf8_scalar, to_utf8_view};

#[path = "common/inputs.rs"]
mod inputs;

use inputs::{UNITS, WIDTH};

/// The inputs as native-endian code units, each element padded to [`UNITS`].
fn inputs(n: usize) -> Vec<(&'static str, Vec<u32>)> {
    inputs::strings(n)
        .into_iter()
        .map(|(name, strings)| {
            let mut units = Vec::with_capacity(n * UNITS);
            for s in &strings {
                let start = units.len();
                units.extend(s.chars().map(u32::from));
                units.resize(start + UNITS, 0);
            }
            (name, units)
        })
        .collect()
}

/// What a straightforward reader does: one `String` per element, one append per element.
fn char_loop(input: &[u8]) -> arrow_array::StringArray {
    let n = input.len() / WIDTH;
    let mut builder = StringBuilder::with_capacity(n, input.len());
    let mut s = String::with_capacity(WIDTH);
    for element in input.chunks_exact(WIDTH) {
        s.clear();
        for b in element.chunks_exact(4) {
            let u = u32::from_ne_bytes([b[0], b[1], b[2], b[3]]);
            s.push(char::from_u32(u).unwrap_or('\u{FFFD}'));
        }
        builder.append_value(s.trim_end_matches('\0'));
    }
    builder.finish()
}

#[cfg(feature = "bench-simdutf")]
fn simdutf(units: &[u32]) -> Vec<u8> {
    let mut out: Vec<u8> = Vec::with_capacity(units.len() * 4);
    // SAFETY: `units` is aligned and valid for `units.len()` code units; UTF-8 takes at most
    // 4 bytes per UTF-32 code unit, so `out` has room for the whole output.
    let written =
        unsafe { simdutf::convert_utf32_to_utf8(units.as_ptr(), units.len(), out.as_mut_ptr()) };
    assert!(
        written > 0 || units.is_empty(),
        "simdutf rejected the input"
    );
    // SAFETY: simdutf wrote `written` bytes.
    unsafe { out.set_len(written) };
    out
}

fn main() {
    let n: usize = std::env::var("ZARR_UTF32_BENCH_ELEMENTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1 << 20);
    println!(
        "zarr-utf32 kernel path: {} ({n} elements of {WIDTH} bytes)",
        kernel_path()
    );
    let mut c = Criterion::default().sample_size(10).configure_from_args();
    let mut copy_dst = vec![0u8; n * WIDTH];
    for (name, units) in inputs(n) {
        let bytes: Vec<u8> = units.iter().flat_map(|u| u.to_ne_bytes()).collect();
        let input = bytes.as_slice();
        let mut group = c.benchmark_group(name);
        group.throughput(Throughput::Bytes(input.len() as u64));
        group.bench_function(BenchmarkId::new("zarr_utf32", name), |b| {
            b.iter(|| to_utf8::<i32>(black_box(input), WIDTH, InvalidUtf32::Error, None))
        });
        group.bench_function(BenchmarkId::new("zarr_utf32_scalar", name), |b| {
            b.iter(|| to_utf8_scalar::<i32>(black_box(input), WIDTH, InvalidUtf32::Error, None))
        });
        group.bench_function(BenchmarkId::new("zarr_utf32_view", name), |b| {
            b.iter(|| to_utf8_view(black_box(input), WIDTH, InvalidUtf32::Error, None))
        });
        #[cfg(feature = "bench-simdutf")]
        group.bench_function(BenchmarkId::new("simdutf", name), |b| {
            b.iter(|| simdutf(black_box(&units)))
        });
        group.bench_function(BenchmarkId::new("char_loop", name), |b| {
            b.iter(|| char_loop(black_box(input)))
        });
        group.bench_function(BenchmarkId::new("memcpy", name), |b| {
            b.iter(|| {
                copy_dst.copy_from_slice(black_box(input));
                black_box(copy_dst.as_ptr());
            })
        });
        group.finish();
    }
    c.final_summary();
}
