//! Zarr tables and scans in plans that cross processes (Apache DataFusion Ballista): the
//! codecs that DataFusion's plan serialisation calls, wrapping Ballista's own.
//!
//! - A [`ZarrTable`](crate::provider::ZarrTable) travels (client → scheduler) as its store URL and
//!   options ([`ZarrLogicalCodec`]); the scheduler opens it again and plans the scan there.
//! - The scan travels (scheduler → executors) as the table plus the scan's plan: projection,
//!   units of each partition, pruning result, UTF-32 filters (as DataFusion physical
//!   expressions), limit, and which partitions the task reads ([`ZarrPhysicalCodec`]). The
//!   executor opens the table's metadata and reads exactly the units the plan names.
//!
//! Ballista 55 narrows a task's plan to the task's partitions only for leaves it knows (and
//! runs every partition of any other leaf in every task), so a table decoded here plans its
//! scans as a `DataSourceExec` whose file groups are the scan's partitions (see
//! `ZarrTable::for_cluster` and `scan::file_scan`): each task reads its own partitions' units,
//! and no unit is read twice. docs/scaling.md says what this means for a cluster.

mod codec;
mod wire;

pub use codec::{ZarrLogicalCodec, ZarrPhysicalCodec};
