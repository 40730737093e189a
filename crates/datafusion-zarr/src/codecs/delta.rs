//! numcodecs' Delta filter (V2 filter `delta`, V3 `numcodecs.delta`), which zarrs lacks: the
//! chunk holds the first value and then the differences between neighbours, as `astype` (by
//! default `dtype`); decoding is NumPy's `cumsum` into `dtype`. Users put it on `<U` arrays
//! with `dtype: "<u4"`, over the UTF-32 code units, and on numeric arrays, often with a
//! narrower `astype` (`dtype: "<i8", astype: "<i2"`, numcodecs' own example).
//!
//! `cumsum` sums integers in 64 bits (NumPy's platform integer), wrapping, and floats in
//! `astype`'s precision, sequentially; the sums are cast to `dtype` as [`Numeric::write`]
//! does. One integer dtype stored as itself, the common case, is summed in place.

use std::borrow::Cow;

use serde_json::Value;
use zarrs::array::{ArrayBytesRaw, BytesRepresentation, CodecError};
use zarrs::metadata::Configuration;
use zarrs::plugin::PluginCreateError;

use super::astype::{Number, Numeric};
use super::plugin::{self, NumcodecsDecoder};

/// Registers the codec with zarrs (see [`super::register`]).
pub(super) fn register() {
    plugin::register("delta", Delta::new);
}

#[derive(Debug)]
struct Delta {
    configuration: Configuration,
    /// The stored differences (`astype`).
    encode: Numeric,
    /// The array's dtype (`dtype`).
    decode: Numeric,
}

impl Delta {
    fn new(configuration: Option<&Configuration>) -> Result<Self, PluginCreateError> {
        let configuration = configuration.cloned().unwrap_or_default();
        let text = |key: &str| configuration.get(key).and_then(Value::as_str);
        let dtype =
            text("dtype").ok_or_else(|| PluginCreateError::Other("delta needs a dtype".into()))?;
        let astype = text("astype").unwrap_or(dtype);
        match (Numeric::parse(astype), Numeric::parse(dtype)) {
            (Some(encode), Some(decode)) => Ok(Self {
                configuration,
                encode,
                decode,
            }),
            _ => Err(PluginCreateError::Other(format!(
                "delta with dtype {dtype} and astype {astype} is unsupported (integer dtypes of \
                 1 to 8 bytes and float dtypes of 4 and 8 are)"
            ))),
        }
    }

    /// `cumsum` of `encoded` (whole `astype` values) into `out`, as `dtype`.
    fn cumsum(&self, encoded: &[u8], out: &mut Vec<u8>) {
        let (from, to) = (self.encode, self.decode);
        match (from.kind, from.width) {
            ('f', 4) => {
                let mut sum = 0f32;
                for value in encoded.chunks_exact(4) {
                    sum += from.read(value).as_f64() as f32;
                    to.write(Number::Float(f64::from(sum)), out);
                }
            }
            ('f', _) => {
                let mut sum = 0f64;
                for value in encoded.chunks_exact(from.width) {
                    sum += from.read(value).as_f64();
                    to.write(Number::Float(sum), out);
                }
            }
            (kind, _) => {
                let mut sum = 0u64;
                for value in encoded.chunks_exact(from.width) {
                    if let Number::Int(v) = from.read(value) {
                        sum = sum.wrapping_add(v as u64);
                    }
                    let total = match kind {
                        'u' => i128::from(sum),
                        _ => i128::from(sum as i64),
                    };
                    to.write(Number::Int(total), out);
                }
            }
        }
    }
}

impl NumcodecsDecoder for Delta {
    fn id(&self) -> &'static str {
        "delta"
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
        let size = plugin::per_element_decoded_size(
            "delta",
            encoded.len(),
            self.encode.width,
            self.decode.width,
            decoded,
        )?;
        if self.encode != self.decode || self.decode.kind == 'f' {
            let mut out = Vec::with_capacity(size);
            self.cumsum(&encoded, &mut out);
            return Ok(Cow::Owned(out));
        }
        // One integer dtype: a wrapping sum, in place.
        let w = self.decode.width;
        let mask = if w == 8 {
            u64::MAX
        } else {
            (1u64 << (8 * w)) - 1
        };
        let big_endian = self.decode.big_endian();
        let mut out = encoded.into_owned();
        let mut sum = 0u64;
        for item in out.chunks_exact_mut(w) {
            sum = sum.wrapping_add(plugin::read_uint(item, big_endian)) & mask;
            if big_endian {
                item.copy_from_slice(&sum.to_be_bytes()[8 - w..]);
            } else {
                item.copy_from_slice(&sum.to_le_bytes()[..w]);
            }
        }
        Ok(Cow::Owned(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn delta(dtype: &str) -> Result<Delta, PluginCreateError> {
        let c: Configuration = serde_json::from_value(serde_json::json!({"dtype": dtype})).unwrap();
        Delta::new(Some(&c))
    }

    #[test]
    fn decodes_numcodecs_output() {
        // numcodecs.Delta(dtype="<u4").encode of "βeta" as UTF-32LE code units.
        let encoded: Vec<u8> = [946u32, 4294966451, 15, 4294967277]
            .iter()
            .flat_map(|u| u.to_le_bytes())
            .collect();
        let repr = BytesRepresentation::FixedSize(16);
        let d = delta("<u4").unwrap();
        let decoded = d.decode(Cow::Owned(encoded.clone()), &repr).unwrap();
        let want: Vec<u8> = "βeta"
            .chars()
            .flat_map(|c| (c as u32).to_le_bytes())
            .collect();
        assert_eq!(decoded.as_ref(), want.as_slice());
        let e = d
            .decode(Cow::Owned(encoded[..12].to_vec()), &repr)
            .unwrap_err();
        assert!(e.to_string().contains("delta data is 12 bytes"), "{e}");
        assert!(delta("<U6").is_err());
        assert!(delta("<f2").is_err());
    }
}
