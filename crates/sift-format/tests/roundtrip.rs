//! Round trips: Arrow batches → SiftWriter → SiftFile → Arrow, for every supported type,
//! shape and block layout, plus the writer's contract (refusals, atomic writes, statistics).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::*;
use arrow::datatypes::*;
use arrow::record_batch::RecordBatch;
use common::*;
use proptest::prelude::*;
use sift_format::{Error, FooterCounts, ReadOptions, Scalar, SiftFile, SiftWriter, WriteOptions};

const DEFAULT_BLOCK: usize = sift_format::MAX_BLOCK_ROWS;

fn round_trip(batch: &RecordBatch, block_rows: usize) -> (SiftFile, RecordBatch) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.sift");
    write(
        &path,
        &batch.schema(),
        std::slice::from_ref(batch),
        block_rows,
    );
    let (f, out) = read(&path);
    assert_same(batch, &out);
    let blocks = batch.num_rows().div_ceil(block_rows);
    assert_eq!(f.num_blocks(), blocks);
    assert_eq!(f.num_rows(), batch.num_rows() as u64);
    (f, out)
}

/// The encoding description of every column of block 0, by name.
fn encodings(f: &SiftFile, block: usize) -> HashMap<String, String> {
    let meta = &f.decode_footer().unwrap().blocks[block];
    f.schema()
        .unwrap()
        .fields()
        .iter()
        .zip(&meta.columns)
        .map(|(field, c)| (field.name().clone(), c.encoding.describe()))
        .collect()
}

#[test]
fn every_type_every_null_shape() {
    for nulls in [Nulls::None, Nulls::Some, Nulls::All] {
        for n in [0, 1, 2, 3, 64, 65, 1000] {
            let batch = batch_of(all_types(n, nulls));
            round_trip(&batch, DEFAULT_BLOCK);
        }
        // Several blocks, ragged tail.
        round_trip(&batch_of(all_types(1000, nulls)), 300);
    }
}

#[test]
fn every_type_at_block_boundaries() {
    for n in [65_535, 65_536, 65_537] {
        let batch = batch_of(all_types(n, Nulls::Some));
        let (f, _) = round_trip(&batch, DEFAULT_BLOCK);
        let rows: Vec<u32> = f
            .decode_footer()
            .unwrap()
            .blocks
            .iter()
            .map(|b| b.rows)
            .collect();
        match n {
            65_537 => assert_eq!(rows, vec![65_536, 1]),
            _ => assert_eq!(rows, vec![n as u32]),
        }
    }
    let batch = batch_of(all_types(65_537, Nulls::None));
    round_trip(&batch, DEFAULT_BLOCK);
}

#[test]
fn encodings_are_the_expected_ones() {
    let batch = batch_of(all_types(1000, Nulls::None));
    let (f, _) = round_trip(&batch, DEFAULT_BLOCK);
    let enc = encodings(&f, 0);
    // Values spanning the full range cannot be frame-of-reference encoded (an i8 range
    // bit-packs at its full 8 bits, which is the same size).
    assert_eq!(enc["i8"], "for8");
    for (col, plain) in [
        ("i64", "plain64"),
        ("u64", "plain64"),
        ("dec_38_0", "plain128"),
        ("f64", "plain64"),
    ] {
        // The cascade may still find structure (repeated extremes to patch, duplicates for a
        // dictionary), but never a narrow bit-packing of the whole range.
        let e = &enc[col];
        assert!(e == plain || !e.starts_with("for"), "{col}: {e}");
    }
    assert_eq!(enc["i64_narrow"], "for10");
    assert_eq!(enc["u64_narrow"], "for17");
    assert_eq!(enc["i64_const"], "const");
    assert!(enc["i8_narrow"].starts_with("for"), "{}", enc["i8_narrow"]);
    assert!(
        enc["dec_38_narrow"].starts_with("for"),
        "{}",
        enc["dec_38_narrow"]
    );
    assert!(
        enc["utf8_low"].starts_with("dict[5]"),
        "{}",
        enc["utf8_low"]
    );
    assert!(
        enc["utf8_view_low"].starts_with("dict[5]"),
        "{}",
        enc["utf8_view_low"]
    );
    assert!(
        enc["binary_low"].starts_with("dict[3]"),
        "{}",
        enc["binary_low"]
    );
    assert!(
        enc["fsb_16_3"].starts_with("dict[3]"),
        "{}",
        enc["fsb_16_3"]
    );
    // High-cardinality text is stored without a dictionary, plain or FSST-compressed.
    assert!(
        enc["utf8_high"].starts_with("bytes(") || enc["utf8_high"].starts_with("fsst("),
        "{}",
        enc["utf8_high"]
    );
    assert!(enc["binary"].starts_with("bytes("), "{}", enc["binary"]);
    assert_eq!(enc["fsb_16_18446744073709551615"], "plain128");
    assert_eq!(enc["bool"], "bitmap");
    let batch = batch_of(all_types(100, Nulls::All));
    let (f, _) = round_trip(&batch, DEFAULT_BLOCK);
    assert!(encodings(&f, 0).values().all(|e| e == "all-null"));
}

#[test]
fn non_nullable_null_type() {
    // Arrow accepts a non-nullable field of the Null type (its null_count is 0).
    for n in [0, 5, 70_000] {
        let schema = Arc::new(Schema::new(vec![
            Field::new("n", DataType::Null, false),
            Field::new("x", DataType::Int32, false),
        ]));
        let batch = RecordBatch::try_new(
            schema,
            vec![
                Arc::new(NullArray::new(n)),
                Arc::new(Int32Array::from_iter_values(0..n as i32)),
            ],
        )
        .unwrap();
        round_trip(&batch, DEFAULT_BLOCK);
    }
}

#[test]
fn zero_column_file() {
    // No columns, but rows: the row count survives.
    let batch = RecordBatch::try_new_with_options(
        Arc::new(Schema::empty()),
        vec![],
        &RecordBatchOptions::new().with_row_count(Some(10)),
    )
    .unwrap();
    round_trip(&batch, 4);
}

#[test]
fn extremes_and_special_floats() {
    let schema = Arc::new(Schema::new(vec![
        Field::new("i64", DataType::Int64, true),
        Field::new("u64", DataType::UInt64, false),
        Field::new("f64", DataType::Float64, true),
        Field::new("f32", DataType::Float32, false),
        Field::new("d", DataType::Decimal128(38, 0), true),
    ]));
    let max38 = 10i128.pow(38) - 1;
    let f64s = [
        f64::NAN,
        -f64::NAN,
        f64::from_bits(0x7FF0_0000_0000_0001),
        0.0,
        -0.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::MIN_POSITIVE,
        f64::MAX,
    ];
    let n = f64s.len();
    let batch = RecordBatch::try_new(
        schema,
        vec![
            Arc::new(Int64Array::from(vec![
                Some(i64::MIN),
                Some(i64::MAX),
                None,
                Some(0),
                Some(-1),
                Some(i64::MIN),
                Some(1),
                Some(i64::MAX),
                None,
            ])),
            Arc::new(UInt64Array::from_iter_values(
                (0..n as u64).map(|i| if i % 2 == 0 { u64::MAX } else { i }),
            )),
            Arc::new(Float64Array::from_iter(
                f64s.iter().enumerate().map(|(i, v)| (i != 2).then_some(*v)),
            )),
            Arc::new(Float32Array::from_iter_values(
                f64s.iter().map(|v| *v as f32),
            )),
            Arc::new(
                Decimal128Array::from_iter(
                    [Some(max38), Some(-max38), None, Some(0), Some(-1), Some(1)]
                        .into_iter()
                        .cycle()
                        .take(n),
                )
                .with_precision_and_scale(38, 0)
                .unwrap(),
            ),
        ],
    )
    .unwrap();
    for block_rows in [1, 2, 3, DEFAULT_BLOCK] {
        round_trip(&batch, block_rows);
    }
    // Only the extremes in one block: the range does not fit 64 bits, so plain.
    let (f, _) = round_trip(&batch, DEFAULT_BLOCK);
    assert_eq!(encodings(&f, 0)["i64"], "plain64");
    assert_eq!(encodings(&f, 0)["d"], "plain128");
}

#[test]
fn strings_over_one_mib() {
    let big = |c: char, n: usize| c.to_string().repeat(n);
    let values = [
        Some(big('a', (1 << 20) + 17)),
        None,
        Some("small".to_string()),
        Some(big('ß', 600_000)),
        Some(big('a', (1 << 20) + 17)),
    ];
    let schema = Arc::new(Schema::new(vec![
        Field::new("s", DataType::Utf8, true),
        Field::new("l", DataType::LargeUtf8, true),
        Field::new("v", DataType::Utf8View, true),
        Field::new("b", DataType::Binary, true),
    ]));
    let batch = RecordBatch::try_new(
        schema,
        vec![
            Arc::new(StringArray::from_iter(values.iter().cloned())),
            Arc::new(LargeStringArray::from_iter(values.iter().cloned())),
            Arc::new(StringViewArray::from_iter(values.iter().cloned())),
            Arc::new(BinaryArray::from_iter(
                values.iter().map(|v| v.as_ref().map(|s| s.as_bytes())),
            )),
        ],
    )
    .unwrap();
    round_trip(&batch, DEFAULT_BLOCK);
    round_trip(&batch, 2);
}

#[test]
fn sliced_input_arrays() {
    // Input arrays with a non-zero offset (null bitmaps and values not byte-aligned).
    let batch = batch_of(all_types(500, Nulls::Some));
    for (off, len) in [(3, 200), (1, 1), (64, 129), (499, 1), (7, 0)] {
        round_trip(&batch.slice(off, len), 50);
    }
}

fn mixed_batch(n: usize) -> RecordBatch {
    let cols = all_types(n, Nulls::Some)
        .into_iter()
        .filter(|(f, _)| {
            [
                "bool",
                "i64",
                "i32_narrow",
                "f64",
                "utf8_low",
                "utf8_high",
                "dec_10_2",
                "fsb_5_18446744073709551615",
            ]
            .contains(&f.name().as_str())
        })
        .collect();
    batch_of(cols)
}

#[test]
fn projection_and_block_ranges() {
    let batch = mixed_batch(1000);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.sift");
    write(&path, &batch.schema(), std::slice::from_ref(&batch), 300);
    let f = SiftFile::open(&path).unwrap();
    assert_eq!(f.num_blocks(), 4);
    let proj = vec![4, 0, 3];
    let got: Vec<RecordBatch> = f
        .batches(Some(proj.clone()), 1..2)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(got.len(), 1);
    assert_same(&batch.slice(300, 300).project(&proj).unwrap(), &got[0]);
    // Ranges are clamped to the file; empty and reversed ranges yield nothing.
    let tail: Vec<RecordBatch> = f
        .batches(None, 2..100)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let tail = arrow::compute::concat_batches(f.schema().unwrap(), &tail).unwrap();
    assert_same(&batch.slice(600, 400), &tail);
    assert_eq!(f.batches(None, 3..3).unwrap().count(), 0);
    #[allow(clippy::reversed_empty_ranges)]
    let reversed = 3..1;
    assert_eq!(f.batches(None, reversed).unwrap().count(), 0);
    assert_eq!(f.batches(None, 7..9).unwrap().count(), 0);
    // Empty projection keeps the row count.
    let empty = f.read_all(Some(vec![])).unwrap();
    assert_eq!(empty.iter().map(|b| b.num_rows()).sum::<usize>(), 1000);
    // By name, and an unknown column is an error naming it.
    let proj = f.projection(&["utf8_high", "i64"]).unwrap();
    let got = f.read_block(3, Some(&proj)).unwrap();
    assert_same(&batch.slice(900, 100).project(&proj).unwrap(), &got);
    let err = f.projection(&["nope"]).unwrap_err().to_string();
    assert!(err.contains("nope"), "{err}");
    assert!(f.batches(Some(vec![8]), 0..1).is_err());
    assert!(f.read_block(4, None).is_err());
    assert!(f.read_chunk(0, 8).is_err());
    // Single chunks.
    let chunk = f.read_chunk(2, 5).unwrap();
    assert!(chunk.to_data() == batch.column(5).slice(600, 300).to_data());
}

#[test]
fn batching_does_not_change_the_file() {
    let batch = mixed_batch(70_000);
    let dir = tempfile::tempdir().unwrap();
    let one = write(
        &dir.path().join("one.sift"),
        &batch.schema(),
        std::slice::from_ref(&batch),
        DEFAULT_BLOCK,
    );
    // Many small batches of varying sizes, including empty ones.
    let mut small = Vec::new();
    let mut off = 0;
    let mut k = 0;
    while off < batch.num_rows() {
        let len = [1, 0, 37, 1000, 5, 4096][k % 6].min(batch.num_rows() - off);
        small.push(batch.slice(off, len));
        off += len;
        k += 1;
    }
    let many = write(
        &dir.path().join("many.sift"),
        &batch.schema(),
        &small,
        DEFAULT_BLOCK,
    );
    assert!(one == many, "files differ");
    let (_, out) = read(&dir.path().join("many.sift"));
    assert_same(&batch, &out);
}

#[test]
fn mixed_batch_sizes_across_block_boundaries() {
    let batch = mixed_batch(3000);
    let sizes = [3, 997, 1, 0, 1500, 499];
    for block_rows in [1, 7, 1000, 1001, DEFAULT_BLOCK] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.sift");
        let mut parts = Vec::new();
        let mut off = 0;
        for s in sizes {
            parts.push(batch.slice(off, s));
            off += s;
        }
        assert_eq!(off, 3000);
        let bytes = write(&path, &batch.schema(), &parts, block_rows);
        if block_rows == 1 {
            // 3000 blocks: the footer exceeds the 64 KiB first tail read, so opening takes two.
            let at = bytes.len() - sift_format::TRAILER_LEN;
            let footer_len = u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap());
            assert!(footer_len > 64 * 1024, "footer of {footer_len} bytes");
        }
        let (f, out) = read(&path);
        assert_same(&batch, &out);
        let rows: Vec<usize> = f
            .decode_footer()
            .unwrap()
            .blocks
            .iter()
            .map(|b| b.rows as usize)
            .collect();
        let mut expect = vec![block_rows.min(3000); 3000 / block_rows.min(3000)];
        if 3000 % block_rows != 0 && block_rows < 3000 {
            expect.push(3000 % block_rows);
        }
        assert_eq!(rows, expect, "block_rows {block_rows}");
        // Each block read alone is the matching slice of the input.
        for (b, r) in rows.iter().enumerate().step_by(97) {
            let start = rows[..b].iter().sum::<usize>();
            assert_same(&batch.slice(start, *r), &f.read_block(b, None).unwrap());
        }
    }
}

#[test]
fn small_block_rows_every_type() {
    let batch = batch_of(all_types(60, Nulls::Some));
    for block_rows in [1, 7] {
        round_trip(&batch, block_rows);
    }
}

#[test]
fn block_rows_must_be_in_range() {
    let dir = tempfile::tempdir().unwrap();
    let schema = Arc::new(Schema::new(vec![Field::new("a", DataType::Int8, true)]));
    for block_rows in [0, DEFAULT_BLOCK + 1] {
        let r = SiftWriter::create(
            dir.path().join("x.sift"),
            schema.clone(),
            WriteOptions {
                block_rows,
                ..Default::default()
            },
        );
        assert!(matches!(r, Err(Error::Invalid(_))));
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn write_rejects_mismatched_batches() {
    let dir = tempfile::tempdir().unwrap();
    let schema = Arc::new(Schema::new(vec![Field::new("a", DataType::Int8, false)]));
    let mut w =
        SiftWriter::create(dir.path().join("x.sift"), schema, WriteOptions::default()).unwrap();
    let wrong_type =
        RecordBatch::try_from_iter([("a", Arc::new(Int16Array::from(vec![1])) as ArrayRef)])
            .unwrap();
    assert!(w.write(&wrong_type).is_err());
    let nulls = RecordBatch::try_from_iter([(
        "a",
        Arc::new(Int8Array::from(vec![Some(1), None])) as ArrayRef,
    )])
    .unwrap();
    let err = w.write(&nulls).unwrap_err().to_string();
    assert!(err.contains("'a'"), "{err}");
    let two = RecordBatch::try_from_iter([
        ("a", Arc::new(Int8Array::from(vec![1])) as ArrayRef),
        ("b", Arc::new(Int8Array::from(vec![1])) as ArrayRef),
    ])
    .unwrap();
    assert!(w.write(&two).is_err());
    // Field names of the input do not matter: the file's schema wins.
    let renamed = RecordBatch::try_from_iter_with_nullable([(
        "zz",
        Arc::new(Int8Array::from(vec![4, 5])) as ArrayRef,
        false,
    )])
    .unwrap();
    w.write(&renamed).unwrap();
    assert_eq!(w.rows(), 2);
    w.finish().unwrap();
    let (f, out) = read(&dir.path().join("x.sift"));
    assert_eq!(f.schema().unwrap().field(0).name(), "a");
    assert_eq!(out.num_rows(), 2);
}

#[test]
fn unsupported_types_are_refused_naming_the_column() {
    let dir = tempfile::tempdir().unwrap();
    let interval = DataType::Interval(arrow_schema::IntervalUnit::YearMonth);
    let list = DataType::List(Arc::new(Field::new("item", interval.clone(), true)));
    let strukt = DataType::Struct(vec![Field::new("x", interval.clone(), true)].into());
    // Dictionaries are stored as their values: refused when the values are nested.
    let ints = DataType::List(Arc::new(Field::new("item", DataType::Int32, true)));
    let dict = DataType::Dictionary(Box::new(DataType::Int32), Box::new(ints));
    for (name, dt) in [
        ("my_interval", interval),
        ("my_list", list),
        ("my_struct", strukt),
        ("my_dict", dict),
    ] {
        let schema = Arc::new(Schema::new(vec![
            Field::new("ok", DataType::Int32, true),
            Field::new(name, dt, true),
        ]));
        let err = SiftWriter::create(
            dir.path().join("x.sift"),
            schema.clone(),
            WriteOptions::default(),
        )
        .err()
        .expect("nested type accepted");
        match &err {
            Error::UnsupportedType { column, .. } => assert_eq!(column, name),
            other => panic!("expected UnsupportedType, got {other:?}"),
        }
        assert!(err.to_string().contains(name), "{err}");
        assert!(matches!(
            sift_format::check_schema(&schema),
            Err(Error::UnsupportedType { .. })
        ));
    }
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "files left behind"
    );
}

fn dir_names(dir: &std::path::Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn dropped_writer_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.sift");
    let batch = mixed_batch(2000);
    {
        let mut w = SiftWriter::create(
            &path,
            batch.schema(),
            WriteOptions {
                block_rows: 500,
                ..Default::default()
            },
        )
        .unwrap();
        w.write(&batch).unwrap();
        assert_eq!(
            dir_names(dir.path()).len(),
            1,
            "a temporary file while writing"
        );
        assert!(!path.exists());
    }
    assert!(
        dir_names(dir.path()).is_empty(),
        "left: {:?}",
        dir_names(dir.path())
    );
    // Dropped before any write too.
    drop(SiftWriter::create(&path, batch.schema(), WriteOptions::default()).unwrap());
    assert!(dir_names(dir.path()).is_empty());
}

#[test]
fn finish_replaces_an_existing_file_atomically() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.sift");
    std::fs::write(&path, b"previous contents").unwrap();
    let batch = mixed_batch(1500);
    let mut w = SiftWriter::create(
        &path,
        batch.schema(),
        WriteOptions {
            block_rows: 400,
            ..Default::default()
        },
    )
    .unwrap();
    w.write(&batch).unwrap();
    // Until finish, the target keeps its old contents.
    assert_eq!(std::fs::read(&path).unwrap(), b"previous contents");
    w.finish().unwrap();
    assert_eq!(dir_names(dir.path()), vec!["r.sift".to_string()]);
    let (_, out) = read(&path);
    assert_same(&batch, &out);
    // A second, unfinished writer leaves the finished file intact.
    let mut w = SiftWriter::create(&path, batch.schema(), WriteOptions::default()).unwrap();
    w.write(&batch.slice(0, 10)).unwrap();
    drop(w);
    let (_, out) = read(&path);
    assert_same(&batch, &out);
    assert_eq!(dir_names(dir.path()), vec!["r.sift".to_string()]);
}

#[test]
fn failed_finish_leaves_no_temporary_file() {
    // The target is a directory, so the final rename fails after the footer was written.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("taken.sift");
    std::fs::create_dir(&path).unwrap();
    let batch = mixed_batch(100);
    let mut w = SiftWriter::create(&path, batch.schema(), WriteOptions::default()).unwrap();
    w.write(&batch).unwrap();
    let err = w.finish().unwrap_err();
    assert!(err.to_string().contains("taken.sift"), "{err}");
    assert_eq!(dir_names(dir.path()), vec!["taken.sift".to_string()]);
    assert!(path.is_dir());
}

#[test]
fn footer_statistics_match_the_data() {
    let batch = mixed_batch(1000);
    let (f, _) = round_trip(&batch, 300);
    let mut start = 0;
    for (b, block) in f.decode_footer().unwrap().blocks.iter().enumerate() {
        let rows = block.rows as usize;
        for (c, field) in batch.schema().fields().iter().enumerate() {
            let col = batch.column(c).slice(start, rows);
            let stats = &block.columns[c].stats;
            let ctx = format!("block {b} column {}", field.name());
            assert_eq!(stats.null_count, col.null_count() as u64, "{ctx}");
            let valid = |i: &usize| col.is_valid(*i);
            let (min, max) = match col.data_type() {
                DataType::Int64 => {
                    let a = col.as_primitive::<Int64Type>();
                    let v: Vec<i128> = (0..rows)
                        .filter(valid)
                        .map(|i| i128::from(a.value(i)))
                        .collect();
                    (
                        v.iter().min().map(|m| Scalar::Int(*m)),
                        v.iter().max().map(|m| Scalar::Int(*m)),
                    )
                }
                DataType::Int32 => {
                    let a = col.as_primitive::<Int32Type>();
                    let v: Vec<i128> = (0..rows)
                        .filter(valid)
                        .map(|i| i128::from(a.value(i)))
                        .collect();
                    (
                        v.iter().min().map(|m| Scalar::Int(*m)),
                        v.iter().max().map(|m| Scalar::Int(*m)),
                    )
                }
                DataType::Decimal128(..) => {
                    let a = col.as_primitive::<Decimal128Type>();
                    let v: Vec<i128> = (0..rows).filter(valid).map(|i| a.value(i)).collect();
                    (
                        v.iter().min().map(|m| Scalar::Int(*m)),
                        v.iter().max().map(|m| Scalar::Int(*m)),
                    )
                }
                DataType::Utf8 => {
                    let a = col.as_string::<i32>();
                    let v: Vec<&str> = (0..rows).filter(valid).map(|i| a.value(i)).collect();
                    let b = |s: &&str| Scalar::Bytes(s.as_bytes().to_vec());
                    (v.iter().min().map(b), v.iter().max().map(b))
                }
                DataType::Boolean => {
                    let a = col.as_boolean();
                    let v: Vec<bool> = (0..rows).filter(valid).map(|i| a.value(i)).collect();
                    (
                        v.iter().min().map(|m| Scalar::Bool(*m)),
                        v.iter().max().map(|m| Scalar::Bool(*m)),
                    )
                }
                DataType::Float64 => {
                    let a = col.as_primitive::<Float64Type>();
                    let v: Vec<f64> = (0..rows)
                        .filter(valid)
                        .map(|i| a.value(i))
                        .filter(|x| !x.is_nan())
                        .collect();
                    let has_nan = (0..rows).filter(valid).any(|i| a.value(i).is_nan());
                    assert_eq!(stats.has_nan, has_nan, "{ctx}");
                    let min = v.iter().copied().min_by(f64::total_cmp).map(Scalar::Float);
                    let max = v.iter().copied().max_by(f64::total_cmp).map(Scalar::Float);
                    (min, max)
                }
                _ => continue,
            };
            assert_eq!(stats.min, min, "{ctx} min");
            assert_eq!(stats.max, max, "{ctx} max");
        }
        start += rows;
    }
    // All-null chunks have no bounds.
    let (f, _) = round_trip(&batch_of(all_types(10, Nulls::All)), DEFAULT_BLOCK);
    for c in &f.decode_footer().unwrap().blocks[0].columns {
        assert_eq!(c.stats.null_count, 10);
        assert_eq!((&c.stats.min, &c.stats.max), (&None, &None));
    }
}

/// The sorted flag of each chunk: set where the non-null values of an integer-like column
/// never decrease (ties and nulls between them allowed), clear where one value is below the
/// one before, and never set for floats or strings, sorted or not.
#[test]
fn sorted_flags_match_the_data() {
    let n = 400i64;
    // Value `i`, bent down once in block 2 where `dip`.
    let bent = |i: i64, dip: bool| if dip && i == 250 { 3 } else { i };
    let columns: Vec<(&str, ArrayRef)> = vec![
        (
            "ties_and_nulls",
            Arc::new(Int64Array::from_iter(
                (0..n).map(|i| (i % 7 != 0).then_some(i / 3)),
            )),
        ),
        (
            "dip",
            Arc::new(Int32Array::from_iter_values(
                (0..n).map(|i| bent(i, true) as i32),
            )),
        ),
        (
            "unsigned",
            Arc::new(UInt64Array::from_iter_values(
                (0..n).map(|i| i as u64 * 1_000),
            )),
        ),
        (
            "days",
            Arc::new(Date32Array::from_iter_values((0..n).map(|i| i as i32))),
        ),
        (
            "falling",
            Arc::new(
                Decimal128Array::from_iter_values((0..n).map(|i| i128::from(n - i)))
                    .with_precision_and_scale(10, 2)
                    .unwrap(),
            ),
        ),
        (
            "floats",
            Arc::new(Float64Array::from_iter_values((0..n).map(|i| i as f64))),
        ),
        (
            "strings",
            Arc::new(StringArray::from_iter_values(
                (0..n).map(|i| format!("{i:05}")),
            )),
        ),
    ];
    let batch = RecordBatch::try_from_iter(columns).unwrap();
    let (f, _) = round_trip(&batch, 100);
    for (b, block) in f.decode_footer().unwrap().blocks.iter().enumerate() {
        let rows = (b as i64 * 100)..(b as i64 + 1) * 100;
        let expected = [true, !rows.contains(&250), true, true, false, false, false];
        let flags: Vec<bool> = block.columns.iter().map(|c| c.stats.sorted).collect();
        assert_eq!(flags, expected, "block {b}");
    }
}

#[test]
fn checksums_and_mapping_can_be_turned_off() {
    let batch = mixed_batch(500);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.sift");
    write(&path, &batch.schema(), std::slice::from_ref(&batch), 128);
    for (verify_checksums, mmap) in [(false, true), (true, false), (false, false)] {
        let f = SiftFile::open_with(
            &path,
            ReadOptions {
                verify_checksums,
                mmap,
            },
        )
        .unwrap();
        let out = arrow::compute::concat_batches(f.schema().unwrap(), &f.read_all(None).unwrap())
            .unwrap();
        assert_same(&batch, &out);
    }
}

fn random_batch(len: usize, seed: u64, null_pct: u64, card: u64) -> RecordBatch {
    let v = |i: usize, k: u64| hash(seed ^ (i as u64) << 20 ^ k);
    let valid = |i: usize, k: u64| v(i, k + 100) % 100 >= null_pct;
    let ints: Int64Array = (0..len)
        .map(|i| valid(i, 1).then(|| (v(i, 1) % card) as i64 - (card / 2) as i64))
        .collect();
    let strs: StringArray = (0..len)
        .map(|i| valid(i, 2).then(|| format!("s{}", v(i, 2) % card)))
        .collect();
    let bools: BooleanArray = (0..len)
        .map(|i| valid(i, 3).then(|| v(i, 3) % 2 == 0))
        .collect();
    RecordBatch::try_from_iter([
        ("i", Arc::new(ints) as ArrayRef),
        ("s", Arc::new(strs) as ArrayRef),
        ("b", Arc::new(bools) as ArrayRef),
    ])
    .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]
    #[test]
    fn random_round_trip(
        len in 0usize..3000,
        seed in any::<u64>(),
        null_pct in prop_oneof![Just(0u64), Just(100), 0u64..100],
        card in prop_oneof![Just(1u64), 2u64..20, Just(u64::MAX >> 1)],
        block_rows in prop_oneof![1usize..10, 10usize..4000],
        cut in 0usize..3000,
    ) {
        let batch = random_batch(len, seed, null_pct, card);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.sift");
        let cut = cut.min(len);
        write(&path, &batch.schema(), &[batch.slice(0, cut), batch.slice(cut, len - cut)], block_rows);
        let (f, out) = read(&path);
        prop_assert_eq!(f.num_blocks(), len.div_ceil(block_rows));
        assert_same(&batch, &out);
    }
}

/// Opening a wide file decodes no per-column metadata; reading one column decodes that
/// column's field and its chunks' records, and nothing else.
#[test]
fn footer_work_follows_the_projection() {
    const COLUMNS: usize = 2_000;
    const ROWS: usize = 30;
    let fields: Vec<Field> = (0..COLUMNS)
        .map(|c| Field::new(format!("c{c}"), DataType::Int64, false))
        .collect();
    let columns: Vec<ArrayRef> = (0..COLUMNS)
        .map(|c| {
            Arc::new(Int64Array::from_iter_values(
                (0..ROWS as i64).map(|r| r * 7 + c as i64),
            )) as ArrayRef
        })
        .collect();
    let batch = RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("wide.sift");
    write(&path, &batch.schema(), std::slice::from_ref(&batch), 10);
    let f = SiftFile::open(&path).unwrap();
    assert_eq!(f.num_blocks(), 3);
    assert_eq!(f.footer_counts(), FooterCounts::default());
    let projection = f.projection(&["c1234"]).unwrap();
    assert_eq!(f.footer_counts(), FooterCounts::default(), "name lookup");
    for _ in 0..2 {
        let out = f.read_all(Some(projection.clone())).unwrap();
        let out = arrow::compute::concat_batches(&out[0].schema(), &out).unwrap();
        assert_eq!(out.schema().field(0).name(), "c1234");
        assert_eq!(out.column(0).as_ref(), batch.column(1234).as_ref());
        let want = FooterCounts {
            fields: 1,
            chunks: 3,
        };
        assert_eq!(f.footer_counts(), want, "one column read (again)");
    }
    // The whole schema needs every field, once.
    assert_eq!(f.schema().unwrap().fields().len(), COLUMNS);
    assert_eq!(f.footer_counts().fields, COLUMNS);
    assert_eq!(f.footer_counts().chunks, 3);
}

/// Encoding a block's columns on several threads writes the same bytes as on one.
#[test]
fn threads_do_not_change_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let batch = mixed_batch(5000);
    let write = |threads: usize| {
        let path = dir.path().join(format!("t{threads}.sift"));
        let options = WriteOptions {
            block_rows: 700,
            threads,
            ..WriteOptions::default()
        };
        let mut w = SiftWriter::create(&path, batch.schema(), options).unwrap();
        w.write(&batch).unwrap();
        w.finish().unwrap();
        std::fs::read(&path).unwrap()
    };
    let one = write(1);
    for threads in [2, 3, 16] {
        assert!(write(threads) == one, "{threads} threads wrote other bytes");
    }
}

/// Every type round-trips with its codes stored as byte slices; integer columns wider
/// than a byte get a byte-sliced root, and a name the schema lacks is refused.
#[test]
fn byteslice_columns_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    for nulls in [Nulls::None, Nulls::Some, Nulls::All] {
        for n in [0, 1, 65, 3000] {
            let batch = batch_of(all_types(n, nulls));
            let names: Vec<String> = batch
                .schema()
                .fields()
                .iter()
                .map(|f| f.name().clone())
                .collect();
            let path = dir.path().join("b.sift");
            let options = WriteOptions {
                block_rows: 1000,
                byteslice: names,
                ..WriteOptions::default()
            };
            let mut w = SiftWriter::create(&path, batch.schema(), options).unwrap();
            w.write(&batch).unwrap();
            w.finish().unwrap();
            let (f, out) = read(&path);
            assert_same(&batch, &out);
            if n == 3000 && nulls == Nulls::None {
                let enc = encodings(&f, 0);
                let sliced: Vec<&String> = enc
                    .keys()
                    .filter(|c| enc[*c].contains("byteslice"))
                    .collect();
                assert!(enc["i64_narrow"].starts_with("byteslice"), "{enc:?}");
                assert!(sliced.len() > 3, "{enc:?}");
            }
        }
    }
    let batch = mixed_batch(10);
    let err = SiftWriter::create(
        dir.path().join("x.sift"),
        batch.schema(),
        WriteOptions {
            byteslice: vec!["no_such".into()],
            ..WriteOptions::default()
        },
    )
    .err()
    .unwrap();
    assert!(err.to_string().contains("'no_such'"), "{err}");
}
