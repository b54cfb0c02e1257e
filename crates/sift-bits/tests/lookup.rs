//! Codes looked up in a table at every supported level equal the entries indexed one by
//! one: tables of every size around the register path's 16, 32 and 64 entries (and past
//! it), ragged code counts around the 16-code blocks and below the register path's
//! minimum, and a code past the table anywhere.

#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used)] // test code asserts by panicking

use proptest::prelude::*;
use sift_bits::Level;
use sift_bits::lookup::lookup_u64;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn lookups_agree_at_every_level(
        table in prop::collection::vec(any::<u64>(), 0..80),
        picks in prop::collection::vec(any::<u32>(), 0..200),
        beyond in prop::option::of((any::<prop::sample::Index>(), 0u32..3)),
    ) {
        let len = table.len() as u32;
        let mut codes: Vec<u32> = picks.iter().map(|&p| if len == 0 { 0 } else { p % len }).collect();
        // One code at, or just past, the end of the table.
        if let (Some((at, by)), false) = (beyond, codes.is_empty()) {
            let i = at.index(codes.len());
            codes[i] = len + by;
        }
        let inside = codes.iter().all(|&c| c < len);
        let want: Vec<u64> = if inside {
            codes.iter().map(|&c| table[c as usize]).collect()
        } else {
            Vec::new()
        };
        for level in Level::supported() {
            // Appended after what `out` holds, which a failed lookup leaves as it was.
            let mut out = vec![7u64; 3];
            prop_assert_eq!(lookup_u64(level, &codes, &table, &mut out), inside, "{:?}", level);
            prop_assert_eq!(&out[..3], &[7u64; 3][..], "{:?}", level);
            let expected: &[u64] = if inside { &want } else { &[] };
            prop_assert_eq!(&out[3..], expected, "{:?}", level);
        }
    }
}
