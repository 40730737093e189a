//! Writing Zarr: `COPY … TO 'out.zarr' STORED AS ZARR` ([`format`]: DataFusion's file format
//! and sink), a store written beside its target and moved into place when complete
//! ([`atomic_directory`]), the table layout ([`layout`]: which arrays a table becomes) and the writer that
//! turns a stream of batches into chunks ([`table_writer`]).

mod atomic_directory;
pub mod format;
mod layout;
mod table_writer;

pub use format::{ZarrFormat, ZarrFormatFactory};
pub use layout::WriteOptions;
pub use table_writer::{write_table, write_zarr};
