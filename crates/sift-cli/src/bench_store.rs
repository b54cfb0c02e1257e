//! `sift bench remote`: TPC-H Q6 or Q1's scan of lineitem in an object store, by Sift's
//! reader or by arrow-rs's `ParquetObjectReader`, timed in this process and with every
//! HTTP request counted.
//!
//! Both engines answer the same question the way each is built to: Sift opens its file
//! (one suffix request for the footer), prunes blocks by zone maps, fetches the chunks of
//! the needed columns for several blocks at once and filters them encoded; arrow-rs reads
//! the Parquet footer, prunes row groups by their `l_shipdate` statistics, and for each row
//! group fetches the filter columns, evaluates the filter (its `RowFilter` pushdown), then
//! fetches the output columns for the selected rows. Both return the query's output
//! columns for the selected rows (Q6: `l_extendedprice`, `l_discount`; Q1: the six it
//! aggregates) and a checksum is computed from them (Q6: the revenue; Q1: the sum of
//! `l_extendedprice`). Both run one scan at a time; requests run on the same I/O runtime
//! with the same client.

use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use arrow::array::{Array, AsArray, BooleanArray, Datum, Decimal128Array, Scalar};
use arrow::compute::kernels::{boolean::and, cmp};
use arrow::datatypes::{DataType, Decimal128Type};
use futures::TryStreamExt;
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::{ArrowPredicate, ArrowPredicateFn, RowFilter};
// `ParquetObjectReader` is deprecated in favour of readers written for each store, but
// it is the object-store reader arrow-rs ships, and the one this comparison is about.
#[allow(deprecated)]
use parquet::arrow::async_reader::{ParquetObjectReader, ParquetRecordBatchStreamBuilder};
use parquet::file::statistics::Statistics;

/// Q6's filter on `l_shipdate` (days since 1970-01-01), `l_discount` and `l_quantity`
/// (hundredths).
const SHIP_FROM: i32 = 8766; // 1994-01-01
const SHIP_TO: i32 = 9131; // 1995-01-01
const DISCOUNT: (i128, i128) = (5, 7);
const QUANTITY_BELOW: i128 = 2400;
/// Q1's: `l_shipdate <= date '1998-09-02'`.
const Q1_SHIP_TO: i32 = 10472; // 1998-09-03

/// The query whose scan is timed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Query {
    /// Four columns, about 2% of the rows.
    Q6,
    /// Seven columns, about 98% of the rows.
    Q1,
}

impl Query {
    /// The filter in `sift scan`'s language.
    fn filter(self) -> &'static str {
        match self {
            Query::Q6 => {
                "l_shipdate >= date '1994-01-01' and l_shipdate < date '1995-01-01' \
                 and l_discount between 0.05 and 0.07 and l_quantity < 24"
            }
            Query::Q1 => "l_shipdate <= date '1998-09-02'",
        }
    }

    /// The columns returned.
    fn outputs(self) -> &'static [&'static str] {
        match self {
            Query::Q6 => &["l_extendedprice", "l_discount"],
            Query::Q1 => &[
                "l_quantity",
                "l_extendedprice",
                "l_discount",
                "l_tax",
                "l_returnflag",
                "l_linestatus",
            ],
        }
    }

    /// `l_shipdate` rows may have: `[from, to)`.
    fn ship_range(self) -> (i32, i32) {
        match self {
            Query::Q6 => (SHIP_FROM, SHIP_TO),
            Query::Q1 => (i32::MIN, Q1_SHIP_TO),
        }
    }

    /// Adds the returned rows to the checksum (scale 4).
    fn add(self, batch: &arrow::array::RecordBatch, sum: &mut i128) -> Result<()> {
        let column = |name: &str| {
            batch
                .column_by_name(name)
                .with_context(|| format!("no column {name}"))
        };
        match self {
            Query::Q6 => add_revenue(column("l_extendedprice")?, column("l_discount")?, sum),
            Query::Q1 => {
                let Some(p) = column("l_extendedprice")?.as_primitive_opt::<Decimal128Type>()
                else {
                    bail!("l_extendedprice must be a decimal");
                };
                *sum += p.iter().flatten().sum::<i128>() * 100;
                Ok(())
            }
        }
    }
}

/// Which reader runs the query.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Engine {
    /// Sift's reader on a `.sift` object.
    Sift,
    /// arrow-rs's `ParquetObjectReader` with row-group pruning and `RowFilter` pushdown
    /// on a `.parquet` object.
    ArrowRs,
}

/// Time the scan of TPC-H Q6 or Q1 on a lineitem object in an object store, counting HTTP
/// requests.
///
/// Every run opens the object anew (footer included), returns the query's columns of the
/// selected rows and computes a checksum of them (Q6: the revenue). The first run is
/// reported apart from the best and the median. Object stores are configured by the
/// environment (AWS_ENDPOINT_URL, …) or --store-option.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Prints one JSON object: engine, query, url, checksum, rows, runs_ms, \
    requests (per run), first_ms, best_ms, median_ms.\n\n\
    Example:\n  sift bench remote s3://bucket/lineitem.sift --engine sift --query q6 --runs 5"
)]
pub struct RemoteArgs {
    /// The lineitem object (s3://…/lineitem.sift, or .parquet for arrow-rs).
    pub url: String,
    /// The reader.
    #[arg(long, value_enum)]
    pub engine: Engine,
    /// The query.
    #[arg(long, value_enum, default_value_t = Query::Q6)]
    pub query: Query,
    /// Times to run the query.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    pub runs: u32,
    #[command(flatten)]
    pub store: crate::scan::StoreArgs,
}

pub fn remote(args: &RemoteArgs) -> Result<()> {
    let options = args.store.options();
    let mut runs_ms = Vec::new();
    let mut requests = Vec::new();
    let mut answer = (0i128, 0u64);
    for _ in 0..args.runs {
        let before = sift_store::http_counts().requests;
        let start = Instant::now();
        answer = match args.engine {
            Engine::Sift => sift_scan(args.query, &args.url, &options)?,
            Engine::ArrowRs => arrow_rs_scan(args.query, &args.url, &options)?,
        };
        runs_ms.push(start.elapsed().as_secs_f64() * 1e3);
        requests.push(sift_store::http_counts().requests - before);
    }
    let (checksum, rows) = answer;
    let mut sorted = runs_ms.clone();
    sorted.sort_by(f64::total_cmp);
    let out = serde_json::json!({
        "engine": args.engine,
        "query": args.query,
        "url": args.url,
        "checksum": format!("{}.{:04}", checksum / 10_000, checksum % 10_000),
        "rows": rows,
        "runs_ms": runs_ms,
        "requests": requests,
        "first_ms": runs_ms[0],
        "best_ms": sorted[0],
        "median_ms": sorted[sorted.len() / 2],
    });
    println!("{out}");
    Ok(())
}

/// Adds `price × discount` over the rows (scale 2 × scale 2 = scale 4).
fn add_revenue(price: &dyn Array, discount: &dyn Array, sum: &mut i128) -> Result<()> {
    let (Some(p), Some(d)) = (
        price.as_primitive_opt::<Decimal128Type>(),
        discount.as_primitive_opt::<Decimal128Type>(),
    ) else {
        bail!("l_extendedprice and l_discount must be decimals");
    };
    for (p, d) in p.iter().zip(d.iter()) {
        if let (Some(p), Some(d)) = (p, d) {
            *sum += p * d;
        }
    }
    Ok(())
}

fn sift_scan(query: Query, url: &str, options: &sift_store::StoreOptions) -> Result<(i128, u64)> {
    let table = sift_store::open_table(url, options, true)?;
    let scan = table
        .scan()
        .project(query.outputs().iter().copied())
        .filter(sift_scan::parse_filter(query.filter())?)
        .threads(1)
        .build()?;
    let (mut sum, mut rows) = (0i128, 0u64);
    for batch in scan {
        let batch = batch?;
        rows += batch.num_rows() as u64;
        query.add(&batch, &mut sum)?;
    }
    Ok((sum, rows))
}

/// A decimal scalar of `like`'s type.
fn decimal(v: i128, like: &DataType) -> Result<Scalar<Decimal128Array>> {
    Ok(Scalar::new(
        Decimal128Array::from(vec![v]).with_data_type(like.clone()),
    ))
}

fn arrow_rs_scan(
    query: Query,
    url: &str,
    options: &sift_store::StoreOptions,
) -> Result<(i128, u64)> {
    let parsed = url::Url::parse(url).with_context(|| format!("{url}: not a URL"))?;
    let (store, path) = sift_store::store_for(&parsed, options)?;
    sift_store::block_on(async move {
        #[allow(deprecated)]
        let reader = ParquetObjectReader::new(Arc::clone(&store), path);
        let builder = ParquetRecordBatchStreamBuilder::new(reader).await?;
        let schema = builder.metadata().file_metadata().schema_descr_ptr();
        let schema = schema.as_ref();
        let leaf = |name: &str| {
            (0..schema.num_columns())
                .find(|&i| schema.column(i).name() == name)
                .with_context(|| format!("no column {name}"))
        };
        let (ship, disc, qty) = (
            leaf("l_shipdate")?,
            leaf("l_discount")?,
            leaf("l_quantity")?,
        );
        let (from, to) = query.ship_range();
        // Row groups whose l_shipdate range meets the query's.
        let groups: Vec<usize> = (builder.metadata().row_groups().iter().enumerate())
            .filter(|(_, g)| match g.column(ship).statistics() {
                Some(Statistics::Int32(s)) => match (s.min_opt(), s.max_opt()) {
                    (Some(&lo), Some(&hi)) => hi >= from && lo < to,
                    _ => true,
                },
                _ => true,
            })
            .map(|(i, _)| i)
            .collect();
        let predicate: Box<dyn ArrowPredicate> = match query {
            Query::Q6 => Box::new(ArrowPredicateFn::new(
                ProjectionMask::leaves(schema, [ship, disc, qty]),
                |batch| {
                    // Columns come in file order: l_quantity, l_discount, l_shipdate.
                    let q = batch.column(0);
                    let d = batch.column(1);
                    let s = batch.column(2);
                    let from = arrow::array::Date32Array::new_scalar(SHIP_FROM);
                    let to = arrow::array::Date32Array::new_scalar(SHIP_TO);
                    let dt = d.data_type();
                    let lo = decimal(DISCOUNT.0, dt).map_err(arrow_err)?;
                    let hi = decimal(DISCOUNT.1, dt).map_err(arrow_err)?;
                    let qmax = decimal(QUANTITY_BELOW, q.data_type()).map_err(arrow_err)?;
                    let mut keep: BooleanArray = cmp::gt_eq(s, &from)?;
                    keep = and(&keep, &cmp::lt(s, &to)?)?;
                    keep = and(&keep, &cmp::gt_eq(d, &lo as &dyn Datum)?)?;
                    keep = and(&keep, &cmp::lt_eq(d, &hi as &dyn Datum)?)?;
                    and(&keep, &cmp::lt(q, &qmax as &dyn Datum)?)
                },
            )),
            Query::Q1 => Box::new(ArrowPredicateFn::new(
                ProjectionMask::leaves(schema, [ship]),
                |batch| {
                    let to = arrow::array::Date32Array::new_scalar(Q1_SHIP_TO);
                    cmp::lt(batch.column(0), &to)
                },
            )),
        };
        let outputs = query
            .outputs()
            .iter()
            .map(|n| leaf(n))
            .collect::<Result<Vec<_>>>()?;
        let stream = builder
            .with_row_groups(groups)
            .with_projection(ProjectionMask::leaves(schema, outputs))
            .with_row_filter(RowFilter::new(vec![predicate]))
            .build()?;
        let batches: Vec<_> = stream.try_collect().await?;
        let (mut sum, mut rows) = (0i128, 0u64);
        for b in &batches {
            rows += b.num_rows() as u64;
            query.add(b, &mut sum)?;
        }
        anyhow::Ok((sum, rows))
    })?
}

fn arrow_err(e: anyhow::Error) -> arrow::error::ArrowError {
    arrow::error::ArrowError::ComputeError(e.to_string())
}
