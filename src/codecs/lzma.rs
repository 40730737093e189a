//! numcodecs' LZMA (V2 compressor `lzma`, V3 codec `numcodecs.lzma`), which zarrs 0.23 lacks.
//!
//! numcodecs writes the `.xz` container by default (`format: 1`) or the legacy `.lzma` one
//! (`format: 2`); liblzma's auto decoder reads both (the `liblzma` crate, the maintained fork
//! of `xz2`, built from its bundled C source). LZMA is a classic bomb format, so decoding is
//! bounded twice: the output buffer holds the size the metadata declares for the chunk (or,
//! for variable-length data, the table's `max_chunk_bytes`) and a stream that would produce
//! more is refused, and the decoder's own memory (its dictionary, which the stream header
//! declares) is limited by liblzma's memlimit. Raw streams (`format: 3`, with a filter chain
//! in the metadata) are refused as unsupported.

use std::borrow::Cow;

use liblzma::stream::{Action, Status, Stream};
use zarrs::array::{ArrayBytesRaw, BytesRepresentation, CodecError};
use zarrs::metadata::Configuration;
use zarrs::plugin::PluginCreateError;

use super::plugin::{self, NumcodecsDecoder};
use crate::limits;

/// The most memory the decoder may use for its dictionary and state: LZMA's largest preset
/// (9, a 64 MiB dictionary) needs about 65 MiB.
const DECODER_MEMLIMIT: u64 = 128 << 20;

/// Registers the codec with zarrs (see [`super::register`]).
pub(super) fn register() {
    plugin::register("lzma", LzmaCodec::new);
}

/// numcodecs' LZMA in the `.xz` or `.lzma` container.
#[derive(Debug, Clone)]
struct LzmaCodec {
    /// numcodecs' `format`: 1 (`.xz`) or 2 (`.lzma`).
    format: i64,
    /// The rest of the configuration, kept for the metadata.
    configuration: Configuration,
}

impl LzmaCodec {
    fn new(configuration: Option<&Configuration>) -> Result<Self, PluginCreateError> {
        let configuration = configuration.cloned().unwrap_or_default();
        let format = match configuration.get("format") {
            None => 1,
            Some(v) => v.as_i64().ok_or_else(|| {
                PluginCreateError::Other(format!("lzma format {v} is not an integer"))
            })?,
        };
        if !matches!(format, 1 | 2) {
            return Err(PluginCreateError::Other(format!(
                "lzma format {format} is unsupported (1, .xz, and 2, .lzma, are)"
            )));
        }
        Ok(Self {
            format,
            configuration,
        })
    }
}

fn lzma_error(what: impl std::fmt::Display) -> CodecError {
    CodecError::Other(format!("lzma data cannot be decoded: {what}"))
}

impl NumcodecsDecoder for LzmaCodec {
    fn id(&self) -> &'static str {
        "lzma"
    }

    fn configuration(&self) -> Configuration {
        self.configuration.clone()
    }

    fn decode<'a>(
        &self,
        encoded_value: ArrayBytesRaw<'a>,
        decoded_representation: &BytesRepresentation,
    ) -> Result<ArrayBytesRaw<'a>, CodecError> {
        let bound = match decoded_representation {
            BytesRepresentation::FixedSize(n) | BytesRepresentation::BoundedSize(n) => *n,
            BytesRepresentation::UnboundedSize => limits::decode_bound(),
        };
        let capacity = usize::try_from(bound).map_err(lzma_error)?;
        let mut stream = match self.format {
            2 => Stream::new_lzma_decoder(DECODER_MEMLIMIT),
            _ => Stream::new_stream_decoder(DECODER_MEMLIMIT, liblzma::stream::CONCATENATED),
        }
        .map_err(lzma_error)?;
        // One byte more than the bound: a stream that fills it is too large.
        let mut out = Vec::with_capacity(capacity.saturating_add(1));
        let mut input: &[u8] = &encoded_value;
        loop {
            let before = stream.total_in();
            let status = stream
                .process_vec(input, &mut out, Action::Finish)
                .map_err(lzma_error)?;
            let consumed = usize::try_from(stream.total_in() - before).map_err(lzma_error)?;
            input = &input[consumed.min(input.len())..];
            if out.len() as u64 > bound {
                return Err(CodecError::Other(format!(
                    "lzma data decompresses to more than the {bound} bytes the chunk declares \
                     (stopped at the bound; a decompression bomb or a corrupt chunk)"
                )));
            }
            match status {
                Status::StreamEnd => break,
                Status::Ok | Status::GetCheck if consumed > 0 || !input.is_empty() => {}
                _ => return Err(lzma_error("the stream ends early")),
            }
            if out.len() == out.capacity() {
                return Err(lzma_error("no room left in the declared size"));
            }
        }
        if let BytesRepresentation::FixedSize(n) = decoded_representation
            && out.len() as u64 != *n
        {
            return Err(CodecError::Other(format!(
                "lzma data decompresses to {} bytes, the chunk declares {n}",
                out.len()
            )));
        }
        Ok(Cow::Owned(out))
    }
}
