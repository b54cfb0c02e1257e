//! `sift bench`: measurements for the comparison harness in `bench/`, printed as JSON.

use std::path::PathBuf;

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

pub fn run(args: &BenchArgs, ui: &Ui) -> Result<()> {
    match &args.command {
        BenchCommand::Read(a) => read(a, ui),
    }
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
    let mut sorted = runs_ms.clone();
    sorted.sort_by(f64::total_cmp);
    let out = serde_json::json!({
        "file": args.file.display().to_string(),
        "format": format.name().to_ascii_lowercase(),
        "mode": args.mode,
        "rows": rows,
        "arrow_bytes": arrow_bytes,
        "runs_ms": runs_ms,
        "first_ms": runs_ms[0],
        "best_ms": sorted[0],
        "median_ms": sorted[sorted.len() / 2],
    });
    println!("{out}");
    Ok(())
}
