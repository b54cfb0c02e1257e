//! Dictionary codes mapped to their 8-byte entries (`out[i] = table[codes[i]]`), with the
//! check that every code lies inside the table.
//!
//! Written here rather than left to the compiler: the scalar loop is a load, a bounds
//! check and a store per code, and the check needs a pass of its own to stay branch-free.
//! A dictionary of at most 64 entries fits in eight AVX-512 registers, so with AVX-512 the
//! lookup is a register permute (`VPERMI2Q` over two registers, blends on the index's
//! higher bits for four or eight) and the check a compare against the table's length, both
//! sixteen codes at a time with no load from the table. Low-cardinality columns (flags,
//! states, small enums: Parquet's dictionary pages) are the common case. Larger tables
//! are checked in one vectorised pass for the largest code, then looked up one load per
//! code (an AVX-512 gather was measured at half the scalar loop's speed here).
//! [`lookup_scalar`] is the reference.

use crate::dispatch::Level;

/// Entries of the largest table the register path holds.
pub const REGISTER_ENTRIES: usize = 64;

/// Codes below which the scalar loop is faster: loading the table into registers costs
/// about as much as looking up this many codes one by one.
const REGISTER_MIN_CODES: usize = 64;

/// Appends `table[c]` for every code `c` to `out` and returns `true`; returns `false`
/// (`out` unchanged) when a code is `table.len()` or more.
pub fn lookup_u64(level: Level, codes: &[u32], table: &[u64], out: &mut Vec<u64>) -> bool {
    #[cfg(target_arch = "x86_64")]
    if level.clamp() == Level::Avx512
        && codes.len() >= REGISTER_MIN_CODES
        && !table.is_empty()
        && table.len() <= REGISTER_ENTRIES
    {
        let start = out.len();
        out.reserve(codes.len());
        let spare = &mut out.spare_capacity_mut()[..codes.len()];
        // SAFETY: `clamp` returned Avx512 only because avx512f was detected; the table
        // holds 1..=64 entries and `spare` is as long as `codes`.
        let found = unsafe { avx512::lookup(codes, table, spare) };
        if found {
            // SAFETY: the kernel wrote every one of the `codes.len()` values after `start`.
            unsafe { out.set_len(start + codes.len()) };
        }
        return found;
    }
    // Larger tables: the largest code found first (vectorised where the level allows),
    // then one load per code with no bounds check left in the loop (1.5-2.1x a checked
    // loop at the AVX2 and AVX-512 levels on 256 and 32,768 entries).
    if !codes.is_empty() && largest(level, codes) as usize >= table.len() {
        return false;
    }
    out.extend(codes.iter().map(|&c| {
        // SAFETY: every code is below the largest, which is below `table.len()`.
        unsafe { *table.get_unchecked(c as usize) }
    }));
    true
}

/// The largest of `codes` (0 when empty): one `VPMAXUD` per eight codes with AVX2, where
/// the baseline (SSE2, no unsigned 32-bit maximum) takes a compare and blend emulation.
fn largest(level: Level, codes: &[u32]) -> u32 {
    #[cfg(target_arch = "x86_64")]
    if level.clamp() >= Level::Avx2 {
        // SAFETY: `clamp` returned Avx2 or higher only because avx2 was detected.
        return unsafe { largest_avx2(codes) };
    }
    let _ = level;
    fold_largest(codes)
}

/// [`largest`], compiled for AVX2 (the compiler vectorises the fold).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn largest_avx2(codes: &[u32]) -> u32 {
    fold_largest(codes)
}

/// The fold [`largest`] compiles at each level, inlined into each.
#[inline(always)]
fn fold_largest(codes: &[u32]) -> u32 {
    codes.iter().fold(0, |m, &c| m.max(c))
}

/// The portable reference for [`lookup_u64`]: the largest code checked in a pass of its
/// own, then one checked lookup per code.
pub fn lookup_scalar(codes: &[u32], table: &[u64], out: &mut Vec<u64>) -> bool {
    if !codes.is_empty() && fold_largest(codes) as usize >= table.len() {
        return false;
    }
    out.extend(codes.iter().map(|&c| table[c as usize]));
    true
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use std::arch::x86_64::*;
    use std::mem::MaybeUninit;

    /// [`super::lookup_u64`] sixteen codes at a time, the table held in registers.
    ///
    /// # Safety
    /// The CPU must support avx512f; `table` holds 1..=64 entries; `out` is as long as
    /// `codes`. Every value of `out` is written when it returns `true`.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn lookup(
        codes: &[u32],
        table: &[u64],
        out: &mut [MaybeUninit<u64>],
    ) -> bool {
        // The table padded to a power-of-two number of registers (1, 2, 4 or 8 of them;
        // a permute reads two). Codes past the table are caught by the length check;
        // the padding only keeps every permuted lane defined.
        let mut padded = [0u64; super::REGISTER_ENTRIES];
        padded[..table.len()].copy_from_slice(table);
        // SAFETY: `padded` holds 64 entries: eight registers' worth, loads unaligned.
        let t: [__m512i; 8] =
            std::array::from_fn(|r| unsafe { _mm512_loadu_si512(padded[r * 8..].as_ptr().cast()) });
        // SAFETY (all three): the caller's guarantees, passed on.
        match table.len() {
            ..=16 => unsafe { run::<0>(codes, table.len(), &t, out) },
            17..=32 => unsafe { run::<1>(codes, table.len(), &t, out) },
            _ => unsafe { run::<2>(codes, table.len(), &t, out) },
        }
    }

    /// The loop, for tables of `16 << BLENDS` entries at most: each code's entry is
    /// permuted out of a register pair chosen by its bits 4 (and 5) through `BLENDS` blends.
    ///
    /// # Safety
    /// The CPU must support avx512f; `out` is as long as `codes`.
    #[target_feature(enable = "avx512f")]
    unsafe fn run<const BLENDS: u32>(
        codes: &[u32],
        len: usize,
        t: &[__m512i; 8],
        out: &mut [MaybeUninit<u64>],
    ) -> bool {
        let limit = _mm512_set1_epi32(len as i32);
        let mut beyond: u16 = 0;
        let mut at = 0usize;
        while at < codes.len() {
            let n = (codes.len() - at).min(16);
            let lanes: u16 = if n == 16 { u16::MAX } else { (1u16 << n) - 1 };
            // SAFETY: lanes `..n` of the masked load and stores lie inside `codes` and
            // `out` from `at` on; masked-off lanes are neither read nor written.
            unsafe {
                let c = _mm512_maskz_loadu_epi32(lanes, codes.as_ptr().add(at).cast());
                beyond |= _mm512_mask_cmpge_epu32_mask(lanes, c, limit);
                let lo = _mm512_cvtepu32_epi64(_mm512_castsi512_si256(c));
                let hi = _mm512_cvtepu32_epi64(_mm512_extracti64x4_epi64::<1>(c));
                let dst = out.as_mut_ptr().add(at);
                _mm512_mask_storeu_epi64(dst.cast(), lanes as u8, pick::<BLENDS>(t, lo));
                // `wrapping_add`: with eight codes or fewer left this points past `out`,
                // and its store is masked off entirely.
                let dst8 = dst.wrapping_add(8);
                _mm512_mask_storeu_epi64(dst8.cast(), (lanes >> 8) as u8, pick::<BLENDS>(t, hi));
            }
            at += n;
        }
        beyond == 0
    }

    /// The entries of the eight 64-bit indices `idx` (below `16 << BLENDS`): permuted out
    /// of the register pair their bits 4 and 5 choose.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn pick<const BLENDS: u32>(t: &[__m512i; 8], idx: __m512i) -> __m512i {
        let pair = |r: usize| _mm512_permutex2var_epi64(t[r], idx, t[r + 1]);
        match BLENDS {
            0 => pair(0),
            1 => {
                let b4 = _mm512_test_epi64_mask(idx, _mm512_set1_epi64(16));
                _mm512_mask_blend_epi64(b4, pair(0), pair(2))
            }
            _ => {
                let b4 = _mm512_test_epi64_mask(idx, _mm512_set1_epi64(16));
                let b5 = _mm512_test_epi64_mask(idx, _mm512_set1_epi64(32));
                let low = _mm512_mask_blend_epi64(b4, pair(0), pair(2));
                let high = _mm512_mask_blend_epi64(b4, pair(4), pair(6));
                _mm512_mask_blend_epi64(b5, low, high)
            }
        }
    }
}
