//! A stream of record batches written to one Parquet file with our writer, atomically, and
//! the file's `sorting_columns`: shared by `zarr-sql export` / `write_parquet` and `COPY`.

use std::path::Path;

use arrow::datatypes::Schema;
use datafusion::common::config::TableParquetOptions;
use datafusion::error::{DataFusionError, Result};
use datafusion::physical_expr::LexOrdering;
use datafusion::physical_plan::expressions::Column;
use parquet::file::metadata::{KeyValue, SortingColumn};
use parquet::file::properties::WriterPropertiesBuilder;

use crate::staging::AtomicTarget;
use parquet_stream_writer::{annotatable, write_stream};

/// Parquet's `sorting_columns` for `ordering` over `schema` (flat): what DataFusion's sink
/// records, so readers know the file's order. `None` when a sort key is not a plain column.
pub(super) fn sorting_columns(
    ordering: &LexOrdering,
    schema: &Schema,
) -> Option<Vec<SortingColumn>> {
    if schema.fields().iter().any(|f| f.data_type().is_nested()) {
        return None;
    }
    ordering
        .iter()
        .map(|sort| {
            let column = sort.expr.downcast_ref::<Column>()?;
            let index = schema.index_of(column.name()).ok()?;
            Some(SortingColumn {
                column_idx: i32::try_from(index).ok()?,
                descending: sort.options.descending,
                nulls_first: sort.options.nulls_first,
            })
        })
        .collect()
}

/// Writes `stream` to the Parquet file `target` with our writer, atomically, `parallelism` row
/// groups at once. As DataFusion's sink does, the footer records the rows' order (`sorting`)
/// and, unless the options skip it, the Arrow schema. Shared by exports and COPY.
pub(super) async fn write_stream_to(
    stream: datafusion::physical_plan::SendableRecordBatchStream,
    target: &Path,
    mut options: TableParquetOptions,
    sorting: Option<Vec<parquet::file::metadata::SortingColumn>>,
    parallelism: usize,
) -> Result<u64> {
    let atomic = AtomicTarget::new(target)?;
    let stream = annotatable(stream);
    if !options.global.skip_arrow_metadata {
        options.arrow_schema(&stream.schema());
    }
    // The footer's key-value pairs sorted by key (DataFusion's options hold them in a hash
    // map), so that the same export writes the same bytes every time.
    let mut key_values: Vec<KeyValue> = options
        .key_value_metadata
        .iter()
        .map(|(key, value)| KeyValue::new(key.clone(), value.clone()))
        .collect();
    key_values.sort_by(|a, b| a.key.cmp(&b.key));
    let props = WriterPropertiesBuilder::try_from(&options)?
        .set_key_value_metadata((!key_values.is_empty()).then_some(key_values))
        .set_sorting_columns(sorting)
        .build();
    let file = std::fs::File::create(atomic.temp_path()).map_err(|e| {
        DataFusionError::Execution(format!("cannot write {}: {e}", target.display()))
    })?;
    let rows = write_stream(stream, file, target, props, parallelism).await?;
    atomic.commit()?;
    Ok(rows)
}
