//! The bytes a Zarr table or scan becomes inside a serialised plan: a tag, then JSON.
//!
//! JSON (through serde) rather than protobuf: the payload is small, read once per task, and a
//! person debugging a cluster can read it. Filters are the one binary part: DataFusion's
//! protobuf form of a physical expression, the only form another process can rebuild.

use std::ops::Range;

use serde::{Deserialize, Serialize};

use crate::error::{Result, ZarrError};
use crate::options::ZarrOptions;
use crate::table::TableModel;

/// The first bytes of a table payload. The leading 0 byte keeps it apart from Ballista's
/// payloads: a protobuf message never starts with it (field number 0 does not exist).
pub(super) const TABLE_TAG: &[u8] = b"\0zarr-table-v1\0";
/// The first bytes of a scan payload (see [`TABLE_TAG`]).
pub(super) const SCAN_TAG: &[u8] = b"\0zarr-scan-v2\0";

/// A table: where it is and how to open it.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct TableWire {
    /// The store URL as opened (a local path is already an absolute `file://` URL).
    pub(super) location: String,
    /// Every option, storage options included (see docs/scaling.md on credentials).
    pub(super) options: Vec<(String, String)>,
}

impl TableWire {
    pub(super) fn of(model: &TableModel) -> Self {
        Self {
            location: model.store.url().to_string(),
            options: model.options.to_pairs(),
        }
    }

    pub(super) fn options(&self) -> Result<ZarrOptions> {
        ZarrOptions::from_pairs(self.options.iter().map(|(k, v)| (k, v)))
    }
}

/// A UTF-32 filter: the physical expression it was parsed from, and how EXPLAIN shows it.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct FilterWire {
    /// DataFusion's `PhysicalExprNode`, protobuf-encoded.
    pub(super) expr: Vec<u8>,
    pub(super) display: String,
}

/// A planned scan (see `crate::scan::ScanParts`) and the part of it one task reads.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct ScanWire {
    pub(super) table: TableWire,
    pub(super) projection: Vec<usize>,
    /// Each partition's units, as `[start, end)` runs of unit ids.
    pub(super) partitions: Vec<Vec<(u64, u64)>>,
    /// The units left after pruning, as runs, of `total`.
    pub(super) selected: Vec<(u64, u64)>,
    pub(super) total: u64,
    pub(super) pruning_predicate: Option<String>,
    pub(super) filters: Vec<FilterWire>,
    pub(super) partition_rows: Vec<Option<u64>>,
    pub(super) total_rows: Option<u64>,
    pub(super) limit: Option<usize>,
    /// The partitions each file group of this task's plan reads (indices into `partitions`).
    pub(super) groups: Vec<Vec<usize>>,
    /// The file scan's row limit (DataFusion's, which may be below the planned `limit`).
    pub(super) fetch: Option<usize>,
}

/// `runs` as pairs.
pub(super) fn pairs(runs: &[Range<u64>]) -> Vec<(u64, u64)> {
    runs.iter().map(|r| (r.start, r.end)).collect()
}

/// `pairs` as runs.
pub(super) fn runs(pairs: &[(u64, u64)]) -> Vec<Range<u64>> {
    pairs.iter().map(|&(start, end)| start..end).collect()
}

/// `tag` and `value` as JSON, appended to `buf`.
pub(super) fn write<T: Serialize>(tag: &[u8], value: &T, buf: &mut Vec<u8>) -> Result<()> {
    buf.extend_from_slice(tag);
    serde_json::to_writer(buf, value)
        .map_err(|e| ZarrError::internal(format!("serialising a Zarr plan node: {e}")))
}

/// The value after `tag` in `buf`, or `None` when `buf` does not start with `tag` (another
/// codec's payload).
pub(super) fn read<'a, T: Deserialize<'a>>(tag: &[u8], buf: &'a [u8]) -> Option<Result<T>> {
    let payload = buf.strip_prefix(tag)?;
    Some(serde_json::from_slice(payload).map_err(|e| {
        ZarrError::internal(format!(
            "a serialised Zarr plan node is not readable (a different datafusion-zarr version?): {e}"
        ))
    }))
}
