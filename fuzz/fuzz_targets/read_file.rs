//! Arbitrary bytes as a Sift file: opening and reading it must return, never panic, hang or
//! allocate out of proportion to the input.
#![no_main]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use sift_format::{ReadOptions, SiftFile, TRAILER_LEN};

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
    if file.num_blocks() > 0 && file.schema().fields().len() > 1 {
        let _ = file.read_block(file.num_blocks() - 1, Some(&[1, 0]));
    }
}

/// The input with the footer checksum recomputed, if the trailer's footer length fits:
/// without this, almost every mutation of the footer stops at the checksum.
fn with_valid_footer_crc(data: &[u8]) -> Option<Vec<u8>> {
    let trailer = data.len().checked_sub(TRAILER_LEN)?;
    let len = u64::from_le_bytes(data.get(trailer..trailer + 8)?.try_into().ok()?);
    let start = trailer.checked_sub(usize::try_from(len).ok()?)?;
    let crc = crc32fast::hash(&data[start..trailer]);
    let mut fixed = data.to_vec();
    fixed[trailer + 8..trailer + 12].copy_from_slice(&crc.to_le_bytes());
    Some(fixed)
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
