//! Exceptions patched over a base encoding, generic over the value domain.
//!
//! One node serves three schemes: frequency encoding (a patch over a constant: one dominant
//! value plus exception positions and values), patched bit-packing (PFOR: narrow codes with
//! the outliers patched in, see `int.rs`) and ALP's exceptions (see `alp.rs`).

use crate::cascade::{Ctx, Value, decode_indices};
use crate::error::{Result, corrupt};
use crate::node::{BufferSink, Node, NodeId};

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
    let inner = sink.push_node(Node::Constant {
        value: top.le_bytes().to_vec(),
    });
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
    let pos = i64::encode(positions, sink, child_depth);
    let vals = V::encode(values, sink, child_depth);
    sink.set_node(
        id,
        Node::Patch {
            inner,
            exceptions: positions.len() as u32,
            positions: pos,
            values: vals,
        },
    );
}

/// The exception positions (increasing, each below `count`) and values of a patch node.
pub(crate) fn exceptions<V: Value>(
    ctx: &Ctx<'_>,
    id: NodeId,
    (exceptions, positions, values): (u32, NodeId, NodeId),
    count: usize,
    depth: usize,
) -> Result<(Vec<u64>, Vec<V>)> {
    let exceptions = exceptions as usize;
    if exceptions > count {
        return Err(corrupt(format!(
            "{exceptions} exceptions for {count} values"
        )));
    }
    let max = count.saturating_sub(1) as u64;
    let pos = decode_indices(ctx, ctx.child(id, positions)?, exceptions, max, depth + 1)?;
    let vals = V::decode(ctx, ctx.child(id, values)?, exceptions, depth + 1)?;
    Ok((pos, vals))
}

/// Decodes `count` values from a patch node `(inner, exceptions, positions, values)`.
pub(crate) fn decode<V: Value>(
    ctx: &Ctx<'_>,
    id: NodeId,
    (inner, exceptions, positions, values): (NodeId, u32, NodeId, NodeId),
    count: usize,
    depth: usize,
) -> Result<Vec<V>> {
    let (pos, vals) =
        self::exceptions::<V>(ctx, id, (exceptions, positions, values), count, depth)?;
    let mut out = V::decode(ctx, ctx.child(id, inner)?, count, depth + 1)?;
    for (p, v) in pos.into_iter().zip(vals) {
        out[p as usize] = v;
    }
    Ok(out)
}
