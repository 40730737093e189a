//! The Rust examples of the README and the user guide (docs/), compiled and run by
//! `cargo test` as doctests, so that a document that no longer matches the code fails. The
//! `sh`, `sql` and `python` examples run in zarr-sql's and the Python package's tests.

#[doc = include_str!("../README.md")]
struct Readme;

#[doc = include_str!("../docs/architecture.md")]
struct Architecture;

#[doc = include_str!("../docs/cli.md")]
struct Cli;

#[doc = include_str!("../docs/library.md")]
struct Library;

#[cfg(feature = "icechunk")]
#[doc = include_str!("../docs/icechunk.md")]
struct Icechunk;

#[doc = include_str!("../docs/limits.md")]
struct Limits;

#[doc = include_str!("../docs/performance.md")]
struct Performance;

#[doc = include_str!("../docs/reference-sets.md")]
struct ReferenceSets;

#[doc = include_str!("../docs/remote-stores.md")]
struct RemoteStores;

#[doc = include_str!("../docs/scaling.md")]
struct Scaling;

#[doc = include_str!("../docs/table-model.md")]
struct TableModel;

#[doc = include_str!("../docs/testing.md")]
struct Testing;

#[doc = include_str!("../docs/writing.md")]
struct Writing;

#[doc = include_str!("../python/README.md")]
struct PythonPackage;
