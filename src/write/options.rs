//! The options of a write, declared once (key, type, default, parser, values, meaning) by the
//! crate's `declare_options!`: parsed from `COPY … OPTIONS`, `SET zarr.*`, the CLI's `-w` and
//! Python's keywords into [`WriteOptions`], listed in an unknown key's error, and shown in
//! docs/writing.md (a test checks the table there).

use serde_json::{Map, Value};

use crate::declare::{OptionDoc, OptionValue, declare_options, markdown_rows};
use crate::error::{Result, ZarrError};
use crate::object_stores::StorageOptions;

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
pub enum ChunkCompression {
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

declare_options! {
    /// The options of a write.
    #[derive(Debug, Clone, PartialEq)]
    pub struct WriteOptions {
        /// What an existing store does.
        mode: WriteMode = WriteMode::Error,
            parse parse_mode,
            values "`error` (default), `overwrite`",
            meaning "what an existing store at the target does: an error, or replaced once the new one is complete";
        /// The Zarr version.
        zarr_format: ZarrVersion = ZarrVersion::V3,
            parse parse_zarr_format,
            values "`3` (default), `2`",
            meaning "the Zarr version written";
        /// The table layout's dimension.
        dimension: String = "index".into(),
            parse name,
            values "a name, default `index`",
            meaning "the table layout's one dimension";
        /// The N-D layout's dimensions (empty: the table layout).
        dimensions: Vec<String> = Vec::new(),
            parse names,
            values "column names, comma-separated",
            meaning "the N-D layout: these columns become coordinates, the others arrays over them";
        /// Rows per chunk (`None`: about [`TARGET_CHUNK_BYTES`] of the widest column).
        chunk_rows: Option<u64> = None,
            parse some_positive,
            values "rows, default about 4 MiB of the widest column",
            meaning "rows per chunk (table layout; the inner chunk when sharded)";
        /// The N-D chunk shape.
        chunks: Vec<u64> = Vec::new(),
            parse positives,
            values "lengths, comma-separated, one per dimension",
            meaning "the chunk shape of the N-D layout's arrays (default: about 4 MiB)";
        /// Rows per shard (V3 sharding).
        shard_rows: Option<u64> = None,
            parse some_positive,
            values "rows, a multiple of `chunk_rows`",
            meaning "V3 sharding: chunks of `chunk_rows` stored together in shards of this many rows";
        /// The compressor.
        compression: ChunkCompression = ChunkCompression::Zstd,
            parse parse_compression,
            values "`zstd` (default), `blosc`, `gzip`, `lz4`, `none`",
            meaning "the compressor of every chunk (`lz4` is numcodecs' LZ4)";
        /// Its level (`None`: its default).
        compression_level: Option<i32> = None,
            parse parse_level,
            values "a number, default 3 (zstd), 5 (blosc, gzip)",
            meaning "the compressor's level (lz4: its acceleration)";
        /// Whether the group's metadata consolidates its arrays'.
        consolidated: bool = true,
            parse boolean,
            values "`true` (default), `false`",
            meaning "the group's metadata holds its arrays' (V3 `consolidated_metadata`, V2 `.zmetadata`)";
        /// Whether a column read from a Zarr array keeps its source's attributes.
        keep_attributes: bool = true,
            parse boolean,
            values "`true` (default), `false`",
            meaning "a column read from a Zarr array is written with its source's attributes and CF encoding (times in its units, packing, its stored type and `_FillValue`), a group's table with the group's; `false`: only what the writer sets (docs/writing.md, Round trips)";
        /// The group's attributes.
        attributes: Map<String, Value> = Map::new(),
            parse json_object,
            values "a JSON object",
            meaning "the group's attributes";
        /// How strings are stored.
        string_encoding: StringEncoding = StringEncoding::Utf32,
            parse parse_string_encoding,
            values "`utf32` (default), `vlen`",
            meaning "strings as `fixed_length_utf32` (`<U`), or variable-length UTF-8 (V3 `string`, V2 object dtype with `vlen-utf8`)";
        /// The width of string arrays in code points (`None`: the longest string).
        string_length: Option<u64> = None,
            parse some_positive,
            values "code points",
            meaning "the width of `fixed_length_utf32` arrays (default: the longest string)";
        /// Whether a string longer than `string_length` is cut (else an error).
        truncate_strings as "string_overflow": bool = false,
            parse parse_overflow, render render_overflow,
            values "`error` (default), `truncate`",
            meaning "a string longer than `string_length`: an error naming its row, or cut";
        /// What a NULL becomes where the type has no NULL of its own.
        null_value: Option<String> = None,
            parse verbatim,
            values "a value",
            meaning "what a NULL becomes in an integer, boolean, string or binary column (then its fill value and `_FillValue`); without it such a NULL is an error";
        /// Icechunk: the branch committed to (`None`: `main`).
        branch: Option<String> = None,
            parse crate::options::parse_version_name,
            values "a branch name, default `main`",
            meaning "Icechunk repositories: the branch the write commits to (it must exist)";
        /// Icechunk: the commit's message (`None`: the default).
        message: Option<String> = None,
            parse trimmed,
            values "text, default `COPY by datafusion-zarr`",
            meaning "Icechunk repositories: the commit's message";
        /// How long a write waits for another writer of the same store to finish.
        lock_timeout: u64 = 30,
            parse seconds,
            values "seconds, default 30",
            meaning "how long a write waits for another writer of the same store (`0`: fail at once, naming the holder)";
        /// How long a writer's lease on an object store lasts unless renewed.
        lease_ttl: u64 = 20,
            parse lease_seconds,
            values "seconds, default 20",
            meaning "object stores: how long a writer's lease lasts unless renewed (every third of it); a killed writer blocks the next one at most this long";
        /// The largest N-D grid, in cells.
        max_cells: u64 = 1_000_000_000,
            parse positive,
            values "cells, default 1000000000",
            meaning "the largest grid the N-D layout writes";
    }
}

/// The uncompressed size a default chunk aims at: zarr-python and xarray users are told to
/// aim for 1–10 MiB chunks; 4 MiB keeps a chunk per column and per encoding thread small.
pub const TARGET_CHUNK_BYTES: u64 = 4 << 20;

impl WriteOptions {
    /// How long this write waits for another writer, and how long its lease lasts.
    pub(crate) fn lock_times(&self) -> crate::staging::LockTimes {
        crate::staging::LockTimes {
            timeout: std::time::Duration::from_secs(self.lock_timeout),
            lease_ttl: std::time::Duration::from_secs(self.lease_ttl),
        }
    }

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
        if self.set_declared(key, value)? {
            return Ok(());
        }
        if StorageOptions::is_storage_key(key) {
            return self.storage.set(key, value);
        }
        Err(ZarrError::Option(format!(
            "unknown option '{key}' for writing Zarr; the options are: {}, and the storage \
             options (aws.*, gcp.*, azure.*, retry.*)",
            Self::KEYS.join(", ")
        )))
    }

    /// The options table of docs/writing.md, in Markdown.
    pub fn markdown_table() -> String {
        markdown_rows(&Self::documentation())
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
                ChunkCompression::Zstd => -131072..=22,
                ChunkCompression::Blosc => 0..=9,
                ChunkCompression::Gzip => 0..=9,
                ChunkCompression::Lz4 => 1..=65537,
                ChunkCompression::None => 0..=0,
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

/// Each enum's values as the option takes them, parsed case-insensitively.
macro_rules! named_values {
    ($type:ident, $parse:ident, $expected:literal, { $($variant:ident => $name:literal $(| $alias:literal)*),* $(,)? }) => {
        fn $parse(key: &str, value: &str) -> Result<$type> {
            match value.trim().to_ascii_lowercase().as_str() {
                $( $name $(| $alias)* => Ok($type::$variant), )*
                _ => Err(bad(key, value, $expected)),
            }
        }

        impl OptionValue for $type {
            fn render(&self) -> Option<String> {
                Some(match self { $( $type::$variant => $name, )* }.to_string())
            }
        }
    };
}

named_values!(WriteMode, parse_mode, "one of error, overwrite", {
    Error => "error" | "error_if_exists",
    Overwrite => "overwrite",
});
named_values!(ZarrVersion, parse_zarr_format, "2 or 3", { V3 => "3", V2 => "2" });
named_values!(ChunkCompression, parse_compression, "one of zstd, blosc, gzip, lz4, none", {
    Zstd => "zstd",
    Blosc => "blosc",
    Gzip => "gzip",
    Lz4 => "lz4",
    None => "none" | "uncompressed",
});
named_values!(StringEncoding, parse_string_encoding, "utf32 or vlen", {
    Utf32 => "utf32" | "fixed_length_utf32",
    Vlen => "vlen" | "vlen-utf8" | "string",
});

fn parse_overflow(key: &str, value: &str) -> Result<bool> {
    match value.trim().to_ascii_lowercase().as_str() {
        "error" => Ok(false),
        "truncate" => Ok(true),
        _ => Err(bad(key, value, "error or truncate")),
    }
}

fn render_overflow(truncate: &bool) -> Option<String> {
    Some(if *truncate { "truncate" } else { "error" }.to_string())
}

fn parse_level(key: &str, value: &str) -> Result<Option<i32>> {
    let level = value.trim().parse::<i32>();
    Ok(Some(level.map_err(|_| bad(key, value, "a number"))?))
}

fn json_object(key: &str, value: &str) -> Result<Map<String, Value>> {
    match serde_json::from_str::<Value>(value.trim()) {
        Ok(Value::Object(map)) => Ok(map),
        _ => Err(bad(key, value, "a JSON object")),
    }
}

fn names(key: &str, value: &str) -> Result<Vec<String>> {
    list(value.trim()).map(|n| name(key, n)).collect()
}

fn positives(key: &str, value: &str) -> Result<Vec<u64>> {
    list(value.trim()).map(|n| positive(key, n)).collect()
}

fn seconds(key: &str, value: &str) -> Result<u64> {
    match value.trim().parse::<u64>() {
        Ok(n) if n <= 86_400 => Ok(n),
        _ => Err(bad(key, value, "a number of seconds from 0 to 86400")),
    }
}

fn lease_seconds(key: &str, value: &str) -> Result<u64> {
    match value.trim().parse::<u64>() {
        Ok(n) if (1..=3600).contains(&n) => Ok(n),
        _ => Err(bad(key, value, "a number of seconds from 1 to 3600")),
    }
}

fn some_positive(key: &str, value: &str) -> Result<Option<u64>> {
    positive(key, value).map(Some)
}

fn verbatim(_key: &str, value: &str) -> Result<Option<String>> {
    Ok(Some(value.to_string()))
}

fn trimmed(_key: &str, value: &str) -> Result<Option<String>> {
    Ok(Some(value.trim().to_string()))
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
        for o in WriteOptions::documentation() {
            let row = format!("| `{}` | {} | {} |", o.key, o.values, o.meaning);
            assert!(text.contains(&row), "docs/writing.md lacks the row {row}");
        }
    }

    #[test]
    fn every_option_survives_its_pairs() -> Result<()> {
        let given = WriteOptions::from_pairs([
            ("mode", "overwrite"),
            ("zarr_format", "2"),
            ("dimension", "row"),
            ("dimensions", "time,station"),
            ("chunk_rows", "10"),
            ("chunks", "3,4"),
            ("compression", "lz4"),
            ("compression_level", "2"),
            ("consolidated", "false"),
            ("attributes", r#"{"title": "t", "n": [1, 2]}"#),
            ("string_length", "8"),
            ("string_overflow", "truncate"),
            ("null_value", " -1 "),
            ("message", "m"),
            ("max_cells", "99"),
            ("aws.region", "eu-west-1"),
        ])?;
        let pairs = given.to_pairs();
        let back = WriteOptions::from_pairs(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())))?;
        assert_eq!(back, given);
        let defaults = WriteOptions::default();
        let pairs = defaults.to_pairs();
        let back = WriteOptions::from_pairs(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())))?;
        assert_eq!(back, defaults);
        Ok(())
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
        assert_eq!(options.compression, ChunkCompression::Gzip);
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
