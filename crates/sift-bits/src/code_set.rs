//! Membership of dictionary codes in a set, one result bit per code.
//!
//! A predicate evaluated once per dictionary entry leaves a set of matching codes; when
//! those codes are not one contiguous range (an unsorted dictionary, such as a Parquet
//! dictionary page in first-seen order), every code of the data is looked up in that set.
//! Codes at or beyond the dictionary's length match nothing and are reported, so that the
//! caller can name the corruption.
//!
//! Byte codes (dictionaries of up to 256 entries, the common case) go through a 256-byte
//! table: AVX-512 VBMI looks up 64 codes per two `VPERMI2B` and gathers the answers'
//! top bits straight into a bitmap word. Wider codes test a bitset (AVX-512: gathers).

use crate::dispatch::Level;
use crate::pack::low_mask;

/// Table entry of a code that is in the set (top bit set).
const HIT: u8 = 0x80;
/// Table entry of a code beyond the dictionary (top bit clear, so never a hit).
const BEYOND: u8 = 0x01;

/// A set of codes `0..len`, built from one flag per dictionary entry.
#[derive(Debug, Clone)]
pub struct CodeSet {
    /// Bit `c` is set when code `c` is in the set.
    bits: Vec<u64>,
    /// The dictionary's length: codes at or above it are out of range.
    len: usize,
    /// Byte codes: [`HIT`], [`BEYOND`] or 0 per code.
    table: [u8; 256],
}

impl CodeSet {
    /// The codes `c` with `mask[c]`, out of `mask.len()` entries.
    pub fn new(mask: &[bool]) -> Self {
        Self::from_bitmap(&crate::Bitmap::from_bools(mask.iter().copied()))
    }

    /// The codes whose bit of `mask` is set, out of `mask.len()` entries (the verdicts on
    /// a dictionary as a filter leaves them).
    pub fn from_bitmap(mask: &crate::Bitmap) -> Self {
        let mut table = [BEYOND; 256];
        for (c, t) in table.iter_mut().enumerate().take(mask.len()) {
            *t = if mask.get(c) { HIT } else { 0 };
        }
        Self {
            bits: mask.words().to_vec(),
            len: mask.len(),
            table,
        }
    }

    /// The number of dictionary entries.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the dictionary is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether `code` is in the set (false beyond the dictionary).
    #[inline]
    pub fn contains(&self, code: u64) -> bool {
        usize::try_from(code).is_ok_and(|c| c < self.len && self.bits[c / 64] >> (c % 64) & 1 == 1)
    }

    /// Sets bit `i` of `out` to whether byte code `codes[i]` is in the set, writing the
    /// first `codes.len().div_ceil(64)` words of `out` (bits past the end zero); returns
    /// whether any code lies beyond the dictionary. Runs at `level` (clamped to the CPU).
    ///
    /// # Panics
    /// If `out` is shorter than `codes.len().div_ceil(64)` words.
    pub fn lookup_bytes(&self, level: Level, codes: &[u8], out: &mut [u64]) -> bool {
        let out = &mut out[..codes.len().div_ceil(64)];
        let (done, mut beyond) = self.lookup_bytes_simd(level, codes, out);
        for (o, block) in out.iter_mut().zip(codes.chunks(64)).skip(done / 64) {
            let (word, b) = self.bytes_scalar(block);
            *o = word;
            beyond |= b;
        }
        beyond
    }

    /// [`lookup_bytes`](Self::lookup_bytes) for codes of any width up to 32 bits: a
    /// bitset test (AVX-512: 16 codes per masked gather of bitset words).
    ///
    /// # Panics
    /// If `out` is shorter than `codes.len().div_ceil(64)` words.
    pub fn lookup(&self, level: Level, codes: &[u32], out: &mut [u64]) -> bool {
        let out = &mut out[..codes.len().div_ceil(64)];
        let (done, mut beyond) = self.lookup_wide_simd(level, codes, out);
        for (o, block) in out.iter_mut().zip(codes.chunks(64)).skip(done / 64) {
            let (word, b) = self.wide_scalar(block);
            *o = word;
            beyond |= b;
        }
        beyond
    }

    /// Whole words of wide codes with SIMD at `level`: (codes done, any beyond).
    fn lookup_wide_simd(&self, level: Level, codes: &[u32], out: &mut [u64]) -> (usize, bool) {
        #[cfg(target_arch = "x86_64")]
        if level.clamp() == Level::Avx512 {
            // SAFETY: `clamp` returned Avx512 only because avx512f/bw were detected.
            return unsafe { avx512::lookup_wide(&self.bits, self.len, codes, out) };
        }
        let _ = (level, codes, out);
        (0, false)
    }

    /// Whole words of byte codes with SIMD at `level`: (codes done, any beyond).
    fn lookup_bytes_simd(&self, level: Level, codes: &[u8], out: &mut [u64]) -> (usize, bool) {
        #[cfg(target_arch = "x86_64")]
        if level.clamp() == Level::Avx512 {
            // SAFETY: `clamp` returned Avx512 only because avx512f/bw/vbmi were detected.
            return unsafe { avx512::lookup_bytes(&self.table, codes, out) };
        }
        let _ = (level, codes, out);
        (0, false)
    }

    /// The scalar reference for up to 64 byte codes.
    fn bytes_scalar(&self, codes: &[u8]) -> (u64, bool) {
        let mut word = 0u64;
        let mut beyond = 0u8;
        for (j, &c) in codes.iter().enumerate() {
            let t = self.table[usize::from(c)];
            word |= u64::from(t >> 7) << j;
            beyond |= t;
        }
        (word & low_mask(codes.len() as u32), beyond & BEYOND != 0)
    }

    /// The scalar reference for up to 64 codes of any width: a bitset test.
    fn wide_scalar(&self, codes: &[u32]) -> (u64, bool) {
        let mut word = 0u64;
        let mut beyond = false;
        for (j, &c) in codes.iter().enumerate() {
            let c = u64::from(c);
            let inside = c < self.len as u64;
            beyond |= !inside;
            word |= u64::from(inside && self.bits[(c / 64) as usize] >> (c % 64) & 1 == 1) << j;
        }
        (word, beyond)
    }
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use std::arch::x86_64::*;

    /// Looks up whole words of 64 byte codes in `table`; returns (codes done, whether any
    /// entry read was [`super::BEYOND`]).
    ///
    /// # Safety
    /// The CPU must support avx512f, avx512bw and avx512vbmi.
    #[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
    pub(super) unsafe fn lookup_bytes(
        table: &[u8; 256],
        codes: &[u8],
        out: &mut [u64],
    ) -> (usize, bool) {
        // SAFETY: each load reads 64 of the table's 256 bytes; loads are unaligned.
        let [t0, t1, t2, t3] =
            [0, 64, 128, 192].map(|at| unsafe { _mm512_loadu_si512(table[at..].as_ptr().cast()) });
        let beyond_bit = _mm512_set1_epi8(super::BEYOND as i8);
        let mut beyond = 0u64;
        let mut done = 0;
        for (o, block) in out.iter_mut().zip(codes.chunks_exact(64)) {
            // SAFETY: `block` is exactly 64 bytes; the load is unaligned.
            let c = unsafe { _mm512_loadu_si512(block.as_ptr().cast()) };
            // VPERMI2B indexes 128 bytes by the low 7 bits; bit 7 picks the table half.
            let low = _mm512_permutex2var_epi8(t0, c, t1);
            let high = _mm512_permutex2var_epi8(t2, c, t3);
            let entry = _mm512_mask_blend_epi8(_mm512_movepi8_mask(c), low, high);
            *o = _mm512_movepi8_mask(entry);
            beyond |= _mm512_test_epi8_mask(entry, beyond_bit);
            done += 64;
        }
        (done, beyond != 0)
    }

    /// Tests whole words of 64 codes against the bitset `bits` of a `len`-entry
    /// dictionary; returns (codes done, whether any code was `>= len`).
    ///
    /// # Safety
    /// The CPU must support avx512f and avx512bw, and `bits` must hold `len` bits.
    #[target_feature(enable = "avx512f,avx512bw")]
    pub(super) unsafe fn lookup_wide(
        bits: &[u64],
        len: usize,
        codes: &[u32],
        out: &mut [u64],
    ) -> (usize, bool) {
        // Codes are u32; a dictionary longer than that has every code inside it.
        let limit = _mm512_set1_epi32(u32::try_from(len).unwrap_or(u32::MAX) as i32);
        let all_inside = len > u32::MAX as usize;
        let low5 = _mm512_set1_epi32(31);
        let one = _mm512_set1_epi32(1);
        let base = bits.as_ptr().cast::<i32>();
        let mut beyond = 0u16;
        let mut done = 0;
        for (o, block) in out.iter_mut().zip(codes.chunks_exact(64)) {
            let mut word = 0u64;
            for (j, v) in block.chunks_exact(16).enumerate() {
                // SAFETY: `v` holds 16 u32 codes, exactly 64 bytes; the load is unaligned.
                let c = unsafe { _mm512_loadu_si512(v.as_ptr().cast()) };
                let inside = if all_inside {
                    u16::MAX
                } else {
                    _mm512_cmplt_epu32_mask(c, limit)
                };
                beyond |= !inside;
                // SAFETY: only lanes with `c < len` load, from 32-bit word `c / 32` of the
                // bitset, which holds `len` bits and so at least `c / 32 + 1` such words.
                let w = unsafe {
                    _mm512_mask_i32gather_epi32::<4>(
                        _mm512_setzero_si512(),
                        inside,
                        _mm512_srli_epi32::<5>(c),
                        base,
                    )
                };
                let bit = _mm512_srlv_epi32(w, _mm512_and_si512(c, low5));
                let hits = _mm512_mask_test_epi32_mask(inside, bit, one);
                word |= u64::from(hits) << (j * 16);
            }
            *o = word;
            done += 64;
        }
        (done, beyond != 0)
    }
}
