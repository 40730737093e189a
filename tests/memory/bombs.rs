//! Decompression bombs are stopped at the size the metadata declares, not allocated first and
//! checked after: peak allocation, counted by this test binary's global allocator, stays
//! below 64 MiB while each chunk below would inflate to 256 MiB (or claims 1 TiB, or 2 GiB).
//!
//! One test runs the cases in turn, so that the process-wide peak belongs to one case at a
//! time (the test binary holds nothing else).

use zarr_test_support::*;

use zarr_test_support::counting_alloc;

fn malformed(name: &str) -> String {
    root()
        .join("tests/data/malformed")
        .join(name)
        .display()
        .to_string()
}

// The guard keeps other tests of this binary from allocating while this one measures; the
// test's runtime is its own, so holding it across awaits blocks nothing else.
#[allow(clippy::await_holding_lock)]
#[tokio::test]
async fn bombs_stop_at_the_declared_size() {
    let _alone = counting_alloc::alone();
    let cases = [
        ("gzip_bomb.zarr", "decompresses to more than the 4000 bytes"),
        ("zstd_bomb.zarr", "decompresses to more than the 4000 bytes"),
        (
            "zstd_lying_header.zarr",
            "decompresses to more than the 4000 bytes",
        ),
        (
            "blosc_bomb.zarr",
            "decompresses to more than the 4000 bytes",
        ),
        (
            "lzma_bomb.zarr",
            "lzma data decompresses to more than the 4000 bytes",
        ),
        (
            "pcodec_bomb.zarr",
            "pcodec data holds more than the 1000 numbers the chunk declares",
        ),
    ];
    for (store, message) in cases {
        let ctx = context();
        let sql = format!("SELECT * FROM read_zarr('{}')", malformed(store));
        let measure = counting_alloc::Measure::start();
        let e = query(&ctx, &sql).await.unwrap_err().to_string();
        let peak = measure.peak();
        assert!(e.contains(message), "{store}: {e}");
        assert!(e.contains("chunk c/0"), "{store}: names the chunk: {e}");
        assert!(peak < 64 << 20, "{store}: peak allocation {peak} bytes");
    }
}
