//! The work units a scan reads after pruning ([`ChunkSelection`]), chosen by
//! [`select_chunks`] from the filters on index and coordinate columns.

use std::ops::Range;

use datafusion::logical_expr::utils::conjunction;

use crate::error::{Result, ZarrError};
use crate::scan::filter::ScanFilter;
use crate::scan::grid::{UnitGrid, unravel};
use crate::table::TableModel;

use super::unit_ranges::UnitRanges;
use super::{coordinate, index};

/// The most units planning looks at one by one. A grid with more (metadata can declare
/// 2^40 one-element chunks in a few bytes) is pruned by blocks of consecutive units
/// ([`select_blocks`]: index predicates only), and its partitions' row counts are left unknown:
/// planning stays bounded in time and memory whatever the metadata says. The scan reads the
/// units of the blocks kept one by one, and dynamic filters still skip units while it runs.
pub(crate) const MAX_PLANNED_UNITS: u64 = 1 << 20;

/// The work units a scan reads after pruning.
#[derive(Debug, Clone)]
pub(crate) struct ChunkSelection {
    /// Runs of unit ids (C order over the grid array's read grid) that may hold matching rows.
    pub(crate) runs: Vec<Range<u64>>,
    /// Units in the grid.
    pub(crate) total: u64,
    /// The predicate used, for EXPLAIN.
    pub(crate) predicate: Option<String>,
}

impl ChunkSelection {
    /// Units selected.
    pub(crate) fn selected(&self) -> u64 {
        // Saturating: the runs of a plan from another process are checked against the grid
        // one by one, and may overlap.
        (self.runs.iter()).fold(0u64, |n, r| n.saturating_add(r.end.saturating_sub(r.start)))
    }

    /// Units pruned.
    pub(crate) fn pruned(&self) -> u64 {
        self.total.saturating_sub(self.selected())
    }
}

/// Selects the units that the dimension filters among `filters` leave.
pub(crate) async fn select_chunks(
    model: &TableModel,
    units: &UnitGrid,
    filters: &[ScanFilter],
) -> Result<ChunkSelection> {
    let total = units.count();
    let usable: Vec<&ScanFilter> = filters
        .iter()
        .filter(|f| f.is_dimension_filter(model))
        .collect();
    if usable.is_empty() {
        return Ok(ChunkSelection {
            runs: std::iter::once(0..total).collect(),
            total,
            predicate: None,
        });
    }
    if total > MAX_PLANNED_UNITS {
        return select_blocks(model, units, &usable);
    }
    let containers = usize::try_from(total)
        .map_err(|_| ZarrError::metadata(&model.display, "too many chunks to prune"))?;
    let ranges = UnitRanges::of(units, containers)?;
    let mut keep = index::prune(model, &ranges, &usable, containers)?;
    coordinate::prune(model, &ranges, &usable, &mut keep).await?;
    let mut runs: Vec<Range<u64>> = Vec::new();
    for id in (0..total).filter(|&id| keep[id as usize]) {
        match runs.last_mut() {
            Some(r) if r.end == id => r.end += 1,
            _ => runs.push(id..id + 1),
        }
    }
    Ok(ChunkSelection {
        runs,
        total,
        predicate: Some(display(&usable)),
    })
}

/// [`select_chunks`] for a grid of more than [`MAX_PLANNED_UNITS`] units: the index predicates
/// are applied to at most [`MAX_PLANNED_UNITS`] blocks of consecutive units (C order), each
/// seen as the box that holds all its units, and the units of the blocks kept are read. Along
/// each dimension a block's box is exact while the block's first and last unit share their
/// grid indices before it, and the whole extent after. Coordinate predicates (which read the
/// coordinate) are left to the scan's filter. Without this, `WHERE dim_0 >= 9999998` over 10
/// million chunks read every chunk.
fn select_blocks(
    model: &TableModel,
    units: &UnitGrid,
    filters: &[&ScanFilter],
) -> Result<ChunkSelection> {
    let total = units.count();
    let per_block = total.div_ceil(MAX_PLANNED_UNITS);
    let blocks = total.div_ceil(per_block);
    let containers = usize::try_from(blocks)
        .map_err(|_| ZarrError::metadata(&model.display, "too many chunks to prune"))?;
    let ndim = units.shape().len();
    let mut ranges = UnitRanges {
        starts: vec![Vec::with_capacity(containers); ndim],
        ends: vec![Vec::with_capacity(containers); ndim],
    };
    for block in 0..blocks {
        // `block * per_block < total`; the next block's start saturates (it may pass u64).
        let end = ((block + 1).saturating_mul(per_block)).min(total);
        let (first, last) = (block * per_block, end - 1);
        let (first_origin, _) = units.bounds(first)?;
        let (last_origin, last_extent) = units.bounds(last)?;
        let (first_at, last_at) = (unravel(first, units.shape()), unravel(last, units.shape()));
        for d in 0..ndim {
            let exact = first_at[..d] == last_at[..d];
            let (start, end) = match exact {
                true => (
                    first_origin[d],
                    last_origin[d].saturating_add(last_extent[d]),
                ),
                false => (0, model.shape.get(d).copied().unwrap_or(u64::MAX)),
            };
            ranges.starts[d].push(start);
            ranges.ends[d].push(end);
        }
    }
    let keep = index::prune(model, &ranges, filters, containers)?;
    let mut runs: Vec<Range<u64>> = Vec::new();
    for block in (0..blocks).filter(|&b| keep[b as usize]) {
        let units = block * per_block..((block + 1).saturating_mul(per_block)).min(total);
        match runs.last_mut() {
            Some(r) if r.end == units.start => r.end = units.end,
            _ => runs.push(units),
        }
    }
    Ok(ChunkSelection {
        runs,
        total,
        predicate: Some(display(filters)),
    })
}

/// How EXPLAIN shows the pruning predicate: the conjunction of the filters, logically written
/// where they came from the logical plan.
fn display(filters: &[&ScanFilter]) -> String {
    match filters
        .iter()
        .map(|f| f.logical.clone())
        .collect::<Option<Vec<_>>>()
        .and_then(conjunction)
    {
        Some(logical) => logical.to_string(),
        None => filters
            .iter()
            .map(|f| f.display())
            .collect::<Vec<_>>()
            .join(" AND "),
    }
}
