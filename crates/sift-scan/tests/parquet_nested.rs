//! Nested Parquet columns (lists, structs, lists of lists, lists in structs, maps) scanned:
//! projected and tested for nulls, with the filter's selection pushed into their reader.
//! Each case checks the rows against arrow-rs's read of the whole file and the reference
//! filter; one checks from the bytes read that pages of a nested column holding no
//! selected row are skipped.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::Path;
use std::sync::Arc;

use arrow::array::builder::{Int32Builder, Int64Builder, ListBuilder, MapBuilder, StringBuilder};
use arrow::array::*;
use arrow::datatypes::*;
use arrow::record_batch::RecordBatch;
use parquet::basic::Compression;
use parquet::file::properties::{EnabledStatistics, WriterProperties, WriterVersion};
use sift_scan::{Expr, ScanStats, Table, col, parse_filter};

const ROWS: usize = 30_000;

fn mix(i: usize) -> u64 {
    (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 40
}

/// `id`: the row number; `k`: 64 values spread over the rows; `x`, `y`: equal only at
/// rows 12,000–12,199 (a selection no page index predicts); `tags`: lists of 0–6 longs,
/// null lists and null elements; `s`: a nullable struct of a nullable int and a list of
/// strings; `grid`: lists of lists of ints; `m`: maps of 0–4 string keys to nullable
/// longs, some maps null.
fn batch() -> RecordBatch {
    let id = Int64Array::from_iter_values(0..ROWS as i64);
    let k = Int64Array::from_iter_values((0..ROWS).map(|i| (mix(i) % 64) as i64));
    let x = Int32Array::from_iter_values((0..ROWS).map(|i| (mix(i + 1) % 4) as i32));
    let y = Int32Array::from_iter_values((0..ROWS).map(|i| {
        let x = (mix(i + 1) % 4) as i32;
        if (12_000..12_200).contains(&i) {
            x
        } else {
            x + 1
        }
    }));
    let mut tags = ListBuilder::new(Int64Builder::new());
    for i in 0..ROWS {
        if i % 13 == 7 {
            tags.append_null();
            continue;
        }
        for j in 0..mix(i + 2) % 7 {
            let v = (mix(i * 7 + j as usize) % 1000) as i64;
            tags.values().append_option((v % 11 != 3).then_some(v));
        }
        tags.append(true);
    }
    let mut a = Int32Builder::new();
    let mut names = ListBuilder::new(StringBuilder::new());
    for i in 0..ROWS {
        a.append_option((i % 5 != 1).then_some(i as i32 * 3));
        for j in 0..mix(i + 4) % 4 {
            names
                .values()
                .append_value(format!("n{}-{j}", mix(i + 5) % 300));
        }
        names.append(i % 9 != 2);
    }
    let a: ArrayRef = Arc::new(a.finish());
    let names: ArrayRef = Arc::new(names.finish());
    let struct_fields = Fields::from(vec![
        Field::new("a", DataType::Int32, true),
        Field::new("names", names.data_type().clone(), true),
    ]);
    let s = StructArray::new(
        struct_fields,
        vec![a, names],
        Some((0..ROWS).map(|i| i % 17 != 3).collect()),
    );
    let mut grid = ListBuilder::new(ListBuilder::new(Int32Builder::new()));
    for i in 0..ROWS {
        for j in 0..mix(i + 6) % 3 {
            for e in 0..(mix(i + j as usize) % 4) {
                grid.values().values().append_value(e as i32 + i as i32);
            }
            grid.values().append(j != 1 || i % 4 != 0);
        }
        grid.append(i % 23 != 5);
    }
    let mut m = MapBuilder::new(None, StringBuilder::new(), Int64Builder::new());
    for i in 0..ROWS {
        for j in 0..mix(i + 8) % 5 {
            m.keys()
                .append_value(format!("key{}", (mix(i + j as usize) % 40)));
            m.values()
                .append_option((i % 6 != j as usize).then_some(i as i64 * 10 + j as i64));
        }
        m.append(i % 19 != 4).unwrap();
    }
    RecordBatch::try_from_iter([
        ("id", Arc::new(id) as ArrayRef),
        ("k", Arc::new(k)),
        ("x", Arc::new(x)),
        ("y", Arc::new(y)),
        ("tags", Arc::new(tags.finish())),
        ("s", Arc::new(s)),
        ("grid", Arc::new(grid.finish())),
        ("m", Arc::new(m.finish())),
    ])
    .unwrap()
}

fn write(path: &Path, batch: &RecordBatch, props: WriterProperties) -> Table {
    common::write_parquet_with(path, batch.schema(), std::slice::from_ref(batch), props);
    Table::open(path).unwrap()
}

/// Scans `expr` projecting `columns`; checks the rows against the reference.
fn scan(table: &Table, reference: &RecordBatch, columns: &[&str], expr: &Expr) -> ScanStats {
    let what = format!("{}: {expr} projecting {columns:?}", table.path().display());
    let project: Vec<usize> = columns
        .iter()
        .map(|c| reference.schema().index_of(c).unwrap())
        .collect();
    let want = common::filter_batch(reference, Some(expr))
        .project(&project)
        .unwrap();
    let mut scan = table
        .scan()
        .project(columns.iter().copied())
        .filter(expr.clone())
        .build()
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let got: Vec<RecordBatch> = scan.by_ref().map(|b| b.unwrap()).collect();
    let got = arrow::compute::concat_batches(&want.schema(), &got).unwrap();
    assert_eq!(got.num_rows(), want.num_rows(), "{what}");
    assert_eq!(got, want, "{what}");
    scan.stats().clone()
}

#[test]
fn nested_columns_equal_arrow_rs_at_every_selectivity() {
    let dir = tempfile::tempdir().unwrap();
    let batch = batch();
    let filters = [
        // Sparse (pushed into the nested columns' reader) and dense selections.
        "k = 5",
        "k < 2 and id > 3000",
        "k < 40",
        "id between 20000 and 20400",
        "x = y",
        "k >= 0",
    ];
    let mut filters: Vec<Expr> = filters.iter().map(|f| parse_filter(f).unwrap()).collect();
    filters.push(col("tags").is_null());
    filters.push(col("s").is_not_null().and(col("k").lt(3i64)));
    filters.push(col("grid").is_null().or(col("k").eq(9i64)));
    filters.push(col("m").is_not_null().and(col("k").gt(60i64)));
    // Pages v1 and v2, with and without a page index, dictionaries whole, falling back
    // to PLAIN or off, and compressed pages.
    let layouts = [
        (
            "small-pages-v1",
            500,
            WriterVersion::PARQUET_1_0,
            true,
            Some(1 << 20),
            None,
        ),
        (
            "small-pages-v2",
            700,
            WriterVersion::PARQUET_2_0,
            true,
            Some(1 << 20),
            None,
        ),
        (
            "no-page-index",
            2000,
            WriterVersion::PARQUET_1_0,
            false,
            Some(1 << 20),
            None,
        ),
        (
            "snappy-dictionary-fallback",
            600,
            WriterVersion::PARQUET_1_0,
            true,
            Some(256),
            Some(Compression::SNAPPY),
        ),
        (
            "zstd-v2-no-dictionary",
            900,
            WriterVersion::PARQUET_2_0,
            true,
            None,
            Some(Compression::ZSTD(Default::default())),
        ),
    ];
    for (name, page_rows, version, index, dictionary, compression) in layouts {
        let props = WriterProperties::builder()
            .set_data_page_row_count_limit(page_rows)
            .set_write_batch_size(page_rows.min(1024))
            .set_max_row_group_row_count(Some(ROWS / 3))
            .set_writer_version(version)
            .set_statistics_enabled(match index {
                true => EnabledStatistics::Page,
                false => EnabledStatistics::Chunk,
            })
            .set_dictionary_enabled(dictionary.is_some())
            .set_dictionary_page_size_limit(dictionary.unwrap_or(1 << 20))
            .set_compression(compression.unwrap_or(Compression::UNCOMPRESSED))
            .build();
        let path = dir.path().join(format!("{name}.parquet"));
        let table = write(&path, &batch, props);
        let reference = common::read_parquet(&path);
        assert_eq!(reference.num_rows(), ROWS);
        for f in &filters {
            scan(
                &table,
                &reference,
                &["id", "tags", "s", "grid", "m", "k"],
                f,
            );
            scan(&table, &reference, &["s"], f);
        }
    }
}

/// A nested column read at a selection clustered in a few pages (a comparison of two
/// columns, which no page index predicts) skips the other pages: far fewer bytes read
/// than when every row is selected (the filter's two small columns are read whole in
/// both).
#[test]
fn nested_columns_skip_pages_without_selected_rows() {
    let dir = tempfile::tempdir().unwrap();
    let batch = batch();
    let props = WriterProperties::builder()
        .set_data_page_row_count_limit(500)
        .set_write_batch_size(500)
        .set_statistics_enabled(EnabledStatistics::Page)
        .build();
    let path = dir.path().join("t.parquet");
    let table = write(&path, &batch, props);
    let reference = common::read_parquet(&path);
    let sparse = scan(
        &table,
        &reference,
        &["tags"],
        &parse_filter("x = y").unwrap(),
    );
    let dense = scan(
        &table,
        &reference,
        &["tags"],
        &parse_filter("x < y").unwrap(),
    );
    assert_eq!(sparse.rows_matched, 200);
    assert_eq!(dense.rows_matched as usize, ROWS - 200);
    assert!(
        sparse.bytes_read * 3 < dense.bytes_read,
        "selected pages only: {} bytes, all rows: {} bytes",
        sparse.bytes_read,
        dense.bytes_read
    );
}
