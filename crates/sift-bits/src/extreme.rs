//! The largest or smallest of a slice of 64-bit integers, optionally only at the rows a
//! validity bitmap marks: what a `MIN`/`MAX` aggregate over one group folds per batch.
//!
//! Written here rather than left to the compiler: x86-64's baseline (SSE2) has no 64-bit
//! signed compare, so `iter().max()` compiles to a compare and a branch per value. With
//! AVX-512 (`VPMAXSQ`/`VPMINSQ`, masked by eight validity bits at a time) or AVX2
//! (`VPCMPGTQ` and a blend) a value costs a fraction of a cycle. [`extreme_scalar`] is the
//! reference.
//!
//! [`extremes_u32`] folds selected 32-bit codes (frame-of-reference codes wider than a
//! byte) to their smallest and largest in one pass; [`extremes_u32_scalar`] is its
//! reference.
//!
//! [`rank_extremes`] folds a dictionary's selected byte codes the same way without
//! looking up a value: through a table of the entries' ranks (their places in order of
//! value), so the extremes of the codes' ranks name the extreme entries.
//! [`rank_extremes_scalar`] is its reference.

use crate::dispatch::Level;

/// The smallest and largest rank, and the largest code, among the byte codes
/// [`rank_extremes`] admits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RankExtremes {
    pub lo: u8,
    pub hi: u8,
    /// The largest admitted code itself: a code past a dictionary's entries is found by
    /// comparing it with their count.
    pub top: u8,
}

impl RankExtremes {
    /// Both folded into one.
    pub fn fold(self, other: RankExtremes) -> RankExtremes {
        RankExtremes {
            lo: self.lo.min(other.lo),
            hi: self.hi.max(other.hi),
            top: self.top.max(other.top),
        }
    }
}

/// The extremes of `ranks[c]` over the byte codes `c` of `codes` whose bit is set in `sel`
/// (LSB first, at least `codes.len()` bits; `None`: every code), or `None` when no code
/// counts: a dictionary's `MIN` and `MAX` over selected codes, where `ranks` orders its
/// entries (the entry of rank `r` is the `r`-th smallest), with no entry looked up per
/// value. With AVX-512 (VBMI) a 64-code block is a masked load, two 128-byte table
/// permutes and a blend (`VPERMI2B`), and masked byte minima and maxima.
///
/// # Panics
/// If `sel` holds fewer than `codes.len()` bits.
pub fn rank_extremes(
    level: Level,
    codes: &[u8],
    sel: Option<&[u64]>,
    ranks: &[u8; 256],
) -> Option<RankExtremes> {
    if let Some(s) = sel {
        assert!(
            s.len() * 64 >= codes.len(),
            "selection of {} bits for {} codes",
            s.len() * 64,
            codes.len()
        );
    }
    #[cfg(target_arch = "x86_64")]
    if level.clamp() == Level::Avx512 {
        // SAFETY: `clamp` returned Avx512 only because avx512f/bw/vbmi were detected;
        // `sel` was checked above.
        return unsafe { avx512_ranks::rank_extremes(codes, sel, ranks) };
    }
    let _ = level;
    rank_extremes_scalar(codes, sel, ranks)
}

/// The portable reference for [`rank_extremes`].
pub fn rank_extremes_scalar(
    codes: &[u8],
    sel: Option<&[u64]>,
    ranks: &[u8; 256],
) -> Option<RankExtremes> {
    let counted = |i: usize| sel.is_none_or(|s| s[i / 64] >> (i % 64) & 1 == 1);
    (codes.iter().enumerate())
        .filter(|&(i, _)| counted(i))
        .map(|(_, &c)| {
            let r = ranks[usize::from(c)];
            RankExtremes {
                lo: r,
                hi: r,
                top: c,
            }
        })
        .reduce(RankExtremes::fold)
}

/// The smallest and largest of `values` whose bit is set in `sel` (LSB first, at least
/// `values.len()` bits; `None`: every value), or `None` when no value counts: the extremes
/// of frame-of-reference codes wider than a byte, folded in one pass. With AVX-512, 16
/// values at a time: a masked load and masked unsigned minima and maxima.
///
/// # Panics
/// If `sel` holds fewer than `values.len()` bits.
pub fn extremes_u32(level: Level, values: &[u32], sel: Option<&[u64]>) -> Option<(u32, u32)> {
    if let Some(s) = sel {
        assert!(
            s.len() * 64 >= values.len(),
            "selection of {} bits for {} values",
            s.len() * 64,
            values.len()
        );
    }
    #[cfg(target_arch = "x86_64")]
    if level.clamp() == Level::Avx512 {
        // SAFETY: `clamp` returned Avx512 only because avx512f was detected; `sel` was
        // checked above.
        return unsafe { avx512::extremes_u32(values, sel) };
    }
    let _ = level;
    extremes_u32_scalar(values, sel)
}

/// The portable reference for [`extremes_u32`].
pub fn extremes_u32_scalar(values: &[u32], sel: Option<&[u64]>) -> Option<(u32, u32)> {
    let counted = |i: usize| sel.is_none_or(|s| s[i / 64] >> (i % 64) & 1 == 1);
    (values.iter().enumerate())
        .filter(|&(i, _)| counted(i))
        .fold(None, |acc, (_, &v)| match acc {
            None => Some((v, v)),
            Some((lo, hi)) => Some((lo.min(v), hi.max(v))),
        })
}

/// The largest (`max`) or smallest value of `values` among the rows whose bit is set in
/// `valid` (LSB first, at least `values.len()` bits; `None`: every row), or `None` when no
/// row counts.
///
/// # Panics
/// If `valid` holds fewer than `values.len()` bits.
pub fn extreme_i64(level: Level, values: &[i64], valid: Option<&[u8]>, max: bool) -> Option<i64> {
    if let Some(v) = valid {
        assert!(
            v.len() * 8 >= values.len(),
            "validity of {} bits for {} values",
            v.len() * 8,
            values.len()
        );
    }
    #[cfg(target_arch = "x86_64")]
    match level.clamp() {
        // SAFETY: `clamp` returned Avx512 only because avx512f was detected.
        Level::Avx512 => return unsafe { avx512::extreme(values, valid, max) },
        // SAFETY: `clamp` returned Avx2 (or higher) only because avx2 was detected.
        Level::Avx2 if valid.is_none() => return unsafe { avx2::extreme(values, max) },
        _ => {}
    }
    let _ = level;
    extreme_scalar(values, valid, max)
}

/// The portable reference for [`extreme_i64`].
pub fn extreme_scalar(values: &[i64], valid: Option<&[u8]>, max: bool) -> Option<i64> {
    let counted = |i: usize| valid.is_none_or(|v| v[i / 8] >> (i % 8) & 1 == 1);
    let it = values
        .iter()
        .enumerate()
        .filter(|&(i, _)| counted(i))
        .map(|(_, &x)| x);
    if max { it.max() } else { it.min() }
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use std::arch::x86_64::*;

    /// [`super::extreme_i64`] eight values at a time, each lane folding the values its
    /// validity bit admits.
    ///
    /// # Safety
    /// The CPU must support avx512f; `valid`, if given, holds at least `values.len()` bits.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn extreme(values: &[i64], valid: Option<&[u8]>, max: bool) -> Option<i64> {
        let start = if max { i64::MIN } else { i64::MAX };
        let mut acc = _mm512_set1_epi64(start);
        let mut any: u8 = 0;
        let blocks = values.chunks_exact(8);
        let tail = blocks.remainder();
        for (b, block) in blocks.enumerate() {
            let m = valid.map_or(0xFF, |v| v[b]);
            any |= m;
            // SAFETY: `block` is exactly 8 values; the load is unaligned.
            let x = unsafe { _mm512_loadu_si512(block.as_ptr().cast()) };
            acc = if max {
                _mm512_mask_max_epi64(acc, m, acc, x)
            } else {
                _mm512_mask_min_epi64(acc, m, acc, x)
            };
        }
        let folded = if max {
            _mm512_reduce_max_epi64(acc)
        } else {
            _mm512_reduce_min_epi64(acc)
        };
        let done = values.len() - tail.len();
        let rest = super::extreme_scalar(tail, valid.map(|v| &v[done / 8..]), max);
        let body = (any != 0).then_some(folded);
        match (body, rest) {
            (Some(a), Some(b)) => Some(if max { a.max(b) } else { a.min(b) }),
            (a, b) => a.or(b),
        }
    }

    /// [`super::extremes_u32`] 16 values at a time.
    ///
    /// # Safety
    /// The CPU must support avx512f; `sel`, if given, holds at least `values.len()` bits.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn extremes_u32(values: &[u32], sel: Option<&[u64]>) -> Option<(u32, u32)> {
        let (mut lo, mut hi) = (_mm512_set1_epi32(-1), _mm512_setzero_si512());
        let mut any: u16 = 0;
        let mut at = 0usize;
        while at < values.len() {
            let n = (values.len() - at).min(16);
            let lanes: u16 = if n == 16 { u16::MAX } else { (1u16 << n) - 1 };
            // `at` is a multiple of 16: the block's 16 bits lie in one word.
            let k = lanes & sel.map_or(u16::MAX, |s| (s[at / 64] >> (at % 64)) as u16);
            any |= k;
            // SAFETY: lanes `..n` of the masked load lie inside `values` from `at` on.
            let v = unsafe { _mm512_maskz_loadu_epi32(lanes, values.as_ptr().add(at).cast()) };
            lo = _mm512_mask_min_epu32(lo, k, lo, v);
            hi = _mm512_mask_max_epu32(hi, k, hi, v);
            at += n;
        }
        (any != 0).then(|| (_mm512_reduce_min_epu32(lo), _mm512_reduce_max_epu32(hi)))
    }
}

#[cfg(target_arch = "x86_64")]
mod avx512_ranks {
    use std::arch::x86_64::*;

    use super::RankExtremes;

    /// [`super::rank_extremes`] 64 codes at a time.
    ///
    /// # Safety
    /// The CPU must support avx512f, avx512bw and avx512vbmi; `sel`, if given, holds at
    /// least `codes.len()` bits.
    #[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
    pub(crate) unsafe fn rank_extremes(
        codes: &[u8],
        sel: Option<&[u64]>,
        ranks: &[u8; 256],
    ) -> Option<RankExtremes> {
        // SAFETY: `ranks` is 256 bytes: four 64-byte unaligned loads.
        let t: [__m512i; 4] =
            std::array::from_fn(|r| unsafe { _mm512_loadu_si512(ranks[r * 64..].as_ptr().cast()) });
        let (mut lo, mut hi, mut top) = (
            _mm512_set1_epi8(-1),
            _mm512_setzero_si512(),
            _mm512_setzero_si512(),
        );
        let mut any = 0u64;
        let mut at = 0usize;
        while at < codes.len() {
            let n = (codes.len() - at).min(64);
            let lanes = if n == 64 { u64::MAX } else { (1u64 << n) - 1 };
            let k = lanes & sel.map_or(u64::MAX, |s| s[at / 64]);
            any |= k;
            // SAFETY: lanes `..n` of the masked load lie inside `codes` from `at` on.
            let c = unsafe { _mm512_maskz_loadu_epi8(lanes, codes.as_ptr().add(at).cast()) };
            // Bits 0–6 pick a byte of a 128-byte half; bit 7 picks the half.
            let low = _mm512_permutex2var_epi8(t[0], c, t[1]);
            let high = _mm512_permutex2var_epi8(t[2], c, t[3]);
            let r = _mm512_mask_blend_epi8(_mm512_movepi8_mask(c), low, high);
            lo = _mm512_mask_min_epu8(lo, k, lo, r);
            hi = _mm512_mask_max_epu8(hi, k, hi, r);
            top = _mm512_mask_max_epu8(top, k, top, c);
            at += n;
        }
        if any == 0 {
            return None;
        }
        let bytes = |v: __m512i| {
            let mut out = [0u8; 64];
            // SAFETY: `out` is 64 bytes; the store is unaligned.
            unsafe { _mm512_storeu_si512(out.as_mut_ptr().cast(), v) };
            out
        };
        Some(RankExtremes {
            lo: bytes(lo).into_iter().min().unwrap_or(u8::MAX),
            hi: bytes(hi).into_iter().max().unwrap_or(0),
            top: bytes(top).into_iter().max().unwrap_or(0),
        })
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    /// [`super::extreme_i64`] over every value, four lanes at a time.
    ///
    /// # Safety
    /// The CPU must support avx2.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn extreme(values: &[i64], max: bool) -> Option<i64> {
        let blocks = values.chunks_exact(4);
        let tail = blocks.remainder();
        if values.len() < 4 {
            return super::extreme_scalar(values, None, max);
        }
        let mut acc = _mm256_set1_epi64x(values[0]);
        for block in blocks {
            // SAFETY: `block` is exactly 4 values; the load is unaligned.
            let x = unsafe { _mm256_loadu_si256(block.as_ptr().cast()) };
            // Where the new value wins, take it.
            let wins = if max {
                _mm256_cmpgt_epi64(x, acc)
            } else {
                _mm256_cmpgt_epi64(acc, x)
            };
            acc = _mm256_blendv_epi8(acc, x, wins);
        }
        let mut lanes = [0i64; 4];
        // SAFETY: `lanes` is 32 bytes; the store is unaligned.
        unsafe { _mm256_storeu_si256(lanes.as_mut_ptr().cast(), acc) };
        let all = lanes.into_iter().chain(tail.iter().copied());
        if max { all.max() } else { all.min() }
    }
}
