//! # datafusion-zarr
//!
//! Zarr V3 `fixed_length_utf32` string arrays (NumPy's `<U`/`>U`, Zarr V2's native strings) and
//! the arrays beside them as Apache Arrow tables in DataFusion.
//!
//! ```no_run
//! # async fn demo() -> datafusion::error::Result<()> {
//! use datafusion::prelude::SessionContext;
//! let ctx = SessionContext::new();
//! datafusion_zarr::register(&ctx);
//! ctx.sql("SELECT * FROM read_zarr('tests/data/corpus/00_zarr_python_defaults_U7/data.zarr')")
//!     .await?
//!     .show()
//!     .await?;
//! # Ok(()) }
//! ```
//!
//! The data flows `store` → `node` → `table` → `scan` → DataFusion; see the README's design
//! section. The transcoding kernels live in the `zarr-utf32` crate of this workspace.

#![warn(missing_docs)]

pub mod codecs;
pub mod error;
pub mod export;
pub mod factory;
#[doc(hidden)]
pub mod fuzzing;
pub mod guards;
pub mod inspect;
pub mod node;
pub mod options;
pub mod progress;
pub mod provider;
pub mod scan;
pub mod store;
pub mod table;

use std::sync::Arc;

use datafusion::prelude::SessionContext;

pub use error::ZarrError;
pub use factory::{ReadZarrFunction, ZarrTableFactory};
pub use options::{InvalidUtf32, StringType, ZarrOptions};
pub use progress::ScanProgress;
pub use provider::ZarrTable;

/// Registers `STORED AS ZARR` and the `read_zarr` table function on `ctx`.
pub fn register(ctx: &SessionContext) {
    ctx.state_ref()
        .write()
        .table_factories_mut()
        .insert("ZARR".to_string(), Arc::new(ZarrTableFactory));
    ctx.register_udtf("read_zarr", Arc::new(ReadZarrFunction));
}
