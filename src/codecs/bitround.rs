//! numcodecs' BitRound filter (V2 filter `bitround`, V3 `numcodecs.bitround`): the writer
//! rounds each float's mantissa to `keepbits` bits and stores the float as it is, so decoding
//! returns the bytes unchanged (numcodecs' `decode` is a view of them), once their size is
//! checked. Ours rather than zarrs' (behind a feature we do not build): the same identity,
//! registered through [`plugin`] like our other numcodecs filters.

use serde_json::Value;
use zarrs::array::{ArrayBytesRaw, BytesRepresentation, CodecError};
use zarrs::metadata::Configuration;
use zarrs::plugin::PluginCreateError;

use super::plugin::{self, NumcodecsDecoder};

/// Registers the codec with zarrs (see [`super::register`]).
pub(super) fn register() {
    plugin::register("bitround", BitRound::new);
}

#[derive(Debug)]
struct BitRound {
    configuration: Configuration,
}

impl BitRound {
    fn new(configuration: Option<&Configuration>) -> Result<Self, PluginCreateError> {
        let configuration = configuration.cloned().unwrap_or_default();
        // numcodecs refuses a negative `keepbits`; one over the float's mantissa fails when it
        // encodes, so a store never holds it.
        if configuration
            .get("keepbits")
            .and_then(Value::as_u64)
            .is_none()
        {
            return Err(PluginCreateError::Other(
                "bitround needs keepbits, a non-negative integer".into(),
            ));
        }
        Ok(Self { configuration })
    }
}

impl NumcodecsDecoder for BitRound {
    fn id(&self) -> &'static str {
        "bitround"
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
        plugin::per_element_decoded_size("bitround", encoded.len(), 1, 1, decoded)?;
        Ok(encoded)
    }
}
