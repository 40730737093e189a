//! The Zarr writer on remote stores, against the real servers on 127.0.0.1 (crates/test-support):
//! `COPY … STORED AS ZARR` to S3 (moto), GCS (fake-gcs-server) and Azure (azurite) reads back
//! through `read_zarr` with the values written, and leaves exactly the objects the same COPY
//! writes to a local directory, byte for byte; an existing store is refused without mode
//! 'overwrite' and replaced with it, no stale or hidden object left; a failed COPY or INSERT
//! leaves no new object and the old store as it was; PUTs failed by a proxy in front of S3 are
//! retried to success, or the write fails and leaves nothing; HTTP is read-only.
//!
//! fake-gcs-server serves none of the XML-API writes object_store's GCS client makes (PUT,
//! copy, DELETE of `/bucket/object`): GCS writes go through test-support's translating proxy
//! (`Proxy::start_gcs_writes`), which sends them as its JSON API's upload, copy and delete.

use std::collections::BTreeMap;
use std::sync::Arc;

use datafusion::prelude::SessionContext;
use object_store::{ObjectStore, ObjectStoreExt};
use serde_json::Value;

use servers::proxy::{FaultKind, MethodFault, Proxy};
use servers::{BUCKET, Servers, object_store_of, objects_below, options, servers};
use zarr_test_support::{column, context_writing_in_order, query, servers, to_json};

/// Objects by key (relative to a prefix) and their bytes.
type Objects = BTreeMap<String, Vec<u8>>;

/// Rows 0..n: strings with non-ASCII letters, CJK, a ZWJ emoji sequence and emoji, an integer,
/// a float that is NULL every 4th row, and a timestamp.
fn rows(n: usize) -> String {
    format!(
        "SELECT CASE v % 5 WHEN 0 THEN 'név ' WHEN 1 THEN '東京 ' WHEN 2 THEN '👩‍👩‍👧 ' \
         WHEN 3 THEN 'ǅemal ' ELSE 'plain ' END || CAST(v AS VARCHAR) \
         || repeat('🦀', CAST(v % 3 AS INT)) AS name, v AS n, \
         CASE WHEN v % 4 = 0 THEN NULL ELSE v * 0.5 - 3 END AS x, \
         to_timestamp_micros(v * 3600000000 + 1) AS t FROM generate_series(0, {}) t(v)",
        n - 1
    )
}

/// `rows(n)` with a NULL in the integer column at row `bad`: Zarr cannot hold it.
fn rows_failing_at(n: usize, bad: usize) -> String {
    format!(
        "SELECT name, CASE WHEN n = {bad} THEN NULL ELSE n END AS n, x, t FROM ({})",
        rows(n)
    )
}

/// `'k' 'v', …` of `extra` and the storage options `storage`.
fn option_list(extra: &[(&str, &str)], storage: &[(String, String)]) -> String {
    let mut pairs: Vec<(String, String)> = extra
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    pairs.extend(storage.iter().cloned());
    pairs
        .iter()
        .map(|(k, v)| format!("'{k}' '{}'", v.replace('\'', "''")))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `COPY (select) TO 'location' STORED AS ZARR OPTIONS (…)`.
fn copy_sql(select: &str, location: &str, options: &str) -> String {
    format!("COPY ({select}) TO '{location}' STORED AS ZARR OPTIONS ({options})")
}

async fn run(ctx: &SessionContext, sql: &str) -> Result<(), String> {
    query(ctx, sql).await.map(|_| ()).map_err(|e| e.to_string())
}

/// `read_zarr('location', '', 'k', 'v', …)`.
fn read_zarr(location: &str, storage: &[(String, String)]) -> String {
    let mut args = vec![format!("'{location}'"), "''".to_string()];
    for (k, v) in storage {
        args.push(format!("'{k}'"));
        args.push(format!("'{}'", v.replace('\'', "''")));
    }
    format!("read_zarr({})", args.join(", "))
}

/// The table a store reads back as (NaN as NULL, in index order), column by column.
async fn read_back(location: &str, storage: &[(String, String)]) -> Vec<(String, Vec<Value>)> {
    table_of(&read_zarr(location, storage), "index").await
}

/// The columns of `rows` in the same shape as [`read_back`]'s.
async fn expected(select: &str) -> Vec<(String, Vec<Value>)> {
    table_of(&format!("({select})"), "n").await
}

async fn table_of(from: &str, order: &str) -> Vec<(String, Vec<Value>)> {
    let sql = format!(
        "SELECT name, n, CASE WHEN isnan(x) THEN NULL ELSE x END AS x, t FROM {from} \
         ORDER BY {order}"
    );
    let ctx = zarr_test_support::context();
    let batches = query(&ctx, &sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    ["name", "n", "x", "t"]
        .iter()
        .map(|c| (c.to_string(), to_json(column(&batches, c).as_ref())))
        .collect()
}

/// What the test `test` writes on `scheme` goes below `write_remote/<test>/<scheme>`.
struct Place {
    scheme: &'static str,
    s: Servers,
    /// A client of the bucket, to see the objects.
    store: Arc<dyn ObjectStore>,
    /// A client of the bucket that writes (GCS: through the translating proxy).
    writer: Arc<dyn ObjectStore>,
    /// `write_remote/<test>/<scheme>`: the parent of the stores written.
    prefix: String,
    /// The storage options of the writes and reads.
    storage: Vec<(String, String)>,
}

impl Place {
    fn new(scheme: &'static str, test: &str) -> Self {
        let s = servers();
        let store = object_store_of(scheme, &s).unwrap();
        let mut storage = options(scheme, &s);
        let mut writer = store.clone();
        if scheme == "gs" {
            // fake-gcs-server takes object_store's (XML API) writes through a translating
            // proxy (test-support's `Proxy::start_gcs_writes`); it runs as long as the process.
            let shim = Proxy::start_gcs_writes(s.gcs);
            for (k, v) in &mut storage {
                if k == "gcp.base_url" {
                    *v = format!("http://127.0.0.1:{}", shim.port);
                }
            }
            writer = servers::gcs_store_at(shim.port).unwrap();
        }
        Self {
            scheme,
            s,
            store,
            writer,
            prefix: format!("write_remote/{test}/{scheme}"),
            storage,
        }
    }

    /// The URL of the store `name` below the prefix.
    fn location(&self, name: &str) -> String {
        format!("{}://{BUCKET}/{}/{name}", self.scheme, self.prefix)
    }

    /// The storage options as `read_zarr` takes them.
    fn storage(&self) -> Vec<(String, String)> {
        self.storage.clone()
    }

    /// `OPTIONS` of a write: `extra` and the storage options.
    fn options(&self, extra: &[(&str, &str)]) -> String {
        option_list(extra, &self.storage)
    }

    /// Asserts that the error `e` shows no secret of the storage options.
    fn assert_no_secret(&self, e: &str) {
        for (k, v) in &self.storage {
            if k.contains("key") || k.contains("secret") {
                assert!(!e.contains(v.as_str()), "{}: {k} shows in {e}", self.scheme);
            }
        }
    }

    /// Every object below the prefix (every store of the test and anything beside them).
    async fn everything(&self) -> Objects {
        objects_below(&self.store, &self.prefix).await.unwrap()
    }

    /// The objects of the store `name`.
    async fn objects(&self, name: &str) -> Objects {
        objects_below(&self.store, &format!("{}/{name}", self.prefix))
            .await
            .unwrap()
    }
}

/// The files of the store the same COPY (or COPY then more statements) writes to a local
/// directory: the objects a remote write must leave, byte for byte.
async fn local_objects(first: &str, then: &[&str], options: &str) -> Objects {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("out.zarr");
    let location = store.display().to_string();
    let ctx = context_writing_in_order(8192);
    run(&ctx, &copy_sql(first, &location, options))
        .await
        .unwrap_or_else(|e| panic!("local COPY: {e}"));
    if !then.is_empty() {
        run(
            &ctx,
            &format!("CREATE EXTERNAL TABLE t STORED AS ZARR LOCATION '{location}'"),
        )
        .await
        .unwrap();
        for sql in then {
            run(&ctx, sql)
                .await
                .unwrap_or_else(|e| panic!("local {sql}: {e}"));
        }
    }
    servers::files(&store)
        .into_iter()
        .map(|(key, path)| (key, std::fs::read(path).unwrap()))
        .collect()
}

fn keys(objects: &Objects) -> Vec<&str> {
    objects.keys().map(String::as_str).collect()
}

/// Asserts that two sets of objects are the same keys with the same bytes.
fn assert_same_objects(got: &Objects, want: &Objects, what: &str) {
    assert_eq!(keys(got), keys(want), "{what}: the keys");
    for (key, bytes) in want {
        assert!(got[key] == *bytes, "{what}: the bytes of {key} differ");
    }
}

/// The keys of a store of the table layout: the root's and each array's `zarr.json` and
/// `chunks` chunks of each array.
fn layout_keys(arrays: &[&str], chunks: usize) -> Vec<String> {
    let mut out = vec!["zarr.json".to_string()];
    for array in arrays {
        out.push(format!("{array}/zarr.json"));
        out.extend((0..chunks).map(|i| format!("{array}/c/{i}")));
    }
    out.sort();
    out
}

/// 1. A COPY to a new remote store reads back with the values written, and leaves exactly the
///    objects a local COPY writes (the same bytes), nothing hidden beside them.
async fn copy_to_a_new_store(scheme: &'static str) {
    let place = Place::new(scheme, "copy_new");
    let select = rows(30);
    let location = place.location("out.zarr");
    run(
        &context_writing_in_order(8192),
        &copy_sql(&select, &location, &place.options(&[("chunk_rows", "7")])),
    )
    .await
    .unwrap_or_else(|e| panic!("{scheme}: {e}"));

    assert_eq!(
        read_back(&location, &place.storage()).await,
        expected(&select).await,
        "{scheme}"
    );
    let written = place.objects("out.zarr").await;
    // 30 rows in chunks of 7: 5 chunks of each of the 4 arrays.
    assert_eq!(
        keys(&written),
        layout_keys(&["n", "name", "t", "x"], 5),
        "{scheme}"
    );
    let local = local_objects(&select, &[], "'chunk_rows' '7'").await;
    assert_same_objects(&written, &local, scheme);
    // Nothing else below the test's prefix (no staging objects).
    let everything = place.everything().await;
    let stray: Vec<&String> = everything
        .keys()
        .filter(|k| !k.starts_with("out.zarr/"))
        .collect();
    assert!(stray.is_empty(), "{scheme}: {stray:?}");
}

/// 2. A COPY onto an existing store: without mode an error naming mode 'overwrite', the store
///    unchanged; with it the new rows, no stale chunk or array of the old store, nothing hidden.
async fn copy_over_an_existing_store(scheme: &'static str) {
    let place = Place::new(scheme, "copy_overwrite");
    let location = place.location("out.zarr");
    let ctx = context_writing_in_order(8192);
    run(
        &ctx,
        &copy_sql(&rows(30), &location, &place.options(&[("chunk_rows", "7")])),
    )
    .await
    .unwrap_or_else(|e| panic!("{scheme}: {e}"));
    let before = place.everything().await;
    assert_eq!(before.len(), 25, "{scheme}: {:?}", keys(&before));

    let e = run(
        &ctx,
        &copy_sql(&rows(10), &location, &place.options(&[("chunk_rows", "7")])),
    )
    .await
    .unwrap_err();
    assert!(e.contains("mode 'overwrite'"), "{scheme}: {e}");
    place.assert_no_secret(&e);
    assert!(e.contains(&location), "{scheme}: the store is named: {e}");
    assert_same_objects(&place.everything().await, &before, scheme);

    // Fewer rows (2 chunks in place of 5) and one column fewer (no x).
    let select = format!("SELECT name, n, t FROM ({})", rows(10));
    run(
        &ctx,
        &copy_sql(
            &select,
            &location,
            &place.options(&[("chunk_rows", "7"), ("mode", "overwrite")]),
        ),
    )
    .await
    .unwrap_or_else(|e| panic!("{scheme}: {e}"));
    let got = read_back_columns(&location, &place.storage(), "name, n, t").await;
    let want = read_back_columns(&format!("({select})"), &[], "name, n, t").await;
    assert_eq!(got, want, "{scheme}");
    let mut everything = place.everything().await;
    // The store's lease stays beside it after an overwrite, expired, counting the overwrites
    // for readers (staging/lease.rs).
    let lease: Value =
        serde_json::from_slice(&everything.remove(".out.zarr.lock").unwrap()).unwrap();
    assert_eq!(
        (
            &lease["epoch"],
            &lease["replacing"],
            &lease["expires_unix_ms"]
        ),
        (&Value::from(1), &Value::from(false), &Value::from(0)),
        "{scheme}: {lease}"
    );
    let local = local_objects(&select, &[], "'chunk_rows' '7'").await;
    let local: Objects = local
        .into_iter()
        .map(|(k, v)| (format!("out.zarr/{k}"), v))
        .collect();
    // Exactly the new store: no old chunk (c/2…c/4), no old array (x), no hidden prefix.
    assert_same_objects(&everything, &local, scheme);
    assert_eq!(
        keys(&place.objects("out.zarr").await),
        layout_keys(&["n", "name", "t"], 2),
        "{scheme}"
    );
}

/// Some columns of a table (a store read with `read_zarr`, or a query), in row order.
async fn read_back_columns(
    from: &str,
    storage: &[(String, String)],
    columns: &str,
) -> Vec<Vec<Value>> {
    let (from, order) = if from.starts_with('(') {
        (from.to_string(), "n")
    } else {
        (read_zarr(from, storage), "index")
    };
    let sql = format!("SELECT {columns} FROM {from} ORDER BY {order}");
    let batches = query(&zarr_test_support::context(), &sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    columns
        .split(", ")
        .map(|c| to_json(column(&batches, c).as_ref()))
        .collect()
}

/// 3. A COPY failing at a row of a later chunk (after earlier chunks were written): to a new
///    location, no object afterwards; onto an existing store with mode 'overwrite', the old
///    store as it was and nothing hidden.
async fn a_failed_copy_leaves_nothing(scheme: &'static str) {
    let place = Place::new(scheme, "copy_failed");
    // (a) A new location. 3000 rows in batches of 64, chunks of 100: 29 chunks of each array
    // are written before row 2950 arrives.
    let fresh = place.location("fresh.zarr");
    let e = run(
        &context_writing_in_order(64),
        &copy_sql(
            &rows_failing_at(3000, 2950),
            &fresh,
            &place.options(&[("chunk_rows", "100")]),
        ),
    )
    .await
    .unwrap_err();
    assert!(e.contains("column n, row 2950"), "{scheme}: {e}");
    place.assert_no_secret(&e);
    assert_eq!(
        keys(&place.everything().await),
        Vec::<&str>::new(),
        "{scheme}"
    );

    // (b) Onto an existing store, with mode 'overwrite'.
    let location = place.location("out.zarr");
    run(
        &context_writing_in_order(8192),
        &copy_sql(&rows(30), &location, &place.options(&[("chunk_rows", "7")])),
    )
    .await
    .unwrap();
    let before = place.everything().await;
    let e = run(
        &context_writing_in_order(64),
        &copy_sql(
            &rows_failing_at(3000, 2950),
            &location,
            &place.options(&[("chunk_rows", "100"), ("mode", "overwrite")]),
        ),
    )
    .await
    .unwrap_err();
    assert!(e.contains("column n, row 2950"), "{scheme}: {e}");
    place.assert_no_secret(&e);
    assert_same_objects(&place.everything().await, &before, scheme);
    assert_eq!(
        read_back(&location, &place.storage()).await,
        expected(&rows(30)).await,
        "{scheme}"
    );
}

/// 4. `INSERT INTO` a table on a remote store appends (the same objects as the same statements
///    leave locally); a failed INSERT leaves the old rows and no new chunk.
async fn insert_into_a_remote_table(scheme: &'static str) {
    let place = Place::new(scheme, "insert");
    let location = place.location("out.zarr");
    let ctx = context_writing_in_order(16);
    run(
        &ctx,
        &copy_sql(
            &rows(10),
            &location,
            &place.options(&[("chunk_rows", "4"), ("string_length", "16")]),
        ),
    )
    .await
    .unwrap_or_else(|e| panic!("{scheme}: {e}"));
    run(
        &ctx,
        &format!(
            "CREATE EXTERNAL TABLE t STORED AS ZARR LOCATION '{location}' OPTIONS ({})",
            place.options(&[])
        ),
    )
    .await
    .unwrap_or_else(|e| panic!("{scheme}: {e}"));
    let insert = format!(
        "INSERT INTO t (name, n, x, t) SELECT * FROM ({}) WHERE n >= 10",
        rows(25)
    );
    let appended = query(&ctx, &insert)
        .await
        .unwrap_or_else(|e| panic!("{scheme}: {e}"));
    assert_eq!(
        to_json(column(&appended, "count").as_ref()),
        [Value::from(15)]
    );
    assert_eq!(
        read_back(&location, &place.storage()).await,
        expected(&rows(25)).await,
        "{scheme}"
    );
    let count = query(&ctx, "SELECT count(*) AS c FROM t").await.unwrap();
    assert_eq!(to_json(column(&count, "c").as_ref()), [Value::from(25)]);
    let local = local_objects(
        &rows(10),
        &[&insert],
        "'chunk_rows' '4', 'string_length' '16'",
    )
    .await;
    let after = place.objects("out.zarr").await;
    assert_same_objects(&after, &local, scheme);

    // A failed INSERT: 200 rows more, the NULL at row 220 arrives after new chunks were
    // written (batches of 16, chunks of 4).
    let failing = format!(
        "INSERT INTO t (name, n, x, t) SELECT name, CASE WHEN n = 220 THEN NULL ELSE n END, \
         x, t FROM ({}) WHERE n >= 25",
        rows(225)
    );
    let e = run(&ctx, &failing).await.unwrap_err();
    assert!(e.contains("column n, row 220"), "{scheme}: {e}");
    assert_same_objects(&place.everything().await, &prefixed(&after), scheme);
    assert_eq!(
        read_back(&location, &place.storage()).await,
        expected(&rows(25)).await,
        "{scheme}"
    );
}

/// 7. A prefix that holds objects but no Zarr store is never replaced (docs/writing.md, "what
///    is never lost"; a local directory that is not a store is refused whatever the mode): a
///    COPY to it is an error, with mode 'overwrite' too, and its objects stay.
async fn a_prefix_that_is_not_a_store_is_never_replaced(scheme: &'static str) {
    let place = Place::new(scheme, "not_a_store");
    for (key, bytes) in [
        ("data/notes.txt", &b"my notes"[..]),
        ("data/part-0.parquet", &b"PAR1 not really PAR1"[..]),
    ] {
        let path = object_store::path::Path::from(format!("{}/{key}", place.prefix));
        place
            .writer
            .put(&path, bytes.to_vec().into())
            .await
            .unwrap();
    }
    let before = place.everything().await;
    assert_eq!(before.len(), 2, "{scheme}");
    let location = place.location("data");
    let e = run(
        &context_writing_in_order(8192),
        &copy_sql(&rows(3), &location, &place.options(&[])),
    )
    .await
    .unwrap_err();
    assert!(e.contains("not a Zarr store"), "{scheme}: {e}");
    assert_same_objects(&place.everything().await, &before, scheme);
    let overwrite = place.options(&[("mode", "overwrite")]);
    let result = run(
        &context_writing_in_order(8192),
        &copy_sql(&rows(3), &location, &overwrite),
    )
    .await;
    let after = place.everything().await;
    assert!(
        result.is_err(),
        "{scheme}: the objects were replaced by a store: {:?}",
        keys(&after)
    );
    assert_same_objects(&after, &before, scheme);
}

fn prefixed(objects: &Objects) -> Objects {
    objects
        .iter()
        .map(|(k, v)| (format!("out.zarr/{k}"), v.clone()))
        .collect()
}

macro_rules! per_scheme {
    ($($scheme:ident),*) => {$(
        mod $scheme {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn copy_to_a_new_store_reads_back_and_leaves_exactly_its_objects() {
                super::copy_to_a_new_store(stringify!($scheme)).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn copy_over_an_existing_store_needs_overwrite_and_leaves_nothing_stale() {
                super::copy_over_an_existing_store(stringify!($scheme)).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn a_failed_copy_leaves_no_object_and_the_old_store() {
                super::a_failed_copy_leaves_nothing(stringify!($scheme)).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn insert_into_a_remote_table_appends_and_a_failed_one_changes_nothing() {
                super::insert_into_a_remote_table(stringify!($scheme)).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn a_prefix_that_is_not_a_store_is_never_replaced() {
                super::a_prefix_that_is_not_a_store_is_never_replaced(stringify!($scheme)).await;
            }
        }
    )*};
}

per_scheme!(s3, gs, az);

// 5. Faults: a proxy in front of moto fails PUTs.

/// `OPTIONS` of a write to S3 through `proxy`, with quick retries, and `extra`.
fn proxied_options(proxy: &Proxy, extra: &[(&str, &str)]) -> String {
    let mut storage = vec![
        ("retry.max_retries".to_string(), "2".to_string()),
        ("retry.timeout".to_string(), "10s".to_string()),
    ];
    for (k, v) in options("s3", &servers()) {
        let v = if k == "aws.endpoint" {
            format!("http://127.0.0.1:{}", proxy.port)
        } else {
            v
        };
        storage.push((k, v));
    }
    option_list(extra, &storage)
}

/// PUTs the proxy saw (writes and server-side copies), by target.
fn puts(proxy: &Proxy) -> Vec<String> {
    proxy
        .log()
        .into_iter()
        .filter(|l| l.method == "PUT")
        .map(|l| l.target)
        .collect()
}

/// 500s, 503s and dropped connections on some PUTs: object_store retries them and the COPY
/// reads back equal with exactly its objects; or, if a PUT is not retried, the COPY fails and
/// leaves nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transient_put_faults_are_retried_or_leave_nothing() {
    let place = Place::new("s3", "faults_transient");
    let proxy = Proxy::start(place.s.s3);
    let store = format!("{}/out.zarr", place.prefix);
    for (path, kind, times) in [
        ("n/c/1", FaultKind::Status(500), 2),
        ("name/c/3", FaultKind::Status(503), 1),
        ("x/c/2", FaultKind::Close, 1),
        ("t/zarr.json", FaultKind::Status(500), 1),
    ] {
        proxy.add_method_fault(MethodFault {
            methods: vec!["PUT".into()],
            path: format!("{store}/{path}"),
            skip: 0,
            times,
            kind,
        });
    }
    // The root's metadata, written last: its connection dropped once.
    proxy.add_method_fault(MethodFault {
        methods: vec!["PUT".into()],
        path: format!("{store}/zarr.json"),
        skip: 0,
        times: 1,
        kind: FaultKind::Close,
    });
    let select = rows(30);
    let location = place.location("out.zarr");
    let result = run(
        &context_writing_in_order(8192),
        &copy_sql(
            &select,
            &location,
            &proxied_options(&proxy, &[("chunk_rows", "7")]),
        ),
    )
    .await;
    let attempts = |key: &str| {
        puts(&proxy)
            .iter()
            .filter(|t| t.ends_with(&format!("{store}/{key}")))
            .count()
    };
    match result {
        Ok(()) => {
            assert_eq!(attempts("n/c/1"), 3, "two 500s, then the PUT");
            assert_eq!(attempts("name/c/3"), 2);
            assert_eq!(attempts("x/c/2"), 2);
            assert_eq!(attempts("zarr.json"), 2);
            assert_eq!(
                read_back(&location, &place.storage()).await,
                expected(&select).await
            );
            let local = local_objects(&select, &[], "'chunk_rows' '7'").await;
            assert_same_objects(&place.everything().await, &prefixed(&local), "s3");
        }
        Err(e) => {
            eprintln!("a transient PUT fault was not retried: {e}");
            assert_eq!(keys(&place.everything().await), Vec::<&str>::new(), "{e}");
        }
    }
}

/// How many PUTs a COPY of `rows(30)` in chunks of 7 makes: 4 arrays of 5 chunks, their 4
/// documents and the root's.
const PUTS_OF_A_STORE: usize = 25;

/// Every PUT refused after the first N (500s or dropped connections, retried in vain): the COPY
/// to a new location fails and, DELETEs passing, leaves no object; with DELETEs refused as
/// well, what is left is no store (no root metadata, `read_zarr` fails).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn puts_refused_after_n_leave_no_store_at_a_new_location() {
    let place = Place::new("s3", "faults_new");
    let select = rows(30);
    for (i, n) in [0, 1, 10, 19, 20, 24].into_iter().enumerate() {
        let kind = if i % 2 == 0 {
            FaultKind::Status(500)
        } else {
            FaultKind::Close
        };
        let name = format!("n{n}.zarr");
        let proxy = Proxy::start(place.s.s3);
        proxy.add_method_fault(MethodFault::after(&["PUT"], n, kind));
        let location = place.location(&name);
        let e = run(
            &context_writing_in_order(8192),
            &copy_sql(
                &select,
                &location,
                &proxied_options(&proxy, &[("chunk_rows", "7")]),
            ),
        )
        .await
        .expect_err(&format!("PUTs refused after {n}"));
        assert!(e.contains(&location), "{n}: the store is named: {e}");
        assert!(puts(&proxy).len() > n, "{n}: the fault was reached");
        assert_eq!(
            keys(&place.everything().await),
            Vec::<&str>::new(),
            "PUTs refused after {n} ({kind:?}): {e}"
        );
    }
    // DELETEs refused too: the chunks written stay, but no store is there.
    for n in [10, 24] {
        let name = format!("d{n}.zarr");
        let proxy = Proxy::start(place.s.s3);
        proxy.add_method_fault(MethodFault::after(
            &["PUT", "DELETE"],
            n,
            FaultKind::Status(500),
        ));
        let location = place.location(&name);
        run(
            &context_writing_in_order(8192),
            &copy_sql(
                &select,
                &location,
                &proxied_options(&proxy, &[("chunk_rows", "7")]),
            ),
        )
        .await
        .expect_err("writes refused");
        let left = place.objects(&name).await;
        assert!(!left.contains_key("zarr.json"), "{n}: {:?}", keys(&left));
        let e = query(
            &zarr_test_support::context(),
            &format!(
                "SELECT count(*) FROM {}",
                read_zarr(&location, &place.storage())
            ),
        )
        .await;
        assert!(e.is_err(), "{n}: a store was left: {:?}", keys(&left));
    }
}

/// An existing store and every PUT refused after the first N while its replacement is staged
/// (N below the replacement's own PUTs): the COPY fails, the old store is as it was, and no
/// staging object is left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn puts_refused_while_staging_an_overwrite_keep_the_old_store() {
    let place = Place::new("s3", "faults_staging");
    let location = place.location("out.zarr");
    run(
        &context_writing_in_order(8192),
        &copy_sql(&rows(30), &location, &place.options(&[("chunk_rows", "7")])),
    )
    .await
    .unwrap();
    let before = place.everything().await;
    assert_eq!(before.len(), PUTS_OF_A_STORE);
    // The replacement: 10 rows in chunks of 7, 4 arrays: 8 chunks and 5 documents staged.
    for (i, n) in [0, 1, 7, 12].into_iter().enumerate() {
        let kind = if i % 2 == 0 {
            FaultKind::Status(500)
        } else {
            FaultKind::Close
        };
        let proxy = Proxy::start(place.s.s3);
        proxy.add_method_fault(MethodFault::after(&["PUT"], n, kind));
        let e = run(
            &context_writing_in_order(8192),
            &copy_sql(
                &rows(10),
                &location,
                &proxied_options(&proxy, &[("chunk_rows", "7"), ("mode", "overwrite")]),
            ),
        )
        .await
        .expect_err(&format!("PUTs refused after {n}"));
        let staged: Vec<String> = puts(&proxy)
            .into_iter()
            .filter(|t| t.contains(".out.zarr."))
            .collect();
        assert!(
            staged.len() > n,
            "{n}: the replacement was staged: {staged:?}"
        );
        assert_same_objects(
            &place.everything().await,
            &before,
            &format!("PUTs refused after {n} ({kind:?}): {e}"),
        );
    }
    assert_eq!(
        read_back(&location, &place.storage()).await,
        expected(&rows(30)).await
    );
}

/// An existing store, its replacement staged (13 objects), and every PUT refused from the
/// `n`-th copy over the old store on: the COPY fails. Returns the error, the objects below the
/// prefix as the COPY returned, and once its cleanup in the background is over (a bounded
/// wait), with the objects from before.
async fn refuse_puts_while_committing(
    place: &Place,
    copies_allowed: usize,
) -> (String, Objects, Objects, Objects) {
    let location = place.location("out.zarr");
    run(
        &context_writing_in_order(8192),
        &copy_sql(&rows(30), &location, &place.options(&[("chunk_rows", "7")])),
    )
    .await
    .unwrap();
    let before = place.everything().await;
    let proxy = Proxy::start(place.s.s3);
    proxy.add_method_fault(MethodFault::after(
        &["PUT"],
        13 + copies_allowed,
        FaultKind::Status(500),
    ));
    let e = run(
        &context_writing_in_order(8192),
        &copy_sql(
            &rows(10),
            &location,
            &proxied_options(&proxy, &[("chunk_rows", "7"), ("mode", "overwrite")]),
        ),
    )
    .await
    .expect_err("PUTs refused while committing");
    let as_returned = place.everything().await;
    let mut settled = as_returned.clone();
    for _ in 0..50 {
        if !settled.keys().any(|k| k.starts_with('.')) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        settled = place.everything().await;
    }
    (e, as_returned, settled, before)
}

/// A copy over the old store refused (the first one, or one midway): the COPY fails, and the
/// old store must still be there as it was.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_commit_of_an_overwrite_keeps_the_old_store() {
    for (test, copies_allowed) in [("commit_first", 0), ("commit_midway", 7)] {
        let place = Place::new("s3", test);
        let (e, _, settled, before) = refuse_puts_while_committing(&place, copies_allowed).await;
        let location = place.location("out.zarr");
        assert_same_objects(
            &settled,
            &before,
            &format!("{copies_allowed} copies, then refused: {e}"),
        );
        assert_eq!(
            read_back(&location, &place.storage()).await,
            expected(&rows(30)).await
        );
    }
}

/// A failed commit removes its staging objects before the COPY returns its error, as a failed
/// staging does (`abort`): a process that ends on the error (zarr-sql -c, a script) must not
/// leave the hidden prefix behind; nothing removes remote orphans later.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_commit_removes_its_staging_objects_before_returning() {
    let place = Place::new("s3", "commit_cleanup");
    let (e, as_returned, settled, _) = refuse_puts_while_committing(&place, 0).await;
    let hidden = |objects: &Objects| -> Vec<String> {
        objects
            .keys()
            .filter(|k| !k.starts_with("out.zarr/"))
            .cloned()
            .collect()
    };
    assert_eq!(hidden(&settled), Vec::<String>::new(), "{e}");
    assert_eq!(
        hidden(&as_returned),
        Vec::<String>::new(),
        "as the COPY returned: {e}"
    );
}

/// A COPY cancelled midway (its future dropped, as Ctrl-C or a dropped query does), to a new
/// location and onto an existing store: what it wrote is removed (in the background, so within
/// a bounded wait), and the old store stays as it was.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_copy_leaves_no_object_and_the_old_store() {
    let place = Place::new("s3", "cancelled");
    let existing = place.location("old.zarr");
    run(
        &context_writing_in_order(8192),
        &copy_sql(&rows(30), &existing, &place.options(&[("chunk_rows", "7")])),
    )
    .await
    .unwrap();
    let before = place.everything().await;
    for (target, extra) in [
        ("new.zarr", vec![("chunk_rows", "100")]),
        (
            "old.zarr",
            vec![("chunk_rows", "100"), ("mode", "overwrite")],
        ),
    ] {
        // 3000 rows in chunks of 100: 120 PUTs, each answered after 20 ms.
        let proxy = Arc::new(Proxy::start(place.s.s3));
        proxy.set_delay(std::time::Duration::from_millis(20));
        let sql = copy_sql(
            &rows(3000),
            &place.location(target),
            &proxied_options(&proxy, &extra),
        );
        let copy = tokio::spawn(async move { run(&context_writing_in_order(64), &sql).await });
        let mut waited = 0;
        while puts(&proxy).len() < 10 && waited < 200 {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            waited += 1;
        }
        assert!(
            !copy.is_finished(),
            "{target}: the COPY ended before it was cancelled"
        );
        assert!(puts(&proxy).len() >= 10, "{target}: no PUT seen");
        copy.abort();
        assert!(copy.await.unwrap_err().is_cancelled());
        let mut now = place.everything().await;
        for _ in 0..100 {
            if now == before {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            now = place.everything().await;
        }
        assert_same_objects(&now, &before, &format!("{target}, cancelled"));
    }
}

/// 6. An HTTP location is read-only: COPY to it is an error saying so, and nginx's directory
///    gets nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copy_to_http_is_an_error_saying_http_is_read_only() {
    let s = servers();
    let location = format!("http://127.0.0.1:{}/write_remote/out.zarr", s.http);
    let e = run(
        &context_writing_in_order(8192),
        &format!("COPY (SELECT 1 AS a) TO '{location}' STORED AS ZARR"),
    )
    .await
    .unwrap_err();
    assert!(e.contains("HTTP stores are read-only"), "{e}");
    assert!(
        !zarr_test_support::root()
            .join("tests/data/write_remote")
            .exists()
    );
}

/// The lease of a write on S3 costs two requests: its conditional create and its removal. A
/// one-row INSERT and a COPY to a new store each make exactly those two writes for
/// `.out.zarr.lock` (the INSERT's reopened table reads it once, to check later scans), and
/// leave no lease behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_writes_lease_costs_two_requests() {
    let place = Place::new("s3", "lease_requests");
    let proxy = Proxy::start(place.s.s3);
    let location = place.location("out.zarr");
    let ctx = context_writing_in_order(8192);
    let lease = format!("{}/.out.zarr.lock", place.prefix);
    let lease_requests = |proxy: &Proxy| -> Vec<String> {
        proxy
            .take_log()
            .into_iter()
            // object_store removes objects from S3 by DeleteObjects (`POST ?delete`), naming
            // them in the body; the writes below remove nothing else.
            .filter(|l| l.method != "GET" && l.method != "HEAD")
            .filter(|l| l.target.contains(&lease) || l.target.ends_with("?delete"))
            .map(|l| format!("{} {}", l.method, l.status))
            .collect()
    };
    run(
        &ctx,
        &copy_sql(&rows(3), &location, &proxied_options(&proxy, &[])),
    )
    .await
    .unwrap();
    assert_eq!(lease_requests(&proxy), ["PUT 200", "POST 200"], "the COPY");
    run(
        &ctx,
        &format!(
            "CREATE EXTERNAL TABLE t STORED AS ZARR LOCATION '{location}' OPTIONS ({})",
            proxied_options(&proxy, &[])
        ),
    )
    .await
    .unwrap();
    proxy.take_log();
    run(
        &ctx,
        &format!(
            "INSERT INTO t (name, n, x, t) SELECT * FROM ({}) WHERE n = 3",
            rows(4)
        ),
    )
    .await
    .unwrap();
    assert_eq!(
        lease_requests(&proxy),
        ["PUT 200", "POST 200"],
        "the INSERT"
    );
    let got = read_back(&location, &place.storage()).await;
    assert_eq!(got, expected(&rows(4)).await);
    assert!(
        (place.store.head(&lease.as_str().into()).await).is_err(),
        "the lease stayed"
    );
}

// 7. Reading back: late materialisation on S3.

/// A selective filter on S3 requests the other columns' chunks only for the units with matches:
/// one unit's worth for `a >= 9500` (its last unit), none when no row matches; the filter
/// column's chunks are requested once each. Counted at a proxy in front of moto.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_selective_filter_on_s3_requests_the_other_columns_only_where_rows_match() {
    let place = Place::new("s3", "late_filter");
    let location = place.location("floats.zarr");
    let select = "SELECT v / 10.0 AS a, CAST(v * 2 AS DOUBLE) AS b, CAST(v % 7 AS BIGINT) AS c \
                  FROM generate_series(0, 99999) t(v)";
    // Written in row order, so that `a` grows from chunk to chunk.
    run(
        &context_writing_in_order(8192),
        &copy_sql(
            select,
            &location,
            &place.options(&[("chunk_rows", "10000")]),
        ),
    )
    .await
    .unwrap();
    let proxy = Proxy::start(place.s.s3);
    let mut storage = place.storage();
    for (k, v) in &mut storage {
        if k == "aws.endpoint" {
            *v = format!("http://127.0.0.1:{}", proxy.port);
        }
    }
    let ctx = zarr_test_support::context();
    let table = read_zarr(&location, &storage);
    // Chunk GETs of a column in a log, by the column's name.
    let chunk_gets = |log: &[servers::proxy::Logged], column: &str| {
        let marker = format!("floats.zarr/{column}/c/");
        log.iter()
            .filter(|l| l.method == "GET" && l.target.contains(&marker))
            .count()
    };
    for (predicate, want_sum, b_units) in [
        ("a >= 9500", 2 * (95_000..100_000u64).sum::<u64>(), 1),
        ("a > 1e9", 0, 0),
    ] {
        let sql = format!("SELECT sum(b) AS s, count(*) AS n FROM {table} WHERE {predicate}");
        proxy.take_log();
        let got = query(&ctx, &sql).await.unwrap();
        let log = proxy.take_log();
        let (a_gets, b_gets) = (chunk_gets(&log, "a"), chunk_gets(&log, "b"));
        let sum = to_json(column(&got, "s").as_ref());
        match want_sum {
            0 => assert_eq!(sum, vec![Value::Null], "{predicate}"),
            s => assert_eq!(sum, vec![serde_json::json!(s as f64)], "{predicate}"),
        }
        assert_eq!(
            a_gets, 10,
            "{predicate}: every chunk of the filter column, once"
        );
        assert_eq!(
            b_gets,
            b_units,
            "{predicate}: the other column only where rows match: {:?}",
            log.iter()
                .filter(|l| l.target.contains("/b/"))
                .map(|l| (&l.method, &l.target, &l.range))
                .collect::<Vec<_>>()
        );
    }
}
