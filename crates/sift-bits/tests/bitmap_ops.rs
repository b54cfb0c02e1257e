//! `extend`, `deposit`, `compress` and the packed predicates at every level equal
//! bool-at-a-time references, for all widths 0–64, ragged lengths and all densities.

#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used)] // test code asserts by panicking

mod common;

use common::{DENSITIES, LENGTHS, Rng};
use proptest::prelude::*;
use sift_bits::levels::{deposit_at, extend_at, extract_at};
use sift_bits::pack::pack;
use sift_bits::packed_cmp::compare_at;
use sift_bits::{Bitmap, Level, Predicate};

fn bools(b: &Bitmap) -> Vec<bool> {
    (0..b.len()).map(|i| b.get(i)).collect()
}

fn check_levels(level: Level, a: &Bitmap, b: &Bitmap) {
    // extend: segments open at the ones of `b`.
    let seg_bits = Bitmap::from_bools(bools(a).into_iter().cycle().take(b.count_ones()));
    let mut want = Vec::new();
    let mut seg: Option<usize> = None;
    for i in 0..b.len() {
        if b.get(i) {
            seg = Some(seg.map_or(0, |s| s + 1));
        }
        want.push(seg.is_some_and(|s| seg_bits.get(s)));
    }
    let got = extend_at(level, &seg_bits, b).map(|x| bools(&x));
    assert_eq!(got, Ok(want), "extend {level:?} n={}", b.len());

    // deposit: the k-th selected row gets filtered bit k.
    let filtered = Bitmap::from_bools(bools(a).into_iter().cycle().take(b.count_ones()));
    let mut k = 0;
    let want: Vec<bool> = (0..b.len())
        .map(|i| {
            b.get(i) && {
                k += 1;
                filtered.get(k - 1)
            }
        })
        .collect();
    assert_eq!(
        deposit_at(level, &filtered, b).map(|x| bools(&x)),
        Ok(want),
        "deposit {level:?}"
    );

    // compress: bits of `levels` where `b` is set.
    let levels = Bitmap::from_bools(bools(a).into_iter().cycle().take(b.len()));
    let want: Vec<bool> = (0..b.len())
        .filter(|&i| b.get(i))
        .map(|i| levels.get(i))
        .collect();
    assert_eq!(
        extract_at(level, &levels, b).map(|x| bools(&x)),
        Ok(want),
        "compress {level:?}"
    );
}

#[test]
fn level_ops_all_lengths_densities() {
    eprintln!("levels under test: {:?}", Level::supported());
    let mut rng = Rng(11);
    for level in Level::supported() {
        for &n in LENGTHS {
            for &da in DENSITIES {
                for &db in DENSITIES {
                    let a = rng.bitmap(n.max(1), da);
                    let b = rng.bitmap(n, db);
                    check_levels(level, &a, &b);
                }
            }
        }
    }
}

#[test]
fn level_ops_reject_mismatched_lengths() {
    let b = Bitmap::ones(10);
    assert!(extend_at(Level::active(), &Bitmap::ones(9), &b).is_err());
    assert!(deposit_at(Level::active(), &Bitmap::ones(11), &b).is_err());
    assert!(extract_at(Level::active(), &Bitmap::ones(9), &b).is_err());
}

fn predicates(rng: &mut Rng, width: u32) -> Vec<Predicate> {
    let m = sift_bits::pack::low_mask(width);
    let c = rng.next() & m;
    let d = rng.next() & m;
    let (lo, hi) = (c.min(d), c.max(d));
    vec![
        Predicate::Eq(c),
        Predicate::Ne(c),
        Predicate::Lt(c),
        Predicate::Le(c),
        Predicate::Gt(c),
        Predicate::Ge(c),
        Predicate::Between(lo, hi),
        Predicate::Between(hi, lo),
        Predicate::Lt(0),
        Predicate::Le(m),
        Predicate::Eq(m),
        Predicate::Eq(0),
        Predicate::Gt(m.wrapping_add(1)),
        Predicate::Lt(u64::MAX),
    ]
}

fn check_compare(level: Level, codes: &[u64], width: u32, pred: Predicate) {
    let packed = pack(codes, width);
    let got = compare_at(level, &packed, width, codes.len(), pred).map(|b| bools(&b));
    let m = sift_bits::pack::low_mask(width);
    let want: Vec<bool> = codes.iter().map(|&c| pred.eval(c & m)).collect();
    assert_eq!(
        got,
        Ok(want),
        "{level:?} w={width} n={} {pred:?}",
        codes.len()
    );
}

#[test]
fn packed_compare_all_widths() {
    let mut rng = Rng(5);
    for level in Level::supported() {
        for width in 0..=64 {
            for &n in LENGTHS {
                let codes = rng.codes(width, n);
                for p in predicates(&mut rng, width) {
                    check_compare(level, &codes, width, p);
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn random_level_ops(n in 0usize..3000, da in 0.0f64..=1.0, db in 0.0f64..=1.0, seed in any::<u64>()) {
        let mut rng = Rng(seed);
        let a = rng.bitmap(n.max(1), da);
        let b = rng.bitmap(n, db);
        for level in Level::supported() {
            check_levels(level, &a, &b);
        }
    }

    #[test]
    fn random_packed_compare(width in 0u32..=64, n in 0usize..2000, seed in any::<u64>()) {
        let mut rng = Rng(seed);
        let codes = rng.codes(width, n);
        for p in predicates(&mut rng, width) {
            for level in Level::supported() {
                check_compare(level, &codes, width, p);
            }
        }
    }
}
