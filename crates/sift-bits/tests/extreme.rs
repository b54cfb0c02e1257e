//! The extreme of 64-bit integers at every supported level equals a fold over the rows
//! the validity admits: ragged lengths around the 4- and 8-lane blocks, the extreme values
//! of `i64` themselves, validity with no row, one row, and every row.

#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used)] // test code asserts by panicking

use proptest::prelude::*;
use sift_bits::Level;
use sift_bits::extreme::extreme_i64;

/// The answer, one row at a time.
fn reference(values: &[i64], valid: Option<&[bool]>, max: bool) -> Option<i64> {
    let rows = values
        .iter()
        .enumerate()
        .filter(|&(i, _)| valid.is_none_or(|v| v[i]))
        .map(|(_, &x)| x);
    if max { rows.max() } else { rows.min() }
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
        // Validity with about `density` % of rows set (0: none, 1: rarely one).
        let mut s = seed | 1;
        let valid: Vec<bool> = values
            .iter()
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                (s % 100) < u64::from(density)
            })
            .collect();
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
