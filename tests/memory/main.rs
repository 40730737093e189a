//! The memory bounds (decompression bombs, hostile sizes in metadata, codecs' configurations),
//! in a binary of their own: its global allocator counts every byte the process holds, so each
//! test takes `counting_alloc::alone()` and nothing else runs beside it.

mod bombs;
mod codecs;
mod large_documents;
mod metadata_edges;
mod scan;

#[global_allocator]
static ALLOCATOR: zarr_test_support::counting_alloc::Counting =
    zarr_test_support::counting_alloc::Counting;
