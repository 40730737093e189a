//! Pruning on coordinate columns: each coordinate's own conjuncts are answered on its values
//! (read once, whole: a coordinate is a 1-D array as long as its dimension; one larger than
//! [`MAX_WHOLE_COORDINATE_BYTES`] or `max_chunk_bytes` is not read), by binary search
//! where the coordinate is monotonic, else by evaluating them on every value. A unit is kept
//! only if its range along the coordinate's dimension holds a matching value.

use std::ops::Range;
use std::sync::Arc;

use arrow::array::{Array, BooleanArray, RecordBatch};
use arrow::datatypes::{Field, Schema};
use datafusion::physical_expr::utils::{reassign_expr_columns, split_conjunction};
use datafusion::physical_expr::{conjunction_opt, utils::collect_columns};
use datafusion::physical_plan::PhysicalExpr;

use super::monotonic::{self, intersect, overlaps};
use super::unit_ranges::UnitRanges;
use crate::error::{Result, ZarrError};
use crate::scan::convert::to_arrow;
use crate::scan::fetch::ReadCounts;
use crate::scan::filter::ScanFilter;
use crate::scan::read::{ColumnCache, read_region};
use crate::table::{ColumnSource, TableModel};

/// The largest coordinate (declared decoded bytes) read whole to prune by it, if
/// `max_chunk_bytes` is not smaller: 16 million `float64` values, far more than the
/// coordinates of real grids and time series, which are 1-D and small beside their data.
pub(crate) const MAX_WHOLE_COORDINATE_BYTES: u64 = 128 << 20;

/// Clears in `keep` the units that no coordinate value matching `filters` falls in.
pub(super) async fn prune(
    model: &TableModel,
    ranges: &UnitRanges,
    filters: &[&ScanFilter],
    keep: &mut [bool],
) -> Result<()> {
    for column in &model.columns {
        let ColumnSource::Coordinate { dim, array } = &column.source else {
            continue;
        };
        // The conjuncts on this coordinate alone.
        let own: Vec<Arc<dyn PhysicalExpr>> = filters
            .iter()
            .filter(|f| {
                collect_columns(&f.expr)
                    .iter()
                    .all(|c| c.name() == column.name)
            })
            .flat_map(|f| split_conjunction(&f.expr).into_iter().cloned())
            .collect();
        if own.is_empty() {
            continue;
        }
        let len = model.shape[*dim];
        // Read whole only within a bound: a coordinate of 2^28 float64 values (2 GiB, in
        // metadata of a few hundred bytes) took 4 GiB to plan. Beyond it, the filter is left
        // to the scan's, as for a grid of more than MAX_PLANNED_UNITS chunks.
        if array.declared_bytes(&[len]) > model.limits.chunk.bytes.min(MAX_WHOLE_COORDINATE_BYTES) {
            continue;
        }
        let region = read_region(
            &model.store,
            array,
            std::slice::from_ref(&(0..len)),
            &model.limits,
            &mut ColumnCache::default(),
            &mut ReadCounts::default(),
        )
        .await?;
        let values = to_arrow(
            array,
            region.elements(),
            0..len as usize,
            &column.plan,
            &|i| (String::from("?"), i as u64),
        )?;
        // A monotonic coordinate answers its comparisons by binary search; the conjuncts
        // binary search cannot answer are evaluated on every value.
        let mut matching: Vec<Range<usize>> = std::iter::once(0..values.len()).collect();
        let mut rest = Vec::new();
        let direction = monotonic::direction(&values);
        for conjunct in own {
            match direction
                .and_then(|d| monotonic::index_ranges(&values, d, &column.name, &conjunct))
            {
                Some(r) => matching = intersect(&matching, &r),
                None => rest.push(conjunct),
            }
        }
        let internal = |e: datafusion::error::DataFusionError| {
            ZarrError::internal(format!(
                "evaluating a filter on coordinate {}: {e}",
                column.name
            ))
        };
        // Prefix counts of matching values, so each unit is checked in O(1).
        let prefix = match conjunction_opt(rest) {
            None => None,
            Some(expr) => {
                let schema = Arc::new(Schema::new(vec![Field::new(
                    &column.name,
                    column.plan.data_type.clone(),
                    true,
                )]));
                let batch = RecordBatch::try_new(schema.clone(), vec![values.clone()])
                    .map_err(|e| internal(e.into()))?;
                let result = reassign_expr_columns(expr, &schema)
                    .and_then(|e| e.evaluate(&batch))
                    .and_then(|v| v.into_array(batch.num_rows()))
                    .map_err(internal)?;
                let mask = result
                    .as_any()
                    .downcast_ref::<BooleanArray>()
                    .ok_or_else(|| {
                        ZarrError::internal(format!(
                            "evaluating a filter on coordinate {}: not boolean",
                            column.name
                        ))
                    })?;
                let mut prefix = Vec::with_capacity(mask.len() + 1);
                prefix.push(0u64);
                for i in 0..mask.len() {
                    let hit = mask.is_valid(i) && mask.value(i) && overlaps(&matching, i..i + 1);
                    prefix.push(prefix[i] + u64::from(hit));
                }
                Some(prefix)
            }
        };
        for (unit, k) in keep.iter_mut().enumerate() {
            let (a, b) = (
                ranges.starts[*dim][unit] as usize,
                ranges.ends[*dim][unit] as usize,
            );
            *k &= match &prefix {
                Some(prefix) => prefix[b] > prefix[a],
                None => overlaps(&matching, a..b),
            };
        }
    }
    Ok(())
}
