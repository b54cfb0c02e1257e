//! The crate's one error type.

use crate::pack::ShortBuffer;

/// Errors of the bit kernels. Every kernel validates its inputs up front and reports
/// mismatches as values, because packed buffers and bitmaps may come from files.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BitsError {
    /// A packed buffer holds fewer words than the requested values need.
    #[error("packed buffer too short: {needed} words needed, {available} available")]
    ShortBuffer {
        /// Words required.
        needed: usize,
        /// Words available.
        available: usize,
    },
    /// A bit width outside 0..=64, or wider than the output type.
    #[error("bit width {width} does not fit an output of {max} bits")]
    Width {
        /// The requested width.
        width: u32,
        /// The widest width allowed here.
        max: u32,
    },
    /// Two inputs that must describe the same rows have different lengths.
    #[error("length mismatch: {what} has {got}, expected {expected}")]
    Length {
        /// Which input.
        what: &'static str,
        /// Its length.
        got: usize,
        /// The length it must have.
        expected: usize,
    },
    /// A length whose bit count overflows `usize` (only reachable with hostile metadata).
    #[error("length {len} at width {width} overflows the address space")]
    Overflow {
        /// Number of values.
        len: usize,
        /// Bit width.
        width: u32,
    },
}

impl From<ShortBuffer> for BitsError {
    fn from(e: ShortBuffer) -> Self {
        BitsError::ShortBuffer {
            needed: e.needed,
            available: e.available,
        }
    }
}

/// Checks that `packed` holds `len` values of `width` bits; returns the word count.
pub(crate) fn check_packed(packed: &[u64], width: u32, len: usize) -> Result<usize, BitsError> {
    if width > 64 {
        return Err(BitsError::Width { width, max: 64 });
    }
    let needed = crate::pack::packed_words(len, width).ok_or(BitsError::Overflow { len, width })?;
    if packed.len() < needed {
        return Err(BitsError::ShortBuffer {
            needed,
            available: packed.len(),
        });
    }
    Ok(needed)
}
