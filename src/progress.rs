//! Progress of scans, for progress bars: rows and chunks (work units) done out of the total.

use std::sync::atomic::{AtomicU64, Ordering};

/// Counters a scan advances as it finishes work units. Share one between a table and a
/// progress display with [`crate::ZarrTable::with_progress`].
#[derive(Debug, Default)]
pub struct ScanProgress {
    rows: AtomicU64,
    chunks: AtomicU64,
    total_rows: AtomicU64,
    total_chunks: AtomicU64,
}

impl ScanProgress {
    /// A fresh counter.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds the totals of a planned scan.
    pub fn add_planned(&self, rows: u64, chunks: u64) {
        self.total_rows.fetch_add(rows, Ordering::Relaxed);
        self.total_chunks.fetch_add(chunks, Ordering::Relaxed);
    }

    /// Records a finished work unit of `rows` rows.
    pub fn add_done(&self, rows: u64) {
        self.rows.fetch_add(rows, Ordering::Relaxed);
        self.chunks.fetch_add(1, Ordering::Relaxed);
    }

    /// (rows done, total rows, chunks done, total chunks).
    pub fn snapshot(&self) -> (u64, u64, u64, u64) {
        (
            self.rows.load(Ordering::Relaxed),
            self.total_rows.load(Ordering::Relaxed),
            self.chunks.load(Ordering::Relaxed),
            self.total_chunks.load(Ordering::Relaxed),
        )
    }
}
