//! Broken chunks, shards and stores: a clear error naming the array, the chunk and the rule,
//! never a panic. The stores are made by `tests/data/malformed/make_malformed.py` (see its
//! README); metadata cases live in `tests/metadata.rs`.

use zarr_test_support::*;

fn malformed(name: &str) -> String {
    root()
        .join("tests/data/malformed")
        .join(name)
        .display()
        .to_string()
}

async fn error_of(sql: &str) -> String {
    let ctx = context();
    match ctx.sql(sql).await {
        Ok(df) => match df.collect().await {
            Ok(_) => panic!("{sql} should fail"),
            Err(e) => e.to_string(),
        },
        Err(e) => e.to_string(),
    }
}

async fn read_error(store: &str) -> String {
    let e = error_of(&format!("SELECT * FROM read_zarr('{}')", malformed(store))).await;
    assert!(e.contains(store), "{store}: the error names the array: {e}");
    e
}

macro_rules! case {
    ($name:ident, $store:literal, $($needle:literal),+) => {
        #[tokio::test]
        async fn $name() {
            let e = read_error($store).await;
            $(assert!(e.contains($needle), "{}: expected {:?} in: {e}", $store, $needle);)+
        }
    };
}

case!(
    gzip_truncated,
    "gzip_truncated.zarr",
    "chunk c/0",
    "cannot decode"
);
case!(
    zstd_truncated,
    "zstd_truncated.zarr",
    "chunk c/0",
    "cannot decode"
);
case!(
    blosc_truncated,
    "blosc_truncated.zarr",
    "chunk c/0",
    "blosc header declares"
);
case!(
    chunk_too_short,
    "chunk_too_short.zarr",
    "chunk c/0",
    "cannot decode"
);
case!(
    chunk_too_long,
    "chunk_too_long.zarr",
    "chunk c/0",
    "cannot decode"
);
case!(
    crc32c_mismatch,
    "crc32c_mismatch.zarr",
    "chunk c/0",
    "cannot decode"
);
case!(
    shard_truncated,
    "shard_truncated.zarr",
    "chunk c/0",
    "truncated shard"
);
case!(
    shard_past_end,
    "shard_past_end.zarr",
    "chunk c/0",
    "lie outside the shard's data"
);
case!(
    shard_offset_overflow,
    "shard_offset_overflow.zarr",
    "chunk c/0",
    "overflows u64"
);
case!(
    shard_overlaps_index,
    "shard_overlaps_index.zarr",
    "chunk c/0",
    "lie outside the shard's data"
);
case!(
    shard_bad_checksum,
    "shard_bad_checksum.zarr",
    "chunk c/0",
    "shard index checksum mismatch"
);

#[tokio::test]
async fn a_chunk_key_that_is_a_directory() {
    let dir = tempfile::tempdir().unwrap();
    let src = corpus().join("01_1d_le_uncompressed/data.zarr");
    std::fs::copy(src.join("zarr.json"), dir.path().join("zarr.json")).unwrap();
    std::fs::create_dir_all(dir.path().join("c/0")).unwrap();
    let e = error_of(&format!(
        "SELECT * FROM read_zarr('{}')",
        dir.path().display()
    ))
    .await;
    assert!(e.contains("c/0"), "{e}");
    assert!(
        e.contains("is a directory where a chunk or metadata object should be"),
        "{e}"
    );
}

/// A FIFO or a device where a chunk or `zarr.json` should be is refused before it is opened:
/// opening a FIFO blocked until a writer came (the query never ended), a device may never end.
#[cfg(unix)]
#[test]
fn special_files_are_refused_before_they_are_opened() {
    let dir = tempfile::tempdir().unwrap();
    let src = corpus().join("01_1d_le_uncompressed/data.zarr");
    let fifo = |path: &std::path::Path| {
        let made = std::process::Command::new("mkfifo").arg(path).status();
        assert!(made.unwrap().success(), "mkfifo {}", path.display());
    };
    let chunk = dir.path().join("chunk");
    std::fs::create_dir_all(chunk.join("c")).unwrap();
    std::fs::copy(src.join("zarr.json"), chunk.join("zarr.json")).unwrap();
    fifo(&chunk.join("c/0"));
    let metadata = dir.path().join("metadata");
    std::fs::create_dir_all(&metadata).unwrap();
    fifo(&metadata.join("zarr.json"));
    let device = dir.path().join("device");
    std::fs::create_dir_all(device.join("c")).unwrap();
    std::fs::copy(src.join("zarr.json"), device.join("zarr.json")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", device.join("c/0")).unwrap();
    for (store, key) in [(chunk, "c/0"), (metadata, "zarr.json"), (device, "c/0")] {
        let sql = format!("SELECT * FROM read_zarr('{}')", store.display());
        // On a thread of its own: a read that blocks (the failure this test catches) blocks
        // that thread, and the test fails when the wait ends.
        let (send, receive) = std::sync::mpsc::channel();
        let query = sql.clone();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Runtime::new().unwrap();
            let _ = send.send(runtime.block_on(error_of(&query)));
        });
        let e = receive
            .recv_timeout(std::time::Duration::from_secs(20))
            .unwrap_or_else(|_| panic!("{sql} did not end"));
        assert!(e.contains(key), "{e}");
        assert!(
            e.contains("is not a regular file (a FIFO, socket or device)"),
            "{e}"
        );
    }
}

#[tokio::test]
async fn store_errors() {
    let dir = tempfile::tempdir().unwrap();
    // No zarr.json.
    let e = error_of(&format!(
        "SELECT * FROM read_zarr('{}')",
        dir.path().display()
    ))
    .await;
    assert!(e.contains("no Zarr node here"), "{e}");
    // A location that is a file.
    let file = dir.path().join("file");
    std::fs::write(&file, b"x").unwrap();
    let e = error_of(&format!("SELECT * FROM read_zarr('{}')", file.display())).await;
    assert!(e.contains("is a file, not a Zarr store directory"), "{e}");
    // zarr-python 2's ZipStore: a zip file.
    let zip = dir.path().join("store.zip");
    std::fs::write(&zip, b"PK").unwrap();
    let e = error_of(&format!("SELECT * FROM read_zarr('{}')", zip.display())).await;
    assert!(e.contains("zip stores are not read: unzip it"), "{e}");
    // A path that would leave the store.
    let e = error_of(&format!(
        "SELECT * FROM read_zarr('{}', '../x')",
        corpus_store("13_group_consolidated_metadata")
    ))
    .await;
    assert!(e.contains("would leave the store root"), "{e}");
    // A symlink loop where zarr.json should be.
    let looped = dir.path().join("looped");
    std::fs::create_dir(&looped).unwrap();
    std::os::unix::fs::symlink(looped.join("zarr.json"), looped.join("zarr.json")).unwrap();
    let e = error_of(&format!("SELECT * FROM read_zarr('{}')", looped.display())).await;
    assert!(e.contains("zarr.json"), "{e}");
}

#[tokio::test]
async fn bad_options_are_query_errors() {
    let store = corpus_store("00_zarr_python_defaults_U7");
    let e = error_of(&format!(
        "SELECT * FROM read_zarr('{store}', '', 'nope', '1')"
    ))
    .await;
    assert!(e.contains("unknown option 'nope'"), "{e}");
    let e = error_of(&format!(
        "SELECT * FROM read_zarr('{store}', '', 'fill_as_null', 'perhaps')"
    ))
    .await;
    assert!(e.contains("not a boolean"), "{e}");
    let e = error_of(&format!(
        "SELECT * FROM read_zarr('{store}', 'missing/node')"
    ))
    .await;
    assert!(e.contains("no Zarr node here"), "{e}");
    let e = error_of(&format!(
        "SELECT * FROM read_zarr('{store}', '', 'max_chunk_bytes', '16')"
    ))
    .await;
    assert!(e.contains("more than max_chunk_bytes = 16"), "{e}");
}

/// A broken chunk fails only the work that reaches it: a query that stops before it returns
/// its rows, though the chunks after the last one it needs are fetched ahead in the same batch
/// of a local store's reads; a scan that reaches it fails, naming the chunk and the rule.
#[tokio::test]
async fn a_broken_chunk_fails_only_the_scans_that_reach_it() {
    let dir = tempfile::tempdir().unwrap();
    let metadata = serde_json::json!({
        "zarr_format": 3,
        "node_type": "array",
        "shape": [100],
        "data_type": "int32",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [10]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": 0,
        "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
        "dimension_names": ["i"],
        "attributes": {}
    });
    std::fs::write(dir.path().join("zarr.json"), metadata.to_string()).unwrap();
    std::fs::create_dir_all(dir.path().join("c/5")).unwrap();
    for chunk in (0..10i32).filter(|&c| c != 5) {
        let values: Vec<u8> = (chunk * 10..chunk * 10 + 10)
            .flat_map(|v| v.to_le_bytes())
            .collect();
        std::fs::write(dir.path().join(format!("c/{chunk}")), values).unwrap();
    }
    let store = dir.path().display();

    // One partition, whose chunks come in batches of 4: 0-3, then 4-7. The filter stays above
    // the scan, so the LIMIT is not pushed into it; the rows it needs are in chunk 4.
    let ctx = datafusion::prelude::SessionContext::new_with_config(
        datafusion::prelude::SessionConfig::new().with_target_partitions(1),
    );
    datafusion_zarr::register(&ctx);
    let sql = format!("SELECT value FROM read_zarr('{store}') WHERE value >= 40 LIMIT 3");
    let batches = query(&ctx, &sql).await.unwrap();
    let values = column(&batches, "value");
    let values = arrow::array::AsArray::as_primitive::<arrow::datatypes::Int32Type>(&values);
    assert_eq!(values.values().to_vec(), vec![40, 41, 42]);

    let e = error_of(&format!("SELECT sum(value) FROM read_zarr('{store}')")).await;
    assert!(e.contains("c/5"), "{e}");
    assert!(e.contains("is a directory where a chunk"), "{e}");
}

/// Variable-length chunks (V3 `string` and `variable_length_bytes`, V2 `vlen-utf8` and
/// `vlen-bytes`) whose item lengths run past the end of the chunk: an error naming the chunk
/// and the item. zarrs sliced past the end and panicked, ending the process.
#[tokio::test]
async fn variable_length_items_past_the_chunk_are_errors() {
    // Two items: "ab", then one that claims 1000 bytes where 2 are.
    let mut chunk = 2u32.to_le_bytes().to_vec();
    for (length, item) in [(2u32, b"ab"), (1000, b"cd")] {
        chunk.extend(length.to_le_bytes());
        chunk.extend(item);
    }
    let v3 = |data_type: &str, codec: &str, fill: serde_json::Value| {
        serde_json::json!({"zarr_format": 3, "node_type": "array", "shape": [2],
            "data_type": data_type, "fill_value": fill,
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}},
            "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
            "codecs": [{"name": codec, "configuration": {}}, {"name": "zstd",
                        "configuration": {"level": 0, "checksum": false}}]})
    };
    let v2 = |filter: &str| {
        serde_json::json!({"zarr_format": 2, "shape": [2], "chunks": [2], "dtype": "|O",
            "compressor": null, "fill_value": null, "order": "C",
            "filters": [{"id": filter}]})
    };
    let compressed = zstd::encode_all(chunk.as_slice(), 0).unwrap();
    let cases = [
        (
            "zarr.json",
            v3("string", "vlen-utf8", serde_json::json!("")),
            "c/0",
            &compressed,
        ),
        (
            "zarr.json",
            v3("variable_length_bytes", "vlen-bytes", serde_json::json!("")),
            "c/0",
            &compressed,
        ),
        (".zarray", v2("vlen-utf8"), "0", &chunk),
        (".zarray", v2("vlen-bytes"), "0", &chunk),
    ];
    for (document, metadata, key, bytes) in cases {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(document), metadata.to_string()).unwrap();
        let path = dir.path().join(key);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, bytes).unwrap();
        let e = error_of(&format!(
            "SELECT * FROM read_zarr('{}')",
            dir.path().display()
        ))
        .await;
        assert!(e.contains(&format!("chunk {key}")), "{metadata}: {e}");
        assert!(
            e.contains("item 1 of 1000 bytes runs past the end of the chunk (16 bytes)"),
            "{metadata}: {e}"
        );
    }
}
