//! The table provider and table factory as datafusion-ffi exports them: [`ZarrTable`] and
//! [`ZarrTableFactory`] with their async work moved onto this library's runtime, and scan plans
//! that keep their description when the FFI shows only a plan's name.

use std::fmt;
use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use async_trait::async_trait;
use datafusion::catalog::{Session, TableProvider, TableProviderFactory};
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{DataFusionError, Result as DFResult, Statistics, internal_err};
use datafusion::datasource::TableType;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::dml::InsertOp;
use datafusion::logical_expr::{CreateExternalTable, Expr, TableProviderFilterPushDown};
use datafusion::physical_plan::metrics::MetricsSet;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, PhysicalExpr, PlanProperties, StatisticsArgs,
    displayable,
};
use datafusion_zarr::{ZarrTable, ZarrTableFactory};

use crate::runtime;

fn on_runtime<T: Send>(future: impl Future<Output = DFResult<T>> + Send) -> DFResult<T> {
    runtime::block_on(future).map_err(DataFusionError::Execution)?
}

/// A [`ZarrTable`] to hand to another DataFusion through the FFI.
#[derive(Debug)]
pub struct ExportedTable(pub ZarrTable);

#[async_trait]
impl TableProvider for ExportedTable {
    fn schema(&self) -> SchemaRef {
        self.0.schema()
    }

    fn table_type(&self) -> TableType {
        self.0.table_type()
    }

    fn statistics(&self) -> Option<Statistics> {
        self.0.statistics()
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> DFResult<Vec<TableProviderFilterPushDown>> {
        self.0.supports_filters_pushdown(filters)
    }

    /// Plans on our runtime: pruning reads coordinate arrays from the store.
    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> DFResult<Arc<dyn ExecutionPlan>> {
        let plan = on_runtime(self.0.scan(state, projection, filters, limit))?;
        Ok(Arc::new(DescribedPlan::new(plan)))
    }

    /// `INSERT INTO`: the append's sink, run on our runtime (datafusion-ffi polls the plans
    /// it hands back with the runtime the table was exported with).
    async fn insert_into(
        &self,
        state: &dyn Session,
        input: Arc<dyn ExecutionPlan>,
        insert_op: InsertOp,
    ) -> DFResult<Arc<dyn ExecutionPlan>> {
        on_runtime(self.0.insert_into(state, input, insert_op))
    }
}

/// [`ZarrTableFactory`] (`CREATE EXTERNAL TABLE … STORED AS ZARR`) for another DataFusion: the
/// host polls the factory's future on its own runtime, so the table is opened on ours.
#[derive(Debug, Default)]
pub struct ExportedFactory;

#[async_trait]
impl TableProviderFactory for ExportedFactory {
    async fn create(
        &self,
        state: &dyn Session,
        cmd: &CreateExternalTable,
    ) -> DFResult<Arc<dyn TableProvider>> {
        let provider = on_runtime(ZarrTableFactory.create(state, cmd))?;
        match provider.downcast_ref::<ZarrTable>() {
            Some(table) => Ok(Arc::new(ExportedTable(table.clone()))),
            None => Ok(provider),
        }
    }
}

/// A plan whose name is its one-line description. datafusion-ffi shows a foreign plan as
/// `FFI_ExecutionPlan: <name>`, dropping what `fmt_as` says; a Zarr scan's description (the
/// chunks planned and pruned, the `utf32_filters`) is what EXPLAIN from Python is read for.
/// Everything else is the inner plan's: its partitions, metrics and batches.
#[derive(Debug)]
struct DescribedPlan {
    inner: Arc<dyn ExecutionPlan>,
    name: String,
}

impl DescribedPlan {
    fn new(inner: Arc<dyn ExecutionPlan>) -> Self {
        let name = displayable(inner.as_ref()).one_line().to_string();
        Self {
            name: name.trim_end().to_string(),
            inner,
        }
    }
}

impl DisplayAs for DescribedPlan {
    fn fmt_as(&self, t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        self.inner.fmt_as(t, f)
    }
}

impl ExecutionPlan for DescribedPlan {
    fn name(&self) -> &str {
        &self.name
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        self.inner.properties()
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![]
    }

    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> DFResult<TreeNodeRecursion>,
    ) -> DFResult<TreeNodeRecursion> {
        self.inner.apply_expressions(f)
    }

    /// A scan has no children, so there is nothing to replace.
    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> DFResult<Arc<dyn ExecutionPlan>> {
        if children.is_empty() {
            Ok(self)
        } else {
            internal_err!("{} has no children to replace", self.inner.name())
        }
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> DFResult<SendableRecordBatchStream> {
        self.inner.execute(partition, context)
    }

    fn metrics(&self) -> Option<MetricsSet> {
        self.inner.metrics()
    }

    fn statistics_from_inputs(
        &self,
        input_stats: &[Arc<Statistics>],
        args: &StatisticsArgs,
    ) -> DFResult<Arc<Statistics>> {
        self.inner.statistics_from_inputs(input_stats, args)
    }

    fn fetch(&self) -> Option<usize> {
        self.inner.fetch()
    }
}
