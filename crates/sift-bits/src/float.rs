//! Integers to scaled doubles: the inner loop of ALP decoding, `(d as f64 · a) · b` per
//! value, with the range check that makes the conversion exact fused into the same pass.
//!
//! `d as f64` is computed with the magic-number trick (add `d` to the bit pattern of
//! 1.5·2^52, reinterpret, subtract 1.5·2^52), exact for |d| ≤ 2^51. x86-64 without
//! AVX-512DQ has no vector int64→double conversion, so this is what lets the loop run
//! 8 (AVX-512F) or 4 (AVX2) lanes wide; the scalar reference uses the same arithmetic, so
//! every path gives the same bits.

use crate::dispatch::Level;

/// Largest |d| the conversion accepts.
pub const INT_LIMIT: i64 = 1 << 51;

/// 1.5 · 2^52: adding an integer of magnitude ≤ 2^51 to its bit pattern gives the double
/// `MAGIC + d` exactly.
const MAGIC: f64 = 6_755_399_441_055_744.0;

/// `d` as a double, exact for |d| ≤ 2^51.
#[inline(always)]
pub fn int_to_f64(d: i64) -> f64 {
    f64::from_bits(MAGIC.to_bits().wrapping_add(d as u64)) - MAGIC
}

/// `(d as f64 · a) · b`, the scalar definition every path matches.
#[inline(always)]
pub fn scale_one(d: i64, a: f64, b: f64) -> f64 {
    int_to_f64(d) * a * b
}

/// Replaces every integer `d` of `values` by the bit pattern of [`scale_one`]`(d, a, b)`.
/// Returns `false` if some |d| exceeds [`INT_LIMIT`]; `values` is then partly converted
/// and must be discarded.
pub fn scale_to_f64_bits(values: &mut [i64], a: f64, b: f64) -> bool {
    scale_to_f64_bits_at(Level::active(), values, a, b)
}

/// [`scale_to_f64_bits`] at an explicit level (clamped to what the CPU supports).
pub fn scale_to_f64_bits_at(level: Level, values: &mut [i64], a: f64, b: f64) -> bool {
    match level.clamp() {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the level is clamped to what the CPU supports, and Avx512 implies
        // avx512f.
        Level::Avx512 => unsafe { avx512::scale(values, a, b) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as above; Avx2 implies avx2.
        Level::Avx2 => unsafe { avx2::scale(values, a, b) },
        _ => scale_scalar(values, a, b),
    }
}

/// The reference path.
pub fn scale_scalar(values: &mut [i64], a: f64, b: f64) -> bool {
    let mut bad = false;
    for v in values.iter_mut() {
        let d = *v;
        bad |= (d as u64).wrapping_add(INT_LIMIT as u64) > 2 * INT_LIMIT as u64;
        *v = scale_one(d, a, b).to_bits() as i64;
    }
    !bad
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use super::{INT_LIMIT, MAGIC, scale_scalar};
    use std::arch::x86_64::*;

    /// # Safety
    /// The CPU must support avx512f.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn scale(values: &mut [i64], a: f64, b: f64) -> bool {
        let n = values.len() / 8 * 8;
        let (va, vb) = (_mm512_set1_pd(a), _mm512_set1_pd(b));
        let magic_f = _mm512_set1_pd(MAGIC);
        let magic_i = _mm512_set1_epi64(MAGIC.to_bits() as i64);
        let limit = _mm512_set1_epi64(INT_LIMIT);
        let span = _mm512_set1_epi64(2 * INT_LIMIT);
        let mut bad: __mmask8 = 0;
        for i in (0..n).step_by(8) {
            // SAFETY: `i + 8 <= n <= values.len()`, so the 64-byte load and store stay
            // inside `values`.
            unsafe {
                let p = values.as_mut_ptr().add(i);
                let d = _mm512_loadu_si512(p.cast());
                bad |= _mm512_cmpgt_epu64_mask(_mm512_add_epi64(d, limit), span);
                let f = _mm512_sub_pd(_mm512_castsi512_pd(_mm512_add_epi64(d, magic_i)), magic_f);
                let r = _mm512_mul_pd(_mm512_mul_pd(f, va), vb);
                _mm512_storeu_si512(p.cast(), _mm512_castpd_si512(r));
            }
        }
        scale_scalar(&mut values[n..], a, b) && bad == 0
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::{INT_LIMIT, MAGIC, scale_scalar};
    use std::arch::x86_64::*;

    /// # Safety
    /// The CPU must support avx2.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn scale(values: &mut [i64], a: f64, b: f64) -> bool {
        let n = values.len() / 4 * 4;
        let (va, vb) = (_mm256_set1_pd(a), _mm256_set1_pd(b));
        let magic_f = _mm256_set1_pd(MAGIC);
        let magic_i = _mm256_set1_epi64x(MAGIC.to_bits() as i64);
        let limit = _mm256_set1_epi64x(INT_LIMIT);
        let span = _mm256_set1_epi64x(2 * INT_LIMIT);
        let zero = _mm256_setzero_si256();
        let mut bad = _mm256_setzero_si256();
        for i in (0..n).step_by(4) {
            // SAFETY: `i + 4 <= n <= values.len()`, so the 32-byte load and store stay
            // inside `values`.
            unsafe {
                let p = values.as_mut_ptr().add(i);
                let d = _mm256_loadu_si256(p.cast());
                // d + LIMIT must lie in 0..=2·LIMIT (signed compares; no overflow for
                // any i64 d, as |LIMIT| is far from the wrap-around).
                let t = _mm256_add_epi64(d, limit);
                bad = _mm256_or_si256(bad, _mm256_cmpgt_epi64(t, span));
                bad = _mm256_or_si256(bad, _mm256_cmpgt_epi64(zero, t));
                let f = _mm256_sub_pd(_mm256_castsi256_pd(_mm256_add_epi64(d, magic_i)), magic_f);
                let r = _mm256_mul_pd(_mm256_mul_pd(f, va), vb);
                _mm256_storeu_si256(p.cast(), _mm256_castpd_si256(r));
            }
        }
        scale_scalar(&mut values[n..], a, b) && _mm256_testz_si256(bad, bad) == 1
    }
}
