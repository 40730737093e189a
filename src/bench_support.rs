//! What the benches measure beside the scan, kept in the library because it reads the table's
//! internals: the decode floor (fetch and decode every chunk, no transcoding), and the store
//! lock a write takes.

use futures::StreamExt;

use crate::provider::ZarrTable;
use crate::scan::{read_chunk, unravel};

/// Fetches and decodes every chunk of the table's grid array, `threads` at a time on the
/// current tokio runtime; returns the number of elements decoded.
///
/// # Panics
/// On any error: this is bench code, run on stores the bench made.
pub async fn decode_all(table: &ZarrTable, threads: usize) -> usize {
    let model = table.model().clone();
    let grid = model.grid.zarrs().expect("a supported array").clone();
    let grid_shape = grid.chunk_grid_shape().to_vec();
    let chunks: u64 = grid_shape.iter().product();
    futures::stream::iter(0..chunks)
        .map(|id| {
            let model = model.clone();
            let indices = unravel(id, &grid_shape);
            tokio::spawn(async move {
                let chunk = read_chunk(&model.store, &model.grid, &indices, &model.limits)
                    .await
                    .unwrap_or_else(|e| panic!("chunk {id}: {e}"));
                std::hint::black_box(chunk.elements.len())
            })
        })
        .buffer_unordered(threads)
        .fold(0usize, |acc, n| async move { acc + n.expect("task") })
        .await
}

/// Chunks of the table's grid array (what [`decode_all`] fetches).
pub fn chunk_count(table: &ZarrTable) -> u64 {
    table
        .model()
        .grid
        .zarrs()
        .map_or(0, |a| a.chunk_grid_shape().iter().product())
}

/// Takes and lets go of the lock of the local store at `path` once, as a write does (the lock
/// file beside it, named and emptied): what the lock adds to a write,
/// which `benches/many_writers.rs` times beside a one-row INSERT.
///
/// # Errors
/// When the lock cannot be taken at once (another writer holds it) or its file not made.
pub async fn lock_round_trip(path: &std::path::Path) -> Result<(), String> {
    let shown = crate::staging::Shown::new(path.display().to_string(), &Default::default());
    let lock = crate::staging::StoreLock::acquire(path, std::time::Duration::ZERO, &shown)
        .await
        .map_err(|e| e.to_string())?;
    drop(lock);
    Ok(())
}
