//! Nested columns: generated tables of structs, lists, large lists, fixed-size lists, maps
//! and dictionary leaves, nested and with nulls at every level, written in small blocks and
//! read back whole, at selected rows, and through a struct's leaf column; against the
//! arrays they were written from (built by arrow-json, independently of Sift).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, BooleanArray, FixedSizeListArray, Float64Array};
use arrow::datatypes::{DataType, Field, Fields, Int16Type, Schema, SchemaRef};
use arrow::record_batch::RecordBatch;
use proptest::prelude::*;
use serde_json::{Value, json};
use sift_bits::Bitmap;
use sift_format::{ColumnShape, SiftFile};

fn schema() -> SchemaRef {
    let item = |dt: DataType, nullable: bool| Arc::new(Field::new("item", dt, nullable));
    let s = Fields::from(vec![
        Field::new("a", DataType::Int64, true),
        Field::new("tags", DataType::List(item(DataType::Utf8, true)), true),
        Field::new("req", DataType::Int32, false),
    ]);
    let entries = Fields::from(vec![
        Field::new("keys", DataType::Utf8, false),
        Field::new("values", DataType::Int32, true),
    ]);
    let map = DataType::Map(
        Arc::new(Field::new("entries", DataType::Struct(entries), false)),
        false,
    );
    let ll = DataType::LargeList(item(DataType::List(item(DataType::Int32, true)), true));
    // Read as strings (arrow-json does not read dictionaries), then cast.
    Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("s", DataType::Struct(s), true),
        Field::new("m", map, true),
        Field::new("ll", ll, true),
        Field::new("d", DataType::List(item(DataType::Utf8, true)), true),
    ]))
}

/// The fixed-size list column (arrow-json does not read them): points of two doubles.
fn points(rows: &[u64]) -> (Field, ArrayRef) {
    let values: Float64Array = rows
        .iter()
        .flat_map(|&r| [r % 7 != 0, r % 5 != 0].map(|v| v.then_some((r % 1000) as f64 / 8.0)))
        .collect();
    let nulls = rows.iter().map(|r| r % 11 != 3).collect::<Vec<_>>();
    let item = Arc::new(Field::new("item", DataType::Float64, true));
    let array =
        FixedSizeListArray::try_new(item.clone(), 2, Arc::new(values), Some(nulls.into())).unwrap();
    (
        Field::new("pt", DataType::FixedSizeList(item, 2), true),
        Arc::new(array),
    )
}

/// One JSON row from a seed: each level null, empty or filled by its own bits.
fn row(i: usize, r: u64) -> Value {
    let bit = |k: u32| (r >> k) & 1 == 1;
    let words = ["alpha", "beta", "gamma", "delta", "epsilon"];
    let tags: Value = match (r >> 8) % 4 {
        0 => Value::Null,
        1 => json!([]),
        n => (0..n + (r >> 20) % 3)
            .map(|k| match (r >> (k + 30)) % 5 {
                0 => Value::Null,
                w => json!(words[w as usize]),
            })
            .collect(),
    };
    let s = match bit(0) && bit(1) {
        true => Value::Null,
        false => json!({
            "a": if bit(2) { Value::Null } else { json!((r >> 12) as i64 % 100_000 - 50_000) },
            "tags": tags,
            "req": (r % 1000) as i32,
        }),
    };
    let m = match (r >> 40) % 5 {
        0 => Value::Null,
        1 => json!({}),
        n => Value::Object(
            (0..n)
                .map(|k| {
                    let v = match (r >> (k + 44)) % 4 {
                        0 => Value::Null,
                        v => json!(v as i32 * 10),
                    };
                    (format!("k{k}"), v)
                })
                .collect(),
        ),
    };
    let ll = match (r >> 50) % 5 {
        0 => Value::Null,
        1 => json!([]),
        n => (0..n)
            .map(|k| match (r >> (k + 54)) % 4 {
                0 => Value::Null,
                1 => json!([]),
                m => (0..m).map(|x| json!(i as i64 * 3 + x as i64)).collect(),
            })
            .collect(),
    };
    let d = match (r >> 58) % 4 {
        0 => Value::Null,
        n => (0..n)
            .map(|k| json!(words[((r >> (k * 3)) % 5) as usize]))
            .collect(),
    };
    json!({"id": i as i64, "s": s, "m": m, "ll": ll, "d": d})
}

/// The table of `seeds`, built by arrow-json.
fn table(seeds: &[u64]) -> RecordBatch {
    let schema = schema();
    let text: String = seeds
        .iter()
        .enumerate()
        .map(|(i, &r)| format!("{}\n", row(i, r)))
        .collect();
    let reader = arrow_json::ReaderBuilder::new(schema.clone())
        .with_batch_size(seeds.len().max(1))
        .build(std::io::Cursor::new(text))
        .unwrap();
    let batches: Vec<RecordBatch> = reader.map(Result::unwrap).collect();
    let batch = arrow::compute::concat_batches(&schema, &batches).unwrap();
    let (pt_field, pt) = points(seeds);
    let dict = DataType::Dictionary(Box::new(DataType::Int16), Box::new(DataType::Utf8));
    let dict_list = DataType::List(Arc::new(Field::new("item", dict, true)));
    let mut fields: Vec<Field> = schema.fields().iter().map(|f| f.as_ref().clone()).collect();
    fields[4] = fields[4].clone().with_data_type(dict_list.clone());
    fields.push(pt_field);
    let mut columns = batch.columns().to_vec();
    columns[4] = arrow::compute::cast(&columns[4], &dict_list).unwrap();
    columns.push(pt);
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap()
}

fn boolean_of(bm: &Bitmap) -> BooleanArray {
    (0..bm.len()).map(|i| Some(bm.get(i))).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn nested_tables_round_trip(
        seeds in proptest::collection::vec(any::<u64>(), 0..300),
        block_rows in 1usize..120,
        pick in any::<u64>(),
    ) {
        let expected = table(&seeds);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nested.sift");
        common::write(&path, &expected.schema(), std::slice::from_ref(&expected), block_rows);
        let (file, actual) = common::read(&path);
        common::assert_same(&expected, &actual);

        // Each block at a selection of its rows, for every nested column, and the
        // struct's leaf `s.a` read as a column of its own.
        let mut first = 0;
        for b in 0..file.num_blocks() {
            let rows = file.block_rows(b).unwrap() as usize;
            let sel = Bitmap::from_bools(
                (0..rows).map(|i| common::hash(pick ^ (first + i) as u64).is_multiple_of(3)),
            );
            let part = expected.slice(first, rows);
            for name in ["s", "m", "ll", "d", "pt", "s.tags"] {
                let c = file.column_index(name).unwrap();
                prop_assert_eq!(file.column_shape(c).unwrap(), ColumnShape::Nested);
                let want = match name {
                    "s.tags" => part.column(1).as_struct().column(1).clone(),
                    _ => part.column_by_name(name).unwrap().clone(),
                };
                let want = arrow::compute::filter(&want, &boolean_of(&sel)).unwrap();
                let (got, counts) = file.read_nested(b, c, Some(&sel), true).unwrap();
                prop_assert!(got.to_data() == want.to_data(), "{name}, block {b}");
                prop_assert!(counts.values >= got.len() as u64);
            }
            let a = file.column_index("s.a").unwrap();
            prop_assert_eq!(file.column_shape(a).unwrap(), ColumnShape::Flat);
            let got = file.read_chunk(b, a).unwrap();
            let s = part.column(1).as_struct();
            let want = s.column(0);
            for i in 0..rows {
                prop_assert_eq!(got.is_valid(i), s.is_valid(i) && want.is_valid(i));
            }
            let item = file.column_index("ll.item.item").unwrap();
            prop_assert_eq!(file.column_shape(item).unwrap(), ColumnShape::Element);
            prop_assert!(file.read_chunk(b, item).is_err());
            first += rows;
        }
    }
}

/// A selection decodes only the selected rows' elements: the list's lengths (all of the
/// block's rows) plus the selected rows' elements, never the others.
#[test]
fn a_selection_decodes_only_the_selected_elements() {
    let n = 4000usize;
    let lists: Vec<Option<Vec<Option<i32>>>> = (0..n)
        .map(|i| Some((0..(i % 50) as i32).map(Some).collect()))
        .collect();
    let list = arrow::array::ListArray::from_iter_primitive::<arrow::datatypes::Int32Type, _, _>(
        lists.clone(),
    );
    let batch = RecordBatch::try_from_iter([("l", Arc::new(list) as ArrayRef)]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lists.sift");
    common::write(&path, &batch.schema(), std::slice::from_ref(&batch), n);
    let file = SiftFile::open(&path).unwrap();
    let sel = Bitmap::from_bools((0..n).map(|i| i % 100 == 7));
    let (got, counts) = file.read_nested(0, 0, Some(&sel), true).unwrap();
    let elements: usize = sel.iter_ones().map(|i| i % 50).sum();
    assert_eq!(got.len(), sel.count_ones());
    assert_eq!(counts.values, (n + elements) as u64);
    let all: usize = (0..n).map(|i| i % 50).sum();
    assert!(elements * 50 < all, "{elements} of {all}");
}

/// Dictionary leaves come back as dictionaries of the key type they were written with.
#[test]
fn dictionary_leaves_keep_their_key_type() {
    let batch = table(&[1, 2, 3, 99, 12345]);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.sift");
    common::write(&path, &batch.schema(), std::slice::from_ref(&batch), 2);
    let (_, actual) = common::read(&path);
    let d = actual.column_by_name("d").unwrap().as_list::<i32>();
    assert_eq!(
        d.values().data_type(),
        &DataType::Dictionary(Box::new(DataType::Int16), Box::new(DataType::Utf8))
    );
    let _ = d.values().as_dictionary::<Int16Type>();
}

/// A type nested deeper than the format allows is refused when the writer starts, naming
/// the column.
#[test]
fn nesting_deeper_than_the_limit_is_refused() {
    let mut dt = DataType::Int32;
    for _ in 0..=sift_format::MAX_NESTING {
        dt = DataType::Struct(Fields::from(vec![Field::new("x", dt, true)]));
    }
    let schema = Arc::new(Schema::new(vec![Field::new("deep", dt, true)]));
    let dir = tempfile::tempdir().unwrap();
    let err =
        sift_format::SiftWriter::create(dir.path().join("d.sift"), schema, Default::default())
            .err()
            .expect("writer accepted the schema")
            .to_string();
    assert!(
        err.contains("column 'deep") && err.contains("nests deeper than 64"),
        "{err}"
    );
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}
