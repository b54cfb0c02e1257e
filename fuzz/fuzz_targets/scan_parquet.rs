//! Arbitrary bytes as a Parquet file, scanned: the footer and page index, row-group and
//! page pruning, Sift's own page reader (dictionary and PLAIN pages, definition levels,
//! decompression) and the `parquet` crate's reader behind it must return, never panic,
//! hang or allocate out of proportion to the input. Seed it with the Parquet test corpus:
//! `cargo fuzz run scan_parquet fuzz/corpus/scan_parquet ../testdata/parquet-testing/data`.
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;

mod scans;

/// One scratch file per process; the scan takes a path (with `.parquet`: read as Parquet).
fn scratch() -> &'static PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        std::env::temp_dir().join(format!("sift-fuzz-scan-{}.parquet", std::process::id()))
    })
}

fuzz_target!(|data: &[u8]| scans::scan(scratch(), data));
