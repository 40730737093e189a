//! The row counts a scan reports to DataFusion's optimizer: exact for a plain scan (so
//! `count(*)` may be answered from metadata), an upper bound once UTF-32 string filters drop
//! rows inside the scan (an exact count there let a `count(*)` skip the filter whenever
//! DataFusion's aggregate-statistics rule ran after the filter moved into the scan, as on a
//! Ballista scheduler).

use std::sync::Arc;

use datafusion::common::stats::Precision;
use datafusion::physical_plan::statistics::StatisticsContext;
use datafusion::physical_plan::{ExecutionPlan, StatisticsArgs};
use datafusion_zarr::ZarrScanExec;

use zarr_test_support::*;

/// The ZarrScanExec of `sql`'s physical plan.
async fn scan_of(sql: &str) -> Arc<dyn ExecutionPlan> {
    let ctx = context();
    let plan = ctx
        .sql(sql)
        .await
        .unwrap()
        .create_physical_plan()
        .await
        .unwrap();
    let mut todo = vec![plan];
    while let Some(node) = todo.pop() {
        if node.downcast_ref::<ZarrScanExec>().is_some() {
            return node;
        }
        todo.extend(node.children().into_iter().cloned());
    }
    panic!("no ZarrScanExec in the plan of {sql}");
}

/// The row count the plan reports for all its partitions.
fn rows_of(plan: &dyn ExecutionPlan) -> Precision<usize> {
    let stats = StatisticsContext::new()
        .compute(plan, &StatisticsArgs::new())
        .unwrap();
    stats.num_rows
}

#[tokio::test]
async fn string_filters_make_the_row_count_an_upper_bound() {
    let store = corpus_store("17_large_200k_zstd");
    let plain = scan_of(&format!("SELECT value FROM read_zarr('{store}')")).await;
    let rows = rows_of(plain.as_ref());
    assert_eq!(rows, Precision::Exact(200_000));

    let sql = format!("SELECT value FROM read_zarr('{store}') WHERE value LIKE '%nix%'");
    let filtered = scan_of(&sql).await;
    let rows = rows_of(filtered.as_ref());
    assert_eq!(rows, Precision::Inexact(200_000));
    // And the count is the filtered one.
    let batches = query(&context(), &format!("SELECT count(*) AS n FROM ({sql})"))
        .await
        .unwrap();
    assert_eq!(show(column(&batches, "n").as_ref()), ["13257"]);
}
