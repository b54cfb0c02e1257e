//! Differential tests of encoded-domain evaluation (`Chunk::filter`) and selective decoding
//! (`decode_selected`). Every generated column goes through the real cascade; the answers
//! are checked row by row against the plain Arrow input (nulls never match; ints compared
//! as `i128`, floats by their `float_key`, strings by the matcher on Arrow's bytes), and selected
//! decodes against `arrow::compute::filter`.
//!
//! Column data comes from seeded generators shaped so that the cascade picks each scheme:
//! constant, runs, small dictionaries, frequency (one dominant value), bit-packing at every
//! width, patched bit-packing and delta for integers; ALP (with and without exceptions),
//! ALP_RD, dictionaries and runs for doubles; dictionaries, FSST and plain for strings.
//! `generated_*_reach_every_scheme` run the same checks on a fixed set of generated cases
//! and assert that every scheme was chosen at least once.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::BTreeSet;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, BooleanArray, Float64Array, Int32Array, StringArray};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{TestCaseError, TestRunner};
use sift_encoding::{Bitmap, ValuePredicate, float_from_key, float_key};

use common::bools::{BoolCase, bool_case};
use common::floats::{FloatCase, float_case};
use common::ints::{IntCase, IntShape, IntTy, int_at, int_case, int_matches};
use common::strings::{StrCase, StrPred, str_case};
use common::{Checked, Nulls, Rng, cases, for_widths, schemes};

// ---------------------------------------------------------------------------------------
// Property tests

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(40), ..ProptestConfig::default() })]

    #[test]
    fn int_columns(case in int_case()) {
        case.run()?;
    }

    #[test]
    fn float_columns(case in float_case()) {
        case.run()?;
    }

    #[test]
    fn string_columns(case in str_case()) {
        case.run()?;
    }

    #[test]
    fn bool_columns(case in bool_case()) {
        case.run()?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(2000), ..ProptestConfig::default() })]

    /// The float reference evaluates predicates on `float_key`; this ties the keys to SQL's
    /// order: `total_cmp` on numbers (so -0.0 < +0.0), every NaN equal to the others and
    /// above every number. Bit patterns are drawn half from NaN and infinity exponents.
    #[test]
    fn float_keys_follow_sql_order(a in float_bits(), b in float_bits()) {
        let (x, y) = (f64::from_bits(a), f64::from_bits(b));
        let sql = match (x.is_nan(), y.is_nan()) {
            (true, true) => std::cmp::Ordering::Equal,
            (true, false) => std::cmp::Ordering::Greater,
            (false, true) => std::cmp::Ordering::Less,
            (false, false) => x.total_cmp(&y),
        };
        prop_assert_eq!(float_key(x).cmp(&float_key(y)), sql, "{:#x} {:#x}", a, b);
        if x.is_nan() {
            prop_assert!(float_from_key(float_key(x)).is_nan());
        } else {
            prop_assert_eq!(float_from_key(float_key(x)).to_bits(), a);
        }
    }
}

fn float_bits() -> impl Strategy<Value = u64> {
    prop_oneof![
        any::<u64>(),
        (any::<bool>(), 0u64..16, any::<u64>()).prop_map(|(neg, low, m)| {
            // Exponent all ones: infinities (mantissa 0) and NaNs.
            let mantissa = if low < 4 { low } else { m & ((1 << 52) - 1) };
            (u64::from(neg) << 63) | (0x7ff << 52) | mantissa
        }),
        Just(0),
        Just(1 << 63),
    ]
}

/// `decode_extremes` folds the codes of frame-of-reference roots (byte-wide and wider)
/// and of dictionaries over frame-of-reference codes, over a block of rows (several fold
/// spans), instead of declining; the values it gives are checked against the input here
/// and, for every generated integer column, in `IntCase::run`.
#[test]
fn extremes_fold_frame_and_dictionary_codes() {
    let n = 65_536;
    let mut rng = Rng::new(7);
    let cases: [(&str, Vec<i64>); 3] = [
        (
            "for5",
            (0..n).map(|_| 1000 + rng.below(32) as i64).collect(),
        ),
        (
            "for17",
            (0..n).map(|_| -(rng.below(100_000) as i64)).collect(),
        ),
        (
            "dict",
            (0..n)
                .map(|_| (rng.below(20) as i64 - 10) * 1_000_000_007_000)
                .collect(),
        ),
    ];
    for (root, values) in cases {
        let valid: Vec<bool> = (0..n).map(|i| i % 7 != 3).collect();
        let input: ArrayRef = Arc::new(arrow::array::Int64Array::from(common::with_nulls(
            values, &valid,
        )));
        let c = Checked::encode(input.clone(), root.into()).unwrap();
        assert!(c.describe().starts_with(root), "{}", c.describe());
        let chunk = c.col.chunk(input.data_type(), n);
        for sel in [None, Some(common::selection(&mut rng, n, 300))] {
            let pair = chunk.decode_extremes(sel.as_ref()).unwrap();
            let pair = pair.unwrap_or_else(|| panic!("{root}: extremes not folded"));
            let picked = (0..n)
                .filter(|&i| sel.as_ref().is_none_or(|s| s.get(i)))
                .filter_map(|i| int_at(input.as_ref(), i));
            let want = (picked.clone().min(), picked.max());
            assert_eq!((int_at(&pair, 0), int_at(&pair, 1)), want, "{root}");
        }
    }
}

// ---------------------------------------------------------------------------------------
// Scheme coverage: the generators above do reach every scheme

/// What a tour of generated cases saw.
#[derive(Default)]
struct Seen {
    /// Scheme names anywhere in the cascades.
    all: BTreeSet<String>,
    /// Scheme names at the root.
    roots: BTreeSet<String>,
    /// Whole cascades without parameters, e.g. `patch(alp(for), for, plain)`.
    shapes: BTreeSet<String>,
    /// Bit-packing widths.
    widths: BTreeSet<u32>,
}

impl Seen {
    fn assert_schemes(&self, wanted: &[&str], roots: &[&str], what: &str) {
        for (seen, wanted, at) in [
            (&self.all, wanted, "anywhere"),
            (&self.roots, roots, "at the root"),
        ] {
            for s in wanted {
                assert!(
                    seen.contains(*s),
                    "{what}: scheme {s:?} never chosen {at}; saw {seen:?}"
                );
            }
        }
    }

    fn assert_shape(&self, prefix: &str, what: &str) {
        assert!(
            self.shapes.iter().any(|s| s.starts_with(prefix)),
            "{what}: no cascade starts with {prefix:?}; saw {:?}",
            self.shapes
        );
    }
}

/// Runs `run` on `n` cases drawn deterministically from `strategy` and records what the
/// cascade chose for them.
fn tour<C>(
    strategy: impl Strategy<Value = C>,
    n: usize,
    run: impl Fn(&C) -> Result<Checked, TestCaseError>,
) -> Seen {
    let mut runner = TestRunner::deterministic();
    let mut seen = Seen::default();
    for _ in 0..n {
        let case = strategy.new_tree(&mut runner).unwrap().current();
        let c = run(&case).unwrap_or_else(|e| panic!("{e}"));
        seen.all.extend(schemes(&c));
        if let Some(root) = c.col.encoding.nodes.first() {
            seen.roots.insert(root.name().to_string());
        }
        seen.shapes.insert(c.col.encoding.shape());
        seen.widths.extend(for_widths(&c));
    }
    seen
}

#[test]
fn generated_ints_reach_every_scheme() {
    let seen = tour(int_case(), 160, IntCase::run);
    let schemes = ["const", "rle", "dict", "patch", "for", "delta"];
    seen.assert_schemes(&schemes, &schemes, "integers");
    seen.assert_shape("patch(const", "integers: frequency");
    seen.assert_shape("patch(for", "integers: patched bit-packing");
    assert!(
        seen.widths.len() >= 24,
        "bit-packing widths seen: {:?}",
        seen.widths
    );
}

#[test]
fn generated_floats_reach_every_scheme() {
    let seen = tour(float_case(), 80, FloatCase::run);
    seen.assert_schemes(
        &["const", "rle", "dict", "patch", "alp", "alprd", "plain"],
        &["const", "rle", "dict", "patch", "alp", "alprd", "plain"],
        "doubles",
    );
    seen.assert_shape("patch(alp", "doubles: ALP with exceptions");
}

#[test]
fn generated_strings_reach_every_scheme() {
    let seen = tour(str_case(), 60, StrCase::run);
    seen.assert_schemes(
        &["const", "dict", "fsst", "bytes", "for"],
        &["const", "dict", "fsst", "bytes"],
        "strings",
    );
}

#[test]
fn generated_bools_reach_every_scheme() {
    let seen = tour(bool_case(), 40, BoolCase::run);
    seen.assert_schemes(&[], &["const", "rle", "bitmap"], "booleans");
}

// ---------------------------------------------------------------------------------------
// Fixed cases: edges the generators reach only by chance

/// Bit-packing (plain and patched) at every width the type allows, with and without nulls:
/// the packed-code comparisons and selective unpacking have a path per width.
#[test]
fn every_width_of_every_type() {
    let mut widths = BTreeSet::new();
    for ty in IntTy::ALL {
        for width in 0..=64u8 {
            for (i, shape) in [
                IntShape::For { width },
                IntShape::Pfor {
                    width,
                    per_mille: 20,
                },
            ]
            .into_iter()
            .enumerate()
            {
                let case = IntCase {
                    ty,
                    shape,
                    len: 130 + usize::from(width),
                    nulls: if i == 0 {
                        Nulls::None
                    } else {
                        Nulls::Density(100)
                    },
                    offset: usize::from(width % 3),
                    seed: u64::from(width) * 31 + i as u64,
                };
                let c = case.run().unwrap_or_else(|e| panic!("{e}"));
                widths.extend(for_widths(&c));
            }
        }
    }
    assert_eq!(widths.len(), 65, "bit-packing widths seen: {widths:?}");
}

fn check_ints(ty: IntTy, values: Vec<Option<i128>>, preds: &[ValuePredicate]) {
    let label = format!("{ty:?}, first values {:?}", &values[..values.len().min(8)]);
    let c = Checked::encode(ty.array(&values), label).unwrap();
    c.check_round_trip().unwrap();
    let input = c.input.clone();
    for pred in preds {
        c.check_filter(
            pred,
            &format!("{pred:?}"),
            |i| int_matches(pred, int_at(&input, i).unwrap()),
            |i| format!("{:?}", int_at(&input, i)),
        )
        .unwrap();
    }
    let n = c.len();
    c.check_selected(&Bitmap::ones(n), "all rows").unwrap();
    c.check_selected(
        &Bitmap::from_bools((0..n).map(|i| i % 3 == 1)),
        "every third row",
    )
    .unwrap();
}

fn range(lo: i128, hi: i128) -> ValuePredicate {
    ValuePredicate::IntRange {
        lo,
        hi,
        negate: false,
    }
}

/// Predicates on both halves of `u64`.
fn u64_preds() -> [ValuePredicate; 4] {
    let (top, big) = (i128::from(i64::MAX), i128::from(u64::MAX));
    [
        range(top + 1, big),
        range(0, top),
        range(big, big),
        ValuePredicate::IntIn {
            values: vec![0, top + 1, big].into(),
            negate: true,
        },
    ]
}

/// `u64` values on both sides of `i64::MAX` spanning all 64 bits are stored as plain 8-byte
/// values; the filter must read them as unsigned.
#[test]
fn u64_plain_chunk_filters_as_unsigned() {
    let big = i128::from(u64::MAX);
    let values = (0..200)
        .map(|i| Some(if i % 5 == 0 { big } else { i }))
        .collect();
    check_ints(IntTy::U64, values, &u64_preds());
}

/// Bit-packed `u64` values beyond `i64::MAX` (base beyond it, or codes reaching past it)
/// decode selectively.
#[test]
fn u64_bitpacked_beyond_i64_decodes_selected() {
    let big = i128::from(u64::MAX);
    // The shrunk proptest case: one value, bit-packed at width 0 over a base beyond i64.
    check_ints(IntTy::U64, vec![Some(big)], &u64_preds());
    check_ints(
        IntTy::U64,
        (0..200).map(|i| Some(big - i % 7)).collect(),
        &u64_preds(),
    );
    let values = (0..100)
        .map(|k| Some((1i128 << 62) + (k * 37 % 100) * (1 << 56)))
        .collect();
    check_ints(IntTy::U64, values, &u64_preds());
}

#[test]
fn wide_decimals() {
    let (lo, hi) = IntTy::Dec38.bounds();
    let preds = [
        range(0, hi),
        range(lo, -1),
        range(i64::MAX.into(), hi),
        ValuePredicate::IntIn {
            values: vec![lo, 7, hi].into(),
            negate: false,
        },
    ];
    check_ints(
        IntTy::Dec38,
        (0..300)
            .map(|i| Some(if i % 2 == 0 { lo } else { hi - i }))
            .collect(),
        &preds,
    );
    check_ints(
        IntTy::Dec38,
        (0..300)
            .map(|i| (i % 4 != 0).then_some(i * (1 << 70)))
            .collect(),
        &preds,
    );
}

#[test]
fn decimals_spanning_i64() {
    // Every value fits i64, so they take the i64 cascade, whose bit-packing needs all 64
    // bits here and falls back to 8-byte plain values.
    let mut rng = Rng::new(7);
    let values: Vec<Option<i128>> = (0..100)
        .map(|_| Some(i128::from(rng.next() as i64)))
        .collect();
    check_ints(
        IntTy::Dec38,
        values,
        &[range(0, i128::MAX), range(i64::MIN.into(), -1)],
    );
}

#[test]
fn constant_booleans() {
    for value in [true, false] {
        for nulls in [false, true] {
            let values: Vec<Option<bool>> = (0..100)
                .map(|i| (!nulls || i % 4 != 0).then_some(value))
                .collect();
            let c = Checked::encode(
                Arc::new(BooleanArray::from(values)),
                format!("constant {value}, nulls {nulls}"),
            )
            .unwrap();
            c.check_round_trip().unwrap();
            let input = c.input.clone();
            let bools = input.as_boolean();
            for want in [true, false] {
                c.check_filter(
                    &ValuePredicate::Bool { value: want },
                    &format!("bool = {want}"),
                    |i| bools.value(i) == want,
                    |i| bools.value(i).to_string(),
                )
                .unwrap();
            }
            c.check_selected(
                &Bitmap::from_bools((0..100).map(|i| i % 2 == 0)),
                "even rows",
            )
            .unwrap();
        }
    }
}

/// A chunk of 4-byte floats decodes to an empty array (and to an empty selection).
#[test]
fn float32_empty_decodes() {
    use arrow::array::Float32Array;
    let mut rng = Rng::new(5);
    for n in [0usize, 10] {
        let c = Checked::encode(
            Arc::new(Float32Array::from(vec![1.5f32; n])),
            format!("{n} floats"),
        )
        .unwrap();
        c.check_selected(&Bitmap::zeros(n), "no rows").unwrap();
        c.check_selections(&mut rng, &[]).unwrap();
    }
}

/// Types without encoded-domain predicates still decode selectively.
#[test]
fn selected_decode_of_other_types() {
    use arrow::array::{
        DurationSecondArray, Float32Array, NullArray, Time32MillisecondArray,
        TimestampMicrosecondArray,
    };
    let mut rng = Rng::new(11);
    for n in [0usize, 1, 64, 65, 1000] {
        let valid: Vec<bool> = (0..n).map(|i| i % 7 != 3).collect();
        let floats: Vec<Option<f32>> = (0..n)
            .map(|i| valid[i].then(|| [f32::NAN, -0.0, 1.5, i as f32 / 3.0][i % 4]))
            .collect();
        let arrays: [ArrayRef; 5] = [
            Arc::new(Float32Array::from(floats)),
            Arc::new(TimestampMicrosecondArray::from_iter((0..n).map(|i| {
                valid[i].then_some(1_700_000_000_000_000 + 1_000 * i as i64)
            }))),
            Arc::new(Time32MillisecondArray::from_iter_values(
                (0..n).map(|i| (i * 37 % 86_400_000) as i32),
            )),
            Arc::new(DurationSecondArray::from_iter(
                (0..n).map(|i| valid[i].then_some(-(i as i64))),
            )),
            Arc::new(NullArray::new(n)),
        ];
        for array in arrays {
            let label = format!("{} × {n}", array.data_type());
            let c = Checked::encode(array, label).unwrap();
            c.check_round_trip().unwrap();
            c.check_selections(&mut rng, &[]).unwrap();
        }
    }
}

#[test]
fn mismatched_predicates_are_errors() {
    let ints: ArrayRef = Arc::new(Int32Array::from(vec![1, 2, 3]));
    let strings: ArrayRef = Arc::new(StringArray::from(vec!["a", "b", "c"]));
    let floats: ArrayRef = Arc::new(Float64Array::from(vec![1.5, 2.5, 3.5]));
    let float_pred = ValuePredicate::FloatRange {
        lo: 0,
        hi: u64::MAX,
        negate: false,
    };
    for (array, pred) in [
        (&ints, float_pred.clone()),
        (&strings, range(0, 1)),
        (&floats, range(0, 1)),
        (&ints, StrPred::Always(true).to_value_predicate()),
        (&floats, ValuePredicate::Bool { value: true }),
    ] {
        let col = sift_encoding::encode_array(array.as_ref()).unwrap();
        let got = col.chunk(array.data_type(), 3).filter(&pred);
        assert!(
            got.is_err(),
            "{pred:?} on {} answered {got:?}",
            array.data_type()
        );
    }
}
