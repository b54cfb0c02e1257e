//! Sift's scan engine: filters evaluated on encoded data, with selection pushdown, zone
//! maps, run-time filter ordering and payload skipping.
//!
//! ```no_run
//! use sift_scan::{col, scan, Literal};
//! let filter = col("l_shipdate").gte(Literal::date("1994-01-01").unwrap())
//!     .and(col("l_quantity").lt(24));
//! for batch in scan("lineitem.sift").project(["l_extendedprice"]).filter(filter) {
//!     let batch = batch?;
//!     println!("{} rows", batch.num_rows());
//! }
//! # Ok::<(), sift_scan::Error>(())
//! ```
//!
//! Data flow per block: prune by zone maps (`prune.rs`) → order the filters by observed
//! selectivity and cost (`order.rs`) → evaluate them on the encoded chunks, later ones
//! only on the rows still selected (`eval.rs`, with `Chunk::filter` and
//! `Chunk::decode_selected`) → decode only the selected rows of the projected columns.

#![forbid(unsafe_code)]

mod bind;
mod coerce;
mod dataset;
mod error;
mod eval;
mod expr;
mod extremes;
mod keys;
mod like;
mod order;
#[cfg(feature = "parquet")]
mod parquet_input;
#[cfg(feature = "parquet")]
mod parquet_lists;
#[cfg(feature = "parquet")]
mod parquet_page_reader;
#[cfg(feature = "parquet")]
mod parquet_pages;
#[cfg(feature = "parquet")]
mod parquet_source;
#[cfg(feature = "parquet")]
mod parquet_thrift;
#[cfg(feature = "parquet")]
mod parquet_unpack;
#[cfg(feature = "parquet")]
mod parquet_zones;
mod parse;
mod prune;
mod scan;
mod source;
mod stats;

pub use bind::field_type_at;
pub use coerce::scalar_cmp;
pub use dataset::{
    Dataset, DatasetFile, DatasetScan, DatasetScanBuilder, FileCounts, FileScan, Opener,
    SortedColumns,
};
pub use error::{Error, Result, catching_panics};
pub use expr::{CmpOp, Column, Expr, Literal, Udf, UdfFn, col};
pub use extremes::{SELECTED_ROWS, has_extremes};
pub use keys::{BLOOM_FPR, EXACT_KEYS, KeyCollector, KeyDomain, KeyFilter, MAX_KEYS};
#[cfg(feature = "parquet")]
pub use parquet_input::{ParquetFile, codec_name};
pub use parse::parse_filter;
pub use scan::{Scan, ScanBuilder, Table, scan};
pub use stats::ScanStats;
