//! Parquet-Select: keep the bit-packed codes whose selection bit is set, still packed.
//!
//! Li, Lu and Chandramouli (SIGMOD 2023) select with four instructions per 64-bit word. For
//! a word, let `m` have a one at the first bit of every value segment in the word (bit 0
//! always counts: it starts either a value or the tail of one that began in the previous
//! word) and let `b` hold the selection bits of those segments, in order. Then
//!
//! ```text
//! extended = PDEP(b, m - 1) - PDEP(b, m)      (wrapping)
//! out      = PEXT(word, extended)
//! ```
//!
//! `PDEP(b, m)` puts a one at the start of each selected segment, `PDEP(b, m - 1)` at the
//! start of the segment after it (`m - 1` is `m` without bit 0, so the deposit shifts by one
//! segment; the last segment's end is bit 64, which wraps to 0). Their difference is
//! `Σ 2^end - 2^start`: ones over exactly the selected segments. PEXT then packs those bits,
//! and appending each word's output in order re-assembles straddling values.
//!
//! A chunk of 64 values of width `w` fills exactly `w` words, so the segment masks repeat
//! per chunk and are precomputed for every (width, word-in-chunk) (the lcm(w, 64)
//! period divides `64·w`), together with the index of the word's first value in the chunk;
//! a word's selection bits are then one shift of the chunk's bitmap word.
//!
//! Chunks are dispatched by their popcount: empty chunks are skipped, full chunks copied,
//! sparse chunks gathered value by value (cheaper than `w` PEXTs when few values survive),
//! and the rest go through PEXT. Without fast BMI2 the dense chunks are gathered too.

use crate::bitmap::Bitmap;
use crate::bitwriter::BitWriter;
use crate::compact::{SLACK, compact_words};
use crate::dispatch::Level;
use crate::error::{BitsError, check_packed};
use crate::pack::low_mask;
use crate::unpack::{Lane, read_bits, unpack_for_at};

/// Segment-start masks and first-value offsets per (width, word of the 64-value chunk).
struct Tables {
    masks: [[u64; 64]; 65],
    first: [[u8; 64]; 65],
}

const fn build_tables() -> Tables {
    let mut t = Tables {
        masks: [[0; 64]; 65],
        first: [[0; 64]; 65],
    };
    let mut w = 1;
    while w <= 64 {
        let mut j = 0;
        while j < w {
            let lo = 64 * j;
            let v0 = lo / w;
            let mut m = 1u64;
            let mut v = v0 + 1;
            while v * w < lo + 64 {
                m |= 1 << (v * w - lo);
                v += 1;
            }
            t.masks[w][j] = m;
            t.first[w][j] = v0 as u8;
            j += 1;
        }
        w += 1;
    }
    t
}

static TABLES: Tables = build_tables();

/// Relative costs deciding gather vs. PEXT within one chunk of `select`: a gathered value
/// (read, shift, append) costs about `GATHER` units, a PEXT word about `PEXT`. A rough
/// ratio, not a calibration: both sides are a few cycles and the chunk is in L1.
const GATHER: usize = 3;
const PEXT: usize = 2;

/// Selects the codes of `packed` (width `width`) whose bit in `selection` is set, packed
/// contiguously at the same width. `selection.len()` is the number of values.
pub fn select(packed: &[u64], width: u32, selection: &Bitmap) -> Result<Vec<u64>, BitsError> {
    let mut out = Vec::new();
    select_into(Level::active(), packed, width, selection, &mut out)?;
    Ok(out)
}

/// [`select`] at an explicit level, writing into `out` (cleared first, allocation reused).
/// `Level::Scalar` gathers every selected value; any other level uses PDEP/PEXT where the
/// CPU implements them in hardware.
pub fn select_into(
    level: Level,
    packed: &[u64],
    width: u32,
    selection: &Bitmap,
    out: &mut Vec<u64>,
) -> Result<(), BitsError> {
    let needed = check_packed(packed, width, selection.len())?;
    let ones = selection.count_ones();
    let mut wr = BitWriter::new(std::mem::take(out), ones * width as usize);
    if width > 0 {
        select_chunks(
            level,
            &packed[..needed],
            width,
            selection.words(),
            0,
            &mut wr,
        );
    }
    *out = wr.finish();
    Ok(())
}

/// Selects chunks `first_chunk..` (64 values each, as many as `bm` has words) of `packed`,
/// which must hold exactly the words of the values involved.
fn select_chunks(
    level: Level,
    packed: &[u64],
    width: u32,
    bm: &[u64],
    first_chunk: usize,
    wr: &mut BitWriter,
) {
    #[cfg(target_arch = "x86_64")]
    if level.uses_bmi2() {
        // SAFETY: `uses_bmi2` is true only if bmi1, bmi2, popcnt and lzcnt were detected.
        unsafe { select_chunks_bmi2(packed, width, bm, first_chunk, wr) };
        return;
    }
    let _ = level;
    let w = width as usize;
    for (c, &b) in bm.iter().enumerate() {
        let c = first_chunk + c;
        if b == 0 {
            continue;
        }
        let words = packed.get(c * w..).unwrap_or(&[]);
        if b == u64::MAX {
            copy_chunk(&words[..w.min(words.len())], wr);
        } else {
            gather_chunk(words, width, b, wr);
        }
    }
}

/// Appends all 64 values of a chunk: its `w` words verbatim.
#[inline(always)]
fn copy_chunk(words: &[u64], wr: &mut BitWriter) {
    for &x in words {
        wr.put(x, 64);
    }
}

/// Appends the values of a chunk whose bit is set in `b`, one read each.
#[inline(always)]
fn gather_chunk(words: &[u64], width: u32, mut b: u64, wr: &mut BitWriter) {
    let mask = low_mask(width);
    while b != 0 {
        let t = b.trailing_zeros() as usize;
        b &= b - 1;
        wr.put(read_bits(words, t * width as usize, mask), width);
    }
}

/// # Safety
/// The CPU must support bmi1, bmi2, popcnt and lzcnt.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "bmi1,bmi2,popcnt,lzcnt")]
unsafe fn select_chunks_bmi2(
    packed: &[u64],
    width: u32,
    bm: &[u64],
    first_chunk: usize,
    wr_slot: &mut BitWriter,
) {
    use std::arch::x86_64::{_pdep_u64, _pext_u64};
    let w = width as usize;
    let masks = &TABLES.masks[w][..w];
    let first = &TABLES.first[w][..w];
    let mut local = BitWriter::take(wr_slot);
    let wr = &mut local;
    for (c, &b) in bm.iter().enumerate() {
        let c = first_chunk + c;
        if b == 0 {
            continue;
        }
        let words = packed.get(c * w..).unwrap_or(&[]);
        let words = &words[..w.min(words.len())];
        if b == u64::MAX {
            copy_chunk(words, wr);
        } else if b.count_ones() as usize * GATHER < words.len() * PEXT {
            gather_chunk(words, width, b, wr);
        } else {
            for ((&x, &m), &f) in words.iter().zip(masks).zip(first) {
                let s = b >> f;
                let ext = _pdep_u64(s, m - 1).wrapping_sub(_pdep_u64(s, m));
                wr.put(_pext_u64(x, ext), ext.count_ones());
            }
        }
    }
    *wr_slot = local;
}

/// Values per block of the fused select-and-unpack: 64 chunks, so a block's selected codes
/// (at most 4096·w bits) stay in L1 between the select and the unpack.
const BLOCK: usize = 4096;

/// Selects and decodes: the values whose bit is set, unpacked into `T`.
pub fn unpack_selected<T: Lane>(
    packed: &[u64],
    width: u32,
    selection: &Bitmap,
) -> Result<Vec<T>, BitsError> {
    let mut out = Vec::new();
    unpack_selected_into(
        Level::active(),
        packed,
        width,
        T::default(),
        selection,
        &mut out,
    )?;
    Ok(out)
}

/// Selects, decodes and adds a frame-of-reference `base` (wrapping) to each value.
pub fn unpack_selected_for<T: Lane>(
    packed: &[u64],
    width: u32,
    base: T,
    selection: &Bitmap,
) -> Result<Vec<T>, BitsError> {
    let mut out = Vec::new();
    unpack_selected_into(Level::active(), packed, width, base, selection, &mut out)?;
    Ok(out)
}

/// The fused select-then-unpack at an explicit level, into `out` (cleared first).
///
/// Each block of 4096 values takes the cheapest of three strategies by a cost model
/// (cycles, measured on Zen 5 with `cargo bench --bench paper`): gather the few selected
/// values straight into `out`; PEXT-select the block into an L1 buffer, then SIMD-unpack
/// only the survivors; or SIMD-unpack the whole block and copy the survivors. PEXT costs
/// ~3 cycles per packed word while the AVX-512 unpacker decodes 8–30 values per cycle, so
/// PEXT wins only for narrow codes at middling selectivity; the model picks accordingly.
pub fn unpack_selected_into<T: Lane>(
    level: Level,
    packed: &[u64],
    width: u32,
    base: T,
    selection: &Bitmap,
    out: &mut Vec<T>,
) -> Result<(), BitsError> {
    if width > T::BITS {
        return Err(BitsError::Width {
            width,
            max: T::BITS,
        });
    }
    let needed = check_packed(packed, width, selection.len())?;
    let packed = &packed[..needed];
    #[cfg(target_arch = "x86_64")]
    if level != Level::Scalar && std::arch::is_x86_feature_detected!("popcnt") {
        // SAFETY: POPCNT was just detected.
        return unsafe { blocks_popcnt(level, packed, width, base, selection, out) };
    }
    blocks(level, packed, width, base, selection, out)
}

/// [`blocks`] compiled with POPCNT: the per-word bit counts dominate the sparse case.
///
/// # Safety
/// The CPU must support POPCNT.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "popcnt")]
unsafe fn blocks_popcnt<T: Lane>(
    level: Level,
    packed: &[u64],
    width: u32,
    base: T,
    selection: &Bitmap,
    out: &mut Vec<T>,
) -> Result<(), BitsError> {
    blocks(level, packed, width, base, selection, out)
}

/// Which way a block is decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Strategy {
    Gather,
    PextThenUnpack,
    UnpackThenCompact,
}

/// The cost model (in eighths of a cycle) for a full block with `ones` survivors.
fn strategy(level: Level, width: usize, ones: usize, words: usize) -> Strategy {
    if level == Level::Scalar {
        return Strategy::Gather;
    }
    // Coarsely calibrated on the Fig. 12 grid (n = 2^27, Zen 5, see BENCHMARKS.md): a
    // gathered value costs ~8 cycles (a cache line per value once selections are sparse),
    // a PEXT word ~7–10 cycles with the bit writer (~35 instructions), the AVX-512 unpack
    // ~1/8 cycle per value and VPCOMPRESS about as much again.
    let gather = 8 * (words / width.max(1) + 8 * ones);
    let pext = if level.uses_bmi2() {
        8 * 10 * words + ones
    } else {
        usize::MAX
    };
    // With VPCOMPRESS the compaction costs per input value, not per survivor.
    let compact = if level == Level::Avx512 {
        2 * BLOCK
    } else {
        BLOCK + 8 * 64 + 12 * ones
    };
    if gather <= pext && gather <= compact {
        Strategy::Gather
    } else if pext <= compact {
        Strategy::PextThenUnpack
    } else {
        Strategy::UnpackThenCompact
    }
}

#[inline(always)]
fn blocks<T: Lane>(
    level: Level,
    packed: &[u64],
    width: u32,
    base: T,
    selection: &Bitmap,
    out: &mut Vec<T>,
) -> Result<(), BitsError> {
    // Counted here (compiled with POPCNT) rather than by `Bitmap::count_ones`.
    let total: usize = selection
        .words()
        .iter()
        .map(|b| b.count_ones() as usize)
        .sum();
    out.clear();
    if width == 0 || total == 0 {
        out.resize(total, base);
        return Ok(());
    }
    out.reserve(total);
    let w = width as usize;
    let mask = low_mask(width);
    let words_per_block = BLOCK / 64 * w;
    let mut tmp = Vec::new();
    // On the heap: up to 32 KiB would bloat the stack frame of every caller.
    #[allow(clippy::useless_vec)]
    let mut decoded = vec![T::default(); BLOCK];
    let mut kept = vec![T::default(); BLOCK + SLACK];
    let mut idx = [0u16; BLOCK + 1];
    for (blk, bm) in selection.words().chunks(BLOCK / 64).enumerate() {
        let ones: usize = bm.iter().map(|b| b.count_ones() as usize).sum();
        if ones == 0 {
            continue;
        }
        let block_words = packed.get(blk * words_per_block..).unwrap_or(&[]);
        let block_words = &block_words[..(bm.len() * w).min(block_words.len())];
        // Each block's survivors are appended to `out` once, from L1 or straight from the
        // gather.
        if ones == BLOCK {
            // Every value survives: a plain unpack (into L1, then appended: growing `out` by
            // `resize` first would write every output line twice).
            unpack_for_at(level, block_words, width, base, &mut decoded)?;
            out.extend_from_slice(&decoded);
            continue;
        }
        match strategy(level, w, ones, bm.len() * w) {
            Strategy::Gather => {
                let k = set_positions(bm, &mut idx);
                let ahead = idx.get(GATHER_AHEAD..k).unwrap_or(&[]);
                out.extend(idx[..k].iter().enumerate().map(|(j, &i)| {
                    // Sparse selections skip most cache lines, so the hardware prefetcher
                    // loses the stream; fetch the line of a value a few positions ahead.
                    if let Some(&a) = ahead.get(j) {
                        prefetch(block_words.as_ptr().wrapping_add(usize::from(a) * w / 64));
                    }
                    let v = read_bits(block_words, usize::from(i) * w, mask);
                    T::from_u64(v).wrapping_add(base)
                }));
            }
            Strategy::PextThenUnpack => {
                let mut wr = BitWriter::new(std::mem::take(&mut tmp), ones * w);
                select_chunks(level, block_words, width, bm, 0, &mut wr);
                tmp = wr.finish();
                let dst = &mut kept[..ones];
                unpack_for_at(level, &tmp, width, base, dst)?;
                out.extend_from_slice(dst);
            }
            Strategy::UnpackThenCompact => {
                let n = (bm.len() * 64).min(selection.len() - blk * BLOCK);
                let vals = &mut decoded[..n];
                unpack_for_at(level, block_words, width, base, vals)?;
                // Compacted in L1, then appended: `out` is written once, like the baseline.
                let k = compact_words(level, vals, bm, &mut kept);
                out.extend_from_slice(&kept[..k.min(ones)]);
            }
        }
    }
    // Each block appended exactly its popcount; this only guards the invariant.
    out.resize(total, base);
    Ok(())
}

/// How many selected values ahead the gather prefetches.
const GATHER_AHEAD: usize = 8;

/// Hints every cache line of `bytes` into the caches, so that a reader that must walk
/// them serially (a run stream whose next header is found only by reading this one) finds
/// them loaded: the loads overlap instead of each waiting for the one before.
pub fn prefetch_bytes(bytes: &[u8]) {
    let p = bytes.as_ptr();
    for at in (0..bytes.len()).step_by(64) {
        prefetch(p.wrapping_add(at).cast());
    }
}

/// Hints the cache line at `p` into L1; never faults, whatever the address.
#[inline(always)]
fn prefetch(p: *const u64) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: PREFETCHT0 is baseline SSE on x86_64 and only a hint: it never faults or
    // changes memory, even for an invalid address.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Writes the positions of the set bits of a block's bitmap words to `idx`; returns how
/// many. The first bit of each word is taken without a branch (its store is unconditional,
/// the count advances only if the word had a bit), so sparse selections, where a word
/// holds zero or one bit at random, do not mispredict once per word.
#[inline(always)]
fn set_positions(bm: &[u64], idx: &mut [u16; BLOCK + 1]) -> usize {
    let mut k = 0usize;
    for (c, &b) in bm.iter().enumerate().take(BLOCK / 64) {
        let base = (c * 64) as u16;
        idx[k] = base + b.trailing_zeros() as u16;
        k += usize::from(b != 0);
        let mut b = b & b.wrapping_sub(1);
        while b != 0 {
            idx[k] = base + b.trailing_zeros() as u16;
            k += 1;
            b &= b - 1;
        }
    }
    k
}

/// The reference: unpack everything, keep the selected values, pack them again.
pub fn select_reference(
    packed: &[u64],
    width: u32,
    selection: &Bitmap,
) -> Result<Vec<u64>, BitsError> {
    check_packed(packed, width, selection.len())?;
    let mut all = vec![0u64; selection.len()];
    crate::unpack::unpack_scalar(packed, width, 0, 0u64, &mut all);
    let kept: Vec<u64> = selection.iter_ones().map(|i| all[i]).collect();
    Ok(crate::pack::pack(&kept, width))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_partition_each_chunk() {
        // Over a chunk, the segment starts (minus the continuation bit 0 of a straddling
        // value) are exactly the value starts.
        for w in 1..=64usize {
            let mut starts = Vec::new();
            for j in 0..w {
                let m = TABLES.masks[w][j];
                for bit in 0..64 {
                    if (m >> bit) & 1 == 1 && (bit > 0 || (64 * j) % w == 0) {
                        starts.push(64 * j + bit);
                    }
                }
                assert_eq!(TABLES.first[w][j] as usize, 64 * j / w);
            }
            assert_eq!(starts, (0..64).map(|v| v * w).collect::<Vec<_>>(), "w={w}");
        }
    }
}
