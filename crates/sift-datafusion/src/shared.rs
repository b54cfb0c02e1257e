//! Subplans a query computes more than once, computed once: a view or common table
//! expression that a query reads twice (TPC-H Q15's `revenue0`, joined to `supplier` and
//! again under the scalar subquery that takes its largest revenue) is planned by
//! DataFusion as two copies of the same aggregate over the same scan, and each copy scans
//! its table. DataFusion has no way to share them, so it is done here.
//!
//! [`SharedSubplans`] is the last physical optimizer rule. It looks for aggregates (a
//! `Final` or `Single` phase, whose output is all computed before it is returned) over
//! Sift scans through projections, filters, repartitions and Sift's own aggregates, that
//! have no volatile expression (`random()`) and no scalar subquery's value (which prints
//! alike for every subquery until it runs), and compares them by what they compute: the
//! plan's text with every node's expressions, each node's output schema, and every
//! file and block each scan reads (its text shortens long file lists). The
//! filters that operators above a scan fill in while the query runs (a hash join's
//! dynamic filter, Sift's join filters) are left out of the comparison and out of the
//! shared copy, since they only spare rows that those operators drop anyway; the shared
//! copy is then computed for every reader. Aggregates found more than once are each
//! replaced by a [`SharedExec`] over one copy: the first reader of each partition
//! computes it and keeps its batches until every reader has read them (their memory taken
//! from the session's pool; where the pool has no room, each reader computes it).
//!
//! Any other operator below the aggregate (a join, a sort, another kind of scan) keeps
//! the subplan as it was. The rule changes nothing when the session option
//! `sift.shared_subplans` is false (`SET sift.shared_subplans = false`).

use std::collections::HashMap;
use std::fmt::{self, Write as _};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use datafusion::arrow::array::RecordBatch;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::{DataFusionError, Result};
use datafusion::execution::TaskContext;
use datafusion::execution::memory_pool::{MemoryConsumer, MemoryReservation};
use datafusion::physical_expr::expressions::DynamicFilterPhysicalExpr;
use datafusion::physical_expr::scalar_subquery::ScalarSubqueryExpr;
use datafusion::physical_expr_common::physical_expr::is_volatile;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::aggregates::{AggregateExec, AggregateMode};
use datafusion::physical_plan::coalesce_partitions::CoalescePartitionsExec;
use datafusion::physical_plan::coop::CooperativeExec;
use datafusion::physical_plan::filter::FilterExec;
use datafusion::physical_plan::projection::ProjectionExec;
use datafusion::physical_plan::repartition::RepartitionExec;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    ChildrenPropertiesMode, DisplayAs, DisplayFormatType, ExecutionPlan, PhysicalExpr,
    PlanProperties, ReplaceChildrenOptions, SendableRecordBatchStream, common, displayable,
};
use futures::lock::Mutex;
use futures::{StreamExt, TryStreamExt};

use crate::SiftOptions;
use crate::aggregate::SiftAggregateExec;
use crate::exec::SiftScanExec;

/// The physical optimizer rule; see the module documentation.
#[derive(Debug, Default)]
pub struct SharedSubplans;

impl PhysicalOptimizerRule for SharedSubplans {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if !SiftOptions::of(config).shared_subplans {
            return Ok(plan);
        }
        // Every candidate (by its node's address) and how many times each occurs, by
        // what it computes.
        let mut candidates: HashMap<*const (), (String, Arc<dyn ExecutionPlan>)> = HashMap::new();
        let mut seen: HashMap<String, usize> = HashMap::new();
        plan.apply(|node| {
            if let Some((key, copy)) = candidate(node)? {
                *seen.entry(key.clone()).or_default() += 1;
                candidates.insert(Arc::as_ptr(node).cast(), (key, copy));
            }
            Ok(TreeNodeRecursion::Continue)
        })?;
        if seen.values().all(|&n| n < 2) {
            return Ok(plan);
        }
        // Outermost first: an occurrence inside a shared subplan is computed with it.
        // Each node is met before its children are rebuilt, so by the address it had.
        let mut shared: HashMap<String, Arc<Shared>> = HashMap::new();
        plan.transform_down(|node| {
            let Some((key, copy)) = candidates.get(&Arc::as_ptr(&node).cast()).cloned() else {
                return Ok(Transformed::no(node));
            };
            if seen.get(&key).is_none_or(|&n| n < 2) {
                return Ok(Transformed::no(node));
            }
            let one = shared.entry(key).or_insert_with(|| Shared::new(copy));
            one.readers.fetch_add(1, Ordering::Relaxed);
            let exec = SharedExec {
                shared: Arc::clone(one),
            };
            Ok(Transformed::new(
                Arc::new(exec) as Arc<dyn ExecutionPlan>,
                true,
                TreeNodeRecursion::Jump,
            ))
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "SiftSharedSubplans"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// For an aggregate the rule may share: what it computes (the key its copies are compared
/// by) and the plan to compute it with (`node` without the filters that operators above
/// its scans fill in); `None` for any other node.
fn candidate(node: &Arc<dyn ExecutionPlan>) -> Result<Option<(String, Arc<dyn ExecutionPlan>)>> {
    let Some(agg) = node.downcast_ref::<AggregateExec>() else {
        return Ok(None);
    };
    if *agg.mode() == AggregateMode::Partial {
        return Ok(None);
    }
    let mut ok = true;
    node.apply(|n| {
        ok &= known(n) && !volatile(n)?;
        Ok(match ok {
            true => TreeNodeRecursion::Continue,
            false => TreeNodeRecursion::Stop,
        })
    })?;
    if !ok {
        return Ok(None);
    }
    let copy = Arc::clone(node)
        .transform_up(|n| match n.downcast_ref::<SiftScanExec>() {
            Some(scan) => Ok(match scan.without_runtime_filters() {
                Some(bare) => Transformed::yes(Arc::new(bare) as Arc<dyn ExecutionPlan>),
                None => Transformed::no(n),
            }),
            None => Ok(Transformed::no(n)),
        })?
        .data;
    // Only a scan may hold a filter filled in at run time; any other node with one (a
    // TopK's, an aggregate's) would compute differently in each copy. So may a scalar
    // subquery's value, which prints the same for every subquery until it is known.
    let mut filled = false;
    copy.apply(|n| {
        n.apply_expressions(&mut |e| {
            e.apply(|sub| {
                filled |= sub.downcast_ref::<DynamicFilterPhysicalExpr>().is_some()
                    || sub.downcast_ref::<ScalarSubqueryExpr>().is_some();
                Ok(TreeNodeRecursion::Continue)
            })
        })?;
        Ok(TreeNodeRecursion::Continue)
    })?;
    if filled {
        return Ok(None);
    }
    let mut key = displayable(copy.as_ref()).indent(true).to_string();
    copy.apply(|n| {
        let _ = writeln!(key, "{:?}", n.schema());
        if let Some(scan) = n.downcast_ref::<SiftScanExec>() {
            let _ = writeln!(key, "{}", scan.identity());
        }
        Ok(TreeNodeRecursion::Continue)
    })?;
    Ok(Some((key, copy)))
}

/// Whether `node` is an operator whose output the plan's text and its schema determine,
/// given its input: one the rule may share.
fn known(node: &Arc<dyn ExecutionPlan>) -> bool {
    node.downcast_ref::<AggregateExec>().is_some()
        || node.downcast_ref::<SiftAggregateExec>().is_some()
        || node.downcast_ref::<SiftScanExec>().is_some()
        || node.downcast_ref::<ProjectionExec>().is_some()
        || node.downcast_ref::<FilterExec>().is_some()
        || node.downcast_ref::<RepartitionExec>().is_some()
        || node.downcast_ref::<CoalescePartitionsExec>().is_some()
        || node.downcast_ref::<CooperativeExec>().is_some()
}

/// Whether an expression of `node` may return other values each time it is evaluated.
fn volatile(node: &Arc<dyn ExecutionPlan>) -> Result<bool> {
    let mut found = false;
    node.apply_expressions(&mut |e: &Arc<dyn PhysicalExpr>| {
        found |= is_volatile(e);
        Ok(TreeNodeRecursion::Continue)
    })?;
    Ok(found)
}

/// One subplan and the batches of each of its partitions, kept from the first reader of
/// the partition to the last.
#[derive(Debug)]
struct Shared {
    input: Arc<dyn ExecutionPlan>,
    /// How many [`SharedExec`]s read the subplan.
    readers: AtomicUsize,
    /// Per partition, its batches while readers have still to read them.
    partitions: Vec<Mutex<Option<Kept>>>,
}

/// A partition's batches, how many readers have still to read them, and their memory
/// in the session's pool.
type Kept = (Arc<[RecordBatch]>, usize, MemoryReservation);

impl Shared {
    fn new(input: Arc<dyn ExecutionPlan>) -> Arc<Shared> {
        let n = input.properties().partitioning.partition_count();
        Arc::new(Shared {
            input,
            readers: AtomicUsize::new(0),
            partitions: (0..n).map(|_| Mutex::new(None)).collect(),
        })
    }

    /// The batches of `partition`: computed by its first reader, while the others wait,
    /// and kept (their memory taken from the session's pool) until the last has them. A
    /// partition the pool has no room for is not kept: each reader then computes it. A
    /// reader that runs the partition after all have read it (the plan executed again)
    /// computes it anew.
    async fn batches(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<Arc<[RecordBatch]>> {
        let slot = self.partitions.get(partition).ok_or_else(|| {
            DataFusionError::Internal(format!(
                "SharedExec has {} partitions, not {partition}",
                self.partitions.len()
            ))
        })?;
        let mut kept = slot.lock().await;
        if let Some((batches, left, memory)) = kept.take() {
            if left > 1 {
                *kept = Some((Arc::clone(&batches), left - 1, memory));
            }
            return Ok(batches);
        }
        let pool = context.memory_pool().clone();
        let stream = self.input.execute(partition, context)?;
        let batches: Arc<[RecordBatch]> = common::collect(stream).await?.into();
        let readers = self.readers.load(Ordering::Relaxed);
        if readers > 1 {
            let memory = MemoryConsumer::new(format!("SharedExec[{partition}]")).register(&pool);
            let bytes = batches.iter().map(RecordBatch::get_array_memory_size).sum();
            if memory.try_grow(bytes).is_ok() {
                *kept = Some((Arc::clone(&batches), readers - 1, memory));
            }
        }
        Ok(batches)
    }
}

/// A reader of a subplan that [`SharedSubplans`] found more than once in a plan.
#[derive(Debug)]
pub struct SharedExec {
    shared: Arc<Shared>,
}

impl DisplayAs for SharedExec {
    fn fmt_as(&self, t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        let readers = self.shared.readers.load(Ordering::Relaxed);
        match t {
            DisplayFormatType::TreeRender => write!(f, "readers={readers}"),
            DisplayFormatType::Default | DisplayFormatType::Verbose => {
                write!(f, "SharedExec: computed once for {readers} readers")
            }
        }
    }
}

impl ExecutionPlan for SharedExec {
    fn name(&self) -> &str {
        "SharedExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        self.shared.input.properties()
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.shared.input]
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    /// A new child is no longer the copy the other readers share: the node then reads it
    /// on its own.
    fn replace_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
        _: ReplaceChildrenOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let [input] = <[_; 1]>::try_from(children)
            .map_err(|_| DataFusionError::Internal("SharedExec has one child".to_string()))?;
        let shared = Shared::new(input);
        shared.readers.store(1, Ordering::Relaxed);
        Ok(Arc::new(SharedExec { shared }))
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        self.replace_children(
            children,
            ReplaceChildrenOptions::new(ChildrenPropertiesMode::Recompute),
        )
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let shared = Arc::clone(&self.shared);
        let batches = futures::stream::once(async move {
            let batches = shared.batches(partition, context).await?;
            let each = (0..batches.len()).map(move |i| Ok(batches[i].clone()));
            Ok::<_, DataFusionError>(futures::stream::iter(each))
        })
        .try_flatten();
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            self.schema(),
            batches.boxed(),
        )))
    }
}
