//! One partition's stream: for each work unit (a chunk of the table's grid array), read the
//! projected arrays' elements in that box, then emit RecordBatches of at most `batch_size`
//! rows, transcoding each slice straight into the Arrow arrays that leave the scan.

use std::ops::Range;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, BooleanArray, RecordBatch, RecordBatchOptions, UInt64Array};
use arrow::buffer::BooleanBuffer;
use arrow::compute::{filter, take};
use arrow::datatypes::{Field, SchemaRef};
use arrow::error::ArrowError;
use datafusion::physical_expr::utils::collect_columns;
use datafusion::physical_plan::PhysicalExpr;
use datafusion::physical_plan::metrics::Count;

use crate::error::{Result, ZarrError};
use crate::node::{ArrayNode, ElementKind};
use crate::progress::ScanProgress;
use crate::scan::DecodedFilter;
use crate::scan::convert::{to_arrow, to_arrow_shared};
use crate::scan::coordinates::{contiguous_coords, expand};
use crate::scan::dynamic::{DynamicPruner, DynamicValueFilters};
use crate::scan::fetch::{ReadCounts, chunk_key};
use crate::scan::fetch_ahead::{PrefetchColumn, Prefetcher};
use crate::scan::grid::{ReadGrid, UnitGrid};
use crate::scan::raw_filter::{RawFilter, select_rows};
use crate::scan::read::{ColumnCache, Elements, Region, read_region};
use crate::table::{ColumnSource, TableModel, ValuePlan};

/// Metrics a partition updates.
#[derive(Debug, Clone)]
pub(crate) struct ScanMetrics {
    /// Chunk objects fetched and decoded.
    pub chunks_read: Count,
    /// Chunk objects found absent (read as the fill value).
    pub chunks_missing: Count,
    /// Encoded bytes fetched, shard indexes included.
    pub bytes_read: Count,
    /// Inner chunks of shards fetched and decoded.
    pub inner_chunks_read: Count,
    /// Table rows decoded.
    pub rows_decoded: Count,
    /// Table rows transcoded into the batches that leave the scan.
    pub rows_transcoded: Count,
    /// Work units skipped while running by the dynamic filters.
    pub chunks_pruned: Count,
    /// Work units none of whose rows passed the filters the scan evaluates: their other
    /// columns were neither fetched nor decoded.
    pub units_without_matches: Count,
    /// Per output value column no filter reads (its model column index): the chunks not
    /// fetched and the decoded bytes not produced because the filters matched no row of a
    /// unit (`chunks_skipped{column=…}`, `bytes_not_decoded{column=…}`).
    pub skipped: Vec<SkippedColumn>,
    /// Progress shared with a display, if any.
    pub progress: Option<Arc<dyn ScanProgress>>,
}

/// What a column did not read because no row of some units passed the filters.
#[derive(Debug, Clone)]
pub(crate) struct SkippedColumn {
    /// The model's column.
    pub column: usize,
    /// Its chunks not fetched.
    pub chunks: Count,
    /// Its decoded bytes not produced (fixed-size elements only).
    pub bytes: Count,
}

/// The state of one partition's scan.
pub(crate) struct PartitionScan {
    model: Arc<TableModel>,
    grid: Arc<UnitGrid>,
    /// The model's columns this scan reads: the projected ones (its output, in order), then
    /// those only its filters read.
    columns: Vec<usize>,
    /// How many of `columns` are output.
    outputs: usize,
    schema: SchemaRef,
    units: Box<dyn Iterator<Item = u64> + Send>,
    batch_size: usize,
    remaining: Option<usize>,
    caches: Vec<ColumnCache>,
    current: Option<Unit>,
    metrics: ScanMetrics,
    raw_filters: Arc<Vec<RawFilter>>,
    decoded_filters: Arc<Vec<DecodedFilter>>,
    pruner: Option<DynamicPruner>,
    /// The dynamic filters on value columns, evaluated with the scan's own.
    dynamic_values: DynamicValueFilters,
    /// The value columns the dynamic filters read.
    dynamic_columns: Vec<usize>,
    prefetcher: Prefetcher,
    /// Whether each of the last 16 units had rows passing the filters (bit 0: the latest):
    /// when most did, the other columns are fetched ahead too.
    recent_matches: u16,
    /// Whether the end of the partition checked the store's version.
    version_checked: bool,
}

enum UnitColumn {
    Index {
        dim: usize,
    },
    Coordinate {
        dim: usize,
        values: ArrayRef,
    },
    /// The values of an array along the unit's dimensions `dims`, in C order over them.
    Broadcast {
        dims: Vec<usize>,
        values: ArrayRef,
    },
    Value {
        node: Arc<ArrayNode>,
        /// The table column, whose plan converts the elements.
        column: usize,
        region: Region,
        /// The unit's rows already converted (sharing the region's buffer) to evaluate a
        /// filter: the rows that pass are taken from them rather than converted again.
        converted: Option<ArrayRef>,
    },
}

/// The rows of a unit that passed its filters.
struct Selection {
    /// One bit per unit row.
    mask: BooleanBuffer,
    /// The passing rows, in order.
    rows: Vec<u32>,
}

struct Unit {
    id: u64,
    origin: Vec<u64>,
    extent: Vec<u64>,
    /// Rows to emit: all of the unit's, or those in `selection`.
    rows: usize,
    pos: usize,
    columns: Vec<UnitColumn>,
    /// The unit rows that passed the filters, unless every row did.
    selection: Option<Selection>,
}

/// What every partition of a scan shares.
#[derive(Debug, Clone)]
pub(crate) struct ScanSpec {
    /// The table.
    pub model: Arc<TableModel>,
    /// Its work units.
    pub units: Arc<UnitGrid>,
    /// Column indices of the model to produce.
    pub projection: Vec<usize>,
    /// The projected schema.
    pub schema: SchemaRef,
    /// String predicates evaluated on UTF-32 code units.
    pub raw_filters: Arc<Vec<RawFilter>>,
    /// Predicates evaluated on the decoded values of value columns.
    pub decoded_filters: Arc<Vec<DecodedFilter>>,
    /// At most this many rows.
    pub limit: Option<usize>,
    /// Filters DataFusion updates while the query runs (TopK, hash join), for pruning.
    pub dynamic_filters: Vec<Arc<dyn PhysicalExpr>>,
}

impl PartitionScan {
    /// A scan of the chunk ids `units` of the model's grid array, in that order.
    pub(crate) fn new(
        spec: ScanSpec,
        units: Box<dyn Iterator<Item = u64> + Send>,
        batch_size: usize,
        metrics: ScanMetrics,
    ) -> Self {
        // The projected columns, then any other column a filter reads.
        let mut read = spec.projection.clone();
        let filter_columns = (spec.raw_filters.iter().map(|f| f.column))
            .chain(spec.decoded_filters.iter().flat_map(|f| f.columns.clone()));
        for c in filter_columns {
            if !read.contains(&c) {
                read.push(c);
            }
        }
        let caches: Vec<ColumnCache> = read.iter().map(|_| ColumnCache::default()).collect();
        let pruner = DynamicPruner::new(&spec.model, spec.schema.clone(), &spec.dynamic_filters);
        let dynamic_values = DynamicValueFilters::new(spec.model.clone(), &spec.dynamic_filters);
        // The value columns' chunks are fetched ahead; index columns need no I/O and coordinate
        // arrays are small and read when reached. With string filters, their columns always.
        // The value columns dynamic filters read, as they may come to be evaluated per unit.
        let dynamic_columns: Vec<usize> = (spec.dynamic_filters.iter())
            .flat_map(collect_columns)
            .filter_map(|c| {
                let i = spec.model.columns.iter().position(|m| m.name == c.name())?;
                matches!(spec.model.columns[i].source, ColumnSource::Value { .. }).then_some(i)
            })
            .collect();
        let filtered: Vec<usize> = (spec.raw_filters.iter().map(|f| f.column))
            .chain(spec.decoded_filters.iter().flat_map(|f| f.columns.clone()))
            .chain(dynamic_columns.iter().copied())
            .collect();
        let columns = read
            .iter()
            .enumerate()
            .filter_map(|(slot, &c)| match &spec.model.columns[c].source {
                ColumnSource::Value { array } => Some(PrefetchColumn {
                    slot,
                    array: array.clone(),
                    shard_indexes: caches[slot].shard_indexes.clone(),
                    always: filtered.is_empty() || filtered.contains(&c),
                }),
                _ => None,
            })
            .collect();
        // Without a limit or dynamic filters every unit given is read: fetch ahead at once.
        let reads_all = spec.limit.is_none() && spec.dynamic_filters.is_empty();
        let prefetcher = Prefetcher::new(
            spec.model.store.clone(),
            spec.model.limits,
            spec.units.clone(),
            columns,
            (
                spec.model.options.io_concurrency,
                spec.model.options.read_ahead_bytes,
            ),
            reads_all,
        );
        Self {
            model: spec.model,
            grid: spec.units,
            outputs: spec.projection.len(),
            columns: read,
            schema: spec.schema,
            units,
            batch_size: batch_size.max(1),
            remaining: spec.limit,
            caches,
            current: None,
            metrics,
            raw_filters: spec.raw_filters,
            decoded_filters: spec.decoded_filters,
            pruner,
            dynamic_values,
            dynamic_columns,
            prefetcher,
            recent_matches: 0,
            version_checked: false,
        }
    }

    /// The next batch, or `None` at the end of the partition.
    pub(crate) async fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        loop {
            if let Some(batch) = self.take_batch()? {
                return Ok(Some(batch));
            }
            if !self.load_next_unit().await? {
                return Ok(None);
            }
        }
    }

    /// The next work unit's id and all its batches (none when no row of it passes the string
    /// filters), or `None` at the end of the partition: what a lane of an ordered scan sends.
    pub(crate) async fn next_unit(&mut self) -> Result<Option<(u64, Vec<RecordBatch>)>> {
        if !self.load_next_unit().await? {
            return Ok(None);
        }
        let id = self.current.as_ref().map_or(0, |u| u.id);
        let mut batches = Vec::new();
        while let Some(batch) = self.take_batch()? {
            batches.push(batch);
        }
        Ok(Some((id, batches)))
    }

    /// The next batch of the current unit, or `None` when it has no more (or the limit is
    /// reached).
    fn take_batch(&mut self) -> Result<Option<RecordBatch>> {
        if self.remaining == Some(0) {
            return Ok(None);
        }
        let Some(unit) = &mut self.current else {
            return Ok(None);
        };
        if unit.pos >= unit.rows {
            return Ok(None);
        }
        let mut n = self.batch_size.min(unit.rows - unit.pos);
        if let Some(r) = self.remaining {
            n = n.min(r);
        }
        let rows = unit.pos..unit.pos + n;
        unit.pos += n;
        if let Some(r) = &mut self.remaining {
            *r -= n;
        }
        let batch = build_batch(&self.model, &self.schema, unit, rows)?;
        self.metrics.rows_transcoded.add(batch.num_rows());
        Ok(Some(batch))
    }

    /// Fetches and loads the next unit the dynamic filters keep as the current one; `false`
    /// at the end of the partition (or when the limit is reached).
    async fn load_next_unit(&mut self) -> Result<bool> {
        match self.fetch_next_unit().await {
            Err(e) if !self.version_checked => Err(self.replaced_or(e).await),
            done => done,
        }
    }

    /// `e`, or the error that the store was replaced since the table's metadata was read
    /// (a chunk of the new store read with the old metadata may fail to decode).
    async fn replaced_or(&mut self, e: ZarrError) -> ZarrError {
        self.version_checked = true;
        match &self.model.version {
            Some(version) => version.check(&self.model.store).await.err().unwrap_or(e),
            None => e,
        }
    }

    /// [`PartitionScan::load_next_unit`], errors as they come.
    async fn fetch_next_unit(&mut self) -> Result<bool> {
        self.current = None;
        loop {
            if self.remaining == Some(0) {
                return self.end().await;
            }
            // Units the dynamic filters rule out are skipped before they are fetched, and again
            // when they arrive (the filters may have tightened meanwhile).
            let (grid, pruner, pruned) =
                (&self.grid, &mut self.pruner, &self.metrics.chunks_pruned);
            let keep = |id: u64| unit_may_match(pruner, grid, pruned, id);
            let Some(fetched) = self.prefetcher.next(&mut self.units, keep).await else {
                return self.end().await;
            };
            let fetched = fetched?;
            self.add_counts(&fetched.counts);
            for (slot, objects) in fetched.objects {
                let cache = &mut self.caches[slot];
                cache.prefetched.clear();
                cache.prefetched.extend(objects);
            }
            let pruned = &self.metrics.chunks_pruned;
            if unit_may_match(&mut self.pruner, &self.grid, pruned, fetched.id)? {
                self.current = Some(self.load_unit(fetched.id).await?);
                return Ok(true);
            }
        }
    }

    /// The end of the partition (`false`), once the store is found still the version the
    /// table's metadata was read from (else what was read may mix two stores).
    async fn end(&mut self) -> Result<bool> {
        if !self.version_checked {
            self.version_checked = true;
            if let Some(version) = &self.model.version {
                version.check(&self.model.store).await?;
            }
        }
        Ok(false)
    }

    fn add_counts(&self, counts: &ReadCounts) {
        self.metrics.chunks_read.add(counts.chunks_read);
        self.metrics.chunks_missing.add(counts.chunks_missing);
        self.metrics.bytes_read.add(counts.bytes_read as usize);
        self.metrics.inner_chunks_read.add(counts.inner_chunks_read);
    }

    /// Reads `region` of `array` for projection slot `slot`, through that slot's cache.
    async fn read(
        &mut self,
        slot: usize,
        array: &ArrayNode,
        region: &[Range<u64>],
        counts: &mut ReadCounts,
    ) -> Result<Region> {
        let (store, limits) = (&self.model.store, &self.model.limits);
        read_region(store, array, region, limits, &mut self.caches[slot], counts).await
    }

    /// The values of `array` (the column in `slot`, of `data_type`), whose dimensions are the
    /// table's `dims`, over the unit's `region`: in C order over `dims`.
    async fn read_along(
        &mut self,
        slot: usize,
        array: &Arc<ArrayNode>,
        dims: &[usize],
        plan: &ValuePlan,
        region: &[Range<u64>],
        counts: &mut ReadCounts,
    ) -> Result<ArrayRef> {
        let range: Vec<Range<u64>> = dims.iter().map(|&d| region[d].clone()).collect();
        let r = self.read(slot, array, &range, counts).await?;
        let origin: Vec<u64> = range.iter().map(|r| r.start).collect();
        let extent: Vec<u64> = range.iter().map(|r| r.end - r.start).collect();
        let len = extent.iter().product::<u64>() as usize;
        let locate = |element: usize| locate(array, &unit_coords(&origin, &extent, element));
        to_arrow(array, r.elements(), 0..len, plan, &locate)
    }

    /// Which of the unit's `rows` pass the string filters, read on their columns' code units
    /// (each region kept in `regions` for the rest of the unit).
    async fn raw_filter_mask(
        &mut self,
        regions: &mut [Option<Region>],
        region: &[Range<u64>],
        (origin, extent): (&[u64], &[u64]),
        rows: usize,
        counts: &mut ReadCounts,
    ) -> Result<Vec<bool>> {
        let model = self.model.clone();
        let mut evaluated = Vec::new();
        let raw_filters = self.raw_filters.clone();
        for f in raw_filters.iter() {
            let Some(slot) = self.columns.iter().position(|&c| c == f.column) else {
                continue;
            };
            if regions[slot].is_none() {
                let ColumnSource::Value { array } = &model.columns[f.column].source else {
                    continue;
                };
                let r = self.read(slot, array, region, counts).await?;
                regions[slot] = Some(r);
            }
            evaluated.push((f.column, slot));
        }
        let elements: Vec<(usize, &Elements)> = evaluated
            .iter()
            .filter_map(|&(c, slot)| regions[slot].as_ref().map(|r| (c, r.elements())))
            .collect();
        let locate_in = |column: usize, row: usize| match &model.columns[column].source {
            ColumnSource::Value { array } => locate(array, &unit_coords(origin, extent, row)),
            _ => (String::from("?"), 0),
        };
        select_rows(&model, &self.raw_filters, &elements, rows, &locate_in)
    }

    async fn load_unit(&mut self, id: u64) -> Result<Unit> {
        let model = self.model.clone();
        let (origin, extent) = self.grid.bounds(id)?;
        let rows = usize::try_from(self.grid.rows(id)?).map_err(|_| {
            ZarrError::metadata(&model.grid.display, "a chunk has more rows than usize")
        })?;
        let region = self.grid.region(id)?;
        let mut counts = ReadCounts::default();
        let mut regions: Vec<Option<Region>> = vec![None; self.columns.len()];
        // The filters' columns as converted to evaluate them, by slot.
        let mut converted: Vec<Option<ArrayRef>> = vec![None; self.columns.len()];

        // Late materialisation: read the filters' columns first (the string filters' code
        // units, then the decoded filters' values), and the rest only if some row passes;
        // transcode only the rows that pass.
        let mut selection = None;
        let mut decoded_filters = self.decoded_filters.as_ref().clone();
        decoded_filters.extend(self.dynamic_values.current());
        let filtered = !self.raw_filters.is_empty() || !decoded_filters.is_empty();
        let mut any_passed = true;
        if filtered {
            // Which rows pass, as a bitmap: counted, combined and listed a word at a time.
            let mut mask = BooleanBuffer::new_set(rows);
            if !self.raw_filters.is_empty() {
                let raw = self
                    .raw_filter_mask(&mut regions, &region, (&origin, &extent), rows, &mut counts)
                    .await?;
                mask = BooleanBuffer::from_iter(raw);
            }
            let statics = self.decoded_filters.len();
            for (i, f) in decoded_filters.iter().enumerate() {
                if mask.count_set_bits() == 0 {
                    break;
                }
                let mut values = Vec::with_capacity(f.columns.len());
                for &c in &f.columns {
                    let (Some(slot), ColumnSource::Value { array }) = (
                        self.columns.iter().position(|&p| p == c),
                        &model.columns[c].source,
                    ) else {
                        return Err(ZarrError::internal(format!(
                            "the filter {f} reads column {c}, which the scan does not"
                        )));
                    };
                    if let Some(v) = &converted[slot] {
                        values.push(Arc::clone(v));
                        continue;
                    }
                    if regions[slot].is_none() {
                        let r = self.read(slot, array, &region, &mut counts).await?;
                        regions[slot] = Some(r);
                    }
                    let Some(r) = &regions[slot] else { continue };
                    let locate = |row: usize| locate(array, &unit_coords(&origin, &extent, row));
                    let plan = &model.columns[c].plan;
                    let v = to_arrow_shared(array, r.elements(), 0..rows, plan, &locate)?;
                    converted[slot] = Some(Arc::clone(&v));
                    values.push(v);
                }
                mask = match f.apply(&model, values, rows, &mask) {
                    Ok(mask) => mask,
                    // A dynamic filter that cannot be evaluated drops no row (DataFusion
                    // applies it after the scan anyway).
                    Err(_) if i >= statics => mask,
                    Err(e) => return Err(e),
                };
            }
            // Arrow's `take` indices are `u32`: a unit of more rows is refused, not wrapped.
            if u32::try_from(mask.len()).is_err() {
                return Err(ZarrError::metadata(
                    &model.display,
                    format!(
                        "a unit of {} rows is more than a filter selects among (2^32)",
                        mask.len()
                    ),
                ));
            }
            let passing = mask.count_set_bits();
            any_passed = passing > 0;
            // Every row passing is every row: emitted as they are, without gathering.
            if passing < rows {
                let rows = mask.set_indices().map(|i| i as u32).collect();
                selection = Some(Selection { mask, rows });
            }
        }
        let skip_rest = !any_passed;
        if skip_rest {
            self.metrics.units_without_matches.add(1);
            for skipped in &self.metrics.skipped {
                let ColumnSource::Value { array } = &model.columns[skipped.column].source else {
                    continue;
                };
                let chunks = ReadGrid::of(array).intersecting(&region)?.len();
                skipped.chunks.add(chunks);
                let size = array.zarrs()?.data_type().fixed_size().unwrap_or(0);
                skipped.bytes.add(rows.saturating_mul(size));
            }
        }
        // A unit without any filter yet (a dynamic one still `true`) counts as matching.
        if filtered || !self.dynamic_columns.is_empty() {
            self.recent_matches = (self.recent_matches << 1) | u16::from(!skip_rest);
            self.prefetcher
                .fetch_all_columns(self.recent_matches.count_ones() >= 8);
        }

        let mut columns = Vec::with_capacity(self.outputs);
        if !skip_rest {
            let projection = self.columns[..self.outputs].to_vec();
            for (slot, &ci) in projection.iter().enumerate() {
                let column = &model.columns[ci];
                columns.push(match &column.source {
                    ColumnSource::Index { dim } => UnitColumn::Index { dim: *dim },
                    ColumnSource::Coordinate { dim, array } => {
                        let values = self
                            .read_along(slot, array, &[*dim], &column.plan, &region, &mut counts)
                            .await?;
                        UnitColumn::Coordinate { dim: *dim, values }
                    }
                    ColumnSource::Broadcast { dims, array } => {
                        let values = self
                            .read_along(slot, array, dims, &column.plan, &region, &mut counts)
                            .await?;
                        UnitColumn::Broadcast {
                            dims: dims.clone(),
                            values,
                        }
                    }
                    ColumnSource::Value { array } => {
                        let r = match regions[slot].take() {
                            Some(r) => r,
                            None => self.read(slot, array, &region, &mut counts).await?,
                        };
                        UnitColumn::Value {
                            node: array.clone(),
                            column: ci,
                            region: r,
                            converted: converted[slot].take(),
                        }
                    }
                });
            }
        }
        self.add_counts(&counts);
        self.metrics.rows_decoded.add(rows);
        if let Some(p) = &self.metrics.progress {
            p.unit_done(rows as u64);
        }
        let emitted = selection.as_ref().map_or(rows, |s| s.rows.len());
        Ok(Unit {
            id,
            origin,
            extent,
            rows: emitted,
            pos: 0,
            columns,
            selection,
        })
    }
}

/// Whether the dynamic filters (if any) may match unit `id`; a unit they rule out is counted
/// in `pruned`.
fn unit_may_match(
    pruner: &mut Option<DynamicPruner>,
    grid: &UnitGrid,
    pruned: &Count,
    id: u64,
) -> Result<bool> {
    let Some(pruner) = pruner.as_mut() else {
        return Ok(true);
    };
    let (origin, extent) = grid.bounds(id)?;
    let keep = pruner.may_match(&origin, &extent);
    if !keep {
        pruned.add(1);
    }
    Ok(keep)
}

/// Array coordinates of row `row` (C order) of the unit at `origin` with `extent`.
fn unit_coords(origin: &[u64], extent: &[u64], row: usize) -> Vec<u64> {
    let mut coords = vec![0u64; extent.len()];
    let mut rest = row as u64;
    for d in (0..extent.len()).rev() {
        coords[d] = origin[d] + rest % extent[d].max(1);
        rest /= extent[d].max(1);
    }
    coords
}

fn build_batch(
    model: &TableModel,
    schema: &SchemaRef,
    unit: &Unit,
    positions: Range<usize>,
) -> Result<RecordBatch> {
    let ndim = unit.extent.len();
    // strides[d]: rows per step along dimension d within the unit.
    let mut strides = vec![1u64; ndim];
    for d in (0..ndim.saturating_sub(1)).rev() {
        strides[d] = strides[d + 1] * unit.extent[d + 1];
    }
    // `base` plus the coordinate of each of this batch's rows along dimension `d`, within
    // the unit.
    let local = |d: usize, base: u64| -> Vec<u64> {
        let (stride, extent) = (strides[d].max(1), unit.extent[d].max(1));
        match &unit.selection {
            Some(sel) => sel.rows[positions.clone()]
                .iter()
                .map(|&r| base + (u64::from(r) / stride) % extent)
                .collect(),
            None => contiguous_coords(positions.clone(), stride, extent, base),
        }
    };
    let rows: Vec<usize> = match &unit.selection {
        Some(sel) => sel.rows[positions.clone()]
            .iter()
            .map(|&r| r as usize)
            .collect(),
        None => Vec::new(),
    };
    // The unit rows this batch's passing rows lie in, and their bits.
    let span = match (rows.first(), rows.last()) {
        (Some(&first), Some(&last)) => first..last + 1,
        _ => 0..0,
    };
    let span_mask =
        |sel: &Selection| BooleanArray::new(sel.mask.slice(span.start, span.len()), None);
    // `Utf8` and `Binary` hold a batch's bytes behind 32-bit offsets: a long string repeated
    // on every row of a batch (a netCDF `history`) can pass 2 GiB.
    let repeat_error = |what: &str, field: &Field, e: ArrowError| match e {
        ArrowError::OffsetOverflowError(bytes) => ZarrError::metadata(
            &model.display,
            format!(
                "column {} repeats {bytes} bytes of values in one batch, more than a {} column \
                 holds (2 GiB): set string_type = 'utf8view' (which repeats them without \
                 copies) or a smaller batch size",
                field.name(),
                field.data_type()
            ),
        ),
        e => ZarrError::internal(format!("{what} of {}: {e}", model.display)),
    };
    let mut arrays: Vec<ArrayRef> = Vec::with_capacity(unit.columns.len());
    for (column, field) in unit.columns.iter().zip(schema.fields()) {
        arrays.push(match column {
            UnitColumn::Index { dim } => {
                Arc::new(UInt64Array::from(local(*dim, unit.origin[*dim])))
            }
            UnitColumn::Coordinate { dim, values } => {
                let coordinates = match &unit.selection {
                    None => expand(values, positions.clone(), strides[*dim], unit.extent[*dim]),
                    Some(_) => take(values.as_ref(), &UInt64Array::from(local(*dim, 0)), None),
                };
                coordinates.map_err(|e| repeat_error("looking up coordinates", field, e))?
            }
            UnitColumn::Broadcast { dims, values } => {
                // The element of each row: its unit coordinates along `dims`, in C order.
                let mut elements = vec![0u64; positions.len()];
                for &d in dims {
                    for (e, c) in elements.iter_mut().zip(local(d, 0)) {
                        *e = *e * unit.extent[d] + c;
                    }
                }
                take(values.as_ref(), &UInt64Array::from(elements), None)
                    .map_err(|e| repeat_error("repeating values", field, e))?
            }
            UnitColumn::Value {
                node,
                column,
                region,
                converted,
            } => match &unit.selection {
                None => {
                    let locate =
                        |row: usize| locate(node, &unit_coords(&unit.origin, &unit.extent, row));
                    to_arrow(
                        node,
                        region.elements(),
                        positions.clone(),
                        &model.columns[*column].plan,
                        &locate,
                    )?
                }
                // Some rows of the span fail (else `filter` would return a slice sharing the
                // chunk's buffer): the passing ones are filtered out of the values converted
                // for the filter, or of numbers read in place.
                Some(sel)
                    if span.len() > rows.len()
                        && shares_cheaply(node, &model.columns[*column].plan, converted) =>
                {
                    let values = match converted {
                        Some(values) => values.slice(span.start, span.len()),
                        None => {
                            let locate = |row: usize| {
                                locate(node, &unit_coords(&unit.origin, &unit.extent, row))
                            };
                            to_arrow_shared(
                                node,
                                region.elements(),
                                span.clone(),
                                &model.columns[*column].plan,
                                &locate,
                            )?
                        }
                    };
                    filter(values.as_ref(), &span_mask(sel)).map_err(|e| {
                        ZarrError::internal(format!("filtering {}: {e}", field.name()))
                    })?
                }
                Some(_) => {
                    // Gather the passing rows, then transcode only them.
                    let gathered = region.elements().gather(&rows);
                    let locate =
                        |i: usize| locate(node, &unit_coords(&unit.origin, &unit.extent, rows[i]));
                    to_arrow(
                        node,
                        &gathered,
                        0..rows.len(),
                        &model.columns[*column].plan,
                        &locate,
                    )?
                }
            },
        });
    }
    let options = RecordBatchOptions::new().with_row_count(Some(positions.len()));
    RecordBatch::try_new_with_options(schema.clone(), arrays, &options)
        .map_err(|e| ZarrError::internal(format!("building a batch of {}: {e}", model.display)))
}

/// Whether a column's passing rows are best filtered out of values converted in place (numbers
/// without CF decoding, or values a filter already converted) rather than gathered first and
/// converted after (strings, whose transcoding costs per row).
fn shares_cheaply(node: &ArrayNode, plan: &ValuePlan, converted: &Option<ArrayRef>) -> bool {
    converted.is_some()
        || (plan.cf.is_none()
            && matches!(node.element_kind(), Ok(ElementKind::Primitive(t)) if t.is_numeric()))
}

/// The chunk key and in-chunk index of the element at array coordinates `coords`.
fn locate(node: &ArrayNode, coords: &[u64]) -> (String, u64) {
    let Ok(array) = node.zarrs() else {
        return (String::from("?"), 0);
    };
    let Ok(Some(indices)) = array.chunk_grid().chunk_indices(coords) else {
        return (String::from("?"), 0);
    };
    let key = chunk_key(node, &indices).map_or_else(|_| "?".to_string(), |(_, k)| k);
    let (Ok(origin), Ok(shape)) = (array.chunk_origin(&indices), array.chunk_shape(&indices))
    else {
        return (key, 0);
    };
    let mut index = 0u64;
    for d in 0..coords.len() {
        index = index * shape[d].get() + (coords[d] - origin[d]);
    }
    (key, index)
}
