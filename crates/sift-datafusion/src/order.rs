//! [`SortedScans`]: the sorts that a scan's sorted columns make needless, dropped, and the
//! merges above them replaced by [`ConcatPartitionsExec`]; the thresholds of the sorts
//! that stay with a `LIMIT` (TopKs) tested on the scans' rows.

use std::fmt;
use std::sync::Arc;

use datafusion::arrow::compute::SortOptions;
use datafusion::common::Result;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TransformedResult, TreeNode, TreeNodeRecursion};
use datafusion::common::{DataFusionError, Statistics};
use datafusion::execution::TaskContext;
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::buffer::BufferExec;
use datafusion::physical_plan::coop::CooperativeExec;
use datafusion::physical_plan::execution_plan::ChildrenPropertiesMode;
use datafusion::physical_plan::filter::FilterExec;
use datafusion::physical_plan::limit::{GlobalLimitExec, LocalLimitExec};
use datafusion::physical_plan::projection::ProjectionExec;
use datafusion::physical_plan::sorts::partial_sort::PartialSortExec;
use datafusion::physical_plan::sorts::sort::SortExec;
use datafusion::physical_plan::sorts::sort_preserving_merge::SortPreservingMergeExec;
use datafusion::physical_plan::statistics::ChildStats;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, ExecutionPlanProperties, Partitioning,
    PhysicalExpr, PlanProperties, ReplaceChildrenOptions, SendableRecordBatchStream,
    StatisticsArgs,
};
use futures::StreamExt;

use crate::exec::{SiftScanExec, TopKFilter};

/// The physical optimizer rule that drops a sort whose order the scan below it returns
/// already. On one partition a scan declares its sorted columns itself and DataFusion
/// plans no sort; on several it does not (an aggregate on them would merge the
/// partitions' streams, see [`SiftScanExec`]), so this rule declares them to the sorts
/// that ask for them, through the filters and projections between, and drops each such
/// sort (a `LIMIT` it carried stays as a limit on each partition). A sort that asks for
/// them descending, on one partition or several, gets the scan reversed: its partitions,
/// the blocks of each and each block's rows last first, so that `ORDER BY key DESC LIMIT
/// 10` reads the last block instead of feeding every row to a top-K (lineitem, one
/// thread: 1.9 s with all columns). A sort on such a column and then others sorts only
/// within runs of equal first keys (`PartialSortExec`). A scan whose files each hold the
/// sort's first key sorted, listed in another order, reads them in the key's order for
/// it (`SiftScanExec::with_files_ordered_by`). A merge of the sorted partitions above it
/// becomes their concatenation in order ([`ConcatPartitionsExec`]): a sorted column of a
/// scan is sorted over all its blocks in order, and its partitions are runs of
/// consecutive blocks, so each partition starts at or above where the one before ends.
/// DataFusion's own sort pushdown into sources (`try_pushdown_sort`) stops at a
/// `FilterExec`, which stays above a scan for the conjuncts Sift does not evaluate, and
/// keeps the merge, which compares every row: lineitem's 6 M rows by `l_orderkey` on two
/// threads took 114–140 ms merged, 12–17 ms concatenated (21 ms on one thread). A TopK
/// that stays has its threshold tested on the rows of the scans its dynamic filter
/// reaches, and those scans read their blocks best first (`SiftScanExec::with_top_ks`).
#[derive(Debug, Default)]
pub struct SortedScans;

impl PhysicalOptimizerRule for SortedScans {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let plan = plan
            .transform_down(|node| {
                if let Some(merge) = node.downcast_ref::<SortPreservingMergeExec>()
                    && let Some(plan) = concatenated(merge, config)?
                {
                    return Ok(Transformed::new(plan, true, TreeNodeRecursion::Jump));
                }
                if let Some(sort) = node.downcast_ref::<SortExec>()
                    && let Some((input, _)) = unsorted(sort, config)?
                {
                    return Ok(Transformed::yes(input));
                }
                Ok(Transformed::no(node))
            })
            .data()?;
        top_k_scans(plan)
    }

    fn name(&self) -> &str {
        "sift_sorted_scans"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// What replaces `merge` when the sort below it (through filters and projections) is one
/// that [`unsorted`] drops whole: the partitions concatenated in order. `None` where the
/// merge's order holds in each partition only (through a value constant in each, which
/// may differ between them): then the merge stays and its sort goes.
fn concatenated(
    merge: &SortPreservingMergeExec,
    config: &ConfigOptions,
) -> Result<Option<Arc<dyn ExecutionPlan>>> {
    // Rows tied on the first keys of a partly held order may lie on either side of a
    // partition's end: those partitions stay merged.
    let Some((input, true)) = without_sort(merge.input(), config)? else {
        return Ok(None);
    };
    let concat: Arc<dyn ExecutionPlan> = Arc::new(ConcatPartitionsExec::new(input));
    let order = merge.expr().iter().cloned();
    if !concat.equivalence_properties().ordering_satisfy(order)? {
        return Ok(None);
    }
    Ok(Some(match merge.fetch() {
        Some(fetch) => Arc::new(GlobalLimitExec::new(concat, 0, Some(fetch))),
        None => concat,
    }))
}

/// `plan` with the scans that its TopKs' dynamic filters reach (the sorts with a `LIMIT`
/// that stay) made ready for them ([`SiftScanExec::with_top_ks`]).
fn top_k_scans(plan: Arc<dyn ExecutionPlan>) -> Result<Arc<dyn ExecutionPlan>> {
    let mut top_ks = Vec::new();
    plan.apply(|node| {
        if let Some(sort) = node.downcast_ref::<SortExec>()
            && sort.fetch().is_some()
        {
            let descending = sort.expr().first().options.descending;
            let direct = chain_scan(sort.input()).is_some();
            let produced = sort.dynamic_expressions_produced();
            let ids = produced.iter().filter_map(|e| e.expression_id());
            top_ks.extend(ids.map(|id| TopKFilter {
                id,
                descending,
                direct,
            }));
        }
        Ok(TreeNodeRecursion::Continue)
    })?;
    if top_ks.is_empty() {
        return Ok(plan);
    }
    plan.transform_up(|node| match node.downcast_ref::<SiftScanExec>() {
        Some(scan) => {
            let scan = scan.with_top_ks(&top_ks);
            match scan.has_row_bounds() {
                true => Ok(Transformed::yes(Arc::new(scan) as Arc<dyn ExecutionPlan>)),
                false => Ok(Transformed::no(node)),
            }
        }
        None => Ok(Transformed::no(node)),
    })
    .data()
}

/// What replaces `sort` when the scan at the end of its input's chain of filters and
/// projections holds the order it asks for, its partitions kept apart as the sort kept
/// them, and whether it holds the whole order: that input with the scan's sorted columns
/// declared; or where the scan holds only the first keys, a `PartialSortExec` sorting the
/// rows by the rest within each run of equal first keys (over the scan without the
/// limit, since every row tied with the last one kept must be read). `None` where the
/// sort sorts its partitions together (DataFusion plans a merge above sorts of each
/// partition instead, so such a sort has one partition below it) or the scan holds no
/// first part of its order.
fn unsorted(
    sort: &SortExec,
    config: &ConfigOptions,
) -> Result<Option<(Arc<dyn ExecutionPlan>, bool)>> {
    let apart =
        sort.preserve_partitioning() || sort.input().output_partitioning().partition_count() == 1;
    if !apart {
        return Ok(None);
    }
    let produced: Vec<u64> = (sort.dynamic_expressions_produced().iter())
        .filter_map(|e| e.expression_id())
        .collect();
    let (order, fetch) = (sort.expr(), sort.fetch());
    // Files each sorted on the first key but listed in another order, put in its order
    // once for every way of declaring the scan below.
    let key = scan_column(sort.input(), &order.first().expr);
    let ordered = chain_scan(sort.input()).zip(key);
    let ordered = ordered.and_then(|(scan, key)| scan.with_files_ordered_by(key));
    // The order ascending, or descending with the scan's rows last first; nulls (which
    // the sorted columns hold none of) placed where the sort places them.
    let nulls_first = order.first().options.nulls_first;
    let directions = [false, true].map(|descending| SortOptions::new(descending, nulls_first));
    for direction in directions {
        let Some(input) = declared(sort.input(), &produced, fetch, direction, ordered.as_ref())?
        else {
            continue;
        };
        if (input.equivalence_properties()).ordering_satisfy(order.iter().cloned())? {
            return Ok(Some((buffered(input, fetch, config), true)));
        }
    }
    for direction in directions {
        let Some(input) = declared(sort.input(), &produced, None, direction, ordered.as_ref())?
        else {
            continue;
        };
        let properties = input.equivalence_properties();
        let mut held = 0;
        while held < order.len()
            && properties.ordering_satisfy(order.iter().take(held + 1).cloned())?
        {
            held += 1;
        }
        if held > 0 {
            let partial = PartialSortExec::new(order.clone(), input, held)
                .with_preserve_partitioning(sort.preserve_partitioning())
                .with_fetch(fetch);
            return Ok(Some((buffered(Arc::new(partial), fetch, config), false)));
        }
    }
    Ok(None)
}

/// `input`, in place of a sort with the limit `fetch` that read its partitions at once,
/// in parallel, before any row went on: without it, the partitions after the first would
/// wait for the rows before them to be taken, so a buffer keeps them running (bounded as
/// DataFusion bounds it where it drops a sort itself); with a limit, each partition's
/// rows past it are not needed, and no buffer reads them ahead.
fn buffered(
    input: Arc<dyn ExecutionPlan>,
    fetch: Option<usize>,
    config: &ConfigOptions,
) -> Arc<dyn ExecutionPlan> {
    let partitions = input.output_partitioning().partition_count();
    match fetch {
        None if partitions > 1 => {
            let capacity = config.execution.sort_pushdown_buffer_capacity;
            Arc::new(BufferExec::new(input, capacity))
        }
        None => input,
        Some(fetch) => Arc::new(LocalLimitExec::new(input, fetch)),
    }
}

/// `node` without the sort at the end of its chain of filters and projections, where
/// [`unsorted`] replaces it, and whether the scan holds the sort's whole order.
fn without_sort(
    node: &Arc<dyn ExecutionPlan>,
    config: &ConfigOptions,
) -> Result<Option<(Arc<dyn ExecutionPlan>, bool)>> {
    if let Some(sort) = node.downcast_ref::<SortExec>() {
        return unsorted(sort, config);
    }
    let Some((child, _)) = passed(node) else {
        return Ok(None);
    };
    match without_sort(child, config)? {
        Some((child, whole)) => Ok(Some((with_child(node, child)?, whole))),
        None => Ok(None),
    }
}

/// `node` with the Sift scan at the end of its chain of filters and projections
/// re-planned with its sorted columns declared in `order` (descending: its rows returned
/// last first), starting from `ordered` instead where given (the scan with its files in
/// a key's order, [`SiftScanExec::with_files_ordered_by`]), without the
/// dynamic filters `produced` by the sort above, and returning at most `fetch` rows from
/// each partition where no filter lies between (the rows the sort would keep); `None` when
/// the chain ends elsewhere or passes another node, or the scan holds no sorted column (or
/// returns its rows last first already).
fn declared(
    node: &Arc<dyn ExecutionPlan>,
    produced: &[u64],
    fetch: Option<usize>,
    order: SortOptions,
    ordered: Option<&SiftScanExec>,
) -> Result<Option<Arc<dyn ExecutionPlan>>> {
    if let Some(scan) = node.downcast_ref::<SiftScanExec>() {
        let scan = ordered.unwrap_or(scan);
        // A scan on one partition declares its columns ascending already: planned anew
        // all the same, without the sort's dynamic filters.
        let declarable = !scan.sorted().is_empty() && !scan.reversed();
        let declared = || Arc::new(scan.with_declared_order(produced, fetch, order)) as _;
        return Ok(declarable.then(declared));
    }
    let Some((child, filter)) = passed(node) else {
        return Ok(None);
    };
    let fetch = fetch.filter(|_| !filter);
    match declared(child, produced, fetch, order, ordered)? {
        Some(child) => Ok(Some(with_child(node, child)?)),
        None => Ok(None),
    }
}

/// The Sift scan at the end of `node`'s chain of filters and projections, if the chain
/// ends at one.
fn chain_scan(mut node: &Arc<dyn ExecutionPlan>) -> Option<&SiftScanExec> {
    while let Some((child, _)) = passed(node) {
        node = child;
    }
    node.downcast_ref::<SiftScanExec>()
}

/// The column (its position) of the Sift scan at the end of `node`'s chain of filters and
/// projections that `expr`, over `node`'s output, passes on unchanged; `None` when it is
/// computed or the chain ends elsewhere.
fn scan_column(node: &Arc<dyn ExecutionPlan>, expr: &Arc<dyn PhysicalExpr>) -> Option<usize> {
    let column = expr.downcast_ref::<Column>()?;
    if node.downcast_ref::<SiftScanExec>().is_some() {
        return Some(column.index());
    }
    let (child, _) = passed(node)?;
    if let Some(projection) = node.downcast_ref::<ProjectionExec>() {
        return scan_column(child, &projection.expr().get(column.index())?.expr);
    }
    let index = match node
        .downcast_ref::<FilterExec>()
        .and_then(|f| f.projection().clone())
    {
        Some(projection) => *projection.get(column.index())?,
        None => column.index(),
    };
    let input: Arc<dyn PhysicalExpr> = Arc::new(Column::new(column.name(), index));
    scan_column(child, &input)
}

/// The input of `node` when it is a filter or a projection, which keep their input's
/// order and partitions, and whether it is a filter.
fn passed(node: &Arc<dyn ExecutionPlan>) -> Option<(&Arc<dyn ExecutionPlan>, bool)> {
    let filter = node.downcast_ref::<FilterExec>().is_some();
    let passes = filter
        || node.downcast_ref::<ProjectionExec>().is_some()
        || node.downcast_ref::<CooperativeExec>().is_some();
    match (passes, &node.children()[..]) {
        (true, &[child]) => Some((child, filter)),
        _ => None,
    }
}

/// `node` with `child` as its input, its properties derived anew (the child's order
/// differs from the one it replaces).
fn with_child(
    node: &Arc<dyn ExecutionPlan>,
    child: Arc<dyn ExecutionPlan>,
) -> Result<Arc<dyn ExecutionPlan>> {
    let recompute = ReplaceChildrenOptions::new(ChildrenPropertiesMode::Recompute);
    Arc::clone(node).replace_children(vec![child], recompute)
}

/// The partitions of its input one after another, in order, as one partition: sorted
/// where each partition is sorted and starts at or above where the one before ends (the
/// partitions of a Sift scan on a sorted column, see [`SortedScans`]). Every partition is
/// started at once, so that a buffer below runs them ahead in parallel; without one, a
/// partition is read only once the rows before it are taken. Written here because
/// DataFusion has no such node: its `CoalescePartitionsExec` interleaves the partitions,
/// and its `SortPreservingMergeExec` compares every row.
#[derive(Debug)]
pub struct ConcatPartitionsExec {
    input: Arc<dyn ExecutionPlan>,
    properties: Arc<PlanProperties>,
}

impl ConcatPartitionsExec {
    fn new(input: Arc<dyn ExecutionPlan>) -> ConcatPartitionsExec {
        let mut equivalences = input.equivalence_properties().clone();
        // A value constant in each partition may differ from one to the next.
        equivalences.clear_per_partition_constants();
        let properties = PlanProperties::new(
            equivalences,
            Partitioning::UnknownPartitioning(1),
            input.pipeline_behavior(),
            input.boundedness(),
        );
        ConcatPartitionsExec {
            input,
            properties: Arc::new(properties),
        }
    }
}

impl DisplayAs for ConcatPartitionsExec {
    fn fmt_as(&self, t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        match t {
            DisplayFormatType::TreeRender => Ok(()),
            DisplayFormatType::Default | DisplayFormatType::Verbose => {
                write!(f, "ConcatPartitionsExec")
            }
        }
    }
}

impl ExecutionPlan for ConcatPartitionsExec {
    fn name(&self) -> &str {
        "ConcatPartitionsExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }

    fn maintains_input_order(&self) -> Vec<bool> {
        vec![true]
    }

    fn benefits_from_input_partitioning(&self) -> Vec<bool> {
        vec![false]
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let [input] = <[_; 1]>::try_from(children).map_err(|_| {
            DataFusionError::Internal("ConcatPartitionsExec has one child".to_string())
        })?;
        Ok(Arc::new(ConcatPartitionsExec::new(input)))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        if partition != 0 {
            return Err(DataFusionError::Internal(format!(
                "ConcatPartitionsExec has one partition, not {partition}"
            )));
        }
        let parts = self.input.output_partitioning().partition_count();
        let streams = (0..parts)
            .map(|p| self.input.execute(p, Arc::clone(&context)))
            .collect::<Result<Vec<_>>>()?;
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            self.schema(),
            futures::stream::iter(streams).flatten(),
        )))
    }

    fn child_stats_requests(&self, _partition: Option<usize>) -> Vec<ChildStats> {
        vec![ChildStats::At(None)]
    }

    fn statistics_from_inputs(
        &self,
        input_stats: &[Arc<Statistics>],
        _args: &StatisticsArgs,
    ) -> Result<Arc<Statistics>> {
        Ok(match input_stats.first() {
            Some(stats) => Arc::clone(stats),
            None => Arc::new(Statistics::new_unknown(&self.schema())),
        })
    }
}
