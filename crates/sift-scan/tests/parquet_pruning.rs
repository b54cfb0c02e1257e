//! Pruning of Parquet files by their own metadata: row groups by column statistics, pages
//! by the page index, row groups by Bloom filters for equality and IN. Each case checks
//! the rows against the reference evaluator and that the pruning really happened (the
//! scan's statistics), and the same file written without the metadata gives the same rows.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::Path;
use std::sync::Arc;

use arrow::array::*;
use arrow::datatypes::*;
use arrow::record_batch::RecordBatch;
use parquet::file::properties::EnabledStatistics;
use sift_scan::{Expr, ScanStats, Table, col, parse_filter};

use common::ParquetLayout;

const GROUPS: usize = 8;
const GROUP_ROWS: usize = 1000;
const PAGE_ROWS: usize = 100;

/// `id` sorted; `u` distinct pseudo-random even integers and `s` strings made of them
/// (only a Bloom filter can rule a value out of a row group); `n` null in the first
/// half of the row groups; `f` floats with zeros of both signs and NaN.
fn batch() -> RecordBatch {
    let rows = GROUPS * GROUP_ROWS;
    let id = Int64Array::from_iter_values(0..rows as i64);
    let u = Int64Array::from_iter_values((0..rows as i64).map(|i| (i * 7_919) % 1_000_003 * 2));
    let s = StringArray::from_iter_values(u.values().iter().map(|v| format!("key-{v:07}")));
    let n = Int32Array::from_iter(
        (0..rows).map(|i| (i >= rows / 2 && i % 3 != 0).then_some(i as i32 % 50)),
    );
    let f = Float64Array::from_iter_values((0..rows).map(|i| match i % 97 {
        0 => f64::NAN,
        1 => -0.0,
        2 => 0.0,
        k => (k as f64 - 50.0) * (1.0 + (i / GROUP_ROWS) as f64),
    }));
    let schema = Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("u", DataType::Int64, false),
        Field::new("s", DataType::Utf8, false),
        Field::new("n", DataType::Int32, true),
        Field::new("f", DataType::Float64, false),
    ]);
    let columns: Vec<ArrayRef> = vec![
        Arc::new(id),
        Arc::new(u),
        Arc::new(s),
        Arc::new(n),
        Arc::new(f),
    ];
    RecordBatch::try_new(Arc::new(schema), columns).unwrap()
}

fn write(path: &Path, batch: &RecordBatch, statistics: EnabledStatistics, bloom: bool) -> Table {
    let layout = ParquetLayout {
        statistics,
        bloom_filters: bloom,
        ..ParquetLayout::new(GROUP_ROWS, PAGE_ROWS)
    };
    common::write_parquet_layout(path, batch.schema(), std::slice::from_ref(batch), layout);
    Table::open(path).unwrap()
}

/// `batch` written in `dir` with `statistics` (and Bloom filters if `bloom`), and
/// without statistics, Bloom filters or a page index.
fn with_and_without_statistics(
    dir: &Path,
    batch: &RecordBatch,
    statistics: EnabledStatistics,
    bloom: bool,
) -> (Table, Table) {
    (
        write(&dir.join("pruned.parquet"), batch, statistics, bloom),
        write(
            &dir.join("bare.parquet"),
            batch,
            EnabledStatistics::None,
            false,
        ),
    )
}

/// Scans `table` with `filter`, checks the rows against the reference and returns the
/// scan's statistics.
fn scan(table: &Table, batch: &RecordBatch, filter: &str) -> ScanStats {
    scan_expr(table, batch, parse_filter(filter).unwrap())
}

fn scan_expr(table: &Table, batch: &RecordBatch, expr: Expr) -> ScanStats {
    let filter = expr.to_string();
    let want = common::filter_batch(batch, Some(&expr));
    let mut scan = table.scan().filter(expr).build().unwrap();
    let got: Vec<RecordBatch> = scan.by_ref().map(|b| b.unwrap()).collect();
    let got = arrow::compute::concat_batches(&batch.schema(), &got).unwrap();
    assert_eq!(got, want, "{filter}");
    scan.stats().clone()
}

#[test]
fn row_groups_pages_and_bloom_filters_prune() {
    let dir = tempfile::tempdir().unwrap();
    let batch = batch();
    let (pruned, bare) =
        with_and_without_statistics(dir.path(), &batch, EnabledStatistics::Page, true);
    let everything = scan(&bare, &batch, "id >= 0");
    assert_eq!(everything.rows_scanned, 8000, "{everything}");

    // Row groups by statistics, then pages by the page index: rows 2050..=2120 lie in
    // pages 2000..2100 and 2100..2200 of row group 2.
    let s = scan(&pruned, &batch, "id between 2050 and 2120");
    assert_eq!((s.blocks_total, s.blocks_pruned), (8, 7), "{s}");
    assert_eq!((s.rows_scanned, s.rows_matched), (200, 71), "{s}");
    assert!(
        s.bytes_read * 8 < everything.bytes_read,
        "{s} vs {everything}"
    );
    let s = scan(&bare, &batch, "id between 2050 and 2120");
    assert_eq!((s.blocks_pruned, s.rows_scanned), (0, 8000), "{s}");

    // An OR of two page ranges in different row groups; an AND whose sides fall in
    // different pages of one row group leaves nothing to read.
    let s = scan(&pruned, &batch, "id < 150 or id >= 7990");
    assert_eq!((s.blocks_pruned, s.rows_scanned), (6, 300), "{s}");
    let s = scan(&pruned, &batch, "id < 3050 and id > 3160 or id = 5");
    assert_eq!(
        (s.blocks_pruned, s.rows_scanned, s.rows_matched),
        (7, 100, 1),
        "{s}"
    );

    // Bloom filters: u's values are spread over every row group's [min, max].
    let probe = batch.column(1).as_primitive::<Int64Type>().value(4321);
    let s = scan(&pruned, &batch, &format!("u = {probe}"));
    assert_eq!(s.rows_matched, 1, "{s}");
    assert!(s.blocks_pruned >= 6, "Bloom filters pruned too little: {s}");
    let s = scan(&bare, &batch, &format!("u = {probe}"));
    assert_eq!(s.blocks_pruned, 0, "{s}");
    let s = scan(&pruned, &batch, &format!("u in ({probe}, 1, 3, 5)"));
    assert!(s.blocks_pruned >= 6, "{s}");
    // Odd values are in no row group; a negated IN is never pruned by a Bloom filter.
    let s = scan(&pruned, &batch, "u = 77");
    assert!(s.blocks_pruned >= 7, "{s}");
    let s = scan(&pruned, &batch, "u not in (77)");
    assert_eq!((s.blocks_pruned, s.rows_matched), (0, 8000), "{s}");
    let s = scan(&pruned, &batch, &format!("s = 'key-{probe:07}'"));
    assert_eq!(s.rows_matched, 1, "{s}");
    assert!(s.blocks_pruned >= 6, "{s}");
    let s = scan(&pruned, &batch, "s in ('key-0000001', 'key-0500001')");
    assert!(s.blocks_pruned >= 7, "{s}");

    // Null counts: n is null only in the first half of the row groups, and in every
    // third row of the second half.
    let s = scan(&pruned, &batch, "n > 40");
    assert!(s.blocks_pruned >= 4, "{s}");
    let s = scan(&pruned, &batch, "n is not null");
    assert!(s.blocks_pruned >= 4, "{s}");

    // Floats: zeros of either sign match both; NaN is never in the bounds.
    let f = || col("f");
    for filter in [
        f().eq(0.0),
        f().eq(-0.0),
        f().lte(0.0),
        f().gte(0.0),
        f().lt(-0.0),
        f().gt(1000.0),
        f().lt(-200.0),
    ] {
        let a = scan_expr(&pruned, &batch, filter.clone());
        let b = scan_expr(&bare, &batch, filter.clone());
        assert_eq!(a.rows_matched, b.rows_matched, "{filter}: {a} vs {b}");
    }
    let s = scan_expr(&pruned, &batch, f().lt(-200.0));
    assert!(s.blocks_pruned >= 4, "{s}");
}

#[test]
fn a_row_range_reads_only_its_pages() {
    let dir = tempfile::tempdir().unwrap();
    let batch = batch();
    let table = write(
        &dir.path().join("t.parquet"),
        &batch,
        EnabledStatistics::Page,
        false,
    );
    let read = |range: Option<std::ops::Range<u64>>| {
        let mut scan = table.scan().project(["id", "s"]);
        if let Some(r) = range {
            scan = scan.rows(r);
        }
        let mut scan = scan.build().unwrap();
        let batches: Vec<RecordBatch> = scan.by_ref().map(|b| b.unwrap()).collect();
        (batches, scan.stats().clone())
    };
    let (batches, s) = read(Some(1950..2210));
    let ids: Vec<i64> = batches
        .iter()
        .flat_map(|b| b.column(0).as_primitive::<Int64Type>().values().to_vec())
        .collect();
    assert_eq!(ids, (1950..2210).collect::<Vec<i64>>());
    assert_eq!((s.blocks_total, s.rows_scanned), (2, 260), "{s}");
    // Four pages of each column out of eighty, and the dictionaries of two row groups.
    let (_, all) = read(None);
    assert!(s.bytes_read * 4 < all.bytes_read, "{s} vs {all}");
}

/// One open table scanned by several threads at once: row groups whose columns the
/// `parquet` crate decodes (booleans, decimals) are read through handles of their own, so
/// the reads of one thread never move another's file position.
#[test]
fn one_table_scans_on_several_threads_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.parquet");
    let rows = GROUPS * GROUP_ROWS;
    let b = BooleanArray::from_iter((0..rows).map(|i| Some(i % 3 == 0)));
    let p = Decimal128Array::from_iter_values((0..rows).map(|i| (i as i128 * 37) % 100_000))
        .with_precision_and_scale(15, 2)
        .unwrap();
    let schema = Schema::new(vec![
        Field::new("b", DataType::Boolean, false),
        Field::new("p", DataType::Decimal128(15, 2), false),
    ]);
    let batch = RecordBatch::try_new(Arc::new(schema), vec![Arc::new(b), Arc::new(p)]).unwrap();
    let table = write(&path, &batch, EnabledStatistics::Chunk, false);
    let filter = "p between 100.00 and 250.50 or b = true";
    let single: Vec<RecordBatch> = table
        .scan()
        .filter(parse_filter(filter).unwrap())
        .into_iter()
        .map(|b| b.unwrap())
        .collect();
    let want = arrow::compute::concat_batches(&batch.schema(), &single).unwrap();
    assert_eq!(
        want,
        common::filter_batch(&batch, Some(&parse_filter(filter).unwrap()))
    );
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                for _ in 0..5 {
                    let got: Vec<RecordBatch> = table
                        .scan()
                        .filter(parse_filter(filter).unwrap())
                        .into_iter()
                        .map(|b| b.unwrap())
                        .collect();
                    let got = arrow::compute::concat_batches(&batch.schema(), &got).unwrap();
                    assert_eq!(got, want);
                }
            });
        }
    });
}

/// Bloom filters are read on their first probe; a scan on several threads reads those of
/// several row groups at once, and each must be read from its own bytes (one read from the
/// wrong ones could rule out a row group holding the value).
#[test]
fn bloom_filters_read_on_several_threads_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.parquet");
    let batch = batch();
    write(&path, &batch, EnabledStatistics::None, true);
    // One value of `u` from each row group, and one of `s` from every other one.
    let us: Vec<String> = (0..GROUPS)
        .map(|g| {
            let i = g * GROUP_ROWS + 7;
            format!("{}", batch.column(1).as_primitive::<Int64Type>().value(i))
        })
        .collect();
    let filter = parse_filter(&format!("u in ({})", us.join(", "))).unwrap();
    let want = common::filter_batch(&batch, Some(&filter));
    assert_eq!(want.num_rows(), GROUPS);
    for _ in 0..60 {
        let table = Table::open(&path).unwrap();
        let got: Vec<RecordBatch> = table
            .scan()
            .filter(filter.clone())
            .threads(4)
            .into_iter()
            .map(|b| b.unwrap())
            .collect();
        let got = arrow::compute::concat_batches(&batch.schema(), &got).unwrap();
        assert_eq!(got, want);
    }
}

/// Tests the statistics prove true for every row of a row group are not evaluated on it:
/// a scan projecting another column reads only that column there, and its rows are the
/// reference's (a range test proved on a column with nulls becomes its IS NOT NULL).
#[test]
fn tests_proven_true_by_statistics_are_not_evaluated() {
    let dir = tempfile::tempdir().unwrap();
    let batch = batch();
    let (pruned, bare) =
        with_and_without_statistics(dir.path(), &batch, EnabledStatistics::Chunk, false);
    let read = |table: &Table, filter: Option<&str>| {
        let mut builder = table.scan().project(["u"]);
        if let Some(f) = filter {
            builder = builder.filter(parse_filter(f).unwrap());
        }
        let mut scan = builder.build().unwrap();
        let got: Vec<RecordBatch> = scan.by_ref().map(|b| b.unwrap()).collect();
        let got = arrow::compute::concat_batches(&got[0].schema(), &got).unwrap();
        let expr = filter.map(|f| parse_filter(f).unwrap());
        let want = common::filter_batch(&batch, expr.as_ref());
        assert_eq!(got.column(0), want.column(1), "{filter:?}");
        scan.stats().clone()
    };
    let u_only = read(&pruned, None);
    // Holds for every row group: only u is read.
    let s = read(&pruned, Some("id >= 0 and id <= 7999"));
    assert_eq!(s.bytes_read, u_only.bytes_read, "{s} vs {u_only}");
    let evaluated = read(&bare, Some("id >= 0 and id <= 7999"));
    assert!(evaluated.bytes_read > s.bytes_read, "{evaluated} vs {s}");
    // Holds for half the row groups and prunes the other half.
    let s = read(&pruned, Some("id < 4000"));
    assert_eq!((s.blocks_pruned, s.rows_matched), (4, 4000), "{s}");
    assert_eq!(s.bytes_read * 2, u_only.bytes_read, "{s} vs {u_only}");
    // A negated range outside every row group's bounds holds too.
    let s = read(&pruned, Some("id not between -10 and -1"));
    assert_eq!(s.bytes_read, u_only.bytes_read, "{s}");
    // n is all null in the first half of the row groups: IS NULL holds there (and is
    // evaluated in the second half).
    let s = read(&pruned, Some("n is null and id < 4000"));
    assert_eq!(s.bytes_read * 2, u_only.bytes_read, "{s} vs {u_only}");
    read(&pruned, Some("n is null"));
    // A range holding n's bounds holds wherever n is not null (the second half; the
    // first, all null, is pruned), and one inside them is evaluated.
    let s = read(&pruned, Some("n >= 0 and n < 50"));
    assert_eq!(s.blocks_pruned, 4, "{s}");
    read(&pruned, Some("n >= 10 and n < 50"));
    read(&pruned, Some("n >= 0 or id < 100"));
}
