//! Parquet-Select (`select`, `unpack_selected`) at every level equals the reference
//! (unpack all, filter, re-pack) for every width 0–64, ragged lengths and all densities.

#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used)] // test code asserts by panicking

mod common;

use common::{DENSITIES, LENGTHS, Rng};
use proptest::prelude::*;
use sift_bits::pack::pack;
use sift_bits::select::{select_into, select_reference, unpack_selected_into};
use sift_bits::unpack::Lane;
use sift_bits::{Bitmap, Level};

fn check(level: Level, codes: &[u64], width: u32, sel: &Bitmap) {
    let packed = pack(codes, width);
    let want = select_reference(&packed, width, sel).unwrap_or_default();
    let mut got = vec![1, 2, 3];
    let res = select_into(level, &packed, width, sel, &mut got);
    assert!(res.is_ok(), "{res:?}");
    assert_eq!(
        got,
        want,
        "{level:?} w={width} n={} ones={}",
        codes.len(),
        sel.count_ones()
    );
    let kept: Vec<u64> = sel.iter_ones().map(|i| codes[i]).collect();
    check_unpacked::<u64>(level, &packed, width, sel, &kept);
    if width <= 32 {
        check_unpacked::<u32>(level, &packed, width, sel, &kept);
    }
    if width <= 16 {
        check_unpacked::<u16>(level, &packed, width, sel, &kept);
    }
    if width <= 8 {
        check_unpacked::<u8>(level, &packed, width, sel, &kept);
    }
}

fn check_unpacked<T: Lane>(level: Level, packed: &[u64], width: u32, sel: &Bitmap, kept: &[u64]) {
    let base = T::from_u64(0x0123_4567_89AB_CDEF);
    let mut got = Vec::new();
    let res = unpack_selected_into(level, packed, width, base, sel, &mut got);
    assert!(res.is_ok(), "{res:?}");
    let want: Vec<T> = kept
        .iter()
        .map(|&v| T::from_u64(v).wrapping_add(base))
        .collect();
    assert_eq!(got, want, "{level:?} T={} w={width}", T::BITS);
}

#[test]
fn all_widths_lengths_densities_levels() {
    eprintln!("levels under test: {:?}", Level::supported());
    let mut rng = Rng(7);
    for level in Level::supported() {
        for width in 0..=64 {
            for &n in LENGTHS {
                let codes = rng.codes(width, n);
                for &d in DENSITIES {
                    let sel = rng.bitmap(n, d);
                    check(level, &codes, width, &sel);
                }
            }
        }
    }
}

#[test]
fn blocks_larger_than_the_fused_block() {
    // 3 blocks of the fused path plus a ragged tail, dense and sparse blocks mixed.
    let mut rng = Rng(3);
    for width in [1, 7, 13, 32, 33, 64] {
        let n = 3 * 4096 + 77;
        let codes = rng.codes(width, n);
        let mut bools: Vec<bool> = (0..n).map(|i| (i / 4096) % 2 == 0 || i % 97 == 0).collect();
        bools[n - 1] = true;
        let sel = Bitmap::from_bools(bools);
        for level in Level::supported() {
            check(level, &codes, width, &sel);
        }
    }
}

#[test]
fn short_buffers_are_errors() {
    let packed = pack(&[1, 2, 3], 9);
    let mut out = Vec::new();
    let sel = Bitmap::ones(100);
    assert!(select_into(Level::active(), &packed, 9, &sel, &mut out).is_err());
    let mut out8: Vec<u8> = Vec::new();
    assert!(
        unpack_selected_into(
            Level::active(),
            &packed,
            9,
            0u8,
            &Bitmap::ones(3),
            &mut out8
        )
        .is_err()
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn random(width in 0u32..=64, n in 0usize..2500, density in 0.0f64..=1.0, seed in any::<u64>()) {
        let mut rng = Rng(seed);
        let codes = rng.codes(width, n);
        let sel = rng.bitmap(n, density);
        for level in Level::supported() {
            check(level, &codes, width, &sel);
        }
    }
}

fn check_filter<T: Lane>(level: Level, vals: &[T], sel: &Bitmap) {
    let want: Vec<T> = sel.iter_ones().map(|i| vals[i]).collect();
    let mut got = vec![T::default(); 3];
    let res = sift_bits::compact::filter_into(level, vals, sel, &mut got);
    assert!(res.is_ok(), "{res:?}");
    assert_eq!(got, want, "{level:?} T={} n={}", T::BITS, vals.len());
}

#[test]
fn filter_decoded_values_all_types() {
    let mut rng = Rng(21);
    for level in Level::supported() {
        for &n in LENGTHS {
            for &d in DENSITIES {
                let sel = rng.bitmap(n, d);
                let raw = rng.codes(64, n);
                check_filter::<u64>(level, &raw, &sel);
                check_filter::<u32>(
                    level,
                    &raw.iter().map(|&v| v as u32).collect::<Vec<_>>(),
                    &sel,
                );
                check_filter::<u16>(
                    level,
                    &raw.iter().map(|&v| v as u16).collect::<Vec<_>>(),
                    &sel,
                );
                check_filter::<u8>(
                    level,
                    &raw.iter().map(|&v| v as u8).collect::<Vec<_>>(),
                    &sel,
                );
            }
        }
    }
    assert!(sift_bits::compact::filter::<u8>(&[1, 2], &Bitmap::ones(3)).is_err());
}

#[test]
fn compact_without_slack_still_exact() {
    // A destination with no slack: the SIMD path must stop early, the scalar loop finish.
    let mut rng = Rng(8);
    for level in Level::supported() {
        for d in [0.3, 1.0] {
            let sel = rng.bitmap(1000, d);
            let vals: Vec<u32> = (0..1000).collect();
            let ones = sel.count_ones();
            let mut dst = vec![0u32; ones];
            let k = sift_bits::compact::compact_words(level, &vals, sel.words(), &mut dst);
            assert_eq!(k, ones);
            assert_eq!(
                dst,
                sel.iter_ones().map(|i| i as u32).collect::<Vec<_>>(),
                "{level:?}"
            );
        }
    }
}

#[test]
fn compact_ignores_words_past_the_values() {
    // A block of a longer selection handed the selection's remaining words: the words
    // past the block's values select nothing.
    let mut rng = Rng(9);
    for level in Level::supported() {
        for len in [0, 1, 63, 64, 130, 1000] {
            let sel = rng.bitmap(4096, 0.4);
            let vals: Vec<u32> = (0..len as u32).collect();
            let want: Vec<u32> = sel
                .iter_ones()
                .take_while(|&i| i < len)
                .map(|i| i as u32)
                .collect();
            let mut dst = vec![0u32; want.len() + sift_bits::compact::SLACK];
            let k = sift_bits::compact::compact_words(level, &vals, sel.words(), &mut dst);
            assert_eq!(&dst[..k], want, "{level:?}, {len} values");
        }
    }
}
