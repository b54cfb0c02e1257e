//! Delta encoding of integers: differences to the previous value, cascaded (for sorted
//! data such as keys and dates the differences are small).
//!
//! Doubles take it on their bit patterns, tried only where those strictly increase: a
//! dictionary's values (sorted, distinct, of one sign), or a column that only grows.
//! Neighbours then share their sign, exponent and leading mantissa bits: computed values
//! (wages after deflation, ratios) keep 50-odd significant bits that ALP cannot shorten,
//! but a dictionary of a few thousand of them in a narrow range differs by about 2^42 from
//! one to the next. Not tried on other inputs: a filter must decode a delta first, where
//! ALP filters on its integers (dictionary values are decoded once per chunk anyway).

use serde::{Deserialize, Serialize};

use crate::domain::{Domain, FloatBits, Value};
use crate::encoding::Encoding;
use crate::error::Result;
use crate::tree::{BufferSink, Ctx, NodeId};
use crate::wire::{Reader, Writer};

/// Value `i` = value `i - 1` + `deltas[i]` (wrapping), where value `-1` is `first`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Delta {
    /// The value before the first.
    pub first: i64,
    /// The differences.
    pub deltas: NodeId,
}

/// Delta encoding: differences to the previous value, cascaded (for sorted data such as
/// keys and dates the differences are small).
pub(crate) fn encode(values: &[i64], sink: &mut BufferSink, depth: u8) -> NodeId {
    let id = sink.reserve_node();
    // The value before the first is taken one step before it (the first delta equals the
    // second), so that a sequence with a constant step (weekly or hourly timestamps) has
    // constant deltas instead of one outlier at the start.
    let first = match values {
        [a, b, ..] => a.wrapping_sub(b.wrapping_sub(*a)),
        [a] => *a,
        [] => 0,
    };
    let mut prev = first;
    let deltas: Vec<i64> = values
        .iter()
        .map(|&v| {
            let d = v.wrapping_sub(prev);
            prev = v;
            d
        })
        .collect();
    let deltas = i64::encode(&deltas, sink, depth.saturating_sub(1));
    sink.set_node(id, Delta { first, deltas });
    id
}

/// Delta encoding of doubles' bit patterns (see the module documentation).
pub(crate) fn encode_floats(values: &[FloatBits], sink: &mut BufferSink, depth: u8) -> NodeId {
    let bits: Vec<i64> = values.iter().map(|v| v.0 as i64).collect();
    encode(&bits, sink, depth)
}

/// Inverts [`encode`]: a wrapping prefix sum starting at `first`.
pub(crate) fn undelta(first: i64, mut deltas: Vec<i64>) -> Vec<i64> {
    sift_bits::running_sum::running_sum(sift_bits::Level::active(), first, &mut deltas);
    deltas
}

impl Encoding for Delta {
    const ID: u8 = 8;
    const NAME: &'static str = "delta";
    const DOMAINS: &'static [Domain] = &[Domain::Int, Domain::Float];

    fn write(&self, w: &mut Writer) {
        w.zigzag(self.first);
        w.varint(u64::from(self.deltas));
    }

    fn read(r: &mut Reader<'_>) -> Result<Self> {
        Ok(Self {
            first: r.zigzag("delta first")?,
            deltas: r.varint_u32("delta deltas")?,
        })
    }

    fn children(&self) -> Vec<NodeId> {
        vec![self.deltas]
    }

    fn decode<V: Value>(
        &self,
        ctx: &Ctx<'_>,
        id: NodeId,
        count: usize,
        depth: usize,
    ) -> Result<Option<Vec<V>>> {
        let decode = || -> Result<Vec<i64>> {
            let deltas = i64::decode(ctx, ctx.child(id, self.deltas)?, count, depth + 1)?;
            Ok(undelta(self.first, deltas))
        };
        Ok(match V::DOMAIN {
            Domain::Int => V::from_ints(decode()?),
            Domain::Float => {
                V::from_floats(decode()?.into_iter().map(|b| FloatBits(b as u64)).collect())
            }
            Domain::Bool | Domain::Bytes => None,
        })
    }
}
