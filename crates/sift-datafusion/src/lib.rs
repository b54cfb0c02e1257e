//! Sift and Parquet files as DataFusion tables, scanned by Sift's engine.
//!
//! ```no_run
//! # async fn example() -> datafusion::common::Result<()> {
//! let ctx = sift_datafusion::session(4);
//! ctx.register_table("lineitem", std::sync::Arc::new(sift_datafusion::SiftTable::open("lineitem.sift")?))?;
//! let df = ctx.sql("select sum(l_extendedprice * l_discount) from lineitem \
//!                   where l_shipdate >= date '1994-01-01' and l_quantity < 24").await?;
//! df.show().await?;
//! // Files can also be named in FROM, and declared in SQL:
//! ctx.sql("select count(*) from 'data/*.sift'").await?.show().await?;
//! ctx.sql("create external table t stored as sift location 'data/'").await?;
//! # Ok(()) }
//! ```
//!
//! The path of a query: DataFusion plans the SQL; [`SiftTable`] accepts each filter
//! conjunct that `translate.rs` turns into Sift's filter tree with the same meaning
//! (reported [`Exact`](datafusion::logical_expr::TableProviderFilterPushDown::Exact), so
//! no `FilterExec` stays above the scan), plus the projection and `LIMIT`; `exec.rs`'s
//! [`SiftScanExec`] runs one Sift scan per partition of blocks, where filters are
//! evaluated on the encoded data and only the selected rows of the projected columns are
//! decoded; `stats.rs` hands the optimizer row counts and zone-map bounds, and the
//! columns sorted over the blocks, whose sorts `order.rs` drops; `shared.rs` computes an
//! aggregate that the plan holds twice (a view read twice) once. Parquet files go through
//! the same scan (Sift's own Parquet reader), not DataFusion's.

#![forbid(unsafe_code)]

mod aggregate;
mod exec;
mod factory;
mod join_filter;
mod order;
mod shared;
mod stats;
mod table;
mod translate;

use std::sync::Arc;

use datafusion::catalog::UrlTableFactory;
use datafusion::common::config::ConfigExtension;
use datafusion::common::extensions_options;
use datafusion::error::DataFusionError;
use datafusion::execution::SessionStateBuilder;
use datafusion::prelude::{SessionConfig, SessionContext};

pub use aggregate::{ScanAggregates, SiftAggregateExec};
pub use exec::{
    BuildSidesFirst, DynamicResiduals, SiftScanExec, scan_counters, summed_scan_counters,
};
pub use factory::{SiftTableFactory, SiftUrlTables};
pub use join_filter::JoinFilters;
pub use order::{ConcatPartitionsExec, SortedScans};
pub use shared::{SharedExec, SharedSubplans};
pub use sift_store::{PARQUET_EXTENSIONS, SIFT_EXTENSIONS, has_extension};
pub use stats::zone_bound;
pub use table::SiftTable;
pub use translate::to_sift;

extensions_options! {
    /// Sift's options in a DataFusion session, under the prefix `sift`.
    pub struct SiftOptions {
        /// Push the keys of hash joins' selective sides into the Sift scans of the other
        /// side, as Bloom filters or exact IN lists.
        pub join_filters: bool, default = true
        /// Compute the first phase of aggregates over a Sift scan next to it, on the
        /// dictionary codes and 64-bit integers (see `SiftAggregateExec`).
        pub scan_aggregates: bool, default = true
        /// With `scan_aggregates`: ungrouped `MIN` and `MAX` of columns take only each
        /// block's extremes from the scan, folded from a dictionary page's codes where it
        /// has them, instead of its rows.
        pub scan_extremes: bool, default = true
        /// Compute an aggregate that the plan holds more than once (a view or common
        /// table expression read twice) once for all its readers (see `SharedExec`).
        pub shared_subplans: bool, default = true
    }
}

impl ConfigExtension for SiftOptions {
    const PREFIX: &'static str = "sift";
}

impl SiftOptions {
    /// The options of a session's configuration (the defaults when it has none).
    pub(crate) fn of(config: &datafusion::common::config::ConfigOptions) -> SiftOptions {
        (config.extensions.get::<SiftOptions>())
            .cloned()
            .unwrap_or_default()
    }
}

/// A DataFusion session that runs `threads` partitions at once and knows Sift: `CREATE
/// EXTERNAL TABLE … STORED AS SIFT` (also `STORED AS SIFT_PARQUET`, for Parquet files
/// through Sift's engine), and files, directories or globs of `.sift` and `.parquet`
/// files named directly in `FROM` (`select * from 'data/lineitem.sift'`).
pub fn session(threads: usize) -> SessionContext {
    let mut config = SessionConfig::new()
        .with_target_partitions(threads.max(1))
        .with_information_schema(true);
    // Errors then carry the line and column of the SQL they are about.
    config.options_mut().sql_parser.collect_spans = true;
    // On one or two threads a hash join builds one table from its whole build side
    // (CollectLeft) rather than hash-repartitioning both sides, which copies every probe
    // row and makes the aggregates above the join repartition too. TPC-H SF1 at two
    // threads: the 22 queries 1380 -> 1022 ms, Q18 458 -> 198 ms (Q13 and Q21 lose 8-11 ms).
    // With more threads DataFusion's choice stands (`SET
    // datafusion.optimizer.repartition_joins` overrides either way).
    if threads <= 2 {
        config.options_mut().optimizer.repartition_joins = false;
    }
    // A hash join whose integer build keys fill at least 1 % of their range (DataFusion's
    // default: 15 %) indexes its build rows by key in an array instead of hashing: keys
    // such as order numbers of a filtered side are that dense, and the probe, often
    // lineitem in key order, then reads the array in order. The array costs 4 bytes per
    // key of the range (up to 400 per build row at 1 %, against about 30 in a hash
    // table). TPC-H SF1 on one thread: Q21 157 -> 85 ms, Q7 58 -> 44, Q5 65 -> 53, Q11
    // 16.6 -> 9.8, Q22 24.6 -> 19.3; no query slower. `SET
    // datafusion.execution.perfect_hash_join_min_key_density` overrides it.
    config
        .options_mut()
        .execution
        .perfect_hash_join_min_key_density = 0.01;
    let config = config.with_option_extension(SiftOptions::default());
    let state = SessionStateBuilder::new()
        .with_default_features()
        .with_config(config)
        .with_physical_optimizer_rule(Arc::new(JoinFilters))
        .with_physical_optimizer_rule(Arc::new(ScanAggregates))
        .with_physical_optimizer_rule(Arc::new(SortedScans))
        .with_physical_optimizer_rule(Arc::new(DynamicResiduals))
        .with_physical_optimizer_rule(Arc::new(BuildSidesFirst))
        .with_physical_optimizer_rule(Arc::new(SharedSubplans))
        .with_table_factory("SIFT".into(), Arc::new(SiftTableFactory))
        .with_table_factory("SIFT_PARQUET".into(), Arc::new(SiftTableFactory))
        .build();
    register_url_tables(SessionContext::new_with_state(state))
}

/// `ctx` with files named in `FROM` resolved by [`SiftUrlTables`] first.
pub fn register_url_tables(ctx: SessionContext) -> SessionContext {
    let catalogs = Arc::clone(ctx.state().catalog_list());
    let dynamic = datafusion::catalog::DynamicFileCatalog::new(
        catalogs,
        Arc::new(SiftUrlTables) as Arc<dyn UrlTableFactory>,
    );
    ctx.register_catalog_list(Arc::new(dynamic));
    ctx
}

/// The message of a DataFusion error about `sql`, with the line and column of the SQL it
/// points at (and that line, with a caret under the position) when the error knows them.
pub fn error_message(e: &DataFusionError, sql: &str) -> String {
    let position = e
        .diagnostic()
        .and_then(|d| d.span)
        .filter(|s| s.start.line > 0)
        .map(|s| {
            let line = sql.lines().nth(s.start.line as usize - 1).unwrap_or("");
            let col = s.start.column.max(1) as usize;
            // The line, shortened around the position, with a caret under it.
            let from = col.saturating_sub(40);
            let shown: String = line.chars().skip(from).take(80).collect();
            let caret = " ".repeat(col - 1 - from);
            format!(
                " (line {}, column {col})\n  {shown}\n  {caret}^",
                s.start.line
            )
        })
        .unwrap_or_default();
    format!("{}{position}", e.strip_backtrace())
}

// The engine's table is shared by partitions running on several threads.
const _: fn() = || {
    fn shared<T: Send + Sync>() {}
    shared::<sift_scan::Table>();
};
