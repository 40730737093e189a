//! Kerchunk reference sets read as zarr-python reads them through fsspec: the fixtures in
//! `tests/data/references` (netCDF-4 and HDF5 files written by netCDF4-python and h5py,
//! references by kerchunk 0.2.10; `tools/kerchunk-fixtures/make_fixtures.py`), each variable's
//! stored values (`decode_cf` off) equal to `expected.json`'s, which zarr-python and xarray
//! read through fsspec's `ReferenceFileSystem`. And the refusals: URLs outside the allowed
//! places, ranges past a file's end, malformed sets and oversized generators.

use std::path::PathBuf;

use arrow::array::{Array, AsArray};
use arrow::datatypes::DataType;
use base64::Engine;
use serde_json::Value;
use zarr_test_support::{context, query, root};

fn dir() -> PathBuf {
    root().join("tests/data/references")
}

fn expected() -> Value {
    let text = std::fs::read_to_string(dir().join("expected.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// Every element of nested lists, in C order.
fn flatten(v: &Value, out: &mut Vec<Value>) {
    match v {
        Value::Array(items) => items.iter().for_each(|i| flatten(i, out)),
        other => out.push(other.clone()),
    }
}

/// An element of `expected.json` as bytes: text as UTF-8, or `base64:` data.
fn expected_bytes(v: &Value) -> Vec<u8> {
    let text = v.as_str().unwrap_or_default();
    match text.strip_prefix("base64:") {
        Some(b64) => base64::engine::general_purpose::STANDARD
            .decode(b64)
            .unwrap(),
        None => text.as_bytes().to_vec(),
    }
}

/// The value column of variable `var` of `fixture`, in C order, compared with `expected`.
async fn check_variable(fixture: &str, var: &str, expected: &Value) {
    let location = dir().join(fixture);
    let dims: Vec<String> = expected["dims"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_str().unwrap().to_string())
        .collect();
    let name = var.rsplit('/').next().unwrap();
    // The index columns are the dimensions; the value column is the array's name (a
    // coordinate read alone is its own dimension's values).
    let order = match dims.is_empty() || dims == [name] {
        true => String::new(),
        false => format!(
            "ORDER BY {}",
            dims.iter()
                .map(|d| format!("\"{d}\""))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let sql = format!(
        "SELECT \"{name}\" AS v FROM read_zarr('{}', '{var}', 'decode_cf', 'false') {order}",
        location.display()
    );
    let batches = query(&context(), &sql)
        .await
        .unwrap_or_else(|e| panic!("{fixture} {var}: {sql}: {e}"));
    let got = zarr_test_support::column(&batches, "v");
    let mut want = Vec::new();
    flatten(&expected["values"], &mut want);
    assert_eq!(got.len(), want.len(), "{fixture} {var}: rows");
    let what = format!("{fixture} {var} ({})", got.data_type());
    match got.data_type() {
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
            let got = arrow::compute::cast(&got, &DataType::Utf8).unwrap();
            let got = got.as_string::<i32>();
            for (i, w) in want.iter().enumerate() {
                assert_eq!(Some(got.value(i)), w.as_str(), "{what} row {i}");
            }
        }
        DataType::Binary
        | DataType::LargeBinary
        | DataType::FixedSizeBinary(_)
        | DataType::BinaryView => {
            let got = arrow::compute::cast(&got, &DataType::Binary).unwrap();
            let got = got.as_binary::<i32>();
            for (i, w) in want.iter().enumerate() {
                // NumPy's `S` drops trailing NULs, as the expected values do.
                let mut bytes = got.value(i).to_vec();
                while bytes.last() == Some(&0) {
                    bytes.pop();
                }
                assert_eq!(bytes, expected_bytes(w), "{what} row {i}");
            }
        }
        _ => {
            let got = arrow::compute::cast(&got, &DataType::Float64).unwrap();
            let got = got.as_primitive::<arrow::datatypes::Float64Type>();
            for (i, w) in want.iter().enumerate() {
                let g = (got.is_valid(i))
                    .then(|| got.value(i))
                    .filter(|g| !g.is_nan());
                assert_eq!(g, w.as_f64(), "{what} row {i}");
            }
        }
    }
}

/// Every variable of every fixture, JSON and Parquet, reads as zarr-python reads it through
/// fsspec.
#[tokio::test]
async fn reference_sets_read_as_fsspec_reads_them() {
    let expected = expected();
    let mut checked = 0;
    for fixture in [
        "grid.json",
        "grid_relative.json",
        "grid_v0.json",
        "grid_templates.json",
        "multi.json",
        "gen.json",
        "extras.json",
        "grid.parq",
        "extras.parq",
        // fsspec itself fails on this one (a NULL in a dictionary-encoded `path` reads as NaN):
        // its values are grid.json's.
        "grid_cat.parq",
    ] {
        let source = expected[fixture]["same_variables_as"]
            .as_str()
            .unwrap_or(fixture);
        let variables = expected[source]["variables"].as_object().unwrap();
        for (var, want) in variables {
            check_variable(fixture, var, want).await;
            checked += 1;
        }
    }
    assert!(checked > 30, "{checked} variables");
}

/// Writes `refs` (a JSON reference set) into a fresh directory holding copies of the fixture
/// files `files`, and returns the directory and the reference file's path.
fn set_in_tempdir(refs: &Value, files: &[&str]) -> (tempfile::TempDir, String) {
    let tmp = tempfile::tempdir().unwrap();
    for f in files {
        std::fs::copy(dir().join(f), tmp.path().join(f)).unwrap();
    }
    let path = tmp.path().join("refs.json");
    std::fs::write(&path, refs.to_string()).unwrap();
    let path = path.display().to_string();
    (tmp, path)
}

/// An array `w` of `n` little-endian int32 in one chunk read by `chunk` (a reference).
fn one_chunk_set(n: usize, chunk: Value) -> Value {
    serde_json::json!({
        "version": 1,
        "refs": {
            ".zgroup": "{\"zarr_format\": 2}",
            "w/.zarray": format!("{{\"chunks\": [{n}], \"compressor\": null, \"dtype\": \"<i4\", \"fill_value\": 0, \"filters\": null, \"order\": \"C\", \"shape\": [{n}], \"zarr_format\": 2}}"),
            "w/.zattrs": "{\"_ARRAY_DIMENSIONS\": [\"x\"]}",
            "w/0": chunk,
        }
    })
}

async fn error_of(sql: &str) -> String {
    query(&context(), sql).await.unwrap_err().to_string()
}

/// A reference to a whole file (`[url]`) reads the file; one past a file's end, to a file that
/// is not there, or to a truncated file is an error naming the key and the file.
#[tokio::test]
async fn whole_files_and_ranges_past_the_end() {
    let bin = std::fs::read(dir().join("gen.bin")).unwrap();
    let n = bin.len() / 4;
    let (_tmp, refs) = set_in_tempdir(
        &one_chunk_set(n, serde_json::json!(["gen.bin"])),
        &["gen.bin"],
    );
    let batches = query(
        &context(),
        &format!("SELECT w FROM read_zarr('{refs}', 'w') ORDER BY x"),
    )
    .await
    .unwrap();
    let got = zarr_test_support::column(&batches, "w");
    let got = got.as_primitive::<arrow::datatypes::Int32Type>();
    let want: Vec<i32> = bin
        .chunks_exact(4)
        .map(|b| i32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    assert_eq!(got.values().to_vec(), want);

    let past = one_chunk_set(4, serde_json::json!(["gen.bin", bin.len() - 8, 16]));
    let (_tmp, refs) = set_in_tempdir(&past, &["gen.bin"]);
    let e = error_of(&format!("SELECT * FROM read_zarr('{refs}', 'w')")).await;
    assert!(
        e.contains("reference 'w/0'") && e.contains("gen.bin"),
        "{e}"
    );

    let (_tmp, refs) = set_in_tempdir(
        &one_chunk_set(4, serde_json::json!(["gen.bin", 0, 16])),
        &[],
    );
    let e = error_of(&format!("SELECT * FROM read_zarr('{refs}', 'w')")).await;
    assert!(
        e.contains("reference 'w/0'") && e.contains("gen.bin"),
        "{e}"
    );

    // grid.nc cut one byte before the end of its last `temp` chunk: that chunk names its key
    // and the file.
    let tmp = tempfile::tempdir().unwrap();
    let nc = std::fs::read(dir().join("grid.nc")).unwrap();
    let set: Value =
        serde_json::from_str(&std::fs::read_to_string(dir().join("grid.json")).unwrap()).unwrap();
    let end = set["refs"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(k, _)| k.starts_with("temp/") && !k.contains(".z"))
        .filter_map(|(_, v)| Some(v.get(1)?.as_u64()? + v.get(2)?.as_u64()?))
        .max()
        .unwrap() as usize;
    std::fs::write(tmp.path().join("grid.nc"), &nc[..end - 1]).unwrap();
    std::fs::copy(dir().join("grid.json"), tmp.path().join("grid.json")).unwrap();
    let refs = tmp.path().join("grid.json").display().to_string();
    let e = error_of(&format!(
        "SELECT * FROM read_zarr('{refs}', 'temp', 'decode_cf', 'false')"
    ))
    .await;
    assert!(
        e.contains("reference 'temp/") && e.contains("grid.nc"),
        "{e}"
    );
}

/// A reference may only read below the reference file's directory, or the prefixes the
/// option `reference_targets` names: anything else is an error naming the key, the URL and
/// the option, before any byte of any file is read.
#[tokio::test]
async fn references_outside_the_allowed_places_are_refused_before_any_read() {
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("secret.bin");
    std::fs::write(&secret, [7u8; 16]).unwrap();
    for url in [
        secret.display().to_string(),
        format!("file://{}", secret.display()),
        format!(
            "../{}/secret.bin",
            outside.path().file_name().unwrap().to_str().unwrap()
        ),
    ] {
        let (_tmp, refs) = set_in_tempdir(&one_chunk_set(4, serde_json::json!([url, 0, 16])), &[]);
        let e = error_of(&format!("SELECT * FROM read_zarr('{refs}', 'w')")).await;
        assert!(
            e.contains("reference 'w/0'")
                && e.contains("secret.bin")
                && e.contains("reference_targets"),
            "{url}: {e}"
        );
        // Named in reference_targets, it reads.
        let allowed = format!("file://{}/", outside.path().display());
        let sql = format!(
            "SELECT sum(w) AS s FROM read_zarr('{refs}', 'w', 'reference_targets', '{allowed}')"
        );
        let batches = query(&context(), &sql)
            .await
            .unwrap_or_else(|e| panic!("{url}: {e}"));
        let s = zarr_test_support::to_json(zarr_test_support::column(&batches, "s").as_ref());
        assert_eq!(s, [serde_json::json!(4 * 0x0707_0707i64)], "{url}");
    }
    // A URL of another scheme is outside the default too.
    let (_tmp, refs) = set_in_tempdir(
        &one_chunk_set(4, serde_json::json!(["s3://bucket/x.nc", 0, 16])),
        &[],
    );
    let e = error_of(&format!("SELECT * FROM read_zarr('{refs}', 'w')")).await;
    assert!(
        e.contains("s3://bucket/x.nc") && e.contains("reference_targets"),
        "{e}"
    );
}

/// Malformed sets and limits: each an error naming what is wrong, never a panic.
#[tokio::test]
async fn malformed_reference_sets_and_limits_are_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let p = tmp.path().join(name);
        std::fs::write(&p, text).unwrap();
        p.display().to_string()
    };
    let cases = [
        (
            "not_json.json",
            "{\"a\": ",
            "not a JSON object of references",
        ),
        ("list.json", "[1, 2]", "not a JSON object of references"),
        (
            "version.json",
            "{\"version\": 3, \"refs\": {}}",
            "version 3",
        ),
        (
            "bad_ref.json",
            "{\".zgroup\": \"{\\\"zarr_format\\\": 2}\", \"x/0\": [\"f\", 1]}",
            "reference 'x/0'",
        ),
        (
            "huge_gen.json",
            "{\"version\": 1, \"refs\": {\".zgroup\": \"{\\\"zarr_format\\\": 2}\"}, \"gen\": [{\"key\": \"x/{{i}}.{{j}}\", \"url\": \"f\", \"offset\": \"0\", \"length\": \"1\", \"dimensions\": {\"i\": {\"stop\": 1000000000}, \"j\": {\"stop\": 1000000000}}}]}",
            "max_references",
        ),
        (
            "bad_template.json",
            "{\"version\": 1, \"refs\": {\".zgroup\": \"{\\\"zarr_format\\\": 2}\"}, \"gen\": [{\"key\": \"x/{{i.__class__}}\", \"url\": \"f\", \"dimensions\": {\"i\": {\"stop\": 2}}}]}",
            "gen[0]",
        ),
    ];
    for (name, text, message) in cases {
        let path = write(name, text);
        let e = error_of(&format!("SELECT * FROM read_zarr('{path}')")).await;
        assert!(e.contains(message) && e.contains(name), "{name}: {e}");
    }
    // Parquet sets: no .zmetadata, a record_size of 0, a record that is not Parquet, and a
    // grid of more chunks than max_references.
    let parquet_set = |name: &str, zmetadata: Option<&str>, record: Option<&[u8]>| {
        let root = tmp.path().join(name);
        std::fs::create_dir_all(root.join("a")).unwrap();
        if let Some(text) = zmetadata {
            std::fs::write(root.join(".zmetadata"), text).unwrap();
        }
        if let Some(bytes) = record {
            std::fs::write(root.join("a/refs.0.parq"), bytes).unwrap();
        }
        root.display().to_string()
    };
    let zarray = |shape: u64| {
        format!(
            "{{\"metadata\": {{\".zgroup\": {{\"zarr_format\": 2}}, \"a/.zarray\": {{\"shape\": [{shape}], \"chunks\": [1], \"dtype\": \"<i4\", \"fill_value\": 0, \"compressor\": null, \"filters\": null, \"order\": \"C\", \"zarr_format\": 2}}}}, \"record_size\": RS}}"
        )
    };
    let cases = [
        (parquet_set("none.parq", None, None), "has none"),
        (
            parquet_set("zero.parq", Some(&zarray(4).replace("RS", "0")), None),
            "record_size is 0",
        ),
        (
            parquet_set(
                "junk.parq",
                Some(&zarray(4).replace("RS", "10")),
                Some(b"not parquet"),
            ),
            "a/refs.0.parq",
        ),
        (
            parquet_set(
                "huge.parq",
                Some(&zarray(1 << 40).replace("RS", "10")),
                None,
            ),
            "max_references",
        ),
    ];
    for (path, message) in cases {
        let e = error_of(&format!("SELECT * FROM read_zarr('{path}', 'a')")).await;
        assert!(e.contains(message) && e.contains(".parq"), "{path}: {e}");
    }
    // The reference file is held to max_metadata_bytes.
    let path = write("big.json", &format!("{{\"a\": \"{}\"}}", "x".repeat(5000)));
    let e = error_of(&format!(
        "SELECT * FROM read_zarr('{path}', '', 'max_metadata_bytes', '4000')"
    ))
    .await;
    assert!(e.contains("max_metadata_bytes"), "{e}");
}
