//! numcodecs' PackBits filter (V2 filter `packbits`, V3 `numcodecs.packbits`) on boolean
//! arrays: a first byte saying how many bits pad the last byte (0 to 7), then the booleans
//! eight to a byte, the first in the most significant bit (NumPy's `packbits`). Decoding
//! writes one byte, 0 or 1, per boolean. zarrs' `packbits` is the Zarr V3 extension codec of
//! that name, another format.

use std::borrow::Cow;

use zarrs::array::{ArrayBytesRaw, BytesRepresentation, CodecError};
use zarrs::metadata::Configuration;
use zarrs::plugin::PluginCreateError;

use super::plugin::NumcodecsDecoder;

/// Registers the codec with zarrs (see [`super::register`]).
pub(super) fn register() {
    super::plugin::register("packbits", PackBits::new);
}

#[derive(Debug)]
struct PackBits {
    configuration: Configuration,
}

impl PackBits {
    fn new(configuration: Option<&Configuration>) -> Result<Self, PluginCreateError> {
        Ok(Self {
            configuration: configuration.cloned().unwrap_or_default(),
        })
    }
}

impl NumcodecsDecoder for PackBits {
    fn id(&self) -> &'static str {
        "packbits"
    }

    fn configuration(&self) -> Configuration {
        self.configuration.clone()
    }

    fn encoded_representation(&self, decoded: &BytesRepresentation) -> BytesRepresentation {
        match decoded {
            BytesRepresentation::FixedSize(n) => BytesRepresentation::FixedSize(1 + n.div_ceil(8)),
            BytesRepresentation::BoundedSize(n) => {
                BytesRepresentation::BoundedSize(1 + n.div_ceil(8))
            }
            BytesRepresentation::UnboundedSize => BytesRepresentation::UnboundedSize,
        }
    }

    fn decode<'a>(
        &self,
        encoded: ArrayBytesRaw<'a>,
        decoded: &BytesRepresentation,
    ) -> Result<ArrayBytesRaw<'a>, CodecError> {
        let Some((&padding, packed)) = encoded.split_first() else {
            return Err(CodecError::Other(
                "packbits data is empty; it starts with a byte counting the padding bits".into(),
            ));
        };
        if padding > 7 {
            return Err(CodecError::Other(format!(
                "packbits data says {padding} bits pad its last byte; at most 7 can"
            )));
        }
        let bits = (packed.len() as u64 * 8).checked_sub(u64::from(padding));
        let fits = match (bits, decoded) {
            (Some(n), BytesRepresentation::FixedSize(size)) => n == *size,
            (Some(n), BytesRepresentation::BoundedSize(size)) => n <= *size,
            _ => false,
        };
        let Some(bits) = bits.filter(|_| fits) else {
            let len = encoded.len();
            return Err(CodecError::Other(match bits {
                Some(n) => format!(
                    "packbits data of {len} bytes with {padding} padding bits holds {n} \
                     booleans; the chunk declares {decoded}"
                ),
                None => format!(
                    "packbits data of {len} bytes is shorter than its {padding} padding bits"
                ),
            }));
        };
        let mut out = Vec::with_capacity(packed.len() * 8);
        for byte in packed {
            out.extend((0..8).rev().map(|bit| (byte >> bit) & 1));
        }
        out.truncate(usize::try_from(bits).map_err(|e| CodecError::Other(e.to_string()))?);
        Ok(Cow::Owned(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(encoded: &[u8], booleans: u64) -> Result<Vec<u8>, CodecError> {
        let codec = PackBits::new(None).unwrap();
        let repr = BytesRepresentation::FixedSize(booleans);
        codec
            .decode(Cow::Owned(encoded.to_vec()), &repr)
            .map(Cow::into_owned)
    }

    #[test]
    fn unpacks_as_numpy() {
        // numcodecs.PackBits().encode(np.array([True, False, False, True])) is [4, 144].
        assert_eq!(decode(&[4, 144], 4).unwrap(), [1, 0, 0, 1]);
        assert_eq!(
            decode(&[0, 0b1000_0001], 8).unwrap(),
            [1, 0, 0, 0, 0, 0, 0, 1]
        );
        assert_eq!(decode(&[0], 0).unwrap(), Vec::<u8>::new());
    }

    #[test]
    fn refuses_data_that_does_not_fit() {
        for (encoded, booleans, rule) in [
            (&[][..], 0, "empty"),
            (&[8, 0][..], 0, "at most 7"),
            (
                &[4, 144][..],
                5,
                "holds 4 booleans; the chunk declares fixed size: 5",
            ),
            (&[1][..], 0, "shorter than its 1 padding bits"),
        ] {
            let e = decode(encoded, booleans).unwrap_err().to_string();
            assert!(e.contains(rule), "{encoded:?}: {e}");
        }
    }
}
