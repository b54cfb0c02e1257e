//! FSST string compression (Boncz, Neumann, Leis, VLDB 2020).
//!
//! Training and compression come from the `fsst-rs` crate; decompression is our own loop
//! (see `decompress` for why).
//!
//! An `Fsst { symbols, lengths, data }` node stores:
//! - `symbols`: the symbol table, one buffer starting with `n: u8` (`n ≤ 255` because code
//!   255 is the escape; code `c < n` stands for symbol `c`), in one of two layouts told
//!   apart by the buffer's size:
//!   - *wide*, exactly `1 + 9n` bytes: `n` symbols as `u64` little-endian (symbol byte `j`
//!     is byte `j` of the word; bytes past the symbol's length are zero), then `n` lengths
//!     as `u8`, each `1..=8`;
//!   - *packed*, any other size: `n` lengths as `u8`, each `1..=8`, then the symbols' bytes
//!     one after another, `1 + n + Σ lengths` bytes in all.
//!
//!   The writer packs the table unless every symbol is 8 bytes long (then both layouts
//!   take `1 + 9n` bytes, and it writes the wide one). Packing saves most of the table on
//!   small inputs, where short symbols are common and the table is a large part of the
//!   column (a few dozen sentences: a third of what the column stores).
//! - `lengths`: an integer node with the compressed length of each string, in bytes.
//! - `data`: one buffer with the compressed strings concatenated. In a compressed string,
//!   byte 255 (escape) means "the next byte, literally"; any other byte is a symbol code.

use ::fsst::{Compressor, ESCAPE_CODE};

use serde::{Deserialize, Serialize};
use sift_bits::Bitmap;

use crate::byte_values::{ByteValues, MAX_CHUNK_BYTES, decode_offsets};
use crate::domain::{Domain, Value};
use crate::encoding::Encoding;
use crate::error::{Result, corrupt};
use crate::predicate::{BytesMatcher, BytesShape};
use crate::tree::{BufferSink, Ctx, NodeId};
use crate::wire::{Reader, Writer};

/// FSST-compressed strings: a symbol table (buffer `symbols`), compressed lengths (child
/// `lengths`) and the compressed bytes (buffer `data`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fsst {
    /// The buffer holding the symbol table.
    pub symbols: u32,
    /// The compressed length of every string.
    pub lengths: NodeId,
    /// The buffer holding the compressed strings.
    pub data: u32,
}

/// Most symbols a table holds (code 255 is the escape).
const MAX_SYMBOLS: usize = 255;

/// Bytes one code can write: the decoder stores whole 8-byte symbols and then advances by
/// the symbol's length, so the output needs this much slack past its last byte.
const SYMBOL_BYTES: usize = 8;

/// Compresses strings with a symbol table trained on them.
///
/// Training (`fsst-rs` 0.7) is deterministic: its sample is drawn with a fixed-seed hash,
/// and candidate symbols are ranked with a content tie-breaker, so the same input always
/// gives the same bytes.
pub(crate) fn encode(values: &[&[u8]], sink: &mut BufferSink, depth: u8) -> NodeId {
    let id = sink.reserve_node();
    let compressor = Compressor::train(&values.to_vec());
    let mut data = Vec::new();
    let mut ends = Vec::with_capacity(values.len());
    compressor
        .compress_bulk_into::<{ Compressor::DEFAULT_BULK_LANES }>(values, &mut data, &mut ends);
    let mut start = 0u64;
    let lens: Vec<i64> = ends
        .iter()
        .map(|&end| {
            let len = end - start;
            start = end;
            len as i64
        })
        .collect();
    let symbols = sink.buffer(write_table(
        compressor.symbol_table(),
        compressor.symbol_lengths(),
    ));
    let lengths = i64::encode(&lens, sink, depth.saturating_sub(1));
    let data = sink.buffer(data);
    sink.set_node(
        id,
        Fsst {
            symbols,
            lengths,
            data,
        },
    );
    id
}

/// Serializes a symbol table in the layouts described in the module documentation: packed,
/// unless every symbol is 8 bytes long.
fn write_table(symbols: &[::fsst::Symbol], lengths: &[u8]) -> Vec<u8> {
    let n = symbols.len().min(lengths.len()).min(MAX_SYMBOLS);
    let lengths = &lengths[..n];
    let words = symbols
        .iter()
        .zip(lengths)
        .map(|(s, &len)| mask(s.to_u64(), len));
    let mut out = Vec::with_capacity(1 + 9 * n);
    out.push(n as u8);
    if lengths.iter().all(|&len| len >= 8) {
        words.for_each(|w| out.extend_from_slice(&w.to_le_bytes()));
        out.extend_from_slice(lengths);
    } else {
        out.extend_from_slice(lengths);
        for (w, &len) in words.zip(lengths) {
            out.extend_from_slice(&w.to_le_bytes()[..usize::from(len.min(8))]);
        }
    }
    out
}

/// The low `len` bytes of `word` (all of it for `len >= 8`).
fn mask(word: u64, len: u8) -> u64 {
    match len {
        0 => 0,
        1..=7 => word & ((1u64 << (8 * u32::from(len))) - 1),
        _ => word,
    }
}

/// A parsed symbol table, indexed by code. Unused codes (and the escape) have length 0.
struct SymbolTable {
    symbols: [u64; 256],
    lengths: [u8; 256],
}

impl SymbolTable {
    /// Parses and validates a serialized table.
    fn parse(bytes: &[u8]) -> std::result::Result<Self, String> {
        let (&n, rest) = bytes.split_first().ok_or("empty symbol table buffer")?;
        let n = usize::from(n);
        if n > MAX_SYMBOLS {
            return Err(format!("{n} symbols (at most {MAX_SYMBOLS})"));
        }
        let mut table = SymbolTable {
            symbols: [0; 256],
            lengths: [0; 256],
        };
        let mut set = |code: usize, symbol: &[u8], len: u8| {
            let mut w = [0u8; 8];
            w[..symbol.len()].copy_from_slice(symbol);
            table.symbols[code] = mask(u64::from_le_bytes(w), len);
            table.lengths[code] = len;
        };
        let wide = rest.len() == 9 * n;
        let lens = if wide {
            &rest[8 * n..]
        } else {
            rest.get(..n).ok_or_else(|| {
                format!(
                    "symbol table of {n} symbols holds {} bytes, too few for their lengths",
                    bytes.len()
                )
            })?
        };
        if let Some(code) = lens.iter().position(|len| !(1..=8).contains(len)) {
            return Err(format!("symbol {code} has length {}", lens[code]));
        }
        if wide {
            for (code, (word, &len)) in rest.chunks_exact(8).zip(lens).enumerate() {
                set(code, word, len);
            }
        } else {
            let packed = &rest[n..];
            let total: usize = lens.iter().map(|&l| usize::from(l)).sum();
            if packed.len() != total {
                return Err(format!(
                    "symbol table of {n} symbols holds {} bytes, {} (packed) or {} (wide) expected",
                    bytes.len(),
                    1 + n + total,
                    1 + 9 * n
                ));
            }
            let mut at = 0;
            for (code, &len) in lens.iter().enumerate() {
                let end = at + usize::from(len);
                set(code, &packed[at..end], len);
                at = end;
            }
        }
        Ok(table)
    }
}

impl Fsst {
    /// The symbol table, compressed bytes and per-string code offsets.
    fn parts<'a>(
        &self,
        ctx: &Ctx<'a>,
        id: NodeId,
        count: usize,
        depth: usize,
    ) -> Result<(SymbolTable, &'a [u8], Vec<u32>)> {
        let table = SymbolTable::parse(ctx.bufs.get(self.symbols, 0)?)
            .map_err(|e| corrupt(format!("node {id}: FSST {e}")))?;
        let data = ctx.bufs.get(self.data, 0)?;
        let offsets = decode_offsets(ctx, id, self.lengths, count, data.len(), depth)?;
        Ok((table, data, offsets))
    }
}

impl Encoding for Fsst {
    const ID: u8 = 11;
    const NAME: &'static str = "fsst";
    const DOMAINS: &'static [Domain] = &[Domain::Bytes];
    const FILTERS_ENCODED: bool = true;

    fn write(&self, w: &mut Writer) {
        w.varint(u64::from(self.symbols));
        w.varint(u64::from(self.lengths));
        w.varint(u64::from(self.data));
    }

    fn read(r: &mut Reader<'_>) -> Result<Self> {
        Ok(Self {
            symbols: r.varint_u32("fsst symbols")?,
            lengths: r.varint_u32("fsst lengths")?,
            data: r.varint_u32("fsst data")?,
        })
    }

    fn children(&self) -> Vec<NodeId> {
        vec![self.lengths]
    }

    fn decode_bytes(
        &self,
        ctx: &Ctx<'_>,
        id: NodeId,
        count: usize,
        depth: usize,
    ) -> Result<Option<ByteValues>> {
        let (table, data, offsets) = self.parts(ctx, id, count, depth)?;
        decompress(&table, data, &offsets, ctx.budget)
            .map(Some)
            .map_err(|e| corrupt(format!("node {id}: FSST {e}")))
    }

    /// Only the selected strings, each decompressed on its own from its codes (the
    /// string offsets come from the child, decoded whole: they are small integers). Used
    /// when at most a quarter of the strings are selected; above that, the streaming
    /// decoder over all of them is faster than a loop over strings.
    fn select_bytes(
        &self,
        ctx: &Ctx<'_>,
        id: NodeId,
        count: usize,
        depth: usize,
        sel: &Bitmap,
    ) -> Result<Option<ByteValues>> {
        let n = sel.count_ones();
        if n.saturating_mul(4) > count {
            return Ok(None);
        }
        let (table, data, offsets) = self.parts(ctx, id, count, depth)?;
        let err = |e: String| corrupt(format!("node {id}: FSST {e}"));
        let budget = ctx.budget.min(MAX_CHUNK_BYTES);
        let mut out = Vec::new();
        let mut out_offsets = Vec::with_capacity(n + 1);
        out_offsets.push(0u32);
        for i in sel.iter_ones() {
            let (Some(&from), Some(&to)) = (offsets.get(i), offsets.get(i + 1)) else {
                return Err(err(format!("string {i} of {count} selected")));
            };
            let codes = data
                .get(from as usize..to as usize)
                .ok_or_else(|| err("string boundaries out of order".into()))?;
            decode_until(&table, codes, 0, usize::MAX, &mut out).map_err(err)?;
            if out.len() > budget {
                return Err(err(format!(
                    "strings decompress to more than the chunk's decode limit of {budget} bytes"
                )));
            }
            out_offsets.push(out.len() as u32);
        }
        Ok(Some(ByteValues {
            offsets: out_offsets,
            data: out,
            utf8_checked: false,
        }))
    }

    /// The strings that `m` accepts, deciding those outside `shape` from their codes
    /// alone: for [`BytesShape::OneOf`] by the decoded length (a sum of symbol lengths;
    /// nothing is written), for [`BytesShape::Prefix`] by decompressing only the symbols
    /// that cover the prefix. Only strings inside the shape are decompressed whole and
    /// passed to the matcher.
    fn filter_bytes(
        &self,
        ctx: &Ctx<'_>,
        id: NodeId,
        count: usize,
        depth: usize,
        m: &BytesMatcher,
        shape: &BytesShape,
    ) -> Result<Option<Bitmap>> {
        if matches!(shape, BytesShape::Any) {
            return Ok(None);
        }
        let (table, data, offsets) = self.parts(ctx, id, count, depth)?;
        let err = |e: String| corrupt(format!("node {id}: FSST {e}"));
        let mut words = vec![0u64; count.div_ceil(64)];
        let mut text = Vec::new();
        for (i, w) in offsets.windows(2).enumerate() {
            let codes = data
                .get(w[0] as usize..w[1] as usize)
                .ok_or_else(|| err("string boundaries out of order".into()))?;
            let (inside, outside) = match shape {
                BytesShape::OneOf { values, outside } => {
                    let n = decoded_len(&table, codes).map_err(err)?;
                    (values.iter().any(|v| v.len() == n), *outside)
                }
                BytesShape::Prefix { prefix, outside } => {
                    (starts_with(&table, codes, prefix).map_err(err)?, *outside)
                }
                BytesShape::Any => (true, false),
            };
            let verdict = if inside {
                text.clear();
                decode_until(&table, codes, 0, usize::MAX, &mut text).map_err(err)?;
                m(&text)
            } else {
                outside
            };
            if verdict {
                words[i / 64] |= 1 << (i % 64);
            }
        }
        Bitmap::from_words(words, count)
            .ok_or_else(|| corrupt("string bitmap"))
            .map(Some)
    }
}

/// The decoded length of one string's codes, without decoding them.
fn decoded_len(table: &SymbolTable, codes: &[u8]) -> std::result::Result<usize, String> {
    let (mut n, mut k) = (0usize, 0usize);
    while let Some(&c) = codes.get(k) {
        if c == ESCAPE_CODE {
            if k + 1 >= codes.len() {
                return Err("escape at the end of a string".into());
            }
            n += 1;
            k += 2;
        } else {
            match table.lengths[usize::from(c)] {
                0 => return Err(format!("code {c} has no symbol")),
                l => n += usize::from(l),
            }
            k += 1;
        }
    }
    Ok(n)
}

/// Whether one string's codes decode to something starting with `prefix`, decoding only
/// the symbols that cover it (into a stack buffer, for prefixes up to 64 bytes).
fn starts_with(
    table: &SymbolTable,
    codes: &[u8],
    prefix: &[u8],
) -> std::result::Result<bool, String> {
    const CAP: usize = 64;
    if prefix.len() > CAP {
        let mut text = Vec::new();
        decode_until(table, codes, 0, prefix.len(), &mut text)?;
        return Ok(text.starts_with(prefix));
    }
    let mut buf = [0u8; CAP + SYMBOL_BYTES];
    let (mut o, mut k) = (0usize, 0usize);
    while o < prefix.len()
        && let Some(&c) = codes.get(k)
    {
        if c == ESCAPE_CODE {
            buf[o] = *codes.get(k + 1).ok_or("escape at the end of a string")?;
            o += 1;
            k += 2;
        } else {
            let len = usize::from(table.lengths[usize::from(c)]);
            if len == 0 {
                return Err(format!("code {c} has no symbol"));
            }
            // o < prefix.len() <= CAP, so the 8-byte store fits.
            buf[o..o + SYMBOL_BYTES].copy_from_slice(&table.symbols[usize::from(c)].to_le_bytes());
            o += len;
            k += 1;
        }
    }
    Ok(o >= prefix.len() && buf[..prefix.len()] == *prefix)
}

/// Appends the symbols of `codes[from..]` to `out` until it holds at least `want` bytes
/// or the codes end; returns the index of the first code not decoded.
fn decode_until(
    table: &SymbolTable,
    codes: &[u8],
    from: usize,
    want: usize,
    out: &mut Vec<u8>,
) -> std::result::Result<usize, String> {
    let mut k = from;
    while out.len() < want
        && let Some(&c) = codes.get(k)
    {
        if c == ESCAPE_CODE {
            out.push(*codes.get(k + 1).ok_or("escape at the end of a string")?);
            k += 2;
        } else {
            let len = usize::from(table.lengths[usize::from(c)]);
            if len == 0 {
                return Err(format!("code {c} has no symbol"));
            }
            // The whole 8-byte symbol, then cut to its length: a fixed-size copy, not a
            // memcpy call per symbol.
            let end = out.len() + len;
            out.extend_from_slice(&table.symbols[usize::from(c)].to_le_bytes());
            out.truncate(end);
            k += 1;
        }
    }
    Ok(k)
}

/// Decompresses the strings `data[offsets[i]..offsets[i + 1]]` (`offsets` starting at 0,
/// as [`decode_offsets`] makes them) in one pass over `data`.
///
/// Not `fsst::Decompressor`: it asserts (panics) on an escape at the end of its input, and
/// its unchecked symbol lookups and capacity-based pointer writes trust the table, while
/// here the table, the codes and the boundaries all come from the file. Here the output
/// room is checked once per [`STREAM_CHUNK`] codes, an escape at a string's end and a code
/// without a symbol are errors, and offsets out of order are an error.
///
/// Speed: the codes of all strings are decoded as one stream, with no per-string loop
/// (whose exit, at a different code count for every string, is a branch the predictor
/// misses once per string). The output position before each code is recorded instead, and
/// a string's output offset is the position recorded at its first code. Each symbol is
/// stored whole (8 bytes) before the output advances by its length, so there are no
/// variable-length copies; the bytes past a symbol's length are overwritten by the next
/// symbol or cut off at the end. Escapes are the one (rare, predictable) branch per code.
///
/// The output never grows past `budget` (the chunk's decode budget, at most
/// `MAX_CHUNK_BYTES`); a valid chunk stays far below it, since FSST expands at most 8×.
fn decompress(
    table: &SymbolTable,
    data: &[u8],
    offsets: &[u32],
    budget: usize,
) -> std::result::Result<ByteValues, String> {
    let end = offsets.last().copied().unwrap_or(0) as usize;
    let codes = data.get(..end).ok_or("string ends past the data")?;
    let n = codes.len();
    // The output position before each code, `NOT_A_CODE` at an escape's literal byte, and
    // the final position last.
    const NOT_A_CODE: u32 = u32::MAX;
    // Both buffers are written through pointers into their spare capacity (pushes would
    // keep `len` in memory: a store through a byte pointer may alias it).
    let mut starts: Vec<u32> = Vec::with_capacity(n + 1);
    let at = starts.as_mut_ptr();
    let budget = budget.min(MAX_CHUNK_BYTES);
    let mut out: Vec<u8> =
        Vec::with_capacity(estimate_output(table, codes).min(budget) + BLOCK_SLACK);
    let (mut k, mut o) = (0usize, 0usize);
    while k < n {
        let chunk_end = (k + STREAM_CHUNK).min(n);
        // 8 bytes per code of the chunk, one more code for an escape pair crossing its end,
        // and the last symbol's overshoot. Below the budget, at most MAX_CHUNK_BYTES
        // (= u32::MAX), so every position fits a u32 and none equals NOT_A_CODE.
        let need = o + (chunk_end - k + 1) * SYMBOL_BYTES + BLOCK_SLACK;
        if need > budget {
            return Err(format!(
                "strings decompress to more than the chunk's decode limit of {budget} bytes"
            ));
        }
        if need > out.capacity() {
            out.reserve(need.max(out.capacity().saturating_mul(2)).min(budget));
        }
        let dst = out.as_mut_ptr();
        while k < chunk_end {
            let c = codes[k];
            // SAFETY: `k < n` and `starts` has room for `n + 1`.
            unsafe { at.add(k).write(o as u32) };
            if c == ESCAPE_CODE {
                let &byte = codes.get(k + 1).ok_or("escape at the end of a string")?;
                // SAFETY: `k + 1 < n` (just read), `o < need <= out.capacity()` (see the
                // symbol store below).
                unsafe {
                    at.add(k + 1).write(NOT_A_CODE);
                    dst.add(o).write(byte);
                }
                o += 1;
                k += 2;
            } else {
                let len = table.lengths[usize::from(c)];
                if len == 0 {
                    // A branch never taken in a valid file (a flag OR-ed per code instead
                    // made a loop-carried dependency).
                    return Err(format!("code {c} has no symbol"));
                }
                // SAFETY: each code of this chunk so far advanced `o` by at most 8, and at
                // most one more code than the chunk holds runs in it (an escape pair may
                // cross its end), so `o + 8 <= need - BLOCK_SLACK <= out.capacity()`: the
                // unaligned 8-byte store is inside the allocation.
                unsafe {
                    dst.add(o)
                        .cast::<u64>()
                        .write_unaligned(table.symbols[usize::from(c)].to_le())
                };
                o += usize::from(len);
                k += 1;
            }
        }
    }
    // SAFETY: every index below `n` was written, as a code's start or as the byte after an
    // escape (the loop visits each index or steps over it from an escape), and `n` here.
    unsafe {
        at.add(n).write(o as u32);
        starts.set_len(n + 1);
    }
    // SAFETY: every byte below `o` was written: each symbol store covers `o..o + 8`, which
    // contains `o..o + len`, and each escape wrote its byte at `o`.
    unsafe { out.set_len(o) };
    // The buffer becomes the Arrow array's: give back room a low size estimate left over.
    if out.capacity() > o + o / 4 + BLOCK_SLACK {
        out.shrink_to_fit();
    }
    let mut out_offsets = Vec::with_capacity(offsets.len());
    let mut prev = 0u32;
    for &b in offsets {
        if b < prev {
            return Err("string boundaries out of order".into());
        }
        prev = b;
        // `b <= end = n`, and `starts` has `n + 1` entries.
        match starts[b as usize] {
            NOT_A_CODE => return Err("escape at the end of a string".into()),
            s => out_offsets.push(s),
        }
    }
    Ok(ByteValues {
        offsets: out_offsets,
        data: out,
        utf8_checked: false,
    })
}

/// Codes decoded between checks of the output's room in [`decompress`].
const STREAM_CHUNK: usize = 4096;

/// A guess at the decompressed size, from the symbol lengths of the first codes (escapes
/// counted as 1), so that the output rarely has to grow.
fn estimate_output(table: &SymbolTable, data: &[u8]) -> usize {
    const PROBE: usize = 4096;
    let probe = &data[..data.len().min(PROBE)];
    let probed: usize = probe
        .iter()
        .map(|&c| usize::from(table.lengths[usize::from(c)].max(1)))
        .sum();
    let per_code = probed as f64 / probe.len().max(1) as f64;
    ((data.len() as f64 * per_code * 1.05) as usize).min(MAX_CHUNK_BYTES)
}

/// Output room kept past the bytes a string's codes can produce (each code stores 8 bytes).
const BLOCK_SLACK: usize = SYMBOL_BYTES;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Node;
    use crate::domain::Strings;
    use crate::tree::BufferSink;
    use proptest::prelude::*;

    fn ctx_decode(
        sink: &BufferSink,
        root: NodeId,
        n: usize,
        fsst_only: bool,
    ) -> Result<ByteValues> {
        sink.decode_with(|ctx| {
            if fsst_only && !matches!(ctx.node(root, 0)?, Node::Fsst(_)) {
                return Err(corrupt(format!("node {root} is not an FSST node")));
            }
            Strings::decode(ctx, root, n, 0)
        })
    }

    fn check(values: &[Vec<u8>], out: &ByteValues) -> std::result::Result<(), TestCaseError> {
        prop_assert_eq!(out.offsets.len(), values.len() + 1);
        for (i, v) in values.iter().enumerate() {
            prop_assert_eq!(out.value(i), v.as_slice());
        }
        Ok(())
    }

    /// Round trip through the scheme choice; returns the sink.
    fn via_bytes(values: &[Vec<u8>]) -> std::result::Result<BufferSink, TestCaseError> {
        let refs: Vec<&[u8]> = values.iter().map(Vec::as_slice).collect();
        let mut sink = BufferSink::default();
        let root = Strings::encode(&refs, None, &mut sink, 3);
        prop_assert_eq!(root, 0);
        let out = ctx_decode(&sink, 0, values.len(), false)
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        check(values, &out)?;
        Ok(sink)
    }

    /// Round trip through `fsst::encode`/`decode` directly.
    fn direct(values: &[Vec<u8>]) -> std::result::Result<BufferSink, TestCaseError> {
        let refs: Vec<&[u8]> = values.iter().map(Vec::as_slice).collect();
        let mut sink = BufferSink::default();
        let root = encode(&refs, &mut sink, 3);
        prop_assert_eq!(root, 0);
        prop_assert!(
            matches!(sink.nodes[0], Node::Fsst(crate::encodings::Fsst { .. })),
            "root is not fsst"
        );
        let out = ctx_decode(&sink, 0, values.len(), true)
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        check(values, &out)?;
        Ok(sink)
    }

    const WORDS: &[&str] = &[
        "furiously",
        "carefully",
        "quickly",
        "slyly",
        "blithely",
        "final",
        "regular",
        "express",
        "ironic",
        "pending",
        "special",
        "bold",
        "even",
        "silent",
        "deposits",
        "packages",
        "requests",
        "accounts",
        "theodolites",
        "instructions",
        "foxes",
        "pinto",
        "beans",
        "ideas",
        "among",
        "across",
        "after",
        "above",
        "the",
        "sleep",
        "haggle",
        "nag",
        "wake",
        "use",
    ];

    /// TPC-H-comment-like text: 3..10 words from a small vocabulary.
    fn comments(seeds: &[u64]) -> Vec<Vec<u8>> {
        seeds
            .iter()
            .map(|&s| {
                let mut x = s | 1;
                let n = 3 + (x % 8) as usize;
                let mut words = Vec::with_capacity(n);
                for _ in 0..n {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    words.push(WORDS[(x % WORDS.len() as u64) as usize]);
                }
                words.join(" ").into_bytes()
            })
            .collect()
    }

    fn strings(max_len: usize) -> impl Strategy<Value = Vec<Vec<u8>>> {
        proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..max_len), 0..300)
    }

    proptest! {
        #[test]
        fn random_bytes(values in strings(40)) {
            via_bytes(&values)?;
            direct(&values)?;
        }

        #[test]
        fn escapes_and_empties(values in proptest::collection::vec(
            proptest::collection::vec(prop_oneof![Just(255u8), Just(0u8), Just(b'a'), any::<u8>()], 0..20), 0..200)) {
            via_bytes(&values)?;
            direct(&values)?;
        }

        #[test]
        fn comment_text(seeds in proptest::collection::vec(any::<u64>(), 1000..3000)) {
            let values = comments(&seeds);
            let sink = via_bytes(&values)?;
            let fsst_chosen = match &sink.nodes[0] {
                Node::Fsst(crate::encodings::Fsst { .. }) => true,
                Node::Dict(crate::encodings::Dict { values, .. }) => matches!(sink.nodes[*values as usize], Node::Fsst(crate::encodings::Fsst { .. })),
                _ => false,
            };
            prop_assert!(fsst_chosen, "root {:?}", sink.nodes[0]);
            let raw: usize = values.iter().map(Vec::len).sum();
            prop_assert!(sink.stored_size() * 2 <= raw, "{} stored for {raw} raw", sink.stored_size());
            direct(&values)?;
        }

        #[test]
        fn deterministic(seeds in proptest::collection::vec(any::<u64>(), 0..500)) {
            let values = comments(&seeds);
            let a = direct(&values)?;
            let b = direct(&values)?;
            prop_assert_eq!(a.buffers, b.buffers);
            prop_assert_eq!(a.nodes, b.nodes);
        }
    }

    #[test]
    fn long_strings() {
        let long: Vec<u8> = comments(&(0..20_000).collect::<Vec<u64>>()).join(&b' ');
        assert!(long.len() > 3 * 65536);
        let noise: Vec<u8> = (0..70_000u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
            .collect();
        let values = vec![
            long.clone(),
            Vec::new(),
            noise,
            long[..65_537].to_vec(),
            b"x".to_vec(),
        ];
        assert!(via_bytes(&values).is_ok());
        assert!(direct(&values).is_ok());
    }

    #[test]
    fn empty_input() {
        let mut sink = BufferSink::default();
        assert_eq!(encode(&[], &mut sink, 3), 0);
        assert_eq!(sink.buffers[0], vec![0u8]);
        let out = ctx_decode(&sink, 0, 0, true).map_err(|e| e.to_string());
        assert_eq!(
            out,
            Ok(ByteValues {
                offsets: vec![0],
                data: vec![],
                utf8_checked: false,
            })
        );
        assert!(direct(&[Vec::new(), Vec::new()]).is_ok());
    }

    /// An Fsst node with the given table, one string of `data`, and plain lengths.
    fn hostile(table: Vec<u8>, lens: &[i64], data: Vec<u8>) -> Result<ByteValues> {
        let mut sink = BufferSink::default();
        let id = sink.reserve_node();
        let symbols = sink.buffer(table);
        let lengths = crate::encodings::frame::encode_ints(lens, &mut sink, 1);
        let data = sink.buffer(data);
        sink.set_node(
            id,
            Node::Fsst(crate::encodings::Fsst {
                symbols,
                lengths,
                data,
            }),
        );
        ctx_decode(&sink, 0, lens.len(), false)
    }

    /// A table with symbols "ab" (code 0) and "c" (code 1).
    fn good_table() -> Vec<u8> {
        let mut t = vec![2u8];
        t.extend_from_slice(&u64::from_le_bytes(*b"ab\0\0\0\0\0\0").to_le_bytes());
        t.extend_from_slice(&u64::from(b'c').to_le_bytes());
        t.extend_from_slice(&[2, 1]);
        t
    }

    /// The same table packed: lengths first, then the symbols' bytes.
    fn packed_table() -> Vec<u8> {
        vec![2, 2, 1, b'a', b'b', b'c']
    }

    #[test]
    #[allow(clippy::unwrap_used)]
    fn both_table_layouts_decode_alike() {
        let wide = hostile(good_table(), &[3, 0, 1], vec![0, 255, b'z', 1]).unwrap();
        let packed = hostile(packed_table(), &[3, 0, 1], vec![0, 255, b'z', 1]).unwrap();
        assert_eq!(wide, packed);
        // The writer packs short symbols, and keeps 8-byte ones wide (the same size).
        let symbols = [
            ::fsst::Symbol::from_slice(b"ab\0\0\0\0\0\0"),
            ::fsst::Symbol::from_u8(b'c'),
        ];
        assert_eq!(write_table(&symbols, &[2, 1]), packed_table());
        let eight = [::fsst::Symbol::from_slice(b"abcdefgh")];
        let wide = write_table(&eight, &[8]);
        assert_eq!(wide.len(), 10);
        assert_eq!(&wide[1..9], b"abcdefgh");
        // A packed table whose bytes do not add up to its lengths.
        for bad in [
            vec![2, 2, 1, b'a', b'b'],
            vec![2, 2, 1, b'a', b'b', b'c', b'd'],
            vec![2, 2],
        ] {
            let e = hostile(bad, &[1], vec![0]).unwrap_err().to_string();
            assert!(e.contains("symbol table of 2 symbols"), "{e}");
        }
    }

    #[test]
    fn hand_built_node_decodes() {
        let out =
            hostile(good_table(), &[3, 0, 1], vec![0, 255, b'z', 1]).map_err(|e| e.to_string());
        assert_eq!(
            out,
            Ok(ByteValues {
                offsets: vec![0, 3, 3, 4],
                data: b"abzc".to_vec(),
                utf8_checked: false,
            })
        );
    }

    #[test]
    fn hostile_nodes_are_errors() {
        let mut truncated = good_table();
        truncated.pop();
        assert!(hostile(truncated, &[1], vec![0]).is_err());
        assert!(hostile(Vec::new(), &[1], vec![0]).is_err());
        let mut long = good_table();
        long.push(0);
        assert!(hostile(long, &[1], vec![0]).is_err());
        for bad_len in [0u8, 9, 255] {
            let mut t = good_table();
            t[17] = bad_len;
            assert!(hostile(t, &[1], vec![0]).is_err(), "length {bad_len}");
        }
        // Escape as the last byte of a string, also when another string follows; codes
        // beyond the symbol count. The messages name what is wrong.
        for (lens, data, message) in [
            (&[2][..], vec![0, 255], "escape at the end of a string"),
            (
                &[2, 1][..],
                vec![0, 255, b'z'],
                "escape at the end of a string",
            ),
            (&[1][..], vec![2], "code 2 has no symbol"),
            (&[1][..], vec![254], "code 254 has no symbol"),
        ] {
            let got = hostile(good_table(), lens, data).map_err(|e| e.to_string());
            assert!(got.as_ref().is_err_and(|e| e.contains(message)), "{got:?}");
        }
        // Lengths past the data, and a missing data buffer.
        assert!(hostile(good_table(), &[2, 2], vec![0, 0, 0]).is_err());
        let mut sink = BufferSink::default();
        let id = sink.reserve_node();
        let symbols = sink.buffer(good_table());
        let lengths = crate::encodings::frame::encode_ints(&[1], &mut sink, 1);
        sink.set_node(
            id,
            Node::Fsst(crate::encodings::Fsst {
                symbols,
                lengths,
                data: 7,
            }),
        );
        assert!(ctx_decode(&sink, 0, 1, false).is_err());
        // Lengths node pointing back at the root.
        let mut sink = BufferSink::default();
        let symbols = sink.buffer(good_table());
        let data = sink.buffer(vec![0]);
        sink.push_node(Node::Fsst(crate::encodings::Fsst {
            symbols,
            lengths: 0,
            data,
        }));
        assert!(ctx_decode(&sink, 0, 1, false).is_err());
    }

    /// Decodes each string alone with `decode_until` (the scalar reference of `decompress`).
    fn per_string(
        table: &SymbolTable,
        data: &[u8],
        offsets: &[u32],
    ) -> std::result::Result<ByteValues, String> {
        let mut out = ByteValues {
            offsets: vec![0],
            ..ByteValues::default()
        };
        for w in offsets.windows(2) {
            decode_until(
                table,
                &data[w[0] as usize..w[1] as usize],
                0,
                usize::MAX,
                &mut out.data,
            )?;
            out.offsets.push(out.data.len() as u32);
        }
        Ok(out)
    }

    proptest! {
        /// The one-stream decoder equals decoding each string alone, errors included:
        /// random tables, codes (escapes, unknown codes, escapes at string ends) and
        /// boundaries, also across more than one room check (`STREAM_CHUNK`).
        #[test]
        fn stream_decode_equals_per_string(
            syms in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 1..=8), 1..12),
            // Symbols of the table (`c % syms.len()` below), escapes, and about once in
            // 10,000 codes 254, a code with no symbol.
            codes in proptest::collection::vec(prop_oneof![9000 => 0u8..254, 1000 => Just(255u8), 1 => Just(254u8)], 0..9000),
            mut cuts in proptest::collection::vec(any::<proptest::sample::Index>(), 0..60),
        ) {
            let mut table = SymbolTable { symbols: [0; 256], lengths: [0; 256] };
            for (c, sym) in syms.iter().enumerate() {
                let mut w = [0u8; 8];
                w[..sym.len()].copy_from_slice(sym);
                table.symbols[c] = u64::from_le_bytes(w);
                table.lengths[c] = sym.len() as u8;
            }
            let nsym = syms.len() as u8;
            let codes: Vec<u8> = codes.iter().map(|&c| if c < 254 { c % nsym } else { c }).collect();
            let mut offsets: Vec<u32> = cuts.iter_mut().map(|i| i.index(codes.len() + 1) as u32).collect();
            offsets.extend([0, codes.len() as u32]);
            offsets.sort_unstable();
            let got = decompress(&table, &codes, &offsets, MAX_CHUNK_BYTES);
            let want = per_string(&table, &codes, &offsets);
            prop_assert_eq!(got.is_ok(), want.is_ok(), "{:?} vs {:?}", got.as_ref().err(), want.as_ref().err());
            if let (Ok(g), Ok(w)) = (got, want) {
                prop_assert_eq!(g, w);
            }
        }

        /// Arbitrary tables, lengths and codes never panic.
        #[test]
        fn garbage_never_panics(table in proptest::collection::vec(any::<u8>(), 0..60),
                                lens in proptest::collection::vec(0i64..6, 0..8),
                                data in proptest::collection::vec(any::<u8>(), 0..40)) {
            let _ = hostile(table, &lens, data);
        }

        #[test]
        fn garbage_codes_never_panic(lens in proptest::collection::vec(0i64..6, 0..8),
                                     data in proptest::collection::vec(prop_oneof![0u8..3, Just(255u8)], 0..40)) {
            if let Ok(out) = hostile(good_table(), &lens, data) {
                prop_assert_eq!(out.offsets.len(), lens.len() + 1);
            }
        }
    }
}
