//! Table options, parsed once with clear errors.
//!
//! Options arrive from `CREATE EXTERNAL TABLE … OPTIONS (…)` (where DataFusion may prefix them
//! with `format.`), from `read_zarr(…)` arguments and from the command line. Keys are matched
//! case-insensitively, with or without the `format.` prefix.

pub use crate::declare::OptionDoc;
use crate::declare::{OptionValue, declare_options, markdown_rows};
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

declare_options! {
    /// Options of a Zarr table.
    #[derive(Debug, Clone, PartialEq)]
    pub struct ZarrOptions {
        /// The node inside the store (`""` = the store root).
        path: String = String::new(),
            parse parse_text,
            values "`a/b`",
            meaning "the node inside the store (default: the root). `..` is rejected.";
        /// Arrow type of `fixed_length_utf32` columns.
        string_type: StringType = StringType::Utf8,
            parse parse_string_type,
            values "`utf8` (default), `utf8view`, `large_utf8`, `fixed_size_binary`",
            meaning "Arrow type of `fixed_length_utf32` columns; `fixed_size_binary` holds the raw code units as UTF-32LE, `length_bytes` wide";
        /// Handling of invalid code units.
        invalid_utf32: InvalidUtf32 = InvalidUtf32::Error,
            parse parse_invalid_utf32_option,
            values "`error` (default), `replace`, `null`",
            meaning "a code unit that is not a Unicode scalar value fails the query, becomes U+FFFD, or makes the element NULL";
        /// Read elements equal to the fill value as NULL.
        fill_as_null: bool = false,
            parse parse_bool,
            values "`false` (default), `true`",
            meaning "elements equal to the fill value (NaN matches NaN) read as NULL";
        /// Read NumPy `S` (`null_terminated_bytes`) columns as strings of `string_type` (checked
        /// UTF-8), not `Binary`: DataFusion's Parquet option of that name.
        binary_as_string: bool = false,
            parse parse_bool,
            values "`false` (default), `true`",
            meaning "NumPy `S` arrays (`null_terminated_bytes`, V2 `\\|S8`) and variable-length bytes read as strings of `string_type` (`fixed_size_binary` gives `Utf8`), checked as UTF-8 (an element that is not names its chunk), instead of `Binary`; DataFusion's Parquet option of that name";
        /// Decode numbers as their CF attributes ask, as xarray does by default: times
        /// (`units: "days since …"`) and xarray's timedeltas, packed numbers (`scale_factor`,
        /// `add_offset`) with `_FillValue`/`missing_value` as NULL.
        decode_cf: bool = true,
            parse parse_bool,
            values "`true` (default), `false`",
            meaning "decode numbers as their CF attributes ask, and bytes with `_Encoding: \"utf-8\"` as strings, as xarray does by default (see [the table model](docs/table-model.md)); `false` reads the stored numbers and bytes";
        /// For a group: the arrays that form the value columns, in this order.
        arrays: Option<Vec<String>> = None,
            parse parse_arrays,
            values "`a,b,c`",
            meaning "for a group: the arrays that form the value columns, in this order";
        /// Largest decoded chunk (or shard) accepted, in bytes.
        max_chunk_bytes: u64 = 1 << 30,
            parse parse_size,
            values "bytes, default 1 GiB",
            meaning "largest chunk accepted (declared decoded size, and encoded object size)";
        /// Largest metadata document accepted, in bytes.
        max_metadata_bytes: u64 = 64 << 20,
            parse parse_size,
            values "bytes, default 64 MiB",
            meaning "largest metadata document accepted";
        /// Most arrays a group's table opens (each holds a few KB of parsed metadata and
        /// codecs); `arrays` opens only the named ones and their coordinates.
        max_arrays: u64 = 10_000,
            parse parse_count,
            values "a number, default 10000",
            meaning "most arrays a group's table opens (name fewer with `arrays`)";
        /// Push filters into the scan: prune chunks on dimension columns, evaluate string
        /// predicates on UTF-32 code units before transcoding, and predicates on data
        /// variables before their units' other columns are read.
        pushdown: bool = true,
            parse parse_bool,
            values "`true` (default), `false`",
            meaning "use filters in the scan: chunk pruning, string predicates on UTF-32, and predicates on data variables before the other columns are read (see [architecture](docs/architecture.md))";
        /// Chunk fetches each partition keeps in flight, ahead of decoding: what hides the
        /// latency of a remote store. Memory grows with it (at most this many encoded chunks
        /// per partition).
        io_concurrency: usize = DEFAULT_IO_CONCURRENCY,
            parse parse_io_concurrency,
            values "1 to 4096, default 64",
            meaning "chunk fetches each partition keeps in flight ahead of decoding (what hides a remote store's latency; at most `read_ahead_bytes` of declared chunk bytes per partition)";
        /// Declared chunk bytes each partition may hold in fetches ahead: by default 32 MiB from
        /// a local store (its reads wait on no network) and 256 MiB from a remote one.
        read_ahead_bytes: Option<u64> = None,
            parse parse_read_ahead_bytes,
            values "bytes, default 32 MiB (local) or 256 MiB (remote)",
            meaning "declared chunk bytes each partition may hold in fetches ahead of decoding (at least one unit is always fetched): memory against hiding a store's latency";
        /// Icechunk: the branch whose tip is read (`main` when no version is named), or whose
        /// history `as_of` searches.
        branch: Option<String> = None,
            parse parse_version_name,
            values "a branch name (default `main`)",
            meaning "Icechunk repositories: read the tip of this branch; with `as_of`, the branch whose history is searched (see [Icechunk](docs/icechunk.md))";
        /// Icechunk: the tag whose snapshot is read.
        tag: Option<String> = None,
            parse parse_version_name,
            values "a tag name",
            meaning "Icechunk repositories: read the snapshot this tag names";
        /// Icechunk: the snapshot read, by its id.
        snapshot: Option<String> = None,
            parse parse_snapshot_id,
            values "a snapshot id (20 characters)",
            meaning "Icechunk repositories: read this snapshot; a table opened by branch, tag or time names the snapshot it read here, in its `location()` and in `EXPLAIN`";
        /// Icechunk: a time; the branch's newest snapshot written at or before it is read.
        as_of: Option<String> = None,
            parse parse_as_of,
            values "a timestamp (`2026-12-01T12:00:00Z`, `2026-12-01 12:00:00`, `2026-12-01`; UTC unless it names an offset)",
            meaning "Icechunk repositories: read the branch's (`branch`, default `main`) newest snapshot written at or before this time";
        /// Reference sets: the URL prefixes whose files a reference may read.
        reference_targets: Option<Vec<String>> = None,
            parse parse_containers,
            values "URL prefixes, comma-separated (`file:///data/nc/,s3://bucket/raw/`)",
            meaning "kerchunk reference sets: the places (URL prefixes) whose files a reference may read; by default the reference file's own directory, and a reference elsewhere is an error naming it before any byte is read (see [reference sets](docs/reference-sets.md))";
        /// Reference sets: most references one set holds (`gen` entries counted as they expand).
        max_references: u64 = 2_000_000,
            parse parse_count,
            values "a number, default 2000000",
            meaning "kerchunk reference sets: most references one set holds, `gen` entries counted before they are expanded and a Parquet set's chunks before its records are read";
        /// Icechunk: the virtual-chunk containers (URL prefixes) whose files may be read.
        virtual_chunk_containers: Option<Vec<String>> = None,
            parse parse_containers,
            values "URL prefixes, comma-separated (`file:///data/nc/,s3://bucket/raw/`)",
            meaning "Icechunk repositories: the virtual-chunk containers, as the repository declares them, whose files a chunk may be read from (credentials from the environment); a chunk in another is an error naming it and its container";
    }
}

impl OptionValue for StringType {
    fn render(&self) -> Option<String> {
        Some(self.name().to_string())
    }
}

impl OptionValue for InvalidUtf32 {
    fn render(&self) -> Option<String> {
        Some(invalid_utf32_name(*self).to_string())
    }
}

/// Chunk fetches in flight per partition by default: with 2 partitions and 20 ms per request,
/// 64 keep ~6,000 requests a second going, more than a core decodes; locally it costs nothing.
pub const DEFAULT_IO_CONCURRENCY: usize = 64;

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

    /// Sets one option. Keys are case-insensitive and may carry DataFusion's `format.` prefix.
    pub fn set(&mut self, key: &str, value: &str) -> Result<()> {
        let lower = key.trim().to_ascii_lowercase();
        let key = lower.strip_prefix("format.").unwrap_or(&lower);
        if self.set_declared(key, value)? {
            return Ok(());
        }
        if StorageOptions::is_storage_key(key) {
            return self.storage.set(key, value);
        }
        Err(ZarrError::Option(format!(
            "unknown option '{key}'; known options: {}, and object store options under {}",
            Self::KEYS.join(", "),
            STORAGE_PREFIXES
                .iter()
                .map(|p| format!("{p}*"))
                .collect::<Vec<_>>()
                .join(", ")
        )))
    }

    /// The options table of the documentation, in Markdown: one row per option, then the
    /// storage prefixes (docs/remote-stores.md).
    pub fn markdown_table() -> String {
        let mut table = markdown_rows(&Self::documentation());
        table.push_str(
            "| `aws.*`, `gcp.*`, `azure.*`, `http.*`, `retry.*` | see [remote stores](docs/remote-stores.md) | the object store of a remote location |\n",
        );
        table
    }
}

fn parse_text(_key: &str, value: &str) -> Result<String> {
    Ok(value.to_string())
}

fn parse_string_type(_key: &str, value: &str) -> Result<StringType> {
    StringType::parse(value)
}

fn parse_invalid_utf32_option(_key: &str, value: &str) -> Result<InvalidUtf32> {
    parse_invalid_utf32(value)
}

/// A branch or tag name: not empty, no `/` (Icechunk stores each under `refs/branch.<name>`).
pub(crate) fn parse_version_name(key: &str, value: &str) -> Result<Option<String>> {
    let name = value.trim();
    if name.is_empty() || name.contains('/') || name.chars().any(char::is_control) {
        return Err(ZarrError::Option(format!(
            "{key} '{value}' is not a {key} name (it is empty, or holds '/' or a control character)"
        )));
    }
    Ok(Some(name.to_string()))
}

/// Virtual-chunk containers: URL prefixes (a scheme, `://`, and the rest), comma-separated.
fn parse_containers(key: &str, value: &str) -> Result<Option<Vec<String>>> {
    let prefixes: Vec<String> = value
        .split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect();
    if prefixes.is_empty() || prefixes.iter().any(|p| !p.contains("://")) {
        return Err(ZarrError::Option(format!(
            "{key} '{value}' is not a comma-separated list of URL prefixes (`file:///data/`, \
             `s3://bucket/prefix/`)"
        )));
    }
    Ok(Some(prefixes))
}

/// An Icechunk snapshot id: 12 bytes written as 20 characters of Crockford's base32.
fn parse_snapshot_id(key: &str, value: &str) -> Result<Option<String>> {
    let id = value.trim().to_ascii_uppercase();
    let base32 = |c: char| c.is_ascii_digit() || (c.is_ascii_uppercase() && !"ILOU".contains(c));
    if id.len() != 20 || !id.chars().all(base32) {
        return Err(ZarrError::Option(format!(
            "{key} '{value}' is not an Icechunk snapshot id (20 characters of Crockford's base32, \
             as `icechunk_snapshots` lists them)"
        )));
    }
    Ok(Some(id))
}

fn parse_as_of(key: &str, value: &str) -> Result<Option<String>> {
    parse_timestamp(value).map_err(|e| ZarrError::Option(format!("{key}: {e}")))?;
    Ok(Some(value.trim().to_string()))
}

/// The instant `as_of` names: an RFC 3339 or SQL timestamp (UTC unless it names an offset) or
/// a date (its midnight, UTC), as DataFusion reads a timestamp literal (arrow's parser).
pub(crate) fn parse_timestamp(value: &str) -> Result<chrono::DateTime<chrono::Utc>> {
    let text = value.trim();
    if let Ok(date) = chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d") {
        return Ok(date.and_time(chrono::NaiveTime::MIN).and_utc());
    }
    arrow::compute::kernels::cast_utils::string_to_datetime(&chrono::Utc, text).map_err(|e| {
        ZarrError::Option(format!(
            "'{value}' is not a timestamp (`2026-12-01T12:00:00Z`, `2026-12-01 12:00:00` or \
             `2026-12-01`): {e}"
        ))
    })
}

fn parse_arrays(_key: &str, value: &str) -> Result<Option<Vec<String>>> {
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
    Ok(Some(names))
}

fn parse_read_ahead_bytes(key: &str, value: &str) -> Result<Option<u64>> {
    parse_size(key, value).map(Some)
}

fn parse_io_concurrency(key: &str, value: &str) -> Result<usize> {
    match value.trim().parse::<usize>() {
        Ok(n) if (1..=4096).contains(&n) => Ok(n),
        _ => Err(ZarrError::Option(format!(
            "{key} '{value}' is not a number from 1 to 4096"
        ))),
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

fn parse_count(key: &str, value: &str) -> Result<u64> {
    match value.trim().parse::<u64>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(ZarrError::Option(format!(
            "{key} '{value}' is not a positive number"
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
    fn every_option_documents_its_default() {
        let defaults: std::collections::HashMap<String, String> =
            ZarrOptions::default().to_pairs().into_iter().collect();
        for doc in ZarrOptions::documentation() {
            let Some(default) = defaults.get(doc.key) else {
                continue; // unset by default (arrays)
            };
            let shown = match doc.key {
                "max_chunk_bytes" => "1 GiB".to_string(),
                "max_metadata_bytes" => "64 MiB".to_string(),
                _ => default.clone(),
            };
            assert!(
                shown.is_empty()
                    || doc.values.contains(&format!("`{shown}` (default)"))
                    || doc.values.contains(&format!("default {shown}")),
                "{}: the values '{}' do not name the default {shown}",
                doc.key,
                doc.values
            );
        }
        assert_eq!(
            ZarrOptions::documentation()
                .iter()
                .map(|d| d.key)
                .collect::<Vec<_>>(),
            ZarrOptions::KEYS
        );
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
