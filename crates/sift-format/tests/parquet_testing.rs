//! Differential test against the `parquet` crate on apache/parquet-testing files: every file
//! whose columns Sift can store must come back exactly as the parquet crate read it; every
//! other file must be refused at `SiftWriter::create` with `UnsupportedType`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::fs::File;
use std::path::{Path, PathBuf};

use arrow::array::RecordBatchReader;
use arrow::record_batch::RecordBatch;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use sift_format::{Error, SiftWriter, WriteOptions, check_schema};

/// Fewest files that must convert; the corpus holds more (see the printed summary).
const MIN_CONVERTED: usize = 50;

/// Files that decompress to more than this are skipped (and counted as unreadable).
const MAX_INFLATED: i64 = 256 << 20;

fn data_dir() -> PathBuf {
    match std::env::var_os("PARQUET_TESTING_DIR") {
        Some(d) => PathBuf::from(d),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/parquet-testing/data"),
    }
}

fn parquet_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            parquet_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "parquet") {
            out.push(p);
        }
    }
}

fn read_parquet(path: &Path) -> Result<(arrow::datatypes::SchemaRef, Vec<RecordBatch>), String> {
    let file = File::open(path).map_err(|e| e.to_string())?;
    let builder = ParquetRecordBatchReaderBuilder::try_new(file).map_err(|e| e.to_string())?;
    // large_string_map.brotli.parquet inflates 4 KB into gigabytes; not for a debug-mode test.
    let inflated: i64 = builder
        .metadata()
        .row_groups()
        .iter()
        .map(|g| g.total_byte_size())
        .sum();
    if inflated > MAX_INFLATED {
        return Err(format!(
            "skipped: {inflated} bytes uncompressed (limit {MAX_INFLATED})"
        ));
    }
    let reader = builder.build().map_err(|e| e.to_string())?;
    let schema = reader.schema();
    let batches = reader
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())?;
    Ok((schema, batches))
}

#[test]
fn parquet_testing_files_round_trip() {
    let dir = data_dir();
    assert!(
        dir.is_dir(),
        "parquet-testing data not found at {} (the repository keeps a copy in testdata/parquet-testing/data; PARQUET_TESTING_DIR overrides it)",
        dir.display()
    );
    let mut files = Vec::new();
    parquet_files(&dir, &mut files);
    assert!(!files.is_empty(), "no *.parquet files in {}", dir.display());
    let tmp = tempfile::tempdir().unwrap();
    let (mut converted, mut refused, mut unreadable) = (Vec::new(), Vec::new(), Vec::new());
    for path in &files {
        let name = path
            .strip_prefix(&dir)
            .unwrap_or(path)
            .display()
            .to_string();
        let (schema, batches) = match read_parquet(path) {
            Ok(r) => r,
            Err(e) => {
                unreadable.push(format!("{name}: {e}"));
                continue;
            }
        };
        let target = tmp.path().join("out.sift");
        match check_schema(&schema) {
            Err(Error::UnsupportedType { column, data_type }) => {
                match SiftWriter::create(&target, schema.clone(), WriteOptions::default()) {
                    Err(Error::UnsupportedType { column: c, .. }) => {
                        assert_eq!(c, column, "{name}")
                    }
                    Err(other) => panic!("{name}: expected UnsupportedType, got {other}"),
                    Ok(_) => {
                        panic!("{name}: writer accepted column '{column}' of type {data_type}")
                    }
                }
                refused.push(format!("{name}: {column}: {data_type}"));
            }
            Err(other) => panic!("{name}: check_schema failed unexpectedly: {other}"),
            Ok(_) => {
                // Small blocks make even these small files span several blocks.
                for block_rows in [sift_format::MAX_BLOCK_ROWS, 1000] {
                    common::write(&target, &schema, &batches, block_rows);
                    let expected = arrow::compute::concat_batches(&schema, &batches).unwrap();
                    let (_, actual) = common::read(&target);
                    common::assert_same(&expected, &actual);
                }
                converted.push(format!(
                    "{name} ({} rows)",
                    batches.iter().map(|b| b.num_rows()).sum::<usize>()
                ));
            }
        }
    }
    println!("parquet-testing in {}:", dir.display());
    println!("converted ({}):", converted.len());
    converted.iter().for_each(|s| println!("  {s}"));
    println!("refused ({}):", refused.len());
    refused.iter().for_each(|s| println!("  {s}"));
    println!(
        "unreadable by the parquet crate, or skipped ({}):",
        unreadable.len()
    );
    unreadable.iter().for_each(|s| println!("  {s}"));
    println!(
        "summary: {} converted, {} refused, {} unreadable, {} files",
        converted.len(),
        refused.len(),
        unreadable.len(),
        files.len()
    );
    assert!(
        converted.len() >= MIN_CONVERTED,
        "only {} files converted (expected at least {MIN_CONVERTED})",
        converted.len()
    );
}
