//! Decoding only the selected values (selection pushdown, Parquet-Select §4).
//!
//! Given a bitmap over a chunk's compacted values, each scheme produces just the values
//! whose bit is set, without materializing the others where it can:
//!
//! | node | selected decode |
//! |---|---|
//! | frame of reference | `sift_bits::select::unpack_selected_for`: PEXT-select or gather the codes, then unpack only those |
//! | ALP | the selected integers, then the float conversion |
//! | dictionary | the selected codes, then a gather |
//! | patch | the inner node's selected values, then the exceptions that fall on selected rows |
//! | constant | repeated |
//! | anything else | decoded, then compacted |

use sift_bits::Bitmap;

use crate::bytes::{ByteValues, decode_bytes, gather};
use crate::cascade::{Ctx, FloatBits, Value, constant};
use crate::dict::checked_len;
use crate::error::{Result, corrupt};
use crate::int::for_words;
use crate::node::{Node, NodeId};
use crate::{alp, patch};

/// A domain whose values can be decoded selectively.
pub(crate) trait Selectable: Value {
    /// The selected values of node `id` (`sel` has `count` bits).
    fn select(
        ctx: &Ctx<'_>,
        id: NodeId,
        count: usize,
        depth: usize,
        sel: &Bitmap,
    ) -> Result<Vec<Self>> {
        select_generic(ctx, id, count, depth, sel)
    }
}

impl Selectable for i64 {
    fn select(
        ctx: &Ctx<'_>,
        id: NodeId,
        count: usize,
        depth: usize,
        sel: &Bitmap,
    ) -> Result<Vec<i64>> {
        match ctx.node(id, depth)? {
            &Node::For { base, bits, buffer } => {
                let base = i64::try_from(base)
                    .map_err(|_| corrupt(format!("frame-of-reference base {base} out of range")))?;
                let words = for_words(&ctx.bufs, bits, buffer, count)?;
                let out = sift_bits::select::unpack_selected_for::<u64>(
                    &words,
                    u32::from(bits),
                    base as u64,
                    sel,
                )
                .map_err(|e| corrupt(format!("packed codes: {e}")))?;
                // Same layout; the collect reuses the allocation.
                Ok(out.into_iter().map(|v| v as i64).collect())
            }
            _ => select_generic(ctx, id, count, depth, sel),
        }
    }
}

impl Selectable for FloatBits {
    fn select(
        ctx: &Ctx<'_>,
        id: NodeId,
        count: usize,
        depth: usize,
        sel: &Bitmap,
    ) -> Result<Vec<FloatBits>> {
        match ctx.node(id, depth)? {
            &Node::Alp {
                exponent,
                factor,
                ints,
            } => {
                let ints = i64::select(ctx, ctx.child(id, ints)?, count, depth + 1, sel)?;
                alp::decode_ints_checked(id, exponent, factor, ints)
            }
            _ => select_generic(ctx, id, count, depth, sel),
        }
    }
}

impl Selectable for bool {}

fn select_generic<V: Selectable>(
    ctx: &Ctx<'_>,
    id: NodeId,
    count: usize,
    depth: usize,
    sel: &Bitmap,
) -> Result<Vec<V>> {
    match ctx.node(id, depth)? {
        Node::Constant { value } => Ok(vec![constant::<V>(value)?; sel.count_ones()]),
        &Node::Dict { values, len, codes } => {
            let len = checked_len(len, count)?;
            let dict = V::decode(ctx, ctx.child(id, values)?, len, depth + 1)?;
            let codes = select_indices(ctx, ctx.child(id, codes)?, count, len, depth + 1, sel)?;
            Ok(codes.into_iter().map(|c| dict[c as usize]).collect())
        }
        &Node::Patch {
            inner,
            exceptions,
            positions,
            values,
        } => {
            let (pos, vals) =
                patch::exceptions::<V>(ctx, id, (exceptions, positions, values), count, depth)?;
            let mut out = V::select(ctx, ctx.child(id, inner)?, count, depth + 1, sel)?;
            patch_selected(&mut out, sel, &pos, vals)?;
            Ok(out)
        }
        _ => {
            let all = V::decode(ctx, id, count, depth)?;
            Ok(compact(&all, sel))
        }
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

/// The selected entries of `values`.
pub(crate) fn compact<V: Copy>(values: &[V], sel: &Bitmap) -> Vec<V> {
    let mut out = Vec::with_capacity(sel.count_ones());
    out.extend(sel.iter_ones().filter_map(|i| values.get(i).copied()));
    out
}

/// The selected integers of node `id`, checked to lie in `0..len` (dictionary codes).
pub(crate) fn select_indices(
    ctx: &Ctx<'_>,
    id: NodeId,
    count: usize,
    len: usize,
    depth: usize,
    sel: &Bitmap,
) -> Result<Vec<u64>> {
    let codes = i64::select(ctx, id, count, depth, sel)?;
    crate::cascade::exact_count(ctx, id, codes.len(), sel.count_ones())?;
    let max = len.saturating_sub(1) as u64;
    if let Some(bad) = codes.iter().find(|&&v| v < 0 || v as u64 > max) {
        return Err(corrupt(format!("index {bad} out of range 0..={max}")));
    }
    Ok(codes.into_iter().map(|v| v as u64).collect())
}

/// The selected byte strings of node `id`.
pub(crate) fn select_bytes(
    ctx: &Ctx<'_>,
    id: NodeId,
    count: usize,
    depth: usize,
    sel: &Bitmap,
) -> Result<ByteValues> {
    match ctx.node(id, depth)? {
        &Node::Dict { values, len, codes } => {
            let len = checked_len(len, count)?;
            let dict = decode_bytes(ctx, ctx.child(id, values)?, len, depth + 1)?;
            let codes = select_indices(ctx, ctx.child(id, codes)?, count, len, depth + 1, sel)?;
            gather(ctx, id, &dict, &codes)
        }
        _ => {
            let all = decode_bytes(ctx, id, count, depth)?;
            let mut out = ByteValues::with_capacity(sel.count_ones(), 0);
            for i in sel.iter_ones() {
                out.push(all.value(i));
            }
            Ok(out)
        }
    }
}
