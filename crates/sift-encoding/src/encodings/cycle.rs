//! A sequence that repeats with a period, generic over the value domain: value `i` is
//! value `i mod period` of the head (a child holding `period` values), with the rows that
//! break the pattern patched over it.
//!
//! Long-format tables hold this shape: repeated measures stored item by item repeat every
//! subject's attributes (age, gender, a trait score) once per item, and a league's round
//! numbers repeat every season. Bit-packing, dictionaries and runs all pay for every row;
//! only a general-purpose compressor's back-references caught the repetition before.
//! Filters are evaluated once per head value.

use serde::{Deserialize, Serialize};
use sift_bits::Bitmap;

use crate::domain::{Domain, Value};
use crate::encoding::Encoding;
use crate::encodings::patch;
use crate::error::{Result, corrupt};
use crate::predicate::DomainPred;
use crate::tree::{BufferSink, Ctx, NodeId};
use crate::wire::{Reader, Writer};

/// `values[i] = head[i mod period]` for the node's `count` values.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cycle {
    /// The period, 1..=count.
    pub period: u32,
    /// The first `period` values.
    pub head: NodeId,
}

/// Values shorter than this are not searched for a period.
const MIN_LEN: usize = 256;
/// A candidate period must reproduce the leading values up to this many past the first
/// change of value.
const PROBE: usize = 16;
/// Longest leading run of a head searched for (see [`period`]).
const MAX_LEADING_RUN: usize = 64;
/// Candidate periods verified on the whole input before giving up.
const MAX_CANDIDATES: usize = 8;
/// At most one value in this many may break the pattern (it becomes an exception).
const EXCEPTION_RATIO: usize = 32;

/// The shortest period with which `values` repeat (at least twice), allowing one value
/// in [`EXCEPTION_RATIO`] to differ; `None` if there is none. Costs about one comparison
/// per value unless many shifts reproduce the leading values.
pub(crate) fn period<V: PartialEq>(values: &[V]) -> Option<usize> {
    let n = values.len();
    if n < MIN_LEN {
        return None;
    }
    let budget = n / EXCEPTION_RATIO;
    // The probe reaches past the first change of value, so that shifts within a leading
    // run are not candidates and a nearly constant input (frequency encoding's case) has
    // none.
    // A head that starts with a long run is left to the schemes made for runs: the probe
    // would grow with the run and the search with its square.
    let first_change = values[..n.min(MAX_LEADING_RUN + 1)]
        .iter()
        .position(|v| *v != values[0])?;
    let probe = first_change + PROBE;
    if probe > n / 2 {
        return None;
    }
    let mut tried = 0;
    for p in 2..=n - probe {
        if values[p..p + probe] != values[..probe] {
            continue;
        }
        if p > n / 2 {
            return None;
        }
        tried += 1;
        if tried > MAX_CANDIDATES {
            return None;
        }
        let mut bad = 0;
        let mut j = 0;
        for v in &values[p..] {
            if *v != values[j] {
                bad += 1;
                if bad > budget {
                    break;
                }
            }
            j += 1;
            if j == p {
                j = 0;
            }
        }
        if bad <= budget {
            return Some(p);
        }
    }
    None
}

/// Encodes `values` as their head repeated, with a patch for the rows that differ.
pub(crate) fn encode<V: Value>(values: &[V], sink: &mut BufferSink, depth: u8) -> NodeId {
    let p = period(values).unwrap_or(values.len());
    let head = &values[..p];
    let mut positions = Vec::new();
    let mut exceptions = Vec::new();
    for (i, v) in values.iter().enumerate().skip(p) {
        if *v != head[i % p] {
            positions.push(i as i64);
            exceptions.push(*v);
        }
    }
    let child_depth = depth.saturating_sub(1);
    let patched = (!positions.is_empty()).then(|| sink.reserve_node());
    let id = sink.reserve_node();
    let head = V::encode(head, sink, child_depth);
    sink.set_node(
        id,
        Cycle {
            period: p as u32,
            head,
        },
    );
    match patched {
        Some(outer) => {
            patch::finish(outer, id, &positions, &exceptions, sink, depth);
            outer
        }
        None => id,
    }
}

impl Cycle {
    /// The head's values, checked: `period` of them, at most `count`.
    fn head<V: Value>(
        &self,
        ctx: &Ctx<'_>,
        id: NodeId,
        count: usize,
        depth: usize,
    ) -> Result<Vec<V>> {
        let p = ctx.declared("period values", self.period, count)?;
        V::decode(ctx, ctx.child(id, self.head)?, p, depth + 1)
    }
}

impl Encoding for Cycle {
    const ID: u8 = 17;
    const NAME: &'static str = "cycle";
    const DOMAINS: &'static [Domain] = &[Domain::Int, Domain::Float];
    const FILTERS_ENCODED: bool = true;

    fn write(&self, w: &mut Writer) {
        w.varint(u64::from(self.period));
        w.varint(u64::from(self.head));
    }

    fn read(r: &mut Reader<'_>) -> Result<Self> {
        Ok(Self {
            period: r.varint_u32("cycle period")?,
            head: r.varint_u32("cycle head")?,
        })
    }

    fn label(&self) -> String {
        format!("cycle[{}]", self.period)
    }

    fn children(&self) -> Vec<NodeId> {
        vec![self.head]
    }

    fn decode<V: Value>(
        &self,
        ctx: &Ctx<'_>,
        id: NodeId,
        count: usize,
        depth: usize,
    ) -> Result<Option<Vec<V>>> {
        let head = self.head::<V>(ctx, id, count, depth)?;
        if head.is_empty() {
            return Ok(Some(Vec::new()));
        }
        let mut out = Vec::with_capacity(count);
        while out.len() < count {
            let take = head.len().min(count - out.len());
            out.extend_from_slice(&head[..take]);
        }
        Ok(Some(out))
    }

    fn select<V: Value>(
        &self,
        ctx: &Ctx<'_>,
        id: NodeId,
        count: usize,
        depth: usize,
        sel: &Bitmap,
    ) -> Result<Option<Vec<V>>> {
        let head = self.head::<V>(ctx, id, count, depth)?;
        if sel.len() != count {
            return Err(corrupt(format!(
                "a selection of {} rows for {count} values",
                sel.len()
            )));
        }
        Ok(Some(
            sel.iter_ones().map(|i| head[i % head.len()]).collect(),
        ))
    }

    fn filter<V: Value, P: DomainPred<V>>(
        &self,
        ctx: &Ctx<'_>,
        id: NodeId,
        count: usize,
        depth: usize,
        p: &P,
    ) -> Result<Option<Bitmap>> {
        let period = ctx.declared("period values", self.period, count)?;
        if period == 0 {
            return Ok(Some(Bitmap::zeros(0)));
        }
        let hits = V::filter(ctx, ctx.child(id, self.head)?, period, depth + 1, p)?;
        Ok(Some(Bitmap::from_bools(
            (0..count).map(|i| hits.get(i % period)),
        )))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::predicate::IntRange;
    use proptest::prelude::*;

    #[test]
    fn finds_the_shortest_period() {
        let mix = |i: u64| (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 54) as i64;
        let v: Vec<i64> = (0..3000).map(|i| mix(i % 316)).collect();
        assert_eq!(period(&v), Some(316));
        let v: Vec<i64> = (0..3000).collect();
        assert_eq!(period(&v), None);
        // Nearly constant: frequency encoding's case, not a cycle.
        let v: Vec<i64> = (0..3000).map(|i| i64::from(mix(i) % 8 == 0)).collect();
        assert_eq!(period(&v), None);
        // A head that starts with a run.
        let v: Vec<i64> = (0..3000).map(|i| i64::from(i % 300 >= 40)).collect();
        assert_eq!(period(&v), Some(300));
        // A long leading run is not searched (it would cost the square of its length).
        let v: Vec<i64> = (0..60_000).map(|i| i64::from(i >= 30_000)).collect();
        assert_eq!(period(&v), None);
        assert_eq!(period(&v[..100]), None);
    }

    proptest! {
        /// Decode, selection and filters equal the reference, with and without rows that
        /// break the pattern.
        #[test]
        fn equals_reference(
            head in proptest::collection::vec(0i64..50, 2..80),
            reps in 2usize..12,
            tail in 0usize..80,
            breaks in proptest::collection::vec((any::<usize>(), any::<i64>()), 0..6),
            sel_seed in any::<u64>(),
            lo in 0i64..50,
            negate in any::<bool>(),
        ) {
            let n = head.len() * reps + tail;
            let mut values: Vec<i64> = (0..n).map(|i| head[i % head.len()]).collect();
            for (at, v) in &breaks {
                let at = at % n;
                values[at] = *v;
            }
            let mut sink = BufferSink::default();
            let root = encode(&values, &mut sink, 3);
            let sel = Bitmap::from_bools((0..n).map(|i| (sel_seed >> (i % 64)) & 1 == 1));
            let range = IntRange::new(i128::from(lo), i128::from(lo + 10), negate);
            let (dec, selected, hits) = sink.decode_with(|ctx| -> Result<_> {
                Ok((
                    i64::decode(ctx, root, n, 0)?,
                    i64::select(ctx, root, n, 0, &sel)?,
                    i64::filter(ctx, root, n, 0, &range)?,
                ))
            }).unwrap();
            prop_assert_eq!(&dec, &values);
            prop_assert_eq!(selected, sel.iter_ones().map(|i| values[i]).collect::<Vec<_>>());
            let want = Bitmap::from_bools(values.iter().map(|&v| (lo..=lo + 10).contains(&v) != negate));
            prop_assert_eq!(hits, want);
        }
    }

    #[test]
    fn a_period_longer_than_the_values_is_an_error() {
        let mut sink = BufferSink::default();
        let root = encode(&(0..300).map(|i| i % 7).collect::<Vec<i64>>(), &mut sink, 3);
        let err = sink
            .decode_with(|ctx| i64::decode(ctx, root, 5, 0))
            .unwrap_err();
        assert!(err.to_string().contains("for 5 values"), "{err}");
    }
}
