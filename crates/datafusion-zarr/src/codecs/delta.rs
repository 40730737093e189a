//! numcodecs' Delta filter (V2 filter `delta`, V3 `numcodecs.delta`), which zarrs lacks: the
//! chunk holds the first integer and then the differences between neighbours; decoding is a
//! wrapping running sum. Users put it on `<U` arrays with `dtype: "<u4"`, over the UTF-32
//! code units. `astype` other than `dtype` (a narrowing cast) is refused as unsupported.

use std::borrow::Cow;

use serde_json::Value;
use zarrs::array::{ArrayBytesRaw, BytesRepresentation, CodecError};
use zarrs::metadata::Configuration;
use zarrs::plugin::PluginCreateError;

use super::plugin::{self, NumcodecsDecoder};

/// Registers the codec with zarrs (see [`super::register`]).
pub(super) fn register() {
    plugin::register("delta", Delta::new);
}

#[derive(Debug)]
struct Delta {
    configuration: Configuration,
    /// Bytes per integer.
    width: usize,
    big_endian: bool,
}

impl Delta {
    fn new(configuration: Option<&Configuration>) -> Result<Self, PluginCreateError> {
        let configuration = configuration.cloned().unwrap_or_default();
        let text = |key: &str| configuration.get(key).and_then(Value::as_str);
        let dtype =
            text("dtype").ok_or_else(|| PluginCreateError::Other("delta needs a dtype".into()))?;
        let astype = text("astype").unwrap_or(dtype);
        let unsupported = || {
            PluginCreateError::Other(format!(
                "delta with dtype {dtype} and astype {astype} is unsupported (integer dtypes \
                 stored as themselves are)"
            ))
        };
        let (width, big_endian) = plugin::dtype(dtype)
            .filter(|_| !dtype.contains('U'))
            .ok_or_else(unsupported)?;
        if plugin::dtype(astype) != Some((width, big_endian)) || astype.contains('U') {
            return Err(unsupported());
        }
        Ok(Self {
            configuration,
            width,
            big_endian,
        })
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
        *decoded
    }

    fn decode<'a>(
        &self,
        encoded: ArrayBytesRaw<'a>,
        decoded: &BytesRepresentation,
    ) -> Result<ArrayBytesRaw<'a>, CodecError> {
        let (w, len) = (self.width, encoded.len());
        let declared = match decoded {
            BytesRepresentation::FixedSize(n) => Some(*n),
            _ => None,
        };
        if len % w != 0 || declared.is_some_and(|n| n != len as u64) {
            return Err(CodecError::Other(format!(
                "delta data is {len} bytes, not {} of {w}-byte integers",
                declared.map_or("a whole number".to_string(), |n| format!(
                    "the declared {n} bytes"
                ))
            )));
        }
        let mask = if w == 8 {
            u64::MAX
        } else {
            (1u64 << (8 * w)) - 1
        };
        let mut out = encoded.into_owned();
        let mut sum = 0u64;
        for item in out.chunks_exact_mut(w) {
            let mut bytes = [0u8; 8];
            if self.big_endian {
                bytes[8 - w..].copy_from_slice(item);
                sum = sum.wrapping_add(u64::from_be_bytes(bytes)) & mask;
                item.copy_from_slice(&sum.to_be_bytes()[8 - w..]);
            } else {
                bytes[..w].copy_from_slice(item);
                sum = sum.wrapping_add(u64::from_le_bytes(bytes)) & mask;
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
        assert!(delta("<f8").is_err());
    }
}
