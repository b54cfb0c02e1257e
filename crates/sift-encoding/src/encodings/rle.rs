//! Run-length encoding, generic over the value domain: run values and run lengths are
//! cascaded separately. Predicates are evaluated once per run.

use serde::{Deserialize, Serialize};
use sift_bits::Bitmap;

use crate::domain::{AHEAD_RUN, AHEAD_WORDS, Domain, Value, decode_indices, fill_ahead, fill_run};
use crate::encoding::Encoding;
use crate::error::{Result, corrupt};
use crate::predicate::DomainPred;
use crate::tree::{BufferSink, ColumnEncoding, Ctx, NodeId};
use crate::wire::{Reader, Writer};

/// `runs` runs: their values (child `values`) and lengths (child `lengths`, integers ≥ 1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rle {
    /// The run values.
    pub values: NodeId,
    /// The number of runs.
    pub runs: u32,
    /// The run lengths.
    pub lengths: NodeId,
}

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
        Rle {
            values: vals,
            runs: run_values.len() as u32,
            lengths: lens,
        },
    );
    id
}

impl Rle {
    /// The run values and lengths, checked: every length at least 1, together exactly `count`.
    fn runs<V: Value>(
        &self,
        ctx: &Ctx<'_>,
        id: NodeId,
        count: usize,
        depth: usize,
    ) -> Result<(Vec<V>, Vec<u64>)> {
        let runs = ctx.declared("runs", self.runs, count)?;
        let vals = V::decode(ctx, ctx.child(id, self.values)?, runs, depth + 1)?;
        let lens = decode_indices(
            ctx,
            ctx.child(id, self.lengths)?,
            runs,
            count as u64,
            depth + 1,
        )?;
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
}

impl Encoding for Rle {
    const ID: u8 = 6;
    const NAME: &'static str = "rle";
    const DOMAINS: &'static [Domain] = &[Domain::Int, Domain::Float, Domain::Bool];
    const FILTERS_ENCODED: bool = true;

    fn write(&self, w: &mut Writer) {
        w.varint(u64::from(self.values));
        w.varint(u64::from(self.runs));
        w.varint(u64::from(self.lengths));
    }

    fn read(r: &mut Reader<'_>) -> Result<Self> {
        Ok(Self {
            values: r.varint_u32("rle values")?,
            runs: r.varint_u32("rle runs")?,
            lengths: r.varint_u32("rle lengths")?,
        })
    }

    fn label(&self) -> String {
        format!("rle[{}]", self.runs)
    }

    fn children(&self) -> Vec<NodeId> {
        vec![self.values, self.lengths]
    }

    fn decode<V: Value>(
        &self,
        ctx: &Ctx<'_>,
        id: NodeId,
        count: usize,
        depth: usize,
    ) -> Result<Option<Vec<V>>> {
        let (vals, lens) = self.runs::<V>(ctx, id, count, depth)?;
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
        Ok(Some(out))
    }

    fn filter<V: Value, P: DomainPred<V>>(
        &self,
        ctx: &Ctx<'_>,
        id: NodeId,
        count: usize,
        depth: usize,
        p: &P,
    ) -> Result<Option<Bitmap>> {
        let (vals, lens) = self.runs::<V>(ctx, id, count, depth)?;
        // Written run by run, each run's bit set or clear without a branch (runs alternate
        // between the values that pass and those that do not), shorter runs without a
        // branch on their length either; the slack takes the words written past the end.
        let words_len = count.div_ceil(64);
        let mut words = vec![0u64; words_len + AHEAD_WORDS + 1];
        let (mut word, mut pos) = (0u64, 0usize);
        for (v, len) in vals.into_iter().zip(lens) {
            // `runs` checked that the lengths add up to `count`.
            let (all, len) = (0u64.wrapping_sub(u64::from(p.eval(v))), len as usize);
            if len <= AHEAD_RUN {
                fill_ahead(&mut words, &mut word, &mut pos, all, len);
            } else {
                fill_run(&mut words, &mut word, &mut pos, all, len);
            }
        }
        words[pos / 64] = word;
        words.truncate(words_len);
        Bitmap::from_words(words, count)
            .ok_or_else(|| corrupt("run bitmap"))
            .map(Some)
    }

    fn scan_cost(&self, _enc: &ColumnEncoding, _id: NodeId) -> Option<f64> {
        Some(0.2)
    }
}
