//! `zarr-sql` against the peer (zarr-python + pyarrow, `benches/peer/peer.py`), both as child
//! processes, side by side in one run:
//!
//! - scan: `zarr-sql STORE -c "SELECT count(*) FROM t WHERE value LIKE '%ab%'"` against
//!   `peer.py scan STORE` (the two counts must be equal);
//! - export: `zarr-sql export STORE OUT.parquet` against `peer.py export STORE OUT.parquet`
//!   (zstd level 3, row groups of 1,000,000 rows, columns `i` uint64 and `value` string; both
//!   files must hold every row);
//! - export against the scan (the goal: at most 1.5×): the export and
//!   `COPY (SELECT * FROM t) TO 'OUT.parquet'` typed in SQL, each against the full scan
//!   `SELECT count(value) FROM t WHERE value <> 'zzzz'` (every string decoded and transcoded),
//!   with the CPU time of each;
//! - the same for the other shapes, each against its own full scan (every value of
//!   every column): the group table `benches/data/group_20m.zarr` (`make_group_store.py`) and
//!   the N-D array `benches/data/stations.zarr` (`make_pushdown_store.py`), the latter also
//!   against the peer's export of it (`peer.py export-nd`); a shape whose store is absent is
//!   skipped with a message.
//!
//! Each command runs `ZARR_BENCH_RUNS` times (default 3), alternating ours and the peer's, with
//! `ZARR_BENCH_THREADS` threads (default: the number of cores) on each side (`-p N`,
//! `--threads N`). Reported: wall time of each child process (median and all runs), the peer's
//! own `seconds` (after its imports), the ratios, and each child's peak RSS (`ru_maxrss` from
//! `wait4`, i.e. getrusage of that child alone).
//!
//! ```text
//! python3 benches/peer/make_store.py        # once: benches/data/strings_20m.zarr
//! CARGO_TARGET_DIR=/work/target-bench cargo bench -p zarr-sql --bench export
//! ```
//!
//! `ZARR_BENCH_STORE` names another store; `ZARR_SQL_BIN` another `zarr-sql` (default: the one
//! cargo builds with this bench, `release/zarr-sql`); `PYTHON` the interpreter (default
//! `python3`); `ZARR_BENCH_OUT` the directory of the Parquet files (default: the system's
//! temporary directory; they are removed at the end).

#[cfg(not(unix))]
fn main() {
    eprintln!("export bench skipped: it measures child processes with wait4, Unix only");
}

#[cfg(unix)]
fn main() {
    unix::main()
}

#[cfg(unix)]
mod common;

#[cfg(unix)]
mod unix {
    use super::common::{env_or, list, median, run};
    use std::path::{Path, PathBuf};
    use std::process::Command;

    const QUERY: &str = "SELECT count(*) AS n FROM t WHERE value LIKE '%ab%'";
    const ROW_GROUP: &str = "1000000";
    /// Every string decoded and transcoded: the scan an export is measured against.
    const FULL_SCAN: &str = "SELECT count(value) AS n FROM t WHERE value <> 'zzzz'";
    /// The group table's full scan: every value of its three columns.
    const GROUP_FULL_SCAN: &str =
        "SELECT count(value), count(code), count(n) FROM t WHERE value <> 'zzzz'";
    /// The N-D array's full scan: every value and both coordinates of every row.
    const STATIONS_FULL_SCAN: &str = "SELECT count(station), count(hour), count(temp) FROM t";

    fn json(s: &str) -> serde_json::Value {
        let line = s.lines().last().unwrap_or_default();
        serde_json::from_str(line).unwrap_or_else(|e| panic!("peer output {s:?}: {e}"))
    }

    fn mib(kib: i64) -> f64 {
        kib as f64 / 1024.0
    }

    /// Reads every file of the store once, so the first measured run does not pay for the disk.
    fn warm(dir: &Path) -> u64 {
        let mut bytes = 0;
        for entry in std::fs::read_dir(dir).expect("read store").flatten() {
            let p = entry.path();
            if p.is_dir() {
                bytes += warm(&p);
            } else {
                bytes += std::fs::read(&p).map_or(0, |b| b.len() as u64);
            }
        }
        bytes
    }

    /// A file's size in MiB (0 if absent).
    fn size_mib(path: &Path) -> u64 {
        std::fs::metadata(path).map_or(0, |m| m.len()) >> 20
    }

    /// `zarr-sql export STORE OUT` with the bench's settings (those of the peer's export).
    fn export_command(zarr_sql: &Path, store: &Path, out: &Path, threads: &str) -> Command {
        let mut command = Command::new(zarr_sql);
        command
            .arg("export")
            .arg(store)
            .arg(out)
            .args(["--quiet", "-p", threads, "--compression", "zstd"])
            .args(["--compression-level", "3", "--row-group-size", ROW_GROUP]);
        command
    }

    fn parquet_rows(path: &Path) -> i64 {
        use parquet::file::reader::{FileReader, SerializedFileReader};
        let file = std::fs::File::open(path).expect("open parquet");
        let reader = SerializedFileReader::new(file).expect("parquet footer");
        reader.metadata().file_metadata().num_rows()
    }

    pub fn main() {
        // `cargo bench` passes `--bench`; this runner takes no arguments of its own.
        let root = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
        let store = std::env::var_os("ZARR_BENCH_STORE")
            .map(PathBuf::from)
            .unwrap_or_else(|| root.join("benches/data/strings_20m.zarr"));
        if !store.join("zarr.json").is_file() {
            eprintln!(
                "export bench skipped: no Zarr store at {} (generate it with \
                 `python3 benches/peer/make_store.py`, or set ZARR_BENCH_STORE)",
                store.display()
            );
            return;
        }
        let zarr_sql = std::env::var_os("ZARR_SQL_BIN")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_zarr-sql")));
        let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
        let peer = root.join("benches/peer/peer.py");
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let threads: usize = env_or("ZARR_BENCH_THREADS", cores);
        let runs: usize = env_or("ZARR_BENCH_RUNS", 3).max(1);
        let out_dir = std::env::var_os("ZARR_BENCH_OUT")
            .map(PathBuf::from)
            .unwrap_or_else(std::env::temp_dir)
            .join(format!("zarr-bench-{}", std::process::id()));
        std::fs::create_dir_all(&out_dir).expect("create the output directory");
        let ours_out = out_dir.join("zarr_sql.parquet");
        let peer_out = out_dir.join("peer.parquet");
        let threads_s = threads.to_string();

        let warmed = warm(&store);
        println!(
            "store {} ({} MiB on disk, read once to warm the page cache)\nzarr-sql: {}\npeer: {python} {}\n{threads} threads each side, {runs} runs each (cores: {cores})\n",
            store.display(),
            warmed >> 20,
            zarr_sql.display(),
            peer.display()
        );

        // --- scan ---
        let (mut ours, mut theirs, mut theirs_inner) = (vec![], vec![], vec![]);
        let (mut ours_rss, mut theirs_rss) = (0, 0);
        let mut counts = None;
        for _ in 0..runs {
            let r = run(Command::new(&zarr_sql)
                .arg(&store)
                .args(["-q", "--format", "csv", "-p", &threads_s, "-c", QUERY]));
            let ours_count: u64 = r
                .stdout
                .lines()
                .last()
                .and_then(|l| l.trim().parse().ok())
                .unwrap_or_else(|| panic!("zarr-sql output {:?}", r.stdout));
            ours.push(r.seconds);
            ours_rss = ours_rss.max(r.peak_rss_kib);

            let p = run(Command::new(&python)
                .arg(&peer)
                .arg("scan")
                .arg(&store)
                .args(["--threads", &threads_s]));
            let v = json(&p.stdout);
            let peer_count = v["count"].as_u64().expect("count");
            theirs.push(p.seconds);
            theirs_inner.push(v["seconds"].as_f64().expect("seconds"));
            theirs_rss = theirs_rss.max(p.peak_rss_kib);
            assert_eq!(
                ours_count, peer_count,
                "zarr-sql and the peer count different rows"
            );
            counts = Some(ours_count);
        }
        let (o, t, ti) = (
            median(ours.clone()),
            median(theirs.clone()),
            median(theirs_inner.clone()),
        );
        println!("scan: {QUERY}  (both count {})", counts.unwrap_or_default());
        println!(
            "  zarr-sql               median {o:7.2} s   runs [{}]   peak RSS {:7.1} MiB",
            list(&ours),
            mib(ours_rss)
        );
        println!(
            "  zarr-python + pyarrow  median {t:7.2} s   runs [{}]   peak RSS {:7.1} MiB",
            list(&theirs),
            mib(theirs_rss)
        );
        println!(
            "    (its own timer, imports excluded: median {ti:.2} s, runs [{}])",
            list(&theirs_inner)
        );
        println!(
            "  ratio peer / zarr-sql: {:.2}x (wall), {:.2}x (peer's own timer vs our wall)\n",
            t / o,
            ti / o
        );

        // --- export ---
        let copy_out = out_dir.join("copy.parquet");
        let copy_sql = format!("COPY (SELECT * FROM t) TO '{}'", copy_out.display());
        let (mut ours, mut theirs, mut theirs_inner) = (vec![], vec![], vec![]);
        let (mut ours_rss, mut theirs_rss, mut copy_rss) = (0, 0, 0);
        let (mut full, mut copy) = (vec![], vec![]);
        let (mut ours_cpu, mut full_cpu, mut copy_cpu) = (vec![], vec![], vec![]);
        for _ in 0..runs {
            let f = run(Command::new(&zarr_sql)
                .arg(&store)
                .args(["-q", "--format", "csv", "-p", &threads_s, "-c", FULL_SCAN]));
            full.push(f.seconds);
            full_cpu.push(f.cpu_seconds);

            let r = run(&mut export_command(
                &zarr_sql, &store, &ours_out, &threads_s,
            ));
            ours.push(r.seconds);
            ours_cpu.push(r.cpu_seconds);
            ours_rss = ours_rss.max(r.peak_rss_kib);

            let c = run(Command::new(&zarr_sql)
                .arg(&store)
                .args(["-q", "-p", &threads_s, "-c", &copy_sql]));
            copy.push(c.seconds);
            copy_cpu.push(c.cpu_seconds);
            copy_rss = copy_rss.max(c.peak_rss_kib);

            let p = run(Command::new(&python)
                .arg(&peer)
                .arg("export")
                .arg(&store)
                .arg(&peer_out)
                .args(["--threads", &threads_s, "--row-group-size", ROW_GROUP]));
            let v = json(&p.stdout);
            theirs.push(p.seconds);
            theirs_inner.push(v["seconds"].as_f64().expect("seconds"));
            theirs_rss = theirs_rss.max(p.peak_rss_kib);
        }
        let (ours_rows, peer_rows) = (parquet_rows(&ours_out), parquet_rows(&peer_out));
        assert_eq!(
            ours_rows, peer_rows,
            "the two Parquet files hold different row counts"
        );
        assert_eq!(
            parquet_rows(&copy_out),
            ours_rows,
            "COPY wrote another row count"
        );
        let (o, t, ti) = (
            median(ours.clone()),
            median(theirs.clone()),
            median(theirs_inner.clone()),
        );
        let (fs, cs) = (median(full.clone()), median(copy.clone()));
        println!(
            "export to Parquet (zstd 3, row groups of {ROW_GROUP}; both files {ours_rows} rows)"
        );
        println!(
            "  zarr-sql export        median {o:7.2} s   runs [{}]   CPU [{}]   peak RSS {:7.1} MiB   file {} MiB",
            list(&ours),
            list(&ours_cpu),
            mib(ours_rss),
            size_mib(&ours_out)
        );
        println!(
            "  zarr-python + pyarrow  median {t:7.2} s   runs [{}]   peak RSS {:7.1} MiB   file {} MiB",
            list(&theirs),
            mib(theirs_rss),
            size_mib(&peer_out)
        );
        println!(
            "    (its own timer, imports excluded: median {ti:.2} s, runs [{}])",
            list(&theirs_inner)
        );
        println!(
            "  ratio peer / zarr-sql: {:.2}x (wall), {:.2}x (peer's own timer vs our wall)",
            t / o,
            ti / o
        );
        println!(
            "  peak RSS of zarr-sql export: {:.1} MiB (target < 512 MiB)\n",
            mib(ours_rss)
        );
        println!("export against the full scan: {FULL_SCAN}");
        println!(
            "  full scan              median {fs:7.2} s   runs [{}]   CPU [{}]",
            list(&full),
            list(&full_cpu)
        );
        println!(
            "  COPY (SELECT * FROM t) median {cs:7.2} s   runs [{}]   CPU [{}]   peak RSS {:7.1} MiB   file {} MiB",
            list(&copy),
            list(&copy_cpu),
            mib(copy_rss),
            size_mib(&copy_out)
        );
        println!(
            "  export / full scan: {:.2}x   COPY / full scan: {:.2}x   (target at most 1.5x)",
            o / fs,
            cs / fs
        );
        // --- the other shapes: a group table and an N-D array ---
        let shapes = [
            (
                "group table (value <U16, code <U4, n int32; 20 M rows)",
                root.join("benches/data/group_20m.zarr"),
                "benches/peer/make_group_store.py",
                GROUP_FULL_SCAN,
                None,
            ),
            (
                "N-D array (temp(station, hour) float32 with its coordinates; 10 M rows)",
                root.join("benches/data/stations.zarr"),
                "benches/peer/make_pushdown_store.py",
                STATIONS_FULL_SCAN,
                Some("export-nd"),
            ),
        ];
        for (name, shape_store, script, full_scan, peer_op) in shapes {
            if !shape_store.join("zarr.json").is_file() {
                println!(
                    "{name}: skipped, no store at {} (generate it with `python3 {script}`)\n",
                    shape_store.display()
                );
                continue;
            }
            warm(&shape_store);
            export_against_scan(&ExportRun {
                name,
                zarr_sql: &zarr_sql,
                store: &shape_store,
                full_scan,
                threads: &threads_s,
                runs,
                out_dir: &out_dir,
                peer: peer_op.map(|op| (python.as_str(), peer.as_path(), op)),
            });
        }
        let _ = std::fs::remove_dir_all(&out_dir);
    }

    /// One shape: its full scan, `zarr-sql export` and `COPY`, alternating.
    struct ExportRun<'a> {
        name: &'a str,
        zarr_sql: &'a Path,
        store: &'a Path,
        full_scan: &'a str,
        threads: &'a str,
        runs: usize,
        out_dir: &'a Path,
        /// The peer's interpreter, script and subcommand for this shape, if it has one.
        peer: Option<(&'a str, &'a Path, &'a str)>,
    }

    fn export_against_scan(r: &ExportRun) {
        let out = r.out_dir.join("shape.parquet");
        let copy_out = r.out_dir.join("shape_copy.parquet");
        let peer_out = r.out_dir.join("shape_peer.parquet");
        let copy_sql = format!("COPY (SELECT * FROM t) TO '{}'", copy_out.display());
        let (mut peer, mut peer_cpu, mut peer_rss) = (vec![], vec![], 0);
        let (mut full, mut export, mut copy) = (vec![], vec![], vec![]);
        let (mut full_cpu, mut export_cpu, mut copy_cpu) = (vec![], vec![], vec![]);
        let (mut export_rss, mut copy_rss) = (0, 0);
        for _ in 0..r.runs {
            let f = run(Command::new(r.zarr_sql).arg(r.store).args([
                "-q",
                "--format",
                "csv",
                "-p",
                r.threads,
                "-c",
                r.full_scan,
            ]));
            full.push(f.seconds);
            full_cpu.push(f.cpu_seconds);
            let e = run(&mut export_command(r.zarr_sql, r.store, &out, r.threads));
            export.push(e.seconds);
            export_cpu.push(e.cpu_seconds);
            export_rss = export_rss.max(e.peak_rss_kib);
            let c = run(Command::new(r.zarr_sql)
                .arg(r.store)
                .args(["-q", "-p", r.threads, "-c", &copy_sql]));
            copy.push(c.seconds);
            copy_cpu.push(c.cpu_seconds);
            copy_rss = copy_rss.max(c.peak_rss_kib);
            if let Some((python, script, op)) = r.peer {
                let p = run(Command::new(python)
                    .arg(script)
                    .arg(op)
                    .arg(r.store)
                    .arg(&peer_out)
                    .args(["--threads", r.threads, "--row-group-size", ROW_GROUP]));
                peer.push(p.seconds);
                peer_cpu.push(p.cpu_seconds);
                peer_rss = peer_rss.max(p.peak_rss_kib);
            }
        }
        let rows = parquet_rows(&out);
        assert_eq!(
            parquet_rows(&copy_out),
            rows,
            "COPY wrote another row count"
        );
        let (fs, es, cs) = (
            median(full.clone()),
            median(export.clone()),
            median(copy.clone()),
        );
        println!("{}: {rows} rows", r.name);
        println!(
            "  full scan              median {fs:7.2} s   runs [{}]   CPU [{}]   ({})",
            list(&full),
            list(&full_cpu),
            r.full_scan
        );
        println!(
            "  zarr-sql export        median {es:7.2} s   runs [{}]   CPU [{}]   peak RSS {:7.1} MiB   file {} MiB",
            list(&export),
            list(&export_cpu),
            mib(export_rss),
            size_mib(&out)
        );
        println!(
            "  COPY (SELECT * FROM t) median {cs:7.2} s   runs [{}]   CPU [{}]   peak RSS {:7.1} MiB   file {} MiB",
            list(&copy),
            list(&copy_cpu),
            mib(copy_rss),
            size_mib(&copy_out)
        );
        if r.peer.is_some() {
            assert_eq!(
                parquet_rows(&peer_out),
                rows,
                "the peer wrote another row count"
            );
            let ps = median(peer.clone());
            println!(
                "  peer (zarr-python + pyarrow) median {ps:5.2} s   runs [{}]   CPU [{}]   peak RSS {:7.1} MiB   file {} MiB",
                list(&peer),
                list(&peer_cpu),
                mib(peer_rss),
                size_mib(&peer_out)
            );
            println!("  ratio peer / zarr-sql export: {:.2}x (wall)", ps / es);
        }
        println!(
            "  export / full scan: {:.2}x (CPU {:.2}x)   COPY / full scan: {:.2}x (CPU {:.2}x)   (target at most 1.5x)\n",
            es / fs,
            median(export_cpu.clone()) / median(full_cpu.clone()),
            cs / fs,
            median(copy_cpu.clone()) / median(full_cpu.clone())
        );
    }
}
