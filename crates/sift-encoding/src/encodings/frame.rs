//! Frame of reference plus bit-packing: value = `base` + code, codes `bits` wide, packed
//! little-endian contiguously. The integer domain's terminal scheme, with plain as the
//! fallback when the range does not fit narrower codes.
//!
//! One generic implementation serves every integer width and signedness (and decimals as
//! scaled `i128`): codes are `value - min` computed in `i128`, so signed and unsigned types
//! share the same code domain and decode is a wrapping add of the base. Range predicates
//! are moved into the code domain and compared on the packed codes; selections unpack only
//! the selected codes (BMI2 PEXT or a gather, `sift_bits::select`).

use serde::{Deserialize, Serialize};
use sift_bits::extreme::{extreme_i64, extremes_u32, rank_extremes};
use sift_bits::pack;
use sift_bits::predicate::Predicate;
use sift_bits::unpack::unpack_to;
use sift_bits::{Bitmap, Level};

use crate::domain::{Domain, Value, uniform};
use crate::encoding::Encoding;
use crate::encodings::{byteslice, plain};
use crate::error::{Result, corrupt};
use crate::predicate::DomainPred;
use crate::tree::{BufferSink, Buffers, ColumnEncoding, Ctx, NodeId};
use crate::wire::{Reader, Writer};

/// Frame of reference plus bit-packing: value = `base` + code, codes `bits` wide, packed
/// little-endian contiguously in buffer `buffer`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct For {
    /// The smallest value.
    pub base: i128,
    /// Bits per code (0–64).
    pub bits: u8,
    /// The buffer holding the packed codes.
    pub buffer: u32,
}

/// A fixed-width integer stored by Sift.
pub trait NativeInt: bytemuck::Pod + Ord + Default + Send + Sync + 'static {
    /// Size in bytes.
    const BYTES: usize;
    /// Widens to `i128` without loss.
    fn to_i128(self) -> i128;
    /// Narrows from `i128`, or `None` if out of range.
    fn from_i128(v: i128) -> Option<Self>;
    /// Narrows from `i64` by truncation (callers check the range first).
    fn from_i64_wrapping(v: i64) -> Self;
    /// `self + d` with wrapping, where `d` is a frame-of-reference code.
    fn add_code(self, d: u64) -> Self;
    /// Appends the little-endian bytes.
    fn put_le(self, out: &mut Vec<u8>);
    /// Reads from exactly `Self::BYTES` little-endian bytes.
    fn get_le(b: &[u8]) -> Self;
}

macro_rules! native_int {
    ($($t:ty),*) => {$(
        impl NativeInt for $t {
            const BYTES: usize = std::mem::size_of::<$t>();
            #[inline]
            fn to_i128(self) -> i128 { self as i128 }
            #[inline]
            fn from_i128(v: i128) -> Option<Self> { <$t>::try_from(v).ok() }
            #[inline]
            fn from_i64_wrapping(v: i64) -> Self { v as $t }
            #[inline]
            fn add_code(self, d: u64) -> Self {
                // Codes are < 2^bits of the value range, so truncation is exact here.
                self.wrapping_add(d as $t)
            }
            #[inline]
            fn put_le(self, out: &mut Vec<u8>) { out.extend_from_slice(&self.to_le_bytes()) }
            #[inline]
            fn get_le(b: &[u8]) -> Self {
                let mut a = [0u8; std::mem::size_of::<$t>()];
                a.copy_from_slice(&b[..std::mem::size_of::<$t>()]);
                <$t>::from_le_bytes(a)
            }
        }
    )*};
}
native_int!(i8, i16, i32, i64, u8, u16, u32, u64);

impl NativeInt for i128 {
    const BYTES: usize = 16;
    fn to_i128(self) -> i128 {
        self
    }
    fn from_i128(v: i128) -> Option<Self> {
        Some(v)
    }
    fn from_i64_wrapping(v: i64) -> Self {
        i128::from(v)
    }
    fn add_code(self, d: u64) -> Self {
        self.wrapping_add(d as i128)
    }
    fn put_le(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes())
    }
    fn get_le(b: &[u8]) -> Self {
        let mut a = [0u8; 16];
        a.copy_from_slice(&b[..16]);
        i128::from_le_bytes(a)
    }
}

/// Encodes integers, choosing frame of reference + bit-packing when it is smaller than plain.
pub(crate) fn encode_ints<T: NativeInt>(values: &[T], sink: &mut BufferSink, _depth: u8) -> NodeId {
    let (Some(&min), Some(&max)) = (values.iter().min(), values.iter().max()) else {
        let buffer = sink.buffer(Vec::new());
        return sink.push_node(For {
            base: 0,
            bits: 0,
            buffer,
        });
    };
    let range = max
        .to_i128()
        .checked_sub(min.to_i128())
        .and_then(|r| u64::try_from(r).ok());
    match range {
        Some(range) if (pack::bit_width(range) as usize) < T::BYTES * 8 => {
            let base = min.to_i128();
            // Every value lies in [min, max] and the range fits in u64, so this cannot overflow.
            let codes: Vec<u64> = values.iter().map(|v| (v.to_i128() - base) as u64).collect();
            encode_for(base, &codes, sink)
        }
        _ => plain::encode_native(values, sink),
    }
}

/// Encodes codes that are already offsets from `base`: bit-packed, or as byte slices when
/// the column asks for them and the codes are wider than a byte.
pub(crate) fn encode_for(base: i128, codes: &[u64], sink: &mut BufferSink) -> NodeId {
    let bits = codes
        .iter()
        .copied()
        .max()
        .map(pack::bit_width)
        .unwrap_or(0);
    if sink.byteslice && bits > 8 {
        return byteslice::encode(base, codes, bits, sink);
    }
    let words = pack::pack(codes, bits);
    let mut bytes = Vec::with_capacity(words.len() * 8);
    pack::extend_le_bytes(&mut bytes, &words);
    let buffer = sink.buffer(bytes);
    sink.push_node(For {
        base,
        bits: bits as u8,
        buffer,
    })
}

/// The packed words of a buffer: borrowed in place when the buffer is 8-aligned (the writer
/// aligns segments, the reader keeps that alignment) on a little-endian machine, else copied.
fn packed_words(bytes: &[u8]) -> std::borrow::Cow<'_, [u64]> {
    if cfg!(target_endian = "little")
        && let Ok(words) = bytemuck::try_cast_slice::<u8, u64>(bytes)
    {
        return std::borrow::Cow::Borrowed(words);
    }
    std::borrow::Cow::Owned(pack::words_from_le_bytes(bytes))
}

/// The packed words of a frame-of-reference node holding `count` codes of `bits` bits,
/// checked to be long enough.
pub(crate) fn for_words<'a>(
    bufs: &Buffers<'a>,
    bits: u8,
    buffer: u32,
    count: usize,
) -> Result<std::borrow::Cow<'a, [u64]>> {
    if bits > 64 {
        return Err(corrupt(format!("bit width {bits} > 64")));
    }
    let words_needed = pack::packed_words(count, u32::from(bits))
        .ok_or_else(|| corrupt("packed length overflows"))?;
    let bytes = bufs.get(buffer, words_needed.saturating_mul(8))?;
    Ok(packed_words(&bytes[..words_needed * 8]))
}

/// Codes unpacked and folded at a time by [`For::code_extremes`]: a multiple of 64, so
/// that every span's codes and selection start on a word, and few enough that the span
/// (8 KiB as bytes, 64 KiB as 64-bit integers) stays in L1/L2.
const FOLD_SPAN: usize = 8192;

/// Codes wider than a byte are folded only when more than one value in this many is
/// selected; sparser selections gather their codes instead. Folding costs the same
/// whatever the selection (`MAX` of three 12- to 24-bit columns of TPC-H SF1 lineitem
/// where `l_suppkey` is below a bound: 7.5–7.8 ms), gathering scales with the selected
/// rows (23.2 ms at one row in 2, 9.4 at one in 32, 6.3 at one in 64, 4.7 at one in 128).
/// Byte codes fold faster than gathering even at one row in a thousand.
const FOLD_WIDE_EVERY: usize = 48;

/// Every byte code its own rank: folding codes through it gives their own extremes.
const IDENTITY_RANKS: [u8; 256] = {
    let mut ranks = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        ranks[i] = i as u8;
        i += 1;
    }
    ranks
};

impl For {
    /// The packed codes of `count` values.
    fn words<'a>(&self, ctx: &Ctx<'a>, count: usize) -> Result<std::borrow::Cow<'a, [u64]>> {
        for_words(&ctx.bufs, self.bits, self.buffer, count)
    }

    /// `lo <= v <= hi` (or its negation) on the values `base + code`, evaluated on the
    /// packed codes: the range is moved into the code domain and clipped to the codes' span.
    pub(crate) fn range(
        &self,
        ctx: &Ctx<'_>,
        count: usize,
        lo: i128,
        hi: i128,
        negate: bool,
    ) -> Result<Bitmap> {
        let Some((lo, hi)) = code_range(self.base, self.bits, lo, hi)? else {
            return Ok(uniform(count, negate));
        };
        let words = self.words(ctx, count)?;
        let mut out = Bitmap::default();
        sift_bits::packed_cmp::compare_into(
            sift_bits::Level::active(),
            &words,
            u32::from(self.bits),
            count,
            Predicate::Between(lo, hi),
            &mut out,
        )
        .map_err(|e| corrupt(format!("packed codes: {e}")))?;
        if negate {
            out.not_assign();
        }
        Ok(out)
    }

    /// The smallest and largest of the node's `count` codes, all (`sel` = `None`) or
    /// those `sel` selects, with no code materialised: a span at a time unpacked into L1
    /// and folded there, byte codes through [`rank_extremes`] (every code its own rank),
    /// codes of up to 32 bits through [`extremes_u32`], wider ones as 64-bit integers
    /// through [`extreme_i64`]; a span with nothing selected is not unpacked. Contiguous
    /// byte codes unpack and fold so cheaply that this beats gathering the selected codes
    /// even when one row in a thousand is selected (`MAX` of three 5-bit columns over 16 M
    /// rows, one in 1,024 selected: 8.7 against 9.6 ms for the whole query).
    /// `Ok(Some(None))` when nothing is selected; `Ok(None)` for 64-bit codes, and for
    /// wider codes under a sparse selection ([`FOLD_WIDE_EVERY`]: the caller gathers them
    /// then).
    pub(crate) fn code_extremes(
        &self,
        ctx: &Ctx<'_>,
        count: usize,
        sel: Option<&Bitmap>,
    ) -> Result<Option<Option<(u64, u64)>>> {
        let sparse = || sel.is_some_and(|s| s.count_ones() * FOLD_WIDE_EVERY <= count);
        if self.bits >= 64 || (self.bits > 8 && sparse()) {
            return Ok(None);
        }
        let words = self.words(ctx, count)?;
        let (bits, level) = (u32::from(self.bits), Level::active());
        let (mut bytes, mut narrow, mut wide, mut valid) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let mut acc: Option<(u64, u64)> = None;
        for start in (0..count).step_by(FOLD_SPAN) {
            let len = FOLD_SPAN.min(count - start);
            let mask = match sel {
                None => None,
                Some(s) => {
                    let Some(mask) = s.words().get(start / 64..(start + len).div_ceil(64)) else {
                        return Err(corrupt(format!(
                            "a selection of {} rows for {count} codes",
                            s.len()
                        )));
                    };
                    if mask.iter().all(|&w| w == 0) {
                        continue;
                    }
                    Some(mask)
                }
            };
            let packed = &words[start / 64 * bits as usize..];
            let unpack_err = |e: sift_bits::BitsError| corrupt(format!("packed codes: {e}"));
            let found = if bits <= 8 {
                bytes.resize(len, 0u8);
                unpack_to(packed, bits, &mut bytes).map_err(unpack_err)?;
                rank_extremes(level, &bytes, mask, &IDENTITY_RANKS)
                    .map(|r| (u64::from(r.lo), u64::from(r.hi)))
            } else if bits <= 32 {
                narrow.resize(len, 0u32);
                unpack_to(packed, bits, &mut narrow).map_err(unpack_err)?;
                extremes_u32(level, &narrow, mask).map(|(lo, hi)| (lo.into(), hi.into()))
            } else {
                wide.resize(len, 0u64);
                unpack_to(packed, bits, &mut wide).map_err(unpack_err)?;
                // Codes below 2^63 are the same as `i64`s.
                let codes: &[i64] = bytemuck::cast_slice(&wide);
                let mask = mask.map(|m| {
                    valid.clear();
                    valid.extend(m.iter().flat_map(|w| w.to_le_bytes()));
                    valid.as_slice()
                });
                let lo = extreme_i64(level, codes, mask, false);
                let hi = extreme_i64(level, codes, mask, true);
                lo.zip(hi).map(|(lo, hi)| (lo as u64, hi as u64))
            };
            if let Some((lo, hi)) = found {
                acc = Some(acc.map_or((lo, hi), |(a, b)| (a.min(lo), b.max(hi))));
            }
        }
        Ok(Some(acc))
    }

    /// The smallest and largest value (`base` + code) among the node's `count` values,
    /// all or those `sel` selects, folded over the codes ([`code_extremes`]); `Ok(None)`
    /// where that declines and for values beyond `i64`.
    ///
    /// [`code_extremes`]: Self::code_extremes
    pub(crate) fn extremes(
        &self,
        ctx: &Ctx<'_>,
        count: usize,
        sel: Option<&Bitmap>,
    ) -> Result<Option<Option<(i64, i64)>>> {
        if beyond_i64(self.base, self.bits) {
            return Ok(None);
        }
        let base = base_i64(self.base)?;
        // Neither sum leaves `i64`: `base` plus the widest code does not.
        let value = |c: u64| base + c as i64;
        let range = self.code_extremes(ctx, count, sel)?;
        Ok(range.map(|r| r.map(|(lo, hi)| (value(lo), value(hi)))))
    }
}

/// The value range `lo..=hi` as a range of frame-of-reference codes (values `base + code`
/// with codes `bits` wide), clipped to the codes' span; `None` if no code lies in it.
pub(crate) fn code_range(base: i128, bits: u8, lo: i128, hi: i128) -> Result<Option<(u64, u64)>> {
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
    // Both bounds now lie in 0..=max, so they fit u64.
    Ok((lo <= hi).then_some((lo as u64, hi as u64)))
}

/// The frame-of-reference base as an `i64`, for the cascade's values.
pub(crate) fn base_i64(base: i128) -> Result<i64> {
    base_as::<i64>(base)
}

/// The frame-of-reference base in the column's own integer type.
pub(crate) fn base_as<T: NativeInt>(base: i128) -> Result<T> {
    T::from_i128(base)
        .ok_or_else(|| corrupt(format!("frame-of-reference base {base} out of range")))
}

/// Whether values `base + code` with codes `bits` wide may lie outside `i64`.
pub(crate) fn beyond_i64(base: i128, bits: u8) -> bool {
    i64::try_from(base).is_err()
        || bits >= 64
        || base.saturating_add((1i128 << bits) - 1) > i128::from(i64::MAX)
}

impl Encoding for For {
    const ID: u8 = 1;
    const NAME: &'static str = "for";
    const DOMAINS: &'static [Domain] = &[Domain::Int];
    const FILTERS_ENCODED: bool = true;

    fn write(&self, w: &mut Writer) {
        w.zigzag128(self.base);
        w.u8(self.bits);
        w.varint(u64::from(self.buffer));
    }

    fn read(r: &mut Reader<'_>) -> Result<Self> {
        Ok(Self {
            base: r.zigzag128("for base")?,
            bits: r.u8("for bits")?,
            buffer: r.varint_u32("for buffer")?,
        })
    }

    fn label(&self) -> String {
        format!("for{}", self.bits)
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
        Ok(self
            .decode_native::<i64>(ctx, id, count)?
            .and_then(V::from_ints))
    }

    fn select<V: Value>(
        &self,
        ctx: &Ctx<'_>,
        _id: NodeId,
        count: usize,
        _depth: usize,
        sel: &Bitmap,
    ) -> Result<Option<Vec<V>>> {
        if V::DOMAIN != Domain::Int {
            return Ok(None);
        }
        let base = base_i64(self.base)?;
        let words = self.words(ctx, count)?;
        let out = sift_bits::select::unpack_selected_for::<u64>(
            &words,
            u32::from(self.bits),
            base as u64,
            sel,
        )
        .map_err(|e| corrupt(format!("packed codes: {e}")))?;
        // Same layout; the collect reuses the allocation.
        Ok(V::from_ints(out.into_iter().map(|v| v as i64).collect()))
    }

    fn filter<V: Value, P: DomainPred<V>>(
        &self,
        ctx: &Ctx<'_>,
        _id: NodeId,
        count: usize,
        _depth: usize,
        p: &P,
    ) -> Result<Option<Bitmap>> {
        let Some((lo, hi, negate)) = p.int_range() else {
            return Ok(None);
        };
        self.range(ctx, count, lo, hi, negate).map(Some)
    }

    fn decode_native<T: NativeInt>(
        &self,
        ctx: &Ctx<'_>,
        _id: NodeId,
        count: usize,
    ) -> Result<Option<Vec<T>>> {
        let base = base_as::<T>(self.base)?;
        let words = self.words(ctx, count)?;
        let mut out = Vec::new();
        pack::unpack_map(&words, u32::from(self.bits), count, &mut out, |c| {
            base.add_code(c)
        })
        .map_err(|e| corrupt(format!("packed buffer too short: {e:?}")))?;
        Ok(Some(out))
    }

    fn beyond_i64(&self, _bytes: usize) -> bool {
        beyond_i64(self.base, self.bits)
    }

    fn scan_cost(&self, _enc: &ColumnEncoding, _id: NodeId) -> Option<f64> {
        Some(0.1 + f64::from(self.bits) / 16.0)
    }

    fn row_addressable(&self, _enc: &ColumnEncoding, _id: NodeId) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn round_trip<T: NativeInt + std::fmt::Debug>(
        values: Vec<T>,
    ) -> std::result::Result<(), TestCaseError> {
        let mut sink = BufferSink::default();
        let root = encode_ints(&values, &mut sink, 1);
        let out = sink
            .decode_with(|ctx| {
                let node = ctx.node(root, 0)?;
                node.decode_native::<T>(ctx, root, values.len())?
                    .ok_or_else(|| corrupt("not a native root"))
            })
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(out, values);
        Ok(())
    }

    proptest! {
        #[test] fn i8s(v in proptest::collection::vec(any::<i8>(), 0..200)) { round_trip(v)?; }
        #[test] fn i64s(v in proptest::collection::vec(any::<i64>(), 0..200)) { round_trip(v)?; }
        #[test] fn u64s(v in proptest::collection::vec(any::<u64>(), 0..200)) { round_trip(v)?; }
        #[test] fn i128s(v in proptest::collection::vec(any::<i128>(), 0..200)) { round_trip(v)?; }
        #[test] fn narrow_i64(base in any::<i64>(), v in proptest::collection::vec(0i64..1000, 0..200)) {
            round_trip(v.into_iter().map(|x| base.wrapping_add(x)).collect::<Vec<_>>())?;
        }
    }

    /// A selection shorter than the codes it is given for is an error naming both counts,
    /// not a panic.
    #[test]
    #[allow(clippy::unwrap_used)]
    fn code_extremes_refuse_a_short_selection() {
        let values: Vec<i64> = (0..200).map(|i| i % 17).collect();
        let mut sink = BufferSink::default();
        let root = encode_ints(&values, &mut sink, 1);
        let err = sink
            .decode_with(|ctx| {
                let crate::tree::Node::For(f) = ctx.node(root, 0)? else {
                    return Err(corrupt("not a frame of reference"));
                };
                f.code_extremes(ctx, values.len(), Some(&Bitmap::ones(64)))
            })
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("a selection of 64 rows for 200 codes"),
            "{err}"
        );
    }

    #[test]
    fn extremes() -> std::result::Result<(), TestCaseError> {
        round_trip(vec![i64::MIN, i64::MAX, 0])?;
        round_trip(vec![u64::MAX, 0])?;
        round_trip(vec![i128::MIN, i128::MAX])?;
        round_trip(vec![7i32; 100])
    }
}
