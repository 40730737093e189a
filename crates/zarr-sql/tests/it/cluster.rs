//! zarr-sql on a Ballista cluster (feature `ballista`): a scheduler and two executors started
//! as separate `zarr-sql` processes on 127.0.0.1, and every query of `tests/slt` and
//! `queries/`, an export, pruning and an S3 store checked against the same work done locally.
use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use arrow::array::RecordBatch;
use arrow::compute::concat_batches;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use crate::common::*;
use servers::{free_port, location, options, servers};
use zarr_test_support::{copy_dir, fixture, servers};

/// A running cluster: the scheduler's URL and where each process logs.
struct Cluster {
    url: String,
    scheduler_log: PathBuf,
    executor_logs: Vec<PathBuf>,
}

/// The cluster, started on first use and stopped when the test process ends.
fn cluster() -> &'static Cluster {
    static CLUSTER: OnceLock<Result<Cluster, String>> = OnceLock::new();
    let started = CLUSTER.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel();
        // The processes are children of this thread, which lives as long as the test process:
        // they get SIGTERM when it ends (PR_SET_PDEATHSIG follows the spawning thread).
        std::thread::spawn(move || {
            let logs = tempfile::tempdir().expect("a log directory");
            let started = start_cluster(logs.path());
            let (result, children) = match started {
                Ok((cluster, children)) => (Ok(cluster), children),
                Err(e) => (Err(e), Vec::new()),
            };
            tx.send(result).expect("the test thread waits");
            let _keep = (logs, children);
            loop {
                std::thread::park();
            }
        });
        rx.recv()
            .unwrap_or_else(|_| Err("the cluster thread ended".into()))
    });
    match started {
        Ok(c) => c,
        Err(e) => panic!("starting the cluster failed: {e}"),
    }
}

/// Starts `zarr-sql` with `args`, its standard error to `log`, ended with this thread.
fn spawn(args: &[String], log: &Path) -> Result<std::process::Child, String> {
    let log_file = File::create(log).map_err(|e| format!("{}: {e}", log.display()))?;
    let mut command = Command::new(env!("CARGO_BIN_EXE_zarr-sql"));
    command
        .args(args)
        // Not the repository root: a relative path that reached an executor would fail.
        .current_dir(std::env::temp_dir())
        // Ballista's task lines, and which units each process reads.
        .env("RUST_LOG", "info,datafusion_zarr=debug")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log_file);
    // SAFETY: prctl is async-signal-safe; the closure allocates nothing.
    unsafe {
        command.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
            Ok(())
        });
    }
    command
        .spawn()
        .map_err(|e| format!("starting zarr-sql {args:?}: {e}"))
}

fn start_cluster(logs: &Path) -> Result<(Cluster, Vec<std::process::Child>), String> {
    let scheduler = format!("127.0.0.1:{}", free_port());
    let scheduler_log = logs.join("scheduler.log");
    let mut children = vec![spawn(
        &["scheduler".into(), "--bind".into(), scheduler.clone()],
        &scheduler_log,
    )?];
    let mut executor_logs = Vec::new();
    for i in 1..=2 {
        let log = logs.join(format!("executor-{i}.log"));
        let work_dir = logs.join(format!("work-{i}"));
        std::fs::create_dir_all(&work_dir).map_err(|e| e.to_string())?;
        children.push(spawn(
            &[
                "executor".into(),
                "--scheduler".into(),
                scheduler.clone(),
                "--bind".into(),
                format!("127.0.0.1:{}", free_port()),
                "--concurrent-tasks".into(),
                "2".into(),
                "--work-dir".into(),
                work_dir.display().to_string(),
            ],
            &log,
        )?);
        executor_logs.push(log);
    }
    // Ready when both executors poll the scheduler for work (bounded wait).
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let ready = executor_logs.iter().all(|log| {
            std::fs::read_to_string(log).is_ok_and(|t| t.contains("Starting poll work loop"))
        });
        if ready {
            break;
        }
        for child in &mut children {
            if let Ok(Some(status)) = child.try_wait() {
                let logs: Vec<String> = std::iter::once(&scheduler_log)
                    .chain(&executor_logs)
                    .map(|l| std::fs::read_to_string(l).unwrap_or_default())
                    .collect();
                return Err(format!("a cluster process exited ({status}): {logs:#?}"));
            }
        }
        if Instant::now() > deadline {
            return Err("the executors did not start polling within 60 s".into());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let cluster = Cluster {
        url: format!("df://{scheduler}"),
        scheduler_log,
        executor_logs,
    };
    Ok((cluster, children))
}

/// `zarr-sql ARGS` locally, and the same with `--scheduler` on the cluster: (local, cluster).
fn both(args: &[&str]) -> (String, String) {
    let local = zarr_sql(args);
    assert!(local.status.success(), "{args:?}: {}", stderr(&local));
    let mut on_cluster = vec!["--scheduler", cluster().url.as_str()];
    on_cluster.extend_from_slice(args);
    let remote = zarr_sql(&on_cluster);
    assert!(remote.status.success(), "{args:?}: {}", stderr(&remote));
    (stdout(&local), stdout(&remote))
}

/// Lines sorted, for a result whose row order the query leaves open.
fn sorted(text: &str) -> Vec<&str> {
    let mut lines: Vec<&str> = text.lines().collect();
    lines.sort_unstable();
    lines
}

/// The SQL of each record of an sqllogictest file, with whether it is a query.
fn slt_records(path: &Path) -> Vec<(bool, String)> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut records = Vec::new();
    for block in text.split("\n\n") {
        let lines: Vec<&str> = block.lines().filter(|l| !l.starts_with('#')).collect();
        let Some((head, rest)) = lines.split_first() else {
            continue;
        };
        let is_query = head.starts_with("query");
        if !is_query && !head.starts_with("statement") {
            continue;
        }
        let sql: Vec<&str> = rest.iter().take_while(|l| **l != "----").copied().collect();
        records.push((is_query, sql.join("\n")));
    }
    records
}

#[test]
fn the_slt_queries_give_the_local_results_on_the_cluster() {
    let mut compared = 0;
    for file in ["tests/slt/read.slt", "tests/slt/pruning.slt"] {
        let mut statements: Vec<String> = Vec::new();
        for (is_query, sql) in slt_records(&root().join(file)) {
            if !is_query {
                statements.push(sql);
                continue;
            }
            // Plans differ on a cluster (stages, shuffles); their Zarr parts are checked below.
            if sql.trim_start().to_uppercase().starts_with("EXPLAIN") {
                continue;
            }
            let mut args = vec!["--format", "csv", "-q"];
            for s in &statements {
                args.extend(["-c", s.as_str()]);
            }
            args.extend(["-c", sql.as_str()]);
            let (local, remote) = both(&args);
            assert!(local.lines().count() > 1, "{sql}: {local}");
            if sql.to_uppercase().contains("ORDER BY") {
                assert_eq!(remote, local, "{file}: {sql}");
            } else {
                assert_eq!(sorted(&remote), sorted(&local), "{file}: {sql}");
            }
            compared += 1;
        }
    }
    assert!(compared >= 12, "only {compared} queries compared");
}

#[test]
fn the_query_files_give_the_local_results_on_the_cluster() {
    let mut files: Vec<PathBuf> = std::fs::read_dir(root().join("queries"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "sql"))
        .collect();
    files.sort();
    assert!(files.len() >= 5, "{files:?}");
    for file in files {
        let path = file.display().to_string();
        let (local, remote) = both(&["--format", "csv", "-q", "-f", &path]);
        assert!(!local.is_empty(), "{path}");
        assert_eq!(remote, local, "{path}");
    }
}

/// A Parquet file's rows as one batch.
fn parquet_batch(path: &Path) -> RecordBatch {
    let reader = ParquetRecordBatchReaderBuilder::try_new(File::open(path).unwrap()).unwrap();
    let schema = reader.schema().clone();
    let batches: Vec<RecordBatch> = reader.build().unwrap().map(|b| b.unwrap()).collect();
    concat_batches(&schema, &batches).unwrap()
}

#[test]
fn an_export_of_the_large_case_equals_the_local_export() {
    let dir = tempfile::tempdir().unwrap();
    let store = corpus_store("17_large_200k_zstd");
    let url = cluster().url.as_str();
    // Locally; on the cluster in one task (the default); and with the scan divided among 4
    // tasks, whose ordered partitions the writing task merges.
    let runs: [(&str, &[&str]); 3] = [
        ("local", &[]),
        ("cluster", &["--scheduler", url]),
        ("divided", &["--scheduler", url, "-p", "4"]),
    ];
    let mut files = Vec::new();
    for (name, extra) in runs {
        let out = dir.path().join(format!("{name}.parquet"));
        let out_text = out.display().to_string();
        let mut args = vec!["export", store.as_str(), out_text.as_str(), "-q"];
        args.extend(extra);
        let done = zarr_sql(&args);
        assert!(done.status.success(), "{args:?}: {}", stderr(&done));
        files.push(parquet_batch(&out));
    }
    let local = &files[0];
    assert_eq!(local.num_rows(), 200_000);
    for remote in &files[1..] {
        assert_eq!(remote.columns(), local.columns());
        assert_eq!(remote.schema().fields(), local.schema().fields());
    }
    // Not carried through Ballista: the footer's zarr.* provenance (docs/scaling.md).
    assert!(local.schema().metadata().contains_key("zarr.store"));
}

#[test]
fn a_cluster_export_says_where_its_progress_is() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.parquet").display().to_string();
    let store = corpus_store("12_group_table_cities");
    let args = [
        "export",
        &store,
        &out,
        "--progress",
        "--scheduler",
        &cluster().url,
    ];
    let done = zarr_sql(&args);
    assert!(done.status.success(), "{}", stderr(&done));
    let e = stderr(&done);
    // Not a count that stays at zero: the scan's progress is in the executors.
    assert!(
        e.contains("progress: the export runs on the cluster; its progress stays in the executors"),
        "{e}"
    );
    assert!(!e.contains("0/0 rows"), "{e}");
    assert!(e.contains("Exported "), "{e}");
}

/// A chunk that fails on an executor fails the query on the client with the reader's own
/// message (array, chunk, rule), not the Debug text of the executor's error it travels as.
#[test]
fn a_chunk_that_fails_on_an_executor_reads_as_it_does_locally() {
    let store = root().join("tests/data/malformed/zstd_truncated.zarr");
    let store = store.to_str().unwrap();
    let sql = "SELECT count(value) FROM t";
    let failed = zarr_sql(&["--scheduler", &cluster().url, store, "-c", sql]);
    assert!(!failed.status.success());
    let e = stderr(&failed);
    assert!(
        e.contains(&format!(
            "runtime execution error: array file://{store}, chunk c/0: "
        )),
        "{e}"
    );
    assert!(!e.contains("DataFusionError("), "{e}");
    assert!(!e.contains("External("), "{e}");
}

/// The values of `key=` in the plan lines of Zarr scans (`ZarrScanExec` locally, a
/// `DataSourceExec` of `file_type=zarr` on the cluster).
fn scan_fields(plan: &str, key: &str) -> Vec<String> {
    plan.lines()
        .filter(|l| l.contains("ZarrScanExec") || l.contains("file_type=zarr"))
        .filter_map(|l| {
            let at = l.find(&format!("{key}="))? + key.len() + 1;
            let rest = &l[at..];
            // A value ends at ", next_key=" or at the end of the line.
            let end = rest
                .match_indices(", ")
                .find(|(i, _)| {
                    rest[i + 2..]
                        .split(['=', ' ', ','])
                        .next()
                        .is_some_and(|k| k.chars().all(|c| c.is_ascii_lowercase() || c == '_'))
                        && rest[i + 2..].contains('=')
                })
                .map_or(rest.len(), |(i, _)| i);
            Some(rest[..end].trim().trim_end_matches('|').trim().to_string())
        })
        .collect()
}

#[test]
fn pruning_and_utf32_filters_survive_the_trip_to_the_executors() {
    let store = corpus_store("06_2d_transpose_dimnames");
    let sql = format!(
        "EXPLAIN ANALYZE SELECT count(*) FROM read_zarr('{store}') WHERE row BETWEEN 12 AND 18 AND col IN (3, 15) AND value LIKE 'r1%'"
    );
    let (local, remote) = both(&["--format", "csv", "-q", "-c", &sql]);
    for key in [
        "chunks_pruned",
        "utf32_filters",
        "pruning_predicate",
        "chunks",
    ] {
        let (l, r) = (scan_fields(&local, key), scan_fields(&remote, key));
        assert!(!l.is_empty(), "{key} in {local}");
        assert_eq!(
            r.first(),
            l.first(),
            "{key}: local {local}\ncluster {remote}"
        );
    }
    assert_eq!(scan_fields(&local, "chunks_pruned")[0], "14");
    // The count itself is the same.
    let count = sql.replace("EXPLAIN ANALYZE ", "");
    let (local, remote) = both(&["--format", "csv", "-q", "-c", &count]);
    assert_eq!(remote, local);
}

/// A predicate on a data variable is evaluated on the executors' scans as locally (the plan
/// carries it as a decoded filter), and the answer is the local one.
#[test]
fn a_decoded_filter_survives_the_trip_to_the_executors() {
    let store = fixture("cf_v3.zarr");
    let sql = format!(
        "EXPLAIN ANALYZE SELECT count(*), sum(level) FROM read_zarr('{store}') WHERE temp > 290 OR temp IS NULL"
    );
    let (local, remote) = both(&["--format", "csv", "-q", "-c", &sql]);
    let (l, r) = (
        scan_fields(&local, "decoded_filters"),
        scan_fields(&remote, "decoded_filters"),
    );
    assert!(!l.is_empty(), "decoded_filters in {local}");
    assert_eq!(r.first(), l.first(), "local {local}\ncluster {remote}");
    let query = sql.replace("EXPLAIN ANALYZE ", "");
    let (local, remote) = both(&["--format", "csv", "-q", "-c", &query]);
    assert_eq!(remote, local);
}

#[test]
fn a_hash_joins_dynamic_filter_is_not_sent_to_the_executors_and_the_plan_says_so() {
    let store = corpus_store("13_group_consolidated_metadata");
    let sql = format!(
        "EXPLAIN SELECT s.station, l.label FROM read_zarr('{store}', 'station') AS s JOIN read_zarr('{store}', 'label') AS l ON s.station_index = l.station WHERE l.label LIKE 'k%'"
    );
    let (local, remote) = both(&["--format", "csv", "-q", "-c", &sql]);
    assert!(local.contains("dynamic_filters=["), "{local}");
    assert!(!remote.contains("dynamic_filters=["), "{remote}");
    assert!(remote.contains("file_type=zarr"), "{remote}");
}

#[test]
fn an_s3_store_is_read_by_the_executors_without_showing_its_secret() {
    let s = servers();
    let key = "corpus/12_group_table_cities/data.zarr";
    // moto checks no credentials: a distinctive secret shows whether any log printed it.
    let secret = "cluster-secret-Qx7Zr2";
    let mut opts: Vec<String> = options("s3", &s)
        .into_iter()
        .map(|(k, v)| match k.as_str() {
            "aws.secret_access_key" => format!("'{k}' '{secret}'"),
            _ => format!("'{k}' '{v}'"),
        })
        .collect();
    opts.sort();
    let create = format!(
        "CREATE EXTERNAL TABLE cities STORED AS ZARR LOCATION '{}' OPTIONS ({})",
        location("s3", &s, key),
        opts.join(", ")
    );
    let sql =
        "SELECT country, count(*) AS n, max(name) FROM cities GROUP BY country ORDER BY country";
    let (local, remote) = both(&["--format", "csv", "-q", "-c", &create, "-c", sql]);
    assert!(local.lines().count() > 5, "{local}");
    assert_eq!(remote, local);
    let c = cluster();
    for log in std::iter::once(&c.scheduler_log).chain(&c.executor_logs) {
        let text = std::fs::read_to_string(log).unwrap();
        assert!(!text.contains(secret), "{} shows the secret", log.display());
    }
}

/// The unit runs (`start..end`) that the lines of `log` say were read from `store`.
fn units_read(log: &Path, store: &str) -> Vec<(u64, u64)> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let mut runs = Vec::new();
    for line in text.lines().filter(|l| l.contains(store)) {
        let Some((_, list)) = line.split_once(" reads units [") else {
            continue;
        };
        for run in list
            .trim_end_matches(']')
            .split(", ")
            .filter(|r| !r.is_empty())
        {
            let (a, b) = run.split_once("..").expect("a run start..end");
            runs.push((a.parse().expect("a unit id"), b.parse().expect("a unit id")));
        }
    }
    runs
}

#[test]
fn a_scan_is_divided_among_both_executors_and_each_unit_read_once() {
    let c = cluster();
    // A copy only this test reads, so the executors' log lines about it are this test's.
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("divided.zarr");
    copy_dir(&root().join(corpus_store("17_large_200k_zstd")), &store);
    let store = store.display().to_string();
    let sql = format!(
        "SELECT count(*), count(DISTINCT value), min(value), max(value) FROM read_zarr('{store}')"
    );
    let local = zarr_sql(&["--format", "csv", "-q", "-c", &sql]);
    assert!(local.status.success(), "{}", stderr(&local));
    // 20 chunks in 8 partitions: 8 scan tasks. Which executor takes which task is the
    // scheduler's choice, so a bounded number of runs until both have scanned.
    for run in 1..=10 {
        let remote = zarr_sql(&[
            "--scheduler",
            c.url.as_str(),
            "-p",
            "8",
            "--format",
            "csv",
            "-q",
            "-c",
            &sql,
        ]);
        assert!(remote.status.success(), "{}", stderr(&remote));
        // The same count: no unit read twice, none skipped.
        assert_eq!(stdout(&remote), stdout(&local));
        // Every line below comes from one of the `run` queries (the logs are appended to).
        let per_executor: Vec<Vec<(u64, u64)>> = c
            .executor_logs
            .iter()
            .map(|l| units_read(l, &store))
            .collect();
        let mut all: Vec<(u64, u64)> = per_executor.concat();
        all.sort();
        let units: u64 = all.iter().map(|(a, b)| b - a).sum();
        assert_eq!(units, 20 * run, "units read after {run} runs: {all:?}");
        if per_executor.iter().all(|runs| !runs.is_empty()) {
            // Each run read the 20 units exactly once between the two executors.
            let mut counts = [0u64; 20];
            for (a, b) in &all {
                for id in *a..*b {
                    counts[id as usize] += 1;
                }
            }
            assert!(counts.iter().all(|&n| n == run), "{counts:?}");
            return;
        }
    }
    let counts: Vec<usize> = c
        .executor_logs
        .iter()
        .map(|l| units_read(l, &store).len())
        .collect();
    panic!("unit runs read per executor: {counts:?}");
}

/// An executor started before its scheduler waits for it rather than exiting: scripts start
/// both at once, and so does `cluster()` above (where the race once failed every test).
#[test]
fn an_executor_started_before_its_scheduler_waits_for_it() {
    let logs = tempfile::tempdir().unwrap();
    let scheduler = format!("127.0.0.1:{}", free_port());
    let executor_log = logs.path().join("executor.log");
    let mut executor = spawn(
        &[
            "executor".into(),
            "--scheduler".into(),
            scheduler.clone(),
            "--bind".into(),
            format!("127.0.0.1:{}", free_port()),
            "--work-dir".into(),
            logs.path().display().to_string(),
        ],
        &executor_log,
    )
    .unwrap();
    std::thread::sleep(Duration::from_secs(1));
    assert!(
        executor.try_wait().unwrap().is_none(),
        "the executor exited without its scheduler: {}",
        std::fs::read_to_string(&executor_log).unwrap_or_default()
    );
    let mut scheduler_process = spawn(
        &["scheduler".into(), "--bind".into(), scheduler],
        &logs.path().join("scheduler.log"),
    )
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let polling = loop {
        let log = std::fs::read_to_string(&executor_log).unwrap_or_default();
        if log.contains("Starting poll work loop") || Instant::now() > deadline {
            break log;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let _ = executor.kill();
    let _ = scheduler_process.kill();
    let _ = (executor.wait(), scheduler_process.wait());
    assert!(
        polling.contains("Starting poll work loop"),
        "the executor did not reach its scheduler: {polling}"
    );
}

/// A kerchunk reference set (JSON, and the Parquet layout) is read by the executors as it is
/// locally: each opens the set and reads the netCDF files' byte ranges it names.
#[test]
fn reference_sets_give_the_local_results_on_the_cluster() {
    let refs = zarr_test_support::root().join("tests/data/references");
    for set in ["multi.json", "grid.parq"] {
        let sql = format!(
            "SELECT time, lat, lon, temp FROM read_zarr('{}', 'temp') WHERE temp > 280 ORDER BY time, lat, lon",
            refs.join(set).display()
        );
        let (local, remote) = both(&["--format", "csv", "-q", "-c", &sql]);
        assert!(local.lines().count() > 10, "{set}: {local}");
        assert_eq!(remote, local, "{set}");
    }
}
