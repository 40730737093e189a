//! The CF conventions, read and written in one place: [`units`] the one table of time units
//! (CF names, Arrow units, NumPy codes) and NumPy's `NaT`, [`attributes`] an array's CF
//! attributes read into a decoding plan, [`decode`] stored numbers decoded by that plan, and
//! [`encode`] the write side (the attributes a time, date or duration column gets, and values
//! encoded into an existing array's units).
//!
//! A leaf: it knows Arrow types and JSON attributes, not nodes, scans or writes; `node` reads
//! the attributes through it, `scan` decodes through it and `write` encodes through it.

pub(crate) mod attributes;
pub(crate) mod decode;
pub(crate) mod encode;
pub(crate) mod units;

pub use attributes::{CfDecoding, CfKind, TextEncoding};
pub(crate) use units::NAT;
