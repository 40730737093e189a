//! numcodecs' FixedScaleOffset filter (V2 filter `fixedscaleoffset`, V3
//! `numcodecs.fixedscaleoffset`), decoded as numcodecs decodes it: each stored value (of
//! `astype`, by default `dtype`) divided by `scale`, plus `offset`, cast to `dtype`. Ours in
//! place of zarrs' own, which holds `scale` and `offset` as `f32`: an offset of 273.15 (Celsius
//! stored as Kelvin) read every value 6e-6 off what zarr-python reads.
//!
//! The arithmetic is NumPy 2's for `(enc / scale) + offset`, where `scale` and `offset` are
//! Python numbers and so take the array's precision: `f32` when `astype` is `f4`, `f64`
//! otherwise (integers divide to `f64`). The cast to `dtype` is [`Numeric::write`]'s (floats
//! round to the nearest, integers truncate). Integer dtypes of 1 to 8 bytes and float dtypes
//! of 4 and 8 are read; others are refused as unsupported.

use serde_json::Value;
use zarrs::array::{ArrayBytesRaw, BytesRepresentation, CodecError};
use zarrs::metadata::Configuration;
use zarrs::plugin::PluginCreateError;

use super::astype::{Number, Numeric, map_elements};
use super::plugin::{self, NumcodecsDecoder};

/// Registers the codec with zarrs (see [`super::register`]).
pub(super) fn register() {
    plugin::register("fixedscaleoffset", FixedScaleOffset::new);
}

#[derive(Debug)]
struct FixedScaleOffset {
    configuration: Configuration,
    /// The stored dtype (`astype`).
    encode: Numeric,
    /// The array's dtype (`dtype`).
    decode: Numeric,
    scale: f64,
    offset: f64,
}

impl FixedScaleOffset {
    fn new(configuration: Option<&Configuration>) -> Result<Self, PluginCreateError> {
        let configuration = configuration.cloned().unwrap_or_default();
        let text = |key: &str| configuration.get(key).and_then(Value::as_str);
        let number = |key: &str| configuration.get(key).and_then(Value::as_f64);
        let decode = text("dtype").unwrap_or("");
        let encode = text("astype").unwrap_or(decode);
        let (Some(scale), Some(offset)) = (number("scale"), number("offset")) else {
            return Err(PluginCreateError::Other(
                "fixedscaleoffset needs a numeric scale and offset".into(),
            ));
        };
        match (Numeric::parse(encode), Numeric::parse(decode)) {
            (Some(e), Some(d)) => Ok(Self {
                configuration,
                encode: e,
                decode: d,
                scale,
                offset,
            }),
            _ => Err(PluginCreateError::Other(format!(
                "fixedscaleoffset with dtype {decode:?} and astype {encode:?} is unsupported \
                 (integer dtypes of 1 to 8 bytes and float dtypes of 4 and 8 are)"
            ))),
        }
    }

    /// One stored value, decoded.
    fn unscale(&self, stored: Number) -> Number {
        Number::Float(match (self.encode.kind, self.encode.width) {
            ('f', 4) => {
                let value = stored.as_f64() as f32;
                f64::from(value / self.scale as f32 + self.offset as f32)
            }
            _ => stored.as_f64() / self.scale + self.offset,
        })
    }
}

impl NumcodecsDecoder for FixedScaleOffset {
    fn id(&self) -> &'static str {
        "fixedscaleoffset"
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
        let (from, to) = (self.encode, self.decode);
        map_elements(self.id(), &encoded, decoded, from, to, |v| self.unscale(v))
    }
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use super::*;

    fn decode(config: serde_json::Value, encoded: Vec<u8>, decoded_width: usize) -> Vec<u8> {
        let c: Configuration = serde_json::from_value(config).unwrap();
        let codec = FixedScaleOffset::new(Some(&c)).unwrap();
        let n = encoded.len() / codec.encode.width * decoded_width;
        let repr = BytesRepresentation::FixedSize(n as u64);
        codec
            .decode(Cow::Owned(encoded), &repr)
            .unwrap()
            .into_owned()
    }

    /// Values NumPy 2.4.6 gives for `(enc / scale) + offset` cast to `dtype`.
    #[test]
    fn decodes_as_numpy() {
        let stored: Vec<u8> = [-4000i32, 1].iter().flat_map(|v| v.to_le_bytes()).collect();
        let config =
            serde_json::json!({"offset": 273.15, "scale": 100, "dtype": "<f8", "astype": "<i4"});
        // np.array([-4000, 1], '<i4') / 100 + 273.15
        let want: Vec<u8> = [233.14999999999998f64, 273.15999999999997]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        assert_eq!(decode(config, stored, 8), want);
        // float32 arithmetic: np.array([3.0], "<f4") / 0.37 + (-0.7) is float32 7.4081078.
        let stored = 3.0f32.to_be_bytes().to_vec();
        let config =
            serde_json::json!({"offset": -0.7, "scale": 0.37, "dtype": ">f4", "astype": ">f4"});
        let want = 7.408_107_8f32.to_be_bytes().to_vec();
        assert_eq!(decode(config, stored, 4), want);
        // Integers truncate: np.array([7], 'u1') / 2 + 0.0 cast to int16 is 3.
        let config = serde_json::json!({"offset": 0, "scale": 2, "dtype": "<i2", "astype": "|u1"});
        assert_eq!(decode(config, vec![7], 2), 3i16.to_le_bytes());
    }

    #[test]
    fn refuses_what_it_cannot_read() {
        for config in [
            serde_json::json!({"offset": 0, "scale": 1, "dtype": "<f2"}),
            serde_json::json!({"offset": 0, "dtype": "<f8"}),
            serde_json::json!({"offset": "a", "scale": 1, "dtype": "<f8"}),
        ] {
            let c: Configuration = serde_json::from_value(config).unwrap();
            assert!(FixedScaleOffset::new(Some(&c)).is_err());
        }
    }
}
