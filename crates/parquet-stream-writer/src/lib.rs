//! # parquet-stream-writer
//!
//! Arrow record batches in, a Parquet file out: one stream written in its order, row groups
//! encoded in parallel on blocking threads and appended as they finish. String columns are
//! dictionary-encoded by our own encoder (`strings`), integer and float columns by our numeric
//! encoder (`numbers`: dictionary, `DELTA_BINARY_PACKED` or `PLAIN`), every other column by
//! parquet-rs's `ArrowColumnWriter`; pages are compressed as parquet-rs compresses them, and
//! the file is read by any Parquet reader (the tests compare with parquet-rs's own output).
//!
//! Written here rather than taken from parquet-rs because parquet-rs keeps its encoders
//! private and its dictionary interner spent about twice our time on the same rows (see
//! `strings`). Nothing here knows Zarr: datafusion-zarr's export and `COPY` hand it their
//! batches.
//!
//! - [`write_stream`]: the writer.
//! - [`annotatable`]: columns of an Arrow type Parquet cannot annotate cast as pyarrow writes
//!   them, before writing.

mod chunk;
mod compress;
mod delta_binary_packed;
mod fixed_dictionary;
mod hash_prefetch;
mod numbers;
mod parquet_types;
mod rle;
mod strings;
mod values;
mod writer;

pub use parquet_types::annotatable;
pub use writer::write_stream;
