//! The writer's choice of a scheme by sampling (BtrBlocks §3), for every value domain.
//!
//! Choosing: a statistics pass on the whole input rules schemes out (and detects
//! constants exactly); each remaining scheme encodes the sample (children cascading on the
//! sample too), and the smallest wins. `depth` counts the levels still allowed, including
//! the current one; at depth 1 only terminal schemes are tried, so cascades are at most
//! [`MAX_CASCADE`](crate::tree::MAX_CASCADE) deep.
//!
//! The chooser knows no encoding: the registry hands it each domain's schemes, with the
//! statistic that makes each one worth trying ([`When`]).

// FxHash: encoding hashes millions of small keys; SipHash's DoS resistance buys nothing
// here and cost most of the dictionary-building time.
use rustc_hash::FxHashMap as HashMap;
use std::hash::Hash;

use crate::sample::sample;
use crate::tree::{BufferSink, NodeId};

/// An encoder: encodes values into the sink, children cascading `depth - 1` more levels.
pub(crate) type Encoder<V> = fn(&[V], &mut BufferSink, u8) -> NodeId;

/// A lower bound on the bytes a scheme would store for an input, counted without encoding
/// (`None`: it cannot encode the input).
pub(crate) type SizeCounter<V> = fn(&[V]) -> Option<usize>;

/// When a scheme is worth trying on an input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum When {
    /// On every input; the domain's first such scheme is its terminal (the only one at
    /// the last cascade level, and the fallback).
    Always,
    /// Runs of equal values average at least two.
    Runs,
    /// The sample repeats values (at most half distinct), or the whole input has few
    /// distinct values: a dictionary.
    Repetition,
    /// One value covers at least half of the sample.
    Dominant,
    /// The input is (nearly) sorted.
    Sorted,
    /// Every value is larger than the one before (a dictionary's values).
    Increasing,
    /// The whole input repeats with a period (`cycle::period`); never seen in a sample,
    /// so settled on the full input.
    Periodic,
    /// An entropy code (at least a bit per value), sized on the whole input by its own
    /// bound ([`Scheme::full_size`]), never on the sample (its table costs as much for a
    /// sample as for the chunk); settled on the full data when that bound beats the
    /// sample's choice.
    Skewed,
}

/// One scheme of a domain, as the chooser sees it.
pub(crate) struct Scheme<V: 'static> {
    /// Its name (tests force each scheme by name).
    #[cfg_attr(not(test), allow(dead_code))]
    pub name: &'static str,
    /// When it is tried.
    pub when: When,
    /// Its encoder.
    pub encode: Encoder<V>,
    /// What it is charged for its sizes when compared (more than its bytes for schemes
    /// whose decode is not lightweight).
    pub premium: Premium,
    /// For [`When::Skewed`]: a lower bound on its size on the full input.
    pub full_size: Option<SizeCounter<V>>,
}

impl<V> Scheme<V> {
    pub(crate) const fn new(name: &'static str, when: When, encode: Encoder<V>) -> Self {
        Self {
            name,
            when,
            encode,
            premium: Premium::NONE,
            full_size: None,
        }
    }

    /// A [`When::Skewed`] scheme, sized on the full input by `full_size`, charged
    /// `premium`.
    pub(crate) const fn skewed(
        name: &'static str,
        encode: Encoder<V>,
        full_size: SizeCounter<V>,
        premium: Premium,
    ) -> Self {
        Self {
            name,
            when: When::Skewed,
            encode,
            premium,
            full_size: Some(full_size),
        }
    }
}

/// What the chooser charges for a scheme's size, in bytes: the larger of `factor` × its
/// bytes and its bytes plus `bits_per_value` per value. A scheme whose decode is not
/// lightweight must save both a share of the bytes and some bits on every value (codes
/// already a bit or two wide have little left to save, and filters on them are cheapest).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Premium {
    pub factor: f64,
    pub bits_per_value: f64,
}

impl Premium {
    /// Charged its bytes.
    pub(crate) const NONE: Premium = Premium {
        factor: 1.0,
        bits_per_value: 0.0,
    };

    fn charge(self, bytes: usize, values: usize) -> f64 {
        let bytes = bytes as f64;
        (bytes * self.factor).max(bytes + values as f64 * self.bits_per_value / 8.0)
    }
}

/// The value types the chooser handles.
pub(crate) trait Sampled: Copy + Eq + Hash + Ord {}
impl<T: Copy + Eq + Hash + Ord> Sampled for T {}

/// Statistics that rule schemes in or out.
struct Stats<V> {
    n: usize,
    constant: bool,
    runs: usize,
    /// Distinct values in the sample (exact for small inputs).
    sample_distinct: usize,
    sample_len: usize,
    /// Whether the whole input has at most `n / full_distinct_ratio` distinct values;
    /// counted only when the sample alone rules a dictionary out.
    few_distinct: bool,
    /// The most frequent sample value and its count.
    top: Option<(V, usize)>,
    /// Adjacent pairs in order (for delta).
    ascending: usize,
    /// Adjacent pairs strictly in order.
    increasing: usize,
}

impl<V: Sampled> Stats<V> {
    fn of(values: &[V], sample: &[V], full_distinct_ratio: usize) -> Self {
        let mut runs = usize::from(!values.is_empty());
        let (mut ascending, mut increasing) = (0, 0);
        for w in values.windows(2) {
            runs += usize::from(w[0] != w[1]);
            ascending += usize::from(w[0] <= w[1]);
            increasing += usize::from(w[0] < w[1]);
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
            && few_distinct(values, values.len() / full_distinct_ratio.max(1));
        Self {
            n: values.len(),
            constant: runs == 1,
            runs,
            sample_distinct,
            sample_len: sample.len(),
            few_distinct,
            top,
            ascending,
            increasing,
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
    fn increasing(&self) -> bool {
        self.n > 2 && self.increasing == self.n - 1
    }
}

// A dictionary is tried when the whole input has at most one distinct value in
// `full_distinct_ratio` (set per domain by the registry). The sample's own rule
// (BtrBlocks: at most half the sample distinct) misses values drawn from a domain of a few
// thousand, e.g. clock times as HHMM: 640 sampled values look mostly distinct although the
// block holds only ~1,400, and a dictionary saves a bit per value over the frame of
// reference. Doubles that are not decimals cost 35–64 bits a value, so a dictionary can pay
// off even with one distinct value in two or three.

/// Whether `values` has at most `limit` distinct values; stops counting past the limit, so
/// high-cardinality inputs cost about `limit` hash insertions.
fn few_distinct<V: Sampled>(values: &[V], limit: usize) -> bool {
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

/// Inputs shorter than this are not sized for [`When::Skewed`] schemes.
const SKEWED_MIN_VALUES: usize = 1024;

/// Bytes that `encode` stores, written into a scratch sink that is then dropped (a
/// candidate's size, to compare it with others').
fn trial_size<R>(encode: impl FnOnce(&mut BufferSink) -> R) -> usize {
    let mut scratch = BufferSink::default();
    encode(&mut scratch);
    scratch.stored_size()
}

/// Sample sizes within this factor of the best are close calls, settled on the full data.
const CLOSE_CALL: f64 = 1.2;
/// At most this many finalists are encoded on the full data.
const MAX_FINALISTS: usize = 3;

/// What schemes were charged on the full input, kept across the settlements of one
/// input: the winner of one is the incumbent of the next, and encoding it on the full
/// input again gives the same size. Where the input's encoding starts a tree (`sink`
/// empty), the trials' trees are kept as well, so that the winner's becomes the sink
/// instead of being encoded once more. (Trials on the full input take about a quarter of
/// a conversion's time; these repeats were about 4 % of it.)
pub(crate) struct FullSizes<S> {
    sizes: Vec<(S, f64)>,
    /// Each full-input trial's root and tree, when kept.
    trials: Option<Vec<(S, NodeId, BufferSink)>>,
}

impl<S: Copy + PartialEq> FullSizes<S> {
    /// Sizes for encodings into `sink`; trees kept when it is empty (and lays out codes as
    /// trial sinks do).
    pub(crate) fn for_sink(sink: &BufferSink) -> Self {
        let fresh = sink.nodes.is_empty() && sink.buffers.is_empty() && !sink.byteslice;
        FullSizes {
            sizes: Vec::new(),
            trials: fresh.then(Vec::new),
        }
    }

    /// `s`'s charge on the full input: `charge` of the bytes `encode` stores, measured the
    /// first time.
    fn get(
        &mut self,
        s: S,
        encode: impl FnOnce(&mut BufferSink) -> NodeId,
        charge: impl FnOnce(usize) -> f64,
    ) -> f64 {
        if let Some(&(_, size)) = self.sizes.iter().find(|(k, _)| *k == s) {
            return size;
        }
        let mut trial = BufferSink::default();
        let root = encode(&mut trial);
        let size = charge(trial.stored_size());
        self.sizes.push((s, size));
        if let Some(trials) = &mut self.trials {
            trials.push((s, root, trial));
        }
        size
    }

    /// Moves `s`'s kept trial into `sink` (empty, see [`for_sink`](Self::for_sink)) and
    /// returns its root, if there is one.
    fn take_into(&mut self, s: S, sink: &mut BufferSink) -> Option<NodeId> {
        let trials = self.trials.as_mut()?;
        let at = trials.iter().position(|(k, ..)| *k == s)?;
        let (_, root, trial) = trials.swap_remove(at);
        *sink = trial;
        Some(root)
    }
}

/// Picks the scheme with the smallest encoding: every candidate encodes the sample; when
/// the best few are close, they encode the full input and the smallest wins. (Sampling is
/// biased for some schemes, e.g. patched bit-packing takes its base from the minimum, which
/// the sample often misses; the full-data check keeps such close calls from costing much.)
/// Returns the winner with what it was charged per value, on the data it was measured on.
/// Charges on the full input (`values`, which may also be the `sample`) are taken from and
/// added to `full`.
pub(crate) fn choose<S: Copy + PartialEq, T>(
    candidates: &[S],
    sample: &[T],
    values: &[T],
    encode: impl Fn(S, &[T], &mut BufferSink) -> NodeId,
    premium: impl Fn(S) -> Premium,
    full: &mut FullSizes<S>,
) -> Option<(S, f64)> {
    let mut size_on = |s: S, data: &[T]| {
        let charge = |bytes: usize| premium(s).charge(bytes, data.len());
        match std::ptr::eq(data, values) {
            true => full.get(s, |scratch| encode(s, data, scratch), charge),
            false => charge(trial_size(|scratch| encode(s, data, scratch))),
        }
    };
    let mut sized: Vec<(f64, S)> = candidates
        .iter()
        .map(|&s| (size_on(s, sample), s))
        .collect();
    // Stable sort: ties keep candidate order, so the choice is deterministic.
    sized.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (best, first) = *sized.first()?;
    let finalists: Vec<S> = sized
        .iter()
        .take(MAX_FINALISTS)
        .filter(|(size, _)| *size <= best * CLOSE_CALL)
        .map(|(_, s)| *s)
        .collect();
    if finalists.len() <= 1 || sample.len() == values.len() {
        return Some((first, best / sample.len().max(1) as f64));
    }
    finalists
        .into_iter()
        .map(|s| (size_on(s, values), s))
        .min_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(size, s)| (s, size / values.len().max(1) as f64))
}

/// Encodes `values` with the scheme among `schemes` that the statistics and the sample
/// choose; a constant input becomes `constant`.
pub(crate) fn encode_chosen<V: Sampled + 'static>(
    values: &[V],
    sink: &mut BufferSink,
    depth: u8,
    schemes: &[Scheme<V>],
    constant: ConstantEncoder<V>,
    full_distinct_ratio: usize,
) -> NodeId {
    let s = sample(values);
    let stats = Stats::of(values, &s, full_distinct_ratio);
    if stats.constant {
        return constant(values[0], sink);
    }
    // The registry lists a terminal scheme first for every domain.
    let Some(terminal) = schemes.iter().position(|s| s.when == When::Always) else {
        return constant(values[0], sink);
    };
    let run = |i: usize, data: &[V], sink: &mut BufferSink| (schemes[i].encode)(data, sink, depth);
    if depth <= 1 || values.len() < 2 {
        return run(terminal, values, sink);
    }
    let worth = |w: When| match w {
        When::Always => true,
        When::Runs => stats.avg_run() >= 2.0,
        When::Repetition => stats.sample_dict_viable(),
        When::Dominant => stats.frequency_viable(),
        When::Sorted => stats.sorted(),
        When::Increasing => stats.increasing(),
        When::Periodic | When::Skewed => false,
    };
    let candidates: Vec<usize> = (0..schemes.len())
        .filter(|&i| worth(schemes[i].when))
        .collect();
    let encode = |i: usize, data: &[V], scratch: &mut BufferSink| run(i, data, scratch);
    let premium = |i: usize| schemes[i].premium;
    // The terminal is always a candidate, so there is a choice; its charge per value is
    // kept for the entropy codes below.
    let full = &mut FullSizes::for_sink(sink);
    let (mut best, mut per_value) =
        choose(&candidates, &s, values, encode, premium, full).unwrap_or((terminal, f64::INFINITY));
    if stats.few_distinct
        && let Some(dict) = schemes.iter().position(|s| s.when == When::Repetition)
    {
        // The sample holds most of the dictionary but few repeats of each entry, so its
        // estimate is biased against the dictionary: settle it on the full data.
        (best, per_value) = choose(&[best, dict], values, values, encode, premium, full)
            .unwrap_or((best, per_value));
    }
    // Searched only here, where a cascade level is left to use it.
    if let Some(cycle) = schemes.iter().position(|s| s.when == When::Periodic)
        && crate::encodings::cycle::period(values).is_some()
    {
        (best, per_value) = choose(&[best, cycle], values, values, encode, premium, full)
            .unwrap_or((best, per_value));
    }
    // Bounded on the full input, and encoded on it only when the bound (with its premium)
    // beats the choice so far, charged per value as it was measured (on the sample or the
    // full input). Not on short inputs: a code table pays only over thousands of values,
    // and the chooser's own samples (and their cascades) would count it at every level.
    let n = values.len();
    for (i, scheme) in schemes.iter().enumerate() {
        let (When::Skewed, Some(full_size)) = (scheme.when, scheme.full_size) else {
            continue;
        };
        if n < SKEWED_MIN_VALUES {
            continue;
        }
        let to_beat = per_value * n as f64;
        // A prefix code spends at least a bit per value: inputs already that narrow are
        // not counted at all.
        if scheme.premium.charge(n / 8, n) < to_beat
            && let Some(bytes) = full_size(values)
            && scheme.premium.charge(bytes, n) < to_beat
        {
            (best, per_value) = choose(&[best, i], values, values, encode, premium, full)
                .unwrap_or((best, per_value));
        }
    }
    match full.take_into(best, sink) {
        Some(root) => root,
        None => run(best, values, sink),
    }
}

/// A constant's encoder.
pub(crate) type ConstantEncoder<V> = fn(V, &mut BufferSink) -> NodeId;

/// The boolean schemes: a constant, runs, the positions of the rarer value, a bitmap.
pub(crate) struct BoolSchemes {
    pub constant: ConstantEncoder<bool>,
    pub runs: Encoder<bool>,
    /// The common value as a constant, the rows of the other as exception positions.
    pub frequency: Encoder<bool>,
    pub bitmap: Encoder<bool>,
}

/// Encodes booleans: a constant; runs when they are long, or the positions of the rarer
/// value when that is smaller (it is when the rare value is scattered: a run of it and the
/// run after cost two lengths, its position one delta; the validity of a column with
/// scattered nulls), runs when it clusters; else a bitmap. Positions decode faster than
/// runs, a fill of the common value and one bit per exception against a run length
/// decoded and placed per run, but slower than a bitmap, so they replace runs and never a
/// bitmap.
pub(crate) fn encode_bools(
    values: &[bool],
    sink: &mut BufferSink,
    depth: u8,
    schemes: &BoolSchemes,
) -> NodeId {
    let BoolSchemes {
        constant,
        runs,
        frequency,
        bitmap,
    } = schemes;
    if let Some(&first) = values.first()
        && values.iter().all(|&v| v == first)
    {
        return constant(first, sink);
    }
    let n = values.len();
    let count = 1 + values.windows(2).filter(|w| w[0] != w[1]).count();
    // A run costs its length (a few bits once bit-packed) against one bit per value in
    // the bitmap; only long runs pay off.
    if depth > 1 && count * 16 < n {
        let ones = values.iter().filter(|&&v| v).count();
        // Positions are tried where they would replace runs: with the rarer value below
        // one in 32, scattered it makes two runs each, so runs pay here too.
        if ones.min(n - ones) * 32 < n {
            let size = |encode: Encoder<bool>| trial_size(|scratch| encode(values, scratch, depth));
            if size(*frequency) <= size(*runs) {
                return frequency(values, sink, depth);
            }
        }
        return runs(values, sink, depth);
    }
    bitmap(values, sink, depth)
}

/// A byte-string encoder (`fixed`: the width of fixed-size binary values).
pub(crate) type StringEncoder = fn(&[&[u8]], Option<u32>, &mut BufferSink, u8) -> NodeId;

/// The byte-string schemes.
pub(crate) struct StringSchemes {
    pub constant: fn(&[u8], &mut BufferSink) -> NodeId,
    /// The terminal scheme.
    pub plain: StringEncoder,
    pub dict: StringEncoder,
    /// Not for fixed-size values.
    pub fsst: fn(&[&[u8]], &mut BufferSink, u8) -> NodeId,
    /// Front coding; not for fixed-size values.
    pub prefix: fn(&[&[u8]], &mut BufferSink, u8) -> NodeId,
}

/// Encodes byte strings: constant, plain, sorted dictionary, FSST or front coding, chosen by
/// sampling.
pub(crate) fn encode_strings(
    values: &[&[u8]],
    fixed: Option<u32>,
    sink: &mut BufferSink,
    depth: u8,
    schemes: &StringSchemes,
) -> NodeId {
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum S {
        Plain,
        Dict,
        Fsst,
        Prefix,
    }
    if let Some(first) = values.first()
        && values.iter().all(|v| v == first)
    {
        return (schemes.constant)(first, sink);
    }
    if depth <= 1 {
        return (schemes.plain)(values, fixed, sink, depth);
    }
    let s = sample(values);
    let mut candidates = vec![S::Plain];
    // Repetition is counted on the whole input: a column with a few thousand distinct
    // strings per block (tail numbers, names) looks unique in a 640-value sample, so the
    // sample alone would never try a dictionary on it.
    let dict_viable = at_most_distinct(values, values.len() / 2);
    if dict_viable {
        candidates.push(S::Dict);
    }
    if fixed.is_none() {
        candidates.push(S::Fsst);
        if shares_prefixes(&s) {
            candidates.push(S::Prefix);
        }
    }
    let encode = |scheme: S, values: &[&[u8]], sink: &mut BufferSink| match scheme {
        S::Plain => (schemes.plain)(values, fixed, sink, depth),
        S::Dict => (schemes.dict)(values, fixed, sink, depth),
        S::Fsst => (schemes.fsst)(values, sink, depth),
        S::Prefix => (schemes.prefix)(values, sink, depth),
    };
    let full = &mut FullSizes::for_sink(sink);
    let (mut best, _) =
        choose(&candidates, &s, values, encode, |_| Premium::NONE, full).unwrap_or((S::Plain, 0.0));
    // For the same reason the sample underrates the dictionary: settle it on the full input.
    if dict_viable && best != S::Dict && s.len() < values.len() {
        let mut size = |c| full.get(c, |scratch| encode(c, values, scratch), |b| b as f64);
        if size(S::Dict) < size(best) {
            best = S::Dict;
        }
    }
    match full.take_into(best, sink) {
        Some(root) => root,
        None => encode(best, values, sink),
    }
}

/// Front coding is tried when neighbours share at least this many bytes on average: below,
/// it saves too little to give up FSST's compressed-domain matching for.
const MIN_SHARED_PREFIX: usize = 4;

/// Whether neighbouring strings of the sample share [`MIN_SHARED_PREFIX`] bytes on average.
fn shares_prefixes(sample: &[&[u8]]) -> bool {
    let shared: usize = sample
        .windows(2)
        .map(|w| crate::encodings::prefix::shared_len(w[0], w[1]))
        .sum();
    shared >= MIN_SHARED_PREFIX * sample.len().saturating_sub(1).max(1)
}

/// True if `values` hold at most `limit` distinct values (stops counting past the limit).
fn at_most_distinct(values: &[&[u8]], limit: usize) -> bool {
    let mut seen: rustc_hash::FxHashSet<&[u8]> = rustc_hash::FxHashSet::default();
    for v in values {
        if seen.insert(v) && seen.len() > limit {
            return false;
        }
    }
    true
}
