//! `COPY … TO 'out.zarr' STORED AS ZARR`: the table layout read back by `read_zarr` with the
//! same values, the errors naming the column and the row, and a failed write keeping what was
//! there. (xarray reads the stores too: `python/tests/test_write.py`.)

use serde_json::{Value, json};

use zarr_test_support::*;

async fn copy(sql: &str) -> datafusion::error::Result<()> {
    query(&context(), sql).await.map(|_| ())
}

/// Rows 0..n with a string, an integer, a float (NULL every 4th) and a boolean.
fn rows(n: usize) -> String {
    format!(
        "SELECT 'név ' || CAST(v AS VARCHAR) || repeat('🦀', CAST(v % 3 AS INT)) AS name, \
         v AS n, CASE WHEN v % 4 = 0 THEN NULL ELSE v * 0.5 END AS x, v % 2 = 0 AS even, \
         to_timestamp_micros(v * 3600000000 + 1) AS t FROM generate_series(0, {}) t(v)",
        n - 1
    )
}

#[tokio::test]
async fn a_query_written_as_zarr_reads_back_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("out.zarr");
    copy(&format!(
        "COPY ({}) TO '{}' STORED AS ZARR OPTIONS ('chunk_rows' '7')",
        rows(30),
        store.display()
    ))
    .await
    .unwrap();
    // Timestamps as xarray writes times: int64 counts with CF units, decoded on reading.
    let t: Value =
        serde_json::from_str(&std::fs::read_to_string(store.join("t/zarr.json")).unwrap()).unwrap();
    assert_eq!(t["data_type"], json!("int64"));
    assert_eq!(
        t["attributes"]["units"],
        json!("microseconds since 1970-01-01")
    );
    // The group consolidates its arrays' documents, as zarr-python does.
    let group: Value =
        serde_json::from_str(&std::fs::read_to_string(store.join("zarr.json")).unwrap()).unwrap();
    assert_eq!(group["consolidated_metadata"]["metadata"]["t"], t);
    // Five chunks of 7 rows (the last one padded), one array per column along `index`.
    let chunks = std::fs::read_dir(store.join("name/c")).unwrap().count();
    assert_eq!(chunks, 5);
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(store.join("name/zarr.json")).unwrap())
            .unwrap();
    assert_eq!(doc["dimension_names"], json!(["index"]));
    // The longest names ('név 29🦀🦀') are 8 code points.
    assert_eq!(doc["data_type"]["configuration"]["length_bytes"], json!(32));

    // A NULL float is stored as NaN, its fill value.
    let sql = |table: &str| {
        format!(
            "SELECT name, n, CASE WHEN isnan(x) THEN NULL ELSE x END AS x, even, t FROM {table} \
             ORDER BY n"
        )
    };
    let want = query(&context(), &sql(&format!("({})", rows(30))))
        .await
        .unwrap();
    let got = query(
        &context(),
        &sql(&format!("read_zarr('{}')", store.display())),
    )
    .await
    .unwrap();
    for column in ["name", "n", "x", "even", "t"] {
        assert_eq!(
            to_json(column_of(&got, column).as_ref()),
            to_json(column_of(&want, column).as_ref()),
            "{column}"
        );
    }
}

fn column_of(batches: &[arrow::array::RecordBatch], name: &str) -> arrow::array::ArrayRef {
    column(batches, name)
}

#[tokio::test]
async fn the_columns_read_back_in_the_order_they_were_written() {
    // The order the group's consolidated metadata lists its arrays (V3 and V2); without
    // consolidated metadata the store lists them by name.
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("'zarr_format' '3'", ["zeta", "alpha", "mid"]),
        ("'zarr_format' '2'", ["zeta", "alpha", "mid"]),
        ("'consolidated' 'false'", ["alpha", "mid", "zeta"]),
    ];
    for (i, (options, want)) in cases.into_iter().enumerate() {
        let store = dir.path().join(format!("order{i}.zarr"));
        copy(&format!(
            "COPY (SELECT 3 AS zeta, 'x' AS alpha, 2.0 AS mid) TO '{}' STORED AS ZARR \
             OPTIONS ({options})",
            store.display()
        ))
        .await
        .unwrap();
        let sql = format!("SELECT * FROM read_zarr('{}')", store.display());
        let batches = query(&context(), &sql).await.unwrap();
        let schema = batches[0].schema();
        let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
        assert_eq!(names, [&["index"][..], &want[..]].concat(), "{options}");
    }
}

#[tokio::test]
async fn what_zarr_cannot_hold_is_an_error_naming_the_column_and_row() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("out.zarr");
    let error = |select: &str| {
        let sql = format!("COPY ({select}) TO '{}' STORED AS ZARR", store.display());
        async move { copy(&sql).await.unwrap_err().to_string() }
    };
    let e =
        error("SELECT CASE WHEN v = 3 THEN NULL ELSE v END AS n FROM generate_series(0, 5) t(v)")
            .await;
    assert!(e.contains("column n, row 3: NULL"), "{e}");
    let e = error("SELECT CASE WHEN v = 2 THEN 'a' || chr(0) ELSE 'b' END AS s FROM generate_series(0, 5) t(v)").await;
    assert!(
        e.contains("column s, row 2: the string ends with U+0000"),
        "{e}"
    );
    let e = error("SELECT CAST(1 AS DECIMAL(10, 2)) AS d").await;
    assert!(e.contains("column d is Decimal128(10, 2)"), "{e}");
    let e = error("SELECT 1 AS \"a/b\"").await;
    assert!(e.contains("column 'a/b' cannot name a Zarr array"), "{e}");
    let e = copy(&format!(
        "COPY (SELECT 1 AS a) TO '{}' STORED AS ZARR OPTIONS ('chunk_size' '3')",
        store.display()
    ))
    .await
    .unwrap_err()
    .to_string();
    assert!(e.contains("unknown option 'chunk_size'"), "{e}");
    // Nothing is left behind.
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().collect();
    assert!(left.is_empty(), "{left:?}");
}

#[tokio::test]
async fn a_failed_write_keeps_the_store_that_was_there() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("out.zarr");
    let target = store.display();
    copy(&format!("COPY ({}) TO '{target}' STORED AS ZARR", rows(10)))
        .await
        .unwrap();
    let count = || {
        let sql = format!("SELECT count(*) AS c FROM read_zarr('{target}')");
        async move { values(&sql, "c").await }
    };
    assert_eq!(count().await, [json!(10)]);
    // A write that fails after some chunks: the old store stays whole.
    let failing = format!(
        "COPY (SELECT CASE WHEN v = 250 THEN NULL ELSE v END AS n FROM generate_series(0, 299) \
         t(v)) TO '{target}' STORED AS ZARR OPTIONS ('chunk_rows' '100', 'mode' 'overwrite')"
    );
    assert!(copy(&failing).await.is_err());
    assert_eq!(count().await, [json!(10)]);
    // Without mode 'overwrite' an existing store is an error, and kept.
    let e = copy(&format!("COPY ({}) TO '{target}' STORED AS ZARR", rows(20)))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("a Zarr store is there (give mode 'overwrite'"),
        "{e}"
    );
    assert_eq!(count().await, [json!(10)]);
    // A successful one replaces it, and nothing else is left beside it.
    copy(&format!(
        "COPY ({}) TO '{target}' STORED AS ZARR OPTIONS ('mode' 'overwrite')",
        rows(20)
    ))
    .await
    .unwrap();
    assert_eq!(count().await, [json!(20)]);
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .collect();
    names.sort();
    // The store, and its lock file (empty between writes).
    assert_eq!(names, [".out.zarr.lock", "out.zarr"]);
    assert_eq!(
        std::fs::read(dir.path().join(".out.zarr.lock")).unwrap(),
        b""
    );
}

/// What a killed write left beside its target (its hidden temporary store, a process gone)
/// is removed by the next write to that target; a running process's is left alone.
#[tokio::test]
async fn the_next_write_removes_what_a_killed_write_left() {
    let dir = tempfile::tempdir().unwrap();
    let gone = (4_000_000u32..).find(|p| !std::path::Path::new(&format!("/proc/{p}")).exists());
    let gone = gone.unwrap();
    let killed = dir.path().join(format!(".out.zarr.{gone}-123.tmp"));
    let running = dir
        .path()
        .join(format!(".out.zarr.{}-456.tmp", std::process::id()));
    for leftover in [&killed, &running] {
        std::fs::create_dir_all(leftover.join("name/c")).unwrap();
        std::fs::write(leftover.join("name/c/0"), b"partial").unwrap();
    }
    let store = dir.path().join("out.zarr");
    copy(&format!(
        "COPY ({}) TO '{}' STORED AS ZARR",
        rows(3),
        store.display()
    ))
    .await
    .unwrap();
    assert!(!killed.exists());
    assert!(running.exists());
}

/// `INSERT INTO` a table we wrote: the rows are appended along `index`, the table registered
/// in the session reads them, and so does a fresh `read_zarr`; the chunk the old rows ended
/// in keeps its old values.
#[tokio::test]
async fn insert_into_appends_rows_along_the_dimension() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("out.zarr");
    let ctx = context();
    query(
        &ctx,
        &format!(
            "COPY ({}) TO '{}' STORED AS ZARR OPTIONS ('chunk_rows' '4', 'string_length' '12')",
            rows(10),
            store.display()
        ),
    )
    .await
    .unwrap();
    query(
        &ctx,
        &format!(
            "CREATE EXTERNAL TABLE t STORED AS ZARR LOCATION '{}'",
            store.display()
        ),
    )
    .await
    .unwrap();
    let appended = query(
        &ctx,
        &format!(
            "INSERT INTO t (name, n, x, even, t) SELECT * FROM ({}) WHERE n >= 10",
            rows(25)
        ),
    )
    .await
    .unwrap();
    assert_eq!(to_json(column(&appended, "count").as_ref()), [json!(15)]);
    let sql = |table: &str| {
        format!(
            "SELECT name, n, CASE WHEN isnan(x) THEN NULL ELSE x END AS x, even, t FROM {table} \
             ORDER BY n"
        )
    };
    let want = query(&ctx, &sql(&format!("({})", rows(25)))).await.unwrap();
    let fresh = format!("read_zarr('{}')", store.display());
    for table in ["t", fresh.as_str()] {
        let got = query(&ctx, &sql(table)).await.unwrap();
        for name in ["name", "n", "x", "even", "t"] {
            assert_eq!(
                to_json(column(&got, name).as_ref()),
                to_json(column(&want, name).as_ref()),
                "{table}: {name}"
            );
        }
    }
    let index = query(&ctx, "SELECT max(index) AS m FROM t").await.unwrap();
    assert_eq!(to_json(column(&index, "m").as_ref()), [json!(24)]);
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(store.join("zarr.json")).unwrap()).unwrap();
    assert_eq!(
        doc["consolidated_metadata"]["metadata"]["name"]["shape"],
        json!([25])
    );
}

/// An append that cannot be stored (a longer string than the array's width, a NULL an
/// integer array cannot hold) is an error naming the column and row, and leaves the store as
/// it was: the same rows, the same chunk files.
#[tokio::test]
async fn a_failed_insert_leaves_the_store_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("out.zarr");
    let ctx = context();
    query(
        &ctx,
        &format!(
            "COPY ({}) TO '{}' STORED AS ZARR OPTIONS ('chunk_rows' '4')",
            rows(10),
            store.display()
        ),
    )
    .await
    .unwrap();
    let files = || {
        let mut names: Vec<String> = walk(&store);
        names.sort();
        names
    };
    let before = files();
    let chunk = std::fs::read(store.join("name/c/2")).unwrap();
    query(
        &ctx,
        &format!(
            "CREATE EXTERNAL TABLE t STORED AS ZARR LOCATION '{}'",
            store.display()
        ),
    )
    .await
    .unwrap();
    let e = query(
        &ctx,
        &format!(
            "INSERT INTO t (name, n, x, even, t) SELECT * FROM ({}) WHERE n >= 10",
            rows(30)
        ),
    )
    .await
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("column name, row 11: a string of 8 code points"),
        "{e}"
    );
    assert!(e.contains("length_bytes 28"), "{e}");
    let e = query(
        &ctx,
        "INSERT INTO t (name, n, x, even, t) VALUES ('a', NULL, 1.0, true, now())",
    )
    .await
    .unwrap_err()
    .to_string();
    assert!(e.contains("column n, row 10: NULL"), "{e}");
    assert_eq!(files(), before);
    assert_eq!(std::fs::read(store.join("name/c/2")).unwrap(), chunk);
    let count = query(&ctx, "SELECT count(*) AS c FROM t").await.unwrap();
    assert_eq!(to_json(column(&count, "c").as_ref()), [json!(10)]);
}

/// `INSERT INTO` a NumPy `datetime64[D]` array (zarr-python's, read as `Date32`) appends
/// whole 8-byte NumPy elements: the append takes the element size from the array's own data
/// type (`int64`), not from `Date32`'s 4 bytes.
#[tokio::test]
async fn insert_into_a_numpy_date_array_appends_whole_elements() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = root().join("tests/data/fixtures/numpy_types_v3.zarr");
    std::fs::copy(fixture.join("zarr.json"), dir.path().join("zarr.json")).unwrap();
    std::fs::create_dir_all(dir.path().join("day/c")).unwrap();
    for key in ["zarr.json", "c/0", "c/1"] {
        std::fs::copy(
            fixture.join("day").join(key),
            dir.path().join("day").join(key),
        )
        .unwrap();
    }
    let ctx = context();
    let location = dir.path().display();
    query(
        &ctx,
        &format!("CREATE EXTERNAL TABLE t STORED AS ZARR LOCATION '{location}'"),
    )
    .await
    .unwrap();
    query(
        &ctx,
        "INSERT INTO t (day) VALUES (DATE '2001-02-03'), (DATE '2001-02-04')",
    )
    .await
    .unwrap();
    let got = query(&ctx, "SELECT CAST(day AS VARCHAR) AS d FROM t ORDER BY i")
        .await
        .unwrap();
    let got = to_json(column(&got, "d").as_ref());
    assert_eq!(got.len(), 9);
    assert_eq!(got[7..], [json!("2001-02-03"), json!("2001-02-04")]);
    // The old rows keep their values (NaT still NULL).
    assert_eq!(got[0], json!("2020-01-01"));
    assert_eq!(got[1], Value::Null);
}

/// The files below `dir`, relative to it.
fn walk(dir: &std::path::Path) -> Vec<String> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            let name = entry.file_name().to_string_lossy().to_string();
            out.extend(walk(&path).into_iter().map(|p| format!("{name}/{p}")));
        } else {
            out.push(entry.file_name().to_string_lossy().to_string());
        }
    }
    out
}

/// The N-D layout: `dimensions` makes the named columns coordinates of their distinct values,
/// sorted, and the others arrays over them; read back as a table, every row is there with its
/// values, and the cells no row filled are NaN.
#[tokio::test]
async fn the_nd_layout_reads_back_as_the_rows_it_was_written_from() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("grid.zarr");
    let ctx = context();
    // 5 stations x 7 times, shuffled, one cell missing.
    let rows = "SELECT 'ST-' || CAST(s AS VARCHAR) || repeat('é', CAST(s AS INT)) AS station, \
                to_timestamp_seconds(1700000000 + t * 3600) AS time, s * 10.0 + t AS temp \
                FROM generate_series(0, 4) a(s) CROSS JOIN generate_series(0, 6) b(t) \
                WHERE NOT (s = 2 AND t = 3) ORDER BY (s * 7 + t) * 37 % 35";
    query(
        &ctx,
        &format!(
            "COPY ({rows}) TO '{}' STORED AS ZARR OPTIONS ('dimensions' 'station,time', \
             'chunks' '2,3')",
            store.display()
        ),
    )
    .await
    .unwrap();
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(store.join("temp/zarr.json")).unwrap())
            .unwrap();
    assert_eq!(doc["shape"], json!([5, 7]));
    assert_eq!(doc["dimension_names"], json!(["station", "time"]));
    assert_eq!(
        doc["chunk_grid"]["configuration"]["chunk_shape"],
        json!([2, 3])
    );
    let sql = |from: &str| {
        format!(
            "SELECT station, to_unixtime(time) AS time, temp FROM {from} WHERE NOT isnan(temp) \
             ORDER BY station, time"
        )
    };
    let want = query(&ctx, &sql(&format!("({rows})"))).await.unwrap();
    let got = query(&ctx, &sql(&format!("read_zarr('{}')", store.display())))
        .await
        .unwrap();
    for name in ["station", "time", "temp"] {
        assert_eq!(
            to_json(column(&got, name).as_ref()),
            to_json(column(&want, name).as_ref()),
            "{name}"
        );
    }
    let missing = query(
        &ctx,
        &format!(
            "SELECT station, CAST(time AS VARCHAR) AS time FROM read_zarr('{}') WHERE isnan(temp)",
            store.display()
        ),
    )
    .await
    .unwrap();
    assert_eq!(
        to_json(column(&missing, "station").as_ref()),
        [json!("ST-2éé")]
    );

    // A second row for a cell is an error naming the cell; nothing is written.
    let e = query(
        &ctx,
        &format!(
            "COPY (SELECT 'a' AS k, 1 AS v UNION ALL SELECT 'a', 2) TO '{}' STORED AS ZARR \
             OPTIONS ('dimensions' 'k', 'null_value' '0')",
            dir.path().join("twice.zarr").display()
        ),
    )
    .await
    .unwrap_err()
    .to_string();
    assert!(e.contains("a second row for the cell (a)"), "{e}");
    assert!(!dir.path().join("twice.zarr").exists());
}

/// A chunk shape past 1 GiB (what readers refuse by default) is an error naming the options,
/// before any row is buffered; nothing is written.
#[tokio::test]
async fn chunks_larger_than_a_reader_takes_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    for (options, store) in [
        ("'chunk_rows' '1000000000'", "rows.zarr"),
        ("'dimensions' 'a,b', 'chunks' '100000,100000'", "grid.zarr"),
    ] {
        let store = dir.path().join(store);
        let e = query(
            &context(),
            &format!(
                "COPY (SELECT v AS a, v AS b, v * 1.5 AS x FROM generate_series(0, 9) t(v)) TO \
                 '{}' STORED AS ZARR OPTIONS ({options})",
                store.display()
            ),
        )
        .await
        .unwrap_err()
        .to_string();
        assert!(e.contains("more than the 1 GiB a chunk may hold"), "{e}");
        assert!(!store.exists());
    }
}

/// A column named `c` is written as an array `c` (its chunks `c/c/0` in V3, `c/0` in V2) and
/// reads back; only names that collide with metadata, paths and the names Zarr reserves are
/// refused. (zarr-python and xarray read the same stores: `python/tests/test_write.py`.)
#[tokio::test]
async fn a_column_named_c_is_written_and_only_colliding_names_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    for (format, chunk) in [("3", "c/c/0"), ("2", "c/0")] {
        let store = dir.path().join(format!("c{format}.zarr"));
        copy(&format!(
            "COPY (SELECT v AS c, 'n' || CAST(v AS VARCHAR) AS name FROM generate_series(0, 9) \
             t(v)) TO '{}' STORED AS ZARR OPTIONS ('zarr_format' '{format}')",
            store.display()
        ))
        .await
        .unwrap();
        assert!(store.join(chunk).is_file(), "V{format}: no chunk {chunk}");
        let got = query(
            &context(),
            &format!(
                "SELECT c, name FROM read_zarr('{}') ORDER BY c",
                store.display()
            ),
        )
        .await
        .unwrap();
        assert_eq!(
            to_json(column(&got, "c").as_ref()),
            (0..10).map(|v| json!(v)).collect::<Vec<_>>()
        );
        assert_eq!(to_json(column(&got, "name").as_ref())[9], json!("n9"));
        let array = query(
            &context(),
            &format!(
                "SELECT sum(c) AS s FROM read_zarr('{}', 'c')",
                store.display()
            ),
        )
        .await
        .unwrap();
        assert_eq!(to_json(column(&array, "s").as_ref()), [json!(45)]);
    }
    let store = dir.path().join("refused.zarr");
    for name in [
        "zarr.json",
        ".zarray",
        ".zattrs",
        ".zgroup",
        ".zmetadata",
        "..",
        "__x",
    ] {
        let sql = format!(
            "COPY (SELECT 1 AS \"{name}\") TO '{}' STORED AS ZARR",
            store.display()
        );
        let e = copy(&sql).await.unwrap_err().to_string();
        assert!(
            e.contains(&format!("column '{name}' cannot name a Zarr array")),
            "{name}: {e}"
        );
        assert!(!store.exists(), "{name}: a store was written");
    }
}

/// `INSERT INTO` the table of one array appends to it when no other array of its group runs
/// along its dimension (the group's consolidated metadata grows too), and is refused, naming
/// the other arrays and the group to register, when one does.
#[tokio::test]
async fn insert_into_an_arrays_table_appends_or_names_the_group_to_register() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = context();
    let alone = dir.path().join("alone.zarr");
    copy(&format!(
        "COPY (SELECT 'a' AS names) TO '{}' STORED AS ZARR OPTIONS ('string_length' '8')",
        alone.display()
    ))
    .await
    .unwrap();
    query(
        &ctx,
        &format!(
            "CREATE EXTERNAL TABLE n STORED AS ZARR LOCATION '{}' OPTIONS ('path' 'names')",
            alone.display()
        ),
    )
    .await
    .unwrap();
    let appended = query(&ctx, "INSERT INTO n (names) VALUES ('zzz'), ('é')")
        .await
        .unwrap();
    assert_eq!(to_json(column(&appended, "count").as_ref()), [json!(2)]);
    let want = [json!("a"), json!("zzz"), json!("é")];
    let fresh = format!("read_zarr('{}')", alone.display());
    for table in ["n", fresh.as_str()] {
        let got = query(&ctx, &format!("SELECT names FROM {table} ORDER BY index"))
            .await
            .unwrap();
        assert_eq!(to_json(column(&got, "names").as_ref()), want, "{table}");
    }
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(alone.join("zarr.json")).unwrap()).unwrap();
    assert_eq!(
        doc["consolidated_metadata"]["metadata"]["names"]["shape"],
        json!([3])
    );

    let beside = dir.path().join("beside.zarr");
    copy(&format!(
        "COPY (SELECT 'a' AS names, 1 AS k) TO '{}' STORED AS ZARR OPTIONS ('string_length' '8')",
        beside.display()
    ))
    .await
    .unwrap();
    query(
        &ctx,
        &format!(
            "CREATE EXTERNAL TABLE m STORED AS ZARR LOCATION '{}' OPTIONS ('path' 'names')",
            beside.display()
        ),
    )
    .await
    .unwrap();
    let sorted = |dir: &std::path::Path| {
        let mut files = walk(dir);
        files.sort();
        files
    };
    let before = sorted(&beside);
    let e = query(&ctx, "INSERT INTO m (names) VALUES ('zzz')")
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("/beside.zarr/names alone"), "{e}");
    assert!(
        e.contains("the store root") && e.contains("holds k along the same dimension index"),
        "{e}"
    );
    assert!(e.contains("without the option path"), "{e}");
    assert!(!e.contains("from ,") && !e.contains("from ."), "{e}");
    assert_eq!(
        sorted(&beside),
        before,
        "the refused insert changed the store"
    );
    let got = query(&ctx, "SELECT count(*) AS c FROM m").await.unwrap();
    assert_eq!(to_json(column(&got, "c").as_ref()), [json!(1)]);
}

/// Two INSERTs into one local store at once, each from its own session: the second waits for
/// the first (one writer at a time, `.{name}.lock` beside the store) and appends after its
/// rows, so every row of both is there, once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_inserts_keep_every_row_of_both() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("shared.zarr");
    copy(&format!(
        "COPY (SELECT v AS k FROM generate_series(0, 999) t(v)) TO '{}' STORED AS ZARR \
         OPTIONS ('chunk_rows' '1000')",
        store.display()
    ))
    .await
    .unwrap();
    let insert = |from: i64| {
        let store = store.clone();
        async move {
            let ctx = context();
            query(
                &ctx,
                &format!(
                    "CREATE EXTERNAL TABLE t STORED AS ZARR LOCATION '{}'",
                    store.display()
                ),
            )
            .await
            .unwrap();
            let sql = format!(
                "INSERT INTO t (k) SELECT v FROM generate_series({from}, {}) t(v)",
                from + 99_999
            );
            query(&ctx, &sql).await.map(|_| ())
        }
    };
    let (a, b) = tokio::join!(insert(1_000), insert(101_000));
    a.unwrap();
    b.unwrap();
    let got = query(
        &context(),
        &format!(
            "SELECT count(*) AS c, sum(k) AS s, count(DISTINCT k) AS d FROM read_zarr('{}')",
            store.display()
        ),
    )
    .await
    .unwrap();
    let n: i64 = 201_000;
    assert_eq!(to_json(column(&got, "c").as_ref()), [json!(n)]);
    assert_eq!(to_json(column(&got, "d").as_ref()), [json!(n)]);
    assert_eq!(
        to_json(column(&got, "s").as_ref()),
        [json!(n * (n - 1) / 2)]
    );
    // The lock file stays beside the store, naming no one and held by no one.
    let lock = dir.path().join(".shared.zarr.lock");
    assert_eq!(
        std::fs::read(&lock).unwrap(),
        b"",
        "the lock still names a holder"
    );
    assert!(std::fs::File::open(&lock).unwrap().try_lock().is_ok());
}

/// A write that finds the store locked waits `lock_timeout` seconds, then fails naming the
/// holder, and writes nothing.
#[tokio::test]
async fn a_held_lock_fails_a_write_after_lock_timeout_naming_the_holder() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("held.zarr");
    copy(&format!(
        "COPY (SELECT 1 AS k) TO '{}' STORED AS ZARR",
        store.display()
    ))
    .await
    .unwrap();
    let lock = dir.path().join(".held.zarr.lock");
    std::fs::write(
        &lock,
        "process 4242 on elsewhere since 2026-12-07T10:00:00Z",
    )
    .unwrap();
    let held = std::fs::File::open(&lock).unwrap();
    held.lock().unwrap();
    let before = std::fs::read(store.join("k/c/0")).unwrap();
    let e = copy(&format!(
        "COPY (SELECT 2 AS k) TO '{}' STORED AS ZARR OPTIONS ('mode' 'overwrite', \
         'lock_timeout' '0')",
        store.display()
    ))
    .await
    .unwrap_err()
    .to_string();
    assert!(
        e.contains(
            "another writer holds it (process 4242 on elsewhere since 2026-12-07T10:00:00Z)"
        ),
        "{e}"
    );
    assert!(e.contains("nothing was written"), "{e}");
    assert_eq!(std::fs::read(store.join("k/c/0")).unwrap(), before);
    drop(held);
    copy(&format!(
        "COPY (SELECT 2 AS k) TO '{}' STORED AS ZARR OPTIONS ('mode' 'overwrite', \
         'lock_timeout' '0')",
        store.display()
    ))
    .await
    .unwrap();
}

/// Where the OS cannot exchange two directories, an overwrite renames the old store aside
/// (`.{name}.{pid}-{n}.old`) before moving the new one in: a writer killed between the two
/// leaves no store at the target, and the next writer, once it holds the lock, puts the old
/// one back instead of removing it (here a COPY without `mode 'overwrite'`, which then finds
/// the store and refuses).
#[tokio::test]
async fn an_old_store_left_aside_by_a_killed_overwrite_is_put_back() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("aside.zarr");
    copy(&format!(
        "COPY (SELECT v AS k FROM generate_series(0, 9) t(v)) TO '{}' STORED AS ZARR",
        store.display()
    ))
    .await
    .unwrap();
    // As a killed writer (no such process) leaves it between its two renames: the store
    // aside, and its name in the lock file.
    let aside = dir.path().join(".aside.zarr.4194304999-12.old");
    std::fs::rename(&store, &aside).unwrap();
    std::fs::write(
        dir.path().join(".aside.zarr.lock"),
        "process 4194304999 on here since 2026-12-07T10:00:00Z",
    )
    .unwrap();
    let e = copy(&format!(
        "COPY (SELECT 1 AS k) TO '{}' STORED AS ZARR",
        store.display()
    ))
    .await
    .unwrap_err()
    .to_string();
    assert!(e.contains("a Zarr store is there"), "{e}");
    assert!(!aside.exists(), "the old store stayed aside");
    let got = query(
        &context(),
        &format!(
            "SELECT count(*) AS c, sum(k) AS s FROM read_zarr('{}')",
            store.display()
        ),
    )
    .await
    .unwrap();
    assert_eq!(to_json(column(&got, "c").as_ref()), [json!(10)]);
    assert_eq!(to_json(column(&got, "s").as_ref()), [json!(45)]);
}
