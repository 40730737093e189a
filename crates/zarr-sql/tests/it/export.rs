//! `zarr-sql export` and COPY through the CLI: parity with the corpus, Parquet options,
//! provenance metadata, atomic replacement, cancellation and progress.

use std::fs::File;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use arrow::array::{Array, RecordBatch, UInt64Array};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::basic::Compression;
use serde_json::Value;

use crate::common::*;

fn read_parquet(path: &Path) -> (Vec<RecordBatch>, parquet::file::metadata::ParquetMetaData) {
    let builder = ParquetRecordBatchReaderBuilder::try_new(File::open(path).unwrap()).unwrap();
    let meta = builder.metadata().as_ref().clone();
    let batches = builder.build().unwrap().map(|b| b.unwrap()).collect();
    (batches, meta)
}

/// Rows in a Parquet file.
fn parquet_rows(path: &Path) -> usize {
    read_parquet(path).0.iter().map(|b| b.num_rows()).sum()
}

/// Files in `dir` other than `keep`: leftovers of a failed or cancelled export.
fn leftovers(dir: &Path, keep: &[&str]) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .filter(|n| !keep.contains(&n.as_str()))
        .collect()
}

#[test]
fn exporting_every_corpus_array_gives_the_expected_values() {
    let dir = tempfile::tempdir().unwrap();
    let mut checked = 0;
    for entry in std::fs::read_dir(corpus()).unwrap() {
        let case_dir = entry.unwrap().path();
        let Ok(text) = std::fs::read_to_string(case_dir.join("expected.json")) else {
            continue;
        };
        let expected: Value = serde_json::from_str(&text).unwrap();
        let store = case_dir.join("data.zarr");
        for array in expected["arrays"].as_array().unwrap() {
            let path = array["path"].as_str().unwrap();
            let out = dir.path().join(format!("{checked}.parquet"));
            let o = zarr_sql(&[
                "export",
                store.to_str().unwrap(),
                out.to_str().unwrap(),
                "--path",
                path,
                "-q",
            ]);
            assert!(o.status.success(), "{}: {}", store.display(), stderr(&o));
            let (batches, meta) = read_parquet(&out);
            let schema = batches[0].schema();
            let shape: Vec<u64> = array["shape"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_u64().unwrap())
                .collect();
            let ndim = shape.len();
            // Index columns keep their Arrow type (UInt64).
            for f in &schema.fields()[..ndim] {
                assert_eq!(f.data_type(), &arrow::datatypes::DataType::UInt64);
            }
            // Put each value at its C-order position given by the index columns.
            let count = array["count"].as_u64().unwrap() as usize;
            let mut values = vec![Value::Null; count];
            for b in &batches {
                let got = to_json(b.column(ndim).as_ref());
                for (r, v) in got.into_iter().enumerate() {
                    let mut linear = 0u64;
                    for (d, extent) in shape.iter().enumerate() {
                        let idx = b
                            .column(d)
                            .as_any()
                            .downcast_ref::<UInt64Array>()
                            .unwrap()
                            .value(r);
                        linear = linear * extent + idx;
                    }
                    values[linear as usize] = v;
                }
            }
            // A 1-D export is written in index order.
            if ndim == 1 {
                let order: Vec<u64> = batches
                    .iter()
                    .flat_map(|b| {
                        let c = b.column(0).as_any().downcast_ref::<UInt64Array>().unwrap();
                        c.values().to_vec()
                    })
                    .collect();
                assert_eq!(
                    order,
                    (0..count as u64).collect::<Vec<_>>(),
                    "{path} in order"
                );
            }
            if let Some(want) = array["values"].as_array() {
                for (i, (g, w)) in values.iter().zip(want).enumerate() {
                    assert!(
                        same(g, w),
                        "{} {path} element {i}: {g} vs {w}",
                        store.display()
                    );
                }
            } else {
                let joined: Vec<&str> = values.iter().map(|v| v.as_str().unwrap()).collect();
                use sha2::Digest;
                let digest = sha2::Sha256::digest(joined.join("\n").as_bytes());
                let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
                assert_eq!(hex, array["values_sha256"].as_str().unwrap());
            }
            // The source's metadata is in the footer.
            let kv = meta.file_metadata().key_value_metadata().unwrap();
            let get = |k: &str| kv.iter().find(|e| e.key == k).and_then(|e| e.value.clone());
            assert!(get("zarr.store").unwrap().ends_with("data.zarr"));
            assert_eq!(get("zarr.path").unwrap(), path);
            let node: Value = serde_json::from_str(&get("zarr.metadata").unwrap()).unwrap();
            assert!(node.get("shape").is_some(), "{node}");
            checked += 1;
        }
    }
    assert!(checked >= 25);
}

#[test]
fn group_export_matches_expected_parquet() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("cities.parquet");
    let store = corpus_store("12_group_table_cities");
    let o = zarr_sql(&[
        "export",
        &store,
        out.to_str().unwrap(),
        "--columns",
        "city,name,population",
        "-q",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let (batches, _) = read_parquet(&out);
    let (want, _) = read_parquet(&corpus().join("12_group_table_cities/expected.parquet"));
    let mut rows: Vec<(u64, Value, Value)> = Vec::new();
    for b in &batches {
        assert_eq!(b.num_columns(), 3);
        let city = b.column(0).as_any().downcast_ref::<UInt64Array>().unwrap();
        let name = to_json(b.column(1).as_ref());
        let pop = to_json(b.column(2).as_ref());
        for r in 0..b.num_rows() {
            rows.push((city.value(r), name[r].clone(), pop[r].clone()));
        }
    }
    rows.sort_by_key(|r| r.0);
    let names: Vec<Value> = rows.iter().map(|r| r.1.clone()).collect();
    let pops: Vec<Value> = rows.iter().map(|r| r.2.clone()).collect();
    assert_eq!(names, to_json(column(&want, "name").as_ref()));
    assert_eq!(pops, to_json(column(&want, "population").as_ref()));
}

#[test]
fn compression_row_groups_and_where() {
    let dir = tempfile::tempdir().unwrap();
    let store = corpus_store("17_large_200k_zstd");
    let cases = [
        ("zstd", Compression::ZSTD(Default::default())),
        ("snappy", Compression::SNAPPY),
        ("lz4", Compression::LZ4_RAW),
        ("gzip", Compression::GZIP(Default::default())),
        ("none", Compression::UNCOMPRESSED),
    ];
    for (name, codec) in cases {
        let out = dir.path().join(format!("{name}.parquet"));
        let o = zarr_sql(&[
            "export",
            &store,
            out.to_str().unwrap(),
            "--compression",
            name,
            "--row-group-size",
            "50000",
            "--where",
            "value LIKE 'mar%'",
            "-q",
        ]);
        assert!(o.status.success(), "{name}: {}", stderr(&o));
        let (batches, meta) = read_parquet(&out);
        let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
        assert_eq!(rows, 4146, "{name}");
        let got = meta.row_group(0).column(0).compression();
        assert_eq!(
            std::mem::discriminant(&got),
            std::mem::discriminant(&codec),
            "{name}: {got:?}"
        );
    }
    let out = dir.path().join("groups.parquet");
    let o = zarr_sql(&[
        "export",
        &store,
        out.to_str().unwrap(),
        "--row-group-size",
        "10000",
        "-q",
        "--string-type",
        "large_utf8",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let (batches, meta) = read_parquet(&out);
    assert_eq!(meta.num_row_groups(), 20);
    // The index column is delta-encoded without a dictionary; the strings keep theirs.
    for rg in meta.row_groups() {
        let (index, value) = (rg.column(0), rg.column(1));
        assert_eq!(index.column_path().string(), "dim_0");
        assert!(
            index
                .encodings()
                .any(|e| e == parquet::basic::Encoding::DELTA_BINARY_PACKED)
                && index.dictionary_page_offset().is_none(),
            "dim_0: {:?}",
            index.encodings().collect::<Vec<_>>()
        );
        assert!(
            value.dictionary_page_offset().is_some(),
            "value has a dictionary"
        );
    }
    assert_eq!(
        batches[0].schema().field(1).data_type(),
        &arrow::datatypes::DataType::LargeUtf8
    );
    let o = zarr_sql(&[
        "export",
        &store,
        out.to_str().unwrap(),
        "--compression",
        "snappy",
        "--compression-level",
        "3",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("--compression-level applies to zstd and gzip"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_failed_export_leaves_no_file_and_keeps_the_old_one() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.parquet");
    std::fs::write(&out, b"old content").unwrap();
    // The third element of the only chunk holds a lone surrogate.
    let o = zarr_sql(&[
        "export",
        &fixture("invalid_utf32.zarr"),
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("not a Unicode scalar value"));
    assert_eq!(std::fs::read(&out).unwrap(), b"old content");
    assert_eq!(
        leftovers(dir.path(), &["out.parquet"]),
        Vec::<String>::new()
    );
    // No target at all: none is created.
    let fresh = dir.path().join("fresh.parquet");
    let o = zarr_sql(&[
        "export",
        &fixture("invalid_utf32.zarr"),
        fresh.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(!fresh.exists());
    // The same through COPY in the CLI.
    let sql = format!(
        "COPY (SELECT * FROM read_zarr('{}')) TO '{}' STORED AS PARQUET",
        fixture("invalid_utf32.zarr"),
        out.display()
    );
    let o = zarr_sql(&["-c", &sql]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(std::fs::read(&out).unwrap(), b"old content");
    assert_eq!(
        leftovers(dir.path(), &["out.parquet"]),
        Vec::<String>::new()
    );
    // A successful export replaces the old file.
    let o = zarr_sql(&[
        "export",
        &corpus_store("00_zarr_python_defaults_U7"),
        out.to_str().unwrap(),
        "-q",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(parquet_rows(&out), 8);
}

#[test]
fn an_unwritable_path_fails_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("regular_file");
    std::fs::write(&file, b"x").unwrap();
    let target = file.join("out.parquet");
    let o = zarr_sql(&[
        "export",
        &corpus_store("00_zarr_python_defaults_U7"),
        target.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert!(
        e.contains("cannot write") && e.contains("is not a directory"),
        "{e}"
    );
    assert_eq!(std::fs::read(&file).unwrap(), b"x");
}

#[test]
fn progress_reports_the_final_count() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("p.parquet");
    let o = zarr_sql(&[
        "export",
        &corpus_store("17_large_200k_zstd"),
        out.to_str().unwrap(),
        "--progress",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("progress: 200000/200000 rows, 20/20 chunks"),
        "{e}"
    );
    assert!(e.contains("Exported 200000 rows"), "{e}");
    // Quiet prints nothing, and nothing is drawn when stderr is piped without --progress.
    let o = zarr_sql(&[
        "export",
        &corpus_store("17_large_200k_zstd"),
        out.to_str().unwrap(),
        "-q",
    ]);
    assert_eq!(stderr(&o), "");
    let o = zarr_sql(&[
        "export",
        &corpus_store("17_large_200k_zstd"),
        out.to_str().unwrap(),
    ]);
    assert!(!stderr(&o).contains("progress:"));
}

#[test]
fn ctrl_c_removes_the_temporary_file() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.parquet");
    std::fs::write(&out, b"old content").unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_zarr-sql"))
        .args([
            "export",
            &corpus_store("17_large_200k_zstd"),
            out.to_str().unwrap(),
            "-q",
            "-p",
            "1",
        ])
        .env("ZARR_SQL_TEST_READ_DELAY_MS", "400")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // 21 reads (metadata and 20 chunks) at 400 ms each keep the export running for over 8 s;
    // interrupt it midway.
    // (DataFusion's writer buffers, so the temporary file may not exist yet: either way,
    // nothing may be left behind.)
    let start = Instant::now();
    std::thread::sleep(Duration::from_millis(2000));
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", stderr(&o));
    assert!(
        start.elapsed() < Duration::from_secs(7),
        "the export was not cut short"
    );
    assert_eq!(std::fs::read(&out).unwrap(), b"old content");
    assert_eq!(
        leftovers(dir.path(), &["out.parquet"]),
        Vec::<String>::new()
    );
}

#[test]
fn inspect_shows_the_tree_and_schemas() {
    let o = zarr_sql(&["inspect", &corpus_store("13_group_consolidated_metadata")]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(
        text.contains(
            "label (array, zarr v3): fixed_length_utf32 (length_bytes 64, up to 16 code points)"
        ),
        "{text}"
    );
    assert!(
        text.contains("table (27 rows): station Utf8, label Utf8, value Float64"),
        "{text}"
    );
    assert!(text.contains("meta/source (array"), "{text}");
    let o = zarr_sql(&[
        "inspect",
        &corpus_store("08_sharding_index_start"),
        "--format",
        "json",
    ]);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["shard_shape"], serde_json::json!([16, 10]));
    assert_eq!(v["chunk_shape"], serde_json::json!([8, 5]));
    assert_eq!(v["data_type"]["capacity_code_points"], 10);
    let o = zarr_sql(&["inspect", &fixture("types.zarr"), "--format", "json"]);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let c = v["children"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["path"] == "c")
        .unwrap();
    assert_eq!(c["data_type"]["unsupported"], true);
    // netCDF character arrays: the strings they join into.
    let o = zarr_sql(&["inspect", &fixture("characters_v3.zarr")]);
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(
        text.contains("  name (array, zarr v3): null_terminated_bytes\n    shape: [6,10]")
            && text.contains("netCDF characters: joined into strings of 10 bytes (decode_cf)")
            && text
                .contains("table (18 rows): time UInt64, station Binary, code Binary, name Utf8"),
        "{text}"
    );
    let o = zarr_sql(&["inspect", "/no/such/store"]);
    assert_eq!(o.status.code(), Some(1));
}

#[test]
fn a_source_deleted_midway_leaves_no_file() {
    // Copy case 17 and delete one of its chunks' objects while the export runs slowly: the
    // chunk reads as missing (fill) only if absent at read time, so instead replace it by a
    // directory, which is an error whenever it is reached.
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store.zarr");
    let src = corpus().join("17_large_200k_zstd/data.zarr");
    std::fs::create_dir_all(store.join("c")).unwrap();
    std::fs::copy(src.join("zarr.json"), store.join("zarr.json")).unwrap();
    for i in 0..20 {
        std::fs::copy(src.join(format!("c/{i}")), store.join(format!("c/{i}"))).unwrap();
    }
    let out = dir.path().join("out.parquet");
    std::fs::write(&out, b"old content").unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_zarr-sql"))
        .args([
            "export",
            store.to_str().unwrap(),
            out.to_str().unwrap(),
            "-q",
            "-p",
            "1",
        ])
        .env("ZARR_SQL_TEST_READ_DELAY_MS", "100")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    std::fs::remove_file(store.join("c/19")).unwrap();
    std::fs::create_dir(store.join("c/19")).unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("c/19"), "{}", stderr(&o));
    assert_eq!(std::fs::read(&out).unwrap(), b"old content");
    assert_eq!(
        leftovers(dir.path(), &["out.parquet", "store.zarr"]),
        Vec::<String>::new()
    );
}

#[test]
fn missing_parent_directories_are_created() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("a/b/out.parquet");
    let o = zarr_sql(&[
        "export",
        &corpus_store("00_zarr_python_defaults_U7"),
        out.to_str().unwrap(),
        "-q",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(parquet_rows(&out), 8);
}

/// What an export killed outright (SIGKILL, an OOM kill) leaves, its hidden temporary and its
/// part files, the next export to the same target removes; a temporary of a running process
/// (another export) stays. A real `SIGKILL` of a running export, then the orphans of a process
/// that has exited.
#[test]
fn the_next_export_removes_what_a_killed_one_left() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.parquet");
    let store = corpus_store("17_large_200k_zstd");
    // Kill an export once its temporary exists (or give up after a bounded wait).
    let mut child = Command::new(env!("CARGO_BIN_EXE_zarr-sql"))
        .args(["export", &store, out.to_str().unwrap(), "-q", "-p", "1"])
        .current_dir(root())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while leftovers(dir.path(), &[]).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    // Orphans of a process that has ended, as a kill leaves them.
    let mut ended = Command::new("true").spawn().unwrap();
    let gone = ended.id();
    ended.wait().unwrap();
    let orphans = [
        format!(".out.parquet.{gone}-123.tmp.parquet"),
        format!(".out.parquet.{gone}-123.tmp.parquet#1"),
    ];
    for orphan in &orphans {
        std::fs::write(dir.path().join(orphan), b"partial").unwrap();
    }
    // A running process's temporary (this test's own) and an unrelated hidden file stay.
    let running = format!(".out.parquet.{}-7.tmp.parquet", std::process::id());
    std::fs::write(dir.path().join(&running), b"in progress").unwrap();
    std::fs::write(dir.path().join(".out.parquet.notes"), b"mine").unwrap();

    let o = zarr_sql(&["export", &store, out.to_str().unwrap(), "-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(parquet_rows(&out), 200_000);
    let mut left = leftovers(dir.path(), &["out.parquet"]);
    left.sort();
    assert_eq!(left, [running, ".out.parquet.notes".to_string()]);
}
