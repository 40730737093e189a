//! `SET zarr.<option> = '…'`: session defaults that `read_zarr`, `CREATE EXTERNAL TABLE … STORED
//! AS ZARR` and `COPY … STORED AS ZARR` start from, a statement's own options winning; checked
//! when set, shown by `SHOW`, kept by a second `register`, never holding storage secrets.

use std::path::Path;

use arrow::datatypes::DataType;
use datafusion::prelude::{SessionConfig, SessionContext};
use serde_json::{Value, json};

use zarr_test_support::*;

const CITIES: &str = "12_group_table_cities";

/// A registered session with `SHOW` (information_schema).
fn session() -> SessionContext {
    let config = SessionConfig::new()
        .with_target_partitions(2)
        .with_information_schema(true);
    let ctx = SessionContext::new_with_config(config);
    datafusion_zarr::register(&ctx);
    ctx
}

async fn run(ctx: &SessionContext, sql: &str) -> datafusion::error::Result<()> {
    query(ctx, sql).await.map(|_| ())
}

/// The type of column `name` of the rows `sql` gives, and its values, sorted.
async fn column_type_and_values(
    ctx: &SessionContext,
    sql: &str,
    name: &str,
) -> (DataType, Vec<String>) {
    let batches = query(ctx, sql).await.unwrap();
    let values = column(&batches, name);
    let mut shown = show(values.as_ref());
    shown.sort();
    (values.data_type().clone(), shown)
}

/// `SHOW name`'s value (NULL as `None`).
async fn shown(ctx: &SessionContext, name: &str) -> Option<String> {
    let batches = query(ctx, &format!("SHOW {name}")).await.unwrap();
    let value = column(&batches, "value");
    assert_eq!(value.len(), 1, "SHOW {name}");
    to_json(value.as_ref())[0].as_str().map(String::from)
}

#[tokio::test]
async fn set_string_type_is_the_default_of_read_zarr_and_create_external_table() {
    let ctx = session();
    let store = corpus_store(CITIES);
    let sql = format!("SELECT name FROM read_zarr('{store}')");
    let (before, names) = column_type_and_values(&ctx, &sql, "name").await;
    assert_eq!(before, DataType::Utf8);
    assert_eq!(shown(&ctx, "zarr.string_type").await, None);

    run(&ctx, "SET zarr.string_type = 'utf8view'")
        .await
        .unwrap();
    assert_eq!(
        shown(&ctx, "zarr.string_type").await.as_deref(),
        Some("utf8view")
    );
    // read_zarr, with and without a path argument, starts from the session's value.
    for sql in [
        sql.clone(),
        format!("SELECT name FROM read_zarr('{store}', '')"),
    ] {
        let (data_type, values) = column_type_and_values(&ctx, &sql, "name").await;
        assert_eq!(data_type, DataType::Utf8View, "{sql}");
        assert_eq!(values, names, "{sql}");
    }
    run(
        &ctx,
        &format!("CREATE EXTERNAL TABLE cities STORED AS ZARR LOCATION '{store}'"),
    )
    .await
    .unwrap();
    let (data_type, values) = column_type_and_values(&ctx, "SELECT name FROM cities", "name").await;
    assert_eq!(data_type, DataType::Utf8View);
    assert_eq!(values, names);

    // A statement's own option wins, in both.
    let explicit = format!("SELECT name FROM read_zarr('{store}', '', 'string_type', 'utf8')");
    let (data_type, values) = column_type_and_values(&ctx, &explicit, "name").await;
    assert_eq!((data_type, values), (DataType::Utf8, names.clone()));
    run(
        &ctx,
        &format!(
            "CREATE EXTERNAL TABLE cities_large STORED AS ZARR LOCATION '{store}' \
             OPTIONS ('string_type' 'large_utf8')"
        ),
    )
    .await
    .unwrap();
    let (data_type, values) =
        column_type_and_values(&ctx, "SELECT name FROM cities_large", "name").await;
    assert_eq!((data_type, values), (DataType::LargeUtf8, names.clone()));

    // A second register keeps what was set; an empty value unsets.
    datafusion_zarr::register(&ctx);
    let (data_type, _) = column_type_and_values(&ctx, &sql, "name").await;
    assert_eq!(data_type, DataType::Utf8View);
    run(&ctx, "SET zarr.string_type = ''").await.unwrap();
    assert_eq!(shown(&ctx, "zarr.string_type").await, None);
    let (data_type, _) = column_type_and_values(&ctx, &sql, "name").await;
    assert_eq!(data_type, DataType::Utf8);
}

/// The `name` of each codec of the V3 array at `array` (its zarr.json), and the document.
fn codecs(array: &Path) -> (Vec<String>, Value) {
    let text = std::fs::read_to_string(array.join("zarr.json")).unwrap();
    let doc: Value = serde_json::from_str(&text).unwrap();
    let names = doc["codecs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap().to_string())
        .collect();
    (names, doc)
}

#[tokio::test]
async fn set_compression_is_the_default_of_copy_and_options_win() {
    let ctx = session();
    let dir = tempfile::tempdir().unwrap();
    let rows = "SELECT 'ST-' || CAST(v AS VARCHAR) AS station, v AS n \
                FROM generate_series(0, 99) t(v)";
    let copy = |name: &str, options: &str| {
        format!(
            "COPY ({rows}) TO '{}' STORED AS ZARR {options}",
            dir.path().join(name).display()
        )
    };

    run(&ctx, &copy("default.zarr", "")).await.unwrap();
    let (names, _) = codecs(&dir.path().join("default.zarr/n"));
    assert_eq!(names, ["bytes", "zstd"]);

    run(&ctx, "SET zarr.compression = 'blosc'").await.unwrap();
    run(&ctx, "SET zarr.chunk_rows = '40'").await.unwrap();
    run(&ctx, &copy("blosc.zarr", "")).await.unwrap();
    for array in ["station", "n"] {
        let (names, doc) = codecs(&dir.path().join("blosc.zarr").join(array));
        assert_eq!(names.last().map(String::as_str), Some("blosc"), "{array}");
        assert_eq!(
            doc["chunk_grid"]["configuration"]["chunk_shape"],
            json!([40]),
            "{array}"
        );
    }
    // The rows are all there.
    let store = dir.path().join("blosc.zarr");
    let read = format!("SELECT station FROM read_zarr('{}')", store.display());
    let (_, stations) = column_type_and_values(&ctx, &read, "station").await;
    assert_eq!(stations.len(), 100);

    // The statement's OPTIONS win, key by key: gzip with the session's chunk_rows.
    run(
        &ctx,
        &copy(
            "gzip.zarr",
            "OPTIONS ('compression' 'gzip', 'compression_level' '9')",
        ),
    )
    .await
    .unwrap();
    let (names, doc) = codecs(&dir.path().join("gzip.zarr/n"));
    assert_eq!(names, ["bytes", "gzip"]);
    assert_eq!(doc["codecs"][1]["configuration"]["level"], json!(9));
    assert_eq!(
        doc["chunk_grid"]["configuration"]["chunk_shape"],
        json!([40])
    );

    // Zarr V2 from the session: the compressor in .zarray.
    run(&ctx, "SET zarr.zarr_format = '2'").await.unwrap();
    run(&ctx, &copy("v2.zarr", "")).await.unwrap();
    let zarray: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("v2.zarr/n/.zarray")).unwrap(),
    )
    .unwrap();
    assert_eq!(zarray["compressor"]["id"], json!("blosc"));

    // Options that hold only together are checked with the statement's: a session level
    // that gzip does not have fails the COPY, naming it.
    run(&ctx, "SET zarr.compression_level = '15'")
        .await
        .unwrap();
    let e = run(&ctx, &copy("bad.zarr", "OPTIONS ('compression' 'gzip')"))
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("compression_level 15"), "{e}");
    assert!(!dir.path().join("bad.zarr").exists());
}

#[tokio::test]
async fn bad_keys_and_values_fail_when_set_naming_what_is_accepted() {
    let ctx = session();
    let e = run(&ctx, "SET zarr.nonsense = '1'")
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("unknown option 'zarr.nonsense'"), "{e}");
    assert!(
        e.contains("string_type") && e.contains("compression") && e.contains("zarr_format"),
        "the message lists the options: {e}"
    );
    let e = run(&ctx, "SET zarr.compression = 'brotli'")
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("zarr.compression") && e.contains("zstd, blosc, gzip, lz4, none"),
        "{e}"
    );
    let e = run(&ctx, "SET zarr.string_type = 'utf16'")
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("zarr.string_type") && e.contains("utf8, utf8view"),
        "{e}"
    );
    let e = run(&ctx, "SET zarr.chunk_rows = '0'")
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("zarr.chunk_rows"), "{e}");

    // Storage options are not session options: their secrets would be shown.
    let e = run(&ctx, "SET zarr.aws.secret_access_key = 's3cr3t'")
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("storage options") && !e.contains("s3cr3t"),
        "{e}"
    );

    // Nothing was set by the failures; SHOW ALL lists every key.
    let batches = query(
        &ctx,
        "SELECT name, value FROM information_schema.df_settings WHERE name LIKE 'zarr.%'",
    )
    .await
    .unwrap();
    let names = show(column(&batches, "name").as_ref());
    for key in [
        "zarr.string_type",
        "zarr.compression",
        "zarr.branch",
        "zarr.mode",
    ] {
        assert!(names.contains(&key.to_string()), "{key} in {names:?}");
    }
    assert!(!names.iter().any(|n| n.contains("aws")), "{names:?}");
    let values = to_json(column(&batches, "value").as_ref());
    assert!(values.iter().all(Value::is_null), "{values:?}");
}

#[tokio::test]
async fn a_session_without_register_is_as_before() {
    let ctx = SessionContext::new();
    let e = run(&ctx, "SET zarr.string_type = 'utf8view'")
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("zarr"), "{e}");
    // The table function alone reads with the options' own defaults.
    ctx.register_udtf(
        "read_zarr",
        std::sync::Arc::new(datafusion_zarr::ReadZarrFunction),
    );
    let sql = format!("SELECT name FROM read_zarr('{}')", corpus_store(CITIES));
    let (data_type, _) = column_type_and_values(&ctx, &sql, "name").await;
    assert_eq!(data_type, DataType::Utf8);
}
