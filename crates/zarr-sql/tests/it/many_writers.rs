//! Many writers, one store (real processes, real servers): four `zarr-sql` processes INSERT INTO
//! one store at once (a local directory, S3 on moto, GCS on fake-gcs-server, Azure on
//! azurite) and every row of every writer that reported success is there once (count, sum and
//! distinct keys), while readers in a loop see the old table or a grown one, columns of equal
//! length, never an error; a writer killed while it holds the store's lock (local) or lease
//! (remote) blocks the next one no longer than the lease; `lock_timeout 0` against a live
//! holder fails naming it and writes nothing; SIGKILL at each step of a local overwrite leaves
//! the old store or the new one, never none, and the next write proceeds.

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;
use zarr_test_support::servers::proxy::Proxy;
use zarr_test_support::servers::{BUCKET, options, servers};

/// Processes appending at once.
const WRITERS: i64 = 4;
/// Rows each appends.
const ROWS: i64 = 20_000;
/// Rows of the store before they start.
const FIRST: i64 = 1_000;

/// A store to write, and the arguments that reach it.
struct Place {
    location: String,
    /// `-o key=value` pairs of its storage options.
    args: Vec<String>,
    _dir: Option<tempfile::TempDir>,
    _proxy: Option<Proxy>,
}

impl Place {
    fn new(scheme: &str, name: &str) -> Self {
        if scheme == "file" {
            let dir = tempfile::tempdir().unwrap();
            return Self {
                location: dir.path().join(name).display().to_string(),
                args: Vec::new(),
                _dir: Some(dir),
                _proxy: None,
            };
        }
        let s = servers();
        let mut pairs = options(scheme, &s);
        let mut proxy = None;
        if scheme == "gs" {
            // fake-gcs-server takes object_store's (XML API) writes through test-support's
            // translating proxy.
            let shim = Proxy::start_gcs_writes(s.gcs);
            for (k, v) in &mut pairs {
                if k == "gcp.base_url" {
                    *v = format!("http://127.0.0.1:{}", shim.port);
                }
            }
            proxy = Some(shim);
        }
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        Self {
            location: format!("{scheme}://{BUCKET}/many_writers/{nanos}/{name}"),
            args: pairs
                .into_iter()
                .flat_map(|(k, v)| ["-o".to_string(), format!("{k}={v}")])
                .collect(),
            _dir: None,
            _proxy: proxy,
        }
    }

    /// `zarr-sql -q [LOCATION -o …] -c sql…`, not yet started.
    /// Without the table, the SQL names the store and its options itself.
    fn command(&self, with_table: bool, sql: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_zarr-sql"));
        command.arg("-q").current_dir(root()).stdin(Stdio::null());
        if with_table {
            command.arg(&self.location);
            command.args(&self.args);
        }
        for s in sql {
            command.args(["-c", s]);
        }
        command
    }

    fn run(&self, with_table: bool, sql: &[&str]) -> Output {
        self.command(with_table, sql).output().unwrap()
    }

    /// The store's first rows: keys 0..FIRST, in chunks of 4096 rows.
    fn create(&self) {
        let copy = format!(
            "COPY (SELECT v AS k, concat('w', CAST(v % 997 AS VARCHAR)) AS s \
             FROM generate_series(0, {}) t(v)) TO '{}' STORED AS ZARR \
             OPTIONS ('chunk_rows' '4096'{})",
            FIRST - 1,
            self.location,
            self.storage_options()
        );
        let done = self.run(false, &[&copy]);
        assert!(done.status.success(), "{}", stderr(&done));
    }

    /// The storage options as `, 'key' 'value'` pairs of an OPTIONS list.
    fn storage_options(&self) -> String {
        self.args
            .chunks(2)
            .filter_map(|pair| pair.get(1)?.split_once('='))
            .map(|(k, v)| format!(", '{k}' '{v}'"))
            .collect()
    }

    /// Starts a writer appending keys `from..from + ROWS`.
    fn start_insert(&self, from: i64, lock_timeout: u64) -> Child {
        let set = format!("SET zarr.lock_timeout = '{lock_timeout}'");
        let insert = format!(
            "INSERT INTO t (k, s) SELECT v, concat('w', CAST(v % 997 AS VARCHAR)) \
             FROM generate_series({from}, {}) t(v)",
            from + ROWS - 1
        );
        self.command(true, &[&set, &insert])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

    /// `count(*)`, `count(k)`, `count(s)`, `sum(k)`, `count(DISTINCT k)` of the store.
    fn counts(&self) -> Result<[i64; 5], String> {
        let done = self.run(
            true,
            &[
                "SELECT count(*) AS n, count(k) AS nk, count(s) AS ns, sum(k) AS total, \
               count(DISTINCT k) AS d FROM t",
            ],
        );
        if !done.status.success() {
            return Err(stderr(&done));
        }
        let out = stdout(&done);
        let numbers: Vec<i64> = out
            .split(|c: char| !c.is_ascii_digit())
            .filter(|t| !t.is_empty())
            .map(|t| t.parse().unwrap())
            .collect();
        numbers
            .try_into()
            .map_err(|n| format!("not five numbers: {n:?} in {out}"))
    }
}

/// The sum of the keys `from..from + n`.
fn sum_of(from: i64, n: i64) -> i64 {
    (from..from + n).sum()
}

/// Four writers at once, readers in a loop meanwhile: every reported success is in the store
/// once, and each read is a whole table.
fn four_appenders(scheme: &str) {
    let place = Place::new(scheme, "shared.zarr");
    place.create();
    let starts: Vec<i64> = (1..=WRITERS).map(|w| w * 1_000_000).collect();
    let mut writers: Vec<Child> = starts
        .iter()
        .map(|&from| place.start_insert(from, 120))
        .collect();
    // Readers in a loop until every writer is done (bounded: 3 minutes).
    let deadline = Instant::now() + Duration::from_secs(180);
    let mut reads = 0;
    let mut results = vec![None; writers.len()];
    while results.iter().any(Option::is_none) && Instant::now() < deadline {
        match place.counts() {
            Ok([n, nk, ns, _, d]) => {
                assert!(
                    n == nk && n == ns && n == d,
                    "{scheme}: a torn read {n} {nk} {ns} {d}"
                );
                assert!(
                    n >= FIRST && (n - FIRST) % ROWS == 0,
                    "{scheme}: a read of {n} rows, not the old table or a grown one"
                );
                reads += 1;
            }
            Err(e) => panic!("{scheme}: a read during the appends failed: {e}"),
        }
        for (w, slot) in writers.iter_mut().zip(results.iter_mut()) {
            if slot.is_none() {
                *slot = w.try_wait().unwrap();
            }
        }
    }
    let mut expected = (FIRST, sum_of(0, FIRST));
    for (writer, (from, result)) in writers.into_iter().zip(starts.iter().zip(results)) {
        let out = writer.wait_with_output().unwrap();
        assert!(
            result.is_some_and(|r| r.success()),
            "{scheme}: writer {from} failed: {}",
            stderr(&out)
        );
        expected = (expected.0 + ROWS, expected.1 + sum_of(*from, ROWS));
    }
    let [n, nk, ns, total, d] = place.counts().unwrap();
    assert_eq!(
        (n, nk, ns, d),
        (expected.0, expected.0, expected.0, expected.0),
        "{scheme}"
    );
    assert_eq!(total, expected.1, "{scheme}: the keys' sum");
    assert!(reads > 0, "{scheme}: no read ran during the appends");
}

#[test]
fn four_processes_appending_to_a_local_store_keep_every_row() {
    four_appenders("file");
}

#[test]
fn four_processes_appending_to_s3_keep_every_row() {
    four_appenders("s3");
}

#[test]
fn four_processes_appending_to_gcs_keep_every_row() {
    four_appenders("gs");
}

#[test]
fn four_processes_appending_to_azure_keep_every_row() {
    four_appenders("az");
}

/// Waits (at most 30 s) until `child` says on standard error that it paused at `step`.
fn wait_for_pause(child: &mut Child, step: &str) {
    use std::io::{BufRead, BufReader};
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let wanted = format!("paused at {step}");
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if line.contains(&wanted) {
                let _ = tx.send(());
                return;
            }
        }
    });
    rx.recv_timeout(Duration::from_secs(30))
        .unwrap_or_else(|_| panic!("the writer never reached {step}"));
}

/// A writer killed while it holds the lock (or lease) at `step` of an INSERT or COPY.
fn kill_at(place: &Place, step: &str, sql: &str) {
    let mut child = place
        .command(false, &[sql])
        .env("DATAFUSION_ZARR_PAUSE_AT", step)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_pause(&mut child, step);
    child.kill().unwrap();
    child.wait().unwrap();
}

/// A writer killed holding the lock or lease: the next waits at most the lease's life, then
/// appends; the killed one's rows are not there.
fn a_killed_holder_does_not_block(scheme: &str) {
    let place = Place::new(scheme, "killed.zarr");
    place.create();
    let overwrite = format!(
        "COPY (SELECT 5 AS k, 'x' AS s) TO '{}' STORED AS ZARR OPTIONS ('mode' 'overwrite', \
         'lease_ttl' '2'{})",
        place.location,
        place.storage_options()
    );
    kill_at(&place, "overwrite:staged", &overwrite);
    let started = Instant::now();
    let writer = place.start_insert(1_000_000, 30);
    let out = writer.wait_with_output().unwrap();
    assert!(out.status.success(), "{scheme}: {}", stderr(&out));
    assert!(
        started.elapsed() < Duration::from_secs(25),
        "{scheme}: the next writer waited {:?}",
        started.elapsed()
    );
    let [n, _, _, total, d] = place.counts().unwrap();
    assert_eq!((n, d), (FIRST + ROWS, FIRST + ROWS), "{scheme}");
    assert_eq!(
        total,
        sum_of(0, FIRST) + sum_of(1_000_000, ROWS),
        "{scheme}"
    );
}

#[test]
fn a_killed_writer_does_not_block_the_next_on_a_local_store() {
    a_killed_holder_does_not_block("file");
}

#[test]
fn an_expired_lease_on_s3_does_not_block_the_next_writer() {
    a_killed_holder_does_not_block("s3");
}

#[test]
fn an_expired_lease_on_azure_does_not_block_the_next_writer() {
    a_killed_holder_does_not_block("az");
}

/// A live holder: `lock_timeout 0` fails at once naming it, and writes nothing; with time to
/// wait, the next writer succeeds after it.
fn a_live_holder(scheme: &str) {
    let place = Place::new(scheme, "held.zarr");
    place.create();
    let overwrite = format!(
        "COPY (SELECT 5 AS k, 'x' AS s) TO '{}' STORED AS ZARR OPTIONS ('mode' 'overwrite'{})",
        place.location,
        place.storage_options()
    );
    let mut holder = place
        .command(false, &[&overwrite])
        .env("DATAFUSION_ZARR_PAUSE_AT", "overwrite:staged")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_pause(&mut holder, "overwrite:staged");
    let refused = place.start_insert(1_000_000, 0).wait_with_output().unwrap();
    let e = stderr(&refused);
    assert!(
        !refused.status.success(),
        "{scheme}: the INSERT ran beside the holder"
    );
    assert!(
        e.contains("another writer holds it (process "),
        "{scheme}: {e}"
    );
    assert!(
        e.contains(&format!("since {}", chrono_today())),
        "{scheme}: {e}"
    );
    assert!(e.contains("nothing was written"), "{scheme}: {e}");
    let [n, ..] = place.counts().unwrap();
    assert_eq!(n, FIRST, "{scheme}: the refused INSERT wrote rows");
    holder.kill().unwrap();
    holder.wait().unwrap();
}

/// Today's date as the holder text writes it.
fn chrono_today() -> String {
    let out = Command::new("date")
        .args(["-u", "+%Y-%m-%d"])
        .output()
        .unwrap();
    stdout(&out).trim().to_string()
}

#[test]
fn lock_timeout_0_names_the_holder_of_a_local_store() {
    a_live_holder("file");
}

#[test]
fn lock_timeout_0_names_the_holder_of_an_s3_lease() {
    a_live_holder("s3");
}

/// SIGKILL at each step of a local overwrite: the target holds the old store or the new one,
/// never none; the next write proceeds and leaves no hidden directory.
#[test]
fn a_local_overwrite_killed_at_any_step_leaves_a_store() {
    for step in ["overwrite:staged", "overwrite:exchanged"] {
        let place = Place::new("file", "swap.zarr");
        place.create();
        let overwrite = format!(
            "COPY (SELECT 5 AS k, 'x' AS s) TO '{}' STORED AS ZARR OPTIONS ('mode' 'overwrite')",
            place.location
        );
        kill_at(&place, step, &overwrite);
        let [n, ..] = place
            .counts()
            .unwrap_or_else(|e| panic!("{step}: no store after the kill: {e}"));
        let expected = if step == "overwrite:staged" { FIRST } else { 1 };
        assert_eq!(n, expected, "{step}");
        let again = place.run(false, &[&overwrite]);
        assert!(again.status.success(), "{step}: {}", stderr(&again));
        assert_eq!(place.counts().unwrap()[0], 1, "{step}");
        let dir = Path::new(&place.location).parent().unwrap();
        let hidden: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().to_string())
            .filter(|n| n.starts_with(".swap.zarr.") && n != ".swap.zarr.lock")
            .collect();
        assert!(hidden.is_empty(), "{step}: left {hidden:?}");
    }
}

/// SIGKILL in the middle of a remote overwrite (the target's metadata removed, the new chunks
/// being copied over it): the next writer, once the lease has expired, puts the old store
/// back before anything else (a COPY without `mode 'overwrite'` then finds it and refuses);
/// an overwrite after that proceeds, and nothing hidden stays beside the store.
fn a_remote_overwrite_killed_midway(scheme: &str) {
    let place = Place::new(scheme, "swap.zarr");
    place.create();
    let copy = |mode: &str| {
        format!(
            "COPY (SELECT 5 AS k, 'x' AS s) TO '{}' STORED AS ZARR OPTIONS ('lease_ttl' '2'{mode}{})",
            place.location,
            place.storage_options()
        )
    };
    kill_at(&place, "overwrite:swapping", &copy(", 'mode' 'overwrite'"));
    let refused = place.run(false, &[&copy("")]);
    assert!(
        !refused.status.success(),
        "{scheme}: the COPY wrote over the store"
    );
    assert!(
        stderr(&refused).contains("a Zarr store is there"),
        "{scheme}: {}",
        stderr(&refused)
    );
    let [n, _, _, total, _] = place.counts().unwrap();
    assert_eq!(
        (n, total),
        (FIRST, sum_of(0, FIRST)),
        "{scheme}: the old store put back"
    );
    let again = place.run(false, &[&copy(", 'mode' 'overwrite'")]);
    assert!(again.status.success(), "{scheme}: {}", stderr(&again));
    assert_eq!(place.counts().unwrap()[0], 1, "{scheme}");
    let s = servers();
    let objects = zarr_test_support::servers::object_store_of(scheme, &s).unwrap();
    let parent = place.location.rsplit_once('/').unwrap().0;
    let parent = parent
        .split_once(&format!("{BUCKET}/"))
        .unwrap()
        .1
        .to_string();
    let hidden = tokio::runtime::Runtime::new().unwrap().block_on(async {
        use futures::TryStreamExt;
        let listed: Vec<_> = objects
            .list(Some(&parent.as_str().into()))
            .try_collect()
            .await
            .unwrap();
        listed
            .into_iter()
            .map(|m| m.location.to_string())
            .filter(|p| p.contains("/.swap.zarr.") && !p.ends_with("/.swap.zarr.lock"))
            .collect::<Vec<_>>()
    });
    assert!(hidden.is_empty(), "{scheme}: left {hidden:?}");
    // The lease stays, expired, counting the two overwrites (the killed one's, put back, and
    // the last), for readers to tell a replaced store.
    let lease = tokio::runtime::Runtime::new().unwrap().block_on(async {
        use object_store::ObjectStoreExt;
        let path = format!("{parent}/.swap.zarr.lock");
        objects
            .get(&path.as_str().into())
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap()
    });
    let lease: serde_json::Value = serde_json::from_slice(&lease).unwrap();
    assert_eq!(lease["epoch"], 2, "{scheme}: {lease}");
    assert_eq!(lease["replacing"], false, "{scheme}: {lease}");
}

#[test]
fn an_s3_overwrite_killed_midway_is_put_back_by_the_next_writer() {
    a_remote_overwrite_killed_midway("s3");
}

#[test]
fn an_azure_overwrite_killed_midway_is_put_back_by_the_next_writer() {
    a_remote_overwrite_killed_midway("az");
}

/// What a read during overwrites may give: store A's rows, store B's, or the documented error
/// that the store was (being) replaced; never A's shape with B's chunks.
fn assert_whole_or_refused(
    read: Result<[i64; 5], String>,
    a: (i64, i64),
    b: (i64, i64),
    what: &str,
) -> bool {
    match read {
        Ok([n, _, _, total, _]) => {
            assert!(
                (n, total) == a || (n, total) == b,
                "{what}: a read of {n} rows summing to {total}, neither store"
            );
            true
        }
        Err(e) => {
            assert!(
                e.contains("replaced the store while it was read")
                    || e.contains("it is being replaced by another writer"),
                "{what}: a read failed otherwise: {e}"
            );
            false
        }
    }
}

/// Readers during overwrites, each read slowed to 300 ms a request (local: the CLI's test-only
/// slow store; S3: a proxy in front of moto) so that an overwrite lands between a reader's
/// metadata and its chunks: every read is one store whole, or the documented error.
fn readers_during_overwrites(scheme: &str) {
    let place = Place::new(scheme, "replaced.zarr");
    place.create();
    let a = (FIRST, sum_of(0, FIRST));
    let b = (2 * FIRST, sum_of(1_000_000, 2 * FIRST));
    let overwrite = |from: i64, n: i64| {
        format!(
            "COPY (SELECT v AS k, concat('w', CAST(v % 997 AS VARCHAR)) AS s \
             FROM generate_series({from}, {}) t(v)) TO '{}' STORED AS ZARR \
             OPTIONS ('chunk_rows' '4096', 'mode' 'overwrite'{})",
            from + n - 1,
            place.location,
            place.storage_options()
        )
    };
    let (mut whole, mut refused) = (0, 0);
    for round in 0..4 {
        let (from, n) = if round % 2 == 0 {
            (1_000_000, 2 * FIRST)
        } else {
            (0, FIRST)
        };
        let sql = "SELECT count(*) AS n, count(k) AS nk, count(s) AS ns, sum(k) AS total, \
                   count(DISTINCT k) AS d FROM t";
        let mut reader = place.command(true, &[sql]);
        let slow = Proxy::start(servers().s3);
        if scheme == "file" {
            reader.env("ZARR_SQL_TEST_READ_DELAY_MS", "300");
        } else {
            // The reader's requests go through a proxy adding 300 ms to each.
            slow.set_delay(Duration::from_millis(300));
            reader.args([
                "-o",
                &format!("aws.endpoint=http://127.0.0.1:{}", slow.port),
            ]);
        }
        let reader = reader
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(if scheme == "file" {
            700
        } else {
            50
        }));
        let done = place.run(false, &[&overwrite(from, n)]);
        assert!(done.status.success(), "{scheme}: {}", stderr(&done));
        let out = reader.wait_with_output().unwrap();
        let read = match out.status.success() {
            true => Ok(parse_counts(&stdout(&out))),
            false => Err(stderr(&out)),
        };
        match assert_whole_or_refused(read, a, b, scheme) {
            true => whole += 1,
            false => refused += 1,
        }
        // And a read after it is the new store, whole.
        let expected = if round % 2 == 0 { b } else { a };
        let [n, _, _, total, _] = place.counts().unwrap();
        assert_eq!((n, total), expected, "{scheme}: after overwrite {round}");
    }
    eprintln!("{scheme}: {whole} reads whole, {refused} refused as replaced");
}

/// The five numbers of a `counts` query's output.
fn parse_counts(out: &str) -> [i64; 5] {
    let numbers: Vec<i64> = out
        .split(|c: char| !c.is_ascii_digit())
        .filter(|t| !t.is_empty())
        .map(|t| t.parse().unwrap())
        .collect();
    numbers.try_into().unwrap()
}

#[test]
fn readers_during_local_overwrites_see_one_store_or_an_error() {
    readers_during_overwrites("file");
}

#[test]
fn readers_during_s3_overwrites_see_one_store_or_an_error() {
    readers_during_overwrites("s3");
}

#[test]
fn an_expired_lease_on_gcs_does_not_block_the_next_writer() {
    a_killed_holder_does_not_block("gs");
}

#[test]
fn a_gcs_overwrite_killed_midway_is_put_back_by_the_next_writer() {
    a_remote_overwrite_killed_midway("gs");
}

#[test]
fn lock_timeout_0_names_the_holder_of_a_gcs_lease() {
    a_live_holder("gs");
}

#[test]
fn lock_timeout_0_names_the_holder_of_an_azure_lease() {
    a_live_holder("az");
}
