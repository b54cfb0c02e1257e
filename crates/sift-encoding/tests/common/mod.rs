//! Shared pieces of the differential tests: a seeded generator, null patterns, and the
//! checks that compare what the encoded column answers with the plain Arrow input.

pub mod bools;
pub mod floats;
pub mod ints;
pub mod strings;

use std::collections::BTreeSet;

use arrow::array::{Array, ArrayRef, BooleanArray};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use sift_encoding::{Bitmap, EncodedColumn, ValuePredicate, encode_array};

/// Predicates evaluated per generated column.
pub const PREDICATES: usize = 12;

/// A small deterministic generator (splitmix64). Columns are drawn from a seed rather than
/// from proptest collections: 65 536-row columns stay cheap, and a case is reproducible
/// from its printed parameters.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next() % n }
    }

    pub fn index(&mut self, n: usize) -> usize {
        self.below(n as u64) as usize
    }

    /// True with probability `per_mille` / 1000.
    pub fn chance(&mut self, per_mille: u32) -> bool {
        self.below(1000) < u64::from(per_mille)
    }

    /// A random element of a non-empty slice.
    pub fn pick<T: Clone>(&mut self, xs: &[T]) -> T {
        xs[self.index(xs.len())].clone()
    }

    /// Uniform in `lo..=hi` (spans up to the full `i128` range).
    pub fn between(&mut self, lo: i128, hi: i128) -> i128 {
        assert!(lo <= hi, "{lo} > {hi}");
        let span = hi.wrapping_sub(lo) as u128;
        let r = (u128::from(self.next()) << 64) | u128::from(self.next());
        let off = if span == u128::MAX { r } else { r % (span + 1) };
        lo.wrapping_add(off as i128)
    }

    /// A double in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// The proptest case count: `PROPTEST_CASES` when set, else `default`.
pub fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// Where the nulls of a generated column go.
#[derive(Debug, Clone, Copy)]
pub enum Nulls {
    None,
    All,
    /// Each row null with this probability (per mille).
    Density(u16),
    /// Alternating runs of nulls and values.
    Runs,
}

pub fn nulls() -> impl Strategy<Value = Nulls> {
    prop_oneof![
        4 => Just(Nulls::None),
        1 => Just(Nulls::All),
        3 => (1u16..1000).prop_map(Nulls::Density),
        1 => Just(Nulls::Runs),
    ]
}

/// Row counts: the word edges, a spread of small sizes, and now and then a full block
/// (large enough that the cascade chooses on a sample).
pub fn lengths() -> impl Strategy<Value = usize> {
    prop_oneof![
        1 => Just(0usize),
        1 => Just(1usize),
        1 => Just(63usize),
        1 => Just(64usize),
        1 => Just(65usize),
        2 => Just(1000usize),
        8 => 2usize..1500,
        1 => 1500usize..5000,
        1 => Just(65_536usize),
    ]
}

/// Rows dropped from the front of the built array by slicing (Arrow offsets).
pub fn offsets() -> impl Strategy<Value = usize> {
    prop_oneof![3 => Just(0usize), 1 => 1usize..100]
}

/// Validity of `n` rows (true = value present).
pub fn validity(nulls: Nulls, n: usize, rng: &mut Rng) -> Vec<bool> {
    match nulls {
        Nulls::None => vec![true; n],
        Nulls::All => vec![false; n],
        Nulls::Density(p) => (0..n).map(|_| !rng.chance(u32::from(p))).collect(),
        Nulls::Runs => {
            let mut out = Vec::with_capacity(n);
            let mut valid = rng.chance(500);
            while out.len() < n {
                let run = 1 + rng.index(100);
                out.extend(std::iter::repeat_n(valid, run));
                valid = !valid;
            }
            out.truncate(n);
            out
        }
    }
}

/// `values` with the rows that `valid` marks absent replaced by `None`.
pub fn with_nulls<T>(values: Vec<T>, valid: &[bool]) -> Vec<Option<T>> {
    values
        .into_iter()
        .zip(valid)
        .map(|(v, &ok)| ok.then_some(v))
        .collect()
}

/// A random selection of `n` rows, each selected with probability `per_mille` / 1000.
pub fn selection(rng: &mut Rng, n: usize, per_mille: u32) -> Bitmap {
    Bitmap::from_bools((0..n).map(|_| rng.chance(per_mille)))
}

/// An input array, its encoding, and a label naming the generated case.
pub struct Checked {
    pub input: ArrayRef,
    pub col: EncodedColumn,
    pub label: String,
}

impl Checked {
    pub fn encode(input: ArrayRef, label: String) -> Result<Self, TestCaseError> {
        let col = encode_array(input.as_ref())
            .map_err(|e| TestCaseError::fail(format!("encode failed: {e} ({label})")))?;
        Ok(Self { input, col, label })
    }

    pub fn len(&self) -> usize {
        self.input.len()
    }

    /// Row `i` holds a value (logical nulls: the Null type has no null buffer).
    fn is_valid(&self, i: usize) -> bool {
        self.input.logical_nulls().is_none_or(|n| n.is_valid(i))
    }

    /// The cascade with its parameters, e.g. `patch(for3, for10, for12)`.
    pub fn describe(&self) -> String {
        self.col.encoding.describe()
    }

    fn context(&self) -> String {
        format!(
            "{} rows of {} encoded as {} ({})",
            self.len(),
            self.input.data_type(),
            self.describe(),
            self.label
        )
    }

    /// `decode` gives the input back and `validity` its nulls.
    pub fn check_round_trip(&self) -> Result<(), TestCaseError> {
        let (dt, n) = (self.input.data_type(), self.len());
        let chunk = self.col.chunk(dt, n);
        let decoded = chunk
            .decode()
            .map_err(|e| TestCaseError::fail(format!("decode failed: {e}; {}", self.context())))?;
        prop_assert!(
            decoded.to_data() == self.input.to_data(),
            "decode differs from the input; {}",
            self.context()
        );
        let validity = chunk
            .validity()
            .map_err(|e| TestCaseError::fail(format!("validity: {e}; {}", self.context())))?;
        match validity {
            None => prop_assert_eq!(self.input.logical_null_count(), 0, "{}", self.context()),
            Some(v) => {
                prop_assert_eq!(v.len(), n, "{}", self.context());
                for i in 0..n {
                    prop_assert_eq!(v.get(i), self.is_valid(i), "row {}; {}", i, self.context());
                }
            }
        }
        Ok(())
    }

    /// `Chunk::filter` sets exactly the non-null rows for which `reference` holds; `show`
    /// renders a row's value for the failure message. Returns the answer.
    pub fn check_filter(
        &self,
        pred: &ValuePredicate,
        what: &str,
        reference: impl Fn(usize) -> bool,
        show: impl Fn(usize) -> String,
    ) -> Result<Bitmap, TestCaseError> {
        let n = self.len();
        let got = self
            .col
            .chunk(self.input.data_type(), n)
            .filter(pred)
            .map_err(|e| {
                TestCaseError::fail(format!(
                    "Chunk::filter failed: {e}; {what}; {}",
                    self.context()
                ))
            })?;
        prop_assert_eq!(got.len(), n, "{}; {}", what, self.context());
        let valid: Vec<bool> = (0..n).map(|i| self.is_valid(i)).collect();
        let bad: Vec<usize> = (0..n)
            .filter(|&i| got.get(i) != (valid[i] && reference(i)))
            .collect();
        if let Some(&row) = bad.first() {
            let value = if valid[row] { show(row) } else { "null".into() };
            return Err(TestCaseError::fail(format!(
                "{} of {n} rows differ; first row {row} = {value}: Chunk::filter says {}; {what}; {}",
                bad.len(),
                got.get(row),
                self.context()
            )));
        }
        Ok(got)
    }

    /// `decode_selected` equals Arrow's filter of both the decoded chunk and the input.
    pub fn check_selected(&self, sel: &Bitmap, what: &str) -> Result<(), TestCaseError> {
        let (dt, n) = (self.input.data_type(), self.len());
        let chunk = self.col.chunk(dt, n);
        let got = chunk.decode_selected(sel).map_err(|e| {
            TestCaseError::fail(format!(
                "decode_selected failed: {e}; {what} selecting {} rows; {}",
                sel.count_ones(),
                self.context()
            ))
        })?;
        let mask = BooleanArray::from((0..n).map(|i| sel.get(i)).collect::<Vec<bool>>());
        let decoded = chunk
            .decode()
            .map_err(|e| TestCaseError::fail(format!("decode failed: {e}; {}", self.context())))?;
        let from_decoded = arrow::compute::filter(decoded.as_ref(), &mask)
            .map_err(|e| TestCaseError::fail(format!("arrow filter: {e}")))?;
        let from_input = arrow::compute::filter(self.input.as_ref(), &mask)
            .map_err(|e| TestCaseError::fail(format!("arrow filter: {e}")))?;
        prop_assert_eq!(got.data_type(), dt, "{}; {}", what, self.context());
        prop_assert_eq!(got.len(), sel.count_ones(), "{}; {}", what, self.context());
        if got.to_data() != from_input.to_data() {
            let first = (0..got.len())
                .find(|&i| got.slice(i, 1).to_data() != from_input.slice(i, 1).to_data());
            return Err(TestCaseError::fail(format!(
                "decode_selected differs from the filtered input (first at output row {first:?}: got {:?}, want {:?}); {what} selecting {} rows; {}",
                first.map(|i| got.slice(i, 1)),
                first.map(|i| from_input.slice(i, 1)),
                sel.count_ones(),
                self.context()
            )));
        }
        prop_assert!(
            got.to_data() == from_decoded.to_data(),
            "decode_selected differs from the filtered decode; {}; {}",
            what,
            self.context()
        );
        Ok(())
    }

    /// Selections of densities 0, 0.01, 0.5 and 1 (random and exact), plus `extra` ones
    /// (typically what predicates answered).
    pub fn check_selections(&self, rng: &mut Rng, extra: &[Bitmap]) -> Result<(), TestCaseError> {
        let n = self.len();
        self.check_selected(&Bitmap::zeros(n), "no rows")?;
        self.check_selected(&Bitmap::ones(n), "all rows")?;
        for per_mille in [10, 500, 990] {
            let sel = selection(rng, n, per_mille);
            self.check_selected(&sel, &format!("random selection, density {per_mille}‰"))?;
        }
        for (i, sel) in extra.iter().enumerate() {
            self.check_selected(sel, &format!("predicate answer {i}"))?;
        }
        Ok(())
    }
}

/// The scheme names in a cascade's shape, e.g. `{"patch", "for", "delta"}`.
pub fn schemes(c: &Checked) -> BTreeSet<String> {
    c.col
        .encoding
        .shape()
        .split(|ch: char| !ch.is_ascii_alphanumeric())
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// The widths of the bit-packed nodes in a cascade (`for7` → 7).
pub fn for_widths(c: &Checked) -> BTreeSet<u32> {
    c.describe()
        .split(|ch: char| !ch.is_ascii_alphanumeric())
        .filter_map(|s| s.strip_prefix("for")?.parse().ok())
        .collect()
}
