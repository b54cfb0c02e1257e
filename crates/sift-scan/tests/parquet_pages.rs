//! Parquet pages read in place: filters evaluated on dictionary codes, PLAIN values and
//! definition levels, and projections decoding only the selected rows. Each case scans a
//! file written by arrow-rs, checks the rows against the reference evaluator on the
//! decoded batch, and checks from the scan's statistics that the pages were read in place
//! (not decoded by the `parquet` crate).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::Path;
use std::sync::Arc;

use arrow::array::*;
use arrow::datatypes::*;
use arrow::record_batch::RecordBatch;
use parquet::file::properties::WriterProperties;
use sift_scan::{Expr, ScanStats, Table, col, parse_filter};

const ROWS: usize = 40_000;

/// `mode`: 9 strings (one empty, one not ASCII) with nulls; `text`: thousands of
/// distinct strings; `bin`: non-UTF-8 binary. `id`: the row number (pages prune by it);
/// `big` and `price`: thousands of distinct values under one dictionary page per column
/// chunk (a dictionary far longer than any page's selected rows); `key`: 300 values in
/// first-seen order (a dictionary whose matching entries are not one code range, with
/// codes wider than a byte); `small`: 40 values (byte codes), null every 9th row.
fn batch() -> RecordBatch {
    let mix = |i: usize| (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 40;
    let big = Int64Array::from_iter_values((0..ROWS).map(|i| (mix(i) % 6_000) as i64 * 3 - 7_000));
    let price =
        Float64Array::from_iter_values((0..ROWS).map(|i| (mix(i + 11) % 5_000) as f64 / 4.0));
    let key =
        Int32Array::from_iter_values((0..ROWS).map(|i| ((mix(i + 3) % 300) as i32 * 7919) % 1000));
    let small =
        Int64Array::from_iter((0..ROWS).map(|i| (i % 9 != 4).then_some((mix(i + 5) % 40) as i64)));
    let id = Int64Array::from_iter_values(0..ROWS as i64);
    let words = [
        "MAIL", "SHIP", "AIR", "REG AIR", "", "TRUCK", "FOB", "RAIL", "naïve",
    ];
    let mode = StringArray::from_iter(
        (0..ROWS).map(|i| (i % 11 != 5).then(|| words[(mix(i + 7) % 9) as usize])),
    );
    let text = StringArray::from_iter_values(
        (0..ROWS).map(|i| format!("c{:x}-{}", mix(i + 9) % 9000, i % 7)),
    );
    let bin = BinaryArray::from_iter_values((0..ROWS).map(|i| vec![0xff, (mix(i) % 13) as u8]));
    let schema = Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("big", DataType::Int64, false),
        Field::new("price", DataType::Float64, false),
        Field::new("key", DataType::Int32, false),
        Field::new("small", DataType::Int64, true),
        Field::new("mode", DataType::Utf8, true),
        Field::new("text", DataType::Utf8, false),
        Field::new("bin", DataType::Binary, false),
    ]);
    let columns: Vec<ArrayRef> = vec![
        Arc::new(id),
        Arc::new(big),
        Arc::new(price),
        Arc::new(key),
        Arc::new(small),
        Arc::new(mode),
        Arc::new(text),
        Arc::new(bin),
    ];
    RecordBatch::try_new(Arc::new(schema), columns).unwrap()
}

fn write(path: &Path, batch: &RecordBatch, props: WriterProperties) -> Table {
    common::write_parquet_with(path, batch.schema(), std::slice::from_ref(batch), props);
    Table::open(path).unwrap()
}

/// Scans `filter` projecting every column; checks rows and that pages were read in place.
fn scan(table: &Table, batch: &RecordBatch, expr: &Expr) -> ScanStats {
    scan_projected(table, batch, expr, None).0
}

/// [`scan`] projecting every column, or only the column at index `column` of `batch`;
/// returns the scan's statistics and the number of rows it returned.
fn scan_projected(
    table: &Table,
    batch: &RecordBatch,
    expr: &Expr,
    column: Option<usize>,
) -> (ScanStats, usize) {
    let filter = expr.to_string();
    let expr = expr.clone();
    let mut want = common::filter_batch(batch, Some(&expr));
    let mut builder = table.scan();
    if let Some(c) = column {
        want = want.project(&[c]).unwrap();
        builder = builder.project([batch.schema().field(c).name().clone()]);
    }
    let mut scan = builder.filter(expr).build().unwrap();
    let got: Vec<RecordBatch> = scan.by_ref().map(|b| b.unwrap()).collect();
    let got = arrow::compute::concat_batches(&want.schema(), &got).unwrap();
    assert_eq!(got, want, "filter {filter}");
    let stats = scan.stats().clone();
    assert!(
        stats.parquet_pages_in_place > 0,
        "{filter}: no page read in place ({stats})"
    );
    assert_eq!(
        stats.parquet_chunks_decoded, 0,
        "{filter}: a chunk fell back ({stats})"
    );
    (stats, want.num_rows())
}

fn filters() -> Vec<Expr> {
    let parsed = [
        // A few rows of a long dictionary: only the entries they use are decoded.
        "big = 2",
        "big between -10 and 30",
        // Matching entries scattered over the codes: the code-set lookups.
        "key in (7, 919, 838, 500) and small >= 3",
        "key < 300",
        "small in (1, 4, 9, 16, 25, 36) or key = 0",
        "small is null and key > 900",
        "big > -1000000",
        // Strings: dictionary pages (with nulls) and PLAIN pages.
        "mode in ('MAIL', 'SHIP') and key > 100",
        "mode = 'naïve' or mode = ''",
        "mode like '%AIR' and text >= 'c8'",
        "mode is null and text like 'c1%-3'",
        "text = 'c2a-1' or big = 5",
    ];
    let mut out: Vec<Expr> = parsed.iter().map(|f| parse_filter(f).unwrap()).collect();
    out.push(col("price").lt(2.0));
    out.push(col("price").gte(1000.0).and(col("key").gt(500)));
    out
}

#[test]
fn dictionary_pages_filter_and_select_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let batch = batch();
    for (name, page_rows, v2) in [("small-pages", 700, false), ("large-pages", 20_000, true)] {
        let props = WriterProperties::builder()
            .set_dictionary_page_size_limit(1 << 20)
            .set_data_page_row_count_limit(page_rows)
            .set_write_batch_size(page_rows.min(1024))
            .set_max_row_group_row_count(Some(ROWS / 2))
            .set_writer_version(if v2 {
                parquet::file::properties::WriterVersion::PARQUET_2_0
            } else {
                parquet::file::properties::WriterVersion::PARQUET_1_0
            })
            .build();
        let table = write(&dir.path().join(format!("{name}.parquet")), &batch, props);
        for filter in &filters() {
            scan(&table, &batch, filter);
        }
    }
}

#[test]
fn plain_pages_filter_and_select_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let batch = batch();
    let props = WriterProperties::builder()
        .set_dictionary_enabled(false)
        .set_data_page_row_count_limit(3000)
        .set_write_batch_size(1000)
        .build();
    let table = write(&dir.path().join("plain.parquet"), &batch, props);
    for filter in &filters() {
        scan(&table, &batch, filter);
    }
}

/// A returned column that the filter's last test reads is decoded as each of its pages
/// is tested: the rows equal the reference's whatever the other tests and their order,
/// on dictionary and PLAIN pages; and under a limit that cuts the rows the test leaves
/// (where no column is read early).
#[test]
fn a_column_read_as_it_is_tested_equals_the_reference() {
    let dir = tempfile::tempdir().unwrap();
    let batch = batch();
    let filters = [
        "price < 300.5",
        "price < 300.5 and big > 0",
        "big > 0 and price < 300.5",
        "price < 300.5 or key = 7",
        "price >= 1000 and key < 500 and price < 1100",
        "small >= 20",
        "key in (7, 919) and small >= 3",
    ];
    for dictionary in [false, true] {
        let props = WriterProperties::builder()
            .set_dictionary_enabled(dictionary)
            .set_data_page_row_count_limit(3000)
            .set_write_batch_size(1000)
            .build();
        let table = write(
            &dir.path().join(format!("{dictionary}.parquet")),
            &batch,
            props,
        );
        for f in filters {
            let expr = parse_filter(f).unwrap();
            for c in [2, 4] {
                scan_projected(&table, &batch, &expr, Some(c));
                let want = common::filter_batch(&batch, Some(&expr))
                    .project(&[c])
                    .unwrap();
                let name = batch.schema().field(c).name().clone();
                for limit in [1, 777] {
                    let scan = table.scan().project([name.clone()]).filter(expr.clone());
                    let got: Vec<RecordBatch> = scan
                        .limit(limit)
                        .build()
                        .unwrap()
                        .map(|b| b.unwrap())
                        .collect();
                    let got = arrow::compute::concat_batches(&want.schema(), &got).unwrap();
                    let n = (limit as usize).min(want.num_rows());
                    assert_eq!(got, want.slice(0, n), "{f}, column {name}, limit {limit}");
                }
            }
        }
    }
}

/// Pages stored in the DELTA encodings (integers DELTA_BINARY_PACKED, strings and binary
/// DELTA_LENGTH_BYTE_ARRAY or DELTA_BYTE_ARRAY) and BYTE_STREAM_SPLIT (floats, and
/// integers in the second file), on version-1 and version-2 pages: each decoded to PLAIN
/// values when read, then filtered and selected as PLAIN pages are, no column chunk left to
/// the `parquet` crate.
#[test]
fn delta_and_split_pages_are_decoded_page_by_page() {
    use parquet::basic::Encoding::*;
    use parquet::file::properties::WriterVersion;
    use parquet::schema::types::ColumnPath;
    let dir = tempfile::tempdir().unwrap();
    let batch = batch();
    let files = [
        (
            "delta-v1",
            WriterVersion::PARQUET_1_0,
            [DELTA_BINARY_PACKED, DELTA_BYTE_ARRAY],
        ),
        (
            "split-v2",
            WriterVersion::PARQUET_2_0,
            [BYTE_STREAM_SPLIT, DELTA_LENGTH_BYTE_ARRAY],
        ),
    ];
    for (name, version, [ints, strings]) in files {
        let mut props = WriterProperties::builder()
            .set_dictionary_enabled(false)
            .set_writer_version(version)
            .set_data_page_row_count_limit(3000)
            .set_write_batch_size(1000);
        for field in batch.schema().fields() {
            let encoding = match field.data_type() {
                DataType::Float64 => BYTE_STREAM_SPLIT,
                DataType::Utf8 | DataType::Binary => strings,
                _ => ints,
            };
            props = props.set_column_encoding(ColumnPath::from(field.name().as_str()), encoding);
        }
        let table = write(
            &dir.path().join(format!("{name}.parquet")),
            &batch,
            props.build(),
        );
        for filter in &filters() {
            let stats = scan(&table, &batch, filter);
            assert!(
                stats.parquet_pages_unpacked > 0,
                "{name}, {filter}: no page decoded to PLAIN values ({stats})"
            );
        }
    }
}

/// With a page index, a filter on a sorted column reads only the pages holding candidate
/// rows: the other pages of every column are skipped unread (their bytes not counted).
#[test]
fn pages_without_candidate_rows_are_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let batch = batch();
    let props = WriterProperties::builder()
        .set_data_page_row_count_limit(500)
        .set_write_batch_size(500)
        .set_max_row_group_row_count(Some(ROWS / 2))
        .build();
    let table = write(&dir.path().join("indexed.parquet"), &batch, props);
    let all = scan(&table, &batch, &parse_filter("big > -1000000").unwrap());
    let few = scan(
        &table,
        &batch,
        &parse_filter("id between 1200 and 1300 and big > -1000000").unwrap(),
    );
    // 8 columns; rows 1200..=1300 lie in pages 2 of the first row group (500 rows each).
    assert_eq!(few.rows_scanned, 500, "{few}");
    assert_eq!(few.parquet_pages_in_place, 8, "{few}");
    assert!(all.parquet_pages_in_place >= 8 * 80, "{all}");
    // The dictionary pages are read whole; the data pages skipped are not read.
    assert!(few.bytes_read * 2 < all.bytes_read, "{few} vs {all}");
    // Ranges of rows across page and row-group boundaries.
    for filter in [
        "id between 499 and 501",
        "id < 10 or id > 39990",
        "id between 19999 and 20001 and small > 3",
    ] {
        scan(&table, &batch, &parse_filter(filter).unwrap());
    }
}

/// A column chunk whose dictionary overflows after a few pages (dictionary pages, then
/// PLAIN ones), filtered where few rows are still selected: each page is decided on its
/// own, the PLAIN pages testing only the selected rows' values, the dictionary pages
/// scanning their codes (selecting in a run stream walks every code anyway).
#[test]
fn pages_of_one_chunk_scan_or_select_each() {
    let dir = tempfile::tempdir().unwrap();
    let batch = batch();
    let props = WriterProperties::builder()
        .set_dictionary_page_size_limit(32 * 1024)
        .set_data_page_row_count_limit(2000)
        .set_write_batch_size(1000)
        .build();
    let path = dir.path().join("fallback.parquet");
    let table = write(&path, &batch, props);
    let file = std::fs::File::open(&path).unwrap();
    let reader = parquet::file::reader::SerializedFileReader::new(file).unwrap();
    let pages = parquet::file::reader::FileReader::get_row_group(&reader, 0)
        .unwrap()
        .get_column_page_reader(1)
        .unwrap();
    let encodings: Vec<_> = pages
        .map(|p| p.unwrap())
        .filter(|p| p.page_type() == parquet::basic::PageType::DATA_PAGE)
        .map(|p| p.encoding())
        .collect();
    assert!(
        encodings.contains(&parquet::basic::Encoding::PLAIN)
            && encodings.contains(&parquet::basic::Encoding::RLE_DICTIONARY),
        "{encodings:?}"
    );
    // `small = 3` selects about one row in 45; `big > 0` then sees only those.
    let expr = parse_filter("small = 3 and big > 0").unwrap();
    let selected = common::filter_batch(&batch, Some(&parse_filter("small = 3").unwrap()));
    let (stats, returned) = scan_projected(&table, &batch, &expr, Some(0));
    // Beside the projected ids: values of `big` decoded for some selected rows (its PLAIN
    // pages), not for all of them (its dictionary pages).
    let tested = stats.values_decoded - returned as u64;
    assert!(
        tested > 0 && tested < selected.num_rows() as u64,
        "{tested} of {} selected rows ({stats})",
        selected.num_rows()
    );
}

/// DELTA pages are decoded when their values are read: projecting a DELTA column at rows
/// of its first pages decodes those pages only, where the pages hold no index to skip the
/// others unread (no statistics, no page index).
#[test]
fn delta_pages_without_selected_rows_stay_packed() {
    let dir = tempfile::tempdir().unwrap();
    let batch = batch();
    let props = WriterProperties::builder()
        .set_dictionary_enabled(false)
        .set_column_encoding("big".into(), parquet::basic::Encoding::DELTA_BINARY_PACKED)
        .set_statistics_enabled(parquet::file::properties::EnabledStatistics::None)
        .set_data_page_row_count_limit(2000)
        .set_write_batch_size(1000)
        .build();
    let table = write(&dir.path().join("delta.parquet"), &batch, props);
    let read = |filter: &str| {
        let expr = parse_filter(filter).unwrap();
        scan_projected(&table, &batch, &expr, Some(1))
            .0
            .parquet_pages_unpacked
    };
    let first = read("id < 3000");
    let all = read("id >= 0");
    // 40,000 rows in pages of about 2,000; rows 0..3000 lie in the first two.
    assert!(all >= 15, "{all} pages decoded for every row");
    assert!((1..=3).contains(&first), "{first} of {all} pages decoded");
}

/// Unscaled decimal values of the decimal test columns: both signs, every byte width.
fn decimal_values() -> Vec<Option<i64>> {
    (0..ROWS)
        .map(|i| {
            let m = (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 40;
            let v = match i % 4 {
                0 => (m % 2_000) as i64 - 1_000,
                1 => (m % 50) as i64 * 100,
                2 => -((m % 900_000_000_000_000) as i64),
                _ => (m % 500) as i64 + 999_999_999_999_000,
            };
            (i % 13 != 6).then_some(v)
        })
        .collect()
}

/// Decimal columns as Parquet stores them: `d9` (precision 9, INT32), `d18` (INT64) and
/// `flba` (precision 16 as a 7-byte FIXED_LEN_BYTE_ARRAY, big-endian, as pyarrow writes
/// decimals), all nullable, with dictionary pages that fall back to PLAIN mid-chunk: read
/// in place, filtered exactly, against arrow-rs. Then again stored BYTE_STREAM_SPLIT, and
/// DELTA_BINARY_PACKED (integers) or DELTA_BYTE_ARRAY (the byte arrays), decoded to PLAIN
/// values page by page.
#[test]
fn decimal_pages_filter_and_select_in_place() {
    use parquet::basic::Encoding;
    for (ints, bytes) in [
        (None, None),
        (
            Some(Encoding::BYTE_STREAM_SPLIT),
            Some(Encoding::BYTE_STREAM_SPLIT),
        ),
        (
            Some(Encoding::DELTA_BINARY_PACKED),
            Some(Encoding::DELTA_BYTE_ARRAY),
        ),
    ] {
        decimal_pages(ints, bytes);
    }
}

/// [`decimal_pages_filter_and_select_in_place`] with the integer columns' values stored
/// as `ints` and the byte arrays' as `bytes` (dictionaries off), or dictionary-encoded.
fn decimal_pages(
    int_encoding: Option<parquet::basic::Encoding>,
    bytes_encoding: Option<parquet::basic::Encoding>,
) {
    use parquet::data_type::FixedLenByteArray;
    use parquet::file::writer::SerializedFileWriter;
    use parquet::schema::parser::parse_message_type;

    let dir = tempfile::tempdir().unwrap();
    let values = decimal_values();
    // Small values fit 9 digits; the wide ones only 18.
    let d9: Decimal128Array = values
        .iter()
        .map(|v| v.map(|v| i128::from(v % 100_000_000)))
        .collect::<Decimal128Array>()
        .with_precision_and_scale(9, 2)
        .unwrap();
    let d18: Decimal128Array = values
        .iter()
        .map(|v| v.map(i128::from))
        .collect::<Decimal128Array>()
        .with_precision_and_scale(18, 3)
        .unwrap();
    let ints = RecordBatch::try_from_iter([
        ("d9", Arc::new(d9) as ArrayRef),
        ("d18", Arc::new(d18) as ArrayRef),
    ])
    .unwrap();
    let props = |encoding: Option<parquet::basic::Encoding>| {
        let props = WriterProperties::builder()
            .set_dictionary_page_size_limit(4 << 10)
            .set_data_page_row_count_limit(1000)
            .set_write_batch_size(500);
        match encoding {
            Some(e) => props.set_dictionary_enabled(false).set_encoding(e),
            None => props,
        }
        .build()
    };
    let int_table = write(&dir.path().join("ints.parquet"), &ints, props(int_encoding));

    // The FIXED_LEN_BYTE_ARRAY column, through the column writer.
    let flba_path = dir.path().join("flba.parquet");
    let schema = Arc::new(
        parse_message_type("message m { optional fixed_len_byte_array(7) flba (DECIMAL(16, 3)); }")
            .unwrap(),
    );
    let file = std::fs::File::create(&flba_path).unwrap();
    let props = Arc::new(props(bytes_encoding));
    let mut writer = SerializedFileWriter::new(file, schema, props).unwrap();
    let mut group = writer.next_row_group().unwrap();
    let mut column = group.next_column().unwrap().unwrap();
    let present: Vec<FixedLenByteArray> = values
        .iter()
        .flatten()
        .map(|v| FixedLenByteArray::from(v.to_be_bytes()[1..].to_vec()))
        .collect();
    let levels: Vec<i16> = values.iter().map(|v| i16::from(v.is_some())).collect();
    column
        .typed::<parquet::data_type::FixedLenByteArrayType>()
        .write_batch(&present, Some(&levels), None)
        .unwrap();
    column.close().unwrap();
    group.close().unwrap();
    writer.close().unwrap();
    let flba_table = Table::open(&flba_path).unwrap();
    let flba = common::read_parquet(&flba_path);
    assert_eq!(
        flba.schema().field(0).data_type(),
        &DataType::Decimal128(16, 3)
    );

    for (table, batch, name) in [(&int_table, &ints, "d18"), (&flba_table, &flba, "flba")] {
        for f in [
            format!("{name} < -500.000"),
            format!("{name} between 0 and 4.9"),
            format!("{name} >= 999999999999.2"),
            format!("{name} = 1.2 or {name} is null"),
            format!("{name} in (-0.007, 4.9, 999999999999.499)"),
        ] {
            scan(table, batch, &parse_filter(&f).unwrap());
        }
    }
    for f in [
        "d9 < -5.5",
        "d9 between 0 and 49",
        "d9 > 300000 and d18 < 0",
    ] {
        scan(&int_table, &ints, &parse_filter(f).unwrap());
    }
}

/// 8- and 16-bit integers (INT32 pages, signed and unsigned) and booleans (PLAIN bits on
/// version-1 pages, RLE runs on version 2), with nulls, filtered and projected in place:
/// no column chunk is left to the `parquet` crate.
#[test]
fn narrow_integers_and_booleans_are_read_in_place() {
    use parquet::basic::Encoding;
    use parquet::file::properties::WriterVersion;
    use parquet::schema::types::ColumnPath;
    let dir = tempfile::tempdir().unwrap();
    let mix = |i: usize| (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 40;
    let batch = RecordBatch::try_from_iter_with_nullable([
        (
            "id",
            Arc::new(Int64Array::from_iter_values(0..ROWS as i64)) as ArrayRef,
            false,
        ),
        (
            "i8",
            Arc::new(Int8Array::from_iter(
                (0..ROWS).map(|i| (i % 7 != 3).then_some((mix(i) % 256) as u8 as i8)),
            )),
            true,
        ),
        (
            "i16",
            Arc::new(Int16Array::from_iter_values(
                (0..ROWS).map(|i| (mix(i + 1) % 65_536) as u16 as i16),
            )),
            false,
        ),
        (
            "u8",
            Arc::new(UInt8Array::from_iter_values(
                (0..ROWS).map(|i| (mix(i + 2) % 256) as u8),
            )),
            false,
        ),
        (
            "u16",
            Arc::new(UInt16Array::from_iter(
                (0..ROWS).map(|i| (i % 5 != 1).then_some((mix(i + 3) % 65_536) as u16)),
            )),
            true,
        ),
        (
            "b",
            Arc::new(BooleanArray::from_iter(
                (0..ROWS).map(|i| (i % 9 != 2).then_some(mix(i + 4) % 3 == 0)),
            )),
            true,
        ),
        // Long runs: RLE pages hold repeated runs as well as bit-packed ones.
        (
            "flag",
            Arc::new(BooleanArray::from(
                (0..ROWS)
                    .map(|i| (i / 700) % 2 == 0 || mix(i) % 50 == 0)
                    .collect::<Vec<bool>>(),
            )),
            false,
        ),
    ])
    .unwrap();
    let filters = [
        "i8 < -100 or i8 = 7",
        "i16 between -300 and 2000 and b = true",
        "u8 = 200 or u16 > 60000",
        "u16 is null and i8 > 0",
        "b is null or b = false",
        "flag = true and u8 < 20",
        "flag = false",
    ];
    for (name, version, dictionary) in [
        ("v1", WriterVersion::PARQUET_1_0, true),
        ("v2", WriterVersion::PARQUET_2_0, false),
    ] {
        let mut props = WriterProperties::builder()
            .set_writer_version(version)
            .set_dictionary_enabled(dictionary)
            .set_data_page_row_count_limit(3000)
            .set_write_batch_size(1000);
        if !dictionary {
            // PLAIN integers (version 2 would write them DELTA_BINARY_PACKED, which the
            // crate decodes), RLE booleans.
            props = props.set_encoding(Encoding::PLAIN);
            for c in ["b", "flag"] {
                props = props.set_column_encoding(ColumnPath::from(c), Encoding::RLE);
            }
        }
        let props = props.build();
        let table = write(&dir.path().join(format!("{name}.parquet")), &batch, props);
        for f in filters {
            scan(&table, &batch, &parse_filter(f).unwrap());
        }
    }
}

/// Unsigned 32- and 64-bit integers (INT32 and INT64 pages annotated unsigned), above the
/// signed range too, filtered and projected in place from dictionary pages (version 1)
/// and PLAIN pages (version 2); a dictionary holding 64-bit values beyond `i64` leaves its
/// chunk to the `parquet` crate, with the same rows.
#[test]
fn wide_unsigned_integers_are_read_in_place() {
    use parquet::file::properties::WriterVersion;
    let dir = tempfile::tempdir().unwrap();
    let mix = |i: usize| (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    let ids = || Arc::new(Int64Array::from_iter_values(0..ROWS as i64)) as ArrayRef;
    let fits = RecordBatch::try_from_iter_with_nullable([
        ("id", ids(), false),
        (
            "u32",
            Arc::new(UInt32Array::from_iter((0..ROWS).map(|i| {
                let v = [7, u32::MAX, 1 << 31, (mix(i) >> 32) as u32][i % 4];
                (i % 13 != 5).then_some(v)
            }))) as ArrayRef,
            true,
        ),
        (
            "u64",
            Arc::new(UInt64Array::from_iter_values(
                (0..ROWS).map(|i| [3, i64::MAX as u64, mix(i) % 5000][i % 3]),
            )),
            false,
        ),
    ])
    .unwrap();
    let beyond = RecordBatch::try_from_iter([
        ("id", ids()),
        (
            "u64",
            Arc::new(UInt64Array::from_iter_values(
                (0..ROWS).map(|i| [u64::MAX, 1 << 63, mix(i) % 5000][i % 3]),
            )),
        ),
    ])
    .unwrap();
    let props = |version, dictionary| {
        WriterProperties::builder()
            .set_writer_version(version)
            .set_dictionary_enabled(dictionary)
            .set_encoding(parquet::basic::Encoding::PLAIN)
            .set_data_page_row_count_limit(3000)
            .set_write_batch_size(1000)
            .build()
    };
    let filters = [
        "u32 > 3000000000",
        "u32 < 5 or u64 = 9223372036854775807",
        "u32 in (7, 4294967295) and u64 between 100 and 4000",
        "u32 is null or u64 < 4",
        "u32 between 2147483647 and 2147483648",
    ];
    let wide = [
        "u64 > 9223372036854775808",
        "u64 < 1000 or u64 = 9223372036854775808",
    ];
    for (name, version, dictionary) in [
        ("v1", WriterVersion::PARQUET_1_0, true),
        ("v2", WriterVersion::PARQUET_2_0, false),
    ] {
        let path = |what: &str| dir.path().join(format!("{name}-{what}.parquet"));
        let table = write(&path("fits"), &fits, props(version, dictionary));
        for f in filters {
            scan(&table, &fits, &parse_filter(f).unwrap());
        }
        let table = write(&path("beyond"), &beyond, props(version, dictionary));
        for f in wide {
            let expr = parse_filter(f).unwrap();
            if !dictionary {
                scan(&table, &beyond, &expr);
                continue;
            }
            let mut scan = table.scan().filter(expr.clone()).build().unwrap();
            let got: Vec<RecordBatch> = scan.by_ref().map(|b| b.unwrap()).collect();
            let got = arrow::compute::concat_batches(&beyond.schema(), &got).unwrap();
            assert_eq!(got, common::filter_batch(&beyond, Some(&expr)), "{f}");
            assert!(
                scan.stats().parquet_chunks_decoded > 0,
                "{f}: {}",
                scan.stats()
            );
        }
    }
}

/// 32-bit floats (FLOAT pages) with nulls, both zeros, infinities, subnormals and NaNs of
/// several payloads (a signalling one too), filtered and projected in place: dictionary
/// pages (a few distinct values), a dictionary that overflows into PLAIN pages (thousands),
/// and PLAIN pages only; every value comes back bit for bit.
#[test]
fn floats_are_read_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let mix = |i: usize| (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 40;
    let special = [
        0.0f32,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::MIN_POSITIVE / 8.0,
        f32::NAN,
        f32::from_bits(0xff80_0001),
        f32::from_bits(0x7fa0_1234),
        1.25,
        -3.75,
    ];
    let batch = RecordBatch::try_from_iter_with_nullable([
        (
            "id",
            Arc::new(Int64Array::from_iter_values(0..ROWS as i64)) as ArrayRef,
            false,
        ),
        (
            "few",
            Arc::new(Float32Array::from_iter((0..ROWS).map(|i| {
                (i % 11 != 4).then_some(special[mix(i) as usize % special.len()])
            }))),
            true,
        ),
        (
            "many",
            Arc::new(Float32Array::from_iter_values((0..ROWS).map(|i| {
                match mix(i + 1) % 97 {
                    0 => special[i % special.len()],
                    m => (mix(i + 2) % 100_000) as f32 / 64.0 - 700.0 + m as f32,
                }
            }))),
            false,
        ),
    ])
    .unwrap();
    let filters = [
        "few < 0.1",
        "few = 1.25 or many > 500.5",
        "few between -4 and 2 and many < 0",
        "few in (-3.75, 1.25) or many = 1.25",
        "few is null and many >= -100",
        "few > 1e30",
        "many <= 0 and few >= 0",
        "not (many between -650 and 800)",
    ];
    let dictionary = |limit: usize| {
        WriterProperties::builder()
            .set_dictionary_page_size_limit(limit)
            .set_data_page_row_count_limit(3000)
            .set_write_batch_size(1000)
            .build()
    };
    // Version 2 pages, PLAIN (the writer's default for `id` there is DELTA_BINARY_PACKED).
    let plain = WriterProperties::builder()
        .set_dictionary_enabled(false)
        .set_writer_version(parquet::file::properties::WriterVersion::PARQUET_2_0)
        .set_encoding(parquet::basic::Encoding::PLAIN)
        .set_data_page_row_count_limit(3000)
        .build();
    // Every column's bytes split into streams, decoded to PLAIN values page by page.
    let split = WriterProperties::builder()
        .set_dictionary_enabled(false)
        .set_encoding(parquet::basic::Encoding::BYTE_STREAM_SPLIT)
        .set_data_page_row_count_limit(3000)
        .build();
    for (name, props) in [
        ("dictionary", dictionary(1 << 20)),
        ("overflow", dictionary(4096)),
        ("plain", plain),
        ("split", split),
    ] {
        let table = write(&dir.path().join(format!("{name}.parquet")), &batch, props);
        for f in filters {
            scan(&table, &batch, &parse_filter(f).unwrap());
        }
    }
}

/// `extremes_only`: each block's `[min, max]` pairs of the integer columns, folded over the
/// scan, equal the extremes of the reference's filtered rows, for dictionary pages (byte
/// codes folded through ranks, wider codes looked up), PLAIN pages and the fallback, with
/// nulls, dense and sparse selections, and no filter at all.
#[test]
fn extremes_of_selected_rows_equal_the_reference() {
    use arrow::compute::kernels::aggregate::{max, min};
    let dir = tempfile::tempdir().unwrap();
    let batch = batch();
    let ints = ["id", "big", "key", "small"];
    let dictionary = |page_rows: usize| {
        WriterProperties::builder()
            .set_data_page_row_count_limit(page_rows)
            .set_write_batch_size(page_rows.min(1024))
            .set_max_row_group_row_count(Some(ROWS / 2))
            .build()
    };
    let plain = WriterProperties::builder()
        .set_dictionary_enabled(false)
        .set_data_page_row_count_limit(3000)
        .build();
    for (name, props) in [
        ("small-pages", dictionary(700)),
        ("large-pages", dictionary(20_000)),
        ("plain", plain),
    ] {
        let table = write(&dir.path().join(format!("{name}.parquet")), &batch, props);
        let mut cases: Vec<Option<Expr>> = filters().into_iter().map(Some).collect();
        cases.push(None);
        cases.push(Some(parse_filter("id = 17").unwrap()));
        cases.push(Some(parse_filter("big = 123456789").unwrap()));
        for expr in cases {
            let want = common::filter_batch(&batch, expr.as_ref());
            let mut scan = table.scan().project(ints).extremes_only();
            if let Some(e) = &expr {
                scan = scan.filter(e.clone());
            }
            let got: Vec<RecordBatch> = scan.build().unwrap().map(|b| b.unwrap()).collect();
            for (c, column) in ints.iter().enumerate() {
                let want = want.column_by_name(column).unwrap();
                let (lo, hi) = match want.data_type() {
                    DataType::Int32 => {
                        let a = want.as_primitive::<Int32Type>();
                        (min(a).map(i64::from), max(a).map(i64::from))
                    }
                    _ => {
                        let a = want.as_primitive::<Int64Type>();
                        (min(a), max(a))
                    }
                };
                let pairs: Vec<Option<i64>> = got
                    .iter()
                    .flat_map(|b| {
                        let a = arrow::compute::cast(b.column(c), &DataType::Int64).unwrap();
                        assert_eq!(a.len(), 2, "{column}: a block's extremes are two rows");
                        a.as_primitive::<Int64Type>().iter().collect::<Vec<_>>()
                    })
                    .collect();
                let got_lo = pairs.iter().flatten().min().copied();
                let got_hi = pairs.iter().flatten().max().copied();
                assert_eq!(
                    (got_lo, got_hi),
                    (lo, hi),
                    "{column}, {expr:?}, file {name}"
                );
            }
        }
    }
    // Columns without extremes, and a limit, are refused before any block is read.
    let table = Table::open(dir.path().join("plain.parquet")).unwrap();
    let err = table
        .scan()
        .project(["price"])
        .extremes_only()
        .build()
        .err()
        .unwrap();
    assert!(
        err.to_string().contains("extremes_only applies to integer"),
        "{err}"
    );
    let err = table
        .scan()
        .project(["id"])
        .extremes_only()
        .limit(3)
        .build()
        .err()
        .unwrap();
    assert!(err.to_string().contains("no rows to limit"), "{err}");
}

/// `extremes_only` with every row of a row group selected: the row group's statistics
/// answer, exact as arrow-rs writes them, and no byte of a column chunk is read. Checked
/// against the extremes of each row group's rows for signed and unsigned integers (values
/// past `i64::MAX`, where a signed reading of the bounds would be wrong), dates, decimals
/// and a row group whose values are all null; without statistics the pages are read and
/// give the same pairs.
#[test]
fn extremes_of_whole_row_groups_come_from_exact_statistics() {
    use parquet::file::properties::EnabledStatistics;
    const GROUP: usize = 1000;
    let rows = 3 * GROUP;
    let mix = |i: usize| (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    let tiny = Int8Array::from_iter((0..rows).map(|i| (i % 7 != 3).then_some(mix(i) as i8)));
    let wide = UInt64Array::from_iter_values((0..rows).map(|i| mix(i + 1) >> (i % 3)));
    let day = Date32Array::from_iter_values((0..rows).map(|i| (mix(i + 2) % 20_000) as i32 - 5000));
    let price = Decimal128Array::from_iter_values(
        (0..rows).map(|i| (mix(i + 3) % 1_000_000) as i128 - 400_000),
    )
    .with_precision_and_scale(12, 2)
    .unwrap();
    // Null in all of the second row group.
    let gap = Int64Array::from_iter(
        (0..rows).map(|i| (i / GROUP != 1).then_some((mix(i + 4) % 999) as i64)),
    );
    let columns: Vec<ArrayRef> = vec![
        Arc::new(tiny),
        Arc::new(wide),
        Arc::new(day),
        Arc::new(price),
        Arc::new(gap),
    ];
    let names = ["tiny", "wide", "day", "price", "gap"];
    let fields: Vec<Field> = (names.iter().zip(&columns))
        .map(|(n, c)| Field::new(*n, c.data_type().clone(), true))
        .collect();
    let batch = RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap();
    // Each row group's [min, max] of each column (None: all null).
    let want: Vec<Vec<Option<(i128, i128)>>> = (0..3)
        .map(|g| {
            let part = batch.slice(g * GROUP, GROUP);
            (part.columns().iter())
                .map(|a| {
                    let v = common::wide_ints(a).unwrap();
                    Some((
                        v.iter().flatten().min().copied()?,
                        v.iter().flatten().max().copied()?,
                    ))
                })
                .collect()
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    for (name, stats) in [
        ("with", EnabledStatistics::Chunk),
        ("without", EnabledStatistics::None),
    ] {
        let props = WriterProperties::builder()
            .set_statistics_enabled(stats)
            .set_max_row_group_row_count(Some(GROUP))
            .build();
        let table = write(&dir.path().join(format!("{name}.parquet")), &batch, props);
        let mut scan = table.scan().project(names).extremes_only().build().unwrap();
        let got: Vec<RecordBatch> = scan.by_ref().map(|b| b.unwrap()).collect();
        assert_eq!(got.len(), 3, "{name}: a pair per row group");
        for (g, pairs) in got.iter().enumerate() {
            for (c, column) in names.iter().enumerate() {
                let pair = pairs.column(c);
                assert_eq!(pair.data_type(), batch.column(c).data_type(), "{column}");
                let got = match common::wide_ints(pair).unwrap()[..] {
                    [Some(lo), Some(hi)] => Some((lo, hi)),
                    [None, None] => None,
                    ref other => panic!("{column}: pair {other:?}"),
                };
                assert_eq!(
                    got, want[g][c],
                    "{column}, row group {g}, statistics {name}"
                );
            }
        }
        let read = scan.stats().bytes_read;
        match name {
            "with" => assert_eq!(read, 0, "statistics {name}: {}", scan.stats()),
            _ => assert!(read > 0, "statistics {name}: {}", scan.stats()),
        }
    }
}
