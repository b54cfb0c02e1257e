//! Zone-map pruning: blocks whose statistics prove the filter false are never read, and
//! within a block, parts whose own zone maps prove it false (Parquet pages) are skipped.
//! One logic for Sift blocks and Parquet row groups and pages: Parquet statistics and
//! Bloom filters are translated into the same [`ChunkStats`] and [`Membership`] first.

use std::cmp::Ordering;
use std::ops::Range;

use sift_encoding::{BytesShape, ValuePredicate};
use sift_format::{ChunkStats, Scalar};

use crate::bind::{Bound, Leaf, LeafOp};
use crate::coerce::scalar_cmp;

/// What the statistics of one block say about a column.
pub(crate) struct Zone<'a> {
    pub rows: u64,
    pub stats: Option<&'a ChunkStats>,
    /// A membership test of the column's values (a Bloom filter), if the block has one.
    pub members: Option<&'a dyn Membership>,
}

impl<'a> Zone<'a> {
    /// A zone known only by its statistics.
    pub(crate) fn of(rows: u64, stats: Option<&'a ChunkStats>) -> Zone<'a> {
        Zone {
            rows,
            stats,
            members: None,
        }
    }
}

/// A value looked up in a [`Membership`] test: an integer (every integer-like type,
/// in the column's own type) or a byte string. (Only Parquet's Bloom filters read them.)
#[derive(Clone, Copy, Debug)]
#[cfg_attr(not(feature = "parquet"), allow(dead_code))]
pub(crate) enum Probe<'a> {
    Int(i128),
    Bytes(&'a [u8]),
}

/// A test that may answer "present" for absent values but never "absent" for present
/// ones: false proves that no value of the block equals the probe.
pub(crate) trait Membership {
    fn may_contain(&self, probe: Probe<'_>) -> bool;
}

/// The zone of one part of a block (a Parquet page): its rows and their statistics.
#[cfg(feature = "parquet")]
#[derive(Debug, Clone)]
pub(crate) struct PartZone {
    pub rows: Range<usize>,
    pub stats: Option<ChunkStats>,
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

/// The filter for one block whose zones are `zone(col)`, with the leaves the statistics
/// prove true for every row replaced by `true`, those they prove true for every non-null
/// value by `IS NOT NULL`, and folded: a range test that holds for the whole block is not
/// evaluated on it (nor its column read for it), and one that holds wherever its column
/// is not null reads only the column's validity.
pub(crate) fn settle<'a>(b: &Bound, zone: &dyn Fn(usize) -> Zone<'a>) -> Bound {
    match b {
        Bound::Const(_) => b.clone(),
        Bound::Leaf(l) => match leaf_holds(l, &zone(l.column)) {
            Holds::Everywhere => Bound::Const(true),
            Holds::WhereNotNull => Bound::Leaf(Leaf {
                op: LeafOp::Null { negated: true },
                bounds: None,
                ..l.clone()
            }),
            Holds::NotProven => b.clone(),
        },
        Bound::And(v) => {
            let mut kept: Vec<Bound> = v
                .iter()
                .map(|c| settle(c, zone))
                .filter(|c| !matches!(c, Bound::Const(true)))
                .collect();
            match kept.len() {
                0 => Bound::Const(true),
                1 => kept.swap_remove(0),
                _ => Bound::And(kept),
            }
        }
        Bound::Or(v) => {
            let settled: Vec<Bound> = v.iter().map(|c| settle(c, zone)).collect();
            match settled.iter().any(|c| matches!(c, Bound::Const(true))) {
                true => Bound::Const(true),
                false => Bound::Or(settled),
            }
        }
    }
}

/// Where the statistics prove a leaf true in a block.
enum Holds {
    /// On every row.
    Everywhere,
    /// On every row whose value is not null (a value test is false on the others), with
    /// both kinds of row in the block.
    WhereNotNull,
    NotProven,
}

/// Where the statistics prove the leaf true in the block: a null test matching the null
/// count holds everywhere, and an integer range holding the block's bounds holds on
/// every non-null value, so everywhere when the block has no nulls. (Statistics need only
/// bound the values: a writer's widened bounds still prove this.)
fn leaf_holds(l: &Leaf, z: &Zone<'_>) -> Holds {
    let Some(stats) = z.stats else {
        return Holds::NotProven;
    };
    let everywhere = |proven: bool| match proven {
        true => Holds::Everywhere,
        false => Holds::NotProven,
    };
    match &l.op {
        LeafOp::Null { negated: false } => everywhere(stats.null_count == z.rows),
        LeafOp::Null { negated: true } => everywhere(stats.null_count == 0),
        LeafOp::Value(ValuePredicate::IntRange { lo, hi, negate }) => {
            let (Some(Scalar::Int(min)), Some(Scalar::Int(max))) = (&stats.min, &stats.max) else {
                return Holds::NotProven;
            };
            let inside = lo <= min && max <= hi;
            let outside = max < lo || hi < min;
            match (if *negate { outside } else { inside }, stats.null_count) {
                (false, _) => Holds::NotProven,
                (true, 0) if z.rows > 0 => Holds::Everywhere,
                (true, nulls) if nulls < z.rows => Holds::WhereNotNull,
                _ => Holds::NotProven,
            }
        }
        _ => Holds::NotProven,
    }
}

fn leaf_prunes(l: &Leaf, z: &Zone<'_>) -> bool {
    stats_prune(l, z) || members_prune(l, z)
}

/// True when a membership test proves an equality or IN leaf false for the block.
fn members_prune(l: &Leaf, z: &Zone<'_>) -> bool {
    let Some(m) = z.members else { return false };
    match &l.op {
        LeafOp::Value(ValuePredicate::IntRange {
            lo,
            hi,
            negate: false,
        }) if lo == hi => !m.may_contain(Probe::Int(*lo)),
        LeafOp::Value(ValuePredicate::IntIn {
            values,
            negate: false,
        }) => values.iter().all(|v| !m.may_contain(Probe::Int(*v))),
        LeafOp::Value(ValuePredicate::Bytes(
            _,
            BytesShape::OneOf {
                values,
                outside: false,
            },
        )) => values.iter().all(|v| !m.may_contain(Probe::Bytes(v))),
        _ => false,
    }
}

/// The rows of a block where the filter may be true, given zone maps of consecutive parts
/// of some columns (`parts(col)`, `None` for a column without them): a leaf keeps the parts
/// its zone does not prune, `And` intersects, `Or` unites. Sorted, disjoint, non-adjacent
/// ranges within `0..rows`.
#[cfg(feature = "parquet")]
pub(crate) fn candidate_rows<'a>(
    b: &Bound,
    rows: usize,
    parts: &dyn Fn(usize) -> Option<&'a [PartZone]>,
) -> Vec<Range<usize>> {
    match b {
        Bound::Const(true) => full(rows),
        Bound::Const(false) => Vec::new(),
        Bound::Leaf(l) => match parts(l.column) {
            None => full(rows),
            Some(ps) => {
                let kept = ps.iter().filter(|p| {
                    let zone = Zone::of(p.rows.len() as u64, p.stats.as_ref());
                    !leaf_prunes(l, &zone)
                });
                let ranges = kept.map(|p| p.rows.start.min(rows)..p.rows.end.min(rows));
                union(ranges.collect())
            }
        },
        Bound::And(v) => v.iter().fold(full(rows), |acc, c| {
            if acc.is_empty() {
                return acc;
            }
            intersect(&acc, &candidate_rows(c, rows, parts))
        }),
        Bound::Or(v) => union(
            v.iter()
                .flat_map(|c| candidate_rows(c, rows, parts))
                .collect(),
        ),
    }
}

#[cfg(feature = "parquet")]
fn full(rows: usize) -> Vec<Range<usize>> {
    match rows {
        0 => Vec::new(),
        _ => std::iter::once(0..rows).collect(),
    }
}

/// Sorted, merged ranges covering the same rows as `ranges`.
#[cfg(feature = "parquet")]
pub(crate) fn union(mut ranges: Vec<Range<usize>>) -> Vec<Range<usize>> {
    ranges.retain(|r| !r.is_empty());
    ranges.sort_unstable_by_key(|r| r.start);
    let mut out: Vec<Range<usize>> = Vec::with_capacity(ranges.len());
    for r in ranges {
        match out.last_mut() {
            Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
            _ => out.push(r),
        }
    }
    out
}

/// The rows in both `a` and `b` (each sorted and disjoint).
pub(crate) fn intersect(a: &[Range<usize>], b: &[Range<usize>]) -> Vec<Range<usize>> {
    let (mut i, mut j) = (0, 0);
    let mut out = Vec::new();
    while i < a.len() && j < b.len() {
        let lo = a[i].start.max(b[j].start);
        let hi = a[i].end.min(b[j].end);
        if lo < hi {
            out.push(lo..hi);
        }
        match a[i].end <= b[j].end {
            true => i += 1,
            false => j += 1,
        }
    }
    out
}

/// True when the statistics prove the leaf false for every row of the block.
fn stats_prune(l: &Leaf, z: &Zone<'_>) -> bool {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn range(lo: i128, hi: i128, negate: bool) -> Bound {
        Bound::Leaf(Leaf {
            id: 0,
            column: 0,
            op: LeafOp::Value(ValuePredicate::IntRange { lo, hi, negate }),
            bounds: None,
            label: "a".into(),
        })
    }

    /// What `settle` makes of a leaf in a block of 100 rows, values in 10..=20.
    fn settled(b: &Bound, nulls: u64) -> String {
        let stats = ChunkStats {
            null_count: nulls,
            min: Some(Scalar::Int(10)),
            max: Some(Scalar::Int(20)),
            has_nan: false,
            sorted: false,
            descending: false,
        };
        format!("{:?}", settle(b, &|_| Zone::of(100, Some(&stats))))
    }

    #[test]
    fn ranges_proven_on_the_values_become_null_tests() {
        let inside = range(0, 31, false);
        let not_outside = range(30, 40, true);
        for b in [&inside, &not_outside] {
            assert_eq!(settled(b, 0), "Const(true)");
            assert_eq!(settled(b, 7), format!("{:?}", Bound::Leaf(not_null())));
            // All null: not proven here (the pruning logic drops such blocks).
            assert_eq!(settled(b, 100), format!("{b:?}"));
        }
        // A range the bounds do not prove is left as it is, nulls or not.
        let partial = range(15, 31, false);
        assert_eq!(settled(&partial, 7), format!("{partial:?}"));
        assert_eq!(settled(&partial, 0), format!("{partial:?}"));
        // Inside AND and OR.
        let both = Bound::And(vec![inside.clone(), partial.clone()]);
        assert_eq!(
            settled(&both, 7),
            format!("{:?}", Bound::And(vec![Bound::Leaf(not_null()), partial]))
        );
        let either = Bound::Or(vec![range(50, 60, false), inside]);
        assert_eq!(
            settled(&either, 7),
            format!(
                "{:?}",
                Bound::Or(vec![range(50, 60, false), Bound::Leaf(not_null())])
            )
        );
    }

    fn not_null() -> Leaf {
        Leaf {
            id: 0,
            column: 0,
            op: LeafOp::Null { negated: true },
            bounds: None,
            label: "a".into(),
        }
    }
}
