//! [`ZarrTable`], the DataFusion [`TableProvider`] of a Zarr node.

use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use async_trait::async_trait;
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::stats::Precision;
use datafusion::common::{Result as DFResult, Statistics};
use datafusion::datasource::TableType;
use datafusion::execution::runtime_env::RuntimeEnv;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::physical_plan::ExecutionPlan;

use crate::error::Result;
use crate::node::open_node;
use crate::options::ZarrOptions;
use crate::progress::ScanProgress;
use crate::scan::{RawFilter, ZarrScanExec, is_dimension_filter, select_chunks};
use crate::store::ZarrStore;
use crate::table::TableModel;

/// A Zarr array or group as a table. Opening it reads metadata only.
#[derive(Debug, Clone)]
pub struct ZarrTable {
    model: Arc<TableModel>,
    progress: Option<Arc<ScanProgress>>,
}

impl ZarrTable {
    /// Opens the node `options.path` of the store at `location` (a local directory, or a URL
    /// whose object store is registered in `runtime`).
    pub async fn open(runtime: &RuntimeEnv, location: &str, options: ZarrOptions) -> Result<Self> {
        let store = ZarrStore::open(runtime, location)?;
        let node = open_node(&store, &options).await?;
        let model = TableModel::new(store, node, options)?;
        Ok(Self {
            model: Arc::new(model),
            progress: None,
        })
    }

    /// Reports the progress of this table's scans to `progress`.
    pub fn with_progress(mut self, progress: Arc<ScanProgress>) -> Self {
        self.progress = Some(progress);
        self
    }

    /// The table model (columns, shape, opened node).
    pub fn model(&self) -> &Arc<TableModel> {
        &self.model
    }
}

#[async_trait]
impl TableProvider for ZarrTable {
    fn schema(&self) -> SchemaRef {
        self.model.schema.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    fn statistics(&self) -> Option<Statistics> {
        let rows = usize::try_from(self.model.num_rows().ok()?).ok()?;
        Some(Statistics::new_unknown(&self.model.schema).with_num_rows(Precision::Exact(rows)))
    }

    /// Filters on dimension (index or coordinate) columns prune chunks; DataFusion still
    /// applies them to the rows read, so they are inexact.
    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> DFResult<Vec<TableProviderFilterPushDown>> {
        Ok(filters
            .iter()
            .map(|f| {
                if self.model.options.pushdown
                    && (is_dimension_filter(&self.model, f)
                        || RawFilter::parse(&self.model, f).is_some())
                {
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
        let filters: &[Expr] = if self.model.options.pushdown {
            filters
        } else {
            &[]
        };
        let selection = select_chunks(&self.model, state, filters).await?;
        let projection = projection
            .cloned()
            .unwrap_or_else(|| (0..self.model.columns.len()).collect());
        let target_partitions = state.config().target_partitions();
        let exec = ZarrScanExec::try_new(
            self.model.clone(),
            projection,
            target_partitions,
            limit,
            selection,
        )?
        .with_progress(self.progress.clone())
        .with_raw_filters(
            filters
                .iter()
                .filter_map(|f| RawFilter::parse(&self.model, f))
                .collect(),
        );
        Ok(Arc::new(exec))
    }
}
