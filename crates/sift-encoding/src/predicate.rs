//! Predicates on the values of a column: what they mean ([`ValuePredicate`], one
//! definition for encoded data and for Arrow arrays alike), and their entry into the
//! encoded evaluation. Each encoding evaluates them on its own form (see its module and
//! `Encoding::filter`):
//!
//! | node | evaluation |
//! |---|---|
//! | constant | once |
//! | RLE | once per run, then runs set as bit ranges |
//! | dictionary | once per entry: a mask over codes; a contiguous mask (always, for ranges on a sorted dictionary) becomes a range on the codes, which recurses into their encoding |
//! | frame of reference | the range is moved into the code domain and compared on the packed codes (`sift_bits::packed_cmp`) |
//! | ALP | the float range becomes an exact integer range (ALP decoding is monotone), which recurses into the integers |
//! | patch | the inner node, then the exceptions alone |
//! | FSST | equality and IN by each string's decoded length (summed from its codes, nothing written), prefixes (LIKE 'p%', starts_with) by decoding only the symbols that cover the prefix; only strings that pass are decompressed for the matcher ([`BytesShape`]) |
//! | anything else | decoded, then evaluated |
//!
//! Every evaluation returns a bitmap over the chunk's *compacted* (non-null) values; the
//! column entry point deposits it onto the valid rows.

use std::sync::Arc;

use sift_bits::Bitmap;
use sift_bits::bloom::{BloomFilter, i128_key};
use sift_bits::range::compare_values;

use arrow_array::Array;

use crate::domain::{FloatBits, Strings, Value, eval_all, set_range};
use crate::encodings::hybrid::EntryRanks;
use crate::error::{EncodingError, Result};
use crate::tree::Ctx;

/// A predicate on the values of one column, in its storage domain. Nulls never match;
/// `negate` flips the answer for non-null values only (SQL's `NOT` on a known value).
#[derive(Clone)]
pub enum ValuePredicate {
    /// Integers (every integer-like type, decimals scaled): `lo <= v <= hi`.
    IntRange { lo: i128, hi: i128, negate: bool },
    /// Integers in a set (sorted, without repeats).
    IntIn { values: Arc<[i128]>, negate: bool },
    /// Floats by IEEE total order, as [`float_key`]s: `lo <= key(v) <= hi`.
    FloatRange { lo: u64, hi: u64, negate: bool },
    /// Floats whose [`float_key`] is in the set (sorted, without repeats).
    FloatIn { keys: Arc<[u64]>, negate: bool },
    /// Byte strings accepted by the matcher (negation is the matcher's business); the
    /// shape says which strings it can be decided for without looking at them whole.
    Bytes(Arc<BytesMatcher>, BytesShape),
    /// Booleans equal to `value`.
    Bool { value: bool },
    /// Integers (every integer-like type, decimals scaled) in `lo..=hi` whose key
    /// ([`i128_key`](sift_bits::bloom::i128_key)) may be in the filter: every member
    /// passes (`lo` and `hi` are the smallest and largest), and a few other values
    /// between them (the filter's false positives). A join's build-side keys, tested on
    /// the probe side's column; it has no negation. The range is part of the answer, not
    /// only a hint for pruning, so that a value outside it fails whether or not its
    /// block, row group or page was pruned.
    IntBloom {
        bloom: Arc<BloomFilter>,
        lo: i128,
        hi: i128,
    },
}

/// A predicate on one byte string.
pub type BytesMatcher = dyn Fn(&[u8]) -> bool + Send + Sync;

/// What a [`BytesMatcher`] answers for strings it can decide cheaply: FSST-compressed
/// strings outside the shape are given the `outside` verdict from their codes alone (the
/// decoded length, or the first symbols), and only the rest are decompressed and passed
/// to the matcher. The matcher must answer `outside` for every string outside the shape.
#[derive(Debug, Clone)]
pub enum BytesShape {
    /// No shortcut: every string goes to the matcher.
    Any,
    /// Strings not among `values` (equality, IN) answer `outside`.
    OneOf {
        values: Arc<[Vec<u8>]>,
        outside: bool,
    },
    /// Strings not starting with `prefix` (LIKE 'p%…', starts_with) answer `outside`.
    Prefix { prefix: Arc<[u8]>, outside: bool },
}

impl std::fmt::Debug for ValuePredicate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::IntRange { lo, hi, negate } => write!(f, "int[{lo}, {hi}] negate={negate}"),
            Self::IntIn { values, negate } => write!(f, "int in {values:?} negate={negate}"),
            Self::FloatRange { lo, hi, negate } => write!(
                f,
                "float[{}, {}] negate={negate}",
                float_from_key(*lo),
                float_from_key(*hi)
            ),
            Self::FloatIn { keys, negate } => write!(f, "float in {keys:?} negate={negate}"),
            Self::Bytes(_, shape) => write!(f, "bytes matcher ({shape:?})"),
            Self::Bool { value } => write!(f, "bool = {value}"),
            Self::IntBloom { bloom, lo, hi } => {
                write!(f, "int in {lo}..={hi} and in bloom {bloom:?}")
            }
        }
    }
}

/// The position of `x` in SQL's float order as an unsigned key: IEEE total order on
/// numbers (−0.0 just below +0.0), and every NaN, whatever its sign and payload, equal to
/// the others and above every number (as DuckDB and PostgreSQL order them). Computed
/// without a branch, so that a loop of keys (a page's PLAIN doubles) vectorises.
#[inline]
pub fn float_key(x: f64) -> u64 {
    let b = x.to_bits();
    // Negative: every bit flipped; else the sign bit set; NaN above all.
    let key = b ^ (0u64.wrapping_sub(b >> 63) | 1 << 63);
    if x.is_nan() { u64::MAX } else { key }
}

/// The inverse of [`float_key`].
pub fn float_from_key(k: u64) -> f64 {
    f64::from_bits(if k >> 63 == 1 { k & !(1 << 63) } else { !k })
}

impl ValuePredicate {
    /// The answer for an integer (any integer-like type, decimals scaled); `false` for a
    /// predicate of another domain.
    pub fn matches_int(&self, v: i128) -> bool {
        match self {
            Self::IntRange { lo, hi, negate } => (*lo <= v && v <= *hi) != *negate,
            Self::IntIn { values, negate } => values.binary_search(&v).is_ok() != *negate,
            Self::IntBloom { bloom, lo, hi } => *lo <= v && v <= *hi && bloom.contains(i128_key(v)),
            _ => false,
        }
    }

    /// The answer for a double; `false` for a predicate of another domain.
    pub fn matches_float(&self, v: f64) -> bool {
        let k = float_key(v);
        match self {
            Self::FloatRange { lo, hi, negate } => (*lo <= k && k <= *hi) != *negate,
            Self::FloatIn { keys, negate } => keys.binary_search(&k).is_ok() != *negate,
            _ => false,
        }
    }

    /// The rows of a decoded Arrow array whose value matches (nulls never match): the
    /// same answers as the evaluation on encoded values, for data that is not encoded
    /// (Parquet, lookups, computed columns).
    pub fn eval_array(&self, a: &dyn Array) -> Result<Bitmap> {
        use arrow_array::cast::AsArray;
        use arrow_array::types::*;
        use arrow_schema::DataType as D;
        let n = a.len();
        let nulls = a.logical_nulls();
        let valid = |i: usize| nulls.as_ref().is_none_or(|nb| nb.is_valid(i));
        let mut words = vec![0u64; n.div_ceil(64)];
        let mut put = |i: usize, v: bool| {
            if v && valid(i) {
                words[i / 64] |= 1 << (i % 64);
            }
        };
        let mismatch = || {
            EncodingError::Unsupported(format!("predicate {self:?} on a {} array", a.data_type()))
        };
        // Integer predicates on the values as i64, by the batch kernels as on encoded
        // chunks (a Bloom probe on every key's own bits).
        let batch = matches!(
            self,
            Self::IntRange { .. } | Self::IntIn { .. } | Self::IntBloom { .. }
        );
        if batch && let Some(wide) = as_i64(a)? {
            let values = wide.as_primitive::<Int64Type>().values();
            let mut out = match self {
                Self::IntRange { lo, hi, negate } => {
                    let mut inside = within(Bitmap::ones(n), values, *lo, *hi);
                    if *negate {
                        inside.not_assign();
                    }
                    inside
                }
                Self::IntIn {
                    values: set,
                    negate,
                } => IntSet::new(set, *negate).eval_slice(values),
                Self::IntBloom { bloom, lo, hi } => {
                    within(bloom.probe_i64(values), values, *lo, *hi)
                }
                _ => return Err(mismatch()),
            };
            if let Some(nb) = &nulls {
                let valid = Bitmap::from_bools(nb.iter());
                out.and_assign(&valid);
            }
            return Ok(out);
        }
        if for_each_int(a, |i, v| put(i, self.matches_int(v)))? {
            return Bitmap::from_words(words, n)
                .ok_or_else(|| EncodingError::Unsupported("bitmap".into()));
        }
        match a.data_type() {
            D::Float16 | D::Float32 => {
                return self.eval_array(&arrow_cast::cast(a, &D::Float64)?);
            }
            D::Float64 => {
                for (i, &v) in a.as_primitive::<Float64Type>().values().iter().enumerate() {
                    put(i, self.matches_float(v));
                }
            }
            D::Boolean => {
                let Self::Bool { value } = self else {
                    return Err(mismatch());
                };
                for (i, v) in a.as_boolean().values().iter().enumerate() {
                    put(i, v == *value);
                }
            }
            dt if crate::strings::is_byte_string(dt) => {
                let Self::Bytes(m, _) = self else {
                    return Err(mismatch());
                };
                // `put` drops a null row's verdict; the matcher sees the empty string there.
                crate::strings::for_each_bytes(a, |i, v| put(i, m(v.unwrap_or_default())))?;
            }
            D::Null => {}
            _ => return Err(mismatch()),
        }
        Bitmap::from_words(words, n).ok_or_else(|| EncodingError::Unsupported("bitmap".into()))
    }
}

/// Calls `f(row, value)` for every row of an integer-like array (integers, dates, times,
/// timestamps, durations, decimals unscaled), nulls included (their value is
/// meaningless), and returns true; false for arrays of other types.
pub fn for_each_int(a: &dyn Array, mut f: impl FnMut(usize, i128)) -> Result<bool> {
    use arrow_array::cast::AsArray;
    use arrow_array::types::*;
    use arrow_schema::DataType as D;
    macro_rules! ints {
        ($a:expr, $t:ty) => {
            $a.as_primitive::<$t>()
                .values()
                .iter()
                .enumerate()
                .for_each(|(i, &v)| f(i, v as i128))
        };
    }
    match a.data_type() {
        D::Int8 => ints!(a, Int8Type),
        D::Int16 => ints!(a, Int16Type),
        D::Int32 => ints!(a, Int32Type),
        D::Int64 => ints!(a, Int64Type),
        D::UInt8 => ints!(a, UInt8Type),
        D::UInt16 => ints!(a, UInt16Type),
        D::UInt32 => ints!(a, UInt32Type),
        D::UInt64 => ints!(a, UInt64Type),
        D::Date32 => ints!(a, Date32Type),
        D::Date64 => ints!(a, Date64Type),
        D::Decimal128(..) => ints!(a, Decimal128Type),
        D::Time32(_) => ints!(arrow_cast::cast(a, &D::Int32)?, Int32Type),
        D::Time64(_) | D::Timestamp(..) | D::Duration(_) => {
            ints!(arrow_cast::cast(a, &D::Int64)?, Int64Type)
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// `a` as an `Int64` array when every value of its type is an `i64` (integers up to 64
/// bits but `u64`, dates, times, timestamps, durations), else `None`.
fn as_i64(a: &dyn Array) -> Result<Option<arrow_array::ArrayRef>> {
    use arrow_schema::DataType as D;
    let dt = a.data_type();
    let cast = |a: &dyn Array, to: &D| arrow_cast::cast(a, to);
    Ok(match dt {
        D::Int8 | D::Int16 | D::Int32 | D::Int64 | D::UInt8 | D::UInt16 | D::UInt32 => {
            Some(cast(a, &D::Int64)?)
        }
        D::Date32 | D::Time32(_) => Some(cast(cast(a, &D::Int32)?.as_ref(), &D::Int64)?),
        D::Date64 | D::Time64(_) | D::Timestamp(..) | D::Duration(_) => Some(cast(a, &D::Int64)?),
        _ => None,
    })
}

/// A predicate on the values of one domain, as encodings see it.
pub(crate) trait DomainPred<V: Value>: Sized {
    /// The answer for one value.
    fn eval(&self, v: V) -> bool;

    /// The answer for every value, when it does not depend on the value (an empty range).
    fn uniform(&self) -> Option<bool> {
        None
    }

    /// The predicate as an integer range `lo <= v <= hi` (xor `negate`), if it is one, in
    /// `i128` so that roots outside the `i64` cascade compare exactly.
    fn int_range(&self) -> Option<(i128, i128, bool)> {
        None
    }

    /// The predicate as a range of [`float_key`]s `lo <= key(v) <= hi` (xor `negate`).
    fn key_range(&self) -> Option<(u64, u64, bool)> {
        None
    }

    /// The predicate as a set of dictionary codes, if it is one ([`CodeMask`]).
    fn code_mask(&self) -> Option<&CodeMask> {
        None
    }

    /// The answers for decoded values, one bit each (a batch kernel where there is one).
    fn eval_slice(&self, values: &[V]) -> Bitmap {
        eval_all(values, |v| self.eval(v))
    }
}

/// The codes `c` of a dictionary whose entry matched (bit `c` of the verdicts), evaluated
/// on the codes of a chunk: what a predicate becomes once it has been evaluated once per
/// dictionary entry. A code beyond the dictionary matches nothing and is remembered, so that the
/// dictionary reports the corruption after the filter.
pub(crate) struct CodeMask {
    pub set: sift_bits::code_set::CodeSet,
    pub out_of_range: std::cell::Cell<bool>,
}

impl CodeMask {
    pub(crate) fn new(mask: &Bitmap) -> Self {
        CodeMask {
            set: sift_bits::code_set::CodeSet::from_bitmap(mask),
            out_of_range: std::cell::Cell::new(false),
        }
    }
}

impl DomainPred<i64> for CodeMask {
    fn eval(&self, v: i64) -> bool {
        if usize::try_from(v).is_ok_and(|c| c < self.set.len()) {
            self.set.contains(v as u64)
        } else {
            self.out_of_range.set(true);
            false
        }
    }

    fn code_mask(&self) -> Option<&CodeMask> {
        Some(self)
    }
}

/// What is learnt about one dictionary, kept across the chunks that share it (the data
/// pages of a Parquet column chunk, each its own chunk over the one dictionary page): one
/// predicate's verdicts on the entries, the decoded entries, and their ranks by value.
/// Each is computed once instead of once per chunk, which costs more than the chunk's own
/// codes when the dictionary is long and the chunks short. Pass it with
/// [`Chunk::filter_memo`] or [`Chunk::with_memo`] only to chunks whose root is a
/// dictionary over the same entries (and, to filter, with the same predicate).
///
/// [`Chunk::filter_memo`]: crate::Chunk::filter_memo
/// [`Chunk::with_memo`]: crate::Chunk::with_memo
#[derive(Default)]
pub struct DictionaryMemo {
    /// The matching entries (bit `c` for entry `c`).
    mask: Kept<Bitmap>,
    /// The same as a code set, once one is needed.
    set: std::cell::RefCell<Option<std::rc::Rc<CodeMask>>>,
    /// The decoded entries (an `Rc<Vec<V>>` of the domain they were decoded as, or strings
    /// prepared for gathers, an `Rc<GatherTable>`).
    entries: Kept<dyn std::any::Any>,
    /// The integer entries' ranks by value.
    ranks: Kept<EntryRanks>,
}

/// Something computed from a dictionary, kept with the dictionary's length: a chunk over a
/// dictionary of another length does not get it.
struct Kept<T: ?Sized>(std::cell::RefCell<Option<(usize, std::rc::Rc<T>)>>);

impl<T: ?Sized> Default for Kept<T> {
    fn default() -> Self {
        Self(std::cell::RefCell::new(None))
    }
}

impl<T: ?Sized> Kept<T> {
    /// What is kept for a dictionary of `len` entries.
    fn get(&self, len: usize) -> Option<std::rc::Rc<T>> {
        match self.0.borrow().as_ref() {
            Some((n, kept)) if *n == len => Some(kept.clone()),
            _ => None,
        }
    }

    /// Keeps `value` for a dictionary of `len` entries.
    fn keep(&self, len: usize, value: std::rc::Rc<T>) {
        *self.0.borrow_mut() = Some((len, value));
    }

    /// The length kept for, for `Debug`.
    fn kept_len(&self) -> Option<usize> {
        self.0.borrow().as_ref().map(|k| k.0)
    }
}

impl std::fmt::Debug for DictionaryMemo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let len = |kept: Option<usize>| kept.map_or("-".to_string(), |n| n.to_string());
        f.debug_struct("DictionaryMemo")
            .field("verdicts", &len(self.mask.kept_len()))
            .field("entries", &len(self.entries.kept_len()))
            .field("ranks", &len(self.ranks.kept_len()))
            .finish()
    }
}

impl DictionaryMemo {
    /// The verdicts of a dictionary of `len` entries: those kept, else `compute`'s (kept).
    pub(crate) fn mask(
        &self,
        len: usize,
        compute: impl FnOnce() -> Result<Bitmap>,
    ) -> Result<std::rc::Rc<Bitmap>> {
        if let Some(mask) = self.mask.get(len) {
            return Ok(mask);
        }
        let mask = std::rc::Rc::new(compute()?);
        self.mask.keep(len, mask.clone());
        *self.set.borrow_mut() = None;
        Ok(mask)
    }

    /// The `len` entries decoded as `T` (a `Vec` of a domain's values, or prepared
    /// strings): those kept, else `compute`'s (kept).
    pub(crate) fn entries<T: 'static>(
        &self,
        len: usize,
        compute: impl FnOnce() -> Result<T>,
    ) -> Result<std::rc::Rc<T>> {
        if let Some(Ok(entries)) = self.entries.get(len).map(|e| e.downcast::<T>()) {
            return Ok(entries);
        }
        let entries = std::rc::Rc::new(compute()?);
        self.entries.keep(len, entries.clone());
        Ok(entries)
    }

    /// Whether the `len` entries are kept decoded as `T`.
    pub(crate) fn has_entries<T: 'static>(&self, len: usize) -> bool {
        self.entries.get(len).is_some_and(|e| e.is::<T>())
    }

    /// The ranks of the `len` integer entries: those kept, else `compute`'s (kept).
    pub(crate) fn ranks(
        &self,
        len: usize,
        compute: impl FnOnce() -> EntryRanks,
    ) -> std::rc::Rc<EntryRanks> {
        if let Some(ranks) = self.ranks.get(len) {
            return ranks;
        }
        let ranks = std::rc::Rc::new(compute());
        self.ranks.keep(len, ranks.clone());
        ranks
    }

    /// The kept verdicts as a code set (built on first use).
    pub(crate) fn code_set(&self, mask: &Bitmap) -> std::rc::Rc<CodeMask> {
        self.set
            .borrow_mut()
            .get_or_insert_with(|| std::rc::Rc::new(CodeMask::new(mask)))
            .clone()
    }
}

/// `lo <= v <= hi` (xor `negate`) on integers.
#[derive(Debug, Clone, Copy)]
pub(crate) struct IntRange {
    /// The range clamped to `i64` (`lo > hi` when it holds no `i64`).
    lo: i64,
    hi: i64,
    /// The range as given.
    wide: (i128, i128),
    negate: bool,
}

impl IntRange {
    pub(crate) fn new(lo: i128, hi: i128, negate: bool) -> Self {
        let clamp = |v: i128| v.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64;
        let empty = lo > hi || hi < i128::from(i64::MIN) || lo > i128::from(i64::MAX);
        let (clo, chi) = if empty {
            (1, 0)
        } else {
            (clamp(lo), clamp(hi))
        };
        Self {
            lo: clo,
            hi: chi,
            wide: (lo, hi),
            negate,
        }
    }
}

impl DomainPred<i64> for IntRange {
    #[inline]
    fn eval(&self, v: i64) -> bool {
        (self.lo <= v && v <= self.hi) != self.negate
    }
    fn uniform(&self) -> Option<bool> {
        (self.lo > self.hi).then_some(self.negate)
    }
    fn int_range(&self) -> Option<(i128, i128, bool)> {
        Some((self.wide.0, self.wide.1, self.negate))
    }
}

struct IntSet {
    values: Vec<i64>,
    negate: bool,
}

impl IntSet {
    /// The members of `values` (sorted) that are `i64`s: no other can equal one.
    fn new(values: &[i128], negate: bool) -> IntSet {
        IntSet {
            values: values
                .iter()
                .filter_map(|&v| i64::try_from(v).ok())
                .collect(),
            negate,
        }
    }

    /// Whether `v` is a member: a search of the set without a branch on its comparisons,
    /// whose steps are as many for every value, so the tests of successive values overlap
    /// instead of each waiting for a mispredicted branch (a join's key set tested on keys
    /// that it mostly misses).
    #[inline(always)]
    fn contains(&self, v: i64) -> bool {
        let set = self.values.as_slice();
        if set.is_empty() {
            return false;
        }
        let (mut base, mut len) = (0, set.len());
        while len > 1 {
            let half = len / 2;
            base = std::hint::select_unpredictable(set[base + half] <= v, base + half, base);
            len -= half;
        }
        set[base] == v
    }
}

impl DomainPred<i64> for IntSet {
    fn eval(&self, v: i64) -> bool {
        self.contains(v) != self.negate
    }

    /// Sorted values (the chunks of a sorted key) take two binary searches of the values
    /// per member, `k log n` steps instead of `n log k`: TPC-H Q18's lineitem scan, whose
    /// sorted `l_orderkey` is tested against the 57 large orders, spent a fifth of the
    /// query searching the set once per row. The check for order stops at the first
    /// value out of it, and costs a vectorised pass where the values are sorted.
    fn eval_slice(&self, values: &[i64]) -> Bitmap {
        if values.len() < 4 * self.values.len() || !values.is_sorted() {
            return eval_all(values, |v| self.eval(v));
        }
        let mut words = vec![0u64; values.len().div_ceil(64)];
        for &member in &self.values {
            let start = values.partition_point(|&v| v < member);
            let end = start + values[start..].partition_point(|&v| v <= member);
            set_range(&mut words, start, end);
        }
        let mut out = Bitmap::from_words(words, values.len()).unwrap_or_default();
        if self.negate {
            out.not_assign();
        }
        out
    }
}

/// Membership in `lo..=hi` and a Bloom filter ([`ValuePredicate::IntBloom`]), probed in
/// batches by `sift_bits::bloom`'s kernels.
struct BloomProbe<'a> {
    bloom: &'a BloomFilter,
    lo: i128,
    hi: i128,
}

impl DomainPred<i64> for BloomProbe<'_> {
    fn eval(&self, v: i64) -> bool {
        self.lo <= i128::from(v) && i128::from(v) <= self.hi && self.bloom.contains(v as u64)
    }

    fn eval_slice(&self, values: &[i64]) -> Bitmap {
        within(self.bloom.probe_i64(values), values, self.lo, self.hi)
    }
}

/// `probed`, a Bloom filter's verdicts on `values` (or every row, for a range alone),
/// without the values outside `lo..=hi`.
///
/// Few positives (a selective join's keys and the filter's false positives) are tested
/// one by one; more, by the range kernel on the values' bits as unsigned lanes, where a
/// signed range that does not cross zero keeps its order and one that does is everything
/// but the unsigned gap between its ends. Measured on TPC-H at SF1 against testing no
/// range: a test of every value built bit by bit took Q17 (lineitem probed with 204 part
/// keys, 0.1 % positive) from 26 to 45 ms, the kernel on every value to 27.7; testing
/// only the positives cost Q9 (about 11,000 part keys, 6 % positive) 4 ms of 126.
fn within(mut probed: Bitmap, values: &[i64], lo: i128, hi: i128) -> Bitmap {
    let inside = |v: i64| (lo..=hi).contains(&i128::from(v));
    if probed.count_ones() * 64 < values.len() {
        let outside: Vec<usize> = (probed.iter_ones())
            .filter(|&i| !inside(values[i]))
            .collect();
        for i in outside {
            probed.set(i, false);
        }
        return probed;
    }
    let (lo, hi) = (lo.max(i64::MIN.into()), hi.min(i64::MAX.into()));
    let (Ok(lo), Ok(hi)) = (i64::try_from(lo), i64::try_from(hi)) else {
        return Bitmap::zeros(values.len());
    };
    if lo > hi {
        return Bitmap::zeros(values.len());
    }
    let bits: &[u64] = bytemuck::cast_slice(values);
    let mut range = Bitmap::default();
    let level = sift_bits::Level::active();
    if (lo < 0) == (hi < 0) {
        compare_values(level, bits, lo as u64, hi as u64, false, &mut range);
    } else {
        // `lo < 0 <= hi`: out of range are the values above `hi` and below `lo`, as
        // unsigned between `hi` and `lo`'s bits (an empty gap for the whole i64 range).
        compare_values(level, bits, hi as u64 + 1, lo as u64 - 1, true, &mut range);
    }
    probed.and_assign(&range);
    probed
}

#[derive(Clone, Copy)]
struct KeyRange {
    lo: u64,
    hi: u64,
    negate: bool,
}

impl DomainPred<FloatBits> for KeyRange {
    #[inline]
    fn eval(&self, v: FloatBits) -> bool {
        let k = float_key(v.f64());
        (self.lo <= k && k <= self.hi) != self.negate
    }
    fn uniform(&self) -> Option<bool> {
        (self.lo > self.hi).then_some(self.negate)
    }
    fn key_range(&self) -> Option<(u64, u64, bool)> {
        Some((self.lo, self.hi, self.negate))
    }
}

struct KeySet<'a> {
    keys: &'a [u64],
    negate: bool,
}

impl DomainPred<FloatBits> for KeySet<'_> {
    fn eval(&self, v: FloatBits) -> bool {
        self.keys.binary_search(&float_key(v.f64())).is_ok() != self.negate
    }
}

/// Booleans equal to a value.
pub(crate) struct BoolEq(pub bool);

impl DomainPred<bool> for BoolEq {
    fn eval(&self, v: bool) -> bool {
        v == self.0
    }
}

/// Evaluates `pred` on the `count` compacted values of the chunk's root node.
pub(crate) fn filter_values(
    ctx: &Ctx<'_>,
    kind: crate::PhysicalKind,
    count: usize,
    pred: &ValuePredicate,
) -> Result<Bitmap> {
    use crate::PhysicalKind as K;
    use ValuePredicate as P;
    let mismatch =
        || crate::EncodingError::Unsupported(format!("predicate {pred:?} on a {kind:?} column"));
    match (kind, pred) {
        (K::Int(it), P::IntRange { lo, hi, negate }) => {
            let range = IntRange::new(*lo, *hi, *negate);
            // The root's own evaluation first: bit-packed codes over a base compare in the
            // code domain whatever the type's width (decimal128 and u64 columns too); a
            // plain root's values compare as signed, so unsigned and 16-byte ones in their
            // own width are tested as they are before.
            let root = ctx.enc.node(0)?;
            if let Some(out) = unsigned_plain_within(ctx, root, it, count, &range)? {
                return Ok(out);
            }
            let plain = root.as_plain().is_some();
            if plain && let Some(values) = native_root(ctx, it, count)? {
                return Ok(values.within(&range));
            }
            if let Some(out) = crate::registry::filter_root(ctx, count, &range)? {
                return Ok(out);
            }
            if let Some(values) = native_root(ctx, it, count)? {
                return Ok(values.within(&range));
            }
            i64::filter(ctx, 0, count, 0, &range)
        }
        (K::Int(it), P::IntIn { values, negate }) => {
            if let Some(decoded) = native_root(ctx, it, count)? {
                return Ok(eval_all(&decoded.wide(), |v| {
                    values.binary_search(&v).is_ok() != *negate
                }));
            }
            i64::filter(ctx, 0, count, 0, &IntSet::new(values, *negate))
        }
        (K::Int(it), p @ P::IntBloom { bloom, lo, hi }) => {
            if let Some(decoded) = native_root(ctx, it, count)? {
                return Ok(eval_all(&decoded.wide(), |v| p.matches_int(v)));
            }
            let probe = BloomProbe {
                bloom,
                lo: *lo,
                hi: *hi,
            };
            i64::filter(ctx, 0, count, 0, &probe)
        }
        // 4-byte floats as the double domain holds them, widened exactly: the predicate's
        // meaning on the floats widened (as `eval_array` gives it).
        (K::Float(4 | 8), P::FloatRange { lo, hi, negate }) => FloatBits::filter(
            ctx,
            0,
            count,
            0,
            &KeyRange {
                lo: *lo,
                hi: *hi,
                negate: *negate,
            },
        ),
        (K::Float(4 | 8), P::FloatIn { keys, negate }) => FloatBits::filter(
            ctx,
            0,
            count,
            0,
            &KeySet {
                keys,
                negate: *negate,
            },
        ),
        (K::Bytes | K::FixedBytes(_), P::Bytes(m, shape)) => {
            Strings::filter(ctx, 0, count, 0, m.as_ref(), shape)
        }
        (K::Bool, P::Bool { value }) => bool::filter(ctx, 0, count, 0, &BoolEq(*value)),
        _ => Err(mismatch()),
    }
}

/// A chunk root's values decoded in the column's own type (see [`native_root`]).
enum Native {
    U32(Vec<u32>),
    U64(Vec<u64>),
    I128(Vec<i128>),
}

impl Native {
    /// The values as `i128`.
    fn wide(self) -> Vec<i128> {
        match self {
            Native::U32(v) => v.into_iter().map(i128::from).collect(),
            Native::U64(v) => v.into_iter().map(i128::from).collect(),
            Native::I128(v) => v,
        }
    }

    /// `range` on the values: unsigned ones by the SIMD range kernel on the values as they
    /// are (the range clipped to the type's), others one by one.
    fn within(self, range: &IntRange) -> Bitmap {
        fn clipped<T: sift_bits::unpack::Lane + TryFrom<i128>>(
            values: &[T],
            range: &IntRange,
            max: i128,
        ) -> Bitmap {
            let Some((lo, hi)) = range.clipped::<T>(max) else {
                return crate::domain::uniform(values.len(), range.negate);
            };
            let mut out = Bitmap::default();
            let level = sift_bits::Level::active();
            compare_values(level, values, lo, hi, range.negate, &mut out);
            out
        }
        match self {
            Native::U32(v) => clipped(&v, range, u32::MAX.into()),
            Native::U64(v) => clipped(&v, range, u64::MAX.into()),
            Native::I128(v) => {
                let ((lo, hi), negate) = (range.wide, range.negate);
                eval_all(&v, |x| (lo <= x && x <= hi) != negate)
            }
        }
    }
}

impl IntRange {
    /// The range clipped to the unsigned type `T` whose largest value is `max`; `None`
    /// when no value of the type lies in it.
    fn clipped<T: TryFrom<i128>>(&self, max: i128) -> Option<(T, T)> {
        let (lo, hi) = (self.wide.0.max(0), self.wide.1.min(max));
        T::try_from(lo).ok().zip(T::try_from(hi).ok())
    }
}

/// `range` on a plain root of unsigned 4- or 8-byte integers in their own width
/// (Parquet's UINT_32 and UINT_64 pages read in place), tested on the stored bytes with no
/// value decoded; `None` for any other root or type.
fn unsigned_plain_within(
    ctx: &Ctx<'_>,
    root: &crate::registry::Node,
    it: crate::column::IntType,
    count: usize,
    range: &IntRange,
) -> Result<Option<Bitmap>> {
    use crate::column::IntType as I;
    use crate::encodings::plain::Plain;
    /// The range clipped to the `W`-byte unsigned values, each tested as its own key.
    /// `key` is generic, not a function pointer: called through a pointer, the key loop
    /// of `keys_within` does not vectorise (`u32 > 4000000000` on 16M PLAIN values, one
    /// core: 25.5–26.2 ms generic, 38.5–38.7 through the pointer).
    fn within<const W: usize, K: sift_bits::unpack::Lane + TryFrom<i128>>(
        plain: &Plain,
        ctx: &Ctx<'_>,
        count: usize,
        range: &IntRange,
        key: impl Fn([u8; W]) -> K,
    ) -> Result<Bitmap> {
        match range.clipped::<K>((1i128 << (8 * W)) - 1) {
            Some((lo, hi)) => plain.keys_within::<W, K>(ctx, count, (lo, hi, range.negate), key),
            None => Ok(crate::domain::uniform(count, range.negate)),
        }
    }
    let crate::registry::Node::Plain(plain) = root else {
        return Ok(None);
    };
    match (it, plain.width) {
        (I::U32, 4) => within(plain, ctx, count, range, u32::from_le_bytes).map(Some),
        (I::U64, 8) => within(plain, ctx, count, range, u64::from_le_bytes).map(Some),
        _ => Ok(None),
    }
}

/// The values of a root that did not go through the `i64` cascade, decoded in the
/// column's own type (`u64` beyond `i64::MAX`, wide decimals: bit-packed over their own
/// range, or plain; `u32` plain in its own width); `None` for cascade roots, which hold
/// `i64` values.
fn native_root(ctx: &Ctx<'_>, it: crate::column::IntType, count: usize) -> Result<Option<Native>> {
    use crate::column::IntType as I;
    let root = ctx.enc.node(0)?;
    Ok(match it {
        // Unsigned 32-bit values plain in their own width (Parquet's UINT_32 pages read
        // in place), which a 4-byte plain node of the cascade would read as signed; other
        // roots of such a column hold the cascade's values, tested on their encoding.
        I::U32 if root.as_plain().is_some() => {
            root.decode_native::<u32>(ctx, 0, count)?.map(Native::U32)
        }
        I::U64 => root.decode_native::<u64>(ctx, 0, count)?.map(Native::U64),
        I::I128 => root.decode_native::<i128>(ctx, 0, count)?.map(Native::I128),
        _ => None,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// A range on unsigned 32- and 64-bit values stored plain in their own width (as
        /// Parquet's unsigned pages are read), tested by the SIMD kernel on the range clipped
        /// to the type, equals the test of every value, for ranges below, across, inside
        /// and above each type's, negated or not.
        #[test]
        fn unsigned_plain_roots_filter_as_each_value(
            values in prop::collection::vec(
                prop_oneof![any::<u64>(), 0u64..100, Just(u64::MAX), Just(1 << 63), Just(u32::MAX.into())],
                1..300,
            ),
            lo in prop_oneof![any::<i64>().prop_map(i128::from), any::<u64>().prop_map(i128::from), -5i128..100, Just(i128::MIN)],
            hi in prop_oneof![any::<i64>().prop_map(i128::from), any::<u64>().prop_map(i128::from), -5i128..100, Just(i128::MAX)],
            negate in any::<bool>(),
        ) {
            use crate::column::IntType;
            use crate::encodings::plain::Plain;
            use crate::tree::{ColumnEncoding, Node, Validity};
            let pred = ValuePredicate::IntRange { lo, hi, negate };
            let narrow: Vec<u32> = values.iter().map(|&v| v as u32).collect();
            let cases = [
                (IntType::U64, 8, values.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>(), values.clone()),
                (IntType::U32, 4, narrow.iter().flat_map(|v| v.to_le_bytes()).collect(), narrow.iter().map(|&v| v.into()).collect()),
            ];
            for (it, width, bytes, stored) in cases {
                let enc = ColumnEncoding {
                    validity: Validity::AllValid,
                    nodes: vec![Node::Plain(Plain { width, buffer: 0 })],
                };
                let bufs = [bytes.as_slice()];
                let ctx = Ctx::new(&enc, &bufs);
                let want = Bitmap::from_bools(stored.iter().map(|&v| pred.matches_int(v.into())));
                for level in sift_bits::Level::supported() {
                    let got = sift_bits::with_level(level, || {
                        filter_values(&ctx, crate::PhysicalKind::Int(it), stored.len(), &pred)
                    });
                    prop_assert_eq!(got.unwrap(), want.clone(), "{:?} at {:?}", it, level);
                }
            }
        }

        /// The range test of a Bloom filter's verdicts, by positives or by the kernel
        /// (dense or sparse verdicts), equals the scalar test of every value, for ranges
        /// on either side of zero, across it, empty, and beyond i64.
        #[test]
        fn within_equals_the_scalar_test(
            values in prop::collection::vec(
                prop_oneof![any::<i64>(), -100i64..100, Just(i64::MIN), Just(i64::MAX)],
                0..300,
            ),
            verdicts in prop::collection::vec(prop_oneof![Just(true), Just(false)], 300),
            dense in any::<bool>(),
            lo in prop_oneof![any::<i64>().prop_map(i128::from), -100i128..100, Just(i128::MIN)],
            hi in prop_oneof![any::<i64>().prop_map(i128::from), -100i128..100, Just(i128::MAX)],
        ) {
            let probed = Bitmap::from_bools(
                (0..values.len()).map(|i| verdicts[i] && (dense || i % 97 == 0)),
            );
            let want = Bitmap::from_bools(
                (0..values.len()).map(|i| probed.get(i) && lo <= i128::from(values[i]) && i128::from(values[i]) <= hi),
            );
            prop_assert_eq!(within(probed, &values, lo, hi), want);
        }

        /// A range or an IN list on a decoded array, tested by the batch kernels, equals
        /// the test of every value: 64- and 32-bit integers and dates, with nulls (never
        /// matching), negated or not, for ranges across zero, empty and beyond each
        /// type's, and lists holding values beyond i64; values in any order or sorted.
        #[test]
        fn array_ranges_and_lists_equal_the_test_of_every_value(
            values in prop::collection::vec(
                prop_oneof![any::<i64>(), -100i64..100, Just(i64::MIN), Just(i64::MAX)],
                0..300,
            ),
            nulls in prop::collection::vec(any::<bool>(), 300),
            lo in prop_oneof![any::<i64>().prop_map(i128::from), -100i128..100, Just(i128::MIN)],
            hi in prop_oneof![any::<i64>().prop_map(i128::from), -100i128..100, Just(i128::MAX)],
            negate in any::<bool>(),
            list in prop::collection::vec(prop_oneof![-100i128..100, Just(i128::MAX), any::<i64>().prop_map(i128::from)], 0..20),
            in_list in any::<bool>(),
            sorted in any::<bool>(),
        ) {
            use arrow_array::{ArrayRef, Date32Array, Int32Array, Int64Array};
            // Sorted values without nulls (whose slots would break the order) are searched
            // for each member of a list instead.
            let mut values = values;
            if sorted {
                values.sort_unstable();
            }
            let nulls: Vec<bool> = nulls.iter().map(|&n| n && !sorted).collect();
            let pred = if in_list {
                let mut list = list;
                list.sort_unstable();
                list.dedup();
                ValuePredicate::IntIn { values: list.into(), negate }
            } else {
                ValuePredicate::IntRange { lo, hi, negate }
            };
            let valid = |i: usize| !nulls[i];
            let opt = |i: usize, v: i64| valid(i).then_some(v);
            let arrays: [(ArrayRef, Vec<i64>); 3] = [
                (Arc::new(values.iter().enumerate().map(|(i, &v)| opt(i, v)).collect::<Int64Array>()), values.clone()),
                (Arc::new(values.iter().enumerate().map(|(i, &v)| opt(i, v).map(|v| v as i32)).collect::<Int32Array>()), values.iter().map(|&v| i64::from(v as i32)).collect()),
                (Arc::new(values.iter().enumerate().map(|(i, &v)| opt(i, v).map(|v| v as i32)).collect::<Date32Array>()), values.iter().map(|&v| i64::from(v as i32)).collect()),
            ];
            for (array, stored) in arrays {
                let want = Bitmap::from_bools(
                    stored.iter().enumerate().map(|(i, &v)| valid(i) && pred.matches_int(v.into())),
                );
                prop_assert_eq!(pred.eval_array(array.as_ref()).unwrap(), want, "{}", array.data_type());
            }
        }
    }

    /// Entries are decoded once per dictionary length and domain (strings too); another
    /// length or domain decodes again.
    #[test]
    fn memo_keeps_entries_by_length_and_domain() {
        let memo = DictionaryMemo::default();
        let calls = std::cell::Cell::new(0);
        let decode = |n: i64| {
            calls.set(calls.get() + 1);
            Ok((0..n).collect::<Vec<i64>>())
        };
        assert_eq!(*memo.entries(3, || decode(3)).unwrap(), vec![0, 1, 2]);
        assert_eq!(*memo.entries(3, || decode(3)).unwrap(), vec![0, 1, 2]);
        assert_eq!(calls.get(), 1);
        assert_eq!(memo.entries(4, || decode(4)).unwrap().len(), 4);
        assert_eq!(calls.get(), 2);
        let wide = memo.entries(4, || Ok(vec![7i128; 4])).unwrap();
        assert_eq!(*wide, vec![7i128; 4]);
        assert_eq!(memo.entries(4, || decode(4)).unwrap().len(), 4);
        assert_eq!(calls.get(), 3);
        // A failed decode keeps nothing.
        assert!(
            memo.entries::<Vec<i64>>(5, || Err(crate::error::corrupt("bad")))
                .is_err()
        );
        assert_eq!(memo.entries(5, || decode(5)).unwrap().len(), 5);
        // Any other type of entries (strings) is kept the same way.
        let strings = |n: usize| {
            calls.set(calls.get() + 1);
            let mut v = crate::byte_values::ByteValues::with_capacity(n, n);
            (0..n).for_each(|i| v.push(&[b'a' + i as u8]));
            Ok(v)
        };
        let before = calls.get();
        assert_eq!(memo.entries(5, || strings(5)).unwrap().value(4), b"e");
        assert_eq!(memo.entries(5, || strings(5)).unwrap().len(), 5);
        assert_eq!(calls.get(), before + 1);
    }

    #[test]
    fn float_keys_follow_total_order() {
        let xs = [
            f64::NEG_INFINITY,
            -1.5,
            -0.0,
            0.0,
            1e-300,
            2.0,
            f64::INFINITY,
            f64::NAN,
        ];
        for w in xs.windows(2) {
            assert!(float_key(w[0]) < float_key(w[1]), "{} {}", w[0], w[1]);
            assert_eq!(float_from_key(float_key(w[0])).to_bits(), w[0].to_bits());
        }
        assert_eq!(float_key(-f64::NAN), float_key(f64::NAN));
        assert!(float_key(-f64::NAN) > float_key(f64::INFINITY));
    }
}
