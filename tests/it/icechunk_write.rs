//! Writing into Icechunk repositories (icechunk 2.3.0's spec-2 fixture, and icechunk 1.1.21's
//! spec-1 one, copied): `COPY … TO '<repository>'` and `INSERT INTO` a table on one commit one
//! new snapshot on the branch with the rows written and the message given, and leave every
//! other branch, tag and snapshot as it was; a failed write commits nothing and leaves no chunk
//! object behind; a commit that lands on the branch while a write runs makes the write fail
//! with a conflict, and the other commit stays (two INSERTs at once: the first commit stays,
//! the other is refused naming the branch); the same on S3 (moto), Azure (azurite) and GCS
//! (fake-gcs-server).
//! python/tests/test_icechunk.py reads what these writes commit with the icechunk package.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use datafusion::arrow::array::{Int64Array, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::prelude::SessionContext;
use object_store::{ObjectStore, ObjectStoreExt};
use serde_json::{Value, json};
use zarr_test_support::servers::proxy::Proxy;
use zarr_test_support::servers::{gcs_store_at, object_store_of, options, servers};
use zarr_test_support::{column, context_writing_in_order, copy_dir, query, root, to_json};

/// A copy of the fixture repository `name` in a temporary directory.
fn copy(name: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let to = dir.path().join(name);
    copy_dir(&root().join("tests/data/icechunk").join(name), &to);
    (dir, to)
}

fn expected() -> Value {
    let path = root().join("tests/data/icechunk/strings.expected.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The snapshot the fixture's `kind` `name` (a branch or tag) points to.
fn reference(kind: &str, name: &str) -> String {
    let expected = expected();
    let found = (expected["refs"].as_array().unwrap().iter())
        .find(|r| r["kind"] == kind && r["name"] == name)
        .unwrap_or_else(|| panic!("{kind} {name}"));
    found["snapshot"].as_str().unwrap().to_string()
}

/// 40 rows: a string with non-ASCII letters and emoji, an integer, a float.
const ROWS: &str = "SELECT CASE v % 3 WHEN 0 THEN 'név ' WHEN 1 THEN '東京 ' ELSE '🦀 ' END \
                    || CAST(v AS VARCHAR) AS name, v AS n, v * 0.25 AS x \
                    FROM generate_series(0, 39) t(v)";

/// `ROWS` with a NULL integer at row 30, which Zarr cannot hold: the write fails after
/// chunks were written.
const ROWS_FAILING: &str = "SELECT name, CASE WHEN n = 30 THEN NULL ELSE n END AS n, x FROM \
                            (SELECT CASE v % 3 WHEN 0 THEN 'név ' WHEN 1 THEN '東京 ' ELSE \
                            '🦀 ' END || CAST(v AS VARCHAR) AS name, v AS n, v * 0.25 AS x \
                            FROM generate_series(0, 39) t(v))";

fn storage_options(storage: &[(String, String)]) -> String {
    storage
        .iter()
        .map(|(k, v)| format!(", '{k}' '{}'", v.replace('\'', "''")))
        .collect()
}

async fn run(ctx: &SessionContext, sql: &str) -> Result<(), String> {
    query(ctx, sql).await.map(|_| ()).map_err(|e| e.to_string())
}

/// The columns `name`, `n`, `x` of `from`, in `order`.
async fn table(from: &str, order: &str) -> Vec<Vec<Value>> {
    table_in(&zarr_test_support::context(), from, order).await
}

/// [`table`] in `ctx` (where a table is registered).
async fn table_in(ctx: &SessionContext, from: &str, order: &str) -> Vec<Vec<Value>> {
    let sql = format!("SELECT name, n, x FROM {from} ORDER BY {order}");
    let batches = query(ctx, &sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    ["name", "n", "x"]
        .iter()
        .map(|c| to_json(column(&batches, c).as_ref()))
        .collect()
}

fn read_zarr(location: &str, extra: &str) -> String {
    format!("read_zarr('{location}', ''{extra})")
}

/// `(id, parent_id, message)` of each snapshot of `branch`, newest first.
async fn history(location: &str, branch: &str, storage: &str) -> Vec<(String, String, String)> {
    let ctx = zarr_test_support::context();
    let sql = format!(
        "SELECT id, coalesce(parent_id, '') AS parent_id, message FROM \
         icechunk_snapshots('{location}', '{branch}'{storage})"
    );
    let batches = query(&ctx, &sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    let text = |name: &str| -> Vec<String> {
        to_json(column(&batches, name).as_ref())
            .into_iter()
            .map(|v| v.as_str().unwrap_or_default().to_string())
            .collect()
    };
    let (ids, parents, messages) = (text("id"), text("parent_id"), text("message"));
    (ids.into_iter().zip(parents).zip(messages))
        .map(|((a, b), c)| (a, b, c))
        .collect()
}

/// The files of the repository's `chunks` directory.
fn chunk_files(repository: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(repository.join("chunks"))
        .map(|entries| {
            entries
                .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// The values of the fixture's `labels` array at `version`.
async fn labels(location: &str, version: &str) -> Vec<Value> {
    // One partition: the rows in the order they are stored.
    let ctx = zarr_test_support::context_with_partitions(1);
    let sql = format!("SELECT labels FROM read_zarr('{location}', 'labels'{version})");
    let batches = query(&ctx, &sql).await.unwrap();
    to_json(column(&batches, "labels").as_ref())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copy_commits_one_snapshot_and_keeps_every_other_version() {
    let (_dir, repo) = copy("strings.icechunk");
    let location = repo.display().to_string();
    let main = reference("branch", "main");
    let dev = reference("branch", "dev");
    let v1 = labels(&location, ", 'tag', 'v1'").await;
    let dev_labels = labels(&location, ", 'branch', 'dev'").await;
    let ctx = context_writing_in_order(7);

    // Branch main holds the fixture's group: replaced only with mode 'overwrite'.
    let refused = run(
        &ctx,
        &format!("COPY ({ROWS}) TO '{location}' STORED AS ZARR"),
    )
    .await
    .unwrap_err();
    assert!(refused.contains("branch 'main'"), "{refused}");
    assert!(refused.contains("mode"), "{refused}");
    assert_eq!(history(&location, "main", "").await[0].0, main);

    run(
        &ctx,
        &format!(
            "COPY ({ROWS}) TO '{location}' STORED AS ZARR OPTIONS ('mode' 'overwrite', \
             'message' 'load 40 rows', 'chunk_rows' '8')"
        ),
    )
    .await
    .unwrap();
    let after = history(&location, "main", "").await;
    assert_eq!(
        after[0].1, main,
        "the new snapshot's parent is main's old tip"
    );
    assert_eq!(after[0].2, "load 40 rows");
    assert_eq!(after.len(), 5, "one snapshot more: {after:?}");
    assert_eq!(
        table(&read_zarr(&location, ""), "index").await,
        table(&format!("({ROWS})"), "n").await
    );
    // The fixture's arrays are gone from main's tip, kept in its older snapshots.
    let ctx2 = zarr_test_support::context();
    let gone = query(
        &ctx2,
        &format!("SELECT * FROM read_zarr('{location}', 'labels')"),
    )
    .await
    .unwrap_err()
    .to_string();
    assert!(gone.contains("labels"), "{gone}");
    let at_main = expected()["contents"][&main]["labels"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(
        labels(&location, &format!(", 'snapshot', '{main}'"))
            .await
            .len(),
        at_main
    );
    assert!(
        labels(&location, ", 'tag', 'v1'").await == v1,
        "tag v1 reads as before"
    );
    let dev_now = labels(&location, ", 'branch', 'dev'").await;
    assert!(dev_now == dev_labels, "branch dev reads as before");
    assert_eq!(history(&location, "dev", "").await[0].0, dev);

    // To another branch.
    run(
        &ctx,
        &format!(
            "COPY (SELECT name, n, x FROM ({ROWS}) WHERE n < 5) TO '{location}' STORED AS ZARR \
             OPTIONS ('mode' 'overwrite', 'branch' 'dev', 'message' 'five rows')"
        ),
    )
    .await
    .unwrap();
    let dev_after = history(&location, "dev", "").await;
    assert_eq!(
        (dev_after[0].1.as_str(), dev_after[0].2.as_str()),
        (dev.as_str(), "five rows")
    );
    let five = table(&read_zarr(&location, ", 'branch', 'dev'"), "index").await;
    assert_eq!(five[1], (0..5).map(Value::from).collect::<Vec<_>>());
    assert_eq!(
        history(&location, "main", "").await,
        after,
        "main is unchanged"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_a_repository_cannot_take_is_refused_before_anything_is_written() {
    let (_dir, repo) = copy("strings.icechunk");
    let location = repo.display().to_string();
    let before = history(&location, "main", "").await;
    let files = chunk_files(&repo);
    let ctx = context_writing_in_order(100);
    let cases = [
        ("'branch' 'nope', 'mode' 'overwrite'", "nope"),
        ("'zarr_format' '2', 'mode' 'overwrite'", "Zarr V3 only"),
    ];
    for (options, says) in cases {
        let e = run(
            &ctx,
            &format!("COPY ({ROWS}) TO '{location}' STORED AS ZARR OPTIONS ({options})"),
        )
        .await
        .unwrap_err();
        assert!(e.contains(says), "{options}: {e}");
    }
    assert_eq!(history(&location, "main", "").await, before);
    assert_eq!(chunk_files(&repo), files);

    // `branch` and `message` to a place that holds no repository.
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("plain.zarr").display().to_string();
    let e = run(
        &ctx,
        &format!("COPY ({ROWS}) TO '{plain}' STORED AS ZARR OPTIONS ('message' 'm')"),
    )
    .await
    .unwrap_err();
    assert!(e.contains("no repository is there"), "{e}");
    assert!(!dir.path().join("plain.zarr").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_copy_commits_nothing_and_leaves_no_chunk_object() {
    let (_dir, repo) = copy("strings.icechunk");
    let location = repo.display().to_string();
    let before = history(&location, "main", "").await;
    let files = chunk_files(&repo);
    // Batches of 7 rows in chunks of 8: chunks are written before row 30 fails.
    let e = run(
        &context_writing_in_order(7),
        &format!(
            "COPY ({ROWS_FAILING}) TO '{location}' STORED AS ZARR OPTIONS ('mode' \
             'overwrite', 'chunk_rows' '8', 'compression' 'none')"
        ),
    )
    .await
    .unwrap_err();
    assert!(e.contains("row 30"), "{e}");
    assert_eq!(history(&location, "main", "").await, before);
    assert_eq!(
        chunk_files(&repo),
        files,
        "the failed write's chunk objects are gone"
    );
}

/// A copy of the spec-1 repository whose `main` holds `ROWS` (in chunks of 16, committed as
/// `first`), its path and its location.
async fn spec1_with_rows() -> (tempfile::TempDir, PathBuf, String) {
    let (dir, repo) = copy("spec1.icechunk");
    let location = repo.display().to_string();
    run(
        &context_writing_in_order(7),
        &format!(
            "COPY ({ROWS}) TO '{location}' STORED AS ZARR OPTIONS ('mode' 'overwrite', \
             'chunk_rows' '16', 'message' 'first')"
        ),
    )
    .await
    .unwrap();
    (dir, repo, location)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn insert_into_a_table_on_a_branch_commits_and_the_table_reads_it() {
    let (_dir, repo, location) = spec1_with_rows().await;
    let ctx = context_writing_in_order(7);
    run(
        &ctx,
        &format!("CREATE EXTERNAL TABLE t STORED AS ZARR LOCATION '{location}'"),
    )
    .await
    .unwrap();
    let tip = history(&location, "main", "").await[0].0.clone();
    let more = "SELECT '🦀 ' || CAST(v AS VARCHAR) AS name, v AS n, v * 0.25 AS x \
                FROM generate_series(40, 49) t(v)";
    run(&ctx, &format!("INSERT INTO t (name, n, x) {more}"))
        .await
        .unwrap();
    let after = history(&location, "main", "").await;
    assert_eq!(
        (after[0].1.as_str(), after[0].2.as_str()),
        (tip.as_str(), "INSERT INTO by datafusion-zarr")
    );
    // The table reads the new tip.
    let all = format!("(SELECT name, n, x FROM ({ROWS}) UNION ALL {more})");
    assert_eq!(table_in(&ctx, "t", "index").await, table(&all, "n").await);
    let explained = query(&ctx, "EXPLAIN SELECT name FROM t WHERE n > 3")
        .await
        .unwrap();
    let plan = format!(
        "{}",
        datafusion::arrow::util::pretty::pretty_format_batches(&explained).unwrap()
    );
    assert!(
        plan.contains(&after[0].0),
        "EXPLAIN names the new snapshot: {plan}"
    );

    // A failed INSERT commits nothing and leaves no chunk object.
    let files = chunk_files(&repo);
    let e = run(
        &ctx,
        "INSERT INTO t (name, n, x) VALUES ('a', 1, 0.5), ('b', NULL, 0.5)",
    )
    .await
    .unwrap_err();
    assert!(e.contains("NULL"), "{e}");
    assert_eq!(history(&location, "main", "").await, after);
    assert_eq!(chunk_files(&repo), files);

    // A table at a fixed snapshot takes no rows.
    let first = &after[1].0;
    run(
        &ctx,
        &format!(
            "CREATE EXTERNAL TABLE old STORED AS ZARR LOCATION '{location}' OPTIONS \
             ('snapshot' '{first}')"
        ),
    )
    .await
    .unwrap();
    let e = run(&ctx, "INSERT INTO old (name, n, x) VALUES ('a', 1, 0.5)")
        .await
        .unwrap_err();
    assert!(e.contains("fixed snapshot"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_that_lands_while_a_write_runs_is_a_conflict() {
    let (_dir, repo) = copy("strings.icechunk");
    let location = repo.display().to_string();
    let schema = Arc::new(Schema::new(vec![
        Field::new("name", DataType::Utf8, false),
        Field::new("n", DataType::Int64, false),
    ]));
    let batch = |names: Vec<&str>, n: Vec<i64>| {
        RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(StringArray::from(names)),
                Arc::new(Int64Array::from(n)),
            ],
        )
        .unwrap()
    };
    let mut options = datafusion_zarr::write::WriteOptions::default();
    options.mode = datafusion_zarr::write::options::WriteMode::Overwrite;
    let (other_location, other_options) = (location.clone(), options.clone());
    let (ours, theirs) = (batch(vec!["ours"], vec![1]), batch(vec!["theirs"], vec![2]));
    let other_schema = schema.clone();
    // The rows of this write come after another write committed to the same branch.
    let rows = futures::stream::once(async move {
        let other =
            RecordBatchStreamAdapter::new(other_schema, futures::stream::iter(vec![Ok(theirs)]));
        let mut other_options = other_options;
        other_options.message = Some("the other commit".into());
        datafusion_zarr::write::write_zarr(Box::pin(other), &other_location, &other_options)
            .await
            .unwrap();
        Ok(ours)
    });
    let stream = RecordBatchStreamAdapter::new(schema.clone(), rows);
    let e = datafusion_zarr::write::write_zarr(Box::pin(stream), &location, &options)
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("branch 'main' moved from snapshot"), "{e}");
    assert!(e.contains("nothing was committed"), "{e}");
    let after = history(&location, "main", "").await;
    assert_eq!(after[0].2, "the other commit");
    assert_eq!(after[0].1, reference("branch", "main"));
    let ctx = zarr_test_support::context();
    let sql = format!("SELECT name FROM {}", read_zarr(&location, ""));
    let batches = query(&ctx, &sql).await.unwrap();
    assert_eq!(
        to_json(column(&batches, "name").as_ref()),
        vec![Value::from("theirs")]
    );
}

/// Puts the files of `dir` below `prefix` of `store`.
async fn upload_below(store: &Arc<dyn ObjectStore>, dir: &Path, prefix: &str) {
    for entry in walk(dir) {
        let key = entry
            .strip_prefix(dir)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        let bytes = std::fs::read(&entry).unwrap();
        store
            .put(
                &object_store::path::Path::from(format!("{prefix}/{key}")),
                bytes.into(),
            )
            .await
            .unwrap();
    }
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copy_and_insert_on_s3_azure_and_gcs() {
    let s = servers();
    for scheme in ["s3", "az", "gs"] {
        let mut store = object_store_of(scheme, &s).unwrap();
        let mut storage = options(scheme, &s);
        if scheme == "gs" {
            // fake-gcs-server takes object_store's (XML API) writes through test-support's
            // translating proxy, as in write_remote.rs.
            let shim = Proxy::start_gcs_writes(s.gcs);
            for (k, v) in &mut storage {
                if k == "gcp.base_url" {
                    *v = format!("http://127.0.0.1:{}", shim.port);
                }
            }
            store = gcs_store_at(shim.port).unwrap();
        }
        let prefix = format!("icechunk_write/{scheme}/strings.icechunk");
        upload_below(
            &store,
            &root().join("tests/data/icechunk/strings.icechunk"),
            &prefix,
        )
        .await;
        let location = zarr_test_support::servers::location(scheme, &s, &prefix);
        let extra = storage_options(&storage);
        let ctx = context_writing_in_order(7);
        run(
            &ctx,
            &format!(
                "COPY ({ROWS}) TO '{location}' STORED AS ZARR OPTIONS ('mode' 'overwrite', \
                 'message' 'remote'{extra})"
            ),
        )
        .await
        .unwrap_or_else(|e| panic!("{scheme}: {e}"));
        // An error shows no secret of the storage options.
        let e = run(
            &ctx,
            &format!(
                "COPY ({ROWS}) TO '{location}' STORED AS ZARR OPTIONS ('mode' 'overwrite', \
                 'branch' 'nope'{extra})"
            ),
        )
        .await
        .unwrap_err();
        assert!(e.contains("nope"), "{scheme}: {e}");
        for (k, v) in &storage {
            if k.contains("key") || k.contains("secret") {
                assert!(!e.contains(v.as_str()), "{scheme}: {k} shows in {e}");
            }
        }
        let read_extra: String = storage
            .iter()
            .map(|(k, v)| format!(", '{k}', '{}'", v.replace('\'', "''")))
            .collect();
        assert_eq!(
            table(&read_zarr(&location, &read_extra), "index").await,
            table(&format!("({ROWS})"), "n").await,
            "{scheme}"
        );
        let after = history(&location, "main", &read_extra).await;
        assert_eq!(after[0].2, "remote", "{scheme}");
        assert_eq!(after[0].1, reference("branch", "main"), "{scheme}");
        let table_options: String = storage
            .iter()
            .map(|(k, v)| format!("'{k}' '{}'", v.replace('\'', "''")))
            .collect::<Vec<_>>()
            .join(", ");
        run(
            &ctx,
            &format!(
                "CREATE EXTERNAL TABLE t STORED AS ZARR LOCATION '{location}' OPTIONS \
                 ({table_options})"
            ),
        )
        .await
        .unwrap();
        run(&ctx, "INSERT INTO t (name, n, x) VALUES ('zz', 40, 10.0)")
            .await
            .unwrap_or_else(|e| panic!("{scheme}: {e}"));
        let count = query(&ctx, "SELECT count(*) AS c FROM t").await.unwrap();
        assert_eq!(
            to_json(column(&count, "c").as_ref()),
            vec![Value::from(41)],
            "{scheme}"
        );
        assert_eq!(
            history(&location, "main", &read_extra).await.len(),
            after.len() + 1
        );
    }
}

/// `INSERT INTO` the table of one array on a branch commits the array grown (as on a plain
/// store), and the group reads it; with another array along its dimension it is refused, the
/// branch left as it was.
#[tokio::test]
async fn insert_into_an_arrays_table_on_a_branch() {
    let (_dir, repo) = copy("spec1.icechunk");
    let location = repo.display().to_string();
    let ctx = context_writing_in_order(7);
    run(
        &ctx,
        &format!(
            "COPY (SELECT 'a' AS names) TO '{location}' STORED AS ZARR OPTIONS ('mode' \
             'overwrite', 'string_length' '8')"
        ),
    )
    .await
    .unwrap();
    run(
        &ctx,
        &format!(
            "CREATE EXTERNAL TABLE n STORED AS ZARR LOCATION '{location}' OPTIONS ('path' \
             'names')"
        ),
    )
    .await
    .unwrap();
    let tip = history(&location, "main", "").await[0].0.clone();
    run(&ctx, "INSERT INTO n (names) VALUES ('zzz'), ('東京')")
        .await
        .unwrap();
    let after = history(&location, "main", "").await;
    assert_eq!(
        (after[0].1.as_str(), after[0].2.as_str()),
        (tip.as_str(), "INSERT INTO by datafusion-zarr")
    );
    let want = [json!("a"), json!("zzz"), json!("東京")];
    for from in ["n".to_string(), read_zarr(&location, "")] {
        let got = query(&ctx, &format!("SELECT names FROM {from} ORDER BY index"))
            .await
            .unwrap();
        assert_eq!(to_json(column(&got, "names").as_ref()), want, "{from}");
    }

    run(
        &ctx,
        &format!(
            "COPY (SELECT 'a' AS names, 1 AS k) TO '{location}' STORED AS ZARR OPTIONS ('mode' \
             'overwrite', 'string_length' '8')"
        ),
    )
    .await
    .unwrap();
    run(
        &ctx,
        &format!(
            "CREATE EXTERNAL TABLE m STORED AS ZARR LOCATION '{location}' OPTIONS ('path' \
             'names')"
        ),
    )
    .await
    .unwrap();
    let tip = history(&location, "main", "").await[0].0.clone();
    let e = run(&ctx, "INSERT INTO m (names) VALUES ('zzz')")
        .await
        .unwrap_err();
    assert!(e.contains("holds k along the same dimension index"), "{e}");
    assert_eq!(history(&location, "main", "").await[0].0, tip);
}

/// One partition of rows whose stream, before its first batch, runs `before` to the end: a
/// write that commits while the INSERT reading these rows is under way.
struct Gated {
    schema: datafusion::arrow::datatypes::SchemaRef,
    batch: RecordBatch,
    before: std::sync::Mutex<Option<futures::future::BoxFuture<'static, ()>>>,
}

impl std::fmt::Debug for Gated {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Gated")
    }
}

impl datafusion::physical_plan::streaming::PartitionStream for Gated {
    fn schema(&self) -> &datafusion::arrow::datatypes::SchemaRef {
        &self.schema
    }

    fn execute(
        &self,
        _ctx: Arc<datafusion::execution::TaskContext>,
    ) -> datafusion::physical_plan::SendableRecordBatchStream {
        let before = self.before.lock().unwrap().take();
        let batch = self.batch.clone();
        let rows = futures::stream::once(async move {
            if let Some(before) = before {
                before.await;
            }
            Ok(batch)
        });
        Box::pin(RecordBatchStreamAdapter::new(self.schema.clone(), rows))
    }
}

/// Two INSERTs into one table on a branch at once, each from its own session: the one that
/// commits first stays; the other finds the branch moved and fails with the conflict error
/// naming the branch, committing nothing (an INSERT's rows are a stream read once, so it is not
/// retried on the new tip: run it again).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_inserts_on_one_branch_commit_one_and_refuse_the_other() {
    let (_dir, _repo, location) = spec1_with_rows().await;
    let before = history(&location, "main", "").await;
    let open = |location: String| async move {
        let ctx = context_writing_in_order(7);
        run(
            &ctx,
            &format!("CREATE EXTERNAL TABLE t STORED AS ZARR LOCATION '{location}'"),
        )
        .await
        .unwrap();
        ctx
    };
    let (ours, theirs) = (open(location.clone()).await, open(location.clone()).await);
    let schema = Arc::new(Schema::new(vec![
        Field::new("name", DataType::Utf8, true),
        Field::new("n", DataType::Int64, true),
    ]));
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(StringArray::from(vec!["ours"])),
            Arc::new(Int64Array::from(vec![100])),
        ],
    )
    .unwrap();
    // Theirs commits while ours is reading its rows (after ours opened its session).
    let their_insert = Box::pin(async move {
        run(&theirs, "INSERT INTO t (name, n) VALUES ('theirs', 200)")
            .await
            .unwrap();
    });
    let gated = Gated {
        schema: schema.clone(),
        batch,
        before: std::sync::Mutex::new(Some(their_insert)),
    };
    let rows =
        datafusion::catalog::streaming::StreamingTable::try_new(schema, vec![Arc::new(gated)])
            .unwrap();
    ours.register_table("gated", Arc::new(rows)).unwrap();
    let e = run(&ours, "INSERT INTO t (name, n) SELECT name, n FROM gated")
        .await
        .unwrap_err();
    assert!(e.contains("branch 'main' moved from snapshot"), "{e}");
    assert!(e.contains("nothing was committed"), "{e}");
    let after = history(&location, "main", "").await;
    assert_eq!(after.len(), before.len() + 1, "one commit: theirs");
    assert_eq!(after[0].2, "INSERT INTO by datafusion-zarr");
    let ctx = zarr_test_support::context();
    let sql = format!(
        "SELECT name FROM {} WHERE name IN ('ours', 'theirs')",
        read_zarr(&location, "")
    );
    let batches = query(&ctx, &sql).await.unwrap();
    assert_eq!(
        to_json(column(&batches, "name").as_ref()),
        vec![Value::from("theirs")]
    );
}
