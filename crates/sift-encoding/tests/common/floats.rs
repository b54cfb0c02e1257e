//! Double columns shaped for ALP (with and without exceptions), ALP_RD, dictionaries, runs
//! and plain; float predicates with bounds at, next to and between the values, at the
//! infinities and at NaNs, and their reference on `float_key` (SQL order: IEEE total order
//! on numbers, every NaN equal to the others and above them all).

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, Float64Array};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use sift_encoding::{ValuePredicate, float_key};

use super::{Checked, Nulls, PREDICATES, Rng, lengths, nulls, offsets, validity, with_nulls};

/// Values that trip decimal encodings up: NaNs (several patterns), infinities, -0.0,
/// repeating fractions, extremes and subnormals.
pub const SPECIALS: [u64; 16] = [
    0x7ff8_0000_0000_0000,
    0xfff8_0000_0000_0000,
    0x7ff8_0000_0000_0001,
    0x7ff0_0000_0000_0001,
    0x7ff0_0000_0000_0000,
    0xfff0_0000_0000_0000,
    0x8000_0000_0000_0000,
    0,
    0x3fd5_5555_5555_5555,
    0x3fe5_5555_5555_5555,
    0x0010_0000_0000_0000,
    1,
    0x7fef_ffff_ffff_ffff,
    0xffef_ffff_ffff_ffff,
    0x3fd3_3333_3333_3334,
    0x3fb9_9999_9999_999a,
];

#[derive(Debug, Clone, Copy)]
pub enum FloatShape {
    /// `k / 10^digits` (ALP).
    Decimal {
        digits: u8,
        max: u32,
    },
    /// Decimals with specials mixed in at this rate (ALP with exceptions).
    DecimalSpecials {
        digits: u8,
        per_mille: u16,
    },
    /// Doubles with long mantissas (ALP_RD).
    Real {
        scale: i8,
    },
    /// A few distinct values (dictionary).
    Dict {
        distinct: u8,
    },
    /// Runs over a few values (RLE).
    Runs {
        distinct: u8,
        mean_run: u16,
    },
    Constant,
    /// Arbitrary bit patterns (plain).
    Bits,
}

pub fn float_shape() -> impl Strategy<Value = FloatShape> {
    prop_oneof![
        3 => (0u8..5, 1u32..10_000_000).prop_map(|(digits, max)| FloatShape::Decimal { digits, max }),
        3 => (0u8..5, 1u16..200).prop_map(|(digits, per_mille)| FloatShape::DecimalSpecials { digits, per_mille }),
        2 => (-20i8..20).prop_map(|scale| FloatShape::Real { scale }),
        2 => (2u8..12).prop_map(|distinct| FloatShape::Dict { distinct }),
        1 => (1u8..5, 2u16..300).prop_map(|(distinct, mean_run)| FloatShape::Runs { distinct, mean_run }),
        1 => Just(FloatShape::Constant),
        1 => Just(FloatShape::Bits),
    ]
}

pub fn decimal(rng: &mut Rng, digits: u8, max: u32) -> f64 {
    let k = rng.between(-i128::from(max), i128::from(max));
    k as f64 / 10f64.powi(i32::from(digits))
}

pub fn real(rng: &mut Rng, scale: i8) -> f64 {
    let sign = if rng.chance(200) { -1.0 } else { 1.0 };
    sign * rng.unit() * 10f64.powi(i32::from(scale))
}

/// A value of interest: a special, a decimal or a real double.
pub fn float_value(rng: &mut Rng) -> f64 {
    match rng.below(3) {
        0 => f64::from_bits(rng.pick(&SPECIALS)),
        1 => decimal(rng, 2, 100_000),
        _ => real(rng, 3),
    }
}

pub fn gen_floats(shape: FloatShape, n: usize, rng: &mut Rng) -> Vec<f64> {
    match shape {
        FloatShape::Decimal { digits, max } => (0..n).map(|_| decimal(rng, digits, max)).collect(),
        FloatShape::DecimalSpecials { digits, per_mille } => (0..n)
            .map(|_| {
                if rng.chance(u32::from(per_mille)) {
                    f64::from_bits(rng.pick(&SPECIALS))
                } else {
                    decimal(rng, digits, 1_000_000)
                }
            })
            .collect(),
        FloatShape::Real { scale } => (0..n).map(|_| real(rng, scale)).collect(),
        FloatShape::Dict { distinct } => {
            let pool: Vec<f64> = (0..distinct).map(|_| float_value(rng)).collect();
            (0..n).map(|_| rng.pick(&pool)).collect()
        }
        FloatShape::Runs { distinct, mean_run } => {
            let pool: Vec<f64> = (0..distinct).map(|_| float_value(rng)).collect();
            let mut out = Vec::with_capacity(n);
            while out.len() < n {
                let run = 1 + rng.index(2 * usize::from(mean_run));
                out.extend(std::iter::repeat_n(rng.pick(&pool), run));
            }
            out.truncate(n);
            out
        }
        FloatShape::Constant => vec![float_value(rng); n],
        FloatShape::Bits => (0..n).map(|_| f64::from_bits(rng.next())).collect(),
    }
}

#[derive(Debug, Clone)]
pub struct FloatCase {
    shape: FloatShape,
    len: usize,
    nulls: Nulls,
    offset: usize,
    seed: u64,
}

pub fn float_case() -> impl Strategy<Value = FloatCase> {
    (float_shape(), lengths(), nulls(), offsets(), any::<u64>()).prop_map(
        |(shape, len, nulls, offset, seed)| FloatCase {
            shape,
            len,
            nulls,
            offset,
            seed,
        },
    )
}

pub fn float_at(a: &dyn Array, i: usize) -> Option<f64> {
    a.is_valid(i)
        .then(|| a.as_primitive::<arrow::datatypes::Float64Type>().value(i))
}

impl FloatCase {
    pub fn build(&self) -> ArrayRef {
        let mut rng = Rng::new(self.seed);
        let total = self.len + self.offset;
        let values = gen_floats(self.shape, total, &mut rng);
        let valid = validity(self.nulls, total, &mut rng);
        let array: ArrayRef = Arc::new(Float64Array::from_iter(with_nulls(values, &valid)));
        array.slice(self.offset, self.len)
    }

    pub fn run(&self) -> Result<Checked, TestCaseError> {
        let c = Checked::encode(self.build(), format!("{self:?}"))?;
        c.check_round_trip()?;
        let input = c.input.clone();
        let present: Vec<f64> = (0..c.len()).filter_map(|i| float_at(&input, i)).collect();
        let mut rng = Rng::new(self.seed ^ 0x0005_EED0_F00D);
        let mut answers = Vec::new();
        for _ in 0..PREDICATES {
            let pred = float_pred(&mut rng, &present);
            let answer = c.check_filter(
                &pred,
                &format!("{pred:?}"),
                |i| float_matches(&pred, float_at(&input, i).unwrap()),
                |i| {
                    let v = float_at(&input, i).unwrap();
                    format!("{v:?} (bits {:#x})", v.to_bits())
                },
            )?;
            answers.push(answer);
        }
        answers.truncate(2);
        c.check_selections(&mut rng, &answers)?;
        Ok(c)
    }
}

/// A bound as a total-order key: a value present, its neighbour in total order (strictly
/// between two doubles), the midpoint of two present values, a special (±inf, NaNs, ±0,
/// the extreme keys), or a decimal halfway between two cents.
pub fn float_point(rng: &mut Rng, present: &[f64]) -> u64 {
    match rng.below(9) {
        0..=2 if !present.is_empty() => float_key(rng.pick(present)),
        3 if !present.is_empty() => {
            let k = float_key(rng.pick(present));
            if rng.chance(500) {
                k.saturating_add(1)
            } else {
                k.saturating_sub(1)
            }
        }
        4 if present.len() > 1 => {
            let (a, b) = (float_key(rng.pick(present)), float_key(rng.pick(present)));
            a / 2 + b / 2
        }
        5 => match rng.below(3) {
            0 => rng.pick(&[0, u64::MAX, 1 << 63, (1 << 63) - 1]),
            _ => float_key(f64::from_bits(rng.pick(&SPECIALS))),
        },
        6 => float_key(decimal(rng, 2, 100_000) + 0.005),
        _ => float_key(float_value(rng)),
    }
}

pub fn float_pred(rng: &mut Rng, present: &[f64]) -> ValuePredicate {
    let negate = rng.chance(400);
    match rng.below(8) {
        0..=2 => {
            let (a, b) = (float_point(rng, present), float_point(rng, present));
            ValuePredicate::FloatRange {
                lo: a.min(b),
                hi: a.max(b),
                negate,
            }
        }
        3 => {
            let (a, b) = (float_point(rng, present), float_point(rng, present));
            let (lo, hi) = if a == b { (1, 0) } else { (a.max(b), a.min(b)) };
            ValuePredicate::FloatRange { lo, hi, negate }
        }
        4 => {
            let k = float_point(rng, present);
            ValuePredicate::FloatRange {
                lo: k,
                hi: k,
                negate,
            }
        }
        5 => {
            let k = float_point(rng, present);
            let (lo, hi) = match rng.below(3) {
                0 => (0, k),
                1 => (k, u64::MAX),
                _ => (0, u64::MAX),
            };
            ValuePredicate::FloatRange { lo, hi, negate }
        }
        _ => {
            let k = rng.index(7);
            let mut keys: Vec<u64> = (0..k).map(|_| float_point(rng, present)).collect();
            keys.sort_unstable();
            keys.dedup();
            ValuePredicate::FloatIn {
                keys: keys.into(),
                negate,
            }
        }
    }
}

/// The predicate on one value, by its key (the order `float_key` defines is checked
/// against `total_cmp` in `float_keys_follow_sql_order`).
pub fn float_matches(pred: &ValuePredicate, v: f64) -> bool {
    match pred {
        ValuePredicate::FloatRange { lo, hi, negate } => {
            (*lo <= float_key(v) && float_key(v) <= *hi) != *negate
        }
        ValuePredicate::FloatIn { keys, negate } => keys.contains(&float_key(v)) != *negate,
        other => panic!("not a float predicate: {other:?}"),
    }
}
