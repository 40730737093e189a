//! Pruning on index columns: DataFusion's `PruningPredicate` over each unit's first and last
//! index along every dimension (also what the dynamic filters check while a scan runs).

use std::collections::HashSet;
use std::sync::Arc;

use arrow::array::{ArrayRef, BooleanArray, UInt64Array};
use datafusion::common::pruning::PruningStatistics;
use datafusion::common::{Column, ScalarValue};
use datafusion::physical_expr::conjunction;
use datafusion::physical_optimizer::pruning::PruningPredicateBuilder;

use super::unit_ranges::UnitRanges;
use crate::error::{Result, ZarrError};
use crate::scan::filter::ScanFilter;
use crate::table::{ColumnSource, TableModel};

/// Per-unit bounds of the index columns.
pub(crate) struct GridStats {
    /// Column name → (min, max) per unit.
    pub(crate) bounds: Vec<(String, UInt64Array, UInt64Array)>,
    pub(crate) containers: usize,
}

impl PruningStatistics for GridStats {
    fn min_values(&self, column: &Column) -> Option<ArrayRef> {
        self.bounds
            .iter()
            .find(|(n, _, _)| *n == column.name)
            .map(|(_, min, _)| Arc::new(min.clone()) as ArrayRef)
    }

    fn max_values(&self, column: &Column) -> Option<ArrayRef> {
        self.bounds
            .iter()
            .find(|(n, _, _)| *n == column.name)
            .map(|(_, _, max)| Arc::new(max.clone()) as ArrayRef)
    }

    fn num_containers(&self) -> usize {
        self.containers
    }

    fn null_counts(&self, column: &Column) -> Option<ArrayRef> {
        self.bounds
            .iter()
            .find(|(n, _, _)| *n == column.name)
            .map(|_| Arc::new(UInt64Array::from(vec![0u64; self.containers])) as ArrayRef)
    }

    fn row_counts(&self) -> Option<ArrayRef> {
        None
    }

    fn contained(&self, _column: &Column, _values: &HashSet<ScalarValue>) -> Option<BooleanArray> {
        None
    }
}

/// Which of the `containers` units the conjunction of `filters` may hold rows of, judged on
/// the index columns (other columns read as unknown, keeping every unit).
pub(super) fn prune(
    model: &TableModel,
    ranges: &UnitRanges,
    filters: &[&ScanFilter],
    containers: usize,
) -> Result<Vec<bool>> {
    let bounds = model
        .columns
        .iter()
        .filter_map(|column| match column.source {
            ColumnSource::Index { dim } => Some((
                column.name.clone(),
                UInt64Array::from(ranges.starts[dim].clone()),
                UInt64Array::from(
                    ranges.ends[dim]
                        .iter()
                        .map(|e| e.saturating_sub(1))
                        .collect::<Vec<u64>>(),
                ),
            )),
            _ => None,
        })
        .collect();
    let predicate = conjunction(filters.iter().map(|f| Arc::clone(&f.expr)));
    let plan_err = |e: datafusion::error::DataFusionError| {
        ZarrError::internal(format!("building the pruning predicate {predicate}: {e}"))
    };
    let pruning = PruningPredicateBuilder::new()
        .with_file_schema(model.schema.clone())
        .try_build(Arc::clone(&predicate))
        .map_err(plan_err)?;
    pruning
        .prune(&GridStats { bounds, containers })
        .map_err(plan_err)
}
