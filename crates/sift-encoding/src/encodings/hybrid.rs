//! Parquet's RLE/bit-packed hybrid: small unsigned integers (`bits` wide, 0–32) as a stream
//! of runs, read in place. Parquet stores dictionary indices and repetition/definition
//! levels so; a node of this encoding over such a stream lets a Parquet page be read through
//! the same tree as a Sift chunk (a dictionary page under `Dict`, its indices here, its
//! definition levels as the validity root), without converting it first. Sift's writer never
//! chooses it: its own cascades (`Rle`, `For`) do the same work with separately compressed
//! children.
//!
//! The buffer holds only the run stream (a data page's leading bit-width byte, or the
//! 4-byte length before version-1 levels, is the caller's). Each run starts with a ULEB128
//! header `h`:
//!
//! - `h & 1 == 0`: `h >> 1` repetitions of one value, stored in `ceil(bits / 8)` bytes,
//!   little-endian;
//! - `h & 1 == 1`: `h >> 1` groups of 8 values, `bits` wide, packed LSB-first
//!   contiguously (the layout of `For`'s codes), `(h >> 1) · bits` bytes. The last run may
//!   be padded past the values wanted; the padding is ignored and need not be present.
//!
//! Every operation reads the headers in order (`RunReader`, which prefetches the stream
//! ahead of them), bounded by the values asked for: runs past them are never read, a run is
//! clipped to them, and empty runs are skipped. Most first collect them into a run table
//! (start, length, and the value or the byte offset of the packed data) of at most one
//! entry per value and per byte of the stream, whatever the headers claim; a sparse
//! selection reads its values from each run as its header is read.
//!
//! Runs are then evaluated whole: a repeated value is compared once and its rows set as a
//! bit range, decoded by a fill, selected by a count. Consecutive bit-packed runs (writers
//! emit them up to 512 values long) join into spans of up to `SPAN` values, copied into
//! one aligned scratch buffer (the run headers between them dropped: each run holds whole
//! bytes) and handed to the kernels of `sift_bits` at once: the range compare on packed
//! codes (`packed_cmp`), whose bits are ORed into the result a word at a time, and the
//! unpacker. A selection gathers the selected codes of a sparsely selected span one by one
//! and unpacks a denser one into L1 to compact it (`compact`); spans without selected rows
//! are not even copied. (The fused `select::unpack_selected_into` sets up block-sized
//! buffers on every call, which costs more than it saves on spans this short.)
//!
//! Under a `Dict` (a dictionary-encoded Parquet page), the codes are looked up in the
//! dictionary's entries as each span is unpacked (`Hybrid::lookup`), so that they never
//! exist as a column of 64-bit integers to be checked and mapped in further passes.

use std::hint::select_unpredictable;
use std::rc::Rc;

use serde::{Deserialize, Serialize};
use sift_bits::bitmap::count_ones_in_words;
use sift_bits::compact::SLACK;
use sift_bits::extreme::{RankExtremes, rank_extremes};
use sift_bits::pack::{low_mask, packed_words};
use sift_bits::predicate::Predicate;
use sift_bits::{Bitmap, Level};

use crate::domain::{
    AHEAD_RUN, AHEAD_WORDS, Domain, Value, fill_ahead, fill_run, set_range, uniform,
};
use crate::encoding::Encoding;
use crate::encodings::frame::NativeInt;
use crate::error::{Result, corrupt};
use crate::predicate::{CodeMask, DictionaryMemo, DomainPred};
use crate::tree::{ColumnEncoding, Ctx, NodeId};
use crate::wire::{Reader, Writer};

/// Parquet's RLE/bit-packed hybrid run stream of `bits`-wide unsigned integers in buffer
/// `buffer`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hybrid {
    /// Bits per value (0–32; 0: every value is 0).
    pub bits: u8,
    /// The buffer holding the run stream (run headers and run data, nothing before).
    pub buffer: u32,
}

/// The widest values the hybrid stream holds here (Parquet's dictionary indices and levels
/// are 32-bit).
pub const MAX_BITS: u8 = 32;

/// Values of consecutive bit-packed runs handed to a kernel at once (a multiple of 8, so
/// that spans split runs on bytes): large enough that a kernel call's fixed cost vanishes,
/// small enough that the scratch copy (at most 32 KiB) stays in L1/L2.
const SPAN: usize = 8192;

/// A span is gathered value by value when at most one value in this many is selected,
/// else unpacked and compacted. A gathered value costs about as much as unpacking and
/// compacting 48: in the Parquet-Select micro (5-bit codes, three columns projected) one
/// row in 32 took 24.0 ms gathered and 22.3 ms unpacked, one in 64 21.5 ms either way.
const GATHER_EVERY: usize = 48;

/// [`GATHER_EVERY`] for [`Hybrid::extremes`] of byte codes: a span folded through the
/// entries' ranks is unpacked but nothing is compacted, so folding every span costs about
/// as much as gathering one value in 256. In the Parquet-Select micro (5-bit codes, three
/// columns' extremes, one core, best of 10, alternated three times), gathering from one
/// row in 48 down took 20.3–20.4 ms at one row in 64 and 17.0–17.5 at one in 128, folding
/// 15.2–16.1 and 15.0–15.6; at one in 1,024 gathering is ahead, 14.0 against 14.2–14.8.
const EXTREMES_GATHER_EVERY: usize = 256;

/// Whether `ones` selected values of `len` are few enough to gather one by one
/// ([`GATHER_EVERY`]).
fn gathered(ones: usize, len: usize) -> bool {
    ones * GATHER_EVERY <= len
}

/// One run of the table, clipped to the values asked for (never empty).
#[derive(Debug, Clone, Copy)]
struct Run {
    /// The first value's index.
    start: usize,
    /// Values of the run used.
    len: usize,
    kind: Kind,
}

#[derive(Debug, Clone, Copy)]
enum Kind {
    /// One value repeated (also a bit-packed run of 0-bit values).
    Repeat(u64),
    /// Bit-packed values starting at this byte of the stream.
    Packed(usize),
}

/// What [`Hybrid::walk`] hands over for a range of values.
enum Segment<'s> {
    /// Every value equals this one.
    Repeat(u64),
    /// The values, packed from bit 0 of these words.
    Packed(&'s [u64]),
}

/// The next ULEB128 varint at `*pos`, or `None` at the end of the stream.
fn varint(bytes: &[u8], pos: &mut usize) -> std::result::Result<Option<u64>, String> {
    let start = *pos;
    if start >= bytes.len() {
        return Ok(None);
    }
    let mut v = 0u64;
    let mut shift = 0u32;
    loop {
        let Some(&b) = bytes.get(*pos) else {
            return Err(format!("run header at byte {start} is cut off"));
        };
        *pos += 1;
        let low = u64::from(b & 0x7F);
        if shift > 63 || (shift == 63 && b > 1) {
            return Err(format!("run header at byte {start} overflows 64 bits"));
        }
        v |= low << shift;
        if b & 0x80 == 0 {
            return Ok(Some(v));
        }
        shift += 7;
    }
}

/// Bytes of the stream prefetched ahead of the run header being read. Each header's
/// position is known only once the one before it is read, so without prefetching every
/// header (one in five cache lines of a 5-bit stream) waits for memory in turn; a few KiB
/// ahead covers that latency at the rate headers are read, and a sparse selection's
/// gathers from the run then find its bytes in cache too.
const PREFETCH_AHEAD: usize = 4096;

/// The runs of the stream `bytes` of `bits`-wide values covering the first `count`
/// values, read one header at a time: each clipped to the values asked for, empty ones
/// skipped, every header and value checked against the stream (an error names the byte).
struct RunReader<'a> {
    bytes: &'a [u8],
    bits: u8,
    count: usize,
    /// The next header's byte and the next run's first value.
    pos: usize,
    row: usize,
    /// Bytes before this one have been prefetched.
    fetched: usize,
}

impl<'a> RunReader<'a> {
    fn new(bits: u8, bytes: &'a [u8], count: usize) -> std::result::Result<Self, String> {
        if bits > MAX_BITS {
            return Err(format!("bit width {bits} > {MAX_BITS}"));
        }
        Ok(RunReader {
            bytes,
            bits,
            count,
            pos: 0,
            row: 0,
            fetched: 0,
        })
    }

    /// The next non-empty run, `None` once `count` values are covered.
    fn next_run(&mut self) -> std::result::Result<Option<Run>, String> {
        let (bits, bytes) = (self.bits, self.bytes);
        let width = usize::from(bits);
        while self.row < self.count {
            let ahead = self.pos.saturating_add(PREFETCH_AHEAD).min(bytes.len());
            if self.fetched < ahead {
                sift_bits::select::prefetch_bytes(&bytes[self.fetched..ahead]);
                self.fetched = ahead;
            }
            let (at, row) = (self.pos, self.row);
            let Some(h) = varint(bytes, &mut self.pos)? else {
                return Err(format!(
                    "the run stream ends after {row} of {} values ({} bytes)",
                    self.count,
                    bytes.len()
                ));
            };
            let n = h >> 1;
            let left = self.count - row;
            let (len, kind) = if h & 1 == 0 {
                let value_bytes = width.div_ceil(8);
                let Some(raw) = bytes.get(self.pos..self.pos + value_bytes) else {
                    return Err(format!("the value of the run at byte {at} is cut off"));
                };
                self.pos += value_bytes;
                let mut le = [0u8; 8];
                le[..value_bytes].copy_from_slice(raw);
                let value = u64::from_le_bytes(le);
                if value > low_mask(u32::from(bits)) {
                    return Err(format!(
                        "the run at byte {at} repeats {value}, wider than {bits} bits"
                    ));
                }
                let len = usize::try_from(n).map_or(left, |n| n.min(left));
                (len, Kind::Repeat(value))
            } else {
                // The run's full extent (saturated: a hostile header only ends the stream).
                let values = usize::try_from(n.saturating_mul(8)).unwrap_or(usize::MAX);
                let run_bytes =
                    usize::try_from(n.saturating_mul(u64::from(bits))).unwrap_or(usize::MAX);
                let len = values.min(left);
                let needed = len
                    .checked_mul(width)
                    .ok_or_else(|| format!("{} values of {bits} bits overflow", self.count))?
                    .div_ceil(8);
                if needed > bytes.len() - self.pos {
                    return Err(format!(
                        "the bit-packed run at byte {at} needs {needed} bytes for {len} values, {} left",
                        bytes.len() - self.pos
                    ));
                }
                let kind = if bits == 0 {
                    Kind::Repeat(0)
                } else {
                    Kind::Packed(self.pos)
                };
                self.pos = self.pos.saturating_add(run_bytes);
                (len, kind)
            };
            self.row += len;
            if len > 0 {
                return Ok(Some(Run {
                    start: row,
                    len,
                    kind,
                }));
            }
        }
        Ok(None)
    }
}

/// Parses the run stream `bytes` of `bits`-wide values into the runs covering the first
/// `count` values (consecutive repeats of one value joined).
fn parse(bits: u8, bytes: &[u8], count: usize) -> std::result::Result<Vec<Run>, String> {
    let mut reader = RunReader::new(bits, bytes, count)?;
    let mut runs: Vec<Run> = Vec::new();
    while let Some(run) = reader.next_run()? {
        push(&mut runs, run);
    }
    Ok(runs)
}

/// Checks that the run stream `bytes` of `bits`-wide values holds `count` values, as
/// every operation here reads them: whole runs, values no wider than `bits`. For readers
/// of Parquet levels that trust a page header's value count.
pub fn check_stream(bits: u8, bytes: &[u8], count: usize) -> std::result::Result<(), String> {
    parse(bits, bytes, count).map(drop)
}

/// The first `count` values of a run stream of 1- or 2-bit values (Parquet's repetition
/// and definition levels of a list) appended to one bitmap per threshold of `at_least`:
/// the bit appended for value `i` to bitmap `out[k]` is set when the value is at least
/// `at_least[k]`. The bitmaps must be of one length: the levels of a column chunk's pages
/// are appended page after page, with no page-sized bitmap to copy. One walk over the
/// runs serves every threshold, and values are tested packed, never unpacked: 64 at a
/// time, as one 64-bit field of one-bit values, or two of two-bit values whose high bit,
/// or the OR or the AND of their two bits, is gathered from every other bit. Runs of at
/// most 64 values behind a one-byte header (the levels of lists a few values long switch
/// between a repeated and a bit-packed run every few dozen values) are read without a
/// branch on their kind. Checks the stream as `parse` does; on an error the bitmaps are
/// left as they were.
pub fn append_level_bitmaps(
    bits: u8,
    bytes: &[u8],
    count: usize,
    at_least: &[u16],
    out: &mut [Bitmap],
) -> std::result::Result<(), String> {
    let base = out.first().map_or(0, Bitmap::len);
    if out.len() != at_least.len() || out.iter().any(|b| b.len() != base) {
        return Err(format!(
            "{} level bitmaps of lengths {:?} for {} thresholds",
            out.len(),
            out.iter().map(Bitmap::len).collect::<Vec<_>>(),
            at_least.len()
        ));
    }
    let end = base
        .checked_add(count)
        .ok_or_else(|| format!("{count} levels after {base}"))?;
    // One word of slack, so that 64 bits ORed in at any value stay inside (cut at the end).
    let mut words: Vec<Vec<u64>> = out
        .iter_mut()
        .map(|b| {
            let mut w = std::mem::take(b).into_words();
            w.resize(end.div_ceil(64) + 1, 0);
            w
        })
        .collect();
    let walked = match bits {
        1 => level_words::<1>(bytes, count, base, at_least, &mut words),
        2 => level_words::<2>(bytes, count, base, at_least, &mut words),
        _ => Err(format!(
            "levels of {bits} bits: only 1 and 2 are read as bitmaps"
        )),
    };
    // On an error, what was ORed in past `base` is cut off again.
    let len = if walked.is_ok() { end } else { base };
    for (b, w) in out.iter_mut().zip(words) {
        *b = Bitmap::from_words(w, len).unwrap_or_default();
    }
    walked
}

/// [`append_level_bitmaps`] for `BITS`-wide values, into `out` (one word vector per
/// threshold, with a word of slack) from bit `base` on.
fn level_words<const BITS: usize>(
    bytes: &[u8],
    count: usize,
    base: usize,
    at_least: &[u16],
    out: &mut [Vec<u64>],
) -> std::result::Result<(), String> {
    let max = low_mask(BITS as u32);
    let reach: Vec<Reach> = at_least.iter().map(|&t| Reach::new(BITS, t)).collect();
    let mut reader = RunReader::new(BITS as u8, bytes, count)?;
    while reader.row < count {
        let (pos, row) = (reader.pos, reader.row);
        if let (Some(&h), Some(next)) = (bytes.get(pos), bytes.get(pos + 1..pos + 17))
            && h < 0x80
        {
            // Both readings of the run, chosen without a branch: `n` copies of one value
            // after a header `2n`, or `n` groups of 8 packed values after `2n + 1`.
            let n = usize::from(h >> 1);
            let packed = usize::from(h & 1);
            let len = n << (3 * packed);
            if len <= 64 && (packed == 1 || u64::from(next[0]) <= max) {
                let keep = 0u64.wrapping_sub(packed as u64);
                let same = repeat::<BITS>(u64::from(next[0]));
                let lo = (load_word(next) & keep) | (same & !keep);
                let hi = (load_word(&next[8..]) & keep) | (same & !keep);
                let len = len.min(count - row);
                put_levels::<BITS>(out, &reach, lo, hi, base + row, len);
                reader.row = row + len;
                reader.pos = pos + 2 - packed + packed * n * BITS;
                continue;
            }
        }
        // Any other run (longer, or a header of several bytes) through the checked reader.
        let Some(run) = reader.next_run()? else { break };
        match run.kind {
            Kind::Repeat(v) => {
                for (o, &t) in out.iter_mut().zip(at_least) {
                    if v >= u64::from(t) {
                        set_range(o, base + run.start, base + run.start + run.len);
                    }
                }
            }
            Kind::Packed(at) => {
                // The run's bytes (checked by the reader to hold `run.len` values).
                let packed = &bytes[at..at + (run.len * BITS).div_ceil(8)];
                for k in (0..run.len).step_by(64) {
                    let chunk = &packed[k * BITS / 8..];
                    let hi = load_word(chunk.get(8..).unwrap_or_default());
                    let len = (run.len - k).min(64);
                    let at = base + run.start + k;
                    put_levels::<BITS>(out, &reach, load_word(chunk), hi, at, len);
                }
            }
        }
    }
    Ok(())
}

/// A threshold test on packed 1- or 2-bit values as masks, chosen once per threshold so
/// that testing a word takes no branch: value bits `(low, high)` reach it where
/// `all | (low & low_m) | (high & high_m) | (low & high & both_m)` is set (for one-bit
/// values, `low` is the value and `high` is zero).
#[derive(Clone, Copy)]
struct Reach {
    all: u64,
    low: u64,
    high: u64,
    both: u64,
}

impl Reach {
    fn new(bits: usize, t: u16) -> Reach {
        // The bits of the values' low bits (every bit, or every other one).
        let lanes = match bits {
            1 => u64::MAX,
            _ => 0x5555_5555_5555_5555,
        };
        let (all, low, high, both) = match (bits, t) {
            (_, 0) => (lanes, 0, 0, 0),
            (1, 1) | (2, 1) => (0, lanes, lanes, 0),
            (2, 2) => (0, 0, lanes, 0),
            (2, 3) => (0, 0, 0, lanes),
            _ => (0, 0, 0, 0),
        };
        Reach {
            all,
            low,
            high,
            both,
        }
    }

    /// Which of the values packed in `x` reach the threshold: 64 bits of one-bit values,
    /// or 32 bits (gathered from every other bit) of two-bit ones.
    #[inline(always)]
    fn test<const BITS: usize>(self, x: u64) -> u64 {
        match BITS {
            1 => self.all | (x & self.low),
            _ => {
                // The masks keep the even bits only, where `low` holds each value's low
                // bit and `high` its high bit.
                let (low, high) = (x, x >> 1);
                let at =
                    self.all | (low & self.low) | (high & self.high) | (low & high & self.both);
                gather_even_bits(at)
            }
        }
    }
}

/// ORs into each threshold's words, at value `row`, which of the first `len` of 64
/// `BITS`-wide values (packed in `lo`, then `hi`) reach that threshold.
#[inline(always)]
fn put_levels<const BITS: usize>(
    out: &mut [Vec<u64>],
    reach: &[Reach],
    lo: u64,
    hi: u64,
    row: usize,
    len: usize,
) {
    let (at, shift) = (row / 64, row % 64);
    for (o, r) in out.iter_mut().zip(reach) {
        let word = match BITS {
            1 => r.test::<1>(lo),
            _ => r.test::<2>(lo) | (r.test::<2>(hi) << 32),
        } & low_mask(len as u32);
        let wide = u128::from(word) << shift;
        if let Some([a, b]) = o.get_mut(at..at + 2) {
            *a |= wide as u64;
            *b |= (wide >> 64) as u64;
        }
    }
}

/// A `BITS`-wide value repeated over a 64-bit field.
#[inline(always)]
fn repeat<const BITS: usize>(v: u64) -> u64 {
    match BITS {
        1 => 0u64.wrapping_sub(v),
        _ => v.wrapping_mul(0x5555_5555_5555_5555),
    }
}

/// Up to 8 bytes from the start of `bytes` as a little-endian word (zeros past the end).
fn load_word(bytes: &[u8]) -> u64 {
    let mut le = [0u8; 8];
    let n = bytes.len().min(8);
    le[..n].copy_from_slice(&bytes[..n]);
    u64::from_le_bytes(le)
}

/// The even bits of `x` (odd bits clear) packed into its low 32 bits.
fn gather_even_bits(mut x: u64) -> u64 {
    x = (x | (x >> 1)) & 0x3333_3333_3333_3333;
    x = (x | (x >> 2)) & 0x0F0F_0F0F_0F0F_0F0F;
    x = (x | (x >> 4)) & 0x00FF_00FF_00FF_00FF;
    x = (x | (x >> 8)) & 0x0000_FFFF_0000_FFFF;
    (x | (x >> 16)) & 0x0000_0000_FFFF_FFFF
}

/// The first `count` values of a run stream of one-bit values as bitmap words, decoded
/// straight into them: a repeated run of ones sets its range, a bit-packed run is copied,
/// since one-bit values packed LSB first already are bitmap bits. Parsing into a run
/// table first ([`parse`]) costs a run's bookkeeping per run, and definition levels of a
/// column with scattered nulls switch between repeated and bit-packed runs every few
/// values. Checks the stream as [`parse`] does.
fn one_bit_words(bytes: &[u8], count: usize) -> std::result::Result<Vec<u64>, String> {
    let join = count < SPARSE_LEVELS_PER_BYTE.saturating_mul(bytes.len());
    one_bit_words_walked(bytes, count, has_bmi2(), join)
}

/// Values per byte of a one-bit run stream from which [`short_one_bit_runs`] takes each
/// run on its own rather than a bit-packed run and the repeated run after it as one field.
/// Such a stream's repeated runs are long (definition levels with nulls rarer than about
/// one in fifty: 1 % nulls makes about 24 values a byte, 2 % 15, 4 % 10, 10 % 7), so
/// whether one fits beside the bit-packed run varies from pair to pair, and a branch on
/// it is mispredicted about half the time; a third way, deciding without a branch, makes
/// the next header wait for the decision. The Parquet-Select micro at 1/4 on one core
/// (five columns' levels decoded): with 1 % nulls 26.4–27.3 ms joined, 24.3–24.6 apart;
/// with 2 % 25.4–25.6 against 23.7–25.6; with 4 % 25.6–26.2 against 29.3–29.7; with 10 %
/// 29.9–30.9 against 35.0–35.3.
const SPARSE_LEVELS_PER_BYTE: usize = 18;

/// [`one_bit_words`] with [`short_one_bit_runs`] compiled for BMI2 or not (`bmi2`:
/// [`has_bmi2`], or false), joining bit-packed runs to the repeated runs after them or
/// not (`join`).
fn one_bit_words_walked(
    bytes: &[u8],
    count: usize,
    bmi2: bool,
    join: bool,
) -> std::result::Result<Vec<u64>, String> {
    // One word of slack, so that 64 bits ORed in at any row stay inside (cut at the end).
    let words = count.div_ceil(64);
    let mut out = vec![0u64; words + 1];
    let (mut pos, mut row) = (0usize, 0usize);
    while row < count {
        (pos, row) = short_one_bit_runs(bmi2, join, bytes, pos, row, count, &mut out);
        if row == count {
            break;
        }
        let at = pos;
        // Most headers are one byte.
        let header = match bytes.get(pos) {
            Some(&b) if b < 0x80 => {
                pos += 1;
                Some(u64::from(b))
            }
            _ => varint(bytes, &mut pos)?,
        };
        let Some(h) = header else {
            return Err(format!(
                "the run stream ends after {row} of {count} values ({} bytes)",
                bytes.len()
            ));
        };
        let (n, left) = (h >> 1, count - row);
        if h & 1 == 0 {
            let Some(&value) = bytes.get(pos) else {
                return Err(format!("the value of the run at byte {at} is cut off"));
            };
            pos += 1;
            if value > 1 {
                return Err(format!(
                    "the run at byte {at} repeats {value}, wider than 1 bits"
                ));
            }
            let len = usize::try_from(n).map_or(left, |n| n.min(left));
            if value == 1 {
                set_range(&mut out, row, row + len);
            }
            row += len;
        } else {
            let values = usize::try_from(n.saturating_mul(8)).unwrap_or(usize::MAX);
            let len = values.min(left);
            let needed = len.div_ceil(8);
            let Some(packed) = bytes.get(pos..pos + needed) else {
                return Err(format!(
                    "the bit-packed run at byte {at} needs {needed} bytes for {len} values, {} left",
                    bytes.len() - pos
                ));
            };
            // 64 values at a time, ORed in at the run's bit offset; bits past the run's
            // values (the next run's bytes, the last byte's padding) are cleared.
            for k in (0..len).step_by(64) {
                let word = load_word(&packed[k / 8..]) & low_mask((len - k).min(64) as u32);
                let (start, shift) = ((row + k) / 64, (row + k) % 64);
                out[start] |= word << shift;
                if shift != 0 && start + 1 < out.len() {
                    out[start + 1] |= word >> (64 - shift);
                }
            }
            row += len;
            pos = pos.saturating_add(usize::try_from(n).unwrap_or(usize::MAX));
        }
    }
    out.truncate(words);
    Ok(out)
}

/// Decodes the runs whose header takes one or two bytes (all but repeated runs of 8,192
/// values and more, such as the levels of a page without nulls) from byte `pos` of
/// `bytes` into `out` from bit `row`, while 11 bytes and 64 values remain; returns where
/// it stopped: the end of that stretch, or the first run it leaves to the caller (a wider
/// header, a repeated value above 1, a run past the `count` values or the stream).
///
/// Writers alternate a bit-packed run (the groups of 8 holding nulls) with a repeated run
/// of ones, so with `join` a bit-packed run and the repeated run after it are taken as one
/// field of at most 64 bits when they fit: one pass of the loop and one placement for two
/// runs (the walk is bound by the instructions spent on each run more than by the wait
/// for each header; two walkers interleaved over halves of a stream were no faster, and
/// so was a walk of 64 bytes at a time with AVX-512: the starts of a window's runs found
/// by doubling the map from each byte to the header after it, eight runs a vector placed
/// by a prefix sum of their lengths and an OR of the runs starting in each word; with
/// 10 % nulls it took 2.21 ms on the `parquet levels` bench against 1.73 ms for this walk,
/// its byte permutations, lane shifts and compressions queued on one port). A
/// field is all its value when repeated and its next bytes when bit-packed (the bytes
/// loaded past a shorter run are cut off by its length). The word being filled stays in
/// a register and is stored whole after every field, the bits a field carries past it
/// starting the next word, so no field reads `out`. A repeated run on its own (too long
/// to join the run before it, or not joined) of up to [`AHEAD_RUN`] values is placed
/// without a branch on its length or its header's width, which vary from run to run
/// with sparse nulls ([`fill_ahead`]); a longer one finishes that word and stores the
/// whole words it fills. A bit-packed run of more than 8 groups is placed 64 values at a
/// time.
///
/// `bmi2`: [`has_bmi2`], asked once by the caller; `join`: see
/// [`SPARSE_LEVELS_PER_BYTE`].
fn short_one_bit_runs(
    bmi2: bool,
    join: bool,
    bytes: &[u8],
    pos: usize,
    row: usize,
    count: usize,
    out: &mut [u64],
) -> (usize, usize) {
    #[cfg(target_arch = "x86_64")]
    if bmi2 {
        // SAFETY: `has_bmi2` said the CPU has BMI2.
        return unsafe {
            match join {
                true => short_one_bit_runs_bmi2::<true>(bytes, pos, row, count, out),
                false => short_one_bit_runs_bmi2::<false>(bytes, pos, row, count, out),
            }
        };
    }
    let _ = bmi2;
    match join {
        true => short_one_bit_runs_body::<true>(bytes, pos, row, count, out),
        false => short_one_bit_runs_body::<false>(bytes, pos, row, count, out),
    }
}

/// True when the CPU has BMI2 and the kernels on this thread are not pinned to the
/// portable level (`SIFT_FORCE_SCALAR`, `with_level`).
fn has_bmi2() -> bool {
    #[cfg(target_arch = "x86_64")]
    return Level::active() != Level::Scalar && std::arch::is_x86_feature_detected!("bmi2");
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// [`short_one_bit_runs`] compiled for BMI2, whose `bzhi` and `shlx` make the masks and
/// shifts by a run's length one instruction each.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "bmi2")]
fn short_one_bit_runs_bmi2<const JOIN: bool>(
    bytes: &[u8],
    pos: usize,
    row: usize,
    count: usize,
    out: &mut [u64],
) -> (usize, usize) {
    short_one_bit_runs_body::<JOIN>(bytes, pos, row, count, out)
}

#[inline(always)]
fn short_one_bit_runs_body<const JOIN: bool>(
    bytes: &[u8],
    mut pos: usize,
    mut row: usize,
    count: usize,
    out: &mut [u64],
) -> (usize, usize) {
    let Some(last_row) = count.checked_sub(64) else {
        return (pos, row);
    };
    let Some(&first) = out.get(row / 64) else {
        return (pos, row);
    };
    let mut word = first;
    // The last word that `fill_ahead` may have written past the run it placed.
    let mut ahead = 0;
    while row <= last_row {
        // A run of at most 8 groups and the header and value of the run after it.
        let Some(window) = bytes.get(pos..pos + 11) else {
            break;
        };
        let (Ok(window), Ok(next)) = (<&[u8; 11]>::try_from(window), window[1..9].try_into())
        else {
            break;
        };
        let (h, next) = (window[0], u64::from_le_bytes(next));
        let n = usize::from(h >> 1);
        let (field, len);
        if h & 1 == 1 {
            if n > 8 {
                // A bit-packed run of more than 8 groups (nulls so dense that few groups
                // of 8 go without one): placed 64 values at a time.
                let Some((groups, at)) = short_header(h, window[1]) else {
                    break;
                };
                let Some(packed) = bytes.get(pos + at..pos + at + groups) else {
                    break;
                };
                if row + 8 * groups > count {
                    break;
                }
                for chunk in packed.chunks(8) {
                    place_field(out, &mut word, &mut row, load_word(chunk), 8 * chunk.len());
                }
                pos += at + groups;
                continue;
            }
            let (packed, after) = (next & low_mask(8 * n as u32), 1 + n);
            let (h2, value) = (window[after], window[after + 1]);
            let repeats = usize::from(h2 >> 1);
            if JOIN && h2 & 0x81 == 0 && value <= 1 && 8 * n + repeats <= 64 {
                let run = repeat::<1>(u64::from(value)) & low_mask(repeats as u32);
                // Eight groups leave no room for a repeat: `run` is 0, shifted by 0.
                field = packed | run << (8 * n % 64);
                len = 8 * n + repeats;
                pos += after + 2;
            } else {
                field = packed;
                len = 8 * n;
                pos += after;
            }
        } else {
            // A repeated run: its header one byte, or two for 64 values and more (sparse
            // nulls leave long runs of ones between the bit-packed groups, about as many
            // of either length at 1 % nulls, so the two are told apart without a branch).
            let wide = h >> 7;
            if wide == 1 && window[1] >= 0x80 {
                break;
            }
            let header = select_unpredictable(
                wide == 1,
                usize::from(h & 0x7f) | usize::from(window[1]) << 7,
                usize::from(h),
            );
            let (repeats, at) = (header >> 1, 1 + usize::from(wide));
            let value = window[at];
            if value > 1 || row + repeats > count {
                break;
            }
            pos += at + 1;
            let all = repeat::<1>(u64::from(value));
            if repeats <= AHEAD_RUN && row / 64 + AHEAD_WORDS < out.len() {
                fill_ahead(out, &mut word, &mut row, all, repeats);
                ahead = ahead.max(row / 64 + AHEAD_WORDS);
                continue;
            }
            if repeats > 64 {
                fill_run(out, &mut word, &mut row, all, repeats);
                continue;
            }
            field = all & low_mask(repeats as u32);
            len = repeats;
        }
        place_field(out, &mut word, &mut row, field, len);
    }
    if let Some(slot) = out.get_mut(row / 64) {
        *slot = word;
    }
    // The words that `fill_ahead` wrote past the runs, cleared for the caller, which ORs
    // the runs it places into `out`.
    if let Some(past) = out.get_mut(row / 64 + 1..(ahead + 1).min(out.len())) {
        past.fill(0);
    }
    (pos, row)
}

/// A run header of one or two bytes (`h`, then `h2`) for [`short_one_bit_runs`]: the
/// header's value shifted right once (a repeated run's length, a bit-packed run's groups)
/// and its bytes; `None` for a wider header.
#[inline(always)]
fn short_header(h: u8, h2: u8) -> Option<(usize, usize)> {
    match (h, h2) {
        (0..0x80, _) => Some((usize::from(h >> 1), 1)),
        (_, 0..0x80) => Some(((usize::from(h & 0x7f) | usize::from(h2) << 7) >> 1, 2)),
        _ => None,
    }
}

/// Places the `len` (at most 64) bits of `field` at bit `row` for
/// [`short_one_bit_runs`]: ORed into `word`, the word being filled, which is stored whole;
/// the bits past it start the next word.
#[inline(always)]
fn place_field(out: &mut [u64], word: &mut u64, row: &mut usize, field: u64, len: usize) {
    let shift = *row % 64;
    *word |= field << shift;
    // Bits past the word: `field >> (64 - shift)`, written so that no shift is by 64.
    let carry = (field >> 1) >> (63 - shift);
    out[*row / 64] = *word;
    *word = select_unpredictable(shift + len >= 64, carry, *word);
    *row += len;
}

/// Appends `run` (never empty), joined to the previous one when both repeat the same
/// value.
fn push(runs: &mut Vec<Run>, run: Run) {
    if let (Kind::Repeat(v), Some(last)) = (run.kind, runs.last_mut())
        && let Kind::Repeat(w) = last.kind
        && v == w
    {
        last.len += run.len;
        return;
    }
    runs.push(run);
}

/// Bits `start..start + len` of `words`, shifted to bit 0, into `out` (cleared first; no
/// bit set past `len`).
fn bits_range(words: &[u64], start: usize, len: usize, out: &mut Vec<u64>) {
    out.clear();
    let (first, shift) = (start / 64, start % 64);
    let word = |i: usize| words.get(i).copied().unwrap_or(0);
    out.extend((0..len.div_ceil(64)).map(|i| match shift {
        0 => word(first + i),
        s => (word(first + i) >> s) | (word(first + i + 1) << (64 - s)),
    }));
    if let (false, Some(last)) = (len.is_multiple_of(64), out.last_mut()) {
        *last &= low_mask((len % 64) as u32);
    }
}

/// Appends the values of `packed` (`bits` wide) whose bit is set in `sel`.
fn gather(packed: &[u64], bits: u32, sel: &[u64], out: &mut Vec<u64>) {
    let (width, mask) = (bits as usize, low_mask(bits));
    let word = |i: usize| packed.get(i).copied().unwrap_or(0);
    for (c, &b) in sel.iter().enumerate() {
        let mut b = b;
        while b != 0 {
            let bit = (c * 64 + b.trailing_zeros() as usize) * width;
            b &= b - 1;
            let (w, s) = (bit / 64, bit % 64);
            let hi = if s + width > 64 {
                word(w + 1) << (64 - s)
            } else {
                0
            };
            out.push(((word(w) >> s) | hi) & mask);
        }
    }
}

/// Appends the values of the bit-packed run at byte `at` of the stream `bytes` (`bits`
/// wide; its values are `start..start + len`) whose bit is set in `sel`, each read with
/// one unaligned 8-byte load from the stream (a value of at most 32 bits at a bit offset
/// below 8 fits in it). [`parse`] checked that the run's values lie inside the stream.
fn gather_stream(
    bytes: &[u8],
    at: usize,
    bits: u32,
    sel: &[u64],
    start: usize,
    len: usize,
    out: &mut Vec<u64>,
) {
    let (width, mask) = (bits as usize, low_mask(bits));
    let end = start + len;
    let load = |byte: usize| match bytes.get(byte..byte + 8) {
        Some(b) => u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]),
        None => {
            let mut le = [0u8; 8];
            let tail = bytes.get(byte..).unwrap_or_default();
            le[..tail.len()].copy_from_slice(tail);
            u64::from_le_bytes(le)
        }
    };
    let value = |w: usize, t: u32| {
        let bit = (w * 64 + t as usize - start) * width;
        (load(at + bit / 8) >> (bit % 8)) & mask
    };
    // A sparse selection's words hold none, one or a few bits at random. Each word's first
    // value is read and stored without a branch (into the slot past the end when the word
    // has none: the count advances only by the word's bits), so only words with more
    // take the loop.
    let first = out.len();
    out.resize(first + count_ones_in_words(sel, start..start + len) + 1, 0);
    let mut k = first;
    for w in start / 64..end.div_ceil(64) {
        let mut b = sel.get(w).copied().unwrap_or(0);
        if w == start / 64 {
            b &= u64::MAX << (start % 64);
        }
        if w == (end - 1) / 64 {
            b &= u64::MAX >> (63 - (end - 1) % 64);
        }
        let t = b.trailing_zeros().min(63);
        out[k] = value(w, t);
        k += usize::from(b != 0);
        b &= b.wrapping_sub(1);
        while b != 0 {
            out[k] = value(w, b.trailing_zeros());
            k += 1;
            b &= b - 1;
        }
    }
    out.truncate(k);
}

/// ORs the bits of `src` (a span's results) into `dst` from bit `start` on, a word at a
/// time.
fn or_at(dst: &mut [u64], start: usize, src: &[u64]) {
    let (first, shift) = (start / 64, start % 64);
    for (i, &w) in src.iter().enumerate() {
        if let Some(d) = dst.get_mut(first + i) {
            *d |= w << shift;
        }
        if shift != 0
            && let Some(d) = dst.get_mut(first + i + 1)
        {
            *d |= w >> (64 - shift);
        }
    }
}

/// Buffers a thread reuses from one call to the next: a column's pages are read one after
/// another, each a few spans long, and buffers made per page were zeroed (and grown) anew
/// every time.
#[derive(Default)]
struct Scratch {
    /// A span's packed words ([`Hybrid::walk`]).
    span: Vec<u64>,
    /// A span's selected codes, compacted.
    kept: Vec<u32>,
    /// A span's selection bits.
    part: Vec<u64>,
    /// Codes gathered one by one.
    picked: Vec<u64>,
    /// What a span's values are unpacked into and evaluated in.
    buffers: SpanBuffers,
}

/// A span's values unpacked, and a filter's bits for them ([`Hybrid::matching`]).
#[derive(Default)]
struct SpanBuffers {
    /// The codes, unpacked.
    codes: Vec<u32>,
    /// The codes as bytes.
    bytes: Vec<u8>,
    /// One bit per value, from bit 0.
    words: Vec<u64>,
}

thread_local! {
    static SCRATCH: std::cell::Cell<Scratch> = std::cell::Cell::new(Scratch::default());
}

/// `f` with the thread's [`Scratch`] (a nested call gets empty buffers of its own).
fn with_scratch<R>(f: impl FnOnce(&mut Scratch) -> R) -> R {
    let mut scratch = SCRATCH.take();
    let out = f(&mut scratch);
    SCRATCH.set(scratch);
    out
}

impl Hybrid {
    /// The node's label, for errors.
    fn context(&self, id: NodeId) -> impl Fn(String) -> crate::EncodingError + '_ {
        move |msg| corrupt(format!("node {id} ({}): {msg}", self.label()))
    }

    /// The run stream and its run table for the first `count` values.
    fn runs<'a>(&self, ctx: &Ctx<'a>, id: NodeId, count: usize) -> Result<(&'a [u8], Vec<Run>)> {
        let bytes = ctx.bufs.get(self.buffer, 0)?;
        let runs = parse(self.bits, bytes, count).map_err(self.context(id))?;
        Ok((bytes, runs))
    }

    /// Hands `f` the values of `runs` in order as `(start, len, segment)`: each repeated
    /// run whole, and the bit-packed runs joined into spans of up to [`SPAN`] values,
    /// copied into `scratch` (reused across spans), for the spans `want(start, len)` asks
    /// for.
    fn walk(
        &self,
        bytes: &[u8],
        runs: &[Run],
        scratch: &mut Vec<u64>,
        mut want: impl FnMut(usize, usize) -> bool,
        mut f: impl FnMut(usize, usize, Segment<'_>) -> Result<()>,
    ) -> Result<()> {
        let bits = usize::from(self.bits);
        let (mut i, mut done) = (0usize, 0usize);
        while let Some(run) = runs.get(i) {
            let Kind::Packed(_) = run.kind else {
                if let Kind::Repeat(v) = run.kind {
                    f(run.start, run.len, Segment::Repeat(v))?;
                }
                i += 1;
                continue;
            };
            // The span: from value `done` of run `i` through as many bit-packed runs as fit.
            // Runs are split only at multiples of 8 values, so every piece but a clipped
            // last run starts and ends on a byte.
            let start = run.start + done;
            let (mut j, mut d, mut len) = (i, done, 0usize);
            while let Some(r) = runs.get(j) {
                if !matches!(r.kind, Kind::Packed(_)) || len == SPAN {
                    break;
                }
                let take = (r.len - d).min(SPAN - len);
                len += take;
                if d + take < r.len {
                    d += take;
                    break;
                }
                j += 1;
                d = 0;
            }
            if want(start, len) {
                let words = packed_words(len, u32::from(self.bits))
                    .ok_or_else(|| corrupt("packed span overflows"))?;
                if scratch.len() < words {
                    scratch.resize(words, 0);
                }
                let span = &mut scratch[..words];
                let dst: &mut [u8] = bytemuck::cast_slice_mut(span);
                let (mut at, mut left, mut k, mut dd) = (0usize, len, i, done);
                while left > 0 {
                    let Some(&Run {
                        len: rlen,
                        kind: Kind::Packed(off),
                        ..
                    }) = runs.get(k)
                    else {
                        return Err(corrupt("bit-packed span ends early"));
                    };
                    let take = (rlen - dd).min(left);
                    let from = off + dd * bits / 8;
                    let n = (take * bits).div_ceil(8);
                    let (Some(src), Some(to)) =
                        (bytes.get(from..from + n), dst.get_mut(at..at + n))
                    else {
                        return Err(corrupt("bit-packed run outside its stream"));
                    };
                    to.copy_from_slice(src);
                    at += n;
                    left -= take;
                    k += 1;
                    dd = 0;
                }
                // The last word's bytes past the span (left from a longer one).
                if let Some(tail) = dst.get_mut(at..) {
                    tail.fill(0);
                }
                if cfg!(target_endian = "big") {
                    span.iter_mut().for_each(|w| *w = u64::from_le(*w));
                }
                f(start, len, Segment::Packed(span))?;
            }
            (i, done) = (j, d);
        }
        Ok(())
    }

    /// All `count` values.
    fn codes(&self, ctx: &Ctx<'_>, id: NodeId, count: usize) -> Result<Vec<u64>> {
        let (bytes, runs) = self.runs(ctx, id, count)?;
        let bits = u32::from(self.bits);
        let mut out = vec![0u64; count];
        with_scratch(|Scratch { span, .. }| {
            self.walk(
                bytes,
                &runs,
                span,
                |_, _| true,
                |start, len, seg| {
                    let Some(dst) = out.get_mut(start..start + len) else {
                        return Err(corrupt("run outside the values"));
                    };
                    match seg {
                        Segment::Repeat(v) => dst.fill(v),
                        Segment::Packed(words) => sift_bits::unpack::unpack_to(words, bits, dst)
                            .map_err(|e| corrupt(format!("packed run: {e}")))?,
                    }
                    Ok(())
                },
            )
        })?;
        Ok(out)
    }

    /// The values selected by `sel` (over `count` values).
    fn selected(&self, ctx: &Ctx<'_>, id: NodeId, count: usize, sel: &Bitmap) -> Result<Vec<u64>> {
        let mut out = Vec::new();
        self.select_into(ctx, id, count, sel, &mut out)?;
        Ok(out)
    }

    /// The codes of all `count` values (`sel` = `None`) or of those `sel` selects, each
    /// looked up in `table` (a dictionary's entries) as it is unpacked, a span at a time
    /// in L1: the codes are never held as 64-bit integers, and their check against the
    /// table's length is a pass over the span. `None` if a code lies past the table.
    pub(crate) fn lookup<V: Value>(
        &self,
        ctx: &Ctx<'_>,
        id: NodeId,
        count: usize,
        sel: Option<&Bitmap>,
        table: &[V],
    ) -> Result<Option<Vec<V>>> {
        let mut sink = Lookup {
            table,
            out: Vec::new(),
            beyond: false,
        };
        self.each_code(ctx, id, count, sel, &mut sink)?;
        Ok((!sink.beyond).then_some(sink.out))
    }

    /// The codes of all `count` values (`sel` = `None`) or of those `sel` selects as Arrow
    /// dictionary keys, each checked to be below `len` (a dictionary's length, which fits
    /// `i32`) as its span is unpacked in L1: `None` if one is not.
    pub(crate) fn keys(
        &self,
        ctx: &Ctx<'_>,
        id: NodeId,
        count: usize,
        sel: Option<&Bitmap>,
        len: usize,
    ) -> Result<Option<Vec<i32>>> {
        let mut sink = Keys {
            len: u32::try_from(len).unwrap_or(u32::MAX),
            out: Vec::new(),
            beyond: false,
        };
        self.each_code(ctx, id, count, sel, &mut sink)?;
        Ok((!sink.beyond).then_some(sink.out))
    }

    /// The smallest and largest entry of `table` (a dictionary's entries) among the codes
    /// of all `count` values (`sel` = `None`) or of those `sel` selects, with no value
    /// materialised: byte codes of most spans folded through the entries' ranks
    /// ([`rank_extremes`](Self::rank_extremes)), others looked up a few thousand at a time
    /// into a buffer that stays in L1 ([`Extremes`]). `Ok(Some(None))` when no value is
    /// selected; `Ok(None)` if a code lies past the table (the caller's decode then
    /// reports it). `memo`, when `table` holds the entries of a dictionary other chunks
    /// share, keeps the entries' ranks for them.
    pub(crate) fn extremes(
        &self,
        ctx: &Ctx<'_>,
        id: NodeId,
        count: usize,
        sel: Option<&Bitmap>,
        table: &[i64],
        memo: Option<&DictionaryMemo>,
    ) -> Result<Option<Option<(i64, i64)>>> {
        let dense = sel.is_none_or(|s| s.count_ones() * EXTREMES_GATHER_EVERY > count);
        if self.bits <= 8 && table.len() <= 256 && dense {
            let ranks = match memo {
                Some(m) => m.ranks(table.len(), || EntryRanks::new(table)),
                None => Rc::new(EntryRanks::new(table)),
            };
            return self.rank_extremes(ctx, id, count, sel, table, &ranks);
        }
        let mut sink = Extremes {
            table,
            level: Level::active(),
            buf: Vec::new(),
            range: None,
            beyond: false,
        };
        self.each_code(ctx, id, count, sel, &mut sink)?;
        Ok((!sink.beyond).then_some(sink.range))
    }

    /// [`extremes`](Self::extremes) for byte codes over at most 256 entries, most spans
    /// selected: each span unpacked to bytes in L1 and folded through the entries' ranks
    /// under the span's selection bits ([`sift_bits::extreme::rank_extremes`]), with no
    /// code compacted and no entry looked up per value.
    fn rank_extremes(
        &self,
        ctx: &Ctx<'_>,
        id: NodeId,
        count: usize,
        sel: Option<&Bitmap>,
        table: &[i64],
        EntryRanks { order, ranks }: &EntryRanks,
    ) -> Result<Option<Option<(i64, i64)>>> {
        let (bytes, runs) = self.runs(ctx, id, count)?;
        let (bits, level) = (u32::from(self.bits), Level::active());
        let picked = |start: usize, len: usize| {
            sel.is_none_or(|s| count_ones_in_words(s.words(), start..start + len) > 0)
        };
        let mut acc: Option<RankExtremes> = None;
        with_scratch(
            |Scratch {
                 span,
                 part,
                 buffers: SpanBuffers { bytes: codes, .. },
                 ..
             }| {
                self.walk(bytes, &runs, span, picked, |start, len, seg| {
                    let found = match seg {
                        Segment::Repeat(v) => picked(start, len).then(|| {
                            // Repeated values are `bits` ≤ 8 wide.
                            let c = v as u8;
                            let r = ranks[usize::from(c)];
                            RankExtremes {
                                lo: r,
                                hi: r,
                                top: c,
                            }
                        }),
                        Segment::Packed(packed) => {
                            codes.resize(len, 0);
                            sift_bits::unpack::unpack_to::<u8>(packed, bits, codes)
                                .map_err(|e| corrupt(format!("packed run: {e}")))?;
                            let mask = sel.map(|s| {
                                bits_range(s.words(), start, len, part);
                                part.as_slice()
                            });
                            rank_extremes(level, codes, mask, ranks)
                        }
                    };
                    if let Some(f) = found {
                        acc = Some(acc.map_or(f, |a| a.fold(f)));
                    }
                    Ok(())
                })
            },
        )?;
        match acc {
            None => Ok(Some(None)),
            Some(a) if usize::from(a.top) >= table.len() => Ok(None),
            Some(a) => Ok(Some(Some((
                table[order[usize::from(a.lo)]],
                table[order[usize::from(a.hi)]],
            )))),
        }
    }

    /// The codes of all `count` values (`sel` = `None`) or of those `sel` selects, handed
    /// to `sink` in order, a span at a time in L1: they are never held as 64-bit integers.
    fn each_code(
        &self,
        ctx: &Ctx<'_>,
        id: NodeId,
        count: usize,
        sel: Option<&Bitmap>,
        sink: &mut impl CodeSink,
    ) -> Result<()> {
        if let Some(sel) = sel {
            return self.select_into(ctx, id, count, sel, sink);
        }
        sink.reserve(count);
        let (bytes, runs) = self.runs(ctx, id, count)?;
        let bits = u32::from(self.bits);
        with_scratch(|Scratch { span, buffers, .. }| {
            let codes = &mut buffers.codes;
            self.walk(
                bytes,
                &runs,
                span,
                |_, _| true,
                |_, len, seg| {
                    match seg {
                        Segment::Repeat(v) => sink.repeat(v, len),
                        Segment::Packed(packed) => {
                            codes.resize(len, 0);
                            sift_bits::unpack::unpack_to(packed, bits, codes)
                                .map_err(|e| corrupt(format!("packed run: {e}")))?;
                            sink.narrow(codes);
                        }
                    }
                    Ok(())
                },
            )
        })
    }

    /// The values selected by `sel` (over `count` values), handed to `sink` in order.
    fn select_into(
        &self,
        ctx: &Ctx<'_>,
        id: NodeId,
        count: usize,
        sel: &Bitmap,
        sink: &mut impl CodeSink,
    ) -> Result<()> {
        if sel.len() != count {
            return Err(self.context(id)(format!(
                "selection of {} values for {count}",
                sel.len()
            )));
        }
        let (bits, level) = (u32::from(self.bits), Level::active());
        let words = sel.words();
        let ones = sel.count_ones();
        sink.reserve(ones);
        // Values gathered one by one, handed over a run or span at a time.
        let mut picked: Vec<u64> = Vec::new();
        if gathered(ones, count) {
            // Sparse: each selected value read where its run stores it as the run's header
            // is read (its bytes are then in cache), with no run table and no span copied
            // (spans would all be copied: at one value in 32, every span of 8,192 holds
            // some).
            let bytes = ctx.bufs.get(self.buffer, 0)?;
            let mut reader = RunReader::new(self.bits, bytes, count).map_err(self.context(id))?;
            while let Some(run) = reader.next_run().map_err(self.context(id))? {
                match run.kind {
                    Kind::Repeat(v) => sink.repeat(
                        v,
                        count_ones_in_words(words, run.start..run.start + run.len),
                    ),
                    Kind::Packed(at) => {
                        picked.clear();
                        gather_stream(bytes, at, bits, words, run.start, run.len, &mut picked);
                        sink.wide(&picked);
                    }
                }
            }
            return Ok(());
        }
        let (bytes, runs) = self.runs(ctx, id, count)?;
        with_scratch(
            |Scratch {
                 span,
                 kept,
                 part,
                 picked,
                 buffers: SpanBuffers { codes, .. },
             }| {
                self.walk(
                    bytes,
                    &runs,
                    span,
                    |start, len| count_ones_in_words(words, start..start + len) > 0,
                    |start, len, seg| {
                        match seg {
                            Segment::Repeat(v) => {
                                sink.repeat(v, count_ones_in_words(words, start..start + len))
                            }
                            Segment::Packed(packed) => {
                                bits_range(words, start, len, part);
                                let ones = count_ones_in_words(words, start..start + len);
                                if gathered(ones, len) {
                                    picked.clear();
                                    gather(packed, bits, part, picked);
                                    sink.wide(picked);
                                } else {
                                    // Unpacked into L1 (codes are at most 32 bits), then
                                    // compacted (VPCOMPRESS where available).
                                    codes.resize(len, 0u32);
                                    sift_bits::unpack::unpack_to(packed, bits, codes)
                                        .map_err(|e| corrupt(format!("packed run: {e}")))?;
                                    kept.resize(ones + SLACK, 0u32);
                                    let k =
                                        sift_bits::compact::compact_words(level, codes, part, kept);
                                    sink.narrow(&kept[..k.min(ones)]);
                                }
                            }
                        }
                        Ok(())
                    },
                )
            },
        )
    }

    /// The values in `lo..=hi` (both within the codes' span, `lo <= hi`).
    fn in_range(
        &self,
        ctx: &Ctx<'_>,
        id: NodeId,
        count: usize,
        lo: u64,
        hi: u64,
    ) -> Result<Bitmap> {
        if self.bits == 1 {
            let bytes = ctx.bufs.get(self.buffer, 0)?;
            let words = one_bit_words(bytes, count).map_err(self.context(id))?;
            let mut out =
                Bitmap::from_words(words, count).ok_or_else(|| corrupt("hybrid bitmap"))?;
            // lo..=hi is 0..=0, 1..=1 or 0..=1.
            match (lo, hi) {
                (0, 0) => out.not_assign(),
                (0, _) => return Ok(Bitmap::ones(count)),
                _ => {}
            }
            return Ok(out);
        }
        let (bits, level) = (u32::from(self.bits), Level::active());
        if lo == 0 && hi >= low_mask(bits) {
            // Every value: the stream is still checked.
            self.runs(ctx, id, count)?;
            return Ok(Bitmap::ones(count));
        }
        let mut part = Bitmap::default();
        self.matching(
            ctx,
            id,
            count,
            |v| lo <= v && v <= hi,
            |packed, len, buffers| {
                sift_bits::packed_cmp::compare_into(
                    level,
                    packed,
                    bits,
                    len,
                    Predicate::Between(lo, hi),
                    &mut part,
                )
                .map_err(|e| corrupt(format!("packed run: {e}")))?;
                buffers.words.clear();
                buffers.words.extend_from_slice(part.words());
                Ok(())
            },
        )
    }

    /// The values `v` with `set.mask[v]` (a dictionary's matching codes): repeated runs
    /// decided once, bit-packed blocks unpacked into a small reused buffer and looked up
    /// there, so that no code is materialised beyond one block. A value beyond the mask
    /// matches nothing and is flagged in `set`.
    fn in_set(&self, ctx: &Ctx<'_>, id: NodeId, count: usize, set: &CodeMask) -> Result<Bitmap> {
        let bits = u32::from(self.bits);
        let level = sift_bits::Level::active();
        let mut beyond = false;
        let out = self.matching(
            ctx,
            id,
            count,
            |v| set.eval(v as i64),
            |packed,
             len,
             SpanBuffers {
                 codes,
                 bytes,
                 words,
             }| {
                let unpacked = |e| corrupt(format!("packed run: {e:?}"));
                words.resize(len.div_ceil(64), 0);
                // Byte codes go through the set's 256-entry table, wider ones through its
                // bitset.
                beyond |= if bits <= 8 {
                    bytes.resize(len, 0);
                    sift_bits::unpack::unpack_to::<u8>(packed, bits, bytes).map_err(unpacked)?;
                    set.set.lookup_bytes(level, bytes, words)
                } else {
                    codes.resize(len, 0);
                    sift_bits::unpack::unpack_to::<u32>(packed, bits, codes).map_err(unpacked)?;
                    set.set.lookup(level, codes, words)
                };
                Ok(())
            },
        )?;
        if beyond {
            set.out_of_range.set(true);
        }
        Ok(out)
    }

    /// The bitmap of the first `count` values a filter keeps: a repeated run kept or
    /// dropped whole by `keep(v)`; each bit-packed span handed to `span_bits(packed, len,
    /// buffers)`, which leaves its bits (one per value, from bit 0) in `buffers.words`, ORed
    /// into the result at the span's start.
    fn matching(
        &self,
        ctx: &Ctx<'_>,
        id: NodeId,
        count: usize,
        keep: impl Fn(u64) -> bool,
        mut span_bits: impl FnMut(&[u64], usize, &mut SpanBuffers) -> Result<()>,
    ) -> Result<Bitmap> {
        let (bytes, runs) = self.runs(ctx, id, count)?;
        let mut out = vec![0u64; count.div_ceil(64)];
        with_scratch(|Scratch { span, buffers, .. }| {
            self.walk(
                bytes,
                &runs,
                span,
                |_, _| true,
                |start, len, seg| {
                    match seg {
                        Segment::Repeat(v) => {
                            if keep(v) {
                                set_range(&mut out, start, start + len);
                            }
                        }
                        Segment::Packed(packed) => {
                            span_bits(packed, len, buffers)?;
                            or_at(&mut out, start, &buffers.words);
                        }
                    }
                    Ok(())
                },
            )
        })?;
        Bitmap::from_words(out, count).ok_or_else(|| corrupt("hybrid bitmap"))
    }

    /// `lo <= v <= hi` (xor `negate`) on the values, moved into the codes' span.
    fn range(
        &self,
        ctx: &Ctx<'_>,
        id: NodeId,
        count: usize,
        lo: i128,
        hi: i128,
        negate: bool,
    ) -> Result<Bitmap> {
        let max = i128::from(low_mask(u32::from(self.bits.min(MAX_BITS))));
        let (lo, hi) = (lo.max(0), hi.min(max));
        if lo > hi {
            // Still checks the stream, as every other answer does.
            self.runs(ctx, id, count)?;
            return Ok(uniform(count, negate));
        }
        // Both lie in 0..=max, so the casts are exact.
        let mut out = self.in_range(ctx, id, count, lo as u64, hi as u64)?;
        if negate {
            out.not_assign();
        }
        Ok(out)
    }

    /// Whether this node holds booleans (one bit per value, 1 = true).
    fn boolean(&self) -> bool {
        self.bits == 1
    }

    /// Whether this node holds values of `domain`: integers, and booleans at one bit.
    fn holds(&self, domain: Domain) -> bool {
        domain == Domain::Int || (domain == Domain::Bool && self.boolean())
    }
}

/// A table of at most 256 entries in order of value, and each entry's place in that order
/// (what [`Hybrid::extremes`] folds byte codes through).
pub(crate) struct EntryRanks {
    order: Vec<usize>,
    ranks: [u8; 256],
}

impl EntryRanks {
    fn new(table: &[i64]) -> Self {
        let mut order: Vec<usize> = (0..table.len()).collect();
        order.sort_by_key(|&i| table[i]);
        let mut ranks = [0u8; 256];
        for (r, &i) in order.iter().enumerate() {
            ranks[i] = r as u8;
        }
        Self { order, ranks }
    }
}

/// Codes as values of domain `V`: integers, or booleans from 1-bit codes.
fn values<V: Value>(codes: Vec<u64>, boolean: bool) -> Option<Vec<V>> {
    match V::DOMAIN {
        // Codes are below 2^32, so the cast is exact; the collect reuses the allocation.
        Domain::Int => V::from_ints(codes.into_iter().map(|c| c as i64).collect()),
        Domain::Bool if boolean => Some(
            codes
                .into_iter()
                .map(|c| V::from_le_bytes8([u8::from(c != 0), 0, 0, 0, 0, 0, 0, 0]))
                .collect(),
        ),
        _ => None,
    }
}

/// Where decoded or selected codes go, in order.
trait CodeSink {
    /// Room for `n` more codes (the caller counts them once).
    fn reserve(&mut self, n: usize);
    /// `n` copies of `code`.
    fn repeat(&mut self, code: u64, n: usize);
    /// Codes read one by one.
    fn wide(&mut self, codes: &[u64]);
    /// Codes unpacked a span at a time.
    fn narrow(&mut self, codes: &[u32]);
}

impl CodeSink for Vec<u64> {
    fn reserve(&mut self, n: usize) {
        Vec::reserve(self, n);
    }

    fn repeat(&mut self, code: u64, n: usize) {
        self.extend(std::iter::repeat_n(code, n));
    }

    fn wide(&mut self, codes: &[u64]) {
        self.extend_from_slice(codes);
    }

    fn narrow(&mut self, codes: &[u32]) {
        self.extend(codes.iter().map(|&c| u64::from(c)));
    }
}

/// Codes as Arrow dictionary keys (`i32`) as they arrive; a code not below `len` sets
/// `beyond` (and is not kept).
struct Keys {
    /// The dictionary's length (it fits `i32`).
    len: u32,
    out: Vec<i32>,
    beyond: bool,
}

impl CodeSink for Keys {
    fn reserve(&mut self, n: usize) {
        self.out.reserve(n);
    }

    fn repeat(&mut self, code: u64, n: usize) {
        match code < u64::from(self.len) {
            true => self.out.extend(std::iter::repeat_n(code as i32, n)),
            false => self.beyond |= n > 0,
        }
    }

    fn wide(&mut self, codes: &[u64]) {
        match codes.iter().all(|&c| c < u64::from(self.len)) {
            true => self.out.extend(codes.iter().map(|&c| c as i32)),
            false => self.beyond = true,
        }
    }

    fn narrow(&mut self, codes: &[u32]) {
        // The check is a pass of its own without a branch per code (it vectorises); the
        // casts are then exact.
        match codes.iter().fold(false, |bad, &c| bad | (c >= self.len)) {
            false => self.out.extend(codes.iter().map(|&c| c as i32)),
            true => self.beyond = true,
        }
    }
}

/// Codes looked up in a dictionary's entries as they arrive; a code past the entries
/// sets `beyond` (and is not looked up).
struct Lookup<'t, V> {
    table: &'t [V],
    out: Vec<V>,
    beyond: bool,
}

impl<V: Value> CodeSink for Lookup<'_, V> {
    fn reserve(&mut self, n: usize) {
        self.out.reserve(n);
    }

    fn repeat(&mut self, code: u64, n: usize) {
        match usize::try_from(code).ok().and_then(|c| self.table.get(c)) {
            Some(&v) => self.out.extend(std::iter::repeat_n(v, n)),
            None => self.beyond |= n > 0,
        }
    }

    fn wide(&mut self, codes: &[u64]) {
        self.beyond |= !crate::domain::look_up_scalar(codes, self.table, &mut self.out);
    }

    fn narrow(&mut self, codes: &[u32]) {
        self.beyond |= !V::look_up(codes, self.table, &mut self.out);
    }
}

/// Codes folded into the smallest and largest of their entries in `table`: looked up at
/// most [`EXTREMES_PIECE`] at a time into `buf` (reused, so it stays in L1), whose extremes
/// are then taken with the SIMD kernel. A code past the entries sets `beyond`.
struct Extremes<'t> {
    table: &'t [i64],
    level: Level,
    buf: Vec<i64>,
    /// The smallest and largest entry so far.
    range: Option<(i64, i64)>,
    beyond: bool,
}

/// Codes looked up at once by [`Extremes`]: 16 KiB of entries.
const EXTREMES_PIECE: usize = 2048;

impl Extremes<'_> {
    fn fold(&mut self, lo: i64, hi: i64) {
        self.range = Some(match self.range {
            Some((a, b)) => (a.min(lo), b.max(hi)),
            None => (lo, hi),
        });
    }

    /// Folds the entries in `buf`.
    fn fold_buf(&mut self) {
        let lo = sift_bits::extreme::extreme_i64(self.level, &self.buf, None, false);
        let hi = sift_bits::extreme::extreme_i64(self.level, &self.buf, None, true);
        if let (Some(lo), Some(hi)) = (lo, hi) {
            self.fold(lo, hi);
        }
    }
}

impl CodeSink for Extremes<'_> {
    fn reserve(&mut self, _: usize) {}

    fn repeat(&mut self, code: u64, n: usize) {
        if n > 0 {
            self.wide(&[code]);
        }
    }

    fn wide(&mut self, codes: &[u64]) {
        // Codes gathered one by one (a sparse selection) come a few per run: folded as they
        // are, which costs less than a kernel's setup.
        for &c in codes {
            match usize::try_from(c).ok().and_then(|c| self.table.get(c)) {
                Some(&v) => self.fold(v, v),
                None => self.beyond = true,
            }
        }
    }

    fn narrow(&mut self, codes: &[u32]) {
        for piece in codes.chunks(EXTREMES_PIECE) {
            self.buf.clear();
            self.beyond |= !i64::look_up(piece, self.table, &mut self.buf);
            self.fold_buf();
        }
    }
}

impl Encoding for Hybrid {
    const ID: u8 = 14;
    const NAME: &'static str = "hybrid";
    const DOMAINS: &'static [Domain] = &[Domain::Int, Domain::Bool];
    const FILTERS_ENCODED: bool = true;

    fn write(&self, w: &mut Writer) {
        w.u8(self.bits);
        w.varint(u64::from(self.buffer));
    }

    fn read(r: &mut Reader<'_>) -> Result<Self> {
        let bits = r.u8("hybrid bits")?;
        if bits > MAX_BITS {
            return Err(r.error(format!("hybrid bit width {bits} > {MAX_BITS}")));
        }
        Ok(Self {
            bits,
            buffer: r.varint_u32("hybrid buffer")?,
        })
    }

    fn label(&self) -> String {
        format!("hybrid{}", self.bits)
    }

    fn decode<V: Value>(
        &self,
        ctx: &Ctx<'_>,
        id: NodeId,
        count: usize,
        _depth: usize,
    ) -> Result<Option<Vec<V>>> {
        if !self.holds(V::DOMAIN) {
            return Ok(None);
        }
        Ok(values(self.codes(ctx, id, count)?, self.boolean()))
    }

    fn select<V: Value>(
        &self,
        ctx: &Ctx<'_>,
        id: NodeId,
        count: usize,
        _depth: usize,
        sel: &Bitmap,
    ) -> Result<Option<Vec<V>>> {
        if !self.holds(V::DOMAIN) {
            return Ok(None);
        }
        Ok(values(self.selected(ctx, id, count, sel)?, self.boolean()))
    }

    /// Integer ranges on the codes; a boolean predicate (1-bit codes) is its answers for
    /// `true` and `false`: the codes equal to 1, to 0, or uniform.
    fn filter<V: Value, P: DomainPred<V>>(
        &self,
        ctx: &Ctx<'_>,
        id: NodeId,
        count: usize,
        _depth: usize,
        p: &P,
    ) -> Result<Option<Bitmap>> {
        match V::DOMAIN {
            Domain::Bool if self.boolean() => {
                let on = |b: bool| p.eval(V::from_le_bytes8([u8::from(b), 0, 0, 0, 0, 0, 0, 0]));
                let code = match (on(false), on(true)) {
                    (false, true) => 1,
                    (true, false) => 0,
                    (both, _) => {
                        // Still checks the stream, as every other answer does.
                        self.runs(ctx, id, count)?;
                        return Ok(Some(uniform(count, both)));
                    }
                };
                self.range(ctx, id, count, code, code, false).map(Some)
            }
            Domain::Int => {
                if let Some(set) = p.code_mask() {
                    return self.in_set(ctx, id, count, set).map(Some);
                }
                let Some((lo, hi, negate)) = p.int_range() else {
                    return Ok(None);
                };
                self.range(ctx, id, count, lo, hi, negate).map(Some)
            }
            _ => Ok(None),
        }
    }

    fn decode_native<T: NativeInt>(
        &self,
        ctx: &Ctx<'_>,
        id: NodeId,
        count: usize,
    ) -> Result<Option<Vec<T>>> {
        let codes = self.codes(ctx, id, count)?;
        let max = low_mask(u32::from(self.bits));
        if T::from_i128(i128::from(max)).is_some() {
            // Every code fits `T`, so adding it to 0 is exact.
            return Ok(Some(
                codes
                    .into_iter()
                    .map(|c| T::default().add_code(c))
                    .collect(),
            ));
        }
        codes
            .into_iter()
            .map(|c| {
                T::from_i128(i128::from(c))
                    .ok_or_else(|| self.context(id)(format!("value {c} out of the column's range")))
            })
            .collect::<Result<Vec<T>>>()
            .map(Some)
    }

    fn scan_cost(&self, _enc: &ColumnEncoding, _id: NodeId) -> Option<f64> {
        // Bit-packed like `For`, plus the copy out of the run stream and a little per run.
        Some(0.15 + f64::from(self.bits) / 16.0)
    }
}

#[cfg(test)]
#[path = "../../tests/common/levels.rs"]
mod levels_writer;

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::levels_writer::{uleb, write_levels};
    use super::*;
    use crate::predicate::{BoolEq, IntRange};
    use crate::tree::{Node, Validity};
    use proptest::prelude::*;

    fn mix(x: u64) -> u64 {
        let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// One run for the reference writer.
    #[derive(Debug, Clone)]
    enum Spec {
        /// `n` copies of one value.
        Repeat { n: usize, seed: u64 },
        /// `ceil(n / 8)` groups of 8 values; `few`: drawn from three values.
        Packed { n: usize, seed: u64, few: bool },
        /// A run of no values (`packed` or repeated).
        Empty { packed: bool },
    }

    fn specs(max_runs: usize, max_len: usize) -> impl Strategy<Value = Vec<Spec>> {
        let spec = (0u8..7, 1usize..max_len, any::<u64>()).prop_map(|(k, n, seed)| match k {
            0 | 1 => Spec::Repeat { n, seed },
            2 | 3 => Spec::Packed {
                n,
                seed,
                few: false,
            },
            4 | 5 => Spec::Packed { n, seed, few: true },
            _ => Spec::Empty {
                packed: seed & 1 == 1,
            },
        });
        proptest::collection::vec(spec, 0..max_runs)
    }

    /// The reference writer: the run stream of `specs` at `bits`, and every value its runs
    /// hold (the padding of bit-packed runs included).
    fn write_stream(bits: u8, specs: &[Spec]) -> (Vec<u8>, Vec<u64>) {
        let mask = low_mask(u32::from(bits));
        let value_bytes = usize::from(bits).div_ceil(8);
        let (mut out, mut values) = (Vec::new(), Vec::new());
        for s in specs {
            match *s {
                Spec::Repeat { n, seed } => {
                    let v = mix(seed) & mask;
                    uleb(&mut out, (n as u64) << 1);
                    out.extend_from_slice(&v.to_le_bytes()[..value_bytes]);
                    values.extend(std::iter::repeat_n(v, n));
                }
                Spec::Packed { n, seed, few } => {
                    let groups = n.div_ceil(8);
                    let vals: Vec<u64> = (0..groups * 8)
                        .map(|i| {
                            let r = mix(seed ^ (i as u64).wrapping_mul(0x100_0000_01B3));
                            if few { (r % 3) & mask } else { r & mask }
                        })
                        .collect();
                    uleb(&mut out, ((groups as u64) << 1) | 1);
                    let mut bytes = Vec::new();
                    sift_bits::pack::extend_le_bytes(
                        &mut bytes,
                        &sift_bits::pack::pack(&vals, u32::from(bits)),
                    );
                    out.extend_from_slice(&bytes[..groups * usize::from(bits)]);
                    values.extend(vals);
                }
                Spec::Empty { packed } => {
                    if packed {
                        uleb(&mut out, 1);
                    } else {
                        uleb(&mut out, 0);
                        out.extend(std::iter::repeat_n(0u8, value_bytes));
                    }
                }
            }
        }
        (out, values)
    }

    /// Runs `f` on a chunk whose node 1 is a hybrid node over `stream` (node 0 a
    /// placeholder, so that the node also serves as a validity root).
    fn with_node<R>(bits: u8, stream: &[u8], f: impl FnOnce(&Ctx<'_>) -> R) -> R {
        let enc = ColumnEncoding {
            validity: Validity::Encoded { root: 1 },
            nodes: vec![
                Node::placeholder(),
                Node::Hybrid(Hybrid { bits, buffer: 0 }),
            ],
        };
        let bufs: Vec<&[u8]> = vec![stream];
        f(&Ctx::new(&enc, &bufs))
    }

    fn bitmap(bits: impl IntoIterator<Item = bool>) -> Bitmap {
        Bitmap::from_bools(bits)
    }

    /// `n` one-bit values, each 0 with probability `nulls` in 1,000.
    fn levels(n: usize, nulls: u64, seed: u64) -> Vec<bool> {
        (0..n as u64)
            .map(|i| mix(seed ^ i) % 1000 >= nulls)
            .collect()
    }

    /// A bound for a range predicate: a value of the data, anything around the codes'
    /// span, or outside it on either side.
    fn bound(r: u64, values: &[u64], bits: u8) -> i128 {
        let max = i128::from(low_mask(u32::from(bits)));
        match r % 5 {
            0 if !values.is_empty() => i128::from(values[(r / 5) as usize % values.len()]),
            1 => -1 - i128::from(r % 100),
            2 => max + 1 + i128::from(r % 100),
            3 => i128::from(r % 4),
            _ => i128::from(r >> 3) % (max + 8) - 4,
        }
    }

    fn check(
        bits: u8,
        stream: &[u8],
        values: &[u64],
        sel: &Bitmap,
        ranges: &[(i128, i128)],
    ) -> std::result::Result<(), TestCaseError> {
        let count = values.len();
        let fail = |e: crate::EncodingError| TestCaseError::fail(e.to_string());
        with_node(bits, stream, |ctx| {
            let ints: Vec<i64> = values.iter().map(|&v| v as i64).collect();
            prop_assert_eq!(&i64::decode(ctx, 1, count, 0).map_err(fail)?, &ints);
            let node = ctx.node(1, 0).map_err(fail)?;
            prop_assert_eq!(
                node.decode_native::<u64>(ctx, 1, count).map_err(fail)?,
                Some(values.to_vec())
            );
            let narrow = node.decode_native::<i16>(ctx, 1, count);
            match values
                .iter()
                .map(|&v| i16::try_from(v).ok())
                .collect::<Option<Vec<_>>>()
            {
                Some(want) => prop_assert_eq!(narrow.map_err(fail)?, Some(want)),
                None => prop_assert!(narrow.is_err()),
            }
            let want: Vec<i64> = sel.iter_ones().map(|i| ints[i]).collect();
            prop_assert_eq!(i64::select(ctx, 1, count, 0, sel).map_err(fail)?, want);
            // Looked up in a table holding every code, and in one a code short (when the
            // values are small enough to tabulate).
            let top = values.iter().copied().max().unwrap_or(0);
            if top < 1 << 16 {
                let h = node.clone().into_hybrid();
                let table: Vec<i64> = (0..=top as i64).map(|c| c * 7 - 3).collect();
                let looked = |sel: Option<&Bitmap>, table: &[i64]| {
                    h.lookup(ctx, 1, count, sel, table).map_err(fail)
                };
                let all: Vec<i64> = values.iter().map(|&v| table[v as usize]).collect();
                let some: Vec<i64> = sel.iter_ones().map(|i| all[i]).collect();
                prop_assert_eq!(looked(None, &table)?, Some(all));
                prop_assert_eq!(looked(Some(sel), &table)?, Some(some));
                let short = &table[..top as usize];
                let top_selected = sel.iter_ones().any(|i| values[i] == top);
                prop_assert_eq!(looked(None, short)?.is_none(), count > 0);
                prop_assert_eq!(looked(Some(sel), short)?.is_none(), top_selected);
                // As dictionary keys over a dictionary of every code, and one a code short.
                let keys = |sel: Option<&Bitmap>, len: usize| {
                    h.keys(ctx, 1, count, sel, len).map_err(fail)
                };
                let all: Vec<i32> = values.iter().map(|&v| v as i32).collect();
                let some: Vec<i32> = sel.iter_ones().map(|i| all[i]).collect();
                prop_assert_eq!(keys(None, top as usize + 1)?, Some(all));
                prop_assert_eq!(keys(Some(sel), top as usize + 1)?, Some(some));
                prop_assert_eq!(keys(None, top as usize)?.is_none(), count > 0);
                prop_assert_eq!(keys(Some(sel), top as usize)?.is_none(), top_selected);
                // Extremes over entries out of order (the rank path for byte codes), and
                // the same table a code short.
                let scrambled: Vec<i64> =
                    (0..=top as i64).map(|c| (c * 7919) % 1013 - 500).collect();
                let span = |rows: &mut dyn Iterator<Item = usize>| {
                    let vals: Vec<i64> = rows.map(|i| scrambled[values[i] as usize]).collect();
                    vals.iter().min().copied().zip(vals.iter().max().copied())
                };
                let extremes = |sel: Option<&Bitmap>, table: &[i64]| {
                    h.extremes(ctx, 1, count, sel, table, None).map_err(fail)
                };
                prop_assert_eq!(extremes(None, &scrambled)?, Some(span(&mut (0..count))));
                prop_assert_eq!(
                    extremes(Some(sel), &scrambled)?,
                    Some(span(&mut sel.iter_ones()))
                );
                let short = &scrambled[..top as usize];
                prop_assert_eq!(extremes(None, short)?.is_none(), count > 0);
                prop_assert_eq!(extremes(Some(sel), short)?.is_none(), top_selected);
            }
            for &(lo, hi) in ranges {
                for negate in [false, true] {
                    let want = bitmap(
                        values
                            .iter()
                            .map(|&v| (lo <= i128::from(v) && i128::from(v) <= hi) != negate),
                    );
                    let p = IntRange::new(lo, hi, negate);
                    prop_assert_eq!(&i64::filter(ctx, 1, count, 0, &p).map_err(fail)?, &want);
                    let own = node
                        .clone()
                        .into_hybrid()
                        .filter::<i64, _>(ctx, 1, count, 0, &p)
                        .map_err(fail)?;
                    prop_assert_eq!(own.as_ref(), Some(&want), "[{}, {}] {}", lo, hi, negate);
                }
            }
            Ok(())
        })
    }

    impl Node {
        fn into_hybrid(self) -> Hybrid {
            match self {
                Node::Hybrid(h) => h,
                _ => Hybrid { bits: 0, buffer: 0 },
            }
        }
    }

    /// A dictionary over hybrid codes (a Parquet dictionary page) decodes its codes through
    /// the lookup; a code past the dictionary is an error naming it, whether all rows are
    /// decoded or some selected, never a value read past the entries.
    #[test]
    fn dictionary_codes_past_the_entries_are_errors() {
        use crate::encodings::{Dict, Plain};
        let entries: Vec<u8> = [10i64, 20, 30]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let run = |codes: [u64; 8]| {
            // One bit-packed run of 8 three-bit codes (header 0b11: one group, packed).
            let packed = codes
                .iter()
                .enumerate()
                .fold(0u32, |w, (i, &c)| w | (c as u32) << (3 * i));
            let mut stream = vec![0b11u8];
            stream.extend_from_slice(&packed.to_le_bytes()[..3]);
            stream
        };
        let enc = ColumnEncoding {
            validity: Validity::AllValid,
            nodes: vec![
                Node::Dict(Dict {
                    values: 1,
                    len: 3,
                    codes: 2,
                }),
                Node::Plain(Plain {
                    width: 8,
                    buffer: 0,
                }),
                Node::Hybrid(Hybrid { bits: 3, buffer: 1 }),
            ],
        };
        let sel = Bitmap::from_bools((0..8).map(|i| i != 1));
        let read = |codes: [u64; 8]| {
            let stream = run(codes);
            let bufs: Vec<&[u8]> = vec![&entries, &stream];
            let ctx = Ctx::new(&enc, &bufs);
            let all = i64::decode(&ctx, 0, 8, 0).map_err(|e| e.to_string());
            let some = i64::select(&ctx, 0, 8, 0, &sel).map_err(|e| e.to_string());
            (all, some)
        };
        let (all, some) = read([0, 1, 2, 2, 1, 0, 0, 2]);
        assert_eq!(all, Ok(vec![10, 20, 30, 30, 20, 10, 10, 30]));
        assert_eq!(some, Ok(vec![10, 30, 30, 20, 10, 10, 30]));
        let (all, some) = read([0, 1, 2, 5, 1, 0, 0, 2]);
        for got in [all, some] {
            assert!(
                got.as_ref()
                    .is_err_and(|e| e.contains("index 5 out of range 0..=2")),
                "{got:?}"
            );
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        /// Decode, selection and range filters equal the values the reference wrote, for
        /// every width, with the last run cut short (padding) and bytes after the stream.
        #[test]
        fn equals_the_reference(
            bits in 0u8..=32,
            specs in specs(24, 400),
            cut in 0usize..12,
            garbage in proptest::collection::vec(any::<u8>(), 0..4),
            sel_seed in any::<u64>(),
            density in prop::sample::select(vec![0u64, 1, 3, 16, 32, 48, 64]),
            bounds in proptest::collection::vec((any::<u64>(), any::<u64>()), 1..4),
        ) {
            let (mut stream, mut values) = write_stream(bits, &specs);
            values.truncate(values.len().saturating_sub(cut));
            stream.extend_from_slice(&garbage);
            // From none to all selected, sparse ones (read value by value from the
            // stream) among them.
            let sel = bitmap((0..values.len() as u64).map(|i| mix(sel_seed ^ i) % 64 < density));
            let ranges: Vec<(i128, i128)> = bounds
                .iter()
                .map(|&(a, b)| (bound(a, &values, bits), bound(b, &values, bits)))
                .collect();
            check(bits, &stream, &values, &sel, &ranges)?;
        }

        /// Streams long enough that bit-packed runs join into spans that are split (also
        /// inside runs) and that go to the block-wise selection kernel.
        #[test]
        fn long_streams(
            bits in 0u8..=32,
            specs in specs(12, 12_000),
            sel_seed in any::<u64>(),
            density in 0u64..=4,
            bounds in proptest::collection::vec((any::<u64>(), any::<u64>()), 1..3),
        ) {
            let (stream, values) = write_stream(bits, &specs);
            let sel = bitmap((0..values.len() as u64).map(|i| mix(sel_seed ^ i) % 64 < density * density * 4));
            let ranges: Vec<(i128, i128)> = bounds
                .iter()
                .map(|&(a, b)| (bound(a, &values, bits), bound(b, &values, bits)))
                .collect();
            check(bits, &stream, &values, &sel, &ranges)?;
        }

        /// One-bit streams of many runs of at most 64 values (definition levels with
        /// scattered nulls), read by the short-run path, with long runs, wide headers and
        /// the stream's last bytes among them, cut short and followed by bytes that are not
        /// runs. Runs come in any order, so a bit-packed run is followed by a repeated run
        /// that joins it in one field or is too long to, by another bit-packed run, or by
        /// an empty one.
        #[test]
        fn short_one_bit_runs(
            specs in specs(300, 80),
            cut in 0usize..70,
            garbage in proptest::collection::vec(any::<u8>(), 0..12),
            sel_seed in any::<u64>(),
        ) {
            let (mut stream, mut values) = write_stream(1, &specs);
            values.truncate(values.len().saturating_sub(cut));
            stream.extend_from_slice(&garbage);
            let sel = (0..values.len() as u64).map(|i| mix(sel_seed ^ i).is_multiple_of(4));
            let sel = bitmap(sel);
            check(1, &stream, &values, &sel, &[(0, 0), (1, 1), (0, 1)])?;
        }

        /// One-bit streams of short and long runs in any order (headers of one and two
        /// bytes), cut short and followed by bytes that are not runs, decoded into words
        /// with and without BMI2, each run on its own or not: the words of the values the
        /// stream holds.
        #[test]
        fn one_bit_words_both_ways(
            specs in specs(120, 700),
            cut in 0usize..700,
            garbage in proptest::collection::vec(any::<u8>(), 0..12),
        ) {
            let (mut stream, mut values) = write_stream(1, &specs);
            values.truncate(values.len().saturating_sub(cut));
            stream.extend_from_slice(&garbage);
            let count = values.len();
            let want = bitmap(values.iter().map(|&v| v == 1)).into_words();
            for (bmi2, join) in [false, has_bmi2()].into_iter().flat_map(|b| [(b, false), (b, true)]) {
                let got = one_bit_words_walked(&stream, count, bmi2, join);
                prop_assert_eq!(got, Ok(want.clone()));
            }
        }

        /// Definition levels as a writer encodes them, with from no value to every value
        /// null (scattered nulls: a bit-packed run and a repeated run of ones every few
        /// values), cut short and followed by bytes that are not runs, decoded into words
        /// with and without BMI2, each run on its own or not: the words of the values.
        #[test]
        fn writer_levels_into_words(
            n in 0usize..3000,
            nulls in prop::sample::select(vec![0u64, 5, 30, 100, 150, 300, 500, 900, 1000]),
            seed in any::<u64>(),
            cut in 0usize..20,
            garbage in proptest::collection::vec(any::<u8>(), 0..70),
        ) {
            let values = levels(n, nulls, seed);
            let mut stream = write_levels(&values);
            stream.extend_from_slice(&garbage);
            let count = n.saturating_sub(cut);
            let want = bitmap(values[..count].iter().copied()).into_words();
            for (bmi2, join) in [false, has_bmi2()].into_iter().flat_map(|b| [(b, false), (b, true)]) {
                let got = one_bit_words_walked(&stream, count, bmi2, join);
                prop_assert_eq!(got, Ok(want.clone()));
            }
        }

        /// One-bit streams as booleans: decoded, selected, filtered, and as a validity root.
        #[test]
        fn booleans(specs in specs(24, 400), cut in 0usize..12, sel_seed in any::<u64>()) {
            let (stream, mut values) = write_stream(1, &specs);
            values.truncate(values.len().saturating_sub(cut));
            let count = values.len();
            let bools: Vec<bool> = values.iter().map(|&v| v == 1).collect();
            let sel = bitmap((0..count as u64).map(|i| mix(sel_seed ^ i).is_multiple_of(3)));
            let fail = |e: crate::EncodingError| TestCaseError::fail(e.to_string());
            with_node(1, &stream, |ctx| {
                prop_assert_eq!(&bool::decode(ctx, 1, count, 0).map_err(fail)?, &bools);
                let want: Vec<bool> = sel.iter_ones().map(|i| bools[i]).collect();
                prop_assert_eq!(bool::select(ctx, 1, count, 0, &sel).map_err(fail)?, want);
                let yes = bitmap(bools.iter().copied());
                prop_assert_eq!(&bool::filter(ctx, 1, count, 0, &BoolEq(true)).map_err(fail)?, &yes);
                prop_assert_eq!(bool::filter(ctx, 1, count, 0, &BoolEq(false)).map_err(fail)?, yes.not());
                prop_assert_eq!(crate::validity::decode(ctx, count).map_err(fail)?, Some(yes));
                Ok(())
            })?;
        }

        /// Level bitmaps of 1- and 2-bit streams equal the reference values compared with
        /// each threshold, with the last run cut short and bytes after the stream; a
        /// stream cut anywhere gives the same bitmaps or an error.
        #[test]
        fn level_bitmaps_equal_the_reference(
            bits in 1u8..=2,
            specs in specs(40, 300),
            cut in 0usize..12,
            garbage in proptest::collection::vec(any::<u8>(), 0..4),
            thresholds in proptest::collection::vec(0u16..5, 1..4),
            at in any::<usize>(),
        ) {
            let (mut stream, mut values) = write_stream(bits, &specs);
            values.truncate(values.len().saturating_sub(cut));
            let whole = stream.clone();
            stream.extend_from_slice(&garbage);
            let want: Vec<Bitmap> = thresholds
                .iter()
                .map(|&t| bitmap(values.iter().map(|&v| v >= u64::from(t))))
                .collect();
            // Appended after a prefix of `at % 130` bits of each threshold's parity.
            let prefix: Vec<Bitmap> = (0..thresholds.len())
                .map(|k| bitmap((0..at % 130).map(|i| (i + k) % 2 == 0)))
                .collect();
            let joined: Vec<Bitmap> = prefix
                .iter()
                .zip(&want)
                .map(|(p, w)| {
                    let mut j = p.clone();
                    j.append(w);
                    j
                })
                .collect();
            let mut got = prefix.clone();
            let walked = append_level_bitmaps(bits, &stream, values.len(), &thresholds, &mut got);
            prop_assert_eq!(walked, Ok(()));
            prop_assert_eq!(&got, &joined);
            let short = &whole[..at % (whole.len() + 1)];
            let mut got = prefix.clone();
            match append_level_bitmaps(bits, short, values.len(), &thresholds, &mut got) {
                Ok(()) => prop_assert_eq!(&got, &joined),
                // An error leaves the bitmaps as they were.
                Err(_) => prop_assert_eq!(&got, &prefix),
            }
        }

        /// A stream cut anywhere decodes to the same values or fails; it never panics.
        #[test]
        fn truncated_streams_fail_cleanly(bits in 0u8..=32, specs in specs(6, 400), at in any::<usize>()) {
            let (stream, values) = write_stream(bits, &specs);
            let cut = &stream[..at % (stream.len() + 1)];
            let sel = Bitmap::ones(values.len());
            with_node(bits, cut, |ctx| {
                let ints: Vec<i64> = values.iter().map(|&v| v as i64).collect();
                if let Ok(out) = i64::decode(ctx, 1, values.len(), 0) {
                    prop_assert_eq!(out, ints.clone());
                }
                if let Ok(out) = i64::select(ctx, 1, values.len(), 0, &sel) {
                    prop_assert_eq!(out, ints.clone());
                }
                // One value in 64: read run by run as the headers are read.
                let sparse = bitmap((0..values.len()).map(|i| i % 64 == 0));
                if let Ok(out) = i64::select(ctx, 1, values.len(), 0, &sparse) {
                    let want: Vec<i64> = sparse.iter_ones().map(|i| ints[i]).collect();
                    prop_assert_eq!(out, want);
                }
                let _ = i64::filter(ctx, 1, values.len(), 0, &IntRange::new(1, 5, false));
                Ok(())
            })?;
        }
    }

    fn decode_err(bits: u8, stream: &[u8], count: usize) -> String {
        with_node(bits, stream, |ctx| {
            i64::decode(ctx, 1, count, 0)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default()
        })
    }

    /// Level bitmaps of other lengths than one another or than the thresholds, and levels
    /// wider than 2 bits, are refused and leave the bitmaps as they were.
    #[test]
    fn level_bitmaps_refuse_mismatched_bitmaps_and_wide_levels() {
        let stream = [2u8 << 1, 1];
        let mut uneven = vec![Bitmap::zeros(3), Bitmap::zeros(5)];
        let err = append_level_bitmaps(1, &stream, 2, &[1, 1], &mut uneven).unwrap_err();
        assert_eq!(err, "2 level bitmaps of lengths [3, 5] for 2 thresholds");
        assert_eq!(uneven, vec![Bitmap::zeros(3), Bitmap::zeros(5)]);
        let mut one = vec![Bitmap::zeros(3)];
        let err = append_level_bitmaps(1, &stream, 2, &[1, 1], &mut one).unwrap_err();
        assert_eq!(err, "1 level bitmaps of lengths [3] for 2 thresholds");
        let mut wide = vec![Bitmap::ones(4)];
        let err = append_level_bitmaps(3, &stream, 2, &[1], &mut wide).unwrap_err();
        assert_eq!(err, "levels of 3 bits: only 1 and 2 are read as bitmaps");
        assert_eq!(wide, vec![Bitmap::ones(4)]);
    }

    #[test]
    fn hostile_streams_are_errors() {
        let has = |err: String, want: &str| assert!(err.contains(want), "{err:?} lacks {want:?}");
        has(decode_err(33, &[2, 0, 0, 0, 0, 0], 1), "bit width 33 > 32");
        has(decode_err(8, &[0xFF; 11], 1), "overflows 64 bits");
        has(decode_err(8, &[0x80, 0x80], 1), "cut off");
        // The stream ends before the values asked for.
        has(decode_err(8, &[10, 7], 6), "ends after 5 of 6 values");
        has(
            decode_err(8, &[10], 6),
            "value of the run at byte 0 is cut off",
        );
        // A repeated value wider than the bit width.
        has(decode_err(3, &[10, 9], 5), "repeats 9, wider than 3 bits");
        // A bit-packed run claiming 2^62 groups over a few bytes.
        let mut huge = Vec::new();
        uleb(&mut huge, (1 << 63) | 1);
        huge.extend_from_slice(&[0; 10]);
        has(
            decode_err(8, &huge, 100),
            "needs 100 bytes for 100 values, 10 left",
        );
        // Runs of nothing, a megabyte of them: the stream ends, nothing is tabled.
        has(decode_err(8, &vec![1u8; 1 << 20], 10), "ends after 0 of 10");
        has(
            decode_err(8, &[0, 7].repeat(1 << 19), 10),
            "ends after 0 of 10",
        );
        // Booleans only at one bit.
        with_node(2, &[8, 1], |ctx| {
            let err = bool::decode(ctx, 1, 4, 0).err().map(|e| e.to_string());
            assert!(err.is_some_and(|e| e.contains("cannot hold booleans")));
        });
        // A footer naming a width beyond 32.
        let mut w = Writer::new();
        w.u8(33);
        w.varint(0);
        assert!(Hybrid::read(&mut Reader::new(w.as_bytes())).is_err());
    }

    #[test]
    fn huge_repeats_are_clipped_and_padding_need_not_be_present() {
        let mut rle = Vec::new();
        uleb(&mut rle, u64::MAX - 1);
        rle.push(7);
        with_node(3, &rle, |ctx| {
            assert_eq!(i64::decode(ctx, 1, 1000, 0).unwrap(), vec![7; 1000]);
        });
        // 3 groups of 5-bit values (15 bytes) of which 20 values (13 bytes) are wanted.
        let vals: Vec<u64> = (0..24).map(|i| (i * 7) % 32).collect();
        let mut packed = vec![(3 << 1) | 1];
        let mut bytes = Vec::new();
        sift_bits::pack::extend_le_bytes(&mut bytes, &sift_bits::pack::pack(&vals, 5));
        packed.extend_from_slice(&bytes[..13]);
        with_node(5, &packed, |ctx| {
            let want: Vec<i64> = vals[..20].iter().map(|&v| v as i64).collect();
            assert_eq!(i64::decode(ctx, 1, 20, 0).unwrap(), want);
        });
        assert!(decode_err(5, &packed, 21).contains("needs 14 bytes for 21 values, 13 left"));
    }

    #[test]
    fn wire_round_trip() {
        let node = Node::Hybrid(Hybrid {
            bits: 12,
            buffer: 3,
        });
        let mut w = Writer::new();
        node.write_wire(&mut w);
        let mut r = Reader::new(w.as_bytes());
        let id = r.u8("id").unwrap();
        assert_eq!(id, 14);
        assert_eq!(Node::read_wire(id, &mut r).unwrap(), node);
        assert_eq!(node.label(), "hybrid12");
    }

    /// The pages of one column of a Parquet file written with dictionary encoding.
    struct Pages {
        /// The dictionary page's values.
        dict: Vec<i64>,
        /// The dictionary page's bytes (PLAIN: 8 bytes per value).
        dict_bytes: Vec<u8>,
        data: Vec<DataPage>,
    }

    /// A data page: its rows, the definition levels' run stream (nullable columns), the
    /// indices' bit width and run stream.
    type DataPage = (usize, Option<Vec<u8>>, u8, Vec<u8>);

    fn pages(file: &[u8], column: usize, nullable: bool) -> Pages {
        use parquet::basic::Encoding as E;
        use parquet::column::page::Page;
        use parquet::file::reader::FileReader;
        let reader = parquet::file::serialized_reader::SerializedFileReader::new(
            bytes::Bytes::copy_from_slice(file),
        )
        .unwrap();
        let mut out = Pages {
            dict: Vec::new(),
            dict_bytes: Vec::new(),
            data: Vec::new(),
        };
        let split = |rest: &[u8]| (rest[0], rest[1..].to_vec());
        for page in reader
            .get_row_group(0)
            .unwrap()
            .get_column_page_reader(column)
            .unwrap()
        {
            match page.unwrap() {
                Page::DictionaryPage { buf, .. } => {
                    out.dict = buf
                        .chunks_exact(8)
                        .map(|c| i64::from_le_bytes(c.try_into().unwrap()))
                        .collect();
                    out.dict_bytes = buf.to_vec();
                }
                Page::DataPage {
                    buf,
                    num_values,
                    encoding,
                    ..
                } => {
                    assert!(matches!(encoding, E::PLAIN_DICTIONARY | E::RLE_DICTIONARY));
                    // Version 1: levels behind a 4-byte length, then the indices.
                    let (def, rest) = if nullable {
                        let len = u32::from_le_bytes(buf[..4].try_into().unwrap()) as usize;
                        (Some(buf[4..4 + len].to_vec()), &buf[4 + len..])
                    } else {
                        (None, &buf[..])
                    };
                    let (bits, indices) = split(rest);
                    out.data.push((num_values as usize, def, bits, indices));
                }
                Page::DataPageV2 {
                    buf,
                    num_values,
                    encoding,
                    def_levels_byte_len,
                    rep_levels_byte_len,
                    is_compressed,
                    ..
                } => {
                    assert!(matches!(encoding, E::RLE_DICTIONARY) && !is_compressed);
                    let (rep, def) = (rep_levels_byte_len as usize, def_levels_byte_len as usize);
                    let def_stream = nullable.then(|| buf[rep..rep + def].to_vec());
                    let (bits, indices) = split(&buf[rep + def..]);
                    out.data
                        .push((num_values as usize, def_stream, bits, indices));
                }
            }
        }
        out
    }

    /// Dictionary indices and definition levels of pages pyarrow-style writers produce
    /// (arrow-rs here, versions 1 and 2 of the data page), read in place: each page as a
    /// chunk `Dict { Plain(dictionary page), Hybrid(indices) }` with validity
    /// `Hybrid { bits: 1 }(definition levels)`, decoded, filtered and selected like the
    /// array written.
    #[test]
    fn reads_parquet_pages_in_place() {
        use arrow::array::{Array, BooleanArray, Int64Array};
        use arrow::datatypes::{DataType, Field, Schema};
        use arrow::record_batch::RecordBatch;
        use parquet::basic::Compression;
        use parquet::file::properties::{WriterProperties, WriterVersion};
        use std::sync::Arc;

        let rows = 20_000u64;
        // Long runs of one value among values drawn from 150.
        let value = |i: u64| {
            if (i / 700).is_multiple_of(3) {
                1_000 + (i / 2100) as i64
            } else {
                (mix(i) % 150) as i64 * 37 - 2_000
            }
        };
        let required = Int64Array::from_iter_values((0..rows).map(value));
        let optional: Int64Array = (0..rows)
            .map(|i| {
                (!(3_000..3_500).contains(&i) && !mix(i ^ 77).is_multiple_of(11)).then(|| value(i))
            })
            .collect();
        let schema = Arc::new(Schema::new(vec![
            Field::new("a", DataType::Int64, false),
            Field::new("b", DataType::Int64, true),
        ]));
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![Arc::new(required.clone()), Arc::new(optional.clone())],
        )
        .unwrap();
        for version in [WriterVersion::PARQUET_1_0, WriterVersion::PARQUET_2_0] {
            let props = WriterProperties::builder()
                .set_writer_version(version)
                .set_compression(Compression::UNCOMPRESSED)
                .set_dictionary_enabled(true)
                .set_data_page_row_count_limit(4096)
                .set_write_batch_size(1024)
                .build();
            let mut file = Vec::new();
            let mut writer =
                parquet::arrow::ArrowWriter::try_new(&mut file, schema.clone(), Some(props))
                    .unwrap();
            writer.write(&batch).unwrap();
            writer.close().unwrap();
            let mut kinds = (0, 0);

            for (column, array, nullable) in [(0, &required, false), (1, &optional, true)] {
                let p = pages(&file, column, nullable);
                assert!(p.data.len() > 1, "{} pages", p.data.len());
                let mut row = 0usize;
                for (n, def, bits, indices) in &p.data {
                    let (n, bits) = (*n, *bits);
                    let want = array.slice(row, n);
                    let stored = n - want.null_count();
                    // The indices alone: the dictionary positions of the page's values.
                    let idx =
                        with_node(bits, indices, |ctx| i64::decode(ctx, 1, stored, 0)).unwrap();
                    let values: Vec<i64> = idx.iter().map(|&i| p.dict[i as usize]).collect();
                    for run in parse(bits, indices, stored).unwrap() {
                        match run.kind {
                            Kind::Repeat(_) => kinds.0 += 1,
                            Kind::Packed(_) => kinds.1 += 1,
                        }
                    }
                    let present: Vec<i64> = want.iter().flatten().collect();
                    assert_eq!(values, present);

                    // The page as a chunk.
                    let mut nodes = vec![
                        Node::Dict(crate::encodings::Dict {
                            values: 1,
                            len: p.dict.len() as u32,
                            codes: 2,
                        }),
                        Node::Plain(crate::encodings::Plain {
                            width: 8,
                            buffer: 0,
                        }),
                        Node::Hybrid(Hybrid { bits, buffer: 1 }),
                    ];
                    let mut buffers: Vec<&[u8]> = vec![&p.dict_bytes, indices];
                    let validity = match def {
                        Some(levels) => {
                            nodes.push(Node::Hybrid(Hybrid { bits: 1, buffer: 2 }));
                            buffers.push(levels);
                            Validity::Encoded { root: 3 }
                        }
                        None => Validity::AllValid,
                    };
                    let enc = ColumnEncoding { validity, nodes };
                    let chunk = crate::Chunk::new(&enc, &DataType::Int64, n, buffers);
                    let got = chunk.decode().unwrap();
                    assert_eq!(got.as_ref(), &want as &dyn Array);
                    for (lo, hi, negate) in
                        [(-500, 500, false), (1_000, 1_005, true), (0, 0, false)]
                    {
                        let pred = crate::ValuePredicate::IntRange { lo, hi, negate };
                        assert_eq!(
                            chunk.filter(&pred).unwrap(),
                            pred.eval_array(&want).unwrap()
                        );
                    }
                    let sel: Vec<bool> = (0..n as u64)
                        .map(|i| mix(i ^ 5).is_multiple_of(5))
                        .collect();
                    let got = chunk.decode_selected(&bitmap(sel.iter().copied())).unwrap();
                    let want = arrow::compute::filter(&want, &BooleanArray::from(sel)).unwrap();
                    assert_eq!(got.as_ref(), want.as_ref());
                    row += n;
                }
                assert_eq!(row, rows as usize);
            }
            // Both kinds of run were read.
            assert!(kinds.0 > 10 && kinds.1 > 10, "{kinds:?}");
        }
    }
}
