//! The table layout of a written store: a group with one 1-D array per column along one
//! dimension, as `xarray.open_zarr` reads a Dataset and `read_zarr` reads the table back. Each
//! Arrow type maps to the NumPy type zarr-python writes for it.

use arrow::datatypes::{DataType, Field, TimeUnit};
use serde_json::{Value, json};

use crate::error::{Result, ZarrError};

/// The options of a write (`docs/writing.md`).
#[derive(Debug, Clone, PartialEq)]
pub struct WriteOptions {
    /// The name of the one dimension (`index`).
    pub dimension: String,
    /// Rows per chunk.
    pub chunk_rows: u64,
}

impl Default for WriteOptions {
    fn default() -> Self {
        Self {
            dimension: "index".into(),
            chunk_rows: 100_000,
        }
    }
}

/// The keys `WriteOptions` reads (with or without DataFusion's `format.` prefix).
pub(crate) const WRITE_OPTION_KEYS: [&str; 3] = ["dimension", "chunk_rows", "zarr_format"];

impl WriteOptions {
    /// The options of a `COPY` statement (keys with or without DataFusion's `format.`).
    pub fn from_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Result<Self> {
        let mut options = Self::default();
        for (key, value) in pairs {
            let key = key.trim().to_ascii_lowercase();
            let key = key.strip_prefix("format.").unwrap_or(&key);
            match key {
                "dimension" if !value.is_empty() && !value.contains('/') => {
                    options.dimension = value.to_string()
                }
                "chunk_rows" => match value.trim().parse::<u64>() {
                    Ok(n) if n > 0 => options.chunk_rows = n,
                    _ => {
                        return Err(option(format!(
                            "chunk_rows '{value}' is not a positive number"
                        )));
                    }
                },
                "zarr_format" if value.trim() == "3" => {}
                "zarr_format" => {
                    return Err(option(format!(
                        "zarr_format '{value}': the writer writes Zarr V3 (3)"
                    )));
                }
                "dimension" => {
                    return Err(option(format!(
                        "dimension '{value}' is not a name (empty, or holds '/')"
                    )));
                }
                other => {
                    return Err(option(format!(
                        "unknown option '{other}' for STORED AS ZARR; the options are: {}",
                        WRITE_OPTION_KEYS.join(", ")
                    )));
                }
            }
        }
        Ok(options)
    }
}

fn option(message: String) -> ZarrError {
    ZarrError::Option(message)
}

/// How one column is stored.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Stored {
    /// NumPy's fixed-size numbers and booleans: `size` bytes each.
    Fixed {
        /// Bytes per element.
        size: usize,
    },
    /// `fixed_length_utf32`, its width found when every string has been seen.
    Strings,
}

/// The Zarr data type name and the storage of `field`, or the error naming its type.
pub(crate) fn stored(field: &Field) -> Result<(&'static str, Stored)> {
    let fixed = |name, size| Ok((name, Stored::Fixed { size }));
    match field.data_type() {
        DataType::Boolean => fixed("bool", 1),
        DataType::Int8 => fixed("int8", 1),
        DataType::Int16 => fixed("int16", 2),
        DataType::Int32 => fixed("int32", 4),
        DataType::Int64 => fixed("int64", 8),
        DataType::UInt8 => fixed("uint8", 1),
        DataType::UInt16 => fixed("uint16", 2),
        DataType::UInt32 => fixed("uint32", 4),
        DataType::UInt64 => fixed("uint64", 8),
        DataType::Float32 => fixed("float32", 4),
        DataType::Float64 => fixed("float64", 8),
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
            Ok(("fixed_length_utf32", Stored::Strings))
        }
        // CF-encoded: the count of units since the epoch, as xarray writes times.
        DataType::Timestamp(_, _) => fixed("int64", 8),
        other => Err(ZarrError::Option(format!(
            "column {} is {other}, which the Zarr writer does not write yet (it writes \
             booleans, integers, floats, strings and timestamps)",
            field.name()
        ))),
    }
}

/// The CF attributes of `field`'s array: a timestamp's `units` and `calendar`, as xarray
/// writes them (so that `xarray.open_zarr` decodes `datetime64`, and `read_zarr` a
/// `Timestamp`); a time zone is dropped, the instants kept (NumPy's are naive, in UTC).
pub(crate) fn attributes(field: &Field) -> Value {
    match field.data_type() {
        DataType::Timestamp(unit, _) => {
            let unit = match unit {
                TimeUnit::Second => "seconds",
                TimeUnit::Millisecond => "milliseconds",
                TimeUnit::Microsecond => "microseconds",
                TimeUnit::Nanosecond => "nanoseconds",
            };
            json!({"units": format!("{unit} since 1970-01-01"), "calendar": "proleptic_gregorian"})
        }
        _ => json!({}),
    }
}

/// The `zarr.json` of an array: `rows` elements in chunks of `chunk_rows`, of `data_type`
/// (`length_bytes` for strings), compressed with zstd as zarr-python does.
pub(crate) fn array_document(
    data_type: &str,
    length_bytes: Option<u64>,
    rows: u64,
    attributes: &Value,
    options: &WriteOptions,
) -> Value {
    let endian = if cfg!(target_endian = "big") {
        "big"
    } else {
        "little"
    };
    let (data_type, fill_value) = match (data_type, length_bytes) {
        ("fixed_length_utf32", Some(length_bytes)) => (
            json!({"name": "fixed_length_utf32", "configuration": {"length_bytes": length_bytes}}),
            json!(""),
        ),
        ("float32" | "float64", _) => (json!(data_type), json!("NaN")),
        ("bool", _) => (json!(data_type), json!(false)),
        _ => (json!(data_type), json!(0)),
    };
    json!({
        "zarr_format": 3,
        "node_type": "array",
        "shape": [rows],
        "data_type": data_type,
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [options.chunk_rows.min(rows).max(1)]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": fill_value,
        "codecs": [
            {"name": "bytes", "configuration": {"endian": endian}},
            {"name": "zstd", "configuration": {"level": 0, "checksum": false}}
        ],
        "attributes": attributes,
        "dimension_names": [options.dimension],
        "storage_transformers": [],
    })
}

/// The group's `zarr.json`, with its arrays' documents as zarr-python's inline consolidated
/// metadata (one read opens the table; `xarray.open_zarr` looks for it first).
pub(crate) fn group_document(arrays: Vec<(String, Value)>) -> Value {
    let metadata: serde_json::Map<String, Value> = arrays.into_iter().collect();
    json!({"zarr_format": 3, "node_type": "group", "attributes": {},
           "consolidated_metadata": {"kind": "inline", "must_understand": false,
                                     "metadata": metadata}})
}
