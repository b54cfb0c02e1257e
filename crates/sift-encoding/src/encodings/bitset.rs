//! Strictly increasing integers as a bitmap over their range: the values are `base + i`
//! for every set bit `i`, in order.
//!
//! A patch's exception positions take this form when exceptions are dense: a position then
//! costs the gap to the next one in bits (one bit per row of the range), where delta codes
//! cost the widest gap's width for every position. Mostly-zero measurements (rainfall, days
//! of illness) have a non-zero value on a third to a half of the rows, which makes the
//! bitmap 3–6× smaller than the delta-coded positions.

use serde::{Deserialize, Serialize};

use crate::domain::{Domain, Value};
use crate::encoding::Encoding;
use crate::error::{Result, corrupt};
use crate::tree::{BufferSink, Ctx, NodeId};
use crate::wire::{Reader, Writer};

/// Strictly increasing integers: `base + i` for every bit `i` set in buffer `buffer`
/// (little-endian 64-bit words, bit `i` = bit `i mod 64` of word `i / 64`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BitSet {
    /// The value of bit 0.
    pub base: i64,
    /// The buffer holding the bitmap.
    pub buffer: u32,
}

/// Bytes the bitmap of strictly increasing `values` takes, or `None` if they are not
/// strictly increasing (or span more than `usize` bits).
pub(crate) fn bitmap_bytes(values: &[i64]) -> Option<usize> {
    let (Some(&first), Some(&last)) = (values.first(), values.last()) else {
        return Some(0);
    };
    if values.windows(2).any(|w| w[0] >= w[1]) {
        return None;
    }
    let span = usize::try_from(last.checked_sub(first)?)
        .ok()?
        .checked_add(1)?;
    Some(span.div_ceil(64) * 8)
}

/// Encodes strictly increasing `values` in a bitmap of `bytes`, their [`bitmap_bytes`].
pub(crate) fn encode(values: &[i64], bytes: usize, sink: &mut BufferSink) -> NodeId {
    let base = values.first().copied().unwrap_or(0);
    let mut words = vec![0u64; bytes / 8];
    for &v in values {
        // Every value lies in base..=last, so the offset fits the bitmap.
        let i = v.wrapping_sub(base) as u64 as usize;
        if let Some(w) = words.get_mut(i / 64) {
            *w |= 1 << (i % 64);
        }
    }
    let mut buf = Vec::with_capacity(bytes);
    sift_bits::pack::extend_le_bytes(&mut buf, &words);
    let buffer = sink.buffer(buf);
    sink.push_node(BitSet { base, buffer })
}

impl Encoding for BitSet {
    const ID: u8 = 16;
    const NAME: &'static str = "bitset";
    const DOMAINS: &'static [Domain] = &[Domain::Int];

    fn write(&self, w: &mut Writer) {
        w.zigzag(self.base);
        w.varint(u64::from(self.buffer));
    }

    fn read(r: &mut Reader<'_>) -> Result<Self> {
        Ok(Self {
            base: r.zigzag("bitset base")?,
            buffer: r.varint_u32("bitset buffer")?,
        })
    }

    fn decode<V: Value>(
        &self,
        ctx: &Ctx<'_>,
        _id: NodeId,
        count: usize,
        _depth: usize,
    ) -> Result<Option<Vec<V>>> {
        if V::DOMAIN != Domain::Int {
            return Ok(None);
        }
        let bytes = ctx.bufs.get(self.buffer, 0)?;
        let mut out: Vec<i64> = Vec::with_capacity(count.min(bytes.len() * 8));
        'words: for (k, chunk) in bytes.chunks(8).enumerate() {
            let mut le = [0u8; 8];
            le[..chunk.len()].copy_from_slice(chunk);
            let mut w = u64::from_le_bytes(le);
            while w != 0 {
                if out.len() == count {
                    break 'words;
                }
                let i = (k * 64) as i64 + i64::from(w.trailing_zeros());
                let v = self.base.checked_add(i).ok_or_else(|| {
                    corrupt(format!("bitset value {} + {i} overflows", self.base))
                })?;
                out.push(v);
                w &= w - 1;
            }
        }
        if out.len() != count {
            return Err(corrupt(format!(
                "bitset holds {} values, {count} needed",
                out.len()
            )));
        }
        Ok(V::from_ints(out))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn round_trip(base in -1_000_000i64..1_000_000, gaps in proptest::collection::vec(1i64..40, 0..600)) {
            let mut v = base;
            let values: Vec<i64> = gaps.iter().map(|g| { v += g; v }).collect();
            let bytes = bitmap_bytes(&values).unwrap();
            let mut sink = BufferSink::default();
            let root = encode(&values, bytes, &mut sink);
            let out = sink.decode_with(|ctx| i64::decode(ctx, root, values.len(), 0)).unwrap();
            prop_assert_eq!(out, values);
        }
    }

    #[test]
    fn unsorted_values_have_no_bitmap() {
        assert_eq!(bitmap_bytes(&[1, 1]), None);
        assert_eq!(bitmap_bytes(&[2, 1]), None);
        assert_eq!(bitmap_bytes(&[i64::MIN, i64::MAX]), None);
        assert_eq!(bitmap_bytes(&[0, 64]), Some(16));
    }

    #[test]
    fn too_few_bits_is_an_error() {
        let mut sink = BufferSink::default();
        let root = encode(&[3, 5, 9], 8, &mut sink);
        let err = sink
            .decode_with(|ctx| i64::decode(ctx, root, 4, 0))
            .unwrap_err();
        assert!(
            err.to_string().contains("holds 3 values, 4 needed"),
            "{err}"
        );
    }
}
