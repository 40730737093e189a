//! Zarr tables and scans in plans that cross processes (Apache DataFusion Ballista): the
//! codecs that DataFusion's plan serialisation calls, wrapping Ballista's own.
//!
//! - A [`ZarrTable`](crate::ZarrTable) travels (client → scheduler) as its store URL and
//!   options ([`ZarrLogicalCodec`]); the scheduler opens it again and plans the scan there.
//! - A [`ZarrScanExec`](crate::ZarrScanExec) travels (scheduler → executors) as the table
//!   plus the scan's plan: projection, units of each partition, pruning result, UTF-32
//!   filters (as DataFusion physical expressions), limit ([`ZarrPhysicalCodec`]). The
//!   executor opens the table's metadata and reads exactly the units the plan names.
//!
//! Ballista 55 gives every task a copy of its stage's plan and runs all partitions of a leaf
//! it does not know how to divide; a table decoded here therefore plans its scans as one
//! partition read by several lanes (see `ZarrTable::with_one_partition`), so no unit is read
//! twice. docs/scaling.md says what this means for a cluster.

mod codec;
mod wire;

pub use codec::{ZarrLogicalCodec, ZarrPhysicalCodec};
