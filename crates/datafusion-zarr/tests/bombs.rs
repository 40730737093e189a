//! Decompression bombs are stopped at the size the metadata declares, not allocated first and
//! checked after: peak allocation, counted by this test binary's global allocator, stays
//! below 64 MiB while each chunk below would inflate to 256 MiB (or claims 1 TiB, or 2 GiB).
//!
//! One test runs the cases in turn, so that the process-wide peak belongs to one case at a
//! time (the test binary holds nothing else).

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use common::*;

struct Counting;

static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded unchanged to the system allocator.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let now = CURRENT.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.dealloc(ptr, layout) };
        CURRENT.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded unchanged to the system allocator.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            if new_size > layout.size() {
                let now = CURRENT.fetch_add(new_size - layout.size(), Ordering::Relaxed) + new_size
                    - layout.size();
                PEAK.fetch_max(now, Ordering::Relaxed);
            } else {
                CURRENT.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
            }
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn malformed(name: &str) -> String {
    root()
        .join("tests/data/malformed")
        .join(name)
        .display()
        .to_string()
}

#[tokio::test]
async fn bombs_stop_at_the_declared_size() {
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
    ];
    for (store, message) in cases {
        let ctx = context();
        let sql = format!("SELECT * FROM read_zarr('{}')", malformed(store));
        let before = CURRENT.load(Ordering::Relaxed);
        PEAK.store(before, Ordering::Relaxed);
        let e = query(&ctx, &sql).await.unwrap_err().to_string();
        let peak = PEAK.load(Ordering::Relaxed).saturating_sub(before);
        assert!(e.contains(message), "{store}: {e}");
        assert!(e.contains("chunk c/0"), "{store}: names the chunk: {e}");
        assert!(peak < 64 << 20, "{store}: peak allocation {peak} bytes");
    }
}
