//! [`Attributes`], a node's attributes: kept whole as the JSON text they were written as
//! (parsed on demand, for `inspect` and `ZarrTable::metadata`), with the few this
//! reader interprets (CF's, xarray's dimension names) parsed beside it.

use std::sync::Arc;

use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::document::{entries, parse_value};

/// The attributes the reader interprets.
const USED: [&str; 10] = [
    "_ARRAY_DIMENSIONS",
    "_FillValue",
    "missing_value",
    "_Unsigned",
    "scale_factor",
    "add_offset",
    "units",
    "calendar",
    "dtype",
    "_Encoding",
];

/// A used attribute is parsed up to this size; a longer one is an error naming it (CF's are
/// scalars or short lists).
pub(crate) const MAX_USED_ATTRIBUTE_BYTES: usize = 64 << 10;

/// A node's attributes.
#[derive(Debug, Clone, Default)]
pub struct Attributes {
    /// The attributes as written (`None`: none).
    raw: Option<Arc<str>>,
    /// The used ones, parsed (or as rewritten: a joined character array's dimension names).
    used: Map<String, Value>,
}

impl Attributes {
    /// Reads `raw` (a JSON object; anything else reads as no attributes, as before), parsing
    /// the attributes this reader uses. An error names a used attribute too long to parse.
    pub(crate) fn read(raw: Option<&RawValue>) -> Result<Self, String> {
        let Some(raw) = raw else {
            return Ok(Self::default());
        };
        let Ok(found) = entries(raw.get().as_bytes(), &|k| USED.contains(&k)) else {
            return Ok(Self::default());
        };
        let mut used = Map::new();
        for (key, value) in found {
            let size = value.get().len();
            if size > MAX_USED_ATTRIBUTE_BYTES {
                return Err(format!(
                    "its attribute {key} holds {size} bytes of JSON: the attributes this reader \
                     interprets are read up to {MAX_USED_ATTRIBUTE_BYTES} bytes"
                ));
            }
            let value = parse_value(value).map_err(|e| format!("its attribute {key}: {e}"))?;
            used.insert(key.into_owned(), value);
        }
        Ok(Self {
            raw: Some(Arc::from(raw.get())),
            used,
        })
    }

    /// The used attribute `key`.
    pub fn get(&self, key: &str) -> Option<&Value> {
        debug_assert!(
            USED.contains(&key),
            "{key} is not among the used attributes"
        );
        self.used.get(key)
    }

    /// The used attributes, parsed.
    pub fn used(&self) -> &Map<String, Value> {
        &self.used
    }

    /// `self` with the used attribute `key` set to `value`.
    pub(crate) fn with(&self, key: &str, value: Value) -> Self {
        let mut rewritten = self.clone();
        rewritten.used.insert(key.to_string(), value);
        rewritten
    }

    /// The attributes as written, as JSON text (`{}` when there are none), not parsed: what a
    /// column carries as its field metadata (`field_metadata.rs`), at the cost of one copy.
    pub(crate) fn as_written(&self) -> &str {
        self.raw.as_deref().unwrap_or("{}")
    }

    /// Every attribute, parsed now (an empty object when there are none): for what shows the
    /// attributes, never for reading data.
    pub fn to_value(&self) -> Value {
        let parsed = self.raw.as_deref().map(serde_json::from_str::<Value>);
        let mut all = match parsed {
            Some(Ok(Value::Object(all))) => all,
            _ => Map::new(),
        };
        for (key, value) in &self.used {
            all.insert(key.clone(), value.clone());
        }
        Value::Object(all)
    }
}

impl PartialEq for Attributes {
    fn eq(&self, other: &Self) -> bool {
        self.raw == other.raw && self.used == other.used
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_string()).unwrap()
    }

    #[test]
    fn only_the_used_attributes_are_parsed() {
        let attributes =
            Attributes::read(Some(&raw(r#"{"units": "m", "flags": [1, 2, 3]}"#))).unwrap();
        assert_eq!(
            attributes.used(),
            json!({"units": "m"}).as_object().unwrap()
        );
        assert_eq!(
            attributes.to_value(),
            json!({"units": "m", "flags": [1, 2, 3]})
        );
        let renamed = attributes.with("_ARRAY_DIMENSIONS", json!(["x"]));
        assert_eq!(renamed.get("_ARRAY_DIMENSIONS"), Some(&json!(["x"])));
        assert_eq!(renamed.to_value()["_ARRAY_DIMENSIONS"], json!(["x"]));
        // Not an object: no attributes, as before.
        assert_eq!(
            Attributes::read(Some(&raw("[1]"))).unwrap(),
            Attributes::default()
        );
        let long = format!(r#"{{"missing_value": [{}0]}}"#, "0,".repeat(40_000));
        let e = Attributes::read(Some(&raw(&long))).unwrap_err();
        assert!(
            e.contains("its attribute missing_value holds 80003 bytes"),
            "{e}"
        );
    }
}
