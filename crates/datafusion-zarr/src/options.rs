//! Table options, parsed once with clear errors.
//!
//! Options arrive from `CREATE EXTERNAL TABLE … OPTIONS (…)` (where DataFusion may prefix them
//! with `format.`), from `read_zarr(…)` arguments and from the command line. Keys are matched
//! case-insensitively, with or without the `format.` prefix.

use crate::error::{Result, ZarrError};
use crate::object_stores::{STORAGE_PREFIXES, StorageOptions};

/// The Arrow type that `fixed_length_utf32` columns become.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StringType {
    /// `Utf8` (32-bit offsets), the default.
    #[default]
    Utf8,
    /// `Utf8View`.
    Utf8View,
    /// `LargeUtf8` (64-bit offsets).
    LargeUtf8,
    /// `FixedSizeBinary(length_bytes)`: the raw code units as UTF-32LE.
    FixedSizeBinary,
}

impl StringType {
    /// Parses `utf8`, `utf8view`, `large_utf8` or `fixed_size_binary` (case-insensitive).
    pub fn parse(value: &str) -> Result<Self> {
        match value.to_ascii_lowercase().as_str() {
            "utf8" => Ok(Self::Utf8),
            "utf8view" | "utf8_view" => Ok(Self::Utf8View),
            "large_utf8" | "largeutf8" => Ok(Self::LargeUtf8),
            "fixed_size_binary" | "fixedsizebinary" => Ok(Self::FixedSizeBinary),
            _ => Err(ZarrError::Option(format!(
                "string_type '{value}' is not one of utf8, utf8view, large_utf8, fixed_size_binary"
            ))),
        }
    }
}

impl StringType {
    /// The option value that [`StringType::parse`] reads as this type.
    pub fn name(self) -> &'static str {
        match self {
            Self::Utf8 => "utf8",
            Self::Utf8View => "utf8view",
            Self::LargeUtf8 => "large_utf8",
            Self::FixedSizeBinary => "fixed_size_binary",
        }
    }
}

pub use zarr_utf32::InvalidUtf32;

/// The option value that [`parse_invalid_utf32`] reads as `mode`.
pub fn invalid_utf32_name(mode: InvalidUtf32) -> &'static str {
    match mode {
        InvalidUtf32::Error => "error",
        InvalidUtf32::Replace => "replace",
        InvalidUtf32::Null => "null",
    }
}

/// Parses an `invalid_utf32` value: `error`, `replace` or `null` (case-insensitive).
pub fn parse_invalid_utf32(value: &str) -> Result<InvalidUtf32> {
    match value.to_ascii_lowercase().as_str() {
        "error" => Ok(InvalidUtf32::Error),
        "replace" => Ok(InvalidUtf32::Replace),
        "null" => Ok(InvalidUtf32::Null),
        _ => Err(ZarrError::Option(format!(
            "invalid_utf32 '{value}' is not one of error, replace, null"
        ))),
    }
}

/// Options of a Zarr table.
#[derive(Debug, Clone, PartialEq)]
pub struct ZarrOptions {
    /// The node inside the store (`""` = the store root).
    pub path: String,
    /// Arrow type of `fixed_length_utf32` columns.
    pub string_type: StringType,
    /// Handling of invalid code units.
    pub invalid_utf32: InvalidUtf32,
    /// Read elements equal to the fill value as NULL.
    pub fill_as_null: bool,
    /// Read NumPy `S` (`null_terminated_bytes`) columns as strings of `string_type` (checked
    /// UTF-8), not `Binary`: DataFusion's Parquet option of that name.
    pub binary_as_string: bool,
    /// Decode numbers as their CF attributes ask, as xarray does by default: times
    /// (`units: "days since …"`) and xarray's timedeltas, packed numbers (`scale_factor`,
    /// `add_offset`) with `_FillValue`/`missing_value` as NULL.
    pub decode_cf: bool,
    /// For a group: the arrays that form the value columns, in this order.
    pub arrays: Option<Vec<String>>,
    /// Largest decoded chunk (or shard) accepted, in bytes.
    pub max_chunk_bytes: u64,
    /// Largest metadata document accepted, in bytes.
    pub max_metadata_bytes: u64,
    /// Push filters into the scan: prune chunks on dimension columns, and evaluate string
    /// predicates on UTF-32 code units before transcoding.
    pub pushdown: bool,
    /// Chunk fetches each partition keeps in flight, ahead of decoding: what hides the latency
    /// of a remote store. Memory grows with it (at most this many encoded chunks per partition).
    pub io_concurrency: usize,
    /// Object store configuration (`aws.*`, `gcp.*`, `azure.*`, `http.*`, `retry.*`) for a
    /// remote location whose store the session has not registered.
    pub storage: StorageOptions,
}

impl Default for ZarrOptions {
    fn default() -> Self {
        Self {
            path: String::new(),
            string_type: StringType::default(),
            invalid_utf32: InvalidUtf32::default(),
            fill_as_null: false,
            binary_as_string: false,
            decode_cf: true,
            arrays: None,
            max_chunk_bytes: 1 << 30,
            max_metadata_bytes: 64 << 20,
            pushdown: true,
            io_concurrency: DEFAULT_IO_CONCURRENCY,
            storage: StorageOptions::default(),
        }
    }
}

/// Chunk fetches in flight per partition by default: with 2 partitions and 20 ms per request,
/// 64 keep ~6,000 requests a second going, more than a core decodes; locally it costs nothing.
pub const DEFAULT_IO_CONCURRENCY: usize = 64;

/// The option keys, as documented (and the storage prefixes in [`STORAGE_PREFIXES`]).
pub const OPTION_KEYS: &[&str] = &[
    "path",
    "string_type",
    "invalid_utf32",
    "fill_as_null",
    "binary_as_string",
    "decode_cf",
    "arrays",
    "max_chunk_bytes",
    "max_metadata_bytes",
    "pushdown",
    "io_concurrency",
];

impl ZarrOptions {
    /// Builds options from key/value pairs; unknown keys and bad values are errors.
    pub fn from_pairs<K, V>(pairs: impl IntoIterator<Item = (K, V)>) -> Result<Self>
    where
        K: AsRef<str>,
        V: AsRef<str>,
    {
        let mut options = Self::default();
        for (key, value) in pairs {
            options.set(key.as_ref(), value.as_ref())?;
        }
        Ok(options)
    }

    /// Every option as the key/value pairs [`ZarrOptions::from_pairs`] reads back, storage
    /// options included (their values may be secrets: do not show them).
    pub fn to_pairs(&self) -> Vec<(String, String)> {
        let mut pairs = vec![
            ("path".to_string(), self.path.clone()),
            ("string_type".into(), self.string_type.name().into()),
            (
                "invalid_utf32".into(),
                invalid_utf32_name(self.invalid_utf32).into(),
            ),
            ("fill_as_null".into(), self.fill_as_null.to_string()),
            ("binary_as_string".into(), self.binary_as_string.to_string()),
            ("decode_cf".into(), self.decode_cf.to_string()),
            ("max_chunk_bytes".into(), self.max_chunk_bytes.to_string()),
            (
                "max_metadata_bytes".into(),
                self.max_metadata_bytes.to_string(),
            ),
            ("pushdown".into(), self.pushdown.to_string()),
            ("io_concurrency".into(), self.io_concurrency.to_string()),
        ];
        if let Some(arrays) = &self.arrays {
            pairs.push(("arrays".into(), arrays.join(",")));
        }
        for key in self.storage.keys() {
            if let Some(value) = self.storage.get(key) {
                pairs.push((key.to_string(), value.to_string()));
            }
        }
        pairs
    }

    /// Sets one option.
    pub fn set(&mut self, key: &str, value: &str) -> Result<()> {
        let lower = key.trim().to_ascii_lowercase();
        let key = lower.strip_prefix("format.").unwrap_or(&lower);
        match key {
            "path" => self.path = value.to_string(),
            "string_type" => self.string_type = StringType::parse(value)?,
            "invalid_utf32" => self.invalid_utf32 = parse_invalid_utf32(value)?,
            "fill_as_null" => self.fill_as_null = parse_bool(key, value)?,
            "binary_as_string" => self.binary_as_string = parse_bool(key, value)?,
            "decode_cf" => self.decode_cf = parse_bool(key, value)?,
            "arrays" => {
                let names: Vec<String> = value
                    .split(',')
                    .map(|s| s.trim().to_string())
                    .filter(|s| !s.is_empty())
                    .collect();
                if names.is_empty() {
                    return Err(ZarrError::Option(
                        "arrays must name at least one array (comma-separated)".into(),
                    ));
                }
                self.arrays = Some(names);
            }
            "max_chunk_bytes" => self.max_chunk_bytes = parse_size(key, value)?,
            "max_metadata_bytes" => self.max_metadata_bytes = parse_size(key, value)?,
            "pushdown" => self.pushdown = parse_bool(key, value)?,
            "io_concurrency" => {
                self.io_concurrency = match value.trim().parse::<usize>() {
                    Ok(n) if (1..=4096).contains(&n) => n,
                    _ => {
                        return Err(ZarrError::Option(format!(
                            "io_concurrency '{value}' is not a number from 1 to 4096"
                        )));
                    }
                }
            }
            _ if StorageOptions::is_storage_key(key) => self.storage.set(key, value)?,
            _ => {
                return Err(ZarrError::Option(format!(
                    "unknown option '{key}'; known options: {}, and object store options under {}",
                    OPTION_KEYS.join(", "),
                    STORAGE_PREFIXES
                        .iter()
                        .map(|p| format!("{p}*"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )));
            }
        }
        Ok(())
    }
}

fn parse_bool(key: &str, value: &str) -> Result<bool> {
    match value.to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "on" => Ok(true),
        "false" | "0" | "no" | "off" => Ok(false),
        _ => Err(ZarrError::Option(format!(
            "{key} '{value}' is not a boolean (true or false)"
        ))),
    }
}

fn parse_size(key: &str, value: &str) -> Result<u64> {
    match value.trim().parse::<u64>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(ZarrError::Option(format!(
            "{key} '{value}' is not a positive number of bytes"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_accept_format_prefix_and_any_case() {
        let o = ZarrOptions::from_pairs([
            ("FORMAT.String_Type", "utf8view"),
            ("path", "a/b"),
            ("format.fill_as_null", "true"),
        ])
        .unwrap();
        assert_eq!(o.string_type, StringType::Utf8View);
        assert_eq!(o.path, "a/b");
        assert!(o.fill_as_null);
    }

    #[test]
    fn pairs_read_back_to_the_same_options() {
        let o = ZarrOptions::from_pairs([
            ("path", "g/a"),
            ("string_type", "fixed_size_binary"),
            ("invalid_utf32", "replace"),
            ("fill_as_null", "true"),
            ("arrays", "b, a"),
            ("max_chunk_bytes", "1000"),
            ("pushdown", "false"),
            ("io_concurrency", "3"),
            ("aws.region", "eu-west-1"),
        ])
        .unwrap();
        assert_eq!(ZarrOptions::from_pairs(o.to_pairs()).unwrap(), o);
        let d = ZarrOptions::default();
        assert_eq!(ZarrOptions::from_pairs(d.to_pairs()).unwrap(), d);
    }

    #[test]
    fn unknown_key_lists_known_ones() {
        let e = ZarrOptions::from_pairs([("colour", "red")]).unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("unknown option 'colour'"), "{msg}");
        assert!(
            msg.contains("string_type") && msg.contains("invalid_utf32"),
            "{msg}"
        );
    }

    #[test]
    fn bad_values_are_errors() {
        assert!(ZarrOptions::from_pairs([("string_type", "utf16")]).is_err());
        assert!(ZarrOptions::from_pairs([("invalid_utf32", "skip")]).is_err());
        assert!(ZarrOptions::from_pairs([("fill_as_null", "maybe")]).is_err());
        assert!(ZarrOptions::from_pairs([("arrays", " , ")]).is_err());
        assert!(ZarrOptions::from_pairs([("max_chunk_bytes", "-1")]).is_err());
    }
}
