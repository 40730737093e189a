//! Compresses the pages `chunk.rs` writes, with the crates and in the formats
//! parquet-rs uses for the same codecs (its `compression` module is public only with the
//! `experimental` feature): zstd, Snappy, LZ4_RAW, gzip, or none.

use datafusion::error::{DataFusionError, Result};
use parquet::basic::Compression;

/// A page compressor for one column chunk (zstd keeps its context between pages).
pub(super) enum PageCompressor {
    None,
    Zstd(Box<zstd::bulk::Compressor<'static>>),
    Snappy(Box<snap::raw::Encoder>),
    Lz4Raw,
    Gzip(u32),
}

impl PageCompressor {
    /// The compressor for `codec`, or `None` for codecs this module does not write (Brotli,
    /// LZO, Hadoop's LZ4): their columns are left to parquet-rs.
    pub(super) fn new(codec: Compression) -> Result<Option<Self>> {
        Ok(Some(match codec {
            Compression::UNCOMPRESSED => Self::None,
            Compression::ZSTD(level) => {
                let compressor = zstd::bulk::Compressor::new(level.compression_level())
                    .map_err(|e| DataFusionError::Execution(format!("zstd: {e}")))?;
                Self::Zstd(Box::new(compressor))
            }
            Compression::SNAPPY => Self::Snappy(Box::new(snap::raw::Encoder::new())),
            Compression::LZ4_RAW => Self::Lz4Raw,
            Compression::GZIP(level) => Self::Gzip(level.compression_level()),
            _ => return Ok(None),
        }))
    }

    /// Whether [`PageCompressor::new`] has a compressor for `codec`.
    pub(super) fn supports(codec: Compression) -> bool {
        matches!(
            codec,
            Compression::UNCOMPRESSED
                | Compression::ZSTD(_)
                | Compression::SNAPPY
                | Compression::LZ4_RAW
                | Compression::GZIP(_)
        )
    }

    /// `page` compressed (or as it is, for no compression).
    pub(super) fn compress(&mut self, page: Vec<u8>) -> Result<Vec<u8>> {
        let failed = |codec: &str, e: &dyn std::fmt::Display| {
            DataFusionError::Execution(format!("compressing a Parquet page with {codec}: {e}"))
        };
        Ok(match self {
            Self::None => page,
            Self::Zstd(c) => c.compress(&page).map_err(|e| failed("zstd", &e))?,
            Self::Snappy(c) => c.compress_vec(&page).map_err(|e| failed("snappy", &e))?,
            Self::Lz4Raw => lz4_flex::block::compress(&page),
            Self::Gzip(level) => {
                use std::io::Write;
                let out = Vec::with_capacity(page.len() / 2);
                let level = flate2::Compression::new(*level);
                let mut encoder = flate2::write::GzEncoder::new(out, level);
                encoder.write_all(&page).map_err(|e| failed("gzip", &e))?;
                encoder.finish().map_err(|e| failed("gzip", &e))?
            }
        })
    }
}
