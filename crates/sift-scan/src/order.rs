//! The scan's cost model: the order in which a conjunction's filters run, and whether a
//! filter scans every row of its column or tests only the rows still selected.
//!
//! The model of Parquet-Select (§5): the first filter scans every row, each later one pays
//! for the rows still selected; optimal in O(n²) by trying every first filter and sorting
//! the rest by selectivity. Selectivities are observed at run time. Costs come from the
//! encoding of each column chunk, or each Parquet page (`Encoding::scan_cost`), in the
//! encodings' unit: a packed compare of `b`-bit codes costs `0.1 + b / 16` a row. One unit
//! is about 0.13 ns on the machine measured (5-bit codes: 0.054 ns a row, one core).

use sift_encoding::{Bitmap, ColumnEncoding, DECODE_ROW_COST, Node, ValuePredicate};

use crate::bind::{Bound, LeafOp};
use crate::eval::BlockEval;
use crate::source::BlockData;

/// Cost of a selected row on the select-then-evaluate path (its value selected and
/// decoded, tested through Arrow, the verdict deposited back on its row). Measured, as the
/// added time per selected row of testing the selected rows first over scanning: 6–10.6
/// ns on 16M-row micro tables (5-bit codes in a Sift file and in Parquet dictionary pages,
/// PLAIN int64 pages), 12.8 ns on lineitem's decimal `l_extendedprice`: 46–98 units.
const SELECTED_ROW_COST: f64 = 80.0;

/// Cost per row of the block that the select-then-evaluate path spends whatever it
/// selects: the selection counted and the verdicts deposited over every row. Measured as
/// what remained of the path at one selected row in 1,024 (0.13 ns a row).
const SELECT_PASS_COST: f64 = 1.0;

/// What evaluating a predicate on one column chunk or Parquet page costs, per row.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LeafCost {
    /// Scanning the encoded values (`Encoding::scan_cost`).
    scan: f64,
    /// Testing one value, where the predicate is tested per value rather than once per
    /// dictionary entry.
    per_value: f64,
    /// Whether the selected values are read where they lie; otherwise selecting them walks
    /// every row as a scan does (runs, variable-length values).
    addressable: bool,
}

impl LeafCost {
    /// What a test that reads nothing costs (a constant, a column the block lacks).
    const FREE: Self = Self {
        scan: 0.0,
        per_value: 0.0,
        addressable: true,
    };

    /// The cost of `p` (`None`: a test of validity only) on values encoded as `enc`.
    pub(crate) fn of(enc: &ColumnEncoding, p: Option<&ValuePredicate>) -> Self {
        let per_entry = matches!(enc.nodes.first(), Some(Node::Dict(_)));
        Self {
            scan: enc.scan_cost(),
            per_value: match p {
                Some(p) if !per_entry => value_cost(p),
                _ => 0.0,
            },
            addressable: enc.values_addressable(),
        }
    }

    /// A filter whose column's encoding is not known yet.
    #[cfg(feature = "parquet")]
    const UNKNOWN: Self = Self {
        scan: 1.0,
        per_value: 0.0,
        addressable: true,
    };

    /// A filter on decoded values (a column comparison, a function): its inputs decoded
    /// for the rows asked.
    fn decoded() -> Self {
        Self {
            scan: DECODE_ROW_COST * 2.0,
            per_value: 0.0,
            addressable: true,
        }
    }

    /// Cost per row of testing every row.
    fn scan(&self) -> f64 {
        self.scan + self.per_value
    }

    /// Cost per row of the block of testing only a fraction `phi` of its rows.
    fn select(&self, phi: f64) -> f64 {
        let walk = if self.addressable { 0.0 } else { self.scan };
        SELECT_PASS_COST + walk + phi * (SELECTED_ROW_COST + self.per_value)
    }

    /// Whether `selected` rows of `rows` cost less tested alone than with every row.
    pub(crate) fn select_first(&self, selected: usize, rows: usize) -> bool {
        self.select(selected as f64 / rows.max(1) as f64) < self.scan()
    }

    /// Cost per row of the block at a fraction `phi` of its rows selected, the cheaper way.
    fn at(&self, phi: f64) -> f64 {
        self.scan().min(self.select(phi))
    }

    /// The costs of `parts` (each with its number of rows) weighed by their rows;
    /// addressable when every part is.
    #[cfg(feature = "parquet")]
    pub(crate) fn weighed(parts: &[(Self, usize)]) -> Self {
        let rows = parts.iter().map(|&(_, r)| r as f64).sum::<f64>().max(1.0);
        let mean =
            |f: fn(&Self) -> f64| parts.iter().map(|(c, r)| f(c) * *r as f64).sum::<f64>() / rows;
        Self {
            scan: mean(|c| c.scan),
            per_value: mean(|c| c.per_value),
            addressable: parts.iter().all(|(c, _)| c.addressable),
        }
    }

    /// A conjunction or disjunction nested in one: the sum of its parts, each scanned.
    fn sum(parts: impl Iterator<Item = Self>) -> Self {
        Self {
            scan: parts.map(|c| c.scan()).sum(),
            per_value: 0.0,
            addressable: true,
        }
    }
}

/// Cost of testing one value of `p`, beyond the scan, where it is tested per value. A
/// Bloom probe was measured at about 1.3 ns a row (TPC-H Q19's join filter on
/// `l_partkey`, PLAIN or DELTA pages); the other predicates compare within the scan.
fn value_cost(p: &ValuePredicate) -> f64 {
    match p {
        ValuePredicate::IntBloom { .. } => 10.0,
        _ => 0.0,
    }
}

/// Observed selectivities and costs, per leaf.
#[derive(Debug, Default, Clone)]
pub(crate) struct Order {
    seen: Vec<(u64, u64)>,
    /// The cost last observed per leaf, for blocks whose columns are costed only once read
    /// (a Parquet row group's pages).
    #[cfg_attr(not(feature = "parquet"), allow(dead_code))]
    costs: Vec<Option<LeafCost>>,
}

impl Order {
    pub(crate) fn new(leaves: usize) -> Self {
        Self {
            seen: vec![(0, 0); leaves],
            costs: vec![None; leaves],
        }
    }

    pub(crate) fn observe(&mut self, leaf: usize, rows_in: usize, rows_out: usize) {
        if let Some(s) = self.seen.get_mut(leaf) {
            s.0 += rows_in as u64;
            s.1 += rows_out as u64;
        }
    }

    /// Records what leaf `leaf` cost on the column it was just evaluated on.
    #[cfg_attr(not(feature = "parquet"), allow(dead_code))]
    pub(crate) fn observe_cost(&mut self, leaf: usize, cost: LeafCost) {
        if let Some(c) = self.costs.get_mut(leaf) {
            *c = Some(cost);
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
        let cost: Vec<LeafCost> = children.iter().map(|c| self.cost(c, ev.data)).collect();
        let start = input.map_or(1.0, |s| s.count_ones() as f64 / ev.rows.max(1) as f64);
        // A child evaluated on a fraction `phi` of the rows costs the cheaper of scanning
        // its column and testing only the selected rows, as `eval.rs` chooses.
        let step = |i: usize, phi: f64| cost[i].at(phi);
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

    /// What evaluating `b` on the block costs, from the encoding of its columns (the
    /// paper's `k_i / w`: narrow codes are cheap to scan). A Parquet row group's pages are
    /// costed once read; before, the cost seen on the row group before stands in.
    fn cost(&self, b: &Bound, data: &BlockData<'_>) -> LeafCost {
        let l = match b {
            Bound::Const(_) => return LeafCost::FREE,
            Bound::And(v) | Bound::Or(v) => {
                return LeafCost::sum(v.iter().map(|c| self.cost(c, data)));
            }
            Bound::Leaf(l) => l,
        };
        let p = match &l.op {
            LeafOp::Value(p) => Some(p),
            LeafOp::Null { .. } => None,
            LeafOp::Columns { .. } | LeafOp::Udf { .. } => return LeafCost::decoded(),
        };
        match data {
            BlockData::Sift { file, block } => file
                .chunk_meta(*block, l.column)
                .map_or(LeafCost::FREE, |c| LeafCost::of(&c.encoding, p)),
            #[cfg(feature = "parquet")]
            BlockData::Parquet(_) => self
                .costs
                .get(l.id)
                .copied()
                .flatten()
                .unwrap_or(LeafCost::UNKNOWN),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use sift_encoding::Validity;
    use sift_encoding::encodings::{Dict, For, Hybrid, Plain};

    use super::*;

    fn tree(nodes: Vec<Node>) -> ColumnEncoding {
        ColumnEncoding {
            validity: Validity::AllValid,
            nodes,
        }
    }

    /// The decisions the measurements behind the model's constants call for: on 16M-row
    /// tables, PLAIN int64 pages gained from testing the selected rows first at one row
    /// in 64 and lost at one in 16; 5-bit codes (bit-packed in a Sift chunk, or in a
    /// Parquet dictionary page's run stream) lost at every fraction down to one row in
    /// 1,024; a join's Bloom filter on values gained at 7 %.
    #[test]
    fn selecting_first_pays_on_values_not_on_narrow_codes() {
        let range = ValuePredicate::IntRange {
            lo: 0,
            hi: 15,
            negate: false,
        };
        let bloom = ValuePredicate::IntBloom {
            bloom: Arc::new(sift_bits::bloom::BloomFilter::with_capacity(100, 0.01)),
            lo: 0,
            hi: 100,
        };
        let plain = tree(vec![Node::Plain(Plain {
            width: 8,
            buffer: 0,
        })]);
        let codes = tree(vec![Node::For(For {
            base: 0,
            bits: 5,
            buffer: 0,
        })]);
        let dictionary = tree(vec![
            Node::Dict(Dict {
                values: 1,
                len: 32,
                codes: 2,
            }),
            Node::Plain(Plain {
                width: 8,
                buffer: 0,
            }),
            Node::Hybrid(Hybrid { bits: 5, buffer: 1 }),
        ]);
        let rows = 1 << 20;
        let at = |enc: &ColumnEncoding, p: &ValuePredicate, fraction: f64| {
            LeafCost::of(enc, Some(p)).select_first((fraction * rows as f64) as usize, rows)
        };
        assert!(at(&plain, &range, 1.0 / 1024.0) && at(&plain, &range, 1.0 / 64.0));
        assert!(!at(&plain, &range, 1.0 / 16.0));
        for fraction in [1.0 / 1024.0, 1.0 / 64.0, 1.0 / 4.0] {
            assert!(!at(&codes, &range, fraction), "{fraction}");
            assert!(!at(&dictionary, &range, fraction), "{fraction}");
            // Tested once per dictionary entry: the probe costs nothing per row.
            assert!(!at(&dictionary, &bloom, fraction), "{fraction}");
        }
        assert!(at(&plain, &bloom, 0.07) && !at(&plain, &bloom, 0.5));
    }
}
