//! The export's entry points: its options ([`ParquetExport`], [`ParquetCompression`]), the rows an
//! export of a table writes, and writing them to a Parquet file atomically with our writer
//! or with DataFusion's sink.

use std::path::Path;
use std::sync::Arc;

use datafusion::common::config::{ParquetOptions, TableParquetOptions};
use datafusion::dataframe::DataFrameWriteOptions;
use datafusion::datasource::provider_as_source;
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::LogicalPlanBuilder;
use datafusion::physical_plan::{ExecutionPlanProperties, execute_stream};
use datafusion::prelude::{DataFrame, SessionContext, ident};

use super::parquet_file::{sorting_columns, write_stream_to};
use crate::provider::ZarrTable;
use crate::staging::AtomicTarget;

/// Parquet compression codecs offered by `zarr-sql export`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ParquetCompression {
    /// zstd (the default).
    #[default]
    Zstd,
    /// Snappy.
    Snappy,
    /// LZ4, written as Parquet's `LZ4_RAW`.
    Lz4,
    /// Gzip.
    Gzip,
    /// No compression.
    None,
}

/// How to write the Parquet file.
#[derive(Debug, Clone, Default)]
pub struct ParquetExport {
    /// The codec.
    pub compression: ParquetCompression,
    /// The codec's level, where it has one (zstd 1–22, gzip 0–9).
    pub compression_level: Option<u32>,
    /// Rows per row group (DataFusion's default when `None`).
    pub row_group_size: Option<usize>,
    /// Key-value metadata stored in the file footer.
    pub metadata: Vec<(String, String)>,
    /// Columns written with `DELTA_BINARY_PACKED` and no dictionary: the index columns, runs of
    /// consecutive integers that this encoding stores in a few bits each (instead of 8 bytes
    /// each, plain, after a dictionary attempt that cannot succeed).
    pub delta_encoded: Vec<String>,
    /// Row groups encoded at once (by our writer, which keeps one more in flight so that no
    /// core waits while the oldest is finished, or by DataFusion's as [`parallel_row_groups`]
    /// tunes it); the number of cores when `None`.
    pub parallelism: Option<usize>,
}

/// Tunes DataFusion's parallel Parquet writer to encode `parallelism` row groups at once.
/// DataFusion encodes each column of a row group on its own task, fed through a queue of
/// `maximum_buffered_record_batches_per_stream` batches (default 2), and starts the next row
/// group only when the last batch of this one is queued: with the defaults the widest column
/// is encoded on one core at a time, however many the machine has. Queues that hold a whole
/// row group of `batch_size` batches (at most 256) let the scan run on into the next row group
/// while the previous ones are still encoded. Memory: about `parallelism` + 1 row groups of
/// Arrow data.
///
/// ```
/// use datafusion::common::config::ParquetOptions;
/// use datafusion_zarr::export::parallel_row_groups;
///
/// let mut options = ParquetOptions::default();
/// options.max_row_group_size = 1_000_000;
/// parallel_row_groups(&mut options, 4, 8192);
/// assert_eq!(options.maximum_parallel_row_group_writers, 4);
/// assert_eq!(options.maximum_buffered_record_batches_per_stream, 124);
/// ```
pub fn parallel_row_groups(options: &mut ParquetOptions, parallelism: usize, batch_size: usize) {
    let batches = options.max_row_group_size.div_ceil(batch_size.max(1));
    options.maximum_parallel_row_group_writers = parallelism.max(1);
    options.maximum_buffered_record_batches_per_stream = (batches + 1).clamp(2, 256);
}

impl std::str::FromStr for ParquetCompression {
    type Err = String;

    /// Parses one of [`ParquetCompression::NAMES`] (case-insensitive).
    fn from_str(name: &str) -> std::result::Result<Self, String> {
        match name.to_ascii_lowercase().as_str() {
            "zstd" => Ok(ParquetCompression::Zstd),
            "snappy" => Ok(ParquetCompression::Snappy),
            "lz4" | "lz4_raw" => Ok(ParquetCompression::Lz4),
            "gzip" => Ok(ParquetCompression::Gzip),
            "none" | "uncompressed" => Ok(ParquetCompression::None),
            _ => Err(format!(
                "compression '{name}' is not one of {}",
                ParquetCompression::NAMES.join(", ")
            )),
        }
    }
}

impl ParquetCompression {
    /// The names [`ParquetCompression`] parses from, as offered by `zarr-sql export --compression`.
    pub const NAMES: &[&str] = &["zstd", "snappy", "lz4", "gzip", "none"];
}

impl ParquetExport {
    /// The defaults for exporting `table`: its provenance in the footer (`zarr.store`,
    /// `zarr.path`, `zarr.metadata`) and its index columns delta-encoded.
    ///
    /// ```
    /// # async fn demo() -> datafusion_zarr::Result<()> {
    /// use datafusion::prelude::SessionContext;
    /// use datafusion_zarr::export::{ParquetCompression, ParquetExport};
    /// use datafusion_zarr::{ZarrOptions, ZarrTable};
    ///
    /// let ctx = SessionContext::new();
    /// let store = "tests/data/corpus/00_zarr_python_defaults_U7/data.zarr";
    /// let table = ZarrTable::open(&ctx.runtime_env(), store, ZarrOptions::default()).await?;
    /// let export = ParquetExport {
    ///     compression: ParquetCompression::Snappy,
    ///     ..ParquetExport::for_table(&table)
    /// };
    /// assert_eq!(export.delta_encoded, ["dim_0"]);
    /// assert_eq!(export.metadata[1], ("zarr.path".to_string(), String::new()));
    /// # Ok(()) }
    /// # tokio::runtime::Runtime::new().unwrap().block_on(demo()).unwrap();
    /// ```
    pub fn for_table(table: &ZarrTable) -> Self {
        Self {
            metadata: vec![
                ("zarr.store".into(), table.location().to_string()),
                ("zarr.path".into(), table.path().to_string()),
                ("zarr.metadata".into(), table.metadata().to_string()),
            ],
            delta_encoded: table
                .index_columns()
                .into_iter()
                .map(str::to_string)
                .collect(),
            ..Self::default()
        }
    }

    /// Row groups encoded at once: [`ParquetExport::parallelism`] or the number of cores.
    fn parallelism(&self) -> usize {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        self.parallelism.unwrap_or(cores)
    }

    /// DataFusion's writer options for this export.
    pub fn writer_options(&self) -> Result<TableParquetOptions> {
        let mut options = TableParquetOptions::default();
        let level = self.compression_level;
        options.global.compression = Some(match (self.compression, level) {
            (ParquetCompression::Zstd, Some(l)) => format!("zstd({l})"),
            (ParquetCompression::Zstd, None) => "zstd(3)".into(),
            (ParquetCompression::Gzip, Some(l)) => format!("gzip({l})"),
            (ParquetCompression::Gzip, None) => "gzip(6)".into(),
            (ParquetCompression::Snappy, None) => "snappy".into(),
            (ParquetCompression::Lz4, None) => "lz4_raw".into(),
            (ParquetCompression::None, None) => "uncompressed".into(),
            (c, Some(_)) => {
                return Err(DataFusionError::Configuration(format!(
                    "--compression-level applies to zstd and gzip, not {c:?}"
                )));
            }
        });
        if let Some(n) = self.row_group_size {
            options.global.max_row_group_size = n.max(1);
        }
        // DataFusion's default batch size; `write_parquet_with_sink` uses its session's.
        let batch_size = datafusion::prelude::SessionConfig::new().batch_size();
        parallel_row_groups(&mut options.global, self.parallelism(), batch_size);
        for name in &self.delta_encoded {
            let column = options
                .column_specific_options
                .entry(name.clone())
                .or_default();
            column.encoding = Some("delta_binary_packed".into());
            column.dictionary_enabled = Some(false);
        }
        for (k, v) in &self.metadata {
            options
                .key_value_metadata
                .insert(k.clone(), Some(v.clone()));
        }
        Ok(options)
    }
}

/// The rows an export of `table` writes: `columns` (every column when empty), those satisfying
/// the SQL `predicate`, in the table's row order (its index columns) when the scan yields one,
/// so that DataFusion keeps that order without sorting. Shared by `zarr-sql export` and the
/// Python binding's `ZarrTable.to_parquet`; the table is read through `ctx` under the name `t`
/// (as `zarr-sql` names it, and as errors show it) without being registered there.
pub fn export_frame(
    ctx: &SessionContext,
    table: Arc<ZarrTable>,
    columns: &[String],
    predicate: Option<&str>,
) -> Result<DataFrame> {
    let order = table.row_order();
    let scan = LogicalPlanBuilder::scan("t", provider_as_source(table), None)?.build()?;
    let mut df = DataFrame::new(ctx.state(), scan);
    if let Some(predicate) = predicate {
        let predicate = df.parse_sql_expr(predicate)?;
        df = df.filter(predicate)?;
    }
    if !order.is_empty() {
        df = df.sort(order.iter().map(|c| ident(c).sort(true, false)).collect())?;
    }
    if !columns.is_empty() {
        let columns: Vec<&str> = columns.iter().map(String::as_str).collect();
        df = df.select_columns(&columns)?;
    }
    Ok(df)
}

/// Writes `df` to the Parquet file `target`, atomically, in the order of its rows, and returns
/// the number of rows written. The plan runs in this process and streams its rows to our
/// writer (`writer.rs`): row groups encoded in parallel, strings and numbers by our encoders.
pub async fn write_parquet(df: DataFrame, target: &Path, export: &ParquetExport) -> Result<u64> {
    let options = export.writer_options()?;
    let task = df.task_ctx();
    let plan = df.create_physical_plan().await?;
    // Several partitions would be merged as they come: a Zarr scan's own single partition in
    // unit order gives the same rows in the same order every time.
    let plan = match plan.output_partitioning().partition_count() {
        1 => plan,
        _ => crate::optimizer::in_unit_order(&plan)?.unwrap_or(plan),
    };
    let sorting = match plan.output_partitioning().partition_count() {
        1 => plan.output_ordering(),
        _ => None,
    };
    let sorting = sorting.and_then(|o| sorting_columns(o, &plan.schema()));
    let stream = execute_stream(plan, Arc::new(task))?;
    write_stream_to(stream, target, options, sorting, export.parallelism()).await
}

/// Writes `df` to the Parquet file `target` with DataFusion's Parquet sink, atomically, and
/// returns the number of rows written. The session runs the sink where it runs plans: on a
/// Ballista cluster an executor writes the file, so `target` must be on storage it shares.
pub async fn write_parquet_with_sink(
    df: DataFrame,
    target: &Path,
    export: &ParquetExport,
) -> Result<u64> {
    let atomic = AtomicTarget::new(target)?;
    let temp = atomic.temp_path().to_string_lossy().to_string();
    let mut options = export.writer_options()?;
    let batch_size = df.task_ctx().session_config().batch_size();
    parallel_row_groups(&mut options.global, export.parallelism(), batch_size);
    let result = df
        .write_parquet(
            &temp,
            DataFrameWriteOptions::new().with_single_file_output(true),
            Some(options),
        )
        .await?;
    let rows = result
        .first()
        .and_then(|b| {
            b.column(0)
                .as_any()
                .downcast_ref::<arrow::array::UInt64Array>()
        })
        .map_or(0, |a| a.value(0));
    atomic.commit()?;
    Ok(rows)
}
