//! `zarr-sql convert IN OUT`: Parquet, CSV, JSON and Zarr inputs to Zarr and Parquet outputs,
//! each read back and compared value by value with the corpus or with the input; `--columns`,
//! `--where`, the writer's `-w` options, progress and errors.

use std::fs::File;
use std::path::Path;

use arrow::array::RecordBatch;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use serde_json::Value;

use crate::common::*;

const STATIONS: &str = "13_group_consolidated_metadata";

/// The rows of `sql`, run by `zarr-sql --format json`, as JSON objects.
fn rows(sql: &str) -> Vec<serde_json::Map<String, Value>> {
    let o = zarr_sql(&["-q", "--format", "json", "-c", sql]);
    assert!(o.status.success(), "{sql}: {}", stderr(&o));
    let text = stdout(&o);
    let value: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    value
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_object().unwrap().clone())
        .collect()
}

/// One column of `rows`.
fn column_of(rows: &[serde_json::Map<String, Value>], name: &str) -> Vec<Value> {
    rows.iter()
        .map(|r| r.get(name).cloned().unwrap_or(Value::Null))
        .collect()
}

/// The values of the array `path` of a corpus case, from its expected.json.
fn expected(case: &str, path: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(corpus().join(case).join("expected.json")).unwrap();
    let expected: Value = serde_json::from_str(&text).unwrap();
    let array = expected["arrays"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["path"] == path)
        .unwrap();
    array["values"].as_array().unwrap().clone()
}

/// Asserts that two columns hold the same values (numbers compared as the corpus compares
/// them).
fn assert_same(got: &[Value], want: &[Value], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: {got:?} vs {want:?}");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(same(g, w), "{what} row {i}: {g} vs {w}");
    }
}

/// Asserts that the store `out` holds the stations' columns station, label and value, in
/// the corpus's order along `index`.
fn assert_stations(out: &Path) {
    let got = rows(&format!(
        "SELECT * FROM read_zarr('{}') ORDER BY index",
        out.display()
    ));
    assert_eq!(
        column_of(&got, "index"),
        (0..27).map(Value::from).collect::<Vec<_>>()
    );
    for name in ["station", "label", "value"] {
        assert_same(
            &column_of(&got, name),
            &expected(STATIONS, name),
            &format!("{} {name}", out.display()),
        );
    }
}

fn convert(args: &[&str]) -> std::process::Output {
    let mut all = vec!["convert"];
    all.extend_from_slice(args);
    zarr_sql(&all)
}

fn read_parquet(path: &Path) -> (Vec<RecordBatch>, parquet::file::metadata::ParquetMetaData) {
    let builder = ParquetRecordBatchReaderBuilder::try_new(File::open(path).unwrap()).unwrap();
    let meta = builder.metadata().as_ref().clone();
    let batches = builder.build().unwrap().map(|b| b.unwrap()).collect();
    (batches, meta)
}

#[test]
fn zarr_to_zarr_with_chunk_rows_keeps_every_value() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("stations.zarr");
    let o = convert(&[
        &corpus_store(STATIONS),
        out.to_str().unwrap(),
        "-w",
        "chunk_rows=4",
        "--write-option",
        "dimension=index",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!("Converted 27 rows to {}", out.display())),
        "{}",
        stderr(&o)
    );
    assert_stations(&out);
    // chunk_rows reached the writer: 27 rows in chunks of 4.
    let meta: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("station/zarr.json")).unwrap())
            .unwrap();
    assert_eq!(
        meta["chunk_grid"]["configuration"]["chunk_shape"],
        serde_json::json!([4])
    );
    assert_eq!(std::fs::read_dir(out.join("station/c")).unwrap().count(), 7);
    // The writer's mode: an existing store is kept unless -w mode=overwrite.
    let o = convert(&[
        &corpus_store(STATIONS),
        out.to_str().unwrap(),
        "--columns",
        "label",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("overwrite"), "{}", stderr(&o));
    assert_stations(&out);
    let o = convert(&[
        &corpus_store(STATIONS),
        out.to_str().unwrap(),
        "--columns",
        "label",
        "-w",
        "mode=overwrite",
        "-q",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let got = rows(&format!(
        "SELECT * FROM read_zarr('{}') ORDER BY index",
        out.display()
    ));
    assert_same(
        &column_of(&got, "label"),
        &expected(STATIONS, "label"),
        "label",
    );
    assert_eq!(got[0].len(), 2, "{:?}", got[0]);
}

#[test]
fn zarr_to_zarr_of_a_node_and_of_a_2d_array() {
    let dir = tempfile::tempdir().unwrap();
    // --path: the group's sub-group.
    let out = dir.path().join("source.zarr");
    let o = convert(&[
        &corpus_store(STATIONS),
        out.to_str().unwrap(),
        "--path",
        "meta/source",
        "-q",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stderr(&o), "");
    let got = rows(&format!(
        "SELECT * FROM read_zarr('{}') ORDER BY index",
        out.display()
    ));
    assert_same(
        &column_of(&got, "source"),
        &expected(STATIONS, "meta/source"),
        "meta/source",
    );
    // A 2-D array chunked along both dimensions: every element, with its indices, and the
    // same store every time whatever the partitions.
    let case = "16_zarr_v2_U12_2d_blosc_fill";
    let store = corpus_store(case);
    let (a, b) = (dir.path().join("a.zarr"), dir.path().join("b.zarr"));
    for out in [&a, &b] {
        let o = convert(&[&store, out.to_str().unwrap(), "-p", "4", "-q"]);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let sql = |location: &str| {
        format!("SELECT dim_0, dim_1, value FROM read_zarr('{location}') ORDER BY dim_0, dim_1")
    };
    let want = rows(&sql(&store));
    assert_eq!(rows(&sql(a.to_str().unwrap())), want);
    let written = |p: &Path| {
        zarr_test_support::servers::files(p)
            .into_iter()
            .map(|(name, path)| (name, std::fs::read(path).unwrap()))
            .collect::<Vec<_>>()
    };
    assert_eq!(written(&a), written(&b));
}

#[test]
fn zarr_to_parquet_as_the_export_writes_it() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("stations.parquet");
    let o = convert(&[
        &corpus_store(STATIONS),
        out.to_str().unwrap(),
        "--compression",
        "snappy",
        "--row-group-size",
        "10",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("Converted 27 rows"), "{}", stderr(&o));
    let (batches, meta) = read_parquet(&out);
    for name in ["station", "label", "value"] {
        let got: Vec<Value> = batches
            .iter()
            .flat_map(|b| to_json(b.column_by_name(name).unwrap().as_ref()))
            .collect();
        assert_same(&got, &expected(STATIONS, name), name);
    }
    assert_eq!(meta.num_row_groups(), 3);
    assert_eq!(
        meta.row_group(0).column(0).compression(),
        parquet::basic::Compression::SNAPPY
    );
    // The source's provenance in the footer, as the export records it.
    let kv = meta.file_metadata().key_value_metadata().unwrap();
    let store = kv.iter().find(|e| e.key == "zarr.store").unwrap();
    assert!(store.value.as_deref().unwrap().ends_with("data.zarr"));
}

#[test]
fn parquet_to_zarr() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("stations.parquet");
    let out = dir.path().join("stations.zarr");
    let o = zarr_sql(&[
        "-q",
        "-c",
        &format!(
            "COPY (SELECT * FROM read_zarr('{}')) TO '{}'",
            corpus_store(STATIONS),
            input.display()
        ),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = convert(&[input.to_str().unwrap(), out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("Converted 27 rows"), "{}", stderr(&o));
    assert_stations(&out);

    // A directory of Parquet files is read file by file, in the order of their names.
    let parts = dir.path().join("parts");
    std::fs::create_dir(&parts).unwrap();
    let store = corpus_store(STATIONS);
    for (name, range) in [
        ("1.parquet", "station >= 'ST-020'"),
        ("0.parquet", "station < 'ST-020'"),
    ] {
        let o = zarr_sql(&[
            "-q",
            "-c",
            &format!(
                "COPY (SELECT * FROM read_zarr('{store}') WHERE {range}) TO '{}'",
                parts.join(name).display()
            ),
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let out = dir.path().join("parts.zarr");
    let o = convert(&[parts.to_str().unwrap(), out.to_str().unwrap(), "-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_stations(&out);
}

#[test]
fn csv_to_zarr() {
    let dir = tempfile::tempdir().unwrap();
    // A CSV written by zarr-sql: 200,000 words, some of them empty strings.
    let store = corpus_store("17_large_200k_zstd");
    let input = dir.path().join("words.csv");
    let o = zarr_sql(&[
        "-q",
        "--format",
        "csv",
        "-c",
        &format!("SELECT * FROM read_zarr('{store}') ORDER BY dim_0"),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    std::fs::write(&input, &o.stdout).unwrap();
    let out = dir.path().join("words.zarr");
    let o = convert(&[input.to_str().unwrap(), out.to_str().unwrap(), "--progress"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains("progress: 200000 rows"), "{e}");
    assert!(e.contains("Converted 200000 rows"), "{e}");
    let sql = |location: &str| {
        format!(
            "SELECT count(*) AS n, count(DISTINCT value) AS words, \
             sum(CASE WHEN value = '' THEN 1 ELSE 0 END) AS empty, \
             min(dim_0) AS first, max(dim_0) AS last FROM read_zarr('{location}')"
        )
    };
    let want = rows(&sql(&store));
    assert!(want[0]["empty"].as_i64().unwrap() > 0, "{want:?}");
    assert_eq!(rows(&sql(out.to_str().unwrap())), want);
    // Row by row: the words in the order of the CSV's lines.
    let words = |location: &str| {
        let o = zarr_sql(&[
            "-q",
            "--format",
            "csv",
            "-c",
            &format!("SELECT dim_0, value FROM read_zarr('{location}') ORDER BY dim_0"),
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        stdout(&o)
    };
    assert_eq!(words(out.to_str().unwrap()), words(&store));
    let ordered = rows(&format!(
        "SELECT count(*) AS n FROM read_zarr('{}') WHERE index <> dim_0",
        out.display()
    ));
    assert_eq!(ordered[0]["n"], 0);

    // Quoted commas and line breaks, an empty string, numbers.
    let input = dir.path().join("quoted.csv");
    std::fs::write(
        &input,
        "name,n\n\"a,b\",1\n\"two\nlines\",2\n,3\nSão Paulo,4\n",
    )
    .unwrap();
    let out = dir.path().join("quoted.zarr");
    let o = convert(&[input.to_str().unwrap(), out.to_str().unwrap(), "-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let got = rows(&format!(
        "SELECT name, n FROM read_zarr('{}') ORDER BY index",
        out.display()
    ));
    assert_eq!(
        column_of(&got, "name"),
        ["a,b", "two\nlines", "", "São Paulo"].map(Value::from)
    );
    assert_eq!(column_of(&got, "n"), [1, 2, 3, 4].map(Value::from));
}

#[test]
fn json_to_zarr_and_to_parquet() {
    let dir = tempfile::tempdir().unwrap();
    let store = corpus_store(STATIONS);
    let query = format!("SELECT * FROM read_zarr('{store}') ORDER BY station");
    // Newline-delimited JSON, and a file holding one array (zarr-sql's --format json).
    for (name, format) in [("stations.ndjson", "ndjson"), ("stations.json", "json")] {
        let o = zarr_sql(&["-q", "--format", format, "-c", &query]);
        assert!(o.status.success(), "{}", stderr(&o));
        let input = dir.path().join(name);
        std::fs::write(&input, &o.stdout).unwrap();
        let out = dir.path().join(format!("{name}.zarr"));
        let o = convert(&[input.to_str().unwrap(), out.to_str().unwrap(), "-q"]);
        assert!(o.status.success(), "{name}: {}", stderr(&o));
        assert_stations(&out);
        let parquet = dir.path().join(format!("{name}.parquet"));
        let o = convert(&[
            input.to_str().unwrap(),
            parquet.to_str().unwrap(),
            "--progress",
        ]);
        assert!(o.status.success(), "{name}: {}", stderr(&o));
        assert!(stderr(&o).contains("Converted 27 rows"), "{}", stderr(&o));
        let (batches, _) = read_parquet(&parquet);
        let labels: Vec<Value> = batches
            .iter()
            .flat_map(|b| to_json(b.column_by_name("label").unwrap().as_ref()))
            .collect();
        assert_same(&labels, &expected(STATIONS, "label"), name);
    }
    // --from reads a name that says nothing.
    let input = dir.path().join("stations.txt");
    std::fs::copy(dir.path().join("stations.ndjson"), &input).unwrap();
    let out = dir.path().join("txt.zarr");
    let o = convert(&[
        input.to_str().unwrap(),
        out.to_str().unwrap(),
        "--from",
        "json",
        "-q",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_stations(&out);
}

#[test]
fn columns_and_where() {
    let dir = tempfile::tempdir().unwrap();
    let store = corpus_store(STATIONS);
    let want = rows(&format!(
        "SELECT label, station FROM read_zarr('{store}') WHERE value > 0 AND label <> 'fen' \
         ORDER BY station"
    ));
    assert!(want.len() > 5 && want.len() < 27);
    // A Zarr input, and a CSV one (the same rows, through DataFusion's reader).
    let csv = dir.path().join("stations.csv");
    let o = zarr_sql(&[
        "-q",
        "--format",
        "csv",
        "-c",
        &format!("SELECT * FROM read_zarr('{store}') ORDER BY station"),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    std::fs::write(&csv, &o.stdout).unwrap();
    for (i, input) in [store.as_str(), csv.to_str().unwrap()].iter().enumerate() {
        let out = dir.path().join(format!("{i}.zarr"));
        let o = convert(&[
            input,
            out.to_str().unwrap(),
            "--columns",
            "label, station",
            "--where",
            "value > 0 AND label <> 'fen'",
            "-q",
        ]);
        assert!(o.status.success(), "{input}: {}", stderr(&o));
        let got = rows(&format!(
            "SELECT * FROM read_zarr('{}') ORDER BY index",
            out.display()
        ));
        // Only the columns asked for, beside the writer's index.
        let names: Vec<&String> = got[0].keys().collect();
        assert_eq!(names, ["index", "label", "station"], "{input}");
        let got: Vec<_> = got
            .into_iter()
            .map(|mut r| {
                r.remove("index");
                r
            })
            .collect();
        assert_eq!(got, want, "{input}");
        // And to Parquet: the columns in the order asked for.
        let out = dir.path().join(format!("{i}.parquet"));
        let o = convert(&[
            input,
            out.to_str().unwrap(),
            "--columns",
            "station,label",
            "--where",
            "value > 0 AND label <> 'fen'",
            "-q",
        ]);
        assert!(o.status.success(), "{input}: {}", stderr(&o));
        let (batches, _) = read_parquet(&out);
        let schema = batches[0].schema();
        let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
        assert_eq!(names, ["station", "label"]);
        let stations: Vec<Value> = batches
            .iter()
            .flat_map(|b| to_json(b.column(0).as_ref()))
            .collect();
        assert_eq!(stations, column_of(&want, "station"), "{input}");
    }
}

#[test]
fn an_unknown_output_extension_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("stations.csv");
    let o = convert(&[&corpus_store(STATIONS), out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert!(
        e.contains(".parquet") && e.contains(".zarr") && e.contains("--to"),
        "{e}"
    );
    assert!(!out.exists());
    // --to names the format whatever the extension.
    let out = dir.path().join("stations.store");
    let o = convert(&[
        &corpus_store(STATIONS),
        out.to_str().unwrap(),
        "--to",
        "zarr",
        "-q",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_stations(&out);
}

#[test]
fn an_unknown_write_option_lists_the_known_ones() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("stations.zarr");
    let o = convert(&[
        &corpus_store(STATIONS),
        out.to_str().unwrap(),
        "-w",
        "chunk_rows=10",
        "-w",
        "no_such_option=1",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    // The library's message: the key, and the keys it knows.
    assert!(e.contains("no_such_option"), "{e}");
    assert!(e.contains("chunk_rows") && e.contains("dimension"), "{e}");
    assert!(!out.exists());
    // A value the writer refuses, and a pair without '='.
    let o = convert(&[
        &corpus_store(STATIONS),
        out.to_str().unwrap(),
        "-w",
        "chunk_rows=0",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("chunk_rows"), "{}", stderr(&o));
    let o = convert(&[
        &corpus_store(STATIONS),
        out.to_str().unwrap(),
        "-w",
        "chunk_rows",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("1st --write-option is not of the form key=value"),
        "{}",
        stderr(&o)
    );
    // -w is the Zarr writer's, the Parquet options the Parquet writer's.
    let parquet = dir.path().join("stations.parquet");
    let o = convert(&[
        &corpus_store(STATIONS),
        parquet.to_str().unwrap(),
        "-w",
        "chunk_rows=10",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("Zarr writer"), "{}", stderr(&o));
    let o = convert(&[
        &corpus_store(STATIONS),
        out.to_str().unwrap(),
        "--compression",
        "snappy",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("Parquet output"), "{}", stderr(&o));
    assert!(!out.exists() && !parquet.exists());
}

#[test]
fn an_unknown_column_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("stations.csv");
    std::fs::write(&csv, "station,value\nST-000,1.5\n").unwrap();
    let store = corpus_store(STATIONS);
    for input in [store.as_str(), csv.to_str().unwrap()] {
        let out = dir.path().join("out.zarr");
        for flag in [
            ["--columns", "station,no_such_column"],
            ["--where", "no_such_column > 1"],
        ] {
            let o = convert(&[input, out.to_str().unwrap(), flag[0], flag[1]]);
            assert_eq!(o.status.code(), Some(1), "{input} {flag:?}");
            let e = stderr(&o);
            assert!(
                e.contains("No field named no_such_column") && e.contains("t.station"),
                "{input} {flag:?}: {e}"
            );
            assert!(!out.exists());
        }
    }
}

#[test]
fn options_of_the_other_side_and_format_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("stations.csv");
    std::fs::write(&csv, "station\nST-000\n").unwrap();
    let out = dir.path().join("out.zarr");
    let o = convert(&[
        csv.to_str().unwrap(),
        out.to_str().unwrap(),
        "-o",
        "string_type=utf8view",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("applies to a Zarr input"),
        "{}",
        stderr(&o)
    );
    // --format is the query results' (a global flag); convert's are --from and --to.
    let o = convert(&[
        csv.to_str().unwrap(),
        out.to_str().unwrap(),
        "--format",
        "csv",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("--from"), "{}", stderr(&o));
    let o = convert(&[
        csv.to_str().unwrap(),
        out.to_str().unwrap(),
        "-q",
        "--progress",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(!out.exists());
}

#[test]
fn progress_follows_the_scan_and_quiet_prints_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("words.zarr");
    let store = corpus_store("17_large_200k_zstd");
    let o = convert(&[&store, out.to_str().unwrap(), "--progress"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("progress: 200000/200000 rows, 20/20 chunks"),
        "{e}"
    );
    assert!(e.contains("Converted 200000 rows"), "{e}");
    let o = convert(&[&store, out.to_str().unwrap(), "-q", "-w", "mode=overwrite"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stderr(&o), "");
    let o = convert(&[&store, out.to_str().unwrap(), "-w", "mode=overwrite"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stderr(&o).contains("progress:"));
}
