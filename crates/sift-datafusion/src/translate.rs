//! DataFusion filter expressions into Sift's filter tree, in this one place.
//!
//! A filter is translated only when Sift's engine evaluates it with exactly DataFusion's
//! meaning, so that DataFusion can drop its own filter above the scan
//! ([`TableProviderFilterPushDown::Exact`](datafusion::logical_expr::TableProviderFilterPushDown)).
//! Everything else returns `None` and stays with DataFusion:
//!
//! - a column wrapped in a function, or in a cast other than an exact widening (a float
//!   to a double, an integer to a wider integer type or to a float type that holds it:
//!   each value and the order kept, so the comparison means the same on the stored
//!   values; DataFusion's coercion casts a `float` column so to compare it with a
//!   `double` constant, an `int` column to compare it with `2.5`);
//! - a literal of another type than the column (after DataFusion's type coercion both
//!   sides of a comparison it can push have one type);
//! - null literals, NaN, and float zeros (Sift compares floats as SQL does, with
//!   −0.0 = +0.0, DataFusion by IEEE total order, −0.0 < +0.0);
//! - case-insensitive `ILIKE`, `SIMILAR TO`, a `LIKE` escape other than `\`;
//! - literal types the filter language has no exact form for (timestamps, binary).

use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Schema};
use datafusion::common::ScalarValue;
use datafusion::logical_expr::{BinaryExpr, Expr, Operator};
use datafusion::physical_expr::expressions as phys;
use datafusion::physical_plan::PhysicalExpr;
use sift_scan::{CmpOp, Expr as Filter, Literal};

/// The Sift filter meaning exactly what `expr` means on rows of `schema`, or `None`.
pub fn to_sift(expr: &Expr, schema: &Schema) -> Option<Filter> {
    match expr {
        Expr::BinaryExpr(BinaryExpr { left, op, right }) => match op {
            Operator::And => Some(Filter::And(vec![
                to_sift(left, schema)?,
                to_sift(right, schema)?,
            ])),
            Operator::Or => Some(Filter::Or(vec![
                to_sift(left, schema)?,
                to_sift(right, schema)?,
            ])),
            _ => comparison(left, *op, right, schema),
        },
        Expr::Not(e) => Some(Filter::Not(Box::new(to_sift(e, schema)?))),
        Expr::IsNull(e) => Some(Filter::IsNull {
            column: column(e, schema)?.0,
            negated: false,
        }),
        Expr::IsNotNull(e) => Some(Filter::IsNull {
            column: column(e, schema)?.0,
            negated: true,
        }),
        Expr::Between(b) => {
            let (name, dt) = column(&b.expr, schema)?;
            let between = Filter::Between {
                column: name,
                low: literal(&b.low, dt)?,
                high: literal(&b.high, dt)?,
            };
            Some(match b.negated {
                true => Filter::Not(Box::new(between)),
                false => between,
            })
        }
        Expr::InList(list) => {
            let (name, dt) = column(&list.expr, schema)?;
            let values = list
                .list
                .iter()
                .map(|v| literal(v, dt))
                .collect::<Option<Vec<_>>>()?;
            let inlist = Filter::In {
                column: name,
                values,
            };
            Some(match list.negated {
                true => Filter::Not(Box::new(inlist)),
                false => inlist,
            })
        }
        Expr::Like(like) => {
            if like.case_insensitive || !matches!(like.escape_char, None | Some('\\')) {
                return None;
            }
            let (name, dt) = column(&like.expr, schema)?;
            if !is_string(dt) {
                return None;
            }
            let Literal::Str(pattern) = literal(&like.pattern, dt)? else {
                return None;
            };
            let filter = Filter::Like {
                column: name,
                pattern,
            };
            Some(match like.negated {
                true => Filter::Not(Box::new(filter)),
                false => filter,
            })
        }
        Expr::ScalarFunction(f) if f.func.name() == "starts_with" && f.args.len() == 2 => {
            let (name, dt) = column(&f.args[0], schema)?;
            if !is_string(dt) {
                return None;
            }
            let Literal::Str(prefix) = literal(&f.args[1], dt)? else {
                return None;
            };
            Some(Filter::StartsWith {
                column: name,
                prefix,
            })
        }
        // `WHERE flag` on a boolean column.
        Expr::Column(_) => {
            let (name, dt) = column(expr, schema)?;
            (dt == &DataType::Boolean).then(|| Filter::Cmp {
                column: name,
                op: CmpOp::Eq,
                value: Literal::Bool(true),
            })
        }
        Expr::Literal(ScalarValue::Boolean(Some(b)), _) => Some(match b {
            true => Filter::And(vec![]),
            false => Filter::Or(vec![]),
        }),
        _ => None,
    }
}

/// The Sift filter meaning exactly what a physical filter (a snapshot of one of
/// DataFusion's dynamic filters: a join's key bounds or `IN` list, a TopK's threshold)
/// means on rows of `schema`, or `None`. It is read back into a logical expression of the
/// same meaning, so that one set of rules ([`to_sift`]) decides what is exact.
pub fn physical_to_sift(expr: &Arc<dyn PhysicalExpr>, schema: &Schema) -> Option<Filter> {
    to_sift(&logical(expr)?, schema)
}

fn logical(e: &Arc<dyn PhysicalExpr>) -> Option<Expr> {
    let e: &dyn PhysicalExpr = e.as_ref();
    if let Some(c) = e.downcast_ref::<phys::Column>() {
        return Some(Expr::Column(c.name().into()));
    }
    if let Some(l) = e.downcast_ref::<phys::Literal>() {
        return Some(Expr::Literal(l.value().clone(), None));
    }
    if let Some(b) = e.downcast_ref::<phys::BinaryExpr>() {
        return Some(Expr::BinaryExpr(BinaryExpr::new(
            Box::new(logical(b.left())?),
            *b.op(),
            Box::new(logical(b.right())?),
        )));
    }
    if let Some(i) = e.downcast_ref::<phys::InListExpr>() {
        let list = i.list().iter().map(logical).collect::<Option<Vec<_>>>()?;
        return Some(datafusion::logical_expr::in_list(
            logical(i.expr())?,
            list,
            i.negated(),
        ));
    }
    if let Some(n) = e.downcast_ref::<phys::IsNullExpr>() {
        return Some(Expr::IsNull(Box::new(logical(n.arg())?)));
    }
    if let Some(n) = e.downcast_ref::<phys::IsNotNullExpr>() {
        return Some(Expr::IsNotNull(Box::new(logical(n.arg())?)));
    }
    if let Some(n) = e.downcast_ref::<phys::NotExpr>() {
        return Some(Expr::Not(Box::new(logical(n.arg())?)));
    }
    if let Some(l) = e.downcast_ref::<phys::LikeExpr>() {
        return Some(Expr::Like(datafusion::logical_expr::Like::new(
            l.negated(),
            Box::new(logical(l.expr())?),
            Box::new(logical(l.pattern())?),
            None,
            l.case_insensitive(),
        )));
    }
    None
}

/// `column op literal`, `literal op column` or `column op column`.
fn comparison<'a>(
    left: &'a Expr,
    op: Operator,
    right: &'a Expr,
    schema: &'a Schema,
) -> Option<Filter> {
    let op = match op {
        Operator::Eq => CmpOp::Eq,
        Operator::NotEq => CmpOp::Ne,
        Operator::Lt => CmpOp::Lt,
        Operator::LtEq => CmpOp::Le,
        Operator::Gt => CmpOp::Gt,
        Operator::GtEq => CmpOp::Ge,
        _ => return None,
    };
    // Two columns compare only when their stored types are the same (not through casts).
    let stored = |e: &'a Expr| column(e, schema).filter(|_| !matches!(e, Expr::Cast(_)));
    match (column(left, schema), column(right, schema)) {
        (Some(_), Some(_)) => {
            let ((l, lt), (r, rt)) = (stored(left)?, stored(right)?);
            (lt == rt).then_some(Filter::ColumnCmp {
                left: l,
                op,
                right: r,
            })
        }
        (Some((name, dt)), None) => Some(Filter::Cmp {
            column: name,
            op,
            value: literal(right, dt)?,
        }),
        (None, Some((name, dt))) => Some(Filter::Cmp {
            column: name,
            op: op.flip(),
            value: literal(left, dt)?,
        }),
        (None, None) => None,
    }
}

/// A plain column of the table, or a field of a struct column (`s.a`, `s['a']['b']`): its
/// name as the scan knows it (a struct's fields are columns of their own in a Sift file,
/// named by their paths, null wherever an enclosing struct is, as they are in the arrays
/// the scan returns) and its type; or such a column cast exactly to a wider type (see
/// [`widens_exactly`]), with the cast's type, which the literals compared with it have.
fn column<'a>(expr: &'a Expr, schema: &'a Schema) -> Option<(String, &'a DataType)> {
    match expr {
        Expr::Cast(c) => {
            let (name, from) = column(&c.expr, schema)?;
            let to = c.field.data_type();
            widens_exactly(from, to).then_some((name, to))
        }
        Expr::Column(c) => {
            let field = schema.field_with_name(&c.name).ok()?;
            Some((c.name.clone(), field.data_type()))
        }
        Expr::ScalarFunction(f) if f.func.name() == "get_field" && f.args.len() == 2 => {
            let (path, dt) = column(&f.args[0], schema)?;
            let Expr::Literal(ScalarValue::Utf8(Some(name)), _) = &f.args[1] else {
                return None;
            };
            let dt = sift_scan::field_type_at(dt, [name.as_str()])?;
            Some((format!("{path}.{name}"), dt))
        }
        _ => None,
    }
}

/// Whether every value of type `from` is a value of type `to`, cast without rounding and
/// in the same order, so that Sift's comparison of a `from` column with a `to` literal (on
/// the values widened, as it compares integers of any width and floats as doubles) means
/// what DataFusion's comparison of the cast column means.
fn widens_exactly(from: &DataType, to: &DataType) -> bool {
    use DataType::*;
    let int_bits = |dt: &DataType| match dt {
        Int8 => Some((8, true)),
        Int16 => Some((16, true)),
        Int32 => Some((32, true)),
        Int64 => Some((64, true)),
        UInt8 => Some((8, false)),
        UInt16 => Some((16, false)),
        UInt32 => Some((32, false)),
        UInt64 => Some((64, false)),
        _ => None,
    };
    match (from, to) {
        (Float16 | Float32, Float64) | (Float16, Float32) => true,
        // Integers a float's significand holds (24 bits, 53 for a double).
        (_, Float32 | Float64) => {
            int_bits(from).is_some_and(|(bits, _)| bits <= if *to == Float32 { 16 } else { 32 })
        }
        _ => match (int_bits(from), int_bits(to)) {
            // Signed into signed or unsigned into unsigned, wider; unsigned into a wider
            // signed type.
            (Some((fb, fs)), Some((tb, ts))) => tb > fb && (fs == ts || ts),
            _ => false,
        },
    }
}

fn is_string(dt: &DataType) -> bool {
    matches!(
        dt,
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
    )
}

/// A non-null literal of the column's type, as Sift's literal of the same value.
fn literal(expr: &Expr, column_type: &DataType) -> Option<Literal> {
    let Expr::Literal(value, _) = expr else {
        return None;
    };
    let same_type = value.data_type() == *column_type
        || (is_string(column_type) && is_string(&value.data_type()));
    if !same_type {
        return None;
    }
    let float = |x: f64| (x != 0.0 && !x.is_nan()).then_some(Literal::Float(x));
    match value {
        ScalarValue::Boolean(Some(b)) => Some(Literal::Bool(*b)),
        ScalarValue::Int8(Some(v)) => Some(Literal::Int((*v).into())),
        ScalarValue::Int16(Some(v)) => Some(Literal::Int((*v).into())),
        ScalarValue::Int32(Some(v)) => Some(Literal::Int((*v).into())),
        ScalarValue::Int64(Some(v)) => Some(Literal::Int((*v).into())),
        ScalarValue::UInt8(Some(v)) => Some(Literal::Int((*v).into())),
        ScalarValue::UInt16(Some(v)) => Some(Literal::Int((*v).into())),
        ScalarValue::UInt32(Some(v)) => Some(Literal::Int((*v).into())),
        ScalarValue::UInt64(Some(v)) => Some(Literal::Int((*v).into())),
        ScalarValue::Float32(Some(v)) => float((*v).into()),
        ScalarValue::Float64(Some(v)) => float(*v),
        ScalarValue::Decimal128(Some(v), _, scale) => Some(Literal::Decimal {
            unscaled: *v,
            scale: (*scale).into(),
        }),
        ScalarValue::Utf8(Some(s))
        | ScalarValue::LargeUtf8(Some(s))
        | ScalarValue::Utf8View(Some(s)) => Some(Literal::Str(s.clone())),
        ScalarValue::Date32(Some(d)) => Some(Literal::Date(*d)),
        _ => None,
    }
}

#[cfg(test)]
#[allow(clippy::expect_used)]
mod tests {
    use super::*;
    use datafusion::arrow::datatypes::Field;
    use datafusion::logical_expr::{col, lit};

    fn schema() -> Schema {
        Schema::new(vec![
            Field::new("i", DataType::Int64, true),
            Field::new("f", DataType::Float64, true),
            Field::new("s", DataType::Utf8View, true),
            Field::new("d", DataType::Date32, true),
            Field::new("p", DataType::Decimal128(15, 2), true),
            Field::new("g", DataType::Float32, true),
            Field::new("j", DataType::Int32, true),
            Field::new("u", DataType::UInt64, true),
        ])
    }

    fn text(e: Expr) -> Option<String> {
        to_sift(&e, &schema()).map(|f| f.to_string())
    }

    #[test]
    fn comparisons_of_a_column_with_a_literal_of_its_type_translate() {
        assert_eq!(text(col("i").lt(lit(5i64))).as_deref(), Some("i < 5"));
        assert_eq!(text(lit(5i64).lt(col("i"))).as_deref(), Some("i > 5"));
        assert_eq!(
            text(col("p").gt_eq(lit(ScalarValue::Decimal128(Some(5), 15, 2)))).as_deref(),
            Some("p >= 0.05")
        );
        assert_eq!(
            text(col("d").eq(lit(ScalarValue::Date32(Some(8766))))).as_deref(),
            Some("d = date '1994-01-01'")
        );
        assert_eq!(
            text(col("s").like(lit(ScalarValue::Utf8View(Some("a%".into()))))).as_deref(),
            Some("s like 'a%'")
        );
        assert_eq!(
            text(col("i").in_list(vec![lit(1i64), lit(2i64)], true)).as_deref(),
            Some("not (i in (1, 2))")
        );
        assert_eq!(
            text(col("i").is_null().or(col("f").gt(lit(1.5f64)))).as_deref(),
            Some("(i is null) or (f > 1.5)")
        );
    }

    #[test]
    fn columns_cast_exactly_to_a_wider_type_translate() {
        use datafusion::logical_expr::cast;
        // A float column compared with a double (DataFusion's coercion casts the column).
        let g = || cast(col("g"), DataType::Float64);
        assert_eq!(text(g().lt(lit(0.1f64))).as_deref(), Some("g < 0.1"));
        assert_eq!(
            text(g().between(lit(1.5f64), lit(2.5f64))).as_deref(),
            Some("g between 1.5 and 2.5")
        );
        assert_eq!(text(g().is_null()).as_deref(), Some("g is null"));
        let j = cast(col("j"), DataType::Int64);
        assert_eq!(
            text(j.gt(lit(5_000_000_000i64))).as_deref(),
            Some("j > 5000000000")
        );
        assert_eq!(
            text(cast(col("j"), DataType::Float64).gt(lit(2.5f64))).as_deref(),
            Some("j > 2.5")
        );
        assert_eq!(
            text(cast(col("j"), DataType::Float32).lt(lit(1.5f32))),
            None
        );
        // Casts that round or reorder stay with DataFusion, and so does a cast column
        // compared with another column.
        assert_eq!(
            text(cast(col("i"), DataType::Float64).lt(lit(1.5f64))),
            None
        );
        assert_eq!(text(cast(col("i"), DataType::Int32).lt(lit(5i32))), None);
        assert_eq!(text(cast(col("u"), DataType::Int64).lt(lit(5i64))), None);
        assert_eq!(text(cast(col("j"), DataType::UInt64).lt(lit(5u64))), None);
        assert_eq!(text(g().lt(col("f"))), None);
        assert_eq!(text(g().lt(lit(0.0f64))), None);
    }

    #[test]
    fn physical_filters_translate_like_logical_ones() {
        let schema = schema();
        let column = |name: &str| -> Arc<dyn PhysicalExpr> {
            Arc::new(phys::Column::new(name, schema.index_of(name).unwrap_or(0)))
        };
        let cmp = |l: Arc<dyn PhysicalExpr>,
                   op,
                   r: Arc<dyn PhysicalExpr>|
         -> Arc<dyn PhysicalExpr> { Arc::new(phys::BinaryExpr::new(l, op, r)) };
        let bounds = cmp(
            cmp(column("i"), Operator::GtEq, phys::lit(3i64)),
            Operator::And,
            cmp(column("i"), Operator::LtEq, phys::lit(9i64)),
        );
        let f = |e: Arc<dyn PhysicalExpr>| physical_to_sift(&e, &schema).map(|f| f.to_string());
        assert_eq!(f(bounds).as_deref(), Some("(i >= 3) and (i <= 9)"));
        let list = phys::in_list(
            column("i"),
            vec![phys::lit(1i64), phys::lit(2i64)],
            &false,
            &schema,
        );
        assert_eq!(f(list.expect("in list")).as_deref(), Some("i in (1, 2)"));
        // A TopK threshold on a float zero stays out, as in the logical form.
        assert_eq!(f(cmp(column("f"), Operator::Lt, phys::lit(0.0f64))), None);
        assert_eq!(f(phys::lit(true)).as_deref(), Some("true"));
    }

    #[test]
    fn what_sift_would_answer_differently_stays_with_datafusion() {
        // Another type than the column's: DataFusion would have cast one side.
        assert_eq!(text(col("i").lt(lit(5i32))), None);
        // Float zero: −0.0 and +0.0 compare differently in the two engines.
        assert_eq!(text(col("f").gt(lit(0.0f64))), None);
        assert_eq!(text(col("f").gt(lit(f64::NAN))), None);
        // Null literals, casts, arithmetic and ILIKE.
        assert_eq!(text(col("i").eq(lit(ScalarValue::Int64(None)))), None);
        assert_eq!(
            text(datafusion::logical_expr::cast(col("i"), DataType::Float64).lt(lit(1.5f64))),
            None
        );
        assert_eq!(text((col("i") + lit(1i64)).lt(lit(5i64))), None);
        assert_eq!(
            text(col("s").ilike(lit(ScalarValue::Utf8View(Some("a%".into()))))),
            None
        );
        // One untranslatable side makes the whole conjunction stay.
        assert_eq!(
            text(col("i").lt(lit(5i64)).and(col("f").gt(lit(0.0f64)))),
            None
        );
    }
}
