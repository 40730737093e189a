//! Grid geometry: the grid a scan reads an array by (its chunks, or for a sharded array the
//! inner chunks of its shards, so that pruning and reads work at the finest granularity the
//! store allows), and the table's work units, the cells of its grid array's read grid
//! numbered in C order.

use std::ops::Range;
use std::sync::Arc;

use crate::error::{Result, ZarrError};
use crate::node::ArrayNode;
use crate::table::TableModel;

/// A table's work units: the read grid of its grid array, with its shape computed once.
#[derive(Debug, Clone)]
pub(crate) struct UnitGrid {
    array: Arc<ArrayNode>,
    shape: Vec<u64>,
    count: u64,
    /// The lengths of the table's dimensions beyond the grid array's (a product over the
    /// union of the arrays' dimensions): each unit spans them whole.
    extra: Vec<u64>,
}

impl UnitGrid {
    /// The work units of `model`.
    pub(crate) fn of(model: &TableModel) -> Result<Self> {
        let array = model.grid.clone();
        let mut shape = ReadGrid::of(&array).grid_shape()?;
        let extra = model
            .shape
            .get(array.shape.len()..)
            .unwrap_or_default()
            .to_vec();
        shape.extend(extra.iter().map(|_| 1));
        let count = shape
            .iter()
            .try_fold(1u64, |acc, &d| acc.checked_mul(d))
            .ok_or_else(|| ZarrError::metadata(&model.display, "chunk count overflows u64"))?;
        if !extra.is_empty() {
            // A unit of a product spans the other dimensions whole, and every column is
            // materialised per row: held to max_chunk_bytes as a chunk is.
            let zeros = vec![0u64; array.shape.len()];
            let (_, chunk) = ReadGrid::of(&array).bounded(&zeros)?;
            let rows = (chunk.iter().chain(&extra)).try_fold(1u64, |acc, &d| acc.checked_mul(d));
            let row_bytes = (model.columns.iter())
                .map(|c| match &c.source {
                    crate::table::ColumnSource::Index { .. } => 8,
                    crate::table::ColumnSource::Coordinate { array, .. }
                    | crate::table::ColumnSource::Broadcast { array, .. }
                    | crate::table::ColumnSource::Value { array } => array.element_bytes(),
                })
                .fold(0u64, u64::saturating_add);
            let what = "a unit of the table (a chunk of its grid array by the whole of the \
                        product's other dimensions)";
            let bytes = rows.and_then(|r| r.checked_mul(row_bytes));
            model.limits.chunk.check(&model.display, what, bytes)?;
        }
        Ok(Self {
            array,
            shape,
            count,
            extra,
        })
    }

    /// Units along each dimension.
    pub(crate) fn shape(&self) -> &[u64] {
        &self.shape
    }

    /// Number of units.
    pub(crate) fn count(&self) -> u64 {
        self.count
    }

    /// Origin and extent (cut to the array's bounds) of unit `id`.
    pub(crate) fn bounds(&self, id: u64) -> Result<(Vec<u64>, Vec<u64>)> {
        let mut indices = unravel(id, &self.shape);
        indices.truncate(self.array.shape.len());
        let (mut origin, mut extent) = ReadGrid::of(&self.array).bounded(&indices)?;
        origin.extend(self.extra.iter().map(|_| 0));
        extent.extend_from_slice(&self.extra);
        Ok((origin, extent))
    }

    /// The box of unit `id`: one range of elements per dimension.
    pub(crate) fn region(&self, id: u64) -> Result<Vec<Range<u64>>> {
        let (origin, extent) = self.bounds(id)?;
        Ok(origin
            .iter()
            .zip(&extent)
            .map(|(&o, &e)| o..o + e)
            .collect())
    }

    /// Rows (elements) of unit `id`.
    pub(crate) fn rows(&self, id: u64) -> Result<u64> {
        let (_, extent) = self.bounds(id)?;
        extent
            .iter()
            .try_fold(1u64, |acc, &d| acc.checked_mul(d))
            .ok_or_else(|| ZarrError::metadata(&self.array.display, "a chunk has too many rows"))
    }
}

/// Linear chunk id → grid indices (C order).
pub(crate) fn unravel(mut id: u64, grid_shape: &[u64]) -> Vec<u64> {
    let mut indices = vec![0u64; grid_shape.len()];
    for d in (0..grid_shape.len()).rev() {
        let n = grid_shape[d].max(1);
        indices[d] = id % n;
        id /= n;
    }
    indices
}

/// An array's read grid.
#[derive(Debug, Clone)]
pub(crate) enum ReadGrid<'a> {
    /// The array's own chunk grid, via zarrs.
    Chunks(&'a ArrayNode),
    /// A regular grid of inner chunks (sharded arrays).
    Regular {
        /// The array shape.
        shape: &'a [u64],
        /// The inner chunk shape.
        chunk: &'a [u64],
    },
}

impl<'a> ReadGrid<'a> {
    /// The grid `node` is read by.
    pub(crate) fn of(node: &'a ArrayNode) -> Self {
        match &node.inner {
            Some(inner) => ReadGrid::Regular {
                shape: &node.shape,
                chunk: &inner.shape,
            },
            None => ReadGrid::Chunks(node),
        }
    }

    /// Chunks along each dimension.
    pub(crate) fn grid_shape(&self) -> Result<Vec<u64>> {
        match self {
            ReadGrid::Chunks(node) => Ok(node.zarrs()?.chunk_grid_shape().to_vec()),
            ReadGrid::Regular { shape, chunk } => Ok(shape
                .iter()
                .zip(chunk.iter())
                .map(|(s, c)| s.div_ceil(*c))
                .collect()),
        }
    }

    /// Origin and shape of the chunk at `indices`, cut to the array's bounds.
    pub(crate) fn bounded(&self, indices: &[u64]) -> Result<(Vec<u64>, Vec<u64>)> {
        match self {
            ReadGrid::Chunks(node) => {
                let subset = node
                    .zarrs()?
                    .chunk_subset_bounded(indices)
                    .map_err(|e| ZarrError::metadata(&node.display, e.to_string()))?;
                Ok((subset.start().to_vec(), subset.shape().to_vec()))
            }
            ReadGrid::Regular { shape, chunk } => {
                let origin: Vec<u64> = indices
                    .iter()
                    .zip(chunk.iter())
                    .map(|(i, c)| i * c)
                    .collect();
                let extent = origin
                    .iter()
                    .zip(chunk.iter().zip(shape.iter()))
                    .map(|(o, (c, s))| (*c).min(s.saturating_sub(*o)))
                    .collect();
                Ok((origin, extent))
            }
        }
    }

    /// Indices of the chunks that intersect `region`, in C order.
    pub(crate) fn intersecting(&self, region: &[Range<u64>]) -> Result<Vec<Vec<u64>>> {
        let ranges: Vec<Range<u64>> = match self {
            ReadGrid::Chunks(node) => {
                let subset = zarrs::array::ArraySubset::new_with_ranges(region);
                let chunks = node
                    .zarrs()?
                    .chunks_in_array_subset(&subset)
                    .map_err(|e| ZarrError::metadata(&node.display, e.to_string()))?
                    .ok_or_else(|| {
                        ZarrError::metadata(
                            &node.display,
                            format!("region {region:?} is outside the chunk grid"),
                        )
                    })?;
                chunks.to_ranges()
            }
            ReadGrid::Regular { chunk, .. } => region
                .iter()
                .zip(chunk.iter())
                .map(|(r, c)| {
                    if r.start >= r.end {
                        r.start / c..r.start / c
                    } else {
                        r.start / c..(r.end - 1) / c + 1
                    }
                })
                .collect(),
        };
        // The odometer over the ranges.
        let mut out = Vec::new();
        if ranges.iter().any(|r| r.start >= r.end) {
            return Ok(out);
        }
        let mut pos: Vec<u64> = ranges.iter().map(|r| r.start).collect();
        loop {
            out.push(pos.clone());
            let mut d = pos.len();
            loop {
                if d == 0 {
                    return Ok(out);
                }
                d -= 1;
                pos[d] += 1;
                if pos[d] < ranges[d].end {
                    break;
                }
                pos[d] = ranges[d].start;
            }
        }
    }
}
