//! Parquet list columns read in place (levels as bitmaps, the selection carried to the
//! values): random lists of every flat element type the reader takes (int32, int64,
//! double, decimal, date, string), null lists, empty lists and null elements in every mix,
//! written by arrow-rs under random settings (page sizes down to a few rows, so that
//! rows span pages in v1; v1 and v2; dictionaries whole, falling back or off; statistics
//! and page index on or off; every codec), scanned at random selections and compared
//! with arrow-rs's read of the file and the reference filter. Large lists, and lists of
//! types the reader leaves to the `parquet` crate, go through the same comparison.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::Arc;

use arrow::array::*;
use arrow::buffer::{NullBuffer, OffsetBuffer};
use arrow::datatypes::*;
use arrow::record_batch::RecordBatch;
use common::{ParquetLayout, Rng};
use proptest::prelude::*;
use sift_scan::{Expr, Table, col};

/// Element types of the lists.
fn element_types() -> Vec<DataType> {
    vec![
        DataType::Int64,
        DataType::Int32,
        DataType::Float64,
        DataType::Decimal128(12, 2),
        DataType::Date32,
        DataType::Utf8,
        // Left to the `parquet` crate (unsigned): still compared.
        DataType::UInt16,
    ]
}

/// `n` random elements of type `dt`, about `null_pct` % null, drawn from `distinct` values.
fn elements(rng: &mut Rng, dt: &DataType, n: usize, null_pct: u64, distinct: u64) -> ArrayRef {
    let mut valid = || rng.below(100) >= null_pct;
    let nulls: Vec<bool> = (0..n).map(|_| valid()).collect();
    let v: Vec<i64> = (0..n)
        .map(|_| rng.below(distinct) as i64 - (distinct / 3) as i64)
        .collect();
    let at = |i: usize| nulls[i].then_some(v[i]);
    match dt {
        DataType::Int64 => Arc::new(Int64Array::from_iter((0..n).map(at))),
        DataType::Int32 => Arc::new(Int32Array::from_iter(
            (0..n).map(|i| at(i).map(|x| x as i32)),
        )),
        DataType::Float64 => Arc::new(Float64Array::from_iter(
            (0..n).map(|i| at(i).map(|x| x as f64 / 4.0)),
        )),
        DataType::Decimal128(p, s) => Arc::new(
            Decimal128Array::from_iter((0..n).map(|i| at(i).map(|x| x as i128 * 1001)))
                .with_precision_and_scale(*p, *s)
                .unwrap(),
        ),
        DataType::Date32 => Arc::new(Date32Array::from_iter(
            (0..n).map(|i| at(i).map(|x| x as i32 + 10_000)),
        )),
        DataType::UInt16 => Arc::new(UInt16Array::from_iter(
            (0..n).map(|i| at(i).map(|x| x.unsigned_abs() as u16)),
        )),
        DataType::Utf8 => Arc::new(StringArray::from_iter(
            (0..n).map(|i| at(i).map(|x| format!("s{x}"))),
        )),
        other => unreachable!("{other}"),
    }
}

/// A table of `rows` rows: `id` (row number), `k` (0..16, for filters) and `l`, a list
/// (or large list) of `dt` with lengths 0..=`max_len`, some lists null when `null_lists`.
#[allow(clippy::too_many_arguments)]
fn table(
    seed: u64,
    rows: usize,
    dt: &DataType,
    large: bool,
    max_len: u64,
    null_lists: bool,
    element_nulls: u64,
    distinct: u64,
) -> RecordBatch {
    let mut rng = Rng::new(seed);
    let id = Int64Array::from_iter_values(0..rows as i64);
    let k = Int64Array::from_iter_values((0..rows).map(|_| rng.below(16) as i64));
    let lens: Vec<usize> = (0..rows)
        .map(|_| match rng.below(10) {
            // Runs of empty lists and long ones too.
            0 => 0,
            1 => (max_len * 4) as usize,
            _ => rng.below(max_len + 1) as usize,
        })
        .collect();
    let list_valid: Vec<bool> = (0..rows)
        .map(|_| !null_lists || rng.below(8) != 0)
        .collect();
    let lens: Vec<usize> = lens
        .iter()
        .zip(&list_valid)
        .map(|(&n, &v)| if v { n } else { 0 })
        .collect();
    let total: usize = lens.iter().sum();
    let values = elements(&mut rng, dt, total, element_nulls, distinct);
    let item = Arc::new(Field::new("item", dt.clone(), true));
    let nulls = null_lists.then(|| NullBuffer::from(list_valid.clone()));
    let l: ArrayRef = match large {
        false => Arc::new(ListArray::new(
            item,
            OffsetBuffer::from_lengths(lens),
            values,
            nulls,
        )),
        true => Arc::new(LargeListArray::new(
            item,
            OffsetBuffer::from_lengths(lens),
            values,
            nulls,
        )),
    };
    RecordBatch::try_from_iter([
        ("id", Arc::new(id) as ArrayRef),
        ("k", Arc::new(k)),
        ("l", l),
    ])
    .unwrap()
}

/// Scans `filter` projecting `l` (and `id`); the rows must be the reference's.
fn check(table: &Table, reference: &RecordBatch, filter: Option<&Expr>, what: &str) {
    let want = common::filter_batch(reference, filter)
        .project(&[0, 2])
        .unwrap();
    let mut builder = table.scan().project(["id", "l"]);
    if let Some(f) = filter {
        builder = builder.filter(f.clone());
    }
    let got: Vec<RecordBatch> = builder
        .build()
        .unwrap_or_else(|e| panic!("{what}: {e}"))
        .map(|b| b.unwrap_or_else(|e| panic!("{what}: {e}")))
        .collect();
    let got = arrow::compute::concat_batches(&want.schema(), &got).unwrap();
    assert_eq!(got.num_rows(), want.num_rows(), "{what}");
    assert_eq!(got, want, "{what}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn list_columns_equal_arrow_rs(
        seed in any::<u64>(),
        rows in 1usize..3000,
        ty in 0usize..7,
        large in any::<bool>(),
        max_len in 0u64..12,
        null_lists in any::<bool>(),
        element_nulls in prop_oneof![Just(0u64), Just(5), Just(50), Just(100)],
        distinct in prop_oneof![Just(3u64), Just(200), Just(1 << 20)],
        k in 0i64..17,
    ) {
        let dt = &element_types()[ty];
        let batch = table(seed, rows, dt, large, max_len, null_lists, element_nulls, distinct);
        let layout = ParquetLayout::from_seed(seed, 1 + (seed % 3000) as usize);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.parquet");
        common::write_parquet_layout(&path, batch.schema(), std::slice::from_ref(&batch), layout);
        let table = Table::open(&path).unwrap();
        let reference = common::read_parquet(&path);
        prop_assert_eq!(&reference, &batch);
        let what = format!("{dt} large={large} {layout:?}");
        check(&table, &reference, None, &what);
        // From every row to none: dense selections read whole pages' lists, sparse ones
        // a few.
        check(&table, &reference, Some(&col("k").lt(k)), &what);
        check(&table, &reference, Some(&col("k").eq(k)), &what);
        check(&table, &reference, Some(&col("id").lt(rows as i64 / 3).and(col("k").gt(2i64))), &what);
        check(&table, &reference, Some(&col("l").is_null().or(col("k").eq(1i64))), &what);
    }
}

/// A list of flat values is read in place (no column chunk left to the `parquet` crate),
/// and a selection clustered in a few rows reads only the pages holding them.
#[test]
fn lists_are_read_in_place_and_skip_pages() {
    use parquet::file::properties::EnabledStatistics;
    let rows = 40_000;
    let batch = table(7, rows, &DataType::Int64, false, 6, true, 5, 300);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.parquet");
    let mut layout = ParquetLayout::new(rows, 500);
    layout.statistics = EnabledStatistics::Page;
    common::write_parquet_layout(&path, batch.schema(), std::slice::from_ref(&batch), layout);
    let table = Table::open(&path).unwrap();
    let reference = common::read_parquet(&path);
    let stats = |filter: Expr, column: &str| {
        check(&table, &reference, Some(&filter), "in place");
        let mut scan = table
            .scan()
            .project([column])
            .filter(filter)
            .build()
            .unwrap();
        scan.by_ref().for_each(|b| drop(b.unwrap()));
        scan.stats().clone()
    };
    let all = stats(col("k").gte(0i64), "l");
    let few = col("id").gte(20_000i64).and(col("id").lt(20_100i64));
    let (few, filter_only) = (stats(few.clone(), "l"), stats(few, "id"));
    assert_eq!(all.parquet_chunks_decoded, 0, "{all:?}");
    assert_eq!(few.parquet_chunks_decoded, 0, "{few:?}");
    // The list's bytes: what projecting it adds to reading the filter's column.
    let list_bytes = few.bytes_read - filter_only.bytes_read;
    assert!(
        list_bytes * 20 < all.bytes_read,
        "100 rows: {list_bytes} bytes of the list, every row: {} bytes",
        all.bytes_read
    );
}

/// A non-null `list<int64>` column of rows `lens` long over `values` (nullable items).
fn int_lists(lens: Vec<usize>, values: Int64Array) -> ListArray {
    let item = Arc::new(Field::new("item", DataType::Int64, true));
    ListArray::new(
        item,
        OffsetBuffer::from_lengths(lens),
        Arc::new(values),
        None,
    )
}

/// A file of 400 rows whose list `l` holds 1 to 3 non-null int64 elements per row (so its
/// repetition levels are 0 at each row's first element, 1 after), pages v2 of 100 rows,
/// uncompressed, PLAIN (no dictionary), with or without an offset index.
fn plain_lists(path: &std::path::Path, offset_index: bool) -> usize {
    use parquet::file::properties::{EnabledStatistics, WriterProperties, WriterVersion};
    let rows = 400;
    let mut rng = Rng::new(11);
    let lens: Vec<usize> = (0..rows).map(|_| 1 + rng.below(3) as usize).collect();
    let total: usize = lens.iter().sum();
    let l = int_lists(
        lens,
        Int64Array::from_iter_values((0..total as i64).map(|v| v * 7)),
    );
    let id = Int64Array::from_iter_values(0..rows as i64);
    let batch =
        RecordBatch::try_from_iter([("id", Arc::new(id) as ArrayRef), ("l", Arc::new(l))]).unwrap();
    let props = WriterProperties::builder()
        .set_data_page_row_count_limit(100)
        .set_write_batch_size(100)
        .set_dictionary_enabled(false)
        .set_encoding(parquet::basic::Encoding::PLAIN)
        .set_statistics_enabled(EnabledStatistics::Chunk)
        .set_offset_index_disabled(!offset_index)
        .set_writer_version(WriterVersion::PARQUET_2_0)
        .build();
    common::write_parquet_with(path, batch.schema(), std::slice::from_ref(&batch), props);
    rows
}

/// The file offset of the repetition levels of the first data page of `l` (leaf 1), their
/// bytes, and the page's rows by the offset index (if any).
fn first_repetition_levels(path: &std::path::Path) -> (usize, Vec<u8>, Option<i64>) {
    use parquet::column::page::Page;
    use parquet::file::reader::{FileReader, SerializedFileReader};
    use parquet::file::serialized_reader::ReadOptionsBuilder;
    let options = ReadOptionsBuilder::new().with_page_index().build();
    let reader =
        SerializedFileReader::new_with_options(std::fs::File::open(path).unwrap(), options)
            .unwrap();
    let page_rows = reader.metadata().offset_index().map(|o| {
        let pages = o[0][1].page_locations();
        pages[1].first_row_index - pages[0].first_row_index
    });
    let start = reader.metadata().row_group(0).column(1).data_page_offset() as usize;
    let mut pages = reader
        .get_row_group(0)
        .unwrap()
        .get_column_page_reader(1)
        .unwrap();
    let Some(Page::DataPageV2 {
        buf,
        rep_levels_byte_len,
        def_levels_byte_len,
        ..
    }) = pages.get_next_page().unwrap()
    else {
        panic!("the first page of l is not a data page v2");
    };
    let rep = buf[..rep_levels_byte_len as usize].to_vec();
    // The page's levels, found after its header.
    let levels = &buf[..(rep_levels_byte_len + def_levels_byte_len) as usize];
    let file = std::fs::read(path).unwrap();
    let at = file[start..]
        .windows(levels.len())
        .position(|w| w == levels)
        .expect("the page's levels in the file");
    (start + at, rep, page_rows)
}

/// Scans `l` of `path` whose byte `at` is set to `byte`; the error message.
fn scan_error(path: &std::path::Path, at: usize, byte: u8) -> String {
    let mut file = std::fs::read(path).unwrap();
    file[at] = byte;
    std::fs::write(path, &file).unwrap();
    let table = Table::open(path).unwrap();
    let scan = table.scan().project(["l"]).build().unwrap();
    let errors: Vec<String> = scan
        .filter_map(|b| b.err().map(|e| e.to_string()))
        .collect();
    assert_eq!(errors.len(), 1, "{errors:?}");
    errors[0].clone()
}

/// Repetition levels a writer would never produce are reported with the file, row
/// group, column and page: a page whose first value continues a row, a page opening
/// fewer rows than the offset index gives it, and pages holding fewer rows than the row
/// group (no offset index).
#[test]
fn damaged_repetition_levels_are_named_errors() {
    let dir = tempfile::tempdir().unwrap();
    for (offset_index, patch) in [(true, "first"), (true, "merge"), (false, "merge")] {
        let path = dir.path().join(format!("{offset_index}-{patch}.parquet"));
        let rows = plain_lists(&path, offset_index);
        let (at, rep, page_rows) = first_repetition_levels(&path);
        // 1 to 3 elements per row: the first run is bit-packed (header, then the bits).
        assert_eq!(rep[0] & 1, 1, "the first run is bit-packed: {rep:?}");
        let msg = match patch {
            // The first value's level set to 1.
            "first" => scan_error(&path, at + 1, rep[1] | 1),
            // A later row start (a 0 bit after the first) set to 1: two rows become one.
            _ => {
                let bit = (1..8).find(|b| rep[1] >> b & 1 == 0).expect("a row start");
                scan_error(&path, at + 1, rep[1] | 1 << bit)
            }
        };
        let place = format!("{}: row group 0, column l: ", path.display());
        assert!(msg.contains(&place), "{msg}");
        let expected = match (offset_index, patch) {
            (_, "first") => {
                "page 0: the page's first value continues a row of a page not read".to_string()
            }
            (true, _) => {
                let n = page_rows.expect("an offset index");
                format!(
                    "page 0: the page opens {} rows, the offset index gives it {n}",
                    n - 1
                )
            }
            (false, _) => format!("pages hold {} rows of the row group's {rows}", rows - 1),
        };
        assert!(msg.contains(&expected), "{msg}\nexpected: {expected}");
    }
}

/// A page whose definition levels promise values its body does not hold is reported with
/// the file, row group, column and page, and how many values the levels promise. Crafted
/// from a dictionary-encoded page of null elements (its body one byte, the codes' bit
/// width): the levels patched to say the elements are present, and the page header's
/// definition-level length made one longer, so that the body holds nothing.
#[test]
fn levels_promising_values_a_page_lacks_are_named_errors() {
    use parquet::column::page::Page;
    use parquet::file::properties::{WriterProperties, WriterVersion};
    use parquet::file::reader::{FileReader, SerializedFileReader};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("null-elements.parquet");
    // Rows 0..100: two null elements each; then one value each.
    let rows = 300usize;
    let lens: Vec<usize> = (0..rows).map(|r| if r < 100 { 2 } else { 1 }).collect();
    let l = int_lists(
        lens,
        Int64Array::from_iter((0..400).map(|i| (i >= 200).then_some(i as i64 % 7))),
    );
    let schema = Arc::new(Schema::new(vec![Field::new(
        "l",
        l.data_type().clone(),
        false,
    )]));
    let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(l)]).unwrap();
    let props = WriterProperties::builder()
        .set_data_page_row_count_limit(100)
        .set_write_batch_size(100)
        .set_writer_version(WriterVersion::PARQUET_2_0)
        .build();
    common::write_parquet_with(&path, schema, std::slice::from_ref(&batch), props);
    // The first data page: 200 null elements; levels, then the codes' bit width alone.
    let reader = SerializedFileReader::new(std::fs::File::open(&path).unwrap()).unwrap();
    let mut pages = reader
        .get_row_group(0)
        .unwrap()
        .get_column_page_reader(0)
        .unwrap();
    let page = loop {
        match pages.get_next_page().unwrap() {
            Some(Page::DictionaryPage { .. }) => continue,
            Some(p) => break p,
            None => panic!("no data page"),
        }
    };
    let Page::DataPageV2 {
        buf,
        rep_levels_byte_len,
        def_levels_byte_len,
        num_nulls,
        ..
    } = page
    else {
        panic!("the first page of l is not a data page v2");
    };
    let (rep, def) = (rep_levels_byte_len as usize, def_levels_byte_len as usize);
    assert_eq!(num_nulls, 200);
    assert_eq!(buf.len(), rep + def + 1, "levels and the codes' bit width");
    // Definition levels: one repeated run of 1 (an element, null).
    assert_eq!(buf[rep..rep + def], [0x90, 0x03, 0x01]);
    let mut file = std::fs::read(&path).unwrap();
    let at = file
        .windows(buf.len())
        .position(|w| w == &buf[..])
        .expect("the page in the file");
    // The run's value made 2 (the element present) ...
    file[at + rep + 2] = 0x02;
    // ... and in the header just before, the v2 page's definition-level length (Thrift
    // compact: field 5, an i32, zigzag 3 = 6; then field 6) made 4.
    let header = &file[at.saturating_sub(64)..at];
    let field = header
        .windows(3)
        .rposition(|w| w == [0x15, 0x06, 0x15])
        .expect("the definition-level length in the page header");
    file[at.saturating_sub(64) + field + 1] = 0x08;
    std::fs::write(&path, &file).unwrap();
    let table = Table::open(&path).unwrap();
    let errors: Vec<String> = (table.scan().project(["l"]).build().unwrap())
        .filter_map(|b| b.err().map(|e| e.to_string()))
        .collect();
    // Pages count from the chunk's first, its dictionary page.
    let expected = format!(
        "{}: row group 0, column l: page 1: the levels promise 200 values, the page holds none",
        path.display()
    );
    assert!(
        errors.len() == 1 && errors[0].contains(&expected),
        "{errors:?}\nexpected: {expected}"
    );
}

/// Thousands of one-row row groups (the property test's layouts reach them): written
/// from one batch and scanned, with and without a filter.
#[test]
fn one_row_groups_are_read() {
    let batch = table(1, 3000, &DataType::Int64, false, 6, true, 5, 300);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.parquet");
    let layout = ParquetLayout::new(1, 1);
    common::write_parquet_layout(&path, batch.schema(), std::slice::from_ref(&batch), layout);
    let table = Table::open(&path).unwrap();
    let reference = common::read_parquet(&path);
    assert_eq!(reference, batch);
    check(&table, &reference, None, "one-row groups");
    check(
        &table,
        &reference,
        Some(&col("k").eq(3i64)),
        "one-row groups",
    );
}
