//! A reference set as read: each Zarr key mapped to inline bytes, a whole file or a byte range
//! of one, and the files named, each once; built within `max_references` by the JSON and
//! Parquet readers alike.

use std::collections::{BTreeMap, HashMap};

use bytes::Bytes;

/// Where a key's bytes are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Entry {
    /// The bytes themselves.
    Inline(Bytes),
    /// A whole file: an index into [`Parsed::targets`].
    Whole { target: u32 },
    /// `length` bytes of a file from `offset`.
    Range {
        target: u32,
        offset: u64,
        length: u64,
    },
}

/// A parsed reference set.
#[derive(Debug, Default)]
pub(crate) struct Parsed {
    /// Every key's entry, in key order (so a prefix lists as a range).
    pub(crate) entries: BTreeMap<String, Entry>,
    /// The files the entries read, as written (templates substituted), each once.
    pub(crate) targets: Vec<String>,
}

/// Why a reference set cannot be read: the key (or `gen` entry) and the rule broken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Invalid {
    /// The key, or `gen[i]`, or empty for the document as a whole.
    pub(crate) at: String,
    pub(crate) message: String,
}

impl Invalid {
    pub(super) fn new(at: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            at: at.into(),
            message: message.into(),
        }
    }
}

/// Builds a [`Parsed`] set: each key once, each file once, at most `max` keys.
pub(super) struct Builder {
    pub(super) parsed: Parsed,
    target_ids: HashMap<String, u32>,
    pub(super) max: u64,
}

impl Builder {
    pub(super) fn new(max: u64) -> Self {
        Self {
            parsed: Parsed::default(),
            target_ids: HashMap::new(),
            max,
        }
    }

    /// Adds `key`, unless the set already holds `max` keys.
    pub(super) fn insert(&mut self, key: &str, entry: Entry) -> Result<(), Invalid> {
        if self.parsed.entries.len() as u64 >= self.max && !self.parsed.entries.contains_key(key) {
            return Err(Invalid::new(
                key,
                format!(
                    "the reference set holds more than {} references (the option \
                     max_references)",
                    self.max
                ),
            ));
        }
        self.parsed.entries.insert(key.to_string(), entry);
        Ok(())
    }

    /// The id of the file `url` (as written), numbered in order of first appearance.
    pub(super) fn target(&mut self, key: &str, url: String) -> Result<u32, Invalid> {
        if let Some(&id) = self.target_ids.get(&url) {
            return Ok(id);
        }
        let id = u32::try_from(self.parsed.targets.len())
            .map_err(|_| Invalid::new(key, "the reference set reads more than 2^32 files"))?;
        self.target_ids.insert(url.clone(), id);
        self.parsed.targets.push(url);
        Ok(id)
    }
}
