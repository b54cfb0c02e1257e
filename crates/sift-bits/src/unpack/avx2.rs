//! AVX2 unpackers.
//!
//! AVX2 has no cross-lane byte permute, so each 128-bit half gets its own 16-byte load,
//! positioned at the first byte of the values that half decodes, and VPSHUFB places each
//! value's bytes in its lane. A variable shift (VPSRLVD / VPSRLVQ) aligns the value and an
//! AND trims it. Eight values per step in 32-bit lanes while every value fits its lane
//! (`offset + width ≤ 32`), else two 4 × 64-bit steps; `u8`/`u16` outputs are narrowed with
//! saturating packs, exact here because the values are already masked to the width.

use std::arch::x86_64::*;

use super::{as_bytes, groups_in};
use crate::pack::low_mask;

/// Shuffle controls for 8 values in 32-bit lanes.
#[derive(Clone, Copy)]
struct Dword {
    shuf: [u8; 32],
    shift: [u32; 8],
    /// Byte offset of the upper half's load relative to the group start.
    hi_off: usize,
}

const fn dword_plan(w: u32) -> Option<Dword> {
    let hi_off = (4 * w / 8) as usize;
    let mut plan = Dword {
        shuf: [0; 32],
        shift: [0; 8],
        hi_off,
    };
    let mut i = 0u32;
    while i < 8 {
        let start = i * w;
        let (s, o) = ((start / 8) as usize, start % 8);
        if o + w > 32 {
            return None;
        }
        let rel = if i < 4 { s } else { s - hi_off };
        let mut t = 0;
        while t < 4 {
            if rel + t > 15 {
                return None;
            }
            plan.shuf[4 * i as usize + t] = (rel + t) as u8;
            t += 1;
        }
        plan.shift[i as usize] = o;
        i += 1;
    }
    Some(plan)
}

/// Shuffle controls for 8 values in two vectors of 4 × 64-bit lanes.
#[derive(Clone, Copy)]
struct Qword {
    /// Per vector (values 0–3, 4–7): the shuffle control.
    shuf: [[u8; 32]; 2],
    shift: [[u64; 4]; 2],
    /// Left shifts (`8 − offset`) of the same shuffle applied one byte further on, which
    /// brings in a ninth byte for values that span it.
    shift_next: [[u64; 4]; 2],
    /// Byte offsets of the four 16-byte loads (values 0–1, 2–3, 4–5, 6–7).
    offs: [usize; 4],
    /// Some value spans nine bytes (`offset + width > 64`: widths 58–63 at some offsets).
    wide: bool,
}

const fn qword_plan(w: u32) -> Option<Qword> {
    let mut plan = Qword {
        shuf: [[0; 32]; 2],
        shift: [[0; 4]; 2],
        shift_next: [[0; 4]; 2],
        offs: [0; 4],
        wide: false,
    };
    let mut pair = 0u32;
    while pair < 4 {
        plan.offs[pair as usize] = (2 * pair * w / 8) as usize;
        pair += 1;
    }
    let mut i = 0u32;
    while i < 8 {
        let start = i * w;
        let (s, o) = ((start / 8) as usize, start % 8);
        if o + w > 64 {
            plan.wide = true;
        }
        let rel = s - plan.offs[(i / 2) as usize];
        let (v, lane) = ((i / 4) as usize, (i % 4) as usize);
        let mut t = 0;
        while t < 8 {
            if rel + t > 15 {
                return None;
            }
            plan.shuf[v][8 * lane + t] = (rel + t) as u8;
            t += 1;
        }
        plan.shift[v][lane] = o as u64;
        plan.shift_next[v][lane] = 8 - o as u64;
        i += 1;
    }
    Some(plan)
}

const fn dword_plans() -> [Option<Dword>; 33] {
    let mut plans = [None; 33];
    let mut w = 1;
    while w <= 32 {
        plans[w as usize] = dword_plan(w);
        w += 1;
    }
    plans
}

const fn qword_plans() -> [Option<Qword>; 65] {
    let mut plans = [None; 65];
    let mut w = 1;
    while w <= 64 {
        plans[w as usize] = qword_plan(w);
        w += 1;
    }
    plans
}

/// Plans for every width, built at compile time so a call costs no setup.
static DWORD: [Option<Dword>; 33] = dword_plans();
static QWORD: [Option<Qword>; 65] = qword_plans();

/// Loads two 16-byte pieces into the halves of a vector.
///
/// # Safety
/// 16 bytes must be readable at `lo` and at `hi`.
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn load2(lo: *const u8, hi: *const u8) -> __m256i {
    // SAFETY: the caller guarantees 16 readable bytes at both pointers.
    unsafe {
        let l = _mm_loadu_si128(lo.cast());
        let h = _mm_loadu_si128(hi.cast());
        _mm256_inserti128_si256::<1>(_mm256_castsi128_si256(l), h)
    }
}

/// Eight masked values in 32-bit lanes, for groups starting at `p`.
///
/// # Safety
/// 16 bytes readable at `p` and at `p + plan.hi_off`.
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn dword_step(
    p: *const u8,
    hi_off: usize,
    shuf: __m256i,
    sh: __m256i,
    mask: __m256i,
) -> __m256i {
    // SAFETY: forwarded from the caller.
    let v = unsafe { load2(p, p.add(hi_off)) };
    _mm256_and_si256(_mm256_srlv_epi32(_mm256_shuffle_epi8(v, shuf), sh), mask)
}

/// Bytes a dword step may read past its group start.
fn dword_reach(plan: &Dword) -> usize {
    plan.hi_off + 16
}

/// # Safety
/// The CPU must support AVX2.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn unpack_u32(packed: &[u64], width: u32, base: u32, out: &mut [u32]) -> usize {
    let bytes = as_bytes(packed);
    let gb = width as usize;
    let basev = _mm256_set1_epi32(base as i32);
    if let Some(Some(plan)) = DWORD.get(width as usize) {
        let groups = groups_in(bytes.len(), gb, dword_reach(plan), out.len() / 8);
        // SAFETY: `groups_in` keeps both 16-byte loads of every group inside `bytes`
        // (the farther ends at `hi_off + 16`); each store covers values `8g..8g+8` of `out`.
        unsafe {
            let shuf = _mm256_loadu_si256(plan.shuf.as_ptr().cast());
            let sh = _mm256_loadu_si256(plan.shift.as_ptr().cast());
            let mask = _mm256_set1_epi32(low_mask(width) as u32 as i32);
            for g in 0..groups {
                let x = dword_step(bytes.as_ptr().add(g * gb), plan.hi_off, shuf, sh, mask);
                _mm256_storeu_si256(
                    out.as_mut_ptr().add(8 * g).cast(),
                    _mm256_add_epi32(x, basev),
                );
            }
        }
        return groups * 8;
    }
    let narrow = _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6);
    // SAFETY: AVX2 is enabled; `qword_groups` bounds-checks loads and stores as above.
    unsafe {
        qword_groups(bytes, width, out.len(), |g, a, b| {
            // Low dwords of a's four qwords then b's four.
            let a = _mm256_permutevar8x32_epi32(a, narrow);
            let b = _mm256_permutevar8x32_epi32(b, narrow);
            let x = _mm256_blend_epi32::<0b1111_0000>(a, b);
            _mm256_storeu_si256(
                out.as_mut_ptr().add(8 * g).cast(),
                _mm256_add_epi32(x, basev),
            );
        })
    }
}

/// Runs the 2 × 4 × 64-bit decoder over whole groups of 8 values, handing each group's two
/// masked vectors to `emit`. Returns the number of values decoded.
#[inline(always)]
unsafe fn qword_groups(
    bytes: &[u8],
    width: u32,
    out_len: usize,
    emit: impl FnMut(usize, __m256i, __m256i),
) -> usize {
    let Some(Some(plan)) = QWORD.get(width as usize) else {
        return 0;
    };
    // SAFETY: forwarded from the caller (an AVX2 function this is inlined into).
    unsafe {
        if plan.wide {
            qword_loop::<true>(bytes, width, plan, out_len, emit)
        } else {
            qword_loop::<false>(bytes, width, plan, out_len, emit)
        }
    }
}

/// [`qword_groups`]' loop. With `WIDE`, each lane also takes the same eight bytes one byte
/// further on, shifted left by `8 − offset`: the window bit `m` lands at `m − offset` in
/// both, so the OR is the value with its ninth byte, and zero is added where the first
/// eight bytes held the whole value (a shift by 8 moves only bits already there; AVX2 gives
/// zero for shift counts of 64 or more).
#[inline(always)]
unsafe fn qword_loop<const WIDE: bool>(
    bytes: &[u8],
    width: u32,
    plan: &Qword,
    out_len: usize,
    mut emit: impl FnMut(usize, __m256i, __m256i),
) -> usize {
    let gb = width as usize;
    let groups = groups_in(
        bytes.len(),
        gb,
        plan.offs[3] + 16 + usize::from(WIDE),
        out_len / 8,
    );
    // SAFETY: called only from AVX2 functions (inlined); `groups_in` keeps the farthest of
    // the 16-byte loads (at `offs[3]`, or `offs[3] + 1` with `WIDE`) inside `bytes`.
    unsafe {
        let s0 = _mm256_loadu_si256(plan.shuf[0].as_ptr().cast());
        let s1 = _mm256_loadu_si256(plan.shuf[1].as_ptr().cast());
        let h0 = _mm256_loadu_si256(plan.shift[0].as_ptr().cast());
        let h1 = _mm256_loadu_si256(plan.shift[1].as_ptr().cast());
        let n0 = _mm256_loadu_si256(plan.shift_next[0].as_ptr().cast());
        let n1 = _mm256_loadu_si256(plan.shift_next[1].as_ptr().cast());
        let mask = _mm256_set1_epi64x(low_mask(width) as i64);
        let half = |p: *const u8, o0: usize, o1: usize, sh, h, n| {
            let v = _mm256_srlv_epi64(_mm256_shuffle_epi8(load2(p.add(o0), p.add(o1)), sh), h);
            let v = if WIDE {
                let next = load2(p.add(o0 + 1), p.add(o1 + 1));
                _mm256_or_si256(v, _mm256_sllv_epi64(_mm256_shuffle_epi8(next, sh), n))
            } else {
                v
            };
            _mm256_and_si256(v, mask)
        };
        for g in 0..groups {
            let p = bytes.as_ptr().add(g * gb);
            let a = half(p, plan.offs[0], plan.offs[1], s0, h0, n0);
            let b = half(p, plan.offs[2], plan.offs[3], s1, h1, n1);
            emit(g, a, b);
        }
        groups * 8
    }
}

/// # Safety
/// The CPU must support AVX2.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn unpack_u64(packed: &[u64], width: u32, base: u64, out: &mut [u64]) -> usize {
    let basev = _mm256_set1_epi64x(base as i64);
    let ptr = out.as_mut_ptr();
    // SAFETY: AVX2 is enabled; each pair of stores covers values `8g..8g+8` of `out`.
    unsafe {
        qword_groups(as_bytes(packed), width, out.len(), |g, a, b| {
            _mm256_storeu_si256(ptr.add(8 * g).cast(), _mm256_add_epi64(a, basev));
            _mm256_storeu_si256(ptr.add(8 * g + 4).cast(), _mm256_add_epi64(b, basev));
        })
    }
}

/// Runs the dword decoder `n` steps at a time (2 for u16, 4 for u8 outputs).
#[inline(always)]
unsafe fn dword_blocks<const N: usize>(
    bytes: &[u8],
    width: u32,
    out_len: usize,
    mut emit: impl FnMut(usize, [__m256i; N]),
) -> usize {
    let Some(Some(plan)) = DWORD.get(width as usize) else {
        return 0;
    };
    let gb = width as usize;
    let per = 8 * N;
    // A block is N consecutive groups; the last group's loads bound the reach.
    let groups = groups_in(bytes.len(), gb, dword_reach(plan), usize::MAX);
    let blocks = (groups / N).min(out_len / per);
    // SAFETY: called only from AVX2 functions (inlined); every group `< groups` has both
    // loads inside `bytes` (see `groups_in`).
    unsafe {
        let shuf = _mm256_loadu_si256(plan.shuf.as_ptr().cast());
        let sh = _mm256_loadu_si256(plan.shift.as_ptr().cast());
        let mask = _mm256_set1_epi32(low_mask(width) as u32 as i32);
        for blk in 0..blocks {
            let p = bytes.as_ptr().add(blk * N * gb);
            let v: [__m256i; N] =
                std::array::from_fn(|i| dword_step(p.add(i * gb), plan.hi_off, shuf, sh, mask));
            emit(blk, v);
        }
    }
    blocks * per
}

/// # Safety
/// The CPU must support AVX2.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn unpack_u16(packed: &[u64], width: u32, base: u16, out: &mut [u16]) -> usize {
    let basev = _mm256_set1_epi16(base as i16);
    let ptr = out.as_mut_ptr();
    // SAFETY: AVX2 is enabled; each store covers values `16b..16b+16` of `out`.
    unsafe {
        dword_blocks::<2>(as_bytes(packed), width, out.len(), |blk, [a, b]| {
            // packus interleaves 128-bit halves: [a0-3 b0-3 | a4-7 b4-7] -> fix qword order.
            let x = _mm256_permute4x64_epi64::<0b11_01_10_00>(_mm256_packus_epi32(a, b));
            _mm256_storeu_si256(ptr.add(16 * blk).cast(), _mm256_add_epi16(x, basev));
        })
    }
}

/// # Safety
/// The CPU must support AVX2.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn unpack_u8(packed: &[u64], width: u32, base: u8, out: &mut [u8]) -> usize {
    let basev = _mm256_set1_epi8(base as i8);
    let order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    let ptr = out.as_mut_ptr();
    // SAFETY: AVX2 is enabled; each store covers values `32b..32b+32` of `out`.
    unsafe {
        dword_blocks::<4>(as_bytes(packed), width, out.len(), |blk, [a, b, c, d]| {
            let ab = _mm256_packus_epi32(a, b);
            let cd = _mm256_packus_epi32(c, d);
            let x = _mm256_permutevar8x32_epi32(_mm256_packus_epi16(ab, cd), order);
            _mm256_storeu_si256(ptr.add(32 * blk).cast(), _mm256_add_epi8(x, basev));
        })
    }
}
