//! The options of a write, declared once in [`WRITE_OPTIONS`] (key, values, meaning): parsed
//! from `COPY … OPTIONS`, the CLI's `-w` and Python's keywords into [`WriteOptions`], listed in
//! an unknown key's error, and shown in docs/writing.md (a test checks the table there).

use serde_json::{Map, Value};

use crate::error::{Result, ZarrError};
use crate::object_stores::StorageOptions;

/// One write option as the documentation shows it.
#[derive(Debug, Clone, Copy)]
pub struct WriteOptionDoc {
    /// The key.
    pub key: &'static str,
    /// Its values and default.
    pub values: &'static str,
    /// What it does.
    pub meaning: &'static str,
}

/// Every write option (storage options, `aws.*` and the others, come besides).
pub const WRITE_OPTIONS: &[WriteOptionDoc] = &[
    doc(
        "mode",
        "`error` (default), `overwrite`",
        "what an existing store at the target does: an error, or replaced once the new one is complete",
    ),
    doc(
        "zarr_format",
        "`3` (default), `2`",
        "the Zarr version written",
    ),
    doc(
        "dimension",
        "a name, default `index`",
        "the table layout's one dimension",
    ),
    doc(
        "dimensions",
        "column names, comma-separated",
        "the N-D layout: these columns become coordinates, the others arrays over them",
    ),
    doc(
        "chunk_rows",
        "rows, default about 4 MiB of the widest column",
        "rows per chunk (table layout; the inner chunk when sharded)",
    ),
    doc(
        "chunks",
        "lengths, comma-separated, one per dimension",
        "the chunk shape of the N-D layout's arrays (default: about 4 MiB)",
    ),
    doc(
        "shard_rows",
        "rows, a multiple of `chunk_rows`",
        "V3 sharding: chunks of `chunk_rows` stored together in shards of this many rows",
    ),
    doc(
        "compression",
        "`zstd` (default), `blosc`, `gzip`, `lz4`, `none`",
        "the compressor of every chunk (`lz4` is numcodecs' LZ4)",
    ),
    doc(
        "compression_level",
        "a number, default 3 (zstd), 5 (blosc, gzip)",
        "the compressor's level (lz4: its acceleration)",
    ),
    doc(
        "consolidated",
        "`true` (default), `false`",
        "the group's metadata holds its arrays' (V3 `consolidated_metadata`, V2 `.zmetadata`)",
    ),
    doc("attributes", "a JSON object", "the group's attributes"),
    doc(
        "string_encoding",
        "`utf32` (default), `vlen`",
        "strings as `fixed_length_utf32` (`<U`), or variable-length UTF-8 (V3 `string`, V2 object dtype with `vlen-utf8`)",
    ),
    doc(
        "string_length",
        "code points",
        "the width of `fixed_length_utf32` arrays (default: the longest string)",
    ),
    doc(
        "string_overflow",
        "`error` (default), `truncate`",
        "a string longer than `string_length`: an error naming its row, or cut",
    ),
    doc(
        "null_value",
        "a value",
        "what a NULL becomes in an integer, boolean, string or binary column (then its fill value and `_FillValue`); without it such a NULL is an error",
    ),
    doc(
        "branch",
        "a branch name, default `main`",
        "Icechunk repositories: the branch the write commits to (it must exist)",
    ),
    doc(
        "message",
        "text, default `COPY by datafusion-zarr`",
        "Icechunk repositories: the commit's message",
    ),
    doc(
        "max_cells",
        "cells, default 1000000000",
        "the largest grid the N-D layout writes",
    ),
];

const fn doc(key: &'static str, values: &'static str, meaning: &'static str) -> WriteOptionDoc {
    WriteOptionDoc {
        key,
        values,
        meaning,
    }
}

/// The Zarr version written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ZarrVersion {
    /// Zarr V2 (`.zarray`, `.zattrs`, `.zgroup`, `.zmetadata`).
    V2,
    /// Zarr V3 (`zarr.json`).
    #[default]
    V3,
}

/// What an existing store at the target does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WriteMode {
    /// It is an error, and kept.
    #[default]
    Error,
    /// It is replaced once the new store is complete.
    Overwrite,
}

/// The compressor of the chunks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Compression {
    /// Zstandard (zarr-python's default).
    #[default]
    Zstd,
    /// Blosc with its zstd compressor and byte shuffle, as zarr-python's `BloscCodec()`.
    Blosc,
    /// gzip.
    Gzip,
    /// numcodecs' LZ4.
    Lz4,
    /// No compression.
    None,
}

/// How strings are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StringEncoding {
    /// `fixed_length_utf32` (NumPy `<U`).
    #[default]
    Utf32,
    /// Variable-length UTF-8 (V3 `string`, V2 `|O` with `vlen-utf8`).
    Vlen,
}

/// The options of a write.
#[derive(Debug, Clone, PartialEq)]
pub struct WriteOptions {
    /// What an existing store does.
    pub mode: WriteMode,
    /// The Zarr version.
    pub zarr_format: ZarrVersion,
    /// The table layout's dimension.
    pub dimension: String,
    /// The N-D layout's dimensions (empty: the table layout).
    pub dimensions: Vec<String>,
    /// Rows per chunk (`None`: about [`TARGET_CHUNK_BYTES`] of the widest column).
    pub chunk_rows: Option<u64>,
    /// The N-D chunk shape.
    pub chunks: Vec<u64>,
    /// Rows per shard (V3 sharding).
    pub shard_rows: Option<u64>,
    /// The compressor.
    pub compression: Compression,
    /// Its level (`None`: its default).
    pub compression_level: Option<i32>,
    /// Whether the group's metadata consolidates its arrays'.
    pub consolidated: bool,
    /// The group's attributes.
    pub attributes: Map<String, Value>,
    /// How strings are stored.
    pub string_encoding: StringEncoding,
    /// The width of string arrays in code points (`None`: the longest string).
    pub string_length: Option<u64>,
    /// Whether a string longer than `string_length` is cut (else an error).
    pub truncate_strings: bool,
    /// What a NULL becomes where the type has no NULL of its own.
    pub null_value: Option<String>,
    /// The largest N-D grid, in cells.
    pub max_cells: u64,
    /// Icechunk: the branch committed to (`None`: `main`).
    pub branch: Option<String>,
    /// Icechunk: the commit's message (`None`: the default).
    pub message: Option<String>,
    /// The object store's options (`aws.*`, …).
    pub storage: StorageOptions,
}

/// The uncompressed size a default chunk aims at: zarr-python and xarray users are told to
/// aim for 1–10 MiB chunks; 4 MiB keeps a chunk per column and per encoding thread small.
pub const TARGET_CHUNK_BYTES: u64 = 4 << 20;

impl Default for WriteOptions {
    fn default() -> Self {
        Self {
            mode: WriteMode::Error,
            zarr_format: ZarrVersion::V3,
            dimension: "index".into(),
            dimensions: Vec::new(),
            chunk_rows: None,
            chunks: Vec::new(),
            shard_rows: None,
            compression: Compression::Zstd,
            compression_level: None,
            consolidated: true,
            attributes: Map::new(),
            string_encoding: StringEncoding::Utf32,
            string_length: None,
            truncate_strings: false,
            null_value: None,
            max_cells: 1_000_000_000,
            branch: None,
            message: None,
            storage: StorageOptions::default(),
        }
    }
}

impl WriteOptions {
    /// Options from `(key, value)` pairs (keys case-insensitive, with or without DataFusion's
    /// `format.` prefix); an unknown key is an error listing the known ones.
    pub fn from_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Result<Self> {
        let mut options = Self::default();
        for (key, value) in pairs {
            options.set(key, value)?;
        }
        options.check()?;
        Ok(options)
    }

    /// Sets one option.
    pub fn set(&mut self, key: &str, value: &str) -> Result<()> {
        let key = key.trim().to_ascii_lowercase();
        let key = key.strip_prefix("format.").unwrap_or(&key);
        let text = value.trim();
        let lower = text.to_ascii_lowercase();
        match key {
            "mode" => {
                self.mode = match lower.as_str() {
                    "error" | "error_if_exists" => WriteMode::Error,
                    "overwrite" => WriteMode::Overwrite,
                    _ => return Err(bad(key, value, "one of error, overwrite")),
                }
            }
            "zarr_format" => {
                self.zarr_format = match text {
                    "3" => ZarrVersion::V3,
                    "2" => ZarrVersion::V2,
                    _ => return Err(bad(key, value, "2 or 3")),
                }
            }
            "dimension" => self.dimension = name(key, value)?,
            "dimensions" => {
                self.dimensions = list(text).map(|n| name(key, n)).collect::<Result<_>>()?;
            }
            "chunk_rows" => self.chunk_rows = Some(positive(key, value)?),
            "shard_rows" => self.shard_rows = Some(positive(key, value)?),
            "chunks" => {
                self.chunks = list(text)
                    .map(|n| positive(key, n))
                    .collect::<Result<_>>()?;
            }
            "compression" => {
                self.compression = match lower.as_str() {
                    "zstd" => Compression::Zstd,
                    "blosc" => Compression::Blosc,
                    "gzip" => Compression::Gzip,
                    "lz4" => Compression::Lz4,
                    "none" | "uncompressed" => Compression::None,
                    _ => return Err(bad(key, value, "one of zstd, blosc, gzip, lz4, none")),
                }
            }
            "compression_level" => {
                let level = text.parse::<i32>();
                self.compression_level = Some(level.map_err(|_| bad(key, value, "a number"))?);
            }
            "consolidated" => self.consolidated = boolean(key, value)?,
            "branch" => {
                self.branch = crate::options::parse_version_name(key, text)?;
            }
            "message" => self.message = Some(text.to_string()),
            "attributes" => match serde_json::from_str::<Value>(text) {
                Ok(Value::Object(map)) => self.attributes = map,
                _ => return Err(bad(key, value, "a JSON object")),
            },
            "string_encoding" => {
                self.string_encoding = match lower.as_str() {
                    "utf32" | "fixed_length_utf32" => StringEncoding::Utf32,
                    "vlen" | "vlen-utf8" | "string" => StringEncoding::Vlen,
                    _ => return Err(bad(key, value, "utf32 or vlen")),
                }
            }
            "string_length" => self.string_length = Some(positive(key, value)?),
            "string_overflow" => {
                self.truncate_strings = match lower.as_str() {
                    "error" => false,
                    "truncate" => true,
                    _ => return Err(bad(key, value, "error or truncate")),
                }
            }
            "null_value" => self.null_value = Some(value.to_string()),
            "max_cells" => self.max_cells = positive(key, value)?,
            storage if StorageOptions::is_storage_key(storage) => {
                self.storage.set(storage, value)?;
            }
            other => {
                let known: Vec<&str> = WRITE_OPTIONS.iter().map(|o| o.key).collect();
                return Err(ZarrError::Option(format!(
                    "unknown option '{other}' for writing Zarr; the options are: {}, and the \
                     storage options (aws.*, gcp.*, azure.*, retry.*)",
                    known.join(", ")
                )));
            }
        }
        Ok(())
    }

    /// Checks the options against each other.
    fn check(&self) -> Result<()> {
        if let (Some(shard), chunk) = (self.shard_rows, self.chunk_rows) {
            if self.zarr_format == ZarrVersion::V2 {
                return Err(ZarrError::Option(
                    "shard_rows: sharding is a Zarr V3 codec (zarr_format 3)".into(),
                ));
            }
            let Some(chunk) = chunk else {
                return Err(ZarrError::Option(
                    "shard_rows needs chunk_rows (the chunks stored in each shard)".into(),
                ));
            };
            if shard % chunk != 0 {
                return Err(ZarrError::Option(format!(
                    "shard_rows {shard} is not a multiple of chunk_rows {chunk}"
                )));
            }
        }
        if self.string_encoding == StringEncoding::Vlen && self.string_length.is_some() {
            return Err(ZarrError::Option(
                "string_length sets the width of fixed_length_utf32 strings; string_encoding \
                 'vlen' strings have none"
                    .into(),
            ));
        }
        if !self.chunks.is_empty() && self.chunks.len() != self.dimensions.len() {
            return Err(ZarrError::Option(format!(
                "chunks gives {} lengths for the {} dimensions {:?}",
                self.chunks.len(),
                self.dimensions.len(),
                self.dimensions
            )));
        }
        if let Some(level) = self.compression_level {
            let range = match self.compression {
                Compression::Zstd => -131072..=22,
                Compression::Blosc => 0..=9,
                Compression::Gzip => 0..=9,
                Compression::Lz4 => 1..=65537,
                Compression::None => 0..=0,
            };
            if !range.contains(&level) {
                return Err(ZarrError::Option(format!(
                    "compression_level {level} is not a level of {:?} ({}..={})",
                    self.compression,
                    range.start(),
                    range.end()
                )));
            }
        }
        Ok(())
    }
}

fn bad(key: &str, value: &str, expected: &str) -> ZarrError {
    ZarrError::Option(format!("{key} '{value}' is not {expected}"))
}

fn list(text: &str) -> impl Iterator<Item = &str> {
    text.split(',').map(str::trim).filter(|s| !s.is_empty())
}

fn positive(key: &str, value: &str) -> Result<u64> {
    match value.trim().parse::<u64>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(bad(key, value, "a positive whole number")),
    }
}

fn boolean(key: &str, value: &str) -> Result<bool> {
    match value.trim().to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" => Ok(true),
        "false" | "0" | "no" => Ok(false),
        _ => Err(bad(key, value, "true or false")),
    }
}

/// A dimension or array name: not empty, no `/`, not `.` or `..`.
fn name(key: &str, value: &str) -> Result<String> {
    let value = value.trim();
    if value.is_empty() || value.contains('/') || value == "." || value == ".." {
        return Err(bad(key, value, "a name (not empty, no '/')"));
    }
    Ok(value.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docs_writing_shows_every_option() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/writing.md");
        let text = std::fs::read_to_string(path).unwrap_or_default();
        for o in WRITE_OPTIONS {
            let row = format!("| `{}` | {} | {} |", o.key, o.values, o.meaning);
            assert!(text.contains(&row), "docs/writing.md lacks the row {row}");
        }
    }

    #[test]
    fn options_parse_and_unknown_keys_list_the_known_ones() -> Result<()> {
        let options = WriteOptions::from_pairs([
            ("format.zarr_format", "2"),
            ("COMPRESSION", "gzip"),
            ("compression_level", "9"),
            ("dimensions", "time, station"),
            ("attributes", r#"{"title": "t"}"#),
        ])?;
        assert_eq!(options.zarr_format, ZarrVersion::V2);
        assert_eq!(options.compression, Compression::Gzip);
        assert_eq!(options.dimensions, ["time", "station"]);
        assert_eq!(options.attributes["title"], "t");
        let Err(e) = WriteOptions::from_pairs([("colour", "red")]) else {
            panic!("an unknown key was taken");
        };
        let message = e.to_string();
        assert!(message.contains("'colour'") && message.contains("string_length"));
        for (key, value) in [
            ("shard_rows", "10"),
            ("compression_level", "30"),
            ("attributes", "[1]"),
            ("mode", "append"),
            ("chunk_rows", "0"),
        ] {
            let result = WriteOptions::from_pairs([("chunk_rows", "3"), (key, value)]);
            assert!(result.is_err(), "{key} {value} was taken");
        }
        Ok(())
    }
}
