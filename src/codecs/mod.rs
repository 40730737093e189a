//! Codecs: where zarrs decodes, what we register in place of or beside its own codecs.
//!
//! Measured on zarrs 0.23.14: its zstd decoder sizes its output from the frame header (a
//! 145-byte chunk claiming 1 TiB aborts the process), its gzip decoder reads to the end before
//! checking the size (a 2 MB chunk took 4.2 GB), blosc allocates what its header claims, and
//! the sharding codec adds index offsets unchecked (a panic in debug builds). So:
//! - [`bounded`] registers decoders for gzip, zlib, zstd, bz2 and blosc in place of zarrs' own
//!   (runtime plugins take precedence, also inside shards) that stop at the declared size;
//! - [`lz4`] adds numcodecs' LZ4, which zarrs lacks, bounded the same way;
//! - [`lzma`] adds numcodecs' LZMA (`.xz` and `.lzma`), bounded in output and decoder memory;
//! - [`pcodec`] registers numcodecs' PCodec in place of zarrs' own, bounded the same way;
//! - [`delta`], [`categorize`], [`astype`] (with `quantize`), [`bitround`] and [`packbits`]
//!   add numcodecs' filters of those names (through [`plugin`], the zarrs side every numcodecs
//!   decoder of ours shares);
//! - [`fixedscaleoffset`] registers numcodecs' FixedScaleOffset in place of zarrs' own, whose
//!   `f32` scale and offset read values off what zarr-python reads;
//! - [`checksum`] adds numcodecs' crc32, adler32, fletcher32, crc32c and jenkins_lookup3
//!   checksums, each placed where numcodecs puts it and verified;
//! - [`shard_index`] checks a shard's index (checksum, bounds, overlap) before zarrs reads it;
//! - [`vlen_framing`] checks a variable-length chunk's item lengths before zarrs decodes it.

mod astype;
mod bitround;
mod bounded;
mod categorize;
mod checksum;
mod delta;
mod fixedscaleoffset;
mod lz4;
mod lzma;
mod packbits;
mod pcodec;
mod plugin;
mod registry;
pub(crate) mod shard_index;
pub(crate) mod vlen_framing;

pub(crate) use registry::{decode_options, register};
