//! Predicates evaluated directly on bit-packed codes, one result bit per value.
//!
//! A predicate is reduced to an inclusive range test (see [`crate::predicate`]), and the
//! codes are decoded into the narrowest lane type that holds the width, then compared with
//! one unsigned compare per 64 / 32 / 16 / 8 lanes (see [`crate::range`]):
//!
//! - AVX-512: fused. The unpacker's VPERMB + VPMULTISHIFTQB loop (or its one-value-per-qword
//!   loop) hands each decoded vector to VPSUB + VPCMPU straight into a mask, which is stored
//!   as a piece of the bitmap word; the values never touch memory. It stops where a full
//!   vector load would leave the input, and the chunked path finishes.
//! - AVX2 (and the AVX-512 remainder): chunked. 2048 codes at a time are unpacked into
//!   an L1 buffer with the SIMD unpacker, then compared with [`crate::range`]'s kernels.
//! - Scalar: value by value, the reference the others must agree with.
//!
//! At width 1 a non-trivial range is `x == c`, so the SIMD levels copy the packed words
//! (complemented for `c = 0`).
//!
//! This replaced a SWAR + PEXT compare on the packed words (Lamport's field-parallel `<`),
//! which cost 0.2–7 cycles per value on Zen 5 against 0.03–0.24 for the fused path at widths
//! 1–64 (BENCHMARKS.md §5): decoding is cheap enough that comparing decoded lanes wins.

use crate::bitmap::Bitmap;
use crate::bitwriter::BitWriter;
use crate::dispatch::Level;
use crate::error::{BitsError, check_packed};
use crate::pack::low_mask;
use crate::predicate::{Predicate, Range};
use crate::range::{packed_range_simd, range_words};
use crate::unpack::{Lane, read_bits, unpack_for_at};

/// Values per chunk: a multiple of 64, so each chunk starts on a word of the packed input
/// and of the bitmap; at most 16 KiB of `u64` lanes, which leaves L1 room for the input.
const CHUNK: usize = 2048;

/// Evaluates `pred` on the `len` codes of width `width` in `packed`.
pub fn compare(
    packed: &[u64],
    width: u32,
    len: usize,
    pred: Predicate,
) -> Result<Bitmap, BitsError> {
    compare_at(Level::active(), packed, width, len, pred)
}

/// `x == literal` for each code.
pub fn equal(packed: &[u64], width: u32, len: usize, literal: u64) -> Result<Bitmap, BitsError> {
    compare(packed, width, len, Predicate::Eq(literal))
}

/// `x < literal` for each code.
pub fn less_than(
    packed: &[u64],
    width: u32,
    len: usize,
    literal: u64,
) -> Result<Bitmap, BitsError> {
    compare(packed, width, len, Predicate::Lt(literal))
}

/// `lo <= x <= hi` for each code.
pub fn between(
    packed: &[u64],
    width: u32,
    len: usize,
    lo: u64,
    hi: u64,
) -> Result<Bitmap, BitsError> {
    compare(packed, width, len, Predicate::Between(lo, hi))
}

/// [`compare`] at an explicit level.
pub fn compare_at(
    level: Level,
    packed: &[u64],
    width: u32,
    len: usize,
    pred: Predicate,
) -> Result<Bitmap, BitsError> {
    let mut out = Bitmap::default();
    compare_into(level, packed, width, len, pred, &mut out)?;
    Ok(out)
}

/// [`compare_at`] writing into `out`, whose allocation is reused across calls.
pub fn compare_into(
    level: Level,
    packed: &[u64],
    width: u32,
    len: usize,
    pred: Predicate,
    out: &mut Bitmap,
) -> Result<(), BitsError> {
    check_packed(packed, width, len)?;
    let (lo, hi, negate) = match pred.range(low_mask(width)) {
        Range::Empty => {
            *out = Bitmap::zeros(len);
            return Ok(());
        }
        Range::All => {
            *out = Bitmap::ones(len);
            return Ok(());
        }
        Range::In { lo, hi } => (lo, hi, false),
        Range::Out { lo, hi } => (lo, hi, true),
    };
    if level.clamp() == Level::Scalar {
        let mut wr = BitWriter::new(std::mem::take(out).into_words(), len);
        range_scalar(packed, width, len, lo, hi, &mut wr);
        *out = finish(wr, len, negate);
        return Ok(());
    }
    if width == 1 {
        // A non-trivial range of 1-bit codes is `x == lo`: the packed words themselves, or
        // their complement.
        let flip = if (lo == 0) != negate { u64::MAX } else { 0 };
        let mut words = std::mem::take(out).into_words();
        words.clear();
        words.extend(packed.iter().take(len.div_ceil(64)).map(|&w| w ^ flip));
        *out = Bitmap::from_words_trusted(words, len);
        return Ok(());
    }
    let mut words = std::mem::take(out).into_words();
    words.clear();
    words.resize(len.div_ceil(64), 0);
    // The fused kernel takes whole words while full vector loads fit; the chunked
    // unpack-then-compare finishes (and does everything at AVX2).
    let full = words.get_mut(..len / 64).unwrap_or_default();
    let done = packed_range_simd(level, packed, width, lo, hi, negate, full);
    let scan = Scan {
        lo,
        hi,
        negate,
        first: done,
        len,
    };
    match width {
        0..=8 => unpack_compare::<u8>(level, packed, width, scan, &mut words)?,
        9..=16 => unpack_compare::<u16>(level, packed, width, scan, &mut words)?,
        17..=32 => unpack_compare::<u32>(level, packed, width, scan, &mut words)?,
        _ => unpack_compare::<u64>(level, packed, width, scan, &mut words)?,
    }
    *out = Bitmap::from_words_trusted(words, len);
    Ok(())
}

/// What the chunked loop evaluates: `lo <= x <= hi` (complemented if `negate`) on codes
/// `first..len`.
#[derive(Clone, Copy)]
struct Scan {
    lo: u64,
    hi: u64,
    negate: bool,
    /// A multiple of 64.
    first: usize,
    len: usize,
}

/// Unpacks codes `b.first..b.len` chunk by chunk into lanes of `T` and range-compares each
/// chunk into `out` (`len.div_ceil(64)` words). `b.lo <= b.hi` fit in `width <= T::BITS`.
fn unpack_compare<T: Lane>(
    level: Level,
    packed: &[u64],
    width: u32,
    b: Scan,
    out: &mut [u64],
) -> Result<(), BitsError> {
    if b.first >= b.len {
        return Ok(());
    }
    let mut buf = [T::default(); CHUNK];
    let (lo, hi) = (T::from_u64(b.lo), T::from_u64(b.hi));
    let rest = out.get_mut(b.first / 64..).unwrap_or_default();
    for (c, words) in rest.chunks_mut(CHUNK / 64).enumerate() {
        let first = b.first + c * CHUNK;
        let vals = &mut buf[..(b.len - first).min(CHUNK)];
        // Chunk starts are multiples of 64 values, hence of 64 bits: whole words.
        let src = packed
            .get(first / 64 * width as usize..)
            .unwrap_or_default();
        unpack_for_at(level, src, width, T::default(), vals)?;
        range_words(level, vals, lo, hi, b.negate, words);
    }
    Ok(())
}

fn finish(wr: BitWriter, len: usize, negate: bool) -> Bitmap {
    let mut b = Bitmap::from_words_trusted(wr.finish(), len);
    if negate {
        b.not_assign();
    }
    b
}

/// Value-at-a-time reference.
fn range_scalar(packed: &[u64], width: u32, len: usize, lo: u64, hi: u64, wr: &mut BitWriter) {
    let mask = low_mask(width);
    for i in 0..len {
        let x = if width == 0 {
            0
        } else {
            read_bits(packed, i * width as usize, mask)
        };
        wr.put(u64::from(lo <= x && x <= hi), 1);
    }
}
