//! A global allocator for test binaries that counts the bytes live and their peak, so tests
//! can show that hostile input stays within bounded memory. Declare it in a test binary with
//! `#[global_allocator] static ALLOCATOR: counting_alloc::Counting = counting_alloc::Counting;`.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Forwards to the system allocator, counting.
pub struct Counting;

static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);
/// Held by a measurement, so that two tests of one binary do not measure each other.
static MEASURING: Mutex<()> = Mutex::new(());

/// A measurement: the peak of bytes allocated above what was live when it started.
pub struct Measure {
    before: usize,
    _one_at_a_time: std::sync::MutexGuard<'static, ()>,
}

impl Measure {
    /// Starts measuring (waiting for any other measurement of this binary to end).
    pub fn start() -> Self {
        let guard = MEASURING.lock().unwrap_or_else(|e| e.into_inner());
        let before = CURRENT.load(Ordering::Relaxed);
        PEAK.store(before, Ordering::Relaxed);
        Self {
            before,
            _one_at_a_time: guard,
        }
    }

    /// The peak so far, in bytes above the start.
    pub fn peak(&self) -> usize {
        PEAK.load(Ordering::Relaxed).saturating_sub(self.before)
    }
}

/// Held by a whole test of a measuring binary, so that no other test allocates while it
/// measures (the count is process-wide).
static ALONE: Mutex<()> = Mutex::new(());

/// Runs the caller alone among the tests that take this guard: take it first in every test of
/// a binary that measures.
pub fn alone() -> std::sync::MutexGuard<'static, ()> {
    ALONE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs `f` and returns its result with the peak of bytes it allocated.
pub fn peak_of<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let measure = Measure::start();
    let out = f();
    (out, measure.peak())
}

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
                let grown = new_size - layout.size();
                let now = CURRENT.fetch_add(grown, Ordering::Relaxed) + grown;
                PEAK.fetch_max(now, Ordering::Relaxed);
            } else {
                CURRENT.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
            }
        }
        p
    }
}
