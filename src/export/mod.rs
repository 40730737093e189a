//! Parquet export: the options, a temporary file beside the target renamed into place only
//! when complete (so a failed or cancelled export leaves no partial file and never damages an
//! existing one), and the writer: the workspace's `parquet-stream-writer` crate (row groups
//! encoded in parallel, our encoders for strings and numbers; [`write_parquet`]), or
//! DataFusion's Parquet sink where the session must write the file itself, as on a cluster
//! ([`write_parquet_with_sink`]).
//!
//! ```no_run
//! # async fn demo() -> datafusion::error::Result<()> {
//! use std::sync::Arc;
//! use datafusion::prelude::SessionContext;
//! use datafusion_zarr::export::{ParquetExport, write_parquet};
//! use datafusion_zarr::{ZarrOptions, ZarrTable};
//!
//! let ctx = SessionContext::new();
//! let table = ZarrTable::open(&ctx.runtime_env(), "data.zarr", ZarrOptions::default()).await?;
//! let export = ParquetExport::for_table(&table);
//! ctx.register_table("t", Arc::new(table))?;
//! let df = ctx.sql("SELECT * FROM t WHERE value LIKE 'Ber%'").await?;
//! let rows = write_parquet(df, "berlin.parquet".as_ref(), &export).await?;
//! # Ok(()) }
//! ```

mod copy;
mod parquet_export;
mod parquet_file;

pub use crate::staging::AtomicTarget;
pub use copy::{ParquetFormatWithZarrWriter, ParquetFormatWithZarrWriterFactory};
pub use parquet_export::{
    ParquetCompression, ParquetExport, export_frame, parallel_row_groups, write_parquet,
    write_parquet_with_sink,
};
