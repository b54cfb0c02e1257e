//! Running (prefix) sums of 64-bit integers, in place: what turns the differences of a
//! delta encoding back into its values.
//!
//! Written here rather than left to the compiler: a running sum is one long dependency
//! chain, which LLVM keeps scalar (an add per value, about a cycle each). With AVX-512,
//! eight values are summed inside a register in three shift-and-add steps (`VALIGNQ` against
//! zero, `VPADDQ`), independently of the values before them; only the eighth lane, the
//! block's total, joins the chain, so the loop-carried work is one add per eight values.
//! [`running_sum_scalar`] is the reference.

use crate::dispatch::Level;

/// Replaces `values[i]` by `start + values[0] + … + values[i]`, all wrapping.
pub fn running_sum(level: Level, start: i64, values: &mut [i64]) {
    #[cfg(target_arch = "x86_64")]
    if level.clamp() == Level::Avx512 {
        // SAFETY: `clamp` returned Avx512 only because avx512f was detected.
        unsafe { avx512::running_sum(start, values) };
        return;
    }
    let _ = level;
    running_sum_scalar(start, values);
}

/// The portable reference for [`running_sum`].
pub fn running_sum_scalar(start: i64, values: &mut [i64]) {
    let mut acc = start;
    for v in values {
        acc = acc.wrapping_add(*v);
        *v = acc;
    }
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use std::arch::x86_64::*;

    /// The running sum of the 8 lanes of `x` on their own (lane `i` = `x[0] + … + x[i]`).
    #[target_feature(enable = "avx512f")]
    #[inline]
    fn lanes(x: __m512i) -> __m512i {
        let zero = _mm512_setzero_si512();
        // `alignr::<8 - k>(x, 0)` moves every lane k places up, zeros entering at lane 0.
        let x = _mm512_add_epi64(x, _mm512_alignr_epi64::<7>(x, zero));
        let x = _mm512_add_epi64(x, _mm512_alignr_epi64::<6>(x, zero));
        _mm512_add_epi64(x, _mm512_alignr_epi64::<4>(x, zero))
    }

    /// [`super::running_sum`] 16 values per step: both blocks of 8 are summed on their own,
    /// then offset by the carry (every lane holding the sum so far), which advances by the
    /// two blocks' totals (their last lanes, broadcast).
    ///
    /// # Safety
    /// The CPU must support avx512f.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn running_sum(start: i64, values: &mut [i64]) {
        let last = _mm512_set1_epi64(7);
        let mut carry = _mm512_set1_epi64(start);
        let mut pairs = values.chunks_exact_mut(16);
        for pair in pairs.by_ref() {
            let (a, b) = pair.split_at_mut(8);
            // SAFETY: `a` and `b` are 8 values each; the loads are unaligned.
            let (x, y) = unsafe {
                (
                    lanes(_mm512_loadu_si512(a.as_ptr().cast())),
                    lanes(_mm512_loadu_si512(b.as_ptr().cast())),
                )
            };
            let x_total = _mm512_permutexvar_epi64(last, x);
            let y_total = _mm512_permutexvar_epi64(last, y);
            let x = _mm512_add_epi64(x, carry);
            let y = _mm512_add_epi64(y, _mm512_add_epi64(carry, x_total));
            carry = _mm512_add_epi64(carry, _mm512_add_epi64(x_total, y_total));
            // SAFETY: as the loads.
            unsafe {
                _mm512_storeu_si512(a.as_mut_ptr().cast(), x);
                _mm512_storeu_si512(b.as_mut_ptr().cast(), y);
            }
        }
        let tail = pairs.into_remainder();
        let so_far = _mm_cvtsi128_si64(_mm512_castsi512_si128(carry));
        super::running_sum_scalar(so_far, tail);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Small deltas, extremes that wrap, and anything.
    fn value() -> impl Strategy<Value = i64> {
        prop_oneof![-3i64..4, Just(i64::MAX), Just(i64::MIN), any::<i64>()]
    }

    proptest! {
        #[test]
        fn every_level_sums_like_the_reference(
            start in value(),
            values in proptest::collection::vec(value(), 0..100),
        ) {
            let mut want = values.clone();
            running_sum_scalar(start, &mut want);
            for level in Level::supported() {
                let mut got = values.clone();
                running_sum(level, start, &mut got);
                prop_assert_eq!(&got, &want, "{:?}", level);
            }
        }
    }

    #[test]
    fn sums_count_up_from_the_start() {
        for level in Level::supported() {
            let mut v = vec![1i64; 37];
            running_sum(level, 10, &mut v);
            assert_eq!(v, (11..48).collect::<Vec<i64>>(), "{level:?}");
        }
    }
}
