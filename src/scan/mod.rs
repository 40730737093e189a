//! The scan: [`ZarrScanExec`] divides the table's work units (the chunks of its grid array)
//! into partitions (plain ranges of unit ids) and streams each one.
//!
//! Its rooms: [`filter`] (the filters, physical once), [`pruning`] (filters → units before
//! the scan), [`dynamic`] (DataFusion's runtime filters → units during it), [`raw_filter`]
//! (string predicates on UTF-32), [`decoded_filter`] (any predicate on value columns, before
//! the other columns are read), [`grid`] (geometry), [`fetch`] (encoded chunks from the
//! store), [`fetch_ahead`] (fetching the next units while one decodes), [`read`] (decode and
//! assemble regions), [`convert`] (elements → Arrow; CF numbers decoded by the crate's `cf`),
//! [`coordinates`] (a unit's coordinate values → a batch's coordinate columns), [`stream`]
//! (one partition's batches), [`ordered`] (one partition in index order from several decoding
//! lanes), [`file_scan`] (the scan as a `DataSourceExec` a cluster divides among its
//! executors).

mod convert;
mod coordinates;
mod decoded_filter;
mod dynamic;
mod exec;
mod fetch;
mod fetch_ahead;
mod file_scan;
mod filter;
mod grid;
mod ordered;
mod pruning;
mod raw_filter;
mod read;
mod stream;

pub(crate) use decoded_filter::DecodedFilter;
#[cfg(feature = "ballista")]
pub(crate) use exec::ScanParts;
pub use exec::ZarrScanExec;
pub(crate) use exec::{exact_rows, row_order};
#[cfg(feature = "ballista")]
pub(crate) use file_scan::{FileScanParts, file_scan_parts};
pub(crate) use filter::ScanFilter;
pub(crate) use grid::{UnitGrid, unravel};
pub(crate) use pruning::{ChunkSelection, MAX_PLANNED_UNITS, select_chunks};
pub(crate) use raw_filter::RawFilter;
pub(crate) use read::{Elements, decode_chunk, read_chunk};
