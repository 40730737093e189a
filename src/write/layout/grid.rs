//! The N-D layout (option `dimensions`), the way back from a table to a dataset: the named
//! columns become coordinate arrays of their distinct values (sorted, as pandas' MultiIndex
//! levels are; one dimension keeps the rows' order, as a plain Index does), and every other column
//! an N-D array over them, missing cells the fill value: what
//! `df.set_index([...]).to_xarray().to_zarr(...)` writes.
//!
//! The rows are read once, spilled to a temporary Arrow IPC file while each dimension's
//! distinct values (and each string column's longest string) are collected; a grid larger
//! than `max_cells` is refused then. The cells are then written in groups of whole chunk
//! slabs along the first dimension, at most [`GROUP_BYTES`] of cells at a time, each group
//! filled by one pass over the spill. Memory holds the coordinates and one group.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufReader, BufWriter, Seek, SeekFrom};
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, RecordBatch};
use arrow::datatypes::{DataType, SchemaRef};
use arrow::ipc::reader::StreamReader;
use arrow::ipc::writer::StreamWriter;
use arrow::row::{RowConverter, SortField};
use datafusion::execution::runtime_env::RuntimeEnv;
use datafusion::physical_plan::SendableRecordBatchStream;
use futures::StreamExt;

use crate::error::{Result, ZarrError};
use crate::write::chunk::{ChunkEncoder, Pipeline, chunk_bytes};
use crate::write::column::{
    ArrayShape, ColumnSpec, NullRule, Storage, Utf32Width, array_documents, chunk_key, column_spec,
    element_size, group_documents,
};
use crate::write::elements::{
    self, append_fixed, append_utf32, append_vlen, longest_string, null_element, prepared,
    row_error,
};
use crate::write::options::{TARGET_CHUNK_BYTES, WriteOptions};
use crate::write::target::Target;

/// The cells held in memory at once while writing, in bytes.
pub(crate) const GROUP_BYTES: u64 = 256 << 20;

/// What a variable-length cell costs beside its bytes: where they are in its group.
const VLEN_CELL_BYTES: u64 = 2 * std::mem::size_of::<usize>() as u64;

/// Whether a column's values are of variable length (strings as UTF-8, bytes).
fn is_vlen(spec: &ColumnSpec) -> bool {
    matches!(spec.storage, Storage::VlenUtf8 | Storage::VlenBytes)
}

/// Writes `stream` in the N-D `layout` into `target`; returns the rows written.
pub(in crate::write) async fn write_grid(
    runtime: &RuntimeEnv,
    layout: GridLayout,
    stream: SendableRecordBatchStream,
    target: &Arc<Target>,
    options: &WriteOptions,
) -> Result<u64> {
    let mut pipeline = Pipeline::new(target.clone());
    let result = write_grid_with(runtime, layout, stream, target, options, &mut pipeline).await;
    if result.is_err() {
        pipeline.shutdown().await;
    }
    result
}

/// The columns of the N-D layout.
pub(in crate::write) struct GridLayout {
    /// The dimension columns' positions, in the order of `dimensions`.
    dimensions: Vec<usize>,
    /// The data columns: position and array.
    data: Vec<(usize, ColumnSpec)>,
    /// The dimension columns as coordinate arrays.
    coordinates: Vec<ColumnSpec>,
}

impl GridLayout {
    /// The layout of `schema`'s columns under `options`' `dimensions`, or why there is none.
    pub(in crate::write) fn new(schema: &SchemaRef, options: &WriteOptions) -> Result<Self> {
        let mut dimensions = Vec::new();
        let mut coordinates = Vec::new();
        for name in &options.dimensions {
            let (position, field) = schema.column_with_name(name).ok_or_else(|| {
                ZarrError::Option(format!(
                    "dimensions: the query has no column {name} (its columns: {})",
                    names(schema)
                ))
            })?;
            if dimensions.contains(&position) {
                return Err(ZarrError::Option(format!("dimensions names {name} twice")));
            }
            dimensions.push(position);
            coordinates.push(column_spec(field, options)?);
        }
        let mut data = Vec::new();
        for (position, field) in schema.fields().iter().enumerate() {
            if dimensions.contains(&position) {
                continue;
            }
            data.push((position, column_spec(field, options)?));
        }
        Ok(Self {
            dimensions,
            data,
            coordinates,
        })
    }
}

fn names(schema: &SchemaRef) -> String {
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    names.join(", ")
}

/// One dimension's distinct values, as Arrow's row format (whose bytes sort as the values).
struct Distinct {
    converter: RowConverter,
    values: HashMap<Vec<u8>, u64>,
}

/// What the first pass learned.
struct Spill {
    /// The spill file, removed when dropped.
    _temp: Arc<dyn datafusion::execution::SpillFile>,
    file: File,
    rows: u64,
    distinct: Vec<Distinct>,
    /// The longest string of each data column, in code points (0 for others).
    longest: Vec<u64>,
    /// The longest string of each coordinate.
    coordinate_longest: Vec<u64>,
    /// Whether a data column held a NULL.
    saw_null: Vec<bool>,
    /// The bytes of each variable-length data column's values (0 for others).
    vlen_bytes: Vec<u64>,
}

async fn spill(
    runtime: &RuntimeEnv,
    layout: &GridLayout,
    stream: &mut SendableRecordBatchStream,
    target: &Target,
    options: &WriteOptions,
) -> Result<Spill> {
    let io = |e: std::io::Error| target.error(format!("the spill file: {e}"));
    // DataFusion's disk manager: its temporary directories and disk limit.
    let temp = runtime
        .disk_manager
        .create_tmp_file("the rows of an N-D Zarr write")
        .map_err(|e| target.error(e.to_string()))?;
    let path = temp.path().ok_or_else(|| {
        target.error(
            "the N-D layout spills its rows to a local file; this session's disk \
                      manager has none"
                .into(),
        )
    })?;
    let file = File::options()
        .read(true)
        .write(true)
        .open(path)
        .map_err(io)?;
    let schema = stream.schema();
    let mut writer = StreamWriter::try_new(BufWriter::new(file.try_clone().map_err(io)?), &schema)
        .map_err(|e| target.error(e.to_string()))?;
    let mut distinct = Vec::new();
    for &position in &layout.dimensions {
        let field = schema.field(position);
        let converter = RowConverter::new(vec![SortField::new(field.data_type().clone())])
            .map_err(|e| target.error(e.to_string()))?;
        distinct.push(Distinct {
            converter,
            values: HashMap::new(),
        });
    }
    let mut rows = 0u64;
    let mut longest = vec![0u64; layout.data.len()];
    let mut coordinate_longest = vec![0u64; layout.coordinates.len()];
    let mut saw_null = vec![false; layout.data.len()];
    let mut vlen_bytes = vec![0u64; layout.data.len()];
    while let Some(batch) = stream.next().await {
        let batch = batch.map_err(|e| target.error(format!("the query failed: {e}")))?;
        for (d, &position) in layout.dimensions.iter().enumerate() {
            let column = batch.column(position);
            if let Some(i) = (0..column.len()).find(|&i| column.is_null(i)) {
                return Err(row_error(
                    schema.field(position).name(),
                    rows.saturating_add(i as u64),
                    "NULL in a dimension column (a coordinate has no missing value)",
                ));
            }
            let spec = &layout.coordinates[d];
            if spec.storage == Storage::Utf32 {
                let (n, _) = longest_string(spec, column, rows)?;
                coordinate_longest[d] = coordinate_longest[d].max(n);
            }
            let converted = distinct[d]
                .converter
                .convert_columns(std::slice::from_ref(column))
                .map_err(|e| target.error(e.to_string()))?;
            for row in converted.iter() {
                let seen = distinct[d].values.len() as u64;
                if !distinct[d].values.contains_key(row.as_ref()) {
                    distinct[d].values.insert(row.as_ref().to_vec(), seen);
                }
            }
            if distinct[d].values.len() as u64 > options.max_cells {
                return Err(too_large(distinct[d].values.len() as u64, options));
            }
        }
        for (c, (position, spec)) in layout.data.iter().enumerate() {
            let column = prepared(spec, batch.column(*position), rows)?;
            if spec.storage == Storage::Utf32 {
                let (n, null) = longest_string(spec, &column, rows)?;
                longest[c] = longest[c].max(n);
                saw_null[c] |= null;
            } else {
                saw_null[c] |= column.null_count() > 0;
            }
            if is_vlen(spec) {
                vlen_bytes[c] = vlen_bytes[c].saturating_add(elements::vlen_bytes(spec, &column)?);
            }
        }
        writer
            .write(&batch)
            .map_err(|e| target.error(e.to_string()))?;
        rows = rows.saturating_add(batch.num_rows() as u64);
    }
    writer.finish().map_err(|e| target.error(e.to_string()))?;
    drop(writer);
    Ok(Spill {
        _temp: temp,
        file,
        rows,
        distinct,
        longest,
        coordinate_longest,
        saw_null,
        vlen_bytes,
    })
}

fn too_large(cells: u64, options: &WriteOptions) -> ZarrError {
    ZarrError::Option(format!(
        "the N-D grid of the dimensions {:?} has {cells} cells or more, more than max_cells = \
         {} (raise the option max_cells to write it; the cells are written in groups of at \
         most 256 MiB, and the coordinates are held in memory)",
        options.dimensions, options.max_cells
    ))
}

/// The default chunk shape: the grid, its longest dimension halved until a chunk of
/// `element` bytes is at most [`TARGET_CHUNK_BYTES`].
fn default_chunks(shape: &[u64], element: u64) -> Vec<u64> {
    let mut chunks: Vec<u64> = shape.iter().map(|&n| n.max(1)).collect();
    loop {
        let bytes = chunks
            .iter()
            .fold(element.max(1), |acc, &n| acc.saturating_mul(n));
        let Some((i, &longest)) = chunks.iter().enumerate().max_by_key(|(_, n)| **n) else {
            return chunks;
        };
        if bytes <= TARGET_CHUNK_BYTES || longest <= 1 {
            return chunks;
        }
        chunks[i] = longest.div_ceil(2);
    }
}

async fn write_grid_with(
    runtime: &RuntimeEnv,
    layout: GridLayout,
    mut stream: SendableRecordBatchStream,
    target: &Arc<Target>,
    options: &WriteOptions,
    pipeline: &mut Pipeline,
) -> Result<u64> {
    let mut spill = spill(runtime, &layout, &mut stream, target, options).await?;
    // The coordinates and each value's position: sorted, as pandas' MultiIndex makes its
    // levels; one dimension keeps the rows' order, as a plain Index does.
    let sort = spill.distinct.len() > 1;
    let mut shape = Vec::with_capacity(spill.distinct.len());
    for distinct in &mut spill.distinct {
        if sort {
            let mut keys: Vec<Vec<u8>> = distinct.values.keys().cloned().collect();
            keys.sort_unstable();
            for (i, key) in keys.iter().enumerate() {
                distinct.values.insert(key.clone(), i as u64);
            }
        }
        shape.push(distinct.values.len() as u64);
    }
    let cells = shape
        .iter()
        .try_fold(1u64, |acc, &n| acc.checked_mul(n))
        .unwrap_or(u64::MAX);
    if cells > options.max_cells {
        return Err(too_large(cells, options));
    }
    // A grid with holes: integers become floats with NaN there, as pandas makes them.
    let holes = spill.rows < cells;
    let mut data = layout.data.clone();
    for (_, spec) in &mut data {
        if holes && spec.null == NullRule::Refused {
            match spec.v3_type {
                "bool" | "fixed_length_utf32" | "string" | "variable_length_bytes" => {
                    return Err(ZarrError::Option(format!(
                        "column {}: the grid has cells no row fills ({} rows, {cells} cells), \
                         and {} has no missing value: give the option null_value",
                        spec.name, spill.rows, spec.v3_type
                    )));
                }
                _ => {
                    spec.v3_type = "float64";
                    spec.storage = Storage::Fixed { size: 8 };
                    spec.cast_to = Some(DataType::Float64);
                    spec.null = NullRule::NaN;
                }
            }
        }
    }
    // Each data column's string width (strings), and its element's bytes.
    let string_widths: Vec<Option<Utf32Width>> = data
        .iter()
        .zip(&spill.longest)
        .map(|((_, spec), &longest)| {
            let width = match options.string_length {
                Some(n) => Utf32Width::of_code_points(n),
                None => Utf32Width::of_code_points(longest)
                    .max(spec.source_width.unwrap_or(Utf32Width::MIN)),
            };
            (spec.storage == Storage::Utf32).then_some(width)
        })
        .collect();
    // A variable-length column's cells: their mean size, and where each is in its group.
    let widths: Vec<u64> = (data.iter().zip(&string_widths).zip(&spill.vlen_bytes))
        .map(|(((_, spec), &width), &bytes)| match is_vlen(spec) {
            true => bytes
                .div_ceil(spill.rows.max(1))
                .saturating_add(VLEN_CELL_BYTES),
            false => element_size(spec, width),
        })
        .collect();
    let widest = widths.iter().copied().max().unwrap_or(8);
    let chunks = match options.chunks.is_empty() {
        true => default_chunks(&shape, widest),
        false => options.chunks.clone(),
    };
    let cells_per_chunk = chunks.iter().fold(1u64, |acc, &n| acc.saturating_mul(n));
    chunk_bytes("the N-D layout's arrays", cells_per_chunk, widest)?;
    let dimensions = options.dimensions.clone();
    let array_shape = ArrayShape {
        shape: shape.clone(),
        grid: chunks.clone(),
        inner: None,
        dimensions: dimensions.clone(),
    };
    let mut documents = Vec::new();
    // The coordinate arrays.
    for (d, spec) in layout.coordinates.iter().enumerate() {
        let values = coordinate_values(&spill.distinct[d])?;
        let longest = Utf32Width::of_code_points(spill.coordinate_longest[d]);
        let width = (spec.storage == Storage::Utf32)
            .then(|| longest.max(spec.source_width.unwrap_or(Utf32Width::MIN)));
        let docs = write_coordinate(spec, &values, width, &dimensions[d], target, options).await?;
        documents.push((spec.name.clone(), docs));
    }
    // The data arrays, group by group of slabs.
    let slab_cells = chunks
        .first()
        .copied()
        .unwrap_or(1)
        .saturating_mul(shape.iter().skip(1).product::<u64>().max(1));
    let row_bytes: u64 = widths.iter().sum::<u64>().max(1);
    let slabs = shape
        .first()
        .copied()
        .unwrap_or(1)
        .div_ceil(chunks.first().copied().unwrap_or(1).max(1));
    let slabs_per_group = (GROUP_BYTES / slab_cells.saturating_mul(row_bytes).max(1)).max(1);
    let mut encoders = Vec::new();
    for ((_, spec), &width) in data.iter().zip(&string_widths) {
        let docs = array_documents(spec, width, &array_shape, false, options);
        encoders.push(ChunkEncoder::new(&spec.name, &docs, &chunks)?);
    }
    let mut slab = 0u64;
    while slab < slabs {
        let last = slab.saturating_add(slabs_per_group).min(slabs);
        let group = Group::new(&shape, &chunks, slab, last);
        let buffers = fill_group(
            &group,
            &layout,
            &data,
            (&widths, &string_widths),
            &mut spill,
            options,
        )?;
        for (c, ((_, spec), buffer)) in data.iter().zip(buffers).enumerate() {
            write_group_chunks(
                &group,
                spec,
                &buffer,
                widths[c],
                &encoders[c],
                &chunks,
                &shape,
                options,
                pipeline,
            )
            .await?;
        }
        slab = last;
    }
    pipeline.finish().await?;
    for (c, (_, spec)) in data.iter().enumerate() {
        // Cells no row fills hold the null value too.
        let docs = array_documents(
            spec,
            string_widths[c],
            &array_shape,
            spill.saw_null[c] || holes,
            options,
        );
        for (key, doc) in &docs {
            target
                .put_json(&format!("{}/{key}", spec.name), doc)
                .await?;
        }
        documents.push((spec.name.clone(), docs));
    }
    for (key, doc) in group_documents(&documents, options) {
        target.put_json(&key, &doc).await?;
    }
    Ok(spill.rows)
}

/// A dimension's distinct values, sorted, as an Arrow array.
fn coordinate_values(distinct: &Distinct) -> Result<ArrayRef> {
    let mut keys: Vec<(&Vec<u8>, &u64)> = distinct.values.iter().collect();
    keys.sort_unstable_by_key(|(_, i)| **i);
    let parser = distinct.converter.parser();
    let rows = keys.iter().map(|(k, _)| parser.parse(k));
    let mut columns = distinct
        .converter
        .convert_rows(rows)
        .map_err(|e| ZarrError::internal(format!("coordinates: {e}")))?;
    columns
        .pop()
        .ok_or_else(|| ZarrError::internal("a coordinate column"))
}

/// Writes a coordinate array (one chunk) and returns its documents.
async fn write_coordinate(
    spec: &ColumnSpec,
    values: &ArrayRef,
    width: Option<Utf32Width>,
    dimension: &str,
    target: &Target,
    options: &WriteOptions,
) -> Result<Vec<(&'static str, serde_json::Value)>> {
    let values = prepared(spec, values, 0)?;
    let rows = values.len() as u64;
    let shape = ArrayShape {
        shape: vec![rows],
        grid: vec![rows.max(1)],
        inner: None,
        dimensions: vec![dimension.to_string()],
    };
    let docs = array_documents(spec, width, &shape, false, options);
    let encoder = ChunkEncoder::new(&spec.name, &docs, &[rows.max(1)])?;
    let mut bytes = Vec::new();
    let encoded = match (spec.storage, width) {
        (Storage::Utf32, Some(width)) => {
            append_utf32(spec, &values, 0, width, false, &mut bytes, "")?;
            encoder.encode_fixed(bytes, width.bytes())?
        }
        (Storage::Fixed { size }, _) => {
            append_fixed(spec, &values, 0, &mut bytes)?;
            encoder.encode_fixed(bytes, size as u64)?
        }
        (Storage::VlenUtf8 | Storage::VlenBytes, _) => {
            let mut ends = Vec::with_capacity(values.len());
            append_vlen(spec, &values, 0, &mut bytes, &mut ends)?;
            encoder.encode_vlen(bytes, ends)?
        }
        (Storage::Utf32, None) => return Err(ZarrError::internal("a coordinate's width")),
    };
    if rows > 0 {
        let key = format!("{}/{}", spec.name, chunk_key(&[0], options.zarr_format));
        target.put(&key, encoded.into()).await?;
    }
    for (key, doc) in &docs {
        target
            .put_json(&format!("{}/{key}", spec.name), doc)
            .await?;
    }
    Ok(docs)
}

/// A group of slabs: rows `first..last` of the first dimension's chunks, all of the others.
struct Group {
    /// The first and last (exclusive) positions along the first dimension.
    start: u64,
    end: u64,
    /// The group's shape (the grid's, with the first dimension cut to the group).
    shape: Vec<u64>,
}

impl Group {
    fn new(grid: &[u64], chunks: &[u64], first_slab: u64, last_slab: u64) -> Self {
        let c0 = chunks.first().copied().unwrap_or(1).max(1);
        let n0 = grid.first().copied().unwrap_or(1);
        let start = first_slab.saturating_mul(c0).min(n0);
        let end = last_slab.saturating_mul(c0).min(n0);
        let mut shape = grid.to_vec();
        if let Some(first) = shape.first_mut() {
            *first = end.saturating_sub(start);
        }
        Self { start, end, shape }
    }

    fn cells(&self) -> u64 {
        self.shape.iter().product()
    }
}

/// One data column's cells of a group, in C order.
enum Cells {
    /// Fixed-size elements, one after another.
    Fixed(Vec<u8>),
    /// Variable-length values: each cell's bytes in `arena`.
    Vlen {
        cells: Vec<std::ops::Range<usize>>,
        arena: Vec<u8>,
    },
}

/// The group's cells of each data column (of elements `widths.0` bytes wide, strings
/// `widths.1`), filled by one pass over the spill; a cell no row fills holds the column's
/// NULL (cut to the element, padded with zeros). A second row for a cell is an error naming
/// its coordinates.
fn fill_group(
    group: &Group,
    layout: &GridLayout,
    data: &[(usize, ColumnSpec)],
    (widths, string_widths): (&[u64], &[Option<Utf32Width>]),
    spill: &mut Spill,
    options: &WriteOptions,
) -> Result<Vec<Cells>> {
    let cells = usize::try_from(group.cells()).map_err(|_| ZarrError::internal("a group"))?;
    let mut buffers: Vec<Cells> = Vec::with_capacity(data.len());
    for ((_, spec), &width) in data.iter().zip(widths) {
        let null = null_element(spec);
        if is_vlen(spec) {
            // Every cell starts as the NULL's value, the arena's first bytes.
            let null = null.unwrap_or_default();
            buffers.push(Cells::Vlen {
                cells: vec![0..null.len(); cells],
                arena: null,
            });
            continue;
        }
        let mut buffer = vec![0u8; cells.saturating_mul(width as usize)];
        if let Some(null) = null {
            for cell in buffer.chunks_mut(width as usize) {
                let n = cell.len().min(null.len());
                cell[..n].copy_from_slice(&null[..n]);
            }
        }
        buffers.push(Cells::Fixed(buffer));
    }
    let mut filled = vec![false; cells];
    spill
        .file
        .seek(SeekFrom::Start(0))
        .map_err(|e| ZarrError::internal(format!("the spill file: {e}")))?;
    let file = spill
        .file
        .try_clone()
        .map_err(|e| ZarrError::internal(format!("the spill file: {e}")))?;
    let reader = StreamReader::try_new(BufReader::new(file), None)
        .map_err(|e| ZarrError::internal(format!("the spill file: {e}")))?;
    let mut first_row = 0u64;
    for batch in reader {
        let batch: RecordBatch =
            batch.map_err(|e| ZarrError::internal(format!("the spill file: {e}")))?;
        let positions = positions(&batch, layout, spill)?;
        let prepared_columns: Vec<ArrayRef> = data
            .iter()
            .map(|(position, spec)| prepared(spec, batch.column(*position), first_row))
            .collect::<Result<_>>()?;
        for (row, at) in positions.iter().enumerate() {
            let Some(&p0) = at.first() else { continue };
            if p0 < group.start || p0 >= group.end {
                continue;
            }
            let mut cell = 0u64;
            for (d, &p) in at.iter().enumerate() {
                let p = if d == 0 {
                    p.saturating_sub(group.start)
                } else {
                    p
                };
                cell = cell.saturating_mul(group.shape[d]).saturating_add(p);
            }
            let cell = cell as usize;
            let table_row = first_row.saturating_add(row as u64);
            let Some(seen) = filled.get_mut(cell) else {
                return Err(ZarrError::internal("a cell outside its group"));
            };
            if *seen {
                let mut tuple = Vec::new();
                for &position in &layout.dimensions {
                    let column = batch.column(position);
                    let value = arrow::util::display::array_value_to_string(column, row)
                        .unwrap_or_default();
                    tuple.push(value);
                }
                return Err(row_error(
                    &options.dimensions.join(","),
                    table_row,
                    &format!(
                        "a second row for the cell ({}) of the dimensions {:?}",
                        tuple.join(", "),
                        options.dimensions
                    ),
                ));
            }
            *seen = true;
            for (c, ((_, spec), column)) in data.iter().zip(&prepared_columns).enumerate() {
                let width = widths[c] as usize;
                let one = column.slice(row, 1);
                if let Cells::Vlen { cells, arena } = &mut buffers[c] {
                    let start = arena.len();
                    let mut ends = Vec::with_capacity(1);
                    append_vlen(spec, &one, table_row, arena, &mut ends)?;
                    if let Some(slot) = cells.get_mut(cell) {
                        *slot = start..arena.len();
                    }
                    continue;
                }
                let mut element = Vec::with_capacity(width);
                match (spec.storage, string_widths[c]) {
                    (Storage::Utf32, Some(string_width)) => append_utf32(
                        spec,
                        &one,
                        table_row,
                        string_width,
                        options.truncate_strings,
                        &mut element,
                        "string_length; string_overflow 'truncate' cuts it",
                    )?,
                    _ => {
                        append_fixed(spec, &one, table_row, &mut element)?;
                    }
                }
                let start = cell.saturating_mul(width);
                let Cells::Fixed(buffer) = &mut buffers[c] else {
                    continue;
                };
                let slot = buffer.get_mut(start..start.saturating_add(width));
                if let (Some(slot), Some(value)) = (slot, element.get(..width)) {
                    slot.copy_from_slice(value);
                }
            }
        }
        first_row = first_row.saturating_add(batch.num_rows() as u64);
    }
    Ok(buffers)
}

/// Each row's position along each dimension.
fn positions(batch: &RecordBatch, layout: &GridLayout, spill: &Spill) -> Result<Vec<Vec<u64>>> {
    let mut out = vec![Vec::with_capacity(layout.dimensions.len()); batch.num_rows()];
    for (d, &position) in layout.dimensions.iter().enumerate() {
        let distinct = &spill.distinct[d];
        let rows = distinct
            .converter
            .convert_columns(&[batch.column(position).clone()])
            .map_err(|e| ZarrError::internal(format!("dimension rows: {e}")))?;
        for (i, row) in rows.iter().enumerate() {
            let p = distinct.values.get(row.as_ref()).copied();
            let p = p.ok_or_else(|| ZarrError::internal("a coordinate seen in the first pass"))?;
            out[i].push(p);
        }
    }
    Ok(out)
}

/// Encodes and writes the chunks of `group` of one column from its cells `buffer`.
#[allow(clippy::too_many_arguments)]
async fn write_group_chunks(
    group: &Group,
    spec: &ColumnSpec,
    buffer: &Cells,
    width: u64,
    encoder: &ChunkEncoder,
    chunks: &[u64],
    shape: &[u64],
    options: &WriteOptions,
    pipeline: &mut Pipeline,
) -> Result<()> {
    let grid: Vec<u64> = shape
        .iter()
        .zip(chunks)
        .map(|(&n, &c)| n.div_ceil(c.max(1)))
        .collect();
    let c0 = chunks.first().copied().unwrap_or(1).max(1);
    let first_chunk = group.start / c0;
    let last_chunk = group.end.div_ceil(c0);
    let mut index = vec![0u64; shape.len()];
    if let Some(i0) = index.first_mut() {
        *i0 = first_chunk;
    }
    if grid.contains(&0) || first_chunk >= last_chunk {
        return Ok(());
    }
    loop {
        let key = format!("{}/{}", spec.name, chunk_key(&index, options.zarr_format));
        let encoder = encoder.clone();
        match buffer {
            Cells::Fixed(buffer) => {
                let chunk = extract_chunk(group, buffer, width, &index, chunks);
                pipeline
                    .submit(key, move || encoder.encode_fixed(chunk, width))
                    .await?;
            }
            Cells::Vlen { cells, arena } => {
                let (bytes, ends) = extract_vlen_chunk(group, cells, arena, &index, chunks);
                pipeline
                    .submit(key, move || encoder.encode_vlen(bytes, ends))
                    .await?;
            }
        }
        // The next chunk index, in C order, within the group.
        let mut d = shape.len();
        loop {
            if d == 0 {
                return Ok(());
            }
            d -= 1;
            index[d] += 1;
            let limit = if d == 0 { last_chunk } else { grid[d] };
            if index[d] < limit {
                break;
            }
            if d == 0 {
                return Ok(());
            }
            index[d] = 0;
        }
    }
}

/// The cells of chunk `index` from the group's cells, in C order, padded to the chunk shape.
fn extract_chunk(
    group: &Group,
    buffer: &[u8],
    width: u64,
    index: &[u64],
    chunks: &[u64],
) -> Vec<u8> {
    let width = width as usize;
    let cells: u64 = chunks.iter().product();
    let mut out = vec![0u8; (cells as usize).saturating_mul(width)];
    for (slot, flat) in out
        .chunks_mut(width.max(1))
        .zip(chunk_cells(group, index, chunks))
    {
        let Some(flat) = flat else { continue };
        let start = flat.saturating_mul(width);
        if let Some(cell) = buffer.get(start..start.saturating_add(width)) {
            slot.copy_from_slice(cell);
        }
    }
    out
}

/// The variable-length values of chunk `index` from the group's `cells` (their bytes in
/// `arena`), in C order, and each one's end; a slot past the grid's edge is empty.
fn extract_vlen_chunk(
    group: &Group,
    cells: &[std::ops::Range<usize>],
    arena: &[u8],
    index: &[u64],
    chunks: &[u64],
) -> (Vec<u8>, Vec<usize>) {
    let (mut bytes, mut ends) = (Vec::new(), Vec::new());
    for flat in chunk_cells(group, index, chunks) {
        let value = flat
            .and_then(|flat| cells.get(flat))
            .and_then(|range| arena.get(range.clone()));
        bytes.extend_from_slice(value.unwrap_or_default());
        ends.push(bytes.len());
    }
    (bytes, ends)
}

/// For each slot of chunk `index` in C order, the group's cell it holds (its index in the
/// group's cells, C order), or `None` past the grid's edge.
fn chunk_cells<'a>(
    group: &'a Group,
    index: &'a [u64],
    chunks: &'a [u64],
) -> impl Iterator<Item = Option<usize>> + 'a {
    let dims = chunks.len();
    let cells: u64 = chunks.iter().product();
    let mut local = vec![0u64; dims];
    (0..cells).map(move |k| {
        // The cell's position in the chunk, C order.
        let mut rest = k;
        for d in (0..dims).rev() {
            local[d] = rest % chunks[d].max(1);
            rest /= chunks[d].max(1);
        }
        let mut flat = 0u64;
        for d in 0..dims {
            let mut p = index[d].saturating_mul(chunks[d]).saturating_add(local[d]);
            if d == 0 {
                if p >= group.end {
                    return None;
                }
                p = p.saturating_sub(group.start);
            }
            if p >= group.shape[d] {
                return None;
            }
            flat = flat.saturating_mul(group.shape[d]).saturating_add(p);
        }
        Some(flat as usize)
    })
}
