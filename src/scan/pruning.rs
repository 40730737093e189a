//! Predicates → chunks: which chunks of the table's grid can hold a matching row.
//!
//! - Index columns: DataFusion's [`PruningPredicate`] over per-chunk statistics (each chunk's
//!   first and last index along every dimension), so `=`, `<`, `BETWEEN`, `IN`, `AND`, `OR`
//!   and the rest work as they do for Parquet row groups.
//! - Coordinate columns: the predicate's conjuncts on one coordinate are answered on the
//!   coordinate's values (a 1-D array): by binary search when the coordinate is monotonic and
//!   the conjunct a comparison, `BETWEEN` or `IN` (see [`coordinate`]), else by evaluating the
//!   physical expression on every value. A chunk is kept only if its range along that dimension
//!   holds a matching value.
//!
//! Pruning is inexact: DataFusion still filters the rows of the chunks that are read.

use std::collections::HashSet;
use std::ops::Range;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, BooleanArray, RecordBatch, UInt64Array};
use arrow::datatypes::{Field, Schema};
use datafusion::catalog::Session;
use datafusion::common::pruning::PruningStatistics;
use datafusion::common::{Column, DFSchema, ScalarValue};
use datafusion::logical_expr::Expr;
use datafusion::logical_expr::utils::{conjunction, split_conjunction_owned};
use datafusion::physical_optimizer::pruning::PruningPredicateBuilder;

use crate::error::{Result, ZarrError};
use crate::scan::convert::to_arrow;
use crate::scan::coordinate;
use crate::scan::grid::ReadGrid;
use crate::scan::read::{ColumnCache, ReadCounts, read_region};
use crate::scan::stream::unravel;
use crate::table::{ColumnSource, TableModel};

/// The chunks a scan reads after pruning.
#[derive(Debug, Clone)]
pub struct ChunkSelection {
    /// Chunk ids (C order over the grid array's chunk grid) that may hold matching rows.
    pub ids: Vec<u64>,
    /// Chunks in the grid.
    pub total: u64,
    /// The predicate used, for EXPLAIN.
    pub predicate: Option<String>,
}

/// Whether `expr` only references dimension (index or coordinate) columns, so that it can
/// prune chunks.
pub fn is_dimension_filter(model: &TableModel, expr: &Expr) -> bool {
    let refs = expr.column_refs();
    !refs.is_empty()
        && refs.iter().all(|c| {
            model.columns.iter().any(|col| {
                col.name == c.name
                    && matches!(
                        col.source,
                        ColumnSource::Index { .. } | ColumnSource::Coordinate { .. }
                    )
            })
        })
}

/// Per-chunk bounds of the index columns.
pub(crate) struct GridStats {
    /// Column name → (min, max) per chunk.
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

/// Selects the chunks that `filters` (dimension filters only) leave.
pub async fn select_chunks(
    model: &TableModel,
    state: &dyn Session,
    filters: &[Expr],
) -> Result<ChunkSelection> {
    let grid = ReadGrid::of(&model.grid);
    let grid_shape = grid.grid_shape()?;
    let total = grid_shape
        .iter()
        .try_fold(1u64, |acc, &d| acc.checked_mul(d))
        .ok_or_else(|| ZarrError::metadata(&model.display, "chunk count overflows u64"))?;
    let usable: Vec<Expr> = filters
        .iter()
        .filter(|f| is_dimension_filter(model, f))
        .cloned()
        .collect();
    let Some(predicate) = conjunction(usable.clone()) else {
        return Ok(ChunkSelection {
            ids: (0..total).collect(),
            total,
            predicate: None,
        });
    };
    let plan_err = |e: datafusion::error::DataFusionError| {
        ZarrError::metadata(
            &model.display,
            format!("cannot plan the pruning predicate: {e}"),
        )
    };
    let containers = usize::try_from(total)
        .map_err(|_| ZarrError::metadata(&model.display, "too many chunks to prune"))?;

    // Per-chunk extents along each dimension.
    let ndim = model.shape.len();
    let mut starts = vec![Vec::with_capacity(containers); ndim];
    let mut ends = vec![Vec::with_capacity(containers); ndim];
    for id in 0..total {
        let (origin, extent) = grid.bounded(&unravel(id, &grid_shape))?;
        for d in 0..ndim {
            starts[d].push(origin[d]);
            ends[d].push(origin[d] + extent[d]);
        }
    }
    let mut keep = vec![true; containers];

    // Index columns: DataFusion's PruningPredicate over the chunks' index ranges.
    let mut bounds = Vec::new();
    for column in &model.columns {
        if let ColumnSource::Index { dim } = column.source {
            let min = UInt64Array::from(starts[dim].clone());
            let max = UInt64Array::from(
                ends[dim]
                    .iter()
                    .map(|e| e.saturating_sub(1))
                    .collect::<Vec<u64>>(),
            );
            bounds.push((column.name.clone(), min, max));
        }
    }
    let df_schema = DFSchema::try_from(model.schema.as_ref().clone()).map_err(plan_err)?;
    let physical = state
        .create_physical_expr(predicate.clone(), &df_schema)
        .map_err(plan_err)?;
    let pruning = PruningPredicateBuilder::new()
        .with_file_schema(model.schema.clone())
        .try_build(physical)
        .map_err(plan_err)?;
    let stats = GridStats { bounds, containers };
    for (k, v) in keep
        .iter_mut()
        .zip(pruning.prune(&stats).map_err(plan_err)?)
    {
        *k &= v;
    }

    // Coordinate columns: evaluate each coordinate's own conjuncts on its values.
    for column in &model.columns {
        let ColumnSource::Coordinate { dim, array } = &column.source else {
            continue;
        };
        let own: Vec<Expr> = usable
            .iter()
            .filter(|f| f.column_refs().iter().all(|c| c.name == column.name))
            .cloned()
            .collect();
        let Some(expr) = conjunction(own) else {
            continue;
        };
        let len = model.shape[*dim];
        let mut cache = ColumnCache::default();
        let mut counts = ReadCounts::default();
        let region = read_region(
            &model.store,
            array,
            std::slice::from_ref(&(0..len)),
            &model.options,
            &mut cache,
            &mut counts,
        )
        .await?;
        let values = to_arrow(
            array,
            region.elements(),
            0..len as usize,
            &model.options,
            &|i| (String::from("?"), i as u64),
        )?;
        let schema = Arc::new(Schema::new(vec![Field::new(
            &column.name,
            column.data_type.clone(),
            true,
        )]));
        let batch = RecordBatch::try_new(schema.clone(), vec![values.clone()])
            .map_err(|e| ZarrError::metadata(&model.display, e.to_string()))?;
        // A monotonic coordinate answers its comparisons by binary search; the conjuncts
        // binary search cannot answer are evaluated on every value.
        let mut ranges: Vec<Range<usize>> = std::iter::once(0..values.len()).collect();
        let mut rest = Vec::new();
        let direction = coordinate::direction(&values);
        for conjunct in split_conjunction_owned(expr) {
            match direction
                .and_then(|d| coordinate::index_ranges(&values, d, &column.name, &conjunct))
            {
                Some(r) => ranges = coordinate::intersect(&ranges, &r),
                None => rest.push(conjunct),
            }
        }
        let prefix = match conjunction(rest) {
            None => None,
            Some(expr) => {
                let df_schema = DFSchema::try_from(schema.as_ref().clone()).map_err(plan_err)?;
                let physical = state
                    .create_physical_expr(expr, &df_schema)
                    .map_err(plan_err)?;
                let result = physical
                    .evaluate(&batch)
                    .and_then(|v| v.into_array(batch.num_rows()))
                    .map_err(plan_err)?;
                let mask = result
                    .as_any()
                    .downcast_ref::<BooleanArray>()
                    .ok_or_else(|| {
                        ZarrError::metadata(&model.display, "coordinate predicate is not boolean")
                    })?;
                // Prefix counts of matches inside the ranges, so each chunk is checked in O(1).
                let mut prefix = Vec::with_capacity(mask.len() + 1);
                prefix.push(0u64);
                for i in 0..mask.len() {
                    let hit = mask.is_valid(i)
                        && mask.value(i)
                        && coordinate::overlaps(&ranges, i..i + 1);
                    prefix.push(prefix[i] + u64::from(hit));
                }
                Some(prefix)
            }
        };
        for (c, k) in keep.iter_mut().enumerate() {
            let (a, b) = (starts[*dim][c] as usize, ends[*dim][c] as usize);
            *k &= match &prefix {
                Some(prefix) => prefix[b] > prefix[a],
                None => coordinate::overlaps(&ranges, a..b),
            };
        }
    }
    let ids = (0..total).filter(|&id| keep[id as usize]).collect();
    Ok(ChunkSelection {
        ids,
        total,
        predicate: Some(predicate.to_string()),
    })
}
