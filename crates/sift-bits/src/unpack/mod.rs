//! Bit-unpacking of the plain little-endian layout into `u8`/`u16`/`u32`/`u64`, with an
//! optional frame-of-reference base added (wrapping), dispatched to AVX-512 or AVX2.
//!
//! The SIMD kernels decode whole groups of values (64 bytes of output per AVX-512 step) from
//! a byte-aligned group start: a group of 8·k values always begins on a byte boundary
//! whatever the width. They stop where a full 64-byte (or 128-byte) load would leave the
//! buffer, and the scalar reference finishes the ragged tail.

#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
pub(crate) mod avx512;

use crate::dispatch::Level;
use crate::error::{BitsError, check_packed};
use crate::pack::low_mask;

mod sealed {
    pub trait Sealed {}
    impl Sealed for u8 {}
    impl Sealed for u16 {}
    impl Sealed for u32 {}
    impl Sealed for u64 {}
}

/// An unsigned output type of the unpackers: `u8`, `u16`, `u32` or `u64`.
pub trait Lane: sealed::Sealed + Copy + Default + PartialEq + std::fmt::Debug + 'static {
    /// Width of the type in bits: the widest code it can receive.
    const BITS: u32;
    /// Truncating conversion.
    fn from_u64(v: u64) -> Self;
    /// Widening conversion.
    fn to_u64(self) -> u64;
    /// Wrapping addition (the frame-of-reference base).
    fn wrapping_add(self, other: Self) -> Self;
    /// Decodes a prefix of `out` with SIMD at `level`; returns how many values it wrote.
    #[doc(hidden)]
    fn unpack_simd(level: Level, packed: &[u64], width: u32, base: Self, out: &mut [Self])
    -> usize;
    /// Compacts a prefix of `bm` with SIMD at `level`; returns (words done, values written).
    #[doc(hidden)]
    fn compact_simd(level: Level, values: &[Self], bm: &[u64], dst: &mut [Self]) -> (usize, usize);
    /// Expands whole words of `bm` with SIMD at `level` into `out`; returns (words done,
    /// values used).
    #[doc(hidden)]
    fn expand_simd(
        level: Level,
        values: &[Self],
        bm: &[u64],
        out: &mut [std::mem::MaybeUninit<Self>],
    ) -> (usize, usize);
    /// Range-compares whole words of 64 values with SIMD at `level` (`lo <= hi`); returns
    /// how many values it did (a multiple of 64, 0 at the scalar level).
    #[doc(hidden)]
    fn range_simd(
        level: Level,
        values: &[Self],
        lo: Self,
        hi: Self,
        negate: bool,
        out: &mut [u64],
    ) -> usize;
}

macro_rules! lane {
    ($t:ty, $avx512:ident, $avx2:ident, $compact:ident, $expand:ident, $range:ident) => {
        impl Lane for $t {
            const BITS: u32 = <$t>::BITS;
            #[inline(always)]
            fn from_u64(v: u64) -> Self {
                v as $t
            }
            #[inline(always)]
            fn to_u64(self) -> u64 {
                u64::from(self)
            }
            #[inline(always)]
            fn wrapping_add(self, other: Self) -> Self {
                <$t>::wrapping_add(self, other)
            }
            #[allow(unused_variables)]
            fn unpack_simd(
                level: Level,
                packed: &[u64],
                width: u32,
                base: Self,
                out: &mut [Self],
            ) -> usize {
                #[cfg(target_arch = "x86_64")]
                match level.clamp() {
                    // SAFETY: `clamp` returned Avx512 only because detection found every
                    // feature the kernel enables.
                    Level::Avx512 => unsafe { avx512::$avx512(packed, width, base, out) },
                    // SAFETY: as above, AVX2 was detected.
                    Level::Avx2 => unsafe { avx2::$avx2(packed, width, base, out) },
                    Level::Scalar => 0,
                }
                #[cfg(not(target_arch = "x86_64"))]
                0
            }
            #[allow(unused_variables)]
            fn compact_simd(
                level: Level,
                values: &[Self],
                bm: &[u64],
                dst: &mut [Self],
            ) -> (usize, usize) {
                #[cfg(target_arch = "x86_64")]
                if level.clamp() == Level::Avx512 {
                    // SAFETY: Avx512 is only returned by `clamp` if avx512f/bw/vbmi2 and
                    // popcnt were detected.
                    return unsafe { crate::compact::avx512::$compact(values, bm, dst) };
                }
                (0, 0)
            }
            #[allow(unused_variables)]
            fn expand_simd(
                level: Level,
                values: &[Self],
                bm: &[u64],
                out: &mut [std::mem::MaybeUninit<Self>],
            ) -> (usize, usize) {
                #[cfg(target_arch = "x86_64")]
                if level.clamp() == Level::Avx512 && out.len() >= bm.len() * 64 {
                    // SAFETY: Avx512 is only returned by `clamp` if avx512f/bw/vbmi2 and
                    // popcnt were detected; `out` has 64 slots per word of `bm` (the kernel
                    // checks `values` itself).
                    return unsafe { crate::expand::avx512::$expand(values, bm, out) };
                }
                (0, 0)
            }
            #[allow(unused_variables)]
            fn range_simd(
                level: Level,
                values: &[Self],
                lo: Self,
                hi: Self,
                negate: bool,
                out: &mut [u64],
            ) -> usize {
                #[cfg(target_arch = "x86_64")]
                match level.clamp() {
                    // SAFETY: `clamp` returned Avx512 only because avx512f/bw were detected.
                    Level::Avx512 => unsafe {
                        crate::range::avx512::$range(values, lo, hi, negate, out)
                    },
                    // SAFETY: as above, AVX2 was detected.
                    Level::Avx2 => unsafe {
                        crate::range::avx2::$range(values, lo, hi, negate, out)
                    },
                    Level::Scalar => 0,
                }
                #[cfg(not(target_arch = "x86_64"))]
                0
            }
        }
    };
}
lane!(u8, unpack_u8, unpack_u8, compact_u8, expand_u8, range_u8);
lane!(
    u16,
    unpack_u16,
    unpack_u16,
    compact_u16,
    expand_u16,
    range_u16
);
lane!(
    u32,
    unpack_u32,
    unpack_u32,
    compact_u32,
    expand_u32,
    range_u32
);
lane!(
    u64,
    unpack_u64,
    unpack_u64,
    compact_u64,
    expand_u64,
    range_u64
);

/// Unpacks `out.len()` values of `width` bits into `T` at the active [`Level`].
///
/// Errors if `width` exceeds `T::BITS` or `packed` is too short.
pub fn unpack_to<T: Lane>(packed: &[u64], width: u32, out: &mut [T]) -> Result<(), BitsError> {
    unpack_for_at(Level::active(), packed, width, T::default(), out)
}

/// Unpacks `out.len()` values of `width` bits and adds `base` to each (wrapping), which is
/// frame-of-reference decoding fused into the unpack loop.
pub fn unpack_for<T: Lane>(
    packed: &[u64],
    width: u32,
    base: T,
    out: &mut [T],
) -> Result<(), BitsError> {
    unpack_for_at(Level::active(), packed, width, base, out)
}

/// [`unpack_for`] at an explicit level (clamped to what the CPU supports).
pub fn unpack_for_at<T: Lane>(
    level: Level,
    packed: &[u64],
    width: u32,
    base: T,
    out: &mut [T],
) -> Result<(), BitsError> {
    if width > T::BITS {
        return Err(BitsError::Width {
            width,
            max: T::BITS,
        });
    }
    check_packed(packed, width, out.len())?;
    if width == 0 {
        out.fill(base);
        return Ok(());
    }
    let mut done = 0;
    if level != Level::Scalar {
        // Round down to 64 values so the tail starts on a word boundary.
        done = T::unpack_simd(level, packed, width, base, out).min(out.len()) / 64 * 64;
        done += unpack_tail(level, packed, width, base, done, out);
    }
    if let Some(rest) = out.get_mut(done..) {
        unpack_scalar(packed, width, done, base, rest);
    }
    Ok(())
}

/// Words of zero padding behind a copied tail: enough for the widest SIMD load (128 bytes).
const TAIL_PAD: usize = 16;
/// Words of tail data handled with SIMD. The main loop stops fewer than 128 bytes (16 words)
/// before the end, and the tail is rounded back to a word boundary (at most `w` ≤ 64 words).
const TAIL_WORDS: usize = 80;

/// Decodes the values from `done` (a multiple of 64) on with SIMD, from a zero-padded copy
/// of the last words: the main loop stops where a full vector load would leave the buffer,
/// which at small widths is hundreds of values — too many for the scalar loop. Returns how
/// many values it decoded (possibly 0).
fn unpack_tail<T: Lane>(
    level: Level,
    packed: &[u64],
    width: u32,
    base: T,
    done: usize,
    out: &mut [T],
) -> usize {
    let w = width as usize;
    let rest = out.len() - done;
    let first_word = done / 64 * w;
    let last_word = first_word + (rest * w).div_ceil(64);
    let Some(words) = packed.get(first_word..last_word) else {
        return 0;
    };
    if rest == 0 || words.len() > TAIL_WORDS {
        return 0;
    }
    let mut buf = [0u64; TAIL_WORDS + TAIL_PAD];
    buf[..words.len()].copy_from_slice(words);
    // Whole groups straight into `out`, then the last partial group through a scratch.
    let direct = T::unpack_simd(level, &buf, width, base, &mut out[done..]) / 64 * 64;
    let left = rest - direct;
    let mut tmp = [T::default(); 128];
    let Some(src) = buf.get(direct / 64 * w..) else {
        return direct;
    };
    if left == 0 || left > 128 {
        return direct;
    }
    let got = T::unpack_simd(
        level,
        src,
        width,
        base,
        &mut tmp[..left.next_multiple_of(64)],
    );
    let got = got.min(left);
    out[done + direct..done + direct + got].copy_from_slice(&tmp[..got]);
    direct + got
}

/// The scalar reference: values `first..first + out.len()`, one at a time, each read from at
/// most two words. The caller has checked that `packed` is long enough.
pub(crate) fn unpack_scalar<T: Lane>(
    packed: &[u64],
    width: u32,
    first: usize,
    base: T,
    out: &mut [T],
) {
    let mask = low_mask(width);
    let w = width as usize;
    let mut bit = first * w;
    for o in out.iter_mut() {
        *o = T::from_u64(read_bits(packed, bit, mask)).wrapping_add(base);
        bit += w;
    }
}

/// Reads the field at stream bit `bit` under `mask` (a low mask of 1..=64 bits). The word
/// after the field's first word is read only if it exists, so a field ending exactly at the
/// end of the buffer is fine.
#[inline(always)]
pub(crate) fn read_bits(packed: &[u64], bit: usize, mask: u64) -> u64 {
    let word = bit >> 6;
    let off = (bit & 63) as u32;
    let lo = packed.get(word).copied().unwrap_or(0) >> off;
    // `(next << 1) << (63 - off)` is `next << (64 - off)` without the undefined shift by 64
    // when `off == 0` (then it is 0).
    let hi = (packed.get(word + 1).copied().unwrap_or(0) << 1) << (63 - off);
    (lo | hi) & mask
}

/// Views words as their little-endian bytes (x86 only, so memory order is LE order).
#[cfg(target_arch = "x86_64")]
#[inline]
pub(crate) fn as_bytes(words: &[u64]) -> &[u8] {
    // SAFETY: u8 has alignment 1 and no invalid values; the byte slice covers exactly the
    // memory of `words` and borrows it for the same lifetime.
    unsafe { std::slice::from_raw_parts(words.as_ptr().cast::<u8>(), std::mem::size_of_val(words)) }
}

/// Number of whole groups of `group_bytes` input bytes that can be decoded with loads of
/// `load_bytes` at each group start, limited by `out_groups` groups of output.
#[cfg(target_arch = "x86_64")]
#[inline]
pub(crate) fn groups_in(
    n_bytes: usize,
    group_bytes: usize,
    load_bytes: usize,
    out_groups: usize,
) -> usize {
    if n_bytes < load_bytes || group_bytes == 0 {
        return 0;
    }
    ((n_bytes - load_bytes) / group_bytes + 1).min(out_groups)
}
