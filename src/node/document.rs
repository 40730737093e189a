//! A metadata document read as far as the reader uses it: its top-level keys as JSON values,
//! but `attributes` and `consolidated_metadata` (most of a large document: a long attribute,
//! thousands of arrays) kept as the raw text they are, borrowed from the fetched bytes, and
//! the entries of consolidated metadata picked by key without parsing the others.
//!
//! serde_json's `Value` costs 20–100× the text it parses (a number in a list is 80 bytes
//! under `preserve_order`, which zarrs turns on): a whole document as values made a 30 MiB
//! `zarr.json` cost 3.5 GiB. serde_json's borrowed `RawValue` and `IgnoredAny` skip what is
//! not used at no cost; the visitor here, which keeps only the entries asked for, is ours.

use std::borrow::Cow;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::validate;

/// The top-level keys kept as raw text.
const RAW_KEYS: [&str; 2] = ["attributes", "consolidated_metadata"];

/// The top-level keys a Zarr document has beyond V3's arrays' (`validate::V3_KEYS`): V2's
/// `.zarray`, netCDF's NCZarr keys, `.zmetadata`'s. Parsed as values whatever their size (a
/// codec's configuration can be long).
const OTHER_ZARR_KEYS: [&str; 9] = [
    "chunks",
    "dtype",
    "compressor",
    "filters",
    "order",
    "dimension_separator",
    "_NCZARR_ARRAY",
    "_NCZARR_GROUP",
    "_NCZARR_SUPERBLOCK",
];

/// Whether `key` is one of Zarr's top-level keys.
fn is_zarr_key(key: &str) -> bool {
    validate::V3_KEYS.contains(&key)
        || OTHER_ZARR_KEYS.contains(&key)
        || key == "zarr_consolidated_format"
}

/// Other top-level keys (extensions) are parsed up to this size; a longer one is an error.
pub(crate) const MAX_OTHER_KEY_BYTES: usize = 64 << 10;

/// One metadata document, borrowing from its text.
pub(super) struct Document<'a> {
    /// Every top-level key but the raw ones, as a JSON object.
    pub(super) fields: Value,
    /// `attributes`, as written.
    pub(super) attributes: Option<&'a RawValue>,
    /// `consolidated_metadata`, as written.
    pub(super) consolidated: Option<&'a RawValue>,
}

impl<'a> Document<'a> {
    /// Parses `text` (JSON, non-finite numbers already quoted: `json::normalized`). The
    /// message of an error is serde_json's, or names the key too long to parse.
    pub(super) fn parse(text: &'a [u8]) -> Result<Self, String> {
        let entries = entries(text, &|_| true).map_err(|e| e.to_string())?;
        let mut document = Document {
            fields: Value::Object(Map::new()),
            attributes: None,
            consolidated: None,
        };
        let Value::Object(fields) = &mut document.fields else {
            return Err("not a JSON object".into());
        };
        for (key, raw) in entries {
            match key.as_ref() {
                "attributes" => document.attributes = Some(raw),
                "consolidated_metadata" => document.consolidated = Some(raw),
                known if is_zarr_key(known) => {
                    fields.insert(key.into_owned(), parse_value(raw)?);
                }
                other if raw.get().len() > MAX_OTHER_KEY_BYTES => {
                    return Err(format!(
                        "its key {other} holds {} bytes of JSON: keys other than Zarr's are \
                         read up to {MAX_OTHER_KEY_BYTES} bytes",
                        raw.get().len()
                    ));
                }
                _ => {
                    fields.insert(key.into_owned(), parse_value(raw)?);
                }
            }
        }
        debug_assert!(RAW_KEYS.iter().all(|k| !fields.contains_key(*k)));
        Ok(document)
    }
}

/// `raw` as a JSON value (serde_json's nesting limit applies).
pub(super) fn parse_value(raw: &RawValue) -> Result<Value, String> {
    serde_json::from_str(raw.get()).map_err(|e| e.to_string())
}

/// The entries of the JSON object `text` whose keys `keep` accepts, borrowed, in order; the
/// others are skipped unparsed. An error when `text` is not one JSON object.
pub(super) fn entries<'a>(
    text: &'a [u8],
    keep: &dyn Fn(&str) -> bool,
) -> Result<Vec<(Cow<'a, str>, &'a RawValue)>, serde_json::Error> {
    let mut deserializer = serde_json::Deserializer::from_slice(text);
    let entries = Entries { keep }.deserialize(&mut deserializer)?;
    deserializer.end()?;
    Ok(entries)
}

/// The entry `key` of the JSON object `raw`, if it has one.
pub(super) fn entry<'a>(raw: &'a RawValue, key: &str) -> Result<Option<&'a RawValue>, String> {
    let found = entries(raw.get().as_bytes(), &|k| k == key).map_err(|e| e.to_string())?;
    Ok(found.into_iter().next().map(|(_, value)| value))
}

/// Reads a JSON object's entries, keeping those `keep` accepts.
struct Entries<'k> {
    keep: &'k dyn Fn(&str) -> bool,
}

impl<'de> DeserializeSeed<'de> for Entries<'_> {
    type Value = Vec<(Cow<'de, str>, &'de RawValue)>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Entries<'_> {
    type Value = Vec<(Cow<'de, str>, &'de RawValue)>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Self::Value, M::Error> {
        let mut kept = Vec::new();
        while let Some(Key(key)) = map.next_key()? {
            if (self.keep)(&key) {
                kept.push((key, map.next_value::<&RawValue>()?));
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(kept)
    }
}

/// A key, borrowed from the text unless it has escapes (serde's own `Cow<str>` always copies).
struct Key<'de>(Cow<'de, str>);

impl<'de> serde::Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_str(KeyVisitor)
    }
}

struct KeyVisitor;

impl<'de> Visitor<'de> for KeyVisitor {
    type Value = Key<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string")
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Key(Cow::Borrowed(v)))
    }

    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Key(Cow::Owned(v.to_string())))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn documents_keep_attributes_and_consolidated_metadata_raw() {
        let text = br#"{"zarr_format": 3, "attributes": {"a": [1, 2]},
            "consolidated_metadata": {"metadata": {"x": {}, "y/z": {}}}, "node_type": "group"}"#;
        let doc = Document::parse(text).unwrap();
        assert_eq!(doc.fields, json!({"zarr_format": 3, "node_type": "group"}));
        assert_eq!(doc.attributes.unwrap().get(), r#"{"a": [1, 2]}"#);
        let metadata = entry(doc.consolidated.unwrap(), "metadata")
            .unwrap()
            .unwrap();
        let direct = entries(metadata.get().as_bytes(), &|k| !k.contains('/')).unwrap();
        assert_eq!(direct.len(), 1);
        assert_eq!(direct[0].0, "x");
        // Escaped keys are read (copied), and a document must be one object.
        let escaped = entries(br#"{"a\u0062": 1}"#, &|_| true).unwrap();
        assert_eq!(escaped[0].0, "ab");
        assert!(Document::parse(b"[1]").is_err());
        assert!(Document::parse(br#"{"a": 1} 2"#).is_err());
        // An extension key is parsed up to its limit.
        let long = format!(r#"{{"x": "{}"}}"#, "y".repeat(MAX_OTHER_KEY_BYTES));
        let e = Document::parse(long.as_bytes()).err().unwrap();
        assert!(e.contains("its key x holds 65538 bytes"), "{e}");
    }
}
