//! The CLI's integration tests, as modules of one binary (each test binary links all of
//! DataFusion).

mod cli;
#[cfg(feature = "ballista")]
mod cluster;
mod common;
mod convert;
mod docs;
mod export;
mod many_writers;
mod remote;
mod session_options;
mod write_interrupt;
