//! Range compares at every supported level equal the scalar level and a value-at-a-time
//! reference: `packed_cmp::compare_into` (fused AVX-512 unpack-and-compare, chunked
//! unpack-then-compare) for every width 0–64, and `range::compare_values` for every lane
//! type; ragged and block-sized lengths, bounds with `lo > hi`, `lo = 0`, `hi = max`,
//! negation, and reused output bitmaps.

#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used)] // test code asserts by panicking

mod common;

use common::Rng;
use proptest::prelude::*;
use sift_bits::pack::{low_mask, pack};
use sift_bits::packed_cmp::compare_into;
use sift_bits::range::compare_values;
use sift_bits::unpack::Lane;
use sift_bits::{Bitmap, Level, Predicate};

/// The brief's lengths: empty, single, around one word, around a 1024-value chunk, one block.
const LENGTHS: &[usize] = &[0, 1, 63, 64, 65, 1023, 1025, 65536];

/// Words of the bitmap, checking that bits past `len` are zero.
fn words(b: &Bitmap, n: usize) -> Vec<u64> {
    assert_eq!(b.len(), n);
    assert_eq!(b.words().len(), n.div_ceil(64));
    if let (true, Some(&last)) = (!n.is_multiple_of(64), b.words().last()) {
        assert_eq!(last >> (n % 64), 0, "bits past len set (n={n})");
    }
    b.words().to_vec()
}

fn reference(n: usize, f: impl Fn(usize) -> bool) -> Vec<u64> {
    words(&Bitmap::from_bools((0..n).map(f)), n)
}

/// Predicates covering every reduction: `lo > hi`, `lo = 0`, `hi = max`, equality, negation,
/// constants beyond the width, and random bounds.
fn predicates(rng: &mut Rng, width: u32) -> Vec<Predicate> {
    let m = low_mask(width);
    let (c, d) = (rng.next() & m, rng.next() & m);
    let (lo, hi) = (c.min(d), c.max(d));
    vec![
        Predicate::Between(lo, hi),
        Predicate::Between(hi, lo),
        Predicate::Between(0, hi),
        Predicate::Between(lo, m),
        Predicate::Between(lo, u64::MAX),
        Predicate::Eq(c),
        Predicate::Ne(c),
        Predicate::Lt(c),
        Predicate::Gt(c),
        Predicate::Le(m),
        Predicate::Ge(0),
        Predicate::Lt(0),
    ]
}

/// Packed compare at every level against the scalar level and the reference, into a reused
/// bitmap of a different length, with garbage words past the packed data.
fn check_packed(codes: &[u64], width: u32, pred: Predicate, slack: usize) {
    let n = codes.len();
    let mut packed = pack(codes, width);
    packed.extend(std::iter::repeat_n(u64::MAX, slack));
    let m = low_mask(width);
    let want = reference(n, |i| pred.eval(codes[i] & m));
    let mut scalar = Bitmap::default();
    compare_into(Level::Scalar, &packed, width, n, pred, &mut scalar).unwrap();
    assert_eq!(words(&scalar, n), want, "Scalar w={width} n={n} {pred:?}");
    for level in Level::supported() {
        let mut out = Bitmap::ones(n / 2 + 77);
        compare_into(level, &packed, width, n, pred, &mut out).unwrap();
        assert_eq!(out, scalar, "{level:?} w={width} n={n} {pred:?}");
    }
}

#[test]
fn packed_all_widths_all_lengths() {
    eprintln!("levels under test: {:?}", Level::supported());
    let mut rng = Rng(11);
    for width in 0..=64 {
        for &n in LENGTHS {
            let codes = rng.codes(width, n);
            let preds = predicates(&mut rng, width);
            // A block-sized call with every predicate is slow at the scalar level.
            let preds = if n > 4096 { &preds[..6] } else { &preds[..] };
            for (k, &p) in preds.iter().enumerate() {
                check_packed(&codes, width, p, k % 3);
            }
        }
    }
}

#[test]
fn packed_errors() {
    let packed = pack(&[1, 2, 3], 9);
    let mut out = Bitmap::default();
    for level in Level::supported() {
        assert!(compare_into(level, &packed, 9, 100, Predicate::Eq(1), &mut out).is_err());
        assert!(compare_into(level, &packed, 65, 1, Predicate::Eq(1), &mut out).is_err());
    }
}

/// `compare_values` at every level against the scalar level and the reference.
fn check_values<T: Lane>(values: &[T], lo: T, hi: T, negate: bool) {
    let n = values.len();
    let (l, h) = (lo.to_u64(), hi.to_u64());
    let want = reference(n, |i| {
        (l <= values[i].to_u64() && values[i].to_u64() <= h) ^ negate
    });
    let mut scalar = Bitmap::default();
    compare_values(Level::Scalar, values, lo, hi, negate, &mut scalar);
    assert_eq!(
        words(&scalar, n),
        want,
        "Scalar {} n={n} [{l}, {h}] negate={negate}",
        T::BITS
    );
    for level in Level::supported() {
        let mut out = Bitmap::ones(n / 3 + 5);
        compare_values(level, values, lo, hi, negate, &mut out);
        assert_eq!(
            out,
            scalar,
            "{level:?} {} n={n} [{l}, {h}] negate={negate}",
            T::BITS
        );
    }
}

fn values_sweep<T: Lane>(rng: &mut Rng, n: usize) {
    let max = low_mask(T::BITS);
    let vals: Vec<T> = rng.codes(T::BITS, n).into_iter().map(T::from_u64).collect();
    let (c, d) = (rng.next() & max, rng.next() & max);
    let (lo, hi) = (c.min(d), c.max(d));
    let bounds = [
        (lo, hi),
        (hi, lo),
        (0, hi),
        (lo, max),
        (0, max),
        (c, c),
        (max, max),
        (0, 0),
    ];
    for (k, &(l, h)) in bounds.iter().enumerate() {
        check_values(&vals, T::from_u64(l), T::from_u64(h), k % 2 == 1);
        check_values(&vals, T::from_u64(l), T::from_u64(h), k % 2 == 0);
    }
}

#[test]
fn values_all_types_all_lengths() {
    let mut rng = Rng(12);
    for &n in LENGTHS.iter().chain(&[127, 129, 4095]) {
        values_sweep::<u8>(&mut rng, n);
        values_sweep::<u16>(&mut rng, n);
        values_sweep::<u32>(&mut rng, n);
        values_sweep::<u64>(&mut rng, n);
    }
}

#[test]
fn values_sign_boundaries() {
    // Bounds and values around the sign bit, where the AVX2 signed-compare trick could fail.
    let vals: Vec<u8> = (0..=255).collect();
    for (lo, hi) in [
        (0x7F, 0x80),
        (0x80, 0xFF),
        (0, 0x7F),
        (0x7E, 0x81),
        (1, 0xFE),
    ] {
        check_values(&vals, lo, hi, false);
        check_values(&vals, lo, hi, true);
    }
    let vals: Vec<u64> = [0, 1, (1 << 63) - 1, 1 << 63, (1 << 63) + 1, u64::MAX]
        .into_iter()
        .cycle()
        .take(200)
        .collect();
    for (lo, hi) in [
        (0, (1 << 63) - 1),
        (1 << 63, u64::MAX),
        ((1 << 63) - 1, 1 << 63),
    ] {
        check_values(&vals, lo, hi, false);
        check_values(&vals, lo, hi, true);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn random_packed(width in 0u32..=64, n in 0usize..5000, seed in any::<u64>(),
                     lo in any::<u64>(), hi in any::<u64>(), negate in any::<bool>()) {
        let mut rng = Rng(seed);
        let codes = rng.codes(width, n);
        let m = low_mask(width);
        // Half the time clamp into the width so the range is not trivially empty or full.
        let (lo, hi) = if seed % 2 == 0 { (lo & m, hi & m) } else { (lo, hi) };
        let pred = if negate && lo == hi { Predicate::Ne(lo) } else { Predicate::Between(lo, hi) };
        check_packed(&codes, width, pred, (seed % 3) as usize);
        for p in predicates(&mut rng, width) {
            check_packed(&codes, width, p, 0);
        }
    }

    #[test]
    fn random_values(n in 0usize..5000, seed in any::<u64>(), lo in any::<u64>(),
                     hi in any::<u64>(), negate in any::<bool>()) {
        let mut rng = Rng(seed);
        let v64 = rng.codes(64, n);
        let v32: Vec<u32> = v64.iter().map(|&v| v as u32).collect();
        let v16: Vec<u16> = v64.iter().map(|&v| v as u16).collect();
        let v8: Vec<u8> = v64.iter().map(|&v| v as u8).collect();
        check_values(&v64, lo, hi, negate);
        check_values(&v32, lo as u32, hi as u32, negate);
        check_values(&v16, lo as u16, hi as u16, negate);
        check_values(&v8, lo as u8, hi as u8, negate);
    }
}
