//! Thin guards where zarrs trusts data it should not.
//!
//! Measured on zarrs 0.23.14: its zstd decoder sizes its output from the frame header (a
//! 145-byte chunk claiming 1 TiB aborts the process), its gzip decoder reads to the end before
//! checking the size (a 2 MB chunk took 4.2 GB), blosc allocates what its header claims, and
//! the sharding codec adds index offsets unchecked (a panic in debug builds). So:
//! - [`bounded_codecs`] registers decoders for gzip, zlib, zstd, bz2 and blosc in place of
//!   zarrs' own (runtime plugins take precedence, also inside shards) that stop at the size the
//!   metadata declares for the chunk, instead of allocating first and checking after;
//! - [`shard_index`] checks a shard's index (checksum, bounds, overlap) before zarrs reads it.

pub mod bounded_codecs;
pub mod shard_index;
