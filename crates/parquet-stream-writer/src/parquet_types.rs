//! Columns of an Arrow type Parquet cannot annotate, made a type it can, as pyarrow writes
//! them: `Timestamp(Second)` (NumPy's `datetime64[s]`) becomes `Timestamp(Millisecond)`.
//! parquet-rs writes seconds as a bare INT64, which pyarrow, pandas and Spark read as plain
//! integers.

use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow::compute::{CastOptions, cast_with_options};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use datafusion::error::{DataFusionError, Result};
use datafusion::physical_plan::SendableRecordBatchStream;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use futures::StreamExt;

/// `stream` with its `Timestamp(Second)` columns in milliseconds (unchanged if it has none).
pub fn annotatable(stream: SendableRecordBatchStream) -> SendableRecordBatchStream {
    let schema = stream.schema();
    let Some(target) = target_schema(&schema) else {
        return stream;
    };
    let batches = {
        let target = Arc::clone(&target);
        stream.map(move |batch| batch.and_then(|batch| convert(&batch, &target)))
    };
    Box::pin(RecordBatchStreamAdapter::new(target, batches))
}

/// The schema with seconds made milliseconds, or `None` when no column is in seconds.
fn target_schema(schema: &SchemaRef) -> Option<SchemaRef> {
    let seconds = |f: &Field| matches!(f.data_type(), DataType::Timestamp(TimeUnit::Second, _));
    if !schema.fields().iter().any(|f| seconds(f)) {
        return None;
    }
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .map(|f| match f.data_type() {
            DataType::Timestamp(TimeUnit::Second, tz) => f
                .as_ref()
                .clone()
                .with_data_type(DataType::Timestamp(TimeUnit::Millisecond, tz.clone())),
            _ => f.as_ref().clone(),
        })
        .collect();
    Some(Arc::new(Schema::new_with_metadata(
        fields,
        schema.metadata().clone(),
    )))
}

fn convert(batch: &RecordBatch, target: &SchemaRef) -> Result<RecordBatch> {
    // A value beyond ±2^63 milliseconds is an error, not NULL.
    let checked = CastOptions {
        safe: false,
        ..Default::default()
    };
    let columns = batch
        .columns()
        .iter()
        .zip(target.fields())
        .map(|(column, field)| {
            if column.data_type() == field.data_type() {
                return Ok(Arc::clone(column));
            }
            cast_with_options(column, field.data_type(), &checked).map_err(|e| {
                DataFusionError::Execution(format!(
                    "column {}: a timestamp in seconds that milliseconds cannot hold, which \
                     Parquet needs ({e})",
                    field.name()
                ))
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(RecordBatch::try_new(Arc::clone(target), columns)?)
}

#[cfg(test)]
mod tests {
    use arrow::array::{Array, AsArray, Int64Array, TimestampSecondArray};
    use arrow::datatypes::TimestampMillisecondType;
    use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
    use futures::TryStreamExt;

    use super::*;

    fn stream(batch: RecordBatch) -> SendableRecordBatchStream {
        let schema = batch.schema();
        Box::pin(RecordBatchStreamAdapter::new(
            schema,
            futures::stream::iter([Ok(batch)]),
        ))
    }

    #[tokio::test]
    async fn seconds_become_milliseconds_and_overflow_is_an_error() {
        let seconds = TimestampSecondArray::from(vec![Some(-62_135_596_800), None, Some(1)]);
        let other = Int64Array::from(vec![1, 2, 3]);
        let batch = RecordBatch::try_from_iter([
            ("t", Arc::new(seconds) as _),
            ("n", Arc::new(other) as _),
        ])
        .unwrap();
        let out: Vec<RecordBatch> = annotatable(stream(batch)).try_collect().await.unwrap();
        let t = out[0].column(0).as_primitive::<TimestampMillisecondType>();
        assert_eq!(t.value(0), -62_135_596_800_000);
        assert!(t.is_null(1));
        assert_eq!(t.value(2), 1000);
        assert_eq!(out[0].schema().field(1).data_type(), &DataType::Int64);

        let huge = TimestampSecondArray::from(vec![i64::MAX / 10]);
        let batch = RecordBatch::try_from_iter([("when", Arc::new(huge) as _)]).unwrap();
        let e = annotatable(stream(batch))
            .try_collect::<Vec<_>>()
            .await
            .unwrap_err();
        assert!(e.to_string().contains("column when"), "{e}");
    }
}
