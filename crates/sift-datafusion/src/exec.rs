//! [`SiftScanExec`]: the physical scan of a [`SiftTable`](crate::SiftTable), split into
//! partitions of consecutive blocks that DataFusion runs on separate threads.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashSet, VecDeque};
use std::fmt;
use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, RecordBatch, UInt32Array, downcast_primitive_array,
    make_comparator,
};
use datafusion::arrow::compute::kernels::boolean::and;
use datafusion::arrow::compute::kernels::cmp::lt;
use datafusion::arrow::compute::{SortOptions, filter_record_batch, take_record_batch};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::common::config::ConfigOptions;
use datafusion::common::stats::Precision;
use datafusion::common::tree_node::{Transformed, TransformedResult, TreeNode, TreeNodeRecursion};
use datafusion::common::{DataFusionError, Result, Statistics};
use datafusion::execution::TaskContext;
use datafusion::physical_expr::expressions::{
    Column, DynamicFilterPhysicalExpr, InListExpr, Literal,
};
use datafusion::physical_expr::{EquivalenceProperties, PhysicalSortExpr, split_conjunction};
use datafusion::physical_expr_common::physical_expr::snapshot_physical_expr;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::aggregates::AggregateExec;
use datafusion::physical_plan::empty::EmptyExec;
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::filter::FilterExec;
use datafusion::physical_plan::filter_pushdown::{
    ChildPushdownResult, FilterPushdownPhase, FilterPushdownPropagation, PushedDown,
};
use datafusion::physical_plan::joins::HashJoinExec;
use datafusion::physical_plan::metrics::{
    Count, ExecutionPlanMetricsSet, MetricBuilder, MetricsSet,
};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PhysicalExpr, PlanProperties,
    ReplaceChildrenOptions, SendableRecordBatchStream, StatisticsArgs, apply_expression_roots,
};
use futures::StreamExt;
use sift_format::{ChunkStats, Scalar};
use sift_scan::{Expr as Filter, FileScan, ScanStats, SortedColumns, scalar_cmp};

use crate::aggregate::SiftAggregateExec;
use crate::join_filter::{JoinFilter, NARROW};
use crate::stats::{block_bounds, block_zones, blocks_statistics, sorted_columns};
use crate::table::{TableFile, TableFiles};
use crate::translate::physical_to_sift;

/// A scan of Sift or Parquet files by Sift's engine, with the filter, projection and limit
/// DataFusion pushed into it, and the dynamic filters of the plan above it (a hash join's
/// build-side keys, a TopK's threshold), taken as they stand when each block is read.
#[derive(Debug, Clone)]
pub struct SiftScanExec {
    files: Arc<TableFiles>,
    /// The files scanned (those the filter's partition values keep), as positions in
    /// `files`.
    scanned: Arc<[usize]>,
    /// The table's schema (all columns).
    table_schema: SchemaRef,
    projection: Option<Vec<usize>>,
    /// Conjuncts pushed down, ANDed; `None` when there are none.
    filter: Option<Filter>,
    /// Dynamic filters from the plan above, evaluated where they translate exactly.
    dynamic: Vec<Arc<dyn PhysicalExpr>>,
    /// The expression ids of the dynamic filters among `dynamic` whose bounds are tested
    /// on rows, not only against the zone maps: a TopK's threshold
    /// ([`SiftScanExec::with_top_ks`]).
    row_bounds: Vec<u64>,
    /// The expression ids of the dynamic filters among `dynamic` that a hash join fills
    /// once its build side is in: each partition waits for them before its first block
    /// ([`BuildSidesFirst`]).
    awaited: Vec<u64>,
    /// Keys of joins above, from the scans that restrict them
    /// ([`JoinFilters`](crate::JoinFilters)).
    join_filters: Vec<JoinFilter>,
    limit: Option<usize>,
    /// The share of rows the pushed filter is estimated to keep, for the statistics the
    /// optimizer orders joins by ([`SiftScanExec::with_filter_estimate`]).
    selectivity: Option<f64>,
    /// Columns read as dictionary arrays (for grouping on their codes).
    dictionary: Vec<String>,
    /// Decimal columns read as their unscaled `Int64` values (for arithmetic on them).
    unscaled: Vec<String>,
    /// Each block returns the smallest and largest value of every column over its
    /// selected rows instead of the rows ([`SiftScanExec::with_extremes`]).
    extremes: bool,
    /// With `extremes`, the count of the block's selected rows as a last column.
    count_selected: bool,
    /// Per partition, the blocks it reads, consecutive in each file.
    partitions: Vec<Vec<PartBlock>>,
    /// Whether the conjuncts of dynamic filters that do not translate are evaluated on the
    /// returned batches ([`PartitionScan::residual`]): set by [`DynamicResiduals`] where an
    /// aggregate lies between the scan and the hash join above it, shared by the node's
    /// clones (the rule marks the plan without rebuilding it).
    residual: Arc<AtomicBool>,
    /// The returned columns (positions) sorted over the blocks in their order, so in every
    /// partition, ascending or descending ([`sorted_columns`]).
    sorted: SortedColumns,
    /// The order `sorted` is declared to DataFusion in (`None`: not declared), ascending
    /// or descending, the scan then returning its rows last first: its partitions, the
    /// blocks of each and each block's rows in reverse order (a column sorted descending
    /// reads the other way round). Declared ascending on one partition, and in either
    /// order to a sort above the scan that asks for it
    /// ([`SortedScans`](crate::SortedScans)), with nulls where that sort puts them (the
    /// columns hold none, but DataFusion compares the placement of a nullable column's).
    /// Sorted columns let DataFusion aggregate on them as a stream (TPC-H Q18's group by
    /// l_orderkey, one thread: 184 -> 123 ms); over several partitions DataFusion keeps
    /// the order through its hash repartitioning by merging the partitions' streams, which
    /// cost more than it saved (Q18 on two threads 147 -> 269 ms), so there the order is
    /// only declared to a sort that it makes needless. `SiftAggregateExec` uses the sorted
    /// columns either way.
    declared: Option<SortOptions>,
    properties: Arc<PlanProperties>,
    metrics: ExecutionPlanMetricsSet,
}

impl SiftScanExec {
    pub(crate) fn new(
        files: Arc<TableFiles>,
        scanned: Vec<usize>,
        table_schema: SchemaRef,
        projection: Option<Vec<usize>>,
        filter: Option<Filter>,
        limit: Option<usize>,
        target_partitions: usize,
    ) -> Result<SiftScanExec> {
        let schema = match &projection {
            Some(p) => SchemaRef::new(table_schema.project(p)?),
            None => table_schema.clone(),
        };
        let partitions = split_blocks(&files.files, &scanned, target_partitions);
        let blocks: Vec<_> = (partitions.iter().flatten())
            .map(|b| (b.file, b.block))
            .collect();
        let sorted = sorted_columns(&files, &schema, &blocks);
        // Ascending with nulls last, as SQL's `ORDER BY` puts them by default.
        let declared = (target_partitions == 1).then_some(SortOptions::new(false, false));
        let properties = scan_properties(schema, partitions.len(), &sorted, declared);
        Ok(SiftScanExec {
            files,
            scanned: scanned.into(),
            table_schema,
            projection,
            filter,
            dynamic: Vec::new(),
            row_bounds: Vec::new(),
            awaited: Vec::new(),
            join_filters: Vec::new(),
            limit,
            selectivity: None,
            dictionary: Vec::new(),
            unscaled: Vec::new(),
            extremes: false,
            count_selected: false,
            partitions,
            residual: Arc::new(AtomicBool::new(false)),
            sorted,
            declared,
            properties,
            metrics: ExecutionPlanMetricsSet::new(),
        })
    }

    /// The filter evaluated inside the scan, in Sift's filter syntax.
    pub fn filter(&self) -> Option<&Filter> {
        self.filter.as_ref()
    }

    /// The scan with its statistics scaled by the share of rows `predicate` (the pushed
    /// filter, as DataFusion planned it over the table's columns) keeps, estimated as
    /// DataFusion's `FilterExec` estimates it: from the zone maps' bounds where the
    /// predicate allows interval analysis, else the session's default selectivity. Without
    /// it a filtered scan would report every row of its files, and a join would be built
    /// on a large table whose filter keeps a few rows (TPC-H Q12's lineitem) rather than on
    /// the other side.
    pub(crate) fn with_filter_estimate(
        mut self,
        predicate: Arc<dyn PhysicalExpr>,
        default_selectivity: u8,
    ) -> Result<SiftScanExec> {
        let table = blocks_statistics(&self.files, &self.table_schema, &self.all_blocks());
        let Precision::Exact(rows) = table.num_rows else {
            return Ok(self);
        };
        let input = Arc::new(EmptyExec::new(Arc::clone(&self.table_schema)));
        let estimate = FilterExec::try_new(predicate, input)?
            .with_default_selectivity(default_selectivity)?
            .statistics_from_inputs(&[Arc::new(table)], &StatisticsArgs::new())?;
        if let (Some(&kept), true) = (estimate.num_rows.get_value(), rows > 0) {
            self.selectivity = Some((kept as f64 / rows as f64).clamp(0.0, 1.0));
        }
        Ok(self)
    }

    /// The scan with `filters` added to its join filters, kept from the smallest source
    /// table up.
    pub(crate) fn with_join_filters(&self, filters: Vec<JoinFilter>) -> SiftScanExec {
        let mut node = self.clone();
        node.join_filters.extend(filters);
        node.join_filters.sort_by_key(JoinFilter::source_rows);
        node.metrics = ExecutionPlanMetricsSet::new();
        node
    }

    /// The scan with the `dictionary` columns (string or binary ones) returned as
    /// dictionary arrays with `Int32` keys, their codes as the engine read them, and the
    /// `unscaled` ones (decimals of precision 18 or less) as `Int64` unscaled values.
    pub(crate) fn with_reads(
        &self,
        dictionary: Vec<String>,
        unscaled: Vec<String>,
    ) -> SiftScanExec {
        let mut node = self.clone();
        let schema = self.schema();
        let fields = schema.fields().iter().map(|f| {
            let dt = if dictionary.contains(f.name()) {
                DataType::Dictionary(Box::new(DataType::Int32), Box::new(f.data_type().clone()))
            } else if unscaled.contains(f.name()) {
                DataType::Int64
            } else {
                return Arc::clone(f);
            };
            Arc::new(f.as_ref().clone().with_data_type(dt))
        });
        let schema = SchemaRef::new(Schema::new(fields.collect::<Vec<_>>()));
        node.properties =
            scan_properties(schema, self.partitions.len(), &self.sorted, self.declared);
        node.dictionary = dictionary;
        node.unscaled = unscaled;
        node.metrics = ExecutionPlanMetricsSet::new();
        node
    }

    /// The scan returning, for each block with selected rows, two rows: the smallest and
    /// the largest value of every column over those rows (nulls ignored), for `MIN` and
    /// `MAX` aggregates computed above it ([`sift_scan::ScanBuilder::extremes_only`]), and
    /// with `count` a last column `[selected rows, 0]` for a `COUNT(*)` beside them
    /// ([`sift_scan::ScanBuilder::count_selected`]). `None` when a column is not an
    /// integer, date, time, timestamp or decimal one, or the scan has a limit.
    pub(crate) fn with_extremes(&self, count: bool) -> Option<SiftScanExec> {
        let schema = self.schema();
        let orderable = (schema.fields().iter()).all(|f| sift_scan::has_extremes(f.data_type()));
        if !orderable || self.limit.is_some() {
            return None;
        }
        let mut node = self.clone();
        node.extremes = true;
        node.count_selected = count;
        let schema = match count {
            true => {
                let counted = Field::new(sift_scan::SELECTED_ROWS, DataType::UInt64, false);
                let fields: Vec<_> = (schema.fields().iter().cloned())
                    .chain([Arc::new(counted)])
                    .collect();
                SchemaRef::new(Schema::new(fields))
            }
            false => schema,
        };
        // Two rows of extremes per block are not in any column's order.
        node.sorted = SortedColumns::default();
        node.properties = scan_properties(schema, self.partitions.len(), &node.sorted, None);
        node.metrics = ExecutionPlanMetricsSet::new();
        Some(node)
    }

    /// The scanned columns: the schema without the count of [`with_extremes`]
    /// (`count` true), which no file holds.
    ///
    /// [`with_extremes`]: SiftScanExec::with_extremes
    fn columns_schema(&self) -> SchemaRef {
        let schema = self.schema();
        match self.count_selected {
            false => schema,
            true => {
                let columns: Vec<usize> = (0..schema.fields().len().saturating_sub(1)).collect();
                schema.project(&columns).map_or(schema, SchemaRef::new)
            }
        }
    }

    /// The returned columns (positions) sorted in every partition ([`sorted_columns`]),
    /// declared to DataFusion or not.
    pub(crate) fn sorted(&self) -> &[usize] {
        &self.sorted.all
    }

    /// Whether the returned column `c`'s blocks' zone maps follow one another without
    /// overlapping, in the blocks' order, ascending or descending: a sorted column, and
    /// also one a writer sorted (or that arrives in order, such as a key) without saying
    /// so, which a Parquet writer rarely does. Its equal values lie together, at least
    /// from block to block.
    pub(crate) fn clustered(&self, c: usize) -> bool {
        let zones = block_zones(
            &self.files,
            &self.all_blocks(),
            self.schema().field(c).name(),
        );
        following(&zones).is_some()
    }

    /// The zone maps of the returned column `c` where it is [`clustered`](Self::clustered)
    /// and holds no null. `None` where a block has nulls or bounds that are not 64-bit
    /// integers, or the scan returns its rows last first.
    pub(crate) fn clustered_zones(&self, c: usize) -> Option<ClusteredZones> {
        if self.reversed() {
            return None;
        }
        let name = self.schema().field(c).name().clone();
        let zones = block_zones(&self.files, &self.all_blocks(), &name);
        let descending = following(&zones)?;
        let mut bounds = zones.iter().map(|z| {
            let z = z.as_deref().filter(|z| z.null_count == 0)?;
            let (Some(Scalar::Int(lo)), Some(Scalar::Int(hi))) = (&z.min, &z.max) else {
                return None;
            };
            Some((i64::try_from(*lo).ok()?, i64::try_from(*hi).ok()?))
        });
        let partitions = (self.partitions.iter())
            .map(|blocks| {
                bounds
                    .by_ref()
                    .take(blocks.len())
                    .collect::<Option<Vec<_>>>()
            })
            .collect::<Option<Vec<_>>>()?;
        Some(ClusteredZones {
            descending,
            partitions,
        })
    }

    /// Whether every scanned file found its sorted columns so from their values
    /// ([`Table::sorted_from_values`](sift_scan::Table::sorted_from_values)).
    fn sorted_from_values(&self) -> bool {
        self.scanned_files().all(|f| f.table.sorted_from_values())
    }

    /// Whether DataFusion is told of [`SiftScanExec::sorted`].
    pub(crate) fn declares_sorted(&self) -> bool {
        self.declared.is_some()
    }

    /// Whether the scan returns its rows last first ([`SiftScanExec::with_declared_order`]).
    pub(crate) fn reversed(&self) -> bool {
        self.declared.is_some_and(|o| o.descending)
    }

    /// What decides the rows and columns the scan returns, for telling two scans apart
    /// ([`SharedSubplans`](crate::SharedSubplans)): its text shortens a long list of
    /// files, so every file scanned and the blocks of each partition are spelled out.
    pub(crate) fn identity(&self) -> String {
        let files: Vec<String> = (self.scanned_files())
            .map(|f| f.table.path().display().to_string())
            .collect();
        format!(
            "{files:?} {:?} {:?} {:?} {:?} {:?} {:?} {} {} {:?}",
            self.partitions,
            self.projection,
            self.filter,
            self.limit,
            self.dictionary,
            self.unscaled,
            self.extremes,
            self.count_selected,
            self.declared
        )
    }

    /// The scan without the filters that operators above it fill in while the query runs
    /// (dynamic filters, join filters), which only spare rows those operators drop: what
    /// it returns then depends on its table and its own filter alone. `None` when it has
    /// none.
    pub(crate) fn without_runtime_filters(&self) -> Option<SiftScanExec> {
        if self.dynamic.is_empty() && self.join_filters.is_empty() {
            return None;
        }
        let mut node = self.clone();
        node.dynamic.clear();
        node.row_bounds.clear();
        node.awaited.clear();
        node.join_filters.clear();
        node.residual = Arc::new(AtomicBool::new(false));
        node.metrics = ExecutionPlanMetricsSet::new();
        Some(node)
    }

    /// The scan with its sorted columns declared to DataFusion in `order`, ascending or
    /// descending (its rows returned last first), for a sort above it that
    /// [`SortedScans`](crate::SortedScans) drops, without the dynamic filters that sort
    /// produced (`produced`: their expression ids), which nothing fills once it is gone,
    /// and returning at most `fetch` rows from each partition.
    pub(crate) fn with_declared_order(
        &self,
        produced: &[u64],
        fetch: Option<usize>,
        order: SortOptions,
    ) -> SiftScanExec {
        let mut node = self.clone();
        node.declared = Some(order);
        if order.descending != self.reversed() {
            node.partitions = (self.partitions.iter().rev())
                .map(|p| p.iter().rev().cloned().collect())
                .collect();
        }
        node.limit = match (self.limit, fetch) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        (node.dynamic).retain(|d| d.expression_id().is_none_or(|id| !produced.contains(&id)));
        node.properties = scan_properties(
            self.schema(),
            self.partitions.len(),
            &self.sorted,
            node.declared,
        );
        node.metrics = ExecutionPlanMetricsSet::new();
        node
    }

    /// The scan with its files read in the order of their least value of `column` (a
    /// position in its schema), where that makes the column sorted over all its blocks
    /// and it was not in the files' listed order, or else in the descending order of
    /// their greatest value, where that makes it sorted descending: files each sorted on
    /// a key but listed in another order (named by hour without zero padding, or by a
    /// random id as table formats name them) then serve a sort on it as one sorted file
    /// does. `None` otherwise, and for a scan that returns its rows last first.
    pub(crate) fn with_files_ordered_by(&self, column: usize) -> Option<SiftScanExec> {
        if self.reversed() || self.sorted.all.contains(&column) {
            return None;
        }
        let schema = self.schema();
        let name = schema.fields().get(column)?.name();
        // The zone maps of every filled block at once (`block_bounds` looks up each
        // file's schema per call). Only integer-like columns are found sorted
        // (`sorted_columns`).
        let filled: Vec<_> = (self.scanned.iter())
            .flat_map(|&f| {
                let table = &self.files.files[f].table;
                (0..table.num_blocks())
                    .filter(|&b| table.block_rows(b) > 0)
                    .map(move |b| (f, b))
            })
            .collect();
        // Each scanned file's least or greatest value (`None`: no filled block).
        let extreme_of = |max: bool| -> Option<Vec<(usize, Option<i128>)>> {
            let mut of: Vec<Option<i128>> = vec![None; self.files.files.len()];
            let bounds = block_bounds(&self.files, &filled, name, max);
            for (&(f, _), bound) in filled.iter().zip(bounds) {
                let Some(Scalar::Int(v)) = bound else {
                    return None;
                };
                of[f] = Some(of[f].map_or(v, |m| if max { m.max(v) } else { m.min(v) }));
            }
            Some(self.scanned.iter().map(|&f| (f, of[f])).collect())
        };
        // The files in the order of their least values, else of their greatest values
        // descending (stable, so files with equal values keep their order; empty ones
        // where they fall), when that is not the order they are in and makes the column
        // sorted that way.
        let reorder = |descending: bool| {
            let listed = extreme_of(descending)?;
            let mut scanned = listed.clone();
            match descending {
                false => scanned.sort_by_key(|&(_, v)| v),
                true => scanned.sort_by_key(|&(_, v)| std::cmp::Reverse(v)),
            }
            if scanned == listed {
                return None;
            }
            let scanned: Vec<usize> = scanned.into_iter().map(|(f, _)| f).collect();
            let partitions = split_blocks(&self.files.files, &scanned, self.partitions.len());
            let blocks: Vec<_> = (partitions.iter().flatten())
                .map(|b| (b.file, b.block))
                .collect();
            let sorted = sorted_columns(&self.files, &schema, &blocks);
            let found = sorted.all.contains(&column) && sorted.is_descending(column) == descending;
            found.then_some((scanned, partitions, sorted))
        };
        let (scanned, partitions, sorted) = reorder(false).or_else(|| reorder(true))?;
        let mut node = self.clone();
        node.properties = scan_properties(schema, partitions.len(), &sorted, self.declared);
        (node.scanned, node.partitions, node.sorted) = (scanned.into(), partitions, sorted);
        node.metrics = ExecutionPlanMetricsSet::new();
        Some(node)
    }

    /// The scan for the TopKs above it (`top_ks`, each by the expression id of its dynamic
    /// filter). Their bounds are tested on rows, not only against the zone maps: a TopK's
    /// threshold passes few rows once its heap is full, so the other columns are decoded
    /// only for the rows that can still enter it (a join's key range, which most rows
    /// pass, only skips blocks). Lineitem, one thread: `select * … order by l_shipdate
    /// limit 10` 37 -> 7.5 ms. And each
    /// partition reads its blocks best first by their zone maps on the first key
    /// (smallest least value first, or largest greatest value for a descending key), so
    /// the threshold is tight early and prunes the blocks after it: a descending TopK on
    /// a key the file holds nearly ascending starts at the last block instead of feeding
    /// every row to the heap. A scan that declares an order keeps it, its blocks in order,
    /// unless a TopK reads it through filters and projections only (nothing between
    /// relies on the order) on a first key it does not hold sorted: then the declaration
    /// goes (one thread, a key that rises with the sorted one: 702 -> 4.8 ms).
    pub(crate) fn with_top_ks(&self, top_ks: &[TopKFilter]) -> SiftScanExec {
        let mut node = self.clone();
        let mut first_key = None;
        for d in &self.dynamic {
            let Some(top_k) = (d.expression_id()).and_then(|id| top_ks.iter().find(|t| t.id == id))
            else {
                continue;
            };
            node.row_bounds.push(top_k.id);
            let key = d
                .children()
                .first()
                .and_then(|k| k.downcast_ref::<Column>().cloned());
            first_key = first_key.or(key.map(|k| (k, top_k)));
        }
        let declared = self.declared.is_some() && !self.sorted.all.is_empty();
        let reorder = first_key.as_ref().is_some_and(|(key, top_k)| {
            let held =
                (self.schema().index_of(key.name())).is_ok_and(|c| self.sorted.all.contains(&c));
            !declared || (top_k.direct && !held)
        });
        if let (Some((key, top_k)), true) = (first_key, reorder) {
            let (name, descending) = (key.name(), top_k.descending);
            for part in &mut node.partitions {
                let blocks: Vec<_> = part.iter().map(|b| (b.file, b.block)).collect();
                let bounds = block_bounds(&self.files, &blocks, name, descending);
                let mut order: Vec<usize> = (0..part.len()).collect();
                // Blocks without a bound last; ties keep the file order.
                order.sort_by(|&x, &y| match (&bounds[x], &bounds[y]) {
                    (Some(a), Some(b)) => {
                        let ord = scalar_cmp(a, b).unwrap_or(std::cmp::Ordering::Equal);
                        if descending { ord.reverse() } else { ord }
                    }
                    (a, b) => b.is_some().cmp(&a.is_some()),
                });
                *part = order.into_iter().map(|i| part[i].clone()).collect();
            }
            // The blocks are no longer in the order the sorted columns were found in.
            node.sorted = SortedColumns::default();
            node.declared = None;
            let none = &node.sorted;
            node.properties = scan_properties(self.schema(), node.partitions.len(), none, None);
        }
        node.metrics = ExecutionPlanMetricsSet::new();
        node
    }

    /// Whether a dynamic filter of the scan has its bounds tested on rows
    /// ([`SiftScanExec::with_top_ks`]).
    pub(crate) fn has_row_bounds(&self) -> bool {
        !self.row_bounds.is_empty()
    }

    /// The scan waiting for those of its dynamic filters that hash joins produce
    /// (`produced`: their expression ids) before its first block; `None` when it holds
    /// none of them.
    fn awaiting(&self, produced: &HashSet<u64>) -> Option<SiftScanExec> {
        let awaited: Vec<u64> = (self.dynamic.iter())
            .filter_map(|d| d.expression_id())
            .filter(|id| produced.contains(id))
            .collect();
        if awaited.is_empty() || awaited == self.awaited {
            return None;
        }
        let mut node = self.clone();
        node.awaited = awaited;
        node.metrics = ExecutionPlanMetricsSet::new();
        Some(node)
    }

    /// Statistics of the scanned columns over every block, before any filter: bounds that
    /// hold for every row the scan can return.
    pub(crate) fn bounds(&self) -> Statistics {
        self.blocks_statistics(&self.all_blocks())
    }

    /// Every block the scan reads, as (file, block), over all partitions.
    fn all_blocks(&self) -> Vec<(usize, usize)> {
        (self.partitions.iter().flatten())
            .map(|b| (b.file, b.block))
            .collect()
    }

    /// Statistics of the scanned columns over `blocks` (file, block), before any filter.
    fn blocks_statistics(&self, blocks: &[(usize, usize)]) -> Statistics {
        let stats = blocks_statistics(&self.files, &self.table_schema, blocks);
        match &self.projection {
            Some(p) => stats.project(Some(p)),
            None => stats,
        }
    }

    /// The `LIMIT` pushed into the scan.
    pub(crate) fn limit(&self) -> Option<usize> {
        self.limit
    }

    /// The files scanned, in order.
    fn scanned_files(&self) -> impl Iterator<Item = &TableFile> {
        self.scanned.iter().map(|&f| &self.files.files[f])
    }

    /// Rows in the files scanned, before any filter.
    pub(crate) fn total_rows(&self) -> u64 {
        self.scanned_files().map(|f| f.table.num_rows()).sum()
    }

    /// Scans of the files for `column` alone, with the scan's filter and `more` (for
    /// collecting a join's keys: the join filters of the scan, those on columns a file
    /// lacks left out there), each with the file's path.
    pub(crate) fn column_scans(
        &self,
        column: &str,
        more: &[Filter],
    ) -> Result<Vec<(FileScan, String)>> {
        let field = self.table_schema.field_with_name(column)?;
        let schema = SchemaRef::new(Schema::new(vec![field.clone()]));
        let mut scans = Vec::new();
        for file in self.scanned_files() {
            let path = file.table.path().display().to_string();
            let file_schema = file.table.schema();
            let filters = (self.filter.iter())
                .chain(more.iter().filter(|e| in_file(e, &file_schema)))
                .cloned()
                .collect();
            let filter = Filter::all(filters);
            let scan = self
                .files
                .scan(file, schema.clone(), filter.as_ref(), |b| b)?;
            scans.extend(scan.map(|s| (s, path)));
        }
        Ok(scans)
    }

    /// The files scanned, for display: all of them when few, else the first two.
    pub(crate) fn file_names(&self) -> String {
        let files: Vec<String> = self
            .scanned_files()
            .map(|x| x.table.path().display().to_string())
            .collect();
        match files.len() {
            0..=3 => files.join(", "),
            n => format!("{}, … ({n} files)", files[..2].join(", ")),
        }
    }

    fn column_names(&self) -> Vec<String> {
        let schema = self.columns_schema();
        schema.fields().iter().map(|f| f.name().clone()).collect()
    }
}

/// Whether every column `e` reads is in `file_schema`. Dynamic and join filters only spare
/// rows the operators above would drop, so those on columns a file lacks (partition
/// columns among them) are left out for that file.
fn in_file(e: &Filter, file_schema: &Schema) -> bool {
    (e.columns().iter()).all(|c| file_schema.field_with_name(c).is_ok())
}

/// The plan properties of a scan returning `schema` from `partitions` partitions, with
/// the columns `sorted` (positions) in each partition in the `order` declared, if any.
fn scan_properties(
    schema: SchemaRef,
    partitions: usize,
    sorted: &SortedColumns,
    order: Option<SortOptions>,
) -> Arc<PlanProperties> {
    // One ordering per column: DataFusion takes a column's order from the first ordering
    // that names it, so a second with the nulls placed otherwise would go unused.
    let columns = &schema;
    let orderings = order.into_iter().flat_map(|order| {
        (sorted.all.iter()).map(move |&i| {
            let column: Arc<dyn PhysicalExpr> = Arc::new(Column::new(columns.field(i).name(), i));
            // A column sorted descending reads the other way.
            let descending = order.descending != sorted.is_descending(i);
            [PhysicalSortExpr::new(
                column,
                SortOptions {
                    descending,
                    ..order
                },
            )]
        })
    });
    let equivalences = EquivalenceProperties::new_with_orderings(Arc::clone(&schema), orderings);
    Arc::new(PlanProperties::new(
        equivalences,
        Partitioning::UnknownPartitioning(partitions),
        EmissionType::Incremental,
        Boundedness::Bounded,
    ))
}

/// A TopK (a sort with a `LIMIT`) whose dynamic filter reaches a scan
/// ([`SiftScanExec::with_top_ks`]).
pub(crate) struct TopKFilter {
    /// The expression id of its dynamic filter.
    pub(crate) id: u64,
    /// Whether its first key is descending.
    pub(crate) descending: bool,
    /// Whether it reads the scan through filters and projections only.
    pub(crate) direct: bool,
}

/// How `zones` (in the blocks' order) follow one another: `Some(descending)`, ascending
/// tried first; `None` where they do neither ([`ChunkStats::follow_over`]).
fn following(zones: &[Option<Cow<'_, ChunkStats>>]) -> Option<bool> {
    [false, true]
        .into_iter()
        .find(|&descending| ChunkStats::follow_over(zones.iter().map(Option::as_deref), descending))
}

/// The zone maps of a column whose blocks follow one another
/// ([`SiftScanExec::clustered_zones`]).
#[derive(Debug)]
pub(crate) struct ClusteredZones {
    /// Whether the blocks descend.
    pub(crate) descending: bool,
    /// Per partition, each block's (least, greatest) value, in the scan's order.
    pub(crate) partitions: Vec<Vec<(i64, i64)>>,
}

/// One block of a partition: its file, its index there, and its rows in that file.
#[derive(Debug, Clone)]
struct PartBlock {
    file: usize,
    block: usize,
    rows: Range<u64>,
}

/// Splits the blocks of the files `scanned` into at most `n` runs of consecutive blocks
/// with about equal row counts; a partition never starts inside a block.
fn split_blocks(files: &[TableFile], scanned: &[usize], n: usize) -> Vec<Vec<PartBlock>> {
    let mut blocks = Vec::new();
    for &f in scanned {
        let file = &files[f];
        let mut first = 0u64;
        for b in 0..file.table.num_blocks() {
            let end = first + file.table.block_rows(b);
            blocks.push(PartBlock {
                file: f,
                block: b,
                rows: first..end,
            });
            first = end;
        }
    }
    let total: u64 = blocks.iter().map(|b| b.rows.end - b.rows.start).sum();
    let n = n.clamp(1, blocks.len().max(1));
    // Start the next partition once this one holds its share of the rows.
    let share = total.div_ceil(n as u64).max(1);
    let mut out: Vec<Vec<PartBlock>> = vec![Vec::new()];
    let mut done = 0u64;
    for block in blocks {
        let current = out.len() as u64;
        if done >= share * current && out.len() < n && out.last().is_some_and(|p| !p.is_empty()) {
            out.push(Vec::new());
        }
        done += block.rows.end - block.rows.start;
        if let Some(p) = out.last_mut() {
            p.push(block);
        }
    }
    out
}

/// The row ranges of a partition's blocks, per file: consecutive blocks of one file form
/// one range.
fn row_ranges(blocks: &[PartBlock]) -> Vec<(usize, Range<u64>)> {
    let mut out: Vec<(usize, Range<u64>)> = Vec::new();
    for b in blocks {
        match out.last_mut() {
            Some((f, r)) if *f == b.file && r.end == b.rows.start => r.end = b.rows.end,
            _ => out.push((b.file, b.rows.clone())),
        }
    }
    out
}

impl DisplayAs for SiftScanExec {
    fn fmt_as(&self, t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        let files = self.file_names();
        match t {
            DisplayFormatType::TreeRender => write!(f, "files={files}"),
            DisplayFormatType::Default | DisplayFormatType::Verbose => {
                write!(
                    f,
                    "SiftScan: files=[{files}], partitions={}, projection=[{}]",
                    self.partitions.len(),
                    self.column_names().join(", ")
                )?;
                if let Some(filter) = &self.filter {
                    write!(f, ", filter=[{filter}]")?;
                }
                if !self.dynamic.is_empty() {
                    let now: Vec<String> = self.dynamic.iter().map(|d| d.to_string()).collect();
                    write!(f, ", dynamic_filters=[{}]", now.join(", "))?;
                }
                if !self.row_bounds.is_empty() {
                    write!(f, ", row_bounds")?;
                }
                if !self.awaited.is_empty() {
                    write!(f, ", after_builds")?;
                }
                if !self.join_filters.is_empty() {
                    let j: Vec<String> = self.join_filters.iter().map(|j| j.to_string()).collect();
                    write!(f, ", join_filters=[{}]", j.join(", "))?;
                }
                if let Some(limit) = self.limit {
                    write!(f, ", limit={limit}")?;
                }
                if self.extremes {
                    write!(f, ", extremes_only")?;
                }
                if self.count_selected {
                    write!(f, ", count_selected")?;
                }
                if self.residual.load(Ordering::Relaxed) {
                    write!(f, ", dynamic_residual")?;
                }
                if self.reversed() {
                    write!(f, ", reversed")?;
                }
                Ok(())
            }
        }
    }
}

impl ExecutionPlan for SiftScanExec {
    fn name(&self) -> &str {
        "SiftScanExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![]
    }

    /// The dynamic filters the scan consumes: a hash join fills its filter only when it
    /// finds the filter among the expressions of its probe side.
    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        apply_expression_roots(&self.dynamic, f)
    }

    fn replace_children(
        self: Arc<Self>,
        _: Vec<Arc<dyn ExecutionPlan>>,
        _: ReplaceChildrenOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        Ok(self)
    }

    fn with_new_children(
        self: Arc<Self>,
        _: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        Ok(self)
    }

    fn execute(
        &self,
        partition: usize,
        _context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let blocks = self.partitions.get(partition).ok_or_else(|| {
            DataFusionError::Internal(format!(
                "SiftScanExec has {} partitions, not {partition}",
                self.partitions.len()
            ))
        })?;
        let counters = Counters::new(&self.metrics, partition);
        // With dynamic filters every block gets its own scan, with the filters as they
        // stand when it starts (a TopK's threshold tightens as rows arrive); a reversed
        // scan reverses each block.
        let runs = match self.dynamic.is_empty() && !self.reversed() {
            true => row_ranges(blocks),
            false => blocks.iter().map(|b| (b.file, b.rows.clone())).collect(),
        };
        let scan = PartitionScan {
            files: self.files.clone(),
            runs: runs.into(),
            schema: self.columns_schema(),
            filter: self.filter.clone(),
            dynamic: self.dynamic.clone(),
            row_bounds: self.row_bounds.clone(),
            join_filters: self.join_filters.clone(),
            dictionary: self.dictionary.clone(),
            unscaled: self.unscaled.clone(),
            extremes: self.extremes,
            count_selected: self.count_selected,
            table_schema: self.table_schema.clone(),
            remaining: self.limit.map(|l| l as u64),
            current: None,
            residual: Vec::new(),
            residual_rows: (0, 0),
            residual_off: !self.residual.load(Ordering::Relaxed),
            ordered: match self.declared.is_some() && !self.sorted_from_values() {
                true => (self.sorted.all.iter())
                    .map(|&c| (c, self.sorted.is_descending(c), None))
                    .collect(),
                false => Vec::new(),
            },
            reversed: self.reversed(),
            pending: Vec::new(),
            counters,
        };
        // The hash joins' filters this scan waits for, complete once every partition of
        // their build side is in (a join that drops every row of an empty build side
        // still completes its filter).
        let awaited: Vec<Arc<dyn PhysicalExpr>> = (self.dynamic.iter())
            .filter(|d| {
                d.expression_id()
                    .is_some_and(|id| self.awaited.contains(&id))
            })
            .cloned()
            .collect();
        let batches = futures::stream::once(async move {
            for d in &awaited {
                if let Some(d) = d.downcast_ref::<DynamicFilterPhysicalExpr>() {
                    d.wait_complete().await;
                }
            }
            futures::stream::iter(scan)
        })
        .flatten();
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            self.schema(),
            batches,
        )))
    }

    /// Takes the dynamic filters among the filters of the plan above (the static ones
    /// reached the scan through [`SiftTable`](crate::SiftTable) already, or stay above it).
    /// None is reported as pushed: the operators that made them still filter their rows.
    fn handle_child_pushdown_result(
        &self,
        _phase: FilterPushdownPhase,
        child_pushdown_result: ChildPushdownResult,
        _config: &ConfigOptions,
    ) -> Result<FilterPushdownPropagation<Arc<dyn ExecutionPlan>>> {
        let filters: Vec<Arc<dyn PhysicalExpr>> = child_pushdown_result
            .parent_filters
            .into_iter()
            .map(|f| f.filter)
            .collect();
        let results = vec![PushedDown::No; filters.len()];
        let dynamic: Vec<Arc<dyn PhysicalExpr>> = filters
            .into_iter()
            .filter(|f| f.downcast_ref::<DynamicFilterPhysicalExpr>().is_some())
            .collect();
        let mut propagation = FilterPushdownPropagation::with_parent_pushdown_result(results);
        if !dynamic.is_empty() {
            let mut node = self.clone();
            node.dynamic.extend(dynamic);
            node.metrics = ExecutionPlanMetricsSet::new();
            propagation = propagation.with_updated_node(Arc::new(node) as Arc<dyn ExecutionPlan>);
        }
        Ok(propagation)
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }

    fn statistics_from_inputs(
        &self,
        _input_stats: &[Arc<Statistics>],
        args: &StatisticsArgs,
    ) -> Result<Arc<Statistics>> {
        // Two rows per block with selected rows: nothing to say of them in advance.
        if self.extremes {
            return Ok(Arc::new(Statistics::new_unknown(&self.schema())));
        }
        let blocks: Vec<(usize, usize)> = match args.partition() {
            Some(p) => self
                .partitions
                .get(p)
                .map_or_else(Vec::new, |p| p.iter().map(|b| (b.file, b.block)).collect()),
            None => self.all_blocks(),
        };
        let mut stats = self.blocks_statistics(&blocks);
        if self.filter.is_some() || !self.join_filters.is_empty() {
            stats = stats.to_inexact();
        }
        if let (Some(share), Some(_)) = (self.selectivity, &self.filter) {
            stats.num_rows = stats.num_rows.with_estimated_selectivity(share);
            stats.total_byte_size = stats.total_byte_size.with_estimated_selectivity(share);
        }
        if let Some(limit) = self.limit {
            stats = stats.with_fetch(Some(limit), 0, 1)?;
        }
        Ok(Arc::new(stats))
    }
}

/// The counters of every Sift scan in an executed `plan` (blocks read and pruned, rows
/// scanned and passed on, values decoded, bytes read, scans with dynamic or join filters),
/// one map per scan, each summed over its partitions.
pub fn scan_counters(plan: &Arc<dyn ExecutionPlan>) -> Vec<BTreeMap<String, usize>> {
    let mut out = Vec::new();
    let mut stack = vec![Arc::clone(plan)];
    // A subplan computed once for several readers is below each of them.
    let mut counted = HashSet::new();
    while let Some(p) = stack.pop() {
        if p.downcast_ref::<SiftScanExec>().is_some()
            && counted.insert(Arc::as_ptr(&p).cast::<()>())
            && let Some(m) = p.metrics()
        {
            let mut scan = BTreeMap::new();
            for metric in m.iter() {
                *scan.entry(metric.value().name().to_string()).or_default() +=
                    metric.value().as_usize();
            }
            out.push(scan);
        }
        stack.extend(p.children().into_iter().cloned());
    }
    out
}

/// [`scan_counters`] summed over all the plan's Sift scans.
pub fn summed_scan_counters(plan: &Arc<dyn ExecutionPlan>) -> BTreeMap<String, usize> {
    let mut sums = BTreeMap::new();
    for (name, n) in scan_counters(plan).into_iter().flatten() {
        *sums.entry(name).or_default() += n;
    }
    sums
}

/// What the scans of one partition did, as DataFusion metrics (`EXPLAIN ANALYZE`).
struct Counters {
    blocks: Count,
    blocks_pruned: Count,
    rows_scanned: Count,
    rows_matched: Count,
    values_decoded: Count,
    bytes_read: Count,
    /// Scans started with a dynamic filter in force.
    dynamic_filters: Count,
    /// Rows the parts of dynamic filters the scan cannot evaluate itself were tested on,
    /// and rows they dropped from its batches ([`PartitionScan::residual`]).
    rows_tested_dynamic: Count,
    rows_dropped_dynamic: Count,
    /// Scans started with a join filter in force.
    join_filters: Count,
}

impl Counters {
    fn new(metrics: &ExecutionPlanMetricsSet, partition: usize) -> Counters {
        let c = |name: &'static str| MetricBuilder::new(metrics).counter(name, partition);
        Counters {
            blocks: c("blocks"),
            blocks_pruned: c("blocks_pruned"),
            rows_scanned: c("rows_scanned"),
            rows_matched: c("rows_matched"),
            values_decoded: c("values_decoded"),
            bytes_read: c("bytes_read"),
            dynamic_filters: c("dynamic_filters"),
            rows_tested_dynamic: c("rows_tested_dynamic"),
            rows_dropped_dynamic: c("rows_dropped_dynamic"),
            join_filters: c("join_filters"),
        }
    }

    fn add(&self, s: &ScanStats) {
        let n = |v: u64| usize::try_from(v).unwrap_or(usize::MAX);
        self.blocks.add(n(s.blocks_total));
        self.blocks_pruned.add(n(s.blocks_pruned));
        self.rows_scanned.add(n(s.rows_scanned));
        self.rows_matched.add(n(s.rows_matched));
        self.values_decoded.add(n(s.values_decoded));
        self.bytes_read.add(n(s.bytes_read));
    }
}

/// The batches of one partition: one Sift scan per run of blocks, one after the other.
/// Each `next` reads one block on the calling thread (the engine is synchronous; DataFusion
/// polls each partition from its own worker).
struct PartitionScan {
    files: Arc<TableFiles>,
    /// Runs of blocks: a file (its position in `files`) and rows of it.
    runs: VecDeque<(usize, Range<u64>)>,
    /// The columns returned.
    schema: SchemaRef,
    filter: Option<Filter>,
    dynamic: Vec<Arc<dyn PhysicalExpr>>,
    row_bounds: Vec<u64>,
    join_filters: Vec<JoinFilter>,
    dictionary: Vec<String>,
    unscaled: Vec<String>,
    extremes: bool,
    count_selected: bool,
    table_schema: SchemaRef,
    remaining: Option<u64>,
    current: Option<(FileScan, Arc<std::path::Path>)>,
    /// The conjuncts of the dynamic filters that do not translate into Sift's filters (a
    /// hash join's lookup in its hash table), evaluated by DataFusion on each batch the
    /// scan returns where [`SiftScanExec::residual`] says so.
    residual: Vec<Arc<dyn PhysicalExpr>>,
    /// Rows the residual conjuncts were evaluated on and kept.
    residual_rows: (u64, u64),
    /// Set once the residual conjuncts keep most rows: then they cost more than they
    /// spare, and the operator above evaluates the same test anyway.
    residual_off: bool,
    /// The columns declared sorted to DataFusion (positions in the batches), each with
    /// whether it is sorted descending and the last value returned, where a file only
    /// declares them so: checked as the rows pass ([`check_order`]).
    ordered: Vec<(usize, bool, Option<ArrayRef>)>,
    /// Whether the rows go last first ([`SiftScanExec::reversed`]): then each run is one
    /// block, read whole into `pending` before its batches go, the last first, each
    /// reversed.
    reversed: bool,
    pending: Vec<(RecordBatch, Arc<std::path::Path>)>,
    counters: Counters,
}

impl PartitionScan {
    /// Starts the scan of a run (none when the file's partition values rule it out).
    fn start(&mut self, f: usize, rows: Range<u64>) -> Result<()> {
        let file = &self.files.files[f];
        let path: Arc<std::path::Path> = file.table.path().into();
        let file_schema = file.table.schema();
        let applies = |e: &Filter| in_file(e, &file_schema);
        let mut filters: Vec<Filter> = self.filter.iter().cloned().collect();
        // A dynamic filter's key lists (a hash join's few build keys, as `IN`) are tested on
        // rows, and so are a TopK's bounds (`row_bounds`); other bounds (a join's key
        // range) only skip blocks, since a range that most rows pass costs a row-level
        // test and a selection on every block. Conjuncts that do not translate (a hash
        // table lookup) are left out (a dynamic filter only spares rows the operators above
        // drop anyway), or evaluated on the batches where the plan asks for it
        // (`residual`).
        let mut prune = Vec::new();
        self.residual.clear();
        for d in &self.dynamic {
            let on_rows = d
                .expression_id()
                .is_some_and(|id| self.row_bounds.contains(&id));
            let now = snapshot_physical_expr(Arc::clone(d))?;
            let mut used = false;
            for c in split_conjunction(&now) {
                let Some(f) = physical_to_sift(c, &self.table_schema).filter(applies) else {
                    if self.residual_applies(c) {
                        self.residual.push(Arc::clone(c));
                    }
                    continue;
                };
                used = true;
                match c.downcast_ref::<InListExpr>().is_some() || on_rows {
                    true => filters.push(f),
                    false => prune.push(f),
                }
            }
            if used {
                self.counters.dynamic_filters.add(1);
            }
        }
        let prune = Filter::all(prune);
        // Smallest source first (`with_join_filters` keeps them so), until they pass few
        // enough rows that the rest would not pay for their keys ([`NARROW`]).
        // Of those collected, the most selective are kept until they are that narrow: a
        // filter that passes a fifth of the rows costs a probe of every row (of its key
        // column decoded whole) where the narrow one leaves it almost nothing to drop.
        let (mut share, mut taken) = (1.0, Vec::new());
        for j in &self.join_filters {
            if share <= NARROW {
                break;
            }
            let (f, passed) = j.filter()?;
            if let Some(f) = f.filter(applies) {
                taken.push((passed, f));
                share *= passed;
            }
        }
        taken.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut share = 1.0;
        for (passed, f) in taken {
            if share <= NARROW {
                break;
            }
            self.counters.join_filters.add(1);
            filters.push(f);
            share *= passed;
        }
        let filter = Filter::all(filters);
        // A reversed scan returns a block's last rows: the limit is applied once they are.
        let remaining = self.remaining.filter(|_| !self.reversed);
        let (extremes, count) = (self.extremes, self.count_selected);
        // Columns the file lacks come as constants, read as nothing.
        let in_file = |names: &[String]| -> Vec<String> {
            (names.iter())
                .filter(|c| file_schema.field_with_name(c).is_ok())
                .cloned()
                .collect()
        };
        let (dictionary, unscaled) = (in_file(&self.dictionary), in_file(&self.unscaled));
        let scan = self
            .files
            .scan(file, self.schema.clone(), filter.as_ref(), |b| {
                let mut b = (b.rows(rows))
                    .read_dictionary(dictionary)
                    .read_unscaled(unscaled);
                if let Some(p) = prune {
                    b = b.prune_with(p);
                }
                if extremes {
                    b = b.extremes_only();
                }
                if count {
                    b = b.count_selected();
                }
                match remaining {
                    Some(n) => b.limit(n),
                    None => b,
                }
            })?;
        self.current = scan.map(|s| (s, path));
        Ok(())
    }
}

impl PartitionScan {
    /// Whether the conjunct `c` of a dynamic filter that Sift cannot evaluate is evaluated
    /// on the batches ([`PartitionScan::residual`]): not where they are not rows (extremes)
    /// or a limit stops the engine before it, not on columns read with another type than
    /// the plan's (dictionaries, unscaled decimals), and not once it kept most rows.
    fn residual_applies(&self, c: &Arc<dyn PhysicalExpr>) -> bool {
        // A filter not filled in yet is `true`: nothing to test, and a trial on it would
        // end the residual before the filter arrives.
        if c.downcast_ref::<Literal>().is_some() {
            return false;
        }
        let mut columns = Vec::new();
        let _ = c.apply(|e| {
            if let Some(col) = e.downcast_ref::<Column>() {
                columns.push(col.name().to_string());
            }
            Ok(TreeNodeRecursion::Continue)
        });
        let retyped =
            |name: &String| self.dictionary.contains(name) || self.unscaled.contains(name);
        !self.residual_off
            && !self.extremes
            && self.remaining.is_none()
            && !columns.iter().any(retyped)
    }

    /// `batch` without the rows the residual conjuncts reject. A conjunct that fails to
    /// evaluate is dropped: it only spares rows the operators above drop anyway.
    fn filter_residual(&mut self, batch: RecordBatch) -> RecordBatch {
        if self.residual.is_empty() || batch.num_rows() == 0 {
            return batch;
        }
        let mut keep: Option<BooleanArray> = None;
        let mut failed = false;
        for c in &self.residual {
            let Ok(mask) = c
                .evaluate(&batch)
                .and_then(|v| v.into_array(batch.num_rows()))
            else {
                failed = true;
                continue;
            };
            let Some(mask) = mask.as_boolean_opt() else {
                failed = true;
                continue;
            };
            keep = Some(match keep {
                None => mask.clone(),
                Some(k) => match and(&k, mask) {
                    Ok(both) => both,
                    Err(_) => k,
                },
            });
        }
        if failed {
            self.residual_off = true;
            self.residual.clear();
        }
        let Some(keep) = keep else {
            return batch;
        };
        let Ok(kept) = filter_record_batch(&batch, &keep) else {
            return batch;
        };
        let (rows, left) = (batch.num_rows() as u64, kept.num_rows() as u64);
        let n = |v: u64| usize::try_from(v).unwrap_or(usize::MAX);
        self.counters.rows_tested_dynamic.add(n(rows));
        self.counters.rows_dropped_dynamic.add(n(rows - left));
        let (tested, passed) = &mut self.residual_rows;
        (*tested, *passed) = (*tested + rows, *passed + left);
        // After a block's worth of rows, a test that keeps more than half is left to the
        // operator above.
        if *tested >= RESIDUAL_TRIAL_ROWS && 2 * *passed > *tested {
            self.residual_off = true;
            self.residual.clear();
        }
        kept
    }
}

/// The physical optimizer rule that marks the scans below an aggregate below the probe
/// side of a hash join (`dynamic_residual` in `--explain`): there the join's dynamic
/// filter, a lookup in its hash table, evaluated on the scan's batches spares the
/// aggregate the rows the join would drop (TPC-H Q20's lineitem grouped by part and
/// supplier, then semi-joined with a few thousand of those pairs: 75 -> 26 ms on one
/// core). A scan feeding the join directly is left alone:
/// there the lookup is the join's own probe done twice (Q21 151 -> 202 ms, Q7 57 -> 69 ms,
/// although they dropped most rows).
#[derive(Debug, Default)]
pub struct DynamicResiduals;

impl PhysicalOptimizerRule for DynamicResiduals {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        _config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        mark_residuals(&plan, Below::Nothing);
        Ok(plan)
    }

    fn name(&self) -> &str {
        "sift_dynamic_residuals"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// The physical optimizer rule that has each Sift scan holding a hash join's dynamic
/// filter wait until the join has its build side before reading a block
/// (`after_builds` in `--explain`). The join itself reads its probe side only then, but
/// what lies between may start the scan earlier: a `CoalescePartitionsExec` or
/// `RepartitionExec` on several partitions runs its inputs at once, and so TPC-H Q18's
/// scan of orders, below the build side of the join with lineitem and the probe side of
/// the semi join with the 57 large orders, read an eighth of orders before the filter
/// of those 57 keys came, and lineitem's scan then got the keys of those 187,500 orders
/// instead of 57, pruning none of its blocks. A TopK's or an aggregate's filter, which
/// tightens as the scan's own rows arrive, is not waited for; a join's is complete once
/// every partition of the join has its build side, which DataFusion's join waits for
/// too before it probes.
#[derive(Debug, Default)]
pub struct BuildSidesFirst;

impl PhysicalOptimizerRule for BuildSidesFirst {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        _config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let mut produced = HashSet::new();
        plan.apply(|node| {
            if let Some(join) = node.downcast_ref::<HashJoinExec>() {
                let filters = join.dynamic_expressions_produced();
                produced.extend(filters.iter().filter_map(|e| e.expression_id()));
            }
            Ok(TreeNodeRecursion::Continue)
        })?;
        if produced.is_empty() {
            return Ok(plan);
        }
        plan.transform_up(|node| {
            let scan = node.downcast_ref::<SiftScanExec>();
            match scan.and_then(|s| s.awaiting(&produced)) {
                Some(scan) => Ok(Transformed::yes(Arc::new(scan) as Arc<dyn ExecutionPlan>)),
                None => Ok(Transformed::no(node)),
            }
        })
        .data()
    }

    fn name(&self) -> &str {
        "sift_build_sides_first"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// What lies above a node, for [`DynamicResiduals`].
#[derive(Clone, Copy, PartialEq)]
enum Below {
    Nothing,
    /// The probe side of a hash join, no aggregate in between.
    Join,
    /// An aggregate below the probe side of a hash join.
    JoinAggregate,
}

/// Marks the scans of `node`'s tree that lie below a join and an aggregate (`below`: what
/// lies above `node`).
fn mark_residuals(node: &Arc<dyn ExecutionPlan>, below: Below) {
    if let Some(scan) = node.downcast_ref::<SiftScanExec>() {
        if below == Below::JoinAggregate {
            scan.residual.store(true, Ordering::Relaxed);
        }
        return;
    }
    let join = node.downcast_ref::<HashJoinExec>().is_some();
    let aggregate = node.downcast_ref::<AggregateExec>().is_some()
        || node.downcast_ref::<SiftAggregateExec>().is_some();
    for (i, child) in node.children().into_iter().enumerate() {
        let below = match below {
            // A hash join's dynamic filter goes to its probe side, the second child.
            _ if join && i == 1 => Below::Join,
            Below::Join if aggregate => Below::JoinAggregate,
            other => other,
        };
        mark_residuals(child, below);
    }
}

/// Rows the residual conjuncts of dynamic filters are tried on before the scan judges
/// whether they drop enough ([`PartitionScan::filter_residual`]).
const RESIDUAL_TRIAL_ROWS: u64 = 1 << 16;

/// Checks that the columns of `batch` declared sorted (`ordered`: positions, each with
/// whether it is sorted descending and the last value returned before) hold no null and
/// never decrease (a descending one never increases; the other way round where the rows
/// come last first, `reversed`), within the batch and from the one before. DataFusion
/// drops sorts and aggregates as a stream on the declaration, and a Parquet file's
/// `sorting_columns` are only its writer's word: a file whose rows break it is an error,
/// not rows out of order. One pass over each such column of the rows returned.
fn check_order(
    ordered: &mut [(usize, bool, Option<ArrayRef>)],
    batch: &RecordBatch,
    path: &std::path::Path,
    reversed: bool,
) -> Result<()> {
    for (c, declared_descending, last) in ordered {
        let descending = reversed != *declared_descending;
        let (column, n) = (batch.column(*c), batch.num_rows());
        if n == 0 {
            continue;
        }
        let broken = |what: &str| {
            let name = batch.schema_ref().field(*c).name().clone();
            DataFusionError::Execution(format!(
                "cannot scan {}: column {name} is declared sorted by the file, but {what}",
                path.display()
            ))
        };
        if column.null_count() > 0 {
            return Err(broken("it holds a null"));
        }
        // Read last first, the file's values decrease where they rise, and the other way.
        let within = downcast_primitive_array!(
            column => match descending {
                false => !column.values().is_sorted(),
                true => !column.values().iter().rev().is_sorted(),
            },
            _ => {
                let (earlier, later) = (column.slice(0, n - 1), column.slice(1, n - 1));
                let (below, above) = if descending { (earlier, later) } else { (later, earlier) };
                n > 1 && lt(&below, &above)?.true_count() > 0
            }
        );
        let options = SortOptions {
            descending,
            ..SortOptions::default()
        };
        let across = match last {
            Some(prev) => make_comparator(prev.as_ref(), column.as_ref(), options)?(0, 0).is_gt(),
            None => false,
        };
        if within || across {
            return Err(broken(match declared_descending {
                false => "its values decrease",
                true => "its values increase",
            }));
        }
        *last = Some(column.slice(n - 1, 1));
    }
    Ok(())
}

pub(crate) fn scan_error(path: &std::path::Path, e: sift_scan::Error) -> DataFusionError {
    DataFusionError::External(format!("cannot scan {}: {e}", path.display()).into())
}

impl PartitionScan {
    /// `batch` on its way out: cut at the limit, its declared columns checked, the
    /// residual conjuncts applied.
    fn emit(&mut self, batch: RecordBatch, path: &std::path::Path) -> Result<RecordBatch> {
        let batch = match self.remaining {
            Some(r) if batch.num_rows() as u64 > r => batch.slice(0, r as usize),
            _ => batch,
        };
        if let Some(r) = &mut self.remaining {
            *r = r.saturating_sub(batch.num_rows() as u64);
        }
        if let Err(e) = check_order(&mut self.ordered, &batch, path, self.reversed) {
            return Err(self.stop(e));
        }
        Ok(self.filter_residual(batch))
    }

    /// Ends the scan with the error `e`.
    fn stop(&mut self, e: DataFusionError) -> DataFusionError {
        self.runs.clear();
        self.current = None;
        self.pending.clear();
        e
    }
}

/// `batch` with its rows in reverse order.
fn reversed_rows(batch: &RecordBatch) -> Result<RecordBatch> {
    let n = u32::try_from(batch.num_rows())
        .map_err(|_| DataFusionError::Internal("a batch of over 4 G rows".into()))?;
    let last_first = UInt32Array::from_iter_values((0..n).rev());
    Ok(take_record_batch(batch, &last_first)?)
}

impl Iterator for PartitionScan {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Result<RecordBatch>> {
        loop {
            if self.remaining == Some(0) {
                // Stopped at the limit: what the scan did so far still counts.
                if let Some((scan, _)) = self.current.take() {
                    self.counters.add(scan.stats());
                }
                return None;
            }
            if let Some((scan, path)) = &mut self.current {
                match scan.next() {
                    Some(Ok(batch)) if self.reversed => match reversed_rows(&batch) {
                        Ok(batch) => self.pending.push((batch, Arc::clone(path))),
                        Err(e) => return Some(Err(self.stop(e))),
                    },
                    Some(Ok(batch)) => {
                        let path = Arc::clone(path);
                        return Some(self.emit(batch, &path));
                    }
                    Some(Err(e)) => {
                        let e = scan_error(path, e);
                        return Some(Err(self.stop(e)));
                    }
                    None => {
                        self.counters.add(scan.stats());
                        self.current = None;
                    }
                }
                continue;
            }
            if let Some((batch, path)) = self.pending.pop() {
                return Some(self.emit(batch, &path));
            }
            let (file, rows) = self.runs.pop_front()?;
            if let Err(e) = self.start(file, rows) {
                return Some(Err(self.stop(e)));
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::expect_used)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{BooleanArray, Int64Array};
    use datafusion::arrow::datatypes::Int64Type;

    /// A declared column that decreases inside a batch, from one batch to the next, or
    /// holds a null is an error naming the file and the column; equal neighbours are not.
    #[test]
    fn declared_order_is_checked_within_and_across_batches() {
        let path = std::path::Path::new("dir/f.parquet");
        let batch = |a: ArrayRef| RecordBatch::try_from_iter([("k", a)]).expect("batch");
        let ints = |v: Vec<Option<i64>>| batch(Arc::new(Int64Array::from(v)));
        // The batches in turn, their values taken last first with `descending`.
        let run = |batches: &[RecordBatch], descending: bool| {
            let mut ordered = vec![(0, false, None)];
            (batches.iter()).try_for_each(|b| check_order(&mut ordered, b, path, descending))
        };
        let some = |v: &[i64]| ints(v.iter().copied().map(Some).collect());
        let down = |v: &[i64]| some(&v.iter().rev().copied().collect::<Vec<_>>());
        let good = [some(&[1, 2, 2, 5]), some(&[5, 7]), some(&[]), some(&[9])];
        let bad = [
            vec![some(&[1, 3, 2])],
            vec![some(&[1, 2, 5]), some(&[4, 6])],
            vec![some(&[1, 2]), some(&[]), some(&[1])],
            vec![ints(vec![None, Some(5)])],
        ];
        for descending in [false, true] {
            // Read last first, the batches come last first too.
            let turn = |batches: &[RecordBatch]| match descending {
                false => batches.to_vec(),
                true => (batches.iter().rev())
                    .map(|b| {
                        let k = b.column(0).as_primitive::<Int64Type>();
                        let values: Vec<Option<i64>> = k.iter().rev().collect();
                        ints(values)
                    })
                    .collect(),
            };
            assert!(run(&turn(&good), descending).is_ok(), "{descending}");
            for bad in &bad {
                let e = run(&turn(bad), descending)
                    .expect_err("out of order")
                    .to_string();
                assert!(e.contains("dir/f.parquet") && e.contains("column k"), "{e}");
            }
            // Falling values break the order read forward and keep it read last first.
            assert!(run(&[down(&[1, 2, 3])], descending).is_ok() == descending);
            // A column declared descending: the other way round.
            let mut ordered = vec![(0, true, None)];
            let falling = check_order(&mut ordered, &down(&[1, 2, 3]), path, descending);
            assert!(falling.is_ok() != descending, "{descending}");
            let mut ordered = vec![(0, true, None)];
            let rising = check_order(&mut ordered, &some(&[1, 2, 3]), path, descending);
            match descending {
                false => assert!(rising.is_err_and(|e| e.to_string().contains("increase"))),
                true => assert!(rising.is_ok()),
            }
        }
        // Types that are not primitive are compared by Arrow's kernel.
        let flags = |v: &[bool]| batch(Arc::new(BooleanArray::from(v.to_vec())));
        assert!(run(&[flags(&[false, true]), flags(&[true])], false).is_ok());
        assert!(run(&[flags(&[false, true, false])], false).is_err());
        assert!(run(&[flags(&[false, true]), flags(&[false])], false).is_err());
        assert!(run(&[flags(&[true, false]), flags(&[false])], true).is_ok());
        assert!(run(&[flags(&[true, false, true])], true).is_err());
        assert!(run(&[flags(&[true, false]), flags(&[true])], true).is_err());
    }
}
