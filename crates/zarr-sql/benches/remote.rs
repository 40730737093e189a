//! The latency bench: the same query on the local files and over HTTP through a
//! proxy that adds a delay to every request (real nginx behind it), side by side in one run,
//! with the proxy's request counts, our CPU time each way (from `wait4`) and zarr-python +
//! pyarrow over the same proxy.
//!
//! - ours, local: `zarr-sql STORE -c "SELECT count(*) FROM t WHERE value LIKE '%ab%'"`;
//! - ours, HTTP: the same with `http://127.0.0.1:PROXY/STORE_NAME`;
//! - the peer, HTTP: `peer.py scan http://… --chunks-per-read 64` (zarr-python fetches the 64
//!   chunks of each slice concurrently through fsspec; one slice at a time per thread);
//! - once, ours over HTTP with `-o io_concurrency=1 -p 1`: chunk after chunk, the latency bound.
//!
//! ```text
//! python3 benches/peer/make_store.py --chunk 10000 --out benches/data/strings_20m_c10k.zarr
//! CARGO_TARGET_DIR=/work/target-bench cargo bench -p zarr-sql --bench remote
//! ```
//!
//! `ZARR_BENCH_STORE` names another store, `ZARR_BENCH_DELAY_MS` the delay (default 20),
//! `ZARR_BENCH_RUNS` the runs (default 3), `ZARR_BENCH_THREADS` the threads each side (default:
//! the cores), `ZARR_SQL_BIN` another `zarr-sql`, `PYTHON` the interpreter.

mod common;

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use common::{count_of, env_or, list, median, own_cpu_seconds, run};
use zarr_test_support::servers::{self, proxy::Proxy};

const QUERY: &str = "SELECT count(*) AS n FROM t WHERE value LIKE '%ab%'";

fn main() {
    let root = servers::root();
    let store = std::env::var_os("ZARR_BENCH_STORE")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("benches/data/strings_20m_c10k.zarr"));
    if !store.join("zarr.json").is_file() {
        eprintln!(
            "remote bench skipped: no Zarr store at {} (generate it with `python3 \
             benches/peer/make_store.py --chunk 10000 --out benches/data/strings_20m_c10k.zarr`)",
            store.display()
        );
        return;
    }
    let store = std::fs::canonicalize(&store).expect("the store path");
    let served = store.parent().expect("the store's directory");
    let name = store.file_name().expect("a store name").to_string_lossy();
    let zarr_sql = std::env::var_os("ZARR_SQL_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_zarr-sql")));
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
    let peer = root.join("benches/peer/peer.py");
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let threads: usize = env_or("ZARR_BENCH_THREADS", cores);
    let runs: usize = env_or("ZARR_BENCH_RUNS", 3).max(1);
    let delay = Duration::from_millis(env_or("ZARR_BENCH_DELAY_MS", 20));

    let http_port = servers::free_port();
    let _nginx = servers::nginx(served, http_port).expect("nginx (tools/install-test-servers)");
    let proxy = Proxy::start(http_port);
    proxy.set_delay(delay);
    let url = format!("http://127.0.0.1:{}/{name}", proxy.port);
    let threads_s = threads.to_string();
    println!(
        "store {} served by nginx through a proxy adding {delay:?} per request\nzarr-sql: {}\n{threads} threads each side, {runs} runs each (cores: {cores})\n",
        store.display(),
        zarr_sql.display()
    );
    let ours_with = |location: &str, threads: &str, extra: &[&str]| {
        let mut cmd = Command::new(&zarr_sql);
        cmd.arg(location)
            .args(["-q", "--format", "csv", "-p", threads, "-c", QUERY])
            .args(extra);
        cmd
    };
    let ours = |location: &str, extra: &[&str]| ours_with(location, &threads_s, extra);
    // Warm the page cache (nginx reads the same files).
    let want = count_of(&run(&mut ours(&store.display().to_string(), &[])).stdout);

    let (mut local, mut http, mut peer_http, mut peer_inner) = (vec![], vec![], vec![], vec![]);
    let (mut local_cpu, mut http_cpu, mut proxy_cpu) = (vec![], vec![], vec![]);
    let mut requests = None;
    for _ in 0..runs {
        let r = run(&mut ours(&store.display().to_string(), &[]));
        assert_eq!(count_of(&r.stdout), want);
        local.push(r.seconds);
        local_cpu.push(r.cpu_seconds);
        proxy.take_log();
        let before = own_cpu_seconds();
        let r = run(&mut ours(&url, &[]));
        proxy_cpu.push(own_cpu_seconds() - before);
        assert_eq!(count_of(&r.stdout), want);
        http.push(r.seconds);
        http_cpu.push(r.cpu_seconds);
        let log = proxy.take_log();
        let chunks = log.iter().filter(|l| l.target.contains("/c/")).count();
        let bytes: usize = log.iter().map(|l| l.bytes).sum();
        requests = Some((log.len(), chunks, bytes));
        let r = run(Command::new(&python).arg(&peer).args([
            "scan",
            &url,
            "--threads",
            &threads_s,
            "--chunks-per-read",
            "64",
        ]));
        assert_eq!(count_of(&r.stdout), want, "the peer's count");
        peer_http.push(r.seconds);
        let inner: serde_json::Value =
            serde_json::from_str(r.stdout.lines().last().unwrap_or_default()).expect("peer JSON");
        peer_inner.push(inner["seconds"].as_f64().unwrap_or(f64::NAN));
        proxy.take_log();
    }
    let one = run(&mut ours_with(&url, "1", &["-o", "io_concurrency=1"])).seconds;

    let (total, chunks, bytes) = requests.expect("at least one run");
    println!("count(*) WHERE value LIKE '%ab%' = {want}");
    println!(
        "zarr-sql local          median {:.2} s  [{}]   CPU {:.2} s",
        median(local.clone()),
        list(&local),
        median(local_cpu.clone())
    );
    println!(
        "zarr-sql HTTP           median {:.2} s  [{}]   {:.2}x local   CPU {:.2} s (the proxy's: {:.2} s)",
        median(http.clone()),
        list(&http),
        median(http.clone()) / median(local.clone()),
        median(http_cpu.clone()),
        median(proxy_cpu.clone())
    );
    println!(
        "peer HTTP (64 per read) median {:.2} s  [{}]   own timer {:.2} s   {:.2}x zarr-sql HTTP",
        median(peer_http.clone()),
        list(&peer_http),
        median(peer_inner.clone()),
        median(peer_http.clone()) / median(http.clone())
    );
    println!("zarr-sql HTTP, io_concurrency=1 -p 1 (one request at a time): {one:.2} s");
    println!(
        "requests of one zarr-sql HTTP run: {total} ({chunks} chunks, {} metadata), {} MiB",
        total - chunks,
        bytes >> 20
    );
}
