//! Runs one SQL query over a local Zarr group store registered as table `t` through arrow-zarr's
//! `ZarrTable`, printing the result and the planning + execution time.
//!
//! Usage: `arrow-zarr-query STORE SQL [--threads N]`. The query runs on a tokio runtime of N
//! worker threads (default 2) with DataFusion's `target_partitions` = N. Registering the table
//! (which lists the store and reads every array's `zarr.json` to infer the schema) is not timed;
//! `elapsed_ms` covers `SessionContext::sql` (parsing, planning) and `DataFrame::collect`
//! (optimizing, executing).

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use arrow_zarr::table::ZarrTable;
use datafusion::arrow::util::pretty::pretty_format_batches;
use datafusion::prelude::{SessionConfig, SessionContext};

fn usage() -> ExitCode {
    eprintln!("usage: arrow-zarr-query STORE SQL [--threads N]");
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let mut positional = Vec::new();
    let mut threads: usize = 2;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        if arg == "--threads" {
            match args.next().and_then(|n| n.parse().ok()).filter(|&n| n > 0) {
                Some(n) => threads = n,
                None => return usage(),
            }
        } else if let Some(n) = arg.strip_prefix("--threads=") {
            match n.parse().ok().filter(|&n| n > 0) {
                Some(n) => threads = n,
                None => return usage(),
            }
        } else {
            positional.push(arg);
        }
    }
    if positional.len() != 2 {
        return usage();
    }
    let sql = positional.pop().unwrap();
    let store = positional.pop().unwrap();
    // ListingTableUrl::parse (inside ZarrTable::from_path) wants an absolute path or a URL.
    let store = match std::fs::canonicalize(&store) {
        Ok(p) if p.is_dir() => p.to_string_lossy().into_owned(),
        _ => {
            eprintln!("error: STORE {store} is not a directory");
            return ExitCode::FAILURE;
        }
    };

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .enable_all()
        .build()
        .expect("tokio runtime");
    match runtime.block_on(run(store, sql, threads)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(store: String, sql: String, threads: usize) -> datafusion::error::Result<()> {
    let config = SessionConfig::new().with_target_partitions(threads);
    let ctx = SessionContext::new_with_config(config);
    // ZarrTable::from_path panics (unwrap) on a store it cannot read.
    let table = ZarrTable::from_path(store).await;
    ctx.register_table("t", Arc::new(table))?;

    let start = Instant::now();
    let batches = ctx.sql(&sql).await?.collect().await?;
    let elapsed = start.elapsed();

    println!("{}", pretty_format_batches(&batches)?);
    println!("elapsed_ms={:.3}", elapsed.as_secs_f64() * 1e3);
    Ok(())
}
