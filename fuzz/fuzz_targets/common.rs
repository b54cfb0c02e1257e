//! Shared by the fuzz targets.

use sift_format::{TRAILER_LEN, seal_footer};

/// The input with every footer checksum recomputed (schema, chunk records, trailer), if
/// the trailer's footer length fits: without this, almost every mutation of the footer
/// stops at a checksum.
pub fn with_valid_footer_crc(data: &[u8]) -> Option<Vec<u8>> {
    let trailer = data.len().checked_sub(TRAILER_LEN)?;
    let len = u64::from_le_bytes(data.get(trailer..trailer + 8)?.try_into().ok()?);
    let start = trailer.checked_sub(usize::try_from(len).ok()?)?;
    let mut fixed = data.to_vec();
    let crc = seal_footer(&mut fixed[start..trailer])?;
    fixed[trailer + 8..trailer + 12].copy_from_slice(&crc.to_le_bytes());
    Some(fixed)
}
