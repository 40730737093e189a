//! One string column of one row group as a dictionary-encoded Parquet column chunk, written by
//! our code: one hash probe per row into a table of the row group's distinct values, then the
//! keys bit-packed into data pages that `chunk.rs` assembles into the column chunk.
//! parquet-rs's own dictionary encoder (through `ArrowWriter`) spends about twice as long on
//! the same rows, most of it in its interner (measured in benches/README.md), and
//! its encoder trait is private, so it cannot be given a faster dictionary.
//!
//! It writes what parquet-rs writes with the same settings: a PLAIN dictionary page, then V1
//! data pages of `RLE_DICTIONARY` keys, page statistics in the column index, unencoded sizes in
//! the offset index, chunk statistics. Whatever it does not implement it declines
//! ([`supported`] or `None` from [`encode`]), and the caller hands the column to parquet-rs: a
//! dictionary over the page size limit (parquet-rs then falls back to PLAIN), statistics that
//! would need truncating, and every setting `chunk::settings_supported` rejects.

use std::hash::BuildHasher;

use arrow::array::{Array, ArrayRef, AsArray, GenericStringArray, OffsetSizeTrait};
use arrow::datatypes::DataType;
use datafusion::error::{DataFusionError, Result};
use parquet::basic::{Encoding, Type as PhysicalType};
use parquet::data_type::ByteArray;
use parquet::file::properties::WriterProperties;
use parquet::file::statistics::{Statistics, ValueStatistics};
use parquet::schema::types::ColumnDescPtr;

use super::chunk::{self, BoundaryOrderTracker, ChunkWriter, DataPage, EncodedChunk};
use super::hash_prefetch::prefetch;
use super::rle;

/// Whether [`encode`] may write this column: a top-level string column with the dictionary
/// enabled and no other encoding chosen, whose settings `chunk.rs` writes.
pub(super) fn supported(
    descr: &ColumnDescPtr,
    props: &WriterProperties,
    data_type: &DataType,
) -> bool {
    matches!(
        data_type,
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
    ) && descr.physical_type() == PhysicalType::BYTE_ARRAY
        && props.dictionary_enabled(descr.path())
        && props.encoding(descr.path()).is_none()
        && chunk::settings_supported(descr, props)
}

/// The distinct values of a column chunk, in order of first appearance, and a hash table from
/// value to key.
struct Dictionary {
    hasher: foldhash::fast::FixedState,
    /// Seeds the hash of values of up to 16 bytes.
    seed: u64,
    /// An open-addressing table with linear probing, a power of two long, at most half full.
    /// Written here rather than taken from hashbrown because a batch of rows prefetches its
    /// slots before probing them (see [`Keyed::add_strings`]), and hashbrown does not say
    /// where a hash's slot is.
    slots: Vec<Slot>,
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
    /// [`EMPTY`] in an empty slot.
    key: u32,
}

/// The key of an empty slot (no dictionary has 2^32 entries: its page would be over 16 GiB).
const EMPTY: u32 = u32::MAX;

const EMPTY_SLOT: Slot = Slot {
    head: [0; 2],
    len: 0,
    key: EMPTY,
};

/// Rows whose slots are prefetched together before they are probed.
const BATCH: usize = 16;

/// The most slots of a table probed without prefetching (24 KiB, within L1).
const SMALL_TABLE: usize = 1024;

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
            let [lo, hi] = split(u128::from_le_bytes(bytes));
            let [lo_mask, hi_mask] = HEAD_MASKS[(end - start).min(16)];
            [lo & lo_mask, hi & hi_mask]
        }
        None => head(&data[start..end]),
    }
}

/// `HEAD_MASKS[n]` keeps the first `n` bytes of a 16-byte head: one load, where a 128-bit
/// shift by the length compiles to a chain of shifts and selects.
static HEAD_MASKS: [[u64; 2]; 17] = {
    let mut masks = [[0u64; 2]; 17];
    let mut n = 0;
    while n <= 16 {
        let mask = match n {
            16 => u128::MAX,
            _ => (1u128 << (n * 8)) - 1,
        };
        masks[n] = [mask as u64, (mask >> 64) as u64];
        n += 1;
    }
    masks
};

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
            slots: vec![EMPTY_SLOT; 1024],
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
        self.slots.fill(EMPTY_SLOT);
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

    /// The hash of `value`, whose first 16 bytes are `value_head`.
    #[inline]
    fn hash(&self, value: &[u8], value_head: [u64; 2]) -> u64 {
        hash(&self.hasher, self.seed, value_head, value)
    }

    /// The slot a probe for `value_hash` starts at.
    #[inline]
    fn home(&self, value_hash: u64) -> usize {
        value_hash as usize & (self.slots.len() - 1)
    }

    /// The key of a value of up to 16 bytes found in its home slot (most probes of a table at
    /// most half full): the row loops inline this and call [`Dictionary::intern`], which
    /// probes on and adds, only when it fails.
    #[inline(always)]
    fn at_home(&self, value_head: [u64; 2], value_len: usize, value_hash: u64) -> Option<u32> {
        let slot = self.slots[self.home(value_hash)];
        let found = slot.key != EMPTY
            && slot.head == value_head
            && slot.len as usize == value_len
            && value_len <= 16;
        found.then_some(slot.key)
    }

    /// The key of `value` (whose first 16 bytes are `value_head`, whose hash is
    /// `value_hash`), added if new; `None` once the dictionary page would exceed the limit.
    #[inline]
    fn intern(&mut self, value: &[u8], value_head: [u64; 2], value_hash: u64) -> Option<u32> {
        let value_len = u32::try_from(value.len()).ok()?;
        let mask = self.slots.len() - 1;
        let mut i = self.home(value_hash);
        loop {
            let slot = self.slots[i];
            if slot.key == EMPTY {
                break;
            }
            if slot.head == value_head
                && slot.len == value_len
                && (value.len() <= 16 || self.entry(slot.key)[16..] == value[16..])
            {
                return Some(slot.key);
            }
            i = (i + 1) & mask;
        }
        self.plain_size += 4 + value.len();
        if self.plain_size > self.limit {
            return None;
        }
        let key = u32::try_from(self.ends.len() - 1)
            .ok()
            .filter(|&k| k != EMPTY)?;
        self.bytes.extend_from_slice(value);
        self.ends.push(self.bytes.len());
        self.order.push(value_head[0].swap_bytes());
        let slot = Slot {
            head: value_head,
            len: value_len,
            key,
        };
        if 2 * (key as usize + 1) > self.slots.len() {
            self.grow();
            self.place(slot, value_hash);
        } else {
            self.slots[i] = slot;
        }
        Some(key)
    }

    /// Puts `slot` in the first empty slot from its hash's home.
    fn place(&mut self, slot: Slot, slot_hash: u64) {
        let mask = self.slots.len() - 1;
        let mut i = self.home(slot_hash);
        while self.slots[i].key != EMPTY {
            i = (i + 1) & mask;
        }
        self.slots[i] = slot;
    }

    /// Doubles the table and places every entry again.
    fn grow(&mut self) {
        let doubled = vec![EMPTY_SLOT; self.slots.len() * 2];
        let old = std::mem::replace(&mut self.slots, doubled);
        for slot in old.into_iter().filter(|s| s.key != EMPTY) {
            let slot_hash = self.hash(self.entry(slot.key), slot.head);
            self.place(slot, slot_hash);
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
    /// Per dictionary entry, the stamp of the last page whose statistics compared it whole,
    /// or (a small dictionary) that held it (two bytes each, so that the table stays in
    /// cache; cleared when the stamps wrap).
    seen: Vec<u16>,
    /// A small dictionary's keys in the order of their values (see [`RANKED_MOST`]).
    sorted: Vec<u32>,
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
            sorted: Vec::new(),
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
                let (value, value_head) = (v.as_bytes(), head(v.as_bytes()));
                let value_hash = self.dictionary.hash(value, value_head);
                match self.dictionary.intern(value, value_head, value_hash) {
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
        let offsets = array.value_offsets();
        // A value of up to 16 bytes equal to the row before it (as in an N-D array's coordinate
        // columns, runs of one value) takes the previous row's key: no hash, no probe.
        let mut previous = ([u64::MAX; 2], usize::MAX);
        let mut batch = [([0u64; 2], 0u64); BATCH];
        for first in (0..array.len()).step_by(BATCH) {
            let rows = first..(first + BATCH).min(array.len());
            // A whole batch repeating the row before it (a sorted column, an N-D array's outer
            // coordinate): its offsets step by that row's length and its bytes repeat with
            // that period, so they equal themselves shifted by one value. One comparison of
            // the batch's bytes, then its keys, instead of a head and a test per row.
            if first > 0
                && rows.len() == BATCH
                && let Some(&key) = self.keys.last()
            {
                let at = offsets[first].as_usize();
                let len = at - offsets[first - 1].as_usize();
                let whole = BATCH * len;
                if (1..=BATCH).all(|j| offsets[first + j].as_usize() == at + j * len)
                    && data[at..at + whole] == data[at - len..at - len + whole]
                {
                    self.keys.extend(std::iter::repeat_n(key, BATCH));
                    continue;
                }
            }
            // A table that fits L1 (a code column's handful of values) is probed row by row:
            // its slots need no prefetch, and the two passes below cost more than the probes.
            if self.dictionary.slots.len() <= SMALL_TABLE {
                let mut last = self.keys.last().copied();
                for row in rows {
                    let (start, end) = (offsets[row].as_usize(), offsets[row + 1].as_usize());
                    let value = (head_in(data, start, end), end - start);
                    let key = match last {
                        Some(key) if value == previous && value.1 <= 16 => key,
                        _ => {
                            previous = value;
                            let bytes = &data[start..end];
                            let value_hash = self.dictionary.hash(bytes, value.0);
                            let found = self.dictionary.at_home(value.0, value.1, value_hash);
                            match found
                                .or_else(|| self.dictionary.intern(bytes, value.0, value_hash))
                            {
                                Some(key) => key,
                                None => return false,
                            }
                        }
                    };
                    self.keys.push(key);
                    last = Some(key);
                }
                continue;
            }
            let mut repeats = 0u32;
            // Prefetch the home slot of every row but the repeats first, so that their cache
            // misses (the table is larger than L2) overlap instead of following one another.
            // (Hashing a batch ahead of the probes of the one before measured no faster.)
            for (i, (row, hashed)) in rows.clone().zip(batch.iter_mut()).enumerate() {
                let (start, end) = (offsets[row].as_usize(), offsets[row + 1].as_usize());
                let value = (head_in(data, start, end), end - start);
                if value == previous && value.1 <= 16 {
                    repeats |= 1 << i;
                    continue;
                }
                previous = value;
                let value_hash = self.dictionary.hash(&data[start..end], value.0);
                prefetch(&self.dictionary.slots[self.dictionary.home(value_hash)]);
                *hashed = (value.0, value_hash);
            }
            for (i, (row, &(value_head, value_hash))) in rows.zip(batch.iter()).enumerate() {
                let key = match self.keys.last() {
                    Some(&key) if repeats & (1 << i) != 0 => Some(key),
                    _ => {
                        let (start, end) = (offsets[row].as_usize(), offsets[row + 1].as_usize());
                        let found = self.dictionary.at_home(value_head, end - start, value_hash);
                        found.or_else(|| {
                            self.dictionary
                                .intern(&data[start..end], value_head, value_hash)
                        })
                    }
                };
                match key {
                    Some(key) => self.keys.push(key),
                    None => return false,
                }
            }
        }
        if nullable {
            self.valid.extend(std::iter::repeat_n(true, array.len()));
        }
        true
    }
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
    let limit = props.column_dictionary_page_size_limit(path);
    if !key_rows(arrays, limit, &mut scratch.keyed)? {
        return Ok(None);
    }
    let keyed = &scratch.keyed;
    let dictionary = &keyed.dictionary;
    let bit_width = rle::bit_width(dictionary.len().saturating_sub(1) as u32);

    // Pages of at most `data_page_row_count_limit` rows whose keys fit the page size limit.
    let by_size =
        props.column_data_page_size_limit(path).saturating_mul(8) / usize::from(bit_width);
    let page_rows = props.data_page_row_count_limit().min(by_size).max(1);
    let truncate = |len: usize, limit: Option<usize>| limit.is_some_and(|l| len > l);

    // At most the dictionary and the keys, bit-packed, plus headers: one allocation.
    let estimate = dictionary.plain_size + keyed.keys.len() * usize::from(bit_width) / 8;
    let Some(mut chunk) = ChunkWriter::new(descr, props, estimate + keyed.rows / 64 + 4096)? else {
        return Ok(None);
    };
    chunk.dictionary_page(dictionary.plain_page()?, dictionary.len())?;

    let seen = &mut scratch.seen;
    seen.clear();
    seen.resize(dictionary.len(), 0);
    // A dictionary much smaller than its chunk is sorted once, so that each page's bounds
    // are found by marking its keys (see [`page_min_max_ranked`]).
    let sorted = &mut scratch.sorted;
    sorted.clear();
    let ranked = dictionary.len() <= RANKED_MOST && dictionary.len() * 64 <= keyed.keys.len();
    if ranked {
        sorted.extend(0..dictionary.len() as u32);
        sorted.sort_unstable_by(|&a, &b| dictionary.compare(a, b));
    }
    let mut stamp = 0u16;
    let mut arrays_rows = RowRanges::new(arrays);
    let mut boundary = BoundaryOrderTracker::new();
    let mut chunk_min_max: Option<(u32, u32)> = None;
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
        let page_min_max = match ranked {
            true => page_min_max_ranked(page_keys, sorted, seen, stamp),
            false => page_min_max(dictionary, page_keys, seen, stamp),
        };
        let min_max = match page_min_max {
            None => None,
            Some((min, max)) => {
                let (min, max) = (dictionary.entry(min), dictionary.entry(max));
                let limit = props.column_index_truncate_length();
                if truncate(min.len(), limit) || truncate(max.len(), limit) {
                    return Ok(None);
                }
                Some((min.to_vec(), max.to_vec()))
            }
        };
        let mut encoded = Vec::with_capacity(values * usize::from(bit_width) / 8 + 16);
        encoded.push(bit_width);
        rle::encode(page_keys, bit_width, &mut encoded);
        chunk.data_page(DataPage {
            rows,
            valid,
            encoding: Encoding::RLE_DICTIONARY,
            values: encoded,
            min_max,
            unencoded_bytes: Some(arrays_rows.value_bytes(row, row + rows)),
        })?;
        if let Some(page) = page_min_max {
            boundary.page(page, |a, b| dictionary.compare(a, b));
            chunk_min_max = Some(match chunk_min_max {
                None => page,
                Some((min, max)) => (
                    smaller(dictionary, min, page.0),
                    larger(dictionary, max, page.1),
                ),
            });
        }
        row += rows;
        key += values;
    }

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
        Some(chunk.nulls()),
        false,
    ));
    chunk.finish(statistics, boundary.order()).map(Some)
}

/// The keys of the page's smallest and largest values (by bytes), comparing 8-byte prefixes
/// held in registers, with branches that settle after the page's first rows. Only a key whose
/// prefix ties the minimum's or maximum's is compared whole, once per page (`seen` marks such
/// keys in page `stamp`), so a column whose values share their first 8 bytes costs one whole
/// comparison per distinct value, not per row. (Marking every key, tie or not, cost 10% of the
/// string export: an unpredictable branch and a second random access per row.)
fn page_min_max(
    dictionary: &Dictionary,
    keys: &[u32],
    seen: &mut [u16],
    stamp: u16,
) -> Option<(u32, u32)> {
    let (&first, rest) = keys.split_first()?;
    let (mut min, mut max) = (first, first);
    let (mut min_head, mut max_head) = (
        dictionary.order[first as usize],
        dictionary.order[first as usize],
    );
    let mut previous = first;
    for &key in rest {
        // A run of one value (an N-D array's outer coordinate) is compared once.
        if key == previous {
            continue;
        }
        previous = key;
        let head = dictionary.order[key as usize];
        // A key passed over here is never smaller than the minimum (which only decreases) nor
        // larger than the maximum (which only increases): comparing it once is enough.
        let ties_min = head == min_head && key != min;
        let ties_max = head == max_head && key != max;
        if head < min_head {
            (min, min_head) = (key, head);
        }
        if head > max_head {
            (max, max_head) = (key, head);
        }
        if (ties_min || ties_max) && seen[key as usize] != stamp {
            seen[key as usize] = stamp;
            if ties_min && dictionary.entry(key) < dictionary.entry(min) {
                min = key;
            }
            if ties_max && dictionary.entry(key) > dictionary.entry(max) {
                max = key;
            }
        }
    }
    Some((min, max))
}

/// The most entries a dictionary sorted for [`page_min_max_ranked`] may have; it must also
/// have at most one entry per 64 rows, so that its sort (about d·log d comparisons) stays
/// small against marking the chunk's rows.
const RANKED_MOST: usize = 4096;

/// [`page_min_max`] for a dictionary whose keys are `sorted` by value: each of the page's
/// keys is marked with `stamp` in `seen` (one store per row, no comparison, no branch on the
/// data), then the sorted keys are walked from either end to the first marked one. A code
/// column of six labels spent a third of its encoding on the comparisons of
/// [`page_min_max`], whose branches cannot settle when consecutive rows differ.
fn page_min_max_ranked(
    keys: &[u32],
    sorted: &[u32],
    seen: &mut [u16],
    stamp: u16,
) -> Option<(u32, u32)> {
    for &key in keys {
        seen[key as usize] = stamp;
    }
    let marked = |key: &&u32| seen[**key as usize] == stamp;
    let min = sorted.iter().find(marked)?;
    let max = sorted.iter().rev().find(marked)?;
    Some((*min, *max))
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
