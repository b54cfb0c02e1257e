//! Integer columns (every integer-like type, including `u64` beyond `i64` and decimals),
//! shaped to reach each scheme of the integer cascade; integer predicates and their
//! reference.

use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, AsArray, Date32Array, Decimal128Array, Int8Array, Int16Array, Int32Array,
    Int64Array, UInt8Array, UInt16Array, UInt32Array, UInt64Array,
};
use arrow::datatypes::{
    DataType, Date32Type, Decimal128Type, Int8Type, Int16Type, Int32Type, Int64Type, UInt8Type,
    UInt16Type, UInt32Type, UInt64Type,
};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use sift_encoding::{Bitmap, ValuePredicate};

use super::{Checked, Nulls, PREDICATES, Rng, lengths, nulls, offsets, validity, with_nulls};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IntTy {
    I8,
    I16,
    I32,
    I64,
    U8,
    U16,
    U32,
    U64,
    Date32,
    /// Decimal128(18, 2): values fit `i64`, so they go through the integer cascade.
    Dec18,
    /// Decimal128(38, 0): wide values, bit-packed over their own range or plain.
    Dec38,
}

impl IntTy {
    pub const ALL: [IntTy; 11] = [
        IntTy::I8,
        IntTy::I16,
        IntTy::I32,
        IntTy::I64,
        IntTy::U8,
        IntTy::U16,
        IntTy::U32,
        IntTy::U64,
        IntTy::Date32,
        IntTy::Dec18,
        IntTy::Dec38,
    ];

    pub fn data_type(self) -> DataType {
        match self {
            IntTy::I8 => DataType::Int8,
            IntTy::I16 => DataType::Int16,
            IntTy::I32 => DataType::Int32,
            IntTy::I64 => DataType::Int64,
            IntTy::U8 => DataType::UInt8,
            IntTy::U16 => DataType::UInt16,
            IntTy::U32 => DataType::UInt32,
            IntTy::U64 => DataType::UInt64,
            IntTy::Date32 => DataType::Date32,
            IntTy::Dec18 => DataType::Decimal128(18, 2),
            IntTy::Dec38 => DataType::Decimal128(38, 0),
        }
    }

    /// The values the type holds, inclusive.
    pub fn bounds(self) -> (i128, i128) {
        let dec = |digits: u32| 10i128.pow(digits) - 1;
        match self {
            IntTy::I8 => (i8::MIN.into(), i8::MAX.into()),
            IntTy::I16 => (i16::MIN.into(), i16::MAX.into()),
            IntTy::I32 | IntTy::Date32 => (i32::MIN.into(), i32::MAX.into()),
            IntTy::I64 => (i64::MIN.into(), i64::MAX.into()),
            IntTy::U8 => (0, u8::MAX.into()),
            IntTy::U16 => (0, u16::MAX.into()),
            IntTy::U32 => (0, u32::MAX.into()),
            IntTy::U64 => (0, u64::MAX.into()),
            IntTy::Dec18 => (-dec(18), dec(18)),
            IntTy::Dec38 => (-dec(38), dec(38)),
        }
    }

    /// An array of this type (values must lie within [`bounds`](Self::bounds)).
    pub fn array(self, values: &[Option<i128>]) -> ArrayRef {
        let it = || values.iter().copied();
        match self {
            IntTy::I8 => Arc::new(Int8Array::from_iter(it().map(|v| v.map(|x| x as i8)))),
            IntTy::I16 => Arc::new(Int16Array::from_iter(it().map(|v| v.map(|x| x as i16)))),
            IntTy::I32 => Arc::new(Int32Array::from_iter(it().map(|v| v.map(|x| x as i32)))),
            IntTy::I64 => Arc::new(Int64Array::from_iter(it().map(|v| v.map(|x| x as i64)))),
            IntTy::U8 => Arc::new(UInt8Array::from_iter(it().map(|v| v.map(|x| x as u8)))),
            IntTy::U16 => Arc::new(UInt16Array::from_iter(it().map(|v| v.map(|x| x as u16)))),
            IntTy::U32 => Arc::new(UInt32Array::from_iter(it().map(|v| v.map(|x| x as u32)))),
            IntTy::U64 => Arc::new(UInt64Array::from_iter(it().map(|v| v.map(|x| x as u64)))),
            IntTy::Date32 => Arc::new(Date32Array::from_iter(it().map(|v| v.map(|x| x as i32)))),
            IntTy::Dec18 | IntTy::Dec38 => {
                let DataType::Decimal128(p, s) = self.data_type() else {
                    unreachable!()
                };
                Arc::new(
                    Decimal128Array::from_iter(it())
                        .with_precision_and_scale(p, s)
                        .unwrap(),
                )
            }
        }
    }
}

/// Row `i` of an integer-like array as `i128` (the reference reads the input, not the
/// generator's values).
pub fn int_at(a: &dyn Array, i: usize) -> Option<i128> {
    if a.is_null(i) {
        return None;
    }
    Some(match a.data_type() {
        DataType::Int8 => a.as_primitive::<Int8Type>().value(i).into(),
        DataType::Int16 => a.as_primitive::<Int16Type>().value(i).into(),
        DataType::Int32 => a.as_primitive::<Int32Type>().value(i).into(),
        DataType::Int64 => a.as_primitive::<Int64Type>().value(i).into(),
        DataType::UInt8 => a.as_primitive::<UInt8Type>().value(i).into(),
        DataType::UInt16 => a.as_primitive::<UInt16Type>().value(i).into(),
        DataType::UInt32 => a.as_primitive::<UInt32Type>().value(i).into(),
        DataType::UInt64 => a.as_primitive::<UInt64Type>().value(i).into(),
        DataType::Date32 => a.as_primitive::<Date32Type>().value(i).into(),
        DataType::Decimal128(..) => a.as_primitive::<Decimal128Type>().value(i),
        other => panic!("not an integer type: {other}"),
    })
}

/// The shape of generated integers, each aimed at one scheme of the cascade.
#[derive(Debug, Clone, Copy)]
pub enum IntShape {
    Constant,
    /// Runs over a few distinct values (RLE).
    Runs {
        distinct: u8,
        mean_run: u16,
    },
    /// A few distinct values anywhere in the type's range (dictionary).
    Dict {
        distinct: u8,
    },
    /// One value, with exceptions at this rate (frequency).
    Frequency {
        per_mille: u16,
    },
    /// Uniform over `2^width` values at a random base (bit-packing at that width).
    For {
        width: u8,
    },
    /// Narrow values with rare outliers above them (patched bit-packing).
    Pfor {
        width: u8,
        per_mille: u16,
    },
    /// Non-decreasing, steps up to `max_step` (delta).
    Sorted {
        max_step: u32,
    },
    /// Uniform over the whole type.
    Uniform,
    /// Uniform over the part of the type within `i64` (for decimals and `u64`: the widest
    /// values that still take the `i64` cascade).
    WithinI64,
}

pub fn int_shape() -> impl Strategy<Value = IntShape> {
    prop_oneof![
        1 => Just(IntShape::Constant),
        2 => (1u8..5, 2u16..300).prop_map(|(distinct, mean_run)| IntShape::Runs { distinct, mean_run }),
        2 => (2u8..17).prop_map(|distinct| IntShape::Dict { distinct }),
        2 => (1u16..120).prop_map(|per_mille| IntShape::Frequency { per_mille }),
        3 => prop_oneof![0u8..=64, 56u8..=64].prop_map(|width| IntShape::For { width }),
        2 => (0u8..12, 1u16..25).prop_map(|(width, per_mille)| IntShape::Pfor { width, per_mille }),
        2 => (1u32..2000).prop_map(|max_step| IntShape::Sorted { max_step }),
        1 => Just(IntShape::Uniform),
        1 => Just(IntShape::WithinI64),
    ]
}

/// A value of interest in `lo..=hi`: an edge of the type or of `i64`, a small number, or
/// anything.
pub fn int_value(rng: &mut Rng, lo: i128, hi: i128) -> i128 {
    match rng.below(6) {
        0 => rng
            .pick(&[
                lo,
                hi,
                0,
                -1,
                i64::MIN.into(),
                i64::MAX.into(),
                i128::from(i64::MAX) + 1,
            ])
            .clamp(lo, hi),
        1 => rng.between(-100, 100).clamp(lo, hi),
        _ => rng.between(lo, hi),
    }
}

/// The largest width `<= width` whose codes fit the span `lo..=hi`.
pub fn fit_width(width: u8, lo: i128, hi: i128) -> u32 {
    let span = hi.wrapping_sub(lo) as u128;
    let mut w = u32::from(width);
    while w > 0 && (1u128 << w) - 1 > span {
        w -= 1;
    }
    w
}

pub fn gen_ints(shape: IntShape, lo: i128, hi: i128, n: usize, rng: &mut Rng) -> Vec<i128> {
    let pool =
        |rng: &mut Rng, k: u8| -> Vec<i128> { (0..k).map(|_| int_value(rng, lo, hi)).collect() };
    match shape {
        IntShape::Constant => vec![int_value(rng, lo, hi); n],
        IntShape::Runs { distinct, mean_run } => {
            let pool = pool(rng, distinct);
            let mut out = Vec::with_capacity(n);
            while out.len() < n {
                let run = 1 + rng.index(2 * usize::from(mean_run));
                out.extend(std::iter::repeat_n(rng.pick(&pool), run));
            }
            out.truncate(n);
            out
        }
        IntShape::Dict { distinct } => {
            let pool = pool(rng, distinct);
            (0..n).map(|_| rng.pick(&pool)).collect()
        }
        IntShape::Frequency { per_mille } => {
            let top = int_value(rng, lo, hi);
            (0..n)
                .map(|_| {
                    if rng.chance(u32::from(per_mille)) {
                        int_value(rng, lo, hi)
                    } else {
                        top
                    }
                })
                .collect()
        }
        IntShape::For { width } | IntShape::Pfor { width, .. } => {
            let w = fit_width(width, lo, hi);
            let top = (1i128 << w) - 1;
            let base = rng.between(lo, hi - top);
            let outliers = match shape {
                IntShape::Pfor { per_mille, .. } => u32::from(per_mille),
                _ => 0,
            };
            (0..n)
                .map(|_| {
                    if outliers > 0 && rng.chance(outliers) {
                        // Above the base: patched bit-packing keeps the minimum as its base.
                        rng.between(base, hi)
                    } else {
                        base + rng.between(0, top)
                    }
                })
                .collect()
        }
        IntShape::Sorted { max_step } => {
            let mut v = int_value(rng, lo, hi);
            (0..n)
                .map(|_| {
                    v = (v + rng.between(0, max_step.into())).min(hi);
                    v
                })
                .collect()
        }
        IntShape::Uniform => (0..n).map(|_| rng.between(lo, hi)).collect(),
        IntShape::WithinI64 => {
            let (lo, hi) = (lo.max(i64::MIN.into()), hi.min(i64::MAX.into()));
            (0..n).map(|_| rng.between(lo, hi)).collect()
        }
    }
}

#[derive(Debug, Clone)]
pub struct IntCase {
    pub ty: IntTy,
    pub shape: IntShape,
    pub len: usize,
    pub nulls: Nulls,
    pub offset: usize,
    pub seed: u64,
}

pub fn int_case() -> impl Strategy<Value = IntCase> {
    (
        proptest::sample::select(IntTy::ALL.to_vec()),
        int_shape(),
        lengths(),
        nulls(),
        offsets(),
        any::<u64>(),
    )
        .prop_map(|(ty, shape, len, nulls, offset, seed)| IntCase {
            ty,
            shape,
            len,
            nulls,
            offset,
            seed,
        })
}

impl IntCase {
    pub fn build(&self) -> ArrayRef {
        let mut rng = Rng::new(self.seed);
        let (lo, hi) = self.ty.bounds();
        let total = self.len + self.offset;
        let values = gen_ints(self.shape, lo, hi, total, &mut rng);
        let valid = validity(self.nulls, total, &mut rng);
        self.ty
            .array(&with_nulls(values, &valid))
            .slice(self.offset, self.len)
    }

    /// Runs every check on this case; returns the encoded column for coverage counts.
    pub fn run(&self) -> Result<Checked, TestCaseError> {
        let c = Checked::encode(self.build(), format!("{self:?}"))?;
        c.check_round_trip()?;
        let input = c.input.clone();
        let present: Vec<i128> = (0..c.len()).filter_map(|i| int_at(&input, i)).collect();
        let (lo, hi) = self.ty.bounds();
        let mut rng = Rng::new(self.seed ^ 0x0005_EED0_F00D);
        let mut answers = Vec::new();
        for _ in 0..PREDICATES {
            let pred = int_pred(&mut rng, &present, lo, hi);
            let answer = c.check_filter(
                &pred,
                &format!("{pred:?}"),
                |i| int_matches(&pred, int_at(&input, i).unwrap()),
                |i| format!("{:?}", int_at(&input, i)),
            )?;
            answers.push(answer);
        }
        answers.truncate(2);
        c.check_selections(&mut rng, &answers)?;
        check_extremes(&c, &mut rng, &answers)?;
        Ok(c)
    }
}

/// `Chunk::decode_extremes`, where it answers (the codes of a dictionary or frame of
/// reference folded without decoding), equals the smallest and largest non-null input
/// value among the selected rows: with no selection, an empty one, one of every row,
/// random ones sparse to dense, and the predicates' answers.
fn check_extremes(c: &Checked, rng: &mut Rng, answers: &[Bitmap]) -> Result<(), TestCaseError> {
    let (dt, n) = (c.input.data_type(), c.len());
    let chunk = c.col.chunk(dt, n);
    let mut selections = vec![
        ("every row".to_string(), None),
        ("no rows".to_string(), Some(Bitmap::zeros(n))),
        ("all rows".to_string(), Some(Bitmap::ones(n))),
    ];
    for per_mille in [5, 30, 500, 990] {
        let sel = super::selection(rng, n, per_mille);
        selections.push((format!("random selection, density {per_mille}‰"), Some(sel)));
    }
    for (i, sel) in answers.iter().enumerate() {
        selections.push((format!("predicate answer {i}"), Some(sel.clone())));
    }
    for (what, sel) in selections {
        let got = chunk.decode_extremes(sel.as_ref()).map_err(|e| {
            TestCaseError::fail(format!("decode_extremes failed: {e}; {what}; {}", c.label))
        })?;
        let Some(pair) = got else {
            continue;
        };
        let values = (0..n)
            .filter(|&i| sel.as_ref().is_none_or(|s| s.get(i)))
            .filter_map(|i| int_at(&c.input, i));
        let want = (values.clone().min(), values.max());
        prop_assert_eq!(pair.data_type(), dt, "{}; {}", what, c.label);
        prop_assert_eq!(pair.len(), 2, "{}; {}", what, c.label);
        prop_assert_eq!(
            (int_at(&pair, 0), int_at(&pair, 1)),
            want,
            "decode_extremes; {}; {} encoded as {}",
            what,
            c.label,
            c.describe()
        );
    }
    Ok(())
}

/// A predicate bound: a value present in the data or next to one, an edge of the type, of
/// `i64` or of `i128`, or anything in the type's range.
pub fn int_point(rng: &mut Rng, present: &[i128], lo: i128, hi: i128) -> i128 {
    match rng.below(8) {
        0..=2 if !present.is_empty() => rng.pick(present),
        3 if !present.is_empty() => {
            let v = rng.pick(present);
            if rng.chance(500) {
                v.saturating_add(1)
            } else {
                v.saturating_sub(1)
            }
        }
        4 => rng.pick(&[lo, hi, lo - 1, hi + 1]),
        5 => rng.pick(&[
            i128::MIN,
            i128::MAX,
            i64::MIN.into(),
            i64::MAX.into(),
            i128::from(i64::MAX) + 1,
            i128::from(i64::MIN) - 1,
            u64::MAX.into(),
            0,
        ]),
        _ => rng.between(lo, hi),
    }
}

pub fn int_pred(rng: &mut Rng, present: &[i128], lo: i128, hi: i128) -> ValuePredicate {
    let negate = rng.chance(400);
    let point = |rng: &mut Rng| int_point(rng, present, lo, hi);
    match rng.below(8) {
        0 | 1 => {
            let (a, b) = (point(rng), point(rng));
            ValuePredicate::IntRange {
                lo: a.min(b),
                hi: a.max(b),
                negate,
            }
        }
        2 => {
            // Empty: lo > hi.
            let (a, b) = (point(rng), point(rng));
            let (a, b) = if a == b {
                (a, a.saturating_sub(1))
            } else {
                (a.max(b), a.min(b))
            };
            let (lo, hi) = if a > b { (a, b) } else { (1, 0) };
            ValuePredicate::IntRange { lo, hi, negate }
        }
        3 => {
            let v = point(rng);
            ValuePredicate::IntRange {
                lo: v,
                hi: v,
                negate,
            }
        }
        4 => ValuePredicate::IntRange {
            lo: i128::MIN,
            hi: i128::MAX,
            negate,
        },
        5 => {
            let v = point(rng);
            let (lo, hi) = if rng.chance(500) {
                (i128::MIN, v)
            } else {
                (v, i128::MAX)
            };
            ValuePredicate::IntRange { lo, hi, negate }
        }
        _ => {
            let k = rng.index(9);
            let mut values: Vec<i128> = (0..k).map(|_| point(rng)).collect();
            values.sort_unstable();
            values.dedup();
            ValuePredicate::IntIn {
                values: values.into(),
                negate,
            }
        }
    }
}

pub fn int_matches(pred: &ValuePredicate, v: i128) -> bool {
    match pred {
        ValuePredicate::IntRange { lo, hi, negate } => (*lo <= v && v <= *hi) != *negate,
        ValuePredicate::IntIn { values, negate } => values.contains(&v) != *negate,
        other => panic!("not an integer predicate: {other:?}"),
    }
}
