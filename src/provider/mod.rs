//! [`ZarrTable`], the DataFusion [`TableProvider`] of a Zarr node.

mod insert;

use crate::store::ZarrStore;
use crate::store_version::StoreVersion;
use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use async_trait::async_trait;
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::{Result as DFResult, Statistics};
use datafusion::datasource::TableType;
use datafusion::datasource::sink::DataSinkExec;
use datafusion::execution::runtime_env::RuntimeEnv;
use datafusion::logical_expr::dml::InsertOp;
use datafusion::logical_expr::execution_props::ExecutionProps;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::physical_plan::ExecutionPlan;

use crate::error::Result;
use crate::node::Node;
use crate::options::ZarrOptions;
use crate::progress::ScanProgress;
use crate::scan::{
    DecodedFilter, RawFilter, ScanFilter, UnitGrid, ZarrScanExec, row_order, select_chunks,
};
use crate::table::{ColumnSource, TableModel};

/// A Zarr array or group as a DataFusion table. Opening it reads metadata only; scans read
/// chunks in parallel partitions, prune them with the query's filters and evaluate string
/// predicates on the UTF-32 code units.
///
/// ```
/// # async fn demo() -> datafusion_zarr::Result<()> {
/// use std::sync::Arc;
/// use datafusion::prelude::SessionContext;
/// use datafusion_zarr::{ZarrOptions, ZarrTable};
///
/// let ctx = SessionContext::new();
/// let options = ZarrOptions::from_pairs([("path", "label")])?;
/// let table = ZarrTable::open(
///     &ctx.runtime_env(),
///     "tests/data/corpus/13_group_consolidated_metadata/data.zarr",
///     options,
/// )
/// .await?;
/// assert_eq!(table.num_rows(), Some(27));
/// assert_eq!(table.index_columns(), ["station"]);
/// ctx.register_table("labels", Arc::new(table)).expect("a new name");
/// # Ok(()) }
/// # tokio::runtime::Runtime::new().unwrap().block_on(demo()).unwrap();
/// ```
#[derive(Debug, Clone)]
pub struct ZarrTable {
    model: Arc<TableModel>,
    /// The table as reopened after an `INSERT INTO` grew it (shared by the table's clones, so
    /// the session's registered table reads the appended rows).
    grown: Arc<std::sync::Mutex<Option<Arc<TableModel>>>>,
    progress: Option<Arc<dyn ScanProgress>>,
    /// Plan every scan as a file scan (a `DataSourceExec`, see `scan::file_scan`): set on a
    /// table that arrived through a cluster's plan (see `distributed`), whose engine divides
    /// the file groups of such a scan among its tasks and would run every partition of another
    /// leaf in every task.
    for_cluster: bool,
}

impl ZarrTable {
    /// Opens the node `options.path` of the store at `location` (a local directory, or a URL
    /// whose object store is registered in `runtime`).
    pub async fn open(runtime: &RuntimeEnv, location: &str, options: ZarrOptions) -> Result<Self> {
        Self::open_checked(runtime, location, options, true).await
    }

    /// [`ZarrTable::open`]; with `checked`, its scans check that the store was not replaced
    /// since its metadata was read (`store_version`; a writer holding the store's lock needs
    /// no check).
    pub(crate) async fn open_checked(
        runtime: &RuntimeEnv,
        location: &str,
        options: ZarrOptions,
        checked: bool,
    ) -> Result<Self> {
        // Taken before the metadata is read. A repository's snapshot never changes.
        let names_a_snapshot = options.branch.is_some()
            || options.tag.is_some()
            || options.snapshot.is_some()
            || options.as_of.is_some();
        // A reference set's files are not a store that an overwrite replaces.
        let references = crate::references::is_reference_set(location);
        let version = match checked && !names_a_snapshot && !references {
            true => {
                let store = ZarrStore::open(runtime, location, &options.storage)?;
                Some(StoreVersion::of(&store).await?)
            }
            false => None,
        };
        let (store, options, node) =
            crate::icechunk::open_node_at(runtime, location, options, true).await?;
        let mut model = TableModel::new(store, node, options)?;
        model.version = version;
        Ok(Self {
            model: Arc::new(model),
            grown: Arc::default(),
            progress: None,
            for_cluster: false,
        })
    }

    /// This table with every scan planned for a cluster (see `for_cluster`).
    #[cfg_attr(not(feature = "ballista"), allow(dead_code))]
    pub(crate) fn for_cluster(mut self) -> Self {
        self.for_cluster = true;
        self
    }

    /// Reports the progress of this table's scans to `progress`.
    pub fn with_progress(mut self, progress: Arc<dyn ScanProgress>) -> Self {
        self.progress = Some(progress);
        self
    }

    /// The store's URL as shown in plans and errors (a local path becomes a `file://` URL).
    pub fn location(&self) -> &str {
        self.model.store.display_location()
    }

    /// The node's path inside the store (`""` for the root).
    pub fn path(&self) -> &str {
        &self.model.path
    }

    /// The options the table was opened with.
    pub fn options(&self) -> &ZarrOptions {
        &self.model.options
    }

    /// The node's metadata document: `zarr.json` (a group's without its consolidated
    /// metadata), or for Zarr V2 `.zarray`/`.zgroup` with its `.zattrs` under `attributes`.
    /// Parsed on each call: the table keeps the attributes as written.
    pub fn metadata(&self) -> serde_json::Value {
        let (mut document, attributes) = match &self.model.node {
            Node::Array(a) => (a.document(), &a.attributes),
            Node::Group(g) => (g.metadata.clone(), &g.attributes),
        };
        if let Some(fields) = document.as_object_mut() {
            fields.insert("attributes".into(), attributes.to_value());
        }
        document
    }

    /// Number of rows (the element count of the value arrays' shape).
    pub fn num_rows(&self) -> Option<u64> {
        self.current().num_rows().ok()
    }

    /// The index columns (element indexes along a dimension, `UInt64`), in schema order.
    pub fn index_columns(&self) -> Vec<&str> {
        self.model
            .columns
            .iter()
            .filter(|c| matches!(c.source, ColumnSource::Index { .. }))
            .map(|c| c.name.as_str())
            .collect()
    }

    /// The columns every partition of a scan is sorted by (leading index columns), or none:
    /// `ORDER BY` these merges partitions instead of sorting.
    pub fn row_order(&self) -> Vec<String> {
        UnitGrid::of(&self.model)
            .map_or_else(|_| Vec::new(), |units| row_order(&self.model, &units))
    }

    /// The table model (columns, shape, opened node).
    pub(crate) fn model(&self) -> &Arc<TableModel> {
        &self.model
    }

    /// The table as it is now: as opened, or as reopened after an `INSERT INTO`.
    fn current(&self) -> Arc<TableModel> {
        let grown = self.grown.lock().ok().and_then(|g| g.clone());
        grown.unwrap_or_else(|| self.model.clone())
    }
}

#[async_trait]
impl TableProvider for ZarrTable {
    /// The table's schema as it is now (after an `INSERT INTO`, as reopened: a plan's logical
    /// and physical schemas then carry the same field metadata).
    fn schema(&self) -> SchemaRef {
        self.current().schema.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    fn statistics(&self) -> Option<Statistics> {
        let model = self.current();
        let rows = usize::try_from(model.num_rows().ok()?).ok()?;
        let rows = crate::scan::exact_rows(rows);
        Some(Statistics::new_unknown(&model.schema).with_num_rows(rows))
    }

    /// Filters on dimension (index or coordinate) columns prune chunks, string predicates are
    /// evaluated on UTF-32 code units, and predicates on value columns on their decoded values
    /// before the other columns are read; all inexact here (DataFusion applies them again, unless
    /// the scan claims them when the physical plan is optimized).
    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> DFResult<Vec<TableProviderFilterPushDown>> {
        let model = self.current();
        let props = ExecutionProps::new();
        Ok(filters
            .iter()
            .map(|f| {
                let usable = model.options.pushdown
                    && ScanFilter::from_logical(&model, f, &props).is_ok_and(|f| {
                        f.is_dimension_filter(&model)
                            || RawFilter::parse(&model, &f).is_some()
                            || DecodedFilter::parse(&model, &f).is_some()
                    });
                if usable {
                    TableProviderFilterPushDown::Inexact
                } else {
                    TableProviderFilterPushDown::Unsupported
                }
            })
            .collect())
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> DFResult<Arc<dyn ExecutionPlan>> {
        let model = self.current();
        // The filters, physical once: pruning and the UTF-32 predicates read this form.
        let filters: Vec<ScanFilter> = if model.options.pushdown {
            filters
                .iter()
                .map(|f| ScanFilter::from_logical(&model, f, state.execution_props()))
                .collect::<Result<_>>()?
        } else {
            Vec::new()
        };
        let units = UnitGrid::of(&model)?;
        let selection = select_chunks(&model, &units, &filters).await?;
        let projection = projection
            .cloned()
            .unwrap_or_else(|| (0..model.columns.len()).collect());
        let target_partitions = state.config().target_partitions();
        let exec = ZarrScanExec::try_new(
            model.clone(),
            units,
            projection,
            target_partitions,
            limit,
            selection,
        )?
        .with_progress(self.progress.clone())
        .with_raw_filters(
            filters
                .iter()
                .filter_map(|f| RawFilter::parse(&model, f))
                .collect(),
        )
        .with_decoded_filters(
            (filters.iter())
                .filter(|f| RawFilter::parse(&model, f).is_none())
                .filter_map(|f| DecodedFilter::parse(&model, f))
                .collect(),
        );
        match self.for_cluster {
            true => Ok(Arc::new(exec).file_scan(None, limit)?),
            false => Ok(Arc::new(exec)),
        }
    }

    /// `INSERT INTO t SELECT …`: appends the rows along the table's dimension
    /// (`insert.rs`, `write/layout/append.rs`).
    async fn insert_into(
        &self,
        _state: &dyn Session,
        input: Arc<dyn ExecutionPlan>,
        insert_op: InsertOp,
    ) -> DFResult<Arc<dyn ExecutionPlan>> {
        if insert_op != InsertOp::Append {
            return datafusion::common::not_impl_err!(
                "{insert_op} of a Zarr table: INSERT INTO appends rows; to replace a store, \
                 COPY … TO it STORED AS ZARR OPTIONS ('mode' 'overwrite')"
            );
        }
        let model = self.current();
        let sink = insert::AppendSink::new(
            model.store.url().as_str().to_string(),
            model.store.display_location().to_string(),
            model.options.clone(),
            model.schema.clone(),
            self.grown.clone(),
        )
        .on_branch(model.store.branch().map(str::to_string));
        Ok(Arc::new(DataSinkExec::new(input, Arc::new(sink), None)))
    }
}
