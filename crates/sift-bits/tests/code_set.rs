//! Code-set lookups at every supported level equal a code-at-a-time reference: byte codes
//! through the table (VPERMI2B at AVX-512) and wider codes through the bitset, for
//! dictionaries of every size around the table's 128- and 256-entry edges, codes beyond the
//! dictionary (reported, never a hit), ragged lengths, and output words reused dirty.

#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used)] // test code asserts by panicking

use proptest::prelude::*;
use sift_bits::Level;
use sift_bits::code_set::CodeSet;

/// The answer words and the out-of-range flag, a code at a time.
fn reference(mask: &[bool], codes: &[u64]) -> (Vec<u64>, bool) {
    let mut words = vec![0u64; codes.len().div_ceil(64)];
    for (i, &c) in codes.iter().enumerate() {
        if mask.get(c as usize).copied().unwrap_or(false) {
            words[i / 64] |= 1 << (i % 64);
        }
    }
    (words, codes.iter().any(|&c| c >= mask.len() as u64))
}

fn check(mask: &[bool], codes: &[u64]) -> Result<(), TestCaseError> {
    let set = CodeSet::new(mask);
    let want = reference(mask, codes);
    for (i, &c) in codes.iter().enumerate().take(100) {
        prop_assert_eq!(set.contains(c), want.0[i / 64] >> (i % 64) & 1 == 1);
    }
    let n = codes.len().div_ceil(64);
    let wide: Vec<u32> = codes.iter().map(|&c| c as u32).collect();
    for level in Level::supported() {
        let mut out = vec![u64::MAX; n + 1];
        let beyond = set.lookup(level, &wide, &mut out);
        prop_assert_eq!(
            (&out[..n], beyond),
            (&want.0[..], want.1),
            "u32 codes at {:?}",
            level
        );
        prop_assert_eq!(out[n], u64::MAX, "a word past the answer was written");
    }
    if codes.iter().all(|&c| c < 256) {
        let bytes: Vec<u8> = codes.iter().map(|&c| c as u8).collect();
        for level in Level::supported() {
            let mut out = vec![u64::MAX; n + 1];
            let beyond = set.lookup_bytes(level, &bytes, &mut out);
            prop_assert_eq!(
                (&out[..n], beyond),
                (&want.0[..], want.1),
                "byte codes at {:?}",
                level
            );
            prop_assert_eq!(out[n], u64::MAX, "a word past the answer was written");
        }
    }
    Ok(())
}

/// A dictionary of 0–300 entries (or up to 5000), a random subset matching, and codes
/// mostly inside it with some beyond.
fn case() -> impl Strategy<Value = (Vec<bool>, Vec<u64>)> {
    let len = prop_oneof![
        0usize..300,
        Just(127),
        Just(128),
        Just(255),
        Just(256),
        300usize..5000
    ];
    (len, 0usize..700, any::<u64>(), 0u32..4).prop_map(|(len, n, seed, beyond)| {
        let mut x = seed | 1;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mask: Vec<bool> = (0..len).map(|_| next() % 3 == 0).collect();
        let span = (len as u64 + u64::from(beyond == 0) * 3).max(1);
        let codes = (0..n).map(|_| next() % span).collect();
        (mask, codes)
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn lookups_match_the_reference((mask, codes) in case()) {
        check(&mask, &codes)?;
    }
}

#[test]
fn every_byte_code_of_a_full_table() {
    let mask: Vec<bool> = (0..256).map(|c| c % 7 == 1 || c > 250).collect();
    let codes: Vec<u64> = (0..1024).map(|i| (i * 37 % 256) as u64).collect();
    check(&mask, &codes).unwrap();
    // A dictionary shorter than the codes' range: every code past it is reported.
    check(&mask[..100], &codes).unwrap();
    check(&[], &codes).unwrap();
    // Codes with the top bit set are beyond, not negative indices.
    let high: Vec<u64> = (0..64)
        .map(|i| {
            if i % 3 == 0 {
                5
            } else {
                u64::from(u32::MAX) - i
            }
        })
        .collect();
    check(&mask, &high).unwrap();
}
