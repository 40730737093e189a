//! Filters on any value column, evaluated per work unit on the values as the table shows them
//! (CF decoded, `fill_as_null` applied), before the unit's other columns are fetched or
//! decoded: late materialisation for every predicate DataFusion can evaluate (comparisons,
//! ranges, `IN`, `IS NULL`, `BETWEEN`, and `AND`/`OR`/`NOT` of them), where the UTF-32 filters
//! (`raw_filter.rs`) cover string predicates on the code units themselves.
//!
//! A filter qualifies when every column it reads is a value column (an array read per work
//! unit) and it is neither volatile (`random()`) nor dynamic (DataFusion's runtime filters,
//! which only prune). It is evaluated by DataFusion's own physical expression over a batch of
//! just its columns, so it keeps exactly the rows DataFusion's `FilterExec` would.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, BooleanArray, RecordBatch, RecordBatchOptions};
use arrow::buffer::BooleanBuffer;
use arrow::datatypes::{DataType, Schema, SchemaRef};
use datafusion::physical_expr::utils::{collect_columns, reassign_expr_columns};
use datafusion::physical_expr_common::physical_expr::{is_volatile, snapshot_generation};
use datafusion::physical_plan::PhysicalExpr;

use crate::error::{Result, ZarrError};
use crate::scan::filter::ScanFilter;
use crate::table::{ColumnSource, TableModel};

/// A filter evaluated on the decoded values of its columns.
#[derive(Debug, Clone)]
pub(crate) struct DecodedFilter {
    /// The columns it reads (indices into the model's columns), in the order of `schema`.
    pub(crate) columns: Vec<usize>,
    /// Those columns' fields.
    schema: SchemaRef,
    /// The filter over `schema`.
    predicate: Arc<dyn PhysicalExpr>,
    /// The filter over the table's columns, as parsed (what a plan sent to another process
    /// carries).
    expr: Arc<dyn PhysicalExpr>,
    display: String,
}

impl std::fmt::Display for DecodedFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.display)
    }
}

impl DecodedFilter {
    /// `filter` as a decoded filter of `model`, if it qualifies (see the module's text).
    pub(crate) fn parse(model: &TableModel, filter: &ScanFilter) -> Option<Self> {
        let expr = &filter.expr;
        if is_volatile(expr) || snapshot_generation(expr) != 0 {
            return None;
        }
        if expr.data_type(&model.schema).ok()? != DataType::Boolean {
            return None;
        }
        let mut columns: Vec<usize> = Vec::new();
        for c in collect_columns(expr) {
            let index = model.columns.iter().position(|col| col.name == c.name())?;
            if !matches!(model.columns[index].source, ColumnSource::Value { .. }) {
                return None;
            }
            if !columns.contains(&index) {
                columns.push(index);
            }
        }
        if columns.is_empty() {
            return None;
        }
        columns.sort_unstable();
        let fields: Vec<_> = (columns.iter())
            .map(|&c| model.schema.field(c).clone())
            .collect();
        let schema = Arc::new(Schema::new(fields));
        let predicate = reassign_expr_columns(Arc::clone(expr), &schema).ok()?;
        Some(Self {
            columns,
            schema,
            predicate,
            expr: Arc::clone(expr),
            display: filter.display(),
        })
    }

    /// The physical expression this filter was parsed from.
    #[cfg_attr(not(feature = "ballista"), allow(dead_code))]
    pub(crate) fn expr(&self) -> &Arc<dyn PhysicalExpr> {
        &self.expr
    }

    /// This filter shown as `display` (the text it had where it was first parsed).
    #[cfg_attr(not(feature = "ballista"), allow(dead_code))]
    pub(crate) fn shown_as(mut self, display: String) -> Self {
        self.display = display;
        self
    }

    /// Whether `other` tests the same thing (so one of them is enough).
    pub(crate) fn same_as(&self, other: &DecodedFilter) -> bool {
        // Over the filters' own columns: the same filter planned over the table's columns and
        // pushed down over a projection's differs only in its columns' indices there.
        self.columns == other.columns && self.predicate.to_string() == other.predicate.to_string()
    }

    /// Evaluates the filter on `values` (a unit's `rows` values of each of its columns, in
    /// the order of [`DecodedFilter::columns`]) and returns `mask` AND its result: a row is
    /// kept where the filter is true (not false, not NULL), as `FilterExec` keeps it.
    pub(crate) fn apply(
        &self,
        model: &TableModel,
        values: Vec<ArrayRef>,
        rows: usize,
        mask: &BooleanBuffer,
    ) -> Result<BooleanBuffer> {
        let failed = |e: &dyn std::fmt::Display| {
            ZarrError::internal(format!(
                "evaluating the filter {} on {}: {e}",
                self.display, model.display
            ))
        };
        let options = RecordBatchOptions::new().with_row_count(Some(rows));
        let batch = RecordBatch::try_new_with_options(self.schema.clone(), values, &options)
            .map_err(|e| failed(&e))?;
        let result = self
            .predicate
            .evaluate(&batch)
            .and_then(|v| v.into_array(rows))
            .map_err(|e| failed(&e))?;
        let Some(kept) = result.as_any().downcast_ref::<BooleanArray>() else {
            return Err(failed(&format!("it gave {}", result.data_type())));
        };
        if kept.len() != mask.len() {
            return Err(failed(&format!(
                "{} results for {} rows",
                kept.len(),
                mask.len()
            )));
        }
        // NULL keeps no row. (arrow's `prep_null_mask_filter` unwraps the nulls it expects.)
        Ok(match kept.nulls() {
            Some(nulls) => &(mask & kept.values()) & nulls.inner(),
            None => mask & kept.values(),
        })
    }
}
