//! `ZarrTable.to_parquet`: a table's rows written to a Parquet file by the crate's export (the
//! rows of `zarr-sql export`: columns, a SQL predicate, index order, our writer, the Zarr
//! metadata in the footer, the target replaced atomically), run on our runtime.

use std::path::PathBuf;
use std::sync::Arc;

use datafusion::error::Result;
use datafusion::prelude::{SessionConfig, SessionContext};
use datafusion_zarr::ZarrTable;
use datafusion_zarr::export::{ParquetCompression, ParquetExport, export_frame, write_parquet};

/// What `to_parquet` was asked for.
pub struct ToParquet {
    pub path: PathBuf,
    pub columns: Vec<String>,
    pub predicate: Option<String>,
    pub compression: ParquetCompression,
    pub compression_level: Option<u32>,
    pub row_group_size: Option<usize>,
    pub threads: Option<usize>,
}

impl ToParquet {
    /// Writes the file and returns the number of rows written. A session of our own runs it
    /// (a foreign datafusion-python session cannot run our writer), with as many partitions as
    /// `threads` (default: the cores).
    pub async fn run(self, table: ZarrTable) -> Result<u64> {
        let export = ParquetExport {
            compression: self.compression,
            compression_level: self.compression_level,
            row_group_size: self.row_group_size,
            parallelism: self.threads,
            ..ParquetExport::for_table(&table)
        };
        let mut config = SessionConfig::new();
        if let Some(threads) = self.threads {
            config = config.with_target_partitions(threads.max(1));
        }
        let ctx = SessionContext::new_with_config(config);
        datafusion_zarr::register(&ctx);
        let df = export_frame(
            &ctx,
            Arc::new(table),
            &self.columns,
            self.predicate.as_deref(),
        )?;
        write_parquet(df, &self.path, &export).await
    }
}
