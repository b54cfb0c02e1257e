//! Shared generators for the property tests: deterministic data so failures reproduce.
#![allow(dead_code)]

use sift_bits::Bitmap;
use sift_bits::pack::low_mask;

/// Short and block-sized lengths, plus ragged ones around SIMD group sizes.
pub const LENGTHS: &[usize] = &[0, 1, 7, 8, 63, 64, 65, 127, 129, 1023, 1025];

/// splitmix64: a tiny seeded generator (no dependency, reproducible).
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Codes of `width` bits, biased to hit 0 and the maximum often.
    pub fn codes(&mut self, width: u32, n: usize) -> Vec<u64> {
        let m = low_mask(width);
        (0..n)
            .map(|_| match self.next() % 8 {
                0 => 0,
                1 => m,
                _ => self.next() & m,
            })
            .collect()
    }

    /// A bitmap where each bit is one with probability `density` (exactly 0 and 1 honoured).
    pub fn bitmap(&mut self, n: usize, density: f64) -> Bitmap {
        let t = (density * u64::MAX as f64) as u64;
        Bitmap::from_bools((0..n).map(|_| density >= 1.0 || (density > 0.0 && self.next() < t)))
    }
}

/// All-zero, sparse, half, dense and all-one.
pub const DENSITIES: &[f64] = &[0.0, 0.01, 0.1, 0.5, 0.9, 0.99, 1.0];
