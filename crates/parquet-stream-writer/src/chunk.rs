//! Assembles one column chunk from the pages our encoders (`strings.rs`, `numbers.rs`) produce:
//! definition levels, compression and page headers (through parquet-rs's
//! `SerializedPageWriter`), the offset index, the column index, level histograms and the
//! chunk's metadata, as parquet-rs's own column writer would for the same pages.

use bytes::Bytes;
use datafusion::error::{DataFusionError, Result};
use parquet::basic::{BoundaryOrder, Compression, Encoding, EncodingMask, PageType};
use parquet::column::page::{CompressedPage, Page, PageWriter};
use parquet::column::writer::ColumnCloseResult;
use parquet::file::metadata::{
    ColumnChunkMetaData, ColumnIndexBuilder, LevelHistogram, OffsetIndexBuilder, PageEncodingStats,
};
use parquet::file::properties::{EnabledStatistics, WriterProperties, WriterVersion};
use parquet::file::statistics::Statistics;
use parquet::file::writer::{SerializedPageWriter, TrackedWrite};
use parquet::schema::types::ColumnDescPtr;

use super::compress::PageCompressor;
use super::rle;

/// A column chunk ready to be appended to its row group: its bytes (offsets in `close` are
/// relative to their start) and its metadata.
pub(super) struct EncodedChunk {
    pub(super) bytes: Bytes,
    pub(super) close: ColumnCloseResult,
}

/// Whether the column's settings are ones our encoders write (each encoder checks the
/// encoding itself): a top-level column with at most nulls, no bloom filter, page statistics,
/// V1 data pages, no content-defined chunking, a codec [`PageCompressor`] has.
pub(super) fn settings_supported(descr: &ColumnDescPtr, props: &WriterProperties) -> bool {
    let path = descr.path();
    descr.max_rep_level() == 0
        && descr.max_def_level() <= 1
        && props.dictionary_page_encoding() == Encoding::PLAIN
        && props.bloom_filter_properties(path).is_none()
        && props.statistics_enabled(path) == EnabledStatistics::Page
        && !props.write_page_header_statistics(path)
        && !props.offset_index_disabled()
        && props.writer_version() == WriterVersion::PARQUET_1_0
        && props.content_defined_chunking().is_none()
        && PageCompressor::supports(props.compression(path))
}

/// One data page as its encoder hands it over.
pub(super) struct DataPage<'a> {
    /// Rows in the page.
    pub(super) rows: usize,
    /// Whether each row is non-null; `None` when none is null.
    pub(super) valid: Option<&'a [bool]>,
    /// How the values are encoded.
    pub(super) encoding: Encoding,
    /// The encoded non-null values.
    pub(super) values: Vec<u8>,
    /// The page's smallest and largest value as the column index stores them (plain bytes);
    /// `None` for a page of nulls only.
    pub(super) min_max: Option<(Vec<u8>, Vec<u8>)>,
    /// The bytes of the page's strings, for byte-array columns.
    pub(super) unencoded_bytes: Option<i64>,
}

/// A column chunk being written page by page.
pub(super) struct ChunkWriter {
    descr: ColumnDescPtr,
    codec: Compression,
    compressor: PageCompressor,
    sink: TrackedWrite<Vec<u8>>,
    column_index: ColumnIndexBuilder,
    offset_index: OffsetIndexBuilder,
    definition_histogram: Option<LevelHistogram>,
    dictionary_page_offset: Option<u64>,
    first_data_page: Option<u64>,
    data_pages: i32,
    data_page_encoding: Encoding,
    compressed_size: i64,
    uncompressed_size: i64,
    rows: usize,
    nulls: u64,
    unencoded_bytes: Option<i64>,
}

impl ChunkWriter {
    /// A writer for the column `descr` whose pages will take about `capacity` bytes; `None`
    /// for a codec [`PageCompressor`] does not have.
    pub(super) fn new(
        descr: &ColumnDescPtr,
        props: &WriterProperties,
        capacity: usize,
    ) -> Result<Option<Self>> {
        let codec = props.compression(descr.path());
        let Some(compressor) = PageCompressor::new(codec)? else {
            return Ok(None);
        };
        Ok(Some(Self {
            descr: descr.clone(),
            codec,
            compressor,
            sink: TrackedWrite::new(Vec::with_capacity(capacity)),
            column_index: ColumnIndexBuilder::new(descr.physical_type()),
            offset_index: OffsetIndexBuilder::new(),
            definition_histogram: LevelHistogram::try_new(descr.max_def_level()),
            dictionary_page_offset: None,
            first_data_page: None,
            data_pages: 0,
            data_page_encoding: Encoding::PLAIN,
            compressed_size: 0,
            uncompressed_size: 0,
            rows: 0,
            nulls: 0,
            unencoded_bytes: None,
        }))
    }

    /// Writes the PLAIN dictionary page of `entries` values.
    pub(super) fn dictionary_page(&mut self, page: Vec<u8>, entries: usize) -> Result<()> {
        let uncompressed = page.len();
        let page = Page::DictionaryPage {
            buf: Bytes::from(self.compressor.compress(page)?),
            num_values: u32::try_from(entries).map_err(|_| too_large())?,
            encoding: Encoding::PLAIN,
            is_sorted: false,
        };
        let spec = SerializedPageWriter::new(&mut self.sink)
            .write_page(CompressedPage::new(page, uncompressed))?;
        self.dictionary_page_offset = Some(spec.offset);
        self.compressed_size += spec.compressed_size as i64;
        self.uncompressed_size += spec.uncompressed_size as i64;
        Ok(())
    }

    /// Writes a data page: definition levels (for a nullable column), then the values.
    pub(super) fn data_page(&mut self, page: DataPage<'_>) -> Result<()> {
        let nulls = page.valid.map_or(0, |v| v.iter().filter(|&&b| !b).count());
        let mut buf = Vec::with_capacity(page.values.len() + 16);
        if self.descr.max_def_level() > 0 {
            let mut levels = Vec::new();
            match page.valid {
                Some(v) => {
                    let v: Vec<u32> = v.iter().map(|&b| u32::from(b)).collect();
                    rle::encode(&v, 1, &mut levels);
                }
                None => rle::run(1, page.rows, 1, &mut levels),
            }
            let len = u32::try_from(levels.len()).map_err(|_| too_large())?;
            buf.extend_from_slice(&len.to_le_bytes());
            buf.extend_from_slice(&levels);
            buf.extend_from_slice(&page.values);
        } else {
            buf = page.values;
        }
        let uncompressed = buf.len();
        let data_page = Page::DataPage {
            buf: Bytes::from(self.compressor.compress(buf)?),
            num_values: u32::try_from(page.rows).map_err(|_| too_large())?,
            encoding: page.encoding,
            def_level_encoding: Encoding::RLE,
            rep_level_encoding: Encoding::RLE,
            statistics: None,
        };
        let spec = SerializedPageWriter::new(&mut self.sink)
            .write_page(CompressedPage::new(data_page, uncompressed))?;
        self.first_data_page.get_or_insert(spec.offset);
        self.data_pages += 1;
        self.data_page_encoding = page.encoding;
        self.compressed_size += spec.compressed_size as i64;
        self.uncompressed_size += spec.uncompressed_size as i64;

        let offsets = &mut self.offset_index;
        offsets.append_offset_and_size(spec.offset as i64, spec.compressed_size as i32);
        offsets.append_row_count(page.rows as i64);
        offsets.append_unencoded_byte_array_data_bytes(page.unencoded_bytes);
        if let Some(bytes) = page.unencoded_bytes {
            *self.unencoded_bytes.get_or_insert(0) += bytes;
        }
        let page_histogram = self
            .definition_histogram
            .as_ref()
            .map(|_| LevelHistogram::from(vec![nulls as i64, (page.rows - nulls) as i64]));
        if let (Some(chunk), Some(page)) = (self.definition_histogram.as_mut(), &page_histogram) {
            chunk.add(page);
        }
        match page.min_max {
            None => self.column_index.append(true, vec![], vec![], nulls as i64),
            Some((min, max)) => self.column_index.append(false, min, max, nulls as i64),
        }
        self.column_index.append_histograms(&None, &page_histogram);
        self.rows += page.rows;
        self.nulls += nulls as u64;
        Ok(())
    }

    /// Null values written so far.
    pub(super) fn nulls(&self) -> u64 {
        self.nulls
    }

    /// The finished chunk, with the chunk's `statistics` and the column index's
    /// `boundary_order`.
    pub(super) fn finish(
        mut self,
        statistics: Statistics,
        boundary_order: BoundaryOrder,
    ) -> Result<EncodedChunk> {
        SerializedPageWriter::new(&mut self.sink).close()?;
        self.column_index.set_boundary_order(boundary_order);
        let mut encodings = vec![Encoding::RLE, self.data_page_encoding];
        let mut page_stats = Vec::new();
        if self.dictionary_page_offset.is_some() {
            encodings.push(Encoding::PLAIN);
            page_stats.push(PageEncodingStats {
                page_type: PageType::DICTIONARY_PAGE,
                encoding: Encoding::PLAIN,
                count: 1,
            });
        }
        if self.data_pages > 0 {
            page_stats.push(PageEncodingStats {
                page_type: PageType::DATA_PAGE,
                encoding: self.data_page_encoding,
                count: self.data_pages,
            });
        }
        let dictionary_page_offset = self.dictionary_page_offset.map(|o| o as i64);
        let metadata = ColumnChunkMetaData::builder(self.descr.clone())
            .set_compression(self.codec)
            .set_encodings_mask(EncodingMask::new_from_encodings(encodings.iter()))
            .set_page_encoding_stats(page_stats)
            .set_total_compressed_size(self.compressed_size)
            .set_total_uncompressed_size(self.uncompressed_size)
            .set_num_values(self.rows as i64)
            .set_data_page_offset(self.first_data_page.unwrap_or(0) as i64)
            .set_dictionary_page_offset(dictionary_page_offset)
            .set_statistics(statistics)
            .set_unencoded_byte_array_data_bytes(self.unencoded_bytes)
            .set_definition_level_histogram(self.definition_histogram)
            .build()?;
        let bytes = Bytes::from(self.sink.into_inner()?);
        Ok(EncodedChunk {
            close: ColumnCloseResult {
                bytes_written: bytes.len() as u64,
                rows_written: self.rows as u64,
                metadata,
                bloom_filter: None,
                column_index: Some(self.column_index.build()?),
                offset_index: Some(self.offset_index.build()),
            },
            bytes,
        })
    }
}

/// Whether page bounds keep the column index ascending and descending, page after page.
pub(super) struct BoundaryOrderTracker<T> {
    last: Option<(T, T)>,
    ascending: bool,
    descending: bool,
}

impl<T: Copy> BoundaryOrderTracker<T> {
    pub(super) fn new() -> Self {
        Self {
            last: None,
            ascending: true,
            descending: true,
        }
    }

    /// Records a page's `(min, max)`, compared with the previous one's by `cmp`.
    pub(super) fn page(&mut self, min_max: (T, T), cmp: impl Fn(T, T) -> std::cmp::Ordering) {
        use std::cmp::Ordering::Greater;
        if let Some((last_min, last_max)) = self.last {
            self.ascending &=
                cmp(last_min, min_max.0) != Greater && cmp(last_max, min_max.1) != Greater;
            self.descending &=
                cmp(min_max.0, last_min) != Greater && cmp(min_max.1, last_max) != Greater;
        }
        self.last = Some(min_max);
    }

    pub(super) fn order(&self) -> BoundaryOrder {
        match (self.ascending, self.descending) {
            (true, _) => BoundaryOrder::ASCENDING,
            (false, true) => BoundaryOrder::DESCENDING,
            (false, false) => BoundaryOrder::UNORDERED,
        }
    }
}

pub(super) fn too_large() -> DataFusionError {
    DataFusionError::Execution("a Parquet page or value over 4 GiB cannot be written".into())
}
