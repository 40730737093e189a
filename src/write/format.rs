//! `COPY … TO 'out.zarr' STORED AS ZARR`: [`ZarrFormatFactory`], which `register` (lib.rs)
//! installs for the `zarr` extension, makes DataFusion's own COPY write a store through
//! `ZarrSink` (into the spine's [`write_zarr_in`]). Reading goes through `read_zarr` and
//! `CREATE EXTERNAL TABLE … STORED AS ZARR`, not through this format.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use async_trait::async_trait;
use datafusion::catalog::Session;
use datafusion::common::{GetExt, Statistics, not_impl_err};
use datafusion::datasource::file_format::file_compression_type::FileCompressionType;
use datafusion::datasource::file_format::{FileFormat, FileFormatFactory};
use datafusion::datasource::physical_plan::{FileScanConfig, FileSinkConfig, FileSource};
use datafusion::datasource::sink::{DataSink, DataSinkExec};
use datafusion::datasource::table_schema::TableSchema;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::TaskContext;
use datafusion::physical_expr::LexRequirement;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, SendableRecordBatchStream,
};
use object_store::{ObjectMeta, ObjectStore};

use super::options::WriteOptions;
use super::write_zarr_in;
use crate::session_options::ZarrSessionOptions;

/// The factory of [`ZarrFormat`], for `STORED AS ZARR` in `COPY`.
#[derive(Debug, Default)]
pub struct ZarrFormatFactory;

impl GetExt for ZarrFormatFactory {
    fn get_ext(&self) -> String {
        "zarr".into()
    }
}

impl FileFormatFactory for ZarrFormatFactory {
    /// The session's `zarr.*` values ([`ZarrSessionOptions`]), then the statement's `OPTIONS`
    /// (which win, key by key), as DataFusion's Parquet format starts from the session's table
    /// options; the options are checked against each other once merged.
    fn create(
        &self,
        state: &dyn Session,
        format_options: &HashMap<String, String>,
    ) -> Result<Arc<dyn FileFormat>> {
        let session = ZarrSessionOptions::from_config(state.config_options())?;
        let statement = format_options.iter().map(|(k, v)| (k.as_str(), v.as_str()));
        let pairs = session.write_pairs().into_iter().chain(statement);
        let options = WriteOptions::from_pairs(pairs)?;
        Ok(Arc::new(ZarrFormat { options }))
    }

    fn default(&self) -> Arc<dyn FileFormat> {
        Arc::new(ZarrFormat {
            options: WriteOptions::default(),
        })
    }
}

/// Zarr as a format DataFusion's `COPY` writes.
#[derive(Debug)]
pub struct ZarrFormat {
    options: WriteOptions,
}

/// Reading Zarr does not go through a listing table.
fn read_elsewhere<T>() -> Result<T> {
    not_impl_err!(
        "Zarr is read with read_zarr('…') or CREATE EXTERNAL TABLE … STORED AS ZARR; \
         STORED AS ZARR in COPY writes a store"
    )
}

#[async_trait]
impl FileFormat for ZarrFormat {
    fn get_ext(&self) -> String {
        "zarr".into()
    }

    fn get_ext_with_compression(&self, _compression: &FileCompressionType) -> Result<String> {
        Ok("zarr".into())
    }

    fn compression_type(&self) -> Option<FileCompressionType> {
        None
    }

    async fn infer_schema(
        &self,
        _state: &dyn Session,
        _store: &Arc<dyn ObjectStore>,
        _objects: &[ObjectMeta],
    ) -> Result<SchemaRef> {
        read_elsewhere()
    }

    async fn infer_stats(
        &self,
        _state: &dyn Session,
        _store: &Arc<dyn ObjectStore>,
        _table_schema: SchemaRef,
        _object: &ObjectMeta,
    ) -> Result<Statistics> {
        read_elsewhere()
    }

    async fn create_physical_plan(
        &self,
        _state: &dyn Session,
        _conf: FileScanConfig,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        read_elsewhere()
    }

    async fn create_writer_physical_plan(
        &self,
        input: Arc<dyn ExecutionPlan>,
        _state: &dyn Session,
        conf: FileSinkConfig,
        order_requirements: Option<LexRequirement>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let target = target_location(&conf)?;
        let sink = ZarrSink {
            schema: conf.output_schema().clone(),
            target,
            options: self.options.clone(),
        };
        Ok(Arc::new(DataSinkExec::new(
            input,
            Arc::new(sink),
            order_requirements,
        )))
    }

    fn file_source(&self, table_schema: TableSchema) -> Arc<dyn FileSource> {
        // Never scanned (`create_physical_plan` refuses): DataFusion's Arrow source stands in
        // where the trait wants one.
        Arc::new(datafusion::datasource::physical_plan::ArrowSource::new_file_source(table_schema))
    }
}

/// The store a `COPY` writes, or why it cannot.
fn target_location(conf: &FileSinkConfig) -> Result<String> {
    let [url] = conf.table_paths.as_slice() else {
        return not_impl_err!("COPY … STORED AS ZARR writes one store");
    };
    if !conf.table_partition_cols.is_empty() {
        return not_impl_err!("COPY … STORED AS ZARR does not write partitions (PARTITIONED BY)");
    }
    let url = url.get_url();
    if url.scheme() == "file" {
        let path = url
            .to_file_path()
            .map_err(|()| DataFusionError::Plan(format!("{} is not a local path", url.as_str())))?;
        return Ok(path.display().to_string());
    }
    Ok(url.as_str().to_string())
}

/// Writes a COPY's rows as a Zarr store, atomically.
#[derive(Debug)]
struct ZarrSink {
    schema: SchemaRef,
    target: String,
    options: WriteOptions,
}

impl DisplayAs for ZarrSink {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(
            f,
            "ZarrSink(store={})",
            crate::object_stores::redact_unparsed(&self.target)
        )
    }
}

#[async_trait]
impl DataSink for ZarrSink {
    fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    async fn write_all(
        &self,
        data: SendableRecordBatchStream,
        context: &Arc<TaskContext>,
    ) -> Result<u64> {
        let runtime = context.runtime_env();
        Ok(write_zarr_in(&runtime, data, &self.target, &self.options).await?)
    }
}
