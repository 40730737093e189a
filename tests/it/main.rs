//! The library's integration tests, as modules of one binary (each test binary links all of
//! DataFusion). The memory bounds are in `tests/memory`, a binary of their own.

mod climate;
mod concurrency;
mod corpus;
mod differential;
#[cfg(feature = "ballista")]
mod distributed;
mod docs;
mod export_writer;
mod fixtures;
mod fuzz_regressions;
#[cfg(feature = "icechunk")]
mod icechunk;
#[cfg(feature = "icechunk")]
mod icechunk_write;
mod io;
mod limits;
mod malformed;
mod metadata;
mod ordered;
mod references;
mod remote;
mod session_options;
mod slt;
mod statistics;
mod write;
mod write_remote;
