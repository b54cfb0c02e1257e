//! The extreme of 64-bit integers, the extremes of 32-bit codes and of byte codes' ranks,
//! at every supported level, equal a fold over the rows the validity or selection admits:
//! ragged lengths around the 4-, 8-, 16- and 64-lane blocks, the extreme values of the
//! types themselves, selections of no row, one row, and every row.

#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used)] // test code asserts by panicking

use proptest::prelude::*;
use sift_bits::Level;
use sift_bits::extreme::{RankExtremes, extreme_i64, extremes_u32, rank_extremes};

/// The answer, one row at a time.
fn reference(values: &[i64], valid: Option<&[bool]>, max: bool) -> Option<i64> {
    let rows = values
        .iter()
        .enumerate()
        .filter(|&(i, _)| valid.is_none_or(|v| v[i]))
        .map(|(_, &x)| x);
    if max { rows.max() } else { rows.min() }
}

/// `n` rows with about `density` % of them picked (0: none, 1: rarely one).
fn picked(n: usize, density: u8, seed: u64) -> Vec<bool> {
    let mut s = seed | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s % 100) < u64::from(density)
        })
        .collect()
}

fn value() -> impl Strategy<Value = i64> {
    prop_oneof![
        any::<i64>(),
        -5i64..5,
        Just(i64::MIN),
        Just(i64::MAX),
        Just(i64::MIN + 1),
        Just(i64::MAX - 1),
    ]
}

proptest! {
    #[test]
    fn extremes_agree_at_every_level(
        values in prop::collection::vec(value(), 0..80),
        density in prop_oneof![Just(0u8), Just(1), Just(50), Just(100)],
        seed in any::<u64>(),
    ) {
        let valid = picked(values.len(), density, seed);
        let mut bytes = vec![0u8; values.len().div_ceil(8)];
        for (i, &v) in valid.iter().enumerate() {
            bytes[i / 8] |= u8::from(v) << (i % 8);
        }
        for max in [false, true] {
            let all = reference(&values, None, max);
            let some = reference(&values, Some(&valid), max);
            for level in Level::supported() {
                prop_assert_eq!(extreme_i64(level, &values, None, max), all, "{:?} max={}", level, max);
                prop_assert_eq!(
                    extreme_i64(level, &values, Some(&bytes), max),
                    some,
                    "{:?} max={} with validity",
                    level,
                    max
                );
            }
        }
    }
}

proptest! {
    #[test]
    fn rank_extremes_agree_at_every_level(
        codes in prop::collection::vec(prop_oneof![any::<u8>(), 0u8..4, 120u8..136], 0..300),
        ranks in prop::collection::vec(any::<u8>(), 256),
        density in prop_oneof![Just(0u8), Just(1), Just(50), Just(100)],
        seed in any::<u64>(),
    ) {
        let ranks: [u8; 256] = ranks.try_into().unwrap();
        let picked = picked(codes.len(), density, seed);
        let mut words = vec![0u64; codes.len().div_ceil(64)];
        for (i, &p) in picked.iter().enumerate() {
            words[i / 64] |= u64::from(p) << (i % 64);
        }
        // The answer, one code at a time.
        let reference = |sel: Option<&[bool]>| {
            let mut out: Option<RankExtremes> = None;
            for (i, &c) in codes.iter().enumerate() {
                if sel.is_some_and(|s| !s[i]) {
                    continue;
                }
                let r = ranks[c as usize];
                out = Some(match out {
                    None => RankExtremes { lo: r, hi: r, top: c },
                    Some(o) => RankExtremes { lo: o.lo.min(r), hi: o.hi.max(r), top: o.top.max(c) },
                });
            }
            out
        };
        let (all, some) = (reference(None), reference(Some(&picked)));
        for level in Level::supported() {
            prop_assert_eq!(rank_extremes(level, &codes, None, &ranks), all, "{:?}", level);
            prop_assert_eq!(rank_extremes(level, &codes, Some(&words), &ranks), some, "{:?} selected", level);
        }
    }
}

proptest! {
    #[test]
    fn u32_extremes_agree_at_every_level(
        values in prop::collection::vec(
            prop_oneof![any::<u32>(), 0u32..4, Just(u32::MAX), Just(0)],
            0..200,
        ),
        density in prop_oneof![Just(0u8), Just(1), Just(50), Just(100)],
        seed in any::<u64>(),
    ) {
        let picked = picked(values.len(), density, seed);
        let mut words = vec![0u64; values.len().div_ceil(64)];
        for (i, &p) in picked.iter().enumerate() {
            words[i / 64] |= u64::from(p) << (i % 64);
        }
        // The answer, one value at a time.
        let reference = |sel: Option<&[bool]>| {
            let rows = values.iter().enumerate().filter(|&(i, _)| sel.is_none_or(|s| s[i]));
            let (lo, hi) = (rows.clone().map(|(_, &v)| v).min(), rows.map(|(_, &v)| v).max());
            lo.zip(hi)
        };
        let (all, some) = (reference(None), reference(Some(&picked)));
        for level in Level::supported() {
            prop_assert_eq!(extremes_u32(level, &values, None), all, "{:?}", level);
            prop_assert_eq!(extremes_u32(level, &values, Some(&words)), some, "{:?} selected", level);
        }
    }
}
