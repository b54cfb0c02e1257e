//! Filter ordering at run time: observed selectivities combined with the cost model of
//! Parquet-Select (§5: the first filter scans every row, each later one pays for the rows
//! still selected; optimal in O(n²) by trying every first filter and sorting the rest by
//! selectivity).

use sift_encoding::{Bitmap, DECODE_ROW_COST};

use crate::bind::{Bound, LeafOp};
use crate::eval::BlockEval;
use crate::source::BlockData;

/// Cycles per selected row of the select-then-evaluate path (see `eval.rs`).
const SELECTED_ROW_COST: f64 = 8.0;

/// Observed selectivities, per leaf.
#[derive(Debug, Default, Clone)]
pub(crate) struct Order {
    seen: Vec<(u64, u64)>,
}

impl Order {
    pub(crate) fn new(leaves: usize) -> Self {
        Self {
            seen: vec![(0, 0); leaves],
        }
    }

    pub(crate) fn observe(&mut self, leaf: usize, rows_in: usize, rows_out: usize) {
        if let Some(s) = self.seen.get_mut(leaf) {
            s.0 += rows_in as u64;
            s.1 += rows_out as u64;
        }
    }

    /// Estimated fraction of rows that pass `b` (0.5 before anything was seen, smoothed).
    fn selectivity(&self, b: &Bound) -> f64 {
        match b {
            Bound::Const(v) => f64::from(u8::from(*v)),
            Bound::Leaf(l) => self
                .seen
                .get(l.id)
                .map_or(0.5, |&(i, o)| (o as f64 + 0.5) / (i as f64 + 1.0)),
            Bound::And(v) => v.iter().map(|c| self.selectivity(c)).product(),
            Bound::Or(v) => 1.0 - v.iter().map(|c| 1.0 - self.selectivity(c)).product::<f64>(),
        }
    }

    /// The order to evaluate the children of an AND in.
    pub(crate) fn and_order(
        &self,
        children: &[Bound],
        ev: &BlockEval<'_, '_>,
        input: Option<&Bitmap>,
    ) -> Vec<usize> {
        let n = children.len();
        if n <= 1 {
            return (0..n).collect();
        }
        let sel: Vec<f64> = children.iter().map(|c| self.selectivity(c)).collect();
        let cost: Vec<f64> = children.iter().map(|c| scan_cost(c, ev.data)).collect();
        let start = input.map_or(1.0, |s| s.count_ones() as f64 / ev.rows.max(1) as f64);
        // A child evaluated on a fraction `phi` of the rows costs the cheaper of scanning
        // its encoding and selecting its codes (see eval.rs).
        let step = |i: usize, phi: f64| cost[i].min(phi * SELECTED_ROW_COST);
        let mut best: Option<(f64, Vec<usize>)> = None;
        for first in 0..n {
            let mut rest: Vec<usize> = (0..n).filter(|&i| i != first).collect();
            rest.sort_by(|&a, &b| sel[a].total_cmp(&sel[b]));
            let mut phi = start;
            let mut total = step(first, phi);
            phi *= sel[first];
            for &i in &rest {
                total += step(i, phi);
                phi *= sel[i];
            }
            if best.as_ref().is_none_or(|(t, _)| total < *t) {
                let mut order = vec![first];
                order.extend(rest);
                best = Some((total, order));
            }
        }
        best.map_or_else(|| (0..n).collect(), |(_, o)| o)
    }
}

/// Estimated cycles per row to evaluate `b` on every row of the block, from the encoding
/// of its columns (the paper's `k_i / w`: narrow codes are cheap to scan).
fn scan_cost(b: &Bound, data: &BlockData<'_>) -> f64 {
    match b {
        Bound::Const(_) => 0.0,
        Bound::And(v) | Bound::Or(v) => v.iter().map(|c| scan_cost(c, data)).sum(),
        Bound::Leaf(l) => {
            if !matches!(l.op, LeafOp::Value(_) | LeafOp::Null { .. }) {
                return DECODE_ROW_COST * 2.0;
            }
            match data {
                BlockData::Sift { file, block } => file
                    .chunk_meta(*block, l.column)
                    .map_or(0.0, |c| c.encoding.scan_cost()),
                #[cfg(feature = "parquet")]
                BlockData::Parquet(_) => 1.0,
            }
        }
    }
}
