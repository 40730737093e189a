//! The Parquet layout of reference sets (fsspec's `LazyReferenceMapper`, as kerchunk's
//! `refs_to_dataframe` writes it), read into the same map as the JSON forms: `.zmetadata` holds
//! every metadata document and the `record_size`; each array's chunk references are rows of
//! `<array>/refs.<record>.parq` (columns `path`, `offset`, `size`, `raw`), chunk `n` in C order
//! over the chunk grid at row `n % record_size` of record `n / record_size`.
//!
//! A missing record file, a row past the chunks, and a row with neither `path` nor `raw` are
//! chunks not written (read as the fill value). Every record file is read when the set is
//! opened, concurrently, each within `max_metadata_bytes`, and the chunks counted against
//! `max_references` before any is read.

use std::collections::BTreeMap;

use arrow::array::{Array, AsArray, RecordBatch};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Int64Type};
use bytes::Bytes;
use futures::StreamExt;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use serde::Deserialize;
use serde_json::Value;

use super::set::{Builder, Entry, Parsed};
use crate::limits::Limits;
use crate::store::ZarrStore;

/// Record files read at once.
const CONCURRENT_RECORDS: usize = 16;

#[derive(Deserialize)]
struct Consolidated {
    metadata: BTreeMap<String, Value>,
    record_size: u64,
}

/// One array's chunks: where its record files are and how its chunk keys are written.
struct Field {
    /// The array's path (`temp`, `sub/gz`; empty for an array at the root).
    path: String,
    /// Chunks along each dimension.
    grid: Vec<u64>,
    /// All of them.
    chunks: u64,
    separator: String,
}

/// Reads the Parquet reference set at `dir` within `limits` and `max_references`.
pub(super) async fn parse(
    dir: &ZarrStore,
    limits: &Limits,
    max_references: u64,
) -> Result<Parsed, crate::error::ZarrError> {
    let shown = dir.display_location().to_string();
    let invalid = |at: &str, message: String| crate::error::ZarrError::References {
        references: shown.clone(),
        at: at.to_string(),
        message,
    };
    let text = dir
        .get(".zmetadata", limits.metadata)
        .await?
        .ok_or_else(|| {
            invalid(
                "",
                "a Parquet reference set has a .zmetadata, and this directory has none".into(),
            )
        })?;
    let consolidated: Consolidated = serde_json::from_slice(&text).map_err(|e| {
        invalid(
            ".zmetadata",
            format!("not a Parquet reference set's metadata ({{\"metadata\": …, \"record_size\": n}}): {e}"),
        )
    })?;
    let record_size = consolidated.record_size;
    if record_size == 0 {
        return Err(invalid(".zmetadata", "its record_size is 0".into()));
    }
    let mut out = Builder::new(max_references);
    let mut fields = Vec::new();
    for (key, value) in &consolidated.metadata {
        let bytes = match value {
            Value::String(s) => Bytes::from(s.clone()),
            other => Bytes::from(other.to_string()),
        };
        out.insert(key, Entry::Inline(bytes))
            .map_err(|e| invalid(&e.at, e.message))?;
        let Some(path) = key.strip_suffix(".zarray") else {
            continue;
        };
        let field = field(path.trim_end_matches('/'), value).map_err(|e| invalid(key, e))?;
        fields.push(field);
    }
    // Every chunk counted before any record is read: a grid may claim more than memory holds.
    let chunks = fields
        .iter()
        .try_fold(consolidated.metadata.len() as u64, |n, f| {
            n.checked_add(f.chunks)
        });
    if chunks.is_none_or(|n| n > max_references) {
        return Err(invalid(
            "",
            format!(
                "its arrays have {} chunks, more than the option max_references ({max_references})",
                chunks.map_or_else(|| "over 2^64".to_string(), |n| n.to_string())
            ),
        ));
    }
    let records: Vec<(usize, u64)> = (fields.iter().enumerate())
        .flat_map(|(i, f)| (0..f.chunks.div_ceil(record_size)).map(move |r| (i, r)))
        .collect();
    let mut fetched = futures::stream::iter(records)
        .map(|(i, r)| {
            let key = record_key(&fields[i].path, r);
            async move { (i, r, dir.get(&key, limits.metadata).await, key) }
        })
        .buffered(CONCURRENT_RECORDS);
    while let Some((i, r, bytes, key)) = fetched.next().await {
        let Some(bytes) = bytes? else {
            continue;
        };
        let f = &fields[i];
        let batches = read_record(bytes).map_err(|e| invalid(&key, e))?;
        let mut row = 0u64;
        for batch in &batches {
            let rows = references(batch).map_err(|e| invalid(&key, e))?;
            for reference in rows {
                let n = r.saturating_mul(record_size).saturating_add(row);
                row += 1;
                if row > record_size || n >= f.chunks {
                    break;
                }
                let chunk_key = chunk_key(f, n);
                let entry = match reference {
                    Reference::Missing => continue,
                    Reference::Inline(bytes) => Entry::Inline(bytes),
                    Reference::Located { url, offset, size } => {
                        let target = out
                            .target(&chunk_key, url)
                            .map_err(|e| invalid(&e.at, e.message))?;
                        match (offset, size) {
                            (0, 0) => Entry::Whole { target },
                            (offset, length) => Entry::Range {
                                target,
                                offset,
                                length,
                            },
                        }
                    }
                };
                out.insert(&chunk_key, entry)
                    .map_err(|e| invalid(&e.at, e.message))?;
            }
        }
    }
    Ok(out.parsed)
}

/// The array at `path` whose `.zarray` is `zarray`: its chunk grid and key separator.
fn field(path: &str, zarray: &Value) -> Result<Field, String> {
    let zarray: Value = match zarray {
        Value::String(s) => serde_json::from_str(s).map_err(|e| format!("not JSON: {e}"))?,
        other => other.clone(),
    };
    let numbers = |name: &str| -> Result<Vec<u64>, String> {
        let list = zarray[name]
            .as_array()
            .ok_or_else(|| format!("its {name} is not a list"))?;
        list.iter()
            .map(|v| {
                v.as_u64()
                    .ok_or_else(|| format!("its {name} holds {v}, not a size"))
            })
            .collect()
    };
    let (shape, chunks) = (numbers("shape")?, numbers("chunks")?);
    if shape.len() != chunks.len() {
        return Err(format!(
            "its shape {shape:?} and chunks {chunks:?} have different lengths"
        ));
    }
    let grid = (shape.iter().zip(&chunks))
        .map(|(&s, &c)| match c {
            0 => Err(format!("a chunk of its chunks {chunks:?} is empty")),
            c => Ok(s.div_ceil(c)),
        })
        .collect::<Result<Vec<u64>, String>>()?;
    let count = grid
        .iter()
        .try_fold(1u64, |n, &g| n.checked_mul(g))
        .ok_or_else(|| format!("its grid of {grid:?} chunks passes 2^64"))?;
    let separator = zarray["dimension_separator"]
        .as_str()
        .unwrap_or(".")
        .to_string();
    Ok(Field {
        path: path.to_string(),
        grid,
        chunks: count,
        separator,
    })
}

/// The record file `r` of the array at `path`.
fn record_key(path: &str, r: u64) -> String {
    match path.is_empty() {
        true => format!("refs.{r}.parq"),
        false => format!("{path}/refs.{r}.parq"),
    }
}

/// The key of chunk `n` (C order over the grid) of `f`: `temp/1.0.2`, `crs/0` for a scalar.
fn chunk_key(f: &Field, mut n: u64) -> String {
    let mut indices = vec![0u64; f.grid.len()];
    for (i, &g) in indices.iter_mut().zip(&f.grid).rev() {
        *i = n % g.max(1);
        n /= g.max(1);
    }
    let name = match indices.is_empty() {
        true => "0".to_string(),
        false => (indices.iter().map(u64::to_string))
            .collect::<Vec<_>>()
            .join(&f.separator),
    };
    match f.path.is_empty() {
        true => name,
        false => format!("{}/{name}", f.path),
    }
}

/// What one row of a record says.
enum Reference {
    Missing,
    Inline(Bytes),
    Located { url: String, offset: u64, size: u64 },
}

/// The record batches of a record file.
fn read_record(bytes: Bytes) -> Result<Vec<RecordBatch>, String> {
    let reader = ParquetRecordBatchReaderBuilder::try_new(bytes)
        .and_then(|b| b.build())
        .map_err(|e| format!("not a Parquet file of references: {e}"))?;
    reader
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("cannot be read: {e}"))
}

/// The rows of a record batch (columns `path`, `offset`, `size`, `raw`; `path` may be
/// dictionary-encoded, `raw` absent when no chunk is inline).
fn references(batch: &RecordBatch) -> Result<Vec<Reference>, String> {
    let column = |name: &str, to: &DataType| -> Result<Option<arrow::array::ArrayRef>, String> {
        batch
            .column_by_name(name)
            .map(|c| cast(c, to).map_err(|e| format!("its column {name} is not {to}: {e}")))
            .transpose()
    };
    let path = column("path", &DataType::Utf8)?.ok_or("it has no column path")?;
    let offset = column("offset", &DataType::Int64)?;
    let size = column("size", &DataType::Int64)?;
    let raw = column("raw", &DataType::Binary)?;
    let path = path.as_string::<i32>();
    let number =
        |c: &Option<arrow::array::ArrayRef>, name: &str, i: usize| -> Result<u64, String> {
            let Some(c) = c else { return Ok(0) };
            let c = c.as_primitive::<Int64Type>();
            match c.is_valid(i) {
                false => Ok(0),
                true => u64::try_from(c.value(i)).map_err(|_| {
                    format!(
                        "row {i}: its {name} is {}, not a number of bytes",
                        c.value(i)
                    )
                }),
            }
        };
    let mut out = Vec::with_capacity(batch.num_rows());
    for i in 0..batch.num_rows() {
        if let Some(raw) = raw
            .as_ref()
            .map(|r| r.as_binary::<i32>())
            .filter(|r| r.is_valid(i))
        {
            out.push(Reference::Inline(Bytes::copy_from_slice(raw.value(i))));
            continue;
        }
        if !path.is_valid(i) || path.value(i).is_empty() {
            out.push(Reference::Missing);
            continue;
        }
        let (offset, size) = (number(&offset, "offset", i)?, number(&size, "size", i)?);
        if offset.checked_add(size).is_none() {
            return Err(format!("row {i}: its offset and size pass 2^64"));
        }
        out.push(Reference::Located {
            url: path.value(i).to_string(),
            offset,
            size,
        });
    }
    Ok(out)
}
