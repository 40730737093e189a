//! The scan in the form a cluster can divide: DataFusion's `DataSourceExec` over a
//! `FileScanConfig` whose file groups are the scan's partitions, each one "file" naming a
//! partition of the planned [`ZarrScanExec`] ([`ScanPartition`]), read by [`ZarrUnitSource`].
//!
//! Why: Ballista gives each task only its own partitions of a `FileScanConfig` (it narrows
//! `file_groups`), and runs every partition of a leaf it does not know in every task. In this
//! form each executor reads the units of its tasks' partitions and no other. A table decoded
//! from a cluster plan scans this way (`ZarrTable::for_cluster`); local sessions keep
//! [`ZarrScanExec`] itself, with its ordered lanes and dynamic filters.

use std::fmt;
use std::sync::Arc;

use datafusion::common::Result as DFResult;
use datafusion::common::config::{ConfigOptions, ExecutionOptions};
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::{
    FileGroup, FileOpenFuture, FileOpener, FileScanConfig, FileScanConfigBuilder, FileSource,
};
use datafusion::datasource::source::DataSourceExec;
use datafusion::datasource::table_schema::TableSchema;
use datafusion::error::DataFusionError;
use datafusion::execution::object_store::ObjectStoreUrl;
#[cfg(feature = "ballista")]
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::filter_pushdown::FilterPushdownPropagation;
use datafusion::physical_plan::metrics::ExecutionPlanMetricsSet;
use datafusion::physical_plan::{DisplayFormatType, PhysicalExpr};
use object_store::ObjectStore;

use super::ZarrScanExec;

/// What a file of the file scan reads: partition `.0` of the planned scan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ScanPartition(pub(crate) usize);

impl ZarrScanExec {
    /// This scan as a `DataSourceExec` whose file groups are `groups` (each a list of this
    /// scan's partitions; by default one group per partition), returning at most `fetch` rows.
    pub(crate) fn file_scan(
        self: Arc<Self>,
        groups: Option<Vec<Vec<usize>>>,
        fetch: Option<usize>,
    ) -> DFResult<Arc<DataSourceExec>> {
        let n = self.partitions.len();
        let groups = groups.unwrap_or_else(|| (0..n).map(|p| vec![p]).collect());
        let mut file_groups = Vec::with_capacity(groups.len());
        for group in groups {
            let mut files = Vec::with_capacity(group.len());
            for p in group {
                let runs = self.partitions.get(p).ok_or_else(|| {
                    DataFusionError::Internal(format!(
                        "the plan reads partition {p} of the scan of {}, which has {n}",
                        self.model.display
                    ))
                })?;
                let shown: Vec<String> = runs.iter().map(|r| format!("{r:?}")).collect();
                let rows = self.partition_rows.get(p).copied().flatten();
                let file = PartitionedFile::new(format!("units/{}", shown.join(",")), 0)
                    .with_extension(ScanPartition(p))
                    .with_statistics(Arc::new(self.row_statistics(rows)));
                files.push(file);
            }
            file_groups.push(FileGroup::new(files));
        }
        let ordering = self.properties.output_ordering().cloned();
        let source = ZarrUnitSource {
            table_schema: TableSchema::from(self.schema.clone()),
            scan: self.clone(),
            batch_size: ExecutionOptions::default().batch_size.into(),
        };
        let config =
            FileScanConfigBuilder::new(ObjectStoreUrl::local_filesystem(), Arc::new(source))
                .with_file_groups(file_groups)
                .with_statistics(self.row_statistics(self.total_rows))
                .with_output_ordering(ordering.into_iter().collect())
                .with_limit(fetch)
                .build();
        Ok(DataSourceExec::from_data_source(config))
    }
}

/// A file scan as `crate::distributed` sends it to another process: the planned scan, the
/// partitions each file group reads, and the row limit.
#[cfg(feature = "ballista")]
pub(crate) struct FileScanParts {
    pub(crate) scan: Arc<ZarrScanExec>,
    pub(crate) groups: Vec<Vec<usize>>,
    pub(crate) fetch: Option<usize>,
}

/// The parts of `plan` when it is a file scan of a Zarr table.
#[cfg(feature = "ballista")]
pub(crate) fn file_scan_parts(plan: &dyn ExecutionPlan) -> Option<FileScanParts> {
    let exec = plan.downcast_ref::<DataSourceExec>()?;
    let source: &dyn std::any::Any = exec.data_source().as_ref();
    let config = source.downcast_ref::<FileScanConfig>()?;
    let zarr = config.file_source().downcast_ref::<ZarrUnitSource>()?;
    let groups = config
        .file_groups
        .iter()
        .map(|g| {
            g.iter()
                .filter_map(|f| f.extensions.get::<ScanPartition>().map(|p| p.0))
                .collect()
        })
        .collect();
    Some(FileScanParts {
        scan: zarr.scan.clone(),
        groups,
        fetch: config.limit,
    })
}

/// The `FileSource` of a file scan: opens each file's partition of the planned scan.
#[derive(Debug, Clone)]
struct ZarrUnitSource {
    scan: Arc<ZarrScanExec>,
    /// The scan's output schema: DataFusion's projection is already applied.
    table_schema: TableSchema,
    batch_size: usize,
}

impl FileSource for ZarrUnitSource {
    fn create_file_opener(
        &self,
        // Chunks are read from the table's own store, built from its options.
        _object_store: Arc<dyn ObjectStore>,
        _base_config: &FileScanConfig,
        _partition: usize,
    ) -> DFResult<Arc<dyn FileOpener>> {
        Ok(Arc::new(PartitionOpener {
            scan: self.scan.clone(),
            batch_size: self.batch_size,
        }))
    }

    fn table_schema(&self) -> &TableSchema {
        &self.table_schema
    }

    fn with_batch_size(&self, batch_size: usize) -> Arc<dyn FileSource> {
        Arc::new(Self {
            batch_size,
            ..self.clone()
        })
    }

    fn metrics(&self) -> &ExecutionPlanMetricsSet {
        &self.scan.metrics
    }

    fn file_type(&self) -> &str {
        "zarr"
    }

    fn fmt_extra(&self, t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        let node = &self.scan.model.display;
        match t {
            DisplayFormatType::Default | DisplayFormatType::Verbose => {
                write!(f, ", node={node}")?;
                for (key, value) in self.scan.explained() {
                    write!(f, ", {key}={value}")?;
                }
            }
            DisplayFormatType::TreeRender => {
                writeln!(f, "node={node}")?;
                for (key, value) in self.scan.explained() {
                    writeln!(f, "{key}={value}")?;
                }
            }
        }
        Ok(())
    }

    /// A partition is a run of units planned with the pruning result: never split by size.
    fn supports_repartitioning(&self) -> bool {
        false
    }

    /// Claims the string predicates the planned scan already evaluates on UTF-32 (DataFusion
    /// then drops them from the `FilterExec` above). A new one is not claimed: the file scan's
    /// row count, planned without it, would be exact.
    fn try_pushdown_filters(
        &self,
        filters: Vec<Arc<dyn PhysicalExpr>>,
        _config: &ConfigOptions,
    ) -> DFResult<FilterPushdownPropagation<Arc<dyn FileSource>>> {
        Ok(FilterPushdownPropagation::with_parent_pushdown_result(
            self.scan.claimed_filters(&filters),
        ))
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> DFResult<TreeNodeRecursion>,
    ) -> DFResult<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }
}

/// Opens a file of the file scan: streams the units of its partition.
struct PartitionOpener {
    scan: Arc<ZarrScanExec>,
    batch_size: usize,
}

impl FileOpener for PartitionOpener {
    fn open(&self, file: PartitionedFile) -> DFResult<FileOpenFuture> {
        let display = &self.scan.model.display;
        let ScanPartition(p) =
            file.extensions
                .get::<ScanPartition>()
                .copied()
                .ok_or_else(|| {
                    DataFusionError::Internal(format!(
                        "the file {} of the scan of {display} names no partition",
                        file.object_meta.location
                    ))
                })?;
        let runs = self.scan.partitions.get(p).cloned().ok_or_else(|| {
            DataFusionError::Internal(format!("the scan of {display} has no partition {p}"))
        })?;
        // Which process reads which units: how a cluster divided a scan shows in its logs.
        log::debug!("{display}: partition {p} reads units {runs:?}");
        let stream = self.scan.partition_stream(runs, p, self.batch_size);
        Ok(Box::pin(futures::future::ready(Ok(stream))))
    }
}
