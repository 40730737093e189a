//! `zarr-sql export LOCATION OUT.parquet`: the rows of `COPY (SELECT …) TO 'OUT.parquet'`,
//! written by our Parquet writer (DataFusion's on a cluster), with the source's Zarr metadata
//! in the file footer, atomic replacement of the target, and a progress bar.

use std::num::NonZeroUsize;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use clap::builder::{PossibleValuesParser, TypedValueParser};
use datafusion::error::{DataFusionError, Result};
use datafusion_zarr::export::{
    ParquetCompression, ParquetExport, export_frame, write_parquet, write_parquet_with_sink,
};
use datafusion_zarr::{ProgressCounter, ZarrOptions, ZarrTable};

use crate::progress::{Display, Tracked};
use crate::{GlobalArgs, session_on, table_options};

/// `zarr-sql export`'s arguments.
#[derive(Debug, clap::Args)]
pub struct ExportArgs {
    /// The Zarr store (directory or URL).
    location: String,
    /// The Parquet file to write (replaced atomically when complete).
    output: PathBuf,
    /// The node inside the store.
    #[arg(long, default_value = "")]
    path: String,
    /// Columns to export, comma-separated (default: all).
    #[arg(long, value_delimiter = ',')]
    columns: Vec<String>,
    /// A SQL predicate rows must satisfy.
    #[arg(long = "where")]
    predicate: Option<String>,
    /// Parquet compression (lz4 is Parquet's LZ4_RAW).
    #[arg(
        long,
        default_value = "zstd",
        value_parser = PossibleValuesParser::new(ParquetCompression::NAMES)
            .try_map(|name| name.parse::<ParquetCompression>())
    )]
    compression: ParquetCompression,
    /// Compression level (zstd 1–22, gzip 0–9).
    #[arg(long)]
    compression_level: Option<u32>,
    /// Rows per row group.
    #[arg(long)]
    row_group_size: Option<NonZeroUsize>,
    /// Arrow type of fixed_length_utf32 columns (utf8, utf8view, large_utf8, fixed_size_binary).
    #[arg(long)]
    string_type: Option<String>,
    /// Show progress even when stderr is not a terminal (then as plain lines).
    #[arg(long)]
    progress: bool,
    /// Run the export on the Ballista cluster of this scheduler (df://HOST:PORT): an executor
    /// writes the file, so OUTPUT must be on storage it shares with this machine. Needs a
    /// zarr-sql built with the `ballista` feature.
    #[arg(long, value_name = "URL")]
    scheduler: Option<String>,
}

/// Runs the export.
/// Of the shared flags: `-o` (options), `-q`, `-b`, and `-p`: the partitions (threads), or with
/// --scheduler the tasks the scan is divided among (default 1: the whole export in one task,
/// see docs/scaling.md).
pub async fn run(args: ExportArgs, global: &GlobalArgs) -> Result<()> {
    if global.format.is_some() {
        return Err(DataFusionError::Plan(
            "--format applies to query results and inspect; export writes Parquet".into(),
        ));
    }
    if global.quiet && args.progress {
        return Err(DataFusionError::Plan(
            "--progress and --quiet cannot be used together".into(),
        ));
    }
    // On a cluster the file is written by one task; a scan divided among several would send
    // every row through Ballista's shuffle to it (measured in docs/scaling.md: 1.40x
    // single-node divided, 0.98x in one task), so one partition unless -p says otherwise.
    let scan_partitions = match (&args.scheduler, global.partitions) {
        (Some(_), None) => Some(1),
        (_, p) => p.map(NonZeroUsize::get),
    };
    let ctx = session_on(
        args.scheduler.as_deref(),
        scan_partitions,
        global.batch_size.map(NonZeroUsize::get),
    )
    .await?;
    let mut options = ZarrOptions {
        path: args.path.clone(),
        ..ZarrOptions::default()
    };
    if let Some(t) = &args.string_type {
        options.set("string_type", t)?;
    }
    let options = table_options(options, &global.options)?;
    let progress = Arc::new(ProgressCounter::new());
    let table = ZarrTable::open(&ctx.runtime_env(), &args.location, options)
        .await?
        .with_progress(progress.clone());
    let export = ParquetExport {
        compression: args.compression,
        compression_level: args.compression_level,
        row_group_size: args.row_group_size.map(NonZeroUsize::get),
        // Row groups encoded at once: -p, or the cores.
        parallelism: global.partitions.map(NonZeroUsize::get),
        ..ParquetExport::for_table(&table)
    };
    let columns: Vec<String> = args.columns.iter().map(|c| c.trim().to_string()).collect();
    let df = export_frame(&ctx, Arc::new(table), &columns, args.predicate.as_deref())?;

    let start = Instant::now();
    let tracked = match args.scheduler {
        Some(_) => Tracked::Elapsed(
            "the export runs on the cluster; its progress stays in the executors".into(),
        ),
        None => Tracked::Scan(progress.clone()),
    };
    let display = Display::start(tracked, global.quiet, args.progress);
    // Absolute, as this process sees it: on a cluster an executor writes the file.
    let output = std::path::absolute(&args.output).map_err(|e| {
        datafusion::error::DataFusionError::Plan(format!("{}: {e}", args.output.display()))
    })?;
    // On a cluster an executor writes the file (DataFusion's sink, run by Ballista); here our
    // writer does.
    let result = match args.scheduler {
        Some(_) => write_parquet_with_sink(df, &output, &export).await,
        None => write_parquet(df, &output, &export).await,
    };
    display.finish(result.is_ok());
    let rows = result?;
    if !global.quiet {
        eprintln!(
            "Exported {rows} rows to {} in {:.3} seconds.",
            args.output.display(),
            start.elapsed().as_secs_f64()
        );
    }
    Ok(())
}
