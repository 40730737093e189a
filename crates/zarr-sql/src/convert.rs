//! `zarr-sql convert IN OUT`: reads a Parquet, CSV or JSON input (DataFusion's readers) or a
//! Zarr store (ours) and writes its rows to a Parquet file (the export's writer) or a Zarr store
//! (the library's Zarr writer), with the export's `--columns`, `--where` and progress display.

use std::collections::BTreeSet;
use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use arrow::datatypes::DataType;
use clap::builder::{PossibleValuesParser, TypedValueParser};
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::SendableRecordBatchStream;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{ExecutionPlanProperties, execute_stream};
use datafusion::prelude::{
    CsvReadOptions, DataFrame, JsonReadOptions, ParquetReadOptions, SessionContext, coalesce,
    ident, lit,
};
use datafusion_zarr::export::{ParquetCompression, ParquetExport, export_frame, write_parquet};
use datafusion_zarr::write::{WriteOptions, write_zarr};
use datafusion_zarr::{ProgressCounter, ZarrError, ZarrOptions, ZarrTable, in_unit_order};
use futures::StreamExt;

use crate::progress::{Display, Tracked};
use crate::{GlobalArgs, ordinal, session, table_options};

/// The format of convert's input (`--from`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, clap::ValueEnum)]
pub enum InputFormat {
    /// A Parquet file, or a directory of them.
    Parquet,
    /// A CSV file with a header row, or a directory of them.
    Csv,
    /// Newline-delimited JSON (one object per line), or a file holding one JSON array of
    /// objects.
    #[value(alias = "ndjson")]
    Json,
    /// A Zarr store: a directory or a URL.
    Zarr,
}

/// The format of convert's output (`--to`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputFormat {
    /// A Parquet file, written as `zarr-sql export` writes it.
    Parquet,
    /// A Zarr store, written as `COPY … STORED AS ZARR` writes it (options: -w).
    Zarr,
}

/// Where the rows go: a local Parquet file, or a Zarr store written with these options.
enum Output {
    Parquet(PathBuf),
    Zarr(Box<WriteOptions>),
}

/// `zarr-sql convert`'s arguments.
#[derive(Debug, clap::Args)]
pub struct ConvertArgs {
    /// The input: a .parquet file or directory of them, a .csv file, a .json file
    /// (newline-delimited), or a Zarr store (a directory or URL).
    input: String,
    /// The output: OUT.parquet or OUT.zarr, written beside the target and moved into place
    /// when complete (an existing store only with -w mode=overwrite); an Icechunk repository
    /// (OUT.icechunk) gets one commit (-w branch=…, -w message=…).
    output: String,
    /// The input's format, instead of the guess from its name.
    #[arg(long, value_enum, value_name = "FORMAT")]
    from: Option<InputFormat>,
    /// The output's format, instead of the one its extension names.
    #[arg(long, value_enum, value_name = "FORMAT")]
    to: Option<OutputFormat>,
    /// The node inside a Zarr input.
    #[arg(long)]
    path: Option<String>,
    /// Columns to write, comma-separated (default: all).
    #[arg(long, value_delimiter = ',')]
    columns: Vec<String>,
    /// A SQL predicate rows must satisfy.
    #[arg(long = "where")]
    predicate: Option<String>,
    /// An option of the Zarr writer, as key=value (repeatable), e.g. chunk_rows=100000 or
    /// mode=overwrite (docs/writing.md); the writer lists the keys it knows when given another.
    #[arg(short = 'w', long = "write-option", value_name = "KEY=VALUE")]
    write_options: Vec<String>,
    /// Parquet compression (default zstd; lz4 is Parquet's LZ4_RAW).
    #[arg(
        long,
        value_parser = PossibleValuesParser::new(ParquetCompression::NAMES)
            .try_map(|name| name.parse::<ParquetCompression>())
    )]
    compression: Option<ParquetCompression>,
    /// Parquet compression level (zstd 1–22, gzip 0–9).
    #[arg(long)]
    compression_level: Option<u32>,
    /// Rows per Parquet row group.
    #[arg(long)]
    row_group_size: Option<NonZeroUsize>,
    /// Arrow type of a Zarr input's fixed_length_utf32 columns (utf8, utf8view, large_utf8,
    /// fixed_size_binary).
    #[arg(long)]
    string_type: Option<String>,
    /// Show progress even when stderr is not a terminal (then as plain lines).
    #[arg(long)]
    progress: bool,
}

/// Runs the conversion. Of the shared flags: `-o` (a Zarr input's table options), `-q`, `-b`,
/// and `-p`: the partitions of a Zarr input's scan, and the Parquet row groups encoded at once.
pub async fn run(args: ConvertArgs, global: &GlobalArgs) -> Result<()> {
    if global.format.is_some() {
        return Err(plan(
            "--format is the format of query results; convert's formats are --from \
             parquet|csv|json|zarr (the input's, default: from its name) and --to parquet|zarr \
             (the output's, default: from its extension)",
        ));
    }
    if global.quiet && args.progress {
        return Err(plan("--progress and --quiet cannot be used together"));
    }
    let to = output_format(&args)?;
    let from = match args.from {
        Some(format) => format,
        None => guess_input(&args.input),
    };
    check_options(&args, global, from, to)?;
    // The writer's options are checked before anything is read.
    let output = match to {
        OutputFormat::Zarr => Output::Zarr(Box::new(write_options(&args.write_options)?)),
        OutputFormat::Parquet => Output::Parquet(local_path(&args.output).ok_or_else(|| {
            plan(format!(
                "{}: convert writes Parquet to a local path",
                args.output
            ))
        })?),
    };
    let columns: Vec<String> = args.columns.iter().map(|c| c.trim().to_string()).collect();
    let export = ParquetExport {
        compression: args.compression.unwrap_or_default(),
        compression_level: args.compression_level,
        row_group_size: args.row_group_size.map(NonZeroUsize::get),
        // Row groups encoded at once: -p, or the cores.
        parallelism: global.partitions.map(NonZeroUsize::get),
        ..ParquetExport::default()
    };
    let batch_size = global.batch_size.map(NonZeroUsize::get);

    let start = Instant::now();
    let (df, tracked, export) = match from {
        InputFormat::Zarr => {
            let ctx = session(global.partitions.map(NonZeroUsize::get), batch_size)?;
            let mut options = ZarrOptions {
                path: args.path.clone().unwrap_or_default(),
                ..ZarrOptions::default()
            };
            if let Some(t) = &args.string_type {
                options.set("string_type", t)?;
            }
            let options = table_options(options, &global.options)?;
            let progress = Arc::new(ProgressCounter::new());
            let table = ZarrTable::open(&ctx.runtime_env(), &args.input, options)
                .await?
                .with_progress(progress.clone());
            // The source's provenance in the footer and its index columns delta-encoded, as
            // the export writes them.
            let ParquetExport {
                metadata,
                delta_encoded,
                ..
            } = ParquetExport::for_table(&table);
            let export = ParquetExport {
                metadata,
                delta_encoded,
                ..export
            };
            let df = export_frame(&ctx, Arc::new(table), &columns, args.predicate.as_deref())?;
            (df, Tracked::Scan(progress), export)
        }
        format => {
            // One partition: the rows keep the order of the input's files and their rows.
            let ctx = session(Some(1), batch_size)?;
            let df = read_file(&ctx, &args.input, format).await?;
            let df = file_frame(df, &columns, args.predicate.as_deref())?;
            let tracked = match to {
                OutputFormat::Zarr => Tracked::Rows(Arc::new(AtomicU64::new(0))),
                OutputFormat::Parquet => Tracked::Elapsed(format!(
                    "converting {} to {} (rows are counted when it is complete)",
                    args.input, args.output
                )),
            };
            (df, tracked, export)
        }
    };
    let counter = match &tracked {
        Tracked::Rows(rows) => Some(rows.clone()),
        _ => None,
    };
    let display = Display::start(tracked, global.quiet, args.progress);
    let result = match &output {
        Output::Parquet(path) => write_parquet(df, path, &export).await,
        Output::Zarr(options) => write_frame_to_zarr(df, &args.output, options, counter).await,
    };
    display.finish(result.is_ok());
    let rows = result?;
    if !global.quiet {
        eprintln!(
            "Converted {rows} rows to {} in {:.3} seconds.",
            args.output,
            start.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

fn plan(message: impl Into<String>) -> DataFusionError {
    DataFusionError::Plan(message.into())
}

/// The output's format: `--to`, or its extension's.
fn output_format(args: &ConvertArgs) -> Result<OutputFormat> {
    if let Some(to) = args.to {
        return Ok(to);
    }
    match extension(&args.output).as_deref() {
        Some("parquet") => Ok(OutputFormat::Parquet),
        // An Icechunk repository gets a commit (docs/icechunk.md).
        Some("zarr" | "icechunk") => Ok(OutputFormat::Zarr),
        _ => Err(plan(format!(
            "{}: the output's format comes from its extension, .parquet (a Parquet file) or \
             .zarr (a Zarr store; .icechunk, an Icechunk repository); name one of those, or \
             give --to parquet|zarr",
            args.output
        ))),
    }
}

/// Flags that apply to one kind of input or output only are refused with the other.
fn check_options(
    args: &ConvertArgs,
    global: &GlobalArgs,
    from: InputFormat,
    to: OutputFormat,
) -> Result<()> {
    if to == OutputFormat::Zarr
        && (args.compression.is_some()
            || args.compression_level.is_some()
            || args.row_group_size.is_some())
    {
        return Err(plan(
            "--compression, --compression-level and --row-group-size apply to a Parquet \
             output; a Zarr output's options are given as -w KEY=VALUE",
        ));
    }
    if to == OutputFormat::Parquet && !args.write_options.is_empty() {
        return Err(plan(
            "-w/--write-option is an option of the Zarr writer, and the output is Parquet",
        ));
    }
    if from != InputFormat::Zarr {
        let name = format!("{from:?}").to_ascii_lowercase();
        let zarr_only = [
            (args.path.is_some(), "--path"),
            (args.string_type.is_some(), "--string-type"),
            (!global.options.is_empty(), "-o/--option"),
        ];
        if let Some((_, flag)) = zarr_only.iter().find(|(given, _)| *given) {
            return Err(plan(format!(
                "{flag} applies to a Zarr input, and {} is read as {name} (--from zarr reads \
                 it as a Zarr store)",
                args.input
            )));
        }
        if local_path(&args.input).is_none() {
            return Err(plan(format!(
                "{}: convert reads {name} from a local path; URLs are read as Zarr stores",
                args.input
            )));
        }
    }
    Ok(())
}

/// The Zarr writer's options from `-w key=value` pairs, passed on as given: the library checks
/// them, and lists the keys it knows in its error.
fn write_options(pairs: &[String]) -> Result<WriteOptions> {
    let mut split = Vec::with_capacity(pairs.len());
    for (i, kv) in pairs.iter().enumerate() {
        let (k, v) = kv.split_once('=').ok_or_else(|| {
            ZarrError::Option(format!(
                "the {} --write-option is not of the form key=value (its text is not shown, as \
                 it may hold a secret)",
                ordinal(i + 1)
            ))
        })?;
        split.push((k, v));
    }
    Ok(WriteOptions::from_pairs(split)?)
}

/// The extension of the last component of a path or URL, lowercased.
fn extension(location: &str) -> Option<String> {
    let name = location.trim_end_matches('/').rsplit('/').next()?;
    let (stem, ext) = name.rsplit_once('.')?;
    (!stem.is_empty() && !ext.is_empty()).then(|| ext.to_ascii_lowercase())
}

/// The local path of `location`: a path, or a `file://` URL's; `None` for other URLs.
fn local_path(location: &str) -> Option<PathBuf> {
    match url::Url::parse(location) {
        Ok(url) if url.scheme() == "file" => url.to_file_path().ok(),
        // A scheme of one letter is a Windows drive.
        Ok(url) if url.scheme().len() > 1 => None,
        _ => Some(PathBuf::from(location)),
    }
}

/// The format a file's extension names.
fn format_of_extension(ext: &str) -> Option<InputFormat> {
    match ext {
        "parquet" => Some(InputFormat::Parquet),
        "csv" => Some(InputFormat::Csv),
        "json" | "ndjson" | "jsonl" => Some(InputFormat::Json),
        "zarr" | "icechunk" => Some(InputFormat::Zarr),
        _ => None,
    }
}

/// The input's format from its name: a directory holding Zarr metadata, or named `.zarr`, is
/// a Zarr store; a `.parquet`, `.csv` or `.json` file (or directory) is read by DataFusion; a
/// directory of files of one of those kinds is read as that kind; anything else, URLs
/// included, is a Zarr store.
fn guess_input(input: &str) -> InputFormat {
    let Some(path) = local_path(input) else {
        return InputFormat::Zarr;
    };
    if path.is_dir()
        && [".zgroup", ".zarray", ".zmetadata", "zarr.json"]
            .iter()
            .any(|name| path.join(name).exists())
    {
        return InputFormat::Zarr;
    }
    if let Some(format) = extension(input).as_deref().and_then(format_of_extension) {
        return format;
    }
    if path.is_dir() {
        let formats: BTreeSet<InputFormat> = data_file_extensions(&path)
            .iter()
            .filter_map(|e| format_of_extension(e))
            .collect();
        if let Some(&format) = formats.first()
            && formats.len() == 1
        {
            return format;
        }
    }
    InputFormat::Zarr
}

/// The extensions (lowercased) of the data files below `dir` (hidden files and names starting
/// with `_`, such as `_SUCCESS`, left out), looking at no more than a thousand entries.
fn data_file_extensions(dir: &Path) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut pending = vec![dir.to_path_buf()];
    let mut seen = 0;
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            seen += 1;
            if seen > 1000 {
                return found;
            }
            let name = entry.file_name().to_string_lossy().to_string();
            if name.starts_with('.') || name.starts_with('_') {
                continue;
            }
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else if let Some(ext) = extension(&name) {
                found.insert(ext);
            }
        }
    }
    found
}

/// The extension DataFusion's reader lists files by: a file's own (whatever it is, so that
/// `--from` reads any name), or for a directory the one its data files share (or the format's
/// usual one).
fn listing_extension(input: &str, format: InputFormat) -> String {
    let usual = match format {
        InputFormat::Parquet => ".parquet",
        InputFormat::Csv => ".csv",
        _ => ".json",
    };
    let Some(path) = local_path(input) else {
        return usual.into();
    };
    if !path.is_dir() {
        return path
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .and_then(|n| n.rsplit_once('.').map(|(_, e)| format!(".{e}")))
            .unwrap_or_default();
    }
    let shared: Vec<String> = data_file_extensions(&path)
        .into_iter()
        .filter(|e| format_of_extension(e) == Some(format))
        .collect();
    match shared.as_slice() {
        [ext] => format!(".{ext}"),
        _ => usual.into(),
    }
}

/// A Parquet, CSV or JSON input, read by DataFusion.
async fn read_file(ctx: &SessionContext, input: &str, format: InputFormat) -> Result<DataFrame> {
    let ext = listing_extension(input, format);
    match format {
        InputFormat::Parquet => {
            let options = ParquetReadOptions {
                file_extension: &ext,
                ..ParquetReadOptions::default()
            };
            ctx.read_parquet(input, options).await
        }
        InputFormat::Csv => {
            // Quoted values may hold line breaks (as `zarr-sql --format csv` writes them).
            let options = CsvReadOptions::new()
                .file_extension(&ext)
                .newlines_in_values(true);
            let df = ctx.read_csv(input, options).await?;
            // CSV has no NULL: an empty field of a string column is the empty string (the
            // reader makes it NULL, which a Zarr string array cannot hold).
            let columns = df
                .schema()
                .fields()
                .iter()
                .map(|f| {
                    let column = ident(f.name());
                    match f.data_type() {
                        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
                            coalesce(vec![column, lit("")]).alias(f.name())
                        }
                        _ => column,
                    }
                })
                .collect::<Vec<_>>();
            df.select(columns)
        }
        InputFormat::Json => {
            let options = JsonReadOptions::default()
                .file_extension(&ext)
                .newline_delimited(!json_array(input));
            ctx.read_json(input, options).await
        }
        InputFormat::Zarr => unreachable!("a Zarr input is read by ZarrTable"),
    }
}

/// Whether `input` is one file holding a JSON array (as `zarr-sql --format json` prints),
/// rather than newline-delimited JSON: its first character that is not white space is `[`.
fn json_array(input: &str) -> bool {
    use std::io::Read;
    let Some(file) = local_path(input).and_then(|p| std::fs::File::open(p).ok()) else {
        return false;
    };
    let mut start = Vec::with_capacity(4096);
    if file.take(4096).read_to_end(&mut start).is_err() {
        return false;
    }
    start.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[')
}

/// The rows of a file input to write, as `export_frame` gives a Zarr input's: named `t` (as
/// the export names its table in errors), the rows satisfying `predicate`, then `columns`
/// (every column when empty).
fn file_frame(df: DataFrame, columns: &[String], predicate: Option<&str>) -> Result<DataFrame> {
    let mut df = df.alias("t")?;
    if let Some(predicate) = predicate {
        let predicate = df.parse_sql_expr(predicate)?;
        df = df.filter(predicate)?;
    }
    if !columns.is_empty() {
        let columns: Vec<&str> = columns.iter().map(String::as_str).collect();
        df = df.select_columns(&columns)?;
    }
    Ok(df)
}

/// Writes `df` as a Zarr store at `location` with the library's writer, and returns the number
/// of rows written; `counter`, when given, counts the rows as they pass to the writer.
async fn write_frame_to_zarr(
    df: DataFrame,
    location: &str,
    options: &WriteOptions,
    counter: Option<Arc<AtomicU64>>,
) -> Result<u64> {
    let task = Arc::new(df.task_ctx());
    let plan = df.create_physical_plan().await?;
    // Several partitions would be merged as they come: a Zarr scan's own single partition in
    // unit order gives the same rows in the same order every time (as the Parquet export).
    let plan = match plan.output_partitioning().partition_count() {
        1 => plan,
        _ => in_unit_order(&plan)?.unwrap_or(plan),
    };
    let mut stream = execute_stream(plan, task)?;
    if let Some(rows) = counter {
        stream = counted(stream, rows);
    }
    Ok(write_zarr(stream, location, options).await?)
}

/// `stream`, adding the rows of each batch to `rows` as it passes.
fn counted(stream: SendableRecordBatchStream, rows: Arc<AtomicU64>) -> SendableRecordBatchStream {
    let schema = stream.schema();
    let stream = stream.inspect(move |batch| {
        if let Ok(batch) = batch {
            rows.fetch_add(batch.num_rows() as u64, Ordering::Relaxed);
        }
    });
    Box::pin(RecordBatchStreamAdapter::new(schema, stream))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extensions_name_the_formats() {
        assert_eq!(extension("a/b.PARQUET").as_deref(), Some("parquet"));
        assert_eq!(extension("out.zarr/").as_deref(), Some("zarr"));
        assert_eq!(extension("s3://bucket/x.zarr").as_deref(), Some("zarr"));
        assert_eq!(extension(".hidden"), None);
        assert_eq!(extension("dir.d/file"), None);
        assert_eq!(guess_input("s3://bucket/store"), InputFormat::Zarr);
        assert_eq!(guess_input("missing.csv"), InputFormat::Csv);
        assert_eq!(guess_input("missing.ndjson"), InputFormat::Json);
        assert_eq!(guess_input("missing"), InputFormat::Zarr);
        assert_eq!(listing_extension("x.txt", InputFormat::Csv), ".txt");
        assert_eq!(listing_extension("x", InputFormat::Csv), "");
    }
}
