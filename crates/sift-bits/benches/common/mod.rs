//! Helpers shared by the benchmark binaries: a seeded generator and Bloom filters of an
//! exact size.
#![allow(dead_code)] // each binary uses its part

use sift_bits::bloom::BloomFilter;

/// SplitMix64 from `seed`: the benchmarks' random numbers, the same in every run.
pub fn rng(seed: u64) -> impl FnMut() -> u64 {
    let mut s = seed;
    move || {
        s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = s;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// A Bloom filter of exactly `bytes` at design rate 0.01, holding as many keys from `key`
/// as it was sized for (the most that give this size).
pub fn bloom_of_size(bytes: usize, mut key: impl FnMut() -> u64) -> BloomFilter {
    let (mut lo, mut hi) = (1usize, bytes);
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        if BloomFilter::with_capacity(mid, 0.01).size_bytes() <= bytes {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    let mut f = BloomFilter::with_capacity(lo, 0.01);
    assert_eq!(f.size_bytes(), bytes, "no filter of {bytes} bytes");
    for _ in 0..lo {
        f.insert(key());
    }
    f
}
