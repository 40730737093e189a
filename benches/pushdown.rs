//! What pushdown saves, side by side in one run (pushdown on vs `'pushdown' 'false'`):
//!
//! - `index_range`: 1% of a 10000x1000 float32 array (chunks 100x100) selected by an index range
//!   on its first dimension (`station < 100` on the array read alone);
//! - `string_coordinate`: the same 1% selected by the string coordinate of the group table
//!   (`station < 'ST-00100'`);
//! - `equality_*`: `count(*) WHERE value = '<a string that never occurs>'` over a
//!   10-million-string store made by the scan benchmark's generator, evaluated on UTF-32 code
//!   units before any UTF-8 is made (`raw_utf32`, pushdown on) or after transcoding every
//!   string (`transcode_then_filter`, pushdown off); `contains_*`: the same with the rare
//!   `LIKE '%qz%'`. Each on the zstd store and on an uncompressed copy, where decompression no
//!   longer hides the filter's own cost.
//!
//! `decode_only_*` is the floor for both: fetching and decoding every chunk of the store with 2
//! chunks in flight, nothing else.
//!
//! Bytes read come from the scan's `bytes_read` metric and are printed beside the bytes of the
//! chunks that truly intersect the selection.
//!
//! ```sh
//! python3 benches/peer/make_pushdown_store.py      # benches/data/stations.zarr
//! python3 benches/peer/make_store.py --n 10000000 --out benches/data/strings_10m.zarr
//! python3 benches/peer/make_store.py --n 10000000 --uncompressed --out benches/data/strings_10m_raw.zarr
//! CARGO_TARGET_DIR=/work/target-bench cargo bench -p datafusion-zarr --bench pushdown
//! ```

use std::sync::Arc;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use datafusion::physical_plan::{ExecutionPlan, collect};
use datafusion::prelude::{SessionConfig, SessionContext};
use datafusion_zarr::{ZarrOptions, ZarrTable};
use tokio::runtime::Runtime;

use datafusion_zarr::bench_support::decode_all;

fn store(name: &str) -> Option<String> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("benches/data")
        .join(name);
    path.exists().then(|| path.display().to_string())
}

fn context() -> SessionContext {
    let ctx = SessionContext::new_with_config(SessionConfig::new().with_target_partitions(2));
    datafusion_zarr::register(&ctx);
    ctx
}

/// Runs `sql`; returns (rows of the first column summed as text, bytes_read of the scan).
async fn run(ctx: &SessionContext, sql: &str) -> (String, usize) {
    let plan = ctx
        .sql(sql)
        .await
        .unwrap()
        .create_physical_plan()
        .await
        .unwrap();
    let batches = collect(plan.clone(), ctx.task_ctx()).await.unwrap();
    fn find(p: &Arc<dyn ExecutionPlan>) -> Option<Arc<dyn ExecutionPlan>> {
        if p.name() == "ZarrScanExec" {
            return Some(p.clone());
        }
        p.children().into_iter().find_map(find)
    }
    let bytes = find(&plan)
        .and_then(|s| s.metrics())
        .and_then(|m| m.sum_by_name("bytes_read"))
        .map_or(0, |m| m.as_usize());
    let text = arrow::util::pretty::pretty_format_batches(&batches)
        .unwrap()
        .to_string();
    (text, bytes)
}

fn bench(c: &mut Criterion) {
    let rt = Runtime::new().unwrap();
    let ctx = context();
    let mut group = c.benchmark_group("pushdown");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(5))
        .warm_up_time(Duration::from_secs(1));

    if let Some(st) = store("stations.zarr") {
        let cases = [
            (
                "index_range",
                format!("read_zarr('{st}', 'temp')"),
                format!("read_zarr('{st}', 'temp', 'pushdown', 'false')"),
                "station < 100",
            ),
            (
                "string_coordinate",
                format!("read_zarr('{st}')"),
                format!("read_zarr('{st}', '', 'pushdown', 'false')"),
                "station < 'ST-00100'",
            ),
        ];
        for (name, on, off, pred) in cases {
            let sql = |on_off: bool| {
                let table = if on_off { &on } else { &off };
                format!("SELECT count(*), sum(temp) FROM {table} WHERE {pred}")
            };
            let (on_result, on_bytes) = rt.block_on(run(&ctx, &sql(true)));
            let (off_result, off_bytes) = rt.block_on(run(&ctx, &sql(false)));
            assert_eq!(on_result, off_result, "{name}: pushdown changed the result");
            // 10 of the 1,000 temp chunks intersect: the first row of chunks, temp/c/0/*.
            let intersecting: u64 = std::fs::read_dir(format!("{st}/temp/c/0"))
                .map(|d| {
                    d.filter_map(|e| e.ok()?.metadata().ok())
                        .map(|m| m.len())
                        .sum()
                })
                .unwrap_or(0);
            // Pruning on the string coordinate reads it whole while planning (not counted by
            // the scan's bytes_read): its chunks are station/c/*.
            let coordinate: u64 = if name == "string_coordinate" {
                std::fs::read_dir(format!("{st}/station/c"))
                    .map(|d| {
                        d.filter_map(|e| e.ok()?.metadata().ok())
                            .map(|m| m.len())
                            .sum()
                    })
                    .unwrap_or(0)
            } else {
                0
            };
            println!(
                "{name}: bytes_read pushdown on {on_bytes} (+ {coordinate} coordinate bytes read \
                 while planning), off {off_bytes} ({:.1}x less); the intersecting chunks hold \
                 {intersecting} bytes (on / intersecting = {:.2})",
                off_bytes as f64 / (on_bytes + coordinate as usize).max(1) as f64,
                (on_bytes as u64 + coordinate) as f64 / intersecting.max(1) as f64
            );
            group.bench_function(format!("{name}/on"), |b| {
                b.iter(|| rt.block_on(run(&ctx, &sql(true))))
            });
            group.bench_function(format!("{name}/off"), |b| {
                b.iter(|| rt.block_on(run(&ctx, &sql(false))))
            });
        }
    } else {
        println!(
            "skipping index_range/string_coordinate: run python3 benches/peer/make_pushdown_store.py"
        );
    }

    // The same 10 M strings zstd-compressed and uncompressed: with zstd, decompression is most
    // of the time either way; uncompressed, the filter itself is.
    let mut any = false;
    for (label, name) in [
        ("zstd", "strings_10m.zarr"),
        ("uncompressed", "strings_10m_raw.zarr"),
    ] {
        let Some(words) = store(name) else { continue };
        any = true;
        let queries = [
            // A string that never occurs: the rarest of matches.
            ("equality", "value = 'zzzz-not-there'"),
            // A rare substring: one memmem scan per chunk on the raw path.
            ("contains", "value LIKE '%qz%'"),
        ];
        // The floor: fetching and decoding the chunks, nothing else.
        let table = rt
            .block_on(ZarrTable::open(
                &SessionContext::new().runtime_env(),
                &words,
                ZarrOptions::default(),
            ))
            .expect("open the store");
        group.bench_function(format!("decode_only_{label}"), |b| {
            b.iter(|| rt.block_on(decode_all(&table, 2)))
        });
        for (query, predicate) in queries {
            let sql = |on: bool| {
                let opt = if on { "" } else { ", '', 'pushdown', 'false'" };
                format!("SELECT count(*) FROM read_zarr('{words}'{opt}) WHERE {predicate}")
            };
            let (a, _) = rt.block_on(run(&ctx, &sql(true)));
            let (b, _) = rt.block_on(run(&ctx, &sql(false)));
            assert_eq!(a, b, "{query} on {name}: pushdown changed the result");
            println!(
                "{query}_{label}: {predicate} -> {}",
                a.lines().nth(3).unwrap_or("").trim()
            );
            group.bench_function(format!("{query}_{label}/raw_utf32"), |b| {
                b.iter(|| rt.block_on(run(&ctx, &sql(true))))
            });
            group.bench_function(format!("{query}_{label}/transcode_then_filter"), |b| {
                b.iter(|| rt.block_on(run(&ctx, &sql(false))))
            });
        }
    }
    if !any {
        println!(
            "skipping equality/contains: run python3 benches/peer/make_store.py --n 10000000 --out benches/data/strings_10m.zarr"
        );
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
