//! Arbitrary bytes as a Sift file: opening and reading it must return, never panic, hang or
//! allocate out of proportion to the input.
#![no_main]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use sift_format::{ReadOptions, SiftFile};

mod common;
use common::with_valid_footer_crc;

/// One scratch file per process; the reader takes a path.
fn scratch() -> &'static PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| std::env::temp_dir().join(format!("sift-fuzz-{}.sift", std::process::id())))
}

fn read(path: &Path, data: &[u8], verify_checksums: bool) {
    if std::fs::write(path, data).is_err() {
        return;
    }
    let Ok(file) = SiftFile::open_with(
        path,
        ReadOptions {
            verify_checksums,
            ..ReadOptions::default()
        },
    ) else {
        return;
    };
    // Errors are fine; panics are what the fuzzer looks for.
    let _ = file.read_all(None);
    if file.num_blocks() > 0 && file.num_columns() > 1 {
        let _ = file.read_block(file.num_blocks() - 1, Some(&[1, 0]));
    }
}

fuzz_target!(|data: &[u8]| {
    let path = scratch();
    read(path, data, true);
    // Without checksums, damaged segments reach the decoders instead of stopping at the CRC.
    if let Some(fixed) = with_valid_footer_crc(data) {
        read(path, &fixed, false);
    } else {
        read(path, data, false);
    }
});
