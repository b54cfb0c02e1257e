//! AVX-512 unpackers (F/BW/VBMI/VBMI2).
//!
//! Narrow outputs use VPMULTISHIFTQB: VPERMB first gathers, into each 64-bit lane, the 8
//! input bytes holding that lane's values (`64 / lane_bits` of them), then VPMULTISHIFTQB
//! picks every output byte from an arbitrary bit offset of its lane, and one AND clears the
//! bits above the width. That is three data instructions per 64 output bytes whatever the
//! width, valid while each lane's values fit in its 8 bytes (`offset + values·width ≤ 64`).
//! Where they do not (u32 at width 31), and for u64 outputs, each value gets its own 64-bit
//! lane and a variable shift (VPSRLVQ, or VPSHRDVQ across two lanes when a value spills into
//! a ninth byte).

use std::arch::x86_64::*;

use super::{as_bytes, groups_in};
use crate::pack::low_mask;

/// Byte-permute and multishift controls for one (output lane width, code width) pair.
#[derive(Clone, Copy)]
struct Multishift {
    perm: [u8; 64],
    ctrl: [u8; 64],
    /// Input bytes consumed per 64-byte output vector.
    group_bytes: usize,
}

const fn multishift_plan(lane_bits: u32, w: u32) -> Option<Multishift> {
    let per_qword = 64 / lane_bits;
    let lane_bytes = lane_bits / 8;
    let mut perm = [0u8; 64];
    let mut ctrl = [0u8; 64];
    let mut k = 0u32;
    while k < 8 {
        let start = k * per_qword * w;
        let (s, o) = (start / 8, start % 8);
        if o + per_qword * w > 64 || s + 7 > 63 {
            return None;
        }
        let mut t = 0;
        while t < 8 {
            perm[(8 * k + t) as usize] = (s + t) as u8;
            t += 1;
        }
        let mut j = 0;
        while j < per_qword {
            let mut b = 0;
            while b < lane_bytes {
                // Offsets past bit 63 wrap within the lane; they only feed bits above the
                // width, which the mask clears.
                ctrl[(8 * k + j * lane_bytes + b) as usize] = ((o + j * w + 8 * b) & 63) as u8;
                b += 1;
            }
            j += 1;
        }
        k += 1;
    }
    Some(Multishift {
        perm,
        ctrl,
        group_bytes: (per_qword * w) as usize,
    })
}

/// Plans for every width 0..=32 (`None` where the multishift kernel does not apply), built
/// at compile time so a call costs no setup.
const fn multishift_plans(lane_bits: u32) -> [Option<Multishift>; 33] {
    let mut plans = [None; 33];
    let mut w = 1;
    while w <= lane_bits {
        plans[w as usize] = multishift_plan(lane_bits, w);
        w += 1;
    }
    plans
}

static MS8: [Option<Multishift>; 33] = multishift_plans(8);
static MS16: [Option<Multishift>; 33] = multishift_plans(16);
static MS32: [Option<Multishift>; 33] = multishift_plans(32);

/// One value per 64-bit lane: 8 values per step, `w` input bytes per step.
#[derive(Clone, Copy)]
struct Qword {
    lo: [u8; 64],
    hi: [u8; 64],
    shift: [u64; 8],
    /// Some value reaches into a ninth byte, so `hi` and a second 64-byte load are needed.
    spill: bool,
}

const fn qword_plan(w: u32) -> Qword {
    let mut plan = Qword {
        lo: [0; 64],
        hi: [0; 64],
        shift: [0; 8],
        spill: false,
    };
    let mut k = 0u32;
    while k < 8 {
        let start = k * w;
        let (s, o) = (start / 8, start % 8);
        let mut t = 0;
        while t < 8 {
            plan.lo[(8 * k + t) as usize] = (s + t) as u8;
            // Indexes 64..127 select from the second loaded vector (VPERMI2B).
            plan.hi[(8 * k + t) as usize] = (s + 8 + t) as u8;
            t += 1;
        }
        plan.shift[k as usize] = o as u64;
        plan.spill |= o + w > 64;
        k += 1;
    }
    plan
}

const fn qword_plans() -> [Qword; 65] {
    let mut plans = [qword_plan(0); 65];
    let mut w = 1;
    while w <= 64 {
        plans[w as usize] = qword_plan(w);
        w += 1;
    }
    plans
}

static QWORD: [Qword; 65] = qword_plans();

/// Decodes `width`-bit codes into 64-byte vectors of `lane_bits`-bit lanes (8, 16 or 32)
/// masked to the width, and passes vector `g` (values `g · 512 / lane_bits ..`) to `emit`.
/// Decodes as many vectors as whole 64-byte loads allow, at most `max`, rounded down to a
/// multiple of `multiple`; returns how many, or `None` if the multishift kernel does not
/// apply to the pair. Shared by the unpackers and the fused unpack-and-compare.
///
/// # Safety
/// The CPU must support avx512f, avx512bw and avx512vbmi (this is inlined into callers that
/// enable them).
#[inline(always)]
pub(crate) unsafe fn multishift_each(
    packed: &[u64],
    lane_bits: u32,
    width: u32,
    max: usize,
    multiple: usize,
    mut emit: impl FnMut(usize, __m512i),
) -> Option<usize> {
    let plans = match lane_bits {
        8 => &MS8,
        16 => &MS16,
        32 => &MS32,
        _ => return None,
    };
    let plan = plans.get(width as usize).copied().flatten()?;
    let bytes = as_bytes(packed);
    let groups = groups_in(bytes.len(), plan.group_bytes, 64, max) / multiple * multiple;
    // `u64::MAX / lane_max` has a one in the low bit of every lane.
    let mask = low_mask(width).wrapping_mul(u64::MAX / low_mask(lane_bits));
    // SAFETY: the caller enabled the features; `groups_in` keeps every 64-byte load at
    // most `bytes.len() - 64` bytes in; loads are unaligned.
    unsafe {
        let perm = _mm512_loadu_si512(plan.perm.as_ptr().cast());
        let ctrl = _mm512_loadu_si512(plan.ctrl.as_ptr().cast());
        let mask = _mm512_set1_epi64(mask as i64);
        for g in 0..groups {
            let v = _mm512_loadu_si512(bytes.as_ptr().add(g * plan.group_bytes).cast());
            let x = _mm512_multishift_epi64_epi8(ctrl, _mm512_permutexvar_epi8(perm, v));
            emit(g, _mm512_and_si512(x, mask));
        }
    }
    Some(groups)
}

macro_rules! multishift_kernel {
    ($name:ident, $t:ty, $set1:ident, $add:ident, $st:ty) => {
        /// `None` if the multishift kernel does not apply to this width.
        #[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
        unsafe fn $name(packed: &[u64], width: u32, base: $t, out: &mut [$t]) -> Option<usize> {
            const PER: usize = 64 / std::mem::size_of::<$t>();
            let basev = $set1(base as $st);
            let ptr = out.as_mut_ptr();
            // SAFETY: features as enabled here; each store covers values `PER·g..PER·(g+1)`
            // with `g < out.len() / PER`, inside `out`.
            let groups = unsafe {
                multishift_each(packed, <$t>::BITS, width, out.len() / PER, 1, |g, x| {
                    _mm512_storeu_si512(ptr.add(g * PER).cast(), $add(x, basev));
                })
            }?;
            Some(groups * PER)
        }
    };
}
multishift_kernel!(ms_u8, u8, _mm512_set1_epi8, _mm512_add_epi8, i8);
multishift_kernel!(ms_u16, u16, _mm512_set1_epi16, _mm512_add_epi16, i16);
multishift_kernel!(ms_u32, u32, _mm512_set1_epi32, _mm512_add_epi32, i32);

/// Decodes 8 values (one per 64-bit lane) from the vectors at a group start.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi,avx512vbmi2")]
fn qword_step(
    v0: __m512i,
    v1: __m512i,
    lo: __m512i,
    hi: __m512i,
    sh: __m512i,
    spill: bool,
) -> __m512i {
    let l = _mm512_permutexvar_epi8(lo, v0);
    if spill {
        _mm512_shrdv_epi64(l, _mm512_permutex2var_epi8(v0, hi, v1), sh)
    } else {
        _mm512_srlv_epi64(l, sh)
    }
}

/// Shared loop of the one-value-per-lane kernels: passes group `g` (values `8g..8g + 8`,
/// masked, in 64-bit lanes) to `emit`, for as many groups as whole loads allow, at most
/// `out_groups`, rounded down to a multiple of `multiple`; returns how many.
///
/// # Safety
/// The CPU must support avx512f, avx512bw, avx512vbmi and avx512vbmi2.
#[inline(always)]
pub(crate) unsafe fn qword_loop(
    bytes: &[u8],
    width: u32,
    out_groups: usize,
    multiple: usize,
    mut emit: impl FnMut(usize, __m512i),
) -> usize {
    let Some(plan) = QWORD.get(width as usize) else {
        return 0;
    };
    let load = if plan.spill { 128 } else { 64 };
    let groups = groups_in(bytes.len(), width as usize, load, out_groups) / multiple * multiple;
    // SAFETY: the caller enabled avx512f/bw/vbmi/vbmi2 (this is inlined into such callers);
    // `groups_in` keeps each `load`-byte read at a group start inside `bytes`.
    unsafe {
        let lo = _mm512_loadu_si512(plan.lo.as_ptr().cast());
        let hi = _mm512_loadu_si512(plan.hi.as_ptr().cast());
        let sh = _mm512_loadu_si512(plan.shift.as_ptr().cast());
        let mask = _mm512_set1_epi64(low_mask(width) as i64);
        for g in 0..groups {
            let p = bytes.as_ptr().add(g * width as usize);
            let v0 = _mm512_loadu_si512(p.cast());
            let v1 = if plan.spill {
                _mm512_loadu_si512(p.add(64).cast())
            } else {
                v0
            };
            let x = qword_step(v0, v1, lo, hi, sh, plan.spill);
            emit(g, _mm512_and_si512(x, mask));
        }
    }
    groups
}

/// # Safety
/// The CPU must support avx512f, avx512bw, avx512vbmi and avx512vbmi2.
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi,avx512vbmi2")]
pub(super) unsafe fn unpack_u64(packed: &[u64], width: u32, base: u64, out: &mut [u64]) -> usize {
    let bytes = as_bytes(packed);
    let basev = _mm512_set1_epi64(base as i64);
    let ptr = out.as_mut_ptr();
    // SAFETY: features as required by this function; each store covers values
    // `8g..8g+8` with `g < out.len() / 8`.
    let groups = unsafe {
        qword_loop(bytes, width, out.len() / 8, 1, |g, x| {
            _mm512_storeu_si512(ptr.add(8 * g).cast(), _mm512_add_epi64(x, basev));
        })
    };
    groups * 8
}

/// # Safety
/// The CPU must support avx512f, avx512bw, avx512vbmi and avx512vbmi2.
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi,avx512vbmi2")]
pub(super) unsafe fn unpack_u32(packed: &[u64], width: u32, base: u32, out: &mut [u32]) -> usize {
    // SAFETY: features as required by this function.
    if let Some(n) = unsafe { ms_u32(packed, width, base, out) } {
        return n;
    }
    let bytes = as_bytes(packed);
    let basev = _mm256_set1_epi32(base as i32);
    let ptr = out.as_mut_ptr();
    // SAFETY: features as required; each 32-byte store covers values `8g..8g+8` in `out`.
    let groups = unsafe {
        qword_loop(bytes, width, out.len() / 8, 1, |g, x| {
            let n = _mm256_add_epi32(_mm512_cvtepi64_epi32(x), basev);
            _mm256_storeu_si256(ptr.add(8 * g).cast(), n);
        })
    };
    groups * 8
}

/// # Safety
/// The CPU must support avx512f, avx512bw, avx512vbmi and avx512vbmi2.
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi,avx512vbmi2")]
pub(super) unsafe fn unpack_u16(packed: &[u64], width: u32, base: u16, out: &mut [u16]) -> usize {
    // SAFETY: features as required by this function.
    unsafe { ms_u16(packed, width, base, out) }.unwrap_or(0)
}

/// # Safety
/// The CPU must support avx512f, avx512bw, avx512vbmi and avx512vbmi2.
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi,avx512vbmi2")]
pub(super) unsafe fn unpack_u8(packed: &[u64], width: u32, base: u8, out: &mut [u8]) -> usize {
    // SAFETY: features as required by this function.
    unsafe { ms_u8(packed, width, base, out) }.unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multishift_covers_all_narrow_widths_but_u32_31() {
        for w in 1..=8 {
            assert!(multishift_plan(8, w).is_some(), "u8 w={w}");
        }
        for w in 1..=16 {
            assert!(multishift_plan(16, w).is_some(), "u16 w={w}");
        }
        for w in 1..=32 {
            assert_eq!(multishift_plan(32, w).is_some(), w != 31, "u32 w={w}");
        }
    }
}
