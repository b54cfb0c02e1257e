//! Sift and Parquet files read by byte range (as from an object store): the same rows as a
//! local scan for every filter, thread count and limit; the footer in one request (two
//! when it is larger than the first read); no chunk fetched twice; a source that returns
//! too few bytes is an error, not a panic.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use arrow::array::Array;
use arrow::compute::concat_batches;
use bytes::Bytes;
use common::{NCOLS, Nulls, ParquetLayout, TableSpec, write_parquet_layout, write_sift};
use sift_format::{RangeOptions, RangeSource};
use sift_scan::{Table, parse_filter};

/// A file in memory, read by range, with every request recorded.
#[derive(Debug)]
struct Memory {
    location: String,
    bytes: Bytes,
    requests: AtomicU64,
    ranges: Mutex<Vec<Range<u64>>>,
    /// Return this many bytes fewer than asked for chunk reads.
    short: u64,
}

impl Memory {
    fn new(bytes: Vec<u8>, short: u64) -> Arc<Memory> {
        Self::named("mem://table.sift", bytes, short)
    }

    fn named(location: &str, bytes: Vec<u8>, short: u64) -> Arc<Memory> {
        Arc::new(Memory {
            location: location.to_string(),
            bytes: bytes.into(),
            requests: AtomicU64::new(0),
            ranges: Mutex::new(Vec::new()),
            short,
        })
    }
}

impl RangeSource for Memory {
    fn location(&self) -> &str {
        &self.location
    }

    fn read_suffix(&self, n: u64) -> std::io::Result<(Bytes, u64)> {
        self.requests.fetch_add(1, Ordering::Relaxed);
        let len = self.bytes.len() as u64;
        Ok((self.bytes.slice((len - n.min(len)) as usize..), len))
    }

    fn read_ranges(&self, ranges: &[Range<u64>]) -> std::io::Result<Vec<Bytes>> {
        self.requests
            .fetch_add(ranges.len() as u64, Ordering::Relaxed);
        self.ranges.lock().unwrap().extend(ranges.iter().cloned());
        Ok(ranges
            .iter()
            .map(|r| {
                let end = r.end.saturating_sub(self.short).max(r.start);
                self.bytes.slice(r.start as usize..end as usize)
            })
            .collect())
    }
}

fn sample(dir: &std::path::Path) -> (std::path::PathBuf, Vec<u8>) {
    let spec = TableSpec {
        rows: 9000,
        block_rows: 1000,
        nulls: vec![Nulls::Some; NCOLS],
        seed: 7,
    };
    let path = dir.join("t.sift");
    write_sift(&path, &spec.generate(), spec.block_rows);
    let bytes = std::fs::read(&path).unwrap();
    (path, bytes)
}

fn rows(
    table: &Table,
    filter: Option<&str>,
    threads: usize,
    limit: Option<u64>,
) -> arrow::array::RecordBatch {
    let mut b = table.scan().threads(threads);
    if let Some(f) = filter {
        b = b.filter(parse_filter(f).unwrap());
    }
    if let Some(n) = limit {
        b = b.limit(n);
    }
    let scan = b.build().unwrap();
    let schema = scan.schema();
    let batches: Vec<_> = scan.collect::<Result<_, _>>().unwrap();
    concat_batches(&schema, &batches).unwrap()
}

const FILTERS: [Option<&str>; 5] = [
    None,
    Some("i_small < 0 and s_low = 'AIR'"),
    Some("i_sorted >= 5000"),
    Some("d1 between date '1993-01-01' and date '1994-12-31' or f1 > 50"),
    Some("i_of_low = 3"),
];

/// No byte range was requested twice.
fn assert_no_range_twice(memory: &Memory, what: &str) {
    assert_no_range_twice_but(memory, &[], what);
}

/// No byte range was requested twice, but for requests of exactly one of `except`.
fn assert_no_range_twice_but(memory: &Memory, except: &[Range<u64>], what: &str) {
    let mut seen = memory.ranges.lock().unwrap().clone();
    seen.retain(|r| !except.contains(r));
    seen.sort_by_key(|r| r.start);
    for w in seen.windows(2) {
        assert!(w[0].end <= w[1].start, "{what}: {seen:?}");
    }
}

#[test]
fn scans_by_range_return_the_rows_of_local_scans() {
    let dir = tempfile::tempdir().unwrap();
    let (path, bytes) = sample(dir.path());
    let local = Table::open(&path).unwrap();
    for filter in FILTERS {
        for threads in [1, 2, 3] {
            for limit in [None, Some(7), Some(2500)] {
                let memory = Memory::new(bytes.clone(), 0);
                let remote =
                    Table::open_ranges(memory.clone(), true, RangeOptions::default()).unwrap();
                let want = rows(&local, filter, 1, limit);
                let got = rows(&remote, filter, threads, limit);
                let what = format!("{filter:?} threads {threads} limit {limit:?}");
                assert_eq!(got, want, "{what}");
                assert_no_range_twice(&memory, &what);
            }
        }
    }
}

/// Parquet files of every pruning layout (page index or not, Bloom filters or not), read
/// by range through Sift's Parquet scan: the rows of the local scan, the metadata with the
/// first request, no range requested twice, and only the row groups the statistics keep.
#[test]
fn parquet_scans_by_range_return_the_rows_of_local_scans() {
    let dir = tempfile::tempdir().unwrap();
    let spec = TableSpec {
        rows: 9000,
        block_rows: 1000,
        nulls: vec![Nulls::Some; NCOLS],
        seed: 11,
    };
    let batch = spec.generate();
    for seed in 0..4 {
        let layout = ParquetLayout::from_seed(seed, 1000);
        let path = dir.path().join(format!("t{seed}.parquet"));
        write_parquet_layout(&path, batch.schema(), std::slice::from_ref(&batch), layout);
        let bytes = std::fs::read(&path).unwrap();
        let local = Table::open(&path).unwrap();
        // A Bloom filter is read on its first probe with a request of its own, which may
        // lie in a gap that a coalesced request for chunks spanned.
        let blooms = bloom_ranges(&bytes);
        let has_index = matches!(
            layout.statistics,
            parquet::file::properties::EnabledStatistics::Page
        );
        for filter in FILTERS {
            for threads in [1, 2] {
                for limit in [None, Some(7)] {
                    let memory = Memory::named("mem://t.parquet", bytes.clone(), 0);
                    let remote =
                        Table::open_ranges(memory.clone(), true, RangeOptions::default()).unwrap();
                    let what = format!("{layout:?} {filter:?} threads {threads} limit {limit:?}");
                    // Opening reads the metadata from the first request, and the page
                    // index from it too or with one more.
                    let opened = memory.requests.load(Ordering::Relaxed);
                    let most = if has_index { 2 } else { 1 };
                    assert!((1..=most).contains(&opened), "{what}: {opened} requests");
                    let want = rows(&local, filter, 1, limit);
                    let got = rows(&remote, filter, threads, limit);
                    assert_eq!(got, want, "{what}");
                    assert_no_range_twice_but(&memory, &blooms, &what);
                }
            }
        }
        // A filter the row-group statistics decide reads only the row groups they keep.
        if !matches!(
            layout.statistics,
            parquet::file::properties::EnabledStatistics::None
        ) {
            // The first value from row 8500 of 9000 on: the last row group or two are kept.
            let sorted = batch.column(common::col_index("i_sorted"));
            let sorted = sorted
                .as_any()
                .downcast_ref::<arrow::array::Int64Array>()
                .unwrap();
            let at = (8500..9000).find_map(|i| sorted.is_valid(i).then(|| sorted.value(i)));
            let at = at.unwrap();
            let filter = format!("i_sorted >= {at}");
            let memory = Memory::named("mem://t.parquet", bytes.clone(), 0);
            let remote = Table::open_ranges(memory.clone(), true, RangeOptions::default()).unwrap();
            let scan = remote
                .scan()
                .filter(parse_filter(&filter).unwrap())
                .build()
                .unwrap();
            let n: usize = scan.map(|b| b.unwrap().num_rows()).sum();
            assert_eq!(n, rows(&local, Some(&filter), 1, None).num_rows());
            let fetched: u64 = memory
                .ranges
                .lock()
                .unwrap()
                .iter()
                .map(|r| r.end - r.start)
                .sum();
            assert!(
                fetched * 4 < bytes.len() as u64,
                "{layout:?}: fetched {fetched} of {} bytes",
                bytes.len()
            );
        }
    }
}

/// The byte ranges of a Parquet file's Bloom filters.
fn bloom_ranges(file: &[u8]) -> Vec<Range<u64>> {
    let meta = parquet::file::metadata::ParquetMetaDataReader::new()
        .parse_and_finish(&Bytes::copy_from_slice(file))
        .unwrap();
    let chunks = meta.row_groups().iter().flat_map(|g| g.columns());
    chunks
        .filter_map(|c| {
            let start = c.bloom_filter_offset()? as u64;
            Some(start..start + c.bloom_filter_length()? as u64)
        })
        .collect()
}

#[test]
fn the_footer_costs_one_request_or_two_when_large() {
    let dir = tempfile::tempdir().unwrap();
    let (_, bytes) = sample(dir.path());
    let memory = Memory::new(bytes.clone(), 0);
    let table = Table::open_ranges(memory.clone(), true, RangeOptions::default()).unwrap();
    assert_eq!(memory.requests.load(Ordering::Relaxed), 1);
    assert_eq!(table.num_rows(), 9000);
    // A first read smaller than the footer: one more request for the rest.
    let small = RangeOptions {
        footer_guess: 64,
        ..Default::default()
    };
    let memory = Memory::new(bytes, 0);
    let table = Table::open_ranges(memory.clone(), true, small).unwrap();
    assert_eq!(memory.requests.load(Ordering::Relaxed), 2);
    let local = Table::open(dir.path().join("t.sift")).unwrap();
    assert_eq!(
        rows(&table, Some("i_small = 3"), 1, None),
        rows(&local, Some("i_small = 3"), 1, None)
    );
}

#[test]
fn a_source_returning_too_few_bytes_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let (_, bytes) = sample(dir.path());
    let memory = Memory::new(bytes, 3);
    let table = Table::open_ranges(memory, true, RangeOptions::default()).unwrap();
    let result: Result<Vec<_>, _> = table.scan().build().unwrap().collect();
    let e = result.expect_err("short reads").to_string();
    assert!(
        e.contains("mem://table.sift") && e.contains("received"),
        "{e}"
    );
}

/// A Parquet object whose store returns too few bytes: a clear error naming the object,
/// at open (the footer read) or at the scan (the chunks), never a panic.
#[test]
fn a_parquet_source_returning_too_few_bytes_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let spec = TableSpec {
        rows: 3000,
        block_rows: 1000,
        nulls: vec![Nulls::Some; NCOLS],
        seed: 5,
    };
    let batch = spec.generate();
    let path = dir.path().join("t.parquet");
    let layout = ParquetLayout::from_seed(0, 1000);
    write_parquet_layout(&path, batch.schema(), std::slice::from_ref(&batch), layout);
    let memory = Memory::named("mem://t.parquet", std::fs::read(&path).unwrap(), 3);
    let e = match Table::open_ranges(memory, true, RangeOptions::default()) {
        Err(e) => e.to_string(),
        Ok(table) => {
            let result: Result<Vec<_>, _> = table.scan().build().unwrap().collect();
            result.expect_err("short reads").to_string()
        }
    };
    assert!(
        e.contains("mem://t.parquet") && e.contains("received"),
        "{e}"
    );
}
