//! Fetching ahead: while a partition decodes one work unit, the encoded chunks of its next
//! units are already being requested, up to `io_concurrency` units and a byte budget. This is
//! what hides a remote store's latency; units come back in order.
//!
//! A local store's units are fetched by batches, each one blocking call
//! (`ZarrStore::get_many`), and the window refilled once half of it is consumed, so that a
//! store of many small chunks does not pay a thread hand-off per chunk. The batches grow while
//! the files come as fast as from the page cache and shrink, down to one unit, when they come
//! slower (a cold disk, a network file system), where concurrent reads hide the latency.
//!
//! A scan that will read every unit it planned starts with the whole window. One that may stop
//! early (`LIMIT`, a TopK or join whose dynamic filter prunes the rest) starts at one unit and
//! doubles with each unit consumed, so it requests little more than it reads.
//!
//! With string filters evaluated on the scan (late materialisation), the filter columns are
//! always fetched ahead; the other columns only once most recent units had matching rows, as
//! fetching them for units without matches would be wasted.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use futures::future::{BoxFuture, join_all, try_join_all};
use futures::stream::FuturesOrdered;

use crate::error::{Result, ZarrError};
use crate::limits::Limits;
use crate::node::ArrayNode;
use crate::scan::fetch::{Objects, ReadCounts, ShardIndexes, fetch_chunks, fetch_whole_chunks};
use crate::scan::grid::{ReadGrid, UnitGrid};
use crate::store::ZarrStore;

/// Encoded bytes a partition may hold in fetches ahead from a remote store, estimated from the
/// chunks' declared decoded sizes (encoded chunks are rarely larger): enough to keep the
/// requests of many units in flight, which is what hides a store's latency. At least one unit
/// is always fetched.
const PREFETCH_BYTES: u64 = 256 << 20;

/// The same from a local store, whose reads do not wait on a network: enough for the next
/// batch while one decodes (fetching further ahead only holds memory).
const LOCAL_PREFETCH_BYTES: u64 = 32 << 20;

/// One column the prefetcher fetches: its projection slot, its array and its shard indexes.
#[derive(Debug, Clone)]
pub(crate) struct PrefetchColumn {
    /// The projection slot (its [`crate::scan::read::ColumnCache`]).
    pub slot: usize,
    /// The array whose chunks the unit's box intersects.
    pub array: Arc<ArrayNode>,
    /// Shard indexes shared with the slot's cache.
    pub shard_indexes: Arc<ShardIndexes>,
    /// Fetched ahead always (a filter column, or every column without filters); otherwise
    /// only while [`Prefetcher::fetch_all_columns`] is on.
    pub always: bool,
}

/// A unit whose chunks have been fetched.
pub(crate) struct FetchedUnit {
    /// The unit id.
    pub id: u64,
    /// Per column: its slot and the objects fetched.
    pub objects: Vec<(usize, Objects)>,
    /// The requests' work.
    pub counts: ReadCounts,
}

/// A partition's fetches ahead.
pub(crate) struct Prefetcher {
    store: ZarrStore,
    limits: Limits,
    grid: Arc<UnitGrid>,
    columns: Vec<PrefetchColumn>,
    max_window: usize,
    window: usize,
    /// Requests in flight, each of one unit or (a local store's) of several.
    in_flight: FuturesOrdered<BoxFuture<'static, Result<Fetched>>>,
    /// Units fetched (or their errors) and not yet handed out, in order.
    ready: VecDeque<Result<FetchedUnit>>,
    /// Whether units are fetched by batches: a local store's, without sharded arrays.
    batched: bool,
    /// Units per batch of a local store (see the module's documentation).
    batch_units: usize,
    /// Declared bytes of each unit requested and not yet handed out, in order.
    declared: VecDeque<u64>,
    in_flight_bytes: u64,
    /// The most `in_flight_bytes` may reach: [`PREFETCH_BYTES`], or [`LOCAL_PREFETCH_BYTES`].
    budget: u64,
    /// Per column, the last chunk requested: the next unit does not request it again when it
    /// shares it, as the decoded chunk is kept by the column's cache.
    last_requested: Vec<Option<Vec<u64>>>,
    /// Whether the columns that are not `always` are fetched ahead too.
    all_columns: bool,
}

impl Prefetcher {
    /// A prefetcher of `columns` over `grid`'s units, keeping up to `io_concurrency` in flight
    /// within `read_ahead_bytes` (the store kind's default when `None`); from the start when
    /// `reads_all` (the scan reads every unit it is given), otherwise from one unit, doubling.
    pub(crate) fn new(
        store: ZarrStore,
        limits: Limits,
        grid: Arc<UnitGrid>,
        columns: Vec<PrefetchColumn>,
        (io_concurrency, read_ahead_bytes): (usize, Option<u64>),
        reads_all: bool,
    ) -> Self {
        let n = columns.len();
        let max_window = io_concurrency.max(1);
        let batched = store.reads_many_at_once() && columns.iter().all(|c| c.array.inner.is_none());
        let budget = read_ahead_bytes.unwrap_or(match store.is_local() {
            true => LOCAL_PREFETCH_BYTES,
            false => PREFETCH_BYTES,
        });
        Self {
            store,
            limits,
            grid,
            columns,
            max_window,
            window: if reads_all { max_window } else { 1 },
            in_flight: FuturesOrdered::new(),
            ready: VecDeque::new(),
            batched,
            batch_units: FIRST_BATCH_UNITS,
            declared: VecDeque::new(),
            in_flight_bytes: 0,
            budget,
            last_requested: vec![None; n],
            all_columns: false,
        }
    }

    /// Fetches the columns that are not `always` ahead too (from the next unit requested).
    pub(crate) fn fetch_all_columns(&mut self, on: bool) {
        self.all_columns = on;
    }

    /// The next unit of `units` that `keep` accepts, with its chunks fetched; `None` at the end.
    /// Units `keep` rejects are never fetched.
    pub(crate) async fn next(
        &mut self,
        units: &mut impl Iterator<Item = u64>,
        mut keep: impl FnMut(u64) -> Result<bool>,
    ) -> Option<Result<FetchedUnit>> {
        if let Err(e) = self.refill(units, &mut keep) {
            return Some(Err(e));
        }
        while self.ready.is_empty() {
            match self.in_flight.next().await? {
                Ok(fetched) => {
                    if let Some(fast) = fetched.from_memory {
                        self.batch_units = next_batch_units(self.batch_units, fast);
                    }
                    self.ready.extend(fetched.units);
                }
                Err(e) => return Some(Err(e)),
            }
        }
        // After an error the scan's stream ends: what is left in flight is not counted down.
        let next = self.ready.pop_front()?;
        if let Some(bytes) = self.declared.pop_front() {
            self.in_flight_bytes = self.in_flight_bytes.saturating_sub(bytes);
        }
        self.window = (self.window * 2).min(self.max_window);
        Some(next)
    }

    /// Requests the next units of `units` that `keep` accepts, up to the window and the byte
    /// budget. Batched, the window is refilled once half of it is consumed, so that the
    /// batches are not of one unit each.
    fn refill(
        &mut self,
        units: &mut impl Iterator<Item = u64>,
        keep: &mut impl FnMut(u64) -> Result<bool>,
    ) -> Result<()> {
        let pending = self.declared.len();
        if self.batched && pending > 0 && pending > self.window / 2 {
            return Ok(());
        }
        let mut batch = Vec::new();
        let mut batch_bytes = 0u64;
        // Units requested and not handed out, with the batch being gathered.
        while self.declared.len() + batch.len() < self.window
            && (self.declared.is_empty() && batch.is_empty()
                || self.in_flight_bytes.saturating_add(batch_bytes) < self.budget)
        {
            let Some(id) = units.next() else { break };
            if !keep(id)? {
                continue;
            }
            let plan = self.plan(id)?;
            batch_bytes = batch_bytes.saturating_add(plan.declared);
            batch.push(plan);
            if !self.batched || batch.len() >= self.batch_units || batch_bytes >= BATCH_BYTES {
                self.request(std::mem::take(&mut batch));
                batch_bytes = 0;
            }
        }
        if !batch.is_empty() {
            self.request(batch);
        }
        Ok(())
    }

    /// What unit `id` needs fetched: per column fetched ahead, the chunks its box intersects
    /// that the column's previous unit did not request.
    fn plan(&mut self, id: u64) -> Result<UnitPlan> {
        let region = self.grid.region(id)?;
        let extent: Vec<u64> = region.iter().map(|r| r.end - r.start).collect();
        let mut columns = Vec::with_capacity(self.columns.len());
        let mut declared = 0u64;
        for (column, last) in self.columns.iter().zip(&mut self.last_requested) {
            if !column.always && !self.all_columns {
                // Read on demand, if at all: the column's cache may not keep its last chunk.
                *last = None;
                continue;
            }
            let chunks = ReadGrid::of(&column.array).intersecting(&region)?;
            let new_last = chunks.last().cloned();
            let wanted: Vec<Vec<u64>> = chunks
                .into_iter()
                .filter(|c| last.as_ref() != Some(c))
                .collect();
            declared = declared.saturating_add(column.array.declared_bytes(&extent));
            *last = new_last;
            columns.push((column.clone(), wanted));
        }
        Ok(UnitPlan {
            id,
            columns,
            declared,
        })
    }

    /// Starts fetching the chunks of the units of `batch`: in one call to the store when
    /// batched, otherwise each unit's columns concurrently.
    fn request(&mut self, batch: Vec<UnitPlan>) {
        for unit in &batch {
            self.declared.push_back(unit.declared);
            self.in_flight_bytes = self.in_flight_bytes.saturating_add(unit.declared);
        }
        let (store, limits, together) = (self.store.clone(), self.limits, self.batched);
        self.in_flight.push_back(Box::pin(async move {
            if together {
                fetch_together(&store, &limits, batch).await
            } else {
                let fetches = batch
                    .into_iter()
                    .map(|unit| fetch_unit(&store, &limits, unit));
                Ok(Fetched {
                    units: join_all(fetches).await,
                    from_memory: None,
                })
            }
        }));
    }
}

/// Units per batch of a local store: at first, and at most...
const FIRST_BATCH_UNITS: usize = 4;
const MAX_BATCH_UNITS: usize = 32;
/// ...and about this many declared bytes (a unit larger than this is a batch of its own), so
/// that decoding starts soon.
const BATCH_BYTES: u64 = 8 << 20;

/// A batch read as from the page cache takes at most this per file...
const MEMORY_PER_FILE: Duration = Duration::from_micros(50);
/// ...plus its bytes at this rate (a copy from the page cache runs several times faster).
const MEMORY_BYTES_PER_SECOND: f64 = 1e9;

/// Whether a batch of `files` files and `bytes` bytes read in `elapsed` came as from memory.
fn read_as_from_memory(elapsed: Duration, files: usize, bytes: u64) -> bool {
    let files = u32::try_from(files).unwrap_or(u32::MAX);
    let allowed = MEMORY_PER_FILE
        .saturating_mul(files)
        .saturating_add(Duration::from_secs_f64(
            bytes as f64 / MEMORY_BYTES_PER_SECOND,
        ));
    elapsed <= allowed
}

/// The next batches' units: twice as many after a batch read as from memory (up to
/// [`MAX_BATCH_UNITS`]), half as many (down to one) after a slower one.
fn next_batch_units(units: usize, from_memory: bool) -> usize {
    if from_memory {
        (units * 2).min(MAX_BATCH_UNITS)
    } else {
        (units / 2).max(1)
    }
}

/// What one request fetched: its units (each, or its own error), in order, and for a local
/// store's batch whether its files came as from memory.
struct Fetched {
    units: Vec<Result<FetchedUnit>>,
    from_memory: Option<bool>,
}

/// The chunks one unit needs fetched, per column.
struct UnitPlan {
    id: u64,
    columns: Vec<(PrefetchColumn, Vec<Vec<u64>>)>,
    /// The unit's declared (decoded) bytes, for the budget.
    declared: u64,
}

/// Fetches one unit's columns concurrently.
async fn fetch_unit(store: &ZarrStore, limits: &Limits, unit: UnitPlan) -> Result<FetchedUnit> {
    let fetches = unit.columns.iter().map(|(column, wanted)| async move {
        let mut counts = ReadCounts::default();
        let objects = fetch_chunks(
            store,
            &column.array,
            wanted,
            limits,
            &column.shard_indexes,
            &mut counts,
        )
        .await?;
        Ok::<_, ZarrError>((column.slot, objects, counts))
    });
    let mut counts = ReadCounts::default();
    let mut objects = Vec::with_capacity(unit.columns.len());
    for (slot, fetched, column_counts) in try_join_all(fetches).await? {
        counts.add(&column_counts);
        objects.push((slot, fetched));
    }
    Ok(FetchedUnit {
        id: unit.id,
        objects,
        counts,
    })
}

/// Fetches the whole chunks of every unit and column of `batch` in one call to the store.
async fn fetch_together(
    store: &ZarrStore,
    limits: &Limits,
    batch: Vec<UnitPlan>,
) -> Result<Fetched> {
    let wanted: Vec<(&ArrayNode, &[Vec<u64>])> = batch
        .iter()
        .flat_map(|unit| unit.columns.iter())
        .map(|(column, chunks)| (column.array.as_ref(), chunks.as_slice()))
        .collect();
    let (fetched, read_time) = fetch_whole_chunks(store, &wanted, limits).await?;
    let mut fetched = fetched.into_iter();
    let mut total = ReadCounts::default();
    let mut units = Vec::with_capacity(batch.len());
    for unit in &batch {
        let columns = fetched.by_ref().take(unit.columns.len());
        let mut counts = ReadCounts::default();
        let mut objects = Vec::with_capacity(unit.columns.len());
        let mut error = None;
        for ((column, _), result) in unit.columns.iter().zip(columns) {
            match result {
                Ok((column_objects, column_counts)) => {
                    counts.add(&column_counts);
                    objects.push((column.slot, column_objects));
                }
                Err(e) => {
                    error.get_or_insert(e);
                }
            }
        }
        total.add(&counts);
        units.push(match error {
            Some(e) => Err(e),
            None => Ok(FetchedUnit {
                id: unit.id,
                objects,
                counts,
            }),
        });
    }
    // A batch that read no file says nothing of the files' speed.
    let files = total.chunks_read + total.chunks_missing;
    let from_memory = read_time
        .filter(|_| files > 0)
        .map(|t| read_as_from_memory(t, files, total.bytes_read));
    Ok(Fetched { units, from_memory })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Page-cache speeds keep a batch "from memory"; a millisecond per small file does not.
    #[test]
    fn a_batch_is_from_memory_only_at_page_cache_speed() {
        let ms = Duration::from_millis;
        // 32 files of 40 KB in 1 ms (31 µs each): the page cache.
        assert!(read_as_from_memory(ms(1), 32, 32 * 40_000));
        // The same in 32 ms (1 ms each): a network file system.
        assert!(!read_as_from_memory(ms(32), 32, 32 * 40_000));
        // One file of 100 MB in 50 ms (2 GB/s): memory; in 500 ms: a disk.
        assert!(read_as_from_memory(ms(50), 1, 100_000_000));
        assert!(!read_as_from_memory(ms(500), 1, 100_000_000));
        assert!(read_as_from_memory(Duration::ZERO, usize::MAX, u64::MAX));
    }

    /// Batches double up to the most and halve down to one.
    #[test]
    fn batches_grow_from_memory_and_shrink_otherwise() {
        let mut units = FIRST_BATCH_UNITS;
        for _ in 0..10 {
            units = next_batch_units(units, true);
        }
        assert_eq!(units, MAX_BATCH_UNITS);
        units = next_batch_units(units, false);
        assert_eq!(units, MAX_BATCH_UNITS / 2);
        for _ in 0..10 {
            units = next_batch_units(units, false);
        }
        assert_eq!(units, 1);
        assert_eq!(next_batch_units(1, true), 2);
    }
}
