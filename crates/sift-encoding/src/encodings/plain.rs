//! Plain: fixed-width little-endian values, `width` bytes each, in one buffer. The
//! terminal scheme for doubles, fixed-size binary values and integers whose range does
//! not fit a narrower bit-packing; 2- and 4-byte floats are stored only so. As integers of
//! the `i64` cascade, 4-byte values are signed (Parquet's PLAIN INT32 pages, read in
//! place, are such a node); in the double domain, 4-byte values are floats, widened
//! exactly (Parquet's FLOAT pages and dictionaries, read in place).

use serde::{Deserialize, Serialize};
use sift_bits::Bitmap;
use sift_bits::unpack::Lane;

use crate::byte_values::ByteValues;
use crate::domain::{Domain, FloatBits, Value};
use crate::encoding::Encoding;
use crate::encodings::frame::NativeInt;
use crate::error::{Result, corrupt};
use crate::predicate::{DomainPred, float_key};
use crate::tree::{BufferSink, ColumnEncoding, Ctx, NodeId};
use crate::wire::{Reader, Writer};

/// Fixed-width little-endian values, `width` bytes each, in buffer `buffer`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plain {
    /// Bytes per value.
    pub width: u32,
    /// The buffer holding the values.
    pub buffer: u32,
}

impl Plain {
    /// The values `sel` selects among the first `count`, read where they lie.
    fn select_native<T: NativeInt>(
        &self,
        ctx: &Ctx<'_>,
        count: usize,
        sel: &Bitmap,
    ) -> Result<Vec<T>> {
        let bytes = self.bytes(ctx, count)?;
        let mut out = Vec::with_capacity(sel.count_ones());
        out.extend(
            sel.iter_ones()
                .filter_map(|i| bytes.get(i * T::BYTES..(i + 1) * T::BYTES))
                .map(T::get_le),
        );
        Ok(out)
    }

    /// The values at `codes` (positions among the first `len`), each read where it lies:
    /// for a dictionary whose selected codes are few next to its entries, which would
    /// otherwise all be decoded (a Parquet dictionary that grew as long as its pages'
    /// rows, serving a few selected rows of each). `None` where the domain does not take
    /// this node's values.
    pub(crate) fn gather<V: Value>(
        &self,
        ctx: &Ctx<'_>,
        len: usize,
        codes: &[u64],
    ) -> Result<Option<Vec<V>>> {
        fn read<const W: usize, T>(
            bytes: &[u8],
            codes: &[u64],
            f: impl Fn([u8; W]) -> T,
        ) -> Result<Vec<T>> {
            let (entries, _) = bytes.as_chunks::<W>();
            codes
                .iter()
                .map(|&c| match entries.get(c as usize) {
                    Some(&b) => Ok(f(b)),
                    None => Err(corrupt(format!("code {c} past {} entries", entries.len()))),
                })
                .collect()
        }
        let bytes = self.bytes(ctx, len)?;
        Ok(match (V::DOMAIN, self.width) {
            (Domain::Int, 4) => V::from_ints(read::<4, _>(bytes, codes, int32_value)?),
            (Domain::Int, 8) => V::from_ints(read::<8, _>(bytes, codes, i64::from_le_bytes)?),
            (Domain::Float, 8) => V::from_floats(read::<8, _>(bytes, codes, |b| {
                FloatBits(u64::from_le_bytes(b))
            })?),
            (Domain::Float, 4) => V::from_floats(read::<4, _>(bytes, codes, |b| {
                FloatBits::from_f32_bits(u32::from_le_bytes(b))
            })?),
            _ => None,
        })
    }

    /// Which of the first `count` values have an order key (`key`) in `lo..=hi` (xor
    /// `negate`), tested on the stored bytes ([`keys_within`]): for values the caller
    /// knows the order of (unsigned integers of the node's width are their own keys).
    pub(crate) fn keys_within<const W: usize, K: Lane>(
        &self,
        ctx: &Ctx<'_>,
        count: usize,
        bounds: (K, K, bool),
        key: impl Fn([u8; W]) -> K,
    ) -> Result<Bitmap> {
        Ok(keys_within::<W, K>(self.bytes(ctx, count)?, bounds, key))
    }

    /// The first `count` values' bytes, checked to be present.
    fn bytes<'a>(&self, ctx: &Ctx<'a>, count: usize) -> Result<&'a [u8]> {
        ctx.bufs.fixed(self.buffer, count, self.width)
    }
}

/// Which of the `W`-byte values of `bytes` have an order key (`key`, an unsigned lane
/// ordered as the values are: `u32` for 4-byte values, `u64` for 8-byte ones) in
/// `lo..=hi` (xor `negate`): 1,024 values at a time, their keys computed in one pass
/// without a branch (it vectorises) into a buffer that stays in cache, then tested by the
/// SIMD range kernel. Written here because the values lie unaligned in a page's bytes, in
/// widths and orders (signed, floats) the kernel does not take as they are. Keys as wide
/// as the values keep twice as many 4-byte values in a vector as 64-bit keys would.
fn keys_within<const W: usize, K: Lane>(
    bytes: &[u8],
    (lo, hi, negate): (K, K, bool),
    key: impl Fn([u8; W]) -> K,
) -> Bitmap {
    const BLOCK: usize = 1024;
    let n = bytes.len() / W;
    let level = sift_bits::Level::active();
    let (mut words, mut keys, mut out) = (Vec::new(), [K::default(); BLOCK], Bitmap::default());
    words.reserve(n.div_ceil(64));
    for block in bytes.chunks(BLOCK * W) {
        let m = block.len() / W;
        #[cfg(target_arch = "x86_64")]
        if level == sift_bits::Level::Avx512 {
            // SAFETY: the level is only `Avx512` on a CPU with AVX-512F.
            unsafe { order_keys_avx512(block, &mut keys, &key) };
        } else {
            order_keys(block, &mut keys, &key);
        }
        #[cfg(not(target_arch = "x86_64"))]
        order_keys(block, &mut keys, &key);
        sift_bits::range::compare_values(level, &keys[..m], lo, hi, negate, &mut out);
        words.extend_from_slice(out.words());
    }
    Bitmap::from_words(words, n).unwrap_or_default()
}

/// The order key of each `W`-byte value of `block` into `keys`.
#[inline(always)]
fn order_keys<const W: usize, K: Lane>(block: &[u8], keys: &mut [K], key: &impl Fn([u8; W]) -> K) {
    for (k, v) in keys.iter_mut().zip(block.chunks_exact(W)) {
        *k = key(v.try_into().unwrap_or([0; W]));
    }
}

/// [`order_keys`] compiled for AVX-512 (a 512-bit vector of keys at a time).
///
/// # Safety
/// The CPU must support AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn order_keys_avx512<const W: usize, K: Lane>(
    block: &[u8],
    keys: &mut [K],
    key: &impl Fn([u8; W]) -> K,
) {
    order_keys(block, keys, key);
}

/// A 4-byte float's order key in its own width, without a branch: ordered as
/// [`float_key`] orders the float widened (negative: every bit flipped; else the
/// sign bit set; NaN above all).
#[inline(always)]
fn float32_order_key(b: u32) -> u32 {
    let key = b ^ (0u32.wrapping_sub(b >> 31) | 1 << 31);
    if b & !(1 << 31) > 0x7f80_0000 {
        u32::MAX
    } else {
        key
    }
}

/// The widened [`float_key`] of the float whose [`float32_order_key`] is `k`. Keys
/// no float has (those below negative infinity's and between positive infinity's and
/// NaN's) take their neighbours' key, so that the map is monotone over every `u32`.
fn widened_order_key(k: u32) -> u64 {
    const NEG_INFINITY: u32 = 0x007f_ffff;
    const INFINITY: u32 = 0xff80_0000;
    if k == u32::MAX {
        return u64::MAX;
    }
    let k = k.clamp(NEG_INFINITY, INFINITY);
    let bits = if k >> 31 == 1 { k ^ 1 << 31 } else { !k };
    float_key(f64::from(f32::from_bits(bits)))
}

/// The range of [`float32_order_key`]s whose floats, widened, have a [`float_key`]
/// in `lo..=hi`: the same floats, as widening keeps their order. Found by bisection on
/// the monotone [`widened_order_key`], so that no rounding of a double to a float has to
/// be reasoned about; an empty range comes out as `lo > hi`.
fn float32_key_range(lo: u64, hi: u64) -> (u32, u32) {
    // The first key whose widened key is at least `lo`, and the first above `hi`.
    let first_at_least = |bound: u64, inclusive: bool| {
        let (mut a, mut b) = (0u64, 1u64 << 32);
        while a < b {
            let mid = a + (b - a) / 2;
            let w = widened_order_key(mid as u32);
            if w < bound || (inclusive && w == bound) {
                a = mid + 1;
            } else {
                b = mid;
            }
        }
        a
    };
    let (start, end) = (first_at_least(lo, false), first_at_least(hi, true));
    match (u32::try_from(start), end.checked_sub(1)) {
        (Ok(s), Some(e)) if start < end => (s, e as u32),
        _ => (1, 0),
    }
}

/// A signed integer's order key: its bits with the sign bit flipped.
#[inline(always)]
fn int_order_key(v: i64) -> u64 {
    (v as u64) ^ (1 << 63)
}

/// A stored 4-byte signed integer, widened.
#[inline(always)]
fn int32_value(b: [u8; 4]) -> i64 {
    i64::from(i32::from_le_bytes(b))
}

/// [`int_order_key`] of a 4-byte integer, in its own width.
#[inline(always)]
fn int32_order_key(v: i64) -> u32 {
    (v as u32) ^ (1 << 31)
}

/// Which of the signed `W`-byte integers of `bytes` (`value` reads one) lie in `lo..=hi`
/// (xor `negate`), tested by their order keys (`key`: [`int_order_key`], or
/// [`int32_order_key`] for 4-byte values).
fn ints_within<const W: usize, K: Lane>(
    bytes: &[u8],
    (lo, hi, negate): (i128, i128, bool),
    value: impl Fn([u8; W]) -> i64,
    key: impl Fn(i64) -> K,
) -> Bitmap {
    // The range clipped to the width's values; empty when nothing of the width is in it.
    let bits = 8 * W as u32;
    let (min, max) = (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1);
    let (lo, hi) = (lo.max(min), hi.min(max));
    let (Ok(lo), Ok(hi)) = (i64::try_from(lo), i64::try_from(hi)) else {
        return crate::domain::uniform(bytes.len() / W, negate);
    };
    if lo > hi {
        return crate::domain::uniform(bytes.len() / W, negate);
    }
    keys_within::<W, K>(bytes, (key(lo), key(hi), negate), |v| key(value(v)))
}

/// Which of the 4-byte floats of `bytes` have, widened, a [`float_key`] in
/// `lo..=hi` (xor `negate`): tested on their keys in their own width.
fn floats32_within(bytes: &[u8], (lo, hi, negate): (u64, u64, bool)) -> Bitmap {
    let (lo, hi) = float32_key_range(lo, hi);
    keys_within::<4, u32>(bytes, (lo, hi, negate), |v| {
        float32_order_key(u32::from_le_bytes(v))
    })
}

/// 4-byte floats (by their bits) as the double domain's values, widened exactly.
fn widen(bits: Vec<u32>) -> Vec<FloatBits> {
    bits.into_iter().map(FloatBits::from_f32_bits).collect()
}

/// The 4-byte little-endian floats of `bytes` widened as [`widen`] does, in one pass and
/// in AVX-512 vectors where the CPU has them (a Parquet dictionary that overflows holds
/// about one entry per row it serves, each widened).
fn widen_bytes(bytes: &[u8]) -> Vec<FloatBits> {
    #[inline(always)]
    fn body(bytes: &[u8]) -> Vec<FloatBits> {
        let (floats, _) = bytes.as_chunks::<4>();
        floats
            .iter()
            .map(|&b| FloatBits::from_f32_bits(u32::from_le_bytes(b)))
            .collect()
    }
    /// # Safety
    /// The CPU must support AVX-512F.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f")]
    unsafe fn body_avx512(bytes: &[u8]) -> Vec<FloatBits> {
        body(bytes)
    }
    #[cfg(target_arch = "x86_64")]
    if sift_bits::Level::active() == sift_bits::Level::Avx512 {
        // SAFETY: the level is only `Avx512` on a CPU with AVX-512F.
        return unsafe { body_avx512(bytes) };
    }
    body(bytes)
}

/// Stores `values` as they are.
pub(crate) fn encode_native<T: NativeInt>(values: &[T], sink: &mut BufferSink) -> NodeId {
    let mut bytes = Vec::with_capacity(values.len() * T::BYTES);
    for v in values {
        v.put_le(&mut bytes);
    }
    let buffer = sink.buffer(bytes);
    sink.push_node(Plain {
        width: T::BYTES as u32,
        buffer,
    })
}

/// Stores doubles as their bit patterns.
pub(crate) fn encode_floats(values: &[FloatBits], sink: &mut BufferSink, _depth: u8) -> NodeId {
    let bits: Vec<u64> = values.iter().map(|v| v.0).collect();
    encode_native(&bits, sink)
}

/// Stores byte strings of one width `width`, concatenated.
pub(crate) fn encode_fixed(values: &[&[u8]], width: u32, sink: &mut BufferSink) -> NodeId {
    let buffer = sink.buffer(values.concat());
    sink.push_node(Plain { width, buffer })
}

impl Encoding for Plain {
    const ID: u8 = 0;
    const NAME: &'static str = "plain";
    const DOMAINS: &'static [Domain] = &[Domain::Int, Domain::Float, Domain::Bytes];
    const FILTERS_ENCODED: bool = true;

    fn write(&self, w: &mut Writer) {
        w.varint(u64::from(self.width));
        w.varint(u64::from(self.buffer));
    }

    fn read(r: &mut Reader<'_>) -> Result<Self> {
        Ok(Self {
            width: r.varint_u32("plain width")?,
            buffer: r.varint_u32("plain buffer")?,
        })
    }

    fn label(&self) -> String {
        format!("plain{}", u64::from(self.width) * 8)
    }

    fn decode<V: Value>(
        &self,
        ctx: &Ctx<'_>,
        id: NodeId,
        count: usize,
        _depth: usize,
    ) -> Result<Option<Vec<V>>> {
        match V::DOMAIN {
            // Narrower values are signed (Parquet's INT32 pages read in place).
            Domain::Int => {
                let wide: Option<Vec<i64>> = match self.width {
                    // Widened as they are read: one pass, no 4-byte copy first.
                    4 => {
                        let (values, _) = self.bytes(ctx, count)?.as_chunks::<4>();
                        Some(values.iter().map(|&b| int32_value(b)).collect())
                    }
                    _ => self.decode_native::<i64>(ctx, id, count)?,
                };
                Ok(wide.and_then(V::from_ints))
            }
            Domain::Float => Ok(match self.width {
                8 => {
                    let bits = self.decode_native::<u64>(ctx, id, count)?;
                    bits.and_then(|b| V::from_floats(b.into_iter().map(FloatBits).collect()))
                }
                4 => V::from_floats(widen_bytes(self.bytes(ctx, count)?)),
                _ => None,
            }),
            _ => Ok(None),
        }
    }

    /// A range of doubles (or of floats widened), or of signed 4- or 8-byte integers, is
    /// tested on the stored bytes, with no values decoded: each value's order key against
    /// the range's ([`keys_within`]).
    fn filter<V: Value, P: DomainPred<V>>(
        &self,
        ctx: &Ctx<'_>,
        _id: NodeId,
        count: usize,
        _depth: usize,
        p: &P,
    ) -> Result<Option<Bitmap>> {
        // Integers are signed here: a column whose plain values are unsigned in their own
        // width (or 16-byte) is tested on them as they are before its root is asked.
        let bytes = || self.bytes(ctx, count);
        Ok(
            match (V::DOMAIN, self.width, p.key_range(), p.int_range()) {
                (Domain::Float, 8, Some(range), _) => {
                    Some(keys_within::<8, u64>(bytes()?, range, |v| {
                        float_key(f64::from_le_bytes(v))
                    }))
                }
                (Domain::Float, 4, Some(range), _) => Some(floats32_within(bytes()?, range)),
                (Domain::Int, 8, _, Some(range)) => Some(ints_within::<8, u64>(
                    bytes()?,
                    range,
                    i64::from_le_bytes,
                    int_order_key,
                )),
                (Domain::Int, 4, _, Some(range)) => Some(ints_within::<4, u32>(
                    bytes()?,
                    range,
                    int32_value,
                    int32_order_key,
                )),
                _ => None,
            },
        )
    }

    /// Only the selected values are read: each is at a known offset of the buffer.
    fn select<V: Value>(
        &self,
        ctx: &Ctx<'_>,
        _id: NodeId,
        count: usize,
        _depth: usize,
        sel: &Bitmap,
    ) -> Result<Option<Vec<V>>> {
        match (V::DOMAIN, self.width) {
            (Domain::Int, 4) => {
                let v = self.select_native::<i32>(ctx, count, sel)?;
                Ok(V::from_ints(v.into_iter().map(i64::from).collect()))
            }
            (Domain::Int, 8) => Ok(V::from_ints(self.select_native::<i64>(ctx, count, sel)?)),
            (Domain::Float, 8) => {
                let bits = self.select_native::<u64>(ctx, count, sel)?;
                Ok(V::from_floats(bits.into_iter().map(FloatBits).collect()))
            }
            (Domain::Float, 4) => {
                let bits = self.select_native::<u32>(ctx, count, sel)?;
                Ok(V::from_floats(widen(bits)))
            }
            _ => Ok(None),
        }
    }

    fn decode_bytes(
        &self,
        ctx: &Ctx<'_>,
        id: NodeId,
        count: usize,
        _depth: usize,
    ) -> Result<Option<ByteValues>> {
        let width = self.width as usize;
        ctx.check_decoded(Some(id), count, count.checked_mul(width))?;
        let bytes = self.bytes(ctx, count)?;
        Ok(Some(ByteValues {
            offsets: (0..=count).map(|i| (i * width) as u32).collect(),
            data: bytes.to_vec(),
            utf8_checked: false,
        }))
    }

    fn decode_native<T: NativeInt>(
        &self,
        ctx: &Ctx<'_>,
        _id: NodeId,
        count: usize,
    ) -> Result<Option<Vec<T>>> {
        if self.width as usize != T::BYTES {
            return Ok(None);
        }
        let bytes = self.bytes(ctx, count)?;
        Ok(Some(bytes.chunks_exact(T::BYTES).map(T::get_le).collect()))
    }

    fn select_native<T: NativeInt>(
        &self,
        ctx: &Ctx<'_>,
        _id: NodeId,
        count: usize,
        sel: &Bitmap,
    ) -> Result<Option<Vec<T>>> {
        if self.width as usize != T::BYTES {
            return Ok(None);
        }
        Ok(Some(Plain::select_native::<T>(self, ctx, count, sel)?))
    }

    fn beyond_i64(&self, bytes: usize) -> bool {
        self.width as usize == bytes
    }

    /// An order key per value and the bytes read: on 16M-row Parquet PLAIN pages (one
    /// core), testing only the rows still selected first paid below about one row in 32
    /// for 8-byte integers and doubles and one in 64 for 4-byte integers, where the model
    /// crosses over with this cost.
    fn scan_cost(&self, _enc: &ColumnEncoding, _id: NodeId) -> Option<f64> {
        Some(1.0 + 0.3 * f64::from(self.width))
    }

    fn row_addressable(&self, _enc: &ColumnEncoding, _id: NodeId) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A float by bit pattern (`from_i16`: a small integer's float's bits), often one of
    /// `specials`.
    fn float_bits<B>(from_i16: fn(i16) -> B, specials: Vec<B>) -> impl Strategy<Value = B>
    where
        B: Arbitrary + Clone + std::fmt::Debug + 'static,
    {
        prop_oneof![
            any::<B>(),
            any::<i16>().prop_map(from_i16),
            prop::sample::select(specials),
        ]
    }

    /// An 8-byte float by bit pattern, often a special one (zeros, infinities, NaNs of
    /// either sign, the smallest subnormal and normal, the extremes).
    fn bits64() -> impl Strategy<Value = u64> {
        let specials = [0.0, -0.0, f64::INFINITY, f64::NEG_INFINITY, f64::NAN];
        let specials = specials.map(f64::to_bits).into_iter().chain([
            0xfff0_0000_0000_0001,
            1,
            0x8000_0000_0000_0001,
            f64::MIN_POSITIVE.to_bits(),
            f64::MAX.to_bits(),
            f64::MIN.to_bits(),
        ]);
        float_bits(|i| f64::from(i).to_bits(), specials.collect())
    }

    /// A 4-byte float by bit pattern, often a special one (as [`bits64`]).
    fn bits32() -> impl Strategy<Value = u32> {
        let specials = [0.0, -0.0, f32::INFINITY, f32::NEG_INFINITY, f32::NAN];
        let specials = specials.map(f32::to_bits).into_iter().chain([
            0xff80_0001,
            1,
            0x8000_0001,
            f32::MIN_POSITIVE.to_bits(),
            f32::MAX.to_bits(),
            f32::MIN.to_bits(),
        ]);
        float_bits(|i| f32::from(i).to_bits(), specials.collect())
    }

    proptest! {
        /// The range test on stored signed 8- and 4-byte integers equals the test of each
        /// value, for ranges drawn from the values, around the widths' ends and beyond
        /// them, negated or not, at every level the CPU supports.
        #[test]
        fn ints_within_equals_the_test_of_each_value(
            values in prop::collection::vec(
                prop_oneof![any::<i64>(), -3i64..3, Just(i64::MIN), Just(i64::MAX), any::<i32>().prop_map(i64::from)],
                0..2500,
            ),
            ends in (any::<prop::sample::Index>(), any::<prop::sample::Index>()),
            edges in (
                prop_oneof![any::<i64>().prop_map(i128::from), Just(i128::MIN), Just(i128::from(i32::MIN) - 1), -3i128..3],
                prop_oneof![any::<i64>().prop_map(i128::from), Just(i128::MAX), Just(i128::from(i32::MAX) + 1), -3i128..3],
            ),
            pick in 0..2u8,
            negate in any::<bool>(),
        ) {
            let narrow: Vec<i32> = values.iter().map(|&v| v as i32).collect();
            let bytes8: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
            let bytes4: Vec<u8> = narrow.iter().flat_map(|v| v.to_le_bytes()).collect();
            let (lo, hi) = match (pick, values.is_empty()) {
                (0, false) => (
                    i128::from(values[ends.0.index(values.len())]),
                    i128::from(values[ends.1.index(values.len())]),
                ),
                _ => edges,
            };
            let test = |v: i64| ((lo..=hi).contains(&i128::from(v))) != negate;
            let want8 = Bitmap::from_bools(values.iter().map(|&v| test(v)));
            let want4 = Bitmap::from_bools(narrow.iter().map(|&v| test(v.into())));
            for level in sift_bits::Level::supported() {
                let (got8, got4) = sift_bits::with_level(level, || {
                    (
                        ints_within::<8, u64>(
                            &bytes8,
                            (lo, hi, negate),
                            i64::from_le_bytes,
                            int_order_key,
                        ),
                        ints_within::<4, u32>(
                            &bytes4,
                            (lo, hi, negate),
                            int32_value,
                            int32_order_key,
                        ),
                    )
                });
                prop_assert_eq!(&got8, &want8, "{:?}", level);
                prop_assert_eq!(&got4, &want4, "{:?}", level);
            }
        }

        /// The range test on stored doubles and floats equals `float_key` of each value
        /// (floats widened) tested one by one, for ranges drawn from the values' own keys,
        /// at random (mostly between two floats' widened keys) and at the ends of the keys,
        /// negated or not, at every level the CPU supports.
        #[test]
        fn keys_within_equals_the_key_of_each_value(
            values in prop::collection::vec(bits64(), 0..2500),
            narrow in prop::collection::vec(bits32(), 0..2500),
            ends in (any::<prop::sample::Index>(), any::<prop::sample::Index>(), any::<u64>()),
            edge in prop::sample::select(vec![0, u64::MAX, u64::MAX - 1, float_key(f64::INFINITY), float_key(f64::NEG_INFINITY), float_key(0.0), float_key(-0.0)]),
            pick in 0..4u8,
            negate in any::<bool>(),
        ) {
            let doubles: Vec<f64> = values.iter().map(|&b| f64::from_bits(b)).collect();
            let floats: Vec<f32> = narrow.iter().map(|&b| f32::from_bits(b)).collect();
            let bytes8: Vec<u8> = doubles.iter().flat_map(|x| x.to_le_bytes()).collect();
            let bytes4: Vec<u8> = floats.iter().flat_map(|x| x.to_le_bytes()).collect();
            let keys8: Vec<u64> = doubles.iter().map(|&x| float_key(x)).collect();
            let keys4: Vec<u64> = floats.iter().map(|&x| float_key(f64::from(x))).collect();
            for (bytes, keys, wide) in [(&bytes8, &keys8, true), (&bytes4, &keys4, false)] {
                let (lo, hi) = match (pick, keys.is_empty()) {
                    (0, false) => (keys[ends.0.index(keys.len())], keys[ends.1.index(keys.len())]),
                    (1, false) => (keys[ends.0.index(keys.len())], ends.2),
                    (2, _) => (edge.min(ends.2), edge.max(ends.2)),
                    _ => (ends.2.min(!ends.2), ends.2.max(!ends.2)),
                };
                let want = Bitmap::from_bools(keys.iter().map(|&k| (lo <= k && k <= hi) != negate));
                for level in sift_bits::Level::supported() {
                    let got = sift_bits::with_level(level, || match wide {
                        true => keys_within::<8, u64>(bytes, (lo, hi, negate), |v| {
                            float_key(f64::from_le_bytes(v))
                        }),
                        false => floats32_within(bytes, (lo, hi, negate)),
                    });
                    prop_assert_eq!(&got, &want, "{:?} {} {}", level, lo, hi);
                }
            }
        }
    }

    proptest! {
        /// Widening a page's floats in vectors keeps every bit pattern as widening each
        /// one does (NaN payloads included), at every level the CPU supports.
        #[test]
        fn widened_bytes_equal_each_float_widened(narrow in prop::collection::vec(bits32(), 0..600)) {
            let bytes: Vec<u8> = narrow.iter().flat_map(|b| b.to_le_bytes()).collect();
            let want: Vec<FloatBits> = narrow.iter().map(|&b| FloatBits::from_f32_bits(b)).collect();
            for level in sift_bits::Level::supported() {
                let got = sift_bits::with_level(level, || widen_bytes(&bytes));
                prop_assert_eq!(&got, &want, "{:?}", level);
                let back: Vec<u32> = got.iter().map(|f| f.to_f32_bits()).collect();
                prop_assert_eq!(&back, &narrow);
            }
        }
    }

    /// Every float's key in its own width maps back to its widened key (the bisection of
    /// `float32_key_range` relies on it), tried on a stride through all bit patterns.
    #[test]
    fn float32_keys_widen_to_the_widened_floats_keys() {
        for bits in (0..=u32::MAX).step_by(65_521).chain([
            0x8000_0000,
            0x7f80_0000,
            0xff80_0000,
            0xff80_0001,
            u32::MAX,
        ]) {
            let x = f32::from_bits(bits);
            assert_eq!(
                widened_order_key(float32_order_key(bits)),
                float_key(f64::from(x)),
                "{bits:#x}"
            );
        }
    }

    /// `gather` reads each code's entry as the domain decodes it (4-byte entries as signed
    /// integers or as floats widened, 8-byte as integers or doubles), and a code past the
    /// entries is an error.
    #[test]
    #[allow(clippy::unwrap_used)]
    fn gathered_entries_equal_the_decoded_ones() {
        use crate::Node;
        use crate::tree::Validity;
        let codes = [3u64, 0, 3, 1, 2];
        for width in [4u32, 8] {
            let bytes: Vec<u8> = (0..4 * width as usize)
                .map(|i| (i * 37 + 201) as u8)
                .collect();
            let enc = ColumnEncoding {
                validity: Validity::AllValid,
                nodes: vec![Node::Plain(Plain { width, buffer: 0 })],
            };
            let bufs = [bytes.as_slice()];
            let ctx = Ctx::new(&enc, &bufs);
            let plain = Plain { width, buffer: 0 };
            let ints = i64::decode(&ctx, 0, 4, 0).unwrap();
            let floats = FloatBits::decode(&ctx, 0, 4, 0).unwrap();
            let pick = |v: &[i64]| codes.iter().map(|&c| v[c as usize]).collect::<Vec<_>>();
            assert_eq!(
                plain.gather::<i64>(&ctx, 4, &codes).unwrap(),
                Some(pick(&ints))
            );
            let want: Vec<FloatBits> = codes.iter().map(|&c| floats[c as usize]).collect();
            assert_eq!(
                plain.gather::<FloatBits>(&ctx, 4, &codes).unwrap(),
                Some(want)
            );
            let err = plain.gather::<i64>(&ctx, 4, &[1, 4]).unwrap_err();
            assert!(err.to_string().contains("code 4 past 4 entries"), "{err}");
        }
    }
}
