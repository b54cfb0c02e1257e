//! Value domains: what the nodes of a cascade hold. Integers as `i64` (every integer-like
//! Arrow type whose values fit), doubles as their bit patterns ([`FloatBits`]), booleans,
//! and byte strings ([`Strings`], decoded as `ByteValues`).
//!
//! A domain is where the encodings meet: an encoding's module encodes and decodes its
//! children through these entry points (`V::encode`, `V::decode`, …) without knowing which
//! encodings exist; the registry implements them by dispatching over the registered
//! encodings and the chooser.

use std::hash::Hash;
use std::hint::select_unpredictable;

use sift_bits::Bitmap;
use sift_bits::pack::low_mask;

use crate::error::{Result, corrupt};
use crate::predicate::DomainPred;
use crate::tree::{BufferSink, Ctx, NodeId};

/// The value domains.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Domain {
    /// Integers, as `i64` (and, at a chunk's root only, `u64` or `i128` beyond it).
    Int,
    /// Doubles by bit pattern.
    Float,
    /// Booleans.
    Bool,
    /// Byte strings (utf8, binary, fixed-size binary).
    Bytes,
}

/// A fixed-width value domain with a cascading encoder and decoder.
pub(crate) trait Value: Copy + Eq + Hash + Ord + Default + Send + Sync + 'static {
    /// Which domain this is.
    const DOMAIN: Domain;
    /// Bytes of a constant of this domain (booleans store one).
    const CONSTANT_BYTES: usize = 8;
    /// Little-endian bytes (for constants).
    fn le_bytes(self) -> [u8; 8];
    /// From little-endian bytes.
    fn from_le_bytes8(b: [u8; 8]) -> Self;
    /// Integers as this domain's values, if it is the integer domain (`None` otherwise):
    /// lets an integer-only encoding answer a generic decode.
    fn from_ints(_: Vec<i64>) -> Option<Vec<Self>> {
        None
    }
    /// Doubles as this domain's values, if it is the float domain.
    fn from_floats(_: Vec<FloatBits>) -> Option<Vec<Self>> {
        None
    }

    /// Appends `table[c]` for each of `codes` to `out` and returns `true`, or returns
    /// `false` (`out` unchanged) when a code lies past the table: a dictionary's codes
    /// looked up. 8-byte domains override it with [`lookup_u64`].
    fn look_up(codes: &[u32], table: &[Self], out: &mut Vec<Self>) -> bool {
        look_up_scalar(codes, table, out)
    }

    /// Encodes `values` with the scheme the chooser picks; children may cascade `depth - 1`
    /// more levels.
    fn encode(values: &[Self], sink: &mut BufferSink, depth: u8) -> NodeId;
    /// Decodes `count` values of node `id`, checked to be exactly `count`: parents index
    /// and expand their children's output by the count they asked for.
    fn decode(ctx: &Ctx<'_>, id: NodeId, count: usize, depth: usize) -> Result<Vec<Self>>;
    /// The values of node `id` (which holds `count`) selected by `sel`, checked to be
    /// exactly `sel.count_ones()`.
    fn select(
        ctx: &Ctx<'_>,
        id: NodeId,
        count: usize,
        depth: usize,
        sel: &Bitmap,
    ) -> Result<Vec<Self>>;
    /// `p` evaluated on the `count` values of node `id`, on their encoded form where the
    /// encoding can.
    fn filter<P: DomainPred<Self>>(
        ctx: &Ctx<'_>,
        id: NodeId,
        count: usize,
        depth: usize,
        p: &P,
    ) -> Result<Bitmap>;
}

/// The byte-string domain. Its values are not `Copy`, so it has its own entry points,
/// with the same meaning as [`Value`]'s (implemented by the registry).
pub(crate) struct Strings;

/// A double by its bit pattern: equality is bit equality (so encoding is lossless for
/// NaN payloads and -0.0) and order is `f64::total_cmp`, so sorted dictionaries keep
/// value order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[repr(transparent)]
pub(crate) struct FloatBits(pub u64);

// SAFETY: `FloatBits` is `repr(transparent)` over `u64`, which is `Zeroable` and `Pod`:
// no padding, every bit pattern valid. (Lets a dictionary of doubles go through the
// 64-bit lookup kernel as `u64`s.)
unsafe impl bytemuck::Zeroable for FloatBits {}
// SAFETY: as above.
unsafe impl bytemuck::Pod for FloatBits {}

impl FloatBits {
    pub(crate) fn f64(self) -> f64 {
        f64::from_bits(self.0)
    }

    /// A 4-byte float (by its bits) widened to a double: exact, order kept, so a
    /// predicate on the double means what it means on the float widened (as DataFusion
    /// and Arrow compare a `float` column with a `double` constant). A NaN keeps its
    /// sign and payload bit for bit (the payload's bits moved to the top of the double's)
    /// rather than being quieted by the conversion, so [`to_f32_bits`](Self::to_f32_bits)
    /// gives every pattern back.
    pub(crate) fn from_f32_bits(bits: u32) -> FloatBits {
        let x = f32::from_bits(bits);
        let (sign, payload) = (u64::from(bits >> 31), u64::from(bits & 0x7f_ffff));
        let nan = sign << 63 | 0x7ff << 52 | payload << 29;
        // Both computed and one kept, without a branch, so that a slice widens in vectors.
        FloatBits(std::hint::select_unpredictable(
            x.is_nan(),
            nan,
            f64::from(x).to_bits(),
        ))
    }

    /// The 4-byte float of a double made by [`from_f32_bits`](Self::from_f32_bits),
    /// exactly (other doubles are rounded to the nearest float).
    pub(crate) fn to_f32_bits(self) -> u32 {
        let x = self.f64();
        if !x.is_nan() {
            return (x as f32).to_bits();
        }
        let (sign, payload) = ((self.0 >> 63) as u32, (self.0 >> 29) as u32 & 0x7f_ffff);
        // A payload only in the bits a float drops still makes a NaN.
        sign << 31 | 0xff << 23 | payload.max(u32::from(payload == 0) << 22)
    }
}

impl Ord for FloatBits {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.f64().total_cmp(&other.f64())
    }
}

impl PartialOrd for FloatBits {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// The value of a constant, checked to have the domain's size.
pub(crate) fn constant<V: Value>(value: &[u8]) -> Result<V> {
    if value.len() != V::CONSTANT_BYTES {
        return Err(corrupt(format!(
            "constant of {} bytes, {} expected",
            value.len(),
            V::CONSTANT_BYTES
        )));
    }
    let mut b = [0u8; 8];
    b[..value.len()].copy_from_slice(value);
    Ok(V::from_le_bytes8(b))
}

/// Node `id` decoded `got` values where `want` were asked for: an error naming the node.
pub(crate) fn exact_count(ctx: &Ctx<'_>, id: NodeId, got: usize, want: usize) -> Result<()> {
    if got == want {
        return Ok(());
    }
    let label = ctx.enc.node(id).map_or_else(|_| "?".into(), |n| n.label());
    Err(corrupt(format!(
        "node {id} ({label}) decoded {got} values, {want} expected"
    )))
}

/// Checks that integers lie in `0..=max` (codes, lengths, positions) and returns them as
/// `u64`.
fn indices(values: Vec<i64>, max: u64) -> Result<Vec<u64>> {
    // One pass without a branch per value (it vectorizes), then a search for the message.
    // A negative value is above `max` as u64 (`max` < 2^63: it bounds a count or a length).
    let out_of_range = |v: i64| v as u64 > max;
    // Compiled for the CPU's level: the baseline's SSE2 has no 64-bit compare.
    let any_out = sift_bits::dispatch::compiled_for_active(
        #[inline(always)]
        || values.iter().fold(false, |bad, &v| bad | out_of_range(v)),
    );
    if any_out {
        let bad = values
            .iter()
            .copied()
            .find(|&v| out_of_range(v))
            .unwrap_or(-1);
        return Err(corrupt(format!("index {bad} out of range 0..={max}")));
    }
    // All values are in 0..=max, so the cast is exact; the collect reuses the allocation.
    Ok(values.into_iter().map(|v| v as u64).collect())
}

/// Decodes `count` integers in `0..=max` (codes, lengths, positions).
pub(crate) fn decode_indices(
    ctx: &Ctx<'_>,
    id: NodeId,
    count: usize,
    max: u64,
    depth: usize,
) -> Result<Vec<u64>> {
    indices(i64::decode(ctx, id, count, depth)?, max)
}

/// The selected integers of node `id`, checked to lie in `0..len` (dictionary codes).
pub(crate) fn select_indices(
    ctx: &Ctx<'_>,
    id: NodeId,
    count: usize,
    len: usize,
    depth: usize,
    sel: &Bitmap,
) -> Result<Vec<u64>> {
    indices(
        i64::select(ctx, id, count, depth, sel)?,
        len.saturating_sub(1) as u64,
    )
}

/// The selected entries of `values`.
pub(crate) fn compact<V: Copy>(values: &[V], sel: &Bitmap) -> Vec<V> {
    let mut out = Vec::with_capacity(sel.count_ones());
    out.extend(sel.iter_ones().filter_map(|i| values.get(i).copied()));
    out
}

/// A bitmap of `count` bits, all equal to `v`.
pub(crate) fn uniform(count: usize, v: bool) -> Bitmap {
    if v {
        Bitmap::ones(count)
    } else {
        Bitmap::zeros(count)
    }
}

/// Evaluates a predicate value by value.
pub(crate) fn eval_all<V: Copy>(values: &[V], f: impl Fn(V) -> bool) -> Bitmap {
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

/// The words after the current one that [`fill_ahead`] writes, and the longest run it
/// places: one that ends inside them from any bit of the current word.
pub(crate) const AHEAD_WORDS: usize = 8;
pub(crate) const AHEAD_RUN: usize = 64 * (AHEAD_WORDS - 1);

/// For a bitmap written run after run, left to right, into `out` (words from bit 0):
/// `word` is the word being filled (its bits from bit `row` on clear), kept in a register
/// and stored whole, so that no run reads `out`; `all` is the run's bit repeated over a
/// word.
///
/// Places a run of `len` (at most [`AHEAD_RUN`]) bits at bit `row` without a branch on its
/// length: the current word finished with the run's bit (bits past the run's end
/// included), the next [`AHEAD_WORDS`] words all of it (`out` must hold them: nothing is
/// written otherwise). Every word the run covers is then right but the one it ends in,
/// which is kept in `word`; the words written past the run must be stored whole again as
/// the writer reaches them, or cleared when it stops. Runs whose lengths vary from one to
/// the next (the runs of ones between scattered nulls) cost a mispredicted branch each
/// when placed by length.
#[inline(always)]
pub(crate) fn fill_ahead(out: &mut [u64], word: &mut u64, row: &mut usize, all: u64, len: usize) {
    let (at, shift, end) = (*row / 64, *row % 64, *row + len);
    if let Some(words) = out.get_mut(at..at + 1 + AHEAD_WORDS) {
        words[0] = *word | all << shift;
        words[1..].fill(all);
    }
    let within = *word | (all & low_mask(len.min(63) as u32)) << shift;
    *word = select_unpredictable(shift + len < 64, within, all & low_mask((end % 64) as u32));
    *row = end;
}

/// Places a run of `len` (at least 64) bits at bit `row`: the current word finished, whole
/// words of the run's bit, its last bits starting the next word (kept in `word`).
#[inline(always)]
pub(crate) fn fill_run(out: &mut [u64], word: &mut u64, row: &mut usize, all: u64, len: usize) {
    let end = *row + len;
    out[*row / 64] = *word | all << (*row % 64);
    if let Some(whole) = out.get_mut(*row / 64 + 1..end / 64) {
        whole.fill(all);
    }
    *word = all & low_mask((end % 64) as u32);
    *row = end;
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

/// [`Value::look_up`] one code at a time, for codes of any width: the largest code checked
/// in a pass of its own (it vectorises), then lookups whose bounds checks never fail.
pub(crate) fn look_up_scalar<C: Copy + Into<u64>, V: Copy>(
    codes: &[C],
    table: &[V],
    out: &mut Vec<V>,
) -> bool {
    let top = codes.iter().fold(0u64, |m, &c| m.max(c.into()));
    if !codes.is_empty() && top >= table.len() as u64 {
        return false;
    }
    out.extend(codes.iter().map(|&c| table[c.into() as usize]));
    true
}

/// [`Value::look_up`] for 8-byte domains: through the SIMD lookup kernel, which holds a
/// small dictionary in registers. (`out` is handed to it as the `Vec<u64>` it is in
/// memory, and back, without a copy.)
pub(crate) fn lookup_u64<V: bytemuck::Pod>(codes: &[u32], table: &[V], out: &mut Vec<V>) -> bool {
    let mut words: Vec<u64> = bytemuck::allocation::cast_vec(std::mem::take(out));
    let found = sift_bits::lookup::lookup_u64(
        sift_bits::Level::active(),
        codes,
        bytemuck::cast_slice(table),
        &mut words,
    );
    *out = bytemuck::allocation::cast_vec(words);
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Indices are accepted at every instruction-set level exactly when each lies in
        /// `0..=max` (negative ones and ones past `max` refused, naming the first), as a
        /// plain check of each says.
        #[test]
        fn indices_are_checked_alike_at_every_level(
            values in proptest::collection::vec(
                prop_oneof![0i64..40, Just(-1i64), Just(i64::MIN), Just(i64::MAX)],
                0..200,
            ),
            max in 0u64..48,
        ) {
            let first_bad = values.iter().find(|&&v| v < 0 || v as u64 > max);
            for level in sift_bits::Level::supported() {
                let got = sift_bits::with_level(level, || indices(values.clone(), max));
                match first_bad {
                    None => {
                        let expected: Vec<u64> = values.iter().map(|&v| v as u64).collect();
                        prop_assert_eq!(got.ok(), Some(expected), "{:?}", level);
                    }
                    Some(bad) => {
                        let message = got.err().map(|e| e.to_string()).unwrap_or_default();
                        let expected = format!("index {bad} out of range 0..={max}");
                        prop_assert!(message.contains(&expected), "{:?}: {}", level, message);
                    }
                }
            }
        }

        /// Every 4-byte float pattern widens to a double of the same value (NaNs to a NaN
        /// of the same sign) and back to its own bits; widening keeps the floats' order.
        #[test]
        fn floats_widen_exactly_and_back(a in any::<u32>(), b in any::<u32>()) {
            let (x, y) = (f32::from_bits(a), f32::from_bits(b));
            let (wa, wb) = (FloatBits::from_f32_bits(a), FloatBits::from_f32_bits(b));
            prop_assert_eq!(wa.to_f32_bits(), a);
            prop_assert_eq!(wa.f64().is_nan(), x.is_nan());
            prop_assert_eq!(wa.f64().is_sign_negative(), x.is_sign_negative());
            if !x.is_nan() {
                prop_assert_eq!(wa.f64(), f64::from(x));
            }
            if !x.is_nan() && !y.is_nan() {
                prop_assert_eq!(wa.cmp(&wb), x.total_cmp(&y));
            }
        }
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
