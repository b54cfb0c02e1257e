//! Unpackers at every supported level agree with the scalar reference for all widths the
//! output type can hold, all lengths (ragged tails included) and with a FOR base.

#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used)] // test code asserts by panicking

mod common;

use common::{LENGTHS, Rng};
use proptest::prelude::*;
use sift_bits::Level;
use sift_bits::pack::{low_mask, pack};
use sift_bits::unpack::{Lane, unpack_for_at};

fn check<T: Lane>(level: Level, codes: &[u64], width: u32, base: T, slack: usize) {
    let mut packed = pack(codes, width);
    // Extra words past the end must not change the result (they let SIMD loads run longer).
    packed.extend(std::iter::repeat_n(u64::MAX, slack));
    let mut got = vec![T::default(); codes.len()];
    let res = unpack_for_at(level, &packed, width, base, &mut got);
    assert!(res.is_ok(), "{res:?}");
    for (i, (&c, &g)) in codes.iter().zip(&got).enumerate() {
        let want = T::from_u64(c & low_mask(width)).wrapping_add(base);
        assert_eq!(
            g,
            want,
            "{level:?} {} w={width} i={i} n={}",
            T::BITS,
            codes.len()
        );
    }
}

fn sweep<T: Lane>(rng: &mut Rng) {
    for level in Level::supported() {
        for width in 0..=T::BITS {
            for &n in LENGTHS {
                let codes = rng.codes(width, n);
                let base = T::from_u64(rng.next());
                check(level, &codes, width, T::default(), 0);
                check(level, &codes, width, base, 3);
            }
        }
    }
}

#[test]
fn all_widths_all_types_all_levels() {
    eprintln!("levels under test: {:?}", Level::supported());
    let mut rng = Rng(1);
    sweep::<u8>(&mut rng);
    sweep::<u16>(&mut rng);
    sweep::<u32>(&mut rng);
    sweep::<u64>(&mut rng);
}

#[test]
fn too_wide_and_short_are_errors() {
    let packed = pack(&[1, 2, 3], 9);
    let mut out = [0u8; 3];
    assert!(unpack_for_at(Level::Scalar, &packed, 9, 0u8, &mut out).is_err());
    let mut out = [0u16; 100];
    assert!(unpack_for_at(Level::detected(), &packed, 9, 0u16, &mut out).is_err());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn random_lengths(width in 0u32..=64, n in 0usize..3000, seed in any::<u64>()) {
        let mut rng = Rng(seed);
        let codes = rng.codes(width, n);
        for level in Level::supported() {
            check::<u64>(level, &codes, width, rng.next(), 0);
            if width <= 32 {
                check::<u32>(level, &codes, width, rng.next() as u32, 0);
            }
            if width <= 16 {
                check::<u16>(level, &codes, width, 7, 1);
            }
            if width <= 8 {
                check::<u8>(level, &codes, width, 200, 0);
            }
        }
    }
}

/// The SIMD paths must really run (not silently hand everything to the scalar tail).
#[test]
fn simd_paths_cover_the_bulk() {
    fn covered<T: Lane>(level: Level, width: u32) -> usize {
        let packed = vec![0u64; 4096];
        let mut out = vec![T::default(); 4096];
        T::unpack_simd(level, &packed, width, T::default(), &mut out)
    }
    for level in Level::supported()
        .into_iter()
        .filter(|&l| l != Level::Scalar)
    {
        for w in 1..=8 {
            assert!(covered::<u8>(level, w) >= 3000, "{level:?} u8 w={w}");
        }
        for w in 1..=16 {
            assert!(covered::<u16>(level, w) >= 3000, "{level:?} u16 w={w}");
        }
        for w in 1..=32 {
            assert!(covered::<u32>(level, w) >= 3000, "{level:?} u32 w={w}");
        }
        for w in 1..=64 {
            // AVX2 leaves the widths whose values can need a ninth byte to the scalar loop.
            if level == Level::Avx512 || w <= 56 || w == 64 {
                assert!(covered::<u64>(level, w) >= 3000, "{level:?} u64 w={w}");
            }
        }
    }
}
