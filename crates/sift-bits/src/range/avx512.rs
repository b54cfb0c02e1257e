//! AVX-512BW range compares: VPSUB + VPCMPU{B,W,D,Q} into a mask, 64 values per word, on
//! decoded values or fused into the AVX-512 unpacker's loops.

use std::arch::x86_64::*;

use crate::unpack::as_bytes;
use crate::unpack::avx512::{multishift_each, qword_loop};

macro_rules! kernel {
    ($name:ident, $t:ty, $st:ty, $set1:ident, $sub:ident, $cmple:ident) => {
        /// Writes one word per 64 values of `values` (whole words only) into `out`; returns
        /// the number of values done. Requires `lo <= hi`.
        ///
        /// # Safety
        /// The CPU must support avx512f and avx512bw.
        #[target_feature(enable = "avx512f,avx512bw")]
        pub(crate) unsafe fn $name(
            values: &[$t],
            lo: $t,
            hi: $t,
            negate: bool,
            out: &mut [u64],
        ) -> usize {
            const PER: usize = 64 / std::mem::size_of::<$t>();
            let lov = $set1(lo as $st);
            let span = $set1(hi.wrapping_sub(lo) as $st);
            let flip = if negate { u64::MAX } else { 0 };
            let mut done = 0;
            for (o, block) in out.iter_mut().zip(values.chunks_exact(64)) {
                let mut word = 0u64;
                for (j, v) in block.chunks_exact(PER).enumerate() {
                    // SAFETY: `v` holds PER values, exactly 64 bytes; the load is unaligned.
                    let x = unsafe { _mm512_loadu_si512(v.as_ptr().cast()) };
                    word |= u64::from($cmple($sub(x, lov), span)) << (j * PER);
                }
                *o = word ^ flip;
                done += 64;
            }
            done
        }
    };
}
kernel!(
    range_u8,
    u8,
    i8,
    _mm512_set1_epi8,
    _mm512_sub_epi8,
    _mm512_cmple_epu8_mask
);
kernel!(
    range_u16,
    u16,
    i16,
    _mm512_set1_epi16,
    _mm512_sub_epi16,
    _mm512_cmple_epu16_mask
);
kernel!(
    range_u32,
    u32,
    i32,
    _mm512_set1_epi32,
    _mm512_sub_epi32,
    _mm512_cmple_epu32_mask
);
kernel!(
    range_u64,
    u64,
    i64,
    _mm512_set1_epi64,
    _mm512_sub_epi64,
    _mm512_cmple_epu64_mask
);

/// Fused unpack-and-compare: decodes `width`-bit codes into registers with the AVX-512
/// unpacker's loops and compares them there, never storing the values. Fills whole words of
/// `out` from the start, as many as full vector loads from `packed` allow; returns the
/// number of values done (a multiple of 64). Requires `lo <= hi`, both below `2^width`.
///
/// # Safety
/// The CPU must support avx512f, avx512bw, avx512vbmi and avx512vbmi2.
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi,avx512vbmi2")]
pub(crate) unsafe fn packed_range(
    packed: &[u64],
    width: u32,
    lo: u64,
    hi: u64,
    negate: bool,
    out: &mut [u64],
) -> usize {
    let flip = if negate { u64::MAX } else { 0 };
    let span = hi.wrapping_sub(lo);
    let words = out.len();
    let ptr = out.as_mut_ptr();
    // Vector `g` of lanes holding `per` values has its verdicts stored as the `g`-th
    // `per`-bit unit of `out` (little-endian, so units fill words from bit 0). The loops
    // decode at most `words · 64 / per` vectors, in multiples of `64 / per`, so every store
    // lands in `out` and only whole words are written.
    // SAFETY: the features the loops need are enabled here; stores as argued above.
    let done = unsafe {
        match width {
            0..=8 => {
                let (l, s) = (_mm512_set1_epi8(lo as i8), _mm512_set1_epi8(span as i8));
                multishift_each(packed, 8, width, words, 1, |g, x| {
                    let k = _mm512_cmple_epu8_mask(_mm512_sub_epi8(x, l), s);
                    ptr.add(g).write(k ^ flip);
                })
                .map(|g| g * 64)
            }
            9..=16 => {
                let (l, s) = (_mm512_set1_epi16(lo as i16), _mm512_set1_epi16(span as i16));
                multishift_each(packed, 16, width, words * 2, 2, |g, x| {
                    let k = _mm512_cmple_epu16_mask(_mm512_sub_epi16(x, l), s);
                    ptr.cast::<u32>().add(g).write(k ^ flip as u32);
                })
                .map(|g| g * 32)
            }
            17..=32 => {
                let (l, s) = (_mm512_set1_epi32(lo as i32), _mm512_set1_epi32(span as i32));
                multishift_each(packed, 32, width, words * 4, 4, |g, x| {
                    let k = _mm512_cmple_epu32_mask(_mm512_sub_epi32(x, l), s);
                    ptr.cast::<u16>().add(g).write(k ^ flip as u16);
                })
                .map(|g| g * 16)
            }
            _ => None,
        }
    };
    if let Some(done) = done {
        return done;
    }
    // One value per 64-bit lane (u32 at width 31, and widths above 32).
    let (l, s) = (_mm512_set1_epi64(lo as i64), _mm512_set1_epi64(span as i64));
    // SAFETY: as above, with 8-bit units.
    let groups = unsafe {
        qword_loop(as_bytes(packed), width, words * 8, 8, |g, x| {
            let k = _mm512_cmple_epu64_mask(_mm512_sub_epi64(x, l), s);
            ptr.cast::<u8>().add(g).write(k ^ flip as u8);
        })
    };
    groups * 8
}
