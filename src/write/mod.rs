//! Writing Zarr. The spine, one step a module: a sink hands over a stream of batches
//! (`COPY … STORED AS ZARR` through [`format`](mod@format), `INSERT INTO` through the table provider's
//! insert sink, the CLI's `convert` and Python's `write_zarr` through [`write_zarr`]); a layout
//! lays the rows out as arrays (`layout`: the table, the N-D grid, the append to an existing
//! table); each column becomes an array (`column`: its data type, string width and NULL rule,
//! CF attributes from the crate's `cf`) whose values become elements (`elements`: a NULL's
//! element among them); elements are encoded into chunks through zarrs' codecs (`chunk`);
//! chunks and metadata go to a target that keeps them out of sight until the write is complete
//! (`target`); the target commits, or removes what it wrote (`finish`). The options are
//! [`options`].

mod chunk;
mod column;
mod elements;
pub mod format;
mod layout;
pub mod options;
mod target;

use std::sync::Arc;

use datafusion::execution::runtime_env::RuntimeEnv;
use datafusion::physical_plan::SendableRecordBatchStream;

use crate::error::{Result, ZarrError};
use crate::table::TableModel;
pub use format::{ZarrFormat, ZarrFormatFactory};
pub use options::WriteOptions;
use target::Target;

/// Writes `stream` as a Zarr store at `location` (a path or URL) with `options`, and returns
/// the number of rows written: the entry point of `COPY … STORED AS ZARR`, the CLI's `convert`
/// and Python's `write_zarr`. Remote locations use the object stores of a default runtime
/// (built from `options`' storage options and the environment); see [`write_zarr_in`].
pub async fn write_zarr(
    stream: SendableRecordBatchStream,
    location: &str,
    options: &WriteOptions,
) -> Result<u64> {
    write_zarr_in(&RuntimeEnv::default(), stream, location, options).await
}

/// [`write_zarr`] with the object stores registered in `runtime`.
pub async fn write_zarr_in(
    runtime: &RuntimeEnv,
    stream: SendableRecordBatchStream,
    location: &str,
    options: &WriteOptions,
) -> Result<u64> {
    // The grid's columns are checked before anything is created.
    let grid = match options.dimensions.is_empty() {
        true => None,
        false => Some(layout::grid::GridLayout::new(&stream.schema(), options)?),
    };
    let target = Arc::new(Target::create(runtime, location, options).await?);
    let mut options = target.options_for(options);
    if options.keep_attributes {
        // A group's table keeps the group's attributes; those given as an option win.
        let schema = stream.schema();
        let key = crate::field_metadata::GROUP_ATTRIBUTES;
        if let Some(mut group) = crate::field_metadata::attributes_in(schema.metadata(), key) {
            group.extend(std::mem::take(&mut options.attributes));
            options.attributes = group;
        }
    }
    let options = &options;
    let result = match grid {
        None => layout::table::write_table(stream, &target, options).await,
        Some(grid) => layout::grid::write_grid(runtime, grid, stream, &target, options).await,
    };
    finish(target, result).await
}

/// Appends `stream` (rows of `model`'s schema) to `model`'s store in place, under the store's
/// `lock` (released after the commit); returns the rows appended (`INSERT INTO`).
pub(crate) async fn append(
    model: &TableModel,
    stream: SendableRecordBatchStream,
    lock: crate::staging::WriterLock,
) -> Result<u64> {
    let target = Target::in_place(&model.store, &WriteOptions::default(), lock);
    append_through(model, stream, target).await
}

/// [`append`] in a session `write` of the branch of the Icechunk repository at `store`,
/// committed once with `message`.
#[cfg(feature = "icechunk")]
pub(crate) async fn append_to_branch(
    model: &TableModel,
    stream: SendableRecordBatchStream,
    store: &crate::store::ZarrStore,
    write: crate::icechunk::RepositoryWrite,
    message: String,
) -> Result<u64> {
    let target = Target::in_repository(store, write, message);
    append_through(model, stream, target).await
}

/// Appends `stream` to `model` through `target`: the table is checked before a row is read.
async fn append_through(
    model: &TableModel,
    stream: SendableRecordBatchStream,
    target: Target,
) -> Result<u64> {
    let columns = layout::append::plan(model).await?;
    let target = Arc::new(target);
    let result = layout::append::append_rows(model, &columns, stream, &target).await;
    finish(target, result).await
}

/// Commits `target` after a successful write, removes what it wrote after a failed one.
async fn finish(target: Arc<Target>, result: Result<u64>) -> Result<u64> {
    let Ok(mut target) = Arc::try_unwrap(target) else {
        return Err(ZarrError::internal("a write's target still in use"));
    };
    let result = match result {
        Ok(rows) => target.commit().await.map(|()| rows),
        Err(e) => Err(e),
    };
    if result.is_err() {
        target.abort().await;
    }
    result
}
