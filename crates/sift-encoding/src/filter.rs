//! Predicates evaluated on encoded values, scheme by scheme (DESIGN §1, issue 5 §4).
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
//! Every function returns a bitmap over the chunk's *compacted* (non-null) values; the
//! column entry point deposits it onto the valid rows.

use std::sync::Arc;

use sift_bits::Bitmap;
use sift_bits::predicate::Predicate;

use crate::bytes::{ByteValues, decode_bytes};
use crate::cascade::{Ctx, FloatBits, Value, constant, decode_indices};
use crate::dict::checked_len;
use crate::error::{Result, corrupt};
use crate::int::for_words;
use crate::node::{Node, NodeId};
use crate::{alp, patch, rle};

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
        }
    }
}

/// The position of `x` in SQL's float order as an unsigned key: IEEE total order on
/// numbers (−0.0 just below +0.0), and every NaN, whatever its sign and payload, equal to
/// the others and above every number (as DuckDB and PostgreSQL order them).
pub fn float_key(x: f64) -> u64 {
    if x.is_nan() {
        return u64::MAX;
    }
    let b = x.to_bits();
    if b >> 63 == 1 { !b } else { b | (1 << 63) }
}

/// The inverse of [`float_key`].
pub fn float_from_key(k: u64) -> f64 {
    f64::from_bits(if k >> 63 == 1 { k & !(1 << 63) } else { !k })
}

/// A predicate on the values of one domain.
trait DomainPred<V: Value>: Sized {
    fn eval(&self, v: V) -> bool;

    /// Evaluates on node `id`, with the scheme-specific paths this predicate has (ranges
    /// compare packed codes and translate through ALP); by default the shared schemes.
    fn filter_node(&self, ctx: &Ctx<'_>, id: NodeId, count: usize, depth: usize) -> Result<Bitmap> {
        filter_generic(ctx, id, count, depth, self)
    }
}

/// `lo <= v <= hi` (xor `negate`) on `i64`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct IntRange {
    lo: i64,
    hi: i64,
    negate: bool,
}

impl IntRange {
    /// Clamps an `i128` range to `i64` (an empty result keeps `lo > hi`).
    fn new(lo: i128, hi: i128, negate: bool) -> Self {
        let clamp = |v: i128| v.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64;
        if lo > hi || hi < i128::from(i64::MIN) || lo > i128::from(i64::MAX) {
            return Self {
                lo: 1,
                hi: 0,
                negate,
            };
        }
        Self {
            lo: clamp(lo),
            hi: clamp(hi),
            negate,
        }
    }
}

impl DomainPred<i64> for IntRange {
    #[inline]
    fn eval(&self, v: i64) -> bool {
        (self.lo <= v && v <= self.hi) != self.negate
    }
    fn filter_node(&self, ctx: &Ctx<'_>, id: NodeId, count: usize, depth: usize) -> Result<Bitmap> {
        filter_ints(ctx, id, count, depth, *self)
    }
}

struct IntSet {
    values: Vec<i64>,
    negate: bool,
}

impl DomainPred<i64> for IntSet {
    fn eval(&self, v: i64) -> bool {
        self.values.binary_search(&v).is_ok() != self.negate
    }
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
    fn filter_node(&self, ctx: &Ctx<'_>, id: NodeId, count: usize, depth: usize) -> Result<Bitmap> {
        filter_floats(ctx, id, count, depth, *self)
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

struct BoolEq(bool);

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
            // Bit-packed codes over a base compare in the code domain whatever the type's
            // width (decimal128 and u64 columns too), without decoding a value.
            if let &Node::For { base, bits, buffer } = ctx.enc.node(0)? {
                return for_range(ctx, (base, bits, buffer), count, *lo, *hi, *negate);
            }
            let range = IntRange::new(*lo, *hi, *negate);
            if let Some(values) = native_root(ctx, it, count)? {
                return Ok(eval_all(&values, |v| (*lo <= v && v <= *hi) != *negate));
            }
            filter_ints(ctx, 0, count, 0, range)
        }
        (K::Int(it), P::IntIn { values, negate }) => {
            if let Some(decoded) = native_root(ctx, it, count)? {
                return Ok(eval_all(&decoded, |v| {
                    values.binary_search(&v).is_ok() != *negate
                }));
            }
            let set = IntSet {
                values: values
                    .iter()
                    .filter_map(|&v| i64::try_from(v).ok())
                    .collect(),
                negate: *negate,
            };
            filter_generic(ctx, 0, count, 0, &set)
        }
        (K::Float(8), P::FloatRange { lo, hi, negate }) => filter_floats(
            ctx,
            0,
            count,
            0,
            KeyRange {
                lo: *lo,
                hi: *hi,
                negate: *negate,
            },
        ),
        (K::Float(8), P::FloatIn { keys, negate }) => filter_generic(
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
            filter_bytes(ctx, 0, count, 0, m.as_ref(), shape)
        }
        (K::Bool, P::Bool { value }) => filter_generic(ctx, 0, count, 0, &BoolEq(*value)),
        _ => Err(mismatch()),
    }
}

/// The values of a root that did not go through the `i64` cascade, decoded in the
/// column's own type (`u64` beyond `i64::MAX`, wide decimals: bit-packed over their own
/// range, or plain), as `i128`; `None` for cascade roots, which hold `i64` values.
fn native_root(
    ctx: &Ctx<'_>,
    it: crate::column::IntType,
    count: usize,
) -> Result<Option<Vec<i128>>> {
    use crate::column::IntType as I;
    let node = ctx.enc.node(0)?;
    let own = |bytes: u32| {
        matches!(node, Node::For { .. })
            || matches!(node, Node::Plain { width, .. } if *width == bytes)
    };
    Ok(match it {
        I::U64 if own(8) => Some(
            crate::int::decode_ints::<u64>(ctx.enc, 0, count, &ctx.bufs)?
                .into_iter()
                .map(i128::from)
                .collect(),
        ),
        I::I128 if own(16) => Some(crate::int::decode_ints::<i128>(
            ctx.enc, 0, count, &ctx.bufs,
        )?),
        _ => None,
    })
}

/// Evaluates a predicate value by value.
fn eval_all<V: Copy>(values: &[V], f: impl Fn(V) -> bool) -> Bitmap {
    let mut words = vec![0u64; values.len().div_ceil(64)];
    for (w, chunk) in words.iter_mut().zip(values.chunks(64)) {
        let mut bits = 0u64;
        for (i, &v) in chunk.iter().enumerate() {
            bits |= u64::from(f(v)) << i;
        }
        *w = bits;
    }
    Bitmap::from_words(words, values.len()).unwrap_or_default()
}

/// A bitmap of `count` bits, all equal to `v`.
fn uniform(count: usize, v: bool) -> Bitmap {
    if v {
        Bitmap::ones(count)
    } else {
        Bitmap::zeros(count)
    }
}

/// Integers (`i64` cascade).
fn filter_ints(
    ctx: &Ctx<'_>,
    id: NodeId,
    count: usize,
    depth: usize,
    p: IntRange,
) -> Result<Bitmap> {
    if p.lo > p.hi {
        return Ok(uniform(count, p.negate));
    }
    match ctx.node(id, depth)? {
        &Node::For { base, bits, buffer } => for_range(
            ctx,
            (base, bits, buffer),
            count,
            i128::from(p.lo),
            i128::from(p.hi),
            p.negate,
        ),
        _ => filter_generic(ctx, id, count, depth, &p),
    }
}

/// `lo <= v <= hi` (or its negation) on a `For` node's values `base + code`, evaluated on
/// the packed codes: the range is moved into the code domain and clipped to the codes' span.
fn for_range(
    ctx: &Ctx<'_>,
    (base, bits, buffer): (i128, u8, u32),
    count: usize,
    lo: i128,
    hi: i128,
    negate: bool,
) -> Result<Bitmap> {
    if bits > 64 {
        return Err(corrupt(format!("bit width {bits} > 64")));
    }
    let max = if bits == 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    };
    let lo = lo.saturating_sub(base).max(0);
    let hi = hi.saturating_sub(base).min(i128::from(max));
    if lo > hi {
        return Ok(uniform(count, negate));
    }
    let words = for_words(&ctx.bufs, bits, buffer, count)?;
    let mut out = Bitmap::default();
    sift_bits::packed_cmp::compare_into(
        sift_bits::Level::active(),
        &words,
        u32::from(bits),
        count,
        Predicate::Between(lo as u64, hi as u64),
        &mut out,
    )
    .map_err(|e| corrupt(format!("packed codes: {e}")))?;
    if negate {
        out.not_assign();
    }
    Ok(out)
}

/// Doubles (by bit pattern).
fn filter_floats(
    ctx: &Ctx<'_>,
    id: NodeId,
    count: usize,
    depth: usize,
    p: KeyRange,
) -> Result<Bitmap> {
    if p.lo > p.hi {
        return Ok(uniform(count, p.negate));
    }
    match ctx.node(id, depth)? {
        &Node::Alp {
            exponent,
            factor,
            ints,
        } => {
            let ints = ctx.child(id, ints)?;
            match alp::int_range(exponent, factor, p.lo, p.hi)? {
                Some((lo, hi)) => filter_ints(
                    ctx,
                    ints,
                    count,
                    depth + 1,
                    IntRange {
                        lo,
                        hi,
                        negate: p.negate,
                    },
                ),
                None => Ok(uniform(count, p.negate)),
            }
        }
        _ => filter_generic(ctx, id, count, depth, &p),
    }
}

/// The schemes every domain shares, and the decode-then-evaluate fallback.
fn filter_generic<V: Value, P: DomainPred<V>>(
    ctx: &Ctx<'_>,
    id: NodeId,
    count: usize,
    depth: usize,
    p: &P,
) -> Result<Bitmap> {
    match ctx.node(id, depth)? {
        Node::Constant { value } => Ok(uniform(count, p.eval(constant::<V>(value)?))),
        &Node::Dict { values, len, codes } => {
            let len = checked_len(len, count)?;
            let dict = V::decode(ctx, ctx.child(id, values)?, len, depth + 1)?;
            let mask: Vec<bool> = dict.iter().map(|&v| p.eval(v)).collect();
            filter_codes(ctx, ctx.child(id, codes)?, count, depth + 1, &mask)
        }
        &Node::Rle {
            values,
            runs,
            lengths,
        } => {
            let (vals, lens) = rle::runs::<V>(ctx, id, (values, runs, lengths), count, depth)?;
            let mut words = vec![0u64; count.div_ceil(64)];
            let mut pos = 0usize;
            for (v, len) in vals.into_iter().zip(lens) {
                let end = pos + len as usize;
                if p.eval(v) {
                    set_range(&mut words, pos, end);
                }
                pos = end;
            }
            Bitmap::from_words(words, count).ok_or_else(|| corrupt("run bitmap"))
        }
        &Node::Patch {
            inner,
            exceptions,
            positions,
            values,
        } => {
            let (pos, vals) =
                patch::exceptions::<V>(ctx, id, (exceptions, positions, values), count, depth)?;
            let mut out = p.filter_node(ctx, ctx.child(id, inner)?, count, depth + 1)?;
            for (q, v) in pos.into_iter().zip(vals) {
                out.set(q as usize, p.eval(v));
            }
            Ok(out)
        }
        _ => {
            let values = V::decode(ctx, id, count, depth)?;
            Ok(eval_all(&values, |v| p.eval(v)))
        }
    }
}

/// Codes of a dictionary whose entries matched as `mask`: a contiguous set of codes (or
/// the complement of one) becomes a range evaluated on the codes' own encoding; any other
/// set is looked up code by code.
fn filter_codes(
    ctx: &Ctx<'_>,
    codes: NodeId,
    count: usize,
    depth: usize,
    mask: &[bool],
) -> Result<Bitmap> {
    let first = mask.iter().position(|&m| m);
    let last = mask.iter().rposition(|&m| m);
    let (Some(first), Some(last)) = (first, last) else {
        return Ok(Bitmap::zeros(count));
    };
    let n = mask.len();
    if mask[first..=last].iter().all(|&m| m) {
        return filter_ints(
            ctx,
            codes,
            count,
            depth,
            IntRange::new(first as i128, last as i128, false),
        );
    }
    // The complement: trues at both ends, one run of falses inside.
    if mask[0] && mask[n - 1] {
        let f0 = mask.iter().position(|&m| !m).unwrap_or(n);
        let f1 = mask.iter().rposition(|&m| !m).unwrap_or(0);
        if f0 <= f1 && mask[f0..=f1].iter().all(|&m| !m) {
            return filter_ints(
                ctx,
                codes,
                count,
                depth,
                IntRange::new(f0 as i128, f1 as i128, true),
            );
        }
    }
    let max = n.saturating_sub(1) as u64;
    let codes = decode_indices(ctx, codes, count, max, depth)?;
    Ok(eval_all(&codes, |c| mask[c as usize]))
}

/// Byte strings.
fn filter_bytes(
    ctx: &Ctx<'_>,
    id: NodeId,
    count: usize,
    depth: usize,
    m: &BytesMatcher,
    shape: &BytesShape,
) -> Result<Bitmap> {
    match ctx.node(id, depth)? {
        Node::Constant { value } => Ok(uniform(count, m(value))),
        Node::Fsst { .. } if !matches!(shape, BytesShape::Any) => {
            crate::fsst::filter(ctx, id, count, depth, m, shape)
        }
        &Node::Dict { values, len, codes } => {
            let len = checked_len(len, count)?;
            let dict = decode_bytes(ctx, ctx.child(id, values)?, len, depth + 1)?;
            let mask: Vec<bool> = (0..len).map(|i| m(dict.value(i))).collect();
            filter_codes(ctx, ctx.child(id, codes)?, count, depth + 1, &mask)
        }
        _ => {
            let values: ByteValues = decode_bytes(ctx, id, count, depth)?;
            let mut words = vec![0u64; count.div_ceil(64)];
            for i in 0..count {
                if m(values.value(i)) {
                    words[i / 64] |= 1 << (i % 64);
                }
            }
            Bitmap::from_words(words, count).ok_or_else(|| corrupt("string bitmap"))
        }
    }
}

/// Sets bits `start..end`.
pub(crate) fn set_range(words: &mut [u64], start: usize, end: usize) {
    if start >= end {
        return;
    }
    let (sw, ew) = (start / 64, (end - 1) / 64);
    let lo_mask = u64::MAX << (start % 64);
    let hi_mask = u64::MAX >> (63 - (end - 1) % 64);
    if sw == ew {
        words[sw] |= lo_mask & hi_mask;
        return;
    }
    words[sw] |= lo_mask;
    for w in &mut words[sw + 1..ew] {
        *w = u64::MAX;
    }
    words[ew] |= hi_mask;
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

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

    #[test]
    fn set_range_sets_exactly() {
        for (s, e) in [
            (0, 0),
            (0, 1),
            (3, 64),
            (63, 65),
            (0, 128),
            (5, 190),
            (64, 128),
        ] {
            let mut w = vec![0u64; 3];
            set_range(&mut w, s, e);
            for i in 0..192 {
                assert_eq!(
                    (w[i / 64] >> (i % 64)) & 1 == 1,
                    (s..e).contains(&i),
                    "{s} {e} {i}"
                );
            }
        }
    }
}
