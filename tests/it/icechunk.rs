//! Icechunk repositories written by the icechunk Python package (2.3.0, spec 2; 1.1.21, spec
//! 1; `tests/data/icechunk/make_icechunk_fixtures.py`): every snapshot of every branch read
//! through SQL equals what icechunk + zarr-python read at it (`*.expected.json`), branches, tags
//! and times resolve to the snapshots icechunk names, the history tables equal
//! `repo.ancestry()` and the refs, the same repository reads the same on the S3, GCS, Azure and
//! HTTP test servers,
//! pruning and UTF-32 filters are those of a plain store, and broken repositories are errors
//! that name what is wrong.

use std::path::{Path, PathBuf};

use datafusion::arrow::util::pretty::pretty_format_batches;
use datafusion_zarr::{ZarrOptions, ZarrTable};
use serde_json::Value;
use zarr_test_support::servers::{location, options, servers};
use zarr_test_support::{
    column, context, context_with_partitions, copy_dir, query, root, same, to_json,
};

fn repository(name: &str) -> PathBuf {
    root().join("tests/data/icechunk").join(name)
}

fn expected(name: &str) -> Value {
    let path = repository(&format!("{name}.expected.json"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// `options` as `read_zarr`'s trailing arguments.
fn arguments(options: &[(&str, &str)]) -> String {
    options
        .iter()
        .map(|(k, v)| format!(", '{k}', '{v}'"))
        .collect()
}

/// The values of the array `path` of the repository at `location` at the version `version`
/// names, in row order, as JSON (NULL for a float's fill value NaN, as expected.json has it).
async fn read(
    location: &str,
    path: &str,
    version: &[(&str, &str)],
    extra: &[(String, String)],
) -> Result<Vec<Value>, String> {
    // One partition: the rows in the order they are stored.
    let ctx = context_with_partitions(1);
    let mut args = arguments(version);
    for (k, v) in extra {
        args.push_str(&format!(", '{k}', '{v}'"));
    }
    let column_name = path.rsplit('/').next().unwrap();
    let sql = format!("SELECT \"{column_name}\" FROM read_zarr('{location}', '{path}'{args})");
    let batches = query(&ctx, &sql).await.map_err(|e| e.to_string())?;
    Ok(to_json(column(&batches, column_name).as_ref()))
}

fn assert_same(got: &[Value], want: &[Value], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: row count");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(same(g, w), "{what}, row {i}: got {g}, want {w}");
    }
}

/// Every snapshot of every branch, every array in it, against expected.json.
async fn every_snapshot_reads_as_icechunk_reads_it(
    name: &str,
    location: &str,
    extra: &[(String, String)],
) {
    let expected = expected(name);
    let contents = expected["contents"].as_object().unwrap();
    let mut compared = 0;
    for (snapshot, arrays) in contents {
        let Some(arrays) = arrays.as_object() else {
            // The repository's first snapshot holds no group: an error, not an empty table.
            let e = read(location, "", &[("snapshot", snapshot)], extra)
                .await
                .unwrap_err();
            assert!(e.contains(snapshot), "{e}");
            continue;
        };
        for (path, values) in arrays {
            let got = read(location, path, &[("snapshot", snapshot)], extra)
                .await
                .unwrap_or_else(|e| panic!("{snapshot} {path}: {e}"));
            assert_same(
                &got,
                values.as_array().unwrap(),
                &format!("{name} {snapshot} {path}"),
            );
            compared += 1;
        }
    }
    assert!(compared >= 2, "{compared} arrays compared");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_snapshot_of_a_spec_2_repository_reads_as_icechunk_2_3_reads_it() {
    let location = repository("strings.icechunk");
    every_snapshot_reads_as_icechunk_reads_it("strings", &location.display().to_string(), &[])
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_snapshot_of_a_spec_1_repository_reads_as_icechunk_1_reads_it() {
    let location = repository("spec1.icechunk");
    every_snapshot_reads_as_icechunk_reads_it("spec1", &location.display().to_string(), &[]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_repository_on_every_remote_store() {
    let s = servers();
    let local = read(
        &repository("strings.icechunk").display().to_string(),
        "labels",
        &[],
        &[],
    )
    .await
    .unwrap();
    for scheme in ["s3", "gs", "az", "http"] {
        let location = location(scheme, &s, "icechunk/strings.icechunk");
        let extra = options(scheme, &s);
        if scheme == "s3" {
            every_snapshot_reads_as_icechunk_reads_it("strings", &location, &extra).await;
        }
        let main = read(&location, "labels", &[], &extra)
            .await
            .unwrap_or_else(|e| panic!("{scheme}: {e}"));
        assert_eq!(main, local, "{scheme}");
        let dev = read(&location, "labels", &[("branch", "dev")], &extra)
            .await
            .unwrap_or_else(|e| panic!("{scheme}: {e}"));
        assert_eq!(dev[7], "dev-only value", "{scheme}");
    }
}

/// The snapshot `version` names, as the opened table shows it.
async fn snapshot_read(name: &str, version: &[(&str, &str)]) -> Result<(String, String), String> {
    let mut options =
        ZarrOptions::from_pairs(version.iter().copied()).map_err(|e| e.to_string())?;
    options.path = "labels".into();
    let ctx = context();
    let location = repository(name);
    let table = ZarrTable::open(&ctx.runtime_env(), &location.display().to_string(), options)
        .await
        .map_err(|e| e.to_string())?;
    let id = table.options().snapshot.clone().unwrap();
    Ok((id, table.location().to_string()))
}

fn reference(expected: &Value, kind: &str, name: &str) -> String {
    expected["refs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["kind"] == kind && r["name"] == name)
        .unwrap_or_else(|| panic!("{kind} {name}"))["snapshot"]
        .as_str()
        .unwrap()
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn branches_tags_and_times_resolve_to_the_snapshots_icechunk_names() {
    for name in ["strings", "spec1"] {
        let expected = expected(name);
        let main = reference(&expected, "branch", "main");
        let (id, shown) = snapshot_read(&format!("{name}.icechunk"), &[])
            .await
            .unwrap();
        assert_eq!(id, main, "{name}: no option reads the tip of main");
        assert!(shown.ends_with(&format!(".icechunk@{main}")), "{shown}");
        for (kind, option) in [("branch", "branch"), ("tag", "tag")] {
            for r in expected["refs"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|r| r["kind"] == kind)
            {
                let ref_name = r["name"].as_str().unwrap();
                let (id, _) = snapshot_read(&format!("{name}.icechunk"), &[(option, ref_name)])
                    .await
                    .unwrap();
                assert_eq!(
                    id,
                    r["snapshot"].as_str().unwrap(),
                    "{name} {kind} {ref_name}"
                );
            }
        }
        // as_of: at a snapshot's own time, that snapshot; a microsecond before, its parent.
        let history = expected["ancestry"]["main"].as_array().unwrap();
        for pair in history.windows(2) {
            let [snapshot, parent] = pair else {
                unreachable!()
            };
            let micros = snapshot["written_at_micros"].as_i64().unwrap();
            let at = |m: i64| {
                let secs = m.div_euclid(1_000_000);
                let frac = m.rem_euclid(1_000_000);
                let t = chrono::DateTime::from_timestamp(secs, (frac * 1000) as u32).unwrap();
                t.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()
            };
            let (id, _) = snapshot_read(&format!("{name}.icechunk"), &[("as_of", &at(micros))])
                .await
                .unwrap();
            assert_eq!(id, snapshot["id"].as_str().unwrap(), "as_of {}", at(micros));
            let before =
                snapshot_read(&format!("{name}.icechunk"), &[("as_of", &at(micros - 1))]).await;
            let parent_id = parent["id"].as_str().unwrap();
            match before {
                Ok((id, _)) => assert_eq!(id, parent_id, "as_of {}", at(micros - 1)),
                // The repository's first snapshot holds no array: the error names it.
                Err(e) => assert!(e.contains(&format!("@{parent_id}/labels")), "{e}"),
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_history_tables_equal_ancestry_and_refs() {
    for name in ["strings", "spec1"] {
        let expected = expected(name);
        let location = repository(&format!("{name}.icechunk"))
            .display()
            .to_string();
        let ctx = context();
        for (branch, history) in expected["ancestry"].as_object().unwrap() {
            let sql = format!(
                "SELECT id, parent_id, CAST(written_at AS BIGINT) AS micros, message, metadata \
                 FROM icechunk_snapshots('{location}', '{branch}')"
            );
            let batches = query(&ctx, &sql).await.unwrap();
            let ids = to_json(column(&batches, "id").as_ref());
            let parents = to_json(column(&batches, "parent_id").as_ref());
            let micros = to_json(column(&batches, "micros").as_ref());
            let messages = to_json(column(&batches, "message").as_ref());
            let metadata = to_json(column(&batches, "metadata").as_ref());
            let history = history.as_array().unwrap();
            assert_eq!(ids.len(), history.len(), "{name} {branch}");
            for (i, want) in history.iter().enumerate() {
                assert_eq!(ids[i], want["id"], "{name} {branch} {i}");
                assert_eq!(parents[i], want["parent_id"], "{name} {branch} {i}");
                assert!(
                    same(&micros[i], &want["written_at_micros"]),
                    "{name} {branch} {i}: {} {}",
                    micros[i],
                    want["written_at_micros"]
                );
                assert_eq!(messages[i], want["message"], "{name} {branch} {i}");
                let parsed: Value = serde_json::from_str(metadata[i].as_str().unwrap()).unwrap();
                assert_eq!(parsed, want["metadata"], "{name} {branch} {i}");
            }
        }
        // The default branch is main.
        let batches = query(
            &ctx,
            &format!("SELECT id FROM icechunk_snapshots('{location}')"),
        )
        .await
        .unwrap();
        let main: Vec<Value> = expected["ancestry"]["main"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["id"].clone())
            .collect();
        assert_eq!(to_json(column(&batches, "id").as_ref()), main);
        let batches = query(
            &ctx,
            &format!(
                "SELECT kind, name, snapshot FROM icechunk_refs('{location}') ORDER BY kind, name"
            ),
        )
        .await
        .unwrap();
        let got: Vec<Value> = (0..batches.iter().map(|b| b.num_rows()).sum::<usize>())
            .map(|i| {
                serde_json::json!({
                    "kind": to_json(column(&batches, "kind").as_ref())[i],
                    "name": to_json(column(&batches, "name").as_ref())[i],
                    "snapshot": to_json(column(&batches, "snapshot").as_ref())[i],
                })
            })
            .collect();
        assert_eq!(Value::Array(got), expected["refs"], "{name}");
    }
}

/// The two-step workflow of the docs: find a snapshot by its message, then read it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_found_by_its_message_is_read() {
    let location = repository("strings.icechunk").display().to_string();
    let ctx = context();
    let batches = query(
        &ctx,
        &format!("SELECT id FROM icechunk_snapshots('{location}') WHERE message LIKE 'labels%'"),
    )
    .await
    .unwrap();
    let id = to_json(column(&batches, "id").as_ref())[0]
        .as_str()
        .unwrap()
        .to_string();
    let got = read(&location, "labels", &[("snapshot", &id)], &[])
        .await
        .unwrap();
    assert_eq!(got.len(), 3000, "the first commit's 3000 labels");
}

/// The scan is a plain store's: the same chunks pruned and UTF-32 filters on a repository as
/// on the same array copied to a plain store.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pruning_and_pushdown_as_on_a_plain_store() {
    let location = repository("strings.icechunk").display().to_string();
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("labels.zarr");
    let ctx = context();
    query(
        &ctx,
        &format!(
            "COPY (SELECT labels FROM read_zarr('{location}', 'labels') ORDER BY \"row\") TO '{}' \
             STORED AS ZARR OPTIONS ('dimension' 'row', 'chunk_rows' '1000')",
            plain.display()
        ),
    )
    .await
    .unwrap();
    let filter = "WHERE \"row\" >= 3000 AND labels LIKE '%ö%'";
    let analyze = |from: String| {
        let ctx = context();
        async move {
            let batches = query(
                &ctx,
                &format!("EXPLAIN ANALYZE SELECT labels FROM {from} {filter}"),
            )
            .await
            .unwrap();
            pretty_format_batches(&batches).unwrap().to_string()
        }
    };
    let on_repository = analyze(format!("read_zarr('{location}', 'labels')")).await;
    let on_plain = analyze(format!("read_zarr('{}')", plain.display())).await;
    let metric = |plan: &str, key: &str| -> String {
        let at = plan.find(key).unwrap_or_else(|| panic!("{key} in {plan}"));
        plan[at..].split([',', ']']).next().unwrap().to_string()
    };
    for key in ["chunks_pruned=", "utf32_filters="] {
        assert_eq!(
            metric(&on_repository, key),
            metric(&on_plain, key),
            "{on_repository}\n{on_plain}"
        );
    }
    assert!(
        metric(&on_repository, "chunks_pruned=").ends_with('3'),
        "{on_repository}"
    );
    let rows = |plan: &str| metric(plan, "output_rows=");
    assert_eq!(rows(&on_repository), rows(&on_plain));
}

/// A copy of `name` in a temporary directory, for breaking.
fn copy(name: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let to = dir.path().join(name);
    copy_dir(&repository(name), &to);
    (dir, to)
}

async fn error_of(location: &Path, path: &str, version: &[(&str, &str)]) -> String {
    read(&location.display().to_string(), path, version, &[])
        .await
        .expect_err("an error")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn versions_that_do_not_exist_are_errors_naming_them() {
    let repo = repository("strings.icechunk");
    let e = error_of(&repo, "labels", &[("branch", "nope")]).await;
    assert!(
        e.contains("branch 'nope'") && e.contains("dev, main"),
        "{e}"
    );
    let e = error_of(&repo, "labels", &[("tag", "v9")]).await;
    assert!(e.contains("tag 'v9'") && e.contains("v1"), "{e}");
    let e = error_of(&repo, "labels", &[("snapshot", "0000000000000000000G")]).await;
    assert!(e.contains("0000000000000000000G"), "{e}");
    let e = error_of(&repo, "labels", &[("snapshot", "not-an-id")]).await;
    assert!(e.contains("not an Icechunk snapshot id"), "{e}");
    let e = error_of(&repo, "labels", &[("tag", "v1"), ("branch", "dev")]).await;
    assert!(e.contains("branch and tag"), "{e}");
    let e = error_of(&repo, "labels", &[("as_of", "1999-01-01")]).await;
    assert!(e.contains("branch 'main' as of 1999-01-01"), "{e}");
    let e = error_of(&repo, "labels", &[("as_of", "yesterday")]).await;
    assert!(e.contains("not a timestamp"), "{e}");
    let plain = root().join(zarr_test_support::corpus_store(
        "00_zarr_python_defaults_U7",
    ));
    let e = error_of(&plain, "", &[("branch", "main")]).await;
    assert!(e.contains("not an Icechunk repository"), "{e}");
}

/// The files of `dir/sub` (a repository's `snapshots`, `manifests` or `chunks`).
fn files_in(dir: &Path, sub: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir.join(sub))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repository_of_a_newer_spec_version_is_refused() {
    let (_dir, repo) = copy("strings.icechunk");
    let file = repo.join("repo");
    let mut bytes = std::fs::read(&file).unwrap();
    bytes[36] = 3;
    std::fs::write(&file, bytes).unwrap();
    let e = error_of(&repo, "labels", &[]).await;
    assert!(
        e.contains("spec version is 3") && e.contains("strings.icechunk"),
        "{e}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn corrupt_repository_files_are_errors() {
    // Each of the repository's own files cut in half, or its body overwritten: an error that
    // names the repository, never a panic or a silent empty table.
    for sub in ["snapshots", "manifests"] {
        for damage in ["cut", "scrambled"] {
            let (_dir, repo) = copy("strings.icechunk");
            for file in files_in(&repo, sub) {
                let mut bytes = std::fs::read(&file).unwrap();
                if damage == "cut" {
                    bytes.truncate(bytes.len() / 2);
                } else {
                    for b in bytes.iter_mut().skip(39) {
                        *b = b.wrapping_mul(31).wrapping_add(7);
                    }
                }
                std::fs::write(&file, bytes).unwrap();
            }
            let e = error_of(&repo, "labels", &[]).await;
            assert!(e.contains("strings.icechunk"), "{sub} {damage}: {e}");
        }
    }
    // The `repo` file cut short.
    let (_dir, repo) = copy("strings.icechunk");
    let file = repo.join("repo");
    let bytes = std::fs::read(&file).unwrap();
    std::fs::write(&file, &bytes[..60]).unwrap();
    let e = error_of(&repo, "labels", &[]).await;
    assert!(e.contains("strings.icechunk"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_that_decompresses_past_the_limit_is_refused() {
    // Each snapshot (or manifest) replaced by its header and 2 MiB of zeros compressed to
    // about a hundred bytes, padded to the file's size with a skippable zstd frame (the
    // snapshot gives each manifest's size): icechunk would decompress it whole; the limit
    // refuses it first.
    let bomb = zstd::encode_all(&vec![0u8; 2 << 20][..], 19).unwrap();
    for (sub, limit) in [
        ("snapshots", "max_metadata_bytes"),
        ("manifests", "max_chunk_bytes"),
    ] {
        let (_dir, repo) = copy("strings.icechunk");
        for file in files_in(&repo, sub) {
            let mut bytes = std::fs::read(&file).unwrap();
            let size = bytes.len();
            bytes.truncate(39);
            bytes.extend_from_slice(&bomb);
            let padding = size
                .checked_sub(bytes.len() + 8)
                .expect("room for the padding");
            bytes.extend_from_slice(&0x184D_2A50u32.to_le_bytes());
            bytes.extend_from_slice(&(padding as u32).to_le_bytes());
            bytes.resize(size, 0);
            std::fs::write(&file, bytes).unwrap();
        }
        let e = read(
            &repo.display().to_string(),
            "labels",
            &[],
            &[(limit.into(), "1000000".into())],
        )
        .await
        .unwrap_err();
        assert!(
            e.contains("strings.icechunk") && e.contains("decompresses to more than 1000000"),
            "{sub}: {e}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chunk_object_shorter_than_its_manifest_says_is_an_error_naming_the_chunk() {
    let (_dir, repo) = copy("strings.icechunk");
    for file in files_in(&repo, "chunks") {
        let bytes = std::fs::read(&file).unwrap();
        std::fs::write(&file, &bytes[..bytes.len() / 2]).unwrap();
    }
    let e = error_of(&repo, "labels", &[]).await;
    assert!(
        e.contains("labels/c/0") && e.contains("manifest says"),
        "{e}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chunk_larger_than_the_limit_is_refused() {
    let repo = repository("strings.icechunk");
    let e = read(
        &repo.display().to_string(),
        "labels",
        &[],
        &[("max_chunk_bytes".into(), "1000".into())],
    )
    .await
    .unwrap_err();
    assert!(e.contains("labels") && e.contains("max_chunk_bytes"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inspect_and_describe_name_the_snapshot() {
    let repo = repository("strings.icechunk").display().to_string();
    let expected = expected("strings");
    let dev = reference(&expected, "branch", "dev");
    let options = ZarrOptions::from_pairs([("branch", "dev")]).unwrap();
    let tree = datafusion_zarr::inspect(
        &datafusion::execution::runtime_env::RuntimeEnv::default(),
        &repo,
        &options,
    )
    .await
    .unwrap();
    assert!(
        tree["store"]
            .as_str()
            .unwrap()
            .ends_with(&format!("@{dev}")),
        "{tree}"
    );
    let names: Vec<&str> = tree["children"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["path"].as_str())
        .collect();
    for name in ["labels", "codes", "sharded", "weather"] {
        assert!(names.contains(&name), "{names:?}");
    }
}
