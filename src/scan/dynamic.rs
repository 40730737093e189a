//! Chunk pruning while the scan runs, by the dynamic filters DataFusion pushes into it: the
//! running threshold of a TopK (`ORDER BY … LIMIT`) and the build-side bounds of a hash join.
//! Before each work unit is read, the filters' current values are checked with DataFusion's
//! `PruningPredicate` against the unit's index ranges (as planning-time pruning does for static
//! filters); a unit that cannot match is skipped. The predicates are rebuilt only when a
//! filter changes (`snapshot_generation`). Filters on value columns are also evaluated on each
//! unit's decoded values ([`DynamicValueFilters`]).

use std::sync::Arc;

use arrow::array::UInt64Array;
use arrow::datatypes::SchemaRef;
use datafusion::physical_expr_common::physical_expr::{
    snapshot_generation, snapshot_physical_expr,
};
use datafusion::physical_optimizer::pruning::{PruningPredicate, PruningPredicateBuilder};
use datafusion::physical_plan::PhysicalExpr;

use crate::scan::pruning::GridStats;
use crate::scan::{DecodedFilter, ScanFilter};
use crate::table::{ColumnSource, TableModel};

/// Checks work units against the scan's dynamic filters.
pub(crate) struct DynamicPruner {
    filters: Vec<Arc<dyn PhysicalExpr>>,
    /// The scan's output schema, which the filters' columns refer to.
    schema: SchemaRef,
    /// Output index columns: (name, dimension).
    index_columns: Vec<(String, usize)>,
    /// The filters' generations and the predicates built from them.
    built: Option<(Vec<u64>, Vec<PruningPredicate>)>,
}

impl DynamicPruner {
    /// A pruner for a scan with output `schema` over `model`; `None` without filters or index
    /// columns to prune on.
    pub(crate) fn new(
        model: &TableModel,
        schema: SchemaRef,
        filters: &[Arc<dyn PhysicalExpr>],
    ) -> Option<Self> {
        let index_columns: Vec<(String, usize)> = model
            .columns
            .iter()
            .filter_map(|c| match c.source {
                ColumnSource::Index { dim } if schema.index_of(&c.name).is_ok() => {
                    Some((c.name.clone(), dim))
                }
                _ => None,
            })
            .collect();
        (!filters.is_empty() && !index_columns.is_empty()).then(|| Self {
            filters: filters.to_vec(),
            schema,
            index_columns,
            built: None,
        })
    }

    /// Whether the unit at `origin` with `extent` may hold a row the filters keep. Anything
    /// that cannot be analysed keeps the unit.
    pub(crate) fn may_match(&mut self, origin: &[u64], extent: &[u64]) -> bool {
        let generations: Vec<u64> = self.filters.iter().map(snapshot_generation).collect();
        if self.built.as_ref().is_none_or(|(g, _)| *g != generations) {
            let predicates = self
                .filters
                .iter()
                .filter_map(|f| {
                    let current = snapshot_physical_expr(Arc::clone(f)).ok()?;
                    let p = PruningPredicateBuilder::new()
                        .with_file_schema(self.schema.clone())
                        .try_build(current)
                        .ok()?;
                    (!p.always_true()).then_some(p)
                })
                .collect();
            self.built = Some((generations, predicates));
        }
        let Some((_, predicates)) = &self.built else {
            return true;
        };
        if predicates.is_empty() {
            return true;
        }
        let bounds = self
            .index_columns
            .iter()
            .filter_map(|(name, dim)| {
                let (start, len) = (*origin.get(*dim)?, *extent.get(*dim)?);
                let last = (start + len).saturating_sub(1);
                Some((
                    name.clone(),
                    UInt64Array::from(vec![start]),
                    UInt64Array::from(vec![last]),
                ))
            })
            .collect();
        let stats = GridStats {
            bounds,
            containers: 1,
        };
        predicates.iter().all(|p| {
            p.prune(&stats)
                .map_or(true, |keep| keep.first() != Some(&false))
        })
    }
}

/// The dynamic filters that read only value columns, as [`DecodedFilter`]s of their current
/// values: evaluated on a unit's decoded values like the scan's own filters, so that a unit no
/// row of which passes (below a TopK's threshold, outside a hash join's build side) leaves its
/// other columns unread. DataFusion keeps applying the filters itself (they are not claimed);
/// the scan only drops rows they would drop. Rebuilt when a filter changes.
pub(crate) struct DynamicValueFilters {
    model: Arc<TableModel>,
    filters: Vec<Arc<dyn PhysicalExpr>>,
    /// The filters' generations and the decoded filters built from them.
    built: Option<(Vec<u64>, Vec<DecodedFilter>)>,
}

impl DynamicValueFilters {
    /// The dynamic `filters` of a scan of `model`.
    pub(crate) fn new(model: Arc<TableModel>, filters: &[Arc<dyn PhysicalExpr>]) -> Self {
        Self {
            model,
            filters: filters.to_vec(),
            built: None,
        }
    }

    /// The filters' current values that the scan can evaluate (a filter still `true`, or
    /// reading a dimension, is none).
    pub(crate) fn current(&mut self) -> Vec<DecodedFilter> {
        if self.filters.is_empty() {
            return Vec::new();
        }
        let generations: Vec<u64> = self.filters.iter().map(snapshot_generation).collect();
        if self.built.as_ref().is_none_or(|(g, _)| *g != generations) {
            let filters = (self.filters.iter())
                .filter_map(|f| {
                    let current = snapshot_physical_expr(Arc::clone(f)).ok()?;
                    DecodedFilter::parse(&self.model, &ScanFilter::from_physical(current))
                })
                .collect();
            self.built = Some((generations, filters));
        }
        self.built
            .as_ref()
            .map_or_else(Vec::new, |(_, f)| f.clone())
    }
}
