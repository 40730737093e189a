//! String predicates evaluated on the decoded UTF-32 code units, before any UTF-8 is made.
//!
//! A `fixed_length_utf32` element is `width / 4` code units padded with U+0000, and Arrow's
//! string order is code point order, so against a literal encoded the same way:
//! - `=`, `<>`, `IN` compare whole elements with the padded literal (a `memcmp`);
//! - `LIKE 'abc%'` and `starts_with` compare the first units;
//! - `<`, `<=`, `>`, `>=` compare unit by unit, the padding reading as U+0000.
//!
//! This is exact for literals that do not end in U+0000 (others are left to DataFusion), given
//! that only trailing U+0000 is stripped. NULLs (`fill_as_null`, `invalid_utf32 = 'null'`)
//! match nothing; with `'replace'`, invalid units compare as U+FFFD; with `'error'`, the filter
//! column is validated as the normal path would.

use datafusion::common::ScalarValue;
use datafusion::logical_expr::{Expr, Operator};

use crate::error::{Result, ZarrError};
use crate::node::ElementKind;
use crate::options::{InvalidUtf32, ZarrOptions};
use crate::table::{ColumnSource, TableModel};

/// How the element relates to the literal.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Op {
    Eq,
    NotEq,
    Lt,
    LtEq,
    Gt,
    GtEq,
    Prefix,
}

/// One predicate on a `fixed_length_utf32` column.
#[derive(Debug, Clone)]
pub struct RawFilter {
    /// The column (index into the model's columns).
    pub column: usize,
    op: Op,
    /// Literals as code units (one for a comparison, several for `IN`).
    literals: Vec<Vec<u32>>,
    display: String,
}

impl std::fmt::Display for RawFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.display)
    }
}

fn literal_string(e: &Expr) -> Option<&str> {
    match e {
        Expr::Literal(ScalarValue::Utf8(Some(s)), _)
        | Expr::Literal(ScalarValue::Utf8View(Some(s)), _)
        | Expr::Literal(ScalarValue::LargeUtf8(Some(s)), _) => Some(s),
        _ => None,
    }
}

/// Code units of a literal we can compare exactly: no trailing U+0000; with
/// `invalid_utf32 = 'replace'`, no U+FFFD (which invalid units would equal).
fn units(s: &str, options: &ZarrOptions) -> Option<Vec<u32>> {
    if s.ends_with('\0')
        || (options.invalid_utf32 == InvalidUtf32::Replace && s.contains('\u{FFFD}'))
    {
        return None;
    }
    Some(s.chars().map(u32::from).collect())
}

impl RawFilter {
    /// The raw form of `expr`, if it is a predicate we evaluate on code units.
    pub fn parse(model: &TableModel, expr: &Expr) -> Option<Self> {
        let column_index = |e: &Expr| -> Option<usize> {
            let Expr::Column(c) = e else { return None };
            let i = model.columns.iter().position(|col| col.name == c.name)?;
            let col = &model.columns[i];
            let ColumnSource::Value { array } = &col.source else {
                return None;
            };
            matches!(array.kind, Some(ElementKind::Utf32 { .. })).then_some(i)
        };
        let options = &model.options;
        let (column, op, literals) = match expr {
            // `c = 'a' OR c = 'b'` (how DataFusion rewrites a short IN list) is an IN list.
            Expr::BinaryExpr(b) if b.op == Operator::Or => {
                let left = Self::parse(model, &b.left)?;
                let right = Self::parse(model, &b.right)?;
                if left.column != right.column || left.op != Op::Eq || right.op != Op::Eq {
                    return None;
                }
                let mut literals = left.literals;
                literals.extend(right.literals);
                (left.column, Op::Eq, literals)
            }
            Expr::BinaryExpr(b) => {
                let (col, lit, flipped) = match (column_index(&b.left), literal_string(&b.right)) {
                    (Some(c), Some(l)) => (c, l, false),
                    _ => (column_index(&b.right)?, literal_string(&b.left)?, true),
                };
                let op = match (b.op, flipped) {
                    (Operator::Eq, _) => Op::Eq,
                    (Operator::NotEq, _) => Op::NotEq,
                    (Operator::Lt, false) | (Operator::Gt, true) => Op::Lt,
                    (Operator::LtEq, false) | (Operator::GtEq, true) => Op::LtEq,
                    (Operator::Gt, false) | (Operator::Lt, true) => Op::Gt,
                    (Operator::GtEq, false) | (Operator::LtEq, true) => Op::GtEq,
                    _ => return None,
                };
                (col, op, vec![units(lit, options)?])
            }
            Expr::InList(list) if !list.negated => {
                let col = column_index(&list.expr)?;
                let lits = list
                    .list
                    .iter()
                    .map(|e| literal_string(e).and_then(|s| units(s, options)))
                    .collect::<Option<Vec<_>>>()?;
                (col, Op::Eq, lits)
            }
            Expr::Like(like) if !like.negated && !like.case_insensitive => {
                let col = column_index(&like.expr)?;
                let pattern = literal_string(&like.pattern)?;
                let prefix = pattern.strip_suffix('%')?;
                let escape = like.escape_char.unwrap_or('\\');
                if prefix.contains(['%', '_', escape]) {
                    return None;
                }
                (col, Op::Prefix, vec![units(prefix, options)?])
            }
            Expr::ScalarFunction(f) if f.func.name() == "starts_with" && f.args.len() == 2 => {
                let col = column_index(&f.args[0])?;
                (
                    col,
                    Op::Prefix,
                    vec![units(literal_string(&f.args[1])?, options)?],
                )
            }
            _ => return None,
        };
        Some(Self {
            column,
            op,
            literals,
            display: expr.to_string(),
        })
    }

    /// Evaluates the filter on `input` (elements of `width` bytes, native-endian code units),
    /// AND-ing the result into `mask`. `fill` is the fill value's bytes. In `error` mode, an
    /// invalid code unit is reported as `Err((element index, code unit))`.
    pub fn apply(
        &self,
        input: &[u8],
        width: usize,
        fill: &[u8],
        options: &ZarrOptions,
        mask: &mut [bool],
    ) -> std::result::Result<(), (usize, u32)> {
        let n_units = width / 4;
        let padded: Vec<Vec<u8>> = self
            .literals
            .iter()
            .map(|l| {
                let mut b = Vec::with_capacity(width);
                for u in l.iter().take(n_units) {
                    b.extend_from_slice(&u.to_ne_bytes());
                }
                b.resize(width, 0);
                b
            })
            .collect();
        for (i, (element, keep)) in input.chunks_exact(width).zip(mask.iter_mut()).enumerate() {
            let unit = |k: usize| {
                u32::from_ne_bytes([
                    element[4 * k],
                    element[4 * k + 1],
                    element[4 * k + 2],
                    element[4 * k + 3],
                ])
            };
            let invalid = (0..n_units)
                .map(unit)
                .find(|&u| char::from_u32(u).is_none());
            if let Some(u) = invalid {
                match options.invalid_utf32 {
                    InvalidUtf32::Error => {
                        return Err((i, u));
                    }
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
            if options.fill_as_null && element == fill {
                *keep = false;
                continue;
            }
            let value = |k: usize| {
                let u = if k < n_units { unit(k) } else { 0 };
                if char::from_u32(u).is_none() {
                    0xFFFD
                } else {
                    u
                }
            };
            let cmp = |lit: &[u32]| {
                for k in 0..n_units.max(lit.len()) {
                    let (a, b) = (value(k), lit.get(k).copied().unwrap_or(0));
                    if a != b {
                        return a.cmp(&b);
                    }
                }
                std::cmp::Ordering::Equal
            };
            *keep = match self.op {
                Op::Eq => self
                    .literals
                    .iter()
                    .zip(&padded)
                    .any(|(l, p)| l.len() <= n_units && element == p.as_slice()),
                Op::NotEq => {
                    let l = &self.literals[0];
                    !(l.len() <= n_units && element == padded[0].as_slice())
                }
                Op::Prefix => {
                    let l = &self.literals[0];
                    l.len() <= n_units && l.iter().enumerate().all(|(k, &u)| value(k) == u)
                }
                Op::Lt => cmp(&self.literals[0]).is_lt(),
                Op::LtEq => cmp(&self.literals[0]).is_le(),
                Op::Gt => cmp(&self.literals[0]).is_gt(),
                Op::GtEq => cmp(&self.literals[0]).is_ge(),
            };
        }
        Ok(())
    }
}

/// Evaluates `filters` on one unit's regions, returning the rows that pass.
pub fn select_rows(
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
        f.apply(bytes, *size, fill, &model.options, &mut mask)
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
