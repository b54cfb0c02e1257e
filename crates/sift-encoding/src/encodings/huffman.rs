//! Canonical Huffman codes for integers from a small range: value = `base` + symbol, each
//! symbol written with a prefix code whose length follows its frequency in the chunk.
//!
//! Bit-packing spends the same width on every value; on skewed distributions (visit counts,
//! ages in a panel, dictionary codes of a few frequent values among thousands) that is up
//! to twice the entropy, which is where general-purpose compressors (Parquet + zstd) stored
//! less than Sift. Written here rather than taken from a crate: it is one small, table-driven
//! decoder over our own buffer layout, bounded for hostile input, and the entropy coders
//! on crates.io (zstd, ANS crates) bring stream framing and adaptive models that one
//! chunk's integers do not need.
//!
//! Decoding costs a table lookup per value (about a nanosecond), several times bit-unpacking
//! and without predicates on the packed codes, so the chooser takes it only where it stores
//! much less than the lightweight schemes (`PREMIUM`).
//!
//! Layout: `lengths` holds the code length of every symbol `0..symbols`, 4 bits each (low
//! nibble first; 0 = the symbol does not occur), at most [`MAX_LEN`]; codes are canonical
//! (shorter codes first, equal lengths in symbol order). `stream` holds [`STREAMS`] code
//! streams, value `i` in stream `i mod 4`: the byte lengths of the first three as `u32`
//! little-endian, then the four streams one after another, each holding its codes one
//! after another, least significant bit first, a code's first bit lowest. Decoding one
//! stream is a chain of dependent lookups (the next code starts where the last one ended);
//! four independent chains keep the core busy while each waits for its lookup.

use serde::{Deserialize, Serialize};

use crate::chooser::Premium;
use crate::domain::{Domain, Value};
use crate::encoding::Encoding;
use crate::encodings::frame;
use crate::error::{Result, corrupt};
use crate::tree::{BufferSink, Ctx, NodeId};
use crate::wire::{Reader, Writer};

/// Huffman-coded integers: `base` + symbol, symbols in `0..symbols`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Huffman {
    /// The value of symbol 0.
    pub base: i64,
    /// The alphabet size (1..=[`MAX_SYMBOLS`]).
    pub symbols: u32,
    /// The buffer holding the code lengths, 4 bits per symbol.
    pub lengths: u32,
    /// The buffer holding the codes.
    pub stream: u32,
}

/// Longest code: a decode table of 2^12 entries stays in the L1 cache, and one 64-bit read
/// serves four codes.
pub const MAX_LEN: u32 = 12;

/// Largest alphabet: every symbol must have a code of at most [`MAX_LEN`] bits.
pub const MAX_SYMBOLS: u32 = 1 << MAX_LEN;

/// What the chooser charges on top of the bytes: chosen only when both 4/3 of its bytes and
/// its bytes plus one bit per value stay below the best lightweight scheme, i.e. when it
/// saves a quarter of the bytes and a bit per value. Decoding costs about a nanosecond
/// per value more than unpacking, and a filter must decode where packed codes compare in
/// place: two-bit codes of a three-value flag save half a bit per value, not worth it;
/// twelve-bit codes of skewed values save four.
pub(crate) const PREMIUM: Premium = Premium {
    factor: 4.0 / 3.0,
    bits_per_value: 1.0,
};

/// Codes decoded per 64-bit read (4 × 12 bits fit in the 56 bits a read always holds).
const PER_READ: usize = 4;

/// Independent code streams, value `i` in stream `i mod STREAMS`.
pub const STREAMS: usize = 4;

/// Bytes of the stream lengths before the streams.
const HEADER: usize = 4 * (STREAMS - 1);

/// The smallest value (symbol 0) and every symbol's count; `None` when the range exceeds
/// [`MAX_SYMBOLS`].
fn counts(values: &[i64]) -> Option<(i64, Vec<u64>)> {
    let (&min, &max) = (values.iter().min()?, values.iter().max()?);
    let symbols = max.checked_sub(min).and_then(|r| u32::try_from(r).ok())?;
    if symbols >= MAX_SYMBOLS {
        return None;
    }
    let mut counts = vec![0u64; symbols as usize + 1];
    for &v in values {
        counts[(v - min) as usize] += 1;
    }
    Some((min, counts))
}

/// The code for `values`: the smallest value (symbol 0), the code length of every symbol
/// and the stream's size in bits; `None` when their range exceeds [`MAX_SYMBOLS`].
fn plan(values: &[i64]) -> Option<(i64, Vec<u8>, u64)> {
    let (min, counts) = counts(values)?;
    let lengths = code_lengths(&counts, MAX_LEN);
    let bits = counts
        .iter()
        .zip(&lengths)
        .map(|(&c, &l)| c * u64::from(l))
        .sum();
    Some((min, lengths, bits))
}

/// A lower bound on the bytes the encoding of `values` stores, from their counts alone (no
/// code is built): the entropy, but at least a bit per value, plus the table and the node; `None`
/// when their range exceeds [`MAX_SYMBOLS`]. The chooser sizes this scheme on the full
/// input (the code lengths cost as much for a sample of a few hundred values as for the
/// whole chunk, so a sample misjudges it), and encodes it only when this bound wins.
pub(crate) fn size_bound(values: &[i64]) -> Option<usize> {
    let (_, counts) = counts(values)?;
    let n = values.len() as f64;
    let entropy: f64 = counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| c as f64 * (n / c as f64).log2())
        .sum();
    let bits = entropy.max(n) as usize;
    Some(bits / 8 + HEADER + counts.len().div_ceil(2) + NODE_BYTES)
}

/// About what the node's fields take in the footer.
const NODE_BYTES: usize = 12;

/// Encodes `values` with a code built on their frequencies; bit-packing when their range
/// exceeds [`MAX_SYMBOLS`].
pub(crate) fn encode(values: &[i64], sink: &mut BufferSink, depth: u8) -> NodeId {
    let Some((min, lengths, bits)) = plan(values) else {
        return frame::encode_ints(values, sink, depth);
    };
    let codes = canonical_codes(&lengths);
    let mut streams: [StreamWriter; STREAMS] = std::array::from_fn(|_| {
        StreamWriter::with_capacity(bits.div_ceil(8 * STREAMS as u64) as usize + 1)
    });
    for (i, &v) in values.iter().enumerate() {
        let s = (v - min) as usize;
        streams[i % STREAMS].put(codes[s], u32::from(lengths[s]));
    }
    let streams = streams.map(StreamWriter::finish);
    let mut stream = Vec::with_capacity(HEADER + streams.iter().map(Vec::len).sum::<usize>());
    for s in &streams[..STREAMS - 1] {
        // A stream holds a quarter of a chunk's codes of at most 12 bits, and a chunk's
        // values are bounded by its decode budget: far below 2^32 bytes.
        stream.extend_from_slice(&(s.len() as u32).to_le_bytes());
    }
    streams.iter().for_each(|s| stream.extend_from_slice(s));
    let mut nibbles = vec![0u8; lengths.len().div_ceil(2)];
    for (s, &len) in lengths.iter().enumerate() {
        nibbles[s / 2] |= len << (4 * (s % 2));
    }
    let symbols = lengths.len() as u32;
    let lengths = sink.buffer(nibbles);
    let stream = sink.buffer(stream);
    sink.push_node(Huffman {
        base: min,
        symbols,
        lengths,
        stream,
    })
}

/// Optimal code lengths for `counts` (0 for absent symbols), none longer than `limit`:
/// Huffman's construction, repeated on halved counts while the longest code is too long
/// (halving flattens the tree; all counts equal give a balanced one, which fits because
/// the alphabet has at most 2^`limit` symbols). A single symbol gets a 1-bit code.
fn code_lengths(counts: &[u64], limit: u32) -> Vec<u8> {
    let mut weights: Vec<u64> = counts.to_vec();
    loop {
        let lengths = huffman_lengths(&weights);
        if lengths.iter().all(|&l| u32::from(l) <= limit) {
            return lengths;
        }
        for w in weights.iter_mut().filter(|w| **w > 0) {
            *w = w.div_ceil(2);
        }
    }
}

/// Unlimited Huffman code lengths: the two lightest trees merge until one is left; a
/// symbol's length is its depth.
fn huffman_lengths(weights: &[u64]) -> Vec<u8> {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    let mut lengths = vec![0u8; weights.len()];
    // Trees as (weight, id); ids below `weights.len()` are symbols, the rest merged nodes
    // whose children are recorded in `parent`.
    let mut heap: BinaryHeap<Reverse<(u64, usize)>> = weights
        .iter()
        .enumerate()
        .filter(|(_, w)| **w > 0)
        .map(|(s, &w)| Reverse((w, s)))
        .collect();
    if heap.len() == 1 {
        if let Some(Reverse((_, s))) = heap.pop() {
            lengths[s] = 1;
        }
        return lengths;
    }
    let mut parent: Vec<usize> = vec![usize::MAX; weights.len()];
    while heap.len() > 1 {
        let (Some(Reverse((wa, a))), Some(Reverse((wb, b)))) = (heap.pop(), heap.pop()) else {
            break;
        };
        let id = parent.len();
        parent.push(usize::MAX);
        parent[a] = id;
        parent[b] = id;
        heap.push(Reverse((wa + wb, id)));
    }
    // Parents come after their children, so depths fill in from the root down.
    let mut depth = vec![0u8; parent.len()];
    for id in (0..parent.len()).rev() {
        if parent[id] != usize::MAX {
            depth[id] = depth[parent[id]].saturating_add(1);
        }
    }
    for (s, &w) in weights.iter().enumerate() {
        if w > 0 {
            lengths[s] = depth[s];
        }
    }
    lengths
}

/// The canonical code of every symbol, bit-reversed so that its first bit is the lowest
/// (the stream is read least significant bit first). Codes of absent symbols are 0.
fn canonical_codes(lengths: &[u8]) -> Vec<u64> {
    let mut order: Vec<usize> = (0..lengths.len()).filter(|&s| lengths[s] > 0).collect();
    order.sort_by_key(|&s| (lengths[s], s));
    let mut codes = vec![0u64; lengths.len()];
    let (mut code, mut prev) = (0u64, 0u8);
    for s in order {
        code <<= lengths[s] - prev;
        prev = lengths[s];
        codes[s] = code.reverse_bits() >> (64 - u32::from(prev));
        code += 1;
    }
    codes
}

/// Appends codes to a byte stream, least significant bit first.
struct StreamWriter {
    bytes: Vec<u8>,
    acc: u64,
    filled: u32,
}

impl StreamWriter {
    fn with_capacity(bytes: usize) -> Self {
        Self {
            bytes: Vec::with_capacity(bytes),
            acc: 0,
            filled: 0,
        }
    }

    fn put(&mut self, code: u64, len: u32) {
        self.acc |= code << self.filled;
        self.filled += len;
        while self.filled >= 8 {
            self.bytes.push(self.acc as u8);
            self.acc >>= 8;
            self.filled -= 8;
        }
    }

    fn finish(mut self) -> Vec<u8> {
        if self.filled > 0 {
            self.bytes.push(self.acc as u8);
        }
        self.bytes
    }
}

/// The decode table of a code: indexed by the next `bits` stream bits, each entry is
/// `symbol << 8 | length` (length 0: no code starts with these bits).
struct DecodeTable {
    entries: Vec<u32>,
    bits: u32,
}

impl DecodeTable {
    /// Builds the table from the packed code lengths, refusing lengths that no prefix code
    /// has (more codes of some length than the shorter ones leave room for).
    fn new(nibbles: &[u8], symbols: u32) -> std::result::Result<Self, String> {
        let lengths: Vec<u8> = (0..symbols as usize)
            .map(|s| (nibbles[s / 2] >> (4 * (s % 2))) & 0xf)
            .collect();
        if let Some(s) = lengths.iter().position(|&l| u32::from(l) > MAX_LEN) {
            return Err(format!(
                "symbol {s} has a code of {} bits (at most {MAX_LEN})",
                lengths[s]
            ));
        }
        let bits = lengths.iter().copied().max().map_or(0, u32::from);
        if bits == 0 {
            return Err("no symbol has a code".to_string());
        }
        // Kraft: the codes must fit in the 2^bits leaves of a tree `bits` deep.
        let used: u64 = lengths
            .iter()
            .filter(|&&l| l > 0)
            .map(|&l| 1u64 << (bits - u32::from(l)))
            .sum();
        if used > 1u64 << bits {
            return Err("code lengths describe no prefix code".to_string());
        }
        let codes = canonical_codes(&lengths);
        let mut entries = vec![0u32; 1 << bits];
        for (s, (&len, &code)) in lengths.iter().zip(&codes).enumerate() {
            if len > 0 {
                let entry = (s as u32) << 8 | u32::from(len);
                for e in entries.iter_mut().skip(code as usize).step_by(1 << len) {
                    *e = entry;
                }
            }
        }
        Ok(Self { entries, bits })
    }
}

impl Huffman {
    /// All `count` values, checked against the stream's length and the code.
    fn decode_values(&self, ctx: &Ctx<'_>, id: NodeId, count: usize) -> Result<Vec<i64>> {
        let err = |what: String| corrupt(format!("node {id} (huffman): {what}"));
        if self.symbols == 0 || self.symbols > MAX_SYMBOLS {
            return Err(err(format!(
                "{} symbols (1 to {MAX_SYMBOLS})",
                self.symbols
            )));
        }
        // Symbols are below `self.symbols`, so no value overflows past this check.
        if self.base.checked_add(i64::from(self.symbols) - 1).is_none() {
            return Err(err(format!(
                "base {} + {} symbols overflows",
                self.base, self.symbols
            )));
        }
        let nibbles = ctx
            .bufs
            .get(self.lengths, (self.symbols as usize).div_ceil(2))?;
        let table = DecodeTable::new(nibbles, self.symbols).map_err(err)?;
        let buffer = ctx.bufs.get(self.stream, HEADER)?;
        // Bit offsets of the streams in the buffer: starts[k]..starts[k + 1].
        let mut starts = [0usize; STREAMS + 1];
        starts[0] = HEADER * 8;
        for k in 0..STREAMS - 1 {
            let len = buffer[4 * k..4 * k + 4]
                .try_into()
                .map(u32::from_le_bytes)
                .map_err(|_| err("stream header".to_string()))?;
            starts[k + 1] = starts[k].saturating_add((len as usize).saturating_mul(8));
        }
        starts[STREAMS] = buffer.len() * 8;
        if starts[STREAMS - 1] > starts[STREAMS] {
            return Err(err(format!(
                "stream lengths add up to {} bytes, past the buffer's {}",
                starts[STREAMS - 1] / 8,
                buffer.len()
            )));
        }
        // Every code takes at least one bit, so each stream bounds its count before
        // anything is allocated.
        for k in 0..STREAMS {
            let wanted = count / STREAMS + usize::from(k < count % STREAMS);
            let bits = starts[k + 1] - starts[k];
            if wanted > bits {
                return Err(err(format!(
                    "{wanted} values from stream {k} of {bits} bits"
                )));
            }
        }
        // Eight zero bytes past the end let every read take a whole word.
        let mut padded = Vec::with_capacity(buffer.len() + 8);
        padded.extend_from_slice(buffer);
        padded.extend_from_slice(&[0; 8]);
        let read = |pos: usize| -> u64 {
            let at = pos / 8;
            padded
                .get(at..at + 8)
                .and_then(|b| b.try_into().ok())
                .map_or(0, u64::from_le_bytes)
                >> (pos % 8)
        };
        let mask = (1u64 << table.bits) - 1;
        let mut out = vec![0i64; count];
        let mut pos: [usize; STREAMS] = std::array::from_fn(|k| starts[k]);
        let mut invalid = false;
        // Groups of PER_READ codes from each stream: one read per stream, the four
        // chains interleaved.
        const GROUP: usize = STREAMS * PER_READ;
        let mut groups = out.chunks_exact_mut(GROUP);
        for group in &mut groups {
            let mut words: [u64; STREAMS] = std::array::from_fn(|k| read(pos[k]));
            for j in 0..PER_READ {
                for k in 0..STREAMS {
                    let e = table.entries[(words[k] & mask) as usize];
                    let len = e & 0xff;
                    invalid |= len == 0;
                    group[j * STREAMS + k] = self.base + i64::from(e >> 8);
                    words[k] >>= len;
                    pos[k] += len as usize;
                }
            }
            // A stream read past its end stops here, before a read could leave the buffer.
            if invalid || (0..STREAMS).any(|k| pos[k] > starts[k + 1]) {
                break;
            }
        }
        for (i, v) in groups.into_remainder().iter_mut().enumerate() {
            let k = i % STREAMS;
            let e = table.entries[(read(pos[k]) & mask) as usize];
            invalid |= e & 0xff == 0;
            *v = self.base + i64::from(e >> 8);
            pos[k] += (e & 0xff) as usize;
        }
        if invalid {
            return Err(err("no code matches the stream".to_string()));
        }
        if let Some(k) = (0..STREAMS).find(|&k| pos[k] > starts[k + 1]) {
            return Err(err(format!(
                "stream {k} of {} bits ends before its last value",
                starts[k + 1] - starts[k]
            )));
        }
        Ok(out)
    }
}

impl Encoding for Huffman {
    const ID: u8 = 19;
    const NAME: &'static str = "huffman";
    const DOMAINS: &'static [Domain] = &[Domain::Int];

    fn label(&self) -> String {
        format!("huffman[{}]", self.symbols)
    }

    fn write(&self, w: &mut Writer) {
        w.zigzag(self.base);
        w.varint(u64::from(self.symbols));
        w.varint(u64::from(self.lengths));
        w.varint(u64::from(self.stream));
    }

    fn read(r: &mut Reader<'_>) -> Result<Self> {
        Ok(Self {
            base: r.zigzag("huffman base")?,
            symbols: r.varint_u32("huffman symbols")?,
            lengths: r.varint_u32("huffman lengths")?,
            stream: r.varint_u32("huffman stream")?,
        })
    }

    fn decode<V: Value>(
        &self,
        ctx: &Ctx<'_>,
        id: NodeId,
        count: usize,
        _depth: usize,
    ) -> Result<Option<Vec<V>>> {
        if V::DOMAIN != Domain::Int {
            return Ok(None);
        }
        Ok(V::from_ints(self.decode_values(ctx, id, count)?))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn round_trip(values: &[i64]) -> Vec<i64> {
        let mut sink = BufferSink::default();
        let root = encode(values, &mut sink, 2);
        sink.decode_with(|ctx| i64::decode(ctx, root, values.len(), 0))
            .unwrap()
    }

    /// Bits of the Huffman stream for `values`, by the definition (sum of count × length).
    fn entropy_bound_bits(values: &[i64]) -> f64 {
        let mut counts = std::collections::HashMap::new();
        for &v in values {
            *counts.entry(v).or_insert(0usize) += 1;
        }
        let n = values.len() as f64;
        counts
            .values()
            .map(|&c| -(c as f64) * (c as f64 / n).log2())
            .sum()
    }

    proptest! {
        /// Skewed draws (small symbols far more frequent), any base, any length.
        #[test]
        fn round_trips(base in -1_000_000_000i64..1_000_000_000, span in 1u32..5000,
                       draws in proptest::collection::vec((0u32..1000, 0u32..1000), 0..3000)) {
            let values: Vec<i64> = draws
                .iter()
                .map(|&(a, b)| base + i64::from((a * b / 1000) % span))
                .collect();
            prop_assert_eq!(round_trip(&values), values);
        }

        /// Lengths never exceed the limit and always form a prefix code, however skewed.
        #[test]
        fn lengths_are_limited(counts in proptest::collection::vec(0u64..1 << 40, 1..600)) {
            let lengths = code_lengths(&counts, 8.max(usize::BITS - counts.len().leading_zeros()));
            let kraft: f64 = lengths.iter().filter(|&&l| l > 0).map(|&l| 0.5f64.powi(i32::from(l))).sum();
            prop_assert!(kraft <= 1.0 + 1e-9);
            for (c, l) in counts.iter().zip(&lengths) {
                prop_assert_eq!(*c > 0, *l > 0);
            }
        }
    }

    #[test]
    fn codes_near_the_entropy() {
        // Geometric-like counts, as in visit counts: the code is within 3 % of the entropy
        // (plus the bit a 2-symbol alphabet can cost at most).
        let values: Vec<i64> = (0..20_000)
            .map(|i: i64| (i * 7919 % 1000 + 1).ilog2() as i64)
            .collect();
        let mut sink = BufferSink::default();
        encode(&values, &mut sink, 2);
        let bound = entropy_bound_bits(&values);
        let stored_bits = (sink.stored_size() * 8) as f64;
        assert!(
            stored_bits < bound * 1.03 + 64.0,
            "{stored_bits} vs {bound}"
        );
    }

    #[test]
    fn one_symbol_and_wide_ranges() {
        assert_eq!(round_trip(&[7; 100]), vec![7; 100]);
        // A range beyond the alphabet falls back to bit-packing.
        let wide = [0, i64::from(MAX_SYMBOLS), 5];
        let mut sink = BufferSink::default();
        let root = encode(&wide, &mut sink, 2);
        assert_eq!(sink.encoding().nodes[root as usize].name(), "for");
        assert_eq!(round_trip(&wide), wide);
    }

    fn decode_node(node: Huffman, bufs: &[&[u8]], count: usize) -> String {
        let enc = crate::tree::ColumnEncoding {
            validity: crate::tree::Validity::AllValid,
            nodes: vec![node.into()],
        };
        let ctx = Ctx::new(&enc, bufs);
        i64::decode(&ctx, 0, count, 0).unwrap_err().to_string()
    }

    /// A stream buffer holding `parts` as the four streams.
    fn streams(parts: [&[u8]; STREAMS]) -> Vec<u8> {
        let mut out = Vec::new();
        for p in &parts[..STREAMS - 1] {
            out.extend_from_slice(&(p.len() as u32).to_le_bytes());
        }
        parts.iter().for_each(|p| out.extend_from_slice(p));
        out
    }

    #[test]
    fn hostile_nodes_are_errors() {
        let node = |symbols| Huffman {
            base: 0,
            symbols,
            lengths: 0,
            stream: 1,
        };
        let ff = streams([&[0xff]; STREAMS]);
        // Three 1-bit codes: no prefix code.
        let e = decode_node(node(3), &[&[0x11, 0x01], &ff], 4);
        assert!(e.contains("no prefix code"), "{e}");
        // A code length beyond the limit.
        let e = decode_node(node(2), &[&[0xf1], &ff], 4);
        assert!(e.contains("at most 12"), "{e}");
        // More values than a stream has bits (9 in stream 0 of 8 bits).
        let e = decode_node(node(2), &[&[0x11], &ff], 33);
        assert!(e.contains("9 values from stream 0 of 8 bits"), "{e}");
        // An incomplete code: the bits `11` start no code, in the grouped loop and in the
        // remainder.
        for count in [2, 20] {
            let e = decode_node(node(2), &[&[0x22], &ff], count);
            assert!(e.contains("no code matches"), "{e}");
        }
        // A stream that ends early: 2-bit codes, 5 or 8 values in stream 1's 8 bits (the
        // others have room), caught in the remainder and in the grouped loop.
        let short = streams([&[0; 2], &[0], &[0; 2], &[0; 2]]);
        for count in [18, 32] {
            let e = decode_node(node(4), &[&[0x22, 0x22], &short], count);
            assert!(e.contains("stream 1 of 8 bits ends"), "{count}: {e}");
        }
        let overrun = streams([&[0; 4], &[0; 4], &[0; 4], &[]]);
        let e = decode_node(node(4), &[&[0x22, 0x22], &overrun], 16);
        assert!(e.contains("from stream 3 of 0 bits"), "{e}");
        // Stream lengths past the buffer, a header cut short.
        let mut long = streams([&[0]; STREAMS]);
        long[0] = 200;
        let e = decode_node(node(2), &[&[0x11], &long], 4);
        assert!(e.contains("past the buffer"), "{e}");
        assert!(decode_node(node(2), &[&[0x11], &[0; 5]], 1).contains("holds 5 bytes, 12 needed"));
        // Alphabets out of range, and lengths missing.
        assert!(decode_node(node(0), &[&[], &ff], 1).contains("0 symbols"));
        assert!(decode_node(node(5000), &[&[0x11], &ff], 1).contains("5000 symbols"));
        assert!(decode_node(node(4), &[&[0x11], &ff], 1).contains("holds 1 bytes, 2 needed"));
    }
}
