//! String predicates evaluated on the decoded UTF-32 code units, before any UTF-8 is made.
//!
//! A `fixed_length_utf32` element is `width / 4` code units padded with U+0000, and Arrow's
//! string order is code point order, so against a literal encoded the same way:
//! - `=`, `<>`, `IN` compare whole elements with the padded literal (a `memcmp`);
//! - `LIKE` and `NOT LIKE` (any pattern of `%` and `_` without an escape character) and
//!   `starts_with` match unit by unit, one code unit being one character; `LIKE '%abc%'` is a
//!   single `memmem` scan of the chunk (see `zarr_utf32::predicate`);
//! - `<`, `<=`, `>`, `>=` compare unit by unit, the padding reading as U+0000.
//!
//! This is exact for literals that do not end in U+0000 (others are left to DataFusion), given
//! that only trailing U+0000 is stripped. NULLs (`fill_as_null`, `invalid_utf32 = 'null'`)
//! match nothing; with `'replace'`, invalid units compare as U+FFFD; with `'error'`, the filter
//! column is validated as the normal path would. A chunk whose code units are all valid (the
//! usual case, checked at memory speed) skips the per-element handling of invalid units.

use std::collections::HashSet;
use std::sync::Arc;

use datafusion::common::ScalarValue;
use datafusion::logical_expr::Operator;
use datafusion::physical_expr::ScalarFunctionExpr;
use datafusion::physical_expr::expressions::{BinaryExpr, Column, InListExpr, LikeExpr, Literal};
use datafusion::physical_plan::PhysicalExpr;
use zarr_utf32::predicate::{LikePattern, all_scalar_values, is_scalar_value};

use crate::error::{Result, ZarrError};
use crate::node::ElementKind;
use crate::options::{InvalidUtf32, ZarrOptions};
use crate::scan::filter::ScanFilter;
use crate::table::{ColumnSource, TableModel, ValuePlan};

/// How the element relates to the literal(s).
#[derive(Debug, Clone, PartialEq)]
enum Op {
    /// Equal to one of the literals (`=`, `IN`).
    Eq,
    NotEq,
    Lt,
    LtEq,
    Gt,
    GtEq,
    Like {
        pattern: LikePattern,
        negated: bool,
    },
}

/// One predicate on a `fixed_length_utf32` column.
#[derive(Debug, Clone)]
pub(crate) struct RawFilter {
    /// The column (index into the model's columns).
    pub(crate) column: usize,
    op: Op,
    /// Literals as code units (one for a comparison, several for `IN`, none for `LIKE`).
    literals: Vec<Vec<u32>>,
    display: String,
    /// The physical expression it was parsed from (what a plan sent to another process
    /// carries, to be parsed again there).
    expr: Arc<dyn PhysicalExpr>,
}

impl std::fmt::Display for RawFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.display)
    }
}

/// The string value of a literal expression.
fn literal_string(e: &Arc<dyn PhysicalExpr>) -> Option<&str> {
    match e.downcast_ref::<Literal>()?.value() {
        ScalarValue::Utf8(Some(s))
        | ScalarValue::Utf8View(Some(s))
        | ScalarValue::LargeUtf8(Some(s)) => Some(s),
        _ => None,
    }
}

/// Whether we can compare against `s` exactly: no trailing U+0000; with
/// `invalid_utf32 = 'replace'`, no U+FFFD (which invalid units would equal).
fn comparable(s: &str, options: &ZarrOptions) -> bool {
    !(s.ends_with('\0')
        || (options.invalid_utf32 == InvalidUtf32::Replace && s.contains('\u{FFFD}')))
}

/// Code units of a literal we can compare exactly (see [`comparable`]).
fn units(s: &str, options: &ZarrOptions) -> Option<Vec<u32>> {
    comparable(s, options).then(|| s.chars().map(u32::from).collect())
}

/// Literals padded to the element width, as they appear in a chunk; a literal longer than the
/// element can equal nothing and is left out.
fn padded_literals(literals: &[Vec<u32>], width: usize) -> Vec<Vec<u8>> {
    literals
        .iter()
        .filter(|l| l.len() <= width / 4)
        .map(|l| {
            let mut b: Vec<u8> = l.iter().flat_map(|u| u.to_ne_bytes()).collect();
            b.resize(width, 0);
            b
        })
        .collect()
}

/// Membership of an element in a set of padded literals: a scan for a few, a hash set for many.
enum Members<'a> {
    Few(&'a [Vec<u8>]),
    Many(HashSet<&'a [u8]>),
}

impl<'a> Members<'a> {
    fn new(padded: &'a [Vec<u8>]) -> Self {
        if padded.len() <= 8 {
            Members::Few(padded)
        } else {
            Members::Many(padded.iter().map(Vec::as_slice).collect())
        }
    }

    #[inline]
    fn contains(&self, element: &[u8]) -> bool {
        match self {
            // The first code unit settles most comparisons without a call to memcmp.
            Members::Few(p) => p
                .iter()
                .any(|l| l.get(..4) == element.get(..4) && l.as_slice() == element),
            Members::Many(set) => set.contains(element),
        }
    }
}

impl RawFilter {
    /// The raw form of `filter`, if it is a predicate we evaluate on code units.
    pub(crate) fn parse(model: &TableModel, filter: &ScanFilter) -> Option<Self> {
        let (column, op, literals) = parts(model, &filter.expr)?;
        Some(Self {
            column,
            op,
            literals,
            display: filter.display(),
            expr: Arc::clone(&filter.expr),
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
    pub(crate) fn same_as(&self, other: &RawFilter) -> bool {
        self.column == other.column && self.op == other.op && self.literals == other.literals
    }

    /// Evaluates the filter on `input` (elements of `width` bytes, native-endian code units),
    /// AND-ing the result into `mask`. `fill` is the fill value's bytes. In `error` mode, an
    /// invalid code unit is reported as `Err((element index, code unit))`.
    pub(crate) fn apply(
        &self,
        input: &[u8],
        width: usize,
        fill: &[u8],
        plan: &ValuePlan,
        mask: &mut [bool],
    ) -> std::result::Result<(), (usize, u32)> {
        if width == 0 {
            return Ok(());
        }
        let padded = padded_literals(&self.literals, width);
        let members = Members::new(&padded);
        // Blocks of about 16 KiB: validated, then filtered while still in the L1 cache.
        let per_block = (16 * 1024 / width).max(1);
        let blocks = input
            .chunks(per_block * width)
            .zip(mask.chunks_mut(per_block));
        for (b, (block, mask)) in blocks.enumerate() {
            if all_scalar_values(block) {
                self.apply_valid(block, width, fill, plan, mask, &members);
            } else {
                self.apply_per_element(block, width, fill, plan, mask, &members)
                    .map_err(|(i, u)| (b * per_block + i, u))?;
            }
        }
        Ok(())
    }

    /// The path for elements whose code units are all valid, so the invalid_utf32 modes change
    /// nothing.
    fn apply_valid(
        &self,
        input: &[u8],
        width: usize,
        fill: &[u8],
        plan: &ValuePlan,
        mask: &mut [bool],
        members: &Members,
    ) {
        let elements = input.chunks_exact(width);
        match &self.op {
            Op::Like { pattern, negated } => {
                let mut hits = vec![false; mask.len()];
                pattern.find_matches(input, width, &mut hits);
                for (keep, hit) in mask.iter_mut().zip(hits) {
                    *keep &= hit != *negated;
                }
            }
            Op::Eq | Op::NotEq => {
                let equal = matches!(self.op, Op::Eq);
                for (keep, element) in mask.iter_mut().zip(elements) {
                    *keep = *keep && members.contains(element) == equal;
                }
            }
            Op::Lt | Op::LtEq | Op::Gt | Op::GtEq => {
                let n_units = width / 4;
                for (keep, element) in mask.iter_mut().zip(elements) {
                    *keep = *keep && self.compare(element, n_units, |u| u);
                }
            }
        }
        if plan.fill_as_null {
            for (keep, element) in mask.iter_mut().zip(input.chunks_exact(width)) {
                *keep = *keep && element != fill;
            }
        }
    }

    /// Ordering comparison of one element against the literal; `map` turns each code unit into
    /// the character it reads as.
    fn compare(&self, element: &[u8], n_units: usize, map: impl Fn(u32) -> u32) -> bool {
        let lit = &self.literals[0];
        let value = |k: usize| {
            if k < n_units {
                map(u32::from_ne_bytes([
                    element[4 * k],
                    element[4 * k + 1],
                    element[4 * k + 2],
                    element[4 * k + 3],
                ]))
            } else {
                0
            }
        };
        let mut ord = std::cmp::Ordering::Equal;
        for k in 0..n_units.max(lit.len()) {
            let (a, b) = (value(k), lit.get(k).copied().unwrap_or(0));
            if a != b {
                ord = a.cmp(&b);
                break;
            }
        }
        match self.op {
            Op::Lt => ord.is_lt(),
            Op::LtEq => ord.is_le(),
            Op::Gt => ord.is_gt(),
            Op::GtEq => ord.is_ge(),
            _ => false,
        }
    }

    /// The path for chunks holding an invalid code unit: each element on its own, applying
    /// the invalid_utf32 mode.
    fn apply_per_element(
        &self,
        input: &[u8],
        width: usize,
        fill: &[u8],
        plan: &ValuePlan,
        mask: &mut [bool],
        members: &Members,
    ) -> std::result::Result<(), (usize, u32)> {
        let n_units = width / 4;
        let replace = |u: u32| if is_scalar_value(u) { u } else { 0xFFFD };
        let mut units = Vec::with_capacity(n_units);
        for (i, (element, keep)) in input.chunks_exact(width).zip(mask.iter_mut()).enumerate() {
            units.clear();
            units.extend(
                element
                    .chunks_exact(4)
                    .map(|u| u32::from_ne_bytes([u[0], u[1], u[2], u[3]])),
            );
            if let Some(&u) = units.iter().find(|&&u| !is_scalar_value(u)) {
                match plan.invalid_utf32 {
                    InvalidUtf32::Error => return Err((i, u)),
                    InvalidUtf32::Null => {
                        *keep = false;
                        continue;
                    }
                    InvalidUtf32::Replace => {}
                }
            }
            if !*keep {
                continue;
            }
            if plan.fill_as_null && element == fill {
                *keep = false;
                continue;
            }
            // Literals never hold U+FFFD under 'replace', so an invalid unit (read as U+FFFD)
            // equals no literal unit and raw units compare as replaced ones for (in)equality
            // and LIKE; ordering maps them.
            *keep = match &self.op {
                Op::Eq => members.contains(element),
                Op::NotEq => !members.contains(element),
                Op::Like { pattern, negated } => {
                    let n = zarr_utf32::trimmed_units(element);
                    pattern.matches(&units[..n]) != *negated
                }
                _ => self.compare(element, n_units, replace),
            };
        }
        Ok(())
    }
}

/// The column, operation and literals of a predicate we evaluate on code units: `=`, `<>`,
/// `<`, `<=`, `>`, `>=` against a string literal, `IN` and `OR` of equalities, `LIKE` and
/// `NOT LIKE` without escapes, and `starts_with`, on a `fixed_length_utf32` value column.
fn parts(model: &TableModel, expr: &Arc<dyn PhysicalExpr>) -> Option<(usize, Op, Vec<Vec<u32>>)> {
    let column_index = |e: &Arc<dyn PhysicalExpr>| -> Option<usize> {
        let name = e.downcast_ref::<Column>()?.name();
        let i = model.columns.iter().position(|col| col.name == name)?;
        let ColumnSource::Value { array } = &model.columns[i].source else {
            return None;
        };
        matches!(array.kind, Some(ElementKind::Utf32 { .. })).then_some(i)
    };
    let options = &model.options;
    if let Some(b) = expr.downcast_ref::<BinaryExpr>() {
        // `c = 'a' OR c = 'b'` (how DataFusion rewrites a short IN list) is an IN list.
        if *b.op() == Operator::Or {
            let (left, left_op, mut literals) = parts(model, b.left())?;
            let (right, right_op, right_literals) = parts(model, b.right())?;
            if left != right || left_op != Op::Eq || right_op != Op::Eq {
                return None;
            }
            literals.extend(right_literals);
            return Some((left, Op::Eq, literals));
        }
        let (col, lit, flipped) = match (column_index(b.left()), literal_string(b.right())) {
            (Some(c), Some(l)) => (c, l, false),
            _ => (column_index(b.right())?, literal_string(b.left())?, true),
        };
        let op = match (*b.op(), flipped) {
            (Operator::Eq, _) => Op::Eq,
            (Operator::NotEq, _) => Op::NotEq,
            (Operator::Lt, false) | (Operator::Gt, true) => Op::Lt,
            (Operator::LtEq, false) | (Operator::GtEq, true) => Op::LtEq,
            (Operator::Gt, false) | (Operator::Lt, true) => Op::Gt,
            (Operator::GtEq, false) | (Operator::LtEq, true) => Op::GtEq,
            _ => return None,
        };
        return Some((col, op, vec![units(lit, options)?]));
    }
    if let Some(list) = expr.downcast_ref::<InListExpr>() {
        if list.negated() {
            return None;
        }
        let col = column_index(list.expr())?;
        let literals = list
            .list()
            .iter()
            .map(|e| literal_string(e).and_then(|s| units(s, options)))
            .collect::<Option<Vec<_>>>()?;
        return Some((col, Op::Eq, literals));
    }
    if let Some(like) = expr.downcast_ref::<LikeExpr>() {
        if like.case_insensitive() {
            return None;
        }
        let col = column_index(like.expr())?;
        let pattern = literal_string(like.pattern())?;
        // Escapes (physical LIKE always escapes with '\\') are left to DataFusion; a literal
        // U+FFFD only under 'replace'.
        if pattern.contains('\\')
            || (options.invalid_utf32 == InvalidUtf32::Replace && pattern.contains('\u{FFFD}'))
        {
            return None;
        }
        let op = Op::Like {
            pattern: LikePattern::new(pattern)?,
            negated: like.negated(),
        };
        return Some((col, op, Vec::new()));
    }
    if let Some(f) = expr.downcast_ref::<ScalarFunctionExpr>()
        && f.name() == "starts_with"
        && let [column, prefix] = f.args()
    {
        let col = column_index(column)?;
        let literal = literal_string(prefix)?;
        let op = Op::Like {
            pattern: LikePattern::starts_with(literal).filter(|_| comparable(literal, options))?,
            negated: false,
        };
        return Some((col, op, Vec::new()));
    }
    None
}

/// Evaluates `filters` on one unit's regions, returning the rows that pass.
pub(crate) fn select_rows(
    model: &TableModel,
    filters: &[RawFilter],
    regions: &[(usize, &crate::scan::read::Elements)],
    rows: usize,
    locate: &dyn Fn(usize, usize) -> (String, u64),
) -> Result<Vec<bool>> {
    let mut mask = vec![true; rows];
    for f in filters {
        let Some((_, elements)) = regions.iter().find(|(c, _)| *c == f.column) else {
            continue;
        };
        let crate::scan::read::Elements::Fixed { bytes, size } = elements else {
            continue;
        };
        let ColumnSource::Value { array } = &model.columns[f.column].source else {
            continue;
        };
        let fill = array.zarrs()?.fill_value().as_ne_bytes();
        f.apply(bytes, *size, fill, &model.columns[f.column].plan, &mut mask)
            .map_err(|(index, code_unit)| {
                let (chunk, index) = locate(f.column, index);
                ZarrError::InvalidUtf32 {
                    array: array.display.clone(),
                    chunk,
                    index,
                    code_unit,
                }
            })?;
    }
    Ok(mask)
}
