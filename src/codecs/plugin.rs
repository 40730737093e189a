//! The zarrs side of a numcodecs codec we decode ourselves: each codec module implements
//! [`NumcodecsDecoder`] (its id, configuration and decoding), and [`register`] makes it a zarrs
//! runtime plugin under its V2 id and its V3 name `numcodecs.<id>`, as a bytes-to-bytes codec.
//! Encoding is refused except by the codecs the writer offers (LZ4).

use std::borrow::Cow;
use std::sync::Arc;

use zarrs::array::codec::api::{
    CodecRuntimePluginV2, CodecRuntimePluginV3, PartialDecoderCapability, PartialEncoderCapability,
    register_codec_v2, register_codec_v3,
};
use zarrs::array::{
    ArrayBytesRaw, BytesRepresentation, BytesToBytesCodecTraits, Codec, CodecError,
    CodecMetadataOptions, CodecOptions, CodecTraits, RecommendedConcurrency,
};
use zarrs::metadata::Configuration;
use zarrs::metadata::v2::MetadataV2;
use zarrs::metadata::v3::MetadataV3;
use zarrs::plugin::{ExtensionName, PluginCreateError, ZarrVersion};

/// A numcodecs codec as the reader decodes it.
pub(super) trait NumcodecsDecoder: std::fmt::Debug + Send + Sync + 'static {
    /// numcodecs' id (the V2 id; the V3 name is `numcodecs.<id>`).
    fn id(&self) -> &'static str;

    /// The configuration, as the metadata wrote it.
    fn configuration(&self) -> Configuration;

    /// The encoded size for a decoded one, where the codec knows it.
    fn encoded_representation(&self, _decoded: &BytesRepresentation) -> BytesRepresentation {
        BytesRepresentation::UnboundedSize
    }

    /// Encodes one chunk's bytes, for the codecs the writer offers (the others refuse).
    fn encode(&self, _decoded: &[u8]) -> Result<Vec<u8>, CodecError> {
        Err(CodecError::Other(format!(
            "{}: datafusion-zarr reads this codec but does not write it",
            self.id()
        )))
    }

    /// Decodes one chunk's bytes into at most the decoded size the chunk declares.
    fn decode<'a>(
        &self,
        encoded: ArrayBytesRaw<'a>,
        decoded: &BytesRepresentation,
    ) -> Result<ArrayBytesRaw<'a>, CodecError>;
}

/// Registers the decoder `make` builds from a configuration, under V2 id `id` and V3 name
/// `numcodecs.<id>`.
pub(super) fn register<D, F>(id: &'static str, make: F)
where
    D: NumcodecsDecoder,
    F: Fn(Option<&Configuration>) -> Result<D, PluginCreateError> + Copy + Send + Sync + 'static,
{
    register_codec_v3(CodecRuntimePluginV3::new(
        move |name| name.strip_prefix("numcodecs.") == Some(id),
        move |metadata: &MetadataV3| Ok(codec(make(metadata.configuration())?)),
    ));
    register_codec_v2(CodecRuntimePluginV2::new(
        move |name| name == id,
        move |metadata: &MetadataV2| Ok(codec(make(Some(metadata.configuration()))?)),
    ));
}

fn codec<D: NumcodecsDecoder>(decoder: D) -> Codec {
    Codec::BytesToBytes(Arc::new(Plugin(decoder)))
}

/// A [`NumcodecsDecoder`] as a zarrs codec.
#[derive(Debug)]
struct Plugin<D>(D);

impl<D: NumcodecsDecoder> ExtensionName for Plugin<D> {
    fn name(&self, version: ZarrVersion) -> Option<Cow<'static, str>> {
        Some(match version {
            ZarrVersion::V2 => Cow::Borrowed(self.0.id()),
            _ => Cow::Owned(format!("numcodecs.{}", self.0.id())),
        })
    }
}

impl<D: NumcodecsDecoder> CodecTraits for Plugin<D> {
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn configuration(
        &self,
        _version: ZarrVersion,
        _options: &CodecMetadataOptions,
    ) -> Option<Configuration> {
        Some(self.0.configuration())
    }

    fn partial_decoder_capability(&self) -> PartialDecoderCapability {
        PartialDecoderCapability {
            partial_read: false,
            partial_decode: false,
        }
    }

    fn partial_encoder_capability(&self) -> PartialEncoderCapability {
        PartialEncoderCapability {
            partial_encode: false,
        }
    }
}

impl<D: NumcodecsDecoder> BytesToBytesCodecTraits for Plugin<D> {
    fn into_dyn(self: Arc<Self>) -> Arc<dyn BytesToBytesCodecTraits> {
        self
    }

    fn recommended_concurrency(
        &self,
        _decoded_representation: &BytesRepresentation,
    ) -> Result<RecommendedConcurrency, CodecError> {
        Ok(RecommendedConcurrency::new_maximum(1))
    }

    fn encoded_representation(
        &self,
        decoded_representation: &BytesRepresentation,
    ) -> BytesRepresentation {
        self.0.encoded_representation(decoded_representation)
    }

    fn encode<'a>(
        &self,
        decoded_value: ArrayBytesRaw<'a>,
        _options: &CodecOptions,
    ) -> Result<ArrayBytesRaw<'a>, CodecError> {
        self.0.encode(&decoded_value).map(ArrayBytesRaw::from)
    }

    fn decode<'a>(
        &self,
        encoded_value: ArrayBytesRaw<'a>,
        decoded_representation: &BytesRepresentation,
        _options: &CodecOptions,
    ) -> Result<ArrayBytesRaw<'a>, CodecError> {
        self.0.decode(encoded_value, decoded_representation)
    }
}

/// A numcodecs dtype string's element width and byte order: `<u4`, `>i2`, `|u1`, `<U6`
/// (code units: width 4 × 6).
pub(super) fn dtype(text: &str) -> Option<(usize, bool)> {
    let (order, rest) = text.split_at_checked(1)?;
    let big_endian = match order {
        "<" | "|" => false,
        ">" => true,
        _ => return None,
    };
    let (kind, size) = rest.split_at_checked(1)?;
    let size: usize = size.parse().ok()?;
    match kind {
        "u" | "i" if matches!(size, 1 | 2 | 4 | 8) => Some((size, big_endian)),
        "U" if size > 0 => Some((size.checked_mul(4)?, big_endian)),
        _ => None,
    }
}

/// The encoded size of a codec that stores each `decoded_width`-byte element as
/// `encoded_width` bytes (astype, categorize).
pub(super) fn per_element_representation(
    decoded: &BytesRepresentation,
    decoded_width: usize,
    encoded_width: usize,
) -> BytesRepresentation {
    match decoded {
        BytesRepresentation::FixedSize(n) => {
            // Saturating: a size past u64 is refused by the chunk's limit, not wrapped to a small one.
            let elements = n / (decoded_width.max(1) as u64);
            BytesRepresentation::FixedSize(elements.saturating_mul(encoded_width as u64))
        }
        other => *other,
    }
}

/// For such a codec: the decoded size of `len` encoded bytes, checked to be whole elements
/// that fit what the chunk declares.
pub(super) fn per_element_decoded_size(
    id: &str,
    len: usize,
    encoded_width: usize,
    decoded_width: usize,
    decoded: &BytesRepresentation,
) -> Result<usize, CodecError> {
    let size = ((len / encoded_width.max(1)) as u64).saturating_mul(decoded_width as u64);
    let fits = match decoded {
        BytesRepresentation::FixedSize(n) => size == *n,
        BytesRepresentation::BoundedSize(n) => size <= *n,
        BytesRepresentation::UnboundedSize => false,
    };
    match (len % encoded_width.max(1), fits) {
        (0, true) => usize::try_from(size).map_err(|e| CodecError::Other(e.to_string())),
        _ => Err(CodecError::Other(format!(
            "{id} data is {len} bytes of {encoded_width}-byte elements, which decode to {size} \
             bytes; the chunk declares {decoded}"
        ))),
    }
}

/// The unsigned integer of `bytes` (1 to 8 of them) in the given byte order.
pub(super) fn read_uint(bytes: &[u8], big_endian: bool) -> u64 {
    let mut b = [0u8; 8];
    let w = bytes.len().min(8);
    if big_endian {
        b[8 - w..].copy_from_slice(&bytes[..w]);
        u64::from_be_bytes(b)
    } else {
        b[..w].copy_from_slice(&bytes[..w]);
        u64::from_le_bytes(b)
    }
}
