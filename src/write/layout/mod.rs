//! The layouts rows are written in, siblings that share the column, element, chunk and target
//! steps but not each other: [`table`] (a group of 1-D arrays along one dimension), [`grid`]
//! (the N-D layout of option `dimensions`) and [`append`] (`INSERT INTO` an existing table).

pub(super) mod append;
pub(super) mod grid;
pub(super) mod table;
