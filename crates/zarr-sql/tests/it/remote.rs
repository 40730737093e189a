//! `zarr-sql` on remote locations, against the library's real test servers: a query on a GCS
//! store and an export from Azure with `-o` storage options, S3 credentials from `AWS_*`, the
//! footer's provenance without credentials, and a clear error for a scheme no store serves.

use std::fs::File;

use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use crate::common::*;
use servers::{location, options, servers};
use zarr_test_support::servers;

fn option_args(scheme: &str, s: &servers::Servers) -> Vec<String> {
    options(scheme, s)
        .into_iter()
        .flat_map(|(k, v)| ["-o".to_string(), format!("{k}={v}")])
        .collect()
}

#[test]
fn a_query_on_a_gcs_store_matches_the_local_one() {
    let s = servers();
    let key = "corpus/12_group_table_cities/data.zarr";
    let sql = "SELECT name, population FROM t WHERE name LIKE 'S%' ORDER BY name";
    let local = zarr_sql(&["--format", "csv", &location("file", &s, key), "-c", sql]);
    assert!(local.status.success(), "{}", stderr(&local));
    let remote_location = location("gs", &s, key);
    let mut args = vec!["--format", "csv", remote_location.as_str(), "-c", sql];
    let extra = option_args("gs", &s);
    args.extend(extra.iter().map(String::as_str));
    let remote = zarr_sql(&args);
    assert!(remote.status.success(), "{}", stderr(&remote));
    assert_eq!(stdout(&remote), stdout(&local));
    assert!(stdout(&local).lines().count() > 1, "{}", stdout(&local));
}

#[test]
fn an_export_from_azure_keeps_credentials_out_of_the_file() {
    let s = servers();
    let key = "corpus/17_large_200k_zstd/data.zarr";
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("words.parquet");
    let from = location("az", &s, key);
    let out_text = out.display().to_string();
    let mut args = vec![
        "export",
        from.as_str(),
        out_text.as_str(),
        "--where",
        "value LIKE 'mar%'",
    ];
    let extra = option_args("az", &s);
    args.extend(extra.iter().map(String::as_str));
    let done = zarr_sql(&args);
    assert!(done.status.success(), "{}", stderr(&done));
    let reader = ParquetRecordBatchReaderBuilder::try_new(File::open(&out).unwrap()).unwrap();
    let meta = reader.metadata().clone();
    let rows: usize = reader.build().unwrap().map(|b| b.unwrap().num_rows()).sum();
    // The same export from the local files gives the same rows.
    let local_out = dir.path().join("local.parquet");
    let local = zarr_sql(&[
        "export",
        &location("file", &s, key),
        &local_out.display().to_string(),
        "--where",
        "value LIKE 'mar%'",
    ]);
    assert!(local.status.success(), "{}", stderr(&local));
    let local_rows: usize =
        ParquetRecordBatchReaderBuilder::try_new(File::open(&local_out).unwrap())
            .unwrap()
            .build()
            .unwrap()
            .map(|b| b.unwrap().num_rows())
            .sum();
    assert_eq!(rows, local_rows);
    assert!(rows > 100, "{rows}");
    let kv = meta.file_metadata().key_value_metadata().unwrap();
    let store = kv.iter().find(|k| k.key == "zarr.store").unwrap();
    assert_eq!(
        store.value.as_deref(),
        Some("az://zarr/corpus/17_large_200k_zstd/data.zarr")
    );
    let all: String = kv
        .iter()
        .map(|k| format!("{}={}", k.key, k.value.clone().unwrap_or_default()))
        .collect();
    assert!(
        !all.contains(servers::AZURE_KEY),
        "the key is not in the footer"
    );
}

#[test]
fn a_scheme_without_a_store_is_a_clear_error() {
    let out = zarr_sql(&["ftp://example.org/store.zarr", "-c", "SELECT 1"]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("ftp://example.org/store.zarr"), "{err}");
    assert!(
        err.contains("s3://") && err.contains("gs://") && err.contains("https://"),
        "{err}"
    );
    assert!(!err.contains("bug in DataFusion"), "{err}");
}

#[test]
fn s3_credentials_come_from_the_environment() {
    let s = servers();
    let key = "corpus/04_1d_zstd/data.zarr";
    let sql = "SELECT count(*) AS n, max(value) AS m FROM t";
    let local = zarr_sql(&["--format", "csv", &location("file", &s, key), "-c", sql]);
    assert!(local.status.success(), "{}", stderr(&local));
    let from = location("s3", &s, key);
    // AWS_* variables, as the AWS tools read them; no -o at all.
    let endpoint = format!("http://127.0.0.1:{}", s.s3);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_zarr-sql"))
        .args(["--format", "csv", from.as_str(), "-c", sql])
        .current_dir(root())
        .env("AWS_ENDPOINT", &endpoint)
        .env("AWS_ALLOW_HTTP", "true")
        .env("AWS_ACCESS_KEY_ID", servers::S3_KEY)
        .env("AWS_SECRET_ACCESS_KEY", servers::S3_KEY)
        .env("AWS_REGION", "us-east-1")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), stdout(&local));
}

/// Uploads the files of `local` under `prefix` in the S3 bucket with the `public-read` ACL,
/// through boto3 in the test servers' virtualenv (object_store sets no ACL).
fn upload_public(s: &servers::Servers, local: &std::path::Path, prefix: &str) {
    let python = root().join(".servers/venv/bin/python");
    let script = r#"
import os, sys, boto3
port, bucket, local, prefix, key = sys.argv[1:]
s3 = boto3.client("s3", endpoint_url=f"http://127.0.0.1:{port}", aws_access_key_id=key,
                  aws_secret_access_key=key, region_name="us-east-1")
for folder, _, names in os.walk(local):
    for name in names:
        path = os.path.join(folder, name)
        target = prefix + "/" + os.path.relpath(path, local).replace(os.sep, "/")
        s3.upload_file(path, bucket, target, ExtraArgs={"ACL": "public-read"})
"#;
    let done = std::process::Command::new(python)
        .args(["-c", script, &s.s3.to_string(), servers::BUCKET])
        .arg(local)
        .args([prefix, servers::S3_KEY])
        .output()
        .unwrap();
    assert!(
        done.status.success(),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
}

#[test]
fn anonymous_s3_reads_public_objects_and_is_refused_private_ones() {
    let s = servers();
    let key = "corpus/17_large_200k_zstd/data.zarr";
    let sql = "SELECT count(*) AS n, count(DISTINCT value) AS d FROM t WHERE value LIKE '%ab%'";
    let local = zarr_sql(&["--format", "csv", &location("file", &s, key), "-c", sql]);
    assert!(local.status.success(), "{}", stderr(&local));
    upload_public(&s, &root().join("tests/data").join(key), "public/17");
    let endpoint = format!("aws.endpoint=http://127.0.0.1:{}", s.s3);
    let anonymous = |from: &str| {
        zarr_sql(&[
            "--format",
            "csv",
            from,
            "-o",
            "aws.skip_signature=true",
            "-o",
            &endpoint,
            "-o",
            "aws.region=us-east-1",
            "-c",
            sql,
        ])
    };
    // moto serves objects with a public-read ACL to unsigned requests …
    let public = anonymous(&format!("s3://{}/public/17", servers::BUCKET));
    assert!(public.status.success(), "{}", stderr(&public));
    assert_eq!(stdout(&public), stdout(&local));
    // … and refuses the private ones (uploaded with credentials), with the key in the error.
    let private = anonymous(&location("s3", &s, key));
    assert!(!private.status.success());
    let err = stderr(&private);
    assert!(err.contains("zarr.json") && err.contains("403"), "{err}");
}
