//! Join filters: the keys of a hash join's selective side, pushed as a Bloom filter (or an
//! exact `IN` list, when they are few) into the Sift scans of the other side, where they
//! are tested on the encoded key column before any payload column is decoded.
//!
//! [`JoinFilters`] is a physical optimizer rule. For every hash join, and each pair of
//! join keys that are plain columns, it follows each key down its side of the plan:
//!
//! - to the **source** of the key's values: a Sift scan with a filter of its own (a
//!   dimension table restricted by the query, at most a quarter the size of the target's
//!   table), whose key column holds every value the key can take on that side. The path
//!   may cross projections, filters, repartitions, aggregates (on a group-by column) and
//!   joins;
//! - to the **target**: the Sift scan on the other side whose rows can be filtered by the
//!   key without changing the join's result. The path may cross projections, filters,
//!   repartitions, aggregates on a group-by column (dropping a group's rows drops the
//!   group) and inner or semi joins.
//!
//! The target's scan then gets `key IN (source keys)`: the source scan is run once more,
//! reading its key column only (the first partition that needs the keys runs it, the
//! others wait for it), and its keys become the filter. Because the source is found by
//! following the key and not the join's build side, a filter can also cross to the other
//! side's build input: in TPC-H Q17 the parts of one brand and container filter both
//! scans of `lineitem`, including the one under the correlated subquery's aggregate. A
//! source scan that is itself the target of filters from smaller tables collects its keys
//! through them, so that filters chain down a path of joins (TPC-H Q3: customer's segment
//! restricts orders, whose keys then restrict lineitem), and a scan restricted only by
//! such filters, with no filter of its own, is a source too. A target takes its filters
//! from the smallest source up and leaves the rest out once those taken are narrow
//! ([`NARROW`]).
//!
//! A filter goes only where the join drops the target's rows that have no match: the
//! probe side of inner, left, left semi/anti/mark and right semi joins, the build side of
//! inner, right, right semi/anti/mark and left semi joins, never with `NULL = NULL` keys.
//! The join still compares the keys, so a false positive of the Bloom filter costs a
//! row, never a wrong answer. The rule changes nothing when the session option
//! `sift.join_filters` is false (`SET sift.join_filters = false`).

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, OnceLock};

use datafusion::arrow::datatypes::DataType;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::{DataFusionError, JoinType, NullEquality, Result};
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::aggregates::AggregateExec;
use datafusion::physical_plan::filter::FilterExec;
use datafusion::physical_plan::joins::HashJoinExec;
use datafusion::physical_plan::projection::ProjectionExec;
use sift_scan::{Expr as Filter, KeyCollector};

use crate::SiftOptions;
use crate::exec::SiftScanExec;

/// The physical optimizer rule; see the module documentation.
#[derive(Debug, Default)]
pub struct JoinFilters;

impl PhysicalOptimizerRule for JoinFilters {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if !SiftOptions::of(config).join_filters {
            return Ok(plan);
        }
        // Find every (target scan, column, source) first, on the plan as it is, then put
        // the filters into the target scans in one pass.
        let mut wanted: HashMap<usize, Vec<JoinFilter>> = HashMap::new();
        let mut sources: HashMap<(usize, String), Arc<KeySource>> = HashMap::new();
        // A scan restricted only by a join filter from a smaller table is a source too
        // (TPC-H Q5: the region's nations restrict suppliers, whose nations restrict
        // customers, whose keys restrict orders), so the plan is walked again while that
        // finds new filters; each walk reaches one table further down a chain of ever
        // smaller tables.
        for _ in 0..MAX_CHAIN {
            let restricted: HashMap<usize, u64> = (wanted.iter())
                .filter_map(|(&at, filters)| {
                    let rows = filters.iter().map(JoinFilter::source_rows).min()?;
                    Some((at, rows))
                })
                .collect();
            let before: usize = wanted.values().map(Vec::len).sum();
            plan.apply(|node| {
                if let Some(join) = node.downcast_ref::<HashJoinExec>() {
                    for (target, filter) in join_filters(join, &mut sources, &restricted) {
                        let list = wanted.entry(target).or_default();
                        if !list.iter().any(|f| f.same_as(&filter)) {
                            list.push(filter);
                        }
                    }
                }
                Ok(TreeNodeRecursion::Continue)
            })?;
            if wanted.values().map(Vec::len).sum::<usize>() == before {
                break;
            }
        }
        if wanted.is_empty() {
            return Ok(plan);
        }
        // A source scan that is itself the target of filters collects its keys through
        // them: in TPC-H Q3, orders of the year range are half the table, too many to
        // filter lineitem by, but those of the market segment's customers are a tenth.
        // Only filters from strictly smaller tables are taken, so that no two sources
        // wait on each other's keys.
        for ((at, _), source) in &sources {
            let rows = source.scan.total_rows();
            let through: Vec<JoinFilter> = (wanted.get(at).into_iter().flatten())
                .filter(|f| f.source_rows() < rows)
                .cloned()
                .collect();
            // Set once: each source is in `sources` once.
            let _ = source.through.set(through);
        }
        // Nodes are known by address: the original plan stays alive while it is rewritten,
        // so no node made meanwhile can take the address of one of its nodes.
        let original = Arc::clone(&plan);
        let rewritten = plan.transform_up(|node| {
            let Some(filters) = wanted.get(&address(&node)) else {
                return Ok(Transformed::no(node));
            };
            let Some(scan) = node.downcast_ref::<SiftScanExec>() else {
                return Ok(Transformed::no(node));
            };
            let scan = scan.with_join_filters(filters.clone());
            Ok(Transformed::yes(Arc::new(scan) as Arc<dyn ExecutionPlan>))
        });
        drop(original);
        rewritten.map(|t| t.data)
    }

    fn name(&self) -> &str {
        "SiftJoinFilters"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// A plan node's identity during one run of the rule.
fn address(plan: &Arc<dyn ExecutionPlan>) -> usize {
    Arc::as_ptr(plan).cast::<()>() as usize
}

/// The filters `join` sends, as (target scan's address, filter); `restricted`: the scans
/// (addresses) that receive join filters, with the fewest rows of those filters' tables.
fn join_filters(
    join: &HashJoinExec,
    sources: &mut HashMap<(usize, String), Arc<KeySource>>,
    restricted: &HashMap<usize, u64>,
) -> Vec<(usize, JoinFilter)> {
    // `NULL = NULL` joins match null keys, which a key filter drops; a null-aware anti
    // join (`NOT IN`) answers differently once the other side holds a null.
    if join.null_equality() != NullEquality::NullEqualsNothing || join.null_aware {
        return Vec::new();
    }
    use JoinType as J;
    let into_probe = matches!(
        join.join_type(),
        J::Inner | J::Left | J::LeftSemi | J::LeftAnti | J::LeftMark | J::RightSemi
    );
    let into_build = matches!(
        join.join_type(),
        J::Inner | J::Right | J::RightSemi | J::RightAnti | J::RightMark | J::LeftSemi
    );
    let mut out = Vec::new();
    for (l, r) in join.on() {
        let (Some(l), Some(r)) = (l.downcast_ref::<Column>(), r.downcast_ref::<Column>()) else {
            continue;
        };
        let directions = [
            (
                into_probe,
                (join.left(), l.index()),
                (join.right(), r.index()),
            ),
            (
                into_build,
                (join.right(), r.index()),
                (join.left(), l.index()),
            ),
        ];
        for (allowed, (from, from_col), (to, to_col)) in directions {
            if !allowed {
                continue;
            }
            let (Some(source), Some(target)) = (
                trace(from, from_col, Walk::Source),
                trace(to, to_col, Walk::Target),
            ) else {
                continue;
            };
            if let Some(f) = filter_between(&source, &target, sources, restricted) {
                out.push((address(&target.plan), f));
            }
        }
    }
    out
}

/// A column of a Sift scan that a key was followed to.
struct Found {
    plan: Arc<dyn ExecutionPlan>,
    column: usize,
}

impl Found {
    fn scan(&self) -> Option<&SiftScanExec> {
        self.plan.downcast_ref::<SiftScanExec>()
    }
}

/// A source table must have at most 1/`SMALLER_BY` of the target table's rows: the keys
/// are collected by scanning it a second time, and the filter is probed on every row of
/// the target that is still selected, which pays when the source is a restricted
/// dimension (TPC-H's part, customer, orders) and not when it is the target's peer (one
/// scan of lineitem sending its keys to another, where nearly every key passes).
const SMALLER_BY: u64 = 4;

/// No filter is made when more than this share of the source table's rows pass its
/// filter (the key collection stops there): probing every row of the target costs more
/// than decoding the rows it would drop (measured on TPC-H: Q3's and Q21's orders, half
/// of them passing, made the lineitem scans slower; Q5's year of orders, 15 %, and Q3's
/// customers, 20 %, faster).
const MAX_PASS: f64 = 0.25;

/// The most walks of the plan looking for sources restricted by join filters (each walk
/// reaches one table further down a chain; each table of a chain is [`SMALLER_BY`] times
/// smaller than the next).
const MAX_CHAIN: usize = 8;

/// A scan takes its join filters from the smallest source up, and leaves the rest out
/// (their keys never collected) once those taken pass at most this share of their
/// sources' rows together: the rows the rest would drop are then too few to pay for
/// collecting their keys (TPC-H Q8: lineitem's parts of one type pass 0.7 %, so the
/// orders of American customers are not collected).
pub(crate) const NARROW: f64 = 0.01;

/// The filter from `source`'s keys into `target`, when it is worth having: the source
/// scan restricts its table with a filter of its own or receives a join filter from a
/// smaller table (`restricted`), its table is [`SMALLER_BY`] times smaller than the
/// target's, and the key columns have one type.
fn filter_between(
    source: &Found,
    target: &Found,
    sources: &mut HashMap<(usize, String), Arc<KeySource>>,
    restricted: &HashMap<usize, u64>,
) -> Option<JoinFilter> {
    let (s, t) = (source.scan()?, target.scan()?);
    let smaller = s.total_rows().saturating_mul(SMALLER_BY) <= t.total_rows();
    let joined = (restricted.get(&address(&source.plan))).is_some_and(|&r| r < s.total_rows());
    if (s.filter().is_none() && !joined) || !smaller || t.limit().is_some() {
        return None;
    }
    let s_field = s.schema().field(source.column).clone();
    let t_field = t.schema().field(target.column).clone();
    if s_field.data_type() != t_field.data_type()
        || sift_scan::KeyDomain::of(s_field.data_type()).is_none()
    {
        return None;
    }
    let key = (address(&source.plan), s_field.name().clone());
    let keys = sources
        .entry(key)
        .or_insert_with(|| {
            Arc::new(KeySource {
                scan: s.clone(),
                column: s_field.name().clone(),
                data_type: s_field.data_type().clone(),
                keys: OnceLock::new(),
                through: OnceLock::new(),
            })
        })
        .clone();
    Some(JoinFilter {
        column: t_field.name().clone(),
        keys,
    })
}

#[derive(Clone, Copy, PartialEq)]
enum Walk {
    /// To where the key's values come from: any join passes on a subset of its input.
    Source,
    /// To where rows can be dropped by key: only joins that keep each row's key.
    Target,
}

/// Follows column `col` of `plan` down to a Sift scan.
fn trace(plan: &Arc<dyn ExecutionPlan>, col: usize, walk: Walk) -> Option<Found> {
    if plan.downcast_ref::<SiftScanExec>().is_some() {
        return Some(Found {
            plan: Arc::clone(plan),
            column: col,
        });
    }
    if let Some(p) = plan.downcast_ref::<ProjectionExec>() {
        let c = p.expr().get(col)?.expr.downcast_ref::<Column>()?;
        return trace(p.input(), c.index(), walk);
    }
    if let Some(f) = plan.downcast_ref::<FilterExec>() {
        let col = match f.projection() {
            Some(p) => *p.get(col)?,
            None => col,
        };
        return trace(f.input(), col, walk);
    }
    if let Some(a) = plan.downcast_ref::<AggregateExec>() {
        let group = a.group_expr();
        if !group.is_single() {
            return None;
        }
        let c = group.expr().get(col)?.0.downcast_ref::<Column>()?;
        return trace(a.input(), c.index(), walk);
    }
    if let Some(j) = plan.downcast_ref::<HashJoinExec>() {
        let col = match &j.projection {
            Some(p) => *p.get(col)?,
            None => col,
        };
        let left = j.left().schema().fields().len();
        use JoinType as J;
        let (side, col) = match j.join_type() {
            J::LeftSemi | J::LeftAnti | J::LeftMark => (j.left(), col),
            J::RightSemi | J::RightAnti | J::RightMark => (j.right(), col),
            _ if col < left => (j.left(), col),
            _ => (j.right(), col - left),
        };
        let keeps_rows = matches!(
            j.join_type(),
            J::Inner | J::LeftSemi | J::LeftAnti | J::RightSemi | J::RightAnti
        );
        if walk == Walk::Target && !keeps_rows {
            return None;
        }
        // A mark join's extra column is not an input column.
        if col >= side.schema().fields().len() {
            return None;
        }
        return trace(side, col, walk);
    }
    // Nodes that pass their input's rows and columns through unchanged.
    let passes = matches!(
        plan.name(),
        "RepartitionExec"
            | "CoalescePartitionsExec"
            | "CoalesceBatchesExec"
            | "CooperativeExec"
            | "SortExec"
            | "SortPreservingMergeExec"
    );
    match plan.children().as_slice() {
        [child] if passes && child.schema().fields().len() == plan.schema().fields().len() => {
            trace(child, col, walk)
        }
        _ => None,
    }
}

/// A filter a scan receives: its column must be among the keys of `keys`.
#[derive(Clone)]
pub(crate) struct JoinFilter {
    pub column: String,
    pub keys: Arc<KeySource>,
}

impl JoinFilter {
    fn same_as(&self, other: &JoinFilter) -> bool {
        self.column == other.column && Arc::ptr_eq(&self.keys, &other.keys)
    }

    /// The filter on this scan's column, the keys collected on first use, and the share
    /// of the source's rows that passed (1 when there is no filter).
    pub(crate) fn filter(&self) -> Result<(Option<Filter>, f64)> {
        let keys = self.keys.keys.get_or_init(|| self.keys.collect());
        match keys {
            Ok((Some(f), share)) => Ok((Some(renamed(f, &self.column)), *share)),
            Ok((None, _)) => Ok((None, 1.0)),
            Err(e) => Err(DataFusionError::External(e.clone().into())),
        }
    }

    /// Rows in the source's files.
    pub(crate) fn source_rows(&self) -> u64 {
        self.keys.scan.total_rows()
    }
}

impl fmt::Debug for JoinFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self}")
    }
}

impl fmt::Display for JoinFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} in keys of {}", self.column, self.keys)?;
        match self.keys.keys.get() {
            Some(Ok((Some(Filter::InBloom { keys, .. }), _))) => write!(f, " [{keys:?}]"),
            Some(Ok((Some(Filter::In { values, .. }), _))) => {
                write!(f, " [{} keys]", values.len())
            }
            Some(Ok((None, _))) => f.write_str(" [not used: too many keys]"),
            _ => Ok(()),
        }
    }
}

/// The keys of one source scan's column, collected once by a second, key-only run of the
/// scan (with its own filter, and the join filters the source scan receives itself).
pub(crate) struct KeySource {
    scan: SiftScanExec,
    column: String,
    data_type: DataType,
    /// The filter and the share of the source's rows that passed.
    keys: OnceLock<std::result::Result<(Option<Filter>, f64), String>>,
    /// The join filters of the source scan, from smaller tables' keys.
    through: OnceLock<Vec<JoinFilter>>,
}

impl fmt::Display for KeySource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}({})", self.scan.file_names(), self.column)?;
        if let Some(filter) = self.scan.filter() {
            write!(f, " where {filter}")?;
        }
        for j in self.through.get().into_iter().flatten() {
            write!(f, " and {j}")?;
        }
        Ok(())
    }
}

impl KeySource {
    fn collect(&self) -> std::result::Result<(Option<Filter>, f64), String> {
        // A key of a table is usually its unique key (TPC-H's orders, part): the share of
        // the source's rows that pass is then the share of the target's rows that will.
        let rows = self.scan.total_rows() as f64;
        let max_rows = (MAX_PASS * rows) as usize;
        let mut keys = KeyCollector::new(&self.data_type)
            .map_err(|e| e.to_string())?
            .max_rows(max_rows);
        let mut through = Vec::new();
        for j in self.through.get().into_iter().flatten() {
            if let (Some(f), _) = j.filter().map_err(|e| e.to_string())? {
                through.push(f);
            }
        }
        let scans = self
            .scan
            .column_scans(&self.column, &through)
            .map_err(|e| format!("cannot scan for join keys: {e}"))?;
        for (scan, path) in scans {
            for batch in scan {
                let batch = batch.map_err(|e| format!("cannot scan {path} for join keys: {e}"))?;
                keys.add(batch.column(0).as_ref())
                    .map_err(|e| e.to_string())?;
                if keys.is_full() {
                    return Ok((None, 1.0));
                }
            }
        }
        let share = keys.rows() as f64 / rows.max(1.0);
        Ok((keys.into_filter(&self.column), share))
    }
}

/// `f` (a filter on the source's key column) on column `column` instead.
fn renamed(f: &Filter, column: &str) -> Filter {
    match f {
        Filter::In { values, .. } => Filter::In {
            column: column.to_string(),
            values: values.clone(),
        },
        Filter::InBloom { keys, .. } => Filter::InBloom {
            column: column.to_string(),
            keys: Arc::clone(keys),
        },
        other => other.clone(),
    }
}
