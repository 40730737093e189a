//! Each table keeps its own size limits: two tables opened in one process with different
//! `max_chunk_bytes` each decode within their own bound, also for a decompression bomb whose
//! size the metadata does not declare (a variable-length `string` chunk), and opening a table
//! with a large limit loosens no other table.

use std::path::Path;

use arrow::array::{Array, AsArray};
use datafusion::prelude::SessionContext;

use zarr_test_support::*;

/// Elements of the bomb's one string: 8 MiB of 'a', which zstd packs into a few hundred bytes.
const BOMB_LEN: usize = 8 << 20;

/// A 1-element `string` array (vlen-utf8 + zstd) whose chunk inflates to `BOMB_LEN` bytes.
fn write_bomb(dir: &Path) {
    let metadata = serde_json::json!({
        "zarr_format": 3,
        "node_type": "array",
        "shape": [1],
        "data_type": "string",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [1]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": "",
        "codecs": [
            {"name": "vlen-utf8", "configuration": {}},
            {"name": "zstd", "configuration": {"level": 3, "checksum": false}}
        ],
        "attributes": {}
    });
    std::fs::write(dir.join("zarr.json"), metadata.to_string()).unwrap();
    // vlen-utf8: the element count, then each element's length and bytes (little-endian u32).
    let mut chunk = Vec::with_capacity(BOMB_LEN + 8);
    chunk.extend_from_slice(&1u32.to_le_bytes());
    chunk.extend_from_slice(&(BOMB_LEN as u32).to_le_bytes());
    chunk.resize(BOMB_LEN + 8, b'a');
    let compressed = zstd::bulk::compress(&chunk, 3).unwrap();
    assert!(
        compressed.len() < 4096,
        "a bomb: {} bytes",
        compressed.len()
    );
    std::fs::create_dir_all(dir.join("c")).unwrap();
    std::fs::write(dir.join("c/0"), compressed).unwrap();
}

async fn register(ctx: &SessionContext, name: &str, store: &Path, max_chunk_bytes: u64) {
    ctx.sql(&format!(
        "CREATE EXTERNAL TABLE {name} STORED AS ZARR LOCATION '{}' \
         OPTIONS ('max_chunk_bytes' '{max_chunk_bytes}')",
        store.display()
    ))
    .await
    .unwrap();
}

/// The length of the one string of `table`, or the error.
async fn length(ctx: &SessionContext, table: &str) -> Result<usize, String> {
    let batches = query(ctx, &format!("SELECT value FROM {table}"))
        .await
        .map_err(|e| e.to_string())?;
    let column = column(&batches, "value");
    assert_eq!(column.len(), 1);
    Ok(column.as_string::<i32>().value(0).len())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_tables_keep_their_own_chunk_limit() {
    let dir = tempfile::tempdir().unwrap();
    write_bomb(dir.path());
    let ctx = context();
    let small = 1u64 << 20;
    register(&ctx, "strict", dir.path(), small).await;

    // Alone, the strict table stops the bomb at its own bound.
    let e = length(&ctx, "strict").await.unwrap_err();
    assert!(
        e.contains("decompresses to more than the 1048576 bytes"),
        "{e}"
    );
    assert!(e.contains("chunk c/0"), "names the chunk: {e}");

    // A table with a larger bound reads the same chunk whole...
    register(&ctx, "loose", dir.path(), 64 << 20).await;
    assert_eq!(length(&ctx, "loose").await, Ok(BOMB_LEN));

    // ...and does not loosen the strict one, before or while it runs.
    let e = length(&ctx, "strict").await.unwrap_err();
    assert!(
        e.contains("decompresses to more than the 1048576 bytes"),
        "{e}"
    );
    let (strict, loose) = tokio::join!(length(&ctx, "strict"), length(&ctx, "loose"));
    assert!(strict.is_err(), "{strict:?}");
    assert_eq!(loose, Ok(BOMB_LEN));

    // A bound below the default holds for a table opened after the loose one, too.
    register(&ctx, "stricter", dir.path(), 4096).await;
    let e = length(&ctx, "stricter").await.unwrap_err();
    assert!(
        e.contains("decompresses to more than the 4096 bytes"),
        "{e}"
    );
}

/// A chunk object larger than `max_chunk_bytes` is refused from its size, before its bytes are
/// read (a local store's files are read by our own code, not object_store's), naming the
/// object and the option; the same store reads whole under a larger limit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_encoded_chunk_over_the_limit_is_refused_by_its_size() {
    let dir = tempfile::tempdir().unwrap();
    write_bomb(dir.path());
    // The same zstd frame, then 64 KiB of padding zstd skips (a skippable frame).
    let mut object = std::fs::read(dir.path().join("c/0")).unwrap();
    object.extend_from_slice(&0x184D_2A50u32.to_le_bytes());
    object.extend_from_slice(&(64u32 << 10).to_le_bytes());
    object.resize(object.len() + (64 << 10), 0);
    std::fs::write(dir.path().join("c/0"), &object).unwrap();
    let ctx = context();
    register(&ctx, "strict", dir.path(), 32 << 10).await;
    let e = length(&ctx, "strict").await.unwrap_err();
    let expected = format!(
        "c/0: object is {} bytes, more than max_chunk_bytes = 32768",
        object.len()
    );
    assert!(e.contains(&expected), "{e}");
    register(&ctx, "loose", dir.path(), 64 << 20).await;
    assert_eq!(length(&ctx, "loose").await, Ok(BOMB_LEN));
}
