//! The ordered scan (`OrderedZarrScan`): a merge of the scan's sorted partitions becomes one
//! partition whose lanes decode at once. Its rows must equal, in the same order, what
//! DataFusion's own `SortPreservingMergeExec` gives in a session without the rule, for every
//! partition count, with filters on the scan and above it; a failing chunk in any lane must
//! fail the query.

use std::sync::Arc;

use arrow::util::pretty::pretty_format_batches;
use datafusion::prelude::{SessionConfig, SessionContext};
use datafusion_zarr::{ReadZarrFunction, ZarrTableFactory};

use zarr_test_support::*;

/// A session with `partitions` partitions, with or without the rule.
fn session(partitions: usize, rule: bool) -> SessionContext {
    let config = SessionConfig::new()
        .with_target_partitions(partitions)
        .with_batch_size(1000);
    let ctx = SessionContext::new_with_config(config);
    if rule {
        datafusion_zarr::register(&ctx);
    } else {
        ctx.register_udtf("read_zarr", Arc::new(ReadZarrFunction));
        let state = ctx.state_ref();
        let mut state = state.write();
        let factories = state.table_factories_mut();
        factories.insert("ZARR".into(), Arc::new(ZarrTableFactory));
    }
    ctx
}

async fn plan(ctx: &SessionContext, sql: &str) -> String {
    let batches = query(ctx, &format!("EXPLAIN {sql}")).await.unwrap();
    pretty_format_batches(&batches).unwrap().to_string()
}

/// The rows of `sql`, in order, as text.
async fn rows(ctx: &SessionContext, sql: &str) -> datafusion::error::Result<String> {
    let batches = query(ctx, sql).await?;
    Ok(pretty_format_batches(&batches)?.to_string())
}

#[tokio::test]
async fn ordered_lanes_give_the_merge_s_rows_in_the_same_order() {
    let large = corpus_store("17_large_200k_zstd");
    let cities = corpus_store("12_group_table_cities");
    let sharded = corpus_store("07_sharding_index_end");
    let missing = corpus_store("09_fill_value_missing_chunks");
    let queries = [
        format!("SELECT * FROM read_zarr('{large}') ORDER BY dim_0"),
        // String filters evaluated on the scan: many units emit nothing.
        format!(
            "SELECT dim_0, value FROM read_zarr('{large}') WHERE value LIKE '%qz%' ORDER BY dim_0"
        ),
        // A filter and a projection above the scan.
        format!(
            "SELECT dim_0 * 2 AS twice, upper(value) AS up FROM read_zarr('{large}') \
             WHERE dim_0 % 7 = 3 ORDER BY dim_0"
        ),
        // Pruned units.
        format!(
            "SELECT * FROM read_zarr('{large}') WHERE dim_0 BETWEEN 25000 AND 71234 ORDER BY dim_0"
        ),
        format!("SELECT * FROM read_zarr('{cities}') ORDER BY 1"),
        // Inner chunks of shards, and chunks that were never written.
        format!("SELECT * FROM read_zarr('{sharded}') ORDER BY dim_0"),
        format!("SELECT * FROM read_zarr('{missing}') ORDER BY dim_0"),
    ];
    for partitions in [1, 2, 3, 4, 7] {
        let ordered = session(partitions, true);
        let merged = session(partitions, false);
        for sql in &queries {
            let expected = rows(&merged, sql).await.unwrap();
            let got = rows(&ordered, sql).await.unwrap();
            assert!(expected.lines().count() > 4, "{sql}: {expected}");
            assert_eq!(got, expected, "{partitions} partitions: {sql}");
        }
        // The plan: lanes instead of a merge whenever there is more than one partition.
        let shown = plan(&ordered, &queries[0]).await;
        let merge_shown = plan(&merged, &queries[0]).await;
        if partitions > 1 {
            assert!(
                shown.contains(&format!("ordered_lanes={partitions}")),
                "{shown}"
            );
            assert!(!shown.contains("SortPreservingMergeExec"), "{shown}");
            assert!(
                merge_shown.contains("SortPreservingMergeExec"),
                "{merge_shown}"
            );
        } else {
            assert!(!shown.contains("ordered_lanes"), "{shown}");
        }
    }
}

#[tokio::test]
async fn order_by_other_columns_and_limits_keep_datafusion_s_plan() {
    let large = corpus_store("17_large_200k_zstd");
    let ctx = session(2, true);
    for sql in [
        format!("SELECT * FROM read_zarr('{large}') ORDER BY value, dim_0"),
        format!("SELECT * FROM read_zarr('{large}') ORDER BY dim_0 DESC"),
        format!("SELECT * FROM read_zarr('{large}') ORDER BY dim_0 LIMIT 5"),
    ] {
        let shown = plan(&ctx, &sql).await;
        assert!(!shown.contains("ordered_lanes"), "{sql}: {shown}");
        let expected = rows(&session(2, false), &sql).await.unwrap();
        assert_eq!(rows(&ctx, &sql).await.unwrap(), expected, "{sql}");
    }
}

#[tokio::test]
async fn a_failing_chunk_in_any_lane_fails_the_query() {
    let source = root().join("tests/data/corpus/17_large_200k_zstd/data.zarr");
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("data.zarr");
    std::fs::create_dir_all(copy.join("c")).unwrap();
    std::fs::copy(source.join("zarr.json"), copy.join("zarr.json")).unwrap();
    for entry in std::fs::read_dir(source.join("c")).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), copy.join("c").join(entry.file_name())).unwrap();
    }
    let store = copy.display().to_string();
    for bad in [0, 1, 13, 19] {
        let chunk = copy.join("c").join(bad.to_string());
        let original = std::fs::read(&chunk).unwrap();
        std::fs::write(&chunk, b"not a zstd frame").unwrap();
        for partitions in [2, 3] {
            let ctx = session(partitions, true);
            let sql = format!("SELECT * FROM read_zarr('{store}') ORDER BY dim_0");
            assert!(plan(&ctx, &sql).await.contains("ordered_lanes"));
            let error = rows(&ctx, &sql).await.unwrap_err().to_string();
            assert!(error.contains(&format!("c/{bad}")), "{error}");
        }
        std::fs::write(&chunk, original).unwrap();
    }
}

/// A table with no index order (2-D arrays chunked along both dimensions) is written by COPY
/// and by `write_parquet` in one fixed order, chunk by chunk, whatever the partition count:
/// the order of a one-partition scan, rather than partitions merged as they come; and the
/// export's file is the same bytes every time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tables_without_index_order_are_written_in_a_fixed_order() {
    use datafusion_zarr::export::{ParquetExport, write_parquet};
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

    let read = |path: &std::path::Path| -> String {
        let file = std::fs::File::open(path).unwrap();
        let reader = ParquetRecordBatchReaderBuilder::try_new(file)
            .unwrap()
            .build()
            .unwrap();
        let batches: Vec<_> = reader.map(|b| b.unwrap()).collect();
        pretty_format_batches(&batches).unwrap().to_string()
    };
    let dir = tempfile::tempdir().unwrap();
    // Several footer entries, which DataFusion's options keep in a hash map.
    let export = ParquetExport {
        metadata: ["a", "b", "c", "d", "e"]
            .map(|k| (format!("zarr.{k}"), k.repeat(3)))
            .to_vec(),
        ..ParquetExport::default()
    };
    for case in ["06_2d_transpose_dimnames", "16_zarr_v2_U12_2d_blosc_fill"] {
        let store = corpus_store(case);
        let sql = format!("SELECT * FROM read_zarr('{store}')");
        let expected = rows(&session(1, true), &sql).await.unwrap();
        assert!(expected.lines().count() > 60, "{case}: {expected}");
        let mut first_bytes: Option<Vec<u8>> = None;
        for partitions in [2, 3, 4] {
            let ctx = session(partitions, true);
            let file = dir.path().join(format!("{case}-{partitions}.parquet"));
            let copy = format!("COPY ({sql}) TO '{}'", file.display());
            let shown = plan(&ctx, &copy).await;
            assert!(shown.contains("ordered_lanes="), "{shown}");
            assert!(!shown.contains("CoalescePartitionsExec"), "{shown}");
            query(&ctx, &copy).await.unwrap();
            assert_eq!(
                read(&file),
                expected,
                "{case}, COPY, {partitions} partitions"
            );

            let exported = dir
                .path()
                .join(format!("{case}-{partitions}-export.parquet"));
            let df = ctx.sql(&sql).await.unwrap();
            write_parquet(df, &exported, &export).await.unwrap();
            assert_eq!(
                read(&exported),
                expected,
                "{case}, export, {partitions} partitions"
            );
            // The same bytes every time, footer included (its key-value pairs are sorted).
            let bytes = std::fs::read(&exported).unwrap();
            let first = first_bytes.get_or_insert_with(|| bytes.clone());
            assert!(
                *first == bytes,
                "{case}, {partitions} partitions: other bytes"
            );
        }
    }
}
