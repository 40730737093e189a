//! A physical optimizer rule, [`OrderedZarrScan`]: a `SortPreservingMergeExec` that merges the
//! partitions of a Zarr scan, each already in index order, is replaced by the scan's single
//! partition in index order ([`ZarrScanExec::in_index_order`]), whose lanes decode at once and
//! whose units are emitted in order, so no row is compared. `ORDER BY` on the index columns,
//! `COPY … TO` (which keeps the scan's order) and `zarr-sql export` plan this way. Likewise a
//! `CoalescePartitionsExec` directly over a scan (COPY of a table with no index order, such as
//! an array chunked along two dimensions) becomes the scan's single partition in unit order,
//! so that the file's rows come in the same order every time ([`in_unit_order`] does the same
//! for a plan executed as one stream, as exports are).

use std::sync::Arc;

use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TransformedResult, TreeNode};
use datafusion::error::Result;
use datafusion::physical_expr::LexOrdering;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::coalesce_partitions::CoalescePartitionsExec;
use datafusion::physical_plan::coop::CooperativeExec;
use datafusion::physical_plan::execution_plan::replace_children_if_necessary;
use datafusion::physical_plan::filter::FilterExec;
use datafusion::physical_plan::projection::ProjectionExec;
use datafusion::physical_plan::sorts::sort_preserving_merge::SortPreservingMergeExec;
use datafusion::physical_plan::{ExecutionPlan, ExecutionPlanProperties};

use crate::scan::ZarrScanExec;

/// The rule; `register` (lib.rs) adds it to a session.
#[derive(Debug, Default)]
pub struct OrderedZarrScan;

impl OrderedZarrScan {
    /// The rule's name, as DataFusion lists it.
    pub const NAME: &'static str = "zarr_ordered_scan";
}

impl PhysicalOptimizerRule for OrderedZarrScan {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        _config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        plan.transform_down(|node| {
            if let Some(coalesce) = node.downcast_ref::<CoalescePartitionsExec>() {
                if coalesce.fetch().is_some() {
                    return Ok(Transformed::no(node));
                }
                return Ok(match in_unit_order(coalesce.input())? {
                    Some(input) => Transformed::yes(input),
                    None => Transformed::no(node),
                });
            }
            let Some(merge) = node.downcast_ref::<SortPreservingMergeExec>() else {
                return Ok(Transformed::no(node));
            };
            if merge.fetch().is_some() {
                return Ok(Transformed::no(node));
            }
            match ordered_input(merge.input(), merge.expr())? {
                Some(input) => Ok(Transformed::yes(input)),
                None => Ok(Transformed::no(node)),
            }
        })
        .data()
    }

    fn name(&self) -> &str {
        Self::NAME
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// `plan` rebuilt over its scan's ordered partition, when `plan`'s partitions satisfy
/// `ordering` and `plan` is a Zarr scan under projections and filters only (which keep the
/// order of their input, partition by partition).
fn ordered_input(
    plan: &Arc<dyn ExecutionPlan>,
    ordering: &LexOrdering,
) -> Result<Option<Arc<dyn ExecutionPlan>>> {
    let satisfied = plan
        .equivalence_properties()
        .ordering_satisfy(ordering.iter().cloned())?;
    if !satisfied {
        return Ok(None);
    }
    over_scan(plan, &ZarrScanExec::in_index_order)
}

/// `plan` as one partition whose rows come in a fixed order (its scan's units in id order),
/// when `plan` is a Zarr scan of several partitions under projections, filters and cooperative
/// wrappers only.
pub fn in_unit_order(plan: &Arc<dyn ExecutionPlan>) -> Result<Option<Arc<dyn ExecutionPlan>>> {
    over_scan(plan, &ZarrScanExec::in_unit_order)
}

/// `plan` rebuilt over `single(scan)`, when `plan` is a Zarr scan under projections, filters
/// and DataFusion's cooperative-scheduling wrapper only (which keep the order of their input,
/// partition by partition) and `single` gives one.
fn over_scan(
    plan: &Arc<dyn ExecutionPlan>,
    single: &dyn Fn(&ZarrScanExec) -> Option<ZarrScanExec>,
) -> Result<Option<Arc<dyn ExecutionPlan>>> {
    if let Some(scan) = plan.downcast_ref::<ZarrScanExec>() {
        return Ok(single(scan).map(|s| Arc::new(s) as Arc<dyn ExecutionPlan>));
    }
    let keeps_order =
        plan.is::<ProjectionExec>() || plan.is::<FilterExec>() || plan.is::<CooperativeExec>();
    let children = plan.children();
    let ([child], true) = (children.as_slice(), keeps_order) else {
        return Ok(None);
    };
    match over_scan(child, single)? {
        Some(child) => Ok(Some(replace_children_if_necessary(
            Arc::clone(plan),
            vec![child],
        )?)),
        None => Ok(None),
    }
}
