//! Spreading values over the set bits of a bitmap: `out[i]` is the next value where bit `i`
//! is set and zero where it is clear. The inverse of [`compact`](crate::compact); a nullable
//! column's non-null values placed at their rows, the null rows zero.
//!
//! The AVX-512 path uses VPEXPAND{B,W,D,Q} in register form: per 64-byte vector of output,
//! the next popcount(mask) values are loaded (a masked load, so nothing past them is read),
//! moved to the mask's lanes with the other lanes zeroed, and the whole vector stored. No
//! branch depends on the data, and every output value is written once (no zero-fill first).

use std::mem::MaybeUninit;

use crate::bitmap::count_ones_in_words;
use crate::dispatch::Level;
use crate::error::BitsError;
use crate::unpack::Lane;

/// `values` spread over the set bits among the first `len` bits of `bits`, zero (the
/// default) elsewhere, at the active [`Level`].
///
/// Errors if `bits` holds fewer than `len` bits or `values` is not as long as the number of
/// set bits among them.
pub fn expand<T: Lane>(values: &[T], bits: &[u64], len: usize) -> Result<Vec<T>, BitsError> {
    expand_at(Level::active(), values, bits, len)
}

/// [`expand`] at an explicit level (clamped to what the CPU supports).
pub fn expand_at<T: Lane>(
    level: Level,
    values: &[T],
    bits: &[u64],
    len: usize,
) -> Result<Vec<T>, BitsError> {
    let words = len.div_ceil(64);
    let Some(bits) = bits.get(..words) else {
        return Err(BitsError::Length {
            what: "expand bitmap words",
            got: bits.len(),
            expected: words,
        });
    };
    let full = len / 64;
    let ones = count_ones_in_words(bits, 0..len);
    if ones != values.len() {
        return Err(BitsError::Length {
            what: "values to expand",
            got: values.len(),
            expected: ones,
        });
    }
    let mut out: Vec<T> = Vec::with_capacity(len);
    let slots = &mut out.spare_capacity_mut()[..len];
    let (done, used) = T::expand_simd(level, values, &bits[..full], slots);
    expand_scalar(&values[used..], bits, done * 64, &mut slots[done * 64..]);
    // SAFETY: `expand_simd` wrote the values of its `done` whole words, every slot below
    // `64 · done`, and `expand_scalar` every slot from there to `len`.
    unsafe { out.set_len(len) };
    Ok(out)
}

/// The scalar reference: writes `out[j]` for the rows `first + j`, taking `values` in order
/// for the set bits of `bits` (indexed by row) and zero for the clear ones. The caller has
/// checked that `values` holds exactly one value per set bit.
fn expand_scalar<T: Lane>(values: &[T], bits: &[u64], first: usize, out: &mut [MaybeUninit<T>]) {
    let mut k = 0usize;
    for (j, slot) in out.iter_mut().enumerate() {
        let row = first + j;
        let set = bits
            .get(row / 64)
            .is_some_and(|&w| w >> (row % 64) & 1 == 1);
        let v = values.get(k).copied().unwrap_or_default();
        slot.write(if set { v } else { T::default() });
        k += usize::from(set);
    }
}

#[cfg(target_arch = "x86_64")]
pub(crate) mod avx512 {
    use std::arch::x86_64::*;
    use std::mem::MaybeUninit;

    use crate::pack::low_mask;

    macro_rules! expand {
        ($name:ident, $t:ty, $lanes:expr, $mask:ty, $load:ident, $expand:ident) => {
            /// Expands whole words of `bits` (64 rows each) into `out`, each writing its 64
            /// slots; returns (words done, values used). Stops before a word that has more
            /// set bits than `values` has values left.
            ///
            /// # Safety
            /// The CPU must support avx512f, avx512bw, avx512vbmi2 and popcnt; `out` holds
            /// at least 64 slots per word of `bits`.
            #[target_feature(enable = "avx512f,avx512bw,avx512vbmi2,popcnt")]
            pub(crate) unsafe fn $name(
                values: &[$t],
                bits: &[u64],
                out: &mut [MaybeUninit<$t>],
            ) -> (usize, usize) {
                const LANES: usize = $lanes;
                let mut k = 0usize;
                for (c, &b) in bits.iter().enumerate() {
                    if k + b.count_ones() as usize > values.len() {
                        return (c, k);
                    }
                    for q in 0..64 / LANES {
                        let m = (b >> (q * LANES)) as $mask;
                        let n = m.count_ones();
                        // SAFETY: the `n` values from `k` are inside `values` (checked for
                        // the word above; lanes past them are masked off, never read), and
                        // the LANES slots at `64c + q·LANES` inside `out` (the caller's
                        // bound).
                        unsafe {
                            let v = $load(low_mask(n) as $mask, values.as_ptr().add(k).cast());
                            let r = $expand(m, v);
                            _mm512_storeu_si512(out.as_mut_ptr().add(64 * c + q * LANES).cast(), r);
                        }
                        k += n as usize;
                    }
                }
                (bits.len(), k)
            }
        };
    }
    expand!(
        expand_u8,
        u8,
        64,
        u64,
        _mm512_maskz_loadu_epi8,
        _mm512_maskz_expand_epi8
    );
    expand!(
        expand_u16,
        u16,
        32,
        u32,
        _mm512_maskz_loadu_epi16,
        _mm512_maskz_expand_epi16
    );
    expand!(
        expand_u32,
        u32,
        16,
        u16,
        _mm512_maskz_loadu_epi32,
        _mm512_maskz_expand_epi32
    );
    expand!(
        expand_u64,
        u64,
        8,
        u8,
        _mm512_maskz_loadu_epi64,
        _mm512_maskz_expand_epi64
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The plain definition: walk the rows, take the next value at each set bit.
    fn reference<T: Lane>(values: &[T], bits: &[u64], len: usize) -> Vec<T> {
        let mut it = values.iter();
        (0..len)
            .map(|i| {
                if bits[i / 64] >> (i % 64) & 1 == 1 {
                    it.next().copied().unwrap_or_default()
                } else {
                    T::default()
                }
            })
            .collect()
    }

    fn check<T: Lane>(bits: &[u64], len: usize, value: impl Fn(usize) -> T) {
        let ones = (0..len)
            .filter(|&i| bits[i / 64] >> (i % 64) & 1 == 1)
            .count();
        let values: Vec<T> = (0..ones).map(value).collect();
        let want = reference(&values, bits, len);
        for level in [Level::Scalar, Level::Avx2, Level::Avx512] {
            let got = expand_at(level, &values, bits, len);
            assert_eq!(got.as_ref(), Ok(&want), "level {level:?}, len {len}");
        }
    }

    proptest! {
        #[test]
        fn every_width_and_level_agrees_with_the_reference(
            bits in proptest::collection::vec(any::<u64>(), 0..12),
            density in 0u32..4,
            cut in 0usize..64,
        ) {
            // Dense, half, sparse and empty selections.
            let bits: Vec<u64> = bits
                .iter()
                .map(|&w| match density {
                    0 => w | w.rotate_left(7),
                    1 => w,
                    2 => w & w.rotate_left(13) & w.rotate_left(29),
                    _ => 0,
                })
                .collect();
            let len = (bits.len() * 64).saturating_sub(cut);
            check::<u8>(&bits, len, |i| (i as u8).wrapping_mul(37) | 1);
            check::<u16>(&bits, len, |i| (i as u16).wrapping_mul(40_503) | 1);
            check::<u32>(&bits, len, |i| (i as u32).wrapping_mul(2_654_435_761) | 1);
            check::<u64>(&bits, len, |i| (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        }
    }

    #[test]
    fn the_kernel_stops_before_a_word_it_has_too_few_values_for() {
        let mut out = vec![std::mem::MaybeUninit::new(0u64); 192];
        let bits = [0b11, !0, 1];
        // Two values cover the first word only.
        let level = Level::active();
        let got = u64::expand_simd(level, &[5, 6], &bits, &mut out);
        let want = if level.clamp() == Level::Avx512 {
            (1, 2)
        } else {
            (0, 0)
        };
        assert_eq!(got, want);
    }

    #[test]
    fn mismatched_inputs_are_errors() {
        let bits = [0b1011u64];
        assert!(expand::<u32>(&[1, 2, 3], &bits, 4).is_ok());
        assert!(matches!(
            expand::<u32>(&[1, 2], &bits, 4),
            Err(BitsError::Length {
                got: 2,
                expected: 3,
                ..
            })
        ));
        // Bits past `len` do not count.
        assert!(expand::<u32>(&[1, 2], &bits, 2).is_ok());
        assert!(matches!(
            expand::<u32>(&[], &[], 65),
            Err(BitsError::Length {
                got: 0,
                expected: 2,
                ..
            })
        ));
    }
}
