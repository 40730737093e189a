//! `zarr-sql`: SQL over Zarr stores, in the manner of datafusion-cli.
//!
//! ```text
//! zarr-sql [LOCATION] [-c SQL]... [-f FILE]... [--format table|csv|json|ndjson] [-q]
//! zarr-sql export LOCATION OUT.parquet [--path P] [--columns C] [--where PRED] ...
//! zarr-sql convert IN OUT [--from F] [--to parquet|zarr] [-w KEY=VALUE]... [--columns C] ...
//! zarr-sql inspect LOCATION [--format text|json]
//! zarr-sql scheduler [--bind ADDR]                      (feature `ballista`)
//! zarr-sql executor [--scheduler ADDR] [--bind ADDR]    (feature `ballista`)
//! zarr-sql --scheduler df://HOST:PORT …                 (feature `ballista`)
//! ```
//! With a LOCATION, the store is registered as table `t`. Without `-c`/`-f`, statements are
//! read from standard input: an interactive shell on a terminal, a script when piped. The
//! library, `datafusion-zarr`, does the reading; this crate is argument parsing, output
//! formats, the shell and the progress bar.

#[cfg(feature = "ballista")]
mod cluster;
mod commands;
mod convert;
mod errors;
mod export;
mod inspect;
mod malloc;
mod output;
mod progress;
mod shell;
mod test_store;

use std::num::NonZeroUsize;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use clap::Parser;
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{LogicalPlan, WriteOp};
use datafusion::prelude::{SessionConfig, SessionContext};
use datafusion::sql::parser::{DFParser, Statement as DFStatement};
use datafusion_zarr::export::AtomicTarget;
use datafusion_zarr::{ZarrError, ZarrOptions, ZarrTable};
use futures::StreamExt;

use output::{Format, Printer};

/// Query Zarr stores (fixed_length_utf32 strings and the arrays beside them) with SQL.
///
/// With a LOCATION, the store is registered as table `t`. Without -c or -f, statements are read
/// from standard input: an interactive shell on a terminal, a script when piped.
#[derive(Debug, Parser)]
#[command(name = "zarr-sql", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Option<Subcommand>,

    #[command(flatten)]
    query: QueryArgs,

    #[command(flatten)]
    global: GlobalArgs,
}

/// The flags every command shares, accepted before or after a subcommand's name.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct GlobalArgs {
    /// Output format: of query results (default table), or of inspect (table = text, or json).
    #[arg(long, value_enum, global = true)]
    pub format: Option<Format>,

    /// Print no row counts, timings or progress on stderr.
    #[arg(short, long, global = true)]
    pub quiet: bool,

    /// A table option for the store, as key=value (repeatable), e.g. string_type=utf8view, or an
    /// object store option for a remote one: aws.region=eu-west-1, gcp.*, azure.*, retry.*.
    #[arg(short = 'o', long = "option", value_name = "KEY=VALUE", global = true)]
    pub options: Vec<String>,

    /// Number of partitions (threads) a scan uses; defaults to the number of cores.
    #[arg(short = 'p', long, global = true)]
    pub partitions: Option<NonZeroUsize>,

    /// Rows per batch.
    #[arg(short = 'b', long, global = true)]
    pub batch_size: Option<NonZeroUsize>,
}

#[derive(Debug, clap::Subcommand)]
enum Subcommand {
    /// Export a Zarr array or group to a Parquet file.
    Export(export::ExportArgs),
    /// Convert a Parquet, CSV or JSON file or a Zarr store to a Parquet file or a Zarr store.
    Convert(convert::ConvertArgs),
    /// Show the groups and arrays of a Zarr store and the tables they map to.
    Inspect(inspect::InspectArgs),
    /// Run a Ballista scheduler that plans queries over Zarr stores for its executors.
    #[cfg(feature = "ballista")]
    Scheduler(cluster::SchedulerArgs),
    /// Run a Ballista executor that reads Zarr chunks for a scheduler's tasks.
    #[cfg(feature = "ballista")]
    Executor(cluster::ExecutorArgs),
}

/// Running SQL (the default command).
#[derive(Debug, clap::Args)]
struct QueryArgs {
    /// A Zarr store to register as table `t`: a directory, or an s3://, gs://, az://, abfs://,
    /// http(s):// or file:// URL.
    location: Option<String>,

    /// SQL to run (repeatable); statements run in order.
    #[arg(short = 'c', long = "command")]
    commands: Vec<String>,

    /// A file of SQL statements to run (repeatable).
    #[arg(short = 'f', long = "file")]
    files: Vec<PathBuf>,

    /// Run the queries on the Ballista cluster of this scheduler (df://HOST:PORT); needs a
    /// zarr-sql built with the `ballista` feature.
    #[arg(long, value_name = "URL")]
    scheduler: Option<String>,
}

impl QueryArgs {
    /// Whether any of the query's own arguments was given.
    fn is_given(&self) -> bool {
        self.location.is_some()
            || !self.commands.is_empty()
            || !self.files.is_empty()
            || self.scheduler.is_some()
    }
}

fn main() -> ExitCode {
    malloc::tune();
    let cli = Cli::parse();
    if cli.command.is_some() && cli.query.is_given() {
        eprintln!(
            "Error: a LOCATION, -c, -f or --scheduler before a subcommand belongs to a query; \
             give the subcommand's own arguments after its name (zarr-sql export --help)"
        );
        return ExitCode::from(2);
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("Error: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let work = async {
        match cli.command {
            None => run(cli.query, &cli.global).await,
            Some(Subcommand::Export(args)) => export::run(args, &cli.global).await,
            Some(Subcommand::Convert(args)) => convert::run(args, &cli.global).await,
            Some(Subcommand::Inspect(args)) => inspect::run(args, &cli.global).await,
            #[cfg(feature = "ballista")]
            Some(Subcommand::Scheduler(args)) => cluster::run_scheduler(args).await,
            #[cfg(feature = "ballista")]
            Some(Subcommand::Executor(args)) => cluster::run_executor(args).await,
        }
    };
    // Ctrl-C cancels the work; dropping it removes any temporary output (see AtomicTarget).
    let interrupted = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let result = runtime.block_on(async {
        tokio::select! {
            r = work => Some(r),
            _ = interrupted => None,
        }
    });
    let Some(result) = result else {
        eprintln!("Interrupted.");
        return ExitCode::from(130);
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("Error: {}", crate::errors::message(&e));
            ExitCode::FAILURE
        }
    }
}

/// `options` with each `key=value` of `-o`/`--option` applied in order.
pub(crate) fn table_options(mut options: ZarrOptions, pairs: &[String]) -> Result<ZarrOptions> {
    for (i, kv) in pairs.iter().enumerate() {
        // Not echoed: without its `=`, nothing says which part is a secret.
        let (k, v) = kv.split_once('=').ok_or_else(|| {
            DataFusionError::External(Box::new(ZarrError::Option(format!(
                "the {} --option is not of the form key=value (its text is not shown, as it may \
                 hold a secret)",
                ordinal(i + 1)
            ))))
        })?;
        options.set(k, v)?;
    }
    Ok(options)
}

/// `n` as an English ordinal: 1st, 2nd, 3rd, 4th, 11th, 21st.
fn ordinal(n: usize) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

/// A session with Zarr support, as the CLI configures it.
pub(crate) fn session(
    partitions: Option<usize>,
    batch_size: Option<usize>,
) -> Result<SessionContext> {
    let mut config = SessionConfig::new().with_information_schema(true);
    if let Some(p) = partitions {
        config = config.with_target_partitions(p.max(1));
    }
    if let Some(b) = batch_size {
        config = config.with_batch_size(b.max(1));
    }
    // COPY … TO '….parquet' typed in SQL encodes as many row groups at once as the export does.
    let (parallelism, batch_size) = (config.target_partitions(), config.batch_size());
    let parquet = &mut config.options_mut().execution.parquet;
    datafusion_zarr::export::parallel_row_groups(parquet, parallelism, batch_size);
    // Like datafusion-cli, files can be queried by path: SELECT * FROM 'out.parquet'.
    let ctx = SessionContext::new_with_config(config).enable_url_table();
    datafusion_zarr::register(&ctx);
    test_store::install(&ctx)?;
    Ok(ctx)
}

/// The session of a command: local, or on the cluster of `scheduler` (`df://host:port`).
pub(crate) async fn session_on(
    scheduler: Option<&str>,
    partitions: Option<usize>,
    batch_size: Option<usize>,
) -> Result<SessionContext> {
    match scheduler {
        None => session(partitions, batch_size),
        #[cfg(feature = "ballista")]
        Some(url) => cluster::remote_session(url, partitions, batch_size).await,
        #[cfg(not(feature = "ballista"))]
        Some(_) => Err(DataFusionError::Plan(
            "--scheduler needs a zarr-sql built with the `ballista` feature (cargo install ... --features ballista)".into(),
        )),
    }
}

async fn run(args: QueryArgs, global: &GlobalArgs) -> Result<()> {
    let ctx = session_on(
        args.scheduler.as_deref(),
        global.partitions.map(NonZeroUsize::get),
        global.batch_size.map(NonZeroUsize::get),
    )
    .await?;
    if let Some(location) = &args.location {
        let options = table_options(ZarrOptions::default(), &global.options)?;
        let table = ZarrTable::open(&ctx.runtime_env(), location, options).await?;
        ctx.register_table("t", Arc::new(table))?;
    } else if !global.options.is_empty() {
        return Err(DataFusionError::Plan(
            "--option applies to a LOCATION, and none was given".into(),
        ));
    }
    let printer = Printer {
        format: global.format.unwrap_or(Format::Table),
        quiet: global.quiet,
    };
    if args.commands.is_empty() && args.files.is_empty() {
        return shell::run(&ctx, &printer).await;
    }
    for sql in &args.commands {
        run_sql(&ctx, sql, &printer).await?;
    }
    for file in &args.files {
        let sql = std::fs::read_to_string(file).map_err(|e| {
            DataFusionError::Execution(format!("cannot read {}: {e}", file.display()))
        })?;
        run_sql(&ctx, &sql, &printer).await?;
    }
    Ok(())
}

/// `COPY … TO 'file.ext'` on a local file writes a temporary file beside it that replaces the
/// target only when complete. Returns the guard that commits or removes it. Formats whose
/// writer stages the file itself are left to it: Zarr stores, and Parquet in a session where
/// `datafusion_zarr::register` installed the export's writer (not on a cluster, whose
/// executors write with DataFusion's own sink).
fn atomic_copy_target(
    ctx: &SessionContext,
    statement: &mut DFStatement,
) -> Result<Option<AtomicTarget>> {
    let DFStatement::CopyTo(copy) = statement else {
        return Ok(None);
    };
    let target = copy.target.clone();
    let local = !target.contains("://") || target.starts_with("file://");
    let path = std::path::PathBuf::from(target.strip_prefix("file://").unwrap_or(&target));
    // Absolute, as the client sees it: on a cluster an executor writes the file.
    let path = std::path::absolute(&path)
        .map_err(|e| DataFusionError::Plan(format!("COPY target '{target}': {e}")))?;
    // A target without an extension (or ending in '/') is a directory of files; a Zarr store
    // is a directory that the writer itself moves into place when complete.
    let zarr = copy.stored_as.as_deref().map_or_else(
        || {
            path.extension()
                .is_some_and(|e| e.eq_ignore_ascii_case("zarr"))
        },
        |format| format.eq_ignore_ascii_case("zarr"),
    );
    let format = copy.stored_as.clone().or_else(|| {
        path.extension()
            .map(|e| e.to_string_lossy().to_ascii_lowercase())
    });
    let stages_itself = format.is_some_and(|f| {
        f.eq_ignore_ascii_case("parquet")
            && ctx
                .state()
                .get_file_format_factory("parquet")
                .is_some_and(|factory| {
                    factory.is::<datafusion_zarr::export::ParquetFormatWithZarrWriterFactory>()
                })
    });
    if zarr
        || stages_itself
        || !local
        || !copy.partitioned_by.is_empty()
        || target.ends_with('/')
        || path.extension().is_none()
    {
        return Ok(None);
    }
    let atomic = AtomicTarget::new(&path)?;
    copy.target = atomic.temp_path().to_string_lossy().to_string();
    Ok(Some(atomic))
}

/// Runs every statement of `sql` in order, printing each result.
pub(crate) async fn run_sql(ctx: &SessionContext, sql: &str, printer: &Printer) -> Result<()> {
    let statements = DFParser::parse_sql(sql)?;
    for mut statement in statements {
        let start = Instant::now();
        let atomic = atomic_copy_target(ctx, &mut statement)?;
        let plan = ctx.state().statement_to_plan(statement).await?;
        // COPY and INSERT print one row when done: until then a spinner with the elapsed
        // time on a terminal (unless -q), as `export` and `convert` show theirs.
        let writing = match &plan {
            LogicalPlan::Copy(copy) => Some(format!(
                "writing {}",
                datafusion_zarr::shown_location(&copy.output_url)
            )),
            LogicalPlan::Dml(dml) if matches!(dml.op, WriteOp::Insert(_)) => {
                Some(format!("inserting into {}", dml.table_name))
            }
            _ => None,
        };
        let display = writing.map(|message| {
            progress::Display::start(progress::Tracked::Elapsed(message), printer.quiet, false)
        });
        let df = ctx.execute_logical_plan(plan).await?;
        let schema = Arc::new(df.schema().as_arrow().clone());
        let mut sink = printer.sink(schema.clone())?;
        let mut rows = 0usize;
        let streamed: Result<()> = async {
            let mut stream = df.execute_stream().await?;
            while let Some(batch) = stream.next().await {
                let batch = batch?;
                rows += batch.num_rows();
                sink.write(&batch)?;
            }
            Ok(())
        }
        .await;
        if let Some(display) = display {
            display.finish(streamed.is_ok());
        }
        streamed?;
        if let Some(target) = atomic {
            target.commit()?;
        }
        // Statements without a result (CREATE, SET, …) print nothing on stdout.
        if !schema.fields().is_empty() {
            sink.finish()?;
        }
        printer.summary(rows, start.elapsed());
    }
    Ok(())
}
