//! Bitmap transforms of Parquet-Select for nested and filtered data.
//!
//! - [`extend`]: spread one bit per segment (record) over the segment's positions (values),
//!   given a bitmap of segment starts: `PDEP(b, m - 1) - PDEP(b, m)` per word, the select
//!   operator's mask expansion applied to bitmaps (repeated fields: record → value bitmap).
//! - [`deposit`]: `PDEP(filtered, select)`: a bitmap over the selected rows mapped back to
//!   all rows (the result of a second filter evaluated only on survivors of the first).
//! - [`extract`]: `PEXT(levels, valid)`: keep the bits at positions where `valid` is set
//!   (e.g. a row selection restricted to the non-null values).
//!
//! Each has a PDEP/PEXT path and a scalar one with software deposit/extract.

use crate::bitmap::Bitmap;
use crate::bitwriter::BitWriter;
use crate::dispatch::Level;
use crate::error::BitsError;

/// 64 bits of `words` starting at bit `pos` (zeros past the end).
#[inline(always)]
fn window(words: &[u64], pos: usize) -> u64 {
    let (i, o) = (pos / 64, (pos % 64) as u32);
    let lo = words.get(i).copied().unwrap_or(0) >> o;
    let hi = (words.get(i + 1).copied().unwrap_or(0) << 1) << (63 - o);
    lo | hi
}

/// Software PDEP: the low bits of `src` deposited at the set bits of `mask`, in order.
#[inline]
fn pdep_soft(mut src: u64, mut mask: u64) -> u64 {
    let mut r = 0;
    while mask != 0 {
        let low = mask & mask.wrapping_neg();
        if src & 1 == 1 {
            r |= low;
        }
        src >>= 1;
        mask &= mask - 1;
    }
    r
}

/// Software PEXT: the bits of `x` at the set bits of `mask`, packed to the bottom.
#[inline]
fn pext_soft(x: u64, mut mask: u64) -> u64 {
    let (mut r, mut k) = (0, 0);
    while mask != 0 {
        let low = mask & mask.wrapping_neg();
        if x & low != 0 {
            r |= 1 << k;
        }
        k += 1;
        mask &= mask - 1;
    }
    r
}

/// The three loops, instantiated once with software and once with hardware PDEP/PEXT (a
/// macro rather than a generic so the BMI2 instructions are emitted inside the
/// `target_feature` functions).
macro_rules! kernels {
    ($(#[$attr:meta])* [$($qual:tt)*], $extend:ident, $deposit:ident, $extract:ident, $pdep:path, $pext:path) => {
        $(#[$attr])*
        $($qual)* fn $extend(bits: &[u64], starts: &[u64]) -> Vec<u64> {
            let mut out = Vec::with_capacity(starts.len());
            let (mut carry, mut pos) = (0u64, 0usize);
            for &m in starts {
                let k = m.count_ones();
                let b = window(bits, pos);
                pos += k as usize;
                // Bit 0 always opens a segment: a real start, or the continuation of the
                // last segment of the previous word, whose bit is `carry`.
                let (mm, bb) = if m & 1 == 1 { (m, b) } else { (m | 1, (b << 1) | carry) };
                out.push($pdep(bb, mm - 1).wrapping_sub($pdep(bb, mm)));
                if k > 0 {
                    carry = (b >> (k - 1)) & 1;
                }
            }
            out
        }

        $(#[$attr])*
        $($qual)* fn $deposit(filtered: &[u64], select: &[u64]) -> Vec<u64> {
            let mut pos = 0usize;
            select
                .iter()
                .map(|&m| {
                    let r = $pdep(window(filtered, pos), m);
                    pos += m.count_ones() as usize;
                    r
                })
                .collect()
        }

        $(#[$attr])*
        // The writer by value: behind a `&mut` its cursor would go through memory on
        // every word (see `BitWriter::take`), a store-to-load wait per word.
        $($qual)* fn $extract(levels: &[u64], valid: &[u64], mut wr: BitWriter) -> BitWriter {
            for (&x, &m) in levels.iter().zip(valid) {
                wr.put($pext(x, m), m.count_ones());
            }
            wr
        }
    };
}

kernels!(
    [],
    extend_soft,
    deposit_soft,
    extract_soft,
    pdep_soft,
    pext_soft
);

#[cfg(target_arch = "x86_64")]
mod hw {
    use super::{BitWriter, window};
    use std::arch::x86_64::{_pdep_u64, _pext_u64};
    kernels!(
        /// # Safety
        /// The CPU must support bmi2 and popcnt.
        #[target_feature(enable = "bmi1,bmi2,popcnt")]
        [pub(super) unsafe], extend_bmi2, deposit_bmi2, extract_bmi2, _pdep_u64, _pext_u64
    );
}

/// Spreads `bits` (one per segment) over the positions of `starts`, where each set bit of
/// `starts` opens a segment running to the next set bit. Positions before the first start
/// get 0. `bits.len()` must equal the number of starts.
pub fn extend(bits: &Bitmap, starts: &Bitmap) -> Result<Bitmap, BitsError> {
    extend_at(Level::active(), bits, starts)
}

/// [`extend`] at an explicit level.
pub fn extend_at(level: Level, bits: &Bitmap, starts: &Bitmap) -> Result<Bitmap, BitsError> {
    expect_len("extend bits", bits.len(), starts.count_ones())?;
    #[cfg(target_arch = "x86_64")]
    if level.uses_bmi2() {
        // SAFETY: `uses_bmi2` implies bmi1, bmi2 and popcnt were detected.
        let words = unsafe { hw::extend_bmi2(bits.words(), starts.words()) };
        return Ok(Bitmap::from_words_trusted(words, starts.len()));
    }
    let _ = level;
    Ok(Bitmap::from_words_trusted(
        extend_soft(bits.words(), starts.words()),
        starts.len(),
    ))
}

/// Maps a bitmap over the selected rows back to all rows: `PDEP(filtered, select)`.
/// `filtered.len()` must equal `select.count_ones()`; the result has `select.len()` bits.
pub fn deposit(filtered: &Bitmap, select: &Bitmap) -> Result<Bitmap, BitsError> {
    deposit_at(Level::active(), filtered, select)
}

/// [`deposit`] at an explicit level.
pub fn deposit_at(level: Level, filtered: &Bitmap, select: &Bitmap) -> Result<Bitmap, BitsError> {
    expect_len("deposit filtered", filtered.len(), select.count_ones())?;
    #[cfg(target_arch = "x86_64")]
    if level.uses_bmi2() {
        // SAFETY: `uses_bmi2` implies bmi1, bmi2 and popcnt were detected.
        let words = unsafe { hw::deposit_bmi2(filtered.words(), select.words()) };
        return Ok(Bitmap::from_words_trusted(words, select.len()));
    }
    let _ = level;
    Ok(Bitmap::from_words_trusted(
        deposit_soft(filtered.words(), select.words()),
        select.len(),
    ))
}

/// Keeps the bits of `levels` at the positions where `valid` is set: `PEXT(levels, valid)`.
/// Both must have the same length; the result has `valid.count_ones()` bits.
pub fn extract(levels: &Bitmap, valid: &Bitmap) -> Result<Bitmap, BitsError> {
    extract_at(Level::active(), levels, valid)
}

/// [`extract`] at an explicit level.
pub fn extract_at(level: Level, levels: &Bitmap, valid: &Bitmap) -> Result<Bitmap, BitsError> {
    expect_len("extract levels", levels.len(), valid.len())?;
    let n = valid.count_ones();
    let wr = BitWriter::new(Vec::new(), n);
    #[cfg(target_arch = "x86_64")]
    if level.uses_bmi2() {
        // SAFETY: `uses_bmi2` implies bmi1, bmi2 and popcnt were detected.
        let wr = unsafe { hw::extract_bmi2(levels.words(), valid.words(), wr) };
        return Ok(Bitmap::from_words_trusted(wr.finish(), n));
    }
    let _ = level;
    let wr = extract_soft(levels.words(), valid.words(), wr);
    Ok(Bitmap::from_words_trusted(wr.finish(), n))
}

fn expect_len(what: &'static str, got: usize, expected: usize) -> Result<(), BitsError> {
    if got == expected {
        Ok(())
    } else {
        Err(BitsError::Length {
            what,
            got,
            expected,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn soft_pdep_pext_invert(x in any::<u64>(), m in any::<u64>()) {
            prop_assert_eq!(pext_soft(pdep_soft(x, m), m), x & crate::pack::low_mask(m.count_ones()));
        }
    }
}
