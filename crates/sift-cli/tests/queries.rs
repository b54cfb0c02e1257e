//! `sift query`'s TPC-H scans against exact sums computed independently, with Arrow
//! compute kernels, from the generated lineitem: on a Sift file of many blocks and on the
//! same table as Parquet, results and matched-row counts alike.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use arrow::array::*;
use arrow::compute::kernels::cast::cast;
use arrow::compute::kernels::cmp;
use arrow::compute::{and_kleene, concat_batches, filter_record_batch, or_kleene};
use arrow::datatypes::*;
use arrow::error::ArrowError;
use arrow::record_batch::RecordBatch;
use parquet::arrow::ArrowWriter;
use parquet::file::properties::WriterProperties;
use serde_json::Value as Json;
use tpchgen::generators::LineItemGenerator;
use tpchgen_arrow::LineItemArrow;

/// One cell of a result, as `sift query --json` prints it.
#[derive(Debug, Clone, PartialEq)]
enum Value {
    Int(i64),
    Float(f64),
    Str(String),
    Null,
}

impl From<&Json> for Value {
    fn from(j: &Json) -> Self {
        match j {
            Json::Null => Value::Null,
            Json::String(s) => Value::Str(s.clone()),
            Json::Number(n) if n.is_i64() => Value::Int(n.as_i64().unwrap()),
            Json::Number(n) => Value::Float(n.as_f64().unwrap()),
            other => panic!("unexpected cell {other}"),
        }
    }
}

/// What `sift query NAME FILE --json` returns: the rows and the matched-row count.
fn run_query(name: &str, file: &Path) -> (Vec<Vec<Value>>, u64) {
    let out = Command::new(env!("CARGO_BIN_EXE_sift"))
        .args(["query", name])
        .arg(file)
        .args(["--runs", "1", "--json", "--quiet"])
        .output()
        .expect("run sift");
    assert!(
        out.status.success(),
        "sift query {name} {}: {}",
        file.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let json: Json = serde_json::from_slice(&out.stdout).unwrap();
    let rows = json["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_array().unwrap().iter().map(Value::from).collect())
        .collect();
    (rows, json["stats"]["rows_matched"].as_u64().unwrap())
}

type Cmp = fn(&dyn Datum, &dyn Datum) -> Result<BooleanArray, ArrowError>;

fn days(text: &str) -> i32 {
    let a = cast(&StringArray::from(vec![text]), &DataType::Date32).unwrap();
    a.as_primitive::<Date32Type>().value(0)
}

/// `l op value` as Arrow kernels see it: a date, a decimal in cents, or a string.
fn li_cmp(li: &RecordBatch, column: &str, op: Cmp, value: &str) -> BooleanArray {
    let a = li.column_by_name(column).unwrap();
    match a.data_type() {
        DataType::Date32 => op(a, &Date32Array::new_scalar(days(value))),
        DataType::Decimal128(p, s) => {
            let cents: i128 = value.parse().unwrap();
            let sc = Scalar::new(
                Decimal128Array::from(vec![cents])
                    .with_precision_and_scale(*p, *s)
                    .unwrap(),
            );
            op(a, &sc)
        }
        _ => op(a, &StringViewArray::new_scalar(value)),
    }
    .unwrap()
}

fn all_of(parts: &[BooleanArray]) -> BooleanArray {
    parts
        .iter()
        .skip(1)
        .fold(parts[0].clone(), |a, b| and_kleene(&a, b).unwrap())
}

fn any_of(parts: &[BooleanArray]) -> BooleanArray {
    parts
        .iter()
        .skip(1)
        .fold(parts[0].clone(), |a, b| or_kleene(&a, b).unwrap())
}

fn decimals<'a>(b: &'a RecordBatch, c: &str) -> &'a [i128] {
    b.column_by_name(c)
        .unwrap()
        .as_primitive::<Decimal128Type>()
        .values()
}

fn ints(b: &RecordBatch, c: &str) -> Vec<i64> {
    cast(b.column_by_name(c).unwrap(), &DataType::Int64)
        .unwrap()
        .as_primitive::<Int64Type>()
        .values()
        .to_vec()
}

fn texts(b: &RecordBatch, c: &str) -> Vec<String> {
    let a = b.column_by_name(c).unwrap().as_string_view();
    (0..a.len()).map(|i| a.value(i).to_string()).collect()
}

/// The rows Q6's predicate selects.
fn q6_mask(li: &RecordBatch) -> BooleanArray {
    all_of(&[
        li_cmp(li, "l_shipdate", cmp::gt_eq, "1994-01-01"),
        li_cmp(li, "l_shipdate", cmp::lt, "1995-01-01"),
        li_cmp(li, "l_discount", cmp::gt_eq, "5"),
        li_cmp(li, "l_discount", cmp::lt_eq, "7"),
        li_cmp(li, "l_quantity", cmp::lt, "2400"),
    ])
}

fn ref_q6(li: &RecordBatch) -> Vec<Vec<Value>> {
    let f = filter_record_batch(li, &q6_mask(li)).unwrap();
    let (p, d) = (decimals(&f, "l_extendedprice"), decimals(&f, "l_discount"));
    let rev: i128 = p.iter().zip(d).map(|(p, d)| p * d).sum();
    vec![vec![Value::Float(rev as f64 / 1e4)]]
}

fn ref_q1(li: &RecordBatch) -> Vec<Vec<Value>> {
    let m = li_cmp(li, "l_shipdate", cmp::lt_eq, "1998-09-02");
    let f = filter_record_batch(li, &m).unwrap();
    let (flag, status) = (texts(&f, "l_returnflag"), texts(&f, "l_linestatus"));
    let (q, p, d, t) = (
        decimals(&f, "l_quantity"),
        decimals(&f, "l_extendedprice"),
        decimals(&f, "l_discount"),
        decimals(&f, "l_tax"),
    );
    // (flag, status) -> sums of q, p, p(1-d), p(1-d)(1+t), d, and the count; exact.
    let mut groups: BTreeMap<(String, String), [i128; 6]> = Default::default();
    for i in 0..f.num_rows() {
        let g = groups
            .entry((flag[i].clone(), status[i].clone()))
            .or_default();
        let dp = p[i] * (100 - d[i]);
        g[0] += q[i];
        g[1] += p[i];
        g[2] += dp;
        g[3] += dp * (100 + t[i]);
        g[4] += d[i];
        g[5] += 1;
    }
    groups
        .into_iter()
        .map(|((f, s), g)| {
            let n = g[5] as f64;
            vec![
                Value::Str(f),
                Value::Str(s),
                Value::Float(g[0] as f64 / 100.0),
                Value::Float(g[1] as f64 / 100.0),
                Value::Float(g[2] as f64 / 1e4),
                Value::Float(g[3] as f64 / 1e6),
                Value::Float(g[0] as f64 / 100.0 / n),
                Value::Float(g[1] as f64 / 100.0 / n),
                Value::Float(g[4] as f64 / 100.0 / n),
                Value::Int(g[5] as i64),
            ]
        })
        .collect()
}

fn ref_q12(li: &RecordBatch) -> Vec<Vec<Value>> {
    let date = |c: &str| li.column_by_name(c).unwrap().clone();
    let m = all_of(&[
        any_of(&[
            li_cmp(li, "l_shipmode", cmp::eq, "MAIL"),
            li_cmp(li, "l_shipmode", cmp::eq, "SHIP"),
        ]),
        cmp::lt(&date("l_commitdate"), &date("l_receiptdate")).unwrap(),
        cmp::lt(&date("l_shipdate"), &date("l_commitdate")).unwrap(),
        li_cmp(li, "l_receiptdate", cmp::gt_eq, "1994-01-01"),
        li_cmp(li, "l_receiptdate", cmp::lt, "1995-01-01"),
    ]);
    let f = filter_record_batch(li, &m).unwrap();
    let (mode, key) = (texts(&f, "l_shipmode"), ints(&f, "l_orderkey"));
    let mut groups: BTreeMap<String, (i64, i64)> = Default::default();
    for i in 0..f.num_rows() {
        let g = groups.entry(mode[i].clone()).or_default();
        g.0 += 1;
        g.1 += key[i];
    }
    groups
        .into_iter()
        .map(|(m, (c, s))| vec![Value::Str(m), Value::Int(c), Value::Int(s)])
        .collect()
}

/// count, sum(l_partkey), sum(l_extendedprice * (1 - l_discount)) of the rows of `m`.
fn ref_revenue(li: &RecordBatch, m: &BooleanArray) -> Vec<Vec<Value>> {
    let f = filter_record_batch(li, m).unwrap();
    let (p, d) = (decimals(&f, "l_extendedprice"), decimals(&f, "l_discount"));
    let rev: i128 = p.iter().zip(d).map(|(p, d)| p * (100 - d)).sum();
    let parts: i64 = ints(&f, "l_partkey").iter().sum();
    vec![vec![
        Value::Int(f.num_rows() as i64),
        Value::Int(parts),
        Value::Float(rev as f64 / 1e4),
    ]]
}

fn ref_q14(li: &RecordBatch) -> Vec<Vec<Value>> {
    let m = all_of(&[
        li_cmp(li, "l_shipdate", cmp::gt_eq, "1995-09-01"),
        li_cmp(li, "l_shipdate", cmp::lt, "1995-10-01"),
    ]);
    ref_revenue(li, &m)
}

fn ref_q19(li: &RecordBatch) -> Vec<Vec<Value>> {
    let branch = |lo: &str, hi: &str| {
        all_of(&[
            li_cmp(li, "l_quantity", cmp::gt_eq, lo),
            li_cmp(li, "l_quantity", cmp::lt_eq, hi),
            any_of(&[
                li_cmp(li, "l_shipmode", cmp::eq, "AIR"),
                li_cmp(li, "l_shipmode", cmp::eq, "AIR REG"),
            ]),
            li_cmp(li, "l_shipinstruct", cmp::eq, "DELIVER IN PERSON"),
        ])
    };
    let m = any_of(&[
        branch("100", "1100"),
        branch("1000", "2000"),
        branch("2000", "3000"),
    ]);
    ref_revenue(li, &m)
}

fn assert_rows_close(name: &str, got: &[Vec<Value>], want: &[Vec<Value>]) {
    assert_eq!(got.len(), want.len(), "{name}: {got:?} vs {want:?}");
    assert!(!want.is_empty());
    for (g, w) in got.iter().zip(want) {
        assert_eq!(g.len(), w.len(), "{name}");
        for (i, (a, b)) in g.iter().zip(w).enumerate() {
            let ok = match (a, b) {
                (Value::Float(a), Value::Float(b)) => (a - b).abs() <= 1e-9 * b.abs().max(1.0),
                _ => a == b,
            };
            assert!(ok, "{name} column {i}: got {a:?}, want {b:?}");
        }
    }
}

/// The rows a query's filter matched, from its reference result: Q1's and Q12's counts
/// per group summed, Q14's and Q19's count.
fn matched(name: &str, want: &[Vec<Value>], q6_matched: u64) -> u64 {
    let count = |v: &Value| match v {
        Value::Int(c) => *c as u64,
        other => panic!("{name}: count is {other:?}"),
    };
    match name {
        "q1" => want.iter().map(|r| count(&r[9])).sum(),
        "q12" => want.iter().map(|r| count(&r[1])).sum(),
        "q14" | "q19" => count(&want[0][0]),
        "q6" => q6_matched,
        other => panic!("no matched-row count for {other}"),
    }
}

#[test]
fn tpch_queries_equal_arrow_compute() {
    let batches: Vec<RecordBatch> = LineItemArrow::new(LineItemGenerator::new(0.01, 1, 1))
        .with_batch_size(5000)
        .collect::<Result<_, _>>()
        .unwrap();
    let schema = batches[0].schema();
    let li = concat_batches(&schema, &batches).unwrap();
    assert!(li.num_rows() > 50_000);

    let dir = tempfile::tempdir().unwrap();
    let pq = dir.path().join("lineitem.parquet");
    let props = WriterProperties::builder()
        .set_max_row_group_row_count(Some(16_384))
        .build();
    let mut w =
        ArrowWriter::try_new(std::fs::File::create(&pq).unwrap(), schema, Some(props)).unwrap();
    for b in &batches {
        w.write(b).unwrap();
    }
    w.close().unwrap();
    // Small blocks, so that the scans prune and the aggregations see many batches.
    let sift = dir.path().join("lineitem.sift");
    let out = Command::new(env!("CARGO_BIN_EXE_sift"))
        .args(["--quiet", "convert"])
        .args([&pq, &sift])
        .args(["--block-rows", "2048"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let want: [(&str, Vec<Vec<Value>>); 5] = [
        ("q1", ref_q1(&li)),
        ("q6", ref_q6(&li)),
        ("q12", ref_q12(&li)),
        ("q14", ref_q14(&li)),
        ("q19", ref_q19(&li)),
    ];
    let q6_matched = q6_mask(&li).true_count() as u64;
    assert!(q6_matched > 0);
    for path in [&sift, &pq] {
        for (name, want) in &want {
            let (rows, rows_matched) = run_query(name, path);
            let what = format!("{name} on {}", path.display());
            assert_rows_close(&what, &rows, want);
            assert_eq!(rows_matched, matched(name, want, q6_matched), "{what}");
        }
    }
}
