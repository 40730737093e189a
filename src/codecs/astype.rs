//! numcodecs' AsType filter (V2 filter `astype`, V3 `numcodecs.astype`) and Quantize filter
//! (`quantize`, `numcodecs.quantize`), which zarrs lacks: the chunk holds the values as one dtype
//! (AsType's `encode_dtype`, Quantize's `astype`; for example `<f8` stored as `<f4`, or `<i8` as
//! `<i2`) and decoding casts them to the other (`decode_dtype`, `dtype`) as NumPy's `astype`
//! does for these numeric kinds: integers wrap to the width, floats round to the nearest,
//! floats become integers by truncation. (Quantize rounds when it encodes; its decoding is this
//! cast alone.) Integer dtypes of 1 to 8 bytes and float dtypes of 4 and 8 are read; others are
//! refused as unsupported. In Zarr V3, zarr-python writes these before the `bytes` codec, whose
//! byte order then applies (`node/v3.rs` writes it into the dtypes); they decode the same way.

use std::borrow::Cow;

use serde_json::Value;
use zarrs::array::{ArrayBytesRaw, BytesRepresentation, CodecError};
use zarrs::metadata::Configuration;
use zarrs::plugin::PluginCreateError;

use super::plugin::{self, NumcodecsDecoder};

/// Registers the codec with zarrs (see [`super::register`]).
pub(super) fn register() {
    plugin::register("astype", AsType::new);
    plugin::register("quantize", AsType::quantize);
}

/// A numeric NumPy dtype: kind (`i`, `u`, `f`), width in bytes, byte order.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Numeric {
    pub(super) kind: char,
    pub(super) width: usize,
    big_endian: bool,
}

impl Numeric {
    /// The dtype `text` names (`<f8`, `>i2`, `|u1`), if we read it.
    pub(super) fn parse(text: &str) -> Option<Self> {
        let mut chars = text.chars();
        let big_endian = match chars.next()? {
            '<' | '|' => false,
            '>' => true,
            _ => return None,
        };
        let kind = chars.next()?;
        let width: usize = chars.as_str().parse().ok()?;
        let ok = match kind {
            'i' | 'u' => matches!(width, 1 | 2 | 4 | 8),
            'f' => matches!(width, 4 | 8),
            _ => false,
        };
        ok.then_some(Self {
            kind,
            width,
            big_endian,
        })
    }

    /// Whether the dtype is big-endian.
    pub(super) fn big_endian(self) -> bool {
        self.big_endian
    }

    /// The value at `bytes` (`width` of them).
    pub(super) fn read(self, bytes: &[u8]) -> Number {
        let raw = plugin::read_uint(bytes, self.big_endian);
        let bits = 8 * self.width as u32;
        match self.kind {
            'f' if self.width == 4 => Number::Float(f64::from(f32::from_bits(raw as u32))),
            'f' => Number::Float(f64::from_bits(raw)),
            // Sign-extend.
            'i' => Number::Int(((raw << (64 - bits)) as i64 >> (64 - bits)) as i128),
            _ => Number::Int(raw as i128),
        }
    }

    /// Appends `value` cast to this dtype.
    pub(super) fn write(self, value: Number, out: &mut Vec<u8>) {
        // An integer becomes a float with one rounding, as NumPy casts it (not through f64).
        let raw: u64 = match (self.kind, self.width, value) {
            ('f', 4, Number::Int(i)) => u64::from(int_to_f32(i).to_bits()),
            ('f', 4, Number::Float(f)) => u64::from((f as f32).to_bits()),
            ('f', _, Number::Int(i)) => int_to_f64(i).to_bits(),
            ('f', _, Number::Float(f)) => f.to_bits(),
            (_, _, Number::Int(i)) => i as u64,
            // Truncated toward zero; the width's bytes are kept.
            (_, _, Number::Float(f)) if f >= 0.0 => f as u64,
            (_, _, Number::Float(f)) => (f as i64) as u64,
        };
        if self.big_endian {
            out.extend_from_slice(&raw.to_be_bytes()[8 - self.width..]);
        } else {
            out.extend_from_slice(&raw.to_le_bytes()[..self.width]);
        }
    }
}

/// A value as read: integers exactly, floats widened to `f64` (exactly).
#[derive(Debug, Clone, Copy)]
pub(super) enum Number {
    Int(i128),
    Float(f64),
}

impl Number {
    pub(super) fn as_f64(self) -> f64 {
        match self {
            Number::Int(i) => int_to_f64(i),
            Number::Float(f) => f,
        }
    }
}

/// `i` (a value of an integer dtype of up to 8 bytes) as `f64`, rounded once, through `i64` or
/// `u64`: the processor converts those, where `i128 as f64` is a library call (29% of a
/// fixedscaleoffset decode's time, measured with `perf`).
pub(super) fn int_to_f64(i: i128) -> f64 {
    match (i64::try_from(i), u64::try_from(i)) {
        (Ok(v), _) => v as f64,
        (_, Ok(v)) => v as f64,
        _ => i as f64,
    }
}

/// [`int_to_f64`] for `f32`: rounded once, as NumPy casts an integer to float32.
pub(super) fn int_to_f32(i: i128) -> f32 {
    match (i64::try_from(i), u64::try_from(i)) {
        (Ok(v), _) => v as f32,
        (_, Ok(v)) => v as f32,
        _ => i as f32,
    }
}

#[derive(Debug)]
struct AsType {
    /// `astype` or `quantize`.
    id: &'static str,
    configuration: Configuration,
    encode: Numeric,
    decode: Numeric,
}

impl AsType {
    /// AsType: `encode_dtype` stored, `decode_dtype` read.
    fn new(configuration: Option<&Configuration>) -> Result<Self, PluginCreateError> {
        let configuration = configuration.cloned().unwrap_or_default();
        let text = |key: &str| configuration.get(key).and_then(Value::as_str).unwrap_or("");
        let (encode, decode) = (text("encode_dtype"), text("decode_dtype"));
        match (Numeric::parse(encode), Numeric::parse(decode)) {
            (Some(e), Some(d)) => Ok(Self {
                id: "astype",
                configuration,
                encode: e,
                decode: d,
            }),
            _ => Err(PluginCreateError::Other(format!(
                "astype from {encode:?} to {decode:?} is unsupported (integer dtypes of 1 to 8 \
                 bytes and float dtypes of 4 and 8 are)"
            ))),
        }
    }

    /// Quantize: `astype` (by default `dtype`) stored, `dtype` read; both floats, as numcodecs
    /// requires.
    fn quantize(configuration: Option<&Configuration>) -> Result<Self, PluginCreateError> {
        let configuration = configuration.cloned().unwrap_or_default();
        let text = |key: &str| configuration.get(key).and_then(Value::as_str);
        let decode = text("dtype").unwrap_or("");
        let encode = text("astype").unwrap_or(decode);
        let float = |t: &str| Numeric::parse(t).filter(|n| n.kind == 'f');
        match (float(encode), float(decode)) {
            (Some(e), Some(d)) => Ok(Self {
                id: "quantize",
                configuration,
                encode: e,
                decode: d,
            }),
            _ => Err(PluginCreateError::Other(format!(
                "quantize with dtype {decode:?} and astype {encode:?} is unsupported (float \
                 dtypes of 4 and 8 bytes are)"
            ))),
        }
    }
}

impl NumcodecsDecoder for AsType {
    fn id(&self) -> &'static str {
        self.id
    }

    fn configuration(&self) -> Configuration {
        self.configuration.clone()
    }

    fn encoded_representation(&self, decoded: &BytesRepresentation) -> BytesRepresentation {
        plugin::per_element_representation(decoded, self.decode.width, self.encode.width)
    }

    fn decode<'a>(
        &self,
        encoded: ArrayBytesRaw<'a>,
        decoded: &BytesRepresentation,
    ) -> Result<ArrayBytesRaw<'a>, CodecError> {
        map_elements(self.id, &encoded, decoded, self.encode, self.decode, |v| v)
    }
}

/// Decodes `encoded` (whole values of `from`) into values of `to`, each value read, passed
/// through `map` in order, and written: the loop astype, quantize, fixedscaleoffset and delta
/// share. The size is checked against what the chunk declares first.
pub(super) fn map_elements<'a>(
    id: &str,
    encoded: &[u8],
    decoded: &BytesRepresentation,
    from: Numeric,
    to: Numeric,
    mut map: impl FnMut(Number) -> Number,
) -> Result<ArrayBytesRaw<'a>, CodecError> {
    let size = plugin::per_element_decoded_size(id, encoded.len(), from.width, to.width, decoded)?;
    let mut out = Vec::with_capacity(size);
    for value in encoded.chunks_exact(from.width) {
        to.write(map(from.read(value)), &mut out);
    }
    Ok(Cow::Owned(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cast(encode: &str, decode: &str, encoded: Vec<u8>) -> Vec<u8> {
        let c: Configuration = serde_json::from_value(
            serde_json::json!({"encode_dtype": encode, "decode_dtype": decode}),
        )
        .unwrap();
        let codec = AsType::new(Some(&c)).unwrap();
        let n = encoded.len() / codec.encode.width * codec.decode.width;
        let repr = BytesRepresentation::FixedSize(n as u64);
        codec
            .decode(Cow::Owned(encoded), &repr)
            .unwrap()
            .into_owned()
    }

    #[test]
    fn casts_as_numpy() {
        let f32s: Vec<u8> = [1.5f32, -2.25, 1e10]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let want: Vec<u8> = [1.5f64, -2.25, 1e10f32 as f64]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        assert_eq!(cast("<f4", "<f8", f32s), want);
        let i16s: Vec<u8> = [1i16, -2, 300]
            .iter()
            .flat_map(|v| v.to_be_bytes())
            .collect();
        let want: Vec<u8> = [1i64, -2, 300]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        assert_eq!(cast(">i2", "<i8", i16s), want);
        assert_eq!(cast("|u1", "<i2", vec![255]), 255i16.to_le_bytes());
        // np.array([2**60 + 2**36 + 1], "<i8").astype("<f4") is 2**60 + 2**37: one rounding.
        let big = ((1i64 << 60) + (1 << 36) + 1).to_le_bytes().to_vec();
        let want = ((1u64 << 60) + (1 << 37)) as f32;
        assert_eq!(cast("<i8", "<f4", big), want.to_le_bytes());
        assert!(Numeric::parse("<f2").is_none() && Numeric::parse("<U3").is_none());
    }
}
