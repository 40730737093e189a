//! The table writer: a stream of batches into a new store in the table layout
//! ([`super::layout`]), chunk by chunk, in a hidden directory beside the target that replaces
//! it only when every chunk and document is written (a failed or killed write leaves what was
//! there).
//!
//! Strings are `fixed_length_utf32` as wide as the longest one, which is known only at the
//! end: their chunks are kept as UTF-8 in spill files in that directory (a quarter of their
//! UTF-32 size for ASCII text), and encoded once the width is known. Memory holds one chunk
//! per column.

use std::fs;
use std::io::{BufReader, BufWriter, Read, Write};
use std::num::NonZeroU64;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, BooleanArray};
use arrow::datatypes::{DataType, Float32Type, Float64Type, SchemaRef};
use datafusion::physical_plan::SendableRecordBatchStream;
use futures::StreamExt;
use serde_json::Value;
use zarrs::array::{
    ArrayBytes, ArrayMetadata, ArrayMetadataV3, ArrayToBytesCodecTraits, CodecOptions,
};

use super::atomic_directory::AtomicDirectory;
use super::layout::{Stored, WriteOptions, array_document, attributes, group_document, stored};
use crate::error::{Result, ZarrError};
use crate::node::ZarrsArray;

/// Writes `stream` as a Zarr store at `location` (a path or URL) with `options`, and returns
/// the number of rows written: the entry point of `COPY … STORED AS ZARR`, the CLI's `convert`
/// and Python's `write_zarr`.
pub async fn write_zarr(
    stream: SendableRecordBatchStream,
    location: &str,
    options: &WriteOptions,
) -> Result<u64> {
    let path = match url::Url::parse(location) {
        Ok(url) if url.scheme() == "file" => url
            .to_file_path()
            .map_err(|()| ZarrError::Option(format!("{location} is not a local path")))?,
        Ok(url) if url.scheme().len() > 1 => {
            return Err(ZarrError::Option(format!(
                "{location}: the Zarr writer writes local stores (object stores are not \
                 written yet)"
            )));
        }
        _ => PathBuf::from(location),
    };
    write_table(stream, &path, options).await
}

/// Writes `stream` as a new store at `target` in the table layout (replacing what is there
/// once done), and returns the number of rows written.
pub async fn write_table(
    mut stream: SendableRecordBatchStream,
    target: &Path,
    options: &WriteOptions,
) -> Result<u64> {
    let schema = stream.schema();
    let directory = AtomicDirectory::new(target)?;
    let mut columns = ColumnWriter::for_schema(&schema, directory.temp_path(), options)?;
    let mut rows = 0u64;
    while let Some(batch) = stream.next().await {
        let batch = batch.map_err(|e| ZarrError::Write {
            target: target.display().to_string(),
            message: e.to_string(),
        })?;
        for (column, array) in columns.iter_mut().zip(batch.columns()) {
            column.push(array, rows)?;
        }
        rows = rows.saturating_add(batch.num_rows() as u64);
    }
    let mut documents = Vec::with_capacity(columns.len());
    for column in columns {
        documents.push(column.finish(rows)?);
    }
    fs::write(
        directory.temp_path().join("zarr.json"),
        group_document(documents).to_string(),
    )
    .map_err(|e| io_error(target, e))?;
    directory.commit()?;
    Ok(rows)
}

/// One column's array being written.
struct ColumnWriter {
    /// The column (and array) name.
    name: String,
    /// The array's directory.
    dir: PathBuf,
    /// The Zarr data type.
    data_type: &'static str,
    stored: Stored,
    /// Chunks written (or spilled) so far.
    chunks: u64,
    /// The rows of the current chunk: fixed-size elements.
    fixed: Vec<u8>,
    /// The rows of the current chunk: strings as UTF-8, and their lengths in bytes.
    text: Vec<u8>,
    lengths: Vec<u32>,
    /// The longest string so far, in code points.
    longest: u64,
    /// The array's attributes (CF's, for times).
    attributes: Value,
    options: WriteOptions,
}

impl ColumnWriter {
    fn for_schema(schema: &SchemaRef, root: &Path, options: &WriteOptions) -> Result<Vec<Self>> {
        let mut columns = Vec::new();
        for field in schema.fields() {
            let name = field.name();
            let unsafe_name = name.is_empty()
                || name.contains('/')
                || name.starts_with("__")
                || name == "."
                || name == ".."
                || name == "zarr.json";
            if unsafe_name {
                return Err(ZarrError::Option(format!(
                    "column '{name}' cannot name a Zarr array (empty, '.', '..', a '/' or a \
                     leading '__'): rename it with AS"
                )));
            }
            let (data_type, stored) = stored(field)?;
            let dir = root.join(name);
            fs::create_dir_all(dir.join("c")).map_err(|e| io_error(&dir, e))?;
            columns.push(Self {
                name: name.clone(),
                dir,
                data_type,
                stored,
                chunks: 0,
                fixed: Vec::new(),
                text: Vec::new(),
                lengths: Vec::new(),
                longest: 0,
                attributes: attributes(field),
                options: options.clone(),
            });
        }
        Ok(columns)
    }

    /// Rows in the current chunk.
    fn buffered(&self) -> u64 {
        match self.stored {
            Stored::Fixed { size } => (self.fixed.len() / size.max(1)) as u64,
            Stored::Strings => self.lengths.len() as u64,
        }
    }

    /// Appends `array`, whose first row is row `first` of the table.
    fn push(&mut self, array: &ArrayRef, first: u64) -> Result<()> {
        let mut offset = 0usize;
        while offset < array.len() {
            let room = self.options.chunk_rows.saturating_sub(self.buffered());
            let take = usize::try_from(room)
                .unwrap_or(usize::MAX)
                .min(array.len() - offset);
            let part = array.slice(offset, take);
            self.append(&part, first.saturating_add(offset as u64))?;
            offset += take;
            if self.buffered() >= self.options.chunk_rows {
                self.flush(self.options.chunk_rows)?;
            }
        }
        Ok(())
    }

    /// The error for row `row` of this column.
    fn row_error(&self, row: u64, rule: &str) -> ZarrError {
        ZarrError::Option(format!("column {}, row {row}: {rule}", self.name))
    }

    fn append(&mut self, array: &ArrayRef, first: u64) -> Result<()> {
        let null_row = (0..array.len()).find(|&i| array.is_null(i));
        match array.data_type() {
            DataType::Float32 => {
                for v in array.as_primitive::<Float32Type>().iter() {
                    self.fixed
                        .extend_from_slice(&v.unwrap_or(f32::NAN).to_ne_bytes());
                }
                return Ok(());
            }
            DataType::Float64 => {
                for v in array.as_primitive::<Float64Type>().iter() {
                    self.fixed
                        .extend_from_slice(&v.unwrap_or(f64::NAN).to_ne_bytes());
                }
                return Ok(());
            }
            _ => {}
        }
        if let Some(i) = null_row {
            return Err(self.row_error(
                first.saturating_add(i as u64),
                "NULL, which this type cannot hold in Zarr (only floats have one: NaN)",
            ));
        }
        match array.data_type() {
            DataType::Boolean => {
                let values: &BooleanArray = array.as_boolean();
                self.fixed.extend(values.values().iter().map(u8::from));
            }
            DataType::Utf8 => self.append_strings(array.as_string::<i32>().iter(), first)?,
            DataType::LargeUtf8 => self.append_strings(array.as_string::<i64>().iter(), first)?,
            DataType::Utf8View => self.append_strings(array.as_string_view().iter(), first)?,
            _ => {
                // A primitive of `size` bytes: its values as stored in memory (native order,
                // which the `bytes` codec names).
                let data = array.to_data();
                let size = match self.stored {
                    Stored::Fixed { size } => size,
                    Stored::Strings => 0,
                };
                let start = data.offset().saturating_mul(size);
                let end = start.saturating_add(data.len().saturating_mul(size));
                let bytes = data
                    .buffers()
                    .first()
                    .and_then(|b| b.as_slice().get(start..end));
                let bytes =
                    bytes.ok_or_else(|| ZarrError::internal("a primitive array's buffer"))?;
                self.fixed.extend_from_slice(bytes);
            }
        }
        Ok(())
    }

    fn append_strings<'a>(
        &mut self,
        values: impl Iterator<Item = Option<&'a str>>,
        first: u64,
    ) -> Result<()> {
        for (i, value) in values.enumerate() {
            let value = value.unwrap_or_default();
            if value.ends_with('\0') {
                return Err(self.row_error(
                    first.saturating_add(i as u64),
                    "the string ends with U+0000, which fixed_length_utf32 strips on reading",
                ));
            }
            let length = u32::try_from(value.len()).map_err(|_| {
                self.row_error(first.saturating_add(i as u64), "a string of 4 GiB or more")
            })?;
            self.longest = self.longest.max(value.chars().count() as u64);
            self.text.extend_from_slice(value.as_bytes());
            self.lengths.push(length);
        }
        Ok(())
    }

    /// Writes the current chunk, of `chunk_rows` rows as stored (strings: spills it).
    fn flush(&mut self, chunk_rows: u64) -> Result<()> {
        if self.buffered() == 0 {
            return Ok(());
        }
        let index = self.chunks;
        match self.stored {
            Stored::Fixed { .. } => {
                let bytes = std::mem::take(&mut self.fixed);
                self.encode_chunk(index, bytes, chunk_rows, None)?;
            }
            Stored::Strings => {
                let path = self.dir.join(format!(".spill-{index}"));
                let file = fs::File::create(&path).map_err(|e| io_error(&path, e))?;
                let mut out = BufWriter::new(file);
                let count = self.lengths.len() as u64;
                let mut write = |bytes: &[u8]| out.write_all(bytes).map_err(|e| io_error(&path, e));
                write(&count.to_le_bytes())?;
                for length in &self.lengths {
                    write(&length.to_le_bytes())?;
                }
                write(&self.text)?;
                out.flush().map_err(|e| io_error(&path, e))?;
                self.text.clear();
                self.lengths.clear();
            }
        }
        self.chunks += 1;
        Ok(())
    }

    /// Encodes chunk `index` (`bytes`: its elements, `chunk_rows` of them, the last chunk
    /// padded) with the array's codecs and writes it.
    fn encode_chunk(
        &self,
        index: u64,
        mut bytes: Vec<u8>,
        chunk_rows: u64,
        width: Option<u64>,
    ) -> Result<()> {
        let array = self.zarrs_array(u64::MAX, width)?;
        let element = match (self.stored, width) {
            (Stored::Fixed { size }, _) => size as u64,
            (Stored::Strings, Some(w)) => w,
            (Stored::Strings, None) => return Err(ZarrError::internal("strings without a width")),
        };
        let full = usize::try_from(chunk_rows.saturating_mul(element))
            .map_err(|_| ZarrError::internal("a chunk larger than memory"))?;
        bytes.resize(full, 0);
        let shape = [NonZeroU64::new(chunk_rows).unwrap_or(NonZeroU64::MIN)];
        let encoded = array
            .codecs()
            .encode(
                ArrayBytes::new_flen(bytes),
                &shape,
                array.data_type(),
                array.fill_value(),
                &CodecOptions::default(),
            )
            .map_err(|e| self.write_error(e.to_string()))?;
        let path = self.dir.join("c").join(index.to_string());
        fs::write(&path, &*encoded).map_err(|e| io_error(&path, e))
    }

    fn write_error(&self, message: String) -> ZarrError {
        ZarrError::Write {
            target: self.dir.display().to_string(),
            message,
        }
    }

    /// The array's metadata for `rows` rows (strings: `width` bytes each).
    fn document(&self, rows: u64, width: Option<u64>) -> Value {
        array_document(self.data_type, width, rows, &self.attributes, &self.options)
    }

    /// A zarrs array of this column's metadata (its codecs, to encode chunks).
    fn zarrs_array(&self, rows: u64, width: Option<u64>) -> Result<ZarrsArray> {
        let metadata: ArrayMetadataV3 = serde_json::from_value(self.document(rows, width))
            .map_err(|e| self.write_error(e.to_string()))?;
        ZarrsArray::new_with_metadata(Arc::new(()), "/", ArrayMetadata::V3(metadata))
            .map_err(|e| self.write_error(e.to_string()))
    }

    /// Writes the last chunk, the strings' chunks at their final width, and `zarr.json`;
    /// returns the array's name and document.
    fn finish(mut self, rows: u64) -> Result<(String, Value)> {
        let width = match self.stored {
            Stored::Strings => Some(4 * self.longest.max(1)),
            Stored::Fixed { .. } => None,
        };
        // The chunk shape: `chunk_rows`, or all the rows when they are fewer.
        let chunk_rows = self.options.chunk_rows.min(rows).max(1);
        self.flush(chunk_rows)?;
        if let Some(width) = width {
            for index in 0..self.chunks {
                let path = self.dir.join(format!(".spill-{index}"));
                let utf32 = read_spill(&path, width)?;
                fs::remove_file(&path).map_err(|e| io_error(&path, e))?;
                self.encode_chunk(index, utf32, chunk_rows, Some(width))?;
            }
        }
        let document = self.document(rows, width);
        let path = self.dir.join("zarr.json");
        fs::write(&path, document.to_string()).map_err(|e| io_error(&path, e))?;
        Ok((self.name, document))
    }
}

/// A spilled chunk of strings as `fixed_length_utf32` elements of `width` bytes.
fn read_spill(path: &Path, width: u64) -> Result<Vec<u8>> {
    let file = fs::File::open(path).map_err(|e| io_error(path, e))?;
    let mut input = BufReader::new(file);
    let mut word = [0u8; 8];
    input.read_exact(&mut word).map_err(|e| io_error(path, e))?;
    let count = u64::from_le_bytes(word);
    let mut lengths = Vec::new();
    for _ in 0..count {
        let mut length = [0u8; 4];
        input
            .read_exact(&mut length)
            .map_err(|e| io_error(path, e))?;
        lengths.push(u32::from_le_bytes(length) as usize);
    }
    let mut text = Vec::new();
    input
        .read_to_end(&mut text)
        .map_err(|e| io_error(path, e))?;
    let width = usize::try_from(width).map_err(|_| ZarrError::internal("a string width"))?;
    let mut out = Vec::with_capacity(lengths.len().saturating_mul(width));
    let mut at = 0usize;
    for length in lengths {
        let end = at.saturating_add(length);
        let value = text.get(at..end).and_then(|b| std::str::from_utf8(b).ok());
        let value = value.ok_or_else(|| ZarrError::internal("a spilled string"))?;
        let start = out.len();
        for c in value.chars() {
            out.extend_from_slice(&(c as u32).to_ne_bytes());
        }
        out.resize(start.saturating_add(width), 0);
        at = end;
    }
    Ok(out)
}

fn io_error(path: &Path, e: std::io::Error) -> ZarrError {
    ZarrError::Write {
        target: path.display().to_string(),
        message: e.to_string(),
    }
}
