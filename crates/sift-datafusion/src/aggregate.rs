//! Aggregates computed next to the scan: the first phase of `SUM`, `AVG`, `COUNT`, `MIN`
//! and `MAX` over a Sift scan, grouped by its string columns, small-range integers or one
//! ordered integer column.
//!
//! DataFusion's hash aggregation hashes every row's group key, and evaluates decimal
//! arithmetic on 128-bit integers checking each operation for overflow. Over a Sift scan
//! both are avoidable, which is why this is written here rather than taken from
//! DataFusion:
//! - **Groups from codes.** String group columns are read as the dictionary codes the
//!   engine decoded ([`SiftScanExec::with_reads`]); a batch's few distinct code
//!   combinations are looked up once, and each row indexes a small table by its codes.
//!   Integer group columns whose zone maps span at most [`MAX_RANGE`] values are codes
//!   themselves (value − minimum).
//! - **Groups from runs.** A lone integer group column too wide for codes but whose
//!   blocks' zone maps follow one another without overlapping ([`SiftScanExec::clustered`]:
//!   a sorted column, or a key that a Parquet writer wrote in order without saying so)
//!   groups each run of equal values in a batch, and each batch's groups are emitted as
//!   it is read: no table at all. A value whose rows span two batches is in two partial
//!   rows, which DataFusion's final phase merges, as it merges the partitions' rows of one
//!   group. The zone maps cannot tell whether the rows within a block are in order: a
//!   batch whose runs average fewer than two rows is grouped by value instead, unless the
//!   partition's first such batch held more values than half its rows. TPC-H Q18
//!   over tpchgen's Parquet lineitem (its `l_orderkey` in order, no `sorting_columns`):
//!   one thread 260–261 -> 226–232 ms, two threads 180–233 -> 127–138 ms. Where the groups
//!   are not completed here (below), the price is paid by a unique key, whose runs spare
//!   no row and add a final phase to DataFusion's single pass: tpchgen's orders grouped
//!   by `o_orderkey`, one thread 98–104 ms with `sift.scan_aggregates` off, 121–122 ms
//!   with runs (a partition reuses one state's buffers from batch to batch).
//! - **Complete groups from sorted runs.** Where the column is sorted over the whole scan
//!   (found so from its values, or declared by a Parquet writer and checked), the runs
//!   are completed here and the final phase goes ([`complete`]); an `AVG`'s state (count,
//!   sum) is divided here as DataFusion's final phase divides it. TPC-H lineitem (SF1,
//!   Sift file) grouped by `l_orderkey` with two averages and a count: one thread 185–188
//!   -> 112–113 ms (DataFusion's stream aggregation before; 184–186 with
//!   `sift.scan_aggregates` off), two threads 140 -> 65–72 ms. TPC-H Q18 on Sift files,
//!   whose subquery groups lineitem by `l_orderkey`: one thread 142 -> 105 ms
//!   (DataFusion's stream aggregation before), two threads 109–110 -> 60–69 ms (runs
//!   with DataFusion's hash repartitioning and final phase before). A sorted unique key pays no price any more:
//!   orders grouped by `o_orderkey`, one thread 53 -> 40–42 ms (52–60 with
//!   `sift.scan_aggregates` off), two threads 70–90 -> 24–28 ms (52–61 off).
//! - **Complete groups from clustered blocks.** Where the column is only clustered (no
//!   nulls, any order within a block), each block's groups are completed once the scan
//!   has passed the block's zone-map bound, one group per value (merged through a table
//!   over the block's span once its rows come out of order; a value outside its block's
//!   bounds is an error). tpchgen's Parquet orders grouped by `o_orderkey` (row groups
//!   of 93,750 rows): one thread 132–136 -> 75–78 ms (100–109 with
//!   `sift.scan_aggregates` off), two threads 81–87 -> 41–51 ms; TPC-H Q18 on tpchgen's
//!   Parquet: one thread 205–255 -> 136–142 ms, two 120–158 -> 75–95. With each row
//!   group's rows shuffled, where each row was a group until its block's groups were
//!   sorted and merged (one run): orders 146–164 -> 80–96 ms (114–116 off); lineitem
//!   grouped by `l_orderkey` (about four rows a key) 428–488 -> 169–183 ms (229–236 off).
//! - **Compiled for the CPU.** Adding a batch ([`State`]'s `add`, with the loops it
//!   inlines) is compiled once per instruction-set level and run at the one the CPU has
//!   ([`compiled_for_active`](sift_bits::dispatch::compiled_for_active)): the products of
//!   decimal arguments take AVX-512's 64-bit multiply instead of SSE2's three-step one.
//!   Up to [`FEW_GROUPS`] groups are counted and summed a group at a time with masked
//!   vector adds. TPC-H Q1 on Sift files, one core: 119–122 -> 104–106 ms.
//! - **Arithmetic on 64-bit integers.** The zone maps bound every scanned column; the rule
//!   carries those bounds through each `+`, `-`, `*` and cast of an argument and through
//!   each sum over all the scan's rows. Only when every value and every sum provably fits
//!   is the aggregate taken over: the values are then exactly those of DataFusion's
//!   checked arithmetic, without the checks. Decimal columns are read as their unscaled
//!   64-bit integers, as they are stored, never widened to 128 bits.
//!
//! [`ScanAggregates`] replaces a `Partial` aggregate over a Sift scan (through projections)
//! with [`SiftAggregateExec`], which emits the same partial states, so DataFusion's final
//! phase is unchanged; a `Single` aggregate becomes `Final` over [`SiftAggregateExec`].
//! Grouped by complete runs, the final phase and the [`SiftAggregateExec`] below it become
//! one, where nothing above relies on the final phase's partitioning.
//! Anything else (other functions, `DISTINCT`, `FILTER`, grouping sets, division, floats
//! compared as `MIN`/`MAX`, bounds that are unknown or too wide) leaves the plan as it was.
//! The rule is on unless `sift.scan_aggregates` is false.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::fmt;
use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, Decimal128Array, Float64Array, Int64Array, RecordBatch, UInt64Array,
};
use datafusion::arrow::buffer::{NullBuffer, ScalarBuffer};
use datafusion::arrow::datatypes::{
    DataType, Date32Type, Decimal128Type, Float64Type, Int8Type, Int16Type, Int32Type, Int64Type,
    SchemaRef, UInt8Type, UInt16Type, UInt32Type, UInt64Type,
};
use datafusion::arrow::row::{OwnedRow, RowConverter, SortField};
use datafusion::common::config::ConfigOptions;
use datafusion::common::stats::Precision;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::{DataFusionError, Result, ScalarValue, Statistics};
use datafusion::execution::TaskContext;
use datafusion::logical_expr::Operator;
use datafusion::physical_expr::EquivalenceProperties;
use datafusion::physical_expr::aggregate::AggregateFunctionExpr;
use datafusion::physical_expr::expressions as phys;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_optimizer::sanity_checker::SanityCheckPlan;
use datafusion::physical_plan::aggregates::{AggregateExec, AggregateMode};
use datafusion::physical_plan::coop::CooperativeExec;
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::projection::ProjectionExec;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PhysicalExpr, PlanProperties,
    SendableRecordBatchStream,
};
use futures::StreamExt;

use crate::SiftOptions;
use crate::exec::SiftScanExec;

mod complete;

/// The widest zone-map range of an integer group column read as its own code.
const MAX_RANGE: i64 = 1 << 16;

/// Groups up to this many are summed through partials in a fixed array.
const SMALL_GROUPS: usize = 16;

/// Groups up to this many are counted and summed one group at a time over the whole
/// batch: a comparison and a masked add per row and group, which vectorise, rather than
/// a store to each row's group, whose sum then waits for the store before (TPC-H Q1's
/// four groups).
const FEW_GROUPS: usize = 8;

/// Code combinations of a batch up to this many are looked up through a table; more go
/// through a hash map.
const MAX_TABLE: usize = 1 << 16;

/// The physical optimizer rule; see the module documentation.
#[derive(Debug, Default)]
pub struct ScanAggregates;

impl PhysicalOptimizerRule for ScanAggregates {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let options = SiftOptions::of(config);
        if !options.scan_aggregates {
            return Ok(plan);
        }
        let pushed = Arc::clone(&plan).transform_up(|node| {
            let Some(agg) = node.downcast_ref::<AggregateExec>() else {
                return Ok(Transformed::no(node));
            };
            match push_down(agg, options.scan_extremes)? {
                Some(new) => Ok(Transformed::yes(new)),
                None => Ok(Transformed::no(node)),
            }
        })?;
        let new = complete::final_phases(pushed.data, config)?;
        // The plan met every node's required partitioning and order before (DataFusion's
        // own rules end with this check); a single phase made two, whose final phase
        // keeps no order, must not leave a sort that its order made needless unmet.
        match SanityCheckPlan::new().optimize(Arc::clone(&new), config) {
            Ok(_) => Ok(new),
            Err(_) => Ok(plan),
        }
    }

    fn name(&self) -> &str {
        "SiftScanAggregates"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// `agg` computed by a [`SiftAggregateExec`], or `None` when it cannot be; `extremes`:
/// ungrouped `MIN` and `MAX` of columns may take only each block's extremes from the scan.
fn push_down(agg: &AggregateExec, extremes: bool) -> Result<Option<Arc<dyn ExecutionPlan>>> {
    let single = match agg.mode() {
        AggregateMode::Partial => false,
        AggregateMode::Single => true,
        _ => return Ok(None),
    };
    let group_by = agg.group_expr();
    if !group_by.is_single()
        || agg.limit_options().is_some()
        || agg.filter_expr().iter().any(Option::is_some)
    {
        return Ok(None);
    }
    // Down through projections (and the cooperative wrapper) to the scan.
    let mut projections: Vec<&ProjectionExec> = Vec::new();
    let mut node = agg.input();
    let scan = loop {
        if let Some(p) = node.downcast_ref::<ProjectionExec>() {
            projections.push(p);
            node = p.input();
        } else if let Some(c) = node.downcast_ref::<CooperativeExec>() {
            node = c.input();
        } else if let Some(s) = node.downcast_ref::<SiftScanExec>() {
            break s;
        } else {
            return Ok(None);
        }
    };
    if scan.limit().is_some() {
        return Ok(None);
    }
    let bounds = scan.bounds();
    let mut b = SpecBuilder {
        scan,
        projections: &projections,
        agg_schema: agg.input_schema(),
        scan_schema: scan.schema(),
        bounds: &bounds,
        rows: i128::from(scan.total_rows()),
        nodes: Vec::new(),
        lanes: Vec::new(),
        index: HashMap::new(),
    };
    let Some(groups) = (group_by.expr().iter())
        .map(|(e, _)| b.group(e))
        .collect::<Option<Vec<_>>>()
    else {
        return Ok(None);
    };
    if groups.len() > 1 && (groups.iter()).any(|g| matches!(g, GroupColumn::Runs(_))) {
        return Ok(None);
    }
    let Some(aggregates) = (agg.aggr_expr().iter())
        .map(|a| b.aggregate(a))
        .collect::<Option<Vec<_>>>()
    else {
        return Ok(None);
    };
    // Runs of a column sorted over the whole scan hold every row of their value inside a
    // partition's stream of batches, so the groups can be completed here
    // ([`complete`]) where each partial state is already its result.
    let sorted_runs = match groups.as_slice() {
        [GroupColumn::Runs(c)] => Some(scan.sorted().contains(c)),
        _ => None,
    };
    // A column whose blocks follow one another, in any order within each, is completed
    // block by block.
    let completes = match groups.as_slice() {
        [GroupColumn::Runs(_)] if sorted_runs == Some(true) => Some(complete::Completion::Sorted),
        [GroupColumn::Runs(c)] => scan.clustered_zones(*c).map(complete::Completion::Blocks),
        _ => None,
    };
    let partial_schema = match single {
        false => agg.schema(),
        true => AggregateExec::try_new(
            AggregateMode::Partial,
            group_by.clone(),
            agg.aggr_expr().to_vec(),
            agg.filter_expr().to_vec(),
            Arc::clone(agg.input()),
            agg.input_schema(),
        )?
        .schema(),
    };
    let dictionary: Vec<String> = (groups.iter())
        .filter_map(|g| match g {
            GroupColumn::Dictionary(c) => Some(b.scan_schema.field(*c).name().clone()),
            GroupColumn::Range { .. } | GroupColumn::Runs(_) => None,
        })
        .collect();
    // Decimal arguments are read as their unscaled 64-bit values.
    let unscaled: Vec<String> = (b.nodes.iter())
        .filter_map(|n| match n {
            Node::IntColumn(c) => Some(b.scan_schema.field(*c)),
            _ => None,
        })
        .filter(|f| matches!(f.data_type(), DataType::Decimal128(p, _) if *p <= 18))
        .map(|f| f.name().clone())
        .collect();
    let mut spec = Spec {
        nodes: b.nodes,
        lanes: b.lanes,
        groups,
        aggregates,
        names: (agg.aggr_expr().iter())
            .map(|a| a.name().to_string())
            .collect(),
        group_names: (group_by.expr().iter()).map(|(_, n)| n.clone()).collect(),
        counted: None,
        completes,
        source: scan.file_names(),
    };
    // A single phase over a column the scan declares sorted: DataFusion aggregates it as
    // a stream itself, which is faster than runs with its hash final phase above them
    // (TPC-H Q18 on one thread: 123 against 140 ms), though slower than runs completed
    // here ([`complete::final_phases`] replaces the final phase made below).
    let complete = spec.completes.is_some()
        && complete::Results::new(
            &spec.aggregates,
            spec.groups.len(),
            &partial_schema,
            &agg.schema(),
        )
        .is_some();
    let streamed = scan.declares_sorted() && sorted_runs == Some(true);
    if streamed && !complete {
        return Ok(None);
    }
    let scan = scan.with_reads(dictionary, unscaled);
    // `MIN` and `MAX` of columns, ungrouped, need of each block only its extremes, which
    // a dictionary-encoded Parquet page gives from its codes; a `COUNT(*)` beside them,
    // only the number of its selected rows.
    let count = (spec.aggregates.iter()).any(|a| matches!(a, Aggregate::Count(None)));
    let extremes = extremes
        && spec.groups.is_empty()
        && (spec.aggregates.iter()).any(|a| matches!(a, Aggregate::MinMax { .. }))
        && (spec.aggregates.iter())
            .all(|a| matches!(a, Aggregate::MinMax { .. } | Aggregate::Count(None)))
        && (spec.nodes.iter()).all(|n| matches!(n, Node::IntColumn(_)));
    let scan: Arc<dyn ExecutionPlan> = match extremes.then(|| scan.with_extremes(count)).flatten() {
        Some(s) => {
            if count {
                spec.counted = Some(s.schema().fields().len() - 1);
            }
            Arc::new(s)
        }
        None => Arc::new(scan),
    };
    let exec: Arc<dyn ExecutionPlan> = Arc::new(SiftAggregateExec::new(
        Arc::new(CooperativeExec::new(scan)),
        Arc::new(spec),
        partial_schema,
    ));
    if !single {
        return Ok(Some(exec));
    }
    let last = AggregateExec::try_new(
        AggregateMode::Final,
        group_by.as_final(),
        agg.aggr_expr().to_vec(),
        agg.filter_expr().to_vec(),
        exec,
        agg.input_schema(),
    )?;
    Ok(Some(Arc::new(last)))
}

/// How a group column's rows become codes.
#[derive(Debug, Clone)]
enum GroupColumn {
    /// A string or binary column (scan column index), read as a dictionary.
    Dictionary(usize),
    /// An integer column whose values lie in `min..=max` (`max - min <= MAX_RANGE`): the
    /// code is `value - min + 1`, and 0 for null.
    Range { column: usize, min: i64, max: i64 },
    /// The only group column: an integer column whose equal values lie together (scan
    /// column index), whose runs of equal values in a batch are its groups.
    Runs(usize),
}

/// An argument's value: what it is computed from.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Node {
    /// A scan column holding integers, dates or decimals (unscaled).
    IntColumn(usize),
    /// A scan column of doubles.
    FloatColumn(usize),
    /// Only the validity of a scan column of any type (for `COUNT`).
    Valid(usize),
    /// An integer literal: unscaled, and its scale (literals of one value and two scales
    /// are two nodes).
    Int(i64, i8),
    /// A double literal, by its bits.
    Float(u64),
    /// `+`, `-` or `*` of two nodes (their indices) of one lane.
    Op(Op, usize, usize),
    /// A node's integer times a power of ten (a decimal's scale raised).
    Scale(usize, i64),
    /// An integer node as a double.
    ToFloat(usize),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Op {
    Add,
    Sub,
    Mul,
}

/// What a node's values are: integers (a decimal's unscaled values with their scale) with
/// bounds, or doubles.
#[derive(Debug, Clone, Copy)]
enum Lane {
    Int { scale: i8, lo: i128, hi: i128 },
    Float,
}

impl Lane {
    fn max_abs(self) -> Option<i128> {
        match self {
            Lane::Int { lo, hi, .. } => Some(lo.abs().max(hi.abs())),
            Lane::Float => None,
        }
    }
}

/// One aggregate and the node it reads (`None` for `count(*)`).
#[derive(Debug, Clone)]
enum Aggregate {
    /// `COUNT`: non-null values of the node, or rows.
    Count(Option<usize>),
    /// `SUM` of integers, emitted as `out` (a decimal of the node's scale, or Int64).
    SumInt {
        node: usize,
        out: DataType,
    },
    SumFloat(usize),
    /// `AVG`: the state is (count, sum).
    AvgInt {
        node: usize,
        out: DataType,
    },
    AvgFloat(usize),
    /// `MIN` (`max` false) or `MAX` of integers, emitted as `out`.
    MinMax {
        node: usize,
        max: bool,
        out: DataType,
    },
}

impl Aggregate {
    /// Whether the partial state is one column holding the result, as DataFusion's final
    /// phase would give it (all but `AVG`).
    fn state_is_result(&self) -> bool {
        !matches!(self, Aggregate::AvgInt { .. } | Aggregate::AvgFloat(_))
    }
}

/// Everything a [`SiftAggregateExec`] computes.
#[derive(Debug)]
struct Spec {
    /// Argument nodes, each after those it reads, and what their values are.
    nodes: Vec<Node>,
    lanes: Vec<Lane>,
    groups: Vec<GroupColumn>,
    aggregates: Vec<Aggregate>,
    names: Vec<String>,
    group_names: Vec<String>,
    /// The scan column holding each block's selected rows when the scan returns extremes
    /// ([`SiftScanExec::with_extremes`]): rows are counted from it, not from the batch.
    counted: Option<usize>,
    /// Whether the groups are runs of a column sorted over the scan, or of one whose
    /// blocks follow one another: the groups can be completed by
    /// [`SiftAggregateExec::complete`].
    completes: Option<complete::Completion>,
    /// The files scanned, for errors.
    source: String,
}

impl Spec {
    /// Whether the groups are runs of a sorted column, emitted batch by batch.
    fn by_runs(&self) -> bool {
        matches!(self.groups.as_slice(), [GroupColumn::Runs(_)])
    }
}

/// Translates an aggregate's group keys and arguments into [`Spec`] parts, proving bounds.
struct SpecBuilder<'a> {
    scan: &'a SiftScanExec,
    /// The projections between the aggregate and the scan, outermost first.
    projections: &'a [&'a ProjectionExec],
    agg_schema: SchemaRef,
    scan_schema: SchemaRef,
    bounds: &'a Statistics,
    /// Rows the scan can return at most.
    rows: i128,
    nodes: Vec<Node>,
    lanes: Vec<Lane>,
    index: HashMap<Node, usize>,
}

impl SpecBuilder<'_> {
    /// The schema expressions at `depth` (0: the aggregate's input) are evaluated on.
    fn schema_at(&self, depth: usize) -> SchemaRef {
        match depth {
            0 => Arc::clone(&self.agg_schema),
            d => self.projections[d - 1].input().schema(),
        }
    }

    /// The scan column `e` (at `depth`) is, through the projections.
    fn scan_column(&self, e: &Arc<dyn PhysicalExpr>, depth: usize) -> Option<usize> {
        let c = e.downcast_ref::<phys::Column>()?;
        match self.projections.get(depth) {
            Some(p) => self.scan_column(&p.expr().get(c.index())?.expr, depth + 1),
            None => Some(c.index()),
        }
    }

    fn group(&self, e: &Arc<dyn PhysicalExpr>) -> Option<GroupColumn> {
        let c = self.scan_column(e, 0)?;
        match self.scan_schema.field(c).data_type() {
            DataType::Utf8
            | DataType::LargeUtf8
            | DataType::Utf8View
            | DataType::Binary
            | DataType::LargeBinary
            | DataType::BinaryView => Some(GroupColumn::Dictionary(c)),
            dt if int_like(dt) => {
                let (lo, hi) = self.column_bounds(c)?;
                let (min, max) = (i64::try_from(lo).ok()?, i64::try_from(hi).ok()?);
                let narrow = max.checked_sub(min).is_some_and(|r| r <= MAX_RANGE);
                match (narrow, self.runs(c)) {
                    (true, _) => Some(GroupColumn::Range {
                        column: c,
                        min,
                        max,
                    }),
                    (false, true) => Some(GroupColumn::Runs(c)),
                    (false, false) => None,
                }
            }
            _ => None,
        }
    }

    /// Whether scan column `c`'s runs of equal values are its groups: where its equal
    /// values lie together ([`SiftScanExec::clustered`]).
    fn runs(&self, c: usize) -> bool {
        self.scan.clustered(c)
    }

    /// The unscaled bounds of scan column `c` from the zone maps.
    fn column_bounds(&self, c: usize) -> Option<(i128, i128)> {
        let stats = self.bounds.column_statistics.get(c)?;
        let value = |p: &Precision<ScalarValue>| -> Option<i128> {
            match p.get_value()? {
                ScalarValue::Int8(Some(v)) => Some(i128::from(*v)),
                ScalarValue::Int16(Some(v)) => Some(i128::from(*v)),
                ScalarValue::Int32(Some(v)) => Some(i128::from(*v)),
                ScalarValue::Int64(Some(v)) => Some(i128::from(*v)),
                ScalarValue::UInt8(Some(v)) => Some(i128::from(*v)),
                ScalarValue::UInt16(Some(v)) => Some(i128::from(*v)),
                ScalarValue::UInt32(Some(v)) => Some(i128::from(*v)),
                ScalarValue::Date32(Some(v)) => Some(i128::from(*v)),
                ScalarValue::Decimal128(Some(v), _, _) => Some(*v),
                _ => None,
            }
        };
        Some((value(&stats.min_value)?, value(&stats.max_value)?))
    }

    fn aggregate(&mut self, a: &AggregateFunctionExpr) -> Option<Aggregate> {
        if a.is_distinct() || !a.order_bys().is_empty() {
            return None;
        }
        let args = a.expressions();
        let [arg] = args.as_slice() else { return None };
        let states = a.state_fields().ok()?;
        let state = |i: usize| states.get(i).map(|f| f.data_type().clone());
        match (a.fun().name(), states.len()) {
            ("count", 1) => {
                if state(0)? != DataType::Int64 {
                    return None;
                }
                if let Some(l) = arg.downcast_ref::<phys::Literal>() {
                    return (!l.value().is_null()).then_some(Aggregate::Count(None));
                }
                if let Some(c) = self.scan_column(arg, 0) {
                    let lane = Lane::Int {
                        scale: 0,
                        lo: 0,
                        hi: 0,
                    };
                    return Some(Aggregate::Count(Some(self.intern(Node::Valid(c), lane))));
                }
                Some(Aggregate::Count(Some(self.node(arg, 0)?)))
            }
            ("sum", 1) => self.sum(arg, state(0)?, false),
            ("avg", 2) => {
                if state(0)? != DataType::UInt64 {
                    return None;
                }
                self.sum(arg, state(1)?, true)
            }
            (name @ ("min" | "max"), 1) => {
                let node = self.node(arg, 0)?;
                let out = state(0)?;
                let fits = match (self.lanes[node], &out) {
                    (Lane::Int { scale, .. }, DataType::Decimal128(_, s)) => scale == *s,
                    (Lane::Int { scale: 0, .. }, dt) => int_like(dt),
                    _ => false,
                };
                fits.then_some(Aggregate::MinMax {
                    node,
                    max: name == "max",
                    out,
                })
            }
            _ => None,
        }
    }

    /// `SUM` (or `AVG`'s sum) of `arg` into a state of type `out`, when no sum over all
    /// the scan's rows can leave that type.
    fn sum(&mut self, arg: &Arc<dyn PhysicalExpr>, out: DataType, avg: bool) -> Option<Aggregate> {
        let node = self.node(arg, 0)?;
        match (self.lanes[node], &out) {
            (Lane::Float, DataType::Float64) => Some(match avg {
                true => Aggregate::AvgFloat(node),
                false => Aggregate::SumFloat(node),
            }),
            (lane @ Lane::Int { scale, .. }, _) => {
                let limit = match &out {
                    DataType::Decimal128(p, s) if *s == scale => {
                        10i128.checked_pow(u32::from(*p))?
                    }
                    DataType::Int64 if scale == 0 && !avg => i128::from(i64::MAX),
                    _ => return None,
                };
                let total = lane.max_abs()?.checked_mul(self.rows.max(1))?;
                (total < limit).then_some(match avg {
                    true => Aggregate::AvgInt { node, out },
                    false => Aggregate::SumInt { node, out },
                })
            }
            _ => None,
        }
    }

    /// The node computing `e` (at `depth`), with its lane checked against the type
    /// DataFusion gives `e`.
    fn node(&mut self, e: &Arc<dyn PhysicalExpr>, depth: usize) -> Option<usize> {
        let schema = self.schema_at(depth);
        let dt = e.data_type(&schema).ok()?;
        let (node, lane) = self.translate(e, depth, &dt)?;
        let agrees = match (lane, &dt) {
            (Lane::Float, DataType::Float64) => true,
            (Lane::Int { scale, .. }, DataType::Decimal128(_, s)) => scale == *s,
            (Lane::Int { scale: 0, lo, hi }, dt) if int_like(dt) => {
                let (min, max) = int_range(dt)?;
                lo >= min && hi <= max
            }
            _ => false,
        };
        // Every value must also fit the 64 bits it is computed in.
        let fits = match lane {
            Lane::Int { lo, hi, .. } => lo >= i128::from(i64::MIN) && hi <= i128::from(i64::MAX),
            Lane::Float => true,
        };
        (agrees && fits).then(|| self.intern(node, lane))
    }

    fn intern(&mut self, node: Node, lane: Lane) -> usize {
        if let Some(&i) = self.index.get(&node) {
            return i;
        }
        self.nodes.push(node.clone());
        self.lanes.push(lane);
        self.index.insert(node, self.nodes.len() - 1);
        self.nodes.len() - 1
    }

    fn translate(
        &mut self,
        e: &Arc<dyn PhysicalExpr>,
        depth: usize,
        dt: &DataType,
    ) -> Option<(Node, Lane)> {
        if let Some(c) = e.downcast_ref::<phys::Column>() {
            if let Some(p) = self.projections.get(depth) {
                let inner = &p.expr().get(c.index())?.expr;
                let i = self.node(inner, depth + 1)?;
                return Some((self.nodes[i].clone(), self.lanes[i]));
            }
            let column = c.index();
            return match self.scan_schema.field(column).data_type() {
                DataType::Float64 => Some((Node::FloatColumn(column), Lane::Float)),
                DataType::Decimal128(_, s) => {
                    let (lo, hi) = self.column_bounds(column)?;
                    Some((Node::IntColumn(column), Lane::Int { scale: *s, lo, hi }))
                }
                t if int_like(t) => {
                    let (lo, hi) = self.column_bounds(column)?;
                    Some((Node::IntColumn(column), Lane::Int { scale: 0, lo, hi }))
                }
                _ => None,
            };
        }
        if let Some(l) = e.downcast_ref::<phys::Literal>() {
            let (v, scale) = match l.value() {
                ScalarValue::Float64(Some(f)) => {
                    return Some((Node::Float(f.to_bits()), Lane::Float));
                }
                ScalarValue::Int8(Some(v)) => (i64::from(*v), 0),
                ScalarValue::Int16(Some(v)) => (i64::from(*v), 0),
                ScalarValue::Int32(Some(v)) => (i64::from(*v), 0),
                ScalarValue::Int64(Some(v)) => (*v, 0),
                ScalarValue::Decimal128(Some(v), _, s) => (i64::try_from(*v).ok()?, *s),
                _ => return None,
            };
            let b = i128::from(v);
            return Some((
                Node::Int(v, scale),
                Lane::Int {
                    scale,
                    lo: b,
                    hi: b,
                },
            ));
        }
        if let Some(bin) = e.downcast_ref::<phys::BinaryExpr>() {
            let op = match bin.op() {
                Operator::Plus => Op::Add,
                Operator::Minus => Op::Sub,
                Operator::Multiply => Op::Mul,
                _ => return None,
            };
            // Dates are compared, never computed with here.
            let schema = self.schema_at(depth);
            let is_date = |e: &Arc<dyn PhysicalExpr>| {
                e.data_type(&schema).map_or(true, |t| t == DataType::Date32)
            };
            if is_date(bin.left()) || is_date(bin.right()) {
                return None;
            }
            let l = self.node(bin.left(), depth)?;
            let r = self.node(bin.right(), depth)?;
            return match (self.lanes[l], self.lanes[r]) {
                (Lane::Float, Lane::Float) => Some((Node::Op(op, l, r), Lane::Float)),
                (Lane::Int { scale: s1, .. }, Lane::Int { scale: s2, .. }) => {
                    // Sums and differences first bring both sides to the larger scale.
                    let (l, r) = match op {
                        Op::Mul => (l, r),
                        _ => {
                            let s = s1.max(s2);
                            (self.rescale(l, s)?, self.rescale(r, s)?)
                        }
                    };
                    let (
                        Lane::Int {
                            scale: s1,
                            lo: a,
                            hi: b,
                        },
                        Lane::Int {
                            scale: s2,
                            lo: c,
                            hi: d,
                        },
                    ) = (self.lanes[l], self.lanes[r])
                    else {
                        return None;
                    };
                    let (lo, hi, scale) = match op {
                        Op::Add => (a.checked_add(c)?, b.checked_add(d)?, s1),
                        Op::Sub => (a.checked_sub(d)?, b.checked_sub(c)?, s1),
                        Op::Mul => {
                            let p = [
                                a.checked_mul(c)?,
                                a.checked_mul(d)?,
                                b.checked_mul(c)?,
                                b.checked_mul(d)?,
                            ];
                            let lo = p.iter().copied().min()?;
                            let hi = p.iter().copied().max()?;
                            (lo, hi, s1.checked_add(s2)?)
                        }
                    };
                    Some((Node::Op(op, l, r), Lane::Int { scale, lo, hi }))
                }
                _ => None,
            };
        }
        let (inner, to) = if let Some(c) = e.downcast_ref::<phys::CastExpr>() {
            (c.expr(), c.cast_type())
        } else if let Some(c) = e.downcast_ref::<phys::TryCastExpr>() {
            (c.expr(), c.cast_type())
        } else {
            return None;
        };
        if to != dt {
            return None;
        }
        let from = inner.data_type(&self.schema_at(depth)).ok()?;
        let i = self.node(inner, depth)?;
        match (self.lanes[i], to) {
            (Lane::Float, DataType::Float64) => Some((self.nodes[i].clone(), Lane::Float)),
            (Lane::Int { scale, .. }, DataType::Decimal128(p, s)) if *s >= scale => {
                // The cast checks the target precision; the bounds show it never fails.
                let i = self.rescale(i, *s)?;
                let limit = 10i128.checked_pow(u32::from(*p))?;
                let lane = self.lanes[i];
                let Lane::Int { lo, hi, .. } = lane else {
                    return None;
                };
                (lo > -limit && hi < limit).then(|| (self.nodes[i].clone(), lane))
            }
            (Lane::Int { scale: 0, .. }, DataType::Float64) if int_like(&from) => {
                Some((Node::ToFloat(i), Lane::Float))
            }
            (lane @ Lane::Int { scale: 0, lo, hi }, t) if int_like(t) && int_like(&from) => {
                let (min, max) = int_range(t)?;
                (lo >= min && hi <= max).then(|| (self.nodes[i].clone(), lane))
            }
            _ => None,
        }
    }

    /// Node `i` (an integer lane) brought to `scale`.
    fn rescale(&mut self, i: usize, scale: i8) -> Option<usize> {
        let Lane::Int { scale: s, lo, hi } = self.lanes[i] else {
            return None;
        };
        if s == scale {
            return Some(i);
        }
        let k = i64::checked_pow(10, u32::try_from(scale.checked_sub(s)?).ok()?)?;
        let (lo, hi) = (
            lo.checked_mul(i128::from(k))?,
            hi.checked_mul(i128::from(k))?,
        );
        if lo < i128::from(i64::MIN) || hi > i128::from(i64::MAX) {
            return None;
        }
        Some(self.intern(Node::Scale(i, k), Lane::Int { scale, lo, hi }))
    }
}

/// Integer types whose values an `i64` holds, and dates (days).
fn int_like(dt: &DataType) -> bool {
    matches!(
        dt,
        DataType::Int8
            | DataType::Int16
            | DataType::Int32
            | DataType::Int64
            | DataType::UInt8
            | DataType::UInt16
            | DataType::UInt32
            | DataType::Date32
    )
}

/// The values of an integer type.
fn int_range(dt: &DataType) -> Option<(i128, i128)> {
    Some(match dt {
        DataType::Int8 => (i8::MIN.into(), i8::MAX.into()),
        DataType::Int16 => (i16::MIN.into(), i16::MAX.into()),
        DataType::Int32 | DataType::Date32 => (i32::MIN.into(), i32::MAX.into()),
        DataType::Int64 => (i64::MIN.into(), i64::MAX.into()),
        DataType::UInt8 => (0, u8::MAX.into()),
        DataType::UInt16 => (0, u16::MAX.into()),
        DataType::UInt32 => (0, u32::MAX.into()),
        _ => return None,
    })
}

/// The first phase of an aggregation, computed from a Sift scan's batches: one batch of
/// partial states per partition, or per input batch when grouped by runs (see the module
/// documentation); or the whole aggregation, grouped by the runs of a sorted column.
#[derive(Debug)]
pub struct SiftAggregateExec {
    input: Arc<dyn ExecutionPlan>,
    spec: Arc<Spec>,
    schema: SchemaRef,
    /// With complete groups: where the partitions leave their first and last groups,
    /// and how the groups' states become results.
    boundaries: Option<(Arc<complete::Boundaries>, Arc<complete::Results>)>,
    properties: Arc<PlanProperties>,
}

impl SiftAggregateExec {
    fn new(input: Arc<dyn ExecutionPlan>, spec: Arc<Spec>, schema: SchemaRef) -> Self {
        let emission = match spec.by_runs() {
            true => EmissionType::Incremental,
            false => EmissionType::Final,
        };
        let equivalences = EquivalenceProperties::new(Arc::clone(&schema));
        Self::with_properties(input, spec, schema, None, equivalences, emission)
    }

    /// The aggregation's results (in `schema`, the final phase's), grouped by the runs of
    /// a column sorted or clustered over the scan ([`Spec::completes`]); see [`complete`].
    fn complete(
        input: Arc<dyn ExecutionPlan>,
        spec: Arc<Spec>,
        schema: SchemaRef,
        results: Arc<complete::Results>,
    ) -> Self {
        let partitions = input.properties().partitioning.partition_count();
        let equivalences = complete::equivalences(&input, &spec, &schema, partitions);
        let boundaries = Some((Arc::new(complete::Boundaries::new(partitions)), results));
        let emission = EmissionType::Incremental;
        Self::with_properties(input, spec, schema, boundaries, equivalences, emission)
    }

    fn with_properties(
        input: Arc<dyn ExecutionPlan>,
        spec: Arc<Spec>,
        schema: SchemaRef,
        boundaries: Option<(Arc<complete::Boundaries>, Arc<complete::Results>)>,
        equivalences: EquivalenceProperties,
        emission: EmissionType,
    ) -> Self {
        let partitions = input.properties().partitioning.partition_count();
        let properties = PlanProperties::new(
            equivalences,
            Partitioning::UnknownPartitioning(partitions),
            emission,
            Boundedness::Bounded,
        );
        SiftAggregateExec {
            input,
            spec,
            schema,
            boundaries,
            properties: Arc::new(properties),
        }
    }
}

impl DisplayAs for SiftAggregateExec {
    fn fmt_as(&self, _: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(
            f,
            "SiftAggregate: mode={}, gby=[{}], aggr=[{}]",
            match self.boundaries {
                Some(_) => "complete",
                None => "partial",
            },
            self.spec.group_names.join(", "),
            self.spec.names.join(", ")
        )
    }
}

impl ExecutionPlan for SiftAggregateExec {
    fn name(&self) -> &str {
        "SiftAggregateExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
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
            DataFusionError::Internal("SiftAggregateExec has one child".to_string())
        })?;
        let (spec, schema) = (Arc::clone(&self.spec), Arc::clone(&self.schema));
        Ok(Arc::new(match &self.boundaries {
            Some((_, results)) => {
                SiftAggregateExec::complete(input, spec, schema, Arc::clone(results))
            }
            None => SiftAggregateExec::new(input, spec, schema),
        }))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let mut input = self.input.execute(partition, context)?;
        let spec = Arc::clone(&self.spec);
        let schema = Arc::clone(&self.schema);
        if let Some((boundaries, results)) = &self.boundaries {
            let (boundaries, results) = (Arc::clone(boundaries), Arc::clone(results));
            return complete::stream(input, spec, schema, results, boundaries, partition);
        }
        if spec.by_runs() {
            let out_schema = Arc::clone(&schema);
            // One state for the partition, emptied after each batch: its buffers are
            // reused rather than allocated (and faulted in) again per batch.
            let mut state: Option<State> = None;
            let out = input.map(move |batch| {
                let batch = batch?;
                let state = match &mut state {
                    Some(state) => state,
                    None => state.insert(State::new(&spec, batch.schema())?),
                };
                state.add(&spec, &batch)?;
                let out = state.finish(&spec, Arc::clone(&out_schema));
                state.clear_groups();
                out
            });
            return Ok(Box::pin(RecordBatchStreamAdapter::new(schema, out)));
        }
        let out = futures::stream::once(async move {
            let mut state = State::new(&spec, input.schema())?;
            while let Some(batch) = input.next().await {
                state.add(&spec, &batch?)?;
            }
            state.finish(&spec, schema)
        });
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            Arc::clone(&self.schema),
            out,
        )))
    }
}

/// A node's values in one batch.
enum Values {
    Ints(ScalarBuffer<i64>),
    Int(i64),
    Floats(ScalarBuffer<f64>),
    Float(f64),
}

/// Values and their validity (`None`: all valid).
struct Column {
    values: Values,
    nulls: Option<NullBuffer>,
}

/// One aggregate's running state, per group: how many valid values it took (not kept
/// for `MIN` and `MAX`, whose `set` says whether a group took any), and their sum
/// (integers exactly, or doubles in row order) or extreme.
#[derive(Default)]
struct Acc {
    counts: Vec<u64>,
    ints: Vec<i128>,
    floats: Vec<f64>,
    /// Whether `ints` holds an extreme yet (`MIN`, `MAX`).
    set: Vec<bool>,
}

impl Acc {
    /// Folds `x` into group `g`'s extreme (the largest if `max`).
    #[inline(always)]
    fn fold_extreme(&mut self, g: usize, x: i128, max: bool) {
        if !self.set[g] || (max && x > self.ints[g]) || (!max && x < self.ints[g]) {
            self.ints[g] = x;
            self.set[g] = true;
        }
    }
}

/// One group column's distinct values so far (a dictionary column's, as rows), by code.
struct GroupValues {
    converter: Option<RowConverter>,
    ids: HashMap<OwnedRow, u32>,
    rows: Vec<OwnedRow>,
}

/// The running aggregation of one partition.
struct State {
    columns: Vec<GroupValues>,
    /// Each group's code per group column.
    keys: Vec<Vec<u32>>,
    index: HashMap<Vec<u32>, u32>,
    /// With only range group columns: each code combination's group, kept across batches.
    range_table: Option<Vec<u32>>,
    /// With [`GroupColumn::Runs`]: each group's value (`None`: null), instead of `keys`.
    run_keys: Vec<Option<i64>>,
    /// With [`GroupColumn::Runs`]: whether a batch of short runs is grouped by value,
    /// found on the first such batch of the partition (`None`: none yet) and carried from
    /// batch to batch: where its values are about as many as its runs (a unique key),
    /// grouping them costs a table and spares no row.
    regroup: Option<bool>,
    accs: Vec<Acc>,
}

impl State {
    fn new(spec: &Spec, input: SchemaRef) -> Result<State> {
        let columns = (spec.groups.iter())
            .map(|g| {
                let converter = match g {
                    GroupColumn::Dictionary(c) => match input.field(*c).data_type() {
                        DataType::Dictionary(_, v) => {
                            Some(RowConverter::new(vec![SortField::new(v.as_ref().clone())])?)
                        }
                        other => {
                            return Err(DataFusionError::Internal(format!(
                                "group column read as {other}, not a dictionary"
                            )));
                        }
                    },
                    GroupColumn::Range { .. } | GroupColumn::Runs(_) => None,
                };
                Ok(GroupValues {
                    converter,
                    ids: HashMap::new(),
                    rows: Vec::new(),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let accs = spec.aggregates.iter().map(|_| Acc::default()).collect();
        let mut state = State {
            columns,
            keys: Vec::new(),
            index: HashMap::new(),
            range_table: None,
            run_keys: Vec::new(),
            regroup: None,
            accs,
        };
        // Without GROUP BY there is one group, rows or not.
        if spec.groups.is_empty() {
            state.group(Vec::new());
        }
        Ok(state)
    }

    /// The group of `key` (codes per group column), added if new.
    fn group(&mut self, key: Vec<u32>) -> u32 {
        if let Some(&g) = self.index.get(&key) {
            return g;
        }
        let g = self.keys.len() as u32;
        self.keys.push(key.clone());
        self.index.insert(key, g);
        self.grow();
        g
    }

    /// How many groups there are.
    fn groups(&self) -> usize {
        self.keys.len() + self.run_keys.len()
    }

    /// Every aggregate's state made as long as the groups, the new ones empty.
    fn grow(&mut self) {
        let groups = self.groups();
        for acc in &mut self.accs {
            acc.counts.resize(groups, 0);
            acc.ints.resize(groups, 0);
            acc.floats.resize(groups, 0.0);
            acc.set.resize(groups, false);
        }
    }

    /// Each row's group for [`GroupColumn::Runs`]: a new group wherever the value (or
    /// whether it is null) differs from the row before's; or, where the runs average
    /// fewer than two rows (a column whose blocks follow one another but whose rows are
    /// not in order within them), one group per distinct value of the batch, as many
    /// partial rows as a hash table gives, unless the first such batch showed that its
    /// values are more than half its rows ([`State::regroup`]).
    #[inline(always)]
    fn run_ids(&mut self, array: &ArrayRef) -> Result<Vec<u32>> {
        let values = int_values(array)?;
        let nulls = array.logical_nulls().filter(|n| n.null_count() > 0);
        let valid = |i: usize| nulls.as_ref().is_none_or(|n| n.is_valid(i));
        let key = |i: usize| valid(i).then_some(values[i]);
        let n = values.len();
        // Whether each row after the first starts a run: without nulls, a comparison of
        // neighbours that vectorises.
        let later = values.get(1..).unwrap_or(&[]);
        let starts: Vec<bool> = match &nulls {
            None => later
                .iter()
                .zip(values.iter())
                .map(|(a, b)| a != b)
                .collect(),
            Some(_) => (1..n)
                .map(|i| values[i] != values[i - 1] || valid(i) != valid(i - 1))
                .collect(),
        };
        let changes = starts.iter().filter(|&&s| s).count();
        if 2 * (changes + 1) > n && n > 1 && self.regroup != Some(false) {
            let mut seen: HashMap<Option<i64>, u32> = HashMap::with_capacity(n);
            let ids = (0..n)
                .map(|i| {
                    let next = self.run_keys.len() as u32;
                    *seen.entry(key(i)).or_insert_with(|| {
                        self.run_keys.push(key(i));
                        next
                    })
                })
                .collect();
            self.regroup.get_or_insert(2 * seen.len() <= n);
            self.grow();
            return Ok(ids);
        }
        let Some(first) = values.first() else {
            return Ok(Vec::new());
        };
        let mut ids = Vec::with_capacity(n);
        let mut id = self.run_keys.len() as u32;
        // The first run continues the group carried from the batch before, if any (only
        // complete groups carry one, [`complete`]).
        let continues = self.run_keys.last() == Some(&key(0));
        match continues {
            true => id -= 1,
            false => self.run_keys.push(key(0)),
        }
        ids.push(id);
        // Without a branch on where runs start, which short runs would mispredict: each
        // row's id is a running count of the starts, and each row's value is written at
        // the next run's slot, kept when a run starts there (one slot spare at the end).
        ids.extend(starts.iter().map(|&new| {
            id += u32::from(new);
            id
        }));
        let base = self.run_keys.len();
        self.run_keys.resize(base + changes + 1, Some(*first));
        let slots = &mut self.run_keys[base..];
        let mut k = 0;
        for (i, &new) in (1..n).zip(&starts) {
            slots[k] = key(i);
            k += usize::from(new);
        }
        self.run_keys.truncate(base + changes);
        self.grow();
        Ok(ids)
    }

    /// Each row's group in `batch`.
    #[inline(always)]
    fn group_ids(&mut self, spec: &Spec, batch: &RecordBatch) -> Result<Vec<u32>> {
        let rows = batch.num_rows();
        if spec.groups.is_empty() {
            return Ok(vec![0; rows]);
        }
        if let [GroupColumn::Runs(c)] = spec.groups.as_slice() {
            return self.run_ids(batch.column(*c));
        }
        // Per group column: each row's local code, how many codes there are, and the
        // column-wide code of each local one.
        let mut local: Vec<(Vec<u32>, usize, Vec<u32>)> = Vec::with_capacity(spec.groups.len());
        for (g, values) in spec.groups.iter().zip(&mut self.columns) {
            local.push(match g {
                GroupColumn::Dictionary(c) => dictionary_codes(batch.column(*c), values)?,
                GroupColumn::Range { column, min, max } => {
                    range_codes(batch.column(*column), *min, *max)?
                }
                GroupColumn::Runs(_) => {
                    return Err(DataFusionError::Internal(
                        "a run group column beside others".to_string(),
                    ));
                }
            });
        }
        // Mixed-radix strides over the columns' code counts, when the table is small.
        let strides = || -> Option<Vec<usize>> {
            let mut s = Vec::with_capacity(local.len());
            let mut total = 1usize;
            for (_, n, _) in local.iter().rev() {
                s.push(total);
                total = total.checked_mul(*n).filter(|&t| t <= MAX_TABLE)?;
            }
            s.reverse();
            Some(s)
        };
        let strides = strides();
        let key_of = |combo: &dyn Fn(usize) -> u32| -> Vec<u32> {
            (0..local.len())
                .map(|j| local[j].2[combo(j) as usize])
                .collect()
        };
        let mut ids = Vec::with_capacity(rows);
        // Range codes are the same in every batch: with only range columns the table is
        // kept from batch to batch, and each group is looked up once per scan.
        let all_ranges = (spec.groups.iter()).all(|g| matches!(g, GroupColumn::Range { .. }));
        match strides {
            Some(strides) => {
                let size = strides.first().map_or(1, |s| s * local[0].1);
                let mut table = match (all_ranges, self.range_table.take()) {
                    (true, Some(t)) if t.len() == size => t,
                    _ => vec![u32::MAX; size],
                };
                // Each row's slot: its codes in mixed radix (a lone column's codes are
                // their slots; a slot is below `MAX_TABLE`).
                let computed: Vec<u32>;
                let slots: &[u32] = match local.as_slice() {
                    [a] => &a.0,
                    [a, b] => {
                        let stride = strides[0] as u32;
                        computed = (a.0.iter().zip(&b.0))
                            .map(|(&x, &y)| x * stride + y)
                            .collect();
                        &computed
                    }
                    _ => {
                        computed = (0..rows)
                            .map(|r| {
                                let slot: usize = (local.iter().zip(&strides))
                                    .map(|(c, s)| c.0[r] as usize * s)
                                    .sum();
                                slot as u32
                            })
                            .collect();
                        &computed
                    }
                };
                // Every row looked up without a branch; the rows of groups the table does
                // not hold yet (none, once a kept table has seen them all) added after.
                ids.extend(slots.iter().map(|&s| table[s as usize]));
                if ids.contains(&u32::MAX) {
                    for (r, id) in ids.iter_mut().enumerate() {
                        if *id == u32::MAX {
                            let slot = slots[r] as usize;
                            if table[slot] == u32::MAX {
                                table[slot] = self.group(key_of(&|j| local[j].0[r]));
                            }
                            *id = table[slot];
                        }
                    }
                }
                if all_ranges {
                    self.range_table = Some(table);
                }
            }
            None => {
                let mut seen: HashMap<Vec<u32>, u32> = HashMap::new();
                for r in 0..rows {
                    let codes: Vec<u32> = (0..local.len()).map(|j| local[j].0[r]).collect();
                    let id = match seen.get(&codes) {
                        Some(&id) => id,
                        None => {
                            let id = self.group(key_of(&|j| codes[j]));
                            seen.insert(codes, id);
                            id
                        }
                    };
                    ids.push(id);
                }
            }
        }
        Ok(ids)
    }

    fn add(&mut self, spec: &Spec, batch: &RecordBatch) -> Result<()> {
        sift_bits::dispatch::compiled_for_active(
            #[inline(always)]
            || {
                let ids = self.group_ids(spec, batch)?;
                self.add_batch(spec, batch, &ids)
            },
        )
    }

    /// Adds `batch`, whose rows' groups (among the state's) are `ids`.
    fn add_grouped(&mut self, spec: &Spec, batch: &RecordBatch, ids: &[u32]) -> Result<()> {
        sift_bits::dispatch::compiled_for_active(
            #[inline(always)]
            || self.add_batch(spec, batch, ids),
        )
    }

    // Inlined into `add`'s and `add_grouped`'s wrappers, to be compiled for the active
    // level.
    #[inline(always)]
    fn add_batch(&mut self, spec: &Spec, batch: &RecordBatch, ids: &[u32]) -> Result<()> {
        let mut nodes: Vec<Column> = Vec::with_capacity(spec.nodes.len());
        for node in &spec.nodes {
            let column = evaluate(node, &nodes, batch)?;
            nodes.push(column);
        }
        let groups = self.groups();
        // Rows per group, for every aggregate whose values are all valid, and the batch's
        // sums per argument (`SUM(x)` and `AVG(x)` share theirs).
        let mut rows = vec![0u64; groups];
        if let Some(c) = spec.counted {
            let counts = (batch.columns().get(c))
                .and_then(|a| a.as_primitive_opt::<UInt64Type>())
                .ok_or_else(|| {
                    DataFusionError::Internal(format!("scan column {c} holds no row counts"))
                })?;
            let [all] = rows.as_mut_slice() else {
                return Err(DataFusionError::Internal(
                    "rows counted by the scan, in groups".to_string(),
                ));
            };
            *all = counts.values().iter().sum();
        } else if let [all] = rows.as_mut_slice() {
            *all = ids.len() as u64;
        } else if groups <= FEW_GROUPS {
            for (g, n) in rows.iter_mut().enumerate() {
                *n = ids.iter().map(|&id| u64::from(id == g as u32)).sum();
            }
        } else {
            for &g in ids {
                rows[g as usize] += 1;
            }
        }
        let mut sums: HashMap<usize, Vec<i128>> = HashMap::new();
        for (a, acc) in spec.aggregates.iter().zip(&mut self.accs) {
            let batch = Batch {
                ids,
                rows: &rows,
                nodes: &nodes,
                lanes: &spec.lanes,
            };
            accumulate(a, acc, &batch, &mut sums);
        }
        Ok(())
    }

    /// Drops the groups and their states, keeping the buffers (and what was learnt of a
    /// run column, [`State::regroup`]) for the next batch.
    fn clear_groups(&mut self) {
        self.keys.clear();
        self.index.clear();
        self.run_keys.clear();
        for acc in &mut self.accs {
            acc.counts.clear();
            acc.ints.clear();
            acc.floats.clear();
            acc.set.clear();
        }
    }

    /// The partial states, one row per group, in `schema`.
    fn finish(&mut self, spec: &Spec, schema: SchemaRef) -> Result<RecordBatch> {
        let groups = self.groups();
        let mut out: Vec<ArrayRef> = Vec::with_capacity(schema.fields().len());
        for (j, g) in spec.groups.iter().enumerate() {
            let field = schema.field(out.len());
            let codes = self.keys.iter().map(|k| k[j]);
            let array: ArrayRef = match g {
                GroupColumn::Dictionary(_) => {
                    let values = &mut self.columns[j];
                    let converter = values
                        .converter
                        .as_ref()
                        .ok_or_else(|| DataFusionError::Internal("no row converter".to_string()))?;
                    let rows: Vec<_> = codes.map(|c| values.rows[c as usize].row()).collect();
                    let mut arrays = converter.convert_rows(rows)?;
                    arrays.pop().ok_or_else(|| {
                        DataFusionError::Internal("no group column converted".to_string())
                    })?
                }
                GroupColumn::Range { min, .. } => Arc::new(Int64Array::from_iter(
                    codes.map(|c| (c > 0).then(|| min + i64::from(c) - 1)),
                )),
                GroupColumn::Runs(_) => Arc::new(Int64Array::from(self.run_keys.clone())),
            };
            out.push(cast_to(array, field.data_type())?);
        }
        for (a, acc) in spec.aggregates.iter().zip(&self.accs) {
            // A group that took no value has a null sum or extreme.
            let seen = || acc.counts.iter().map(|&n| n > 0);
            let ints = || acc.ints.iter().zip(seen()).map(|(&v, k)| k.then_some(v));
            let floats = || acc.floats.iter().zip(seen()).map(|(&v, k)| k.then_some(v));
            match a {
                Aggregate::Count(_) => {
                    let c: Vec<i64> = acc.counts.iter().map(|&n| n as i64).collect();
                    out.push(Arc::new(Int64Array::from(c)));
                }
                Aggregate::SumInt { out: dt, .. } => out.push(int_state(ints(), dt)?),
                Aggregate::MinMax { out: dt, .. } => {
                    let extremes = acc.ints.iter().zip(&acc.set);
                    out.push(int_state(extremes.map(|(&v, &s)| s.then_some(v)), dt)?);
                }
                Aggregate::SumFloat(_) => out.push(Arc::new(Float64Array::from_iter(floats()))),
                // An average's count is null, as its sum is, where the group took no
                // value: DataFusion's final average counts a group whose partial count
                // is not null as one that took values (0 / 0: NaN, not null).
                Aggregate::AvgInt { out: dt, .. } => {
                    out.push(Arc::new(avg_counts(&acc.counts)));
                    out.push(int_state(ints(), dt)?);
                }
                Aggregate::AvgFloat(_) => {
                    out.push(Arc::new(avg_counts(&acc.counts)));
                    out.push(Arc::new(Float64Array::from_iter(floats())));
                }
            }
        }
        debug_assert!(out.iter().all(|a| a.len() == groups));
        Ok(RecordBatch::try_new(schema, out)?)
    }
}

/// The counts of an average's partial state: null where a group took no value.
fn avg_counts(counts: &[u64]) -> UInt64Array {
    UInt64Array::from_iter(counts.iter().map(|&n| (n > 0).then_some(n)))
}

/// A dictionary column's codes: per row the key (the dictionary's length for a null), the
/// number of codes, and the column-wide code of each key (new values added to `values`).
#[inline(always)]
fn dictionary_codes(
    array: &ArrayRef,
    values: &mut GroupValues,
) -> Result<(Vec<u32>, usize, Vec<u32>)> {
    let dict = array.as_dictionary_opt::<Int32Type>().ok_or_else(|| {
        DataFusionError::Internal(format!(
            "group column is {}, not a dictionary",
            array.data_type()
        ))
    })?;
    let converter = values
        .converter
        .as_ref()
        .ok_or_else(|| DataFusionError::Internal("no row converter".to_string()))?;
    let n = dict.values().len();
    // The dictionary's values, then a null for null keys.
    let null = datafusion::arrow::array::new_null_array(dict.values().data_type(), 1);
    let converted = [
        converter.convert_columns(&[Arc::clone(dict.values())])?,
        converter.convert_columns(&[null])?,
    ];
    let mut global = Vec::with_capacity(n + 1);
    for row in converted.iter().flat_map(|rows| rows.iter()) {
        let id = match values.ids.get(&row.owned()) {
            Some(&id) => id,
            None => {
                let id = values.rows.len() as u32;
                values.rows.push(row.owned());
                values.ids.insert(row.owned(), id);
                id
            }
        };
        global.push(id);
    }
    let keys = dict.keys();
    // A key beyond the dictionary cannot come from a valid array; it is read as null.
    let code = |k: i32| usize::try_from(k).ok().filter(|&k| k < n).unwrap_or(n) as u32;
    let codes: Vec<u32> = match keys.nulls().filter(|b| b.null_count() > 0) {
        None => keys.values().iter().map(|&k| code(k)).collect(),
        Some(b) => (keys.values().iter().zip(b.iter()))
            .map(|(&k, valid)| if valid { code(k) } else { n as u32 })
            .collect(),
    };
    Ok((codes, n + 1, global))
}

/// A small-range integer column's codes: `value - min + 1`, 0 for null; the codes are
/// column-wide already.
#[inline(always)]
fn range_codes(array: &ArrayRef, min: i64, max: i64) -> Result<(Vec<u32>, usize, Vec<u32>)> {
    let values = int_values(array)?;
    let n = usize::try_from(max - min).unwrap_or(0) + 2;
    // Every value's code, nulls' included (they are set to 0 after), in one pass that
    // notes any value outside the bounds instead of branching on each.
    let mut outside = false;
    let mut codes: Vec<u32> = (values.iter())
        .map(|&v| {
            outside |= v < min || v > max;
            v.wrapping_sub(min).wrapping_add(1) as u32
        })
        .collect();
    let nulls = array.logical_nulls().filter(|n| n.null_count() > 0);
    if let Some(nulls) = &nulls {
        zero_nulls(&mut codes, nulls);
    }
    let valid = |i: &usize| nulls.as_ref().is_none_or(|n| n.is_valid(*i));
    if outside
        && let Some(v) = (0..values.len())
            .filter(valid)
            .map(|i| values[i])
            .find(|v| *v < min || *v > max)
    {
        return Err(DataFusionError::Execution(format!(
            "group value {v} outside the zone maps' bounds {min}..={max}: damaged statistics"
        )));
    }
    Ok((codes, n, (0..n as u32).collect()))
}

/// An integer-like column's values as `i64` (decimals unscaled).
#[inline(always)]
fn int_values(array: &ArrayRef) -> Result<ScalarBuffer<i64>> {
    fn widen<T: Copy>(v: &[T], f: impl Fn(T) -> i64) -> ScalarBuffer<i64> {
        v.iter().map(|&x| f(x)).collect::<Vec<_>>().into()
    }
    Ok(match array.data_type() {
        DataType::Int8 => widen(array.as_primitive::<Int8Type>().values(), i64::from),
        DataType::Int16 => widen(array.as_primitive::<Int16Type>().values(), i64::from),
        DataType::Int32 => widen(array.as_primitive::<Int32Type>().values(), i64::from),
        DataType::Int64 => array.as_primitive::<Int64Type>().values().clone(),
        DataType::UInt8 => widen(array.as_primitive::<UInt8Type>().values(), i64::from),
        DataType::UInt16 => widen(array.as_primitive::<UInt16Type>().values(), i64::from),
        DataType::UInt32 => widen(array.as_primitive::<UInt32Type>().values(), i64::from),
        DataType::Date32 => widen(array.as_primitive::<Date32Type>().values(), i64::from),
        DataType::Decimal128(..) => {
            let v = array.as_primitive::<Decimal128Type>();
            // One pass: truncate, and note whether any value did not fit.
            let mut lost = 0i128;
            let narrow: Vec<i64> = (v.values().iter())
                .map(|&x| {
                    lost |= x ^ i128::from(x as i64);
                    x as i64
                })
                .collect();
            if lost == 0 {
                return Ok(narrow.into());
            }
            // Null slots may hold anything; only valid values must fit.
            let mut out = Vec::with_capacity(v.len());
            for (i, &x) in v.values().iter().enumerate() {
                match i64::try_from(x) {
                    Ok(x) => out.push(x),
                    Err(_) if v.is_null(i) => out.push(0),
                    Err(_) => {
                        return Err(DataFusionError::Execution(format!(
                            "decimal value {x} outside the zone maps' bounds: damaged statistics"
                        )));
                    }
                }
            }
            out.into()
        }
        other => {
            return Err(DataFusionError::Internal(format!(
                "{other} is not an integer column"
            )));
        }
    })
}

/// Computes `node` on `batch`, from the nodes before it.
#[inline(always)]
fn evaluate(node: &Node, nodes: &[Column], batch: &RecordBatch) -> Result<Column> {
    Ok(match node {
        Node::IntColumn(c) => {
            let a = batch.column(*c);
            Column {
                values: Values::Ints(int_values(a)?),
                nulls: a.logical_nulls(),
            }
        }
        Node::FloatColumn(c) => {
            let a = batch.column(*c);
            let f = a.as_primitive_opt::<Float64Type>().ok_or_else(|| {
                DataFusionError::Internal(format!("{} is not Float64", a.data_type()))
            })?;
            Column {
                values: Values::Floats(f.values().clone()),
                nulls: a.logical_nulls(),
            }
        }
        Node::Valid(c) => Column {
            values: Values::Int(0),
            nulls: batch.column(*c).logical_nulls(),
        },
        Node::Int(v, _) => Column {
            values: Values::Int(*v),
            nulls: None,
        },
        Node::Float(bits) => Column {
            values: Values::Float(f64::from_bits(*bits)),
            nulls: None,
        },
        Node::Scale(i, k) => {
            let c = &nodes[*i];
            let k = *k;
            Column {
                values: match &c.values {
                    Values::Ints(v) => Values::Ints(
                        v.iter()
                            .map(|&x| x.wrapping_mul(k))
                            .collect::<Vec<_>>()
                            .into(),
                    ),
                    Values::Int(x) => Values::Int(x.wrapping_mul(k)),
                    _ => return Err(lane_error()),
                },
                nulls: c.nulls.clone(),
            }
        }
        Node::ToFloat(i) => {
            let c = &nodes[*i];
            Column {
                values: match &c.values {
                    Values::Ints(v) => {
                        Values::Floats(v.iter().map(|&x| x as f64).collect::<Vec<_>>().into())
                    }
                    Values::Int(x) => Values::Float(*x as f64),
                    _ => return Err(lane_error()),
                },
                nulls: c.nulls.clone(),
            }
        }
        Node::Op(op, l, r) => {
            let (l, r) = (&nodes[*l], &nodes[*r]);
            let nulls = NullBuffer::union(l.nulls.as_ref(), r.nulls.as_ref());
            // Bounds were proven when the plan was made: no operation can overflow. One
            // loop per operation, so that each vectorizes.
            let values = match op {
                Op::Add => combine(&l.values, &r.values, i64::wrapping_add, |a, b| a + b),
                Op::Sub => combine(&l.values, &r.values, i64::wrapping_sub, |a, b| a - b),
                Op::Mul => combine(&l.values, &r.values, i64::wrapping_mul, |a, b| a * b),
            }?;
            Column { values, nulls }
        }
    })
}

/// `int` or `float` applied to two nodes' values, row by row (a literal to every row).
/// Results are collected into a `Vec` (whose exact length lets the loop vectorize), then
/// handed to Arrow without a copy.
#[inline(always)]
fn combine(
    l: &Values,
    r: &Values,
    int: impl Fn(i64, i64) -> i64,
    float: impl Fn(f64, f64) -> f64,
) -> Result<Values> {
    Ok(match (l, r) {
        (Values::Ints(a), Values::Ints(b)) => Values::Ints(
            a.iter()
                .zip(b.iter())
                .map(|(&a, &b)| int(a, b))
                .collect::<Vec<_>>()
                .into(),
        ),
        (Values::Ints(a), Values::Int(b)) => {
            Values::Ints(a.iter().map(|&a| int(a, *b)).collect::<Vec<_>>().into())
        }
        (Values::Int(a), Values::Ints(b)) => {
            Values::Ints(b.iter().map(|&b| int(*a, b)).collect::<Vec<_>>().into())
        }
        (Values::Int(a), Values::Int(b)) => Values::Int(int(*a, *b)),
        (Values::Floats(a), Values::Floats(b)) => Values::Floats(
            a.iter()
                .zip(b.iter())
                .map(|(&a, &b)| float(a, b))
                .collect::<Vec<_>>()
                .into(),
        ),
        (Values::Floats(a), Values::Float(b)) => {
            Values::Floats(a.iter().map(|&a| float(a, *b)).collect::<Vec<_>>().into())
        }
        (Values::Float(a), Values::Floats(b)) => {
            Values::Floats(b.iter().map(|&b| float(*a, b)).collect::<Vec<_>>().into())
        }
        (Values::Float(a), Values::Float(b)) => Values::Float(float(*a, *b)),
        _ => return Err(lane_error()),
    })
}

fn lane_error() -> DataFusionError {
    DataFusionError::Internal("aggregate argument lanes out of step".to_string())
}

/// Adds one batch's rows to `acc`: `ids` are the rows' groups, `rows` each group's rows.
/// One batch, as the aggregates see it.
struct Batch<'a> {
    /// Each row's group.
    ids: &'a [u32],
    /// Each group's rows.
    rows: &'a [u64],
    /// The argument nodes' values.
    nodes: &'a [Column],
    lanes: &'a [Lane],
}

/// Adds one batch to `acc`; `sums` keeps the batch's per-group sums of each argument node
/// already summed.
#[inline(always)]
fn accumulate(a: &Aggregate, acc: &mut Acc, batch: &Batch, sums: &mut HashMap<usize, Vec<i128>>) {
    let Batch {
        ids,
        rows,
        nodes,
        lanes,
    } = *batch;
    let node = match a {
        Aggregate::Count(n) => *n,
        Aggregate::SumInt { node, .. }
        | Aggregate::AvgInt { node, .. }
        | Aggregate::MinMax { node, .. }
        | Aggregate::SumFloat(node)
        | Aggregate::AvgFloat(node) => Some(*node),
    };
    let column = node.map(|n| &nodes[n]);
    let nulls = column
        .and_then(|c| c.nulls.as_ref())
        .filter(|n| n.null_count() > 0);
    let values = column.map(|c| &c.values);
    // Each group's valid values: its rows when all are valid. `MIN` and `MAX` count none
    // with nulls (whether a group took a value is in `set`).
    match (nulls, acc.counts.as_mut_slice()) {
        (None, counts) => {
            for (c, &n) in counts.iter_mut().zip(rows) {
                *c += n;
            }
        }
        (Some(n), [count]) => *count += (n.len() - n.null_count()) as u64,
        (Some(_), _) if matches!(a, Aggregate::MinMax { .. }) => {}
        (Some(n), counts) => {
            // Each group's rows less its null rows: one step per null, not per row.
            for (c, &k) in counts.iter_mut().zip(rows) {
                *c += k;
            }
            for (ids, word) in ids.chunks(64).zip(valid_words(n)) {
                let mut null = !word & (u64::MAX >> (64 - ids.len()));
                while null != 0 {
                    counts[ids[null.trailing_zeros() as usize] as usize] -= 1;
                    null &= null - 1;
                }
            }
        }
    }
    match (a, values) {
        (Aggregate::Count(_), _) => {}
        (
            Aggregate::SumInt { node, .. } | Aggregate::AvgInt { node, .. },
            Some(Values::Ints(v)),
        ) => {
            // A match rather than `or_insert_with`, whose closure would not be inlined into
            // `State::add`'s wrapper.
            let batch_sums = match sums.entry(*node) {
                Entry::Occupied(e) => e.into_mut(),
                Entry::Vacant(e) => {
                    let mut s = vec![0i128; acc.ints.len()];
                    let max_abs = lanes[*node].max_abs().unwrap_or(i128::MAX);
                    match nulls {
                        None => add_ints(ids, v, max_abs, &mut s),
                        Some(n) if s.len() == 1 => s[0] += sum_valid(v, n, max_abs),
                        Some(n) => {
                            // A null's slot may hold anything: it is summed as 0.
                            let mut masked = v.to_vec();
                            zero_nulls(&mut masked, n);
                            add_ints(ids, &masked, max_abs, &mut s);
                        }
                    }
                    e.insert(s)
                }
            };
            for (total, s) in acc.ints.iter_mut().zip(batch_sums.iter()) {
                *total += s;
            }
        }
        (Aggregate::SumFloat(_) | Aggregate::AvgFloat(_), Some(Values::Floats(v))) => match nulls {
            None => {
                for (&g, &x) in ids.iter().zip(v) {
                    acc.floats[g as usize] += x;
                }
            }
            // A null row adds -0.0, which leaves every sum as it was (-0.0 too), whatever
            // its slot holds.
            Some(n) => {
                for ((ids, v), word) in ids.chunks(64).zip(v.chunks(64)).zip(valid_words(n)) {
                    for (i, (&g, &x)) in ids.iter().zip(v).enumerate() {
                        let valid = (word >> i) & 1 == 1;
                        acc.floats[g as usize] += if valid { x } else { -0.0 };
                    }
                }
            }
        },
        (Aggregate::MinMax { max, .. }, Some(Values::Ints(v))) => {
            extremes(acc, ids, v, nulls, *max)
        }
        _ => each_valid(a, acc, ids, values, |r| nulls.is_none_or(|n| n.is_valid(r))),
    }
}

/// The validity bits of `nulls` as words of 64 rows from its first row (the last one
/// padded with zeros), for loops that take each row's bit without a branch.
fn valid_words(nulls: &NullBuffer) -> impl Iterator<Item = u64> + '_ {
    let chunks = nulls.inner().bit_chunks();
    let rest = (chunks.remainder_len() > 0).then(|| chunks.remainder_bits());
    chunks.into_iter().chain(rest)
}

/// Sets the slots of `values` that `nulls` marks null to zero, without a branch per row.
#[inline(always)]
fn zero_nulls<T>(values: &mut [T], nulls: &NullBuffer)
where
    T: Copy + Default + std::ops::Not<Output = T> + std::ops::BitAndAssign,
{
    let (none, all) = (T::default(), !T::default());
    for (chunk, word) in values.chunks_mut(64).zip(valid_words(nulls)) {
        for (i, x) in chunk.iter_mut().enumerate() {
            // Every bit kept for a valid row, none for a null one.
            *x &= if (word >> i) & 1 == 1 { all } else { none };
        }
    }
}

/// Folds the integer values `v` of the valid rows (all if `nulls` is `None`) into their
/// groups' extremes: the batch's extreme of each group first (with one group by
/// `sift_bits::extreme`, SIMD masked by the validity bits; with more, a branchless pass
/// over the rows), then one comparison per group.
#[inline(always)]
fn extremes(acc: &mut Acc, ids: &[u32], v: &[i64], nulls: Option<&NullBuffer>, max: bool) {
    let groups = acc.set.len();
    let one = groups == 1;
    let mut fold = |g: usize, x: i64| acc.fold_extreme(g, i128::from(x), max);
    let level = sift_bits::Level::active();
    match (one, nulls) {
        (true, None) => {
            if let Some(x) = sift_bits::extreme::extreme_i64(level, v, None, max) {
                fold(0, x);
            }
        }
        (true, Some(n)) => {
            // The validity bits from bit 0 of a buffer (a copy only when they start
            // inside a byte).
            let bits = n.inner().sliced();
            if let Some(x) = sift_bits::extreme::extreme_i64(level, v, Some(bits.as_slice()), max) {
                fold(0, x);
            }
        }
        (false, nulls) => {
            let part = match max {
                true => group_extremes::<true>(ids, v, nulls, groups),
                false => group_extremes::<false>(ids, v, nulls, groups),
            };
            for (g, x) in part.into_iter().enumerate() {
                if let Some(x) = x {
                    fold(g, x);
                }
            }
        }
    }
}

/// Each of `groups` groups' extreme (largest if `MAX`) of the valid rows' values `v`, in
/// 64 bits and without a branch on each row: a null row counts as the identity. `None`
/// for a group without a valid row.
#[inline(always)]
fn group_extremes<const MAX: bool>(
    ids: &[u32],
    v: &[i64],
    nulls: Option<&NullBuffer>,
    groups: usize,
) -> Vec<Option<i64>> {
    let identity = if MAX { i64::MIN } else { i64::MAX };
    let better = |a: i64, b: i64| if MAX { a.max(b) } else { a.min(b) };
    let mut part = vec![identity; groups];
    match nulls {
        None => {
            for (&g, &x) in ids.iter().zip(v) {
                let p = &mut part[g as usize];
                *p = better(*p, x);
            }
        }
        Some(n) => {
            for ((ids, v), word) in ids.chunks(64).zip(v.chunks(64)).zip(valid_words(n)) {
                for (i, (&g, &x)) in ids.iter().zip(v).enumerate() {
                    // All ones for a valid row, which keeps its value.
                    let keep = 0i64.wrapping_sub(((word >> i) & 1) as i64);
                    let p = &mut part[g as usize];
                    *p = better(*p, (x & keep) | (identity & !keep));
                }
            }
        }
    }
    // A group still at the identity took no valid row, unless its valid values all equal
    // the identity: rows holding it are looked for only when there are any.
    let mut seen: Vec<bool> = part.iter().map(|&p| p != identity).collect();
    if v.contains(&identity) {
        for (r, (&g, &x)) in ids.iter().zip(v).enumerate() {
            if x == identity && nulls.is_none_or(|n| n.is_valid(r)) {
                seen[g as usize] = true;
            }
        }
    }
    (part.into_iter().zip(seen))
        .map(|(p, s)| s.then_some(p))
        .collect()
}

/// Adds the valid rows' values to `acc`'s sums or extremes, one row at a time (counts
/// are done by the caller).
#[inline(always)]
fn each_valid(
    a: &Aggregate,
    acc: &mut Acc,
    ids: &[u32],
    values: Option<&Values>,
    valid: impl Fn(usize) -> bool,
) {
    let int = |r: usize| match values {
        Some(Values::Ints(v)) => v[r],
        Some(Values::Int(x)) => *x,
        _ => 0,
    };
    let float = |r: usize| match values {
        Some(Values::Floats(v)) => v[r],
        Some(Values::Float(x)) => *x,
        _ => 0.0,
    };
    for (r, &g) in ids.iter().enumerate() {
        if !valid(r) {
            continue;
        }
        let g = g as usize;
        match a {
            Aggregate::Count(_) => {}
            Aggregate::SumInt { .. } | Aggregate::AvgInt { .. } => {
                acc.ints[g] += i128::from(int(r))
            }
            Aggregate::SumFloat(_) | Aggregate::AvgFloat(_) => acc.floats[g] += float(r),
            Aggregate::MinMax { max, .. } => {
                let x = i128::from(int(r));
                if !acc.set[g] || (*max && x > acc.ints[g]) || (!*max && x < acc.ints[g]) {
                    acc.ints[g] = x;
                    acc.set[g] = true;
                }
            }
        }
    }
}

/// Whether any sum of `rows` values each at most `max_abs` in magnitude fits an `i64`.
#[inline(always)]
fn sums_fit_i64(max_abs: i128, rows: usize) -> bool {
    (max_abs.checked_mul(rows as i128)).is_some_and(|t| t < i128::from(i64::MAX))
}

/// The sum of the values of the rows `nulls` marks valid (a null's slot may hold
/// anything), without a copy of the values: each word of 64 rows masked by its validity
/// bits and summed on `i64`, which holds it while `max_abs` (bounding every value) times
/// the batch's rows does.
#[inline(always)]
fn sum_valid(values: &[i64], nulls: &NullBuffer, max_abs: i128) -> i128 {
    let fits = sums_fit_i64(max_abs, values.len());
    let mut total = 0i128;
    for (chunk, word) in values.chunks(64).zip(valid_words(nulls)) {
        let masked = (chunk.iter().enumerate())
            .map(|(i, &x)| x & 0i64.wrapping_sub(((word >> i) & 1) as i64));
        match fits {
            true => total += i128::from(masked.sum::<i64>()),
            false => total += masked.map(i128::from).sum::<i128>(),
        }
    }
    total
}

/// Adds each value to its group's sum. Four interleaved partial sums per group, so that
/// rows of one group in a row do not wait for each other's additions; the partials are
/// `i64`, exact while a batch's sum fits: `max_abs` bounds every value (proven when the
/// plan was made).
#[inline(always)]
fn add_ints(ids: &[u32], values: &[i64], max_abs: i128, sums: &mut [i128]) {
    if !sums_fit_i64(max_abs, values.len()) {
        for (&g, &x) in ids.iter().zip(values) {
            sums[g as usize] += i128::from(x);
        }
        return;
    }
    if sums.len() <= FEW_GROUPS {
        for (g, sum) in sums.iter_mut().enumerate() {
            let g = g as u32;
            let masked = ids
                .iter()
                .zip(values)
                .map(|(&id, &x)| if id == g { x } else { 0 });
            *sum += i128::from(masked.sum::<i64>());
        }
        return;
    }
    // Few groups: partials in a fixed array, indexed without bounds checks.
    if sums.len() <= SMALL_GROUPS {
        let mut part = [[0i64; 4]; SMALL_GROUPS];
        let (ids4, values4) = (ids.chunks_exact(4), values.chunks_exact(4));
        let (id_tail, value_tail) = (ids4.remainder(), values4.remainder());
        for (g, x) in ids4.zip(values4) {
            for lane in 0..4 {
                part[g[lane] as usize % SMALL_GROUPS][lane] += x[lane];
            }
        }
        for (&g, &x) in id_tail.iter().zip(value_tail) {
            part[g as usize % SMALL_GROUPS][0] += x;
        }
        for (sum, p) in sums.iter_mut().zip(part) {
            *sum += p.iter().map(|&x| i128::from(x)).sum::<i128>();
        }
        return;
    }
    let mut part = vec![0i64; 4 * sums.len()];
    let (ids4, values4) = (ids.chunks_exact(4), values.chunks_exact(4));
    let (id_tail, value_tail) = (ids4.remainder(), values4.remainder());
    for (g, x) in ids4.zip(values4) {
        for lane in 0..4 {
            part[g[lane] as usize * 4 + lane] += x[lane];
        }
    }
    for (&g, &x) in id_tail.iter().zip(value_tail) {
        part[g as usize * 4] += x;
    }
    for (sum, p) in sums.iter_mut().zip(part.chunks_exact(4)) {
        *sum += p.iter().map(|&x| i128::from(x)).sum::<i128>();
    }
}

/// Integer states as an array of `dt` (a decimal holds them unscaled).
fn int_state(values: impl Iterator<Item = Option<i128>>, dt: &DataType) -> Result<ArrayRef> {
    match dt {
        DataType::Decimal128(p, s) => Ok(Arc::new(
            Decimal128Array::from_iter(values).with_precision_and_scale(*p, *s)?,
        )),
        dt => {
            let v: Vec<Option<i64>> = values
                .map(|v| v.map(i64::try_from).transpose())
                .collect::<Result<_, _>>()
                .map_err(|e| DataFusionError::Internal(format!("state out of range: {e}")))?;
            cast_to(Arc::new(Int64Array::from(v)), dt)
        }
    }
}

fn cast_to(array: ArrayRef, dt: &DataType) -> Result<ArrayRef> {
    use datafusion::arrow::compute::cast;
    Ok(match (array.data_type(), dt) {
        (a, b) if a == b => array,
        // Days are cast through Int32 (there is no direct cast from Int64).
        (DataType::Int64, DataType::Date32) => cast(&cast(&array, &DataType::Int32)?, dt)?,
        _ => cast(&array, dt)?,
    })
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// Range codes: `value - min + 1`, 0 for null (whatever its slot holds), and a value
    /// outside the bounds an error naming it.
    #[test]
    fn range_codes_of_values_nulls_and_values_out_of_bounds() -> Result<()> {
        let a: ArrayRef = Arc::new(Int64Array::new(
            vec![5, 7, 900, 6].into(),
            Some(NullBuffer::from(vec![true, true, false, true])),
        ));
        let (codes, n, all) = range_codes(&a, 5, 7)?;
        assert_eq!((codes, n, all), (vec![1, 3, 0, 2], 4, vec![0, 1, 2, 3]));
        let b: ArrayRef = Arc::new(Int64Array::from(vec![5, 8]));
        let err = range_codes(&b, 5, 7).err().map(|e| e.to_string());
        assert!(
            err.as_ref()
                .is_some_and(|e| e.contains("group value 8 outside")),
            "{err:?}"
        );
        Ok(())
    }

    /// Runs: a group wherever the value or its validity changes (a null's slot holds
    /// anything), numbered on from the groups before, each with its value (a first run
    /// with the last group's value continues it); a batch whose runs average fewer than
    /// two rows: a group per distinct value (nulls one group).
    #[test]
    fn run_ids_split_at_every_change() -> Result<()> {
        let spec = Spec {
            nodes: Vec::new(),
            lanes: Vec::new(),
            groups: vec![GroupColumn::Runs(0)],
            aggregates: vec![Aggregate::Count(None)],
            names: Vec::new(),
            group_names: Vec::new(),
            counted: None,
            completes: None,
            source: String::new(),
        };
        let schema = Arc::new(datafusion::arrow::datatypes::Schema::new(vec![
            datafusion::arrow::datatypes::Field::new("o", DataType::Int64, true),
        ]));
        let state_schema = Arc::clone(&schema);
        let mut state = State::new(&spec, schema)?;
        let valid = |v: &[bool]| Some(NullBuffer::from(v.to_vec()));
        let a: ArrayRef = Arc::new(Int64Array::new(
            vec![4, 4, 4, 4, 9, 1, 1, 1, 1, 9, 9, 9].into(),
            valid(&[
                true, true, true, false, false, true, true, true, true, true, true, true,
            ]),
        ));
        assert_eq!(state.run_ids(&a)?, vec![0, 0, 0, 1, 2, 3, 3, 3, 3, 4, 4, 4]);
        let b: ArrayRef = Arc::new(Int64Array::from(vec![9, 9, 12, 12]));
        assert_eq!(state.run_ids(&b)?, vec![4, 4, 5, 5]);
        // Six runs in six rows: grouped by value.
        let c: ArrayRef = Arc::new(Int64Array::new(
            vec![5, 3, 5, 3, 8, 3].into(),
            valid(&[true, true, true, true, false, true]),
        ));
        assert_eq!(state.run_ids(&c)?, vec![6, 7, 6, 7, 8, 7]);
        assert_eq!(state.regroup, Some(true));
        let keys = [
            Some(4),
            None,
            None,
            Some(1),
            Some(9),
            Some(12),
            Some(5),
            Some(3),
            None,
        ];
        assert_eq!(state.run_keys, keys);
        assert_eq!(state.accs[0].counts.len(), keys.len());
        // A first batch of short runs, mostly of distinct values: runs from then on.
        let mut state = State::new(&spec, state_schema)?;
        let d: ArrayRef = Arc::new(Int64Array::from(vec![3, 1, 2, 3]));
        assert_eq!(state.run_ids(&d)?, vec![0, 1, 2, 0]);
        assert_eq!(state.regroup, Some(false));
        let e: ArrayRef = Arc::new(Int64Array::from(vec![5, 3, 5, 3]));
        assert_eq!(state.run_ids(&e)?, vec![3, 4, 5, 6]);
        Ok(())
    }

    proptest! {
        /// The interleaved partial sums equal plain 128-bit sums, with few groups or many,
        /// and with values near the bound that sends them to the 128-bit loop.
        #[test]
        fn partial_sums_equal_plain_sums(
            groups in 1usize..40,
            rows in proptest::collection::vec((0u32..1000, any::<i64>()), 0..300),
            shift in 0u32..63,
        ) {
            let ids: Vec<u32> = rows.iter().map(|(g, _)| g % groups as u32).collect();
            let values: Vec<i64> = rows.iter().map(|(_, v)| v >> shift).collect();
            let max_abs = values.iter().map(|v| i128::from(*v).abs()).max().unwrap_or(0);
            let mut expected = vec![0i128; groups];
            for (&g, &v) in ids.iter().zip(&values) {
                expected[g as usize] += i128::from(v);
            }
            let mut got = vec![7i128; groups];
            add_ints(&ids, &values, max_abs, &mut got);
            let got: Vec<i128> = got.iter().map(|s| s - 7).collect();
            prop_assert_eq!(got, expected);
        }

        /// Each group's extreme of its valid rows equals a plain fold over them: values at
        /// the identities (`i64::MIN` for `MAX`, `i64::MAX` for `MIN`), groups without a
        /// valid row, batches past 64 rows and without nulls.
        #[test]
        fn group_extremes_equal_a_plain_fold(
            groups in 1usize..12,
            rows in proptest::collection::vec(
                (
                    0u32..1000,
                    prop_oneof![Just(i64::MIN), Just(i64::MAX), -3i64..3, any::<i64>()],
                    proptest::bool::weighted(0.8),
                ),
                0..300,
            ),
            nullable in any::<bool>(),
        ) {
            let ids: Vec<u32> = rows.iter().map(|(g, _, _)| g % groups as u32).collect();
            let v: Vec<i64> = rows.iter().map(|(_, x, _)| *x).collect();
            let valid: Vec<bool> = rows.iter().map(|(_, _, ok)| *ok || !nullable).collect();
            let nulls = nullable.then(|| NullBuffer::from(valid.clone()));
            for max in [false, true] {
                let mut expected: Vec<Option<i64>> = vec![None; groups];
                for ((&g, &x), &ok) in ids.iter().zip(&v).zip(&valid) {
                    let e = &mut expected[g as usize];
                    if ok {
                        *e = Some(e.map_or(x, |e| if max { e.max(x) } else { e.min(x) }));
                    }
                }
                let got = match max {
                    true => group_extremes::<true>(&ids, &v, nulls.as_ref(), groups),
                    false => group_extremes::<false>(&ids, &v, nulls.as_ref(), groups),
                };
                prop_assert_eq!(got, expected);
            }
        }

        /// A batch added at every instruction-set level the CPU has (`State::add` is
        /// compiled once per level) gives each group the count, sum of a product, and
        /// maximum of a plain fold: few groups (counted and summed a group at a time) and
        /// more (through partials), with nulls in the group and argument columns.
        #[test]
        fn every_level_adds_a_batch_as_a_plain_fold(
            groups in 1i64..14,
            rows in proptest::collection::vec(
                (0i64..1000, -1000i64..1000, -1000i64..1000, proptest::bool::weighted(0.9)),
                0..700,
            ),
        ) {
            use sift_bits::{Level, with_level};
            let key: Vec<Option<i64>> =
                rows.iter().map(|r| (r.3 || r.0 % 3 > 0).then_some(r.0 % groups)).collect();
            let x: Vec<Option<i64>> = rows.iter().map(|r| r.3.then_some(r.1)).collect();
            let y: Vec<i64> = rows.iter().map(|r| r.2).collect();
            let schema = Arc::new(datafusion::arrow::datatypes::Schema::new(
                ["k", "x", "y"].map(|n| {
                    datafusion::arrow::datatypes::Field::new(n, DataType::Int64, true)
                }).to_vec(),
            ));
            let batch = RecordBatch::try_new(Arc::clone(&schema), vec![
                Arc::new(Int64Array::from(key.clone())),
                Arc::new(Int64Array::from(x.clone())),
                Arc::new(Int64Array::from(y.clone())),
            ])?;
            let bound = Lane::Int { scale: 0, lo: -1000, hi: 1000 };
            let spec = Spec {
                nodes: vec![Node::IntColumn(1), Node::IntColumn(2), Node::Op(Op::Mul, 0, 1)],
                lanes: vec![bound, bound, Lane::Int { scale: 0, lo: -1_000_000, hi: 1_000_000 }],
                groups: vec![GroupColumn::Range { column: 0, min: 0, max: groups - 1 }],
                aggregates: vec![
                    Aggregate::Count(None),
                    Aggregate::SumInt { node: 2, out: DataType::Int64 },
                    Aggregate::MinMax { node: 0, max: true, out: DataType::Int64 },
                ],
                names: Vec::new(),
                group_names: Vec::new(),
                counted: None,
                completes: None,
                source: String::new(),
            };
            // Per group key (None: null keys): rows, sum of x * y, max of x.
            let mut expected: HashMap<Option<i64>, (i64, Option<i64>, Option<i64>)> =
                HashMap::new();
            for ((k, x), y) in key.iter().zip(&x).zip(&y) {
                let e = expected.entry(*k).or_insert((0, None, None));
                e.0 += 1;
                if let Some(x) = x {
                    e.1 = Some(e.1.unwrap_or(0) + x * y);
                    e.2 = Some(e.2.map_or(*x, |m: i64| m.max(*x)));
                }
            }
            let out_schema = Arc::new(datafusion::arrow::datatypes::Schema::new(
                ["k", "n", "s", "m"].map(|n| {
                    datafusion::arrow::datatypes::Field::new(n, DataType::Int64, true)
                }).to_vec(),
            ));
            for level in Level::supported() {
                let out = with_level(level, || -> Result<RecordBatch> {
                    let mut state = State::new(&spec, Arc::clone(&schema))?;
                    state.add(&spec, &batch)?;
                    state.finish(&spec, Arc::clone(&out_schema))
                })?;
                let column = |c: usize| out.column(c).as_primitive::<Int64Type>().clone();
                let (k, n, s, m) = (column(0), column(1), column(2), column(3));
                let got: HashMap<_, _> = (0..out.num_rows())
                    .map(|r| {
                        let at = |a: &Int64Array| a.is_valid(r).then(|| a.value(r));
                        (at(&k), (n.value(r), at(&s), at(&m)))
                    })
                    .collect();
                prop_assert_eq!(&got, &expected, "{:?}", level);
            }
        }
    }
}
