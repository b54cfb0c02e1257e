//! Scans of nested columns: filters on a struct's fields evaluated like any column, nested
//! columns (struct, list, map) projected at the selected rows only, checked against arrow
//! compute on the arrays the file was written from.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use arrow::array::*;
use arrow::buffer::NullBuffer;
use arrow::compute::{concat_batches, filter_record_batch, is_null};
use arrow::datatypes::*;
use arrow::record_batch::RecordBatch;
use sift_format::{SiftWriter, WriteOptions};
use sift_scan::{ScanStats, Table, col, parse_filter};

/// Rows of events: an id, a struct `user {id, name}` (a tenth null), a list of tags
/// (some null, some empty) and a map of counters.
fn events(n: usize) -> RecordBatch {
    let ids = Int64Array::from_iter_values(0..n as i64);
    let user_id =
        Int64Array::from_iter((0..n).map(|i| (i % 13 != 5).then_some((i * 7 % 1000) as i64)));
    let names = StringArray::from_iter((0..n).map(|i| Some(format!("user{}", i % 97))));
    let user_nulls: Vec<bool> = (0..n).map(|i| i % 10 != 3).collect();
    let user = StructArray::try_new(
        Fields::from(vec![
            Field::new("id", DataType::Int64, true),
            Field::new("name", DataType::Utf8, true),
        ]),
        vec![Arc::new(user_id), Arc::new(names)],
        Some(user_nulls.into()),
    )
    .unwrap();
    let words = ["red", "green", "blue", "amber", "violet"];
    let mut tags = ListBuilder::new(StringBuilder::new());
    for i in 0..n {
        match i % 17 {
            0 => tags.append_null(),
            1 => tags.append(true),
            k => {
                for j in 0..k % 6 {
                    tags.values().append_value(words[(i + j) % 5]);
                }
                tags.append(true);
            }
        }
    }
    let mut counters = MapBuilder::new(None, StringBuilder::new(), Int32Builder::new());
    for i in 0..n {
        if i % 9 == 4 {
            counters.append(false).unwrap();
            continue;
        }
        for j in 0..i % 3 {
            counters.keys().append_value(format!("c{j}"));
            counters.values().append_value((i * j) as i32);
        }
        counters.append(true).unwrap();
    }
    RecordBatch::try_from_iter([
        ("id", Arc::new(ids) as ArrayRef),
        ("user", Arc::new(user)),
        ("tags", Arc::new(tags.finish())),
        ("counters", Arc::new(counters.finish())),
    ])
    .unwrap()
}

fn write(path: &std::path::Path, batch: &RecordBatch, block_rows: usize) {
    let options = WriteOptions {
        block_rows,
        ..Default::default()
    };
    let mut w = SiftWriter::create(path, batch.schema(), options).unwrap();
    w.write(batch).unwrap();
    w.finish().unwrap();
}

fn scan_all(table: &Table, filter: &str, project: &[&str]) -> (RecordBatch, ScanStats) {
    let mut scan = table
        .scan()
        .project(project.iter().copied())
        .filter(parse_filter(filter).unwrap())
        .build()
        .unwrap();
    let schema = scan.schema();
    let batches: Vec<RecordBatch> = scan.by_ref().map(Result::unwrap).collect();
    (
        concat_batches(&schema, &batches).unwrap(),
        scan.stats().clone(),
    )
}

/// `user.id`, null where `user` is.
fn user_id(batch: &RecordBatch) -> ArrayRef {
    let user = batch.column_by_name("user").unwrap().as_struct();
    let id = user.column(0).clone();
    let nulls = NullBuffer::union(user.nulls(), id.nulls());
    make_array(id.to_data().into_builder().nulls(nulls).build().unwrap())
}

#[test]
fn filters_on_struct_fields_and_nested_projections_equal_arrow() {
    let n = 20_000;
    let batch = events(n);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("events.sift");
    write(&path, &batch, 4096);
    let table = Table::open(&path).unwrap();
    // The table's schema is the written one: nested columns whole.
    assert_eq!(table.schema().fields().len(), 4);
    assert_eq!(
        table.schema().field(1).data_type(),
        batch.schema().field(1).data_type()
    );

    let id = user_id(&batch);
    let cases: Vec<(&str, BooleanArray)> = vec![
        (
            "user.id < 40",
            arrow::compute::kernels::cmp::lt(&id, &Int64Array::new_scalar(40)).unwrap(),
        ),
        ("user.id is null", is_null(&id).unwrap()),
        ("user is null", is_null(batch.column(1)).unwrap()),
        ("tags is null and id < 5000", {
            let a = is_null(batch.column(2)).unwrap();
            let b =
                arrow::compute::kernels::cmp::lt(batch.column(0), &Int64Array::new_scalar(5000))
                    .unwrap();
            arrow::compute::and(&a, &b).unwrap()
        }),
        ("user.name = 'user7'", {
            let user = batch.column(1).as_struct();
            let names = user.column(1).as_string::<i32>();
            (0..n)
                .map(|i| Some(user.is_valid(i) && names.value(i) == "user7"))
                .collect()
        }),
    ];
    for (filter, mask) in cases {
        // Null comparisons are not matches.
        let mask: BooleanArray = mask.iter().map(|v| Some(v == Some(true))).collect();
        let want = filter_record_batch(&batch, &mask).unwrap();
        let (got, _) = scan_all(&table, filter, &["id", "user", "tags", "counters"]);
        assert_eq!(got.num_rows(), want.num_rows(), "{filter}");
        for c in 0..4 {
            assert!(
                got.column(c).to_data() == want.column(c).to_data(),
                "{filter}: column {c}"
            );
        }
    }
    // A struct's field is projected like a column.
    let (got, _) = scan_all(&table, "id < 100", &["user.id"]);
    assert!(got.column(0).to_data() == id.slice(0, 100).to_data());
}

/// A selective filter decodes the lists' lengths and the selected rows' elements only.
#[test]
fn a_selective_filter_decodes_only_the_selected_elements() {
    let n = 20_000;
    let batch = events(n);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("events.sift");
    write(&path, &batch, 65_536);
    let table = Table::open(&path).unwrap();
    let (got, stats) = scan_all(&table, "id < 200", &["tags"]);
    assert_eq!(got.num_rows(), 200);
    let tags = batch.column(2).as_list::<i32>();
    let selected: usize = (0..200).map(|i| tags.value_length(i) as usize).sum();
    let all = tags.values().len();
    // Lengths of every row (one chunk), then only the selected rows' elements.
    assert_eq!(stats.values_decoded, (n + selected) as u64, "{stats}");
    assert!(selected * 50 < all, "{selected} of {all}");
}

#[test]
fn list_elements_are_not_columns_of_their_own() {
    let batch = events(100);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("events.sift");
    write(&path, &batch, 64);
    let table = Table::open(&path).unwrap();
    for scan in [
        table.scan().project(["tags.item"]),
        table.scan().filter(col("tags.item").eq("red")),
        table.scan().filter(col("counters.entries.keys").eq("c1")),
    ] {
        let err = scan.build().err().expect("scan of list elements started");
        assert!(err.to_string().contains("holds list elements"), "{err}");
    }
    let err = table
        .scan()
        .filter(col("tags").eq("red"))
        .build()
        .err()
        .unwrap();
    assert!(err.to_string().contains("tags"), "{err}");
}
