//! Filtering decoded values by a bitmap (keep `values[i]` where bit `i` is set).
//!
//! The AVX-512 path uses VPCOMPRESS{B,W,D,Q} in register form: per 64-byte vector, the
//! selected lanes are packed to the front and the whole vector is stored at the output
//! cursor, which then advances by the popcount of the mask. No branch depends on the data,
//! so mid-range selectivities cost the same as dense ones. (The memory-destination form is
//! avoided: it is microcoded and slow on AMD Zen 4/5.) The store writes up to a vector past
//! the last kept value, so the kernel works in a buffer with that much slack.

use crate::bitmap::Bitmap;
use crate::dispatch::Level;
use crate::error::BitsError;
use crate::unpack::Lane;

/// Values of slack the SIMD compaction needs past the kept values (one 64-byte vector of
/// the narrowest type).
pub const SLACK: usize = 64;

/// Keeps the values whose bit is set in `selection` (which must have `values.len()` bits).
pub fn filter<T: Lane>(values: &[T], selection: &Bitmap) -> Result<Vec<T>, BitsError> {
    let mut out = Vec::new();
    filter_into(Level::active(), values, selection, &mut out)?;
    Ok(out)
}

/// [`filter`] at an explicit level, into `out` (cleared first, allocation reused).
pub fn filter_into<T: Lane>(
    level: Level,
    values: &[T],
    selection: &Bitmap,
    out: &mut Vec<T>,
) -> Result<(), BitsError> {
    if selection.len() != values.len() {
        return Err(BitsError::Length {
            what: "selection bitmap",
            got: selection.len(),
            expected: values.len(),
        });
    }
    let ones = selection.count_ones();
    out.clear();
    out.resize(ones + SLACK, T::default());
    let k = compact_words(level, values, selection.words(), out);
    out.truncate(k.min(ones));
    Ok(())
}

/// Compacts `values` by the bitmap words `bm` (bit `i` selects `values[i]`) into `dst`,
/// the building block of [`filter_into`] for callers that filter block by block. `dst` needs
/// [`SLACK`] values of room past the number of set bits (with less, the SIMD path stops
/// early and the scalar loop finishes, dropping what does not fit). Returns the number of
/// values written. Words past the last value are not read (a caller may hand the rest of a
/// longer selection).
pub fn compact_words<T: Lane>(level: Level, values: &[T], bm: &[u64], dst: &mut [T]) -> usize {
    let bm = &bm[..bm.len().min(values.len().div_ceil(64))];
    let (words_done, mut k) = T::compact_simd(level, values, bm, dst);
    for (c, &b) in bm.iter().enumerate().skip(words_done) {
        let mut b = b;
        while b != 0 {
            let i = c * 64 + b.trailing_zeros() as usize;
            b &= b - 1;
            if let (Some(o), Some(&v)) = (dst.get_mut(k), values.get(i)) {
                *o = v;
                k += 1;
            }
        }
    }
    k
}

#[cfg(target_arch = "x86_64")]
pub(crate) mod avx512 {
    use std::arch::x86_64::*;

    macro_rules! compact {
        ($name:ident, $t:ty, $lanes:expr, $mask:ty, $compress:ident) => {
            /// Returns (bitmap words processed, values written).
            ///
            /// # Safety
            /// The CPU must support avx512f, avx512bw, avx512vbmi2 and popcnt.
            #[target_feature(enable = "avx512f,avx512bw,avx512vbmi2,popcnt")]
            pub(crate) unsafe fn $name(vals: &[$t], bm: &[u64], dst: &mut [$t]) -> (usize, usize) {
                const LANES: usize = $lanes;
                let words = bm.len().min(vals.len() / 64);
                let mut k = 0usize;
                for (c, &b) in bm[..words].iter().enumerate() {
                    if b == 0 {
                        continue;
                    }
                    // Stop before a store could leave `dst` (only if it lacks slack): the
                    // word's stores end at most 64 values past `k`. The scalar loop then
                    // finishes from this word.
                    if k + 64 > dst.len() {
                        return (c, k);
                    }
                    for q in 0..64 / LANES {
                        let m = (b >> (q * LANES)) as $mask;
                        let n = m.count_ones() as usize;
                        // SAFETY: `c < vals.len() / 64`, so the 64-byte load at value
                        // `64c + q·LANES` is inside `vals`; `k` has grown by at most
                        // `64 - LANES` in this word, so the store of LANES values at `k`
                        // ends within the 64 values checked above.
                        unsafe {
                            let v =
                                _mm512_loadu_si512(vals.as_ptr().add(64 * c + q * LANES).cast());
                            let r = $compress(m, v);
                            _mm512_storeu_si512(dst.as_mut_ptr().add(k).cast(), r);
                        }
                        k += n;
                    }
                }
                (words, k)
            }
        };
    }
    compact!(compact_u8, u8, 64, u64, _mm512_maskz_compress_epi8);
    compact!(compact_u16, u16, 32, u32, _mm512_maskz_compress_epi16);
    compact!(compact_u32, u32, 16, u16, _mm512_maskz_compress_epi32);
    compact!(compact_u64, u64, 8, u8, _mm512_maskz_compress_epi64);
}
