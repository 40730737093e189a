//! `INSERT INTO` a Zarr table: [`AppendSink`] reopens the table (its metadata as it is now),
//! hands the rows to the writer's append (`write::append`), and reopens it after so the
//! session reads the grown table.

use std::fmt;
use std::sync::{Arc, Mutex};

use arrow::datatypes::SchemaRef;
use async_trait::async_trait;
use datafusion::catalog::TableProvider as _;
use datafusion::datasource::sink::DataSink;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::TaskContext;
use datafusion::physical_plan::{DisplayAs, DisplayFormatType, SendableRecordBatchStream};

use super::ZarrTable;
use crate::options::ZarrOptions;
use crate::session_options::ZarrSessionOptions;
use crate::staging::{Shown, WriterLock};
use crate::table::TableModel;
use crate::write::WriteOptions;

/// Appends an `INSERT INTO`'s rows to a Zarr table's store, reopening the table first (its
/// metadata as it is now) and after (so the session reads the grown table).
pub(crate) struct AppendSink {
    /// The store's URL as opened (may hold credentials: never shown).
    url: String,
    /// The store as shown.
    shown: String,
    options: ZarrOptions,
    schema: SchemaRef,
    grown: Arc<Mutex<Option<Arc<TableModel>>>>,
    /// An Icechunk table read at the tip of a branch: the branch the rows are committed to.
    branch: Option<String>,
}

impl AppendSink {
    pub(crate) fn new(
        url: String,
        shown: String,
        options: ZarrOptions,
        schema: SchemaRef,
        grown: Arc<Mutex<Option<Arc<TableModel>>>>,
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

    /// The lock of the store (an OS lock on a local store, a lease on an object store),
    /// waiting up to the session's `zarr.lock_timeout` (30 s by default) for another writer.
    async fn lock(&self, context: &TaskContext) -> Result<WriterLock> {
        let session = ZarrSessionOptions::from_config(context.session_config().options())?;
        let options = WriteOptions::from_pairs(
            session
                .write_pairs()
                .into_iter()
                .filter(|(key, _)| ["lock_timeout", "lease_ttl"].contains(key)),
        )?;
        let store = crate::store::ZarrStore::open(
            &context.runtime_env(),
            &self.url,
            &self.options.storage,
        )?;
        let shown = Shown::new(self.shown.clone(), &self.options.storage);
        Ok(WriterLock::acquire(&store, options.lock_times(), &shown).await?)
    }

    /// Checks that `table` still has the columns the rows were planned for.
    fn check_schema(&self, table: &ZarrTable) -> Result<()> {
        // Names and types: the field metadata (the arrays' attributes as written) changes when
        // another writer rewrites a document, and the rows still fit.
        let columns = |schema: &SchemaRef| -> Vec<(String, arrow::datatypes::DataType)> {
            (schema.fields().iter())
                .map(|f| (f.name().clone(), f.data_type().clone()))
                .collect()
        };
        if columns(&table.schema()) != columns(&self.schema) {
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
        let table = ZarrTable::open(runtime, &self.url, at_tip).await?;
        self.check_schema(&table)?;
        let message = "INSERT INTO by datafusion-zarr".to_string();
        let rows =
            crate::write::append_to_branch(table.model(), data, &store, write, message).await?;
        let mut grown = self.options.clone();
        grown.snapshot = None;
        grown.branch = Some(branch);
        let grown = ZarrTable::open(runtime, &self.url, grown).await?;
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
        // One writer at a time: the table is read again under the lock, so rows another
        // writer appended meanwhile are kept, and these go after them. The append releases
        // the lock after its commit.
        let lock = self.lock(context).await?;
        let opened = ZarrTable::open_checked(&runtime, &self.url, self.options.clone(), false)
            .await
            .map_err(DataFusionError::from)
            .and_then(|table| self.check_schema(&table).map(|()| table));
        let table = match opened {
            Ok(table) => table,
            Err(e) => {
                // Let go of the lock here: a process that ends on this error would not wait
                // for a lock dropped in the background.
                lock.release().await;
                return Err(e);
            }
        };
        let rows = crate::write::append(table.model(), data, lock).await?;
        let grown = ZarrTable::open(&runtime, &self.url, self.options.clone()).await?;
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
