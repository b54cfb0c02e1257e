//! `float::scale_to_f64_bits` at every supported level gives the same bits as the scalar
//! path and as `(d as f64 * a) * b`, and the same in-range verdict, for every length and
//! for integers at, inside and beyond ±2^51.

#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used)] // test code asserts by panicking

use proptest::prelude::*;
use sift_bits::Level;
use sift_bits::float::{INT_LIMIT, int_to_f64, scale_to_f64_bits_at};

fn ints() -> impl Strategy<Value = i64> {
    prop_oneof![
        -INT_LIMIT..=INT_LIMIT,
        -1000i64..1000,
        Just(INT_LIMIT),
        Just(-INT_LIMIT),
        Just(INT_LIMIT + 1),
        Just(-INT_LIMIT - 1),
        Just(i64::MIN),
        Just(i64::MAX),
        any::<i64>(),
    ]
}

fn factors() -> impl Strategy<Value = f64> {
    prop_oneof![
        Just(1.0),
        Just(0.01),
        Just(1e-18),
        Just(1e18),
        (-1e6f64..1e6f64),
    ]
}

proptest! {
    #[test]
    fn every_level_matches_the_definition(
        values in prop::collection::vec(ints(), 0..300),
        a in factors(),
        b in factors(),
    ) {
        let in_range = values.iter().all(|d| d.unsigned_abs() <= INT_LIMIT as u64);
        for level in Level::supported() {
            let mut out = values.clone();
            let ok = scale_to_f64_bits_at(level, &mut out, a, b);
            prop_assert_eq!(ok, in_range, "level {:?}", level);
            if in_range {
                for (d, r) in values.iter().zip(&out) {
                    let want = ((*d as f64) * a) * b;
                    prop_assert_eq!(*r as u64, want.to_bits(), "level {:?}, d = {}", level, d);
                }
            }
        }
    }
}

#[test]
fn magic_conversion_is_exact_at_the_limits() {
    for d in [
        0,
        1,
        -1,
        INT_LIMIT,
        -INT_LIMIT,
        INT_LIMIT - 1,
        1 - INT_LIMIT,
    ] {
        assert_eq!(int_to_f64(d), d as f64, "d = {d}");
    }
}

#[test]
fn one_bad_value_in_a_long_run_is_reported() {
    for level in Level::supported() {
        for pos in [0, 7, 8, 63, 1000, 1023] {
            let mut v = vec![5i64; 1024];
            v[pos] = INT_LIMIT + 1;
            assert!(
                !scale_to_f64_bits_at(level, &mut v, 1.0, 1.0),
                "{level:?} at {pos}"
            );
        }
    }
}
