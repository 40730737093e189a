//! What the scan reads, counted by an object-store wrapper: registration reads metadata only,
//! `count(*)` reads no chunk, `LIMIT` stops early, and only projected arrays are fetched.

use std::fmt;
use std::ops::Range;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use bytes::Bytes;
use futures::stream::BoxStream;
use object_store::local::LocalFileSystem;
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMultipartOptions, PutOptions, PutPayload, PutResult, Result,
};
use url::Url;

use zarr_test_support::*;

#[derive(Debug, Default)]
struct Log {
    gets: Vec<String>,
    lists: usize,
}

#[derive(Debug)]
struct Counting {
    inner: LocalFileSystem,
    log: Arc<Mutex<Log>>,
}

impl fmt::Display for Counting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Counting({})", self.inner)
    }
}

#[async_trait]
impl ObjectStore for Counting {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> Result<PutResult> {
        self.inner.put_opts(location, payload, opts).await
    }
    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        self.inner.put_multipart_opts(location, opts).await
    }
    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        self.log.lock().unwrap().gets.push(location.to_string());
        self.inner.get_opts(location, options).await
    }
    async fn get_ranges(&self, location: &Path, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        self.log.lock().unwrap().gets.push(location.to_string());
        self.inner.get_ranges(location, ranges).await
    }
    fn delete_stream(
        &self,
        locations: BoxStream<'static, Result<Path>>,
    ) -> BoxStream<'static, Result<Path>> {
        self.inner.delete_stream(locations)
    }
    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        self.log.lock().unwrap().lists += 1;
        self.inner.list(prefix)
    }
    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        self.log.lock().unwrap().lists += 1;
        self.inner.list_with_delimiter(prefix).await
    }
    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        self.inner.copy_opts(from, to, options).await
    }
}

fn counting_context() -> (datafusion::prelude::SessionContext, Arc<Mutex<Log>>) {
    let ctx = context();
    let log = Arc::new(Mutex::new(Log::default()));
    let store = Counting {
        inner: LocalFileSystem::new(),
        log: log.clone(),
    };
    ctx.register_object_store(&Url::parse("file://").unwrap(), Arc::new(store));
    (ctx, log)
}

fn chunk_gets(log: &Mutex<Log>) -> Vec<String> {
    log.lock()
        .unwrap()
        .gets
        .iter()
        .filter(|g| !g.ends_with("zarr.json") && !g.ends_with(".zarray") && !g.ends_with(".zattrs"))
        .cloned()
        .collect()
}

#[tokio::test]
async fn registration_reads_metadata_only_and_never_lists() {
    let (ctx, log) = counting_context();
    let store = corpus_store("17_large_200k_zstd");
    ctx.sql(&format!(
        "CREATE EXTERNAL TABLE t STORED AS ZARR LOCATION '{store}'"
    ))
    .await
    .unwrap();
    let store13 = corpus_store("13_group_consolidated_metadata");
    ctx.sql(&format!(
        "CREATE EXTERNAL TABLE g STORED AS ZARR LOCATION '{store13}'"
    ))
    .await
    .unwrap();
    let log = log.lock().unwrap();
    assert_eq!(log.lists, 0, "no list call");
    assert_eq!(log.gets.len(), 2, "one zarr.json each: {:?}", log.gets);
    assert!(log.gets.iter().all(|g| g.ends_with("zarr.json")));
}

#[tokio::test]
async fn count_star_reads_no_chunk() {
    let (ctx, log) = counting_context();
    let store = corpus_store("17_large_200k_zstd");
    let batches = query(
        &ctx,
        &format!("SELECT count(*) AS n FROM read_zarr('{store}')"),
    )
    .await
    .unwrap();
    assert_eq!(
        to_json(column(&batches, "n").as_ref()),
        [serde_json::json!(200000)]
    );
    assert!(chunk_gets(&log).is_empty(), "{:?}", chunk_gets(&log));
}

#[tokio::test]
async fn limit_reads_one_chunk() {
    let (ctx, log) = counting_context();
    let store = corpus_store("17_large_200k_zstd");
    let batches = query(&ctx, &format!("SELECT * FROM read_zarr('{store}') LIMIT 5"))
        .await
        .unwrap();
    assert_eq!(batches.iter().map(|b| b.num_rows()).sum::<usize>(), 5);
    let gets = chunk_gets(&log);
    assert_eq!(gets.len(), 1, "{gets:?}");
    assert!(gets[0].ends_with("c/0"));
}

#[tokio::test]
async fn only_projected_arrays_are_read() {
    let (ctx, log) = counting_context();
    let store = corpus_store("13_group_consolidated_metadata");
    query(&ctx, &format!("SELECT label FROM read_zarr('{store}')"))
        .await
        .unwrap();
    let gets = chunk_gets(&log);
    assert!(!gets.is_empty());
    assert!(gets.iter().all(|g| g.contains("/label/c/")), "{gets:?}");
    // Each of the three chunks is fetched once.
    assert_eq!(gets.len(), 3, "{gets:?}");
}

#[tokio::test]
async fn scans_stream_in_batches_over_partitions() {
    let config = datafusion::prelude::SessionConfig::new()
        .with_target_partitions(3)
        .with_batch_size(1000);
    let ctx = datafusion::prelude::SessionContext::new_with_config(config);
    datafusion_zarr::register(&ctx);
    let store = corpus_store("17_large_200k_zstd");
    let df = ctx
        .sql(&format!("SELECT value FROM read_zarr('{store}')"))
        .await
        .unwrap();
    let plan = df.create_physical_plan().await.unwrap();
    use datafusion::physical_plan::ExecutionPlanProperties;
    let scan = plan
        .children()
        .first()
        .map(|c| (*c).clone())
        .unwrap_or(plan.clone());
    assert_eq!(scan.output_partitioning().partition_count(), 3);
    let task = ctx.task_ctx();
    let mut total = 0;
    for p in 0..3 {
        let batches =
            datafusion::physical_plan::common::collect(scan.execute(p, task.clone()).unwrap())
                .await
                .unwrap();
        assert!(batches.iter().all(|b| b.num_rows() <= 1000));
        total += batches.iter().map(|b| b.num_rows()).sum::<usize>();
    }
    assert_eq!(total, 200_000);
}

/// Runs `sql` and returns the summed metric `name` of its ZarrScanExec.
async fn scan_metric(
    ctx: &datafusion::prelude::SessionContext,
    sql: &str,
    names: &[&str],
) -> (usize, Vec<usize>) {
    use datafusion::physical_plan::ExecutionPlan;
    let df = ctx.sql(sql).await.unwrap();
    let plan = df.create_physical_plan().await.unwrap();
    let batches = datafusion::physical_plan::collect(plan.clone(), ctx.task_ctx())
        .await
        .unwrap();
    let rows = batches.iter().map(|b| b.num_rows()).sum();
    fn find(p: &std::sync::Arc<dyn ExecutionPlan>) -> Option<std::sync::Arc<dyn ExecutionPlan>> {
        if p.name() == "ZarrScanExec" {
            return Some(p.clone());
        }
        p.children().into_iter().find_map(find)
    }
    let scan = find(&plan).expect("a ZarrScanExec");
    let metrics = scan.metrics().unwrap();
    let values = names
        .iter()
        .map(|n| metrics.sum_by_name(n).map_or(0, |m| m.as_usize()))
        .collect();
    (rows, values)
}

/// A predicate on a data variable is evaluated on its column first, per work unit: the other
/// columns' chunks are fetched and decoded only for units with a matching row, and only the
/// matching rows are transcoded (late materialisation); the answer is pushdown off's.
#[tokio::test]
async fn a_predicate_on_a_data_variable_reads_the_other_columns_only_where_rows_match() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("floats.zarr");
    let store = store.display();
    let ctx = context();
    ctx.sql(&format!(
        "COPY (SELECT v / 10.0 AS a, CAST(v * 2 AS DOUBLE) AS b, CAST(v % 7 AS BIGINT) AS c \
         FROM generate_series(0, 99999) t(v)) TO '{store}' STORED AS ZARR \
         OPTIONS ('chunk_rows' '10000')"
    ))
    .await
    .unwrap()
    .collect()
    .await
    .unwrap();
    let names = [
        "chunks_read",
        "units_without_matches",
        "rows_transcoded",
        "rows_decoded",
    ];
    let sql = |options: &str, predicate: &str| {
        format!(
            "SELECT sum(b) AS s, count(*) AS n FROM read_zarr('{store}'{options}) WHERE {predicate}"
        )
    };
    // 5,000 rows, all in the last of 10 units: `a` read in 10 units, `b` in one.
    let (_, m) = scan_metric(&ctx, &sql("", "a >= 9500"), &names).await;
    assert_eq!(m, [11, 9, 5_000, 100_000], "{names:?}");
    let (_, off) = scan_metric(&ctx, &sql(", '', 'pushdown', 'false'", "a >= 9500"), &names).await;
    assert_eq!(off, [20, 0, 100_000, 100_000], "{names:?}");
    // Ranges, IN, IS NULL, OR and NOT of them, and an expression of two columns: the same
    // answers as DataFusion's own filter.
    for predicate in [
        "a >= 9500",
        "a BETWEEN 10 AND 20.5 OR a > 9999.8",
        "c IN (1, 3) AND a < 100",
        "NOT (a < 9990) AND c <> 2",
        "a IS NULL",
        "b IS NOT NULL AND a * 20 < b + 1",
        "b > 1e9",
        // Dense selections (most rows of each batch pass): filtered out of the values.
        "c <> 3",
        "a > 10 AND c < 6",
    ] {
        let on = query(&ctx, &sql("", predicate)).await.unwrap();
        let off = query(&ctx, &sql(", '', 'pushdown', 'false'", predicate))
            .await
            .unwrap();
        assert_eq!(
            to_json(column(&on, "s").as_ref()),
            to_json(column(&off, "s").as_ref()),
            "{predicate}"
        );
        assert_eq!(
            to_json(column(&on, "n").as_ref()),
            to_json(column(&off, "n").as_ref()),
            "{predicate}"
        );
    }
    // No match anywhere: only the filter column is read.
    let (_, m) = scan_metric(&ctx, &sql("", "b > 1e9"), &names).await;
    assert_eq!(m[..2], [10, 10], "{names:?}");
    // EXPLAIN shows it, and DataFusion's FilterExec is gone: the scan evaluates it exactly.
    let plan = query(&ctx, &format!("EXPLAIN {}", sql("", "a >= 9500")))
        .await
        .unwrap();
    let plan = arrow::util::pretty::pretty_format_batches(&plan)
        .unwrap()
        .to_string();
    assert!(
        plan.contains("decoded_filters=[a >= Float64(9500)]"),
        "{plan}"
    );
    assert!(!plan.contains("FilterExec"), "{plan}");
    // The filter's column is read for it, not output: the projection above is the scan's.
    assert!(
        plan.contains("projection=[b], chunks=10, decoded_filters=[a >= Float64(9500)]"),
        "{plan}"
    );
    assert!(!plan.contains("ProjectionExec: expr=[b@"), "{plan}");
    // EXPLAIN ANALYZE counts, per column, what the units without matches left unread: 9 of
    // `b`'s chunks of 10,000 float64 each.
    let analyzed = query(&ctx, &format!("EXPLAIN ANALYZE {}", sql("", "a >= 9500")))
        .await
        .unwrap();
    let analyzed = arrow::util::pretty::pretty_format_batches(&analyzed)
        .unwrap()
        .to_string();
    assert!(
        analyzed.contains("chunks_skipped[b]=9")
            && analyzed.contains("bytes_not_decoded[b]=720.0 K"),
        "{analyzed}"
    );
}

/// A TopK's dynamic filter (`ORDER BY a LIMIT 10`) is evaluated on each unit's `a` like the
/// scan's own filters: once the first unit set the threshold, the other units' `b` is neither
/// fetched nor decoded. One partition, so the threshold comes before the other units.
#[tokio::test]
async fn a_topk_threshold_leaves_the_other_columns_of_later_units_unread() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("floats.zarr");
    let store = store.display();
    let ctx = zarr_test_support::context_with_partitions(1);
    query(
        &ctx,
        &format!(
            "COPY (SELECT v / 10.0 AS a, CAST(v * 2 AS DOUBLE) AS b \
             FROM generate_series(0, 99999) t(v)) TO '{store}' STORED AS ZARR \
             OPTIONS ('chunk_rows' '10000')"
        ),
    )
    .await
    .unwrap();
    let sql = format!("SELECT a, b FROM read_zarr('{store}') ORDER BY a LIMIT 10");
    let names = ["units_without_matches", "chunks_read"];
    let (rows, m) = scan_metric(&ctx, &sql, &names).await;
    assert_eq!(rows, 10);
    assert_eq!(m, [9, 10 + 1], "{names:?}: `a`'s 10 chunks and one of `b`");
    let got = query(&ctx, &sql).await.unwrap();
    let want: Vec<_> = (0..10).map(|v| serde_json::json!(v as f64 * 2.0)).collect();
    assert_eq!(to_json(column(&got, "b").as_ref()), want);
}

#[tokio::test]
async fn only_matching_rows_are_transcoded() {
    let ctx = context();
    let store = corpus_store("17_large_200k_zstd");
    let (rows, m) = scan_metric(
        &ctx,
        &format!("SELECT dim_0, value FROM read_zarr('{store}') WHERE value = 'mar'"),
        &["rows_transcoded", "rows_decoded"],
    )
    .await;
    assert_eq!(rows, 647);
    assert_eq!(m[0], 647, "rows_transcoded");
    assert_eq!(m[1], 200_000, "rows_decoded");
    let (rows, m) = scan_metric(
        &ctx,
        &format!("SELECT value FROM read_zarr('{store}') WHERE starts_with(value, 'Zor') AND dim_0 < 50000"),
        &["rows_transcoded", "chunks_read", "chunks_pruned"],
    )
    .await;
    assert_eq!(m[0], rows, "rows_transcoded equals the matching rows");
    assert_eq!((m[1], m[2]), (5, 15), "chunks read and pruned");
    // Without pushdown, every row is transcoded.
    let (rows_off, m) = scan_metric(
        &ctx,
        &format!("SELECT value FROM read_zarr('{store}', '', 'pushdown', 'false') WHERE starts_with(value, 'Zor') AND dim_0 < 50000"),
        &["rows_transcoded"],
    )
    .await;
    assert_eq!(rows_off, rows);
    assert_eq!(m[0], 200_000);
    // Any LIKE pattern runs on code units: `%nix%` (13,257 rows, counted with pyarrow on
    // expected.parquet) and one with `_`.
    for (pattern, want) in [("%nix%", Some(13_257)), ("_a%i_", None)] {
        let sql = |on: &str| {
            format!(
                "SELECT value FROM read_zarr('{store}', '', 'pushdown', '{on}') WHERE value LIKE '{pattern}'"
            )
        };
        let (rows, m) = scan_metric(&ctx, &sql("true"), &["rows_transcoded"]).await;
        let (rows_off, _) = scan_metric(&ctx, &sql("false"), &["rows_transcoded"]).await;
        assert_eq!(rows, rows_off, "{pattern}");
        assert!(rows > 0, "{pattern}");
        if let Some(want) = want {
            assert_eq!(rows, want, "{pattern}");
        }
        assert_eq!(
            m[0], rows,
            "{pattern}: rows_transcoded equals the matching rows"
        );
    }
}

#[tokio::test]
async fn late_materialisation_skips_other_columns_of_chunks_without_matches() {
    let (ctx, log) = counting_context();
    let store = corpus_store("13_group_consolidated_metadata");
    // 'kajinsen' is the label of station ST-001, in the first of three chunks.
    let batches = query(
        &ctx,
        &format!("SELECT station, label, value FROM read_zarr('{store}') WHERE label = 'kajinsen'"),
    )
    .await
    .unwrap();
    assert_eq!(batches.iter().map(|b| b.num_rows()).sum::<usize>(), 1);
    let gets = chunk_gets(&log);
    let label = gets.iter().filter(|g| g.contains("/label/c/")).count();
    let value = gets.iter().filter(|g| g.contains("/value/c/")).count();
    assert_eq!(label, 3, "{gets:?}");
    assert_eq!(value, 1, "only the chunk with a match: {gets:?}");
}

#[tokio::test]
async fn sharded_arrays_read_only_the_inner_chunks_a_predicate_needs() {
    // Case 08: 30x20, shards 16x10, inner chunks 8x5 (2x2 per shard). Shard c/0/0 holds inner
    // chunks 0, 1 and 3; c/1/0 holds all four (expected.json, `shards`).
    let ctx = context();
    let store = corpus_store("08_sharding_index_start");
    let names = ["inner_chunks_read", "bytes_read", "chunks_pruned"];
    let sql = |pred: &str| format!("SELECT * FROM read_zarr('{store}') WHERE {pred}");
    // Inner chunks (0,0) and (0,1): both present in shard c/0/0.
    let (rows, m) = scan_metric(&ctx, &sql("y < 8 AND x < 10"), &names).await;
    assert_eq!((rows, m[0]), (80, 2));
    let pruned_bytes = m[1];
    // Inner chunk (1,0) is absent: it reads as the fill value, and is neither read nor pruned.
    let (rows, m) = scan_metric(&ctx, &sql("y BETWEEN 8 AND 15 AND x < 5"), &names).await;
    assert_eq!((rows, m[0]), (40, 0));
    // The four inner chunks of shard c/1/0 that hold rows 16.. and columns ..10.
    let (rows, m) = scan_metric(&ctx, &sql("y >= 16 AND x < 10"), &names).await;
    assert_eq!((rows, m[0]), (140, 4));
    // Without pushdown every present inner chunk is read: 3 + 3 + 4.
    let off = format!(
        "SELECT * FROM read_zarr('{store}', '', 'pushdown', 'false') WHERE y < 8 AND x < 10"
    );
    let (rows, m) = scan_metric(&ctx, &off, &names).await;
    assert_eq!((rows, m[0]), (80, 10));
    assert!(
        pruned_bytes * 2 < m[1],
        "bytes read {pruned_bytes} pruned vs {} full",
        m[1]
    );
}

/// The dynamic filters DataFusion pushes into the scan while the query runs prune work units:
/// a hash join's build-side values, and a TopK's running threshold.
#[tokio::test]
async fn dynamic_filters_prune_chunks_while_running() {
    let ctx = context();
    let store = corpus_store("17_large_200k_zstd");
    // Chunks of 10,000 rows: keys 5 and 70,005 are in chunks 0 and 7.
    let sql = format!(
        "SELECT t.dim_0, t.value FROM read_zarr('{store}') t \
         JOIN (VALUES (5), (70005)) AS v(k) ON t.dim_0 = v.k"
    );
    let (rows, m) = scan_metric(&ctx, &sql, &["chunks_read", "chunks_pruned"]).await;
    assert_eq!(rows, 2);
    assert_eq!(m[0] + m[1], 20, "every chunk is read or pruned: {m:?}");
    // The build side (2 rows) is collected before the probe side's scan starts, and its
    // values reach the scan as `dim_0 IN (5, 70005)`: chunks 0 and 7 only.
    assert_eq!(m[0], 2, "chunks 0 and 7: {m:?}");
    let (rows, m) = scan_metric(
        &ctx,
        &sql.replace(
            &format!("read_zarr('{store}')"),
            &format!("read_zarr('{store}', '', 'pushdown', 'false')"),
        ),
        &["chunks_read"],
    )
    .await;
    assert_eq!(
        (rows, m[0]),
        (2, 20),
        "without pushdown every chunk is read"
    );

    // TopK on a 2-D array chunked along both dimensions (no declared order): once the first
    // chunk has filled the heap, its threshold prunes every chunk that starts after (0, 1).
    let one = datafusion::prelude::SessionContext::new_with_config(
        datafusion::prelude::SessionConfig::new().with_target_partitions(1),
    );
    datafusion_zarr::register(&one);
    let store = corpus_store("06_2d_transpose_dimnames");
    let sql = format!("SELECT row, col, value FROM read_zarr('{store}') ORDER BY row, col LIMIT 2");
    let (rows, m) = scan_metric(
        &one,
        &sql,
        &[
            "chunks_read",
            "chunks_pruned",
            "chunks_missing",
            "inner_chunks_read",
        ],
    )
    .await;
    assert_eq!(rows, 2);
    assert_eq!((m[0], m[1]), (1, 15), "one chunk read, 15 pruned: {m:?}");
    let plan = ctx
        .sql(&format!("EXPLAIN {sql}"))
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    let text = arrow::util::pretty::pretty_format_batches(&plan)
        .unwrap()
        .to_string();
    assert!(text.contains("dynamic_filters=[DynamicFilter"), "{text}");
}
