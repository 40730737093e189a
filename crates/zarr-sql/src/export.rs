//! `zarr-sql export LOCATION OUT.parquet`: the rows of `COPY (SELECT …) TO 'OUT.parquet'`,
//! written by our Parquet writer (DataFusion's on a cluster), with the source's Zarr metadata
//! in the file footer, atomic replacement of the target, and a progress bar.

use std::io::IsTerminal;
use std::num::NonZeroUsize;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::builder::{PossibleValuesParser, TypedValueParser};
use datafusion::error::{DataFusionError, Result};
use datafusion_zarr::export::{
    Compression, ParquetExport, export_frame, write_parquet, write_parquet_with_sink,
};
use datafusion_zarr::{ProgressCounter, ZarrOptions, ZarrTable};
use indicatif::{ProgressBar, ProgressStyle};

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
        value_parser = PossibleValuesParser::new(Compression::NAMES)
            .try_map(|name| name.parse::<Compression>())
    )]
    compression: Compression,
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
    let display = Display::start(&args, global.quiet, progress.clone());
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

/// The progress display: an indicatif bar on a terminal, plain lines when forced elsewhere.
/// On a cluster the scan's progress stays in the executors: a spinner with the elapsed time,
/// or one plain line saying so.
struct Display {
    bar: Option<ProgressBar>,
    ticker: Option<tokio::task::JoinHandle<()>>,
    progress: Arc<ProgressCounter>,
    plain: bool,
}

impl Display {
    fn start(args: &ExportArgs, quiet: bool, progress: Arc<ProgressCounter>) -> Self {
        let terminal = std::io::stderr().is_terminal();
        let show = !quiet && (terminal || args.progress);
        let mut display = Self {
            bar: None,
            ticker: None,
            progress,
            plain: false,
        };
        if !show {
            return display;
        }
        if args.scheduler.is_some() {
            let message = "the export runs on the cluster; its progress stays in the executors";
            match terminal {
                true => {
                    let bar = ProgressBar::new_spinner();
                    bar.set_style(
                        ProgressStyle::with_template("{spinner} [{elapsed_precise}] {msg}")
                            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
                    );
                    bar.set_message(message);
                    bar.enable_steady_tick(Duration::from_millis(100));
                    display.bar = Some(bar);
                }
                false => eprintln!("progress: {message}"),
            }
            return display;
        }
        if !terminal {
            display.plain = true;
            return display;
        }
        let bar = ProgressBar::new(0);
        bar.set_style(
            ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {wide_bar} {pos}/{len} rows {msg} ({per_sec}, ETA {eta})",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        let ticker_bar = bar.clone();
        let ticker_progress = display.progress.clone();
        display.ticker = Some(tokio::spawn(async move {
            loop {
                update(&ticker_bar, &ticker_progress);
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }));
        display.bar = Some(bar);
        display
    }

    fn finish(self, ok: bool) {
        if let Some(t) = &self.ticker {
            t.abort();
        }
        if let Some(bar) = &self.bar {
            if self.ticker.is_some() {
                update(bar, &self.progress);
            }
            if ok {
                bar.finish()
            } else {
                bar.abandon()
            }
            // indicatif leaves the cursor after the bar's last frame: what follows starts on
            // a line of its own.
            if !bar.is_hidden() {
                eprintln!();
            }
        }
        if self.plain {
            let p = self.progress.snapshot();
            eprintln!(
                "progress: {}/{} rows, {}/{} chunks",
                p.rows, p.total_rows, p.chunks, p.total_chunks
            );
        }
    }
}

fn update(bar: &ProgressBar, progress: &ProgressCounter) {
    let p = progress.snapshot();
    bar.set_length(p.total_rows);
    bar.set_position(p.rows);
    bar.set_message(format!("{}/{} chunks", p.chunks, p.total_chunks));
}
