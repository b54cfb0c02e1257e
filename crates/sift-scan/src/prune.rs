//! Zone-map pruning: blocks whose statistics prove the filter false are never read.

use std::cmp::Ordering;

use sift_encoding::ValuePredicate;
use sift_format::{ChunkStats, Scalar};

use crate::bind::{Bound, Leaf, LeafOp};
use crate::coerce::scalar_cmp;

/// What the statistics of one block say about a column.
pub(crate) struct Zone<'a> {
    pub rows: u64,
    pub stats: Option<&'a ChunkStats>,
}

/// True when the filter is false for every row of the block whose zones are `zone(col)`.
pub(crate) fn prunes<'a>(b: &Bound, zone: &dyn Fn(usize) -> Zone<'a>) -> bool {
    match b {
        Bound::Const(v) => !v,
        Bound::Leaf(l) => leaf_prunes(l, &zone(l.column)),
        Bound::And(v) => v.iter().any(|c| prunes(c, zone)),
        Bound::Or(v) => v.iter().all(|c| prunes(c, zone)),
    }
}

fn leaf_prunes(l: &Leaf, z: &Zone<'_>) -> bool {
    let Some(stats) = z.stats else { return false };
    let all_null = stats.null_count == z.rows;
    match &l.op {
        LeafOp::Null { negated: false } => stats.null_count == 0,
        LeafOp::Null { negated: true } => all_null,
        // A value test (or a column comparison, or a function called on a null) is never
        // true on a null.
        LeafOp::Value(p) => {
            if all_null {
                return true;
            }
            if let ValuePredicate::IntIn {
                values,
                negate: false,
            } = p
                && let (Some(Scalar::Int(min)), Some(Scalar::Int(max))) = (&stats.min, &stats.max)
            {
                return values.iter().all(|v| v < min || v > max);
            }
            let Some((lo, hi)) = &l.bounds else {
                return false;
            };
            // NaN is above every bound and not in min/max: a range reaching past +inf
            // (hi = None on floats) may match it.
            let below = |bound: &Option<Scalar>, max: &Option<Scalar>| match (bound, max) {
                (Some(b), Some(m)) => scalar_cmp(m, b) == Some(Ordering::Less),
                _ => false,
            };
            let above = |bound: &Option<Scalar>, min: &Option<Scalar>| match (bound, min) {
                (Some(b), Some(m)) => scalar_cmp(m, b) == Some(Ordering::Greater),
                _ => false,
            };
            let nan_may_match = stats.has_nan && hi.is_none();
            !nan_may_match && (below(lo, &stats.max) || above(hi, &stats.min))
        }
        LeafOp::Columns { .. } | LeafOp::Udf { negate: false, .. } => false,
        LeafOp::Udf { .. } => false,
    }
}
