//! Sift files read by byte range (as from an object store): the same rows as a local scan
//! for every filter, thread count and limit; the footer in one request (two when it is
//! larger than the first read); no chunk fetched twice; a source that returns too few
//! bytes is an error, not a panic.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use arrow::compute::concat_batches;
use bytes::Bytes;
use common::{NCOLS, Nulls, TableSpec, write_sift};
use sift_format::{RangeOptions, RangeSource};
use sift_scan::{Table, parse_filter};

/// A file in memory, read by range, with every request recorded.
#[derive(Debug)]
struct Memory {
    bytes: Bytes,
    requests: AtomicU64,
    ranges: Mutex<Vec<Range<u64>>>,
    /// Return this many bytes fewer than asked for chunk reads.
    short: u64,
}

impl Memory {
    fn new(bytes: Vec<u8>, short: u64) -> Arc<Memory> {
        Arc::new(Memory {
            bytes: bytes.into(),
            requests: AtomicU64::new(0),
            ranges: Mutex::new(Vec::new()),
            short,
        })
    }
}

impl RangeSource for Memory {
    fn location(&self) -> &str {
        "mem://table.sift"
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

#[test]
fn scans_by_range_return_the_rows_of_local_scans() {
    let dir = tempfile::tempdir().unwrap();
    let (path, bytes) = sample(dir.path());
    let local = Table::open(&path).unwrap();
    let filters = [
        None,
        Some("i_small < 0 and s_low = 'AIR'"),
        Some("i_sorted >= 5000"),
        Some("d1 between date '1993-01-01' and date '1994-12-31' or f1 > 50"),
        Some("i_of_low = 3"),
    ];
    for filter in filters {
        for threads in [1, 2, 3] {
            for limit in [None, Some(7), Some(2500)] {
                let memory = Memory::new(bytes.clone(), 0);
                let remote =
                    Table::open_ranges(memory.clone(), true, RangeOptions::default()).unwrap();
                let want = rows(&local, filter, 1, limit);
                let got = rows(&remote, filter, threads, limit);
                assert_eq!(got, want, "{filter:?} threads {threads} limit {limit:?}");
                // No byte range is requested twice.
                let mut seen = memory.ranges.lock().unwrap().clone();
                seen.sort_by_key(|r| r.start);
                for w in seen.windows(2) {
                    assert!(
                        w[0].end <= w[1].start,
                        "{filter:?} threads {threads}: {seen:?}"
                    );
                }
            }
        }
    }
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
