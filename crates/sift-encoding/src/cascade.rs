//! Value domains that cascade, and the choice of a scheme by sampling (BtrBlocks §3).
//!
//! Three domains share the generic schemes (constant, RLE, dictionary, frequency/patch):
//! integers as `i64` (all integer-like Arrow types whose values fit), doubles as their bit
//! patterns ([`FloatBits`]), and byte strings (in `bytes.rs`). Each domain adds its own
//! terminal schemes (bit-packing, plain) and specific ones (delta, PFOR, ALP, FSST).
//!
//! Choosing: a statistics pass on the whole input rules schemes out (and detects
//! constants exactly); each remaining scheme encodes the sample (children cascading on the
//! sample too), and the smallest wins. `depth` counts the levels still allowed, including
//! the current one; at depth 1 only terminal schemes are tried, so cascades are at most
//! [`MAX_CASCADE`] deep.

// FxHash: encoding hashes millions of small keys; SipHash's DoS resistance buys nothing
// here and cost most of the dictionary-building time.
use rustc_hash::FxHashMap as HashMap;
use std::hash::Hash;

use crate::bytes::{DECODE_EXPANSION, DECODE_FLOOR, decode_budget};
use crate::error::{Result, corrupt};
use crate::node::{BufferSink, Buffers, ColumnEncoding, MAX_DEPTH, Node, NodeId};
use crate::sample::sample;
use crate::{alp, dict, int, patch, rle};

/// Deepest cascade the writer builds (BtrBlocks uses 3).
pub(crate) const MAX_CASCADE: u8 = 3;

/// What a decoder needs: the tree, its buffers, and how many bytes its values may decode to.
pub(crate) struct Ctx<'a> {
    pub enc: &'a ColumnEncoding,
    pub bufs: Buffers<'a>,
    /// The chunk's encoded size (see [`crate::node::encoded_bytes`]).
    pub encoded: usize,
    /// The most bytes its byte strings may decode to ([`decode_budget`] of `encoded`).
    pub budget: usize,
}

impl<'a> Ctx<'a> {
    /// The context of a chunk with encoding `enc` and buffers `bufs`.
    pub(crate) fn new(enc: &'a ColumnEncoding, bufs: &'a [&'a [u8]]) -> Self {
        let encoded = crate::node::encoded_bytes(&enc.nodes, bufs.iter().map(|b| b.len()));
        Ctx {
            enc,
            bufs: Buffers(bufs),
            encoded,
            budget: decode_budget(encoded),
        }
    }

    /// Checks, before they are allocated, that `count` values taking `total` bytes
    /// (`None`: more than `usize` holds) of node `id`, or of the whole chunk, fit the
    /// chunk's decode budget.
    pub(crate) fn check_decoded(
        &self,
        id: Option<NodeId>,
        count: usize,
        total: Option<usize>,
    ) -> Result<()> {
        match total {
            Some(total) if total <= self.budget => Ok(()),
            total => Err(corrupt(format!(
                "{}: {count} values decode to {} bytes, more than the chunk's decode limit of {} bytes (the larger of {DECODE_FLOOR} and {DECODE_EXPANSION} × its {} encoded bytes)",
                id.map_or_else(|| "chunk".to_string(), |id| format!("node {id}")),
                total.map_or_else(|| "too many".to_string(), |t| t.to_string()),
                self.budget,
                self.encoded,
            ))),
        }
    }

    /// Node `id`, with the nesting depth checked.
    pub(crate) fn node(&self, id: NodeId, depth: usize) -> Result<&Node> {
        if depth > MAX_DEPTH {
            return Err(corrupt(format!("encoding nested deeper than {MAX_DEPTH}")));
        }
        self.enc.node(id)
    }

    /// Child `child` of `parent`, which must come after it.
    pub(crate) fn child(&self, parent: NodeId, child: NodeId) -> Result<NodeId> {
        self.enc.child(parent, child).map(|_| child)
    }
}

/// A value type with a cascading encoder and decoder.
pub(crate) trait Value: Copy + Eq + Hash + Ord + Default + Send + Sync + 'static {
    /// Bytes of a `Constant` node of this domain (booleans store one).
    const CONSTANT_BYTES: usize = 8;
    /// Little-endian bytes (for constants).
    fn le_bytes(self) -> [u8; 8];
    /// From little-endian bytes.
    fn from_le_bytes8(b: [u8; 8]) -> Self;
    /// Encodes `values` with the scheme chosen for this domain.
    fn encode(values: &[Self], sink: &mut BufferSink, depth: u8) -> NodeId;
    /// Decodes `count` values of node `id` (use [`decode`](Self::decode), which checks
    /// the count).
    fn decode_node(ctx: &Ctx<'_>, id: NodeId, count: usize, depth: usize) -> Result<Vec<Self>>;
    /// Decodes `count` values of node `id`, checked to be exactly `count`: parents index
    /// and expand their children's output by the count they asked for.
    fn decode(ctx: &Ctx<'_>, id: NodeId, count: usize, depth: usize) -> Result<Vec<Self>> {
        let out = Self::decode_node(ctx, id, count, depth)?;
        exact_count(ctx, id, out.len(), count)?;
        Ok(out)
    }
}

/// Node `id` decoded `got` values where `want` were asked for: an error naming the node.
pub(crate) fn exact_count(ctx: &Ctx<'_>, id: NodeId, got: usize, want: usize) -> Result<()> {
    if got == want {
        return Ok(());
    }
    let label = ctx.enc.node(id).map_or_else(|_| "?".into(), Node::label);
    Err(corrupt(format!(
        "node {id} ({label}) decoded {got} values, {want} expected"
    )))
}

/// A double by its bit pattern: equality is bit equality (so encoding is lossless for
/// NaN payloads and -0.0) and order is `f64::total_cmp`, so sorted dictionaries keep
/// value order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub(crate) struct FloatBits(pub u64);

impl FloatBits {
    pub(crate) fn f64(self) -> f64 {
        f64::from_bits(self.0)
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

/// Statistics that rule schemes in or out.
struct Stats<V> {
    n: usize,
    constant: bool,
    runs: usize,
    /// Distinct values in the sample (exact for small inputs).
    sample_distinct: usize,
    sample_len: usize,
    /// Whether the whole input has at most `n / FULL_DISTINCT_RATIO` distinct values;
    /// counted only when the sample alone rules a dictionary out.
    few_distinct: bool,
    /// The most frequent sample value and its count.
    top: Option<(V, usize)>,
    /// Adjacent pairs in order (for delta).
    ascending: usize,
}

impl<V: Value> Stats<V> {
    fn of(values: &[V], sample: &[V]) -> Self {
        let mut runs = usize::from(!values.is_empty());
        let mut ascending = 0;
        for w in values.windows(2) {
            runs += usize::from(w[0] != w[1]);
            ascending += usize::from(w[0] <= w[1]);
        }
        let mut counts: HashMap<V, usize> =
            HashMap::with_capacity_and_hasher(sample.len(), Default::default());
        for &v in sample {
            *counts.entry(v).or_insert(0) += 1;
        }
        // Ties broken by value so the choice is deterministic.
        let top = counts
            .iter()
            .map(|(&v, &c)| (c, v))
            .max()
            .map(|(c, v)| (v, c));
        let sample_distinct = counts.len();
        let few_distinct = sample_distinct * 2 > sample.len()
            && values.len() > sample.len()
            && few_distinct(values, values.len() / FULL_DISTINCT_RATIO);
        Self {
            n: values.len(),
            constant: runs == 1,
            runs,
            sample_distinct,
            sample_len: sample.len(),
            few_distinct,
            top,
            ascending,
        }
    }

    fn avg_run(&self) -> f64 {
        self.n as f64 / self.runs.max(1) as f64
    }
    /// The sample alone makes a dictionary worth estimating (BtrBlocks' rule).
    fn sample_dict_viable(&self) -> bool {
        self.sample_distinct * 2 <= self.sample_len
    }
    fn frequency_viable(&self) -> bool {
        self.top.is_some_and(|(_, c)| c * 2 >= self.sample_len) && !self.constant
    }
    fn sorted(&self) -> bool {
        self.n > 2 && self.ascending * 10 >= (self.n - 1) * 9
    }
}

/// A dictionary is tried when the whole input has at most one distinct value in this many.
/// The sample's own rule (BtrBlocks: at most half the sample distinct) misses values drawn
/// from a domain of a few thousand, e.g. clock times as HHMM: 640 sampled values look
/// mostly distinct although the block holds only ~1,400, and a dictionary saves a bit per
/// value over the frame of reference.
const FULL_DISTINCT_RATIO: usize = 8;

/// Whether `values` has at most `limit` distinct values; stops counting past the limit, so
/// high-cardinality inputs cost about `limit` hash insertions.
fn few_distinct<V: Value>(values: &[V], limit: usize) -> bool {
    let mut seen: rustc_hash::FxHashSet<V> = rustc_hash::FxHashSet::with_capacity_and_hasher(
        limit.min(values.len()),
        Default::default(),
    );
    for &v in values {
        if seen.insert(v) && seen.len() > limit {
            return false;
        }
    }
    true
}

/// Sample sizes within this factor of the best are close calls, settled on the full data.
const CLOSE_CALL: f64 = 1.2;
/// At most this many finalists are encoded on the full data.
const MAX_FINALISTS: usize = 3;

/// Picks the scheme with the smallest encoding: every candidate encodes the sample; when
/// the best few are close, they encode the full input and the smallest wins. (Sampling is
/// biased for some schemes, e.g. patched bit-packing takes its base from the minimum, which
/// the sample often misses; the full-data check keeps such close calls from costing much.)
pub(crate) fn choose<S: Copy, T>(
    candidates: &[S],
    sample: &[T],
    values: &[T],
    encode: impl Fn(S, &[T], &mut BufferSink),
) -> Option<S> {
    let size_on = |s: S, data: &[T]| {
        let mut scratch = BufferSink::default();
        encode(s, data, &mut scratch);
        scratch.stored_size()
    };
    let mut sized: Vec<(usize, S)> = candidates
        .iter()
        .map(|&s| (size_on(s, sample), s))
        .collect();
    // Stable sort: ties keep candidate order, so the choice is deterministic.
    sized.sort_by_key(|(size, _)| *size);
    let (best, first) = *sized.first()?;
    let finalists: Vec<S> = sized
        .iter()
        .take(MAX_FINALISTS)
        .filter(|(size, _)| *size as f64 <= best as f64 * CLOSE_CALL)
        .map(|(_, s)| *s)
        .collect();
    if finalists.len() <= 1 || sample.len() == values.len() {
        return Some(first);
    }
    finalists
        .into_iter()
        .map(|s| (size_on(s, values), s))
        .min_by_key(|(size, _)| *size)
        .map(|(_, s)| s)
}

/// The schemes of one value domain, as the chooser sees them.
pub(crate) trait Scheme<V>: Copy + 'static {
    /// The terminal scheme (used at the last cascade level and as the fallback).
    const TERMINAL: Self;
    /// Candidates tried on every input.
    const ALWAYS: &'static [Self];
    const RLE: Self;
    const DICT: Self;
    const FREQUENCY: Self;
    /// The domain's scheme for sorted input, if it has one.
    const SORTED: Option<Self>;
    /// Encodes `values` with this scheme; children may cascade `depth - 1` more levels.
    fn encode(self, values: &[V], sink: &mut BufferSink, depth: u8) -> NodeId;
}

/// Encodes `values` with the scheme of `S` that the statistics and the sample choose.
fn encode_chosen<V: Value, S: Scheme<V>>(values: &[V], sink: &mut BufferSink, depth: u8) -> NodeId {
    let s = sample(values);
    let stats = Stats::of(values, &s);
    if stats.constant {
        return sink.push_node(Node::Constant {
            value: values[0].le_bytes().to_vec(),
        });
    }
    if depth <= 1 || values.len() < 2 {
        return S::TERMINAL.encode(values, sink, depth);
    }
    let mut candidates = S::ALWAYS.to_vec();
    if stats.avg_run() >= 2.0 {
        candidates.push(S::RLE);
    }
    if stats.sample_dict_viable() {
        candidates.push(S::DICT);
    }
    if stats.frequency_viable() {
        candidates.push(S::FREQUENCY);
    }
    if let Some(sorted) = S::SORTED.filter(|_| stats.sorted()) {
        candidates.push(sorted);
    }
    let encode = |c: S, data: &[V], scratch: &mut BufferSink| {
        c.encode(data, scratch, depth);
    };
    let mut best = choose(&candidates, &s, values, encode).unwrap_or(S::TERMINAL);
    if stats.few_distinct {
        // The sample holds most of the dictionary but few repeats of each entry, so its
        // estimate is biased against the dictionary: settle it on the full data.
        best = choose(&[best, S::DICT], values, values, encode).unwrap_or(best);
    }
    best.encode(values, sink, depth)
}

/// Integer schemes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IntScheme {
    /// Frame of reference + bit-packing (terminal).
    BitPack,
    /// Bit-packing with exceptions patched in.
    Pfor,
    Rle,
    Dict,
    Frequency,
    Delta,
}

impl Scheme<i64> for IntScheme {
    const TERMINAL: Self = IntScheme::BitPack;
    const ALWAYS: &'static [Self] = &[IntScheme::BitPack, IntScheme::Pfor];
    const RLE: Self = IntScheme::Rle;
    const DICT: Self = IntScheme::Dict;
    const FREQUENCY: Self = IntScheme::Frequency;
    const SORTED: Option<Self> = Some(IntScheme::Delta);

    fn encode(self, values: &[i64], sink: &mut BufferSink, depth: u8) -> NodeId {
        match self {
            IntScheme::BitPack => int::encode_ints(values, sink),
            IntScheme::Pfor => int::encode_pfor(values, sink, depth),
            IntScheme::Rle => rle::encode(values, sink, depth),
            IntScheme::Dict => dict::encode(values, sink, depth),
            IntScheme::Frequency => patch::encode_frequency(values, sink, depth),
            IntScheme::Delta => int::encode_delta(values, sink, depth),
        }
    }
}

impl Value for i64 {
    fn le_bytes(self) -> [u8; 8] {
        self.to_le_bytes()
    }
    fn from_le_bytes8(b: [u8; 8]) -> Self {
        i64::from_le_bytes(b)
    }

    fn encode(values: &[i64], sink: &mut BufferSink, depth: u8) -> NodeId {
        encode_chosen::<i64, IntScheme>(values, sink, depth)
    }

    fn decode_node(ctx: &Ctx<'_>, id: NodeId, count: usize, depth: usize) -> Result<Vec<i64>> {
        match ctx.node(id, depth)? {
            Node::For { .. } | Node::Plain { .. } => {
                int::decode_ints::<i64>(ctx.enc, id, count, &ctx.bufs)
            }
            Node::Delta { first, deltas } => {
                let deltas = i64::decode(ctx, ctx.child(id, *deltas)?, count, depth + 1)?;
                Ok(int::undelta(*first, deltas))
            }
            Node::Lookup { column, .. } => Err(corrupt(format!(
                "node {id} is a lookup into column {column}, decoded only with that column's codes"
            ))),
            node => decode_generic(ctx, id, node, count, depth)?.ok_or_else(|| {
                corrupt(format!("node {id} ({}) cannot hold integers", node.label()))
            }),
        }
    }
}

/// Float schemes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FloatScheme {
    Plain,
    Rle,
    Dict,
    Frequency,
    Alp,
    AlpRd,
}

impl Scheme<FloatBits> for FloatScheme {
    const TERMINAL: Self = FloatScheme::Plain;
    const ALWAYS: &'static [Self] = &[FloatScheme::Plain, FloatScheme::Alp, FloatScheme::AlpRd];
    const RLE: Self = FloatScheme::Rle;
    const DICT: Self = FloatScheme::Dict;
    const FREQUENCY: Self = FloatScheme::Frequency;
    const SORTED: Option<Self> = None;

    fn encode(self, values: &[FloatBits], sink: &mut BufferSink, depth: u8) -> NodeId {
        match self {
            FloatScheme::Plain => encode_plain_floats(values, sink),
            FloatScheme::Rle => rle::encode(values, sink, depth),
            FloatScheme::Dict => dict::encode(values, sink, depth),
            FloatScheme::Frequency => patch::encode_frequency(values, sink, depth),
            FloatScheme::Alp => alp::encode_alp(values, sink, depth)
                .unwrap_or_else(|| encode_plain_floats(values, sink)),
            FloatScheme::AlpRd => alp::encode_alp_rd(values, sink, depth),
        }
    }
}

fn encode_plain_floats(values: &[FloatBits], sink: &mut BufferSink) -> NodeId {
    let mut bytes = Vec::with_capacity(values.len() * 8);
    for v in values {
        bytes.extend_from_slice(&v.0.to_le_bytes());
    }
    let buffer = sink.buffer(bytes);
    sink.push_node(Node::Plain { width: 8, buffer })
}

impl Value for FloatBits {
    fn le_bytes(self) -> [u8; 8] {
        self.0.to_le_bytes()
    }
    fn from_le_bytes8(b: [u8; 8]) -> Self {
        FloatBits(u64::from_le_bytes(b))
    }

    fn encode(values: &[FloatBits], sink: &mut BufferSink, depth: u8) -> NodeId {
        encode_chosen::<FloatBits, FloatScheme>(values, sink, depth)
    }

    fn decode_node(
        ctx: &Ctx<'_>,
        id: NodeId,
        count: usize,
        depth: usize,
    ) -> Result<Vec<FloatBits>> {
        match ctx.node(id, depth)? {
            Node::Plain { width: 8, buffer } => {
                let bytes = ctx.bufs.get(*buffer, count.saturating_mul(8))?;
                Ok(bytes[..count * 8]
                    .chunks_exact(8)
                    .map(|c| {
                        let mut a = [0u8; 8];
                        a.copy_from_slice(c);
                        FloatBits(u64::from_le_bytes(a))
                    })
                    .collect())
            }
            Node::Alp { .. } | Node::AlpRd { .. } => alp::decode(ctx, id, count, depth),
            node => decode_generic(ctx, id, node, count, depth)?
                .ok_or_else(|| corrupt(format!("node {id} ({}) cannot hold floats", node.label()))),
        }
    }
}

/// Decodes the schemes every domain shares; `None` if `node` is domain-specific.
fn decode_generic<V: Value>(
    ctx: &Ctx<'_>,
    id: NodeId,
    node: &Node,
    count: usize,
    depth: usize,
) -> Result<Option<Vec<V>>> {
    Ok(Some(match node {
        Node::Constant { value } => vec![constant::<V>(value)?; count],
        Node::Rle {
            values,
            runs,
            lengths,
        } => rle::decode(ctx, id, (*values, *runs, *lengths), count, depth)?,
        Node::Dict { values, len, codes } => {
            dict::decode(ctx, id, (*values, *len, *codes), count, depth)?
        }
        Node::Patch {
            inner,
            exceptions,
            positions,
            values,
        } => patch::decode(
            ctx,
            id,
            (*inner, *exceptions, *positions, *values),
            count,
            depth,
        )?,
        _ => return Ok(None),
    }))
}

/// The value of a `Constant` node, checked to have the domain's size.
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

/// Decodes `count` integers in `0..=max` (codes, lengths, positions).
pub(crate) fn decode_indices(
    ctx: &Ctx<'_>,
    id: NodeId,
    count: usize,
    max: u64,
    depth: usize,
) -> Result<Vec<u64>> {
    let values = i64::decode(ctx, id, count, depth)?;
    // One pass without a branch per value (it vectorizes), then a search for the message.
    // A negative value is above `max` as u64 (`max` < 2^63: it bounds a count or a length).
    let out_of_range = |v: i64| v as u64 > max;
    if values.iter().fold(false, |bad, &v| bad | out_of_range(v)) {
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
