//! Writing Zarr: `COPY … TO 'out.zarr' STORED AS ZARR` ([`format`]: DataFusion's file format
//! and sink), the options ([`options`]), which array a column becomes ([`arrays`]), Arrow
//! values as Zarr elements ([`elements`]), chunks through zarrs' codecs ([`encode`]), where
//! the objects go so that nothing half-written is visible ([`target`], [`atomic_directory`]),
//! and the layouts: the table ([`table_writer`]) and the N-D grid ([`grid_writer`]).

mod append;
mod arrays;
mod atomic_directory;
mod elements;
mod encode;
pub mod format;
mod grid_writer;
pub mod options;
mod table_writer;
mod target;

pub use format::{AppendSink, ZarrFormat, ZarrFormatFactory};
pub use options::{WRITE_OPTIONS, WriteOptions};
pub use table_writer::{write_zarr, write_zarr_in};
