//! Integers: frame of reference plus bit-packing, with plain as the fallback.
//!
//! One generic implementation serves every integer width and signedness (and decimals as
//! scaled `i128`): codes are `value - min` computed in `i128`, so signed and unsigned types
//! share the same code domain and decode is a wrapping add of the base.

use sift_bits::pack;

use crate::error::{Result, corrupt};
use crate::node::{BufferSink, Buffers, ColumnEncoding, Node, NodeId};

/// A fixed-width integer stored by Sift.
pub trait NativeInt: Copy + Ord + Default + Send + Sync + 'static {
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
pub(crate) fn encode_ints<T: NativeInt>(values: &[T], sink: &mut BufferSink) -> NodeId {
    let (Some(&min), Some(&max)) = (values.iter().min(), values.iter().max()) else {
        let buffer = sink.buffer(Vec::new());
        return sink.push_node(Node::For {
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
        _ => encode_plain(values, sink),
    }
}

/// Encodes codes that are already offsets from `base`.
pub(crate) fn encode_for(base: i128, codes: &[u64], sink: &mut BufferSink) -> NodeId {
    let bits = codes
        .iter()
        .copied()
        .max()
        .map(pack::bit_width)
        .unwrap_or(0);
    let words = pack::pack(codes, bits);
    let mut bytes = Vec::with_capacity(words.len() * 8);
    pack::extend_le_bytes(&mut bytes, &words);
    let buffer = sink.buffer(bytes);
    sink.push_node(Node::For {
        base,
        bits: bits as u8,
        buffer,
    })
}

fn encode_plain<T: NativeInt>(values: &[T], sink: &mut BufferSink) -> NodeId {
    let mut bytes = Vec::with_capacity(values.len() * T::BYTES);
    for v in values {
        v.put_le(&mut bytes);
    }
    let buffer = sink.buffer(bytes);
    sink.push_node(Node::Plain {
        width: T::BYTES as u32,
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

/// Decodes `count` integers from node `id`.
pub(crate) fn decode_ints<T: NativeInt>(
    enc: &ColumnEncoding,
    id: NodeId,
    count: usize,
    bufs: &Buffers<'_>,
) -> Result<Vec<T>> {
    match enc.node(id)? {
        Node::For { base, bits, buffer } => {
            let base = T::from_i128(*base)
                .ok_or_else(|| corrupt(format!("frame-of-reference base {base} out of range")))?;
            let words = for_words(bufs, *bits, *buffer, count)?;
            let mut out = vec![T::default(); count];
            pack::unpack_map(&words, u32::from(*bits), &mut out, |c| base.add_code(c))
                .map_err(|e| corrupt(format!("packed buffer too short: {e:?}")))?;
            Ok(out)
        }
        Node::Plain { width, buffer } => {
            if *width as usize != T::BYTES {
                return Err(corrupt(format!(
                    "plain width {width} for a {}-byte integer",
                    T::BYTES
                )));
            }
            let bytes = bufs.get(*buffer, count.saturating_mul(T::BYTES))?;
            Ok(bytes[..count * T::BYTES]
                .chunks_exact(T::BYTES)
                .map(T::get_le)
                .collect())
        }
        other => Err(corrupt(format!(
            "node {id} ({other:?}) cannot hold integers"
        ))),
    }
}

/// Patched frame of reference (PFOR): bit-pack at the width that minimizes the total
/// size, storing the values that do not fit as exceptions in a patch node.
pub(crate) fn encode_pfor(values: &[i64], sink: &mut BufferSink, depth: u8) -> NodeId {
    let Some(&min) = values.iter().min() else {
        return encode_ints(values, sink);
    };
    let width_of = |v: i64| pack::bit_width(v.wrapping_sub(min) as u64) as usize;
    let mut histogram = [0usize; 65];
    for &v in values {
        histogram[width_of(v)] += 1;
    }
    // Exceptions cost a position and a value; 48 bits is a fair guess for both once
    // cascaded (positions are sorted, so they delta-encode well).
    const EXCEPTION_BITS: usize = 48;
    let n = values.len();
    let mut above = n;
    let (mut best_bits, mut best_cost) = (64usize, usize::MAX);
    for (bits, &count) in histogram.iter().enumerate() {
        above -= count;
        let cost = n * bits + above * EXCEPTION_BITS;
        if cost < best_cost {
            (best_bits, best_cost) = (bits, cost);
        }
    }
    let exceptions = values.iter().filter(|&&v| width_of(v) > best_bits).count();
    if exceptions == 0 {
        return encode_ints(values, sink);
    }
    let id = sink.reserve_node();
    let mut positions = Vec::with_capacity(exceptions);
    let mut patched = Vec::with_capacity(exceptions);
    let codes: Vec<u64> = values
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            if width_of(v) > best_bits {
                positions.push(i as i64);
                patched.push(v);
                0
            } else {
                v.wrapping_sub(min) as u64
            }
        })
        .collect();
    let inner = encode_for(i128::from(min), &codes, sink);
    crate::patch::finish(id, inner, &positions, &patched, sink, depth);
    id
}

/// Delta encoding: differences to the previous value, cascaded (for sorted data such as
/// keys and dates the differences are small).
pub(crate) fn encode_delta(values: &[i64], sink: &mut BufferSink, depth: u8) -> NodeId {
    let id = sink.reserve_node();
    let first = values.first().copied().unwrap_or(0);
    let mut prev = first;
    let deltas: Vec<i64> = values
        .iter()
        .map(|&v| {
            let d = v.wrapping_sub(prev);
            prev = v;
            d
        })
        .collect();
    let deltas = <i64 as crate::cascade::Value>::encode(&deltas, sink, depth.saturating_sub(1));
    sink.set_node(id, Node::Delta { first, deltas });
    id
}

/// Inverts [`encode_delta`]: a wrapping prefix sum starting at `first`.
pub(crate) fn undelta(first: i64, mut deltas: Vec<i64>) -> Vec<i64> {
    let mut acc = first;
    for d in deltas.iter_mut() {
        acc = acc.wrapping_add(*d);
        *d = acc;
    }
    deltas
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn round_trip<T: NativeInt + std::fmt::Debug>(
        values: Vec<T>,
    ) -> std::result::Result<(), TestCaseError> {
        let mut sink = BufferSink::default();
        let root = encode_ints(&values, &mut sink);
        let enc = ColumnEncoding {
            validity: crate::Validity::AllValid,
            nodes: sink.nodes,
        };
        let bufs: Vec<&[u8]> = sink.buffers.iter().map(Vec::as_slice).collect();
        let out = decode_ints::<T>(&enc, root, values.len(), &Buffers(&bufs))
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

    #[test]
    fn extremes() -> std::result::Result<(), TestCaseError> {
        round_trip(vec![i64::MIN, i64::MAX, 0])?;
        round_trip(vec![u64::MAX, 0])?;
        round_trip(vec![i128::MIN, i128::MAX])?;
        round_trip(vec![7i32; 100])
    }
}
