//! The whole of an aggregation grouped by the runs of a column sorted over the scan, or
//! clustered block by block, computed next to the scan: no final phase.
//!
//! A scan's partitions are stretches of consecutive blocks, so over a column sorted from
//! block to block and within each, a value's rows follow one another in one partition's
//! batches, and only a partition's first and last values may have rows in the partition
//! before or after it. Each partition therefore completes its groups itself:
//! - a batch's last group is carried into the next batch, whose first run continues it
//!   (`State::run_ids`); every group before it is complete and emitted as a result;
//! - a partition's first and last groups are left in [`Boundaries`]; the partition that
//!   finishes last merges them by value and emits them. With one partition nothing is
//!   held at its start, and the groups come out in the column's order, which is declared.
//!
//! DataFusion's two phases instead send every batch's partial groups through a hash
//! repartitioning and hash each of them again; and on one partition its stream
//! aggregation of a sorted column still looks every row up in a hash table. A partial
//! state that is its result (`SUM`, `COUNT`, `MIN`, `MAX`) is emitted as it is; an `AVG`'s
//! (count, sum) is divided as DataFusion's final phase divides it ([`Results`]).
//!
//! The column's order is checked batch by batch: a value out of order (a file whose
//! statistics say wrongly that it is sorted) is an error naming the column, never a
//! wrong result.
//!
//! A column whose blocks follow one another by their zone maps but whose rows within a
//! block may be in any order (a key a Parquet writer wrote in order without declaring it)
//! is completed block by block instead ([`Completion::Blocks`]): a block's groups are
//! held until a row past the block's bound shows that the scan has left it, then emitted,
//! but the last, which the next block may continue (zone maps may touch). Within a block
//! the groups are kept one per value: batches whose values follow one another are
//! appended as they are; once one does not, each group merges into its value's group
//! through a table over the block's span ([`BlockIndex`]), or, where that span is too
//! wide or the last such block held no value twice, the block's groups are found
//! distinct by a bitmap, or sorted and merged, as the block ends
//! ([`State::unique_groups`]). The block's first and last values are then swapped into
//! place and the other groups keep the scan's order (none is declared for such a column).
//! A value before the groups already emitted or outside its block's bounds (statistics
//! that lie) is an error, never a group emitted twice.

use std::collections::VecDeque;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, Decimal128Array, Float64Array, RecordBatch,
};
use datafusion::arrow::buffer::NullBuffer;
use datafusion::arrow::datatypes::{
    ArrowPrimitiveType, DataType, Decimal128Type, Float64Type, SchemaRef, UInt64Type,
};
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{DataFusionError, Result};
use datafusion::physical_expr::{EquivalenceProperties, PhysicalSortExpr};
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_optimizer::sanity_checker::SanityCheckPlan;
use datafusion::physical_plan::aggregates::{AggregateExec, AggregateMode};
use datafusion::physical_plan::coalesce_partitions::CoalescePartitionsExec;
use datafusion::physical_plan::expressions::Column;
use datafusion::physical_plan::repartition::RepartitionExec;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{ExecutionPlan, SendableRecordBatchStream};
use futures::StreamExt;

use super::{Acc, Aggregate, GroupColumn, SiftAggregateExec, Spec, State, int_values};
use crate::exec::ClusteredZones;

/// How the runs of a column become complete groups.
#[derive(Debug)]
pub(super) enum Completion {
    /// The column is sorted over the scan: a batch's groups are complete, but its last.
    Sorted,
    /// The column's blocks follow one another by their zone maps, without nulls, its rows
    /// in any order within a block: a block's groups are complete once the scan has
    /// passed it.
    Blocks(ClusteredZones),
}

/// How complete groups' partial states become results (in the final phase's schema): a
/// state that is its result is taken as it is, and an `AVG`'s (count, sum) is divided as
/// DataFusion's final phase divides it.
#[derive(Debug)]
pub(super) struct Results {
    /// The partial states' schema, which the groups are built in first.
    partial: SchemaRef,
    /// Per aggregate, how its result comes from its state.
    evaluated: Vec<Evaluated>,
}

/// How one aggregate's result comes from its partial state.
#[derive(Debug, Clone, Copy)]
enum Evaluated {
    /// The state (one column) is the result.
    State,
    /// A decimal average: the sum (count, then sum) times `mul` (10 to the result's scale
    /// less the sum's), divided by the count, truncated, of `precision` and `scale`.
    Decimal { mul: i128, precision: u8, scale: i8 },
    /// A float average: the sum over the count.
    Float,
}

impl Results {
    /// How `aggregates` after `groups` group columns in `partial` become the columns of
    /// `result`; `None` where a state that is its result has another type than the
    /// result, or an average's result type is not the one DataFusion gives it.
    pub(super) fn new(
        aggregates: &[Aggregate],
        groups: usize,
        partial: &SchemaRef,
        result: &SchemaRef,
    ) -> Option<Results> {
        let types = |s: &SchemaRef| -> Vec<DataType> {
            s.fields().iter().map(|f| f.data_type().clone()).collect()
        };
        let (partial_types, result_types) = (types(partial), types(result));
        let same_groups = partial_types.get(..groups) == result_types.get(..groups);
        if !same_groups || result_types.len() != groups + aggregates.len() {
            return None;
        }
        let mut at = groups;
        let mut evaluated = Vec::with_capacity(aggregates.len());
        for (a, want) in aggregates.iter().zip(&result_types[groups..]) {
            let state = &partial_types[at..];
            let (e, width) = match (a, state, want) {
                _ if a.state_is_result() => {
                    (state.first() == Some(want)).then_some((Evaluated::State, 1))?
                }
                (
                    Aggregate::AvgInt { .. },
                    [DataType::UInt64, DataType::Decimal128(_, s), ..],
                    DataType::Decimal128(precision, scale),
                ) => {
                    let mul = 10i128.checked_pow(u32::try_from(scale - s).ok()?)?;
                    let (precision, scale) = (*precision, *scale);
                    (
                        Evaluated::Decimal {
                            mul,
                            precision,
                            scale,
                        },
                        2,
                    )
                }
                (
                    Aggregate::AvgFloat(_),
                    [DataType::UInt64, DataType::Float64, ..],
                    DataType::Float64,
                ) => (Evaluated::Float, 2),
                _ => return None,
            };
            evaluated.push(e);
            at += width;
        }
        (at == partial_types.len()).then(|| Results {
            partial: Arc::clone(partial),
            evaluated,
        })
    }

    /// The groups of `state` (emptied after) as results in `schema`.
    fn finish(&self, state: &mut State, spec: &Spec, schema: &SchemaRef) -> Result<RecordBatch> {
        let partial = state.finish(spec, Arc::clone(&self.partial))?;
        let groups = spec.groups.len();
        let mut columns: Vec<ArrayRef> = partial.columns()[..groups].to_vec();
        let mut at = groups;
        for e in &self.evaluated {
            let array: ArrayRef = match *e {
                Evaluated::State => {
                    at += 1;
                    Arc::clone(partial.column(at - 1))
                }
                Evaluated::Decimal {
                    mul,
                    precision,
                    scale,
                } => {
                    at += 2;
                    let (counts, sums, nulls) = average_state::<Decimal128Type>(&partial, at - 2)?;
                    let averages = (counts.iter().zip(sums))
                        .map(|(&n, &sum)| if n > 0 { average(sum, n, mul) } else { Ok(0) })
                        .collect::<Result<Vec<i128>>>()?;
                    let averages = Decimal128Array::new(averages.into(), nulls);
                    Arc::new(averages.with_precision_and_scale(precision, scale)?)
                }
                Evaluated::Float => {
                    at += 2;
                    let (counts, sums, nulls) = average_state::<Float64Type>(&partial, at - 2)?;
                    let averages = (counts.iter().zip(sums)).map(|(&n, &sum)| sum / n as f64);
                    Arc::new(Float64Array::new(averages.collect(), nulls))
                }
            };
            columns.push(array);
        }
        Ok(RecordBatch::try_new(Arc::clone(schema), columns)?)
    }
}

/// An average's counts and sums (values under nulls included), and where both are valid.
type AverageState<'a, T> = (
    &'a [u64],
    &'a [<T as ArrowPrimitiveType>::Native],
    Option<NullBuffer>,
);

/// An average's partial state at column `at` of `partial`; valid are the groups that took
/// a value, whose count is above 0 (a group that took none has a null count).
fn average_state<T: ArrowPrimitiveType>(
    partial: &RecordBatch,
    at: usize,
) -> Result<AverageState<'_, T>> {
    let state = (partial.column(at).as_primitive_opt::<UInt64Type>())
        .zip(partial.column(at + 1).as_primitive_opt::<T>());
    let (counts, sums) = state
        .ok_or_else(|| DataFusionError::Internal("an average's state has other types".into()))?;
    let nulls = NullBuffer::union(counts.nulls(), sums.nulls());
    Ok((counts.values(), sums.values(), nulls))
}

/// `sum` times `mul` over `n`, truncated toward zero as DataFusion's decimal average
/// divides (`DecimalAverager`); on 64-bit integers where both fit, whose division is
/// several times faster than a 128-bit one and truncates alike.
fn average(sum: i128, n: u64, mul: i128) -> Result<i128> {
    let scaled = sum.checked_mul(mul).ok_or_else(|| {
        DataFusionError::Execution(format!("an average's sum {sum} overflows at its scale"))
    })?;
    Ok(match (i64::try_from(scaled), i64::try_from(n)) {
        (Ok(s), Ok(n)) => i128::from(s / n),
        _ => scaled / i128::from(n),
    })
}

/// The orderings of complete groups in `schema`: on one partition, the group column in
/// the order `input` declares for the run column; none otherwise (each partition's
/// boundary groups come out at the end of whichever finishes last).
pub(super) fn equivalences(
    input: &Arc<dyn ExecutionPlan>,
    spec: &Spec,
    schema: &SchemaRef,
    partitions: usize,
) -> EquivalenceProperties {
    let ordering = match spec.groups.as_slice() {
        [GroupColumn::Runs(c)] if partitions == 1 => {
            // Any of the input's orderings that starts with the run column.
            let orderings = input.properties().eq_properties.oeq_class().iter();
            (orderings.map(|o| o.first()))
                .find(|e| {
                    e.expr
                        .downcast_ref::<Column>()
                        .is_some_and(|col| col.index() == *c)
                })
                .map(|e| {
                    let key = Arc::new(Column::new(schema.field(0).name(), 0));
                    [PhysicalSortExpr::new(key, e.options)]
                })
        }
        _ => None,
    };
    EquivalenceProperties::new_with_orderings(Arc::clone(schema), ordering)
}

/// `plan` with each final phase of an aggregation whose first phase is a
/// [`SiftAggregateExec`] over runs that can be completed replaced by a complete one, where
/// the plan stays valid: the final phase's hash partitioning is lost, which a node above
/// may rely on (a partitioned join, through filters and projections), so each replacement
/// is kept only if DataFusion's check of every node's required input partitioning and
/// order still passes.
pub(super) fn final_phases(
    mut plan: Arc<dyn ExecutionPlan>,
    config: &ConfigOptions,
) -> Result<Arc<dyn ExecutionPlan>> {
    // Candidates in the order a walk from the root meets them; those before `skip` were
    // tried and kept as they were (a kept replacement is no candidate any more).
    let mut skip = 0;
    loop {
        let (mut seen, mut replaced) = (0, false);
        let candidate = Arc::clone(&plan).transform_down(|node| {
            if replaced {
                return Ok(Transformed::no(node));
            }
            match completed(&node) {
                Some(new) if seen == skip => {
                    replaced = true;
                    Ok(Transformed::yes(new))
                }
                Some(_) => {
                    seen += 1;
                    Ok(Transformed::no(node))
                }
                None => Ok(Transformed::no(node)),
            }
        })?;
        if !replaced {
            return Ok(plan);
        }
        match SanityCheckPlan::new().optimize(Arc::clone(&candidate.data), config) {
            Ok(_) => plan = candidate.data,
            Err(_) => skip += 1,
        }
    }
}

/// `node` as a complete [`SiftAggregateExec`], if it is the final phase (through a
/// repartitioning or a coalescing of partitions) of a partial one whose groups can be
/// completed.
fn completed(node: &Arc<dyn ExecutionPlan>) -> Option<Arc<dyn ExecutionPlan>> {
    let agg = node.downcast_ref::<AggregateExec>()?;
    let final_phase = matches!(
        agg.mode(),
        AggregateMode::Final | AggregateMode::FinalPartitioned
    );
    if !final_phase
        || agg.limit_options().is_some()
        || agg.filter_expr().iter().any(Option::is_some)
    {
        return None;
    }
    let mut input = agg.input();
    if let Some(r) = input.downcast_ref::<RepartitionExec>() {
        input = r.input();
    } else if let Some(c) = input.downcast_ref::<CoalescePartitionsExec>() {
        input = c.input();
    }
    let partial = input.downcast_ref::<SiftAggregateExec>()?;
    if partial.boundaries.is_some() || partial.spec.completes.is_none() {
        return None;
    }
    let spec = &partial.spec;
    let results = Results::new(
        &spec.aggregates,
        spec.groups.len(),
        &partial.schema,
        &agg.schema(),
    )?;
    Some(Arc::new(SiftAggregateExec::complete(
        Arc::clone(&partial.input),
        Arc::clone(spec),
        agg.schema(),
        Arc::new(results),
    )))
}

/// One group taken out of a [`State`]: its value and, per aggregate, its state.
struct Held {
    key: Option<i64>,
    counts: Vec<u64>,
    ints: Vec<i128>,
    floats: Vec<f64>,
    set: Vec<bool>,
}

/// Where the partitions of one execution leave the groups they hold (their first and
/// last), until the last of them to finish takes them all.
pub(super) struct Boundaries {
    partitions: usize,
    /// Per partition, its held groups once it has finished.
    slots: Mutex<Vec<Option<Vec<Held>>>>,
}

impl fmt::Debug for Boundaries {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("Boundaries")
    }
}

impl Boundaries {
    pub(super) fn new(partitions: usize) -> Self {
        Boundaries {
            partitions,
            slots: Mutex::new((0..partitions).map(|_| None).collect()),
        }
    }

    /// Leaves partition `p`'s held groups; returns every partition's when `p` is the
    /// last to finish, the slots then emptied for the plan's next execution.
    fn leave(&self, p: usize, held: Vec<Held>) -> Result<Option<Vec<Held>>> {
        let mut slots = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
        let slot = slots.get_mut(p).ok_or_else(|| {
            DataFusionError::Internal(format!("no partition {p} of a complete aggregation"))
        })?;
        *slot = Some(held);
        if !slots.iter().all(Option::is_some) {
            return Ok(None);
        }
        Ok(Some(
            slots
                .iter_mut()
                .filter_map(Option::take)
                .flatten()
                .collect(),
        ))
    }

    /// Forgets what the partitions left: one stopped before its end, so this execution
    /// will not finish (an error, or a consumer that wants no more rows).
    fn abandon(&self) {
        let mut slots = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
        slots.iter_mut().for_each(|s| *s = None);
    }
}

impl State {
    /// Removes group `g` (of runs) and returns it.
    fn take_group(&mut self, g: usize) -> Held {
        let mut held = Held {
            key: self.run_keys.remove(g),
            counts: Vec::with_capacity(self.accs.len()),
            ints: Vec::with_capacity(self.accs.len()),
            floats: Vec::with_capacity(self.accs.len()),
            set: Vec::with_capacity(self.accs.len()),
        };
        for acc in &mut self.accs {
            held.counts.push(acc.counts.remove(g));
            held.ints.push(acc.ints.remove(g));
            held.floats.push(acc.floats.remove(g));
            held.set.push(acc.set.remove(g));
        }
        held
    }

    /// Moves the first `k` groups (of runs) to the end of `to`'s.
    fn move_groups(&mut self, k: usize, to: &mut State) {
        // Copied as slices, then removed: a drain's items would be moved one at a time.
        to.run_keys.extend_from_slice(&self.run_keys[..k]);
        for (from, acc) in self.accs.iter().zip(&mut to.accs) {
            acc.counts.extend_from_slice(&from.counts[..k]);
            acc.ints.extend_from_slice(&from.ints[..k]);
            acc.floats.extend_from_slice(&from.floats[..k]);
            acc.set.extend_from_slice(&from.set[..k]);
        }
        self.remove_front(k);
    }

    /// Removes the first `k` groups (of runs).
    fn remove_front(&mut self, k: usize) {
        self.run_keys.drain(..k);
        for acc in &mut self.accs {
            acc.counts.drain(..k);
            acc.ints.drain(..k);
            acc.floats.drain(..k);
            acc.set.drain(..k);
        }
    }

    /// Adds `held` as the last group, merged into it when it has the same value.
    fn push_held(&mut self, spec: &Spec, held: &Held) {
        let merge = !self.run_keys.is_empty() && self.run_keys.last() == Some(&held.key);
        if !merge {
            self.run_keys.push(held.key);
            self.grow();
        }
        let g = self.run_keys.len() - 1;
        for (i, (a, acc)) in spec.aggregates.iter().zip(&mut self.accs).enumerate() {
            let state = (held.counts[i], held.ints[i], held.floats[i], held.set[i]);
            acc.merge(a, g, !merge, state);
        }
    }

    /// Makes a block's groups (of runs, in any order) one per value, the block's first
    /// value (the least, or the greatest with `descending`) first and its last value last:
    /// the groups of one value are merged into the first of them and the others removed,
    /// and the two moved into place by swaps. The others stay where they are, so no state
    /// is read at random but those merged: a block's groups need no order (none is
    /// declared for a clustered column), only the carried group must be its last value
    /// and a partition's held group its first. tpchgen's Parquet orders grouped by
    /// `o_orderkey` with each row group's 93,750 rows shuffled, one core, sorted: 97–111
    /// ms, against 146–209 when every state was gathered in sorted order.
    fn unique_groups(
        &mut self,
        spec: &Spec,
        descending: bool,
        distinct: bool,
        scratch: &mut SortScratch,
    ) -> bool {
        let SortScratch {
            order,
            values,
            packed,
            spare,
            removed,
            seen,
        } = scratch;
        let n = self.run_keys.len();
        removed.clear();
        removed.resize(n, false);
        let mut merged = false;
        let known = match distinct {
            true => extremes(&self.run_keys),
            false => distinct_extremes(&self.run_keys, seen),
        };
        let (least, greatest) = match known {
            Some(extremes) => extremes,
            None => {
                sorted_order(&self.run_keys, order, values, packed, spare);
                // The first group of the value at hand (the least index: the sort is
                // stable).
                let mut head = 0;
                for (i, (&g, v)) in order.iter().zip(values.iter()).enumerate() {
                    let g = g as usize;
                    if i == 0 || values[i - 1] != *v {
                        head = g;
                        continue;
                    }
                    for (a, acc) in spec.aggregates.iter().zip(&mut self.accs) {
                        let state = (acc.counts[g], acc.ints[g], acc.floats[g], acc.set[g]);
                        acc.merge(a, head, false, state);
                    }
                    removed[g] = true;
                    merged = true;
                }
                (order.first().map_or(0, |&g| g as usize), head)
            }
        };
        let (first, last) = match descending {
            false => (least, greatest),
            true => (greatest, least),
        };
        if n > 0 {
            self.swap_groups(0, first, removed);
            // Where the swap left the last value's group.
            let last = match last {
                l if l == first => 0,
                0 => first,
                l => l,
            };
            self.swap_groups(n - 1, last, removed);
        }
        if merged {
            self.remove_groups(removed);
        }
        merged
    }

    /// Swaps groups (of runs) `a` and `b`, and their `removed` marks.
    fn swap_groups(&mut self, a: usize, b: usize, removed: &mut [bool]) {
        self.run_keys.swap(a, b);
        removed.swap(a, b);
        for acc in &mut self.accs {
            acc.counts.swap(a, b);
            acc.ints.swap(a, b);
            acc.floats.swap(a, b);
            acc.set.swap(a, b);
        }
    }

    /// Removes the groups (of runs) marked in `removed`, the others kept in order.
    fn remove_groups(&mut self, removed: &[bool]) {
        fn keep<T>(v: &mut Vec<T>, removed: &[bool]) {
            let mut at = removed.iter();
            v.retain(|_| at.next() == Some(&false));
        }
        keep(&mut self.run_keys, removed);
        for acc in &mut self.accs {
            keep(&mut acc.counts, removed);
            keep(&mut acc.ints, removed);
            keep(&mut acc.floats, removed);
            keep(&mut acc.set, removed);
        }
    }
}

/// The indices of the least and the greatest of `keys` when they are distinct values
/// without nulls whose span has at most 64 values a key (`seen` is a buffer: a bit per
/// value of the span), else `None`. A block's unique key, shuffled, needs no sort: one
/// pass over a bitmap small enough for L1 tells that no group has to be merged.
/// tpchgen's Parquet orders grouped by `o_orderkey` with each row group's 93,750 rows
/// shuffled, one core: 74–84 ms, against 97–111 with a radix sort of every block's
/// values.
fn distinct_extremes(keys: &[Option<i64>], seen: &mut Vec<u64>) -> Option<(usize, usize)> {
    let (least, greatest) = extremes(keys)?;
    let base = keys[least]?;
    let span = keys[greatest]?.wrapping_sub(base) as u64;
    if span / 64 >= keys.len() as u64 {
        return None;
    }
    seen.clear();
    seen.resize(span as usize / 64 + 1, 0);
    for k in keys.iter().flatten() {
        let v = k.wrapping_sub(base) as u64;
        let (word, bit) = ((v / 64) as usize, 1u64 << (v % 64));
        if seen[word] & bit != 0 {
            return None;
        }
        seen[word] |= bit;
    }
    Some((least, greatest))
}

/// The indices of the least and the greatest of `keys` (the first of each), or `None`
/// when there are none or one is null.
fn extremes(keys: &[Option<i64>]) -> Option<(usize, usize)> {
    let first = (*keys.first()?)?;
    let (mut least, mut greatest) = ((first, 0), (first, 0));
    for (g, &k) in keys.iter().enumerate() {
        let k = k?;
        if k < least.0 {
            least = (k, g);
        }
        if k > greatest.0 {
            greatest = (k, g);
        }
    }
    Some((least.1, greatest.1))
}

/// Digits of [`sorted_order`]'s radix sort, in bits.
const DIGIT: u32 = 11;

/// The indices of `keys` in ascending order of their values, equal values in index
/// order, into `order`, and the values in that order into `values` (`packed` and `spare`
/// are buffers): a least-significant-digit radix sort of each value less the least,
/// shifted above its index (so that one 64-bit word carries both and every pass reads
/// its input in order), [`DIGIT`] bits a pass and as many passes as the values' span
/// needs, where that is at most four (a block's values span little) and leaves room for
/// the index; else a comparison sort. The passes' counts are taken in one read, and a
/// pass whose digit is the same for every value is skipped. tpchgen's Parquet orders
/// grouped by `o_orderkey` with each row group's 93,750 rows shuffled, one core, when
/// every block was sorted: 152–185 ms with a comparison sort of (value, index) pairs,
/// 137–148 with a radix sort of indices.
fn sorted_order(
    keys: &[Option<i64>],
    order: &mut Vec<u32>,
    values: &mut Vec<Option<i64>>,
    packed: &mut Vec<u64>,
    spare: &mut Vec<u64>,
) {
    order.clear();
    values.clear();
    // `None` without values or with a null: no radix sort.
    let bounds = extremes(keys).and_then(|(lo, hi)| keys[lo].zip(keys[hi]));
    let span = bounds.map_or(0, |(lo, hi)| hi.wrapping_sub(lo) as u64);
    let bits = u64::BITS - span.leading_zeros();
    let index_bits = u64::BITS - (keys.len() as u64).leading_zeros();
    let (Some((least, _)), true) = (bounds, bits <= 4 * DIGIT && bits + index_bits <= u64::BITS)
    else {
        order.extend(0..keys.len() as u32);
        order.sort_by_key(|&g| keys[g as usize]);
        values.extend(order.iter().map(|&g| keys[g as usize]));
        return;
    };
    packed.clear();
    packed.extend(keys.iter().zip(0u64..).map(|(k, g)| {
        let rel = k.unwrap_or(least).wrapping_sub(least) as u64;
        rel << index_bits | g
    }));
    let passes = bits.div_ceil(DIGIT) as usize;
    let mask = (1u64 << DIGIT) - 1;
    let digit = |v: u64, pass: usize| ((v >> (index_bits + DIGIT * pass as u32)) & mask) as usize;
    let mut starts = vec![[0usize; 1 << DIGIT]; passes];
    for &v in packed.iter() {
        for (pass, counts) in starts.iter_mut().enumerate() {
            counts[digit(v, pass)] += 1;
        }
    }
    spare.clear();
    spare.resize(packed.len(), 0);
    for (pass, starts) in starts.iter_mut().enumerate() {
        if starts.contains(&packed.len()) {
            continue;
        }
        let mut at = 0;
        for s in starts.iter_mut() {
            (*s, at) = (at, at + *s);
        }
        for &v in packed.iter() {
            let d = digit(v, pass);
            spare[starts[d]] = v;
            starts[d] += 1;
        }
        std::mem::swap(packed, spare);
    }
    let index = (1u64 << index_bits) - 1;
    order.extend(packed.iter().map(|&v| (v & index) as u32));
    values.extend((packed.iter()).map(|&v| Some(least.wrapping_add((v >> index_bits) as i64))));
}

/// Buffers of [`State::unique_groups`], kept from block to block.
#[derive(Default)]
struct SortScratch {
    order: Vec<u32>,
    values: Vec<Option<i64>>,
    packed: Vec<u64>,
    spare: Vec<u64>,
    removed: Vec<bool>,
    seen: Vec<u64>,
}

impl Acc {
    /// Merges one group's state of aggregate `a` (count, integer, float, whether it holds
    /// an extreme) into group `g`; `first`: `g` holds no state yet, and takes the sums as
    /// they are (0.0 + -0.0 would lose the sign).
    #[inline(always)]
    fn merge(&mut self, a: &Aggregate, g: usize, first: bool, state: (u64, i128, f64, bool)) {
        let (count, int, float, set) = state;
        self.counts[g] += count;
        match a {
            Aggregate::MinMax { max, .. } => {
                if set {
                    self.fold_extreme(g, int, *max);
                }
            }
            _ if first => (self.ints[g], self.floats[g]) = (int, float),
            _ => {
                self.ints[g] += int;
                self.floats[g] += float;
            }
        }
    }
}

/// The stream of complete groups of `partition`.
pub(super) fn stream(
    input: SendableRecordBatchStream,
    spec: Arc<Spec>,
    schema: SchemaRef,
    results: Arc<Results>,
    boundaries: Arc<Boundaries>,
    partition: usize,
) -> Result<SendableRecordBatchStream> {
    let hold_first = boundaries.partitions > 1;
    let blocks = match &spec.completes {
        Some(Completion::Blocks(blocks)) => Some(BlockCursor::new(blocks, partition)),
        _ => None,
    };
    let run = Run {
        input,
        spec,
        schema: Arc::clone(&schema),
        results,
        boundaries,
        partition,
        state: None,
        hold_first,
        held: Vec::new(),
        descending: None,
        blocks,
        batch_state: None,
        index: BlockIndex::default(),
        scratch: SortScratch::default(),
        ready: VecDeque::new(),
        ended: false,
        left: false,
    };
    let batches = futures::stream::unfold(run, |mut run| async move {
        let next = run.next().await?;
        Some((next, run))
    });
    Ok(Box::pin(RecordBatchStreamAdapter::new(schema, batches)))
}

/// One partition's aggregation.
struct Run {
    input: SendableRecordBatchStream,
    spec: Arc<Spec>,
    schema: SchemaRef,
    results: Arc<Results>,
    boundaries: Arc<Boundaries>,
    partition: usize,
    /// The groups not emitted yet: the last batch's last, carried into the next; with
    /// [`Completion::Blocks`], those of the blocks not passed yet but the last batch's
    /// last.
    state: Option<State>,
    /// Whether the partition's first group is held for the merge with the partition
    /// before (there is one).
    hold_first: bool,
    /// The partition's first group once complete (with `hold_first`).
    held: Vec<Held>,
    /// The column's direction, once two values have told it ([`Completion::Sorted`]).
    descending: Option<bool>,
    /// With [`Completion::Blocks`]: the partition's blocks, and which the scan is in.
    blocks: Option<BlockCursor>,
    /// With [`Completion::Blocks`]: the batch's groups, which move to `state` but the
    /// last, carried into the next batch. Adding a batch costs what its groups do, not
    /// what all the groups of the block so far do.
    batch_state: Option<State>,
    /// With [`Completion::Blocks`]: each value's group in `state`, once the block's
    /// rows came out of order.
    index: BlockIndex,
    /// With [`Completion::Blocks`]: buffers for sorting a block's groups.
    scratch: SortScratch,
    /// Complete groups not returned yet.
    ready: VecDeque<RecordBatch>,
    /// Whether the stream has ended (its input, or an error).
    ended: bool,
    /// Whether the held groups were left in `boundaries`.
    left: bool,
}

impl Drop for Run {
    fn drop(&mut self) {
        if !self.left {
            self.boundaries.abandon();
        }
    }
}

impl Run {
    /// The next batch of complete groups; `None` at the end.
    async fn next(&mut self) -> Option<Result<RecordBatch>> {
        loop {
            if let Some(batch) = self.ready.pop_front() {
                return Some(Ok(batch));
            }
            if self.ended {
                return None;
            }
            let out = match self.input.next().await {
                Some(batch) => batch.and_then(|b| self.add(&b)),
                None => {
                    self.ended = true;
                    self.finish()
                }
            };
            if let Err(e) = out {
                self.ended = true;
                self.ready.clear();
                return Some(Err(e));
            }
        }
    }

    /// The partition's state, made for `batch`'s schema on its first batch.
    fn state(&mut self, batch: &RecordBatch) -> Result<&mut State> {
        let state = match self.state.take() {
            Some(state) => state,
            None => {
                let mut state = State::new(&self.spec, batch.schema())?;
                // Runs of a sorted column are its values' groups: never regrouped.
                state.regroup = Some(false);
                state
            }
        };
        Ok(self.state.insert(state))
    }

    /// Adds a batch, making ready the groups it completed.
    fn add(&mut self, batch: &RecordBatch) -> Result<()> {
        if self.blocks.is_some() {
            return self.add_blocks(batch);
        }
        let spec = Arc::clone(&self.spec);
        let mut descending = self.descending;
        let state = self.state(batch)?;
        state.add(&spec, batch)?;
        check_order(&state.run_keys, &mut descending, &spec)?;
        self.descending = descending;
        self.emit()
    }

    /// Adds a batch of a column whose blocks follow one another: the rows up to the first
    /// past the current block's bounds join the block's groups, which are then complete
    /// (but the greatest, whose value the next block may hold too), and so on block by
    /// block. Where the rows lie in the scan's blocks is thus told from their values and
    /// the zone maps alone: rows of a block come before those of the next, so a row past
    /// a block's bounds and every row after it are in later blocks.
    fn add_blocks(&mut self, batch: &RecordBatch) -> Result<()> {
        let [GroupColumn::Runs(c)] = self.spec.groups.as_slice() else {
            return Err(DataFusionError::Internal(
                "complete blocks without one run column".to_string(),
            ));
        };
        let array = batch.column(*c);
        if array.null_count() > 0 {
            return Err(self.misstated(&"a null"));
        }
        let keys = int_values(array)?;
        let spec = Arc::clone(&self.spec);
        let mut start = 0;
        loop {
            let Some(cursor) = &self.blocks else {
                return Ok(());
            };
            let past = (keys[start..].iter()).position(|&k| cursor.past(k));
            let split = past.map_or(keys.len(), |p| start + p);
            if split > start && self.index.active() {
                // Indexed: the rows join the block's groups of their values directly.
                let slice = batch.slice(start, split - start);
                self.state(batch)?;
                let Some(state) = &mut self.state else {
                    return Ok(());
                };
                match self
                    .index
                    .ids(keys[start..split].iter().map(|&k| Some(k)), state)
                {
                    Ok(ids) => state.add_grouped(&spec, &slice, ids)?,
                    Err(outside) => return Err(self.misstated(&outside)),
                }
            } else if split > start {
                self.state(batch)?;
                let adding = match self.batch_state.take() {
                    Some(adding) => adding,
                    None => State::new(&spec, batch.schema())?,
                };
                let adding = self.batch_state.insert(adding);
                adding.add(&spec, &batch.slice(start, split - start))?;
                if let (Some(state), Some(cursor)) = (&mut self.state, &self.blocks) {
                    let k = adding.groups().saturating_sub(1);
                    let moved = self.index.absorb(&spec, adding, k, state, cursor);
                    if let Err(outside) = moved {
                        return Err(self.misstated(&outside));
                    }
                }
            }
            if split == keys.len() {
                return Ok(());
            }
            self.complete_block()?;
            let Some(cursor) = &mut self.blocks else {
                return Ok(());
            };
            cursor.at += 1;
            if cursor.at >= cursor.zones.len() {
                return Err(self.misstated(&keys[split]));
            }
            start = split;
        }
    }

    /// Completes the groups of the blocks passed, one per value (the block's first value
    /// first, its last last), every one but the last made ready.
    fn complete_block(&mut self) -> Result<()> {
        let (Some(state), Some(cursor)) = (&mut self.state, &mut self.blocks) else {
            return Ok(());
        };
        if let Some(adding) = &mut self.batch_state {
            let moved = self
                .index
                .absorb(&self.spec, adding, adding.groups(), state, cursor);
            if let Err(outside) = moved {
                return Err(self.misstated(&outside));
            }
        }
        let merged = (!cursor.in_order(&state.run_keys)).then(|| {
            let distinct = self.index.active();
            state.unique_groups(&self.spec, cursor.descending, distinct, &mut self.scratch)
        });
        self.index.pass(merged);
        // A value before the last block's carried group, or before the partition's first
        // block, could be a group already made ready, or one of the partition before.
        let first = state.run_keys.first().copied().flatten();
        if let Some(first) = first
            && cursor.before(first, cursor.floor)
        {
            return Err(self.misstated(&first));
        }
        if let Some(Some(last)) = state.run_keys.last() {
            cursor.floor = *last;
        }
        self.emit()?;
        // The carried group goes back to the batches' state, which the next run of its
        // value continues.
        if let (Some(state), Some(adding)) = (&mut self.state, &mut self.batch_state) {
            state.move_groups(state.groups(), adding);
        }
        Ok(())
    }

    /// The error for a value of the run column (or a null) outside the zone maps'
    /// bounds of the blocks it was read from.
    fn misstated(&self, value: &dyn fmt::Display) -> DataFusionError {
        let column = self.spec.group_names.first().map_or("?", String::as_str);
        DataFusionError::Execution(format!(
            "cannot aggregate {}: column {column} holds {value}, outside the bounds its \
             statistics give the block it is in",
            self.spec.source
        ))
    }

    /// Makes ready the state's groups but the last, which the next batch (or block) may
    /// continue and is carried; the partition's first is held (with `hold_first`).
    fn emit(&mut self) -> Result<()> {
        let Some(state) = &mut self.state else {
            return Ok(());
        };
        if self.hold_first && self.held.is_empty() && state.groups() > 1 {
            self.held.push(state.take_group(0));
        }
        let carried = match state.groups() {
            0 => None,
            n => Some(state.take_group(n - 1)),
        };
        if state.groups() > 0 {
            let batch = self.results.finish(state, &self.spec, &self.schema)?;
            self.ready.push_back(batch);
        }
        state.clear_groups();
        if let Some(carried) = &carried {
            state.push_held(&self.spec, carried);
        }
        Ok(())
    }

    /// Leaves the held groups; when this partition is the last to finish, makes ready
    /// every partition's held groups merged.
    fn finish(&mut self) -> Result<()> {
        self.complete_block()?;
        if let (Some(state), Some(adding)) = (&mut self.state, &mut self.batch_state) {
            adding.move_groups(adding.groups(), state);
        }
        let mut held = std::mem::take(&mut self.held);
        if let Some(state) = &mut self.state
            && state.groups() > 0
        {
            held.push(state.take_group(state.groups() - 1));
        }
        self.left = true;
        let Some(mut all) = self.boundaries.leave(self.partition, held)? else {
            return Ok(());
        };
        if all.is_empty() {
            return Ok(());
        }
        all.sort_by_key(|h| h.key);
        let mut state = match self.state.take() {
            Some(state) => state,
            None => State::new(&self.spec, self.input.schema())?,
        };
        state.clear_groups();
        for h in &all {
            state.push_held(&self.spec, h);
        }
        let batch = self.results.finish(&mut state, &self.spec, &self.schema)?;
        self.ready.push_back(batch);
        Ok(())
    }
}

/// Where a partition's scan is among its blocks ([`Completion::Blocks`]).
struct BlockCursor {
    descending: bool,
    /// The partition's blocks' (least, greatest) values, in the scan's order.
    zones: Vec<(i64, i64)>,
    /// The block the scan is in.
    at: usize,
    /// No value may come before this one: the partition's first block's bound, then the
    /// value of the group carried from the blocks passed.
    floor: i64,
}

impl BlockCursor {
    fn new(blocks: &ClusteredZones, partition: usize) -> Self {
        let zones = (blocks.partitions.get(partition).cloned()).unwrap_or_default();
        let floor = match (zones.first(), blocks.descending) {
            (Some(&(lo, _)), false) => lo,
            (Some(&(_, hi)), true) => hi,
            (None, false) => i64::MIN,
            (None, true) => i64::MAX,
        };
        BlockCursor {
            descending: blocks.descending,
            zones,
            at: 0,
            floor,
        }
    }

    /// Whether `a` comes before `b` in the blocks' order.
    fn before(&self, a: i64, b: i64) -> bool {
        match self.descending {
            false => a < b,
            true => a > b,
        }
    }

    /// Whether `keys` follow one another strictly in the blocks' order, without nulls.
    fn in_order(&self, keys: &[Option<i64>]) -> bool {
        (keys.windows(2)).all(|w| matches!(w, [Some(a), Some(b)] if self.before(*a, *b)))
    }

    /// Whether `key` lies past the current block: greater than its greatest value (less
    /// than its least, descending).
    fn past(&self, key: i64) -> bool {
        match (self.zones.get(self.at), self.descending) {
            (Some(&(_, hi)), false) => key > hi,
            (Some(&(lo, _)), true) => key < lo,
            (None, _) => true,
        }
    }
}

/// The most values of a block's span that [`BlockIndex`] gives a slot (4 MiB of slots).
const INDEX_SPAN: u64 = 1 << 20;

/// Each value of a block's span's group in [`Run`]'s state, once a batch's rows came out
/// of order: that batch's groups merge into the groups of their values as they move
/// there, and the block's later batches are added straight to those groups (a new one
/// for a value not seen yet), so that the block's groups stay one per value and the rows
/// of a key that is only clustered are grouped at the cost of a lookup in a table the
/// size of the block's span (zone maps give it): no sort of the block's groups, and no
/// group per row held until the block ends. tpchgen's lineitem grouped by `l_orderkey`
/// with each row group's rows shuffled (about four rows a key), one core: 428–488 ms when
/// every row was a group until its block was sorted, 246–254 with the table for the
/// batches' groups alone, 169–183 with the rows added straight (DataFusion's own hash
/// aggregation 229–236 in the same run).
#[derive(Default)]
struct BlockIndex {
    /// Each value's group, less `base`, `u32::MAX` for none; empty while the block's
    /// groups come in order, or where its span is too wide.
    slots: Vec<u32>,
    /// The value of the first slot.
    base: i64,
    /// Each row's group in the state ([`BlockIndex::ids`]).
    rows: Vec<u32>,
    /// Whether a moved group was merged into one of the block's.
    merged: bool,
    /// Whether blocks are left unindexed: the last block out of order had no value in
    /// more than one group (a unique key), which a bitmap of the block's values tells
    /// at its end for less than the lookups cost ([`distinct_extremes`]).
    unwanted: bool,
}

impl BlockIndex {
    /// Whether the block's groups are indexed: one per value.
    fn active(&self) -> bool {
        !self.slots.is_empty()
    }

    /// Moves `from`'s first `k` groups to the end of `to`'s: as they are while the
    /// block's values come in order (each batch's after the one before), else each
    /// merged into `to`'s group of its value, if any, once `to`'s groups are indexed
    /// (where the block's span allows). `Err`: a value outside the block's bounds.
    fn absorb(
        &mut self,
        spec: &Spec,
        from: &mut State,
        k: usize,
        to: &mut State,
        cursor: &BlockCursor,
    ) -> std::result::Result<(), i64> {
        if !self.active() {
            let keys = &from.run_keys[..k];
            let joins = (to.run_keys.last().zip(keys.first()))
                .is_none_or(|(&last, &first)| cursor.in_order(&[last, first]));
            if (joins && cursor.in_order(keys)) || self.unwanted || !self.enter(to, cursor)? {
                from.move_groups(k, to);
                return Ok(());
            }
        }
        // New groups are numbered in the order their values first come: a group's first
        // state is the one that gives the next new number.
        let fresh = to.run_keys.len();
        let ids = self.ids(from.run_keys[..k].iter().copied(), to)?;
        for ((a, acc), fed) in (spec.aggregates.iter().zip(&mut to.accs)).zip(&from.accs) {
            let mut next = fresh;
            for (g, &t) in ids.iter().enumerate() {
                let new = t as usize == next;
                next += usize::from(new);
                let state = (fed.counts[g], fed.ints[g], fed.floats[g], fed.set[g]);
                acc.merge(a, t as usize, new, state);
            }
        }
        from.remove_front(k);
        Ok(())
    }

    /// Each of `keys`' group among `to`'s (the block's groups, indexed), a new one for a
    /// value without one. `Err`: a value outside the block's span.
    fn ids(
        &mut self,
        keys: impl IntoIterator<Item = Option<i64>>,
        to: &mut State,
    ) -> std::result::Result<&[u32], i64> {
        self.rows.clear();
        for key in keys {
            let slot = slot_of(&mut self.slots, self.base, key)?;
            if *slot == u32::MAX {
                *slot = to.run_keys.len() as u32;
                to.run_keys.push(key);
            } else {
                self.merged = true;
            }
            self.rows.push(*slot);
        }
        to.grow();
        Ok(&self.rows)
    }

    /// Forgets the block passed; `merged`: whether the block's groups held a value more
    /// than once (`None`: they were in order, which tells nothing).
    fn pass(&mut self, merged: Option<bool>) {
        if let Some(merged) = merged {
            self.unwanted = !(merged || self.merged);
        }
        self.merged = false;
        self.slots.clear();
    }

    /// Indexes `to`'s groups (one per value, in order), over the span of the cursor's
    /// block and the value carried into it; false where that span is too wide.
    fn enter(&mut self, to: &State, cursor: &BlockCursor) -> std::result::Result<bool, i64> {
        let Some(&(lo, hi)) = cursor.zones.get(cursor.at) else {
            return Ok(false);
        };
        let (lo, hi) = (lo.min(cursor.floor), hi.max(cursor.floor));
        let span = (hi.wrapping_sub(lo) as u64).saturating_add(1);
        if span > INDEX_SPAN {
            return Ok(false);
        }
        self.slots.clear();
        self.slots.resize(span as usize, u32::MAX);
        self.base = lo;
        for (g, key) in to.run_keys.iter().enumerate() {
            *slot_of(&mut self.slots, lo, *key)? = g as u32;
        }
        Ok(true)
    }
}

/// The slot of `key` in `slots`, the first of which is `base`'s; `Err` where it lies
/// outside them (a null, which a block's rows are checked not to hold before they are
/// added, counts as outside).
fn slot_of(slots: &mut [u32], base: i64, key: Option<i64>) -> std::result::Result<&mut u32, i64> {
    let key = key.ok_or(base)?;
    let at = key.wrapping_sub(base) as u64;
    (usize::try_from(at).ok())
        .and_then(|at| slots.get_mut(at))
        .ok_or(key)
}

/// Checks that `keys` (a partition's groups in order, the one carried from the batch
/// before first) strictly increase or strictly decrease, as the first two that differ
/// say (`descending`, kept from batch to batch).
fn check_order(keys: &[Option<i64>], descending: &mut Option<bool>, spec: &Spec) -> Result<()> {
    let column = spec.group_names.first().map_or("?", String::as_str);
    let Some(first) = keys.first() else {
        return Ok(());
    };
    let out_of_order = |a: &dyn fmt::Display, b: &dyn fmt::Display| {
        DataFusionError::Execution(format!(
            "cannot aggregate {}: column {column} is not sorted as the statistics say: {b} \
             follows {a}",
            spec.source
        ))
    };
    let mut last = first.ok_or_else(|| out_of_order(&"a value", &"null"))?;
    for key in &keys[1..] {
        let key = key.ok_or_else(|| out_of_order(&last, &"null"))?;
        let down = *descending.get_or_insert(key < last);
        if (down && key >= last) || (!down && key <= last) {
            return Err(out_of_order(&last, &key));
        }
        last = key;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{average, distinct_extremes, sorted_order};

    proptest::proptest! {
        /// The radix sort orders as a stable sort does: spans of one to four passes, and
        /// the comparison sort's for wider spans and nulls.
        #[test]
        fn block_keys_sort_as_a_stable_sort_does(
            raw in proptest::collection::vec(proptest::prelude::any::<i64>(), 0..600),
            bits in 0u32..64,
            base in proptest::prelude::any::<i64>(),
            null in proptest::prelude::any::<bool>(),
        ) {
            let mut keys: Vec<Option<i64>> = (raw.iter())
                .map(|&r| Some(base.wrapping_add(((r as u64) >> (63 - bits)) as i64)))
                .collect();
            if null && !keys.is_empty() {
                keys[raw.len() / 2] = None;
            }
            let mut want: Vec<u32> = (0..keys.len() as u32).collect();
            want.sort_by_key(|&g| keys[g as usize]);
            let (mut order, mut values) = (Vec::new(), Vec::new());
            sorted_order(&keys, &mut order, &mut values, &mut Vec::new(), &mut Vec::new());
            let sorted: Vec<Option<i64>> = order.iter().map(|&g| keys[g as usize]).collect();
            proptest::prop_assert_eq!(order, want);
            proptest::prop_assert_eq!(values, sorted);
        }

        /// Distinct values without nulls, spanning at most 64 a value, give the indices
        /// of their least and greatest; a repeated value, a null or a wider span gives
        /// none.
        #[test]
        fn distinct_values_give_their_extremes(
            raw in proptest::collection::vec(0i64..200, 0..100),
            base in proptest::prelude::any::<i64>(),
            null in proptest::prelude::any::<bool>(),
        ) {
            let mut keys: Vec<Option<i64>> =
                raw.iter().map(|&r| Some(base.wrapping_add(r))).collect();
            if null && !keys.is_empty() {
                keys[raw.len() / 2] = None;
            }
            let got = distinct_extremes(&keys, &mut Vec::new());
            let mut distinct = raw.clone();
            distinct.sort_unstable();
            distinct.dedup();
            let (lo, hi) = (distinct.first().copied(), distinct.last().copied());
            let fits = lo.zip(hi).is_some_and(|(lo, hi)| (hi - lo) / 64 < raw.len() as i64);
            if null || distinct.len() < raw.len() || !fits {
                proptest::prop_assert_eq!(got, None);
            } else {
                let found = got.map(|(least, greatest)| (raw[least], raw[greatest]));
                proptest::prop_assert_eq!(found, lo.zip(hi));
            }
        }

        /// An average equals the 128-bit truncating division DataFusion's decimal average
        /// makes, on 64-bit integers or not (sums scaled past 2^63 and counts of any size),
        /// and a sum that overflows at its scale is an error.
        #[test]
        fn averages_truncate_as_a_128_bit_division(
            sum in proptest::prelude::any::<i128>(),
            small in -1_000_000_000i128..1_000_000_000,
            n in 1u64..=u64::MAX,
            few in 1u64..1000,
            scale in 0u32..6,
        ) {
            let mul = 10i128.pow(scale);
            for (sum, n) in [(sum, n), (small, few), (sum >> 60, few), (small, n)] {
                let want = sum.checked_mul(mul).map(|s| s / i128::from(n));
                let got = average(sum, n, mul);
                if want.is_none() {
                    let e = got.as_ref().map_err(ToString::to_string).err().unwrap_or_default();
                    proptest::prop_assert!(e.contains("overflows at its scale"), "{}", e);
                }
                proptest::prop_assert_eq!(got.ok(), want, "{} / {}", sum, n);
            }
        }
    }
}
