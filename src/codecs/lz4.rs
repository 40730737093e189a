//! numcodecs' LZ4, which real writers use and zarrs 0.23 does not provide.
//!
//! - **numcodecs LZ4** (`numcodecs.LZ4()` in zarr-python 2 and xarray: V2 compressor id `lz4`;
//!   `numcodecs.zarr3.LZ4()`: V3 codec `numcodecs.lz4`). Its format is a 4-byte little-endian
//!   decoded size followed by one LZ4 block. Decoding uses the `lz4_flex` crate's safe block
//!   decoder into a buffer of the size the *metadata* declares for the chunk: a header that
//!   claims more is refused before anything is allocated, and the block cannot write past the
//!   buffer.

use std::borrow::Cow;

use zarrs::array::{ArrayBytesRaw, BytesRepresentation, CodecError};
use zarrs::metadata::Configuration;
use zarrs::plugin::PluginCreateError;

use super::plugin::{self, NumcodecsDecoder};

/// Registers the codec with zarrs (see [`super::register`]).
pub(super) fn register() {
    plugin::register("lz4", Lz4Codec::from_configuration);
}

/// numcodecs' LZ4: a 4-byte little-endian decoded size, then one LZ4 block.
#[derive(Debug, Clone)]
pub(crate) struct Lz4Codec {
    /// numcodecs' `acceleration` (kept for the metadata; decoding does not depend on it).
    acceleration: i64,
}

impl Lz4Codec {
    fn from_configuration(
        configuration: Option<&Configuration>,
    ) -> Result<Self, PluginCreateError> {
        let acceleration = match configuration.and_then(|c| c.get("acceleration")) {
            None => 1,
            Some(v) => v.as_i64().ok_or_else(|| {
                PluginCreateError::Other(format!("lz4 acceleration {v} is not an integer"))
            })?,
        };
        Ok(Self { acceleration })
    }
}

impl NumcodecsDecoder for Lz4Codec {
    fn id(&self) -> &'static str {
        "lz4"
    }

    fn configuration(&self) -> Configuration {
        let mut c = serde_json::Map::new();
        c.insert("acceleration".into(), self.acceleration.into());
        Configuration::from(c)
    }

    fn encoded_representation(&self, decoded: &BytesRepresentation) -> BytesRepresentation {
        match decoded {
            // The 4-byte header and lz4_flex's `get_maximum_output_size` (20 + 110%), computed
            // here checked: lz4_flex multiplies unchecked, which overflows for chunks declared
            // beyond 2^64 / 110 bytes (a max_chunk_bytes raised that far).
            BytesRepresentation::FixedSize(n) | BytesRepresentation::BoundedSize(n) => {
                match n.checked_mul(110) {
                    Some(n) => BytesRepresentation::BoundedSize(4 + 20 + n / 100),
                    None => BytesRepresentation::UnboundedSize,
                }
            }
            BytesRepresentation::UnboundedSize => BytesRepresentation::UnboundedSize,
        }
    }

    /// numcodecs' format: the decoded size (4 bytes, little-endian), then one LZ4 block.
    fn encode(&self, decoded: &[u8]) -> Result<Vec<u8>, CodecError> {
        if u32::try_from(decoded.len()).is_err() {
            return Err(CodecError::Other(format!(
                "lz4: a chunk of {} bytes is larger than numcodecs' 4-byte size header holds",
                decoded.len()
            )));
        }
        Ok(lz4_flex::block::compress_prepend_size(decoded))
    }

    fn decode<'a>(
        &self,
        encoded_value: ArrayBytesRaw<'a>,
        decoded_representation: &BytesRepresentation,
    ) -> Result<ArrayBytesRaw<'a>, CodecError> {
        let header = encoded_value.get(..4).ok_or_else(|| {
            CodecError::Other(format!(
                "lz4 data is {} bytes, shorter than its 4-byte size header",
                encoded_value.len()
            ))
        })?;
        let claimed = u32::from_le_bytes([header[0], header[1], header[2], header[3]]) as u64;
        let bound = match decoded_representation {
            BytesRepresentation::FixedSize(n) | BytesRepresentation::BoundedSize(n) => *n,
            // Variable-length data: the table's own bound.
            BytesRepresentation::UnboundedSize => crate::limits::decode_bound(),
        };
        if claimed > bound {
            return Err(CodecError::Other(format!(
                "lz4 header claims {claimed} decoded bytes, more than the {bound} the chunk \
                 declares (a decompression bomb or a corrupt chunk)"
            )));
        }
        let mut out = vec![0u8; claimed as usize];
        let written = lz4_flex::block::decompress_into(&encoded_value[4..], &mut out)
            .map_err(|e| CodecError::Other(format!("lz4 data cannot be decoded: {e}")))?;
        if written as u64 != claimed
            || matches!(decoded_representation, BytesRepresentation::FixedSize(n) if *n != claimed)
        {
            return Err(CodecError::Other(format!(
                "lz4 data decompresses to {written} bytes, its header says {claimed} and the \
                 chunk declares {decoded_representation}"
            )));
        }
        Ok(Cow::Owned(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The encoded bound of a chunk declared near `u64::MAX` (a `max_chunk_bytes` raised that
    /// far) is no overflow: lz4_flex's `get_maximum_output_size` multiplied by 110 unchecked
    /// and panicked in debug builds.
    #[test]
    fn encoded_bounds_do_not_overflow() {
        let codec = Lz4Codec { acceleration: 1 };
        let bound = |n: u64| codec.encoded_representation(&BytesRepresentation::FixedSize(n));
        assert_eq!(bound(u64::MAX), BytesRepresentation::UnboundedSize);
        assert_eq!(bound(u64::MAX / 100), BytesRepresentation::UnboundedSize);
        // lz4_flex's own bound where it does not overflow, and the 4-byte header.
        let n = 1 << 20;
        let lz4 = lz4_flex::block::get_maximum_output_size(n) as u64;
        assert_eq!(bound(n as u64), BytesRepresentation::BoundedSize(4 + lz4));
    }
}
