//! Byte-string columns (every utf8 and binary layout) shaped for dictionaries, FSST, plain
//! and constants; string matchers (equality, prefix, sets, ranges, negations) as data.

use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, AsArray, BinaryArray, BinaryViewArray, FixedSizeBinaryArray, LargeBinaryArray,
    LargeStringArray, StringArray, StringViewArray,
};
use arrow::datatypes::DataType;
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use sift_encoding::{BytesShape, ValuePredicate};

use super::{Checked, Nulls, PREDICATES, Rng, lengths, nulls, offsets, validity, with_nulls};

/// Words with shared prefixes, the empty string and multi-byte characters, so prefix and
/// range matchers select contiguous and scattered dictionary entries alike.
pub const WORDS: [&str; 24] = [
    "",
    "a",
    "ab",
    "abc",
    "abd",
    "apple",
    "apricot",
    "banana",
    "band",
    "bandana",
    "AIR",
    "AIR REG",
    "MAIL",
    "SHIP",
    "TRUCK",
    "RAIL",
    "FOB",
    "ü",
    "über",
    "日本",
    "zz",
    "zzz",
    "\u{10FFFF}",
    "deliver carefully",
];

#[derive(Debug, Clone, Copy)]
pub enum StrShape {
    /// A few distinct words (dictionary).
    Dict {
        distinct: u8,
    },
    /// Random strings, mostly unique (plain or FSST).
    Unique,
    /// URL-like strings with long shared substrings (FSST).
    Urls,
    /// Several words joined (FSST).
    Comments,
    Constant,
    /// Runs over a few words.
    Runs {
        distinct: u8,
        mean_run: u16,
    },
}

pub fn str_shape() -> impl Strategy<Value = StrShape> {
    prop_oneof![
        3 => (2u8..20).prop_map(|distinct| StrShape::Dict { distinct }),
        2 => Just(StrShape::Unique),
        2 => Just(StrShape::Urls),
        1 => Just(StrShape::Comments),
        1 => Just(StrShape::Constant),
        1 => (1u8..5, 2u16..200).prop_map(|(distinct, mean_run)| StrShape::Runs { distinct, mean_run }),
    ]
}

pub fn random_string(rng: &mut Rng) -> String {
    const CHARS: [char; 12] = ['a', 'b', 'c', 'x', 'Y', '0', '9', ' ', '-', 'é', '日', '🦀'];
    let len = rng.index(24);
    (0..len).map(|_| rng.pick(&CHARS)).collect()
}

pub fn word(rng: &mut Rng) -> String {
    if rng.chance(700) {
        rng.pick(&WORDS).to_string()
    } else {
        random_string(rng)
    }
}

pub fn gen_strings(shape: StrShape, n: usize, rng: &mut Rng) -> Vec<String> {
    match shape {
        StrShape::Dict { distinct } => {
            let pool: Vec<String> = (0..distinct).map(|_| word(rng)).collect();
            (0..n).map(|_| rng.pick(&pool)).collect()
        }
        StrShape::Unique => (0..n)
            .map(|i| {
                if rng.chance(100) {
                    random_string(rng)
                } else {
                    format!("{}{i}", random_string(rng))
                }
            })
            .collect(),
        StrShape::Urls => (0..n)
            .map(|_| {
                let section = rng.pick(&["shop", "blog", "help", "account/orders"]);
                format!(
                    "https://www.example.com/{section}/{}?id={}",
                    rng.below(1000),
                    rng.next() % 1_000_000_007
                )
            })
            .collect(),
        StrShape::Comments => (0..n)
            .map(|_| {
                let k = 1 + rng.index(8);
                (0..k)
                    .map(|_| rng.pick(&WORDS))
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect(),
        StrShape::Constant => vec![word(rng); n],
        StrShape::Runs { distinct, mean_run } => {
            let pool: Vec<String> = (0..distinct).map(|_| word(rng)).collect();
            let mut out = Vec::with_capacity(n);
            while out.len() < n {
                let run = 1 + rng.index(2 * usize::from(mean_run));
                out.extend(std::iter::repeat_n(rng.pick(&pool), run));
            }
            out.truncate(n);
            out
        }
    }
}

/// Every layout of byte strings; fixed-size binary takes the generated strings cut or
/// zero-padded to its width.
pub const STRING_TYPES: [DataType; 7] = [
    DataType::Utf8,
    DataType::LargeUtf8,
    DataType::Utf8View,
    DataType::Binary,
    DataType::LargeBinary,
    DataType::BinaryView,
    DataType::FixedSizeBinary(3),
];

pub fn string_array(dt: &DataType, values: &[Option<String>]) -> ArrayRef {
    let strs = || values.iter().map(|v| v.as_deref());
    let bytes = || strs().map(|v| v.map(str::as_bytes));
    match dt {
        DataType::Utf8 => Arc::new(StringArray::from_iter(strs())),
        DataType::LargeUtf8 => Arc::new(LargeStringArray::from_iter(strs())),
        DataType::Utf8View => Arc::new(StringViewArray::from_iter(strs())),
        DataType::Binary => Arc::new(BinaryArray::from_iter(bytes())),
        DataType::LargeBinary => Arc::new(LargeBinaryArray::from_iter(bytes())),
        DataType::BinaryView => Arc::new(BinaryViewArray::from_iter(bytes())),
        &DataType::FixedSizeBinary(w) => {
            let fixed = bytes().map(|v| {
                v.map(|b| {
                    let mut b = b.to_vec();
                    b.resize(w as usize, 0);
                    b
                })
            });
            Arc::new(FixedSizeBinaryArray::try_from_sparse_iter_with_size(fixed, w).unwrap())
        }
        other => panic!("not a string type: {other}"),
    }
}

pub fn bytes_at(a: &dyn Array, i: usize) -> Option<&[u8]> {
    if a.is_null(i) {
        return None;
    }
    Some(match a.data_type() {
        DataType::Utf8 => a.as_string::<i32>().value(i).as_bytes(),
        DataType::LargeUtf8 => a.as_string::<i64>().value(i).as_bytes(),
        DataType::Utf8View => a.as_string_view().value(i).as_bytes(),
        DataType::Binary => a.as_binary::<i32>().value(i),
        DataType::LargeBinary => a.as_binary::<i64>().value(i),
        DataType::BinaryView => a.as_binary_view().value(i),
        DataType::FixedSizeBinary(_) => a.as_fixed_size_binary().value(i),
        other => panic!("not a string type: {other}"),
    })
}

/// Bytes that print as text.
#[derive(Clone)]
pub struct Text(Vec<u8>);

impl std::fmt::Debug for Text {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", String::from_utf8_lossy(&self.0))
    }
}

/// A string predicate as data, so failures can print it; the closure handed to
/// `ValuePredicate::Bytes` and the reference both call [`StrPred::matches`].
#[derive(Debug, Clone)]
pub enum StrPred {
    Eq(Text),
    Prefix(Text),
    In(Vec<Text>),
    /// `lo <= v <= hi` bytewise (contiguous on a sorted dictionary).
    Between(Text, Text),
    Contains(Text),
    LongerThan(usize),
    Always(bool),
    Not(Box<StrPred>),
}

impl StrPred {
    pub fn matches(&self, v: &[u8]) -> bool {
        match self {
            StrPred::Eq(x) => v == x.0.as_slice(),
            StrPred::Prefix(p) => v.starts_with(&p.0),
            StrPred::In(set) => set.iter().any(|x| v == x.0.as_slice()),
            StrPred::Between(lo, hi) => lo.0.as_slice() <= v && v <= hi.0.as_slice(),
            StrPred::Contains(s) => s.0.is_empty() || v.windows(s.0.len()).any(|w| w == s.0),
            StrPred::LongerThan(k) => v.len() > *k,
            StrPred::Always(b) => *b,
            StrPred::Not(p) => !p.matches(v),
        }
    }

    pub fn to_value_predicate(&self) -> ValuePredicate {
        let p = self.clone();
        ValuePredicate::Bytes(Arc::new(move |v: &[u8]| p.matches(v)), self.shape(false))
    }

    /// The shape the scan engine would give this predicate (`outside` flipped under NOT),
    /// so FSST's shortcuts are checked against the reference too.
    fn shape(&self, outside: bool) -> BytesShape {
        let one_of = |v: Vec<Vec<u8>>| BytesShape::OneOf {
            values: v.into(),
            outside,
        };
        match self {
            StrPred::Eq(x) => one_of(vec![x.0.clone()]),
            StrPred::In(set) => one_of(set.iter().map(|x| x.0.clone()).collect()),
            StrPred::Prefix(p) => BytesShape::Prefix {
                prefix: p.0.clone().into(),
                outside,
            },
            StrPred::Not(p) => p.shape(!outside),
            _ => BytesShape::Any,
        }
    }
}

/// A string operand: present in the data, a present value extended (absent), or a word.
pub fn str_operand(rng: &mut Rng, present: &[&[u8]]) -> Text {
    match rng.below(4) {
        0 | 1 if !present.is_empty() => Text(rng.pick(present).to_vec()),
        2 if !present.is_empty() => {
            let mut v = rng.pick(present).to_vec();
            v.push(b'~');
            Text(v)
        }
        _ => Text(word(rng).into_bytes()),
    }
}

pub fn str_pred(rng: &mut Rng, present: &[&[u8]]) -> StrPred {
    let p = match rng.below(8) {
        0 | 1 => StrPred::Eq(str_operand(rng, present)),
        2 => {
            let v = str_operand(rng, present).0;
            let cut = rng.index(v.len() + 1);
            StrPred::Prefix(Text(v[..cut].to_vec()))
        }
        3 | 4 => StrPred::In(
            (0..rng.index(6))
                .map(|_| str_operand(rng, present))
                .collect(),
        ),
        5 => {
            let (a, b) = (str_operand(rng, present), str_operand(rng, present));
            if a.0 <= b.0 {
                StrPred::Between(a, b)
            } else {
                StrPred::Between(b, a)
            }
        }
        6 => match rng.below(3) {
            0 => StrPred::Contains(Text(rng.pick(&WORDS).as_bytes().to_vec())),
            1 => StrPred::LongerThan(rng.index(30)),
            _ => StrPred::Always(rng.chance(500)),
        },
        _ => StrPred::Contains(Text(b"a".to_vec())),
    };
    if rng.chance(350) {
        StrPred::Not(Box::new(p))
    } else {
        p
    }
}

#[derive(Debug, Clone)]
pub struct StrCase {
    dt: DataType,
    shape: StrShape,
    len: usize,
    nulls: Nulls,
    offset: usize,
    seed: u64,
}

pub fn str_case() -> impl Strategy<Value = StrCase> {
    (
        proptest::sample::select(STRING_TYPES.to_vec()),
        str_shape(),
        lengths(),
        nulls(),
        offsets(),
        any::<u64>(),
    )
        .prop_map(|(dt, shape, len, nulls, offset, seed)| StrCase {
            dt,
            shape,
            len,
            nulls,
            offset,
            seed,
        })
}

impl StrCase {
    pub fn build(&self) -> ArrayRef {
        let mut rng = Rng::new(self.seed);
        let total = self.len + self.offset;
        let values = gen_strings(self.shape, total, &mut rng);
        let valid = validity(self.nulls, total, &mut rng);
        string_array(&self.dt, &with_nulls(values, &valid)).slice(self.offset, self.len)
    }

    pub fn run(&self) -> Result<Checked, TestCaseError> {
        let c = Checked::encode(self.build(), format!("{self:?}"))?;
        c.check_round_trip()?;
        let input = c.input.clone();
        let present: Vec<&[u8]> = (0..c.len()).filter_map(|i| bytes_at(&input, i)).collect();
        let mut rng = Rng::new(self.seed ^ 0x0005_EED0_F00D);
        let mut answers = Vec::new();
        for _ in 0..PREDICATES {
            let pred = str_pred(&mut rng, &present);
            let answer = c.check_filter(
                &pred.to_value_predicate(),
                &format!("{pred:?}"),
                |i| pred.matches(bytes_at(&input, i).unwrap()),
                |i| format!("{:?}", Text(bytes_at(&input, i).unwrap().to_vec())),
            )?;
            answers.push(answer);
        }
        answers.truncate(2);
        c.check_selections(&mut rng, &answers)?;
        Ok(c)
    }
}
