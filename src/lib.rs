//! # datafusion-zarr
//!
//! Zarr V3 `fixed_length_utf32` string arrays (NumPy's `<U`/`>U`, Zarr V2's native strings) and
//! the arrays beside them as Apache Arrow tables in DataFusion.
//!
//! ```
//! # async fn demo() -> datafusion::error::Result<()> {
//! use datafusion::prelude::SessionContext;
//! let ctx = SessionContext::new();
//! datafusion_zarr::register(&ctx); // STORED AS ZARR and read_zarr(...)
//! let df = ctx
//!     .sql("SELECT * FROM read_zarr('tests/data/corpus/00_zarr_python_defaults_U7/data.zarr')")
//!     .await?;
//! assert_eq!(df.count().await?, 8);
//! # Ok(()) }
//! # tokio::runtime::Runtime::new().unwrap().block_on(demo()).unwrap();
//! ```
//!
//! ## The public API
//! - [`register`]: `CREATE EXTERNAL TABLE … STORED AS ZARR` ([`ZarrTableFactory`]) and the
//!   table function `read_zarr` ([`ReadZarrFunction`]) in a session.
//! - [`ZarrSessionOptions`]: the session defaults `SET zarr.<option> = '…'` gives them.
//! - [`ZarrTable`]: the `TableProvider` of one array or group, opened from a location and
//!   [`ZarrOptions`]; [`ZarrScanExec`] is the physical plan node its scans produce.
//! - [`ScanProgress`] (a trait) and [`ProgressCounter`]: progress of scans, for progress bars.
//! - [`export`]: Parquet output that replaces its target only when complete.
//! - [`inspect`]: the tree of a store's groups and arrays and the tables they map to, as JSON.
//! - [`ZarrError`]: what the reader rejects, naming the array, the chunk and the rule.
//! - `distributed` (feature `ballista`): the codecs that carry tables and scans through a
//!   Ballista cluster's plans.
//!
//! Everything else is private to the crate. Inside, the data flows `store` → `node` → `table`
//! → `scan` → DataFusion; see docs/architecture.md. The transcoding kernels live in the
//! `zarr-utf32` crate of this workspace.

#![warn(missing_docs)]

#[doc(hidden)]
pub mod bench_support;
mod cf;
mod codecs;
mod declare;
#[cfg(feature = "ballista")]
pub mod distributed;
mod error;
pub mod export;
mod factory;
pub mod field_metadata;
#[doc(hidden)]
pub mod fuzzing;
mod icechunk;
mod inspect;
mod limits;
mod node;
mod object_stores;
mod optimizer;
mod options;
mod progress;
mod provider;
mod read_only_store;
mod references;
mod scan;
mod session_options;
mod staging;
mod store;
mod store_version;
mod table;
pub mod write;

#[cfg(doctest)]
mod doc_examples;

use std::sync::Arc;

use datafusion::execution::SessionStateBuilder;
use datafusion::prelude::SessionContext;

pub use error::{Result, ZarrError, error_message};
pub use factory::{ReadZarrFunction, ZarrTableFactory};
#[cfg(feature = "icechunk")]
pub use icechunk::{
    IcechunkRefsFunction, IcechunkSnapshotsFunction, icechunk_refs, icechunk_snapshots,
};
pub use inspect::inspect;
pub use object_stores::{STORAGE_PREFIXES, StorageOptions, shown_location, supported_schemes};
pub use optimizer::{OrderedZarrScan, in_unit_order};
pub use options::{InvalidUtf32, OptionDoc, StringType, ZarrOptions};
pub use progress::{ProgressCounter, ProgressSnapshot, ScanProgress};
pub use provider::ZarrTable;
pub use scan::ZarrScanExec;
pub use session_options::ZarrSessionOptions;

/// Registers `STORED AS ZARR` (reading, and writing with `COPY`), the `read_zarr` table function, the [`OrderedZarrScan`]
/// physical optimizer rule and, for the `parquet` extension, DataFusion's Parquet format with
/// our writer for `COPY` to one local file ([`export::ParquetFormatWithZarrWriterFactory`]) on
/// `ctx`, and the `zarr.*` session options that `SET` changes ([`ZarrSessionOptions`])
/// (registering twice changes nothing, values set included).
pub fn register(ctx: &SessionContext) {
    {
        let state_ref = ctx.state_ref();
        let mut state = state_ref.write();
        // SET zarr.<option> = '…': session defaults (session_options.rs), kept if set.
        let options = state.config_mut().options_mut();
        if options.extensions.get::<ZarrSessionOptions>().is_none() {
            options.extensions.insert(ZarrSessionOptions::new());
        }
        state
            .table_factories_mut()
            .insert("ZARR".to_string(), Arc::new(ZarrTableFactory));
        // COPY … TO 'x.parquet' through the export's writer (export/copy.rs).
        let parquet = Arc::new(export::ParquetFormatWithZarrWriterFactory::default());
        if let Err(e) = state.register_file_format(parquet, true) {
            log::warn!("COPY to Parquet keeps DataFusion's writer: {e}");
        }
        // COPY … TO 'out.zarr' STORED AS ZARR (write/format.rs).
        if let Err(e) = state.register_file_format(Arc::new(write::ZarrFormatFactory), true) {
            log::warn!("COPY … STORED AS ZARR is not available: {e}");
        }
        let has_rule = state
            .physical_optimizers()
            .iter()
            .any(|rule| rule.name() == OrderedZarrScan::NAME);
        if !has_rule {
            // A session's physical optimizer rules are fixed once built: rebuild it with ours.
            *state = SessionStateBuilder::new_from_existing(state.clone())
                .with_physical_optimizer_rule(Arc::new(OrderedZarrScan))
                .build();
        }
    }
    ctx.register_udtf("read_zarr", Arc::new(ReadZarrFunction));
    #[cfg(feature = "icechunk")]
    {
        ctx.register_udtf("icechunk_snapshots", Arc::new(IcechunkSnapshotsFunction));
        ctx.register_udtf("icechunk_refs", Arc::new(IcechunkRefsFunction));
    }
}
