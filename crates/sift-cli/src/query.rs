//! `sift query`: runs one of the benchmark queries (TPC-H Q1/Q6/Q12/Q14/Q19 scans, the
//! Parquet-Select micro-benchmark) on one open file, several times, and reports the
//! result and the times.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Args;
use sift_scan::Table;

use crate::queries::{self, QueryResult, Value};
use crate::ui::Ui;

/// Run a benchmark query on a Sift (or Parquet) file and time it.
#[derive(Debug, Args)]
#[command(
    after_help = "Queries: q1, q6, q12, q14, q19 (lineitem; the SQL is in bench/queries.py) and \
    micro-f{F}-p{P} (a table of int64 columns c0…c19: F filters c_i < 8, the max of P columns c10…).\n\n\
    Examples:\n  sift query q6 lineitem.sift --runs 5\n  sift query micro-f2-p3 micro.sift --json"
)]
pub struct QueryArgs {
    /// The query: q1, q6, q12, q14, q19 or micro-f{F}-p{P}.
    pub query: String,
    /// A .sift file, or a .parquet file read through the same engine.
    pub file: PathBuf,
    /// Times to run the query on the open file (the first run also verifies checksums).
    #[arg(long, default_value_t = 5)]
    pub runs: usize,
    /// Print one JSON object: times, result rows and scan statistics.
    #[arg(long)]
    pub json: bool,
    /// Skip segment checksum verification.
    #[arg(long)]
    pub no_checksums: bool,
}

pub fn run(args: &QueryArgs, ui: &Ui) -> Result<()> {
    let opened = Instant::now();
    let table = Table::open_with(&args.file, !args.no_checksums)
        .with_context(|| format!("cannot open {}", args.file.display()))?;
    let open_ms = opened.elapsed().as_secs_f64() * 1e3;
    let mut times = Vec::new();
    let mut result: Option<QueryResult> = None;
    let bar = ui.progress(Some(args.runs.max(1) as u64), "runs", &args.query);
    for _ in 0..args.runs.max(1) {
        let start = Instant::now();
        let r = queries::run(&args.query, &table)?;
        times.push(start.elapsed().as_secs_f64() * 1e3);
        result = Some(r);
        bar.inc(1);
    }
    bar.finish_and_clear();
    let Some(result) = result else {
        anyhow::bail!("no run");
    };
    let mut sorted = times.clone();
    sorted.sort_by(f64::total_cmp);
    let best = sorted[0];
    let median = sorted[sorted.len() / 2];
    if args.json {
        let cell = |v: &Value| match v {
            Value::Int(i) => serde_json::json!(i),
            Value::Float(x) => serde_json::json!(x),
            Value::Str(s) => serde_json::json!(s),
            Value::Null => serde_json::Value::Null,
        };
        let s = &result.stats;
        let out = serde_json::json!({
            "query": args.query,
            "file": args.file.display().to_string(),
            "open_ms": open_ms,
            "first_ms": times[0],
            "best_ms": best,
            "median_ms": median,
            "runs_ms": times,
            "columns": result.columns,
            "rows": result.rows.iter().map(|r| r.iter().map(cell).collect::<Vec<_>>()).collect::<Vec<_>>(),
            "stats": {
                "blocks_total": s.blocks_total,
                "blocks_pruned": s.blocks_pruned,
                "blocks_empty": s.blocks_empty,
                "rows_scanned": s.rows_scanned,
                "rows_matched": s.rows_matched,
                "values_decoded": s.values_decoded,
                "bytes_read": s.bytes_read,
            },
        });
        println!("{out}");
        return Ok(());
    }
    println!("{}", result.columns.join(" | "));
    for row in &result.rows {
        let cells: Vec<String> = row.iter().map(ToString::to_string).collect();
        println!("{}", cells.join(" | "));
    }
    println!(
        "{}: best {best:.2} ms, median {median:.2} ms, first {:.2} ms over {} runs",
        args.query,
        times[0],
        times.len()
    );
    println!("scan: {}", result.stats);
    Ok(())
}
