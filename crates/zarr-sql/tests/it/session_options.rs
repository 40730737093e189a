//! `SET zarr.<option> = '…'` in `zarr-sql`: the session defaults of `read_zarr`, `CREATE
//! EXTERNAL TABLE … STORED AS ZARR` and `COPY … STORED AS ZARR`, a statement's options winning,
//! shown by `SHOW`, and a bad key or value an error.

use serde_json::Value;

use crate::common::*;

const CITIES: &str = "tests/data/corpus/12_group_table_cities/data.zarr";

#[test]
fn set_string_type_is_the_default_of_read_zarr_and_create_external_table() {
    let typeof_name = |from: &str| format!("SELECT arrow_typeof(name) AS t FROM {from} LIMIT 1");
    let out = zarr_sql(&[
        "-q",
        "--format",
        "csv",
        "-c",
        &typeof_name(&format!("read_zarr('{CITIES}')")),
        "-c",
        "SET zarr.string_type = 'utf8view'",
        "-c",
        "SHOW zarr.string_type",
        "-c",
        &typeof_name(&format!("read_zarr('{CITIES}')")),
        "-c",
        &format!("CREATE EXTERNAL TABLE cities STORED AS ZARR LOCATION '{CITIES}'"),
        "-c",
        &typeof_name("cities"),
        "-c",
        &typeof_name(&format!(
            "read_zarr('{CITIES}', '', 'string_type', 'large_utf8')"
        )),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "t\nUtf8\nname,value\nzarr.string_type,utf8view\nt\nUtf8View\nt\nUtf8View\nt\nLargeUtf8\n"
    );
}

/// The compressor of the V3 array at `array`: the last codec's name.
fn compressor(array: &std::path::Path) -> String {
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(array.join("zarr.json")).unwrap()).unwrap();
    let codecs = doc["codecs"].as_array().unwrap();
    codecs.last().unwrap()["name"].as_str().unwrap().to_string()
}

#[test]
fn set_compression_is_the_default_of_copy() {
    let dir = tempfile::tempdir().unwrap();
    let copy = |name: &str, options: &str| {
        format!(
            "COPY (SELECT name, country FROM read_zarr('{CITIES}')) TO '{}' STORED AS ZARR {options}",
            dir.path().join(name).display()
        )
    };
    let out = zarr_sql(&[
        "-q",
        "-c",
        "SET zarr.compression = 'gzip'",
        "-c",
        &copy("session.zarr", ""),
        "-c",
        &copy("explicit.zarr", "OPTIONS ('compression' 'lz4')"),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    for array in ["name", "country"] {
        assert_eq!(
            compressor(&dir.path().join("session.zarr").join(array)),
            "gzip"
        );
        assert_eq!(
            compressor(&dir.path().join("explicit.zarr").join(array)),
            "numcodecs.lz4"
        );
    }
    // Another process starts from the defaults again.
    let out = zarr_sql(&["-q", "-c", &copy("default.zarr", "")]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(compressor(&dir.path().join("default.zarr/name")), "zstd");
}

#[test]
fn a_bad_key_or_value_is_an_error_naming_it() {
    for (set, expected) in [
        ("SET zarr.nonsense = '1'", "unknown option 'zarr.nonsense'"),
        (
            "SET zarr.compression = 'brotli'",
            "zarr.compression: compression 'brotli' is not one of zstd, blosc, gzip, lz4, none",
        ),
    ] {
        let out = zarr_sql(&["-c", set, "-c", "SELECT 1"]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{set}: {err}");
        assert!(
            err.starts_with("Error: ") && err.contains(expected),
            "{set}: {err}"
        );
        assert_eq!(stdout(&out), "", "{set}");
    }
}
