//! The Icechunk bench: the same scan on a plain store and on an Icechunk repository holding
//! the same chunks byte for byte (`benches/icechunk/make_repo.py`), side by side in one run,
//! locally and over HTTP through the test proxy that adds a delay to every request (real nginx
//! behind it):
//!
//! - `zarr-sql PLAIN -c "SELECT count(*) FROM t WHERE value LIKE '%ab%'"` and the same on the
//!   repository (the tip of `main`), on the local files;
//! - both again as `http://127.0.0.1:PROXY/NAME` (the repository is read through the same
//!   object store client as the plain store: its `repo` file, snapshot, manifest and chunks);
//!
//! ```text
//! v/bin/python benches/icechunk/make_repo.py benches/data/strings_20m.zarr benches/data/strings_20m.icechunk
//! CARGO_TARGET_DIR=/work/target-bench cargo bench -p zarr-sql --bench icechunk
//! ```
//!
//! `ZARR_BENCH_STORE` names another plain store (its repository beside it, `.icechunk` for
//! `.zarr`), `ZARR_BENCH_DELAY_MS` the delay (default 20), `ZARR_BENCH_RUNS` the runs (default
//! 5), `ZARR_SQL_BIN` another `zarr-sql`.

mod common;

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use common::{count_of, env_or, list, median, run};
use zarr_test_support::servers::{self, proxy::Proxy};

const QUERY: &str = "SELECT count(*) AS n FROM t WHERE value LIKE '%ab%'";
/// Answered from the metadata alone: what opening the table costs.
const OPEN_ONLY: &str = "SELECT count(*) AS n FROM t";

fn main() {
    let root = servers::root();
    let plain = std::env::var_os("ZARR_BENCH_STORE")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("benches/data/strings_20m.zarr"));
    let repository = plain.with_extension("icechunk");
    if !plain.join("zarr.json").is_file() || !repository.join("repo").is_file() {
        eprintln!(
            "icechunk bench skipped: it needs {} and the repository {} (benches/icechunk/make_repo.py)",
            plain.display(),
            repository.display()
        );
        return;
    }
    let plain = std::fs::canonicalize(&plain).expect("the store path");
    let repository = std::fs::canonicalize(&repository).expect("the repository path");
    let served = plain.parent().expect("the stores' directory");
    let name = |p: &PathBuf| p.file_name().expect("a name").to_string_lossy().to_string();
    let zarr_sql = std::env::var_os("ZARR_SQL_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_zarr-sql")));
    let runs: usize = env_or("ZARR_BENCH_RUNS", 5).max(1);
    let delay = Duration::from_millis(env_or("ZARR_BENCH_DELAY_MS", 20));
    let http_port = servers::free_port();
    let _nginx = servers::nginx(served, http_port).expect("nginx (tools/install-test-servers)");
    let proxy = Proxy::start(http_port);
    proxy.set_delay(delay);
    let url = |p: &PathBuf| format!("http://127.0.0.1:{}/{}", proxy.port, name(p));
    println!(
        "plain store {} and repository {}, over HTTP through a proxy adding {delay:?} per request\nzarr-sql: {}\n{runs} runs each, alternating\n",
        plain.display(),
        repository.display(),
        zarr_sql.display()
    );
    let ours_with = |location: &str, query: &str| {
        let mut cmd = Command::new(&zarr_sql);
        cmd.arg(location)
            .args(["-q", "--format", "csv", "-c", query]);
        cmd
    };
    let ours = |location: &str| ours_with(location, QUERY);
    let locations = [
        ("plain, local", plain.display().to_string()),
        ("repository, local", repository.display().to_string()),
        ("plain, HTTP", url(&plain)),
        ("repository, HTTP", url(&repository)),
    ];
    // Warm the page cache; every location must count the same.
    let want = count_of(&run(&mut ours(&locations[0].1)).stdout);
    let mut seconds = vec![Vec::new(); locations.len()];
    let mut opening = vec![Vec::new(); locations.len()];
    let mut requests = vec![0; locations.len()];
    let mut open_requests = vec![0; locations.len()];
    for _ in 0..runs {
        for (i, (what, location)) in locations.iter().enumerate() {
            proxy.take_log();
            let r = run(&mut ours(location));
            assert_eq!(count_of(&r.stdout), want, "{what}");
            seconds[i].push(r.seconds);
            requests[i] = proxy.take_log().len();
            let r = run(&mut ours_with(location, OPEN_ONLY));
            assert_eq!(count_of(&r.stdout), 20_000_000, "{what}");
            opening[i].push(r.seconds);
            let log = proxy.take_log();
            if std::env::var_os("ZARR_BENCH_SHOW_REQUESTS").is_some() {
                for l in &log {
                    eprintln!(
                        "{what}: {} {} {:?} -> {}",
                        l.method, l.target, l.range, l.status
                    );
                }
            }
            open_requests[i] = log.len();
        }
    }
    println!("count(*) WHERE value LIKE '%ab%' = {want}");
    let medians: Vec<f64> = seconds.iter().map(|s| median(s.clone())).collect();
    for (i, (what, _)) in locations.iter().enumerate() {
        println!(
            "{what:<18} median {:.3} s  [{}]  requests {}; opening alone (count(*)) {:.3} s, {} requests",
            medians[i],
            list(&seconds[i]),
            requests[i],
            median(opening[i].clone()),
            open_requests[i]
        );
    }
    println!(
        "repository / plain: local {:.2}x, HTTP {:.2}x; repository HTTP / repository local {:.2}x (plain: {:.2}x)",
        medians[1] / medians[0],
        medians[3] / medians[2],
        medians[3] / medians[1],
        medians[2] / medians[0]
    );
}
