//! The table layout written from a stream of batches: a group with one 1-D array per column
//! along one dimension, chunk by chunk as the rows arrive (each chunk encoded on the blocking
//! pool while the query goes on), metadata last.
//!
//! Strings are `fixed_length_utf32` as wide as the longest one, which is known only at the
//! end. Each chunk is encoded as wide as the longest string so far, and the chunks written
//! narrower than the final width are read back, widened and rewritten at the end. Measured
//! against keeping every chunk as UTF-8 in spill files until the width is known
//! (benches/write.py, in the note of issue #38): with lengths spread evenly, the longest
//! string is met in the first chunk and nothing is rewritten, and encoding overlaps the
//! query; spilling delays all encoding to the end and writes and reads every string once
//! more. Strings sorted by length are the worst case: every chunk but the last is rewritten
//! once. `string_length` fixes the width and rewrites nothing.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::ArrayRef;
use datafusion::physical_plan::SendableRecordBatchStream;
use futures::StreamExt;

use crate::error::{Result, ZarrError};
use crate::write::chunk::{ChunkEncoder, Pipeline, chunk_bytes};
use crate::write::column::{
    ArrayShape, ColumnSpec, Storage, Utf32Width, array_documents, chunk_key, column_spec,
    group_documents,
};
use crate::write::elements::{
    append_fixed, append_utf32, append_vlen, longest_string, longest_string_checked, prepared,
};
use crate::write::options::{TARGET_CHUNK_BYTES, WriteOptions};
use crate::write::target::Target;

/// The rows of a chunk (or shard) of the table layout, and its inner chunk when sharded.
#[derive(Debug, Clone, Copy)]
struct Units {
    rows: u64,
    inner: Option<u64>,
}

impl Units {
    /// The units of `options`, or of chunks of about [`TARGET_CHUNK_BYTES`] of the widest
    /// column of `first` (a batch's elements, strings at their longest).
    fn choose(options: &WriteOptions, widest: u64) -> Self {
        let chunk = options
            .chunk_rows
            .unwrap_or_else(|| (TARGET_CHUNK_BYTES / widest.max(1)).max(1));
        match options.shard_rows {
            Some(shard) => Self {
                rows: shard,
                inner: Some(chunk),
            },
            None => Self {
                rows: chunk,
                inner: None,
            },
        }
    }

    /// The units of a table of `rows` rows, all in one unit: shrunk to fit it.
    fn shrunk_to(self, rows: u64) -> Self {
        let rows = rows.max(1);
        if rows >= self.rows {
            return self;
        }
        match self.inner {
            Some(inner) => {
                let inner = inner.min(rows);
                Self {
                    rows: rows.div_ceil(inner).saturating_mul(inner),
                    inner: Some(inner),
                }
            }
            None => Self { rows, inner: None },
        }
    }

    fn shape(self, rows: u64, dimension: &str) -> ArrayShape {
        ArrayShape {
            shape: vec![rows],
            grid: vec![self.rows],
            inner: self.inner.map(|n| vec![n]),
            dimensions: vec![dimension.to_string()],
        }
    }
}

/// Writes the table layout of `stream` into `target`; returns the rows written.
pub(in crate::write) async fn write_table(
    stream: SendableRecordBatchStream,
    target: &Arc<Target>,
    options: &WriteOptions,
) -> Result<u64> {
    let mut pipeline = Pipeline::new(target.clone());
    let result = write_table_with(stream, target, options, &mut pipeline).await;
    if result.is_err() {
        pipeline.shutdown().await;
    }
    result
}

async fn write_table_with(
    mut stream: SendableRecordBatchStream,
    target: &Arc<Target>,
    options: &WriteOptions,
    pipeline: &mut Pipeline,
) -> Result<u64> {
    let schema = stream.schema();
    let mut columns = schema
        .fields()
        .iter()
        .map(|field| Ok(ColumnWriter::new(column_spec(field, options)?, options)))
        .collect::<Result<Vec<_>>>()?;
    let mut units: Option<Units> = None;
    let mut rows = 0u64;
    while let Some(batch) = stream.next().await {
        let batch = batch.map_err(|e| target.error(format!("the query failed: {e}")))?;
        if batch.num_rows() == 0 {
            continue;
        }
        let arrays = columns
            .iter()
            .zip(batch.columns())
            .map(|(column, array)| prepared(&column.spec, array, rows))
            .collect::<Result<Vec<_>>>()?;
        let units = match units {
            Some(u) => u,
            None => {
                let widest = columns
                    .iter()
                    .zip(&arrays)
                    .map(|(c, a)| c.element_estimate(a, rows))
                    .collect::<Result<Vec<_>>>()?;
                let widest = widest.into_iter().max().unwrap_or(1);
                let chosen = Units::choose(options, widest);
                // Held to the largest chunk before any row is buffered.
                chunk_bytes("the table's arrays", chosen.rows, widest)?;
                *units.insert(chosen)
            }
        };
        for (column, array) in columns.iter_mut().zip(&arrays) {
            column.push(array, rows, units, pipeline).await?;
        }
        rows = rows.saturating_add(batch.num_rows() as u64);
    }
    let units = units.unwrap_or(Units::choose(options, 1));
    let units = if columns.iter().all(|c| c.units == 0) {
        units.shrunk_to(rows)
    } else {
        units
    };
    let mut documents = Vec::with_capacity(columns.len());
    for column in &mut columns {
        column.flush(units, pipeline).await?;
    }
    for column in &mut columns {
        column.widen(units, pipeline).await?;
    }
    pipeline.finish().await?;
    for column in &columns {
        let shape = units.shape(rows, &options.dimension);
        let docs = array_documents(
            &column.spec,
            column.final_width(),
            &shape,
            column.saw_null,
            options,
        );
        for (key, doc) in &docs {
            let key = format!("{}/{key}", column.spec.name);
            target.put_json(&key, doc).await?;
        }
        documents.push((column.spec.name.clone(), docs));
    }
    for (key, doc) in group_documents(&documents, options) {
        target.put_json(&key, &doc).await?;
    }
    Ok(rows)
}

/// What an overflowing string's error says sets the width.
const OVERFLOW: &str = "string_length; string_overflow 'truncate' cuts it";

/// One column's array being written.
struct ColumnWriter {
    spec: ColumnSpec,
    options: WriteOptions,
    /// The current unit's fixed-size elements.
    fixed: Vec<u8>,
    /// The current unit's variable-length values and their ends.
    vlen: Vec<u8>,
    offsets: Vec<usize>,
    /// The current unit's strings, as they came (`fixed_length_utf32`).
    strings: Vec<(ArrayRef, u64)>,
    /// The longest string of the current unit, in code points.
    unit_longest: u64,
    /// Rows in the current unit.
    buffered: u64,
    /// Whether a NULL was written (as the `null_value`: the fill value says so).
    saw_null: bool,
    /// The width strings are encoded at so far.
    width: Utf32Width,
    /// The width each unit was encoded at (strings).
    unit_widths: Vec<Utf32Width>,
    /// Units written.
    units: u64,
    /// Encoders by string width (0 for other types).
    encoders: HashMap<u64, ChunkEncoder>,
}

impl ColumnWriter {
    fn new(spec: ColumnSpec, options: &WriteOptions) -> Self {
        let width = match options.string_length {
            Some(n) => Utf32Width::of_code_points(n),
            None => spec.source_width.unwrap_or(Utf32Width::MIN),
        };
        Self {
            spec,
            options: options.clone(),
            fixed: Vec::new(),
            vlen: Vec::new(),
            offsets: Vec::new(),
            strings: Vec::new(),
            unit_longest: 0,
            buffered: 0,
            saw_null: false,
            width,
            unit_widths: Vec::new(),
            units: 0,
            encoders: HashMap::new(),
        }
    }

    /// The bytes of one element of `array` (strings: at their longest in it).
    fn element_estimate(&self, array: &ArrayRef, first: u64) -> Result<u64> {
        Ok(match self.spec.storage {
            Storage::Fixed { size } => size as u64,
            Storage::Utf32 => match self.options.string_length {
                Some(n) => Utf32Width::of_code_points(n).bytes(),
                // A batch of only empty strings estimates 0 bytes, as it always has (its
                // strings are still written one code unit wide).
                None => match longest_string(&self.spec, array, first)?.0 {
                    0 => self.spec.source_width.map_or(0, Utf32Width::bytes),
                    longest => (Utf32Width::of_code_points(longest))
                        .max(self.spec.source_width.unwrap_or(Utf32Width::MIN))
                        .bytes(),
                },
            },
            Storage::VlenUtf8 | Storage::VlenBytes => {
                let data = array.to_data();
                let bytes: usize = data.buffers().iter().map(|b| b.len()).sum();
                (bytes / array.len().max(1)) as u64 + 8
            }
        })
    }

    /// The width of the string array.
    fn final_width(&self) -> Option<Utf32Width> {
        (self.spec.storage == Storage::Utf32).then_some(self.width)
    }

    /// Appends `array` (its first row is row `first` of the table), writing each unit it
    /// completes.
    async fn push(
        &mut self,
        array: &ArrayRef,
        first: u64,
        units: Units,
        pipeline: &mut Pipeline,
    ) -> Result<()> {
        let mut offset = 0usize;
        while offset < array.len() {
            let room = units.rows.saturating_sub(self.buffered);
            let take = usize::try_from(room)
                .unwrap_or(usize::MAX)
                .min(array.len() - offset);
            let part = array.slice(offset, take);
            self.append(part, first.saturating_add(offset as u64))?;
            offset += take;
            if self.buffered >= units.rows {
                self.flush(units, pipeline).await?;
            }
        }
        Ok(())
    }

    fn append(&mut self, array: ArrayRef, first: u64) -> Result<()> {
        let rows = array.len() as u64;
        let saw_null = match self.spec.storage {
            Storage::Fixed { .. } => append_fixed(&self.spec, &array, first, &mut self.fixed)?,
            Storage::VlenUtf8 | Storage::VlenBytes => {
                append_vlen(&self.spec, &array, first, &mut self.vlen, &mut self.offsets)?
            }
            Storage::Utf32 => {
                let truncating =
                    self.options.truncate_strings && self.options.string_length.is_some();
                let (longest, saw_null) =
                    longest_string_checked(&self.spec, &array, first, !truncating)?;
                if let Some(limit) = self.options.string_length
                    && longest > limit
                    && !self.options.truncate_strings
                {
                    // The row is found (and named) by the encoder.
                    let mut scratch = Vec::new();
                    append_utf32(
                        &self.spec,
                        &array,
                        first,
                        Utf32Width::of_code_points(limit),
                        false,
                        &mut scratch,
                        OVERFLOW,
                    )?;
                }
                self.unit_longest = self.unit_longest.max(longest);
                self.strings.push((array, first));
                saw_null
            }
        };
        self.saw_null |= saw_null;
        self.buffered = self.buffered.saturating_add(rows);
        Ok(())
    }

    /// The encoder for units of `units` (strings: `width` wide).
    fn encoder(&mut self, units: Units, width: Option<Utf32Width>) -> Result<ChunkEncoder> {
        let key = width.map_or(0, Utf32Width::bytes);
        if let Some(encoder) = self.encoders.get(&key) {
            return Ok(encoder.clone());
        }
        let shape = units.shape(units.rows, &self.options.dimension);
        let docs = array_documents(&self.spec, width, &shape, false, &self.options);
        let encoder = ChunkEncoder::new(&self.spec.name, &docs, &[units.rows])?;
        self.encoders.insert(key, encoder.clone());
        Ok(encoder)
    }

    /// Writes the current unit.
    async fn flush(&mut self, units: Units, pipeline: &mut Pipeline) -> Result<()> {
        if self.buffered == 0 {
            return Ok(());
        }
        let key = format!(
            "{}/{}",
            self.spec.name,
            chunk_key(&[self.units], self.options.zarr_format)
        );
        match self.spec.storage {
            Storage::Fixed { size } => {
                let encoder = self.encoder(units, None)?;
                let bytes = std::mem::take(&mut self.fixed);
                pipeline
                    .submit(key, move || encoder.encode_fixed(bytes, size as u64))
                    .await?;
            }
            Storage::VlenUtf8 | Storage::VlenBytes => {
                let encoder = self.encoder(units, None)?;
                let bytes = std::mem::take(&mut self.vlen);
                let offsets = std::mem::take(&mut self.offsets);
                pipeline
                    .submit(key, move || encoder.encode_vlen(bytes, offsets))
                    .await?;
            }
            Storage::Utf32 => {
                let width = match self.options.string_length {
                    Some(n) => Utf32Width::of_code_points(n),
                    None => self
                        .width
                        .max(Utf32Width::of_code_points(self.unit_longest)),
                };
                self.width = width;
                let encoder = self.encoder(units, Some(width))?;
                let strings = std::mem::take(&mut self.strings);
                let spec = self.spec.clone();
                let truncate = self.options.truncate_strings;
                pipeline
                    .submit(key, move || {
                        let mut bytes = Vec::new();
                        for (array, first) in &strings {
                            append_utf32(
                                &spec, array, *first, width, truncate, &mut bytes, OVERFLOW,
                            )?;
                        }
                        encoder.encode_fixed(bytes, width.bytes())
                    })
                    .await?;
                self.unit_widths.push(width);
                self.unit_longest = 0;
            }
        }
        self.units += 1;
        self.buffered = 0;
        Ok(())
    }

    /// Rewrites the string units written narrower than the final width.
    async fn widen(&mut self, units: Units, pipeline: &mut Pipeline) -> Result<()> {
        let width = self.width;
        let narrow: Vec<(u64, Utf32Width)> = (self.unit_widths.iter().enumerate())
            .filter(|&(_, &w)| w < width)
            .map(|(i, &w)| (i as u64, w))
            .collect();
        if narrow.is_empty() {
            return Ok(());
        }
        // Everything encoded so far must be written before it is read back.
        pipeline.finish().await?;
        let wide = self.encoder(units, Some(width))?;
        for (index, old_width) in narrow {
            let key = format!(
                "{}/{}",
                self.spec.name,
                chunk_key(&[index], self.options.zarr_format)
            );
            let narrow = self.encoder(units, Some(old_width))?;
            let encoded = pipeline.target().get(&key).await?;
            let encoded = encoded.ok_or_else(|| ZarrError::internal("a chunk just written"))?;
            let wide = wide.clone();
            pipeline
                .submit(key, move || {
                    let old = narrow.decode_fixed(&encoded)?;
                    let (old_width, width) = (old_width.bytes() as usize, width.bytes());
                    let mut bytes = Vec::with_capacity(old.len() / old_width * width as usize);
                    for element in old.chunks(old_width) {
                        let start = bytes.len();
                        bytes.extend_from_slice(element);
                        bytes.resize(start + width as usize, 0);
                    }
                    wide.encode_fixed(bytes, width)
                })
                .await?;
        }
        Ok(())
    }
}
