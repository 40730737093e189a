//! Each work unit's index range along each dimension ([`UnitRanges`]), which the index and
//! coordinate pruners both test a predicate's ranges against.

use crate::error::Result;
use crate::scan::grid::UnitGrid;

/// Each unit's index range along each dimension: `starts[d][u]..ends[d][u]`.
pub(crate) struct UnitRanges {
    pub(super) starts: Vec<Vec<u64>>,
    pub(super) ends: Vec<Vec<u64>>,
}

impl UnitRanges {
    pub(super) fn of(units: &UnitGrid, containers: usize) -> Result<Self> {
        let ndim = units.shape().len();
        let mut starts = vec![Vec::with_capacity(containers); ndim];
        let mut ends = vec![Vec::with_capacity(containers); ndim];
        for id in 0..units.count() {
            let (origin, extent) = units.bounds(id)?;
            for d in 0..ndim {
                starts[d].push(origin[d]);
                // A unit's box is cut to the array's bounds: its end is at most the shape.
                ends[d].push(origin[d].saturating_add(extent[d]));
            }
        }
        Ok(Self { starts, ends })
    }
}
