//! Object stores and datasets.
//!
//! Sift files in S3, GCS, Azure or behind HTTP are read by byte range: the footer with
//! one suffix request (two for a footer larger than the first guess), and a scan's column
//! chunks for several blocks at once, nearby ranges merged into one request and up to
//! `max_in_flight` requests in flight ([`StoreOptions`]). Failed requests are retried
//! with backoff ([`http_counts`] counts them). A dataset is a list of files, a directory,
//! a glob or a Hive-partitioned tree, local or in a store ([`resolve`]).
//!
//! ```no_run
//! let options = sift_store::StoreOptions::default();
//! for file in sift_store::resolve("s3://bucket/lineitem/", &options)? {
//!     let table = sift_store::open_table(&file.location, &options, true)?;
//!     println!("{}: {} rows", file.location, table.num_rows());
//! }
//! # Ok::<(), sift_store::StoreError>(())
//! ```

mod dataset;
mod error;
mod object;
mod runtime;
mod store;
mod upload;

pub use dataset::{
    HIVE_NULL, PARQUET_EXTENSIONS, SIFT_EXTENSIONS, has_extension, open_dataset, open_table,
    readable, resolve, resolve_all,
};
pub use error::StoreError;
pub use object::ObjectFile;
pub use runtime::block_on;
pub use sift_scan::{Dataset, DatasetFile};
pub use store::{HttpCounts, StoreOptions, http_counts, is_url, store_for};
pub use upload::upload;
