//! Frame of reference with the codes stored as byte slices (ByteSlice, Feng et al.,
//! SIGMOD 2015): value = `base` + code, and byte `j` of every code, most significant first,
//! in slice `j` (`sift_bits::byteslice`).
//!
//! The same values as [`For`](crate::encodings::For) in another layout. A range predicate
//! compares the most significant byte of 64 codes at once and reads a lower slice only for
//! the codes still tied with the constant, so a comparison on wide codes usually decides
//! after one or two slices where bit-packed codes must read every bit. The price is the
//! padding of each code to whole bytes (18-bit codes take 24 bits), which is why the
//! writer uses it only for columns that ask for it.

use serde::{Deserialize, Serialize};
use sift_bits::Bitmap;
use sift_bits::byteslice::{ByteSlices, sliced_bytes};
use sift_bits::predicate::Predicate;

use crate::domain::{Domain, Value, uniform};
use crate::encoding::Encoding;
use crate::encodings::frame::{NativeInt, base_as, base_i64, beyond_i64, code_range};
use crate::error::{Result, corrupt};
use crate::predicate::DomainPred;
use crate::tree::{BufferSink, ColumnEncoding, Ctx, NodeId};
use crate::wire::{Reader, Writer};

/// Frame of reference with byte-sliced codes: value = `base` + code, codes `bits` wide,
/// stored as `ceil(bits / 8)` slices of `count` bytes (each padded to a multiple of 64)
/// one after another in buffer `buffer`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ByteSlice {
    /// The smallest value.
    pub base: i128,
    /// Bits per code (0–64).
    pub bits: u8,
    /// The buffer holding the slices.
    pub buffer: u32,
}

/// Encodes codes that are offsets from `base` and at most `bits` wide as byte slices.
pub(crate) fn encode(base: i128, codes: &[u64], bits: u32, sink: &mut BufferSink) -> NodeId {
    let slices = ByteSlices::from_codes(codes, bits)
        .unwrap_or_else(|_| unreachable!("the bit width of u64 codes is at most 64"));
    let buffer = sink.buffer(slices.as_bytes().to_vec());
    sink.push_node(ByteSlice {
        base,
        bits: bits as u8,
        buffer,
    })
}

impl ByteSlice {
    /// The slices of `count` codes, borrowed from the chunk's buffer.
    fn slices<'a>(&self, ctx: &Ctx<'a>, count: usize) -> Result<ByteSlices<'a>> {
        let bits = u32::from(self.bits);
        let needed = sliced_bytes(count, bits)
            .ok_or_else(|| corrupt(format!("{count} codes of {bits} bits overflow")))?;
        let bytes = ctx.bufs.get(self.buffer, needed)?;
        ByteSlices::from_bytes(bytes, bits, count).map_err(|e| corrupt(format!("byte slices: {e}")))
    }
}

impl Encoding for ByteSlice {
    const ID: u8 = 15;
    const NAME: &'static str = "byteslice";
    const DOMAINS: &'static [Domain] = &[Domain::Int];
    const FILTERS_ENCODED: bool = true;

    fn write(&self, w: &mut Writer) {
        w.zigzag128(self.base);
        w.u8(self.bits);
        w.varint(u64::from(self.buffer));
    }

    fn read(r: &mut Reader<'_>) -> Result<Self> {
        Ok(Self {
            base: r.zigzag128("byteslice base")?,
            bits: r.u8("byteslice bits")?,
            buffer: r.varint_u32("byteslice buffer")?,
        })
    }

    fn label(&self) -> String {
        format!("byteslice{}", self.bits)
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
        let codes = self
            .slices(ctx, count)?
            .select(sel)
            .map_err(|e| corrupt(format!("byte slices: {e}")))?;
        Ok(V::from_ints(
            codes
                .into_iter()
                .map(|c| base.wrapping_add(c as i64))
                .collect(),
        ))
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
        let Some((lo, hi)) = code_range(self.base, self.bits, lo, hi)? else {
            return Ok(Some(uniform(count, negate)));
        };
        let mut out = self
            .slices(ctx, count)?
            .compare(Predicate::Between(lo, hi), None)
            .map_err(|e| corrupt(format!("byte slices: {e}")))?;
        if negate {
            out.not_assign();
        }
        Ok(Some(out))
    }

    fn decode_native<T: NativeInt>(
        &self,
        ctx: &Ctx<'_>,
        _id: NodeId,
        count: usize,
    ) -> Result<Option<Vec<T>>> {
        let base = base_as::<T>(self.base)?;
        let codes = self.slices(ctx, count)?.decode();
        Ok(Some(codes.into_iter().map(|c| base.add_code(c)).collect()))
    }

    fn beyond_i64(&self, _bytes: usize) -> bool {
        beyond_i64(self.base, self.bits)
    }

    /// The first two slices are compared for every code, a third and later ones only for
    /// the rare codes still tied with the constant.
    fn scan_cost(&self, _enc: &ColumnEncoding, _id: NodeId) -> Option<f64> {
        let slices = f64::from(self.bits.div_ceil(8));
        Some(0.1 + slices.min(2.0) * 8.0 / 16.0 + if slices > 2.0 { 0.05 } else { 0.0 })
    }

    fn row_addressable(&self, _enc: &ColumnEncoding, _id: NodeId) -> bool {
        true
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::encodings::frame::encode_for;
    use crate::predicate::IntRange;
    use proptest::prelude::*;

    /// Encodes `values` as byte slices (as a column asking for them does).
    fn sliced(values: &[i64]) -> (BufferSink, NodeId) {
        let mut sink = BufferSink {
            byteslice: true,
            ..BufferSink::default()
        };
        let min = values.iter().copied().min().unwrap_or(0);
        let codes: Vec<u64> = values
            .iter()
            .map(|&v| (i128::from(v) - i128::from(min)) as u64)
            .collect();
        let root = encode_for(i128::from(min), &codes, &mut sink);
        (sink, root)
    }

    proptest! {
        /// Decode, selective decode and range filters on byte slices equal the scalar
        /// reference on the values.
        #[test]
        fn equals_reference(
            base in -1_000_000i64..1_000_000,
            width in 9u32..=40,
            raw in proptest::collection::vec(any::<u64>(), 1..700),
            sel_seed in any::<u64>(),
            a in any::<u64>(),
            b in any::<u64>(),
            negate in any::<bool>(),
        ) {
            let mask = (1u64 << width) - 1;
            let values: Vec<i64> = raw.iter().map(|&r| base + (r & mask) as i64).collect();
            let (sink, root) = sliced(&values);
            prop_assert!(matches!(sink.nodes[root as usize], crate::registry::Node::ByteSlice(_)) || values.iter().max().unwrap() - values.iter().min().unwrap() < 256);
            let n = values.len();
            let sel = Bitmap::from_bools((0..n).map(|i| (sel_seed.rotate_left(i as u32 % 64) ^ i as u64) & 3 == 0));
            let (lo, hi) = {
                let x = base + (a & mask) as i64 - 5;
                let y = base + (b & mask) as i64 + 5;
                (x.min(y), x.max(y))
            };
            let range = IntRange::new(i128::from(lo), i128::from(hi), negate);
            let (decoded, selected, filtered) = sink.decode_with(|ctx| -> Result<_> {
                Ok((
                    i64::decode(ctx, root, n, 0)?,
                    i64::select(ctx, root, n, 0, &sel)?,
                    i64::filter(ctx, root, n, 0, &range)?,
                ))
            }).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(&decoded, &values);
            let want: Vec<i64> = sel.iter_ones().map(|i| values[i]).collect();
            prop_assert_eq!(selected, want);
            let want = Bitmap::from_bools(values.iter().map(|&v| (lo..=hi).contains(&v) != negate));
            prop_assert_eq!(filtered, want);
        }
    }

    #[test]
    fn narrow_codes_stay_bit_packed() {
        let (sink, root) = sliced(&[1, 2, 200]);
        assert!(matches!(
            sink.nodes[root as usize],
            crate::registry::Node::For(_)
        ));
        let (sink, root) = sliced(&[1, 2, 300]);
        assert!(matches!(
            sink.nodes[root as usize],
            crate::registry::Node::ByteSlice(_)
        ));
    }

    #[test]
    fn short_buffer_is_an_error() {
        let (mut sink, root) = sliced(&(0..100).map(|i| i * 1000).collect::<Vec<_>>());
        sink.buffers[0].truncate(100);
        let err = sink
            .decode_with(|ctx| i64::decode(ctx, root, 100, 0))
            .unwrap_err();
        assert!(err.to_string().contains("needed"), "{err}");
    }
}
