//! Remote stores against real servers on 127.0.0.1 (crates/test-support): every corpus case reads the
//! same from HTTP (nginx), S3 (moto), GCS (fake-gcs-server) and Azure (azurite) as from local
//! files; credentials never show; faults injected by a proxy end in success through retries
//! or in a clear error; and the requests a query makes are counted.

use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow::util::pretty::pretty_format_batches;
use datafusion::prelude::{SessionConfig, SessionContext};

use servers::proxy::{Fault, FaultKind, Proxy};
use servers::{location, options, servers};
use zarr_test_support::servers;
use zarr_test_support::{context, query};

const SCHEMES: [&str; 4] = ["http", "s3", "gs", "az"];

/// `read_zarr(location, path, options…)` as SQL.
fn read_zarr(location: &str, path: &str, options: &[(String, String)]) -> String {
    let mut args = vec![format!("'{location}'"), format!("'{path}'")];
    for (k, v) in options {
        args.push(format!("'{k}'"));
        args.push(format!("'{}'", v.replace('\'', "''")));
    }
    format!("read_zarr({})", args.join(", "))
}

/// The rows of `sql` as sorted lines: the same table whatever order partitions finish in.
async fn rows(ctx: &SessionContext, sql: &str) -> Result<Vec<String>, String> {
    let batches = query(ctx, sql).await.map_err(|e| e.to_string())?;
    let text = pretty_format_batches(&batches)
        .map_err(|e| e.to_string())?
        .to_string();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    lines.sort();
    Ok(lines)
}

/// The nodes of a corpus case to compare: the root and every array.
fn corpus_nodes() -> Vec<(String, Vec<String>)> {
    let corpus = zarr_test_support::corpus();
    let mut cases: Vec<(String, Vec<String>)> = std::fs::read_dir(&corpus)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("expected.json").exists())
        .map(|e| {
            let text = std::fs::read_to_string(e.path().join("expected.json")).unwrap();
            let expected: serde_json::Value = serde_json::from_str(&text).unwrap();
            let mut paths = vec![String::new()];
            for array in expected["arrays"].as_array().unwrap() {
                let path = array["path"].as_str().unwrap().to_string();
                if !path.is_empty() {
                    paths.push(path);
                }
            }
            (e.file_name().to_string_lossy().to_string(), paths)
        })
        .collect();
    cases.sort();
    assert_eq!(cases.len(), 18);
    cases
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_corpus_case_reads_the_same_from_every_store() {
    let s = servers();
    let ctx = context();
    let mut compared = 0;
    for (case, paths) in corpus_nodes() {
        let key = format!("corpus/{case}/data.zarr");
        for path in &paths {
            for pushdown in ["true", "false"] {
                let mut local_options = vec![("pushdown".to_string(), pushdown.to_string())];
                let local = read_zarr(&location("file", &s, &key), path, &local_options);
                let want = rows(&ctx, &format!("SELECT * FROM {local}")).await;
                let want = want.unwrap_or_else(|e| panic!("{case} {path} local: {e}"));
                for scheme in SCHEMES {
                    local_options.truncate(1);
                    local_options.extend(options(scheme, &s));
                    let remote = read_zarr(&location(scheme, &s, &key), path, &local_options);
                    let got = rows(&ctx, &format!("SELECT * FROM {remote}")).await;
                    let got = got.unwrap_or_else(|e| panic!("{case} '{path}' {scheme}: {e}"));
                    assert_eq!(
                        got, want,
                        "{case} '{path}' from {scheme}, pushdown {pushdown}"
                    );
                    compared += 1;
                }
            }
        }
    }
    assert!(compared >= 18 * 2 * 4, "{compared}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_external_table_takes_datafusion_cli_option_names() {
    let s = servers();
    let key = "corpus/12_group_table_cities/data.zarr";
    let local = context();
    let want = rows(
        &local,
        &format!(
            "SELECT name, country FROM read_zarr('{}') WHERE name LIKE 'S%'",
            location("file", &s, key)
        ),
    )
    .await
    .unwrap();
    assert!(want.len() > 4, "{want:?}");
    for scheme in SCHEMES {
        let ctx = context();
        let opts: Vec<String> = options(scheme, &s)
            .iter()
            .map(|(k, v)| format!("'{k}' '{}'", v.replace('\'', "''")))
            .collect();
        let ddl = format!(
            "CREATE EXTERNAL TABLE cities STORED AS ZARR LOCATION '{}' {}",
            location(scheme, &s, key),
            if opts.is_empty() {
                String::new()
            } else {
                format!("OPTIONS ({})", opts.join(", "))
            }
        );
        ctx.sql(&ddl)
            .await
            .unwrap_or_else(|e| panic!("{scheme}: {e}"));
        let got = rows(
            &ctx,
            "SELECT name, country FROM cities WHERE name LIKE 'S%'",
        )
        .await
        .unwrap_or_else(|e| panic!("{scheme}: {e}"));
        assert_eq!(got, want, "{scheme}");
        // The store built for the table was registered: a second table needs no options.
        if scheme != "http" {
            let again = format!(
                "SELECT count(*) AS n FROM read_zarr('{}', 'name')",
                location(scheme, &s, key)
            );
            let n = rows(&ctx, &again)
                .await
                .unwrap_or_else(|e| panic!("{scheme}: {e}"));
            assert!(n.iter().any(|l| l.contains("| 41 ")), "{scheme}: {n:?}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_never_show_and_a_wrong_key_is_refused() {
    let s = servers();
    let key = "corpus/04_1d_zstd/data.zarr";
    // azurite checks Shared Key signatures: a wrong key (valid base64) is refused.
    let wrong = "d3Jvbmcta2V5LW9mLXRoZS1yaWdodC1sZW5ndGgtZm9yLWF6dXJpdGUtdGVzdHM=";
    let mut opts = options("az", &s);
    for (k, v) in &mut opts {
        if k == "azure.access_key" {
            *v = wrong.to_string();
        }
    }
    let ctx = context();
    let sql = format!(
        "SELECT count(*) FROM {}",
        read_zarr(&location("az", &s, key), "", &opts)
    );
    let start = Instant::now();
    let err = query(&ctx, &sql).await.unwrap_err().to_string();
    assert!(start.elapsed() < Duration::from_secs(60), "no long retries");
    assert!(
        err.contains("az://zarr/corpus/04_1d_zstd/data.zarr"),
        "{err}"
    );
    assert!(!err.contains(wrong), "{err}");
    assert!(
        err.contains("403") || err.to_lowercase().contains("auth"),
        "{err}"
    );

    // A table that opens: its plan and the Debug of its options keep secrets out.
    for scheme in ["s3", "az", "gs"] {
        let ctx = context();
        let table = read_zarr(&location(scheme, &s, key), "", &options(scheme, &s));
        let plan = rows(
            &ctx,
            &format!("EXPLAIN SELECT * FROM {table} WHERE value LIKE 'a%'"),
        )
        .await
        .unwrap()
        .join("\n");
        assert!(plan.contains("ZarrScanExec"), "{plan}");
        for (k, v) in options(scheme, &s) {
            if k.contains("key") {
                assert!(!plan.contains(&v), "{scheme}: {k} in {plan}");
            }
        }
        let mut zarr_options = datafusion_zarr::ZarrOptions::default();
        for (k, v) in options(scheme, &s) {
            zarr_options.set(&k, &v).unwrap();
        }
        let debug = format!("{zarr_options:?}");
        for (k, v) in options(scheme, &s) {
            if k.contains("key") {
                assert!(!debug.contains(&v), "{scheme}: {debug}");
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_the_application_registered_is_used_as_it_is() {
    let s = servers();
    // The application registers, for nginx's URL, a store that goes through a proxy: the
    // proxy sees the requests, so the registered store was used.
    let proxy = Proxy::start(s.http);
    let via_proxy = object_store::http::HttpBuilder::new()
        .with_url(format!("http://127.0.0.1:{}", proxy.port))
        .with_client_options(object_store::ClientOptions::new().with_allow_http(true))
        .build()
        .unwrap();
    let ctx = context();
    let url = url::Url::parse(&format!("http://127.0.0.1:{}", s.http)).unwrap();
    ctx.register_object_store(&url, Arc::new(via_proxy));
    let key = "corpus/03_1d_gzip/data.zarr";
    let got = rows(
        &ctx,
        &format!("SELECT * FROM read_zarr('{}')", location("http", &s, key)),
    )
    .await
    .unwrap();
    let want = rows(
        &ctx,
        &format!("SELECT * FROM read_zarr('{}')", location("file", &s, key)),
    )
    .await
    .unwrap();
    assert_eq!(got, want);
    let log = proxy.take_log();
    assert!(
        log.iter().any(|l| l.target.ends_with("zarr.json")),
        "{log:?}"
    );
    assert!(log.iter().any(|l| l.target.contains("/c/")), "{log:?}");
}

/// A session reading through a proxy to nginx, with quick retries.
fn proxied(proxy: &Proxy, key: &str, extra: &[(&str, &str)]) -> (SessionContext, String) {
    let ctx = SessionContext::new_with_config(SessionConfig::new().with_target_partitions(2));
    datafusion_zarr::register(&ctx);
    let mut opts = vec![("retry.timeout".to_string(), "20s".to_string())];
    opts.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    let table = read_zarr(&format!("http://127.0.0.1:{}/{key}", proxy.port), "", &opts);
    (ctx, table)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transient_faults_are_retried_and_permanent_ones_name_the_key() {
    let s = servers();
    let key = "corpus/17_large_200k_zstd/data.zarr";
    let local = context();
    let want = rows(
        &local,
        &format!(
            "SELECT count(*), min(value), max(value) FROM read_zarr('{}')",
            location("file", &s, key)
        ),
    )
    .await
    .unwrap();
    // 503 twice, 500 once, a dropped connection and a response cut midway, each on one chunk:
    // the query succeeds through object_store's retries.
    let proxy = Proxy::start(s.http);
    for (chunk, kind, times) in [
        ("/c/3", FaultKind::Status(503), 2),
        ("/c/5", FaultKind::Status(500), 1),
        ("/c/7", FaultKind::Close, 1),
        ("/c/9", FaultKind::Cut, 1),
    ] {
        proxy.add_fault(Fault {
            path: format!("{key}{chunk}"),
            times,
            kind,
        });
    }
    let (ctx, table) = proxied(&proxy, key, &[]);
    let sql = format!("SELECT count(*), min(value), max(value) FROM {table}");
    let got = rows(&ctx, &sql).await.unwrap();
    assert_eq!(got, want);
    let log = proxy.take_log();
    let on = |chunk: &str| {
        log.iter()
            .filter(|l| l.target.ends_with(&format!("{key}{chunk}")))
            .count()
    };
    assert_eq!(on("/c/3"), 3, "two 503s, then the answer");
    assert_eq!(on("/c/5"), 2);
    assert_eq!(on("/c/7"), 2);
    assert_eq!(on("/c/9"), 2);

    // A chunk that always fails: a clear error naming the store and the key, quickly.
    let proxy = Proxy::start(s.http);
    proxy.add_fault(Fault {
        path: format!("{key}/c/4"),
        times: usize::MAX,
        kind: FaultKind::Status(500),
    });
    let (ctx, table) = proxied(&proxy, key, &[("retry.max_retries", "2")]);
    let start = Instant::now();
    let err = query(&ctx, &format!("SELECT count(*), max(value) FROM {table}"))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        start.elapsed() < Duration::from_secs(30),
        "{:?}",
        start.elapsed()
    );
    assert!(err.contains("data.zarr/c/4"), "{err}");
    assert!(err.contains("500"), "{err}");
    // A permanent error is not retried: 403 once.
    let proxy = Proxy::start(s.http);
    proxy.add_fault(Fault {
        path: format!("{key}/c/2"),
        times: usize::MAX,
        kind: FaultKind::Status(403),
    });
    let (ctx, table) = proxied(&proxy, key, &[]);
    let err = query(&ctx, &format!("SELECT max(value) FROM {table}"))
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("data.zarr/c/2"), "{err}");
    let tries = proxy
        .take_log()
        .iter()
        .filter(|l| l.target.ends_with("/c/2"))
        .count();
    assert_eq!(tries, 1, "a 403 is not retried");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_remote_export_leaves_no_file() {
    let s = servers();
    let key = "corpus/17_large_200k_zstd/data.zarr";
    let proxy = Proxy::start(s.http);
    proxy.add_fault(Fault {
        path: format!("{key}/c/12"),
        times: usize::MAX,
        kind: FaultKind::Status(500),
    });
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.parquet");
    std::fs::write(&out, b"the file from before").unwrap();
    let (ctx, table) = proxied(&proxy, key, &[("retry.max_retries", "1")]);
    let df = ctx.sql(&format!("SELECT * FROM {table}")).await.unwrap();
    let result = datafusion_zarr::export::write_parquet(
        df,
        &out,
        &datafusion_zarr::export::ParquetExport::default(),
    )
    .await;
    let err = result.unwrap_err().to_string();
    assert!(err.contains("data.zarr/c/12"), "{err}");
    assert_eq!(std::fs::read(&out).unwrap(), b"the file from before");
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(left.len(), 1, "no temporary file is left");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_are_counted_metadata_once_and_only_the_inner_chunks_needed() {
    let s = servers();
    // Case 08: 30x20 sharded, shards 16x10 holding 2x2 inner chunks of 8x5, index at the start.
    let key = "corpus/08_sharding_index_start/data.zarr";
    let proxy = Proxy::start(s.http);
    let (ctx, table) = proxied(&proxy, key, &[]);
    // Registration plus count(*): metadata only (answered from the row count).
    let n = rows(&ctx, &format!("SELECT count(*) FROM {table}"))
        .await
        .unwrap();
    assert!(n.iter().any(|l| l.contains("| 600 ")), "{n:?}");
    let log = proxy.take_log();
    assert!(!log.is_empty());
    assert!(
        log.iter().all(|l| l.target.ends_with("zarr.json")),
        "metadata only: {log:?}"
    );
    // One inner chunk (rows 0..8, columns 0..5): the shard index and that inner chunk, by range.
    let got = rows(
        &ctx,
        &format!("SELECT * FROM {table} WHERE y < 8 AND x < 5"),
    )
    .await
    .unwrap();
    assert_eq!(got.len(), 40 + 4, "40 rows and the table's 4 frame lines");
    let log = proxy.take_log();
    let chunks: Vec<_> = log.iter().filter(|l| l.target.contains("/c/")).collect();
    assert_eq!(chunks.len(), 2, "{log:?}");
    assert!(
        chunks.iter().all(|l| l.target.ends_with("/c/0/0")),
        "{log:?}"
    );
    assert!(
        chunks.iter().all(|l| l.range.is_some()),
        "range requests: {log:?}"
    );
    let shard = std::fs::metadata(
        zarr_test_support::corpus().join("08_sharding_index_start/data.zarr/c/0/0"),
    )
    .unwrap()
    .len() as usize;
    let fetched: usize = chunks.iter().map(|l| l.bytes).sum();
    assert!(fetched < shard, "{fetched} of the shard's {shard} bytes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn latency_is_hidden_by_concurrent_fetches() {
    let s = servers();
    // 20 chunks, 50 ms added to every request: one after another that is over a second.
    let key = "corpus/17_large_200k_zstd/data.zarr";
    let proxy = Proxy::start(s.http);
    proxy.set_delay(Duration::from_millis(50));
    let (ctx, table) = proxied(&proxy, key, &[]);
    let sql = format!("SELECT count(*) FROM {table} WHERE value LIKE '%ab%'");
    let start = Instant::now();
    let got = rows(&ctx, &sql).await.unwrap();
    let took = start.elapsed();
    let want = rows(
        &context(),
        &format!(
            "SELECT count(*) FROM read_zarr('{}') WHERE value LIKE '%ab%'",
            location("file", &s, key)
        ),
    )
    .await
    .unwrap();
    assert_eq!(got, want);
    let log = proxy.take_log();
    let chunk_requests = log.iter().filter(|l| l.target.contains("/c/")).count();
    assert_eq!(chunk_requests, 20, "one request per chunk: {log:?}");
    assert!(
        took < Duration::from_millis(20 * 50),
        "{took:?}: requests were not concurrent"
    );
}

/// Groups without consolidated metadata on plain HTTP servers (no WebDAV): nginx's directory
/// index lists them; without one, one clear line (no server page); the `arrays` option needs
/// no listing; a node below a consolidated root is described by the root's document.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn groups_on_http_servers_without_webdav() {
    let s = servers();
    let ctx = context();
    let http = |server: &str, key: &str| format!("http://127.0.0.1:{}/{server}/{key}", s.http);
    let table = |location: String, path: &str, options: &[(String, String)]| {
        format!("SELECT * FROM {}", read_zarr(&location, path, options))
    };
    let cities = "corpus/12_group_table_cities/data.zarr";
    let local = rows(&ctx, &table(location("file", &s, cities), "", &[]))
        .await
        .unwrap();
    // nginx's autoindex lists the group (PROPFIND is refused there).
    let indexed = rows(&ctx, &table(http("autoindex", cities), "", &[])).await;
    assert_eq!(indexed.unwrap(), local);
    // No WebDAV and no index: one line that says what to do, without the server's page.
    let e = rows(&ctx, &table(http("plain", cities), "", &[]))
        .await
        .unwrap_err();
    assert!(
        e.contains("the group has no consolidated metadata and the HTTP server cannot list it")
            && e.contains("'arrays'"),
        "{e}"
    );
    assert!(!e.contains("<html") && !e.contains("PROPFIND /"), "{e}");
    // The arrays option names the arrays: no listing needed.
    let arrays = [("arrays".to_string(), "population,name".to_string())];
    let want = rows(&ctx, &table(location("file", &s, cities), "", &arrays))
        .await
        .unwrap();
    let got = rows(&ctx, &table(http("plain", cities), "", &arrays)).await;
    assert_eq!(got.unwrap(), want);
    // A group below a consolidated root, described by the root's document.
    let consolidated = "corpus/13_group_consolidated_metadata/data.zarr";
    let want = rows(
        &ctx,
        &table(location("file", &s, consolidated), "meta", &[]),
    )
    .await
    .unwrap();
    let got = rows(&ctx, &table(http("plain", consolidated), "meta", &[])).await;
    assert_eq!(got.unwrap(), want);
}

/// Kerchunk reference sets on every remote store: each JSON set of `tests/data/references`
/// (uploaded beside its netCDF files) reads as it does locally, the files found relative to
/// the reference file. A set kept under another prefix than its files is refused, naming the
/// option, until `reference_targets` names the files' prefix.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reference_sets_read_the_same_from_every_store() {
    let s = servers();
    let ctx = context();
    let sets = [
        ("references/grid.json", "temp"),
        ("references/grid.json", ""),
        ("references/multi.json", "temp"),
        ("references/gen.json", "grid"),
        ("references/extras.json", "sub/gz"),
        ("references/grid.parq", "temp"),
        ("references/extras.parq", "sub/deeper/fixs"),
    ];
    for (key, path) in sets {
        let local = read_zarr(&location("file", &s, key), path, &[]);
        let want = rows(&ctx, &format!("SELECT * FROM {local}")).await;
        let want = want.unwrap_or_else(|e| panic!("{key} {path} local: {e}"));
        assert!(want.len() > 4, "{key}: {want:?}");
        for scheme in SCHEMES {
            let remote = read_zarr(&location(scheme, &s, key), path, &options(scheme, &s));
            let got = rows(&ctx, &format!("SELECT * FROM {remote}")).await;
            let got = got.unwrap_or_else(|e| panic!("{key} '{path}' {scheme}: {e}"));
            assert_eq!(got, want, "{key} '{path}' from {scheme}");
        }
    }
    // The set under another prefix, naming its file by URL.
    let text =
        std::fs::read_to_string(zarr_test_support::root().join("tests/data/references/grid.json"))
            .unwrap();
    let files = location("s3", &s, "references/grid.nc");
    let moved = text.replace("\"grid.nc\"", &format!("\"{files}\""));
    let store = servers::object_store_of("s3", &s).unwrap();
    let moved_key = object_store::path::Path::from("elsewhere/grid.json");
    object_store::ObjectStoreExt::put(store.as_ref(), &moved_key, moved.into_bytes().into())
        .await
        .unwrap();
    let at = location("s3", &s, "elsewhere/grid.json");
    let refused = rows(
        &ctx,
        &format!(
            "SELECT * FROM {}",
            read_zarr(&at, "temp", &options("s3", &s))
        ),
    )
    .await;
    let e = refused.unwrap_err();
    assert!(
        e.contains("reference_targets") && e.contains("references/grid.nc"),
        "{e}"
    );
    let mut allowed = options("s3", &s);
    allowed.push((
        "reference_targets".into(),
        location("s3", &s, "references/"),
    ));
    let got = rows(
        &ctx,
        &format!("SELECT * FROM {}", read_zarr(&at, "temp", &allowed)),
    )
    .await;
    let want = rows(
        &ctx,
        &format!(
            "SELECT * FROM {}",
            read_zarr(&location("file", &s, "references/grid.json"), "temp", &[])
        ),
    )
    .await;
    assert_eq!(got.unwrap(), want.unwrap());
}

/// The chunks of a reference set that lie side by side in one file are read together: over
/// HTTP, the 8 chunks of `gen.json`'s `data` (16 bytes each, back to back in `gen.bin`) take
/// fewer requests than chunks, and read as they do locally.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn neighbouring_references_in_one_file_are_read_in_fewer_requests() {
    let s = servers();
    let key = "references/gen.json";
    let proxy = Proxy::start(s.http);
    let (ctx, table) = {
        let ctx = SessionContext::new_with_config(SessionConfig::new().with_target_partitions(1));
        datafusion_zarr::register(&ctx);
        let table = read_zarr(
            &format!("http://127.0.0.1:{}/{key}", proxy.port),
            "data",
            &[],
        );
        (ctx, table)
    };
    let got = rows(&ctx, &format!("SELECT * FROM {table}")).await.unwrap();
    let local = read_zarr(&location("file", &s, key), "data", &[]);
    let want = rows(&ctx, &format!("SELECT * FROM {local}")).await.unwrap();
    assert_eq!(got, want);
    let gets = proxy
        .take_log()
        .iter()
        .filter(|l| l.method == "GET" && l.target.ends_with("gen.bin"))
        .count();
    assert!(
        (1..8).contains(&gets),
        "{gets} requests for 8 chunks of gen.bin"
    );
}
