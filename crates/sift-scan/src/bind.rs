//! Type checking: a user's [`Expr`] against a schema becomes a [`Bound`] tree in negation
//! normal form, whose leaves are predicates in the columns' storage domains.
//!
//! `NOT` is pushed down to the leaves with De Morgan's laws (Parquet-Select's negation
//! flag): every leaf evaluates to "known and true", so `AND` and `OR` are plain bitmap
//! operations and SQL's three-valued logic still holds (a negated leaf is false on nulls,
//! like the leaf itself).

use std::collections::HashSet;
use std::sync::Arc;

use arrow_schema::{DataType, Field, Schema};
use sift_encoding::{BytesMatcher, BytesShape, ValuePredicate, float_key, is_byte_string};
use sift_format::Scalar;

use crate::coerce::{Coerced, coerce};
use crate::error::{Error, Result};
use crate::expr::{CmpOp, Expr, Literal, UdfFn};
use crate::like::Pattern;

/// A type-checked filter.
#[derive(Clone, Debug)]
pub(crate) enum Bound {
    /// True or false for every row.
    Const(bool),
    Leaf(Leaf),
    And(Vec<Bound>),
    Or(Vec<Bound>),
}

/// One predicate on one column (or two, or a user function's columns).
#[derive(Clone, Debug)]
pub(crate) struct Leaf {
    /// Index among the filter's leaves (for selectivity statistics).
    pub id: usize,
    /// The column read (the first one for column comparisons and functions).
    pub column: usize,
    pub op: LeafOp,
    /// Inclusive bounds every matching value lies in, for zone-map pruning.
    pub bounds: Option<(Option<Scalar>, Option<Scalar>)>,
    /// Text for statistics and messages.
    pub label: String,
}

#[derive(Clone)]
pub(crate) enum LeafOp {
    Value(ValuePredicate),
    /// `IS NULL`, or `IS NOT NULL` when negated.
    Null {
        negated: bool,
    },
    /// `column op right`.
    Columns {
        right: usize,
        op: CmpOp,
    },
    /// A user function, negated or not.
    Udf {
        columns: Vec<usize>,
        f: Arc<UdfFn>,
        negate: bool,
    },
}

impl std::fmt::Debug for LeafOp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LeafOp::Value(p) => write!(f, "{p:?}"),
            LeafOp::Null { negated } => write!(f, "null negated={negated}"),
            LeafOp::Columns { right, op } => write!(f, "{} column {right}", op.symbol()),
            LeafOp::Udf {
                columns, negate, ..
            } => write!(f, "udf{columns:?} negate={negate}"),
        }
    }
}

impl Bound {
    /// Visits the leaves.
    pub(crate) fn leaves(&self) -> Vec<&Leaf> {
        let mut out = Vec::new();
        fn walk<'a>(b: &'a Bound, out: &mut Vec<&'a Leaf>) {
            match b {
                Bound::Const(_) => {}
                Bound::Leaf(l) => out.push(l),
                Bound::And(v) | Bound::Or(v) => v.iter().for_each(|c| walk(c, out)),
            }
        }
        walk(self, &mut out);
        out
    }
}

/// Checks `expr` against `schema`.
pub(crate) fn bind(expr: &Expr, schema: &Schema) -> Result<Bound> {
    let mut b = Binder { schema, next_id: 0 };
    let bound = b.bind(expr, false)?;
    Ok(simplify(bound))
}

/// The index of column `name`, or an error listing the columns there are.
pub(crate) fn column_index(schema: &Schema, name: &str) -> Result<usize> {
    schema.index_of(name).map_err(|_| {
        let known: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
        Error::Type(format!(
            "no column '{}' (columns: {})",
            crate::error::shorten(name),
            known.join(", ")
        ))
    })
}

/// The type of the field reached from a struct type `dt` by the field names of `path`
/// (`None` where a step is not a struct or has no such field).
pub fn field_type_at<'a, 'p>(
    dt: &'a DataType,
    path: impl IntoIterator<Item = &'p str>,
) -> Option<&'a DataType> {
    path.into_iter().try_fold(dt, |dt, part| match dt {
        DataType::Struct(fields) => Some(fields.find(part)?.1.data_type()),
        _ => None,
    })
}

/// The field called `name` in `schema`: a column, or a field of a struct column named by
/// its path (`s.a`, `s.b.c`; a top-level name may itself hold dots), named by that path
/// and nullable (a field of a null struct is null). The error lists the columns.
pub(crate) fn field_or_path(schema: &Schema, name: &str) -> Result<Field> {
    if let Ok(i) = schema.index_of(name) {
        return Ok(schema.field(i).clone());
    }
    let found = name.match_indices('.').find_map(|(at, _)| {
        let top = schema.field_with_name(&name[..at]).ok()?;
        let dt = field_type_at(top.data_type(), name[at + 1..].split('.'))?;
        Some(Field::new(name, dt.clone(), true))
    });
    match found {
        Some(f) => Ok(f),
        None => column_index(schema, name).map(|i| schema.field(i).clone()),
    }
}

struct Binder<'a> {
    schema: &'a Schema,
    next_id: usize,
}

impl Binder<'_> {
    fn column(&self, name: &str) -> Result<(usize, &DataType)> {
        column_index(self.schema, name).map(|i| (i, self.schema.field(i).data_type()))
    }

    fn leaf(
        &mut self,
        column: usize,
        op: LeafOp,
        bounds: Option<(Option<Scalar>, Option<Scalar>)>,
        label: String,
    ) -> Bound {
        self.next_id += 1;
        Bound::Leaf(Leaf {
            id: self.next_id - 1,
            column,
            op,
            bounds,
            label,
        })
    }

    fn bind(&mut self, e: &Expr, neg: bool) -> Result<Bound> {
        Ok(match e {
            Expr::And(v) | Expr::Or(v) => {
                let children = v
                    .iter()
                    .map(|c| self.bind(c, neg))
                    .collect::<Result<Vec<_>>>()?;
                // De Morgan: NOT (a AND b) = NOT a OR NOT b.
                if matches!(e, Expr::And(_)) != neg {
                    Bound::And(children)
                } else {
                    Bound::Or(children)
                }
            }
            Expr::Not(inner) => self.bind(inner, !neg)?,
            Expr::Cmp { column, op, value } => {
                let op = if neg { op.negate() } else { *op };
                self.compare(
                    column,
                    op,
                    value,
                    &format!(
                        "{}",
                        Expr::Cmp {
                            column: column.clone(),
                            op,
                            value: value.clone()
                        }
                    ),
                )?
            }
            Expr::Between { column, low, high } => {
                let both = Expr::And(vec![
                    Expr::Cmp {
                        column: column.clone(),
                        op: CmpOp::Ge,
                        value: low.clone(),
                    },
                    Expr::Cmp {
                        column: column.clone(),
                        op: CmpOp::Le,
                        value: high.clone(),
                    },
                ]);
                self.bind(&both, neg)?
            }
            Expr::In { column, values } => self.in_list(column, values, neg, &format!("{e}"))?,
            Expr::IsNull { column, negated } => {
                let (c, _) = self.column(column)?;
                let negated = *negated != neg;
                self.leaf(
                    c,
                    LeafOp::Null { negated },
                    None,
                    format!("{column} is{} null", if negated { " not" } else { "" }),
                )
            }
            Expr::Like { column, pattern } => {
                let pat = Pattern::parse(pattern);
                let bounds = pat.prefix().filter(|_| !neg).map(prefix_bounds);
                let shape = match pat.prefix() {
                    Some(p) => BytesShape::Prefix {
                        prefix: p.into(),
                        outside: neg,
                    },
                    None => BytesShape::Any,
                };
                self.bytes_leaf(
                    column,
                    Arc::new(move |v: &[u8]| pat.matches(v) != neg),
                    shape,
                    bounds,
                    label(e, neg),
                )?
            }
            Expr::StartsWith { column, prefix } => {
                let p = prefix.clone().into_bytes();
                let bounds = (!neg).then(|| prefix_bounds(p.clone()));
                let shape = BytesShape::Prefix {
                    prefix: p.clone().into(),
                    outside: neg,
                };
                self.bytes_leaf(
                    column,
                    Arc::new(move |v: &[u8]| v.starts_with(&p) != neg),
                    shape,
                    bounds,
                    label(e, neg),
                )?
            }
            Expr::ColumnCmp { left, op, right } => {
                let (l, ldt) = self.column(left)?;
                let (r, rdt) = self.column(right)?;
                if !comparable(ldt, rdt) {
                    return Err(Error::Type(format!(
                        "columns '{left}' ({ldt}) and '{right}' ({rdt}) cannot be compared"
                    )));
                }
                let op = if neg { op.negate() } else { *op };
                self.leaf(
                    l,
                    LeafOp::Columns { right: r, op },
                    None,
                    format!("{left} {} {right}", op.symbol()),
                )
            }
            Expr::InBloom { column, keys } => self.in_bloom(column, keys, neg, e)?,
            Expr::Udf(u) => {
                let columns = u
                    .columns
                    .iter()
                    .map(|c| self.column(c).map(|(i, _)| i))
                    .collect::<Result<Vec<_>>>()?;
                let first = *columns
                    .first()
                    .ok_or_else(|| Error::Type(format!("function '{}' reads no column", u.name)))?;
                self.leaf(
                    first,
                    LeafOp::Udf {
                        columns,
                        f: u.f.clone(),
                        negate: neg,
                    },
                    None,
                    label(e, neg),
                )
            }
        })
    }

    fn in_bloom(
        &mut self,
        column: &str,
        keys: &Arc<crate::keys::KeyFilter>,
        neg: bool,
        e: &Expr,
    ) -> Result<Bound> {
        use crate::keys::KeyDomain;
        if neg {
            // A Bloom filter's "maybe" has no exact negation.
            return Err(Error::Type(format!("'{e}' cannot be negated")));
        }
        let (c, dt) = self.column(column)?;
        if KeyDomain::of(dt) != Some(keys.domain()) {
            return Err(Error::Type(format!(
                "'{column}' ({dt}) cannot be tested against {:?} keys",
                keys.domain()
            )));
        }
        let label = label(e, neg);
        Ok(match keys.domain() {
            KeyDomain::Int => {
                let bounds = keys.bounds();
                // No bounds: no keys, which the empty filter already fails.
                let (lo, hi) = bounds.unwrap_or((i128::MIN, i128::MAX));
                let p = ValuePredicate::IntBloom {
                    bloom: Arc::clone(keys.bloom()),
                    lo,
                    hi,
                };
                let bounds = bounds.map(|(lo, hi)| (Some(Scalar::Int(lo)), Some(Scalar::Int(hi))));
                self.leaf(c, LeafOp::Value(p), bounds, label)
            }
            KeyDomain::Bytes => {
                let keys = Arc::clone(keys);
                let m = move |x: &[u8]| keys.bloom().contains(sift_bits::bloom::bytes_key(x));
                let p = ValuePredicate::Bytes(Arc::new(m), BytesShape::Any);
                self.leaf(c, LeafOp::Value(p), None, label)
            }
        })
    }

    fn bytes_leaf(
        &mut self,
        column: &str,
        m: Arc<BytesMatcher>,
        shape: BytesShape,
        bounds: Option<(Option<Scalar>, Option<Scalar>)>,
        label: String,
    ) -> Result<Bound> {
        let (c, dt) = self.column(column)?;
        if !is_byte_string(dt) {
            return Err(Error::Type(format!(
                "LIKE / starts_with need a string column; '{column}' is {dt}"
            )));
        }
        Ok(self.leaf(
            c,
            LeafOp::Value(ValuePredicate::Bytes(m, shape)),
            bounds,
            label,
        ))
    }

    fn compare(&mut self, column: &str, op: CmpOp, value: &Literal, label: &str) -> Result<Bound> {
        let (c, dt) = self.column(column)?;
        let coerced = coerce(column, dt, value)?;
        let not_null = |b: &mut Self| {
            b.leaf(
                c,
                LeafOp::Null { negated: true },
                None,
                format!("{column} is not null"),
            )
        };
        let none = Bound::Const(false);
        Ok(match coerced {
            Coerced::Int(k) => {
                // A decimal column's literal may be an i128 extreme: nothing lies beyond it.
                let (lo, hi, negate) = match op {
                    CmpOp::Eq => (k, k, false),
                    CmpOp::Ne => (k, k, true),
                    CmpOp::Lt => match k.checked_sub(1) {
                        Some(hi) => (i128::MIN, hi, false),
                        None => return Ok(none),
                    },
                    CmpOp::Le => (i128::MIN, k, false),
                    CmpOp::Gt => match k.checked_add(1) {
                        Some(lo) => (lo, i128::MAX, false),
                        None => return Ok(none),
                    },
                    CmpOp::Ge => (k, i128::MAX, false),
                };
                self.int_range(c, lo, hi, negate, label)
            }
            Coerced::IntBetween(k) => match op {
                CmpOp::Eq => none,
                CmpOp::Ne => not_null(self),
                CmpOp::Lt | CmpOp::Le => self.int_range(c, i128::MIN, k, false, label),
                // k < value < k + 1, so k + 1 is an i128.
                CmpOp::Gt | CmpOp::Ge => {
                    self.int_range(c, k.saturating_add(1), i128::MAX, false, label)
                }
            },
            Coerced::IntOutside(above) => match (op, above) {
                (CmpOp::Ne, _) | (CmpOp::Lt | CmpOp::Le, true) | (CmpOp::Gt | CmpOp::Ge, false) => {
                    not_null(self)
                }
                _ => none,
            },
            Coerced::Float(x) => {
                // −0.0 equals +0.0, as in SQL; otherwise IEEE total order (NaN largest).
                let (klo, khi) = if x == 0.0 {
                    (float_key(-0.0), float_key(0.0))
                } else {
                    (float_key(x), float_key(x))
                };
                let (lo, hi, negate) = match op {
                    CmpOp::Eq => (klo, khi, false),
                    CmpOp::Ne => (klo, khi, true),
                    CmpOp::Lt => (0, klo.wrapping_sub(1), klo == 0),
                    CmpOp::Le => (0, khi, false),
                    CmpOp::Gt => (khi.saturating_add(1), u64::MAX, khi == u64::MAX),
                    CmpOp::Ge => (klo, u64::MAX, false),
                };
                if (op == CmpOp::Lt && klo == 0) || (op == CmpOp::Gt && khi == u64::MAX) {
                    return Ok(none);
                }
                let bounds = (!negate).then(|| {
                    let b = |k: u64| Some(Scalar::Float(sift_encoding::float_from_key(k)));
                    (
                        if lo == 0 { None } else { b(lo) },
                        if hi >= float_key(f64::INFINITY) {
                            None
                        } else {
                            b(hi)
                        },
                    )
                });
                self.leaf(
                    c,
                    LeafOp::Value(ValuePredicate::FloatRange { lo, hi, negate }),
                    bounds,
                    label.to_string(),
                )
            }
            Coerced::Bytes(v) => {
                let bounds = match op {
                    CmpOp::Eq => Some((
                        Some(Scalar::Bytes(v.clone())),
                        Some(Scalar::Bytes(v.clone())),
                    )),
                    CmpOp::Lt | CmpOp::Le => Some((None, Some(Scalar::Bytes(v.clone())))),
                    CmpOp::Gt | CmpOp::Ge => Some((Some(Scalar::Bytes(v.clone())), None)),
                    CmpOp::Ne => None,
                };
                let shape = match op {
                    CmpOp::Eq | CmpOp::Ne => BytesShape::OneOf {
                        values: vec![v.clone()].into(),
                        outside: op == CmpOp::Ne,
                    },
                    _ => BytesShape::Any,
                };
                let m: Arc<BytesMatcher> = Arc::new(move |x: &[u8]| match op {
                    CmpOp::Eq => x == v.as_slice(),
                    CmpOp::Ne => x != v.as_slice(),
                    CmpOp::Lt => x < v.as_slice(),
                    CmpOp::Le => x <= v.as_slice(),
                    CmpOp::Gt => x > v.as_slice(),
                    CmpOp::Ge => x >= v.as_slice(),
                });
                self.leaf(
                    c,
                    LeafOp::Value(ValuePredicate::Bytes(m, shape)),
                    bounds,
                    label.to_string(),
                )
            }
            Coerced::Bool(b) => {
                // false < true.
                let value = match op {
                    CmpOp::Eq => Some(b),
                    CmpOp::Ne => Some(!b),
                    CmpOp::Lt => (b).then_some(false),
                    CmpOp::Gt => (!b).then_some(true),
                    CmpOp::Le => {
                        if b {
                            None
                        } else {
                            Some(false)
                        }
                    }
                    CmpOp::Ge => {
                        if b {
                            Some(true)
                        } else {
                            None
                        }
                    }
                };
                match (op, value) {
                    (_, Some(value)) => self.leaf(
                        c,
                        LeafOp::Value(ValuePredicate::Bool { value }),
                        None,
                        label.to_string(),
                    ),
                    (CmpOp::Le | CmpOp::Ge, None) => not_null(self),
                    _ => none,
                }
            }
        })
    }

    fn int_range(&mut self, c: usize, lo: i128, hi: i128, negate: bool, label: &str) -> Bound {
        let bounds = (!negate).then(|| {
            (
                (lo != i128::MIN).then_some(Scalar::Int(lo)),
                (hi != i128::MAX).then_some(Scalar::Int(hi)),
            )
        });
        self.leaf(
            c,
            LeafOp::Value(ValuePredicate::IntRange { lo, hi, negate }),
            bounds,
            label.to_string(),
        )
    }

    fn in_list(
        &mut self,
        column: &str,
        values: &[Literal],
        neg: bool,
        text: &str,
    ) -> Result<Bound> {
        let (c, dt) = self.column(column)?;
        let coerced = values
            .iter()
            .map(|v| coerce(column, dt, v))
            .collect::<Result<Vec<_>>>()?;
        let label = if neg {
            format!("not ({text})")
        } else {
            text.to_string()
        };
        if coerced.is_empty() {
            return Ok(if neg {
                self.leaf(c, LeafOp::Null { negated: true }, None, label)
            } else {
                Bound::Const(false)
            });
        }
        let pred = if coerced.iter().all(|v| {
            matches!(
                v,
                Coerced::Int(_) | Coerced::IntBetween(_) | Coerced::IntOutside(_)
            )
        }) {
            let mut set: Vec<i128> = coerced
                .iter()
                .filter_map(|v| match v {
                    Coerced::Int(k) => Some(*k),
                    _ => None,
                })
                .collect();
            set.sort_unstable();
            set.dedup();
            ValuePredicate::IntIn {
                values: set.into(),
                negate: neg,
            }
        } else if coerced.iter().all(|v| matches!(v, Coerced::Float(_))) {
            let mut keys: Vec<u64> = coerced
                .iter()
                .flat_map(|v| match v {
                    Coerced::Float(x) if *x == 0.0 => vec![float_key(-0.0), float_key(0.0)],
                    Coerced::Float(x) => vec![float_key(*x)],
                    _ => vec![],
                })
                .collect();
            keys.sort_unstable();
            keys.dedup();
            ValuePredicate::FloatIn {
                keys: keys.into(),
                negate: neg,
            }
        } else if coerced.iter().all(|v| matches!(v, Coerced::Bytes(_))) {
            let set: HashSet<Vec<u8>> = coerced
                .into_iter()
                .filter_map(|v| match v {
                    Coerced::Bytes(b) => Some(b),
                    _ => None,
                })
                .collect();
            let shape = BytesShape::OneOf {
                values: set.iter().cloned().collect(),
                outside: neg,
            };
            ValuePredicate::Bytes(Arc::new(move |x: &[u8]| set.contains(x) != neg), shape)
        } else if coerced.iter().all(|v| matches!(v, Coerced::Bool(_))) {
            let has = |b: bool| coerced.contains(&Coerced::Bool(b));
            return Ok(match (has(true) != neg, has(false) != neg) {
                (true, true) => self.leaf(c, LeafOp::Null { negated: true }, None, label),
                (true, false) => self.leaf(
                    c,
                    LeafOp::Value(ValuePredicate::Bool { value: true }),
                    None,
                    label,
                ),
                (false, true) => self.leaf(
                    c,
                    LeafOp::Value(ValuePredicate::Bool { value: false }),
                    None,
                    label,
                ),
                (false, false) => Bound::Const(false),
            });
        } else {
            return Err(Error::Type(format!(
                "IN list on '{column}' mixes literal types"
            )));
        };
        Ok(self.leaf(c, LeafOp::Value(pred), None, label))
    }
}

fn label(e: &Expr, neg: bool) -> String {
    if neg {
        format!("not ({e})")
    } else {
        format!("{e}")
    }
}

fn comparable(a: &DataType, b: &DataType) -> bool {
    a == b || (a.is_numeric() && b.is_numeric()) || (is_byte_string(a) && is_byte_string(b))
}

/// Bounds of the strings that start with `p` (UTF-8 never holds 0xFF bytes, and zone-map
/// bounds are at most 64 bytes, so `p` followed by 64 0xFF bytes is above all of them).
fn prefix_bounds(p: Vec<u8>) -> (Option<Scalar>, Option<Scalar>) {
    let mut hi = p.clone();
    hi.extend(std::iter::repeat_n(0xFF, sift_encoding::MAX_STAT_BYTES));
    (Some(Scalar::Bytes(p)), Some(Scalar::Bytes(hi)))
}

/// Folds constants, flattens nested AND/OR, and intersects the ranges of one column
/// within an AND (`a >= x AND a < y` becomes one range test).
fn simplify(b: Bound) -> Bound {
    match b {
        Bound::And(v) => {
            let mut out: Vec<Bound> = Vec::new();
            for c in v.into_iter().map(simplify) {
                match c {
                    Bound::Const(true) => {}
                    Bound::Const(false) => return Bound::Const(false),
                    Bound::And(inner) => out.extend(inner),
                    c => {
                        if !out.iter_mut().any(|o| intersect(o, &c).is_some()) {
                            out.push(c);
                        }
                    }
                }
            }
            match out.len() {
                0 => Bound::Const(true),
                1 => out.pop().unwrap_or(Bound::Const(true)),
                _ => Bound::And(out),
            }
        }
        Bound::Or(v) => {
            let mut out: Vec<Bound> = Vec::new();
            for c in v.into_iter().map(simplify) {
                match c {
                    Bound::Const(false) => {}
                    Bound::Const(true) => return Bound::Const(true),
                    Bound::Or(inner) => out.extend(inner),
                    c => out.push(c),
                }
            }
            match out.len() {
                0 => Bound::Const(false),
                1 => out.pop().unwrap_or(Bound::Const(false)),
                _ => Bound::Or(out),
            }
        }
        other => other,
    }
}

/// Merges `c` into `o` when both are plain ranges on the same column; returns `Some` if so.
fn intersect(o: &mut Bound, c: &Bound) -> Option<()> {
    let (Bound::Leaf(a), Bound::Leaf(b)) = (&mut *o, c) else {
        return None;
    };
    if a.column != b.column {
        return None;
    }
    let merged = match (&a.op, &b.op) {
        (
            LeafOp::Value(ValuePredicate::IntRange {
                lo: l1,
                hi: h1,
                negate: false,
            }),
            LeafOp::Value(ValuePredicate::IntRange {
                lo: l2,
                hi: h2,
                negate: false,
            }),
        ) => ValuePredicate::IntRange {
            lo: *l1.max(l2),
            hi: *h1.min(h2),
            negate: false,
        },
        (
            LeafOp::Value(ValuePredicate::FloatRange {
                lo: l1,
                hi: h1,
                negate: false,
            }),
            LeafOp::Value(ValuePredicate::FloatRange {
                lo: l2,
                hi: h2,
                negate: false,
            }),
        ) => ValuePredicate::FloatRange {
            lo: *l1.max(l2),
            hi: *h1.min(h2),
            negate: false,
        },
        _ => return None,
    };
    let pick = |x: &Option<Scalar>, y: &Option<Scalar>, lower: bool| -> Option<Scalar> {
        match (x, y) {
            (Some(a), Some(b)) => {
                let ord = crate::coerce::scalar_cmp(a, b)?;
                Some(if (ord.is_gt()) == lower {
                    a.clone()
                } else {
                    b.clone()
                })
            }
            (Some(a), None) | (None, Some(a)) => Some(a.clone()),
            _ => None,
        }
    };
    let bounds = match (&a.bounds, &b.bounds) {
        (Some((l1, h1)), Some((l2, h2))) => Some((pick(l1, l2, true), pick(h1, h2, false))),
        _ => None,
    };
    a.op = LeafOp::Value(merged);
    a.bounds = bounds;
    a.label = format!("{} and {}", a.label, b.label);
    Some(())
}
