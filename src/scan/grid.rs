//! The grid a scan reads an array by: its chunks, or for a sharded array the inner chunks of
//! its shards, so that pruning and reads work at the finest granularity the store allows.

use std::ops::Range;

use crate::error::{Result, ZarrError};
use crate::node::ArrayNode;

/// An array's read grid.
#[derive(Debug, Clone)]
pub enum ReadGrid<'a> {
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
    pub fn of(node: &'a ArrayNode) -> Self {
        match &node.inner {
            Some(inner) => ReadGrid::Regular {
                shape: &node.shape,
                chunk: &inner.shape,
            },
            None => ReadGrid::Chunks(node),
        }
    }

    /// Chunks along each dimension.
    pub fn grid_shape(&self) -> Result<Vec<u64>> {
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
    pub fn bounded(&self, indices: &[u64]) -> Result<(Vec<u64>, Vec<u64>)> {
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
    pub fn intersecting(&self, region: &[Range<u64>]) -> Result<Vec<Vec<u64>>> {
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
