//! `sift bench`: measurements for the comparison harness in `bench/`, printed as JSON.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Result;
use clap::{Args, Subcommand};

use crate::readback::read_with;
use crate::ui::Ui;
use sift_io::Format;

/// Measurements for benchmark harnesses (JSON on stdout).
#[derive(Debug, Args)]
pub struct BenchArgs {
    #[command(subcommand)]
    pub command: BenchCommand,
}

#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    Read(ReadArgs),
    Scan(ScanArgs),
    Remote(crate::bench_store::RemoteArgs),
}

/// Keep every batch (materialise) or drop each one after decoding it (stream).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    Materialize,
    Stream,
}

/// Time reading a whole Sift or Parquet file on one thread, in this process.
///
/// Every run opens the file anew (footer parsed, Sift segment checksums verified again)
/// and decodes every row of the chosen columns. `--mode materialize` keeps all batches in
/// memory until the run's clock stops, as `pyarrow.parquet.read_table` does; `--mode
/// stream` drops each batch once decoded. Freeing the batches is not timed. The first run
/// is reported apart from the best and the median: it is the first read in this process.
#[derive(Debug, Args)]
#[command(
    after_help = "Prints one JSON object: file, format, mode, rows, arrow_bytes, \
    runs_ms, first_ms, best_ms, median_ms.\n\n\
    Examples:\n  sift bench read lineitem.sift --runs 5\n  \
    sift bench read lineitem.parquet --columns l_quantity,l_shipdate --mode stream"
)]
pub struct ReadArgs {
    /// A .sift or .parquet file.
    pub file: PathBuf,
    /// Times to read the file.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    pub runs: u32,
    /// Comma-separated columns to decode [default: all].
    #[arg(long, value_delimiter = ',')]
    pub columns: Option<Vec<String>>,
    /// Keep every batch (materialize) or drop each after decoding it (stream).
    #[arg(long, value_enum, default_value_t = Mode::Materialize)]
    pub mode: Mode,
}

/// Time a filtered scan (Sift's scan engine, as `sift scan` runs it) in this process.
///
/// Every run opens the file anew and keeps every returned batch until its clock stops,
/// as a library call returning a table does (the reference for the Python package's
/// `File.to_table`). The first run is reported apart from the best and the median.
#[derive(Debug, Args)]
#[command(
    after_help = "Prints one JSON object: file, rows, runs_ms, first_ms, best_ms, median_ms.\n\n\
    Example:\n  sift bench scan lineitem.sift --columns l_extendedprice \\\n    \
    --filter \"l_quantity < 24\" --runs 5 --threads 1"
)]
pub struct ScanArgs {
    /// A .sift or .parquet file.
    pub file: PathBuf,
    /// Times to scan the file.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    pub runs: u32,
    /// Comma-separated columns to return [default: all].
    #[arg(long, value_delimiter = ',')]
    pub columns: Option<Vec<String>>,
    /// Only rows where this is true (the filter language of `sift scan`).
    #[arg(long)]
    pub filter: Option<String>,
    /// Threads scanning blocks at once.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..1025))]
    pub threads: u64,
}

pub fn run(args: &BenchArgs, ui: &Ui) -> Result<()> {
    match &args.command {
        BenchCommand::Read(a) => read(a, ui),
        BenchCommand::Scan(a) => scan(a, ui),
        BenchCommand::Remote(a) => crate::bench_store::remote(a),
    }
}

fn scan(args: &ScanArgs, ui: &Ui) -> Result<()> {
    let filter = args
        .filter
        .as_deref()
        .map(sift_scan::parse_filter)
        .transpose()?;
    let bar = ui.progress(Some(u64::from(args.runs)), "runs", "scanning");
    let mut runs_ms = Vec::new();
    let mut rows = 0;
    for _ in 0..args.runs {
        let start = Instant::now();
        let table = sift_scan::Table::open(&args.file)?;
        let mut builder = table.scan().threads(crate::threads(Some(args.threads)));
        if let Some(c) = &args.columns {
            builder = builder.project(c.clone());
        }
        if let Some(f) = &filter {
            builder = builder.filter(f.clone());
        }
        let kept = builder.into_iter().collect::<sift_scan::Result<Vec<_>>>()?;
        runs_ms.push(start.elapsed().as_secs_f64() * 1e3);
        rows = kept.iter().map(|b| b.num_rows() as u64).sum::<u64>();
        drop(kept);
        bar.inc(1);
    }
    bar.finish_and_clear();
    let (first_ms, best_ms, median_ms) = summary(&runs_ms);
    println!(
        "{}",
        serde_json::json!({
            "file": args.file.display().to_string(),
            "rows": rows,
            "runs_ms": runs_ms,
            "first_ms": first_ms,
            "best_ms": best_ms,
            "median_ms": median_ms,
        })
    );
    Ok(())
}

/// The first run, the best and the median of `runs_ms`.
fn summary(runs_ms: &[f64]) -> (f64, f64, f64) {
    let mut sorted = runs_ms.to_vec();
    sorted.sort_by(f64::total_cmp);
    (runs_ms[0], sorted[0], sorted[sorted.len() / 2])
}

fn read(args: &ReadArgs, ui: &Ui) -> Result<()> {
    let format = Format::of(&args.file)?;
    let bar = ui.progress(Some(u64::from(args.runs)), "runs", "reading");
    let mut runs_ms = Vec::new();
    let (mut rows, mut arrow_bytes) = (0, 0);
    for _ in 0..args.runs {
        let mut kept = Vec::new();
        let read = read_with(&args.file, args.columns.as_deref(), |batch| {
            if args.mode == Mode::Materialize {
                kept.push(batch);
            }
            Ok(())
        })?;
        runs_ms.push(read.time.as_secs_f64() * 1e3);
        (rows, arrow_bytes) = (read.rows, read.arrow_bytes);
        // Freed after the clock stopped and before the next run.
        drop(kept);
        bar.inc(1);
    }
    bar.finish_and_clear();
    let (first_ms, best_ms, median_ms) = summary(&runs_ms);
    let out = serde_json::json!({
        "file": args.file.display().to_string(),
        "format": format.name().to_ascii_lowercase(),
        "mode": args.mode,
        "rows": rows,
        "arrow_bytes": arrow_bytes,
        "runs_ms": runs_ms,
        "first_ms": first_ms,
        "best_ms": best_ms,
        "median_ms": median_ms,
    });
    println!("{out}");
    Ok(())
}
