//! Run-length encoding, generic over the value domain: run values and run lengths are
//! cascaded separately.

use crate::cascade::{Ctx, Value, decode_indices};
use crate::error::{Result, corrupt};
use crate::node::{BufferSink, Node, NodeId};

/// Encodes `values` as runs.
pub(crate) fn encode<V: Value>(values: &[V], sink: &mut BufferSink, depth: u8) -> NodeId {
    let id = sink.reserve_node();
    let mut run_values: Vec<V> = Vec::new();
    let mut lengths: Vec<i64> = Vec::new();
    for &v in values {
        match (run_values.last(), lengths.last_mut()) {
            (Some(&last), Some(len)) if last == v => *len += 1,
            _ => {
                run_values.push(v);
                lengths.push(1);
            }
        }
    }
    let child_depth = depth.saturating_sub(1);
    let vals = V::encode(&run_values, sink, child_depth);
    let lens = i64::encode(&lengths, sink, child_depth);
    sink.set_node(
        id,
        Node::Rle {
            values: vals,
            runs: run_values.len() as u32,
            lengths: lens,
        },
    );
    id
}

/// The run values and lengths of an RLE node `(values, runs, lengths)`, checked: every
/// length at least 1, together exactly `count`.
pub(crate) fn runs<V: Value>(
    ctx: &Ctx<'_>,
    id: NodeId,
    (values, runs, lengths): (NodeId, u32, NodeId),
    count: usize,
    depth: usize,
) -> Result<(Vec<V>, Vec<u64>)> {
    let runs = runs as usize;
    if runs > count || (runs == 0 && count > 0) {
        return Err(corrupt(format!("{runs} runs for {count} values")));
    }
    let vals = V::decode(ctx, ctx.child(id, values)?, runs, depth + 1)?;
    let lens = decode_indices(ctx, ctx.child(id, lengths)?, runs, count as u64, depth + 1)?;
    // `Value::decode` checks the counts already; `decode` writes through pointers on the
    // strength of them, so they are checked here too, where it relies on them.
    if vals.len() != runs || lens.len() != runs {
        return Err(corrupt(format!(
            "node {id} (rle[{runs}]): children decoded {} values and {} lengths, {runs} expected",
            vals.len(),
            lens.len()
        )));
    }
    let mut total = 0usize;
    for &len in &lens {
        // Each length is at most `count` (checked by decode_indices), so this cannot overflow.
        total += len as usize;
        if len == 0 || total > count {
            return Err(corrupt(format!("run lengths do not add up to {count}")));
        }
    }
    if total != count {
        return Err(corrupt(format!(
            "runs hold {total} values, {count} expected"
        )));
    }
    Ok((vals, lens))
}

/// Decodes `count` values from an RLE node `(values, runs, lengths)`.
pub(crate) fn decode<V: Value>(
    ctx: &Ctx<'_>,
    id: NodeId,
    node: (NodeId, u32, NodeId),
    count: usize,
    depth: usize,
) -> Result<Vec<V>> {
    let (vals, lens) = runs::<V>(ctx, id, node, count, depth)?;
    // Each run is written as whole groups of `GROUP` copies into spare capacity, the next
    // run starting where this one's length ends: short runs (the common case where RLE
    // wins narrowly) then cost one fixed-size store instead of a `resize` call each.
    const GROUP: usize = 8;
    let mut out: Vec<V> = Vec::with_capacity(count + GROUP);
    let dst = out.as_mut_ptr();
    let mut pos = 0usize;
    for (v, len) in vals.into_iter().zip(lens) {
        let mut k = 0;
        while k < len as usize {
            // SAFETY: `runs` checked that the lengths add up to `count`, so this run ends
            // at `pos + len <= count`, and a group starting before that ends before
            // `count + GROUP`, the capacity.
            unsafe {
                let at = dst.add(pos + k);
                for j in 0..GROUP {
                    at.add(j).write(v);
                }
            }
            k += GROUP;
        }
        pos += len as usize;
    }
    // SAFETY: the runs covered `0..count` (each one its whole length, one after another).
    unsafe { out.set_len(count) };
    Ok(out)
}
