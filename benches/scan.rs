//! Scan throughput on the benchmark store, side by side in one criterion group (named after the
//! store, `strings_20m`), in bytes of
//! UTF-32 input (elements × 64) per second:
//!
//! - `decode_only/N` — the limit: fetch and decode (zstd) every chunk with
//!   `datafusion_zarr::bench_support::decode_all`, no transcoding, N chunks in flight as tokio tasks on a
//!   runtime of N workers;
//! - `scan/N` — `SELECT count(*) FROM t WHERE value LIKE '%ab%'` with `target_partitions = N`,
//!   on a runtime of N workers (the `LIKE` runs on the UTF-32 code units in the scan, and only
//!   the matches are transcoded);
//! - `transcode/N` — the same query with the table option `pushdown = false`: every string is
//!   transcoded to a `Utf8` array and DataFusion's `LIKE` filters them.
//!
//! N runs over 1 and the number of cores (`ZARR_BENCH_THREADS=1,2` overrides).
//!
//! ```text
//! python3 benches/peer/make_store.py        # once: benches/data/strings_20m.zarr
//! CARGO_TARGET_DIR=/work/target-bench cargo bench -p datafusion-zarr --bench scan
//! ```
//!
//! `ZARR_BENCH_STORE` names another store (e.g. `benches/data/strings_1m.zarr`).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use arrow::array::{Array, Int64Array};
use criterion::{BenchmarkId, Criterion, SamplingMode, Throughput};
use datafusion::prelude::{SessionConfig, SessionContext};
use datafusion_zarr::{ZarrOptions, ZarrTable};
use tokio::runtime::Runtime;

use datafusion_zarr::bench_support::{chunk_count, decode_all};

const QUERY: &str = "SELECT count(*) FROM t WHERE value LIKE '%ab%'";

fn store_path() -> PathBuf {
    std::env::var_os("ZARR_BENCH_STORE")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("benches/data/strings_20m.zarr")
        })
}

fn thread_counts() -> Vec<usize> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut counts: Vec<usize> = match std::env::var("ZARR_BENCH_THREADS") {
        Ok(s) => s
            .split(',')
            .map(|t| {
                t.trim()
                    .parse()
                    .expect("ZARR_BENCH_THREADS: comma-separated numbers")
            })
            .collect(),
        Err(_) => vec![1, cores],
    };
    counts.dedup();
    counts
}

fn runtime(workers: usize) -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .expect("tokio runtime")
}

async fn count(ctx: &SessionContext) -> i64 {
    let batches = ctx
        .sql(QUERY)
        .await
        .expect("plan")
        .collect()
        .await
        .expect("run");
    let col = batches[0]
        .column(0)
        .as_any()
        .downcast_ref::<Int64Array>()
        .expect("count(*) is Int64");
    assert_eq!(col.len(), 1);
    col.value(0)
}

fn main() {
    let path = store_path();
    if !path.join("zarr.json").is_file() {
        eprintln!(
            "scan bench skipped: no Zarr store at {} (generate it with \
             `python3 benches/peer/make_store.py`, or set ZARR_BENCH_STORE)",
            path.display()
        );
        return;
    }
    let location = path.to_str().expect("UTF-8 store path").to_string();
    let threads = thread_counts();

    let rt = runtime(1);
    let table = rt
        .block_on(ZarrTable::open(
            &SessionContext::new().runtime_env(),
            &location,
            ZarrOptions::default(),
        ))
        .expect("open the store");
    let rows = table.num_rows().expect("row count");
    let chunks = chunk_count(&table);
    println!(
        "store {location}: {rows} strings, {chunks} chunks, {} MiB of UTF-32; threads: {threads:?} (cores: {})",
        (rows * 64) >> 20,
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );

    let mut c = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(20))
        .configure_from_args();
    let stem = path
        .file_stem()
        .map_or("store".into(), |s| s.to_string_lossy());
    let mut group = c.benchmark_group(stem.trim_end_matches(".zarr").to_string());
    group
        .throughput(Throughput::Bytes(rows * 64))
        .sampling_mode(SamplingMode::Flat);

    for &n in &threads {
        let rt = runtime(n);
        let decoded = rt.block_on(decode_all(&table, n));
        assert_eq!(decoded as u64, rows, "decode_only decoded every element");
        println!("decode_only/{n}: {n} chunks in flight on {n} tokio workers");
        group.bench_function(BenchmarkId::new("decode_only", n), |b| {
            b.iter(|| rt.block_on(decode_all(&table, n)))
        });
    }

    let no_pushdown = rt
        .block_on(ZarrTable::open(
            &SessionContext::new().runtime_env(),
            &location,
            ZarrOptions {
                pushdown: false,
                ..ZarrOptions::default()
            },
        ))
        .expect("open the store");
    let mut counted = None;
    for (name, table) in [("scan", &table), ("transcode", &no_pushdown)] {
        for &n in &threads {
            let rt = runtime(n);
            let config = SessionConfig::new().with_target_partitions(n);
            let ctx = SessionContext::new_with_config(config);
            ctx.register_table("t", Arc::new(table.clone()))
                .expect("register");
            let matches = rt.block_on(count(&ctx));
            assert_eq!(*counted.get_or_insert(matches), matches, "{name}/{n}");
            println!(
                "{name}/{n}: target_partitions = {n} on {n} tokio workers; {QUERY} = {matches}"
            );
            group.bench_function(BenchmarkId::new(name, n), |b| {
                b.iter(|| rt.block_on(count(&ctx)))
            });
        }
    }
    group.finish();
    c.final_summary();
}
