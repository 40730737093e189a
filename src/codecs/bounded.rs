//! Decoders bounded by the declared chunk size, registered in place of zarrs' own: gzip, zlib,
//! zstd, bz2 and blosc stop at the size the metadata declares for the chunk (or, where it
//! declares none, at the table's `max_chunk_bytes`), instead of allocating first and checking
//! after.

use std::borrow::Cow;
use std::io::Read;
use std::sync::Arc;

use zarrs::array::codec::api::{
    CodecRuntimePluginV2, CodecRuntimePluginV3, PartialDecoderCapability, PartialEncoderCapability,
    register_codec_v2, register_codec_v3,
};
use zarrs::array::codec::{BloscCodec, Bz2Codec, GzipCodec, ZlibCodec, ZstdCodec};
use zarrs::array::{
    ArrayBytesRaw, BytesRepresentation, BytesToBytesCodecTraits, Codec, CodecError,
    CodecMetadataOptions, CodecOptions, CodecTraits, CodecTraitsV2, CodecTraitsV3,
    RecommendedConcurrency,
};
use zarrs::metadata::Configuration;
use zarrs::metadata::v2::MetadataV2;
use zarrs::metadata::v3::MetadataV3;
use zarrs::metadata_ext::codec::blosc::{
    BloscCodecConfigurationNumcodecs, codec_blosc_v2_numcodecs_to_v3,
};
use zarrs::plugin::{ExtensionName, PluginCreateError, ZarrVersion};

use crate::limits;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Gzip,
    Zlib,
    Zstd,
    Bz2,
    Blosc,
}

impl Kind {
    fn of(name: &str) -> Option<Self> {
        match name.strip_prefix("numcodecs.").unwrap_or(name) {
            "gzip" => Some(Kind::Gzip),
            "zlib" => Some(Kind::Zlib),
            "zstd" => Some(Kind::Zstd),
            "bz2" => Some(Kind::Bz2),
            "blosc" => Some(Kind::Blosc),
            _ => None,
        }
    }
}

/// A zarrs bytes-to-bytes codec whose decoding stops at the declared size.
#[derive(Debug)]
struct Bounded {
    inner: Arc<dyn BytesToBytesCodecTraits>,
    kind: Kind,
}

/// Registers the bounded decoders with zarrs (see [`super::register`]).
pub(super) fn register() {
    register_codec_v3(CodecRuntimePluginV3::new(
        |name| Kind::of(name).is_some(),
        |metadata: &MetadataV3| {
            let kind = Kind::of(metadata.name()).ok_or_else(|| {
                PluginCreateError::Other(format!("unexpected codec {}", metadata.name()))
            })?;
            // zarr-python 3's `numcodecs.*` codecs carry numcodecs' own configuration (zstd
            // without `checksum`, blosc with an integer shuffle), which is the V2 one.
            if let Some(id) = metadata.name().strip_prefix("numcodecs.") {
                return wrap(create_v2(kind, &numcodecs_as_v2(id, metadata)?)?, kind);
            }
            let inner = match kind {
                Kind::Gzip => <GzipCodec as CodecTraitsV3>::create(metadata)?,
                Kind::Zlib => <ZlibCodec as CodecTraitsV3>::create(metadata)?,
                Kind::Zstd => <ZstdCodec as CodecTraitsV3>::create(metadata)?,
                Kind::Bz2 => <Bz2Codec as CodecTraitsV3>::create(metadata)?,
                Kind::Blosc => <BloscCodec as CodecTraitsV3>::create(metadata)?,
            };
            wrap(inner, kind)
        },
    ));
    register_codec_v2(CodecRuntimePluginV2::new(
        |name| Kind::of(name).is_some(),
        |metadata: &MetadataV2| {
            let kind = Kind::of(metadata.id()).ok_or_else(|| {
                PluginCreateError::Other(format!("unexpected codec {}", metadata.id()))
            })?;
            wrap(create_v2(kind, metadata)?, kind)
        },
    ));
}

/// zarrs' codec of `kind` from V2 (numcodecs) metadata.
fn create_v2(kind: Kind, metadata: &MetadataV2) -> Result<Codec, PluginCreateError> {
    match kind {
        Kind::Gzip => <GzipCodec as CodecTraitsV2>::create(metadata),
        Kind::Zlib => <ZlibCodec as CodecTraitsV2>::create(metadata),
        Kind::Zstd => <ZstdCodec as CodecTraitsV2>::create(metadata),
        Kind::Bz2 => <Bz2Codec as CodecTraitsV2>::create(metadata),
        Kind::Blosc => blosc_from_numcodecs(metadata),
    }
}

/// zarrs' blosc codec from numcodecs' configuration (an integer `shuffle`, no `typesize`),
/// which zarrs refuses directly. Decoding reads the shuffle and type size from each blosc
/// header, so the configuration's matter only for encoding, which the reader never does.
fn blosc_from_numcodecs(metadata: &MetadataV2) -> Result<Codec, PluginCreateError> {
    let numcodecs: BloscCodecConfigurationNumcodecs = metadata
        .to_typed_configuration()
        .map_err(|e| PluginCreateError::Other(format!("invalid blosc configuration: {e}")))?;
    let configuration = codec_blosc_v2_numcodecs_to_v3(&numcodecs, None);
    let codec = BloscCodec::new_with_configuration(&configuration)?;
    Ok(Codec::BytesToBytes(Arc::new(codec)))
}

/// The V2 metadata (`{"id": id, …configuration}`) of a V3 `numcodecs.<id>` codec.
fn numcodecs_as_v2(id: &str, metadata: &MetadataV3) -> Result<MetadataV2, PluginCreateError> {
    let mut document = serde_json::Map::new();
    if let Some(configuration) = metadata.configuration() {
        for (key, value) in configuration.iter() {
            document.insert(key.clone(), value.clone());
        }
    }
    document.insert("id".into(), id.into());
    serde_json::from_value(document.into()).map_err(|e| {
        PluginCreateError::Other(format!("numcodecs.{id} has an invalid configuration: {e}"))
    })
}

fn wrap(inner: Codec, kind: Kind) -> Result<Codec, PluginCreateError> {
    match inner {
        Codec::BytesToBytes(inner) => Ok(Codec::BytesToBytes(Arc::new(Bounded { inner, kind }))),
        _ => Err(PluginCreateError::Other(format!(
            "{kind:?} is not a bytes-to-bytes codec"
        ))),
    }
}

fn too_large(kind: Kind, bound: u64) -> CodecError {
    CodecError::Other(format!(
        "{kind:?} data decompresses to more than the {bound} bytes the chunk declares \
         (stopped at the bound; a decompression bomb or a corrupt chunk)"
    ))
}

/// Reads `reader` to the end, failing as soon as it yields more than `bound` bytes.
/// With `reserve`, room for `bound` bytes is made up front (when the size is declared by the
/// metadata), so the output is not regrown and copied while it fills.
fn read_bounded(
    mut reader: impl Read,
    bound: u64,
    reserve: bool,
    kind: Kind,
) -> Result<Vec<u8>, CodecError> {
    let mut out = match (reserve, usize::try_from(bound)) {
        (true, Ok(n)) => Vec::with_capacity(n.saturating_add(1)),
        _ => Vec::new(),
    };
    (&mut reader)
        .take(bound.saturating_add(1))
        .read_to_end(&mut out)?;
    if out.len() as u64 > bound {
        return Err(too_large(kind, bound));
    }
    Ok(out)
}

impl Bounded {
    fn bounded_decode<'a>(
        &self,
        encoded: ArrayBytesRaw<'a>,
        decoded: &BytesRepresentation,
        options: &CodecOptions,
    ) -> Result<ArrayBytesRaw<'a>, CodecError> {
        let (bound, declared) = match decoded {
            BytesRepresentation::FixedSize(n) | BytesRepresentation::BoundedSize(n) => (*n, true),
            BytesRepresentation::UnboundedSize => (limits::decode_bound(), false),
        };
        let out = match self.kind {
            Kind::Gzip => read_bounded(
                flate2::read::MultiGzDecoder::new(&*encoded),
                bound,
                declared,
                self.kind,
            )?,
            Kind::Zlib => read_bounded(
                flate2::read::ZlibDecoder::new(&*encoded),
                bound,
                declared,
                self.kind,
            )?,
            Kind::Bz2 => read_bounded(
                bzip2::read::MultiBzDecoder::new(&*encoded),
                bound,
                declared,
                self.kind,
            )?,
            Kind::Zstd => {
                // The frame header's content size is a claim: reject it when it exceeds the
                // bound, and decode with a streaming decoder that cannot outgrow the bound.
                if let Ok(Some(claimed)) = zstd::zstd_safe::get_frame_content_size(&encoded)
                    && claimed > bound
                {
                    return Err(too_large(self.kind, bound));
                }
                if !declared {
                    let decoder = zstd::stream::read::Decoder::new(&*encoded)?;
                    read_bounded(decoder, bound, false, self.kind)?
                } else {
                    // One-shot decompression into a buffer of exactly the declared size: zstd
                    // stops with "destination buffer too small" rather than grow it, and writes
                    // straight into the output (no streaming window copy, no regrowth).
                    let capacity =
                        usize::try_from(bound).map_err(|_| too_large(self.kind, bound))?;
                    let mut out = Vec::with_capacity(capacity);
                    zstd::bulk::Decompressor::new()?
                        .decompress_to_buffer(&encoded, &mut out)
                        .map_err(|e| {
                            if e.to_string().contains("too small") {
                                too_large(self.kind, bound)
                            } else {
                                CodecError::Other(format!("zstd data cannot be decoded: {e}"))
                            }
                        })?;
                    out
                }
            }
            Kind::Blosc => {
                // The blosc header declares the decompressed size (bytes 4..8) and the
                // compressed size (bytes 12..16); zarrs allocates what it declares.
                let header = encoded.get(..16).ok_or_else(|| {
                    CodecError::Other(format!(
                        "blosc data is {} bytes, shorter than its 16-byte header",
                        encoded.len()
                    ))
                })?;
                let nbytes = u32::from_le_bytes([header[4], header[5], header[6], header[7]]);
                let cbytes = u32::from_le_bytes([header[12], header[13], header[14], header[15]]);
                if u64::from(nbytes) > bound {
                    return Err(too_large(self.kind, bound));
                }
                if cbytes as usize > encoded.len() {
                    return Err(CodecError::Other(format!(
                        "blosc header declares {cbytes} compressed bytes, the chunk has {}",
                        encoded.len()
                    )));
                }
                return self.inner.decode(encoded, decoded, options);
            }
        };
        if let BytesRepresentation::FixedSize(n) = decoded
            && out.len() as u64 != *n
        {
            return Err(CodecError::Other(format!(
                "{:?} data decompresses to {} bytes, the chunk declares {n}",
                self.kind,
                out.len()
            )));
        }
        Ok(Cow::Owned(out))
    }
}

impl ExtensionName for Bounded {
    fn name(&self, version: ZarrVersion) -> Option<Cow<'static, str>> {
        self.inner.name(version)
    }
}

impl CodecTraits for Bounded {
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn configuration(
        &self,
        version: ZarrVersion,
        options: &CodecMetadataOptions,
    ) -> Option<Configuration> {
        self.inner.configuration(version, options)
    }

    fn partial_decoder_capability(&self) -> PartialDecoderCapability {
        self.inner.partial_decoder_capability()
    }

    fn partial_encoder_capability(&self) -> PartialEncoderCapability {
        self.inner.partial_encoder_capability()
    }
}

impl BytesToBytesCodecTraits for Bounded {
    fn into_dyn(self: Arc<Self>) -> Arc<dyn BytesToBytesCodecTraits> {
        self
    }

    fn recommended_concurrency(
        &self,
        decoded_representation: &BytesRepresentation,
    ) -> Result<RecommendedConcurrency, CodecError> {
        self.inner.recommended_concurrency(decoded_representation)
    }

    fn encoded_representation(
        &self,
        decoded_representation: &BytesRepresentation,
    ) -> BytesRepresentation {
        self.inner.encoded_representation(decoded_representation)
    }

    fn encode<'a>(
        &self,
        decoded_value: ArrayBytesRaw<'a>,
        options: &CodecOptions,
    ) -> Result<ArrayBytesRaw<'a>, CodecError> {
        self.inner.encode(decoded_value, options)
    }

    fn decode<'a>(
        &self,
        encoded_value: ArrayBytesRaw<'a>,
        decoded_representation: &BytesRepresentation,
        options: &CodecOptions,
    ) -> Result<ArrayBytesRaw<'a>, CodecError> {
        self.bounded_decode(encoded_value, decoded_representation, options)
    }
}
