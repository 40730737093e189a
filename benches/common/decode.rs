//! The decode limit shared by the benches: fetch and decode every chunk, no transcoding.

use std::sync::Arc;

use datafusion_zarr::scan::{read_chunk, unravel};
use datafusion_zarr::table::TableModel;
use futures::StreamExt;

/// Fetches and decodes every chunk of the grid array, `threads` at a time; returns the number
/// of elements decoded.
pub async fn decode_all(model: Arc<TableModel>, threads: usize) -> usize {
    let grid = model.grid.zarrs().expect("supported array").clone();
    let grid_shape = grid.chunk_grid_shape().to_vec();
    let chunks: u64 = grid_shape.iter().product();
    futures::stream::iter(0..chunks)
        .map(|id| {
            let model = model.clone();
            let indices = unravel(id, &grid_shape);
            tokio::spawn(async move {
                let chunk = read_chunk(&model.store, &model.grid, &indices, &model.options)
                    .await
                    .unwrap_or_else(|e| panic!("chunk {id}: {e}"));
                std::hint::black_box(chunk.elements.len())
            })
        })
        .buffer_unordered(threads)
        .fold(0usize, |acc, n| async move { acc + n.expect("task") })
        .await
}
