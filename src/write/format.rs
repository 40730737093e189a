//! `COPY … TO 'out.zarr' STORED AS ZARR`: [`ZarrFormatFactory`], which `register` (lib.rs)
//! installs for the `zarr` extension, makes DataFusion's own COPY write a store through
//! [`ZarrSink`] (the table layout, `table_writer.rs`). Reading goes through `read_zarr` and
//! `CREATE EXTERNAL TABLE … STORED AS ZARR`, not through this format.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use async_trait::async_trait;
use datafusion::catalog::Session;
use datafusion::catalog::TableProvider as _;
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
use super::table_writer::write_zarr_in;

/// The factory of [`ZarrFormat`], for `STORED AS ZARR` in `COPY`.
#[derive(Debug, Default)]
pub struct ZarrFormatFactory;

impl GetExt for ZarrFormatFactory {
    fn get_ext(&self) -> String {
        "zarr".into()
    }
}

impl FileFormatFactory for ZarrFormatFactory {
    fn create(
        &self,
        _state: &dyn Session,
        format_options: &HashMap<String, String>,
    ) -> Result<Arc<dyn FileFormat>> {
        let pairs = format_options.iter().map(|(k, v)| (k.as_str(), v.as_str()));
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

/// Appends an `INSERT INTO`'s rows to a Zarr table's store (`append.rs`), reopening the table
/// first (its metadata as it is now) and after (so the session reads the grown table).
pub struct AppendSink {
    /// The store's URL as opened (may hold credentials: never shown).
    url: String,
    /// The store as shown.
    shown: String,
    options: crate::ZarrOptions,
    schema: SchemaRef,
    grown: Arc<std::sync::Mutex<Option<Arc<crate::table::TableModel>>>>,
    /// An Icechunk table read at the tip of a branch: the branch the rows are committed to.
    branch: Option<String>,
}

impl AppendSink {
    pub(crate) fn new(
        url: String,
        shown: String,
        options: crate::ZarrOptions,
        schema: SchemaRef,
        grown: Arc<std::sync::Mutex<Option<Arc<crate::table::TableModel>>>>,
    ) -> Self {
        Self {
            url,
            shown,
            options,
            schema: all_nullable(&schema),
            grown,
            branch: None,
        }
    }

    /// The sink of a table on an Icechunk repository, opened at the tip of `branch`.
    pub(crate) fn on_branch(mut self, branch: Option<String>) -> Self {
        self.branch = branch;
        self
    }

    /// Checks that `table` still has the columns the rows were planned for.
    fn check_schema(&self, table: &crate::ZarrTable) -> Result<()> {
        if all_nullable(&table.schema()) != self.schema {
            return Err(DataFusionError::Plan(format!(
                "{}: the store changed since the table was opened (its columns are now {}); \
                 register it again",
                self.shown,
                table.schema()
            )));
        }
        Ok(())
    }

    /// Appends to a table on an Icechunk repository: in a session of the branch the table was
    /// opened at, committed once; the table then reads the new tip.
    #[cfg(feature = "icechunk")]
    async fn append_to_repository(
        &self,
        data: SendableRecordBatchStream,
        runtime: &Arc<datafusion::execution::runtime_env::RuntimeEnv>,
    ) -> Result<u64> {
        let Some(branch) = self.branch.clone() else {
            return Err(DataFusionError::Plan(format!(
                "cannot INSERT INTO {}: it reads a fixed snapshot of an Icechunk repository \
                 (by tag, snapshot or as_of); open it at a branch (option branch, default \
                 main) to commit rows to it",
                self.shown
            )));
        };
        let store = crate::store::ZarrStore::open(runtime, &self.url, &self.options.storage)?;
        let Some(write) = crate::icechunk::RepositoryWrite::open(&store, &branch).await? else {
            return Err(DataFusionError::Plan(format!(
                "{}: no Icechunk repository is there any more",
                self.shown
            )));
        };
        // The rows go after the branch's tip as it is now (which may have moved on since the
        // table was opened): the table at that snapshot plans the append.
        let mut at_tip = self.options.clone();
        at_tip.snapshot = Some(write.base().await);
        let table = crate::ZarrTable::open(runtime, &self.url, at_tip).await?;
        self.check_schema(&table)?;
        let message = "INSERT INTO by datafusion-zarr".to_string();
        let target = super::target::Target::in_repository(&store, write, message);
        let rows = super::append::append_into(table.model(), data, target).await?;
        let mut grown = self.options.clone();
        grown.snapshot = None;
        grown.branch = Some(branch);
        let grown = crate::ZarrTable::open(runtime, &self.url, grown).await?;
        if let Ok(mut slot) = self.grown.lock() {
            *slot = Some(grown.model().clone());
        }
        Ok(rows)
    }

    #[cfg(not(feature = "icechunk"))]
    async fn append_to_repository(
        &self,
        _data: SendableRecordBatchStream,
        _runtime: &Arc<datafusion::execution::runtime_env::RuntimeEnv>,
    ) -> Result<u64> {
        Err(DataFusionError::Plan(format!(
            "cannot INSERT INTO {}: this build writes no Icechunk repository",
            self.shown
        )))
    }
}

impl fmt::Debug for AppendSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ZarrAppendSink(store={})", self.shown)
    }
}

impl DisplayAs for AppendSink {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(
            f,
            "ZarrAppendSink(store={}, path={})",
            self.shown, self.options.path
        )
    }
}

#[async_trait]
impl DataSink for AppendSink {
    fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    async fn write_all(
        &self,
        data: SendableRecordBatchStream,
        context: &Arc<TaskContext>,
    ) -> Result<u64> {
        let runtime = context.runtime_env();
        if self.options.snapshot.is_some() {
            return self.append_to_repository(data, &runtime).await;
        }
        let table = crate::ZarrTable::open(&runtime, &self.url, self.options.clone()).await?;
        self.check_schema(&table)?;
        let rows = super::append::append(table.model(), data).await?;
        let grown = crate::ZarrTable::open(&runtime, &self.url, self.options.clone()).await?;
        if let Ok(mut slot) = self.grown.lock() {
            *slot = Some(grown.model().clone());
        }
        Ok(rows)
    }
}

/// `schema` with every column nullable: the sink's schema, which DataFusion checks the rows
/// against before they reach it. An index column (the row position) is not given by an
/// `INSERT INTO t (a, b)` and arrives as NULL; a NULL the array cannot hold is refused by the
/// append itself, naming the column and row.
fn all_nullable(schema: &SchemaRef) -> SchemaRef {
    let fields: Vec<_> = schema
        .fields()
        .iter()
        .map(|f| f.as_ref().clone().with_nullable(true))
        .collect();
    Arc::new(arrow::datatypes::Schema::new_with_metadata(
        fields,
        schema.metadata().clone(),
    ))
}
