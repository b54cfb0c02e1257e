//! Predicates evaluated directly on bit-packed codes, one result bit per value.
//!
//! For widths up to 32, a 64-bit window read at a value boundary holds `k = 64 / w` whole
//! fields, and all of them are compared at once with word arithmetic (Lamport 1975; Knuth,
//! TAOCP 7.1.3): with `H` the high bit of every field and `L` the other bits,
//!
//! - equality: `y = x ^ C`; a field of `y` is non-zero iff its bit in `((y & L) + L) | y`
//!   under `H` is set (the addition cannot carry out of a field);
//! - `a < b`: `d = (a | H) - (b & L)` never borrows across fields, and its field high bit
//!   says `a_low >= b_low`; then `a < b` iff `(¬a ∧ b) ∨ (¬(a ⊕ b) ∧ ¬d)` at `H`;
//! - `lo <= x <= hi` is `¬(x < lo) ∧ ¬(hi < x)`, one side dropped when its bound is trivial.
//!
//! PEXT by `H` then packs the `k` verdicts into consecutive bitmap bits. Reading windows at
//! value boundaries (not word boundaries) is what makes straddling widths work: no field is
//! ever split. Widths above 32 (one field per window) and the scalar level compare value by
//! value.

use crate::bitmap::Bitmap;
use crate::bitwriter::BitWriter;
use crate::dispatch::Level;
use crate::error::{BitsError, check_packed};
use crate::pack::low_mask;
use crate::predicate::{Predicate, Range};
use crate::unpack::read_bits;

/// Evaluates `pred` on the `len` codes of width `width` in `packed`.
pub fn compare(
    packed: &[u64],
    width: u32,
    len: usize,
    pred: Predicate,
) -> Result<Bitmap, BitsError> {
    compare_at(Level::active(), packed, width, len, pred)
}

/// `x == literal` for each code.
pub fn equal(packed: &[u64], width: u32, len: usize, literal: u64) -> Result<Bitmap, BitsError> {
    compare(packed, width, len, Predicate::Eq(literal))
}

/// `x < literal` for each code.
pub fn less_than(
    packed: &[u64],
    width: u32,
    len: usize,
    literal: u64,
) -> Result<Bitmap, BitsError> {
    compare(packed, width, len, Predicate::Lt(literal))
}

/// `lo <= x <= hi` for each code.
pub fn between(
    packed: &[u64],
    width: u32,
    len: usize,
    lo: u64,
    hi: u64,
) -> Result<Bitmap, BitsError> {
    compare(packed, width, len, Predicate::Between(lo, hi))
}

/// [`compare`] at an explicit level.
pub fn compare_at(
    level: Level,
    packed: &[u64],
    width: u32,
    len: usize,
    pred: Predicate,
) -> Result<Bitmap, BitsError> {
    let mut out = Bitmap::default();
    compare_into(level, packed, width, len, pred, &mut out)?;
    Ok(out)
}

/// [`compare_at`] writing into `out`, whose allocation is reused across calls.
pub fn compare_into(
    level: Level,
    packed: &[u64],
    width: u32,
    len: usize,
    pred: Predicate,
    out: &mut Bitmap,
) -> Result<(), BitsError> {
    check_packed(packed, width, len)?;
    let (lo, hi, negate) = match pred.range(low_mask(width)) {
        Range::Empty => {
            *out = Bitmap::zeros(len);
            return Ok(());
        }
        Range::All => {
            *out = Bitmap::ones(len);
            return Ok(());
        }
        Range::In { lo, hi } => (lo, hi, false),
        Range::Out { lo, hi } => (lo, hi, true),
    };
    let mut wr = BitWriter::new(std::mem::take(out).into_words(), len);
    #[cfg(target_arch = "x86_64")]
    if level.uses_bmi2() && width <= 32 {
        // SAFETY: `uses_bmi2` implies bmi1, bmi2 and popcnt were detected.
        unsafe { range_swar_bmi2(packed, width, len, lo, hi, &mut wr) };
        *out = finish(wr, len, negate);
        return Ok(());
    }
    let _ = level;
    range_scalar(packed, width, len, lo, hi, &mut wr);
    *out = finish(wr, len, negate);
    Ok(())
}

fn finish(wr: BitWriter, len: usize, negate: bool) -> Bitmap {
    let mut b = Bitmap::from_words_trusted(wr.finish(), len);
    if negate {
        b.not_assign();
    }
    b
}

/// Value-at-a-time reference.
fn range_scalar(packed: &[u64], width: u32, len: usize, lo: u64, hi: u64, wr: &mut BitWriter) {
    let mask = low_mask(width);
    for i in 0..len {
        let x = if width == 0 {
            0
        } else {
            read_bits(packed, i * width as usize, mask)
        };
        wr.put(u64::from(lo <= x && x <= hi), 1);
    }
}

/// Replicates `c` into the `k` fields of width `w`.
fn splat(c: u64, w: u32, k: u32) -> u64 {
    (0..k).fold(0, |acc, j| acc | (c << (j * w)))
}

/// Field-wise unsigned `a < b`, verdicts at `h` (the fields' high bits; `l` the rest).
#[inline(always)]
fn lt(a: u64, b: u64, h: u64, l: u64) -> u64 {
    let d = (a | h).wrapping_sub(b & l);
    ((!a & b) | (!(a ^ b) & !d)) & h
}

/// # Safety
/// The CPU must support bmi2 and popcnt; `width` must be in 1..=32.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "bmi1,bmi2,popcnt")]
unsafe fn range_swar_bmi2(
    packed: &[u64],
    width: u32,
    len: usize,
    lo: u64,
    hi: u64,
    wr_slot: &mut BitWriter,
) {
    use std::arch::x86_64::_pext_u64;
    let k = 64 / width;
    let fields = low_mask(k * width);
    let h = splat(1 << (width - 1), width, k);
    let l = fields & !h;
    let (lov, hiv) = (splat(lo, width, k), splat(hi, width, k));
    let max = low_mask(width);
    let mut local = BitWriter::take(wr_slot);
    let wr = &mut local;
    let mut i = 0usize;
    while i < len {
        let x = read_bits(packed, i * width as usize, fields);
        let hits = if lo == hi {
            let y = x ^ lov;
            !((((y & l) + l) | y) & h) & h
        } else if lo == 0 {
            !lt(hiv, x, h, l) & h
        } else if hi == max {
            !lt(x, lov, h, l) & h
        } else {
            !lt(x, lov, h, l) & !lt(hiv, x, h, l) & h
        };
        let n = (len - i).min(k as usize) as u32;
        wr.put(_pext_u64(hits, h) & low_mask(n), n);
        i += k as usize;
    }
    *wr_slot = local;
}
