//! Arbitrary bytes as a Parquet file, scanned: the footer and page index, row-group and
//! page pruning, Sift's own page reader (dictionary, PLAIN, DELTA and BYTE_STREAM_SPLIT
//! pages, definition levels, decompression), the `parquet` crate's reader behind it and
//! the whole-file Thrift check (`ParquetFile::check_all`) must return, never panic, hang
//! or allocate out of proportion to the input. Seed it with the Parquet test corpus (in
//! `fuzz/`): `cargo fuzz run scan_parquet corpus/scan_parquet seeds
//! ../testdata/damaged-parquet`, `seeds` holding the files of
//! `../testdata/parquet-testing/data` but `large_string_map.brotli.parquet`, a valid file
//! whose map column decodes from 4 KB to gigabytes (minutes under the sanitizer, past
//! libFuzzer's timeout).
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

/// libFuzzer's panic hook aborts on every panic, even one caught. The scan catches the
/// panics of the `parquet` crate's decoders (and of the arrow crates under them: an
/// overflow, an index out of bounds on damaged pages) and of arrow-ipc's reading of a
/// damaged embedded schema, and turns them into errors. So panics unwind here instead:
/// one the scan does not catch still reaches libFuzzer's wrapper, which aborts.
fn unwind_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        std::panic::set_hook(Box::new(|info| eprintln!("panic: {info}")));
    });
}

fuzz_target!(|data: &[u8]| {
    unwind_panics();
    scans::scan(scratch(), data);
    // The whole-file check that readers decoding the bytes themselves are given files
    // through: every page header, index and Bloom filter header walked.
    if let Ok(file) = sift_scan::ParquetFile::open(scratch()) {
        let _ = file.check_all();
    }
});
