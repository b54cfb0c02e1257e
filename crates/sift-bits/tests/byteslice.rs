//! The ByteSlice scan at every level equals decode-and-compare, for every width 0–64,
//! every predicate, ragged lengths and prior bitmaps of every density.

#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used)] // test code asserts by panicking

mod common;

use common::{DENSITIES, LENGTHS, Rng};
use proptest::prelude::*;
use sift_bits::byteslice::ByteSlices;
use sift_bits::pack::low_mask;
use sift_bits::{Bitmap, Level, Predicate};

fn predicates(rng: &mut Rng, codes: &[u64], width: u32) -> Vec<Predicate> {
    let m = low_mask(width);
    // Constants drawn from the data too, so "equal so far" paths are exercised deeply.
    let pick = |rng: &mut Rng| {
        if codes.is_empty() || rng.next().is_multiple_of(2) {
            rng.next() & m
        } else {
            codes[(rng.next() % codes.len() as u64) as usize] & m
        }
    };
    let (c, d) = (pick(rng), pick(rng));
    let (lo, hi) = (c.min(d), c.max(d));
    vec![
        Predicate::Eq(c),
        Predicate::Ne(c),
        Predicate::Lt(c),
        Predicate::Le(c),
        Predicate::Gt(c),
        Predicate::Ge(c),
        Predicate::Between(lo, hi),
        Predicate::Between(c, c),
        Predicate::Lt(m.saturating_add(1)),
        Predicate::Gt(0),
    ]
}

fn check(level: Level, bs: &ByteSlices, codes: &[u64], pred: Predicate, prior: Option<&Bitmap>) {
    let m = low_mask(bs.width());
    let got = bs.compare_at(level, pred, prior);
    let want = Bitmap::from_bools(
        codes
            .iter()
            .enumerate()
            .map(|(i, &c)| pred.eval(c & m) && prior.is_none_or(|p| p.get(i))),
    );
    assert_eq!(
        got,
        Ok(want),
        "{level:?} w={} n={} {pred:?}",
        bs.width(),
        codes.len()
    );
}

#[test]
fn all_widths_predicates_priors_levels() {
    eprintln!("levels under test: {:?}", Level::supported());
    let mut rng = Rng(9);
    for width in 0..=64 {
        for &n in LENGTHS {
            let codes = rng.codes(width, n);
            let bs = ByteSlices::from_codes(&codes, width).unwrap_or_else(|e| panic!("{e}"));
            for (i, &c) in codes.iter().enumerate() {
                assert_eq!(bs.get(i), c & low_mask(width));
            }
            for pred in predicates(&mut rng, &codes, width) {
                for level in Level::supported() {
                    check(level, &bs, &codes, pred, None);
                    for &d in &DENSITIES[..3] {
                        let prior = rng.bitmap(n, d);
                        check(level, &bs, &codes, pred, Some(&prior));
                    }
                }
            }
        }
    }
}

#[test]
fn wrong_prior_length_is_an_error() {
    let bs = ByteSlices::from_codes(&[1, 2, 3], 12).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        bs.compare(Predicate::Lt(2), Some(&Bitmap::ones(4)))
            .is_err()
    );
    assert!(ByteSlices::from_codes(&[1], 65).is_err());
}

/// Decoding every code, or the selected ones, from slices borrowed from their stored
/// bytes equals the codes; stored bytes that are too short are an error.
#[test]
fn decode_and_select_from_stored_bytes() {
    let mut rng = Rng(21);
    for width in 0..=64 {
        for &n in LENGTHS {
            let codes: Vec<u64> = rng
                .codes(width, n)
                .iter()
                .map(|c| c & low_mask(width))
                .collect();
            let owned = ByteSlices::from_codes(&codes, width).unwrap_or_else(|e| panic!("{e}"));
            let stored = owned.as_bytes().to_vec();
            assert_eq!(
                Some(stored.len()),
                sift_bits::byteslice::sliced_bytes(n, width)
            );
            let bs = ByteSlices::from_bytes(&stored, width, n).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(bs.decode(), codes, "w={width} n={n}");
            for &d in DENSITIES {
                let sel = rng.bitmap(n, d);
                let want: Vec<u64> = sel.iter_ones().map(|i| codes[i]).collect();
                assert_eq!(bs.select(&sel), Ok(want), "w={width} n={n} d={d}");
            }
            if !stored.is_empty() {
                assert!(ByteSlices::from_bytes(&stored[..stored.len() - 1], width, n).is_err());
            }
        }
    }
    let bs = ByteSlices::from_codes(&[1, 2, 3], 12).unwrap_or_else(|e| panic!("{e}"));
    assert!(bs.select(&Bitmap::ones(4)).is_err());
    assert!(ByteSlices::from_bytes(&[], 65, 0).is_err());
    assert!(ByteSlices::from_bytes(&[], 8, usize::MAX).is_err());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn random(width in 0u32..=64, n in 0usize..3000, density in 0.0f64..=1.0, seed in any::<u64>()) {
        let mut rng = Rng(seed);
        let codes = rng.codes(width, n);
        let bs = ByteSlices::from_codes(&codes, width).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let prior = rng.bitmap(n, density);
        for pred in predicates(&mut rng, &codes, width) {
            for level in Level::supported() {
                check(level, &bs, &codes, pred, Some(&prior));
                check(level, &bs, &codes, pred, None);
            }
        }
    }
}
