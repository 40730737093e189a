//! A table's rows as an Arrow C stream (`__arrow_c_stream__`), for pyarrow, polars and any
//! reader of the Arrow PyCapsule interface without a DataFusion session: the same scan as
//! `SELECT * FROM t`, its batches pulled one at a time on this library's runtime.

use std::sync::Arc;

use arrow::array::{RecordBatch, RecordBatchReader};
use arrow::datatypes::SchemaRef;
use arrow::error::ArrowError;
use datafusion::execution::SendableRecordBatchStream;
use datafusion::prelude::SessionContext;
use datafusion_zarr::ZarrTable;
use futures::StreamExt;

use crate::runtime;

/// The batches of a running scan, as a blocking reader.
pub struct ScanReader {
    schema: SchemaRef,
    stream: Option<SendableRecordBatchStream>,
}

impl ScanReader {
    /// Plans and starts `SELECT * FROM table`.
    pub fn start(table: ZarrTable) -> Result<Self, String> {
        let schema = datafusion::catalog::TableProvider::schema(&table);
        let stream = runtime::block_on(async move {
            let ctx = SessionContext::new();
            ctx.register_table("t", Arc::new(table))?;
            ctx.table("t").await?.execute_stream().await
        })?
        .map_err(|e| e.to_string())?;
        Ok(Self {
            schema,
            stream: Some(stream),
        })
    }
}

impl Iterator for ScanReader {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        let mut stream = self.stream.take()?;
        match runtime::block_on(async move {
            let next = stream.next().await;
            (next, stream)
        }) {
            Ok((Some(batch), stream)) => {
                self.stream = Some(stream);
                Some(batch.map_err(|e| ArrowError::ExternalError(Box::new(e))))
            }
            Ok((None, _)) => None,
            Err(panic) => Some(Err(ArrowError::ExternalError(panic.into()))),
        }
    }
}

impl RecordBatchReader for ScanReader {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}
