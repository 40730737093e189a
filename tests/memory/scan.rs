//! A local scan holds what its limits allow, not what the store holds: on a group of three
//! float64 arrays of 8,000,000 rows (16 units of 500,000 rows, 12 MB decoded each; 192 MB in
//! all), a full `sum`, a 50% filter, a one-unit filter and a filter matching nothing each
//! peak below the read-ahead budget and two decoded units per partition, far below the store.

use zarr_test_support::counting_alloc;
use zarr_test_support::*;

const ROWS: u64 = 8_000_000;
const UNIT_ROWS: u64 = 500_000;
/// Bytes of one decoded unit: three float64 columns.
const UNIT_BYTES: usize = 3 * 8 * UNIT_ROWS as usize;
/// The local default of `read_ahead_bytes`.
const READ_AHEAD: usize = 32 << 20;
const PARTITIONS: usize = 2;

// The guard keeps other tests of this binary from allocating while this one measures; the
// test's runtime is its own, so holding it across awaits blocks nothing else.
#[allow(clippy::await_holding_lock)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_local_scan_holds_its_read_ahead_and_two_units_per_partition() {
    let _alone = counting_alloc::alone();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("floats.zarr");
    let store = store.display();
    query(
        &context(),
        &format!(
            "COPY (SELECT v / 1000.0 AS a, \
             CAST((v * 2654435761) % 4294967296 AS DOUBLE) / 4294967296.0 AS b, \
             CAST(v % 100 AS DOUBLE) AS cc FROM generate_series(0, {}) t(v)) \
             TO '{store}' STORED AS ZARR OPTIONS ('chunk_rows' '{UNIT_ROWS}')",
            ROWS - 1
        ),
    )
    .await
    .unwrap();
    let bound = PARTITIONS * (READ_AHEAD + 2 * UNIT_BYTES);
    let store_bytes = 3 * 8 * ROWS as usize;
    assert!(bound < store_bytes, "the bound is below the whole store");
    // `b` of row v is (v · 2654435761 mod 2^32) / 2^32: above 0.5 where that residue is.
    let half = (0..ROWS)
        .filter(|v| (v * 2_654_435_761) % (1 << 32) > 1 << 31)
        .count() as u64;
    for (what, sql, want) in [
        (
            "full",
            "SELECT count(*) AS n FROM t WHERE a + b + cc >= 0",
            ROWS,
        ),
        ("50%", "SELECT count(*) AS n FROM t WHERE b > 0.5", half),
        (
            "one unit",
            "SELECT count(*) AS n FROM t WHERE a >= 7500",
            500_000,
        ),
        ("none", "SELECT count(*) AS n FROM t WHERE b > 2", 0),
    ] {
        let ctx = context_with_partitions(PARTITIONS);
        ctx.sql(&format!(
            "CREATE EXTERNAL TABLE t STORED AS ZARR LOCATION '{store}'"
        ))
        .await
        .unwrap();
        let measure = counting_alloc::Measure::start();
        let batches = query(&ctx, sql).await.unwrap();
        let peak = measure.peak();
        let n = to_json(column(&batches, "n").as_ref())[0].as_u64().unwrap();
        assert_eq!(n, want, "{what}");
        assert!(
            peak < bound,
            "{what}: peak allocation {} MiB, bound {} MiB",
            peak >> 20,
            bound >> 20
        );
        eprintln!(
            "{what}: peak {} MiB (bound {} MiB)",
            peak >> 20,
            bound >> 20
        );
    }
}
