//! `INSERT INTO t SELECT …` on a table of a 1-D group (written by us, or by xarray along its
//! first dimension), or of a 1-D array that no other array of its group shares a dimension
//! with: the rows are appended along the dimension, as `xarray.to_zarr(append_dim=…)` does. Each array keeps its data type, codecs, chunks and CF encoding (times are encoded in
//! the array's own `units`, exactly, or refused). New chunks are written first; the chunk the
//! old rows end in is rewritten with its old elements kept (readers of the old shape read the
//! same values); the grown shapes go last: each array's metadata, then the group's
//! consolidated metadata. A failed append removes the new chunks and leaves the old shape.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef};
use arrow::compute::cast;
use arrow::datatypes::DataType;
use datafusion::physical_plan::SendableRecordBatchStream;
use futures::StreamExt;
use serde_json::Value;

use crate::cf::encode::{EncodeError, encode};
use crate::cf::{CfDecoding, CfKind};
use crate::error::{Result, ZarrError};
use crate::node::{ArrayNode, ElementKind, Node, open_node};
use crate::table::{ColumnSource, TableModel};
use crate::write::chunk::{ChunkEncoder, Pipeline};
use crate::write::column::{ColumnSpec, NullRule, Storage, Utf32Width};
use crate::write::elements::{append_fixed, append_utf32, append_vlen, row_error};
use crate::write::target::Target;

/// One column being appended: its array and how its values are stored.
pub(in crate::write) struct AppendColumn {
    /// Its position in the table's schema.
    position: usize,
    array: Arc<ArrayNode>,
    spec: ColumnSpec,
    /// The element width in bytes (strings: `length_bytes`; 0 for variable-length values).
    width: u64,
    /// What the table's values go through to be stored (CF encoding).
    cf: Option<CfDecoding>,
    /// Rows per chunk.
    chunk_rows: u64,
}

/// The columns to append, or why the table cannot be appended to.
pub(in crate::write) async fn plan(model: &TableModel) -> Result<Vec<AppendColumn>> {
    let refuse =
        |why: String| ZarrError::Option(format!("cannot INSERT INTO {}: {why}", model.display));
    if let Node::Array(array) = &model.node {
        check_alone_along_its_dimension(model, array).await?;
    }
    if model.shape.len() != 1 {
        return Err(refuse(format!(
            "appends go along one dimension; this table has {} ({:?})",
            model.shape.len(),
            model.shape
        )));
    }
    if let Some(out) = model.left_out.first() {
        return Err(refuse(format!(
            "the group has arrays that are not in the table ({out}); appending would leave \
             them behind"
        )));
    }
    let mut columns = Vec::new();
    for (position, column) in model.columns.iter().enumerate() {
        let array = match &column.source {
            ColumnSource::Index { .. } => continue,
            ColumnSource::Coordinate { array, .. } | ColumnSource::Value { array } => array,
            ColumnSource::Broadcast { .. } => {
                return Err(refuse(format!(
                    "column {} is not along the table's dimension",
                    column.name
                )));
            }
        };
        // A group table grows its own arrays; an array's table, the array.
        let grown = match &model.node {
            Node::Array(_) => array.path.trim_matches('/') == model.path.trim_matches('/'),
            Node::Group(_) => parent_path(&array.path) == model.path.trim_matches('/'),
        };
        if !grown {
            return Err(refuse(format!(
                "column {} is inherited from {}, which this append does not grow",
                column.name,
                shown_group(model, parent_path(&array.path))
            )));
        }
        columns.push(append_column(position, array, model)?);
    }
    Ok(columns)
}

/// The path of the group holding the node at `path` (`""` for the store root).
fn parent_path(path: &str) -> &str {
    let path = path.trim_matches('/');
    path.rsplit_once('/').map_or("", |(parent, _)| parent)
}

/// The group at `path` of `model`'s store as a message names it.
fn shown_group(model: &TableModel, path: &str) -> String {
    match path {
        "" => format!("the store root ({})", model.store.display_location()),
        path => format!("group {path}"),
    }
}

/// An array's table grows the array alone: refused when another array of its group runs along
/// the same dimension (appending would leave it behind), naming it and the group to register.
async fn check_alone_along_its_dimension(model: &TableModel, array: &ArrayNode) -> Result<()> {
    let group_path = parent_path(&array.path);
    let Ok(Node::Group(group)) = open_node(&model.store, group_path, &model.limits, None).await
    else {
        // An array at the store root, or in no readable group: nothing beside it.
        return Ok(());
    };
    let dimension = array.dimension_names.first().cloned().flatten();
    let along: Vec<&str> = (group.arrays.iter())
        .filter(|other| other.name != array.name)
        .filter(
            |other| match (&dimension, other.dimension_names.as_slice()) {
                (Some(name), [Some(theirs), ..]) => theirs == name,
                (None, [None]) => other.shape == array.shape,
                _ => false,
            },
        )
        .map(|other| other.name.as_str())
        .collect();
    if along.is_empty() {
        return Ok(());
    }
    let dimension =
        dimension.map_or_else(|| "its dimension".to_string(), |d| format!("dimension {d}"));
    let path = match group_path {
        "" => "without the option path".to_string(),
        path => format!("with OPTIONS ('path' '{path}')"),
    };
    Err(ZarrError::Option(format!(
        "cannot INSERT INTO {} alone: {} holds {} along the same {dimension}, which this \
         append would leave behind; register the group ({}, {path}) to append to all of them",
        model.display,
        shown_group(model, group_path),
        along.join(", "),
        model.store.display_location(),
    )))
}

fn append_column(
    position: usize,
    array: &Arc<ArrayNode>,
    model: &TableModel,
) -> Result<AppendColumn> {
    let refuse = |why: &str| ZarrError::metadata(&array.display, format!("cannot append: {why}"));
    let document = array.document();
    let chunk_rows = match array.zarr_format {
        2 => document["chunks"][0].as_u64(),
        _ => document["chunk_grid"]["configuration"]["chunk_shape"][0].as_u64(),
    };
    let chunk_rows = chunk_rows
        .filter(|&n| n > 0)
        .ok_or_else(|| refuse("its chunk grid is not a regular 1-D grid"))?;
    let kind = array
        .kind
        .clone()
        .ok_or_else(|| refuse("its data type is not read"))?;
    let cf = if model.options.decode_cf {
        array.cf.clone()
    } else {
        None
    };
    let attributes = array.attributes.to_value();
    let fill = attributes.get("_FillValue").cloned();
    let null = null_rule(&kind, cf.as_ref(), fill.as_ref());
    let spec = ColumnSpec::of_existing(&array.name, &kind, null).map_err(refuse)?;
    let width = match (spec.storage, &kind) {
        (Storage::Fixed { size }, _) => size as u64,
        (Storage::Utf32, ElementKind::Utf32 { length_bytes }) => *length_bytes as u64,
        _ => 0,
    };
    Ok(AppendColumn {
        position,
        array: array.clone(),
        spec,
        width,
        cf,
        chunk_rows,
    })
}

/// What a NULL becomes in an existing array: NaN in floats, NaT in times, the value its
/// `_FillValue` or `missing_value` masks, else an error.
fn null_rule(kind: &ElementKind, cf: Option<&CfDecoding>, fill: Option<&Value>) -> NullRule {
    let stored = match (cf, kind) {
        (Some(cf), _) => cf.stored.clone(),
        (None, ElementKind::Primitive(t)) => t.clone(),
        (None, _) => DataType::Utf8,
    };
    if let Some(CfKind::Time { .. } | CfKind::Duration { .. }) = cf.map(|c| &c.kind)
        && stored == DataType::Int64
    {
        return NullRule::NaT;
    }
    match stored {
        DataType::Float16 | DataType::Float32 | DataType::Float64 => return NullRule::NaN,
        DataType::Timestamp(_, _) | DataType::Duration(_) | DataType::Date64 => {
            return NullRule::NaT;
        }
        _ => {}
    }
    let missing = cf.and_then(|c| c.missing_integers.first().copied());
    match (missing, &stored, fill) {
        (Some(v), t, _) if t.is_integer() => {
            let bytes = integer_bytes(v, t);
            bytes.map_or(NullRule::Refused, |bytes| NullRule::Value {
                bytes,
                json: Value::from(v as i64),
            })
        }
        (_, DataType::Utf8, Some(Value::String(s))) => NullRule::Value {
            bytes: s.as_bytes().to_vec(),
            json: Value::from(s.clone()),
        },
        _ => NullRule::Refused,
    }
}

/// `v` as an element of the integer type `t`, native order.
fn integer_bytes(v: i128, t: &DataType) -> Option<Vec<u8>> {
    Some(match t {
        DataType::Int8 => i8::try_from(v).ok()?.to_ne_bytes().to_vec(),
        DataType::Int16 => i16::try_from(v).ok()?.to_ne_bytes().to_vec(),
        DataType::Int32 => i32::try_from(v).ok()?.to_ne_bytes().to_vec(),
        DataType::Int64 => i64::try_from(v).ok()?.to_ne_bytes().to_vec(),
        DataType::UInt8 => u8::try_from(v).ok()?.to_ne_bytes().to_vec(),
        DataType::UInt16 => u16::try_from(v).ok()?.to_ne_bytes().to_vec(),
        DataType::UInt32 => u32::try_from(v).ok()?.to_ne_bytes().to_vec(),
        DataType::UInt64 => u64::try_from(v).ok()?.to_ne_bytes().to_vec(),
        _ => return None,
    })
}

impl AppendColumn {
    fn error(&self, message: String) -> ZarrError {
        ZarrError::metadata(&self.array.display, message)
    }

    fn cast_error(&self, to: &DataType, e: arrow::error::ArrowError) -> ZarrError {
        ZarrError::Option(format!(
            "column {}: cannot store it as {to}: {e}",
            self.spec.name
        ))
    }

    /// The table's values of this column as the array stores them (its first row is row
    /// `first` of the grown table).
    fn stored(&self, values: &ArrayRef, first: u64) -> Result<ArrayRef> {
        let cast_to =
            |values: &ArrayRef, to: &DataType| cast(values, to).map_err(|e| self.cast_error(to, e));
        let Some(cf) = &self.cf else {
            let to = match self.array.kind {
                Some(ElementKind::Primitive(ref t)) if t.is_temporal() => {
                    let typed = cast_to(values, t)?;
                    return cast_to(&typed, &DataType::Int64);
                }
                Some(ElementKind::Primitive(ref t)) => t.clone(),
                Some(ElementKind::VariableBytes) => DataType::Binary,
                _ => DataType::Utf8,
            };
            return cast_to(values, &to);
        };
        encode(values, cf).map_err(|e| match e {
            EncodeError::Cast { to, error } => self.cast_error(&to, error),
            EncodeError::Temporal(error) => self.error(error.to_string()),
            EncodeError::DoesNotFit { index } => row_error(
                &self.spec.name,
                first.saturating_add(index as u64),
                &format!(
                    "the value does not fit the array's {}",
                    self.array.data_type_name
                ),
            ),
            EncodeError::NotWhole { index } => row_error(
                &self.spec.name,
                first.saturating_add(index as u64),
                &format!(
                    "the value is not a whole number of the array's units ({})",
                    self.array.attributes.to_value()["units"]
                ),
            ),
        })
    }
}

/// A column's chunk being assembled.
struct Assembly {
    /// Chunk index being filled.
    index: u64,
    /// Rows in it.
    rows: u64,
    fixed: Vec<u8>,
    vlen: Vec<u8>,
    offsets: Vec<usize>,
    /// The rewritten chunk the old rows end in, held until every new chunk is written.
    boundary: Option<(String, Vec<u8>)>,
    encoder: ChunkEncoder,
}

/// Writes `stream`'s rows after the table's last row through `target`; returns the rows
/// appended.
pub(in crate::write) async fn append_rows(
    model: &TableModel,
    columns: &[AppendColumn],
    stream: SendableRecordBatchStream,
    target: &Arc<Target>,
) -> Result<u64> {
    let mut pipeline = Pipeline::new(target.clone());
    let result = append_rows_with(model, columns, stream, target, &mut pipeline).await;
    if result.is_err() {
        pipeline.shutdown().await;
    }
    result
}

async fn append_rows_with(
    model: &TableModel,
    columns: &[AppendColumn],
    mut stream: SendableRecordBatchStream,
    target: &Arc<Target>,
    pipeline: &mut Pipeline,
) -> Result<u64> {
    let old_rows = model.shape.first().copied().unwrap_or(0);
    let mut assemblies = Vec::with_capacity(columns.len());
    for column in columns {
        let zarrs = column.array.zarrs()?.clone();
        let encoder = ChunkEncoder::from_array(&column.array.display, zarrs, &[column.chunk_rows]);
        let mut assembly = Assembly {
            index: old_rows / column.chunk_rows,
            rows: old_rows % column.chunk_rows,
            fixed: Vec::new(),
            vlen: Vec::new(),
            offsets: Vec::new(),
            boundary: None,
            encoder,
        };
        if assembly.rows > 0 {
            // The old rows of the chunk they end in, kept.
            let key = column.array.chunk_key(&[assembly.index])?;
            let encoded = target.get(&key).await?;
            let keep =
                usize::try_from(assembly.rows).map_err(|_| column.error("a chunk".into()))?;
            match (&column.spec.storage, encoded) {
                // Never written: the fill value (below).
                (_, None) => {}
                (Storage::VlenUtf8 | Storage::VlenBytes, Some(encoded)) => {
                    let (bytes, offsets) = assembly.encoder.decode_vlen(&encoded)?;
                    let end = offsets.get(keep).copied().unwrap_or(0);
                    assembly.vlen = bytes.get(..end).unwrap_or_default().to_vec();
                    assembly.offsets = offsets.get(1..=keep).unwrap_or_default().to_vec();
                }
                (_, Some(encoded)) => {
                    let mut old = assembly.encoder.decode_fixed(&encoded)?;
                    old.truncate(keep.saturating_mul(column.width as usize));
                    assembly.fixed = old;
                }
            }
            if assembly.fixed.is_empty() && assembly.offsets.is_empty() {
                // A chunk never written holds the fill value: its bytes, decoded from nothing.
                let fill = assembly.encoder.fill_elements(keep)?;
                match fill {
                    (fixed, None) => assembly.fixed = fixed,
                    (bytes, Some(offsets)) => {
                        assembly.vlen = bytes;
                        assembly.offsets = offsets;
                    }
                }
            }
        }
        assemblies.push(assembly);
    }
    let mut rows = 0u64;
    while let Some(batch) = stream.next().await {
        let batch = batch.map_err(|e| target.error(format!("the query failed: {e}")))?;
        for (column, assembly) in columns.iter().zip(assemblies.iter_mut()) {
            let values = batch.column(column.position);
            let first = old_rows.saturating_add(rows);
            let stored = column.stored(values, first)?;
            push(column, assembly, &stored, first, old_rows, pipeline).await?;
        }
        rows = rows.saturating_add(batch.num_rows() as u64);
    }
    if rows == 0 {
        return Ok(0);
    }
    for (column, assembly) in columns.iter().zip(assemblies.iter_mut()) {
        flush(column, assembly, old_rows, pipeline).await?;
    }
    pipeline.finish().await?;
    // The chunk the old rows end in, rewritten last of the chunks.
    for assembly in &mut assemblies {
        if let Some((key, bytes)) = assembly.boundary.take() {
            target.replace(&key, bytes.into()).await?;
        }
    }
    let new_rows = old_rows.saturating_add(rows);
    grow_metadata(model, columns, new_rows, target).await?;
    Ok(rows)
}

/// Appends `stored` (its first row is row `first` of the grown table) to the chunk being
/// assembled, writing each chunk it completes.
async fn push(
    column: &AppendColumn,
    assembly: &mut Assembly,
    stored: &ArrayRef,
    first: u64,
    old_rows: u64,
    pipeline: &mut Pipeline,
) -> Result<()> {
    let mut offset = 0usize;
    while offset < stored.len() {
        let room = column.chunk_rows.saturating_sub(assembly.rows);
        let take = usize::try_from(room)
            .unwrap_or(usize::MAX)
            .min(stored.len() - offset);
        let part = stored.slice(offset, take);
        let row = first.saturating_add(offset as u64);
        match column.spec.storage {
            Storage::Fixed { .. } => {
                append_fixed(&column.spec, &part, row, &mut assembly.fixed)?;
            }
            Storage::Utf32 => {
                let hint = format!("the array's length_bytes {}", column.width);
                append_utf32(
                    &column.spec,
                    &part,
                    row,
                    Utf32Width::of_length_bytes(column.width),
                    false,
                    &mut assembly.fixed,
                    &hint,
                )?;
            }
            Storage::VlenUtf8 | Storage::VlenBytes => {
                append_vlen(
                    &column.spec,
                    &part,
                    row,
                    &mut assembly.vlen,
                    &mut assembly.offsets,
                )?;
            }
        }
        assembly.rows = assembly.rows.saturating_add(take as u64);
        offset += take;
        if assembly.rows >= column.chunk_rows {
            flush(column, assembly, old_rows, pipeline).await?;
        }
    }
    Ok(())
}

/// Writes the chunk being assembled (the one the old rows end in is held back).
async fn flush(
    column: &AppendColumn,
    assembly: &mut Assembly,
    old_rows: u64,
    pipeline: &mut Pipeline,
) -> Result<()> {
    if assembly.rows == 0 {
        return Ok(());
    }
    let key = column.array.chunk_key(&[assembly.index])?;
    let encoder = assembly.encoder.clone();
    let boundary = !old_rows.is_multiple_of(column.chunk_rows)
        && assembly.index == old_rows / column.chunk_rows;
    let fixed = std::mem::take(&mut assembly.fixed);
    let vlen = std::mem::take(&mut assembly.vlen);
    let offsets = std::mem::take(&mut assembly.offsets);
    let width = column.width;
    let storage = column.spec.storage;
    let job = move || match storage {
        Storage::VlenUtf8 | Storage::VlenBytes => encoder.encode_vlen(vlen, offsets),
        _ => encoder.encode_fixed(fixed, width),
    };
    if boundary {
        assembly.boundary = Some((key, job()?));
    } else {
        pipeline.submit(key, job).await?;
    }
    assembly.index += 1;
    assembly.rows = 0;
    Ok(())
}

/// Writes the grown shape: each array's metadata, then the group's consolidated metadata.
async fn grow_metadata(
    model: &TableModel,
    columns: &[AppendColumn],
    rows: u64,
    target: &Target,
) -> Result<()> {
    for column in columns {
        let path = &column.array.path;
        let key = match column.array.zarr_format {
            2 => format!("{path}/.zarray"),
            _ => format!("{path}/zarr.json"),
        };
        let mut document = read_json(target, &key).await?;
        // The shape this append started from: else another writer grew the array meanwhile
        // (one that lost its lease), and these rows would overwrite its.
        if document["shape"] != Value::from(column.array.shape.clone()) {
            return Err(target.error(format!(
                "{key}: another writer changed the array while this write ran (its shape is now \
                 {}, was {:?}); nothing of this write is kept",
                document["shape"], column.array.shape
            )));
        }
        document["shape"] = Value::from(vec![rows]);
        replace_json(target, &key, &document).await?;
    }
    // The group holding the arrays: the table's, or the group of the array whose table it is.
    let group = match &model.node {
        Node::Array(array) => parent_path(&array.path),
        Node::Group(_) => model.path.trim_matches('/'),
    };
    let prefix = if group.is_empty() {
        String::new()
    } else {
        format!("{group}/")
    };
    let names: Vec<String> = columns
        .iter()
        .map(|c| {
            let path = c.array.path.trim_matches('/');
            path.strip_prefix(&prefix).unwrap_or(path).to_string()
        })
        .collect();
    // V3: the group's zarr.json; V2: the store root's .zmetadata (keys relative to the root).
    let v3 = format!("{prefix}zarr.json");
    if let Some(mut document) = try_read_json(target, &v3).await? {
        let metadata = &mut document["consolidated_metadata"]["metadata"];
        if metadata.is_object() {
            for name in &names {
                if metadata[name.as_str()].is_object() {
                    metadata[name.as_str()]["shape"] = Value::from(vec![rows]);
                }
            }
            replace_json(target, &v3, &document).await?;
        }
        return Ok(());
    }
    if let Some(mut document) = try_read_json(target, ".zmetadata").await? {
        let metadata = &mut document["metadata"];
        let mut changed = false;
        for column in columns {
            let key = format!("{}/.zarray", column.array.path.trim_matches('/'));
            if metadata[key.as_str()].is_object() {
                metadata[key.as_str()]["shape"] = Value::from(vec![rows]);
                changed = true;
            }
        }
        if changed {
            replace_json(target, ".zmetadata", &document).await?;
        }
    }
    Ok(())
}

async fn replace_json(target: &Target, key: &str, document: &Value) -> Result<()> {
    let bytes = serde_json::to_vec(document).map_err(|e| target.error(e.to_string()))?;
    target.replace(key, bytes.into()).await
}

async fn try_read_json(target: &Target, key: &str) -> Result<Option<Value>> {
    match target.get(key).await? {
        Some(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| target.error(format!("{key}: {e}"))),
        None => Ok(None),
    }
}

async fn read_json(target: &Target, key: &str) -> Result<Value> {
    try_read_json(target, key)
        .await?
        .ok_or_else(|| target.error(format!("{key} is gone")))
}
