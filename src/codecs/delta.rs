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

use super::astype::{Number, Numeric, int_to_f32, map_elements};
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

    /// NumPy's `cumsum` of `encoded` (whole `astype` values) into `dtype`: summed one after
    /// another in the type NumPy promotes the two dtypes to ([`Sum::of`]).
    fn cumsum<'a>(
        &self,
        encoded: &[u8],
        decoded: &BytesRepresentation,
    ) -> Result<ArrayBytesRaw<'a>, CodecError> {
        let (from, to) = (self.encode, self.decode);
        match Sum::of(from, to) {
            Sum::F32 => {
                let mut sum = 0f32;
                map_elements("delta", encoded, decoded, from, to, |value| {
                    sum += match value {
                        Number::Int(i) => int_to_f32(i),
                        Number::Float(f) => f as f32,
                    };
                    Number::Float(f64::from(sum))
                })
            }
            Sum::F64 => {
                let mut sum = 0f64;
                map_elements("delta", encoded, decoded, from, to, |value| {
                    sum += value.as_f64();
                    Number::Float(sum)
                })
            }
            Sum::Wrapping => {
                // Integers that fit the sum: it wraps as any integer at least as wide as
                // `dtype` does, and only `dtype`'s bytes are kept.
                let mut sum = 0u64;
                map_elements("delta", encoded, decoded, from, to, |value| {
                    if let Number::Int(v) = value {
                        sum = sum.wrapping_add(v as u64);
                    }
                    Number::Int(i128::from(sum))
                })
            }
        }
    }
}

/// The type NumPy's `cumsum(enc, out=dec)` sums in: `promote_types(astype, dtype)`.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Sum {
    /// Two integer dtypes that promote to an integer.
    Wrapping,
    F32,
    F64,
}

impl Sum {
    fn of(a: Numeric, b: Numeric) -> Self {
        let float = |n: Numeric| n.kind == 'f';
        if !float(a) && !float(b) {
            // uint64 with a signed integer has no common integer type: NumPy takes float64.
            let u64_and_signed =
                |x: Numeric, y: Numeric| x.kind == 'u' && x.width == 8 && y.kind == 'i';
            return match u64_and_signed(a, b) || u64_and_signed(b, a) {
                true => Sum::F64,
                false => Sum::Wrapping,
            };
        }
        // float32 holds a float32 and integers of up to 2 bytes exactly.
        let narrow = |n: Numeric| match n.kind {
            'f' => n.width == 4,
            _ => n.width <= 2,
        };
        match narrow(a) && narrow(b) {
            true => Sum::F32,
            false => Sum::F64,
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
        if self.encode != self.decode || self.decode.kind == 'f' {
            return self.cumsum(&encoded, decoded);
        }
        let w = self.decode.width;
        plugin::per_element_decoded_size("delta", encoded.len(), w, w, decoded)?;
        // One integer dtype: a wrapping sum, in place.
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

    /// `np.promote_types` for each pair, as NumPy 2.4.6 gives it.
    #[test]
    fn sums_in_the_type_numpy_promotes_to() {
        let n = |t: &str| Numeric::parse(t).unwrap();
        for (a, b, sum) in [
            ("<f4", "<f4", Sum::F32),
            ("<f4", "<f8", Sum::F64),
            ("<f4", "<i2", Sum::F32),
            ("<f4", "<i4", Sum::F64),
            ("|u1", "<f4", Sum::F32),
            ("<i8", "<i2", Sum::Wrapping),
            ("<u4", "<i8", Sum::Wrapping),
            ("<u8", "<i1", Sum::F64),
            ("<u8", "<u2", Sum::Wrapping),
        ] {
            assert_eq!(Sum::of(n(a), n(b)), sum, "{a} {b}");
            assert_eq!(Sum::of(n(b), n(a)), sum, "{b} {a}");
        }
    }

    /// numcodecs.Delta(dtype="<f8", astype="<f4").decode of float32 0.1, 0.2 sums in float64.
    #[test]
    fn a_float64_array_of_float32_differences_sums_in_float64() {
        let c: Configuration =
            serde_json::from_value(serde_json::json!({"dtype": "<f8", "astype": "<f4"})).unwrap();
        let d = Delta::new(Some(&c)).unwrap();
        let encoded: Vec<u8> = [0.1f32, 0.2].iter().flat_map(|v| v.to_le_bytes()).collect();
        let decoded = d
            .decode(Cow::Owned(encoded), &BytesRepresentation::FixedSize(16))
            .unwrap();
        let second = f64::from_le_bytes(decoded[8..].try_into().unwrap());
        assert_eq!(second, 0.30000000447034836);
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
