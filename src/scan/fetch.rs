//! Fetching encoded chunks, concurrently and without decoding: whole chunk objects, and for
//! sharded arrays the shard index (read once per shard, shared by concurrent fetches) and the
//! byte ranges of only the inner chunks needed, coalesced into few range requests.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::num::NonZeroU64;
use std::ops::Range;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use futures::future::try_join_all;
use object_store::GetRange;
use tokio::sync::OnceCell;

use crate::error::{Result, ZarrError};
use crate::limits::Limits;
use crate::node::ArrayNode;

use crate::store::ZarrStore;

/// Encoded objects by grid indices (inner chunk indices for sharded arrays); `None`: absent,
/// the chunk reads as the fill value.
pub(crate) type Objects = HashMap<Vec<u64>, Option<Bytes>>;

/// Byte ranges of a shard's inner chunks (`None`: absent).
pub(crate) type ShardEntries = Vec<Option<Range<u64>>>;

/// Shard indexes read so far by one column of one partition, shared by its concurrent fetches
/// so that each shard's index is requested once. Keeps the most recent shards only.
#[derive(Debug, Default)]
pub(crate) struct ShardIndexes {
    cells: Mutex<IndexCells>,
}

type IndexCell = Arc<OnceCell<Option<Arc<ShardEntries>>>>;

/// The cells by shard, and the shards in the order they were first asked for.
type IndexCells = (HashMap<Vec<u64>, IndexCell>, VecDeque<Vec<u64>>);

/// Shard indexes a column keeps: enough for every fetch in flight to find its shard's.
const SHARD_INDEXES_KEPT: usize = 256;

impl ShardIndexes {
    fn cell(&self, shard: &[u64]) -> IndexCell {
        // A poisoned lock only means another fetch panicked; the map itself is still valid.
        let mut guard = self.cells.lock().unwrap_or_else(|p| p.into_inner());
        let (cells, order) = &mut *guard;
        if let Some(cell) = cells.get(shard) {
            return cell.clone();
        }
        if order.len() >= SHARD_INDEXES_KEPT
            && let Some(oldest) = order.pop_front()
        {
            cells.remove(&oldest);
        }
        let cell = IndexCell::default();
        cells.insert(shard.to_vec(), cell.clone());
        order.push_back(shard.to_vec());
        cell
    }
}

/// Fetches the encoded objects of `chunks` (grid indices of `node`'s read grid) concurrently
/// (a local store's in one blocking call), counting the requests' work in `counts`.
pub(crate) async fn fetch_chunks(
    store: &ZarrStore,
    node: &ArrayNode,
    chunks: &[Vec<u64>],
    limits: &Limits,
    shard_indexes: &ShardIndexes,
    counts: &mut ReadCounts,
) -> Result<Objects> {
    if node.inner.is_some() {
        return fetch_inner_chunks(store, node, chunks, limits, shard_indexes, counts).await;
    }
    let (mut fetched, _) = fetch_whole_chunks(store, &[(node, chunks)], limits).await?;
    let (objects, fetch_counts) = fetched.pop().unwrap_or_else(|| Ok(Default::default()))?;
    counts.add(&fetch_counts);
    Ok(objects)
}

/// The objects of one `(array, chunks)` request and the requests' work, or the request's
/// first error.
pub(crate) type WholeChunks = Result<(Objects, ReadCounts)>;

/// Fetches the whole chunks of several unsharded arrays at once, one [`ZarrStore::get_many`]
/// for all (a local store reads them in one blocking call): per `(array, chunks)` of `wanted`,
/// its objects and the requests' work, or its own error (a chunk over the limit, a failed
/// read), which fails no other request; and a local store's read time.
pub(crate) async fn fetch_whole_chunks(
    store: &ZarrStore,
    wanted: &[(&ArrayNode, &[Vec<u64>])],
    limits: &Limits,
) -> Result<(Vec<WholeChunks>, Option<Duration>)> {
    // Per request, its keys (`None`: no object can hold the chunk), or why none is fetched.
    let planned: Vec<Result<Vec<Option<String>>>> = wanted
        .iter()
        .map(|(node, chunks)| {
            if node.inner.is_some() {
                return Err(ZarrError::internal(format!(
                    "reading {} by whole chunks",
                    node.display
                )));
            }
            chunks
                .iter()
                .map(|indices| {
                    // The declared size is checked before anything is fetched.
                    check_declared(node, indices, limits)?;
                    stored_key(node, indices)
                })
                .collect()
        })
        .collect();
    let keys: Vec<String> = planned
        .iter()
        .flatten()
        .flatten()
        .flatten()
        .cloned()
        .collect();
    let many = store.get_many(keys, limits.chunk).await?;
    let mut fetched = many.objects.into_iter();
    let mut results = Vec::with_capacity(wanted.len());
    for ((_, chunks), keys) in wanted.iter().zip(planned) {
        let keys = match keys {
            Ok(keys) => keys,
            Err(e) => {
                results.push(Err(e));
                continue;
            }
        };
        let mut objects = Objects::with_capacity(chunks.len());
        let mut counts = ReadCounts::default();
        let mut error = None;
        for (indices, key) in chunks.iter().zip(&keys) {
            let object = match key {
                Some(_) => match fetched.next() {
                    Some(object) => object,
                    None => Err(ZarrError::internal("fewer objects fetched than asked for")),
                },
                None => Ok(None),
            };
            match object {
                Ok(object) => {
                    match &object {
                        Some(o) => {
                            counts.chunks_read += 1;
                            counts.bytes_read += o.len() as u64;
                        }
                        None => counts.chunks_missing += 1,
                    }
                    objects.insert(indices.clone(), object);
                }
                Err(e) => {
                    error.get_or_insert(e);
                }
            }
        }
        results.push(match error {
            Some(e) => Err(e),
            None => Ok((objects, counts)),
        });
    }
    Ok((results, many.local_read_time))
}

/// The inner chunks `chunks` of a sharded array: per shard, its index (once), then one
/// coalesced range request for the inner chunks it holds.
async fn fetch_inner_chunks(
    store: &ZarrStore,
    node: &ArrayNode,
    chunks: &[Vec<u64>],
    limits: &Limits,
    shard_indexes: &ShardIndexes,
    counts: &mut ReadCounts,
) -> Result<Objects> {
    let inner = node
        .inner
        .as_ref()
        .ok_or_else(|| ZarrError::internal(format!("reading {} by inner chunks", node.display)))?;
    // Inner chunks grouped by shard, with their position inside it (C order).
    let mut by_shard: BTreeMap<Vec<u64>, Vec<(Vec<u64>, usize)>> = BTreeMap::new();
    for indices in chunks {
        let (shard, within) = inner.locate(indices);
        let within = usize::try_from(within).map_err(|_| {
            ZarrError::metadata(&node.display, "an inner chunk position overflows usize")
        })?;
        by_shard
            .entry(shard)
            .or_default()
            .push((indices.clone(), within));
    }
    let fetches = by_shard.into_iter().map(|(shard, wanted)| async move {
        let mut counts = ReadCounts::default();
        let (key, shard_key) = chunk_key(node, &shard)?;
        let chunk_error = |message: String| ZarrError::Chunk {
            array: node.display.clone(),
            chunk: shard_key.clone(),
            message,
        };
        let cell = shard_indexes.cell(&shard);
        let entries = cell
            .get_or_try_init(|| async {
                let index_size = inner
                    .layout
                    .index_size()
                    .ok_or_else(|| chunk_error("the shard index size overflows u64".into()))?;
                let range = if inner.layout.at_start {
                    GetRange::Bounded(0..index_size)
                } else {
                    GetRange::Suffix(index_size)
                };
                match store.get_range(&key, range, limits.chunk).await? {
                    None => {
                        counts.chunks_missing += 1;
                        Ok::<_, ZarrError>(None)
                    }
                    Some((bytes, len)) => {
                        counts.chunks_read += 1;
                        counts.bytes_read += bytes.len() as u64;
                        let parsed = inner.layout.parse(&bytes, len).map_err(&chunk_error)?;
                        Ok(Some(Arc::new(parsed)))
                    }
                }
            })
            .await?
            .clone();
        let mut objects: Vec<(Vec<u64>, Option<Bytes>)> = Vec::with_capacity(wanted.len());
        let mut present: Vec<(Vec<u64>, Range<u64>)> = Vec::new();
        for (indices, within) in wanted {
            match entries
                .as_ref()
                .and_then(|e| e.get(within).cloned().flatten())
            {
                Some(range) => present.push((indices, range)),
                None => objects.push((indices, None)),
            }
        }
        if !present.is_empty() {
            let ranges: Vec<Range<u64>> = present.iter().map(|(_, r)| r.clone()).collect();
            let fetched = store
                .get_ranges(&key, &ranges, limits.chunk)
                .await?
                .ok_or_else(|| chunk_error("the shard disappeared while it was read".into()))?;
            for ((indices, range), bytes) in present.into_iter().zip(fetched) {
                let expected = range.end - range.start;
                if bytes.len() as u64 != expected {
                    return Err(chunk_error(format!(
                        "truncated shard: {} of an inner chunk's {expected} bytes",
                        bytes.len()
                    )));
                }
                counts.inner_chunks_read += 1;
                counts.bytes_read += expected;
                objects.push((indices, Some(bytes)));
            }
        }
        Ok::<_, ZarrError>((objects, counts))
    });
    let mut objects = Objects::with_capacity(chunks.len());
    for (fetched, shard_counts) in try_join_all(fetches).await? {
        counts.add(&shard_counts);
        objects.extend(fetched);
    }
    Ok(objects)
}

/// Counters of the work done while reading.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct ReadCounts {
    /// Chunk objects fetched and decoded.
    pub chunks_read: usize,
    /// Chunk objects that were absent.
    pub chunks_missing: usize,
    /// Encoded bytes fetched (shard indexes included).
    pub bytes_read: u64,
    /// Inner chunks of shards fetched and decoded.
    pub inner_chunks_read: usize,
}

impl ReadCounts {
    /// Adds `other`'s counts to these.
    pub(crate) fn add(&mut self, other: &ReadCounts) {
        self.chunks_read += other.chunks_read;
        self.chunks_missing += other.chunks_missing;
        self.bytes_read += other.bytes_read;
        self.inner_chunks_read += other.inner_chunks_read;
    }
}

/// The chunk's key in the store, and relative to the array (as shown in errors).
pub(crate) fn chunk_key(node: &ArrayNode, indices: &[u64]) -> Result<(String, String)> {
    // A netCDF character array joined into strings reads its character array's chunks.
    let full = node.chunk_key(indices)?;
    let relative = match full.strip_prefix(node.path.as_str()) {
        Some(rest) if !node.path.is_empty() => rest.trim_start_matches('/').to_string(),
        _ => full.clone(),
    };
    Ok((full, relative))
}

/// The key of the object holding the chunk at `indices`, or `None` when no object can: a
/// netCDF character array of no characters has no chunks along its string length, so the key
/// its joined array would read is outside its chunk grid (and an object there, were one
/// stored, is no part of the array). No key outside the grid it belongs to is read.
fn stored_key(node: &ArrayNode, indices: &[u64]) -> Result<Option<String>> {
    let (grid, at) = match &node.chunk_keys_of {
        Some(characters) => (
            characters.chunk_grid_shape().to_vec(),
            [indices, &[0]].concat(),
        ),
        None => (node.zarrs()?.chunk_grid_shape().to_vec(), indices.to_vec()),
    };
    let inside = grid.len() == at.len() && at.iter().zip(&grid).all(|(i, n)| i < n);
    Ok(inside
        .then(|| chunk_key(node, indices))
        .transpose()?
        .map(|(key, _)| key))
}

/// Checks the declared decoded size of the chunk at `indices` against the table's limit,
/// before anything is fetched.
pub(crate) fn check_declared(node: &ArrayNode, indices: &[u64], limits: &Limits) -> Result<()> {
    let (key, shape) = chunk_shape(node, indices)?;
    check_declared_shape(node, &key, &shape, limits).map(|_| ())
}

/// The key (relative to the array, as shown in errors) and declared shape of the chunk at
/// `indices` of `node`'s chunk grid.
pub(crate) fn chunk_shape(node: &ArrayNode, indices: &[u64]) -> Result<(String, Vec<NonZeroU64>)> {
    let (_, key) = chunk_key(node, indices)?;
    let shape = node
        .zarrs()?
        .chunk_shape(indices)
        .map_err(|e| ZarrError::Chunk {
            array: node.display.clone(),
            chunk: key.clone(),
            message: e.to_string(),
        })?;
    Ok((key, shape))
}

/// The element count of a chunk (or inner chunk) of `shape` known by `key`, once its declared
/// decoded size is within the table's `max_chunk_bytes`.
pub(crate) fn check_declared_shape(
    node: &ArrayNode,
    key: &str,
    shape: &[NonZeroU64],
    limits: &Limits,
) -> Result<u64> {
    let num_elements = shape
        .iter()
        .try_fold(1u64, |acc, d| acc.checked_mul(d.get()));
    // An array of a type we do not read has no chunks to size: its error, not a size.
    node.zarrs()?;
    let declared = num_elements.and_then(|n| n.checked_mul(node.element_bytes()));
    let location = format!("array {}, chunk {key}", node.display);
    // An overflowing size (`None`) is refused here too.
    limits.chunk.check(&location, "decoded chunk", declared)?;
    num_elements.ok_or_else(|| ZarrError::internal(format!("sizing {location}")))
}
