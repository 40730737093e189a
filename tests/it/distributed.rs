//! The codecs of `datafusion_zarr::distributed` without a cluster: a query over a Zarr table
//! encoded and decoded as Ballista does (client → scheduler as a logical plan, scheduler →
//! executor as a physical plan, each through protobuf bytes), run, and compared with the local
//! result; a scan payload naming partitions or chunks the table lacks is an error naming the
//! table, never a panic. `crates/zarr-sql/tests/cluster.rs` runs the same codecs in real
//! Ballista processes.
use std::sync::Arc;

use datafusion::arrow::util::pretty::pretty_format_batches;
use datafusion::error::Result;
use datafusion::physical_plan::{ExecutionPlan, collect, displayable};
use datafusion::prelude::SessionContext;
use datafusion_proto::bytes::{
    logical_plan_from_bytes_with_extension_codec, logical_plan_to_bytes_with_extension_codec,
    physical_plan_from_bytes_with_extension_codec, physical_plan_to_bytes_with_extension_codec,
};
use datafusion_zarr::distributed::{ZarrLogicalCodec, ZarrPhysicalCodec};

use zarr_test_support::*;

/// A session on the "scheduler" or an "executor": Zarr registered, 4 partitions.
fn process() -> SessionContext {
    let ctx = SessionContext::new_with_config(
        datafusion::prelude::SessionConfig::new().with_target_partitions(4),
    );
    datafusion_zarr::register(&ctx);
    ctx
}

/// `sql` over the 200,000-string corpus case as the table `t`, planned as a cluster plans it:
/// the optimised logical plan through the logical codec, then planned physically, and the
/// physical plan's bytes (what a task receives).
async fn task_bytes(sql: &str) -> Result<(Vec<u8>, String)> {
    let client = process();
    let store = corpus_store("17_large_200k_zstd");
    client
        .sql(&format!(
            "CREATE EXTERNAL TABLE t STORED AS ZARR LOCATION '{}'",
            root().join(store).display()
        ))
        .await?;
    let plan = client.sql(sql).await?.into_optimized_plan()?;
    let logical = logical_plan_to_bytes_with_extension_codec(&plan, &ZarrLogicalCodec::default())?;

    let scheduler = process();
    let plan = logical_plan_from_bytes_with_extension_codec(
        &logical,
        &scheduler.task_ctx(),
        &ZarrLogicalCodec::default(),
    )?;
    let physical = scheduler.state().create_physical_plan(&plan).await?;
    let shown = displayable(physical.as_ref()).indent(true).to_string();
    let bytes =
        physical_plan_to_bytes_with_extension_codec(physical, &ZarrPhysicalCodec::default())?;
    Ok((bytes.to_vec(), shown))
}

/// The plan `bytes` decoded and run on a fresh "executor".
async fn run_task(bytes: &[u8]) -> Result<String> {
    let executor = process();
    let plan: Arc<dyn ExecutionPlan> = physical_plan_from_bytes_with_extension_codec(
        bytes,
        &executor.task_ctx(),
        &ZarrPhysicalCodec::default(),
    )?;
    let batches = collect(plan, executor.task_ctx()).await?;
    Ok(pretty_format_batches(&batches)?.to_string())
}

async fn local(sql: &str) -> String {
    let ctx = process();
    let store = root().join(corpus_store("17_large_200k_zstd"));
    let create = format!(
        "CREATE EXTERNAL TABLE t STORED AS ZARR LOCATION '{}'",
        store.display()
    );
    ctx.sql(&create).await.unwrap();
    let batches = query(&ctx, sql).await.unwrap();
    pretty_format_batches(&batches).unwrap().to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_plan_through_both_codecs_gives_the_local_result() {
    let sql = "SELECT count(*), count(DISTINCT value), min(value), max(value) FROM t \
               WHERE value LIKE '%a%' AND dim_0 >= 15000";
    let (bytes, shown) = task_bytes(sql).await.unwrap();
    // The scan a cluster divides: one file group per partition, filters and pruning kept.
    assert!(shown.contains("file_type=zarr"), "{shown}");
    assert!(shown.contains("file_groups={4 groups"), "{shown}");
    assert!(shown.contains("utf32_filters=[value LIKE"), "{shown}");
    assert!(shown.contains("chunks_pruned=1"), "{shown}");
    assert_eq!(run_task(&bytes).await.unwrap(), local(sql).await);
}

/// `bytes` with `from` replaced by `to` (of the same length, so the protobuf framing holds).
fn tampered(bytes: &[u8], from: &str, to: &str) -> Vec<u8> {
    assert_eq!(from.len(), to.len());
    let at = bytes
        .windows(from.len())
        .position(|w| w == from.as_bytes())
        .unwrap_or_else(|| panic!("{from} in the payload"));
    let mut out = bytes.to_vec();
    out[at..at + to.len()].copy_from_slice(to.as_bytes());
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn a_payload_naming_what_the_table_lacks_is_an_error() {
    let (bytes, _) = task_bytes("SELECT count(value) FROM t").await.unwrap();
    let cases = [
        // A file group reading a partition the scan does not have.
        (
            tampered(&bytes, "\"groups\":[[0]", "\"groups\":[[7]"),
            "partition 7",
        ),
        // Units past the end of the array (it has 20).
        (
            tampered(&bytes, "\"selected\":[[0,20]]", "\"selected\":[[0,90]]"),
            "20 units",
        ),
        // Not JSON any more.
        (
            tampered(&bytes, "\"groups\":", "\"groups\"?"),
            "Zarr plan node",
        ),
    ];
    for (payload, expected) in cases {
        let error = run_task(&payload).await.expect_err(expected).to_string();
        assert!(error.contains(expected), "{expected}: {error}");
    }
}

/// An Icechunk table opened by branch travels as its snapshot id: the executor reads that
/// snapshot (not whatever the branch names when the task runs), and the result is the local one.
#[cfg(feature = "icechunk")]
#[tokio::test(flavor = "multi_thread")]
async fn an_icechunk_table_travels_as_its_snapshot() {
    let repository = root().join("tests/data/icechunk/strings.icechunk");
    let create = format!(
        "CREATE EXTERNAL TABLE t STORED AS ZARR LOCATION '{}' OPTIONS ('path' 'labels', 'branch' 'dev')",
        repository.display()
    );
    let sql = "SELECT count(*), min(labels), max(labels) FROM t WHERE labels LIKE 'dev%' OR \"row\" >= 3400";
    let client = process();
    client.sql(&create).await.unwrap();
    let plan = client
        .sql(sql)
        .await
        .unwrap()
        .into_optimized_plan()
        .unwrap();
    let logical =
        logical_plan_to_bytes_with_extension_codec(&plan, &ZarrLogicalCodec::default()).unwrap();
    let expected: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("tests/data/icechunk/strings.expected.json")).unwrap(),
    )
    .unwrap();
    let dev = expected["refs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "dev")
        .unwrap()["snapshot"]
        .as_str()
        .unwrap()
        .to_string();
    let text = String::from_utf8_lossy(&logical);
    assert!(text.contains(&dev), "the plan names the snapshot {dev}");
    assert!(!text.contains("\"branch\""), "and not the branch");
    let scheduler = process();
    let plan = logical_plan_from_bytes_with_extension_codec(
        &logical,
        &scheduler.task_ctx(),
        &ZarrLogicalCodec::default(),
    )
    .unwrap();
    let physical = scheduler.state().create_physical_plan(&plan).await.unwrap();
    assert!(
        displayable(physical.as_ref())
            .indent(true)
            .to_string()
            .contains(&format!("@{dev}")),
        "EXPLAIN names the snapshot"
    );
    let bytes =
        physical_plan_to_bytes_with_extension_codec(physical, &ZarrPhysicalCodec::default())
            .unwrap();
    let ran = run_task(&bytes).await.unwrap();
    let local = {
        let ctx = process();
        ctx.sql(&create).await.unwrap();
        pretty_format_batches(&query(&ctx, sql).await.unwrap())
            .unwrap()
            .to_string()
    };
    assert_eq!(ran, local);
    assert!(
        ran.contains("| 101 "),
        "100 appended rows and the dev value: {ran}"
    );
}
