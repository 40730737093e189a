//! numcodecs' PCodec (Pco; V2 compressor `pcodec`, V3 serializer `numcodecs.pcodec`), decoded by
//! the `pco` crate into exactly the numbers the chunk declares. Registered in place of zarrs'
//! own (its `pcodec` feature, which we build for the configuration and the V2 conversion): that
//! one calls `pco::standalone::simple_decompress`, which grows its output to whatever the data
//! declares, so an 8.7 KB chunk of zeros declaring 2^27 numbers took 2.2 GB before the size was
//! refused (measured on zarrs 0.23.14). Here each pco chunk's count is checked against what is
//! left of the declared size before it is decoded into its place.

use std::borrow::Cow;
use std::num::NonZeroU64;
use std::sync::Arc;

use pco::data_types::Number;
use pco::standalone::{DecompressorItem, FileDecompressor};
use zarrs::array::codec::api::{
    CodecRuntimePluginV2, CodecRuntimePluginV3, PartialDecoderCapability, PartialEncoderCapability,
    register_codec_v2, register_codec_v3,
};
use zarrs::array::codec::array_to_bytes::pcodec::{
    PcodecCodec, PcodecDataTypeExt, PcodecElementType,
};
use zarrs::array::{
    ArrayBytes, ArrayBytesRaw, ArrayCodecTraits, ArrayToBytesCodecTraits, BytesRepresentation,
    Codec, CodecError, CodecMetadataOptions, CodecOptions, CodecTraits, CodecTraitsV2,
    CodecTraitsV3, DataType, FillValue, RecommendedConcurrency, transmute_to_bytes_vec,
};
use zarrs::metadata::Configuration;
use zarrs::metadata::v2::MetadataV2;
use zarrs::metadata::v3::MetadataV3;
use zarrs::plugin::{ExtensionName, PluginCreateError, ZarrVersion};

/// Registers the bounded decoder with zarrs (see [`super::register`]) under pcodec's names.
pub(super) fn register() {
    register_codec_v3(CodecRuntimePluginV3::new(
        |name| {
            matches!(
                name,
                "numcodecs.pcodec" | "https://codec.zarrs.dev/array_to_bytes/pcodec"
            )
        },
        |metadata: &MetadataV3| wrap(<PcodecCodec as CodecTraitsV3>::create(metadata)?),
    ));
    register_codec_v2(CodecRuntimePluginV2::new(
        |name| name == "pcodec",
        |metadata: &MetadataV2| wrap(<PcodecCodec as CodecTraitsV2>::create(metadata)?),
    ));
}

fn wrap(inner: Codec) -> Result<Codec, PluginCreateError> {
    match inner {
        Codec::ArrayToBytes(inner) => Ok(Codec::ArrayToBytes(Arc::new(BoundedPcodec { inner }))),
        _ => Err(PluginCreateError::Other(
            "pcodec is not an array-to-bytes codec".into(),
        )),
    }
}

/// zarrs' pcodec codec, whose decoding is ours.
#[derive(Debug)]
struct BoundedPcodec {
    inner: Arc<dyn ArrayToBytesCodecTraits>,
}

impl ExtensionName for BoundedPcodec {
    fn name(&self, version: ZarrVersion) -> Option<Cow<'static, str>> {
        Some(Cow::Borrowed(match version {
            ZarrVersion::V2 => "pcodec",
            _ => "numcodecs.pcodec",
        }))
    }
}

impl CodecTraits for BoundedPcodec {
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

impl ArrayCodecTraits for BoundedPcodec {
    fn recommended_concurrency(
        &self,
        _shape: &[NonZeroU64],
        _data_type: &DataType,
    ) -> Result<RecommendedConcurrency, CodecError> {
        Ok(RecommendedConcurrency::new_maximum(1))
    }
}

impl ArrayToBytesCodecTraits for BoundedPcodec {
    fn into_dyn(self: Arc<Self>) -> Arc<dyn ArrayToBytesCodecTraits> {
        self
    }

    fn encoded_representation(
        &self,
        shape: &[NonZeroU64],
        data_type: &DataType,
        fill_value: &FillValue,
    ) -> Result<BytesRepresentation, CodecError> {
        self.inner
            .encoded_representation(shape, data_type, fill_value)
    }

    fn encode<'a>(
        &self,
        _bytes: ArrayBytes<'a>,
        _shape: &[NonZeroU64],
        _data_type: &DataType,
        _fill_value: &FillValue,
        _options: &CodecOptions,
    ) -> Result<ArrayBytesRaw<'a>, CodecError> {
        Err(CodecError::Other(
            "pcodec: this reader does not write chunks".into(),
        ))
    }

    fn decode<'a>(
        &self,
        bytes: ArrayBytesRaw<'a>,
        shape: &[NonZeroU64],
        data_type: &DataType,
        _fill_value: &FillValue,
        _options: &CodecOptions,
    ) -> Result<ArrayBytes<'a>, CodecError> {
        let pcodec = data_type.codec_pcodec()?;
        let elements = shape
            .iter()
            .try_fold(1usize, |n, d| n.checked_mul(usize::try_from(d.get()).ok()?))
            .and_then(|n| n.checked_mul(pcodec.pcodec_elements_per_element()))
            .ok_or_else(|| CodecError::Other("pcodec: the chunk is too large".into()))?;
        let decoded = match pcodec.pcodec_element_type() {
            PcodecElementType::U16 => decode_exactly::<u16>(&bytes, elements),
            PcodecElementType::U32 => decode_exactly::<u32>(&bytes, elements),
            PcodecElementType::U64 => decode_exactly::<u64>(&bytes, elements),
            PcodecElementType::I16 => decode_exactly::<i16>(&bytes, elements),
            PcodecElementType::I32 => decode_exactly::<i32>(&bytes, elements),
            PcodecElementType::I64 => decode_exactly::<i64>(&bytes, elements),
            PcodecElementType::F16 => decode_exactly::<half::f16>(&bytes, elements),
            PcodecElementType::F32 => decode_exactly::<f32>(&bytes, elements),
            PcodecElementType::F64 => decode_exactly::<f64>(&bytes, elements),
        }?;
        Ok(ArrayBytes::from(decoded))
    }
}

/// The `n` numbers of the pco file `bytes` as bytes; an error if it holds another count, before
/// decoding any pco chunk that would overflow `n`.
fn decode_exactly<T: Number + bytemuck::NoUninit>(
    bytes: &[u8],
    n: usize,
) -> Result<Vec<u8>, CodecError> {
    let corrupt =
        |e: pco::errors::PcoError| CodecError::Other(format!("pcodec data cannot be decoded: {e}"));
    let (file, mut src) = FileDecompressor::new(bytes).map_err(corrupt)?;
    let mut out = vec![T::default(); n];
    let mut filled = 0usize;
    loop {
        match file.chunk_decompressor::<T, _>(src).map_err(corrupt)? {
            DecompressorItem::EndOfData(_) => break,
            DecompressorItem::Chunk(mut chunk) => {
                let count = chunk.n();
                let Some(end) = filled.checked_add(count).filter(|&end| end <= n) else {
                    return Err(CodecError::Other(format!(
                        "pcodec data holds more than the {n} numbers the chunk declares"
                    )));
                };
                let progress = chunk.read(&mut out[filled..end]).map_err(corrupt)?;
                if !progress.finished || progress.n_processed != count {
                    return Err(CodecError::Other(format!(
                        "pcodec data ends inside a pco chunk of {count} numbers"
                    )));
                }
                filled = end;
                src = chunk.into_src();
            }
        }
    }
    if filled != n {
        return Err(CodecError::Other(format!(
            "pcodec data holds {filled} numbers; the chunk declares {n}"
        )));
    }
    Ok(transmute_to_bytes_vec(out))
}
