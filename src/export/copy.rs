//! `COPY … TO 'out.parquet'` through the export's writer: [`ParquetFormatWithZarrWriter`] is
//! DataFusion's Parquet format in every respect (reading, options, schema and statistics
//! inference) but one: a COPY to one local file, not partitioned, is written by our writer
//! (`writer.rs`: row groups encoded in parallel, strings and numbers by our encoders, the file
//! replaced atomically). Writes to object stores, to directories or partitioned go to
//! DataFusion's `ParquetSink` unchanged. `register` (lib.rs) installs it for the `parquet`
//! extension.

use std::any::Any;
use std::collections::HashMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use arrow::datatypes::{Schema, SchemaRef};
use async_trait::async_trait;
use datafusion::catalog::Session;
use datafusion::common::config::TableParquetOptions;
use datafusion::common::{GetExt, Statistics};
use datafusion::datasource::file_format::file_compression_type::FileCompressionType;
use datafusion::datasource::file_format::parquet::{ParquetFormat, ParquetFormatFactory};
use datafusion::datasource::file_format::{FileFormat, FileFormatFactory};
use datafusion::datasource::physical_plan::{FileScanConfig, FileSinkConfig, FileSource};
use datafusion::datasource::sink::{DataSink, DataSinkExec};
use datafusion::datasource::table_schema::TableSchema;
use datafusion::error::Result;
use datafusion::execution::TaskContext;
use datafusion::logical_expr::dml::InsertOp;
use datafusion::physical_expr::{LexOrdering, LexRequirement};
use datafusion::physical_plan::SendableRecordBatchStream;
use datafusion::physical_plan::{DisplayAs, DisplayFormatType, ExecutionPlan};
use object_store::{ObjectMeta, ObjectStore};
use parquet::file::metadata::SortingColumn;

use super::parquet_file::{sorting_columns, write_stream_to};

/// The factory `register` (lib.rs) installs for the `parquet` extension: DataFusion's
/// [`ParquetFormatFactory`], its formats wrapped in [`ParquetFormatWithZarrWriter`].
#[derive(Debug, Default)]
pub struct ParquetFormatWithZarrWriterFactory {
    inner: ParquetFormatFactory,
}

impl GetExt for ParquetFormatWithZarrWriterFactory {
    fn get_ext(&self) -> String {
        self.inner.get_ext()
    }
}

impl FileFormatFactory for ParquetFormatWithZarrWriterFactory {
    fn create(
        &self,
        state: &dyn Session,
        format_options: &HashMap<String, String>,
    ) -> Result<Arc<dyn FileFormat>> {
        Ok(wrap(self.inner.create(state, format_options)?))
    }

    fn default(&self) -> Arc<dyn FileFormat> {
        wrap(self.inner.default())
    }
}

fn wrap(inner: Arc<dyn FileFormat>) -> Arc<dyn FileFormat> {
    Arc::new(ParquetFormatWithZarrWriter { inner })
}

/// DataFusion's Parquet format whose single-file local COPY goes through our writer.
#[derive(Debug)]
pub struct ParquetFormatWithZarrWriter {
    inner: Arc<dyn FileFormat>,
}

impl ParquetFormatWithZarrWriter {
    /// The Parquet options of this format (the session's, with the statement's).
    fn options(&self) -> Option<&TableParquetOptions> {
        let parquet: &dyn Any = self.inner.as_ref();
        parquet
            .downcast_ref::<ParquetFormat>()
            .map(ParquetFormat::options)
    }
}

#[async_trait]
impl FileFormat for ParquetFormatWithZarrWriter {
    fn get_ext(&self) -> String {
        self.inner.get_ext()
    }

    fn get_ext_with_compression(&self, compression: &FileCompressionType) -> Result<String> {
        self.inner.get_ext_with_compression(compression)
    }

    fn compression_type(&self) -> Option<FileCompressionType> {
        self.inner.compression_type()
    }

    async fn infer_schema(
        &self,
        state: &dyn Session,
        store: &Arc<dyn ObjectStore>,
        objects: &[ObjectMeta],
    ) -> Result<SchemaRef> {
        self.inner.infer_schema(state, store, objects).await
    }

    async fn infer_stats(
        &self,
        state: &dyn Session,
        store: &Arc<dyn ObjectStore>,
        table_schema: SchemaRef,
        object: &ObjectMeta,
    ) -> Result<Statistics> {
        self.inner
            .infer_stats(state, store, table_schema, object)
            .await
    }

    async fn infer_ordering(
        &self,
        state: &dyn Session,
        store: &Arc<dyn ObjectStore>,
        table_schema: SchemaRef,
        object: &ObjectMeta,
    ) -> Result<Option<LexOrdering>> {
        self.inner
            .infer_ordering(state, store, table_schema, object)
            .await
    }

    async fn create_physical_plan(
        &self,
        state: &dyn Session,
        conf: FileScanConfig,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        self.inner.create_physical_plan(state, conf).await
    }

    async fn create_writer_physical_plan(
        &self,
        input: Arc<dyn ExecutionPlan>,
        state: &dyn Session,
        conf: FileSinkConfig,
        order_requirements: Option<LexRequirement>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let (Some(options), Some(path)) = (self.options(), local_file(&conf)) else {
            return (self.inner)
                .create_writer_physical_plan(input, state, conf, order_requirements)
                .await;
        };
        let sorting_columns = order_requirements
            .as_ref()
            .and_then(|r| sorting_columns(&LexOrdering::from(r.clone()), conf.output_schema()));
        let mut options = options.clone();
        delta_encode_sorted_integers(
            &mut options,
            sorting_columns.as_deref(),
            conf.output_schema(),
        );
        let sink = ParquetFileSink {
            schema: conf.output_schema().clone(),
            options,
            path,
            sorting_columns,
        };
        Ok(Arc::new(DataSinkExec::new(
            input,
            Arc::new(sink),
            order_requirements,
        )))
    }

    fn file_source(&self, table_schema: TableSchema) -> Arc<dyn FileSource> {
        self.inner.file_source(table_schema)
    }
}

/// The path of the one local file `conf` writes, if that is what it writes: a `file://` URL, a
/// single output file (by the statement's `single_file_output` or, by default, as DataFusion
/// decides: a path with an extension), no partition columns, appending (COPY's mode).
fn local_file(conf: &FileSinkConfig) -> Option<PathBuf> {
    let [url] = conf.table_paths.as_slice() else {
        return None;
    };
    let single = conf.file_output_mode.single_file_output(url);
    let local = url.scheme() == "file" && conf.object_store_url.as_str() == "file:///";
    if !single || !local || !conf.table_partition_cols.is_empty() {
        return None;
    }
    if conf.insert_op != InsertOp::Append {
        return None;
    }
    url.get_url().to_file_path().ok()
}

/// Integer sort keys (a Zarr table's index columns, in a COPY that keeps their order) written
/// as `zarr-sql export` writes them: `DELTA_BINARY_PACKED` without a dictionary, a few bits per
/// row instead of 8 bytes after a dictionary attempt that cannot succeed. Columns the statement
/// or session gives an encoding or dictionary setting keep it.
fn delta_encode_sorted_integers(
    options: &mut TableParquetOptions,
    sorting: Option<&[SortingColumn]>,
    schema: &Schema,
) {
    if options.global.encoding.is_some() {
        return;
    }
    for sort in sorting.unwrap_or_default() {
        let Some(field) = usize::try_from(sort.column_idx)
            .ok()
            .and_then(|i| schema.fields().get(i))
        else {
            continue;
        };
        if !field.data_type().is_integer() {
            continue;
        }
        let column = options
            .column_specific_options
            .entry(field.name().clone())
            .or_default();
        if column.encoding.is_none() && column.dictionary_enabled.is_none() {
            column.encoding = Some("delta_binary_packed".into());
            column.dictionary_enabled = Some(false);
        }
    }
}

/// Writes a COPY's rows to one local Parquet file with our writer, atomically.
#[derive(Debug)]
struct ParquetFileSink {
    schema: SchemaRef,
    options: TableParquetOptions,
    path: PathBuf,
    sorting_columns: Option<Vec<SortingColumn>>,
}

impl DisplayAs for ParquetFileSink {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "ZarrParquetSink(file={})", self.path.display())
    }
}

#[async_trait]
impl DataSink for ParquetFileSink {
    fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    async fn write_all(
        &self,
        data: SendableRecordBatchStream,
        context: &Arc<TaskContext>,
    ) -> Result<u64> {
        // Row groups encoded at once: the session's parallelism (the cores by default).
        let parallelism = context.session_config().target_partitions();
        let (options, sorting) = (self.options.clone(), self.sorting_columns.clone());
        write_stream_to(data, &self.path, options, sorting, parallelism).await
    }
}
