//! Exceptions patched over a base encoding, generic over the value domain.
//!
//! One node serves three schemes: frequency encoding (a patch over a constant: one dominant
//! value plus exception positions and values), patched bit-packing (PFOR: narrow codes with
//! the outliers patched in, see `int.rs`) and ALP's exceptions (see `alp.rs`).

use serde::{Deserialize, Serialize};
use sift_bits::Bitmap;
use sift_bits::pack;

use crate::domain::{Domain, Value, decode_indices};
use crate::encoding::Encoding;
use crate::encodings::frame::{encode_for, encode_ints};
use crate::encodings::{bitset, constant};
use crate::error::{Result, corrupt};
use crate::predicate::DomainPred;
use crate::tree::{BufferSink, Ctx, NodeId};
use crate::wire::{Reader, Writer};

/// Exceptions over a base: decode `inner`, then overwrite the values at `positions`
/// (strictly increasing integers) with `values`; `exceptions` of them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Patch {
    /// The base values.
    pub inner: NodeId,
    /// The number of exceptions.
    pub exceptions: u32,
    /// Their positions.
    pub positions: NodeId,
    /// Their values.
    pub values: NodeId,
}

/// The majority element if there is one (Boyer–Moore vote; the sample already showed the
/// top value covers about half, so the vote finds it without a counting pass).
fn majority<V: Value>(values: &[V]) -> Option<V> {
    let mut candidate = *values.first()?;
    let mut count = 0usize;
    for &v in values {
        if count == 0 {
            candidate = v;
        }
        count = if v == candidate { count + 1 } else { count - 1 };
    }
    Some(candidate)
}

/// Frequency encoding: the dominant value as a constant, the others as exceptions.
pub(crate) fn encode_frequency<V: Value>(values: &[V], sink: &mut BufferSink, depth: u8) -> NodeId {
    let top = majority(values).unwrap_or_default();
    let id = sink.reserve_node();
    let inner = constant::encode(top, sink);
    let mut positions = Vec::new();
    let mut exceptions = Vec::new();
    for (i, &v) in values.iter().enumerate() {
        if v != top {
            positions.push(i as i64);
            exceptions.push(v);
        }
    }
    finish(id, inner, &positions, &exceptions, sink, depth);
    id
}

/// Stores exception `positions` and `values` and completes the patch node `id` over `inner`.
pub(crate) fn finish<V: Value>(
    id: NodeId,
    inner: NodeId,
    positions: &[i64],
    values: &[V],
    sink: &mut BufferSink,
    depth: u8,
) {
    let child_depth = depth.saturating_sub(1);
    let pos = encode_positions(positions, sink, child_depth);
    let vals = V::encode(values, sink, child_depth);
    sink.set_node(
        id,
        Patch {
            inner,
            exceptions: positions.len() as u32,
            positions: pos,
            values: vals,
        },
    );
}

/// Encodes exception positions (strictly increasing): chosen like any integers, or as a
/// bitmap over their range when that is smaller, which it can only be when at least one
/// row in eight of the range is an exception (the chooser's sample cannot see this: a
/// sample of dense positions looks sparse).
fn encode_positions(positions: &[i64], sink: &mut BufferSink, depth: u8) -> NodeId {
    if let Some(bytes) = bitset::bitmap_bytes(positions)
        && positions.len() >= 64
        && positions.len() >= bytes
    {
        let mut scratch = BufferSink::default();
        i64::encode(positions, &mut scratch, depth);
        if bytes < scratch.stored_size() {
            return bitset::encode(positions, bytes, sink);
        }
    }
    i64::encode(positions, sink, depth)
}

/// Patched frame of reference (PFOR): bit-pack at the width that minimizes the total
/// size, storing the values that do not fit as exceptions in a patch node.
pub(crate) fn encode_pfor(values: &[i64], sink: &mut BufferSink, depth: u8) -> NodeId {
    let Some(&min) = values.iter().min() else {
        return encode_ints(values, sink, depth);
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
        return encode_ints(values, sink, depth);
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
    finish(id, inner, &positions, &patched, sink, depth);
    id
}

impl Patch {
    /// The exception positions (increasing, each below `count`).
    fn positions(&self, ctx: &Ctx<'_>, id: NodeId, count: usize, depth: usize) -> Result<Vec<u64>> {
        let exceptions = self.exceptions as usize;
        if exceptions > count {
            return Err(corrupt(format!(
                "{exceptions} exceptions for {count} values"
            )));
        }
        let max = count.saturating_sub(1) as u64;
        decode_indices(
            ctx,
            ctx.child(id, self.positions)?,
            exceptions,
            max,
            depth + 1,
        )
    }

    /// The exception positions (increasing, each below `count`) and values.
    fn exceptions<V: Value>(
        &self,
        ctx: &Ctx<'_>,
        id: NodeId,
        count: usize,
        depth: usize,
    ) -> Result<(Vec<u64>, Vec<V>)> {
        let pos = self.positions(ctx, id, count, depth)?;
        let vals = V::decode(ctx, ctx.child(id, self.values)?, pos.len(), depth + 1)?;
        Ok((pos, vals))
    }
}

impl Encoding for Patch {
    const ID: u8 = 7;
    const NAME: &'static str = "patch";
    const DOMAINS: &'static [Domain] = &[Domain::Int, Domain::Float, Domain::Bool];
    const FILTERS_ENCODED: bool = true;

    fn write(&self, w: &mut Writer) {
        w.varint(u64::from(self.inner));
        w.varint(u64::from(self.exceptions));
        w.varint(u64::from(self.positions));
        w.varint(u64::from(self.values));
    }

    fn read(r: &mut Reader<'_>) -> Result<Self> {
        Ok(Self {
            inner: r.varint_u32("patch inner")?,
            exceptions: r.varint_u32("patch exceptions")?,
            positions: r.varint_u32("patch positions")?,
            values: r.varint_u32("patch values")?,
        })
    }

    fn label(&self) -> String {
        format!("patch[{}]", self.exceptions)
    }

    fn children(&self) -> Vec<NodeId> {
        vec![self.inner, self.positions, self.values]
    }

    fn decode<V: Value>(
        &self,
        ctx: &Ctx<'_>,
        id: NodeId,
        count: usize,
        depth: usize,
    ) -> Result<Option<Vec<V>>> {
        let (pos, vals) = self.exceptions::<V>(ctx, id, count, depth)?;
        let mut out = V::decode(ctx, ctx.child(id, self.inner)?, count, depth + 1)?;
        for (p, v) in pos.into_iter().zip(vals) {
            out[p as usize] = v;
        }
        Ok(Some(out))
    }

    /// The inner node's selected values, then the exceptions that fall on selected rows.
    fn select<V: Value>(
        &self,
        ctx: &Ctx<'_>,
        id: NodeId,
        count: usize,
        depth: usize,
        sel: &Bitmap,
    ) -> Result<Option<Vec<V>>> {
        let (pos, vals) = self.exceptions::<V>(ctx, id, count, depth)?;
        let mut out = V::select(ctx, ctx.child(id, self.inner)?, count, depth + 1, sel)?;
        patch_selected(&mut out, sel, &pos, vals)?;
        Ok(Some(out))
    }

    /// The inner node, then the exceptions alone, filtered where they are stored (a
    /// constant's verdict is reached once, not per exception).
    fn filter<V: Value, P: DomainPred<V>>(
        &self,
        ctx: &Ctx<'_>,
        id: NodeId,
        count: usize,
        depth: usize,
        p: &P,
    ) -> Result<Option<Bitmap>> {
        let pos = self.positions(ctx, id, count, depth)?;
        let verdicts = V::filter(ctx, ctx.child(id, self.values)?, pos.len(), depth + 1, p)?;
        let mut out = V::filter(ctx, ctx.child(id, self.inner)?, count, depth + 1, p)?;
        out.set_each(&pos, &verdicts);
        Ok(Some(out))
    }
}

/// Overwrites the selected values at exception `positions` (increasing) with `values`.
fn patch_selected<V: Copy>(
    out: &mut [V],
    sel: &Bitmap,
    positions: &[u64],
    values: Vec<V>,
) -> Result<()> {
    // The rank of a position among the selected ones, counted word by word as the
    // positions increase.
    let words = sel.words();
    let (mut word, mut rank_before) = (0usize, 0usize);
    for (&p, v) in positions.iter().zip(values) {
        let p = p as usize;
        if !sel.get(p) {
            continue;
        }
        let w = p / 64;
        if w < word {
            return Err(corrupt("exception positions are not increasing"));
        }
        while word < w {
            rank_before += words[word].count_ones() as usize;
            word += 1;
        }
        let below = words[w] & ((1u64 << (p % 64)) - 1);
        let rank = rank_before + below.count_ones() as usize;
        if let Some(slot) = out.get_mut(rank) {
            *slot = v;
        }
    }
    Ok(())
}
