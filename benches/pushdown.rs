//! What pushdown saves, side by side in one run (pushdown on vs `'pushdown' 'false'`):
//!
//! - `index_range`: 1% of a 10000x1000 float32 array (chunks 100x100) selected by an index range
//!   on its first dimension (`station < 100` on the array read alone);
//! - `string_coordinate`: the same 1% selected by the string coordinate of the group table
//!   (`station < 'ST-00100'`);
//! - `equality`: `count(*) WHERE value = '<rare string>'` over
//!   a 10-million-string store made by the scan benchmark's generator, which evaluates the equality on UTF-32 code units before any
//!   UTF-8 is made (pushdown on) or transcodes every string first (pushdown off).
//!
//! Bytes read come from the scan's `bytes_read` metric and are printed beside the bytes of the
//! chunks that truly intersect the selection.
//!
//! ```sh
//! python3 benches/peer/make_pushdown_store.py      # benches/data/stations.zarr
//! python3 benches/peer/make_store.py --n 10000000 --out benches/data/strings_10m.zarr
//! CARGO_TARGET_DIR=/work/target-bench cargo bench --bench pushdown
//! ```

use std::sync::Arc;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use datafusion::physical_plan::{ExecutionPlan, collect};
use datafusion::prelude::{SessionConfig, SessionContext};
use tokio::runtime::Runtime;

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
            // 10 of the 1,000 temp chunks intersect (plus the coordinate's chunks when used).
            println!(
                "{name}: bytes_read pushdown on {on_bytes}, off {off_bytes} ({:.1}x less)",
                off_bytes as f64 / on_bytes.max(1) as f64
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

    if let Some(words) = store("strings_10m.zarr") {
        // A string that never occurs: the rarest of matches.
        let sql = |on: bool| {
            let opt = if on { "" } else { ", '', 'pushdown', 'false'" };
            format!("SELECT count(*) FROM read_zarr('{words}'{opt}) WHERE value = 'zzzz-not-there'")
        };
        let (a, _) = rt.block_on(run(&ctx, &sql(true)));
        let (b, _) = rt.block_on(run(&ctx, &sql(false)));
        assert_eq!(a, b);
        group.bench_function("equality/raw_utf32", |b| {
            b.iter(|| rt.block_on(run(&ctx, &sql(true))))
        });
        group.bench_function("equality/transcode_then_filter", |b| {
            b.iter(|| rt.block_on(run(&ctx, &sql(false))))
        });
    } else {
        println!(
            "skipping equality: run python3 benches/peer/make_store.py --n 10000000 --out benches/data/strings_10m.zarr"
        );
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
