//! Differential tests of the scan engine: every scan of a generated table (Sift with small
//! blocks, and the same table as Parquet) must return what an independent reference —
//! Arrow compute kernels over the in-memory batch, `common::eval` — returns, for random
//! filters, projections, limits, row ranges and batch sizes. Then pruning statistics and
//! the error messages. (The TPC-H benchmark queries are tested with `sift query`, in
//! sift-cli.)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::Arc;

use arrow::array::*;
use arrow::compute::kernels::cast::cast;
use arrow::compute::kernels::{cmp, numeric};
use arrow::compute::{and_kleene, concat_batches, filter_record_batch, is_null, or_kleene};
use arrow::datatypes::*;
use arrow::record_batch::RecordBatch;
use common::{COLS, Kind, NCOLS, Nulls, TableSpec, col_index, long_prefix};
use proptest::prelude::*;
use sift_scan::{CmpOp, Expr, Literal, SELECTED_ROWS, ScanStats, Table, col, parse_filter};

// ---------------------------------------------------------------------------------------
// Random filters, as abstract picks resolved against the generated data (so literals are
// mostly values present in the column, and shrinking keeps them meaningful).

/// Where a literal comes from.
#[derive(Debug, Clone)]
enum Lit {
    /// The value of the first non-null row at or after `pick % rows`.
    Present(usize),
    /// A value between two present ones (fractions on integers, a day off on dates, a
    /// string just above or below).
    Between(usize),
    /// Beyond the column type's range (or the data's, for types without one).
    Out(usize),
    /// Edge values: NaN, ±0.0, ±inf, the integer extremes, long string prefixes.
    Special(usize),
}

#[derive(Debug, Clone)]
enum F {
    Cmp(usize, usize, Lit),
    Between(usize, Lit, Lit),
    In(usize, Vec<Lit>),
    IsNull(usize, bool),
    /// A string column (0..3), a pattern shape, and the value it is cut from.
    Like(usize, usize, usize),
    StartsWith(usize, usize, usize),
    /// A pair of columns of one type, and an operator.
    ColCmp(usize, usize),
    Udf(usize, usize),
    /// Join keys on a column: the values at some rows, plus values that may be absent.
    Keys(usize, Vec<usize>, Vec<i64>),
    And(Vec<F>),
    Or(Vec<F>),
    Not(Box<F>),
}

const OPS: [CmpOp; 6] = [
    CmpOp::Eq,
    CmpOp::Ne,
    CmpOp::Lt,
    CmpOp::Le,
    CmpOp::Gt,
    CmpOp::Ge,
];
const STR_COLS: [&str; 3] = ["s_low", "s_uniq", "s_uni"];
const PAIRS: [(&str, &str); 12] = [
    ("i_small", "i_runs"),
    ("i_sorted", "i_wide"),
    ("i_few", "i_small"),
    ("i_small", "i_small"),
    ("i32", "i32"),
    ("d1", "d2"),
    ("f1", "f2"),
    ("f1", "f1"),
    ("s_low", "s_uni"),
    ("s_uniq", "s_low"),
    ("b", "b"),
    ("i_runs", "i_sorted"),
];
const UDF_COLS: [&str; 5] = ["i_small", "i_runs", "i_few", "i_wide", "i32"];

fn lit_strategy() -> impl Strategy<Value = Lit> {
    prop_oneof![
        6 => any::<usize>().prop_map(Lit::Present),
        2 => any::<usize>().prop_map(Lit::Between),
        1 => any::<usize>().prop_map(Lit::Out),
        1 => any::<usize>().prop_map(Lit::Special),
    ]
}

fn filter_strategy() -> impl Strategy<Value = F> {
    let leaf = prop_oneof![
        8 => (0..NCOLS, 0..6usize, lit_strategy()).prop_map(|(c, o, l)| F::Cmp(c, o, l)),
        2 => (0..NCOLS, lit_strategy(), lit_strategy()).prop_map(|(c, a, b)| F::Between(c, a, b)),
        2 => (0..NCOLS, prop::collection::vec(lit_strategy(), 1..5))
            .prop_map(|(c, v)| F::In(c, v)),
        1 => (0..NCOLS, any::<bool>()).prop_map(|(c, n)| F::IsNull(c, n)),
        2 => (0..3usize, 0..9usize, any::<usize>()).prop_map(|(c, k, p)| F::Like(c, k, p)),
        1 => (0..3usize, 0..7usize, any::<usize>()).prop_map(|(c, k, p)| F::StartsWith(c, k, p)),
        2 => (0..PAIRS.len(), 0..6usize).prop_map(|(p, o)| F::ColCmp(p, o)),
        1 => (0..3usize, 0..UDF_COLS.len()).prop_map(|(k, c)| F::Udf(k, c)),
    ];
    // Depth ≤ 4: a leaf under at most three levels of AND / OR / NOT.
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            2 => prop::collection::vec(inner.clone(), 0..4).prop_map(F::And),
            2 => prop::collection::vec(inner.clone(), 0..4).prop_map(F::Or),
            1 => inner.prop_map(|f| F::Not(Box::new(f))),
        ]
    })
}

/// The row of the first non-null value at or after `pick % len`, if any.
fn present_row(a: &dyn Array, pick: usize) -> Option<usize> {
    let n = a.len();
    (0..n)
        .map(|k| (pick % n.max(1) + k) % n)
        .find(|&i| a.is_valid(i))
}

fn date_text(d: i32) -> String {
    let a = cast(&Date32Array::from(vec![d]), &DataType::Utf8).unwrap();
    a.as_string::<i32>().value(0).to_string()
}

/// A literal for column `c` of `batch`.
fn literal(batch: &RecordBatch, c: usize, l: &Lit) -> Literal {
    let a = batch.column(c);
    let (Lit::Present(p) | Lit::Between(p) | Lit::Out(p) | Lit::Special(p)) = *l;
    let row = present_row(a.as_ref(), p);
    match COLS[c].1 {
        Kind::Int64 | Kind::Int32 | Kind::UInt32 | Kind::UInt64 => {
            let kind = COLS[c].1;
            let v: Option<i128> = row.map(|r| match kind {
                Kind::Int64 => a.as_primitive::<Int64Type>().value(r).into(),
                Kind::Int32 => a.as_primitive::<Int32Type>().value(r).into(),
                Kind::UInt32 => a.as_primitive::<UInt32Type>().value(r).into(),
                _ => a.as_primitive::<UInt64Type>().value(r).into(),
            });
            let (lo, hi): (i128, i128) = match kind {
                Kind::Int64 => (i64::MIN.into(), i64::MAX.into()),
                Kind::Int32 => (i32::MIN.into(), i32::MAX.into()),
                Kind::UInt32 => (0, u32::MAX.into()),
                _ => (0, u64::MAX.into()),
            };
            let extra = (p % 100) as i128;
            let specials = match kind {
                Kind::Int64 | Kind::Int32 => vec![
                    Literal::Int(i64::MAX.into()),
                    Literal::Int(i64::MIN.into()),
                    Literal::Int(0),
                    Literal::Float(-0.0),
                    Literal::Int(i32::MAX.into()),
                    Literal::Int(i32::MIN.into()),
                    Literal::Float(2.0),
                    Literal::Int(7),
                ],
                _ => vec![
                    Literal::Int(u64::MAX.into()),
                    Literal::Int(i64::MAX.into()),
                    Literal::Int((1i128 << 63) + 1),
                    Literal::Int(0),
                    Literal::Float(-0.0),
                    Literal::Int(u32::MAX.into()),
                    Literal::Int(1 << 31),
                    Literal::Float(2.0),
                    Literal::Int(7),
                ],
            };
            match (l, v) {
                (Lit::Present(_), Some(v)) => Literal::Int(v),
                (Lit::Between(_), Some(v)) => {
                    if v.unsigned_abs() < 1 << 50 {
                        Literal::Float(v as f64 + [0.5, 0.25, -0.25][p % 3])
                    } else {
                        // Near the extremes, f64 has no fractions: i64::MAX becomes 2^63,
                        // which is out of range.
                        Literal::Float(v as f64)
                    }
                }
                (Lit::Out(_), _) => match p % 4 {
                    0 => Literal::Int(hi + 1 + extra),
                    1 => Literal::Int(lo - 1 - extra),
                    2 => Literal::Float(1e30),
                    _ => Literal::Float(-1e30),
                },
                _ => specials[p % specials.len()].clone(),
            }
        }
        Kind::Date => {
            let d = row.map(|r| a.as_primitive::<Date32Type>().value(r));
            match (l, d) {
                (Lit::Present(_), Some(d)) if p % 2 == 0 => Literal::Date(d),
                (Lit::Present(_), Some(d)) => Literal::Str(date_text(d)),
                (Lit::Between(_), Some(d)) => Literal::Date(if p % 2 == 0 { d + 1 } else { d - 1 }),
                (Lit::Out(_), _) => Literal::Date(if p % 2 == 0 { i32::MAX } else { i32::MIN }),
                _ => [
                    Literal::Str("1994-01-01".into()),
                    Literal::Date(0),
                    Literal::Date(9000),
                ][p % 3]
                    .clone(),
            }
        }
        Kind::Float | Kind::Float32 => {
            let x = row.map(|r| match COLS[c].1 {
                Kind::Float32 => f64::from(a.as_primitive::<Float32Type>().value(r)),
                _ => a.as_primitive::<Float64Type>().value(r),
            });
            match (l, x) {
                (Lit::Present(_), Some(x)) => Literal::Float(x),
                (Lit::Between(_), Some(x)) if x.is_finite() => Literal::Float(x + 0.005),
                (Lit::Between(_), Some(x)) => Literal::Float(x),
                (Lit::Out(_), _) => [
                    Literal::Float(1e300),
                    Literal::Float(-1e300),
                    Literal::Int(1 << 70),
                    Literal::Int(-(1 << 70)),
                ][p % 4]
                    .clone(),
                _ => [
                    Literal::Float(f64::NAN),
                    Literal::Float(-f64::NAN),
                    Literal::Float(-0.0),
                    Literal::Float(0.0),
                    Literal::Float(f64::INFINITY),
                    Literal::Float(f64::NEG_INFINITY),
                    Literal::Int(3),
                    Literal::Float(f64::MIN_POSITIVE),
                    Literal::Float(-f64::MIN_POSITIVE),
                ][p % 9]
                    .clone(),
            }
        }
        Kind::Str => {
            let s = row.map(|r| a.as_string::<i32>().value(r).to_string());
            match (l, s) {
                (Lit::Present(_), Some(s)) => Literal::Str(s),
                (Lit::Between(_), Some(s)) if p % 2 == 0 => Literal::Str(s + "!"),
                (Lit::Between(_), Some(mut s)) => {
                    s.pop();
                    Literal::Str(s)
                }
                (Lit::Out(_), _) => Literal::Str(if p % 2 == 0 { "\u{10FFFF}" } else { "" }.into()),
                _ => [
                    "z".repeat(64),
                    "A".repeat(64),
                    long_prefix(),
                    format!("{}-", long_prefix()),
                    format!("{}-0", "A".repeat(66)),
                    "AIR".into(),
                    "u".into(),
                    "日".into(),
                    "ß".into(),
                ][p % 9]
                    .clone()
                    .into(),
            }
        }
        Kind::Bool => {
            let b = row.map(|r| a.as_boolean().value(r));
            match (l, b) {
                (Lit::Present(_), Some(b)) => Literal::Bool(b),
                (Lit::Between(_), Some(b)) => Literal::Str(b.to_string()),
                _ => [
                    Literal::Bool(true),
                    Literal::Bool(false),
                    Literal::Str("TRUE".into()),
                ][p % 3]
                    .clone(),
            }
        }
    }
}

/// A LIKE pattern of shape `kind` cut from a value of string column `c`.
fn like_pattern(batch: &RecordBatch, c: usize, kind: usize, pick: usize) -> String {
    let a = batch.column(c);
    let v: Vec<char> = present_row(a.as_ref(), pick)
        .map_or("AIR REG".into(), |r| {
            a.as_string::<i32>().value(r).to_string()
        })
        .chars()
        .collect();
    let n = v.len();
    let cut = |lo: usize, hi: usize| -> String { v[lo.min(n)..hi.min(n)].iter().collect() };
    let k = 1 + pick / 7 % n.max(1);
    match kind {
        0 => format!("{}%", cut(0, k)),
        1 => format!("%{}", cut(n.saturating_sub(k), n)),
        2 => format!("%{}%", cut(n / 3, n / 3 + k.min(3))),
        3 if n >= 3 => format!("{}_{}%", v[0], v[2]),
        3 => format!("{}%", cut(0, n)),
        4 => cut(0, n),
        5 => "%".into(),
        6 => "_%".into(),
        7 if n >= 2 => format!("%{}%{}%", v[0], v[n - 1]),
        _ => "zz%q".into(),
    }
}

/// `x % 3 = 0` (null on null), `x IS NULL OR x % 2 = 0` (never null), `i_small + x > 0`.
fn udf(kind: usize, c: &str) -> Expr {
    let int64 = |a: &ArrayRef| cast(a, &DataType::Int64).map_err(|e| e.to_string());
    let zero = Int64Array::new_scalar(0);
    match kind {
        0 => Expr::udf("mod3", &[c], move |cols| {
            let r = numeric::rem(&int64(&cols[0])?, &Int64Array::new_scalar(3))
                .map_err(|e| e.to_string())?;
            cmp::eq(&r, &zero).map_err(|e| e.to_string())
        }),
        1 => Expr::udf("even_or_null", &[c], move |cols| {
            let a = int64(&cols[0])?;
            let r = numeric::rem(&a, &Int64Array::new_scalar(2)).map_err(|e| e.to_string())?;
            let even = cmp::eq(&r, &zero).map_err(|e| e.to_string())?;
            or_kleene(&is_null(&a).map_err(|e| e.to_string())?, &even).map_err(|e| e.to_string())
        }),
        _ => Expr::udf("sum_positive", &["i_small", c], move |cols| {
            // Wide columns would overflow: compare as f64.
            let f = |a: &ArrayRef| cast(a, &DataType::Float64).map_err(|e| e.to_string());
            let s = numeric::add(&f(&cols[0])?, &f(&cols[1])?).map_err(|e| e.to_string())?;
            cmp::gt(&s, &Float64Array::new_scalar(0.0)).map_err(|e| e.to_string())
        }),
    }
}

fn resolve(f: &F, batch: &RecordBatch) -> Expr {
    let name = |c: usize| COLS[c].0;
    match f {
        F::Cmp(c, o, l) => Expr::Cmp {
            column: name(*c).into(),
            op: OPS[*o],
            value: literal(batch, *c, l),
        },
        F::Between(c, lo, hi) => {
            col(name(*c)).between(literal(batch, *c, lo), literal(batch, *c, hi))
        }
        F::In(c, v) => col(name(*c)).in_list(v.iter().map(|l| literal(batch, *c, l))),
        F::IsNull(c, true) => col(name(*c)).is_not_null(),
        F::IsNull(c, false) => col(name(*c)).is_null(),
        F::Like(s, kind, pick) => {
            let c = col_index(STR_COLS[*s]);
            col(name(c)).like(like_pattern(batch, c, *kind, *pick))
        }
        F::StartsWith(s, k, pick) => {
            let c = col_index(STR_COLS[*s]);
            let a = batch.column(c);
            let prefix: String = present_row(a.as_ref(), *pick)
                .map_or("AIR".into(), |r| a.as_string::<i32>().value(r).to_string())
                .chars()
                .take([0, 1, 3, 8, 64, 66, 70][*k])
                .collect();
            col(name(c)).starts_with(prefix)
        }
        F::ColCmp(p, o) => col(PAIRS[*p].0).cmp_column(OPS[*o], PAIRS[*p].1),
        F::Udf(k, c) => udf(*k, UDF_COLS[*c]),
        F::Keys(c, picks, extra) => join_keys(batch, *c, picks, extra),
        F::And(v) => Expr::And(v.iter().map(|f| resolve(f, batch)).collect()),
        F::Or(v) => Expr::Or(v.iter().map(|f| resolve(f, batch)).collect()),
        F::Not(f) => resolve(f, batch).not(),
    }
}

/// Columns join keys are collected for.
const KEY_COLS: [&str; 12] = [
    "i_small", "i_runs", "i_sorted", "i_few", "i_wide", "i32", "d1", "d2", "s_low", "s_uniq",
    "s_uni", "i_of_low",
];

/// The keys of column `c` at rows `picks` (nulls included) and `extra` values, as the
/// filter a join pushes (an exact IN list when few, else a Bloom filter).
fn join_keys(batch: &RecordBatch, c: usize, picks: &[usize], extra: &[i64]) -> Expr {
    let a = batch.column(c);
    let mut keys = sift_scan::KeyCollector::new(a.data_type()).unwrap();
    if !a.is_empty() {
        let rows = UInt64Array::from_iter_values(picks.iter().map(|p| (p % a.len()) as u64));
        keys.add(arrow::compute::take(a, &rows, None).unwrap().as_ref())
            .unwrap();
    }
    let extra: ArrayRef = match a.data_type() {
        DataType::Utf8 => Arc::new(StringArray::from_iter_values(
            extra.iter().map(|v| format!("{v}")),
        )),
        dt => cast(&Int64Array::from(extra.to_vec()), dt).unwrap(),
    };
    keys.add(extra.as_ref()).unwrap();
    keys.into_filter(COLS[c].0).unwrap()
}

fn keys_strategy() -> impl Strategy<Value = F> {
    (
        prop::sample::select(KEY_COLS.to_vec()),
        prop_oneof![
            prop::collection::vec(any::<usize>(), 0..8),
            prop::collection::vec(any::<usize>(), 50..400),
        ],
        prop::collection::vec(prop_oneof![-30i64..30, 0i64..3000, any::<i64>()], 0..100),
    )
        .prop_map(|(c, picks, extra)| F::Keys(col_index(c), picks, extra))
}

// ---------------------------------------------------------------------------------------
// Scans and their reference results.

/// One scan's settings.
#[derive(Debug, Clone, Default)]
struct Query {
    filter: Option<F>,
    projection: Option<Vec<usize>>,
    limit: Option<u64>,
    rows: Option<(u64, u64)>,
    batch_size: Option<usize>,
    /// String columns read as dictionary arrays (`read_dictionary`); the reference is
    /// compared with them cast back to plain strings.
    dictionary: bool,
    /// Threads reading blocks (`ScanBuilder::threads`); 0 and 1 read on the caller's.
    threads: usize,
}

fn query_strategy() -> impl Strategy<Value = Query> {
    let projection = (
        Just((0..NCOLS).collect::<Vec<_>>()).prop_shuffle(),
        0..=NCOLS,
    )
        .prop_map(|(cols, k)| cols[..k].to_vec());
    (
        prop::option::weighted(0.9, filter_strategy()),
        prop::option::weighted(0.7, projection),
        prop::option::weighted(0.25, prop_oneof![0..5u64, 0..3000u64]),
        prop::option::weighted(0.25, (0..6000u64, 0..4000u64)),
        prop::option::weighted(0.3, prop_oneof![1..4usize, 1..2000usize]),
        prop::bool::weighted(0.3),
        prop_oneof![3 => Just(1usize), 1 => 2..5usize],
    )
        .prop_map(
            |(filter, projection, limit, rows, batch_size, dictionary, threads)| Query {
                filter,
                projection,
                limit,
                rows: rows.map(|(a, n)| (a, a + n)),
                batch_size,
                dictionary,
                threads,
            },
        )
}

/// What `q` must return on `batch`: the rows in range where the filter is true, cut to
/// the limit, projected.
fn reference(batch: &RecordBatch, filter: Option<&Expr>, q: &Query) -> RecordBatch {
    let n = batch.num_rows();
    let mut mask = match filter {
        Some(e) => common::eval(e, batch),
        None => BooleanArray::from(vec![true; n]),
    };
    if let Some((a, b)) = q.rows {
        let in_range: BooleanArray = (0..n as u64).map(|i| Some(a <= i && i < b)).collect();
        mask = and_kleene(&mask, &in_range).unwrap();
    }
    let mut out = filter_record_batch(batch, &mask).unwrap();
    if let Some(l) = q.limit {
        out = out.slice(0, out.num_rows().min(l as usize));
    }
    match &q.projection {
        Some(p) => out.project(p).unwrap(),
        None => out,
    }
}

/// Runs `q` on `table`: the batches and the scan's statistics.
fn run(table: &Table, filter: Option<&Expr>, q: &Query) -> (Vec<RecordBatch>, ScanStats) {
    let mut b = table.scan();
    if let Some(p) = &q.projection {
        b = b.project(p.iter().map(|&c| COLS[c].0));
    }
    if let Some(f) = filter {
        b = b.filter(f.clone());
    }
    if let Some(l) = q.limit {
        b = b.limit(l);
    }
    if let Some((lo, hi)) = q.rows {
        b = b.rows(lo..hi);
    }
    if let Some(s) = q.batch_size {
        b = b.batch_size(s);
    }
    if q.dictionary {
        b = b.read_dictionary(STR_COLS);
    }
    let mut scan = b
        .threads(q.threads)
        .build()
        .unwrap_or_else(|e| panic!("build failed: {e}"));
    let batches = scan
        .by_ref()
        .collect::<Result<Vec<_>, _>>()
        .unwrap_or_else(|e| panic!("scan failed: {e}"));
    let batches = match q.dictionary {
        true => batches.iter().map(plain_strings).collect(),
        false => batches,
    };
    (batches, scan.stats().clone())
}

/// `b` with its dictionary columns (string columns read with `read_dictionary`) cast
/// back to `Utf8`, checking that every string column came back as a dictionary.
fn plain_strings(b: &RecordBatch) -> RecordBatch {
    let mut fields = Vec::new();
    let mut columns = Vec::new();
    for (f, c) in b.schema().fields().iter().zip(b.columns()) {
        if STR_COLS.contains(&f.name().as_str()) {
            let want = DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8));
            assert_eq!(f.data_type(), &want, "{}", f.name());
            assert_eq!(c.data_type(), &want, "{}", f.name());
            let plain = cast(c, &DataType::Utf8).unwrap();
            fields.push(f.as_ref().clone().with_data_type(DataType::Utf8));
            columns.push(plain);
        } else {
            fields.push(f.as_ref().clone());
            columns.push(c.clone());
        }
    }
    let options = RecordBatchOptions::new().with_row_count(Some(b.num_rows()));
    RecordBatch::try_new_with_options(Arc::new(Schema::new(fields)), columns, &options).unwrap()
}

/// The first row where two arrays differ, for messages.
fn first_difference(a: &dyn Array, b: &dyn Array) -> Option<usize> {
    (0..a.len().min(b.len())).find(|&i| a.slice(i, 1).to_data() != b.slice(i, 1).to_data())
}

/// Checks one scan of `table` (a file holding `batch`) against the reference.
fn check(table: &Table, source: &str, batch: &RecordBatch, q: &Query) {
    let filter = q.filter.as_ref().map(|f| resolve(f, batch));
    let want = reference(batch, filter.as_ref(), q);
    let (got, stats) = run(table, filter.as_ref(), q);
    let ctx = || {
        format!(
            "{source}: filter {}, query {q:?}",
            filter.as_ref().map_or("none".into(), |f| f.to_string())
        )
    };
    for b in &got {
        assert_eq!(b.schema().fields(), want.schema().fields(), "{}", ctx());
    }
    if let Some(size) = q.batch_size
        && let Some((last, full)) = got.split_last()
    {
        for b in full {
            assert_eq!(
                b.num_rows(),
                size,
                "a batch before the last is short: {}",
                ctx()
            );
        }
        assert!(
            (1..=size).contains(&last.num_rows()),
            "last batch has {} rows: {}",
            last.num_rows(),
            ctx()
        );
    }
    let total: usize = got.iter().map(RecordBatch::num_rows).sum();
    assert_eq!(total, want.num_rows(), "row count: {}", ctx());
    let got = concat_batches(&want.schema(), &got).unwrap();
    assert_eq!(got.num_rows(), want.num_rows(), "{}", ctx());
    for (i, field) in want.schema().fields().iter().enumerate() {
        let (g, w) = (got.column(i), want.column(i));
        if g.to_data() != w.to_data() {
            let at = first_difference(g, w);
            panic!(
                "column {} differs at row {at:?}: got {:?}, want {:?}; {}",
                field.name(),
                at.map(|r| g.slice(r, 1)),
                at.map(|r| w.slice(r, 1)),
                ctx()
            );
        }
    }
    if q.limit.is_none() {
        assert_eq!(stats.rows_matched, total as u64, "rows_matched: {}", ctx());
    }
    assert!(
        stats.blocks_pruned <= stats.blocks_total,
        "{stats:?}: {}",
        ctx()
    );
}

fn table_strategy() -> impl Strategy<Value = TableSpec> {
    let nulls = prop_oneof![
        7 => Just(Nulls::None),
        7 => Just(Nulls::Some),
        4 => Just(Nulls::Blocky),
        2 => Just(Nulls::All),
    ];
    (
        prop_oneof![1 => 0usize..=10, 5 => 0usize..=5000],
        prop_oneof![3 => 256usize..=1024, 1 => 16usize..=255],
        prop::collection::vec(nulls, NCOLS),
        any::<u64>(),
    )
        .prop_map(|(rows, block_rows, nulls, seed)| TableSpec {
            rows,
            block_rows,
            nulls,
            seed,
        })
}

/// Writes `spec`'s table as Sift and as Parquet; both tables and the batch.
fn tables(dir: &std::path::Path, spec: &TableSpec) -> (RecordBatch, Table, Table) {
    let batch = spec.generate();
    let sift = dir.join("t.sift");
    let pq = dir.join("t.parquet");
    common::write_sift(&sift, &batch, spec.block_rows);
    // Row groups of a different size than the Sift blocks, fed in two pieces, with small
    // pages and varied statistics and Bloom filters (all pruning paths).
    let half = batch.num_rows() / 2;
    let layout = common::ParquetLayout::from_seed(spec.seed, spec.block_rows * 2 / 3 + 1);
    common::write_parquet_layout(
        &pq,
        batch.schema(),
        &[
            batch.slice(0, half),
            batch.slice(half, batch.num_rows() - half),
        ],
        layout,
    );
    (
        batch,
        Table::open(&sift).unwrap(),
        Table::open(&pq).unwrap(),
    )
}

/// `PROPTEST_CASES` from the environment (for longer runs), else `default`.
fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: cases(128),
        failure_persistence: Some(Box::new(proptest::test_runner::FileFailurePersistence::WithSource("proptest-regressions"))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn scans_equal_the_reference(
        spec in table_strategy(),
        queries in prop::collection::vec(query_strategy(), 1..=6),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let (batch, sift, parquet) = tables(dir.path(), &spec);
        assert_eq!(sift.num_rows(), batch.num_rows() as u64);
        for q in &queries {
            check(&sift, "sift", &batch, q);
            check(&parquet, "parquet", &batch, q);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: cases(48),
        failure_persistence: Some(Box::new(proptest::test_runner::FileFailurePersistence::WithSource("proptest-regressions"))),
        ..ProptestConfig::default()
    })]

    /// Every column's codes stored as byte slices: the same answers as the reference.
    #[test]
    fn byteslice_scans_equal_the_reference(
        spec in table_strategy(),
        queries in prop::collection::vec(query_strategy(), 1..=6),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let batch = spec.generate();
        let path = dir.path().join("b.sift");
        let byteslice = batch.schema().fields().iter().map(|f| f.name().clone()).collect();
        let options = sift_format::WriteOptions {
            block_rows: spec.block_rows,
            byteslice,
            ..Default::default()
        };
        common::write_sift_with(&path, &batch, options);
        let sift = Table::open(&path).unwrap();
        for q in &queries {
            check(&sift, "sift byteslice", &batch, q);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: cases(32),
        failure_persistence: Some(Box::new(proptest::test_runner::FileFailurePersistence::WithSource("proptest-regressions"))),
        ..ProptestConfig::default()
    })]

    /// A very selective test (a few values of a near-unique column) ANDed with random
    /// filters over big blocks: the later filters see under 2 % of a block's rows and take
    /// the select-then-evaluate path, and the projection decodes only the selected rows.
    #[test]
    fn selective_conjunctions(
        spec in table_strategy(),
        rows in 2000usize..=5000,
        column in prop::sample::select(vec!["i_sorted", "i_wide", "s_uniq", "f1"]),
        picks in prop::collection::vec(any::<usize>(), 1..4),
        rest in prop::collection::vec(filter_strategy(), 1..3),
        mut q in query_strategy(),
    ) {
        let spec = TableSpec { rows, block_rows: 1024, ..spec };
        let c = col_index(column);
        let mut all = vec![F::In(c, picks.into_iter().map(Lit::Present).collect())];
        all.extend(rest);
        q.filter = Some(F::And(all));
        let dir = tempfile::tempdir().unwrap();
        let (batch, sift, parquet) = tables(dir.path(), &spec);
        check(&sift, "sift", &batch, &q);
        check(&parquet, "parquet", &batch, &q);
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: cases(48),
        failure_persistence: Some(Box::new(proptest::test_runner::FileFailurePersistence::WithSource("proptest-regressions"))),
        ..ProptestConfig::default()
    })]

    /// Join keys (exact IN lists and Bloom filters) ANDed with random filters: the scans
    /// of Sift and Parquet answer as the scalar probe of every value does, and no row
    /// holding one of the keys is ever dropped by the key filter.
    #[test]
    fn join_keys_filter_like_the_reference(
        spec in table_strategy(),
        keys in keys_strategy(),
        rest in prop::collection::vec(filter_strategy(), 0..2),
        mut q in query_strategy(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let (batch, sift, parquet) = tables(dir.path(), &spec);
        let F::Keys(c, picks, _) = &keys else { unreachable!() };
        let passed = common::eval(&resolve(&keys, &batch), &batch);
        let a = batch.column(*c);
        for p in picks.iter().filter(|_| !a.is_empty()) {
            let row = p % a.len();
            if a.is_valid(row) {
                // Every row holding a picked value passes, not only the picked one.
                let same = cmp::eq(a, &Scalar::new(a.slice(row, 1))).unwrap();
                for i in 0..a.len() {
                    if same.is_valid(i) && same.value(i) {
                        prop_assert!(passed.value(i), "row {i} holds a key but was dropped");
                    }
                }
            }
        }
        let mut all = vec![keys];
        all.extend(rest);
        q.filter = Some(F::And(all));
        check(&sift, "sift", &batch, &q);
        check(&parquet, "parquet", &batch, &q);
    }
}

#[test]
fn join_keys_cannot_be_negated_or_cross_types() {
    let dir = tempfile::tempdir().unwrap();
    let t = small_table(
        dir.path(),
        vec![("s", Arc::new(StringArray::from(vec!["a", "b"])) as ArrayRef)],
        2,
    );
    let mut keys = sift_scan::KeyCollector::new(&DataType::Int64).unwrap();
    keys.add(&Int64Array::from_iter_values(0..1000)).unwrap();
    let bloom = keys.into_filter("id").unwrap();
    assert!(matches!(bloom, Expr::InBloom { .. }), "{bloom}");
    let e = build_error(t.scan().filter(bloom.clone().not()));
    assert!(e.contains("cannot be negated"), "{e}");
    let Expr::InBloom { keys, .. } = bloom else {
        unreachable!()
    };
    let on_strings = Expr::InBloom {
        column: "s".into(),
        keys,
    };
    let e = build_error(t.scan().filter(on_strings));
    assert!(e.contains("'s'") && e.contains("Int"), "{e}");
    // Keys of a type without key support, or an array of another type than declared.
    let e = sift_scan::KeyCollector::new(&DataType::Float64)
        .unwrap_err()
        .to_string();
    assert!(e.contains("join keys of type Float64"), "{e}");
    let mut ints = sift_scan::KeyCollector::new(&DataType::Int64).unwrap();
    let e = ints
        .add(&Int32Array::from(vec![1]))
        .unwrap_err()
        .to_string();
    assert!(e.contains("Int64") && e.contains("Int32"), "{e}");
    // No keys at all (an empty or all-null build side): no row passes.
    let mut none = sift_scan::KeyCollector::new(&DataType::Int64).unwrap();
    none.add(&Int64Array::from(vec![None, None])).unwrap();
    assert_eq!(ids(&t, none.into_filter("id").unwrap()), Vec::<i64>::new());
}

// ---------------------------------------------------------------------------------------
// The documented semantics, with expectations written by hand (checking the reference
// too).

/// Writes `columns` (plus an `id` column 0, 1, …) as Sift with `block_rows`-row blocks.
fn small_table(dir: &std::path::Path, columns: Vec<(&str, ArrayRef)>, block_rows: usize) -> Table {
    let n = columns[0].1.len();
    let mut all = vec![(
        "id",
        Arc::new(Int64Array::from_iter_values(0..n as i64)) as ArrayRef,
    )];
    all.extend(columns);
    let batch = RecordBatch::try_from_iter(all).unwrap();
    let path = dir.join(format!("small{block_rows}.sift"));
    common::write_sift(&path, &batch, block_rows);
    Table::open(&path).unwrap()
}

/// The ids of the rows `filter` selects.
fn ids(table: &Table, filter: Expr) -> Vec<i64> {
    let text = filter.to_string();
    let batches: Vec<RecordBatch> = table
        .scan()
        .project(["id"])
        .filter(filter)
        .build()
        .unwrap_or_else(|e| panic!("{text}: {e}"))
        .collect::<Result<_, _>>()
        .unwrap_or_else(|e| panic!("{text}: {e}"));
    batches
        .iter()
        .flat_map(|b| b.column(0).as_primitive::<Int64Type>().values().to_vec())
        .collect()
}

/// Decimals beyond what a double holds, and integers beyond 2^53, against literals with a
/// point: exact, in Sift (with pruning) and Parquet, against Arrow's 76-digit decimals.
#[test]
fn exact_decimal_literals() {
    let n = 4096i64;
    let block_rows = 256;
    let cents = |text: &str| -> i128 { text.replace('.', "").parse().unwrap() };
    let near = cents("12345678901234567.89");
    let p20 = 10i128.pow(20) - 1;
    let p38 = 10i128.pow(38) - 1;
    let mut d20: Vec<Option<i128>> = (0..n)
        .map(|i| Some(i128::from(i - n / 2) * 123_456_789_012_345))
        .collect();
    let mut d38: Vec<Option<i128>> = (0..n)
        .map(|i| Some(i128::from(i - n / 2) * 10i128.pow(30) + i128::from(i)))
        .collect();
    let mut i64s: Vec<Option<i64>> = (0..n).map(|i| Some(i * 1_000_000_007)).collect();
    // Values only one block holds (so the others are pruned), a cent apart.
    for k in 0..10 {
        d20[1300 + k] = Some(near - 5 + k as i128);
        d38[100 + k] = Some(p38 - k as i128);
        d38[200 + k] = Some(-p38 + k as i128);
        i64s[3500 + k] = Some((1 << 53) - 5 + k as i64);
    }
    d20[2000] = Some(p20);
    d20[2001] = Some(-p20);
    d20[2002] = Some(-near);
    d38[300] = Some(123_456_789_012_345_678_901_234_567_891);
    d38[301] = Some(123_456_789_012_345_678_901_234_567_890);
    i64s[3600] = Some(i64::MAX);
    i64s[3601] = Some(i64::MIN);
    for i in (0..n as usize).step_by(17) {
        d20[i] = None;
        d38[i + 1] = None;
        i64s[i + 2] = None;
    }
    let batch = RecordBatch::try_from_iter([
        (
            "id",
            Arc::new(Int64Array::from_iter_values(0..n)) as ArrayRef,
        ),
        (
            "d20",
            Arc::new(
                Decimal128Array::from(d20)
                    .with_precision_and_scale(20, 2)
                    .unwrap(),
            ),
        ),
        (
            "d38",
            Arc::new(
                Decimal128Array::from(d38)
                    .with_precision_and_scale(38, 10)
                    .unwrap(),
            ),
        ),
        ("i64", Arc::new(Int64Array::from(i64s))),
    ])
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let sift = dir.path().join("decimals.sift");
    common::write_sift(&sift, &batch, block_rows);
    let parquet = dir.path().join("decimals.parquet");
    common::write_parquet(&parquet, batch.schema(), std::slice::from_ref(&batch), 1000);
    let tables = [Table::open(&sift).unwrap(), Table::open(&parquet).unwrap()];
    let want_ids = |e: &Expr| -> Vec<i64> {
        let rows = common::filter_batch(&batch, Some(e));
        rows.column(0).as_primitive::<Int64Type>().values().to_vec()
    };
    let filters = [
        "d20 >= 12345678901234567.00",
        "d20 = 12345678901234567.89",
        "d20 <> 12345678901234567.89",
        "d20 < 12345678901234567.89",
        "d20 <= 12345678901234567.89",
        "d20 > 12345678901234567.89",
        "d20 = -12345678901234567.89",
        "d20 between 12345678901234567.85 and 12345678901234567.9",
        "d20 not between 12345678901234567.86 and 1.2345678901234568e16",
        "d20 in (12345678901234567.89, 12345678901234567.91, -12345678901234567.89, 1.5)",
        "d20 not in (12345678901234567.89, 999999999999999999.99)",
        "d20 = 1.234567890123456789e16",
        // More digits than the scale: between two cents.
        "d20 = 12345678901234567.885",
        "d20 > 12345678901234567.885",
        "d20 <= 12345678901234567.885",
        "d20 < -12345678901234567.885",
        "d20 >= 999999999999999999.99 or d20 <= -999999999999999999.99",
        "d20 > 999999999999999999.985",
        "d38 = 12345678901234567890.1234567891",
        "d38 <= 12345678901234567890.12345678905",
        "d38 >= 9999999999999999999999999999.9999999995",
        "d38 = 9999999999999999999999999999.9999999999",
        "d38 < -9999999999999999999999999999.9999999996",
        "d38 between -9999999999999999999999999999.9999999999 and \
         -9999999999999999999999999999.9999999997",
        "d38 in (9999999999999999999999999999.9999999998, 12345678901234567890.123456789)",
        "i64 = 9007199254740993.0",
        "i64 = 9007199254740993",
        "i64 > 9007199254740992.5",
        "i64 <> 9007199254740993.0",
        "i64 in (9007199254740993.0, 9007199254740995.00, 9007199254740996.5)",
        "i64 between 9007199254740991.5 and 9007199254740993.0",
        "i64 >= 9223372036854775806.5",
        "i64 = 9223372036854775807.0",
        "i64 < -9223372036854775807.5",
    ];
    for text in filters {
        let e = parse_filter(text).unwrap();
        let want = want_ids(&e);
        for t in &tables {
            assert_eq!(ids(t, e.clone()), want, "{text}");
        }
    }
    // The values a double would have missed are there, and blocks are still pruned.
    let e = parse_filter("d20 = 12345678901234567.89").unwrap();
    assert_eq!(want_ids(&e), [1305]);
    let mut scan = tables[0].scan().project(["id"]).filter(e).build().unwrap();
    assert_eq!(
        scan.by_ref().map(|b| b.unwrap().num_rows()).sum::<usize>(),
        1
    );
    // Of 16 blocks, only block 5 (the value) and block 7 (±(10^18 - 0.01)) can hold it.
    assert_eq!(scan.stats().blocks_pruned, 14, "{}", scan.stats());
    let e = parse_filter("i64 = 9007199254740993.0").unwrap();
    assert_eq!(want_ids(&e), [3506]);
    // Quoted decimals read the same way; text that is not a number says so.
    for (quoted, plain) in [
        (
            "d20 >= '12345678901234567.00'",
            "d20 >= 12345678901234567.00",
        ),
        (
            "d20 in ('12345678901234567.89', '-12345678901234567.89')",
            "d20 in (12345678901234567.89, -12345678901234567.89)",
        ),
        (
            "d38 = '12345678901234567890.1234567891'",
            "d38 = 12345678901234567890.1234567891",
        ),
    ] {
        let want = want_ids(&parse_filter(plain).unwrap());
        assert!(!want.is_empty(), "{plain}");
        for t in &tables {
            assert_eq!(ids(t, parse_filter(quoted).unwrap()), want, "{quoted}");
        }
    }
    // What no 128-bit value at the column's scale can hold is an error, not zero rows.
    for (text, why) in [
        ("d38 < 1e30", "(out of range: at scale 10"),
        ("d20 = '1.2.3'", "'1.2.3' is not a number"),
        ("d20 between 0 and 1e300", "(out of range: at scale 2"),
    ] {
        for t in &tables {
            let e = build_error(t.scan().filter(parse_filter(text).unwrap()));
            assert!(e.contains(why), "{text}: {e}");
        }
    }
    // The same from Rust.
    let lit = Literal::decimal("12345678901234567.89").unwrap();
    assert_eq!(ids(&tables[0], col("d20").eq(lit.clone())), [1305]);
    assert_eq!(ids(&tables[0], col("d20").in_list([lit])), [1305]);
}

/// Literals at the ends of the 128-bit range on a decimal(38, 0) column: nothing lies
/// beyond them (and computing "one past" them must not overflow).
#[test]
fn decimal_literals_at_the_i128_extremes() {
    let dir = tempfile::tempdir().unwrap();
    let p38 = 10i128.pow(38) - 1;
    let d = Decimal128Array::from(vec![Some(p38), None, Some(-p38), Some(0)])
        .with_precision_and_scale(38, 0)
        .unwrap();
    let t = small_table(dir.path(), vec![("d", Arc::new(d) as ArrayRef)], 2);
    let (max, min) = (Literal::Int(i128::MAX), Literal::Int(i128::MIN));
    assert_eq!(ids(&t, col("d").gt(max.clone())), Vec::<i64>::new());
    assert_eq!(ids(&t, col("d").lt(min.clone())), Vec::<i64>::new());
    assert_eq!(ids(&t, col("d").lte(max.clone())), [0, 2, 3]);
    assert_eq!(ids(&t, col("d").gte(min.clone())), [0, 2, 3]);
    assert_eq!(ids(&t, col("d").gt(max).not()), [0, 2, 3]);
    assert_eq!(ids(&t, col("d").lt(min).not()), [0, 2, 3]);
    let text = format!("d >= {p38}.0 or d < -{}.0", p38 - 1);
    assert_eq!(ids(&t, parse_filter(&text).unwrap()), [0, 2]);
}

#[test]
fn float_semantics() {
    let dir = tempfile::tempdir().unwrap();
    let f = vec![
        Some(-0.0),              // 0
        Some(0.0),               // 1
        Some(f64::NAN),          // 2
        Some(f64::NEG_INFINITY), // 3
        Some(f64::INFINITY),     // 4
        Some(1.5),               // 5
        None,                    // 6
        Some(-f64::NAN),         // 7
    ];
    let g = vec![
        Some(0.0),
        Some(-0.0),
        Some(-f64::NAN),
        Some(f64::NEG_INFINITY),
        Some(f64::NAN),
        Some(1.5),
        Some(1.0),
        Some(f64::NAN),
    ];
    for block_rows in [1, 2, 7] {
        let t = small_table(
            dir.path(),
            vec![
                ("f", Arc::new(Float64Array::from(f.clone())) as ArrayRef),
                ("g", Arc::new(Float64Array::from(g.clone())) as ArrayRef),
            ],
            block_rows,
        );
        // With a literal: SQL order (all NaNs equal and above every number, −0.0 = +0.0).
        let cases: Vec<(Expr, Vec<i64>)> = vec![
            (col("f").eq(0.0), vec![0, 1]),
            (col("f").eq(-0.0), vec![0, 1]),
            (col("f").eq(0), vec![0, 1]),
            (col("f").lt(0.0), vec![3]),
            (col("f").lte(-0.0), vec![0, 1, 3]),
            (col("f").gt(-0.0), vec![2, 4, 5, 7]),
            (col("f").gte(0.0), vec![0, 1, 2, 4, 5, 7]),
            (col("f").ne(0.0), vec![2, 3, 4, 5, 7]),
            (col("f").eq(0.0).not(), vec![2, 3, 4, 5, 7]),
            (col("f").eq(f64::NAN), vec![2, 7]),
            (col("f").eq(-f64::NAN), vec![2, 7]),
            (col("f").ne(f64::NAN), vec![0, 1, 3, 4, 5]),
            (col("f").lt(f64::NAN), vec![0, 1, 3, 4, 5]),
            (col("f").lt(-f64::NAN), vec![0, 1, 3, 4, 5]),
            (col("f").gt(f64::INFINITY), vec![2, 7]),
            (col("f").gte(f64::INFINITY), vec![2, 4, 7]),
            (col("f").lt(f64::NEG_INFINITY), vec![]),
            (col("f").lte(f64::NEG_INFINITY), vec![3]),
            (col("f").in_list([-0.0]), vec![0, 1]),
            (col("f").in_list([0.0, f64::NAN]).not(), vec![3, 4, 5]),
            (col("f").between(-0.0, 0.0), vec![0, 1]),
            (col("f").between(1, 1e308), vec![5]),
            (col("f").between(1.0, f64::NAN), vec![2, 4, 5, 7]),
            (col("f").is_null(), vec![6]),
            (col("f").gt(1.0).or(col("f").is_null()), vec![2, 4, 5, 6, 7]),
            // Column against column: IEEE total order (−0.0 < +0.0, −NaN below −inf).
            (
                col("f").cmp_column(CmpOp::Eq, "f"),
                vec![0, 1, 2, 3, 4, 5, 7],
            ),
            (col("f").cmp_column(CmpOp::Lt, "g"), vec![0, 4, 7]),
            (col("f").cmp_column(CmpOp::Eq, "g"), vec![3, 5]),
        ];
        for (filter, want) in cases {
            let text = filter.to_string();
            assert_eq!(ids(&t, filter), want, "{text}, blocks of {block_rows}");
        }
    }
}

#[test]
fn integer_literal_coercion() {
    let dir = tempfile::tempdir().unwrap();
    // ids:       0        1        2        3              4              5
    let x = vec![
        Some(1i64),
        Some(2),
        Some(3),
        Some(i64::MAX),
        Some(i64::MIN),
        None,
    ];
    let y = vec![
        Some(1i32),
        Some(2),
        Some(3),
        Some(i32::MAX),
        Some(i32::MIN),
        None,
    ];
    let big = i128::from(i64::MAX) + 1;
    for block_rows in [1, 2, 7] {
        let t = small_table(
            dir.path(),
            vec![
                ("x", Arc::new(Int64Array::from(x.clone())) as ArrayRef),
                ("y", Arc::new(Int32Array::from(y.clone())) as ArrayRef),
            ],
            block_rows,
        );
        for c in ["x", "y"] {
            let cases: Vec<(Expr, Vec<i64>)> = vec![
                (col(c).lt(2.5), vec![0, 1, 4]),
                (col(c).lte(2.5), vec![0, 1, 4]),
                (col(c).gt(2.5), vec![2, 3]),
                (col(c).gte(2.5), vec![2, 3]),
                (col(c).eq(2.5), vec![]),
                (col(c).ne(2.5), vec![0, 1, 2, 3, 4]),
                (col(c).eq(2.5).not(), vec![0, 1, 2, 3, 4]),
                (col(c).gt(-2.5).and(col(c).lt(1.5)), vec![0]),
                (col(c).between(0.5, 2.0), vec![0, 1]),
                (col(c).eq(2.0), vec![1]),
                (col(c).in_list([2.5, 3.0]), vec![2]),
                (col(c).in_list([2.5]).not(), vec![0, 1, 2, 3, 4]),
                (col(c).lt(1e30), vec![0, 1, 2, 3, 4]),
                (col(c).gt(-1e30), vec![0, 1, 2, 3, 4]),
                (col(c).gt(1e30), vec![]),
                (col(c).lt(big), vec![0, 1, 2, 3, 4]),
                (col(c).ne(big), vec![0, 1, 2, 3, 4]),
                (col(c).eq(big), vec![]),
                (col(c).gte(big).not(), vec![0, 1, 2, 3, 4]),
                (col(c).gt(-big - 10), vec![0, 1, 2, 3, 4]),
            ];
            for (filter, want) in cases {
                let text = filter.to_string();
                assert_eq!(ids(&t, filter), want, "{text}, blocks of {block_rows}");
            }
        }
        // Only the int32 column: 2^40 and i64::MAX are beyond its type.
        assert_eq!(ids(&t, col("y").lt(1i64 << 40)), vec![0, 1, 2, 3, 4]);
        assert_eq!(ids(&t, col("y").eq(i64::MAX)), Vec::<i64>::new());
        assert_eq!(ids(&t, col("x").eq(i64::MAX)), vec![3]);
        assert_eq!(ids(&t, col("x").gte(i64::MAX)), vec![3]);
        assert_eq!(ids(&t, col("x").lte(i64::MIN)), vec![4]);
        // 2^63 as a float is just above i64::MAX.
        assert_eq!(ids(&t, col("x").gte(2f64.powi(63))), Vec::<i64>::new());
        assert_eq!(ids(&t, col("x").lt(2f64.powi(63))), vec![0, 1, 2, 3, 4]);
    }
}

#[test]
fn three_valued_logic() {
    let dir = tempfile::tempdir().unwrap();
    // ids:       0        1        2     3
    let a = vec![Some(1i64), Some(5), None, None];
    let b = vec![Some("x"), None, Some("y"), None];
    let t = small_table(
        dir.path(),
        vec![
            ("a", Arc::new(Int64Array::from(a)) as ArrayRef),
            ("b", Arc::new(StringArray::from(b)) as ArrayRef),
        ],
        2,
    );
    let cases: Vec<(Expr, Vec<i64>)> = vec![
        (col("a").lt(3), vec![0]),
        (col("a").lt(3).not(), vec![1]),
        (col("a").lt(3).or(col("b").eq("y")), vec![0, 2]),
        // false OR unknown is unknown, and so is its negation.
        (col("a").lt(3).or(col("b").eq("y")).not(), vec![]),
        // false AND unknown is false.
        (col("a").lt(3).and(col("b").eq("x")).not(), vec![1, 2]),
        (col("a").in_list([1, 2]).not(), vec![1]),
        (col("b").like("%").not(), vec![]),
        (col("b").is_null().not(), vec![0, 2]),
        (Expr::And(vec![]), vec![0, 1, 2, 3]),
        (Expr::Or(vec![]), vec![]),
        (Expr::Or(vec![]).not(), vec![0, 1, 2, 3]),
        (Expr::Or(vec![]).not().and(col("a").gt(0)), vec![0, 1]),
        (col("a").lt(3).or(col("a").gte(3)), vec![0, 1]),
        (col("a").lt(3).or(col("a").gte(3)).not(), vec![]),
    ];
    for (filter, want) in cases {
        let text = filter.to_string();
        assert_eq!(ids(&t, filter), want, "{text}");
    }
}

/// LIKE patterns with escapes, wildcards in the data, regex metacharacters, newlines and
/// multi-byte characters, against Arrow's `like` kernel.
#[test]
fn like_patterns_match_arrow() {
    let values = [
        "",
        "a",
        "abc",
        "ab",
        "abcabc",
        "100%",
        "1000",
        "100% off",
        "a_b",
        "axb",
        "a\\b",
        "back\\",
        "line\nbreak",
        "(x).*+?",
        "[a]",
        "^$",
        "日本語",
        "日x語",
        "héllo",
        "ß",
        "😀😀",
        "%",
        "_",
        "\\",
    ];
    let patterns = [
        "%",
        "",
        "_",
        "__",
        "___",
        "a%",
        "%c",
        "%b%",
        "a_c",
        "a%c",
        "%a%b%c%",
        "100\\%",
        "100\\%%",
        "%\\%%",
        "a\\_b",
        "a_b",
        "%\\\\%",
        "back\\",
        "\\",
        "line_break",
        "line%break",
        "(x).*+?",
        "[a]",
        "^$",
        "%.%",
        "日_語",
        "日%",
        "%語",
        "_本%",
        "h_llo",
        "__llo",
        "😀_",
        "_",
        "%%",
        "%_%",
        "a%%c",
        "\\%",
        "\\_",
        "abc\\",
        "%abc",
    ];
    let dir = tempfile::tempdir().unwrap();
    let strs: Vec<Option<&str>> = values.iter().map(|s| Some(*s)).chain([None]).collect();
    let batch =
        RecordBatch::try_from_iter([("s", Arc::new(StringArray::from(strs)) as ArrayRef)]).unwrap();
    for block_rows in [3, 64] {
        let path = dir.path().join(format!("like{block_rows}.sift"));
        common::write_sift(&path, &batch, block_rows);
        let table = Table::open(&path).unwrap();
        for p in patterns {
            for filter in [col("s").like(p), col("s").like(p).not()] {
                let want = filter_record_batch(&batch, &common::eval(&filter, &batch)).unwrap();
                let got: Vec<RecordBatch> = table
                    .scan()
                    .filter(filter.clone())
                    .build()
                    .unwrap()
                    .collect::<Result<_, _>>()
                    .unwrap();
                let got = concat_batches(&batch.schema(), &got).unwrap();
                assert_eq!(
                    got.column(0).as_string::<i32>(),
                    want.column(0).as_string::<i32>(),
                    "{filter} (pattern {p:?})"
                );
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Engine bugs the differential test found, shrunk (fixed meanwhile in sift-encoding,
// commit cd30aac; kept as regression tests).

/// A boolean column whose block holds one value (with or without nulls) is stored as a
/// constant; projecting it for a filter that selects some of the block's rows fails with
/// "corrupt encoding: constant of 1 bytes, 8 expected" (the selective decode of a
/// constant assumes 8-byte values). Selecting every row (a full decode) works.
#[test]
fn constant_boolean_column_projected_under_a_filter() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.sift");
    let batch = RecordBatch::try_from_iter([
        ("k", Arc::new(Int64Array::from(vec![1, 2, 3])) as ArrayRef),
        (
            "b",
            Arc::new(BooleanArray::from(vec![true, true, true])) as ArrayRef,
        ),
    ])
    .unwrap();
    common::write_sift(&path, &batch, 256);
    let table = Table::open(&path).unwrap();
    let got: Vec<RecordBatch> = table
        .scan()
        .project(["b"])
        .filter(col("k").eq(1))
        .build()
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap_or_else(|e| panic!("scan failed: {e}"));
    let got = concat_batches(&got[0].schema(), &got).unwrap();
    assert_eq!(got.column(0).as_boolean(), &BooleanArray::from(vec![true]));
}

/// The same constant boolean chunk as a filter column: `b = true` (and `b = false`,
/// `NOT b = true`, ...) fails with the same error instead of matching all / no rows.
#[test]
fn filter_on_constant_boolean_column() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.sift");
    let batch = RecordBatch::try_from_iter([
        ("k", Arc::new(Int64Array::from(vec![1, 2, 3])) as ArrayRef),
        (
            "b",
            Arc::new(BooleanArray::from(vec![Some(true), None, Some(true)])) as ArrayRef,
        ),
    ])
    .unwrap();
    common::write_sift(&path, &batch, 256);
    let table = Table::open(&path).unwrap();
    for (filter, want) in [(col("b").eq(true), 2), (col("b").eq(false), 0)] {
        let got: Vec<RecordBatch> = table
            .scan()
            .project(["k"])
            .filter(filter.clone())
            .build()
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap_or_else(|e| panic!("{filter}: scan failed: {e}"));
        let rows: usize = got.iter().map(RecordBatch::num_rows).sum();
        assert_eq!(rows, want, "{filter}");
    }
}

// ---------------------------------------------------------------------------------------
// Statistics.

/// Integer columns that are functions of another column's dictionary codes are stored as
/// lookups; filters on them, alone or with the source, select what Arrow selects.
#[test]
fn lookup_columns_filter_like_the_reference() {
    let dir = tempfile::tempdir().unwrap();
    let n = 5_000usize;
    // Scheduled times drawn without a period (a periodic column would be stored as a cycle,
    // not as the dictionary a lookup needs).
    let mix = |i: i64| ((i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 33) as i64;
    let hhmm: Vec<i64> = (0..n as i64)
        .map(|i| (mix(i) % 24) * 100 + mix(i + 7) % 60)
        .collect();
    let hour: Vec<i64> = hhmm.iter().map(|t| t / 100).collect();
    let minute: Vec<i32> = hhmm.iter().map(|t| (t % 100) as i32).collect();
    let t = small_table(
        dir.path(),
        vec![
            ("hhmm", Arc::new(Int64Array::from(hhmm.clone())) as ArrayRef),
            ("hour", Arc::new(Int64Array::from(hour.clone())) as ArrayRef),
            (
                "minute",
                Arc::new(Int32Array::from(minute.clone())) as ArrayRef,
            ),
        ],
        1024,
    );
    let file = sift_format::SiftFile::open(dir.path().join("small1024.sift")).unwrap();
    for block in &file.decode_footer().unwrap().blocks {
        for c in [2, 3] {
            assert_eq!(
                sift_encoding::lookup_source(&block.columns[c].encoding),
                Some(1),
                "{}",
                block.columns[c].encoding.describe()
            );
        }
    }
    let want = |f: &dyn Fn(usize) -> bool| -> Vec<i64> {
        (0..n).filter(|&i| f(i)).map(|i| i as i64).collect()
    };
    let cases: Vec<(Expr, Vec<i64>)> = vec![
        (col("hour").eq(7), want(&|i| hour[i] == 7)),
        (
            col("hour").between(3, 5),
            want(&|i| (3..=5).contains(&hour[i])),
        ),
        (
            col("minute").in_list([0, 59]),
            want(&|i| [0, 59].contains(&minute[i])),
        ),
        (
            col("hour").lt(2).or(col("minute").gt(57)),
            want(&|i| hour[i] < 2 || minute[i] > 57),
        ),
        // Very selective first, so the lookup is decoded for a few selected rows only.
        (
            col("id").in_list([17, 4000]).and(col("minute").gte(0)),
            vec![17, 4000],
        ),
        (col("hour").is_null(), vec![]),
        (
            col("hhmm")
                .cmp_column(CmpOp::Eq, "hour")
                .or(col("minute").cmp_column(CmpOp::Eq, "hour")),
            want(&|i| hhmm[i] == hour[i] || i64::from(minute[i]) == hour[i]),
        ),
    ];
    for (filter, expected) in cases {
        let text = filter.to_string();
        assert_eq!(ids(&t, filter), expected, "{text}");
    }
    // Projected alone and with the source.
    let rows: Vec<RecordBatch> = t
        .scan()
        .project(["minute", "hour"])
        .build()
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let got = concat_batches(&rows[0].schema(), &rows).unwrap();
    assert_eq!(
        got.column(0).as_ref(),
        &Int32Array::from(minute) as &dyn Array
    );
    assert_eq!(
        got.column(1).as_ref(),
        &Int64Array::from(hour) as &dyn Array
    );
}

#[test]
fn zone_maps_prune_a_sorted_column() {
    let dir = tempfile::tempdir().unwrap();
    let n = 10_000;
    let t = small_table(
        dir.path(),
        vec![
            (
                "k",
                Arc::new(Int64Array::from_iter_values(0..n)) as ArrayRef,
            ),
            (
                "s",
                Arc::new(StringArray::from_iter_values(
                    (0..n).map(|i| format!("k{i:05}")),
                )) as ArrayRef,
            ),
            (
                "d",
                Arc::new(Date32Array::from_iter_values(
                    (0..n as i32).map(|i| 8000 + i / 10),
                )) as ArrayRef,
            ),
        ],
        512,
    );
    let stats_of = |filter: Expr| -> (u64, ScanStats) {
        let mut scan = t.scan().project(["k"]).filter(filter).build().unwrap();
        let rows: usize = scan.by_ref().map(|b| b.unwrap().num_rows()).sum();
        (rows as u64, scan.stats().clone())
    };
    // 20 blocks; rows 3000..=3100 lie in blocks 5 and 6.
    for (filter, want) in [
        (col("k").between(3000, 3100), 101),
        (col("k").gte(3000).and(col("k").lt(3101)), 101),
        (
            col("k")
                .in_list([3000, 3100])
                .or(col("k").between(3001, 3099)),
            101,
        ),
        (col("s").between("k03000", "k03100"), 101),
        (col("s").starts_with("k030").or(col("s").eq("k03100")), 101),
        (col("s").like("k030%").or(col("s").eq("k03100")), 101),
        (
            col("d").between(Literal::Date(8300), Literal::Date(8309)),
            100,
        ),
    ] {
        let text = filter.to_string();
        let (rows, stats) = stats_of(filter);
        assert_eq!(rows, want, "{text}");
        assert_eq!(stats.rows_matched, want, "{text}");
        assert_eq!(stats.blocks_total, 20, "{text}");
        assert_eq!(stats.blocks_pruned, 18, "{text}: {stats}");
        assert!(stats.rows_scanned <= 2 * 512, "{text}: {stats}");
    }
    // Nothing to prune: a function, a negation across every block, a null test on a
    // column without nulls (every block pruned).
    let (rows, stats) = stats_of(udf(0, "k"));
    assert_eq!(
        (rows, stats.rows_matched, stats.blocks_pruned),
        (3334, 3334, 0)
    );
    let (rows, stats) = stats_of(col("k").between(3000, 3100).not());
    assert_eq!((rows, stats.rows_matched), (9899, 9899));
    let (rows, stats) = stats_of(col("k").is_null());
    assert_eq!((rows, stats.blocks_pruned), (0, 20));
    // A row range: only its blocks count.
    let mut scan = t
        .scan()
        .rows(1000..2000)
        .filter(col("k").gte(0))
        .build()
        .unwrap();
    let rows: usize = scan.by_ref().map(|b| b.unwrap().num_rows()).sum();
    assert_eq!((rows, scan.stats().rows_matched), (1000, 1000));
    assert_eq!(scan.stats().blocks_total, 3, "{}", scan.stats());
}

/// `read_unscaled` returns a decimal column's unscaled values as `Int64`: the same
/// values and nulls as the decimals, whole or under a filter, over blocks of nulls, runs,
/// few distinct values and wide ones.
#[test]
fn unscaled_decimals_equal_the_decimal_values() {
    let dir = tempfile::tempdir().unwrap();
    let n = 3000i64;
    let p = Decimal128Array::from_iter((0..n).map(|i| match i {
        0..=299 => None,
        300..=599 => Some(12_345),
        600..=899 => Some([-5i128, 7, 11][(i % 3) as usize]),
        _ if i % 29 == 0 => None,
        _ => Some((i as i128 * 7_919_113) % 999_999_999_999_999 - 400_000_000_000_000),
    }))
    .with_precision_and_scale(15, 2)
    .unwrap();
    let t = small_table(dir.path(), vec![("p", Arc::new(p) as ArrayRef)], 300);
    for filter in [
        None,
        Some(parse_filter("(id < 700 or id > 1400) and id > 250 and id != 1000").unwrap()),
    ] {
        let read = |unscaled: bool| -> Vec<RecordBatch> {
            let mut b = t.scan().project(["p"]);
            if unscaled {
                b = b.read_unscaled(["p"]);
            }
            if let Some(f) = &filter {
                b = b.filter(f.clone());
            }
            b.build().unwrap().collect::<Result<_, _>>().unwrap()
        };
        let (decimals, unscaled) = (read(false), read(true));
        assert_eq!(decimals.len(), unscaled.len());
        for (d, u) in decimals.iter().zip(&unscaled) {
            let u = u.column(0).as_primitive::<Int64Type>();
            let d = d.column(0).as_primitive::<Decimal128Type>();
            assert_eq!(u.nulls(), d.nulls());
            for i in 0..d.len() {
                if d.is_valid(i) {
                    assert_eq!(i128::from(u.value(i)), d.value(i), "row {i}");
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Errors.

fn build_error(b: sift_scan::ScanBuilder) -> String {
    match b.build() {
        Ok(_) => panic!("the scan started"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn errors_name_the_column_and_type() {
    let dir = tempfile::tempdir().unwrap();
    let t = small_table(
        dir.path(),
        vec![
            ("qty", Arc::new(Int64Array::from(vec![1, 2])) as ArrayRef),
            ("ship", Arc::new(Date32Array::from(vec![1, 2])) as ArrayRef),
            (
                "mode",
                Arc::new(StringArray::from(vec!["a", "b"])) as ArrayRef,
            ),
        ],
        16,
    );
    let e = build_error(t.scan().filter(col("nope").eq(1)));
    assert!(e.contains("nope"), "{e}");
    let e = build_error(
        t.scan()
            .filter(col("qty").gt(1).and(col("missing_col").is_null())),
    );
    assert!(e.contains("missing_col"), "{e}");
    let e = build_error(t.scan().project(["qty", "absent"]));
    assert!(e.contains("absent"), "{e}");
    let e = build_error(t.scan().read_dictionary(["qty"]));
    assert!(e.contains("qty") && e.contains("Int64"), "{e}");
    let e = build_error(t.scan().read_dictionary(["nope"]));
    assert!(e.contains("nope"), "{e}");
    let e = build_error(t.scan().filter(col("qty").eq("abc")));
    assert!(
        e.contains("qty") && e.contains("Int64") && e.contains("abc"),
        "{e}"
    );
    // A 200 KB filter's type error names the literal or column without repeating it.
    let long = format!(
        "{}qty = 'x{}'",
        "qty > 0 and ".repeat(17_000),
        "y".repeat(200)
    );
    assert!(long.len() > 200_000);
    let e = build_error(t.scan().filter(parse_filter(&long).unwrap()));
    assert!(e.len() < 300, "{} bytes: {e}", e.len());
    assert!(
        e.contains("qty") && e.contains("Int64") && e.contains("'xyyy"),
        "{e}"
    );
    let e = build_error(t.scan().filter(col("n".repeat(200_000)).eq(1)));
    assert!(
        e.len() < 300 && e.contains("no column 'nnn"),
        "{} bytes: {e}",
        e.len()
    );
    let e = build_error(t.scan().filter(col("ship").eq("1994-13-01")));
    assert!(e.contains("ship") && e.contains("Date32"), "{e}");
    let e = build_error(t.scan().filter(col("mode").lt(3)));
    assert!(e.contains("mode") && e.contains("Utf8"), "{e}");
    let e = build_error(t.scan().filter(col("qty").lt(f64::NAN)));
    assert!(e.contains("qty"), "{e}");
    let e = build_error(t.scan().filter(col("qty").like("1%")));
    assert!(e.contains("qty"), "{e}");
    let e = build_error(t.scan().filter(col("qty").cmp_column(CmpOp::Eq, "mode")));
    assert!(e.contains("qty") && e.contains("mode"), "{e}");
    let e = build_error(
        t.scan()
            .filter(col("qty").in_list([Literal::Int(1), Literal::Str("x".into())])),
    );
    assert!(e.contains("qty"), "{e}");
    let e = build_error(t.scan().filter(Expr::udf("f", &["ghost"], |_| {
        Ok(BooleanArray::from(vec![true]))
    })));
    assert!(e.contains("ghost"), "{e}");
    #[allow(clippy::reversed_empty_ranges)]
    let e = build_error(t.scan().rows(5..2));
    assert!(e.contains("5..2"), "{e}");
    // Iterating the builder yields the error as the only item.
    let items: Vec<_> = t.scan().filter(col("nope").eq(1)).into_iter().collect();
    assert!(matches!(items.as_slice(), [Err(_)]), "{items:?}");
    let e = build_error(sift_scan::scan(dir.path().join("no_such_file.sift")));
    assert!(e.contains("no_such_file"), "{e}");

    // A function's error or a wrong-length result ends the scan with an error.
    let failing = Expr::udf("boom", &["qty"], |_| Err("kaboom".into()));
    let r: Result<Vec<_>, _> = t.scan().filter(failing).build().unwrap().collect();
    assert!(
        r.as_ref().is_err_and(|e| e.to_string().contains("kaboom")),
        "{r:?}"
    );
    let short = Expr::udf("short", &["qty"], |_| {
        Ok(BooleanArray::from(Vec::<bool>::new()))
    });
    let r: Result<Vec<_>, _> = t.scan().filter(short).build().unwrap().collect();
    assert!(r.is_err(), "{r:?}");
}

#[test]
fn unscaled_reads_only_narrow_decimals() {
    let dir = tempfile::tempdir().unwrap();
    let wide = Decimal128Array::from(vec![Some(1i128), None])
        .with_precision_and_scale(20, 2)
        .unwrap();
    let t = small_table(
        dir.path(),
        vec![
            ("w", Arc::new(wide) as ArrayRef),
            ("s", Arc::new(StringArray::from(vec!["a", "b"])) as ArrayRef),
        ],
        10,
    );
    for c in ["w", "s", "id"] {
        let e = build_error(t.scan().read_unscaled([c]));
        assert!(
            e.contains(&format!("column \"{c}\"")) && e.contains("precision 18 or less"),
            "{e}"
        );
    }
}

#[test]
fn parse_filter_rejects_garbage() {
    for text in [
        "x <",
        "x = = 1",
        "(x = 1",
        "x = 1)",
        "x = 'abc",
        "and x = 1",
        "x @ 1",
        "= 1",
        "x like",
        "x between 1",
        "x in (1, ",
        "not",
    ] {
        assert!(parse_filter(text).is_err(), "{text:?} parsed");
    }
    // And a good one runs.
    let dir = tempfile::tempdir().unwrap();
    let t = small_table(
        dir.path(),
        vec![("qty", Arc::new(Int64Array::from(vec![1, 2, 3])) as ArrayRef)],
        2,
    );
    assert_eq!(
        ids(&t, parse_filter("qty >= 2 and not (qty in (3))").unwrap()),
        vec![1]
    );
}

/// Blocks read on several threads come back in the file's order, with the statistics of
/// one thread; a limit stops the threads with exactly the rows asked for.
#[test]
fn threads_keep_order_and_statistics() {
    let dir = tempfile::tempdir().unwrap();
    let n = 20_000;
    let k = Int64Array::from_iter_values((0..n).map(|i| (i * 7_919) % 1_000));
    let table = small_table(dir.path(), vec![("k", Arc::new(k))], 1_000);
    let run = |threads: usize, limit: Option<u64>| {
        let mut b = table
            .scan()
            .project(["id"])
            .filter(parse_filter("k < 100 or id >= 19990").unwrap())
            .threads(threads);
        if let Some(l) = limit {
            b = b.limit(l);
        }
        let mut scan = b.build().unwrap();
        let batches: Vec<RecordBatch> = scan.by_ref().map(|b| b.unwrap()).collect();
        let ids: Vec<i64> = batches
            .iter()
            .flat_map(|b| b.column(0).as_primitive::<Int64Type>().values().to_vec())
            .collect();
        (ids, scan.stats().clone())
    };
    let (one, one_stats) = run(1, None);
    assert!(one.is_sorted() && !one.is_empty());
    for threads in [2, 3, 7] {
        let (ids, stats) = run(threads, None);
        assert_eq!(ids, one, "{threads} threads");
        assert_eq!(stats, one_stats, "{threads} threads");
        let (ids, stats) = run(threads, Some(1_234));
        assert_eq!(ids, one[..1_234], "{threads} threads, limit");
        assert_eq!(stats.rows_matched, 1_234);
    }
}

/// `prune_with` skips the blocks whose zone maps prove its condition false and returns
/// every row of the others, tested or not; with `filter`, only the filter is tested on rows.
#[test]
fn prune_with_skips_blocks_and_keeps_rows() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("ids.sift");
    let ids = Int64Array::from_iter_values(0..10_000);
    let schema = Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, false)]));
    let batch = RecordBatch::try_new(schema, vec![Arc::new(ids)]).expect("batch");
    common::write_sift(&path, &batch, 1000);
    let table = Table::open(&path).expect("open");
    let run = |scan: sift_scan::ScanBuilder| {
        let mut scan = scan.build().expect("scan");
        let got: Vec<RecordBatch> = scan.by_ref().map(|b| b.expect("batch")).collect();
        let got = concat_batches(&batch.schema(), &got).expect("concat");
        let ids = got.column(0).as_primitive::<Int64Type>();
        (ids.values().to_vec(), scan.stats().clone())
    };
    let range = parse_filter("id between 2500 and 4500").expect("parse");
    // Blocks 2, 3 and 4 hold ids in the range: all their rows come back.
    let (ids, stats) = run(table.scan().prune_with(range.clone()));
    assert_eq!(ids, (2000..5000).collect::<Vec<i64>>());
    assert_eq!(
        (stats.blocks_total, stats.blocks_pruned),
        (10, 7),
        "{stats}"
    );
    let (ids, stats) = run(table
        .scan()
        .filter(parse_filter("id >= 3000").expect("parse"))
        .prune_with(range));
    assert_eq!(ids, (3000..5000).collect::<Vec<i64>>());
    assert_eq!(stats.blocks_pruned, 8, "{stats}");
}

/// `extremes_only` on a Sift file: each block's `[min, max]` pairs, folded over the scan,
/// equal the extremes of the reference's filtered rows, for integer, date and decimal
/// columns, with blocks of nulls only and blocks with some nulls; with no filter they come
/// from the blocks' statistics, and no chunk is read.
#[test]
fn sift_extremes_equal_the_reference() {
    use arrow::compute::kernels::aggregate::{max, min};
    let n = 5000;
    // Blocks 0 and 1 hold nulls only, the others a null in every ten rows.
    let key: Int64Array = (0..n)
        .map(|i| (i >= 2000 && i % 10 != 0).then_some(1_000_000 + (i * 7919 % 3001) as i64))
        .collect();
    let code: Int32Array = (0..n).map(|i| Some([40, -7, 12_000, 3][i % 4])).collect();
    let day: Date32Array = (0..n)
        .map(|i| Some(9000 + (i * 31 % 2500) as i32))
        .collect();
    let price =
        Decimal128Array::from_iter_values((0..n).map(|i| (i * 977 % 100_000) as i128 - 500))
            .with_precision_and_scale(15, 2)
            .unwrap();
    let schema = Schema::new(vec![
        Field::new("key", DataType::Int64, true),
        Field::new("code", DataType::Int32, false),
        Field::new("day", DataType::Date32, false),
        Field::new("price", DataType::Decimal128(15, 2), false),
    ]);
    let columns: Vec<ArrayRef> = vec![
        Arc::new(key),
        Arc::new(code),
        Arc::new(day),
        Arc::new(price),
    ];
    let batch = RecordBatch::try_new(Arc::new(schema), columns).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("extremes.sift");
    // Blocks of 1000 rows.
    common::write_sift(&path, &batch, 1000);
    let table = Table::open(&path).unwrap();
    let names = ["key", "code", "day", "price"];
    let days = Literal::date("1994-09-01")
        .zip(Literal::date("1994-12-31"))
        .unwrap();
    let filters = [
        None,
        Some(parse_filter("code < 20").unwrap()),
        Some(col("day").between(days.0, days.1)),
        Some(parse_filter("key > 1001000").unwrap()),
    ];
    for expr in filters {
        let want = common::filter_batch(&batch, expr.as_ref());
        let mut scan = table.scan().project(names).extremes_only();
        if let Some(e) = &expr {
            scan = scan.filter(e.clone());
        }
        let mut scan = scan.build().unwrap();
        let got: Vec<RecordBatch> = scan.by_ref().map(|b| b.unwrap()).collect();
        for (c, name) in names.iter().enumerate() {
            let as_i128 = |a: &ArrayRef| {
                let a = cast(a, &DataType::Decimal128(38, 0)).unwrap();
                let a = a.as_primitive::<Decimal128Type>().clone();
                (min(&a), max(&a))
            };
            // Decimals compare as their unscaled values.
            let unscaled = |a: &ArrayRef| match a.data_type() {
                DataType::Decimal128(..) => {
                    let d = a.as_primitive::<Decimal128Type>();
                    let v: ArrayRef =
                        Arc::new(Int64Array::from_iter(d.iter().map(|x| x.map(|x| x as i64))));
                    v
                }
                DataType::Date32 => cast(a, &DataType::Int32).unwrap(),
                _ => a.clone(),
            };
            let (lo, hi) = as_i128(&unscaled(want.column_by_name(name).unwrap()));
            let pairs: Vec<ArrayRef> = got.iter().map(|b| unscaled(b.column(c))).collect();
            let folded: Vec<(Option<i128>, Option<i128>)> = pairs.iter().map(as_i128).collect();
            let got_lo = folded.iter().filter_map(|p| p.0).min();
            let got_hi = folded.iter().filter_map(|p| p.1).max();
            assert_eq!((got_lo, got_hi), (lo, hi), "{name} where {expr:?}");
            for b in &got {
                assert_eq!(
                    b.column(c).data_type(),
                    batch.column(c).data_type(),
                    "{name}"
                );
            }
        }
        if expr.is_none() {
            assert_eq!(scan.stats().bytes_read, 0, "{}", scan.stats());
        }
    }
}

/// `count_selected` beside `extremes_only`: the last column of each block's two rows sums,
/// over the scan, to the rows the filter keeps (none, some, all, and a projection of no
/// column), on one thread and on three, whose statistics count the same rows; without
/// `extremes_only` it is refused.
#[test]
fn selected_rows_counted_beside_extremes_equal_the_filtered_rows() {
    let n = 5000;
    let key: Int64Array = (0..n)
        .map(|i| (i % 10 != 0).then_some(i * 7919 % 3001))
        .collect();
    let schema = Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("key", DataType::Int64, true),
    ]);
    let columns: Vec<ArrayRef> = vec![Arc::new(Int64Array::from_iter_values(0..n)), Arc::new(key)];
    let batch = RecordBatch::try_new(Arc::new(schema), columns).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("counted.sift");
    common::write_sift(&path, &batch, 1000);
    let table = Table::open(&path).unwrap();
    for filter in [
        "id < 0",
        "key > 2000",
        "key is null or id >= 4500",
        "id >= 0",
    ] {
        let expr = parse_filter(filter).unwrap();
        let want = common::filter_batch(&batch, Some(&expr)).num_rows() as u64;
        for (projection, threads) in [(vec!["key", "id"], 1), (vec!["key"], 3), (vec![], 1)] {
            let mut scan = (table
                .scan()
                .project(projection.clone())
                .filter(expr.clone()))
            .extremes_only()
            .count_selected()
            .threads(threads)
            .build()
            .unwrap();
            let got: Vec<RecordBatch> = scan.by_ref().map(|b| b.unwrap()).collect();
            let mut counted = 0;
            for b in &got {
                assert_eq!(b.num_rows(), 2);
                assert_eq!(b.num_columns(), projection.len() + 1);
                assert_eq!(b.schema().field(projection.len()).name(), SELECTED_ROWS);
                let c = b.column(projection.len()).as_primitive::<UInt64Type>();
                assert_eq!(c.value(1), 0);
                counted += c.value(0);
            }
            assert_eq!(
                counted, want,
                "{filter}, {projection:?} on {threads} threads"
            );
            assert_eq!(
                scan.stats().rows_matched,
                want,
                "{filter} on {threads} threads"
            );
        }
    }
    let err = table
        .scan()
        .project(["id"])
        .count_selected()
        .build()
        .err()
        .expect("refused");
    assert!(err.to_string().contains("count_selected applies"), "{err}");
}
