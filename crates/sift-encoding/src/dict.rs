//! Sorted dictionaries for numbers, generic over the value domain. Because the dictionary
//! is sorted, code order is value order and range predicates become code ranges.
//! (Byte strings have their own dictionary in `bytes.rs`, over the same node.)

// FxHash: encoding hashes millions of small keys; SipHash's DoS resistance buys nothing
// here and cost most of the dictionary-building time.
use rustc_hash::FxHashMap as HashMap;

use crate::cascade::{Ctx, Value, decode_indices};
use crate::error::{Result, corrupt};
use crate::node::{BufferSink, Node, NodeId};

/// The sorted distinct values of `values` and the code of every value (used for byte
/// strings too, whose keys are slices).
pub(crate) fn build<K: Copy + Eq + std::hash::Hash + Ord>(values: &[K]) -> (Vec<K>, Vec<i64>) {
    let mut first_codes: HashMap<K, u32> = HashMap::default();
    let codes: Vec<u32> = values
        .iter()
        .map(|&v| {
            let next = first_codes.len() as u32;
            *first_codes.entry(v).or_insert(next)
        })
        .collect();
    // Sort the distinct values and renumber codes so that code order is value order.
    let mut distinct: Vec<(K, u32)> = first_codes.into_iter().collect();
    distinct.sort_unstable();
    let mut rank = vec![0i64; distinct.len()];
    for (r, (_, first)) in distinct.iter().enumerate() {
        rank[*first as usize] = r as i64;
    }
    (
        distinct.into_iter().map(|(v, _)| v).collect(),
        codes.into_iter().map(|c| rank[c as usize]).collect(),
    )
}

/// Encodes `values` as a sorted dictionary plus codes.
pub(crate) fn encode<V: Value>(values: &[V], sink: &mut BufferSink, depth: u8) -> NodeId {
    let id = sink.reserve_node();
    let (distinct, codes) = build(values);
    let child_depth = depth.saturating_sub(1);
    let vals = V::encode(&distinct, sink, child_depth);
    let codes = i64::encode(&codes, sink, child_depth);
    sink.set_node(
        id,
        Node::Dict {
            values: vals,
            len: distinct.len() as u32,
            codes,
        },
    );
    id
}

/// A dictionary's stored size, checked: never more entries than values, and none only when
/// there are no values (also for byte-string dictionaries).
pub(crate) fn checked_len(len: u32, count: usize) -> Result<usize> {
    let len = len as usize;
    if len > count || (len == 0 && count > 0) {
        return Err(corrupt(format!(
            "dictionary of {len} entries for {count} values"
        )));
    }
    Ok(len)
}

/// Decodes `count` values from a dictionary node `(values, len, codes)`.
pub(crate) fn decode<V: Value>(
    ctx: &Ctx<'_>,
    id: NodeId,
    (values, len, codes): (NodeId, u32, NodeId),
    count: usize,
    depth: usize,
) -> Result<Vec<V>> {
    let len = checked_len(len, count)?;
    let dict = V::decode(ctx, ctx.child(id, values)?, len, depth + 1)?;
    let codes = decode_indices(
        ctx,
        ctx.child(id, codes)?,
        count,
        len.saturating_sub(1) as u64,
        depth + 1,
    )?;
    Ok(codes.into_iter().map(|c| dict[c as usize]).collect())
}
