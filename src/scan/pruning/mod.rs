//! Predicates → chunks: which work units of the table can hold a matching row.
//!
//! - Index columns ([`index`]): DataFusion's `PruningPredicate` over per-unit statistics (each
//!   unit's first and last index along every dimension), so `=`, `<`, `BETWEEN`, `IN`, `AND`,
//!   `OR` and the rest work as they do for Parquet row groups.
//! - Coordinate columns ([`coordinate`]): the conjuncts on one coordinate are answered on the
//!   coordinate's values (a 1-D array): by binary search when the coordinate is monotonic
//!   ([`monotonic`]), else by evaluating the expression on every value. A unit is kept only if
//!   its range along that dimension holds a matching value.
//!
//! Pruning is inexact: DataFusion still filters the rows of the units that are read.

mod coordinate;
mod index;
mod monotonic;
mod select;
mod unit_ranges;

pub(crate) use index::GridStats;
pub(crate) use select::{ChunkSelection, MAX_PLANNED_UNITS, select_chunks};
