//! `sift demo`: generate TPC-H lineitem, write it as Sift and Parquet, read it back,
//! check it, and compare sizes and speeds.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use arrow::array::{Array, RecordBatch};
use sift_format::MAX_BLOCK_ROWS;
use tpchgen::generators::LineItemGenerator;
use tpchgen_arrow::LineItemArrow;

use sift_io::{Output, OutputOptions, ParquetCompression};

use crate::io::Stdout;
use crate::measure::batch_bytes;
use crate::readback::read_with;
use crate::table::{Align, Table, fmt_ratio, fmt_secs, human_bytes, human_count, ratio};
use crate::ui::Ui;

/// Times each file is read back.
const READS: usize = 3;

/// Lineitem rows at scale factor 1 (the row count is close to linear in the scale).
const LINEITEM_ROWS_SF1: f64 = 6_001_215.0;

/// Run an end-to-end demo on TPC-H lineitem generated in memory.
///
/// Generates the lineitem table at the given scale factor, streams it into a Sift file and
/// into Parquet files (zstd and snappy), checks that each file reads back every column as
/// generated, then times reading each file completely on one thread. Every format is read
/// the same way: the file is opened anew (Sift checksums verified), each batch is decoded
/// and dropped (streamed), and the clock counts opening and decoding only. Cold is the
/// file's first read in a fresh process, warm the best of three in this process. Prints
/// size, compression ratio against the Arrow in-memory size, write time, and both reads.
/// Then runs TPC-H filters and aggregations through Sift's engine on the Sift file and on
/// the Parquet file, cold (opened and run once) and warm (best of the next runs).
/// Exits non-zero, naming the column and row, if any file reads back different data.
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
    /// The first read of the file in a fresh process.
    cold: Option<Duration>,
    /// The reads in this process, in the order they ran.
    reads: Vec<Duration>,
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
         Each file is checked column by column against the generated data, then read back\n\
         on one thread, every format the same way: opened anew (Sift checksums verified),\n\
         each batch decoded and dropped (streamed), only opening and decoding timed.\n\
         Cold = the file's first read in a fresh process (page cache warm); warm = best of\n\
         {READS} reads in this process. Ratio = Arrow in-memory size / file size.\n",
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

    // Read back. First every file once, checked against the generated data (not timed).
    // Cold: each file's first read in a fresh process (`sift bench read`, page cache warm),
    // so no format inherits this process's warmed-up memory and code. Warm: READS reads
    // in this process, in turn, so that no format is always first.
    let progress = ui.progress(
        Some((targets.len() * (READS + 2)) as u64),
        "reads",
        "reading back",
    );
    for t in &targets {
        let mut expected = Expected::new(&generated);
        read_with(&t.path, None, |batch| expected.check(&batch))
            .and_then(|_| expected.finish())
            .with_context(|| format!("{} file {} reads back wrong", t.name, t.path.display()))?;
        progress.inc(1);
    }
    for t in &mut targets {
        t.cold = Some(cold_read(&t.path)?);
        progress.inc(1);
    }
    for _ in 0..READS {
        for t in &mut targets {
            t.reads.push(read_with(&t.path, None, |_| Ok(()))?.time);
            progress.inc(1);
        }
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
        ("cold read", Align::Right),
        ("warm read", Align::Right),
        ("GB/s (best)", Align::Right),
    ]);
    table.row(vec![
        "Arrow (memory)".into(),
        human_bytes(arrow_bytes),
        fmt_ratio(Some(1.0)),
        "-".into(),
        "-".into(),
        "-".into(),
        "-".into(),
    ]);
    for t in &targets {
        let first = t.cold.map_or(0.0, |d| d.as_secs_f64());
        let best = t.reads.iter().min().map_or(0.0, Duration::as_secs_f64);
        table.row(vec![
            t.name.into(),
            human_bytes(t.bytes),
            fmt_ratio(ratio(arrow_bytes, t.bytes)),
            fmt_secs(t.write_time.as_secs_f64()),
            fmt_secs(first),
            fmt_secs(best),
            format!("{:.2}", arrow_bytes as f64 / best.max(1e-9) / 1e9),
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
/// Cold: the file opened (footer parsed) and the query run once, checksums verified;
/// warm: the best of the next runs on the open file.
fn run_queries(out: &mut Stdout, ui: &Ui, sift: &Path, parquet: &Path) -> Result<()> {
    writeln!(
        out,
        "\nQueries through Sift's scan engine, on the Sift file and on the Parquet (zstd) file,\n\
         one thread (the SQL is in bench/queries.py). Cold = open the file and run the query\n\
         once (Sift checksums verified); warm = best of the next {WARM_RUNS} runs on the open file.\n"
    )?;
    let mut table = Table::new(&[
        ("query", Align::Left),
        ("Sift cold", Align::Right),
        ("Sift warm", Align::Right),
        ("Parquet cold", Align::Right),
        ("Parquet warm", Align::Right),
        ("warm speedup", Align::Right),
        ("rows matched", Align::Right),
        ("values decoded", Align::Right),
        ("bytes read", Align::Right),
    ]);
    let names = ["q6", "q1", "q12", "q14", "q19"];
    let progress = ui.progress(Some(names.len() as u64), "queries", "running queries");
    for name in names {
        let s = cold_and_warm(sift, name)?;
        let p = cold_and_warm(parquet, name)?;
        if !same_rows(&s.result.rows, &p.result.rows) {
            bail!(
                "{name}: the Sift file and the Parquet file give different answers:\n  {:?}\n  {:?}",
                s.result.rows,
                p.result.rows
            );
        }
        let st = &s.result.stats;
        table.row(vec![
            name.into(),
            format!("{:.1} ms", s.cold_ms),
            format!("{:.1} ms", s.warm_ms),
            format!("{:.1} ms", p.cold_ms),
            format!("{:.1} ms", p.warm_ms),
            format!("{:.1}×", p.warm_ms / s.warm_ms.max(1e-9)),
            human_count(st.rows_matched),
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

/// Runs after the cold one, on the open file; the best is reported.
const WARM_RUNS: usize = 3;

struct Timed {
    cold_ms: f64,
    warm_ms: f64,
    result: crate::queries::QueryResult,
}

/// Opens `path` and runs query `name` once (cold), then `WARM_RUNS` more times (warm).
fn cold_and_warm(path: &Path, name: &str) -> Result<Timed> {
    let started = Instant::now();
    let file =
        sift_scan::Table::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let mut result = crate::queries::run(name, &file)?;
    let cold_ms = started.elapsed().as_secs_f64() * 1e3;
    let mut warm_ms = f64::INFINITY;
    for _ in 0..WARM_RUNS {
        let started = Instant::now();
        result = crate::queries::run(name, &file)?;
        warm_ms = warm_ms.min(started.elapsed().as_secs_f64() * 1e3);
    }
    Ok(Timed {
        cold_ms,
        warm_ms,
        result,
    })
}

/// The file's first read in a fresh process: this program's `bench read`, which times
/// opening and decoding in that process (its start-up is not counted).
fn cold_read(path: &Path) -> Result<Duration> {
    let exe = std::env::current_exe().context("cannot find the sift executable")?;
    let out = std::process::Command::new(&exe)
        .args([
            "bench", "read", "--runs", "1", "--mode", "stream", "--quiet",
        ])
        .arg(path)
        .output()
        .with_context(|| format!("cannot run {}", exe.display()))?;
    if !out.status.success() {
        bail!(
            "{} bench read {}: {}",
            exe.display(),
            path.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    let report: serde_json::Value =
        serde_json::from_slice(&out.stdout).context("bench read printed no JSON")?;
    let ms = report["first_ms"]
        .as_f64()
        .context("bench read printed no first_ms")?;
    Ok(Duration::from_secs_f64(ms / 1e3))
}

/// Equal results, floats to a relative 1e-9 (summation order differs between sources).
fn same_rows(a: &[Vec<crate::queries::Value>], b: &[Vec<crate::queries::Value>]) -> bool {
    use crate::queries::Value as V;
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
            cold: None,
            reads: Vec::new(),
            bytes: 0,
        }
    }
}

/// The generated batches, compared with what a file reads back, batch by batch as it
/// streams (the file's batch boundaries may differ from the generator's).
struct Expected<'a> {
    batches: &'a [RecordBatch],
    /// The next expected row: batch index and row within it.
    batch: usize,
    offset: usize,
    /// Rows checked so far.
    row: u64,
}

impl<'a> Expected<'a> {
    fn new(batches: &'a [RecordBatch]) -> Self {
        Self {
            batches,
            batch: 0,
            offset: 0,
            row: 0,
        }
    }

    /// Checks that `actual` holds the next rows, naming the first differing column and row.
    fn check(&mut self, actual: &RecordBatch) -> Result<()> {
        let mut done = 0;
        while done < actual.num_rows() {
            let Some(e) = self.batches.get(self.batch) else {
                bail!(
                    "more rows than were written ({} or more, expected {})",
                    self.row + (actual.num_rows() - done) as u64,
                    self.row
                );
            };
            if e.num_columns() != actual.num_columns() {
                bail!(
                    "{} columns, expected {}",
                    actual.num_columns(),
                    e.num_columns()
                );
            }
            let n = (e.num_rows() - self.offset).min(actual.num_rows() - done);
            for (c, field) in e.schema().fields().iter().enumerate() {
                let (want, got) = (
                    e.column(c).slice(self.offset, n),
                    actual.column(c).slice(done, n),
                );
                if want.data_type() != got.data_type() {
                    bail!(
                        "column '{}' is {}, expected {}",
                        field.name(),
                        got.data_type(),
                        want.data_type()
                    );
                }
                if want.as_ref() != got.as_ref() {
                    // Narrow down to the row; only on failure.
                    let i = (0..n)
                        .find(|&i| want.slice(i, 1).as_ref() != got.slice(i, 1).as_ref())
                        .unwrap_or(0);
                    bail!(
                        "column '{}' differs at row {}",
                        field.name(),
                        self.row + i as u64
                    );
                }
            }
            done += n;
            self.row += n as u64;
            self.offset += n;
            if self.offset == e.num_rows() {
                self.batch += 1;
                self.offset = 0;
            }
        }
        Ok(())
    }

    /// Checks that every expected row was read.
    fn finish(&self) -> Result<()> {
        let total: u64 = self.batches.iter().map(|b| b.num_rows() as u64).sum();
        if self.row != total {
            bail!("{} rows, expected {total}", self.row);
        }
        Ok(())
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

    fn check_all(expected: &[RecordBatch], actual: &[RecordBatch]) -> Result<()> {
        let mut e = Expected::new(expected);
        for b in actual {
            e.check(b)?;
        }
        e.finish()
    }

    #[test]
    fn difference_across_batch_boundaries() {
        let e = batches(&[&[1, 2, 3], &[4, 5]]);
        assert!(check_all(&e, &batches(&[&[1], &[2, 3, 4, 5]])).is_ok());
        assert!(check_all(&e, &batches(&[&[1, 2, 3, 4, 5]])).is_ok());
        let err = check_all(&e, &batches(&[&[1], &[2, 3, 9, 5]])).unwrap_err();
        assert_eq!(err.to_string(), "column 'x' differs at row 3");
        let err = check_all(&e, &batches(&[&[1, 2, 3, 4]])).unwrap_err();
        assert_eq!(err.to_string(), "4 rows, expected 5");
        let err = check_all(&e, &batches(&[&[1, 2, 3, 4, 5, 6]])).unwrap_err();
        assert_eq!(
            err.to_string(),
            "more rows than were written (6 or more, expected 5)"
        );
    }
}
