//! Filtered scans of the parquet-testing corpus equal the reference: every file the
//! `parquet` crate reads is scanned with comparisons against values taken from the file
//! itself (its smallest, middle, largest and first values) and null tests on each column
//! (lists and structs too), and the rows must equal the reference filter applied to the
//! whole file as arrow-rs reads it. The files carry statistics of many writers and ages, page indexes
//! and Bloom filters, so this checks that pruning by them never drops a matching row.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::Path;

use arrow::array::*;
use arrow::compute::concat_batches;
use arrow::datatypes::*;
use arrow::record_batch::RecordBatch;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::arrow_reader::statistics::StatisticsConverter;
use parquet::file::statistics::Statistics;
use sift_scan::{CmpOp, Expr, Literal, Table, col};

/// The file as arrow-rs reads it, or `None` if it cannot, or if its metadata disagrees
/// with itself on its row count (the reader then returns fewer rows than the row groups
/// hold, which a scan reports as an error).
fn reference(path: &Path) -> Option<RecordBatch> {
    let file = std::fs::File::open(path).ok()?;
    let builder = ParquetRecordBatchReaderBuilder::try_new(file).ok()?;
    let md = builder.metadata();
    let groups: i64 = md.row_groups().iter().map(|g| g.num_rows()).sum();
    if groups != md.file_metadata().num_rows() {
        return None;
    }
    let reader = builder.build().ok()?;
    let schema = reader.schema();
    let batches = reader.collect::<Result<Vec<_>, _>>().ok()?;
    concat_batches(&schema, &batches).ok()
}

/// Value `i` of `a` as a filter literal, for the types the filter language compares.
fn literal(a: &dyn Array, i: usize) -> Option<Literal> {
    Some(match a.data_type() {
        DataType::Int8 => Literal::Int(a.as_primitive::<Int8Type>().value(i).into()),
        DataType::Int16 => Literal::Int(a.as_primitive::<Int16Type>().value(i).into()),
        DataType::Int32 => Literal::Int(a.as_primitive::<Int32Type>().value(i).into()),
        DataType::Int64 => Literal::Int(a.as_primitive::<Int64Type>().value(i).into()),
        DataType::UInt8 => Literal::Int(a.as_primitive::<UInt8Type>().value(i).into()),
        DataType::UInt16 => Literal::Int(a.as_primitive::<UInt16Type>().value(i).into()),
        DataType::UInt32 => Literal::Int(a.as_primitive::<UInt32Type>().value(i).into()),
        DataType::UInt64 => Literal::Int(a.as_primitive::<UInt64Type>().value(i).into()),
        DataType::Float32 => Literal::Float(a.as_primitive::<Float32Type>().value(i).into()),
        DataType::Float64 => Literal::Float(a.as_primitive::<Float64Type>().value(i)),
        DataType::Date32 => Literal::Date(a.as_primitive::<Date32Type>().value(i)),
        DataType::Utf8 => Literal::Str(a.as_string::<i32>().value(i).to_string()),
        DataType::LargeUtf8 => Literal::Str(a.as_string::<i64>().value(i).to_string()),
        DataType::Boolean => Literal::Bool(a.as_boolean().value(i)),
        _ => return None,
    })
}

/// Filters on column `name` built from its values: comparisons with the smallest,
/// middle, largest and first non-null values, and null tests.
fn filters(name: &str, a: &ArrayRef) -> Vec<Expr> {
    let mut out = vec![col(name).is_null(), col(name).is_not_null()];
    let valid: Vec<usize> = (0..a.len()).filter(|&i| a.is_valid(i)).collect();
    let Some(&first) = valid.first() else {
        return out;
    };
    if literal(a.as_ref(), first).is_none() {
        return out;
    }
    let sorted = arrow::compute::sort_to_indices(a, None, None).unwrap();
    let non_null: Vec<usize> = sorted
        .values()
        .iter()
        .map(|&i| i as usize)
        .filter(|&i| a.is_valid(i))
        .collect();
    let picks = [
        first,
        non_null[0],
        non_null[non_null.len() / 2],
        non_null[non_null.len() - 1],
    ];
    for i in picks {
        let Some(lit) = literal(a.as_ref(), i) else {
            continue;
        };
        if matches!(lit, Literal::Float(f) if f.is_nan()) {
            continue;
        }
        for op in [CmpOp::Eq, CmpOp::Lt, CmpOp::Ge, CmpOp::Ne] {
            out.push(Expr::Cmp {
                column: name.to_string(),
                op,
                value: lit.clone(),
            });
        }
    }
    out
}

/// The corpus's Parquet files, sorted.
fn corpus() -> Vec<std::path::PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/parquet-testing/data");
    assert!(dir.is_dir(), "{} is missing", dir.display());
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "parquet"))
        .collect();
    files.sort();
    files
}

#[test]
fn filtered_scans_of_the_corpus_equal_arrow_rs() {
    let (mut scanned, mut checks) = (0, 0);
    for path in &corpus() {
        let Some(batch) = reference(path) else {
            continue;
        };
        let table = Table::open(path).unwrap_or_else(|e| {
            panic!("{}: arrow-rs reads it, Sift does not: {e}", path.display())
        });
        // The columns of types the scan reads.
        let schema = batch.schema();
        let columns: Vec<usize> = (0..schema.fields().len())
            .filter(|&c| {
                let one = Schema::new(vec![schema.field(c).clone()]);
                sift_format::check_schema(&one).is_ok()
            })
            .collect();
        if columns.is_empty() {
            continue;
        }
        let batch = batch.project(&columns).unwrap();
        let names: Vec<String> = batch
            .schema()
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect();
        scanned += 1;
        for (c, name) in names.iter().enumerate() {
            // The null tests project every column (selections pushed into all of them);
            // the comparisons only the filtered one, to keep the test quick.
            for (k, f) in filters(name, batch.column(c)).into_iter().enumerate() {
                let project: Vec<usize> = match k {
                    0 | 1 => (0..names.len()).collect(),
                    _ => vec![c],
                };
                let want = common::filter_batch(&batch, Some(&f))
                    .project(&project)
                    .unwrap();
                let project: Vec<&String> = project.iter().map(|&i| &names[i]).collect();
                let scan = table.scan().project(project).filter(f.clone());
                let got = scan
                    .build()
                    .and_then(|s| {
                        let schema = s.schema();
                        let batches = s.collect::<Result<Vec<_>, _>>()?;
                        Ok(concat_batches(&schema, &batches)?)
                    })
                    .unwrap_or_else(|e| panic!("{}: {f}: {e}", path.display()));
                let what = || format!("{}: {f}", path.display());
                assert_eq!(got.num_rows(), want.num_rows(), "{}", what());
                assert_eq!(got.schema().fields(), want.schema().fields(), "{}", what());
                assert_eq!(got.columns(), want.columns(), "{}", what());
                checks += 1;
            }
        }
    }
    assert!(scanned >= 30, "only {scanned} files scanned");
    eprintln!("{checks} filtered scans of {scanned} files");
}

/// `extremes_only` without a filter (every row group whole) gives, folded over the row
/// groups, the smallest and largest value of every integer, date, time, timestamp and
/// decimal column as arrow-rs reads the file: statistics of many writers and ages. Where
/// every row group's statistics are exact, in the current `min_value`/`max_value` fields
/// and count the nulls, they answer, no byte of the column read; bounds in the deprecated `min`/`max`
/// fields (which old writers filled in signed order whatever the type) do not, and the
/// pages are read.
#[test]
fn extremes_of_the_corpus_equal_arrow_rs() {
    let (mut checked, mut from_stats, mut from_pages) = (0, 0, 0);
    for path in &corpus() {
        let Some(batch) = reference(path) else {
            continue;
        };
        let Ok(table) = Table::open(path) else {
            continue;
        };
        let file = std::fs::File::open(path).unwrap();
        let meta = ParquetRecordBatchReaderBuilder::try_new(file).unwrap();
        let (groups, descr) = (meta.metadata().row_groups(), meta.parquet_schema());
        for (c, field) in batch.schema().fields().iter().enumerate() {
            let Some(values) = common::wide_ints(batch.column(c)) else {
                continue;
            };
            let what = || format!("{}: {}", path.display(), field.name());
            let want = values
                .iter()
                .flatten()
                .min()
                .zip(values.iter().flatten().max());
            let mut scan = table
                .scan()
                .project([field.name()])
                .extremes_only()
                .build()
                .unwrap_or_else(|e| panic!("{}: {e}", what()));
            let pairs = scan
                .by_ref()
                .collect::<Result<Vec<_>, _>>()
                .unwrap_or_else(|e| panic!("{}: {e}", what()));
            let mut folded: Vec<i128> = Vec::new();
            for pair in &pairs {
                let pair = common::wide_ints(pair.column(0)).unwrap();
                assert_eq!(pair.len(), 2, "{}", what());
                folded.extend(pair.into_iter().flatten());
            }
            let got = folded.iter().min().zip(folded.iter().max());
            assert_eq!(got, want, "{}", what());
            checked += 1;
            // Where the extremes came from, for the columns whose row groups agree.
            let leaf = StatisticsConverter::try_new(field.name(), &batch.schema(), descr)
                .ok()
                .and_then(|s| s.parquet_column_index());
            let Some(leaf) = leaf else { continue };
            let stats = || groups.iter().map(|g| g.column(leaf).statistics());
            let read = scan.stats().bytes_read;
            let current = |s: Option<&Statistics>| {
                s.is_some_and(|s| {
                    !s.is_min_max_deprecated()
                        && s.min_is_exact()
                        && s.max_is_exact()
                        && (s.null_count_opt().is_some() || !field.is_nullable())
                })
            };
            let deprecated = |s: Option<&Statistics>| {
                s.is_some_and(|s| s.is_min_max_deprecated() && s.min_bytes_opt().is_some())
            };
            if stats().all(current) {
                assert_eq!(read, 0, "{}: exact statistics, yet bytes read", what());
                from_stats += 1;
            } else if stats().all(deprecated) && groups.iter().any(|g| g.num_rows() > 0) {
                assert!(read > 0, "{}: deprecated bounds taken as extremes", what());
                from_pages += 1;
            }
        }
    }
    assert!(checked >= 50, "only {checked} columns checked");
    assert!(
        from_stats >= 20 && from_pages >= 5,
        "{from_stats} from statistics, {from_pages} from pages"
    );
    eprintln!(
        "extremes of {checked} columns ({from_stats} from statistics, {from_pages} from deprecated ones' pages)"
    );
}
