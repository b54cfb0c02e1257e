//! ALP_RD, for real doubles (Afroozeh, Kuffó, Boncz, SIGMOD 2024), whose decimal form is
//! long: the high bits of the bit pattern repeat (sign, exponent, leading mantissa bits),
//! the low bits do not. It splits every pattern at `right_bits`; the high part cascades
//! (typically into a tiny dictionary), the low part is bit-packed.

use serde::{Deserialize, Serialize};
use sift_bits::pack::bit_width;

use crate::domain::{Domain, FloatBits, Value};
use crate::encoding::Encoding;
use crate::error::{Result, corrupt};
use crate::sample::sample;
use crate::tree::{BufferSink, Ctx, NodeId};
use crate::wire::{Reader, Writer};

/// Bit pattern = `left[i]` << `right_bits` | `right[i]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AlpRd {
    /// Where the patterns are cut (1–63).
    pub right_bits: u8,
    /// The high parts.
    pub left: NodeId,
    /// The low parts.
    pub right: NodeId,
}

/// Cut positions ALP_RD tries: the high part keeps 1 to 16 bits (the paper's range).
const RD_RIGHT_BITS: std::ops::RangeInclusive<u8> = 48..=63;

/// The cut that minimizes the estimated size of `sample` split into a cascaded high part
/// (the better of frame of reference and a dictionary) and a bit-packed low part.
fn best_right_bits(sample: &[FloatBits]) -> u8 {
    let n = sample.len();
    let mut best = (usize::MAX, *RD_RIGHT_BITS.end());
    let mut left: Vec<u64> = Vec::with_capacity(n);
    // From the narrowest high part up, so that ties keep the smaller dictionary.
    for r in RD_RIGHT_BITS.rev() {
        let mask = (1u64 << r) - 1;
        left.clear();
        left.extend(sample.iter().map(|v| v.0 >> r));
        left.sort_unstable();
        let (lo, hi) = (
            left.first().copied().unwrap_or(0),
            left.last().copied().unwrap_or(0),
        );
        left.dedup();
        let distinct = left.len();
        let left_range_bits = bit_width(hi - lo) as usize;
        let for_bits = n * left_range_bits;
        let dict_bits =
            n * bit_width(distinct.saturating_sub(1) as u64) as usize + distinct * left_range_bits;
        let (rmin, rmax) = sample
            .iter()
            .map(|v| v.0 & mask)
            .fold((u64::MAX, 0u64), |(a, b), x| (a.min(x), b.max(x)));
        let right_bits = n * bit_width(rmax.saturating_sub(rmin)) as usize;
        let size = for_bits.min(dict_bits) + right_bits;
        if size < best.0 {
            best = (size, r);
        }
    }
    best.1
}

/// ALP_RD: real doubles split into a high part (usually a tiny dictionary) and raw low bits.
pub(crate) fn encode(values: &[FloatBits], sink: &mut BufferSink, depth: u8) -> NodeId {
    let right_bits = best_right_bits(&sample(values));
    let mask = (1u64 << right_bits) - 1;
    let id = sink.reserve_node();
    // right_bits ≥ 1, so both halves are below 2^63 and fit in i64 without changing sign.
    let left: Vec<i64> = values.iter().map(|v| (v.0 >> right_bits) as i64).collect();
    let right: Vec<i64> = values.iter().map(|v| (v.0 & mask) as i64).collect();
    let child_depth = depth.saturating_sub(1);
    let left = <i64 as Value>::encode(&left, sink, child_depth);
    let right = <i64 as Value>::encode(&right, sink, child_depth);
    sink.set_node(
        id,
        AlpRd {
            right_bits,
            left,
            right,
        },
    );
    id
}

impl Encoding for AlpRd {
    const ID: u8 = 10;
    const NAME: &'static str = "alprd";
    const DOMAINS: &'static [Domain] = &[Domain::Float];

    fn write(&self, w: &mut Writer) {
        w.u8(self.right_bits);
        w.varint(u64::from(self.left));
        w.varint(u64::from(self.right));
    }

    fn read(r: &mut Reader<'_>) -> Result<Self> {
        Ok(Self {
            right_bits: r.u8("alprd right_bits")?,
            left: r.varint_u32("alprd left")?,
            right: r.varint_u32("alprd right")?,
        })
    }

    fn label(&self) -> String {
        format!("alprd[{}]", self.right_bits)
    }

    fn children(&self) -> Vec<NodeId> {
        vec![self.left, self.right]
    }

    fn decode<V: Value>(
        &self,
        ctx: &Ctx<'_>,
        id: NodeId,
        count: usize,
        depth: usize,
    ) -> Result<Option<Vec<V>>> {
        if V::DOMAIN != Domain::Float {
            return Ok(None);
        }
        let right_bits = self.right_bits;
        if !(1..=63).contains(&right_bits) {
            return Err(corrupt(format!(
                "node {id}: ALP_RD cut at bit {right_bits}, 1..=63 expected"
            )));
        }
        let left = i64::decode(ctx, ctx.child(id, self.left)?, count, depth + 1)?;
        let right = i64::decode(ctx, ctx.child(id, self.right)?, count, depth + 1)?;
        let shift = u32::from(right_bits);
        let mask = (1u64 << shift) - 1;
        // High bits shifted out and stray low bits are dropped: a hostile file gets
        // garbage values, never a panic.
        Ok(V::from_floats(
            left.into_iter()
                .zip(&right)
                .map(|(l, &r)| FloatBits(((l as u64) << shift) | (r as u64 & mask)))
                .collect(),
        ))
    }
}
