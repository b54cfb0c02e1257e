//! The benchmark queries of `sift query` and `sift demo`, written against sift-scan's
//! public scan API as in Parquet-Select §7.3: TPC-H Q6, Q1's scan with a small hash aggregation, the lineitem-side scans of
//! Q12, Q14 and Q19, and the paper's micro-benchmark (`micro-f{F}-p{P}`: `F` filters
//! `c_i < 8` at 25 % each, the maximum of `P` projected columns).
//!
//! Each returns its result rows in the order and with the columns of the SQL in
//! `bench/queries.py`, so the harness can compare them with DuckDB's.

use std::borrow::Cow;
use std::fmt;

use anyhow::{Result, anyhow, bail};
use arrow::array::cast::AsArray;
use arrow::array::{Array, Int32Array, RecordBatch, StringArray};
use arrow::compute::cast;
use arrow::compute::kernels::aggregate;
use arrow::datatypes::{DataType, Float64Type, Int32Type, Int64Type};
use sift_scan::{CmpOp, Expr, Literal, ScanBuilder, ScanStats, Table, col};

/// One cell of a query result.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Int(i64),
    Float(f64),
    Str(String),
    Null,
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Int(i) => write!(f, "{i}"),
            Value::Float(x) => write!(f, "{x}"),
            Value::Str(s) => f.write_str(s),
            Value::Null => f.write_str("NULL"),
        }
    }
}

/// A query's result and what its scan did.
#[derive(Debug, Clone)]
pub struct QueryResult {
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Value>>,
    pub stats: ScanStats,
}

/// The query names [`run`] accepts.
pub const NAMES: &[&str] = &["q1", "q6", "q12", "q14", "q19", "micro-f{F}-p{P}"];

/// Runs the query called `name` on `table`.
pub fn run(name: &str, table: &Table) -> Result<QueryResult> {
    match name {
        "q1" => q1(table),
        "q6" => q6(table),
        "q12" => q12(table),
        "q14" => q14(table),
        "q19" => q19(table),
        other => match parse_micro(other) {
            Some((f, p)) => micro(table, f, p),
            None => bail!("unknown query '{other}' (known: {})", NAMES.join(", ")),
        },
    }
}

fn parse_micro(name: &str) -> Option<(usize, usize)> {
    let rest = name.strip_prefix("micro-f")?;
    let (f, p) = rest.split_once("-p")?;
    let (f, p) = (f.parse().ok()?, p.parse().ok()?);
    ((1..=10).contains(&f) && (1..=10).contains(&p)).then_some((f, p))
}

fn date(text: &str) -> Result<Literal> {
    Literal::date(text).ok_or_else(|| anyhow!("bad date {text}"))
}

/// Runs a scan of `columns` filtered by `filter` and feeds every batch to `f`.
fn each_batch(
    table: &Table,
    columns: &[&str],
    filter: Expr,
    f: impl FnMut(&RecordBatch) -> Result<()>,
) -> Result<ScanStats> {
    scan_batches(
        table.scan().project(columns.iter().copied()).filter(filter),
        f,
    )
}

/// Runs `scan` and feeds every batch to `f`.
fn scan_batches(
    scan: ScanBuilder,
    mut f: impl FnMut(&RecordBatch) -> Result<()>,
) -> Result<ScanStats> {
    let mut scan = scan.build()?;
    for batch in scan.by_ref() {
        f(&batch?)?;
    }
    Ok(scan.stats().clone())
}

/// Column `i` as `f64`s (decimals and other numbers are cast, as the SQL would).
fn f64s(b: &RecordBatch, i: usize) -> Result<Cow<'_, [f64]>> {
    let a = b.column(i);
    if let Some(p) = a.as_primitive_opt::<Float64Type>() {
        return Ok(Cow::Borrowed(p.values().as_ref()));
    }
    let c = cast(a, &DataType::Float64)?;
    Ok(Cow::Owned(
        c.as_primitive::<Float64Type>().values().to_vec(),
    ))
}

/// Column `i` as `i64`s.
fn i64s(b: &RecordBatch, i: usize) -> Result<Cow<'_, [i64]>> {
    let a = b.column(i);
    if let Some(p) = a.as_primitive_opt::<Int64Type>() {
        return Ok(Cow::Borrowed(p.values().as_ref()));
    }
    let c = cast(a, &DataType::Int64)?;
    Ok(Cow::Owned(c.as_primitive::<Int64Type>().values().to_vec()))
}

/// Column `i` as a `Utf8` array (string views and large strings are cast).
fn strings(b: &RecordBatch, i: usize) -> Result<StringArray> {
    let a = b.column(i);
    match a.as_string_opt::<i32>() {
        Some(s) => Ok(s.clone()),
        None => Ok(cast(a, &DataType::Utf8)?.as_string::<i32>().clone()),
    }
}

/// TPC-H Q6.
pub fn q6(table: &Table) -> Result<QueryResult> {
    let filter = col("l_shipdate")
        .gte(date("1994-01-01")?)
        .and(col("l_shipdate").lt(date("1995-01-01")?))
        .and(col("l_discount").between(0.05, 0.07))
        .and(col("l_quantity").lt(24));
    let mut revenue = 0.0f64;
    let mut any = false;
    let stats = each_batch(table, &["l_extendedprice", "l_discount"], filter, |b| {
        let (p, d) = (f64s(b, 0)?, f64s(b, 1)?);
        let (pn, dn) = (b.column(0).logical_nulls(), b.column(1).logical_nulls());
        if pn.is_none() && dn.is_none() {
            revenue += p.iter().zip(d.iter()).map(|(p, d)| p * d).sum::<f64>();
            any |= !p.is_empty();
        } else {
            for i in 0..p.len() {
                if pn.as_ref().is_none_or(|n| n.is_valid(i))
                    && dn.as_ref().is_none_or(|n| n.is_valid(i))
                {
                    revenue += p[i] * d[i];
                    any = true;
                }
            }
        }
        Ok(())
    })?;
    Ok(QueryResult {
        columns: vec!["revenue".into()],
        rows: vec![vec![if any {
            Value::Float(revenue)
        } else {
            Value::Null
        }]],
        stats,
    })
}

/// Running sums of one Q1 group, with the count of non-null inputs of each (SQL's sum
/// and avg skip nulls; a sum over no value is NULL).
#[derive(Default, Clone)]
struct Q1Agg {
    /// qty, price, disc_price, charge, disc.
    sums: [f64; 5],
    counts: [i64; 5],
    /// count(*).
    rows: i64,
}

/// Q1's group key: (return flag, line status), NULL as a group of its own.
type Q1Key = (Option<String>, Option<String>);

/// Q1's scan: shipdate ≤ 1998-09-02, six columns, grouped by return flag and status.
///
/// The two key columns are read as dictionary arrays ([`ScanBuilder::read_dictionary`]):
/// each batch maps its few (flag, status) key pairs to groups once, and rows are grouped
/// by their codes.
///
/// [`ScanBuilder::read_dictionary`]: sift_scan::ScanBuilder::read_dictionary
pub fn q1(table: &Table) -> Result<QueryResult> {
    let filter = col("l_shipdate").lte(date("1998-09-02")?);
    let cols = [
        "l_returnflag",
        "l_linestatus",
        "l_quantity",
        "l_extendedprice",
        "l_discount",
        "l_tax",
    ];
    let mut groups: Vec<(Q1Key, Q1Agg)> = Vec::new();
    let scan = table
        .scan()
        .project(cols)
        .filter(filter)
        .read_dictionary(["l_returnflag", "l_linestatus"]);
    let stats = scan_batches(scan, |b| {
        let gid = group_ids(b, &mut groups)?;
        let (q, p, d, t) = (f64s(b, 2)?, f64s(b, 3)?, f64s(b, 4)?, f64s(b, 5)?);
        let nulls: Vec<_> = (2..6).map(|c| b.column(c).logical_nulls()).collect();
        let mut acc = vec![Q1Agg::default(); groups.len()];
        if nulls.iter().all(Option::is_none) {
            q1_sums(&gid, [&q, &p, &d, &t], &mut acc);
        } else {
            let ok = |c: usize, i: usize| nulls[c].as_ref().is_none_or(|n| n.is_valid(i));
            for (i, &g) in gid.iter().enumerate() {
                let a = &mut acc[g as usize];
                a.rows += 1;
                let mut add = |k: usize, v: f64| {
                    a.sums[k] += v;
                    a.counts[k] += 1;
                };
                if ok(0, i) {
                    add(0, q[i]);
                }
                if ok(1, i) {
                    add(1, p[i]);
                }
                if ok(2, i) {
                    add(4, d[i]);
                }
                if ok(1, i) && ok(2, i) {
                    let dp = p[i] * (1.0 - d[i]);
                    add(2, dp);
                    if ok(3, i) {
                        add(3, dp * (1.0 + t[i]));
                    }
                }
            }
        }
        for ((_, total), a) in groups.iter_mut().zip(acc) {
            for k in 0..5 {
                total.sums[k] += a.sums[k];
                total.counts[k] += a.counts[k];
            }
            total.rows += a.rows;
        }
        Ok(())
    })?;
    // ORDER BY flag, status with NULLs last (DuckDB's default).
    let key = |k: &Option<String>| (k.is_none(), k.clone());
    groups.sort_by_key(|(k, _)| (key(&k.0), key(&k.1)));
    let sum = |a: &Q1Agg, k: usize| match a.counts[k] {
        0 => Value::Null,
        _ => Value::Float(a.sums[k]),
    };
    let avg = |a: &Q1Agg, k: usize| match a.counts[k] {
        0 => Value::Null,
        n => Value::Float(a.sums[k] / n as f64),
    };
    let text = |k: Option<String>| k.map_or(Value::Null, Value::Str);
    Ok(QueryResult {
        columns: [
            "l_returnflag",
            "l_linestatus",
            "sum_qty",
            "sum_base_price",
            "sum_disc_price",
            "sum_charge",
            "avg_qty",
            "avg_price",
            "avg_disc",
            "count_order",
        ]
        .map(String::from)
        .to_vec(),
        rows: groups
            .into_iter()
            .map(|((f, s), a)| {
                vec![
                    text(f),
                    text(s),
                    sum(&a, 0),
                    sum(&a, 1),
                    sum(&a, 2),
                    sum(&a, 3),
                    avg(&a, 0),
                    avg(&a, 1),
                    avg(&a, 4),
                    Value::Int(a.rows),
                ]
            })
            .collect(),
        stats,
    })
}

/// Q1's group of every row of `b` (keys in columns 0 and 1, dictionary arrays), adding
/// groups not seen before. A batch's few key pairs are looked up once, through a table
/// indexed by the two dictionary codes (a null key takes the index after the last).
fn group_ids(b: &RecordBatch, groups: &mut Vec<(Q1Key, Q1Agg)>) -> Result<Vec<u32>> {
    let flag = dict_strings(b, 0)?;
    let status = dict_strings(b, 1)?;
    let (nf, ns) = (flag.1.len() + 1, status.1.len() + 1);
    // Codes as table indices; a null key takes the index after the dictionary's last.
    let codes = |keys: &Int32Array, null: usize| -> Vec<usize> {
        match keys.logical_nulls() {
            None => keys.values().iter().map(|&k| k as usize).collect(),
            Some(n) => (keys.values().iter().enumerate())
                .map(|(i, &k)| if n.is_valid(i) { k as usize } else { null })
                .collect(),
        }
    };
    let (cf, cs) = (codes(&flag.0, nf - 1), codes(&status.0, ns - 1));
    let value = |(_, v): &(Int32Array, StringArray), c: usize| {
        (c < v.len() && v.is_valid(c)).then(|| v.value(c).to_string())
    };
    let mut lookup = |f: usize, s: usize| -> u32 {
        let k = (value(&flag, f), value(&status, s));
        let g = match groups.iter().position(|(g, _)| *g == k) {
            Some(g) => g,
            None => {
                groups.push((k, Q1Agg::default()));
                groups.len() - 1
            }
        };
        g as u32
    };
    // Dictionaries are per block and small; the table covers every pair of codes unless
    // that would be large, then each distinct pair is looked up through a hash map.
    if nf.saturating_mul(ns) <= 1 << 16 {
        let mut table = vec![u32::MAX; nf * ns];
        Ok(cf
            .iter()
            .zip(&cs)
            .map(|(&f, &s)| {
                let slot = &mut table[f * ns + s];
                if *slot == u32::MAX {
                    *slot = lookup(f, s);
                }
                *slot
            })
            .collect())
    } else {
        let mut seen = rustc_hash::FxHashMap::default();
        Ok(cf
            .iter()
            .zip(&cs)
            .map(|(&f, &s)| *seen.entry((f, s)).or_insert_with(|| lookup(f, s)))
            .collect())
    }
}

/// Column `i`, a dictionary array, as its keys and its values as `Utf8`.
fn dict_strings(b: &RecordBatch, i: usize) -> Result<(Int32Array, StringArray)> {
    let a = b
        .column(i)
        .as_dictionary_opt::<Int32Type>()
        .ok_or_else(|| anyhow!("column {i} is not a dictionary array"))?;
    let values = match a.values().as_string_opt::<i32>() {
        Some(s) => s.clone(),
        None => cast(a.values(), &DataType::Utf8)?
            .as_string::<i32>()
            .clone(),
    };
    Ok((a.keys().clone(), values))
}

/// Q1's sums of rows without nulls into `acc` (by group `gid`): four interleaved
/// accumulator sets, so rows of the same group in a row do not wait on each other's adds.
fn q1_sums(gid: &[u32], [q, p, d, t]: [&[f64]; 4], acc: &mut [Q1Agg]) {
    let g = acc.len();
    let mut lanes = vec![[0.0f64; 5]; 4 * g];
    let mut rows = vec![0i64; 4 * g];
    let n = gid
        .len()
        .min(q.len())
        .min(p.len())
        .min(d.len())
        .min(t.len());
    for i in 0..n {
        let slot = (i & 3) * g + gid[i] as usize;
        rows[slot] += 1;
        let s = &mut lanes[slot];
        let dp = p[i] * (1.0 - d[i]);
        s[0] += q[i];
        s[1] += p[i];
        s[2] += dp;
        s[3] += dp * (1.0 + t[i]);
        s[4] += d[i];
    }
    for (gi, a) in acc.iter_mut().enumerate() {
        for lane in 0..4 {
            let slot = lane * g + gi;
            for (sum, lane_sum) in a.sums.iter_mut().zip(lanes[slot]) {
                *sum += lane_sum;
            }
            a.rows += rows[slot];
        }
        a.counts = [a.rows; 5];
    }
}

/// Q12's lineitem scan: ship mode IN, date ranges and column-to-column comparisons.
pub fn q12(table: &Table) -> Result<QueryResult> {
    let filter = col("l_shipmode")
        .in_list(["MAIL", "SHIP"])
        .and(col("l_commitdate").cmp_column(CmpOp::Lt, "l_receiptdate"))
        .and(col("l_shipdate").cmp_column(CmpOp::Lt, "l_commitdate"))
        .and(col("l_receiptdate").gte(date("1994-01-01")?))
        .and(col("l_receiptdate").lt(date("1995-01-01")?));
    // Per ship mode: count(*), sum(l_orderkey), non-null keys summed. The IN filter
    // leaves no null mode.
    let mut groups: Vec<(String, i64, i64, i64)> = Vec::new();
    let stats = each_batch(table, &["l_shipmode", "l_orderkey"], filter, |b| {
        let mode = strings(b, 0)?;
        let key = i64s(b, 1)?;
        let key_nulls = b.column(1).logical_nulls();
        for i in 0..b.num_rows() {
            let m = mode.value(i);
            let g = match groups.iter().position(|g| g.0 == m) {
                Some(g) => g,
                None => {
                    groups.push((m.to_string(), 0, 0, 0));
                    groups.len() - 1
                }
            };
            groups[g].1 += 1;
            if key_nulls.as_ref().is_none_or(|n| n.is_valid(i)) {
                groups[g].2 += key[i];
                groups[g].3 += 1;
            }
        }
        Ok(())
    })?;
    groups.sort();
    Ok(QueryResult {
        columns: vec!["l_shipmode".into(), "count".into(), "sum_orderkey".into()],
        rows: groups
            .into_iter()
            .map(|(m, c, s, n)| {
                let sum = if n > 0 { Value::Int(s) } else { Value::Null };
                vec![Value::Str(m), Value::Int(c), sum]
            })
            .collect(),
        stats,
    })
}

/// count(*), sum(l_partkey), sum(l_extendedprice * (1 - l_discount)) of the rows passing
/// `filter` (the lineitem side of Q14 and Q19).
fn revenue_by_part(table: &Table, filter: Expr) -> Result<QueryResult> {
    let (mut count, mut parts, mut revenue) = (0i64, 0i64, 0.0f64);
    let stats = each_batch(
        table,
        &["l_partkey", "l_extendedprice", "l_discount"],
        filter,
        |b| {
            let (k, p, d) = (i64s(b, 0)?, f64s(b, 1)?, f64s(b, 2)?);
            count += b.num_rows() as i64;
            let nulls: Vec<_> = (0..3).map(|c| b.column(c).logical_nulls()).collect();
            if nulls.iter().all(Option::is_none) {
                parts += k.iter().sum::<i64>();
                revenue += p
                    .iter()
                    .zip(d.iter())
                    .map(|(p, d)| p * (1.0 - d))
                    .sum::<f64>();
                return Ok(());
            }
            // SQL's sums skip rows where an operand is null.
            let valid = |c: usize, i: usize| nulls[c].as_ref().is_none_or(|n| n.is_valid(i));
            for i in 0..b.num_rows() {
                if valid(0, i) {
                    parts += k[i];
                }
                if valid(1, i) && valid(2, i) {
                    revenue += p[i] * (1.0 - d[i]);
                }
            }
            Ok(())
        },
    )?;
    let none = count == 0;
    Ok(QueryResult {
        columns: vec!["count".into(), "sum_partkey".into(), "revenue".into()],
        rows: vec![vec![
            Value::Int(count),
            if none { Value::Null } else { Value::Int(parts) },
            if none {
                Value::Null
            } else {
                Value::Float(revenue)
            },
        ]],
        stats,
    })
}

/// Q14's lineitem scan: one month of ship dates.
pub fn q14(table: &Table) -> Result<QueryResult> {
    let filter = col("l_shipdate")
        .gte(date("1995-09-01")?)
        .and(col("l_shipdate").lt(date("1995-10-01")?));
    revenue_by_part(table, filter)
}

/// Q19's lineitem scan: a disjunction of three conjunctions with IN on strings.
pub fn q19(table: &Table) -> Result<QueryResult> {
    let branch = |lo: i64, hi: i64| {
        col("l_quantity")
            .between(lo, hi)
            .and(col("l_shipmode").in_list(["AIR", "AIR REG"]))
            .and(col("l_shipinstruct").eq("DELIVER IN PERSON"))
    };
    let filter = branch(1, 11).or(branch(10, 20)).or(branch(20, 30));
    revenue_by_part(table, filter)
}

/// The micro-benchmark: `filters` predicates `c_i < 8`, the maximum of `projections`
/// columns `c10…`.
pub fn micro(table: &Table, filters: usize, projections: usize) -> Result<QueryResult> {
    let mut filter: Option<Expr> = None;
    for i in 0..filters {
        let e = col(format!("c{i}")).lt(8);
        filter = Some(match filter {
            Some(f) => f.and(e),
            None => e,
        });
    }
    let names: Vec<String> = (0..projections).map(|i| format!("c{}", 10 + i)).collect();
    let cols: Vec<&str> = names.iter().map(String::as_str).collect();
    let mut max: Vec<Option<i64>> = vec![None; projections];
    let stats = each_batch(table, &cols, filter.unwrap_or(Expr::And(vec![])), |b| {
        for (i, m) in max.iter_mut().enumerate() {
            let a = b
                .column(i)
                .as_primitive_opt::<Int64Type>()
                .ok_or_else(|| anyhow!("{} is not int64", names[i]))?;
            if let Some(v) = aggregate::max(a) {
                *m = Some(m.map_or(v, |m| m.max(v)));
            }
        }
        Ok(())
    })?;
    Ok(QueryResult {
        columns: names.iter().map(|n| format!("max_{n}")).collect(),
        rows: vec![
            max.into_iter()
                .map(|m| m.map_or(Value::Null, Value::Int))
                .collect(),
        ],
        stats,
    })
}
