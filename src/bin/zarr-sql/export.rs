//! `zarr-sql export LOCATION OUT.parquet`: the same as `COPY (SELECT …) TO 'OUT.parquet'`,
//! through DataFusion's Parquet writer, with the source's Zarr metadata in the file footer,
//! atomic replacement of the target, and a progress bar.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::{Parser, ValueEnum};
use datafusion::error::{DataFusionError, Result};
use datafusion_zarr::export::{Compression, ParquetExport, write_parquet};
use datafusion_zarr::node::Node;
use datafusion_zarr::scan::row_order;
use datafusion_zarr::table::ColumnSource;
use datafusion_zarr::{ScanProgress, ZarrOptions, ZarrTable};
use indicatif::{ProgressBar, ProgressStyle};

use crate::session;

/// Export a Zarr array or group to a Parquet file.
#[derive(Debug, Parser)]
#[command(name = "zarr-sql export")]
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
    /// Parquet compression.
    #[arg(long, value_enum, default_value_t = CompressionArg::Zstd)]
    compression: CompressionArg,
    /// Compression level (zstd 1–22, gzip 0–9).
    #[arg(long)]
    compression_level: Option<u32>,
    /// Rows per row group.
    #[arg(long)]
    row_group_size: Option<usize>,
    /// Arrow type of fixed_length_utf32 columns (utf8, utf8view, large_utf8, fixed_size_binary).
    #[arg(long)]
    string_type: Option<String>,
    /// Another table option, as key=value (repeatable).
    #[arg(short = 'o', long = "option", value_name = "KEY=VALUE")]
    options: Vec<String>,
    /// Print nothing on stderr but errors.
    #[arg(short, long)]
    quiet: bool,
    /// Show progress even when stderr is not a terminal (then as plain lines).
    #[arg(long, conflicts_with = "quiet")]
    progress: bool,
    /// Number of partitions (threads).
    #[arg(short = 'p', long)]
    partitions: Option<usize>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum CompressionArg {
    Zstd,
    Snappy,
    Lz4,
    Gzip,
    None,
}

fn quote(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// Runs the export.
pub async fn run(args: ExportArgs) -> Result<()> {
    let ctx = session(args.partitions, None);
    let mut options = ZarrOptions {
        path: args.path.clone(),
        ..ZarrOptions::default()
    };
    if let Some(t) = &args.string_type {
        options.set("string_type", t)?;
    }
    for kv in &args.options {
        let (k, v) = kv.split_once('=').ok_or_else(|| {
            DataFusionError::Plan(format!("--option '{kv}' is not of the form key=value"))
        })?;
        options.set(k, v)?;
    }
    let progress = Arc::new(ScanProgress::new());
    let table = ZarrTable::open(&ctx.runtime_env(), &args.location, options)
        .await?
        .with_progress(progress.clone());
    let model = table.model().clone();
    ctx.register_table("t", Arc::new(table))?;

    let columns = if args.columns.is_empty() {
        "*".to_string()
    } else {
        args.columns
            .iter()
            .map(|c| quote(c.trim()))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut sql = format!("SELECT {columns} FROM t");
    if let Some(p) = &args.predicate {
        sql.push_str(&format!(" WHERE {p}"));
    }
    // Rows in index order when the scan already yields them so (1-D arrays, arrays chunked by
    // rows only): DataFusion then merges the sorted partitions instead of sorting.
    let order = row_order(&model);
    if !order.is_empty() {
        let keys: Vec<String> = order.iter().map(|c| quote(c)).collect();
        sql.push_str(&format!(" ORDER BY {}", keys.join(", ")));
    }
    let df = ctx.sql(&sql).await?;

    let node_metadata = match &model.node {
        Node::Array(a) => &a.metadata,
        Node::Group(g) => &g.metadata,
    };
    let export = ParquetExport {
        compression: match args.compression {
            CompressionArg::Zstd => Compression::Zstd,
            CompressionArg::Snappy => Compression::Snappy,
            CompressionArg::Lz4 => Compression::Lz4,
            CompressionArg::Gzip => Compression::Gzip,
            CompressionArg::None => Compression::None,
        },
        compression_level: args.compression_level,
        row_group_size: args.row_group_size,
        metadata: vec![
            (
                "zarr.store".into(),
                model.store.display_location().to_string(),
            ),
            ("zarr.path".into(), model.path.clone()),
            ("zarr.metadata".into(), node_metadata.to_string()),
        ],
        delta_encoded: model
            .columns
            .iter()
            .filter(|c| matches!(c.source, ColumnSource::Index { .. }))
            .map(|c| c.name.clone())
            .collect(),
    };

    let start = Instant::now();
    let display = Display::start(&args, progress.clone());
    let result = write_parquet(df, &args.output, &export).await;
    display.finish(result.is_ok());
    let rows = result?;
    if !args.quiet {
        eprintln!(
            "Exported {rows} rows to {} in {:.3} seconds.",
            args.output.display(),
            start.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

/// The progress display: an indicatif bar on a terminal, plain lines when forced elsewhere.
struct Display {
    bar: Option<ProgressBar>,
    ticker: Option<tokio::task::JoinHandle<()>>,
    progress: Arc<ScanProgress>,
    plain: bool,
}

impl Display {
    fn start(args: &ExportArgs, progress: Arc<ScanProgress>) -> Self {
        let terminal = std::io::stderr().is_terminal();
        let show = !args.quiet && (terminal || args.progress);
        if !show {
            return Self {
                bar: None,
                ticker: None,
                progress,
                plain: false,
            };
        }
        if !terminal {
            return Self {
                bar: None,
                ticker: None,
                progress,
                plain: true,
            };
        }
        let bar = ProgressBar::new(0);
        bar.set_style(
            ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {wide_bar} {pos}/{len} rows {msg} ({per_sec}, ETA {eta})",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        let ticker_bar = bar.clone();
        let ticker_progress = progress.clone();
        let ticker = tokio::spawn(async move {
            loop {
                update(&ticker_bar, &ticker_progress);
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        });
        Self {
            bar: Some(bar),
            ticker: Some(ticker),
            progress,
            plain: false,
        }
    }

    fn finish(self, ok: bool) {
        if let Some(t) = &self.ticker {
            t.abort();
        }
        let (rows, total_rows, chunks, total_chunks) = self.progress.snapshot();
        if let Some(bar) = &self.bar {
            update(bar, &self.progress);
            if ok { bar.finish() } else { bar.abandon() }
        }
        if self.plain {
            eprintln!("progress: {rows}/{total_rows} rows, {chunks}/{total_chunks} chunks");
        }
    }
}

fn update(bar: &ProgressBar, progress: &ScanProgress) {
    let (rows, total_rows, chunks, total_chunks) = progress.snapshot();
    bar.set_length(total_rows);
    bar.set_position(rows);
    bar.set_message(format!("{chunks}/{total_chunks} chunks"));
}
