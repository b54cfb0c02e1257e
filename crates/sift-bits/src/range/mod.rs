//! Inclusive range tests on decoded unsigned values, one result bit per value.
//!
//! `lo <= x <= hi` is a single unsigned compare after moving the origin to `lo`:
//! `x - lo <= hi - lo` (wrapping), because values below `lo` wrap to above `hi - lo`.
//! AVX-512BW compares 64 / 32 / 16 / 8 lanes (u8 / u16 / u32 / u64) per instruction straight
//! into a mask register, which is (part of) a bitmap word. AVX2 has only signed compares:
//! adding the sign bit `s` to both sides keeps the order, and `x - (lo ^ s)` is `(x - lo) ^ s`,
//! so one subtraction and one signed greater-than give the lanes *outside* the range, which
//! VPMOVMSKB / MOVMSKPS / MOVMSKPD gather into bits.
//!
//! Kernels work on whole words of 64 values; a ragged tail is copied into a zeroed block of
//! 64, run through the same kernel, and its bits past the end cleared.

#[cfg(target_arch = "x86_64")]
pub(crate) mod avx2;
#[cfg(target_arch = "x86_64")]
pub(crate) mod avx512;

use crate::bitmap::Bitmap;
use crate::dispatch::Level;
use crate::pack::low_mask;
use crate::unpack::Lane;

/// Sets bit `i` of `out` to `lo <= values[i] <= hi`, complemented if `negate`; `out` gets
/// `values.len()` bits (its allocation is reused). With `lo > hi` no value is in the range.
pub fn compare_values<T: Lane>(
    level: Level,
    values: &[T],
    lo: T,
    hi: T,
    negate: bool,
    out: &mut Bitmap,
) {
    let mut words = std::mem::take(out).into_words();
    words.clear();
    words.resize(values.len().div_ceil(64), 0);
    range_words(level, values, lo, hi, negate, &mut words);
    *out = Bitmap::from_words_trusted(words, values.len());
}

/// The kernel behind [`compare_values`]: writes the first `values.len().div_ceil(64)` words
/// of `out` (fewer if `out` is shorter), bits past `values.len()` zero.
pub(crate) fn range_words<T: Lane>(
    level: Level,
    values: &[T],
    lo: T,
    hi: T,
    negate: bool,
    out: &mut [u64],
) {
    let flip = if negate { u64::MAX } else { 0 };
    let full = values.len() / 64 * 64;
    let (head, tail) = values.split_at(full);
    let (out_head, out_tail) = out.split_at_mut((full / 64).min(out.len()));
    if lo.to_u64() > hi.to_u64() {
        out_head.fill(flip);
        if let Some(o) = out_tail.first_mut().filter(|_| !tail.is_empty()) {
            *o = flip & low_mask(tail.len() as u32);
        }
        return;
    }
    let done = T::range_simd(level, head, lo, hi, negate, out_head);
    for (o, block) in out_head
        .iter_mut()
        .zip(head.chunks_exact(64))
        .skip(done / 64)
    {
        *o = range_block_scalar(block, lo, hi) ^ flip;
    }
    if let Some(o) = out_tail.first_mut().filter(|_| !tail.is_empty()) {
        let mut block = [T::default(); 64];
        block[..tail.len()].copy_from_slice(tail);
        let mut word = [0u64];
        let word = if T::range_simd(level, &block, lo, hi, negate, &mut word) == 64 {
            word[0]
        } else {
            range_word_scalar(tail, lo, hi) ^ flip
        };
        *o = word & low_mask(tail.len() as u32);
    }
}

/// Range-compares bit-packed codes with the fused AVX-512 kernel, filling whole words of
/// `out` from the start; returns the number of values done (a multiple of 64, 0 at other
/// levels). Requires `lo <= hi`, both below `2^width`, and `packed` to hold at least
/// `64 · out.len()` codes.
pub(crate) fn packed_range_simd(
    level: Level,
    packed: &[u64],
    width: u32,
    lo: u64,
    hi: u64,
    negate: bool,
    out: &mut [u64],
) -> usize {
    #[cfg(target_arch = "x86_64")]
    if level.clamp() == Level::Avx512 {
        // SAFETY: `clamp` returned Avx512 only because avx512f/bw/vbmi/vbmi2 were detected.
        return unsafe { avx512::packed_range(packed, width, lo, hi, negate, out) };
    }
    let _ = (level, packed, width, lo, hi, negate, out);
    0
}

/// [`range_word_scalar`] on exactly 64 values: the fixed trip count lets the compiler
/// vectorize the loop with the target's baseline SIMD (SSE2, NEON).
fn range_block_scalar<T: Lane>(values: &[T], lo: T, hi: T) -> u64 {
    let Ok(block) = <&[T; 64]>::try_from(values) else {
        return range_word_scalar(values, lo, hi);
    };
    let (lo, hi) = (lo.to_u64(), hi.to_u64());
    let mut word = 0;
    for (j, v) in block.iter().enumerate() {
        let v = v.to_u64();
        word |= u64::from(lo <= v && v <= hi) << j;
    }
    word
}

/// The scalar reference for up to 64 values: bit `j` is `lo <= values[j] <= hi`.
fn range_word_scalar<T: Lane>(values: &[T], lo: T, hi: T) -> u64 {
    let (lo, hi) = (lo.to_u64(), hi.to_u64());
    values.iter().enumerate().fold(0, |acc, (j, v)| {
        let v = v.to_u64();
        acc | (u64::from(lo <= v && v <= hi) << j)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_past_the_tail_are_zero() {
        // Zero padding of the tail block is in range here, so the kernel must clear it.
        let vals: Vec<u16> = (0..100).collect();
        for level in Level::supported() {
            for negate in [false, true] {
                let mut out = [u64::MAX; 2];
                range_words(level, &vals, 0, 50, negate, &mut out);
                let want = if negate {
                    [!low_mask(51), low_mask(36)]
                } else {
                    [low_mask(51), 0]
                };
                assert_eq!(out, want, "{level:?} negate={negate}");
                let mut out = [u64::MAX; 2];
                range_words(level, &vals, 60, 0, negate, &mut out);
                let want = if negate {
                    [u64::MAX, low_mask(36)]
                } else {
                    [0, 0]
                };
                assert_eq!(out, want, "{level:?} negate={negate} (empty)");
            }
        }
    }
}
