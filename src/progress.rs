//! Progress of scans, for progress bars: a small trait the scan reports to, and a counter that
//! implements it for displays that poll.

use std::sync::atomic::{AtomicU64, Ordering};

/// What a scan reports as it runs. Attach one to a table with `ZarrTable::with_progress`;
/// every scan of that table then reports to it (from several partitions at once).
pub trait ScanProgress: Send + Sync + std::fmt::Debug {
    /// A scan was planned that will read `rows` rows in `chunks` work units.
    fn planned(&self, rows: u64, chunks: u64);
    /// A work unit (a chunk of the table's grid) of `rows` rows was read.
    fn unit_done(&self, rows: u64);
}

/// A [`ScanProgress`] that counts, for a display that polls [`ProgressCounter::snapshot`].
///
/// ```
/// use datafusion_zarr::{ProgressCounter, ScanProgress};
/// let counter = ProgressCounter::new();
/// counter.planned(100, 2);
/// counter.unit_done(60);
/// let now = counter.snapshot();
/// assert_eq!((now.rows, now.total_rows, now.chunks, now.total_chunks), (60, 100, 1, 2));
/// ```
#[derive(Debug, Default)]
pub struct ProgressCounter {
    rows: AtomicU64,
    chunks: AtomicU64,
    total_rows: AtomicU64,
    total_chunks: AtomicU64,
}

/// The counts of a [`ProgressCounter`] at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ProgressSnapshot {
    /// Rows read.
    pub rows: u64,
    /// Rows planned.
    pub total_rows: u64,
    /// Work units read.
    pub chunks: u64,
    /// Work units planned.
    pub total_chunks: u64,
}

impl ProgressCounter {
    /// A counter at zero.
    pub fn new() -> Self {
        Self::default()
    }

    /// The counts now.
    pub fn snapshot(&self) -> ProgressSnapshot {
        ProgressSnapshot {
            rows: self.rows.load(Ordering::Relaxed),
            total_rows: self.total_rows.load(Ordering::Relaxed),
            chunks: self.chunks.load(Ordering::Relaxed),
            total_chunks: self.total_chunks.load(Ordering::Relaxed),
        }
    }
}

impl ScanProgress for ProgressCounter {
    fn planned(&self, rows: u64, chunks: u64) {
        self.total_rows.fetch_add(rows, Ordering::Relaxed);
        self.total_chunks.fetch_add(chunks, Ordering::Relaxed);
    }

    fn unit_done(&self, rows: u64) {
        self.rows.fetch_add(rows, Ordering::Relaxed);
        self.chunks.fetch_add(1, Ordering::Relaxed);
    }
}
