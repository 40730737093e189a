//! Monotonic coordinates → index ranges by binary search.
//!
//! A coordinate whose values never decrease (or never increase) and hold no NULL or NaN turns
//! `coord = x`, `<`, `<=`, `>`, `>=`, `BETWEEN` (`>= AND <=`), `AND` and `IN` into ranges of indexes with a binary
//! search per literal, instead of evaluating the predicate on every value. Comparisons use
//! Arrow's ordering of the coordinate's own type (the literal must already have that type, as
//! DataFusion's coercion leaves it for a bare column); anything else is left to evaluation.

use std::cmp::Ordering;
use std::ops::Range;

use arrow::array::{Array, ArrayRef, DynComparator, make_comparator};
use arrow::compute::SortOptions;
use arrow::datatypes::DataType;
use std::sync::Arc;

use datafusion::common::ScalarValue;
use datafusion::logical_expr::Operator;
use datafusion::physical_expr::expressions::{BinaryExpr, Column, InListExpr, Literal};
use datafusion::physical_plan::PhysicalExpr;

/// Which way a coordinate runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Direction {
    /// Never decreasing.
    Ascending,
    /// Never increasing (and not constant).
    Descending,
}

/// The direction of `values`, if they are monotonic with no NULL and no NaN.
pub(super) fn direction(values: &ArrayRef) -> Option<Direction> {
    if values.null_count() > 0 || has_nan(values) {
        return None;
    }
    let cmp = make_comparator(values.as_ref(), values.as_ref(), SortOptions::default()).ok()?;
    let n = values.len();
    if (1..n).all(|i| cmp(i - 1, i) != Ordering::Greater) {
        Some(Direction::Ascending)
    } else if (1..n).all(|i| cmp(i - 1, i) != Ordering::Less) {
        Some(Direction::Descending)
    } else {
        None
    }
}

fn has_nan(values: &ArrayRef) -> bool {
    use arrow::array::AsArray;
    use arrow::datatypes::{DataType, Float16Type, Float32Type, Float64Type};
    match values.data_type() {
        DataType::Float16 => values
            .as_primitive::<Float16Type>()
            .values()
            .iter()
            .any(|v| v.is_nan()),
        DataType::Float32 => values
            .as_primitive::<Float32Type>()
            .values()
            .iter()
            .any(|v| v.is_nan()),
        DataType::Float64 => values
            .as_primitive::<Float64Type>()
            .values()
            .iter()
            .any(|v| v.is_nan()),
        _ => false,
    }
}

/// `cmp(i, 0)`: how value `i` compares with `x`, as SQL compares them. Arrow's comparator
/// orders floats totally, where -0.0 is below 0.0; DataFusion's `=` and `<` hold them equal,
/// so floats compare by IEEE 754 (the values hold no NaN; a NaN literal is left to
/// evaluation).
fn comparator(values: &ArrayRef, x: &ScalarValue) -> Option<DynComparator> {
    use arrow::array::AsArray;
    use arrow::datatypes::{Float16Type, Float32Type, Float64Type};
    let float = match x {
        ScalarValue::Float16(Some(v)) => f64::from(*v),
        ScalarValue::Float32(Some(v)) => f64::from(*v),
        ScalarValue::Float64(Some(v)) => *v,
        _ => {
            let lit = x.to_array().ok()?;
            return make_comparator(values.as_ref(), lit.as_ref(), SortOptions::default()).ok();
        }
    };
    if float.is_nan() {
        return None;
    }
    let ieee = move |v: f64| v.partial_cmp(&float).unwrap_or(Ordering::Equal);
    let cmp: DynComparator = match values.data_type() {
        DataType::Float16 => {
            let v = values.as_primitive::<Float16Type>().values().clone();
            Box::new(move |i, _| ieee(f64::from(v[i])))
        }
        DataType::Float32 => {
            let v = values.as_primitive::<Float32Type>().values().clone();
            Box::new(move |i, _| ieee(f64::from(v[i])))
        }
        DataType::Float64 => {
            let v = values.as_primitive::<Float64Type>().values().clone();
            Box::new(move |i, _| ieee(v[i]))
        }
        _ => return None,
    };
    Some(cmp)
}

/// Binary searches over one monotonic coordinate.
struct Search<'a> {
    values: &'a ArrayRef,
    direction: Direction,
}

impl Search<'_> {
    /// Number of leading values `v` for which `ord(v, x)` is in `leading` (a prefix, since the
    /// values are monotonic).
    fn prefix(&self, x: &ScalarValue, leading: &[Ordering]) -> Option<usize> {
        let cmp = comparator(self.values, x)?;
        let n = self.values.len();
        let (mut lo, mut hi) = (0, n);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if leading.contains(&cmp(mid, 0)) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        Some(lo)
    }

    /// The indexes where `coord op x` holds.
    fn compare(&self, op: Operator, x: &ScalarValue) -> Option<Range<usize>> {
        use Ordering::{Equal, Greater, Less};
        let n = self.values.len();
        // Ascending: the values below x come first; descending: those above.
        let before = match self.direction {
            Direction::Ascending => Less,
            Direction::Descending => Greater,
        };
        let strictly = self.prefix(x, &[before])?;
        let up_to = self.prefix(x, &[before, Equal])?;
        let range =
            match (op, self.direction) {
                (Operator::Eq, _) => strictly..up_to,
                (Operator::Lt, Direction::Ascending) | (Operator::Gt, Direction::Descending) => {
                    0..strictly
                }
                (Operator::LtEq, Direction::Ascending)
                | (Operator::GtEq, Direction::Descending) => 0..up_to,
                (Operator::Gt, Direction::Ascending) | (Operator::Lt, Direction::Descending) => {
                    up_to..n
                }
                (Operator::GtEq, Direction::Ascending)
                | (Operator::LtEq, Direction::Descending) => strictly..n,
                _ => return None,
            };
        Some(range)
    }
}

/// The sorted, disjoint index ranges where `expr` (one conjunct on coordinate `name`) holds,
/// or `None` if it is not a form binary search answers.
pub(super) fn index_ranges(
    values: &ArrayRef,
    direction: Direction,
    name: &str,
    expr: &Arc<dyn PhysicalExpr>,
) -> Option<Vec<Range<usize>>> {
    let search = Search { values, direction };
    let is_column =
        |e: &Arc<dyn PhysicalExpr>| e.downcast_ref::<Column>().is_some_and(|c| c.name() == name);
    let literal = |e: &Arc<dyn PhysicalExpr>| {
        let v = e.downcast_ref::<Literal>()?.value();
        (!v.is_null() && v.data_type() == *values.data_type()).then(|| v.clone())
    };
    let ranges = if let Some(b) = expr.downcast_ref::<BinaryExpr>() {
        if *b.op() == Operator::And {
            let left = index_ranges(values, direction, name, b.left())?;
            let right = index_ranges(values, direction, name, b.right())?;
            return Some(intersect(&left, &right));
        }
        if is_column(b.left()) {
            vec![search.compare(*b.op(), &literal(b.right())?)?]
        } else if is_column(b.right()) {
            vec![search.compare(b.op().swap()?, &literal(b.left())?)?]
        } else {
            return None;
        }
    } else if let Some(list) = expr.downcast_ref::<InListExpr>() {
        if list.negated() || !is_column(list.expr()) {
            return None;
        }
        list.list()
            .iter()
            .map(|e| search.compare(Operator::Eq, &literal(e)?))
            .collect::<Option<Vec<_>>>()?
    } else {
        return None;
    };
    Some(normalise(ranges))
}

/// Sorts and merges ranges, dropping empty ones.
fn normalise(mut ranges: Vec<Range<usize>>) -> Vec<Range<usize>> {
    ranges.retain(|r| r.start < r.end);
    ranges.sort_by_key(|r| r.start);
    let mut out: Vec<Range<usize>> = Vec::with_capacity(ranges.len());
    for r in ranges {
        match out.last_mut() {
            Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
            _ => out.push(r),
        }
    }
    out
}

/// The intersection of two sorted, disjoint lists of ranges.
pub(super) fn intersect(a: &[Range<usize>], b: &[Range<usize>]) -> Vec<Range<usize>> {
    let (mut i, mut j, mut out) = (0, 0, Vec::new());
    while i < a.len() && j < b.len() {
        let (start, end) = (a[i].start.max(b[j].start), a[i].end.min(b[j].end));
        if start < end {
            out.push(start..end);
        }
        if a[i].end < b[j].end {
            i += 1;
        } else {
            j += 1;
        }
    }
    out
}

/// Whether `ranges` (sorted, disjoint) meet `span`.
pub(super) fn overlaps(ranges: &[Range<usize>], span: Range<usize>) -> bool {
    // The first range ending after span.start is the only candidate.
    let k = ranges.partition_point(|r| r.end <= span.start);
    ranges.get(k).is_some_and(|r| r.start < span.end)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Float64Array, Int32Array, StringArray};
    use arrow::datatypes::{Field, Schema};
    use datafusion::common::DFSchema;
    use datafusion::logical_expr::Expr;
    use datafusion::logical_expr::execution_props::ExecutionProps;
    use datafusion::logical_expr::physical_planning_context::PhysicalPlanningContext;
    use datafusion::physical_expr::create_physical_expr;
    use datafusion::prelude::{col, lit};

    /// `expr` over one column `c` of the type of `values`, in physical form.
    fn physical(expr: &Expr, values: &ArrayRef) -> Arc<dyn PhysicalExpr> {
        let schema = Schema::new(vec![Field::new("c", values.data_type().clone(), false)]);
        let schema = DFSchema::try_from(schema).unwrap();
        let props = ExecutionProps::new();
        create_physical_expr(expr, &schema, &props, &PhysicalPlanningContext::default()).unwrap()
    }

    /// Every form against a plain scan of the values.
    fn check(values: ArrayRef, literals: &[ScalarValue]) {
        let dir = direction(&values).expect("monotonic");
        let scalar = |i: usize| ScalarValue::try_from_array(&values, i).unwrap();
        let brute = |f: &dyn Fn(&ScalarValue) -> bool| -> Vec<Range<usize>> {
            normalise(
                (0..values.len())
                    .filter(|&i| f(&scalar(i)))
                    .map(|i| i..i + 1)
                    .collect(),
            )
        };
        for x in literals {
            let y = literals[literals.len() / 2].clone();
            type Holds<'a> = Box<dyn Fn(&ScalarValue) -> bool + 'a>;
            let cases: Vec<(Expr, Holds)> = vec![
                (col("c").eq(lit(x.clone())), Box::new(|v| v == x)),
                (col("c").lt(lit(x.clone())), Box::new(|v| v < x)),
                (col("c").lt_eq(lit(x.clone())), Box::new(|v| v <= x)),
                (col("c").gt(lit(x.clone())), Box::new(|v| v > x)),
                (col("c").gt_eq(lit(x.clone())), Box::new(|v| v >= x)),
                (lit(x.clone()).lt(col("c")), Box::new(|v| v > x)),
                (
                    col("c").between(lit(x.clone()), lit(y.clone())),
                    Box::new(|v| v >= x && v <= &y),
                ),
                (
                    col("c").in_list(vec![lit(x.clone()), lit(y.clone())], false),
                    Box::new(|v| v == x || v == &y),
                ),
            ];
            for (expr, f) in cases {
                let got =
                    index_ranges(&values, dir, "c", &physical(&expr, &values)).expect("answered");
                assert_eq!(got, brute(f.as_ref()), "{expr} over {values:?}");
            }
        }
    }

    #[test]
    fn binary_search_agrees_with_a_scan() {
        let asc: ArrayRef = Arc::new(Float64Array::from(vec![0.0, 0.5, 0.5, 1.0, 2.5, 2.5, 7.0]));
        let lits: Vec<ScalarValue> = [-1.0, 0.0, 0.5, 0.7, 2.5, 7.0, 9.0]
            .map(|v| ScalarValue::Float64(Some(v)))
            .into();
        check(asc, &lits);
        let desc: ArrayRef = Arc::new(Int32Array::from(vec![1000, 850, 850, 500, 100]));
        let lits: Vec<ScalarValue> = [2000, 1000, 850, 600, 100, 0]
            .map(|v| ScalarValue::Int32(Some(v)))
            .into();
        check(desc, &lits);
        let names: ArrayRef = Arc::new(StringArray::from(vec!["ST-001", "ST-002", "ST-010"]));
        let lits: Vec<ScalarValue> = ["ST-000", "ST-002", "ST-005", "ST-010", "ZZ"]
            .map(|v| ScalarValue::Utf8(Some(v.into())))
            .into();
        check(names, &lits);
    }

    /// -0.0 and 0.0 are equal to DataFusion's evaluation (IEEE 754), though Arrow's sort
    /// order puts -0.0 first: the searches answer as the evaluation does.
    #[test]
    fn negative_zero_equals_zero_as_datafusion_evaluates_it() {
        use arrow::array::{AsArray, RecordBatch};
        let values: ArrayRef = Arc::new(Float64Array::from(vec![-3.0, -1.0, -0.0, 1.0, 2.0]));
        let zeros: ArrayRef = Arc::new(Float64Array::from(vec![0.0, 0.0, 0.0, 1.0]));
        for values in [values, zeros] {
            let dir = direction(&values).expect("monotonic");
            let schema = Arc::new(Schema::new(vec![Field::new("c", DataType::Float64, false)]));
            let batch = RecordBatch::try_new(schema, vec![values.clone()]).unwrap();
            for x in [0.0, -0.0] {
                let x = lit(ScalarValue::Float64(Some(x)));
                for expr in [
                    col("c").eq(x.clone()),
                    col("c").lt(x.clone()),
                    col("c").lt_eq(x.clone()),
                    col("c").gt(x.clone()),
                    col("c").gt_eq(x.clone()),
                ] {
                    let physical = physical(&expr, &values);
                    let evaluated = physical.evaluate(&batch).unwrap();
                    let evaluated = evaluated.into_array(values.len()).unwrap();
                    let holds = evaluated.as_boolean();
                    let want = normalise(
                        (0..values.len())
                            .filter(|&i| holds.value(i))
                            .map(|i| i..i + 1)
                            .collect(),
                    );
                    let got = index_ranges(&values, dir, "c", &physical).expect("answered");
                    assert_eq!(got, want, "{expr} over {values:?}");
                }
            }
        }
    }

    #[test]
    fn only_monotonic_coordinates_without_nulls_or_nan() {
        let a: ArrayRef = Arc::new(Float64Array::from(vec![0.0, 2.0, 1.0]));
        assert_eq!(direction(&a), None);
        let a: ArrayRef = Arc::new(Float64Array::from(vec![0.0, f64::NAN]));
        assert_eq!(direction(&a), None);
        let a: ArrayRef = Arc::new(Int32Array::from(vec![Some(1), None]));
        assert_eq!(direction(&a), None);
        // A literal of another type (a cast column) is left to evaluation.
        let a: ArrayRef = Arc::new(Int32Array::from(vec![1, 2, 3]));
        let e: Arc<dyn PhysicalExpr> = Arc::new(BinaryExpr::new(
            Arc::new(Column::new("c", 0)),
            Operator::Lt,
            Arc::new(Literal::new(ScalarValue::Float64(Some(2.5)))),
        ));
        assert_eq!(index_ranges(&a, Direction::Ascending, "c", &e), None);
    }

    #[test]
    fn range_lists() {
        assert_eq!(
            intersect(&[0..5, 8..12], &[3..9, 11..20]),
            [3..5, 8..9, 11..12]
        );
        assert!(overlaps(&[2..4, 10..12], 3..6));
        assert!(!overlaps(&[2..4, 10..12], 4..10));
        assert!(overlaps(&[2..4, 10..12], 9..11));
    }
}
