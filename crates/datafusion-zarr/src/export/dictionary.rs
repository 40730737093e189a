//! One string column of one row group as a dictionary-encoded Parquet column chunk, written by
//! our code: one hash probe per row into a table of the row group's distinct values, then the
//! keys bit-packed into data pages. parquet-rs's own dictionary encoder (through `ArrowWriter`)
//! spends about twice as long on the same rows, most of it in its interner (measured in
//! benches/README.md, issue #14), and its encoder trait is private, so it cannot be given a
//! faster dictionary; the pages, headers, statistics, page index and footer this module
//! produces go through parquet-rs's public writer types (`SerializedPageWriter`,
//! `ColumnChunkMetaData`, `ColumnIndexBuilder`, `OffsetIndexBuilder`), and the file is spliced
//! together by its `SerializedRowGroupWriter::append_column`.
//!
//! It writes what parquet-rs writes with the same settings: a PLAIN dictionary page, then V1
//! data pages of `RLE_DICTIONARY` keys (definition levels first when the column is nullable),
//! each page compressed, page statistics in the column index, an offset index with the
//! unencoded sizes, chunk statistics and level histograms. Whatever it does not implement it
//! declines ([`supported`] or `None` from [`encode`]), and the caller hands the column to
//! parquet-rs: a dictionary over the page size limit (parquet-rs then falls back to PLAIN),
//! statistics that would need truncating, bloom filters, other encodings, V2 pages.

use std::hash::BuildHasher;

use arrow::array::{Array, ArrayRef, AsArray, GenericStringArray, OffsetSizeTrait};
use arrow::datatypes::DataType;
use bytes::Bytes;
use datafusion::error::{DataFusionError, Result};
use parquet::basic::{BoundaryOrder, Encoding, EncodingMask, PageType, Type as PhysicalType};
use parquet::column::page::{CompressedPage, Page, PageWriter};
use parquet::column::writer::ColumnCloseResult;
use parquet::data_type::ByteArray;
use parquet::file::metadata::{
    ColumnChunkMetaData, ColumnIndexBuilder, LevelHistogram, OffsetIndexBuilder, PageEncodingStats,
};
use parquet::file::properties::{EnabledStatistics, WriterProperties, WriterVersion};
use parquet::file::statistics::{Statistics, ValueStatistics};
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

/// Whether [`encode`] may write this column: a top-level string column, dictionary enabled,
/// no encoding chosen for it, no bloom filter, page statistics, V1 data pages, no
/// content-defined chunking, a codec [`PageCompressor`] has.
pub(super) fn supported(
    descr: &ColumnDescPtr,
    props: &WriterProperties,
    data_type: &DataType,
) -> bool {
    let path = descr.path();
    matches!(
        data_type,
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
    ) && descr.physical_type() == PhysicalType::BYTE_ARRAY
        && descr.max_rep_level() == 0
        && descr.max_def_level() <= 1
        && props.dictionary_enabled(path)
        && props.encoding(path).is_none()
        && props.dictionary_page_encoding() == Encoding::PLAIN
        && props.bloom_filter_properties(path).is_none()
        && props.statistics_enabled(path) == EnabledStatistics::Page
        && !props.write_page_header_statistics(path)
        && !props.offset_index_disabled()
        && props.writer_version() == WriterVersion::PARQUET_1_0
        && props.content_defined_chunking().is_none()
        && PageCompressor::supports(props.compression(path))
}

/// The distinct values of a column chunk, in order of first appearance, and a hash table from
/// value to key.
struct Dictionary {
    hasher: foldhash::fast::FixedState,
    /// Seeds the hash of values of up to 16 bytes.
    seed: u64,
    table: hashbrown::HashTable<Slot>,
    /// The entries' bytes, one after another.
    bytes: Vec<u8>,
    /// `ends[k]..ends[k + 1]` is entry `k`.
    ends: Vec<usize>,
    /// Entry `k`'s first 8 bytes (zero-padded) as a big-endian integer: entries whose
    /// prefixes differ compare as these do, without reading the entries. Eight bytes, not
    /// sixteen: the page statistics load one per distinct value of a page, at random, and
    /// half the size keeps more of it in cache.
    order: Vec<u64>,
    /// The size of the PLAIN dictionary page (a 4-byte length before each entry).
    plain_size: usize,
    limit: usize,
}

/// A hash table slot: an entry's key, length and first 16 bytes, so that a probe compares
/// most values (labels are short) in registers, without reading the entry itself.
#[derive(Clone, Copy)]
struct Slot {
    head: [u64; 2],
    len: u32,
    key: u32,
}

/// The first 16 bytes of `value`, zero-padded.
#[inline]
fn head(value: &[u8]) -> [u64; 2] {
    let mut bytes = [0u8; 16];
    let n = value.len().min(16);
    bytes[..n].copy_from_slice(&value[..n]);
    split(u128::from_le_bytes(bytes))
}

/// The first 16 bytes of `data[start..end]`, zero-padded: one unaligned load when 16 bytes
/// remain in `data`, masked to the value's length.
#[inline]
fn head_in(data: &[u8], start: usize, end: usize) -> [u64; 2] {
    match data.get(start..start + 16) {
        Some(sixteen) => {
            let mut bytes = [0u8; 16];
            bytes.copy_from_slice(sixteen);
            let len = end - start;
            let mask = if len >= 16 {
                u128::MAX
            } else {
                (1u128 << (len * 8)) - 1
            };
            split(u128::from_le_bytes(bytes) & mask)
        }
        None => head(&data[start..end]),
    }
}

fn split(x: u128) -> [u64; 2] {
    [x as u64, (x >> 64) as u64]
}

/// The hash of a value from its head and length (values of up to 16 bytes), or of all its
/// bytes (longer ones).
#[inline]
fn hash(hasher: &foldhash::fast::FixedState, seed: u64, head: [u64; 2], value: &[u8]) -> u64 {
    if value.len() > 16 {
        return hasher.hash_one(value);
    }
    // foldhash's folded multiply over the head and length.
    let full = u128::from(head[0] ^ seed)
        * u128::from(head[1] ^ 0x243f_6a88_85a3_08d3 ^ value.len() as u64);
    (full as u64) ^ ((full >> 64) as u64)
}

impl Dictionary {
    fn new() -> Self {
        let hasher = foldhash::fast::FixedState::with_seed(0x5a52);
        Self {
            seed: hasher.hash_one(0u8),
            hasher,
            table: hashbrown::HashTable::new(),
            bytes: Vec::new(),
            ends: vec![0],
            order: Vec::new(),
            plain_size: 0,
            limit: 0,
        }
    }

    /// Empties the dictionary, keeping its memory, for a chunk whose page may hold `limit`
    /// bytes.
    fn reset(&mut self, limit: usize) {
        self.table.clear();
        self.bytes.clear();
        self.ends.truncate(1);
        self.order.clear();
        self.plain_size = 0;
        self.limit = limit;
    }

    fn len(&self) -> usize {
        self.ends.len() - 1
    }

    fn entry(&self, key: u32) -> &[u8] {
        entry(&self.bytes, &self.ends, key)
    }

    /// Entries `a` and `b` compared as byte strings (Parquet's order for strings).
    #[inline]
    fn compare(&self, a: u32, b: u32) -> std::cmp::Ordering {
        let (ia, ib) = (a as usize, b as usize);
        self.order[ia]
            .cmp(&self.order[ib])
            .then_with(|| self.entry(a).cmp(self.entry(b)))
    }

    /// The key of `value` (whose first 16 bytes are `value_head`), added if new; `None` once
    /// the dictionary page would exceed the limit.
    #[inline]
    fn intern(&mut self, value: &[u8], value_head: [u64; 2]) -> Option<u32> {
        let value_hash = hash(&self.hasher, self.seed, value_head, value);
        let value_len = u32::try_from(value.len()).ok()?;
        let (bytes, ends, hasher, seed) = (&self.bytes, &self.ends, &self.hasher, self.seed);
        let found = self.table.entry(
            value_hash,
            |slot| {
                slot.head == value_head
                    && slot.len == value_len
                    && (value.len() <= 16 || entry(bytes, ends, slot.key)[16..] == value[16..])
            },
            |slot| hash(hasher, seed, slot.head, entry(bytes, ends, slot.key)),
        );
        match found {
            hashbrown::hash_table::Entry::Occupied(o) => Some(o.get().key),
            hashbrown::hash_table::Entry::Vacant(v) => {
                self.plain_size += 4 + value.len();
                if self.plain_size > self.limit {
                    return None;
                }
                let key = u32::try_from(self.ends.len() - 1).ok()?;
                self.bytes.extend_from_slice(value);
                self.ends.push(self.bytes.len());
                self.order.push(value_head[0].swap_bytes());
                v.insert(Slot {
                    head: value_head,
                    len: value_len,
                    key,
                });
                Some(key)
            }
        }
    }

    /// The PLAIN dictionary page: each entry as a 4-byte little-endian length and its bytes.
    fn plain_page(&self) -> Result<Vec<u8>> {
        let mut page = Vec::with_capacity(self.plain_size);
        for w in self.ends.windows(2) {
            let len = u32::try_from(w[1] - w[0]).map_err(|_| too_long())?;
            page.extend_from_slice(&len.to_le_bytes());
            page.extend_from_slice(&self.bytes[w[0]..w[1]]);
        }
        Ok(page)
    }
}

fn entry<'a>(bytes: &'a [u8], ends: &[usize], key: u32) -> &'a [u8] {
    let k = key as usize;
    &bytes[ends[k]..ends[k + 1]]
}

fn too_long() -> DataFusionError {
    DataFusionError::Execution("a string longer than 4 GiB cannot be written to Parquet".into())
}

/// A row group's column as dictionary keys.
struct Keyed {
    dictionary: Dictionary,
    /// The key of each non-null value, in row order.
    keys: Vec<u32>,
    /// Whether each row is non-null; empty when no row is null.
    valid: Vec<bool>,
    rows: usize,
}

/// The encoder's working memory, kept from one row group to the next (so each row group does
/// not fault in megabytes of fresh pages).
pub(super) struct Scratch {
    keyed: Keyed,
    /// Per dictionary entry, the stamp of the last page it was seen in (two bytes each, so
    /// that the table stays in cache; cleared when the stamps wrap).
    seen: Vec<u16>,
}

impl Default for Scratch {
    fn default() -> Self {
        Self {
            keyed: Keyed {
                dictionary: Dictionary::new(),
                keys: Vec::new(),
                valid: Vec::new(),
                rows: 0,
            },
            seen: Vec::new(),
        }
    }
}

/// Interns every value of `arrays` into `keyed`; false when the dictionary outgrows `limit`.
fn key_rows(arrays: &[ArrayRef], limit: usize, keyed: &mut Keyed) -> Result<bool> {
    let rows: usize = arrays.iter().map(|a| a.len()).sum();
    let nulls: usize = arrays.iter().map(|a| a.null_count()).sum();
    keyed.dictionary.reset(limit);
    keyed.keys.clear();
    keyed.keys.reserve(rows - nulls);
    keyed.valid.clear();
    keyed.rows = rows;
    for array in arrays {
        let done = match array.data_type() {
            DataType::Utf8 => keyed.add_strings(array.as_string::<i32>(), nulls > 0),
            DataType::LargeUtf8 => keyed.add_strings(array.as_string::<i64>(), nulls > 0),
            DataType::Utf8View => keyed.add(array.as_string_view().iter(), nulls > 0),
            other => {
                return Err(DataFusionError::Internal(format!(
                    "the dictionary writer was given a {other} column"
                )));
            }
        };
        if !done {
            return Ok(false);
        }
    }
    Ok(true)
}

impl Keyed {
    /// Adds the values of one array; false once the dictionary is over its limit.
    #[inline]
    fn add<'a>(&mut self, values: impl Iterator<Item = Option<&'a str>>, nullable: bool) -> bool {
        for value in values {
            if let Some(v) = value {
                match self.dictionary.intern(v.as_bytes(), head(v.as_bytes())) {
                    Some(key) => self.keys.push(key),
                    None => return false,
                }
            }
            if nullable {
                self.valid.push(value.is_some());
            }
        }
        true
    }

    /// [`Keyed::add`] for a string array: without nulls, its values are walked through their
    /// offsets and each head is one load from the values buffer.
    fn add_strings<O: OffsetSizeTrait>(
        &mut self,
        array: &GenericStringArray<O>,
        nullable: bool,
    ) -> bool {
        if array.null_count() > 0 {
            return self.add(array.iter(), nullable);
        }
        let data = array.values().as_slice();
        for w in array.value_offsets().windows(2) {
            let (start, end) = (w[0].as_usize(), w[1].as_usize());
            let value = &data[start..end];
            match self.dictionary.intern(value, head_in(data, start, end)) {
                Some(key) => self.keys.push(key),
                None => return false,
            }
        }
        if nullable {
            self.valid.extend(std::iter::repeat_n(true, array.len()));
        }
        true
    }
}

/// One data page's statistics.
struct PageSummary {
    nulls: usize,
    /// Keys of the smallest and largest value (by bytes), if any value is non-null.
    min_max: Option<(u32, u32)>,
    unencoded_bytes: i64,
}

/// Encodes one row group's values of the column `descr` (the arrays in row order) as a column
/// chunk. `None` when the dictionary would exceed the dictionary page size limit or a
/// statistic would need truncating: the caller then writes the column with parquet-rs.
pub(super) fn encode(
    descr: &ColumnDescPtr,
    props: &WriterProperties,
    arrays: &[ArrayRef],
    scratch: &mut Scratch,
) -> Result<Option<EncodedChunk>> {
    let path = descr.path();
    let codec = props.compression(path);
    let Some(mut compressor) = PageCompressor::new(codec)? else {
        return Ok(None);
    };
    let limit = props.column_dictionary_page_size_limit(path);
    if !key_rows(arrays, limit, &mut scratch.keyed)? {
        return Ok(None);
    }
    let keyed = &scratch.keyed;
    let dictionary = &keyed.dictionary;
    let nullable = descr.max_def_level() > 0;
    let bit_width = rle::bit_width(dictionary.len().saturating_sub(1) as u32);

    // Pages of at most `data_page_row_count_limit` rows whose keys fit the page size limit.
    let by_size =
        props.column_data_page_size_limit(path).saturating_mul(8) / usize::from(bit_width);
    let page_rows = props.data_page_row_count_limit().min(by_size).max(1);
    let truncate = |len: usize, limit: Option<usize>| limit.is_some_and(|l| len > l);

    // At most the dictionary and the keys, bit-packed, plus headers: one allocation.
    let estimate = dictionary.plain_size + keyed.keys.len() * usize::from(bit_width) / 8;
    let mut sink = TrackedWrite::new(Vec::with_capacity(estimate + keyed.rows / 64 + 4096));
    let mut pages = SerializedPageWriter::new(&mut sink);
    let dictionary_page = dictionary.plain_page()?;
    let uncompressed = dictionary_page.len();
    let dictionary_spec = pages.write_page(CompressedPage::new(
        Page::DictionaryPage {
            buf: Bytes::from(compressor.compress(dictionary_page)?),
            num_values: u32::try_from(dictionary.len()).map_err(|_| too_long())?,
            encoding: Encoding::PLAIN,
            is_sorted: false,
        },
        uncompressed,
    ))?;

    let mut column_index = ColumnIndexBuilder::new(PhysicalType::BYTE_ARRAY);
    let mut offset_index = OffsetIndexBuilder::new();
    let seen = &mut scratch.seen;
    seen.clear();
    seen.resize(dictionary.len(), 0);
    let mut stamp = 0u16;
    let mut arrays_rows = RowRanges::new(arrays);
    let (mut ascending, mut descending) = (true, true);
    let mut last_min_max: Option<(u32, u32)> = None;
    let mut chunk_min_max: Option<(u32, u32)> = None;
    let (mut total_nulls, mut total_unencoded) = (0u64, 0i64);
    let mut definition_histogram = LevelHistogram::try_new(descr.max_def_level());
    let (mut compressed_size, mut uncompressed_size) = (
        dictionary_spec.compressed_size as i64,
        dictionary_spec.uncompressed_size as i64,
    );
    let mut first_data_page = None;
    let mut data_pages = 0;

    let (mut row, mut key) = (0, 0);
    while row < keyed.rows {
        let rows = page_rows.min(keyed.rows - row);
        let valid = match keyed.valid.is_empty() {
            true => None,
            false => Some(&keyed.valid[row..row + rows]),
        };
        let values = valid.map_or(rows, |v| v.iter().filter(|&&b| b).count());
        let page_keys = &keyed.keys[key..key + values];
        stamp = match stamp.checked_add(1) {
            Some(next) => next,
            None => {
                seen.fill(0);
                1
            }
        };
        let summary = PageSummary {
            nulls: rows - page_keys.len(),
            min_max: page_min_max(dictionary, page_keys, seen, stamp),
            unencoded_bytes: arrays_rows.value_bytes(row, row + rows),
        };

        let mut buf = Vec::with_capacity(values * usize::from(bit_width) / 8 + 16);
        if nullable {
            let mut encoded = Vec::new();
            match valid {
                Some(v) => {
                    let levels: Vec<u32> = v.iter().map(|&b| u32::from(b)).collect();
                    rle::encode(&levels, 1, &mut encoded);
                }
                None => rle::run(1, rows, 1, &mut encoded),
            }
            let len = u32::try_from(encoded.len()).map_err(|_| too_long())?;
            buf.extend_from_slice(&len.to_le_bytes());
            buf.extend_from_slice(&encoded);
        }
        buf.push(bit_width);
        rle::encode(page_keys, bit_width, &mut buf);
        let uncompressed = buf.len();
        let spec = pages.write_page(CompressedPage::new(
            Page::DataPage {
                buf: Bytes::from(compressor.compress(buf)?),
                num_values: u32::try_from(rows).map_err(|_| too_long())?,
                encoding: Encoding::RLE_DICTIONARY,
                def_level_encoding: Encoding::RLE,
                rep_level_encoding: Encoding::RLE,
                statistics: None,
            },
            uncompressed,
        ))?;
        first_data_page.get_or_insert(spec.offset);
        data_pages += 1;
        compressed_size += spec.compressed_size as i64;
        uncompressed_size += spec.uncompressed_size as i64;
        offset_index.append_offset_and_size(spec.offset as i64, spec.compressed_size as i32);
        offset_index.append_row_count(rows as i64);
        offset_index.append_unencoded_byte_array_data_bytes(Some(summary.unencoded_bytes));

        let page_histogram = definition_histogram.as_ref().map(|_| {
            LevelHistogram::from(vec![summary.nulls as i64, (rows - summary.nulls) as i64])
        });
        if let (Some(chunk), Some(page)) = (definition_histogram.as_mut(), &page_histogram) {
            chunk.add(page);
        }
        match summary.min_max {
            None => column_index.append(true, vec![], vec![], summary.nulls as i64),
            Some((min, max)) => {
                let (min, max) = (dictionary.entry(min), dictionary.entry(max));
                let limit = props.column_index_truncate_length();
                if truncate(min.len(), limit) || truncate(max.len(), limit) {
                    return Ok(None);
                }
                if let Some((last_min, last_max)) = last_min_max {
                    let (last_min, last_max) =
                        (dictionary.entry(last_min), dictionary.entry(last_max));
                    ascending &= last_min <= min && last_max <= max;
                    descending &= min <= last_min && max <= last_max;
                }
                column_index.append(false, min.to_vec(), max.to_vec(), summary.nulls as i64);
            }
        }
        column_index.append_histograms(&None, &page_histogram);
        if let Some(page_min_max) = summary.min_max {
            last_min_max = Some(page_min_max);
            chunk_min_max = Some(match chunk_min_max {
                None => page_min_max,
                Some((min, max)) => (
                    smaller(dictionary, min, page_min_max.0),
                    larger(dictionary, max, page_min_max.1),
                ),
            });
        }
        total_nulls += summary.nulls as u64;
        total_unencoded += summary.unencoded_bytes;
        row += rows;
        key += values;
    }
    pages.close()?;

    column_index.set_boundary_order(match (ascending, descending) {
        (true, _) => BoundaryOrder::ASCENDING,
        (false, true) => BoundaryOrder::DESCENDING,
        (false, false) => BoundaryOrder::UNORDERED,
    });
    let min_max = match chunk_min_max {
        Some((min, max)) => {
            let (min, max) = (dictionary.entry(min), dictionary.entry(max));
            let limit = props.statistics_truncate_length();
            if truncate(min.len(), limit) || truncate(max.len(), limit) {
                return Ok(None);
            }
            (
                Some(ByteArray::from(min.to_vec())),
                Some(ByteArray::from(max.to_vec())),
            )
        }
        None => (None, None),
    };
    let statistics = Statistics::ByteArray(ValueStatistics::new(
        min_max.0,
        min_max.1,
        None,
        Some(total_nulls),
        false,
    ));
    let encodings = [Encoding::PLAIN, Encoding::RLE, Encoding::RLE_DICTIONARY];
    let mut page_stats = vec![PageEncodingStats {
        page_type: PageType::DICTIONARY_PAGE,
        encoding: Encoding::PLAIN,
        count: 1,
    }];
    if data_pages > 0 {
        page_stats.push(PageEncodingStats {
            page_type: PageType::DATA_PAGE,
            encoding: Encoding::RLE_DICTIONARY,
            count: data_pages,
        });
    }
    let metadata = ColumnChunkMetaData::builder(descr.clone())
        .set_compression(codec)
        .set_encodings_mask(EncodingMask::new_from_encodings(encodings.iter()))
        .set_page_encoding_stats(page_stats)
        .set_total_compressed_size(compressed_size)
        .set_total_uncompressed_size(uncompressed_size)
        .set_num_values(keyed.rows as i64)
        .set_data_page_offset(first_data_page.unwrap_or(0) as i64)
        .set_dictionary_page_offset(Some(dictionary_spec.offset as i64))
        .set_statistics(statistics)
        .set_unencoded_byte_array_data_bytes(Some(total_unencoded))
        .set_definition_level_histogram(definition_histogram)
        .build()?;
    let bytes = Bytes::from(sink.into_inner()?);
    Ok(Some(EncodedChunk {
        close: ColumnCloseResult {
            bytes_written: bytes.len() as u64,
            rows_written: keyed.rows as u64,
            metadata,
            bloom_filter: None,
            column_index: Some(column_index.build()?),
            offset_index: Some(offset_index.build()),
        },
        bytes,
    }))
}

/// The keys of the page's smallest and largest values (by bytes), comparing each distinct key
/// once (`seen` marks the keys met in page `stamp`) and by its 8-byte prefix, held in registers,
/// unless prefixes tie.
fn page_min_max(
    dictionary: &Dictionary,
    keys: &[u32],
    seen: &mut [u16],
    stamp: u16,
) -> Option<(u32, u32)> {
    let (&first, rest) = keys.split_first()?;
    seen[first as usize] = stamp;
    let (mut min, mut max) = (first, first);
    let (mut min_head, mut max_head) = (
        dictionary.order[first as usize],
        dictionary.order[first as usize],
    );
    for &key in rest {
        let k = key as usize;
        if seen[k] == stamp {
            continue;
        }
        seen[k] = stamp;
        let head = dictionary.order[k];
        if head < min_head || (head == min_head && dictionary.entry(key) < dictionary.entry(min)) {
            (min, min_head) = (key, head);
        }
        if head > max_head || (head == max_head && dictionary.entry(key) > dictionary.entry(max)) {
            (max, max_head) = (key, head);
        }
    }
    Some((min, max))
}

/// The string bytes of row ranges of a column given as consecutive arrays, walked forward
/// page by page: a string array without nulls answers from two offsets.
struct RowRanges<'a> {
    arrays: &'a [ArrayRef],
    /// The array holding the next row asked for, and its first row.
    index: usize,
    first_row: usize,
}

impl<'a> RowRanges<'a> {
    fn new(arrays: &'a [ArrayRef]) -> Self {
        Self {
            arrays,
            index: 0,
            first_row: 0,
        }
    }

    /// The bytes of the non-null values of rows `start..end` (rows asked for in increasing
    /// order).
    fn value_bytes(&mut self, start: usize, end: usize) -> i64 {
        let mut total = 0i64;
        let mut row = start;
        while row < end {
            let Some(array) = self.arrays.get(self.index) else {
                break;
            };
            let array_end = self.first_row + array.len();
            if row >= array_end {
                self.index += 1;
                self.first_row = array_end;
                continue;
            }
            let (from, to) = (row - self.first_row, end.min(array_end) - self.first_row);
            total += array_value_bytes(array, from, to);
            row = end.min(array_end);
        }
        total
    }
}

/// The bytes of the non-null values at `from..to` of a string array.
fn array_value_bytes(array: &ArrayRef, from: usize, to: usize) -> i64 {
    fn strings<O: OffsetSizeTrait>(a: &GenericStringArray<O>, from: usize, to: usize) -> i64 {
        let offsets = a.value_offsets();
        match a.nulls().filter(|n| n.null_count() > 0) {
            None => (offsets[to] - offsets[from]).as_usize() as i64,
            Some(nulls) => (from..to)
                .filter(|&i| nulls.is_valid(i))
                .map(|i| (offsets[i + 1] - offsets[i]).as_usize() as i64)
                .sum(),
        }
    }
    match array.data_type() {
        DataType::Utf8 => strings(array.as_string::<i32>(), from, to),
        DataType::LargeUtf8 => strings(array.as_string::<i64>(), from, to),
        DataType::Utf8View => {
            let a = array.as_string_view();
            (from..to)
                .filter(|&i| a.is_valid(i))
                .map(|i| a.views()[i] as u32 as i64)
                .sum()
        }
        _ => 0,
    }
}

fn smaller(dictionary: &Dictionary, a: u32, b: u32) -> u32 {
    match dictionary.compare(b, a) {
        std::cmp::Ordering::Less => b,
        _ => a,
    }
}

fn larger(dictionary: &Dictionary, a: u32, b: u32) -> u32 {
    match dictionary.compare(b, a) {
        std::cmp::Ordering::Greater => b,
        _ => a,
    }
}
