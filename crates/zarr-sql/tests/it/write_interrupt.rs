//! Ctrl-C (SIGINT) and SIGKILL during `zarr-sql -c "COPY (…) TO 'out.zarr' STORED AS ZARR"`:
//! the process ends with 130 on SIGINT, a store that was at the target is as it was (every
//! file, byte for byte, and its rows), a new target gets no store, and no hidden staging
//! directory (`.out.zarr.<pid>-<n>.tmp`) is left; what a SIGKILL leaves, the next COPY removes.
//!
//! The COPY reads case 17 (200,000 strings in 20 chunks) through the test-only slow store
//! (`ZARR_SQL_TEST_READ_DELAY_MS`, one read at a time): 21 reads of 400 ms keep it running
//! for over 8 s whatever the machine, and the signal comes once its staging directory holds
//! written chunks.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;

/// The COPY of case 17's strings (with their row numbers) to `target`, in chunks of 5,000 rows.
fn slow_copy(target: &Path, mode: &str) -> String {
    format!(
        "COPY (SELECT dim_0 AS i, value FROM read_zarr('{}')) TO '{}' STORED AS ZARR \
         OPTIONS ('chunk_rows' '5000'{mode})",
        corpus_store("17_large_200k_zstd"),
        target.display()
    )
}

/// Starts `zarr-sql -q -p 1 -c sql` reading through the slow store.
fn start(sql: &str) -> Child {
    Command::new(env!("CARGO_BIN_EXE_zarr-sql"))
        .args(["-q", "-p", "1", "-c", sql])
        .current_dir(root())
        .env("ZARR_SQL_TEST_READ_DELAY_MS", "400")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// The hidden staging directories of writes to `name` in `dir`.
fn staging(dir: &Path, name: &str) -> Vec<PathBuf> {
    let prefix = format!(".{name}.");
    let lock = format!(".{name}.lock");
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        // The store's lock file, which stays beside it (empty between writes).
        .filter(|e| e.file_name().to_string_lossy() != lock)
        .map(|e| e.path())
        .collect();
    out.sort();
    out
}

/// Every file below `dir` and its bytes.
fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    servers::files(dir)
        .into_iter()
        .map(|(key, path)| (key, std::fs::read(path).unwrap()))
        .collect()
}

/// Waits (at most 20 s) until a staging directory of `name` in `dir` holds at least `files`
/// files: the COPY is writing.
fn wait_for_staged_files(dir: &Path, name: &str, files: usize) -> bool {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        let staged: usize = staging(dir, name)
            .iter()
            .map(|d| servers::files(d).len())
            .sum();
        if staged >= files {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

fn interrupt(child: &Child) {
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

/// The rows of a store as zarr-sql prints them (CSV, in row order).
fn rows_of(store: &Path) -> String {
    let o = zarr_sql(&[
        "--format",
        "csv",
        "-q",
        "-c",
        &format!(
            "SELECT index, n, s FROM read_zarr('{}') ORDER BY index",
            store.display()
        ),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    stdout(&o)
}

/// A small store at `store`: 12 rows, chunks of 5.
fn write_old_store(store: &Path) {
    let o = zarr_sql(&[
        "-q",
        "-c",
        &format!(
            "COPY (SELECT v AS n, 'vieux ' || CAST(v AS VARCHAR) || ' 🦀' AS s \
             FROM generate_series(0, 11) t(v)) TO '{}' STORED AS ZARR OPTIONS ('chunk_rows' '5')",
            store.display()
        ),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn ctrl_c_during_an_overwrite_keeps_the_old_store_and_leaves_no_staging_directory() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("out.zarr");
    write_old_store(&store);
    let before = snapshot(&store);
    let rows_before = rows_of(&store);
    assert!(rows_before.contains("vieux 11 🦀"), "{rows_before}");

    let start_time = Instant::now();
    let child = start(&slow_copy(&store, ", 'mode' 'overwrite'"));
    // Chunks of the new store written (each array's first chunk at least) before the signal.
    let writing = wait_for_staged_files(dir.path(), "out.zarr", 2);
    interrupt(&child);
    let o = child.wait_with_output().unwrap();
    assert!(writing, "the COPY never wrote a chunk: {}", stderr(&o));
    assert_eq!(o.status.code(), Some(130), "{}", stderr(&o));
    assert!(
        start_time.elapsed() < Duration::from_secs(8),
        "the COPY was not cut short: {:?}",
        start_time.elapsed()
    );
    assert_eq!(staging(dir.path(), "out.zarr"), Vec::<PathBuf>::new());
    assert_eq!(snapshot(&store), before, "the old store changed");
    assert_eq!(rows_of(&store), rows_before);
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .collect();
    names.sort();
    // The store, and its lock file, empty: the write let go of it.
    assert_eq!(names, [".out.zarr.lock", "out.zarr"]);
    assert_eq!(
        std::fs::read(dir.path().join(".out.zarr.lock")).unwrap(),
        b""
    );
}

#[test]
fn ctrl_c_during_a_copy_to_a_new_location_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("new.zarr");
    let child = start(&slow_copy(&store, ""));
    let writing = wait_for_staged_files(dir.path(), "new.zarr", 2);
    interrupt(&child);
    let o = child.wait_with_output().unwrap();
    assert!(writing, "the COPY never wrote a chunk: {}", stderr(&o));
    assert_eq!(o.status.code(), Some(130), "{}", stderr(&o));
    assert!(!store.exists());
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().collect();
    assert!(left.is_empty(), "{left:?}");
}

/// SIGKILL leaves the staging directory (nothing can remove it), the lock file (which the
/// system released with the process) and the old store; the next COPY to the same target
/// takes the lock at once, removes the orphan and replaces the store.
#[test]
fn what_a_killed_copy_leaves_the_next_copy_removes() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("out.zarr");
    write_old_store(&store);
    let before = snapshot(&store);
    let mut child = start(&slow_copy(&store, ", 'mode' 'overwrite'"));
    let writing = wait_for_staged_files(dir.path(), "out.zarr", 2);
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(writing, "the COPY never wrote a chunk");
    let lock = dir.path().join(".out.zarr.lock");
    let orphans = staging(dir.path(), "out.zarr");
    assert_eq!(orphans.len(), 1, "{orphans:?}");
    // The system let go of the killed writer's lock; its name stays in the file, which tells
    // the next writer to look for what it left.
    let file = std::fs::File::open(&lock).unwrap();
    assert!(
        file.try_lock().is_ok(),
        "the killed writer's lock is still held"
    );
    drop(file);
    let named = std::fs::read_to_string(&lock).unwrap();
    assert!(named.starts_with("process "), "{named:?}");
    assert_eq!(snapshot(&store), before, "the old store changed");

    let o = zarr_sql(&[
        "-q",
        "-c",
        &format!(
            "COPY (SELECT v AS n, 'neu ' || CAST(v AS VARCHAR) AS s FROM generate_series(0, 2) \
             t(v)) TO '{}' STORED AS ZARR OPTIONS ('mode' 'overwrite')",
            store.display()
        ),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(staging(dir.path(), "out.zarr"), Vec::<PathBuf>::new());
    assert_eq!(
        rows_of(&store),
        "index,n,s\n0,0,neu 0\n1,1,neu 1\n2,2,neu 2\n"
    );
}

/// Ctrl-C while chunks are being written (the moment the first one lands in the staging
/// directory), many times over: never a staging directory left.
#[test]
fn ctrl_c_while_chunks_are_written_never_leaves_a_staging_directory() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("out.zarr");
    let sql = format!(
        "COPY (SELECT dim_0 AS i, value, value || value AS v2, upper(value) AS v3 \
         FROM read_zarr('{}')) TO '{}' STORED AS ZARR OPTIONS ('chunk_rows' '2000')",
        corpus_store("17_large_200k_zstd"),
        store.display()
    );
    let mut left = Vec::new();
    for attempt in 0..40 {
        let child = Command::new(env!("CARGO_BIN_EXE_zarr-sql"))
            .args(["-q", "-c", &sql])
            .current_dir(root())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // A file in the staging directory: chunks are being written. (Bounded: 10 s.)
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline
            && staging(dir.path(), "out.zarr")
                .iter()
                .all(|d| servers::files(d).is_empty())
        {
            std::thread::sleep(Duration::from_micros(200));
        }
        interrupt(&child);
        let o = child.wait_with_output().unwrap();
        let orphans = staging(dir.path(), "out.zarr");
        if !orphans.is_empty() {
            let files: Vec<String> = orphans
                .iter()
                .flat_map(|d| servers::files(d).into_iter().map(|(k, _)| k))
                .collect();
            left.push(format!(
                "attempt {attempt} (exit {:?}): {files:?}",
                o.status.code()
            ));
            for orphan in orphans {
                let _ = std::fs::remove_dir_all(orphan);
            }
        }
        let _ = std::fs::remove_dir_all(&store);
    }
    assert!(left.is_empty(), "{left:#?}");
}
