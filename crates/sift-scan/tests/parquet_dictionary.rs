//! `read_dictionary` on Parquet files: string and binary columns come back as the same
//! `Dictionary(Int32, type)` arrays, with the same values, as on the equivalent Sift file
//! and as the plain read — whether the Parquet pages are dictionary-encoded (the reader
//! hands out their dictionary), stored plain (the reader builds a dictionary), or switch
//! from one to the other inside a column chunk, with nulls, and with filters on the
//! dictionary columns themselves.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::Path;
use std::sync::Arc;

use arrow::array::*;
use arrow::compute::concat_batches;
use arrow::compute::kernels::cast::cast;
use arrow::datatypes::*;
use arrow::record_batch::RecordBatch;
use parquet::basic::Encoding;
use parquet::file::properties::WriterProperties;
use parquet::file::reader::{FileReader, SerializedFileReader};
use sift_scan::{Expr, Literal, Table, col};

const ROWS: usize = 5000;

/// The columns `read_dictionary` is asked for.
const DICT_COLS: [&str; 6] = ["s", "s_nn", "s_hi", "bin", "large", "view"];

fn data_type(name: &str) -> DataType {
    match name {
        "n" => DataType::Int64,
        "bin" => DataType::Binary,
        "large" => DataType::LargeUtf8,
        "view" => DataType::Utf8View,
        _ => DataType::Utf8,
    }
}

/// Low-cardinality strings with nulls and empty strings, a non-null column of 13 values,
/// a high-cardinality column, non-UTF-8 binary, and the large and view string types.
fn batch() -> RecordBatch {
    let words = ["apple", "banana", "", "cherry", "dåte", "elderberry", "fig"];
    let s = |i: usize| (i % 7 != 3).then(|| words[(i * 5 + i / 11) % words.len()]);
    let n = Int64Array::from_iter_values((0..ROWS).map(|i| i as i64));
    let plain = StringArray::from_iter((0..ROWS).map(s));
    let s_nn = StringArray::from_iter_values((0..ROWS).map(|i| format!("k{}", i % 13)));
    let s_hi = StringArray::from_iter_values((0..ROWS).map(|i| format!("u{}-{}", i % 1700, i % 3)));
    let bin = BinaryArray::from_iter(
        (0..ROWS).map(|i| (i % 5 != 0).then(|| vec![0xff, (i % 9) as u8, 0x80])),
    );
    let large = LargeStringArray::from_iter((0..ROWS).map(|i| s(i + 2)));
    let view = StringViewArray::from_iter((0..ROWS).map(|i| s(i + 4)));
    let columns: Vec<ArrayRef> = vec![
        Arc::new(n),
        Arc::new(plain),
        Arc::new(s_nn),
        Arc::new(s_hi),
        Arc::new(bin),
        Arc::new(large),
        Arc::new(view),
    ];
    let fields: Vec<Field> = ["n", "s", "s_nn", "s_hi", "bin", "large", "view"]
        .iter()
        .map(|&name| Field::new(name, data_type(name), name != "n" && name != "s_nn"))
        .collect();
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap()
}

/// The Parquet layouts: how the string pages are stored.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Layout {
    /// Dictionary-encoded pages (the writer's default).
    Dictionary,
    /// Plain pages only (`set_dictionary_enabled(false)`).
    Plain,
    /// A dictionary page too small for the larger columns: their chunks start
    /// dictionary-encoded and continue plain.
    Mixed,
}

fn write_parquet(path: &Path, batch: &RecordBatch, layout: Layout) {
    let mut props = WriterProperties::builder()
        .set_max_row_group_row_count(Some(2048))
        .set_write_batch_size(64)
        .set_data_page_row_count_limit(256);
    props = match layout {
        Layout::Dictionary => props,
        Layout::Plain => props.set_dictionary_enabled(false),
        Layout::Mixed => props.set_dictionary_page_size_limit(64),
    };
    let file = std::fs::File::create(path).unwrap();
    let mut w =
        parquet::arrow::ArrowWriter::try_new(file, batch.schema(), Some(props.build())).unwrap();
    w.write(batch).unwrap();
    w.close().unwrap();
}

/// Data-page encodings of column `name` over all row groups (checks that a layout is
/// what it claims to be).
fn data_page_encodings(path: &Path, name: &str) -> Vec<Encoding> {
    let reader = SerializedFileReader::new(std::fs::File::open(path).unwrap()).unwrap();
    let meta = reader.metadata();
    let c = (0..meta.file_metadata().schema_descr().num_columns())
        .find(|&c| meta.file_metadata().schema_descr().column(c).name() == name)
        .unwrap();
    let mut out: Vec<Encoding> = Vec::new();
    for g in meta.row_groups() {
        let mask = g
            .column(c)
            .page_encoding_stats_mask()
            .expect("page encodings");
        out.extend(mask.encodings());
    }
    out.sort_by_key(|e| format!("{e:?}"));
    out.dedup();
    out
}

/// One scan of `path`: the batches joined, and the scan's output schema.
fn run(path: &Path, filter: Option<&Expr>, dictionary: bool) -> (RecordBatch, SchemaRef) {
    let table = Table::open(path).unwrap();
    let mut b = table.scan();
    if let Some(f) = filter {
        b = b.filter(f.clone());
    }
    if dictionary {
        b = b.read_dictionary(DICT_COLS);
    }
    let scan = b.build().unwrap();
    let schema = scan.schema();
    let batches = scan.collect::<Result<Vec<_>, _>>().unwrap();
    for batch in &batches {
        assert_eq!(batch.schema(), schema);
    }
    (concat_batches(&schema, &batches).unwrap(), schema)
}

/// `b` with its dictionary columns cast back to their value types, after checking that
/// each is `Dictionary(Int32, the column's type)`.
fn plain(b: &RecordBatch, what: &str) -> RecordBatch {
    let mut fields = Vec::new();
    let mut columns = Vec::new();
    for (f, c) in b.schema().fields().iter().zip(b.columns()) {
        let dt = data_type(f.name());
        if DICT_COLS.contains(&f.name().as_str()) {
            let want = DataType::Dictionary(Box::new(DataType::Int32), Box::new(dt.clone()));
            assert_eq!(f.data_type(), &want, "{what}: field {}", f.name());
            assert_eq!(c.data_type(), &want, "{what}: column {}", f.name());
            columns.push(cast(c, &dt).unwrap());
        } else {
            columns.push(c.clone());
        }
        fields.push(f.as_ref().clone().with_data_type(dt));
    }
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap()
}

fn filters() -> Vec<Option<Expr>> {
    vec![
        None,
        // Part of each row group, on a column not read as a dictionary.
        Some(
            col("n")
                .gte(Literal::Int(700))
                .and(col("n").lt(Literal::Int(3100))),
        ),
        // On the dictionary columns themselves (read plain for the filter).
        Some(col("s").in_list(["banana", "", "fig"])),
        Some(col("s").is_null().or(col("s_hi").like("u1%"))),
        Some(col("s_nn").eq(Literal::Str("k3".into()))),
        Some(
            col("large")
                .is_not_null()
                .and(col("view").eq(Literal::Str("dåte".into()))),
        ),
    ]
}

#[test]
fn read_dictionary_on_parquet_matches_sift_and_the_plain_read() {
    let dir = tempfile::tempdir().unwrap();
    let batch = batch();
    let sift = dir.path().join("t.sift");
    common::write_sift(&sift, &batch, 1500);
    for layout in [Layout::Dictionary, Layout::Plain, Layout::Mixed] {
        let pq = dir.path().join(format!("{layout:?}.parquet"));
        write_parquet(&pq, &batch, layout);
        let encodings = data_page_encodings(&pq, "s_hi");
        let has_dict = encodings.contains(&Encoding::RLE_DICTIONARY);
        let has_plain = encodings.contains(&Encoding::PLAIN);
        let expected = match layout {
            Layout::Dictionary => (true, false),
            Layout::Plain => (false, true),
            Layout::Mixed => (true, true),
        };
        assert_eq!((has_dict, has_plain), expected, "{layout:?}: {encodings:?}");

        for filter in filters() {
            let what = format!("{layout:?}, filter {filter:?}");
            let (pq_dict, pq_schema) = run(&pq, filter.as_ref(), true);
            let (sift_dict, sift_schema) = run(&sift, filter.as_ref(), true);
            let (pq_plain, _) = run(&pq, filter.as_ref(), false);
            let expected = common::filter_batch(&batch, filter.as_ref());
            assert!(expected.num_rows() > 0, "{what}: the filter keeps no rows");
            assert_eq!(pq_schema, sift_schema, "{what}: schemas");
            let got = plain(&pq_dict, &what);
            assert_eq!(got, pq_plain, "{what}: against the plain read");
            assert_eq!(got, plain(&sift_dict, &what), "{what}: against Sift");
            assert_eq!(got, expected, "{what}: against the reference");
        }
    }
}

/// The dictionary is the row group's, not rebuilt from the selected rows: a filter keeping
/// one value of `s_nn` still returns keys into all 13 (the Parquet reader's dictionary,
/// or the one it builds from plain pages over the whole row group).
#[test]
fn read_dictionary_on_parquet_keeps_the_row_group_dictionary() {
    let dir = tempfile::tempdir().unwrap();
    let batch = batch();
    for layout in [Layout::Dictionary, Layout::Plain, Layout::Mixed] {
        let pq = dir.path().join(format!("{layout:?}.parquet"));
        write_parquet(&pq, &batch, layout);
        let filter = col("s_nn").eq(Literal::Str("k3".into()));
        let table = Table::open(&pq).unwrap();
        let scan = table.scan().filter(filter).read_dictionary(["s_nn"]);
        let mut batches = 0;
        for b in scan {
            let b = b.unwrap();
            let c = b.column_by_name("s_nn").unwrap();
            let d = c.as_dictionary::<Int32Type>();
            assert_eq!(d.values().len(), 13, "{layout:?}");
            let strings = cast(c, &DataType::Utf8).unwrap();
            assert!(strings.as_string::<i32>().iter().all(|s| s == Some("k3")));
            batches += 1;
        }
        assert_eq!(batches, 3, "{layout:?}: one batch per row group");
    }
}

/// A column that is both filtered on and projected plain while another column is read as
/// a dictionary, and a file from parquet-testing whose string column is dictionary-encoded.
#[test]
fn read_dictionary_on_parquet_testing_file() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/parquet-testing/data/alltypes_dictionary.parquet");
    assert!(path.is_file(), "{} is missing", path.display());
    let table = Table::open(&path).unwrap();
    let schema = table.schema();
    let strings: Vec<String> = schema
        .fields()
        .iter()
        .filter(|f| matches!(f.data_type(), DataType::Utf8 | DataType::Binary))
        .map(|f| f.name().clone())
        .collect();
    assert!(!strings.is_empty());
    let read = |dictionary: bool| {
        let mut b = table.scan();
        if dictionary {
            b = b.read_dictionary(strings.clone());
        }
        let scan = b.build().unwrap();
        let schema = scan.schema();
        let batches = scan.collect::<Result<Vec<_>, _>>().unwrap();
        concat_batches(&schema, &batches).unwrap()
    };
    let (dict, plain_read) = (read(true), read(false));
    assert!(dict.num_rows() > 0);
    for name in &strings {
        let d = dict.column_by_name(name).unwrap();
        let p = plain_read.column_by_name(name).unwrap();
        let want = DataType::Dictionary(Box::new(DataType::Int32), Box::new(p.data_type().clone()));
        assert_eq!(d.data_type(), &want, "{name}");
        assert_eq!(&cast(d, p.data_type()).unwrap(), p, "{name}");
    }
}
