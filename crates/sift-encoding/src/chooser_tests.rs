//! Property tests of the cascade: every scheme forced at the root round-trips, and the
//! sampled choice stays close to the best choice made on the full data.

use proptest::prelude::*;

use crate::domain::{FloatBits, Value};
use crate::registry::SchemeList;
use crate::tree::MAX_CASCADE;
use crate::tree::{BufferSink, NodeId};

/// Every scheme of a domain, by name.
fn schemes<V: SchemeList>() -> impl Iterator<Item = (&'static str, crate::chooser::Encoder<V>)> {
    V::SCHEMES.iter().map(|s| (s.name, s.encode))
}

fn decode_all<V: Value>(sink: BufferSink, root: NodeId, n: usize) -> Result<Vec<V>, TestCaseError> {
    prop_assert_eq!(root, 0, "the root must be node 0");
    sink.decode_with(|ctx| V::decode(ctx, 0, n, 0))
        .map_err(|e| TestCaseError::fail(format!("{e} in {}", sink.encoding().describe())))
}

/// Integers with structure worth cascading: runs, few distinct values, outliers, trends.
fn ints() -> impl Strategy<Value = Vec<i64>> {
    prop_oneof![
        proptest::collection::vec(any::<i64>(), 0..600),
        proptest::collection::vec(-5i64..5, 0..600),
        proptest::collection::vec((0i64..4, 1usize..50), 0..40).prop_map(|runs| runs
            .into_iter()
            .flat_map(|(v, n)| std::iter::repeat_n(v * 1_000_003, n))
            .collect()),
        (any::<i64>(), proptest::collection::vec(0i64..100, 0..600)).prop_map(|(base, d)| d
            .iter()
            .scan(base, |acc, &x| {
                *acc = acc.wrapping_add(x);
                Some(*acc)
            })
            .collect()),
        (
            proptest::collection::vec(0i64..16, 0..600),
            proptest::collection::vec((any::<prop::sample::Index>(), any::<i64>()), 0..10)
        )
            .prop_map(|(mut v, outliers)| {
                for (i, x) in outliers {
                    if !v.is_empty() {
                        let at = i.index(v.len());
                        v[at] = x;
                    }
                }
                v
            }),
        Just(vec![i64::MIN, i64::MAX, 0, -1, i64::MIN]),
    ]
}

fn floats() -> impl Strategy<Value = Vec<FloatBits>> {
    let special = prop_oneof![
        Just(f64::NAN.to_bits()),
        Just(0x7ff8_0000_0000_0001u64),
        Just((-0.0f64).to_bits()),
        Just(0.0f64.to_bits()),
        Just(f64::INFINITY.to_bits()),
        Just(f64::NEG_INFINITY.to_bits()),
        Just(f64::MIN_POSITIVE.to_bits() - 1),
        (0i64..100_000).prop_map(|c| (c as f64 / 100.0).to_bits()),
        any::<u64>(),
    ];
    prop_oneof![
        proptest::collection::vec(special, 0..600),
        proptest::collection::vec(
            (0i64..10_000_000).prop_map(|c| (c as f64 / 100.0).to_bits()),
            0..600
        ),
        proptest::collection::vec((0u64..8).prop_map(|c| (c as f64 * 0.01).to_bits()), 0..600),
    ]
    .prop_map(|v| v.into_iter().map(FloatBits).collect())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn every_int_scheme_round_trips(values in ints()) {
        for (scheme, encode) in schemes::<i64>() {
            for depth in 1..=MAX_CASCADE {
                let mut sink = BufferSink::default();
                let root = encode(&values, &mut sink, depth);
                prop_assert_eq!(decode_all::<i64>(sink, root, values.len())?, values.clone(), "{} depth {}", scheme, depth);
            }
        }
        let mut sink = BufferSink::default();
        let root = i64::encode(&values, &mut sink, MAX_CASCADE);
        prop_assert_eq!(decode_all::<i64>(sink, root, values.len())?, values);
    }

    #[test]
    fn every_float_scheme_round_trips(values in floats()) {
        for (scheme, encode) in schemes::<FloatBits>() {
            for depth in 1..=MAX_CASCADE {
                let mut sink = BufferSink::default();
                let root = encode(&values, &mut sink, depth);
                let out = decode_all::<FloatBits>(sink, root, values.len())?;
                prop_assert!(out == values, "{} depth {}", scheme, depth);
            }
        }
        let mut sink = BufferSink::default();
        let root = FloatBits::encode(&values, &mut sink, MAX_CASCADE);
        prop_assert!(decode_all::<FloatBits>(sink, root, values.len())? == values);
    }
}

fn size_with(scheme: Option<crate::chooser::Encoder<i64>>, values: &[i64]) -> usize {
    let mut sink = BufferSink::default();
    match scheme {
        Some(encode) => encode(values, &mut sink, MAX_CASCADE),
        None => i64::encode(values, &mut sink, MAX_CASCADE),
    };
    sink.stored_size()
}

/// A small deterministic generator, so the distributions are the same on every run.
fn lcg(seed: &mut u64) -> u64 {
    *seed = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    *seed >> 33
}

fn distributions() -> Vec<(&'static str, Vec<i64>)> {
    let n = 65_536;
    let mut seed = 42u64;
    let mut cases: Vec<(&str, Vec<i64>)> = Vec::new();
    cases.push((
        "uniform 12 bits",
        (0..n).map(|_| (lcg(&mut seed) % 4096) as i64).collect(),
    ));
    cases.push((
        "sorted keys",
        (0..n)
            .map(|i| i as i64 * 4 + (lcg(&mut seed) % 4) as i64)
            .collect(),
    ));
    cases.push((
        "runs",
        (0..n).map(|i| ((i / 37) % 11) as i64 * 1_000_000).collect(),
    ));
    cases.push((
        "skewed",
        (0..n)
            .map(|_| {
                if lcg(&mut seed) % 10 < 8 {
                    7
                } else {
                    (lcg(&mut seed) % 100_000) as i64
                }
            })
            .collect(),
    ));
    cases.push((
        "outliers",
        (0..n)
            .map(|_| {
                if lcg(&mut seed).is_multiple_of(100) {
                    lcg(&mut seed) as i64 * 1_000
                } else {
                    (lcg(&mut seed) % 64) as i64
                }
            })
            .collect(),
    ));
    cases.push((
        "few distinct wide",
        (0..n)
            .map(|_| [3i64 << 40, 5 << 50, -7, 11 << 20][(lcg(&mut seed) % 4) as usize])
            .collect(),
    ));
    cases.push((
        "random 64 bits",
        (0..n)
            .map(|_| (lcg(&mut seed) << 31 ^ lcg(&mut seed)) as i64)
            .collect(),
    ));
    cases.push((
        "dates",
        (0..n)
            .map(|_| 8_000 + (lcg(&mut seed) % 2_500) as i64)
            .collect(),
    ));
    cases.push((
        "clock times HHMM",
        (0..n)
            .map(|_| {
                let minute_of_day = (lcg(&mut seed) % 1440) as i64;
                minute_of_day / 60 * 100 + minute_of_day % 60
            })
            .collect(),
    ));
    // Most values of the sample are distinct although the block repeats each ~30 times:
    // the sample's dictionary rule misses it, the full distinct count does not.
    let wide: Vec<i64> = (0..2_000)
        .map(|_| (lcg(&mut seed) % (1 << 40)) as i64)
        .collect();
    cases.push((
        "2,000 distinct wide",
        (0..n)
            .map(|_| wide[(lcg(&mut seed) % 2_000) as usize])
            .collect(),
    ));
    cases
}

#[test]
fn sampled_choice_is_within_ten_percent_of_the_best() {
    let cases = distributions();
    for (name, values) in &cases {
        let chosen = size_with(None, values);
        let best = schemes::<i64>()
            .map(|(_, encode)| size_with(Some(encode), values))
            .min()
            .unwrap_or(usize::MAX);
        assert!(
            chosen as f64 <= best as f64 * 1.10,
            "{name}: sampled choice {chosen} bytes, best single choice {best} bytes"
        );
    }
}

/// Indices outside `0..=max`, negative ones included, are an error naming the first bad
/// index; in-range ones come back as they are.
#[test]
fn out_of_range_indices_are_errors() {
    let decode = |values: &[i64], max: u64| {
        let mut sink = BufferSink::default();
        crate::encodings::frame::encode_ints(values, &mut sink, 1);
        sink.decode_with(|ctx| crate::domain::decode_indices(ctx, 0, values.len(), max, 0))
            .map_err(|e| e.to_string())
    };
    assert_eq!(decode(&[0, 3, 1], 3), Ok(vec![0, 3, 1]));
    for (values, message) in [
        (&[0, 4, 1, 9][..], "index 4 out of range 0..=3"),
        (&[1, -2, 0][..], "index -2 out of range 0..=3"),
    ] {
        let got = decode(values, 3);
        assert!(got.as_ref().is_err_and(|e| e.contains(message)), "{got:?}");
    }
}
