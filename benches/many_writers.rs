//! Many writers, one local store (issue #47's targets), side by side in one run, alternating:
//!
//! - **the lock's cost**: a one-row `INSERT INTO t VALUES (…)` into a local store (which takes
//!   and lets go of the store's lock) beside the lock alone (`bench_support::lock_round_trip`:
//!   the lock file, the `flock`, the holder's name written and emptied); prints the medians and
//!   INSERT / (INSERT − lock), what the INSERT costs with the lock against without it (target:
//!   at most 1.05);
//! - **4 appenders**: four sessions each appending 1,000,000 rows (an int64 key and a `<U8`
//!   string) at once, against the same four appends one after another, on fresh copies of a
//!   store of 1,000 rows (chunks of 100,000); every row checked there once; prints medians and
//!   concurrent / serial (target: at most 1.3).
//!
//! `ZARR_BENCH_RUNS` sets the runs (default 15 for the first, 3 for the second).
//!
//! ```sh
//! cargo bench -p datafusion-zarr --bench many_writers
//! ```

use std::path::Path;
use std::time::{Duration, Instant};

use datafusion::prelude::SessionContext;

const ROWS: i64 = 1_000_000;
const WRITERS: i64 = 4;

fn context() -> SessionContext {
    let ctx = SessionContext::new();
    datafusion_zarr::register(&ctx);
    ctx
}

async fn sql(ctx: &SessionContext, sql: &str) -> Vec<datafusion::arrow::array::RecordBatch> {
    ctx.sql(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .collect()
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
}

/// A session with the store at `store` registered as `t`.
async fn with_table(store: &Path) -> SessionContext {
    let ctx = context();
    sql(
        &ctx,
        &format!(
            "CREATE EXTERNAL TABLE t STORED AS ZARR LOCATION '{}'",
            store.display()
        ),
    )
    .await;
    ctx
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// `count(*)` and `count(DISTINCT k)` of the store.
async fn counts(store: &Path) -> (i64, i64) {
    let batches = sql(
        &context(),
        &format!(
            "SELECT count(*) AS n, count(DISTINCT k) AS d FROM read_zarr('{}')",
            store.display()
        ),
    )
    .await;
    let value = |i: usize| {
        batches[0]
            .column(i)
            .as_any()
            .downcast_ref::<datafusion::arrow::array::Int64Array>()
            .unwrap()
            .value(0)
    };
    (value(0), value(1))
}

fn insert_sql(from: i64) -> String {
    format!(
        "INSERT INTO t (k, s) SELECT v, concat('w', CAST(v % 997 AS VARCHAR)) \
         FROM generate_series({from}, {}) t(v)",
        from + ROWS - 1
    )
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let dir = tempfile::tempdir().unwrap();
    let seed = dir.path().join("seed.zarr");
    sql(
        &context(),
        &format!(
            "COPY (SELECT v AS k, concat('w', CAST(v % 997 AS VARCHAR)) AS s \
             FROM generate_series(0, 999) t(v)) TO '{}' STORED AS ZARR \
             OPTIONS ('chunk_rows' '100000', 'string_length' '8')",
            seed.display()
        ),
    )
    .await;
    let runs = |default: usize| {
        std::env::var("ZARR_BENCH_RUNS")
            .ok()
            .and_then(|r| r.parse().ok())
            .unwrap_or(default)
    };

    // The lock's cost beside a one-row INSERT.
    let store = dir.path().join("one_row.zarr");
    copy_dir(&seed, &store);
    let ctx = with_table(&store).await;
    let (mut inserts, mut locks) = (Vec::new(), Vec::new());
    for i in 0..runs(15) {
        let start = Instant::now();
        sql(
            &ctx,
            &format!("INSERT INTO t (k, s) VALUES ({}, 'x')", 10_000_000 + i),
        )
        .await;
        inserts.push(start.elapsed());
        let start = Instant::now();
        datafusion_zarr::bench_support::lock_round_trip(&store)
            .await
            .unwrap();
        locks.push(start.elapsed());
    }
    let (insert, lock) = (median(inserts.clone()), median(locks.clone()));
    let without = insert.saturating_sub(lock);
    println!(
        "one-row INSERT {:.3} ms, the lock alone {:.3} ms: with / without the lock {:.4}",
        insert.as_secs_f64() * 1e3,
        lock.as_secs_f64() * 1e3,
        insert.as_secs_f64() / without.as_secs_f64()
    );
    println!("  INSERT runs (ms) {:?}", ms(&inserts));
    println!("  lock runs (ms)   {:?}", ms(&locks));

    // Four appenders at once against one after another.
    let (mut concurrent, mut serial) = (Vec::new(), Vec::new());
    for round in 0..runs(3) {
        for at_once in [true, false] {
            let store = dir.path().join(format!("appenders_{round}_{at_once}.zarr"));
            copy_dir(&seed, &store);
            let mut sessions = Vec::new();
            for _ in 0..WRITERS {
                sessions.push(with_table(&store).await);
            }
            let start = Instant::now();
            if at_once {
                let tasks: Vec<_> = sessions
                    .into_iter()
                    .enumerate()
                    .map(|(w, ctx)| {
                        tokio::spawn(async move {
                            sql(&ctx, &insert_sql((w as i64 + 1) * 10_000_000)).await;
                        })
                    })
                    .collect();
                for task in tasks {
                    task.await.unwrap();
                }
                concurrent.push(start.elapsed());
            } else {
                for (w, ctx) in sessions.iter().enumerate() {
                    sql(ctx, &insert_sql((w as i64 + 1) * 10_000_000)).await;
                }
                serial.push(start.elapsed());
            }
            let expected = 1_000 + WRITERS * ROWS;
            assert_eq!(counts(&store).await, (expected, expected), "every row once");
            std::fs::remove_dir_all(&store).unwrap();
        }
    }
    let (c, s) = (median(concurrent.clone()), median(serial.clone()));
    println!(
        "{WRITERS} appenders of {ROWS} rows: at once {:.2} s, one after another {:.2} s: \
         at once / one after another {:.3}",
        c.as_secs_f64(),
        s.as_secs_f64(),
        c.as_secs_f64() / s.as_secs_f64()
    );
    println!("  at once runs (s)          {:?}", secs(&concurrent));
    println!("  one after another runs (s) {:?}", secs(&serial));
}

fn ms(times: &[Duration]) -> Vec<f64> {
    times
        .iter()
        .map(|t| (t.as_secs_f64() * 1e4).round() / 10.0)
        .collect()
}

fn secs(times: &[Duration]) -> Vec<f64> {
    times
        .iter()
        .map(|t| (t.as_secs_f64() * 100.0).round() / 100.0)
        .collect()
}
