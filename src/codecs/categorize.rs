//! numcodecs' Categorize filter (V2 filter `categorize`, V3 `numcodecs.categorize`), which
//! zarrs lacks: the labels live in the metadata and each element is stored as a small integer
//! code (`astype`), 0 for a value that is no label (decoded as the empty string, as numcodecs
//! does) and `i + 1` for `labels[i]`. Decoding writes each label as the array's `<U`/`>U`
//! elements: UTF-32 code units padded with U+0000 to the `dtype`'s width. Categorize on
//! `object` arrays (variable-length strings) is refused as unsupported.

use std::borrow::Cow;

use serde_json::Value;
use zarrs::array::{ArrayBytesRaw, BytesRepresentation, CodecError};
use zarrs::metadata::Configuration;
use zarrs::plugin::PluginCreateError;

use super::plugin::{self, NumcodecsDecoder};

/// Registers the codec with zarrs (see [`super::register`]).
pub(super) fn register() {
    plugin::register("categorize", Categorize::new);
}

#[derive(Debug)]
struct Categorize {
    configuration: Configuration,
    /// The labels' UTF-32 code units, each at its own length (padded only as it is written
    /// out: a million short labels of a `<U300` dtype took 1.7 GB padded to the width).
    labels: Vec<u8>,
    /// Where each label ends in `labels`.
    label_ends: Vec<usize>,
    /// Bytes per decoded element.
    width: usize,
    /// Bytes per code, and their byte order.
    code_width: usize,
    code_big_endian: bool,
}

impl Categorize {
    fn new(configuration: Option<&Configuration>) -> Result<Self, PluginCreateError> {
        let configuration = configuration.cloned().unwrap_or_default();
        let text = |key: &str| configuration.get(key).and_then(Value::as_str).unwrap_or("");
        let (dtype, astype) = (text("dtype"), text("astype"));
        let unsupported = |why: &str| {
            PluginCreateError::Other(format!(
                "categorize with dtype {dtype:?} and astype {astype:?} is unsupported: {why}"
            ))
        };
        let (width, big_endian) = plugin::dtype(dtype)
            .filter(|_| dtype.contains('U'))
            .ok_or_else(|| unsupported("the reader decodes it to <U or >U strings"))?;
        let (code_width, code_big_endian) = plugin::dtype(astype)
            .filter(|_| !astype.contains('U'))
            .ok_or_else(|| unsupported("codes must be integers"))?;
        let listed = configuration
            .get("labels")
            .and_then(Value::as_array)
            .ok_or_else(|| unsupported("labels must be a list of strings"))?;
        let mut labels = Vec::new();
        let mut label_ends = Vec::with_capacity(listed.len());
        for label in listed {
            let label = label
                .as_str()
                .ok_or_else(|| unsupported("labels must be strings"))?;
            let start = labels.len();
            labels.extend(label.chars().flat_map(|c| match big_endian {
                true => (c as u32).to_be_bytes(),
                false => (c as u32).to_le_bytes(),
            }));
            if labels.len() - start > width {
                return Err(unsupported(&format!(
                    "label {label:?} is longer than the dtype holds"
                )));
            }
            label_ends.push(labels.len());
        }
        Ok(Self {
            configuration,
            labels,
            label_ends,
            width,
            code_width,
            code_big_endian,
        })
    }
}

impl Categorize {
    /// Label `i`'s code units, unpadded (at most `width` bytes, checked when read).
    fn label(&self, i: usize) -> Option<&[u8]> {
        let start = match i.checked_sub(1) {
            Some(before) => *self.label_ends.get(before)?,
            None => 0,
        };
        self.labels.get(start..*self.label_ends.get(i)?)
    }
}

impl NumcodecsDecoder for Categorize {
    fn id(&self) -> &'static str {
        "categorize"
    }

    fn configuration(&self) -> Configuration {
        self.configuration.clone()
    }

    fn encoded_representation(&self, decoded: &BytesRepresentation) -> BytesRepresentation {
        plugin::per_element_representation(decoded, self.width, self.code_width)
    }

    fn decode<'a>(
        &self,
        encoded: ArrayBytesRaw<'a>,
        decoded: &BytesRepresentation,
    ) -> Result<ArrayBytesRaw<'a>, CodecError> {
        let cw = self.code_width;
        let size =
            plugin::per_element_decoded_size("categorize", encoded.len(), cw, self.width, decoded)?;
        let mut out = Vec::with_capacity(size);
        for code in encoded.chunks_exact(cw) {
            let code = plugin::read_uint(code, self.code_big_endian);
            match code {
                0 => out.resize(out.len() + self.width, 0),
                k => {
                    let label = usize::try_from(k - 1).ok().and_then(|i| self.label(i));
                    let label = label.ok_or_else(|| {
                        CodecError::Other(format!(
                            "categorize code {k} names no label (there are {})",
                            self.label_ends.len()
                        ))
                    })?;
                    out.extend_from_slice(label);
                    out.resize(out.len() + self.width.saturating_sub(label.len()), 0);
                }
            }
        }
        Ok(Cow::Owned(out))
    }
}
