//! [`ZarrScanExec`], the scan's physical plan node: it divides the table's work units (the
//! chunks of its grid array) into partitions (plain ranges of unit ids) and streams each one.

use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use datafusion::common::config::ConfigOptions;
use datafusion::common::stats::Precision;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{Result as DFResult, Statistics};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_expr::utils::collect_columns;
use datafusion::physical_expr::{EquivalenceProperties, PhysicalSortExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::filter_pushdown::{
    ChildPushdownResult, FilterPushdownPhase, FilterPushdownPropagation, PushedDown,
};
use datafusion::physical_plan::metrics::{ExecutionPlanMetricsSet, MetricBuilder, MetricsSet};
use datafusion::physical_plan::projection::ProjectionExec;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PhysicalExpr, PlanProperties,
    StatisticsArgs,
};
use futures::StreamExt;
use futures::stream::BoxStream;

use super::stream::{PartitionScan, ScanMetrics, ScanSpec, SkippedColumn};
use super::{
    ChunkSelection, DecodedFilter, MAX_PLANNED_UNITS, RawFilter, ScanFilter, UnitGrid, ordered,
};
use crate::error::{Result, ZarrError};
use crate::progress::ScanProgress;
use crate::table::{ColumnSource, TableModel};

/// The physical plan node that scans a [`ZarrTable`](crate::provider::ZarrTable): its partitions are runs of the
/// table's work units, read in parallel. EXPLAIN shows the units planned, the string filters
/// evaluated on UTF-32 (`utf32_filters`), the pruning predicate and the units it pruned, and
/// DataFusion's dynamic filters; EXPLAIN ANALYZE adds the counts of chunks and bytes read.
#[derive(Debug)]
pub struct ZarrScanExec {
    pub(super) model: Arc<TableModel>,
    units: Arc<UnitGrid>,
    projection: Vec<usize>,
    pub(super) schema: SchemaRef,
    /// Chunk ids (C order over the grid array's chunk grid) of each output partition, as runs.
    pub(super) partitions: Vec<Vec<Range<u64>>>,
    /// The chunks left after pruning.
    selection: Arc<ChunkSelection>,
    /// String predicates evaluated on UTF-32 code units before transcoding.
    raw_filters: Arc<Vec<RawFilter>>,
    /// Predicates on value columns evaluated on their decoded values before the other
    /// columns are read.
    decoded_filters: Arc<Vec<DecodedFilter>>,
    /// Filters DataFusion updates while the query runs (TopK thresholds, hash join bounds),
    /// checked before each work unit is read.
    dynamic_filters: Vec<Arc<dyn PhysicalExpr>>,
    /// Rows of each partition, when counted (see `MAX_PLANNED_UNITS`).
    pub(super) partition_rows: Vec<Option<u64>>,
    /// Rows of the whole scan, when known.
    pub(super) total_rows: Option<u64>,
    limit: Option<usize>,
    /// When more than 0: the scan outputs one partition in index order, its units dealt to this
    /// many lanes that decode at once (see [`ZarrScanExec::in_index_order`]).
    lanes: usize,
    pub(super) properties: Arc<PlanProperties>,
    pub(super) metrics: ExecutionPlanMetricsSet,
    progress: Option<Arc<dyn ScanProgress>>,
}

impl ZarrScanExec {
    /// Plans a scan of `projection` (column indices of the model) over the `units` left by
    /// `selection`, in at most `target_partitions` partitions, reading no more units than
    /// `limit` rows need.
    pub(crate) fn try_new(
        model: Arc<TableModel>,
        units: UnitGrid,
        projection: Vec<usize>,
        target_partitions: usize,
        limit: Option<usize>,
        selection: ChunkSelection,
    ) -> Result<Self> {
        let schema = Arc::new(model.schema.project(&projection).map_err(|e| {
            ZarrError::internal(format!("projecting the columns {projection:?}: {e}"))
        })?);
        let selected = selection.selected();
        // With a limit (and so no filter), only the leading units that hold `limit` rows are
        // read, in one partition, so `LIMIT n` fetches as few chunks as it can.
        let groups: Vec<Vec<Range<u64>>> = match limit {
            Some(limit) => vec![leading_units(&selection.runs, &units, limit as u64)?],
            None => {
                let n = (target_partitions.max(1) as u64).min(selected.max(1));
                let share = |p: u64| (u128::from(selected) * u128::from(p) / u128::from(n)) as u64;
                (0..n)
                    .map(|p| slice_runs(&selection.runs, share(p)..share(p + 1)))
                    .collect()
            }
        };
        let mut partitions = Vec::with_capacity(groups.len());
        let mut partition_rows = Vec::with_capacity(groups.len());
        for group in groups {
            let count: u64 = group.iter().map(|r| r.end - r.start).sum();
            let rows = match count <= MAX_PLANNED_UNITS {
                true => Some(
                    group
                        .iter()
                        .flat_map(Range::clone)
                        .try_fold(0u64, |acc, id| {
                            Ok::<_, ZarrError>(acc.saturating_add(units.rows(id)?))
                        })?,
                ),
                false => None,
            };
            partition_rows.push(rows.map(|r| limit.map_or(r, |l| r.min(l as u64))));
            partitions.push(group);
        }
        // A scan of every unit reads every row, counted or not.
        let total_rows = match (limit, selection.pruned()) {
            (None, 0) => model.num_rows().ok(),
            _ => partition_rows.iter().copied().sum(),
        };
        let properties = scan_properties(&model, &units, &schema, partitions.len());
        Ok(Self {
            model,
            units: Arc::new(units),
            projection,
            schema,
            partitions,
            partition_rows,
            total_rows,
            selection: Arc::new(selection),
            raw_filters: Arc::new(Vec::new()),
            decoded_filters: Arc::new(Vec::new()),
            dynamic_filters: Vec::new(),
            limit,
            lanes: 0,
            properties: Arc::new(properties),
            metrics: ExecutionPlanMetricsSet::new(),
            progress: None,
        })
    }

    /// Evaluates `filters` on the UTF-32 code units (their columns are read whether projected
    /// or not).
    pub(crate) fn with_raw_filters(mut self, filters: Vec<RawFilter>) -> Self {
        self.raw_filters = Arc::new(filters);
        self
    }

    /// Evaluates `filters` on the decoded values of their columns (read whether projected or
    /// not).
    pub(crate) fn with_decoded_filters(mut self, filters: Vec<DecodedFilter>) -> Self {
        self.decoded_filters = Arc::new(filters);
        self
    }

    /// Reports progress to `progress` (its totals grow by this scan's rows and chunks).
    pub(crate) fn with_progress(mut self, progress: Option<Arc<dyn ScanProgress>>) -> Self {
        if let Some(p) = &progress {
            let rows = self.partition_rows.iter().flatten().sum();
            p.planned(rows, self.planned_chunks());
        }
        self.progress = progress;
        self
    }

    /// Number of work units (chunks of the grid array) this scan may read.
    pub fn planned_chunks(&self) -> u64 {
        self.partitions
            .iter()
            .flatten()
            // Saturating: runs from a plan of another process are checked one by one, not
            // for overlap.
            .fold(0u64, |n, r| n.saturating_add(r.end.saturating_sub(r.start)))
    }

    /// This scan as one partition of rows in index order, when its partitions are each in
    /// index order: its units are dealt in turn to one decoding lane per partition, and whole
    /// units are emitted in id order. What a `SortPreservingMergeExec` above would give, without
    /// comparing rows, and with every lane decoding at once. `None` when the partitions are not
    /// ordered, when there is only one, or with a limit (which reads one partition already).
    pub fn in_index_order(&self) -> Option<Self> {
        let ordered = self.properties.output_ordering().is_some();
        ordered.then(|| self.in_unit_order()).flatten()
    }

    /// This scan as one partition whose rows come unit by unit in id order, decoded by one lane
    /// per partition: index order when the partitions are each in index order
    /// ([`ZarrScanExec::in_index_order`]), and a fixed order (chunk by chunk) for any table,
    /// where merging the partitions as they come would not be. `None` when there is only one
    /// partition, or with a limit.
    pub fn in_unit_order(&self) -> Option<Self> {
        if self.partitions.len() < 2 || self.limit.is_some() || self.lanes > 0 {
            return None;
        }
        let mut scan = self.with_filters(self.filters());
        let properties = PlanProperties::new(
            self.properties.equivalence_properties().clone(),
            Partitioning::UnknownPartitioning(1),
            EmissionType::Incremental,
            Boundedness::Bounded,
        );
        scan.lanes = self.partitions.len();
        scan.partition_rows = vec![self.total_rows];
        scan.properties = Arc::new(properties);
        Some(scan)
    }
}

/// A scan's plan properties: `partitions` partitions, each sorted by the leading index columns
/// it outputs (see [`row_order`]).
fn scan_properties(
    model: &TableModel,
    units: &UnitGrid,
    schema: &SchemaRef,
    partitions: usize,
) -> PlanProperties {
    let mut equivalences = EquivalenceProperties::new(schema.clone());
    let ordering: Vec<PhysicalSortExpr> = row_order(model, units)
        .iter()
        .map_while(|name| {
            let i = schema.index_of(name).ok()?;
            Some(PhysicalSortExpr::new_default(Arc::new(Column::new(
                name, i,
            ))))
        })
        .collect();
    if !ordering.is_empty() {
        equivalences.add_ordering(ordering);
    }
    PlanProperties::new(
        equivalences,
        Partitioning::UnknownPartitioning(partitions),
        EmissionType::Incremental,
        Boundedness::Bounded,
    )
}

/// The index columns (in dimension order) by which every partition of a scan is sorted, or
/// none. Work units are read in increasing chunk id and their rows in C order, so rows are in
/// lexicographic index order exactly when the read grid has one chunk along every dimension
/// but the first: always for 1-D arrays, and for N-D arrays chunked by rows only.
pub(crate) fn row_order(model: &TableModel, units: &UnitGrid) -> Vec<String> {
    let ndim = model.shape.len();
    let grid_shape = units.shape();
    if ndim == 0 || grid_shape.len() != ndim || grid_shape[1..].iter().any(|&n| n > 1) {
        return Vec::new();
    }
    (0..ndim)
        .map_while(|d| {
            model.columns.iter().find_map(|c| match c.source {
                ColumnSource::Index { dim } if dim == d => Some(c.name.clone()),
                _ => None,
            })
        })
        .collect()
}

/// The leading units of `runs` that hold `limit` rows, as runs.
fn leading_units(runs: &[Range<u64>], units: &UnitGrid, limit: u64) -> Result<Vec<Range<u64>>> {
    let mut out: Vec<Range<u64>> = Vec::new();
    let mut rows = 0u64;
    for id in runs.iter().flat_map(Range::clone) {
        if rows >= limit {
            break;
        }
        rows = rows.saturating_add(units.rows(id)?);
        match out.last_mut() {
            Some(r) if r.end == id => r.end += 1,
            _ => out.push(id..id + 1),
        }
    }
    Ok(out)
}

/// The units at positions `positions` of the concatenation of `runs`, as runs.
fn slice_runs(runs: &[Range<u64>], positions: Range<u64>) -> Vec<Range<u64>> {
    let mut out = Vec::new();
    let mut at = 0u64;
    for r in runs {
        let len = r.end - r.start;
        let (from, to) = (positions.start.max(at), positions.end.min(at + len));
        if from < to {
            out.push(r.start + (from - at)..r.start + (to - at));
        }
        at += len;
    }
    out
}

/// A planned scan as plain data, to be sent to another process and planned again there from
/// the same table (see `crate::distributed`): everything but the table, the dynamic filters
/// (which another process cannot receive updates of) and progress (which stays local).
#[cfg_attr(not(feature = "ballista"), allow(dead_code))]
#[derive(Debug, Clone)]
pub(crate) struct ScanParts {
    pub(crate) projection: Vec<usize>,
    pub(crate) partitions: Vec<Vec<Range<u64>>>,
    pub(crate) selection: ChunkSelection,
    pub(crate) raw_filters: Vec<RawFilter>,
    pub(crate) decoded_filters: Vec<DecodedFilter>,
    pub(crate) partition_rows: Vec<Option<u64>>,
    pub(crate) total_rows: Option<u64>,
    pub(crate) limit: Option<usize>,
}

#[cfg_attr(not(feature = "ballista"), allow(dead_code))]
impl ZarrScanExec {
    /// The table this scan reads.
    pub(crate) fn model(&self) -> &Arc<TableModel> {
        &self.model
    }

    /// This scan as plain data (see [`ScanParts`]).
    pub(crate) fn parts(&self) -> ScanParts {
        ScanParts {
            projection: self.projection.clone(),
            partitions: self.partitions.clone(),
            selection: self.selection.as_ref().clone(),
            raw_filters: self.raw_filters.as_ref().clone(),
            decoded_filters: self.decoded_filters.as_ref().clone(),
            partition_rows: self.partition_rows.clone(),
            total_rows: self.total_rows,
            limit: self.limit,
        }
    }

    /// The scan `parts` describe, over `model`: the same partitions, units and filters as
    /// where it was planned, checked against the table so that a bad plan is an error.
    pub(crate) fn from_parts(model: Arc<TableModel>, parts: ScanParts) -> Result<Self> {
        let units = UnitGrid::of(&model)?;
        let columns = model.columns.len();
        if let Some(bad) = parts.projection.iter().find(|&&i| i >= columns) {
            return Err(ZarrError::internal(format!(
                "the plan projects column {bad} of {}, which has {columns} columns",
                model.display
            )));
        }
        let planned = parts
            .partitions
            .iter()
            .chain(std::iter::once(&parts.selection.runs))
            .flatten();
        if let Some(bad) = planned
            .clone()
            .find(|r| r.start > r.end || r.end > units.count())
        {
            return Err(ZarrError::internal(format!(
                "the plan reads units {bad:?} of {}, which has {} units",
                model.display,
                units.count()
            )));
        }
        let partitions = parts.partitions.len();
        if parts.partition_rows.len() != partitions {
            return Err(ZarrError::internal(format!(
                "the plan of {} counts rows for {} partitions, not {partitions}",
                model.display,
                parts.partition_rows.len()
            )));
        }
        let schema = Arc::new(model.schema.project(&parts.projection).map_err(|e| {
            ZarrError::internal(format!(
                "projecting the columns {:?}: {e}",
                parts.projection
            ))
        })?);
        let properties = scan_properties(&model, &units, &schema, partitions);
        Ok(Self {
            model,
            units: Arc::new(units),
            projection: parts.projection,
            schema,
            partitions: parts.partitions,
            selection: Arc::new(parts.selection),
            raw_filters: Arc::new(parts.raw_filters),
            decoded_filters: Arc::new(parts.decoded_filters),
            dynamic_filters: Vec::new(),
            partition_rows: parts.partition_rows,
            total_rows: parts.total_rows,
            limit: parts.limit,
            lanes: 0,
            properties: Arc::new(properties),
            metrics: ExecutionPlanMetricsSet::new(),
            progress: None,
        })
    }
}

impl ZarrScanExec {
    /// What EXPLAIN shows after the projection, as `key=value` pairs in order.
    pub(super) fn explained(&self) -> Vec<(&'static str, String)> {
        let list = |items: Vec<String>| format!("[{}]", items.join(", "));
        let mut fields = vec![("chunks", self.planned_chunks().to_string())];
        if !self.raw_filters.is_empty() {
            let shown = self.raw_filters.iter().map(|r| r.to_string()).collect();
            fields.push(("utf32_filters", list(shown)));
        }
        if !self.decoded_filters.is_empty() {
            let shown = self.decoded_filters.iter().map(|r| r.to_string()).collect();
            fields.push(("decoded_filters", list(shown)));
        }
        if let Some(p) = &self.selection.predicate {
            let pruned = self.selection.pruned();
            fields.push(("pruning_predicate", p.clone()));
            fields.push(("chunks_pruned", pruned.to_string()));
        }
        if !self.dynamic_filters.is_empty() {
            let shown = self.dynamic_filters.iter().map(|d| d.to_string()).collect();
            fields.push(("dynamic_filters", list(shown)));
        }
        if let Some(limit) = self.limit {
            fields.push(("limit", limit.to_string()));
        }
        if !self.model.left_out.is_empty() {
            fields.push(("left_out", list(self.model.left_out.clone())));
        }
        if self.lanes > 0 {
            fields.push(("ordered_lanes", self.lanes.to_string()));
        }
        fields
    }
}

impl DisplayAs for ZarrScanExec {
    fn fmt_as(&self, t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        match t {
            DisplayFormatType::Default | DisplayFormatType::Verbose => {
                let names: Vec<&str> = self
                    .schema
                    .fields()
                    .iter()
                    .map(|f| f.name().as_str())
                    .collect();
                write!(
                    f,
                    "ZarrScanExec: node={}, projection=[{}]",
                    self.model.display,
                    names.join(", ")
                )?;
                for (key, value) in self.explained() {
                    write!(f, ", {key}={value}")?;
                }
                Ok(())
            }
            DisplayFormatType::TreeRender => {
                writeln!(f, "node={}", self.model.display)?;
                for (key, value) in self.explained() {
                    writeln!(f, "{key}={value}")?;
                }
                Ok(())
            }
        }
    }
}

impl ExecutionPlan for ZarrScanExec {
    fn name(&self) -> &str {
        "ZarrScanExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![]
    }

    /// The dynamic filters: a hash join computes its filter only if the probe side shows it.
    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> DFResult<TreeNodeRecursion>,
    ) -> DFResult<TreeNodeRecursion> {
        for filter in &self.dynamic_filters {
            if f(filter)? == TreeNodeRecursion::Stop {
                return Ok(TreeNodeRecursion::Stop);
            }
        }
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(
        self: Arc<Self>,
        _children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> DFResult<Arc<dyn ExecutionPlan>> {
        Ok(self)
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> DFResult<SendableRecordBatchStream> {
        let batch_size = context.session_config().batch_size();
        if self.lanes > 0 && partition == 0 {
            // No more lanes than this machine has cores (the partitions were counted from the
            // session's target_partitions): every lane keeps its own fetches in flight.
            let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
            let lanes = self.lanes.min(cores).max(1);
            let scans = (0..lanes)
                .map(|lane| {
                    let runs = self.selection.runs.clone();
                    let units = runs.into_iter().flatten().skip(lane).step_by(lanes);
                    let metrics = self.partition_metrics(lane);
                    PartitionScan::new(self.spec(), Box::new(units), batch_size, metrics)
                })
                .collect();
            let display = self.model.display.clone();
            return Ok(ordered::ordered_stream(scans, self.schema.clone(), display));
        }
        let units = match self.lanes {
            0 => self.partitions.get(partition).cloned(),
            _ => None,
        };
        let units = units.ok_or_else(|| {
            datafusion::error::DataFusionError::Internal(format!(
                "ZarrScanExec has no partition {partition}"
            ))
        })?;
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            self.schema.clone(),
            self.partition_stream(units, partition, batch_size),
        )))
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }

    fn statistics_from_inputs(
        &self,
        _input_stats: &[Arc<Statistics>],
        args: &StatisticsArgs,
    ) -> DFResult<Arc<Statistics>> {
        // Unknown when a partition has too many units to count (see `MAX_PLANNED_UNITS`).
        let rows: Option<u64> = match args.partition() {
            Some(p) => self.partition_rows.get(p).copied().unwrap_or(Some(0)),
            None => self.total_rows,
        };
        Ok(Arc::new(self.row_statistics(rows)))
    }

    fn fetch(&self) -> Option<usize> {
        self.limit
    }

    /// A projection of some of the scan's columns (as they are, none repeated) becomes the
    /// scan's own: the columns only the scan's filters read are then read for them and not
    /// output (`SELECT sum(a) … WHERE b > 0.5` outputs no `b`).
    fn try_swapping_with_projection(
        &self,
        projection: &ProjectionExec,
    ) -> DFResult<Option<Arc<dyn ExecutionPlan>>> {
        // Dynamic filters and ordered lanes are planned over the scan's columns as they are.
        if self.lanes > 0 || !self.dynamic_filters.is_empty() {
            return Ok(None);
        }
        let mut columns = Vec::with_capacity(projection.expr().len());
        for e in projection.expr() {
            let Some(c) = e.expr.downcast_ref::<Column>() else {
                return Ok(None);
            };
            let Some(&column) = self.projection.get(c.index()) else {
                return Ok(None);
            };
            if e.alias != self.model.columns[column].name || columns.contains(&column) {
                return Ok(None);
            }
            columns.push(column);
        }
        if columns.len() >= self.projection.len() {
            return Ok(None);
        }
        Ok(Some(Arc::new(self.with_projection(columns)?)))
    }

    /// DataFusion's physical filter pushdown offers the scan the conjuncts of the `FilterExec`
    /// above it (the leaf-node counterpart of `FileSource::try_pushdown_filters`). The scan
    /// claims, as `PushedDown::Yes`, the string predicates it evaluates exactly on UTF-32 code
    /// units (adding any the logical pushdown did not pass), so DataFusion drops them from the
    /// `FilterExec`; dimension filters only prune chunks and stay `No`, as does everything else.
    fn handle_child_pushdown_result(
        &self,
        phase: FilterPushdownPhase,
        child_pushdown_result: ChildPushdownResult,
        _config: &ConfigOptions,
    ) -> DFResult<FilterPushdownPropagation<Arc<dyn ExecutionPlan>>> {
        let parents = child_pushdown_result.parent_filters;
        let unclaimed = vec![PushedDown::No; parents.len()];
        if !self.model.options.pushdown || parents.is_empty() {
            return Ok(FilterPushdownPropagation::with_parent_pushdown_result(
                unclaimed,
            ));
        }
        if phase == FilterPushdownPhase::Post {
            // Dynamic filters (and any other late ones) only prune: DataFusion keeps applying
            // them, so none is claimed.
            let mut node = self.with_filters(self.filters());
            node.dynamic_filters
                .extend(parents.iter().map(|p| Arc::clone(&p.filter)));
            return Ok(
                FilterPushdownPropagation::with_parent_pushdown_result(unclaimed)
                    .with_updated_node(Arc::new(node) as Arc<dyn ExecutionPlan>),
            );
        }
        let filters: Vec<&Arc<dyn PhysicalExpr>> = parents.iter().map(|p| &p.filter).collect();
        let (answers, claimed) = self.claim_filters(&filters, true);
        let result = FilterPushdownPropagation::with_parent_pushdown_result(answers);
        if claimed.0.len() == self.raw_filters.len()
            && claimed.1.len() == self.decoded_filters.len()
            && !result.filters.iter().any(|p| matches!(p, PushedDown::Yes))
        {
            return Ok(result);
        }
        let node = self.with_filters(claimed);
        Ok(result.with_updated_node(Arc::new(node) as Arc<dyn ExecutionPlan>))
    }
}

impl ZarrScanExec {
    /// For each of `filters`, whether this scan evaluates it exactly (on UTF-32 code units, or
    /// on the decoded values of its columns), and the scan's filters after it: with `add`, a
    /// filter on projected columns that the scan does not evaluate yet is added and claimed;
    /// without, only those it already evaluates are claimed.
    fn claim_filters(
        &self,
        filters: &[&Arc<dyn PhysicalExpr>],
        add: bool,
    ) -> (Vec<PushedDown>, Filters) {
        let (mut raw, mut decoded) = self.filters();
        let mut answers = Vec::with_capacity(filters.len());
        for filter in filters {
            let filter = ScanFilter::from_physical(Arc::clone(filter));
            if let Some(r) = RawFilter::parse(&self.model, &filter) {
                answers.push(match r {
                    r if raw.iter().any(|x| x.same_as(&r)) => PushedDown::Yes,
                    r if add => {
                        raw.push(r);
                        PushedDown::Yes
                    }
                    _ => PushedDown::No,
                });
                continue;
            }
            answers.push(match DecodedFilter::parse(&self.model, &filter) {
                Some(d) if decoded.iter().any(|x| x.same_as(&d)) => PushedDown::Yes,
                Some(d) if add => {
                    decoded.push(d);
                    PushedDown::Yes
                }
                _ => PushedDown::No,
            });
        }
        (answers, (raw, decoded))
    }

    /// The filters this scan evaluates: on UTF-32 code units, and on decoded values.
    fn filters(&self) -> Filters {
        (
            self.raw_filters.as_ref().clone(),
            self.decoded_filters.as_ref().clone(),
        )
    }

    /// Which of `filters` this scan already evaluates exactly.
    pub(super) fn claimed_filters(&self, filters: &[Arc<dyn PhysicalExpr>]) -> Vec<PushedDown> {
        let filters: Vec<&Arc<dyn PhysicalExpr>> = filters.iter().collect();
        self.claim_filters(&filters, false).0
    }

    /// The statistics of `rows` rows of this scan (all, or one partition's): unknown when not
    /// counted (see `MAX_PLANNED_UNITS`), and only an upper bound when UTF-32 filters drop rows
    /// (an exact count would let DataFusion answer `count(*)` without the filter).
    pub(super) fn row_statistics(&self, rows: Option<u64>) -> Statistics {
        let rows = rows
            .and_then(|r| usize::try_from(r).ok())
            .map_or(Precision::Absent, |r| {
                match self.raw_filters.is_empty() && self.decoded_filters.is_empty() {
                    true => exact_rows(r),
                    false => Precision::Inexact(r),
                }
            });
        Statistics::new_unknown(&self.schema).with_num_rows(rows)
    }

    /// The batches of the units `runs`, counted in the metrics of partition `partition`.
    pub(super) fn partition_stream(
        &self,
        runs: Vec<Range<u64>>,
        partition: usize,
        batch_size: usize,
    ) -> BoxStream<'static, DFResult<RecordBatch>> {
        let units = Box::new(runs.into_iter().flatten());
        let metrics = self.partition_metrics(partition);
        let scan = PartitionScan::new(self.spec(), units, batch_size, metrics);
        futures::stream::try_unfold(scan, |mut scan| async move {
            match scan.next_batch().await {
                Ok(Some(batch)) => Ok(Some((batch, scan))),
                Ok(None) => Ok(None),
                Err(e) => Err(e.into()),
            }
        })
        .boxed()
    }

    /// What every partition (or lane) of this scan shares.
    fn spec(&self) -> ScanSpec {
        ScanSpec {
            model: self.model.clone(),
            units: self.units.clone(),
            projection: self.projection.clone(),
            schema: self.schema.clone(),
            raw_filters: self.raw_filters.clone(),
            decoded_filters: self.decoded_filters.clone(),
            limit: self.limit,
            dynamic_filters: self.dynamic_filters.clone(),
        }
    }

    /// The metrics of partition (or lane) `partition`; the first also counts the units pruned
    /// while planning.
    fn partition_metrics(&self, partition: usize) -> ScanMetrics {
        let counter =
            |name: &'static str| MetricBuilder::new(&self.metrics).counter(name, partition);
        let metrics = ScanMetrics {
            chunks_read: counter("chunks_read"),
            chunks_missing: counter("chunks_missing"),
            bytes_read: counter("bytes_read"),
            inner_chunks_read: counter("inner_chunks_read"),
            rows_decoded: counter("rows_decoded"),
            rows_transcoded: counter("rows_transcoded"),
            chunks_pruned: counter("chunks_pruned"),
            units_without_matches: counter("units_without_matches"),
            skipped: self.skippable_columns(partition),
            progress: self.progress.clone(),
        };
        if partition == 0 {
            metrics.chunks_pruned.add(self.selection.pruned() as usize);
        }
        metrics
    }

    /// The output value columns that no filter reads, so that a unit whose rows all fail the
    /// filters leaves them unread: their metrics of what was not read, in partition
    /// `partition`.
    fn skippable_columns(&self, partition: usize) -> Vec<SkippedColumn> {
        let dynamic: Vec<String> = (self.dynamic_filters.iter())
            .flat_map(collect_columns)
            .map(|c| c.name().to_string())
            .collect();
        if self.raw_filters.is_empty() && self.decoded_filters.is_empty() && dynamic.is_empty() {
            return Vec::new();
        }
        let filtered = |c: usize| {
            self.raw_filters.iter().any(|f| f.column == c)
                || self.decoded_filters.iter().any(|f| f.columns.contains(&c))
                || dynamic.contains(&self.model.columns[c].name)
        };
        // Named after the column (`chunks_skipped[b]`), as EXPLAIN ANALYZE sums metrics by
        // name and shows no labels.
        let counter = |name: &'static str, column: &str| {
            MetricBuilder::new(&self.metrics)
                .with_new_label("column", column.to_string())
                .counter(format!("{name}[{column}]"), partition)
        };
        (self.projection.iter().copied())
            .filter(|&c| {
                matches!(self.model.columns[c].source, ColumnSource::Value { .. }) && !filtered(c)
            })
            .map(|c| {
                let name = &self.model.columns[c].name;
                SkippedColumn {
                    column: c,
                    chunks: counter("chunks_skipped", name),
                    bytes: counter("bytes_not_decoded", name),
                }
            })
            .collect()
    }

    /// A copy of this plan outputting the model's columns `projection` (and fresh metrics).
    fn with_projection(&self, projection: Vec<usize>) -> Result<Self> {
        let schema = Arc::new(self.model.schema.project(&projection).map_err(|e| {
            ZarrError::internal(format!("projecting the columns {projection:?}: {e}"))
        })?);
        let properties = scan_properties(&self.model, &self.units, &schema, self.partitions.len());
        let mut scan = self.with_filters(self.filters());
        scan.projection = projection;
        scan.schema = schema;
        scan.properties = Arc::new(properties);
        Ok(scan)
    }

    /// A copy of this plan with `filters` (and fresh metrics).
    fn with_filters(&self, (raw_filters, decoded_filters): Filters) -> Self {
        ZarrScanExec {
            model: self.model.clone(),
            units: self.units.clone(),
            projection: self.projection.clone(),
            schema: self.schema.clone(),
            partitions: self.partitions.clone(),
            selection: self.selection.clone(),
            raw_filters: Arc::new(raw_filters),
            decoded_filters: Arc::new(decoded_filters),
            dynamic_filters: self.dynamic_filters.clone(),
            partition_rows: self.partition_rows.clone(),
            total_rows: self.total_rows,
            limit: self.limit,
            lanes: self.lanes,
            properties: self.properties.clone(),
            metrics: ExecutionPlanMetricsSet::new(),
            progress: self.progress.clone(),
        }
    }
}

/// The filters a scan evaluates: on UTF-32 code units, and on decoded values.
type Filters = (Vec<RawFilter>, Vec<DecodedFilter>);

/// `rows` as an exact count, except none: DataFusion 55 answers `sum(1)` over an exact 0 rows
/// from statistics as 0 where SQL says NULL (the literal's sum is the literal times the count),
/// so an empty scan is said to be inexact, and the aggregate runs (over no chunks).
pub(crate) fn exact_rows(rows: usize) -> Precision<usize> {
    match rows {
        0 => Precision::Inexact(0),
        rows => Precision::Exact(rows),
    }
}
