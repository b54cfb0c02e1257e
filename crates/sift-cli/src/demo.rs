//! `sift demo`: generate TPC-H lineitem, write it as Sift and Parquet, read it back,
//! check it, and compare sizes and speeds.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use arrow::array::{Array, RecordBatch};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use sift_format::{MAX_BLOCK_ROWS, SiftFile};
use tpchgen::generators::LineItemGenerator;
use tpchgen_arrow::LineItemArrow;

use crate::io::{Output, OutputOptions, ParquetCompression, Stdout};
use crate::measure::batch_bytes;
use crate::table::{Align, Table, fmt_ratio, fmt_secs, human_bytes, human_count, ratio};
use crate::ui::Ui;

/// Lineitem rows at scale factor 1 (the row count is close to linear in the scale).
const LINEITEM_ROWS_SF1: f64 = 6_001_215.0;

/// Run an end-to-end demo on TPC-H lineitem generated in memory.
///
/// Generates the lineitem table at the given scale factor, streams it into a Sift file and
/// into Parquet files (zstd and snappy), reads each file back completely on one thread,
/// checks that every column equals the generated data, and prints size, compression ratio
/// against the Arrow in-memory size, write time, read time and read throughput.
/// Exits non-zero, naming the column, if any file reads back different data.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  \
    sift demo\n  \
    sift demo --scale 1 --dir /tmp/tpch --keep")]
pub struct DemoArgs {
    /// TPC-H scale factor (1 = 6 million lineitem rows).
    #[arg(long, value_name = "SF", default_value_t = 0.1)]
    pub scale: f64,
    /// Directory for the files (created if missing) [default: a temporary directory].
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Keep the files instead of deleting them at the end.
    #[arg(long)]
    pub keep: bool,
}

/// One file format under test.
struct Target {
    name: &'static str,
    path: PathBuf,
    write_time: Duration,
    read_time: Duration,
    bytes: u64,
}

pub fn run(args: &DemoArgs, ui: &Ui) -> Result<()> {
    if !(args.scale.is_finite() && args.scale > 0.0) {
        bail!("--scale must be a positive number, not {}", args.scale);
    }
    let workspace = Workspace::new(args.dir.as_deref(), args.keep)?;
    let dir = workspace.dir.clone();
    let mut out = Stdout::new();
    writeln!(
        out,
        "Sift demo: TPC-H lineitem at scale factor {}, generated in memory and streamed into\n\
         a Sift file and into Parquet files (zstd, snappy) in {}.\n\
         Each file is then read back completely on one thread and checked column by column\n\
         against the generated data. Ratio = Arrow in-memory size / file size.\n",
        args.scale,
        dir.display()
    )?;
    out.flush()?;

    let mut targets = vec![
        Target::new("Sift", dir.join("lineitem.sift")),
        Target::new("Parquet zstd", dir.join("lineitem.zstd.parquet")),
        Target::new("Parquet snappy", dir.join("lineitem.snappy.parquet")),
    ];

    // Generate and write, batch by batch, timing each writer separately.
    let generator = LineItemArrow::new(LineItemGenerator::new(args.scale, 1, 1))
        .with_batch_size(MAX_BLOCK_ROWS);
    let schema = LineItemArrow::schema_ref();
    let mut writers = Vec::with_capacity(targets.len());
    for (i, t) in targets.iter_mut().enumerate() {
        let options = OutputOptions {
            compression: if i == 2 {
                ParquetCompression::Snappy
            } else {
                ParquetCompression::Zstd
            },
            ..OutputOptions::default()
        };
        let started = Instant::now();
        writers.push(Output::create(&t.path, &schema, &options)?);
        t.write_time += started.elapsed();
    }
    let progress = ui.progress(
        Some((LINEITEM_ROWS_SF1 * args.scale).round() as u64),
        "rows",
        "generating and writing",
    );
    let mut generated = Vec::new();
    let mut generate_time = Duration::ZERO;
    let mut started = Instant::now();
    for batch in generator {
        let batch = batch.context("TPC-H generator failed")?;
        generate_time += started.elapsed();
        for (t, w) in targets.iter_mut().zip(writers.iter_mut()) {
            let started = Instant::now();
            w.write(&batch)?;
            t.write_time += started.elapsed();
        }
        progress.inc(batch.num_rows() as u64);
        generated.push(batch);
        started = Instant::now();
    }
    for (t, w) in targets.iter_mut().zip(writers) {
        let started = Instant::now();
        t.bytes = w.finish()?;
        t.write_time += started.elapsed();
    }
    progress.finish_and_clear();
    let rows: u64 = generated.iter().map(|b| b.num_rows() as u64).sum();
    let arrow_bytes: u64 = generated.iter().map(batch_bytes).sum();

    // Read back and verify.
    let progress = ui.progress(Some(targets.len() as u64), "files", "reading back");
    for t in &mut targets {
        let started = Instant::now();
        let batches = if t.name == "Sift" {
            read_sift(&t.path)?
        } else {
            read_parquet(&t.path)?
        };
        t.read_time = started.elapsed();
        verify(&generated, &batches, t.name, &t.path)?;
        progress.inc(1);
    }
    progress.finish_and_clear();

    writeln!(
        out,
        "generated {} rows × {} columns ({} as Arrow) in {}; all {} files read back equal.\n",
        human_count(rows),
        schema.fields().len(),
        human_bytes(arrow_bytes),
        fmt_secs(generate_time.as_secs_f64()),
        targets.len()
    )?;
    let mut table = Table::new(&[
        ("format", Align::Left),
        ("size", Align::Right),
        ("ratio", Align::Right),
        ("write", Align::Right),
        ("read", Align::Right),
        ("read GB/s", Align::Right),
    ]);
    table.row(vec![
        "Arrow (memory)".into(),
        human_bytes(arrow_bytes),
        fmt_ratio(Some(1.0)),
        "-".into(),
        "-".into(),
        "-".into(),
    ]);
    for t in &targets {
        let read = t.read_time.as_secs_f64();
        table.row(vec![
            t.name.into(),
            human_bytes(t.bytes),
            fmt_ratio(ratio(arrow_bytes, t.bytes)),
            fmt_secs(t.write_time.as_secs_f64()),
            fmt_secs(read),
            format!("{:.2}", arrow_bytes as f64 / read.max(1e-9) / 1e9),
        ]);
    }
    write!(out, "{table}")?;
    out.flush()?;
    run_queries(&mut out, ui, &targets[0].path, &targets[1].path)?;
    if workspace.keep {
        writeln!(out, "\nfiles kept in {}", dir.display())?;
    }
    out.flush()?;
    drop(workspace);
    Ok(())
}

/// Runs the benchmark queries on the Sift file and on the Parquet file through the same
/// engine, checks that both give the same answer, and prints times and scan statistics.
fn run_queries(out: &mut Stdout, ui: &Ui, sift: &Path, parquet: &Path) -> Result<()> {
    const RUNS: usize = 3;
    writeln!(
        out,
        "\nQueries through Sift's scan engine, on the Sift file and on the Parquet (zstd) file,\n\
         one thread, best of {RUNS} runs (the SQL is in bench/queries.py):\n"
    )?;
    let sift = sift_scan::Table::open(sift).context("cannot open the Sift file")?;
    let parquet = sift_scan::Table::open(parquet).context("cannot open the Parquet file")?;
    let mut table = Table::new(&[
        ("query", Align::Left),
        ("Sift", Align::Right),
        ("Parquet", Align::Right),
        ("speedup", Align::Right),
        ("rows matched", Align::Right),
        ("blocks pruned", Align::Right),
        ("values decoded", Align::Right),
        ("bytes read", Align::Right),
    ]);
    let names = ["q6", "q1", "q12", "q14", "q19"];
    let progress = ui.progress(Some(names.len() as u64), "queries", "running queries");
    for name in names {
        let (s_ms, s_res) = best_of(RUNS, || sift_scan::queries::run(name, &sift))?;
        let (p_ms, p_res) = best_of(RUNS, || sift_scan::queries::run(name, &parquet))?;
        if !same_rows(&s_res.rows, &p_res.rows) {
            bail!(
                "{name}: the Sift file and the Parquet file give different answers:\n  {:?}\n  {:?}",
                s_res.rows,
                p_res.rows
            );
        }
        let st = &s_res.stats;
        table.row(vec![
            name.into(),
            format!("{s_ms:.1} ms"),
            format!("{p_ms:.1} ms"),
            format!("{:.1}×", p_ms / s_ms.max(1e-9)),
            human_count(st.rows_matched),
            format!("{} of {}", st.blocks_pruned, st.blocks_total),
            human_count(st.values_decoded),
            human_bytes(st.bytes_read),
        ]);
        progress.inc(1);
    }
    progress.finish_and_clear();
    write!(out, "{table}")?;
    writeln!(out, "both files gave the same answer to every query.")?;
    Ok(())
}

/// The best time in milliseconds of `runs` runs of `f`, and its last result.
fn best_of<T>(runs: usize, mut f: impl FnMut() -> sift_scan::Result<T>) -> Result<(f64, T)> {
    let mut best = f64::INFINITY;
    let mut last = None;
    for _ in 0..runs.max(1) {
        let started = Instant::now();
        let r = f()?;
        best = best.min(started.elapsed().as_secs_f64() * 1e3);
        last = Some(r);
    }
    last.map(|r| (best, r)).context("no run")
}

/// Equal results, floats to a relative 1e-9 (summation order differs between sources).
fn same_rows(a: &[Vec<sift_scan::queries::Value>], b: &[Vec<sift_scan::queries::Value>]) -> bool {
    use sift_scan::queries::Value as V;
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| {
            x.len() == y.len()
                && x.iter().zip(y).all(|(u, v)| match (u, v) {
                    (V::Float(p), V::Float(q)) => {
                        (p - q).abs() <= 1e-9 * p.abs().max(q.abs()).max(1.0)
                    }
                    _ => u == v,
                })
        })
}

impl Target {
    fn new(name: &'static str, path: PathBuf) -> Self {
        Self {
            name,
            path,
            write_time: Duration::ZERO,
            read_time: Duration::ZERO,
            bytes: 0,
        }
    }
}

fn read_sift(path: &Path) -> Result<Vec<RecordBatch>> {
    let file = SiftFile::open(path).context("cannot open the Sift file")?;
    file.read_all(None)
        .with_context(|| format!("cannot read {}", path.display()))
}

fn read_parquet(path: &Path) -> Result<Vec<RecordBatch>> {
    let ctx = || format!("cannot read {}", path.display());
    let file = File::open(path).with_context(ctx)?;
    ParquetRecordBatchReaderBuilder::try_new(file)
        .with_context(ctx)?
        .with_batch_size(MAX_BLOCK_ROWS)
        .build()
        .with_context(ctx)?
        .collect::<Result<Vec<_>, _>>()
        .with_context(ctx)
}

/// Checks that `actual` holds the same rows as `expected`, column by column; batch
/// boundaries may differ. Names the first differing column and row.
fn verify(
    expected: &[RecordBatch],
    actual: &[RecordBatch],
    format: &str,
    path: &Path,
) -> Result<()> {
    let fail = |what: String| {
        anyhow!(
            "{format} file {} reads back different data: {what}",
            path.display()
        )
    };
    let (Some(e0), Some(a0)) = (expected.first(), actual.first()) else {
        let (e, a) = (count_rows(expected), count_rows(actual));
        return if e == a {
            Ok(())
        } else {
            Err(fail(format!("{a} rows, expected {e}")))
        };
    };
    let (es, as_) = (e0.schema(), a0.schema());
    if es.fields().len() != as_.fields().len() {
        return Err(fail(format!(
            "{} columns, expected {}",
            as_.fields().len(),
            es.fields().len()
        )));
    }
    let (e_rows, a_rows) = (count_rows(expected), count_rows(actual));
    if e_rows != a_rows {
        return Err(fail(format!("{a_rows} rows, expected {e_rows}")));
    }
    for (c, (ef, af)) in es.fields().iter().zip(as_.fields()).enumerate() {
        if ef.name() != af.name() || ef.data_type() != af.data_type() {
            return Err(fail(format!(
                "column {c} is '{}' {}, expected '{}' {}",
                af.name(),
                af.data_type(),
                ef.name(),
                ef.data_type()
            )));
        }
        if let Some(row) = first_difference(expected, actual, c) {
            return Err(fail(format!("column '{}' differs at row {row}", ef.name())));
        }
    }
    Ok(())
}

fn count_rows(batches: &[RecordBatch]) -> u64 {
    batches.iter().map(|b| b.num_rows() as u64).sum()
}

/// The first row at which column `c` differs, walking both batch lists in step (the
/// lists must hold the same number of rows).
fn first_difference(expected: &[RecordBatch], actual: &[RecordBatch], c: usize) -> Option<u64> {
    let mut e_iter = expected.iter().map(|b| b.column(c).clone());
    let mut a_iter = actual.iter().map(|b| b.column(c).clone());
    let (mut e, mut a) = (e_iter.next()?, a_iter.next()?);
    let mut row = 0u64;
    loop {
        while e.is_empty() {
            e = e_iter.next()?;
        }
        while a.is_empty() {
            a = a_iter.next()?;
        }
        let n = e.len().min(a.len());
        let (es, as_) = (e.slice(0, n), a.slice(0, n));
        if es.as_ref() != as_.as_ref() {
            // Narrow down to the row; only on failure.
            let i = (0..n).find(|&i| es.slice(i, 1).as_ref() != as_.slice(i, 1).as_ref());
            return Some(row + i.unwrap_or(0) as u64);
        }
        row += n as u64;
        e = e.slice(n, e.len() - n);
        a = a.slice(n, a.len() - n);
    }
}

/// The demo's directory; removes the files (and a directory it created) when dropped,
/// unless asked to keep them.
struct Workspace {
    dir: PathBuf,
    created: bool,
    keep: bool,
}

impl Workspace {
    fn new(dir: Option<&Path>, keep: bool) -> Result<Self> {
        let (dir, created) = match dir {
            Some(d) => {
                let existed = d.is_dir();
                std::fs::create_dir_all(d)
                    .with_context(|| format!("cannot create directory {}", d.display()))?;
                (d.to_path_buf(), !existed)
            }
            None => {
                let d = std::env::temp_dir().join(format!("sift-demo-{}", std::process::id()));
                std::fs::create_dir_all(&d)
                    .with_context(|| format!("cannot create directory {}", d.display()))?;
                (d, true)
            }
        };
        Ok(Self { dir, created, keep })
    }
}

impl Drop for Workspace {
    fn drop(&mut self) {
        if self.keep {
            return;
        }
        for name in [
            "lineitem.sift",
            "lineitem.zstd.parquet",
            "lineitem.snappy.parquet",
        ] {
            let _ = std::fs::remove_file(self.dir.join(name));
        }
        if self.created {
            // Only succeeds if empty: never removes anything we did not write.
            let _ = std::fs::remove_dir(&self.dir);
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use arrow::array::{ArrayRef, Int32Array};
    use arrow::datatypes::{DataType, Field, Schema};
    use std::sync::Arc;

    fn batches(parts: &[&[i32]]) -> Vec<RecordBatch> {
        let schema = Arc::new(Schema::new(vec![Field::new("x", DataType::Int32, false)]));
        parts
            .iter()
            .map(|p| {
                let col: ArrayRef = Arc::new(Int32Array::from(p.to_vec()));
                RecordBatch::try_new(schema.clone(), vec![col]).unwrap()
            })
            .collect()
    }

    #[test]
    fn difference_across_batch_boundaries() {
        let e = batches(&[&[1, 2, 3], &[4, 5]]);
        let a = batches(&[&[1], &[2, 3, 4, 5]]);
        assert_eq!(first_difference(&e, &a, 0), None);
        let a = batches(&[&[1], &[2, 3, 9, 5]]);
        assert_eq!(first_difference(&e, &a, 0), Some(3));
        assert!(verify(&e, &a, "x", Path::new("f")).is_err());
        assert!(verify(&e, &batches(&[&[1, 2, 3, 4, 5]]), "x", Path::new("f")).is_ok());
    }
}
