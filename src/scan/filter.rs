//! The filters a scan is given, converted to physical expressions once: chunk pruning and the
//! UTF-32 predicates both read this form. A filter that came from the logical plan keeps its
//! logical text for EXPLAIN.

use std::sync::Arc;

use datafusion::common::DFSchema;
use datafusion::logical_expr::Expr;
use datafusion::logical_expr::execution_props::ExecutionProps;
use datafusion::logical_expr::expr_rewriter::unnormalize_col;
use datafusion::logical_expr::physical_planning_context::PhysicalPlanningContext;
use datafusion::physical_expr::create_physical_expr;
use datafusion::physical_expr::utils::collect_columns;
use datafusion::physical_plan::PhysicalExpr;

use crate::error::{Result, ZarrError};
use crate::table::{ColumnSource, TableModel};

/// One filter of a scan.
#[derive(Debug, Clone)]
pub(crate) struct ScanFilter {
    /// The filter as a physical expression over the table's columns (matched by name).
    pub(crate) expr: Arc<dyn PhysicalExpr>,
    /// The logical filter it was made from, if any (for EXPLAIN).
    pub(crate) logical: Option<Expr>,
}

impl ScanFilter {
    /// Converts a logical filter on `model`'s columns (with the session's `props`, where there
    /// is a session).
    pub(crate) fn from_logical(
        model: &TableModel,
        expr: &Expr,
        props: &ExecutionProps,
    ) -> Result<Self> {
        // DataFusion asks about filters with qualified columns (`t.name`) and scans with
        // unqualified ones; the table's schema is unqualified.
        let expr = &unnormalize_col(expr.clone());
        let plan = |e: datafusion::error::DataFusionError| {
            ZarrError::internal(format!("planning the filter {expr}: {e}"))
        };
        let schema = DFSchema::try_from(model.schema.as_ref().clone()).map_err(plan)?;
        let physical =
            create_physical_expr(expr, &schema, props, &PhysicalPlanningContext::default())
                .map_err(plan)?;
        Ok(Self {
            expr: physical,
            logical: Some(expr.clone()),
        })
    }

    /// A filter DataFusion pushed down in physical form.
    pub(crate) fn from_physical(expr: Arc<dyn PhysicalExpr>) -> Self {
        Self {
            expr,
            logical: None,
        }
    }

    /// How EXPLAIN shows the filter.
    pub(crate) fn display(&self) -> String {
        match &self.logical {
            Some(e) => e.to_string(),
            None => self.expr.to_string(),
        }
    }

    /// Whether the filter only references dimension (index or coordinate) columns, so that it
    /// can prune chunks.
    pub(crate) fn is_dimension_filter(&self, model: &TableModel) -> bool {
        let columns = collect_columns(&self.expr);
        !columns.is_empty()
            && columns.iter().all(|c| {
                model.columns.iter().any(|col| {
                    col.name == c.name()
                        && matches!(
                            col.source,
                            ColumnSource::Index { .. } | ColumnSource::Coordinate { .. }
                        )
                })
            })
    }
}
