//! Kerchunk reference sets in JSON (fsspec's `ReferenceFileSystem`, spec versions 0 and 1),
//! parsed into one map from Zarr key to where its bytes are: inline text, `base64:` data, a
//! whole file (`[url]`) or a byte range of one (`[url, offset, length]`), with version 1's
//! `templates` substituted and its `gen` entries expanded, all within `max_references`.
//!
//! Written by hand: no Rust crate reads reference sets (zarrs has no manifest storage yet), and
//! the format is small (fsspec's `implementations/reference.py`, kerchunk's `spec.rst`).

use std::collections::{BTreeMap, HashMap};

use base64::Engine;
use bytes::Bytes;
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use super::set::{Builder, Entry, Invalid, Parsed};
use super::template::{Template, Variables};

/// Version 1's document: `refs`, `templates` and `gen` (anything else is ignored, as fsspec
/// ignores it).
#[derive(Deserialize)]
struct Version1<'a> {
    #[serde(default, borrow)]
    refs: BTreeMap<String, &'a RawValue>,
    #[serde(default)]
    templates: HashMap<String, Value>,
    #[serde(default, rename = "gen")]
    generators: Vec<Value>,
}

/// Parses `text`, a JSON reference set, keeping at most `max_references` entries.
pub(crate) fn parse(text: &[u8], max_references: u64) -> Result<Parsed, Invalid> {
    let top: BTreeMap<String, &RawValue> = serde_json::from_slice(text).map_err(|e| {
        Invalid::new(
            "",
            format!("not a JSON object of references (fsspec's spec version 0 or 1): {e}"),
        )
    })?;
    let mut out = Builder::new(max_references);
    let Some(version) = top.get("version") else {
        // Version 0: every member is a key.
        for (key, raw) in &top {
            out.add_raw(key, raw, &Variables::default())?;
        }
        return Ok(out.parsed);
    };
    match serde_json::from_str::<Value>(version.get()) {
        Ok(Value::Number(n)) if n.as_u64() == Some(1) => {}
        _ => {
            return Err(Invalid::new(
                "version",
                format!(
                    "reference sets of version {} are not read (fsspec's spec has versions 0 \
                     and 1)",
                    version.get()
                ),
            ));
        }
    }
    let doc: Version1 = serde_json::from_slice(text)
        .map_err(|e| Invalid::new("", format!("not a version 1 reference set: {e}")))?;
    let mut templates = Variables::default();
    for (name, value) in &doc.templates {
        match value {
            Value::String(s) => templates.set_text(name, s.clone()),
            other => {
                return Err(Invalid::new(
                    format!("templates.{name}"),
                    format!("a template is a string, not {other}"),
                ));
            }
        }
    }
    for (key, raw) in &doc.refs {
        out.add_raw(key, raw, &templates)?;
    }
    for (i, generator) in doc.generators.iter().enumerate() {
        out.expand(i, generator, &templates)?;
    }
    Ok(out.parsed)
}

impl Builder {
    /// One member of `refs` (or of a version 0 document).
    fn add_raw(&mut self, key: &str, raw: &RawValue, templates: &Variables) -> Result<(), Invalid> {
        let value: Value = serde_json::from_str(raw.get())
            .map_err(|e| Invalid::new(key, format!("not JSON: {e}")))?;
        let entry = match value {
            Value::String(text) => Entry::Inline(inline(key, text)?),
            // fsspec writes a JSON object member (an inlined `.zarray`) back out as JSON text.
            Value::Object(_) => Entry::Inline(Bytes::from(value.to_string())),
            Value::Array(parts) => self.located(key, &parts, templates)?,
            other => {
                return Err(Invalid::new(
                    key,
                    format!(
                        "a reference is a string (inline data), or [url] or [url, offset, \
                         length], not {other}"
                    ),
                ));
            }
        };
        self.insert(key, entry)
    }

    /// `[url]` or `[url, offset, length]`.
    fn located(
        &mut self,
        key: &str,
        parts: &[Value],
        templates: &Variables,
    ) -> Result<Entry, Invalid> {
        let url = match parts.first() {
            Some(Value::String(url)) if !url.is_empty() => url,
            _ => {
                return Err(Invalid::new(
                    key,
                    "a reference [url, …] starts with the URL of a file",
                ));
            }
        };
        let url = Template::parse(url)
            .and_then(|t| t.render(templates))
            .map_err(|e| Invalid::new(key, format!("its URL '{url}': {e}")))?;
        match parts {
            [_] => Ok(Entry::Whole {
                target: self.target(key, url)?,
            }),
            [_, offset, length] => {
                let number = |v: &Value, what: &str| {
                    v.as_u64().ok_or_else(|| {
                        Invalid::new(
                            key,
                            format!("its {what} is not a whole number of bytes: {v}"),
                        )
                    })
                };
                let (offset, length) = (number(offset, "offset")?, number(length, "length")?);
                if offset.checked_add(length).is_none() {
                    return Err(Invalid::new(key, "its offset and length pass 2^64"));
                }
                Ok(Entry::Range {
                    target: self.target(key, url)?,
                    offset,
                    length,
                })
            }
            _ => Err(Invalid::new(
                key,
                format!(
                    "a reference is [url] or [url, offset, length], not a list of {}",
                    parts.len()
                ),
            )),
        }
    }

    /// The references `gen[i]` generates: one per combination of its dimensions' values.
    fn expand(
        &mut self,
        i: usize,
        generator: &Value,
        templates: &Variables,
    ) -> Result<(), Invalid> {
        let at = format!("gen[{i}]");
        let field = |name: &str| generator.get(name);
        let text = |name: &str| -> Result<Option<Template>, Invalid> {
            match field(name) {
                None => Ok(None),
                Some(Value::String(s)) => Template::parse(s)
                    .map(Some)
                    .map_err(|e| Invalid::new(&at, format!("its {name} '{s}': {e}"))),
                Some(Value::Number(n)) => Ok(Some(Template::literal(n.to_string()))),
                Some(other) => Err(Invalid::new(
                    &at,
                    format!("its {name} is a template string, not {other}"),
                )),
            }
        };
        let (Some(key), Some(url)) = (text("key")?, text("url")?) else {
            return Err(Invalid::new(&at, "a generator needs a key and a url"));
        };
        let (offset, length) = match (text("offset")?, text("length")?) {
            (Some(o), Some(l)) => (Some(o), Some(l)),
            (None, None) => (None, None),
            _ => {
                return Err(Invalid::new(
                    &at,
                    "a generator gives both offset and length, or neither",
                ));
            }
        };
        let dimensions = dimensions(&at, field("dimensions"))?;
        // Counted before any is made: a generator may claim more references than memory holds.
        let count = dimensions
            .iter()
            .try_fold(1u64, |n, d| n.checked_mul(d.len()));
        let room = self.max.saturating_sub(self.parsed.entries.len() as u64);
        if count.is_none_or(|n| n > room) {
            return Err(Invalid::new(
                &at,
                format!(
                    "it generates {} references, more than the {} left within the option \
                     max_references ({})",
                    count.map_or_else(|| "over 2^64".to_string(), |n| n.to_string()),
                    room,
                    self.max
                ),
            ));
        }
        let mut at_values = vec![0u64; dimensions.len()];
        let total = count.unwrap_or(0);
        for _ in 0..total {
            let mut variables = templates.clone();
            for (d, &j) in dimensions.iter().zip(&at_values) {
                variables.set_number(&d.name, d.value(j));
            }
            let render = |t: &Template, what: &str| {
                t.render(&variables)
                    .map_err(|e| Invalid::new(&at, format!("its {what}: {e}")))
            };
            let key = render(&key, "key")?;
            let url = render(&url, "url")?;
            let entry = match (&offset, &length) {
                (Some(o), Some(l)) => {
                    let number = |t: &Template, what: &str| {
                        let text = render(t, what)?;
                        text.trim().parse::<u64>().map_err(|_| {
                            Invalid::new(
                                &at,
                                format!(
                                    "its {what} renders as '{text}', not a whole number of bytes"
                                ),
                            )
                        })
                    };
                    let (offset, length) = (number(o, "offset")?, number(l, "length")?);
                    if offset.checked_add(length).is_none() {
                        return Err(Invalid::new(&key, "its offset and length pass 2^64"));
                    }
                    Entry::Range {
                        target: self.target(&key, url)?,
                        offset,
                        length,
                    }
                }
                _ => Entry::Whole {
                    target: self.target(&key, url)?,
                },
            };
            self.insert(&key, entry)?;
            // The next combination, the last dimension fastest (itertools.product's order).
            for (at, d) in at_values.iter_mut().zip(&dimensions).rev() {
                *at += 1;
                if *at < d.len() {
                    break;
                }
                *at = 0;
            }
        }
        Ok(())
    }
}

/// Inline data: `base64:` then base64, or the text's own bytes.
fn inline(key: &str, text: String) -> Result<Bytes, Invalid> {
    match text.strip_prefix("base64:") {
        Some(encoded) => base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .map(Bytes::from)
            .map_err(|e| Invalid::new(key, format!("its base64 data does not decode: {e}"))),
        None => Ok(Bytes::from(text)),
    }
}

/// One dimension of a generator: its name and values, listed or counted (a range is never
/// materialised: a generator may claim more values than memory holds).
struct Dimension {
    name: String,
    values: Values,
}

enum Values {
    List(Vec<i64>),
    /// `len` values from `start` by `step`, each within `start..stop` (so within `i64`).
    Range {
        start: i64,
        step: i64,
        len: u64,
    },
}

impl Dimension {
    fn len(&self) -> u64 {
        match &self.values {
            Values::List(v) => v.len() as u64,
            Values::Range { len, .. } => *len,
        }
    }

    /// Value `j` (below [`Dimension::len`]).
    fn value(&self, j: u64) -> i64 {
        match &self.values {
            Values::List(v) => usize::try_from(j)
                .ok()
                .and_then(|j| v.get(j))
                .copied()
                .unwrap_or_default(),
            Values::Range { start, step, .. } => i64::try_from(j)
                .ok()
                .and_then(|j| j.checked_mul(*step))
                .and_then(|k| start.checked_add(k))
                .unwrap_or_default(),
        }
    }
}

/// A generator's dimensions, in order: each a list of integers or a range (`start`, `stop`,
/// `step`), as fsspec reads them.
fn dimensions(at: &str, value: Option<&Value>) -> Result<Vec<Dimension>, Invalid> {
    let Some(Value::Object(dims)) = value else {
        return Err(Invalid::new(
            at,
            "a generator's dimensions are an object of ranges or lists",
        ));
    };
    let mut out = Vec::with_capacity(dims.len());
    for (name, spec) in dims {
        let bad = |why: &str| Invalid::new(at, format!("its dimension {name}: {why}"));
        let values = match spec {
            Value::Array(items) => Values::List(
                items
                    .iter()
                    .map(|v| v.as_i64().ok_or_else(|| bad("a list of integers")))
                    .collect::<Result<_, _>>()?,
            ),
            Value::Object(range) => {
                let get = |k: &str, default: Option<i64>| match range.get(k) {
                    None => default.ok_or_else(|| bad(&format!("a range needs `{k}`"))),
                    Some(v) => v
                        .as_i64()
                        .ok_or_else(|| bad(&format!("`{k}` is an integer"))),
                };
                let start = get("start", Some(0))?;
                let stop = get("stop", None)?;
                let step = get("step", Some(1))?;
                if step <= 0 {
                    return Err(bad("`step` is positive"));
                }
                let span = i128::from(stop) - i128::from(start);
                let len = match span <= 0 {
                    true => 0,
                    false => (span + i128::from(step) - 1) / i128::from(step),
                };
                Values::Range {
                    start,
                    step,
                    len: u64::try_from(len).unwrap_or(u64::MAX),
                }
            }
            other => return Err(bad(&format!("a range or a list, not {other}"))),
        };
        out.push(Dimension {
            name: name.clone(),
            values,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> Parsed {
        parse(text.as_bytes(), 1000).unwrap()
    }

    #[test]
    fn version_0_is_a_flat_object_of_references() {
        let p = parsed(
            r#"{".zgroup": "{\"zarr_format\": 2}", "a/0": ["data.nc", 10, 20], "a/1": ["data.nc"],
                "b/0": "base64:AAEC", "b/.zarray": {"zarr_format": 2}}"#,
        );
        assert_eq!(p.targets, ["data.nc"]);
        assert_eq!(
            p.entries[".zgroup"],
            Entry::Inline(Bytes::from_static(b"{\"zarr_format\": 2}"))
        );
        assert_eq!(
            p.entries["a/0"],
            Entry::Range {
                target: 0,
                offset: 10,
                length: 20
            }
        );
        assert_eq!(p.entries["a/1"], Entry::Whole { target: 0 });
        assert_eq!(
            p.entries["b/0"],
            Entry::Inline(Bytes::from_static(&[0, 1, 2]))
        );
        assert_eq!(
            p.entries["b/.zarray"],
            Entry::Inline(Bytes::from_static(b"{\"zarr_format\":2}"))
        );
    }

    #[test]
    fn version_1_substitutes_templates_and_expands_generators() {
        let p = parsed(
            r#"{"version": 1, "templates": {"u": "s3://bucket/file.nc"},
                "refs": {"x/0": ["{{u}}", 0, 8]},
                "gen": [{"key": "y/{{i}}.{{j}}", "url": "{{u}}", "offset": "{{(i * 2 + j) * 16 + 8}}",
                         "length": "16", "dimensions": {"i": {"stop": 2}, "j": [0, 1]}}]}"#,
        );
        assert_eq!(p.targets, ["s3://bucket/file.nc"]);
        let range = |offset| Entry::Range {
            target: 0,
            offset,
            length: 16,
        };
        assert_eq!(p.entries["y/0.0"], range(8));
        assert_eq!(p.entries["y/0.1"], range(24));
        assert_eq!(p.entries["y/1.0"], range(40));
        assert_eq!(p.entries["y/1.1"], range(56));
        assert_eq!(p.entries.len(), 5);
    }

    #[test]
    fn limits_and_malformed_references_are_errors_naming_the_key() {
        let err = |text: &str| parse(text.as_bytes(), 10).unwrap_err();
        let e = err(
            r#"{"version": 1, "gen": [{"key": "k{{i}}", "url": "f", "dimensions": {"i": {"stop": 11}}}]}"#,
        );
        assert_eq!(e.at, "gen[0]");
        assert!(e.message.contains("generates 11 references"), "{e:?}");
        let e = err(
            r#"{"version": 1, "gen": [{"key": "k{{i}}{{j}}", "url": "f", "dimensions": {"i": {"stop": 4294967296}, "j": {"stop": 4294967296}}}]}"#,
        );
        assert!(
            e.message.contains("over 2^64") || e.message.contains("more than"),
            "{e:?}"
        );
        assert_eq!(err(r#"{"a": ["f", -1, 2]}"#).at, "a");
        assert_eq!(err(r#"{"a": ["f", 1]}"#).at, "a");
        assert_eq!(err(r#"{"a": 3}"#).at, "a");
        assert_eq!(err(r#"{"a": "base64:%%"}"#).at, "a");
        assert_eq!(err(r#"{"a": ["f", 18446744073709551615, 2]}"#).at, "a");
        assert_eq!(err(r#"{"version": 2}"#).at, "version");
        assert_eq!(err(r#"[1, 2]"#).at, "");
        let many: String = (0..11)
            .map(|i| format!("\"k{i}\": \"v\""))
            .collect::<Vec<_>>()
            .join(",");
        assert!(
            err(&format!("{{{many}}}"))
                .message
                .contains("max_references")
        );
    }
}
