//! AVX2 range compares: with the sign bit added to both sides, VPSUB + VPCMPGT give the
//! lanes outside the range, gathered into bits by VPMOVMSKB (u8, u16 after VPACKSSWB),
//! MOVMSKPS (u32) or MOVMSKPD (u64).

use std::arch::x86_64::*;

/// Runs `word` on each whole block of 64 values, whose out-of-range bits it returns, and
/// stores the in-range bits (complemented if `negate`). Returns the number of values done.
#[inline(always)]
fn each_word<T>(
    values: &[T],
    negate: bool,
    out: &mut [u64],
    mut word: impl FnMut(&[T]) -> u64,
) -> usize {
    let keep = if negate { 0 } else { u64::MAX };
    let mut done = 0;
    for (o, block) in out.iter_mut().zip(values.chunks_exact(64)) {
        *o = word(block) ^ keep;
        done += 64;
    }
    done
}

/// Loads 32 bytes at `v`.
///
/// # Safety
/// `v` must hold at least 32 bytes; the CPU must support avx2.
#[inline(always)]
unsafe fn load<T>(v: &[T]) -> __m256i {
    debug_assert!(std::mem::size_of_val(v) >= 32);
    // SAFETY: guaranteed by the caller; the load is unaligned.
    unsafe { _mm256_loadu_si256(v.as_ptr().cast()) }
}

/// # Safety
/// The CPU must support avx2. Requires `lo <= hi`.
#[target_feature(enable = "avx2")]
pub(crate) unsafe fn range_u8(
    values: &[u8],
    lo: u8,
    hi: u8,
    negate: bool,
    out: &mut [u64],
) -> usize {
    let base = _mm256_set1_epi8((lo ^ 0x80) as i8);
    let lim = _mm256_set1_epi8((hi.wrapping_sub(lo) ^ 0x80) as i8);
    each_word(values, negate, out, |b| {
        let mut word = 0;
        for (j, v) in b.chunks_exact(32).enumerate() {
            // SAFETY: `v` holds 32 bytes; avx2 is enabled in this function.
            let x = unsafe { load(v) };
            let outside = _mm256_cmpgt_epi8(_mm256_sub_epi8(x, base), lim);
            word |= u64::from(_mm256_movemask_epi8(outside) as u32) << (32 * j);
        }
        word
    })
}

/// # Safety
/// The CPU must support avx2. Requires `lo <= hi`.
#[target_feature(enable = "avx2")]
pub(crate) unsafe fn range_u16(
    values: &[u16],
    lo: u16,
    hi: u16,
    negate: bool,
    out: &mut [u64],
) -> usize {
    let base = _mm256_set1_epi16((lo ^ 0x8000) as i16);
    let lim = _mm256_set1_epi16((hi.wrapping_sub(lo) ^ 0x8000) as i16);
    each_word(values, negate, out, |b| {
        let mut word = 0;
        for (j, v) in b.chunks_exact(32).enumerate() {
            // SAFETY: `v` and `v[16..]` hold 32 bytes each; avx2 is enabled here.
            let (x0, x1) = unsafe { (load(v), load(&v[16..])) };
            let o0 = _mm256_cmpgt_epi16(_mm256_sub_epi16(x0, base), lim);
            let o1 = _mm256_cmpgt_epi16(_mm256_sub_epi16(x1, base), lim);
            // VPACKSSWB interleaves the 128-bit halves: [o0 lo, o1 lo, o0 hi, o1 hi].
            let packed = _mm256_permute4x64_epi64::<0b11_01_10_00>(_mm256_packs_epi16(o0, o1));
            word |= u64::from(_mm256_movemask_epi8(packed) as u32) << (32 * j);
        }
        word
    })
}

/// # Safety
/// The CPU must support avx2. Requires `lo <= hi`.
#[target_feature(enable = "avx2")]
pub(crate) unsafe fn range_u32(
    values: &[u32],
    lo: u32,
    hi: u32,
    negate: bool,
    out: &mut [u64],
) -> usize {
    let base = _mm256_set1_epi32((lo ^ 0x8000_0000) as i32);
    let lim = _mm256_set1_epi32((hi.wrapping_sub(lo) ^ 0x8000_0000) as i32);
    each_word(values, negate, out, |b| {
        let mut word = 0;
        for (j, v) in b.chunks_exact(8).enumerate() {
            // SAFETY: `v` holds 32 bytes; avx2 is enabled in this function.
            let x = unsafe { load(v) };
            let outside = _mm256_cmpgt_epi32(_mm256_sub_epi32(x, base), lim);
            let bits = _mm256_movemask_ps(_mm256_castsi256_ps(outside)) as u32;
            word |= u64::from(bits) << (8 * j);
        }
        word
    })
}

/// # Safety
/// The CPU must support avx2. Requires `lo <= hi`.
#[target_feature(enable = "avx2")]
pub(crate) unsafe fn range_u64(
    values: &[u64],
    lo: u64,
    hi: u64,
    negate: bool,
    out: &mut [u64],
) -> usize {
    const S: u64 = 1 << 63;
    let base = _mm256_set1_epi64x((lo ^ S) as i64);
    let lim = _mm256_set1_epi64x((hi.wrapping_sub(lo) ^ S) as i64);
    each_word(values, negate, out, |b| {
        let mut word = 0;
        for (j, v) in b.chunks_exact(4).enumerate() {
            // SAFETY: `v` holds 32 bytes; avx2 is enabled in this function.
            let x = unsafe { load(v) };
            let outside = _mm256_cmpgt_epi64(_mm256_sub_epi64(x, base), lim);
            let bits = _mm256_movemask_pd(_mm256_castsi256_pd(outside)) as u32;
            word |= u64::from(bits) << (4 * j);
        }
        word
    })
}
