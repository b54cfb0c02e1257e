//! Arbitrary bytes as a Sift file, scanned: the scan engine's encoded-domain paths —
//! predicates on encoded chunks (`filter_chunk`), selective decode (`decode_selected`) and
//! dictionary reads (`decode_dictionary`) — must return, never panic, hang or allocate out
//! of proportion to the input. Segment checksums are off and the footer checksum is
//! re-sealed, so damage reaches the decoders.
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;

mod common;
mod scans;
use common::with_valid_footer_crc;
use scans::scan;

/// One scratch file per process; the scan takes a path (with `.sift`: not read as Parquet).
fn scratch() -> &'static PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        std::env::temp_dir().join(format!("sift-fuzz-scan-{}.sift", std::process::id()))
    })
}

fuzz_target!(|data: &[u8]| {
    let path = scratch();
    match with_valid_footer_crc(data) {
        Some(fixed) => scan(path, &fixed),
        None => scan(path, data),
    }
});
