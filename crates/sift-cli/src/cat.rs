//! `sift cat`: decode rows of a Sift (or Parquet, Arrow IPC, CSV) file and print them.

use std::io::{IsTerminal, Write};
use std::ops::Range;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use sift_format::MAX_BLOCK_ROWS;

use crate::display::printable_batch;
use sift_io::{Format, InputOptions, open_input};

use crate::io::Stdout;
use crate::measure::batch_bytes;
use crate::table::{fmt_secs, human_bytes, human_count};
use crate::ui::Ui;

/// How `sift cat` prints rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CatOutput {
    /// An aligned table (one per 64Ki rows).
    Table,
    /// CSV with a header row.
    Csv,
    /// Newline-delimited JSON, one object per row.
    Json,
    /// Decode everything and print nothing (for timing); a summary goes to stderr.
    None,
}

/// Parses `-o/--output`, which takes a format. A value that looks like a file name gets an
/// error saying where files go: `--out PATH` (scan) or `sift convert` (cat).
#[derive(Clone)]
pub(crate) struct OutputFormatParser {
    /// How this command writes a file, for the error: `--out` or `convert`.
    pub(crate) has_out: bool,
}

impl clap::builder::TypedValueParser for OutputFormatParser {
    type Value = CatOutput;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<CatOutput, clap::Error> {
        let formats = clap::builder::EnumValueParser::<CatOutput>::new();
        formats.parse_ref(cmd, arg, value).map_err(|e| {
            let text = value.to_string_lossy();
            if !text.contains(['.', '/', '\\']) {
                return e;
            }
            let hint = if self.has_out {
                format!("to write a file use --out {text}")
            } else {
                format!(
                    "to write a file use `sift convert FILE {text}`, or redirect: -o csv > {text}"
                )
            };
            clap::Error::raw(
                clap::error::ErrorKind::InvalidValue,
                format!(
                    "-o/--output takes a format (table, csv, json, none), not a file name; {hint}\n"
                ),
            )
            .with_cmd(cmd)
        })
    }

    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        Some(Box::new(
            <CatOutput as clap::ValueEnum>::value_variants()
                .iter()
                .filter_map(clap::ValueEnum::to_possible_value),
        ))
    }
}

/// Print the rows of a Sift, Parquet, Arrow IPC or CSV file as a table, CSV or JSON.
///
/// Only the selected columns of the selected blocks are read and decoded. With
/// `--output none` every selected column of every selected block is decoded into Arrow
/// arrays and discarded, which measures decoding speed.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  \
    sift cat lineitem.sift --limit 10\n  \
    sift cat lineitem.sift --columns l_orderkey,l_shipdate --output csv > out.csv\n  \
    sift cat lineitem.sift --blocks 2..4 --output json\n  \
    time sift cat lineitem.sift --output none")]
pub struct CatArgs {
    /// The file: .sift, .parquet, .arrow/.feather/.ipc, .arrows or .csv; or a directory,
    /// a glob or an object-store URL of Sift (or Parquet) files, printed as one table (see
    /// `sift scan --help`).
    pub file: PathBuf,
    /// Columns to print, comma-separated (default: all).
    #[arg(short, long, value_delimiter = ',', value_name = "A,B,…")]
    pub columns: Vec<String>,
    /// Print at most N rows.
    #[arg(short = 'n', long, value_name = "N")]
    pub limit: Option<u64>,
    /// Blocks of a Sift file (row groups of a Parquet file) to read: START..END (END
    /// exclusive), START.., ..END or a single block N.
    #[arg(long, value_name = "START..END", value_parser = parse_block_range)]
    pub blocks: Option<BlockRange>,
    /// Output format, printed to stdout (a format, not a file: to write a file, use
    /// `sift convert`, or redirect `-o csv > FILE`).
    #[arg(short, long, value_name = "FORMAT", default_value = "table",
        value_parser = OutputFormatParser { has_out: false })]
    pub output: CatOutput,
    /// Skip verifying segment checksums (to measure decoding alone; Sift files only).
    #[arg(long)]
    pub no_checksums: bool,
    /// Threads decoding blocks at once (Sift files and datasets); default: every core.
    /// Rows still come in the file's order.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..1025))]
    pub threads: Option<u64>,
}

/// A range of block indices, either end open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockRange {
    pub start: usize,
    pub end: Option<usize>,
}

fn parse_block_range(s: &str) -> Result<BlockRange, String> {
    let num = |t: &str| {
        t.trim()
            .parse::<usize>()
            .map_err(|_| format!("'{t}' is not a block number"))
    };
    let range = match s.split_once("..") {
        None => {
            let n = num(s)?;
            BlockRange {
                start: n,
                end: Some(n + 1),
            }
        }
        Some((a, b)) => BlockRange {
            start: if a.trim().is_empty() { 0 } else { num(a)? },
            end: if b.trim().is_empty() {
                None
            } else {
                Some(num(b)?)
            },
        },
    };
    if range.end.is_some_and(|e| e < range.start) {
        return Err(format!("block range {s} ends before it starts"));
    }
    Ok(range)
}

pub fn run(args: &CatArgs, ui: &Ui) -> Result<()> {
    let start_time = Instant::now();
    let name = args.file.to_string_lossy();
    if !args.file.is_file()
        && (sift_store::is_url(&name) || args.file.is_dir() || name.contains(['*', '?', '[']))
    {
        return cat_dataset(args, ui, start_time);
    }
    // Any other name is opened as a Sift file (which is what it says if it is not one).
    if Format::of(&args.file).is_ok_and(|f| f != Format::Sift) {
        return cat_other(args, ui, start_time);
    }
    // Through the scan engine, which decodes blocks on several threads in order.
    let table = sift_scan::Table::open_with(&args.file, !args.no_checksums)
        .context("cannot open the Sift file")?;
    let blocks = block_range(&table, args.blocks)?;
    let first: u64 = (0..blocks.start).map(|b| table.block_rows(b)).sum();
    let rows: u64 = blocks.map(|b| table.block_rows(b)).sum();
    let mut builder = (table.scan())
        .rows(first..first + rows)
        .threads(crate::threads(args.threads));
    if !args.columns.is_empty() {
        builder = builder.project(args.columns.iter().cloned());
    }
    if let Some(n) = args.limit {
        builder = builder.limit(n);
    }
    let scan = builder.build()?;
    let schema = scan.schema();
    let path = args.file.display().to_string();
    let batches = scan.map(move |b| b.with_context(|| format!("cannot read {path}")));
    print_rows(args, ui, start_time, schema, Some(rows), batches)
}

/// `cat` of a dataset (a directory, a glob, an object-store URL) through the scan engine.
fn cat_dataset(args: &CatArgs, ui: &Ui, start_time: Instant) -> Result<()> {
    if args.blocks.is_some() {
        bail!("--blocks applies to one file; to read part of a dataset, use sift scan --filter");
    }
    let location = args.file.to_string_lossy().into_owned();
    let options = sift_store::StoreOptions::default();
    let dataset = sift_store::open_dataset(&[location.as_str()], &options, !args.no_checksums)
        .context("cannot open the input")?;
    let mut builder = dataset.scan().threads(crate::threads(args.threads));
    if !args.columns.is_empty() {
        builder = builder.project(args.columns.iter().cloned());
    }
    if let Some(n) = args.limit {
        builder = builder.limit(n);
    }
    let scan = builder.build()?;
    let schema = scan.schema();
    let batches = scan.map(move |b| b.with_context(|| format!("cannot read {location}")));
    print_rows(args, ui, start_time, schema, None, batches)
}

/// `cat` of a Parquet, Arrow IPC or CSV file, through the readers `convert` uses;
/// `--blocks` selects Parquet row groups.
fn cat_other(args: &CatArgs, ui: &Ui, start_time: Instant) -> Result<()> {
    let options = InputOptions {
        columns: args.columns.clone(),
        row_groups: args.blocks.map(|r| (r.start, r.end)),
        ..InputOptions::default()
    };
    let input = open_input(&args.file, &options)?;
    print_rows(
        args,
        ui,
        start_time,
        input.schema,
        input.rows,
        input.batches,
    )
}

/// Prints `batches` (of `schema`, `rows` in all if known) as `args` asks.
fn print_rows(
    args: &CatArgs,
    ui: &Ui,
    start_time: Instant,
    schema: SchemaRef,
    rows: Option<u64>,
    batches: impl Iterator<Item = Result<RecordBatch>>,
) -> Result<()> {
    let columns = schema.fields().len();
    let schema = printable_batch(RecordBatch::new_empty(schema))?.schema();
    let total = match (rows, args.limit) {
        (Some(r), Some(l)) => Some(r.min(l)),
        (r, l) => r.or(l),
    };
    let show_progress = args.output == CatOutput::None || !std::io::stdout().is_terminal();
    let progress = if show_progress {
        ui.progress(total, "rows", "decoding")
    } else {
        indicatif::ProgressBar::hidden()
    };
    let mut out = Stdout::new();
    let mut printer = Printer::new(args.output, schema, &mut out)?;
    let mut remaining = args.limit.unwrap_or(u64::MAX);
    let mut rows = 0u64;
    let mut bytes = 0u64;
    for batch in batches {
        if remaining == 0 {
            break;
        }
        let mut batch = batch?;
        if (batch.num_rows() as u64) > remaining {
            batch = batch.slice(0, remaining as usize);
        }
        remaining -= batch.num_rows() as u64;
        rows += batch.num_rows() as u64;
        bytes += batch_bytes(&batch);
        progress.inc(batch.num_rows() as u64);
        printer.print(printable_batch(batch)?)?;
    }
    printer.finish()?;
    drop(printer);
    out.flush()?;
    progress.finish_and_clear();

    if args.output == CatOutput::None && ui.verbose() {
        let secs = start_time.elapsed().as_secs_f64();
        eprintln!(
            "decoded {} rows × {columns} columns, {} as Arrow, in {} ({:.2} GB/s)",
            human_count(rows),
            human_bytes(bytes),
            fmt_secs(secs),
            bytes as f64 / secs.max(1e-9) / 1e9
        );
    }
    Ok(())
}

/// The blocks `range` selects, checked against the file.
fn block_range(file: &sift_scan::Table, range: Option<BlockRange>) -> Result<Range<usize>> {
    let n = file.num_blocks();
    let Some(r) = range else {
        return Ok(0..n);
    };
    let end = r.end.unwrap_or(n);
    if r.start > n || end > n {
        bail!(
            "{}: blocks {}..{end} are out of range (the file has {n} block{})",
            file.path().display(),
            r.start,
            if n == 1 { "" } else { "s" }
        );
    }
    Ok(r.start..end)
}

/// Writes batches to stdout in the chosen format.
pub(crate) enum Printer<'a> {
    /// Batches are collected up to one block's worth of rows, then printed as one table
    /// (a table's column widths depend on all its rows).
    Table {
        schema: SchemaRef,
        pending: Vec<RecordBatch>,
        pending_rows: usize,
        printed: bool,
        out: &'a mut Stdout,
    },
    Csv {
        schema: SchemaRef,
        writer: Box<arrow::csv::Writer<&'a mut Stdout>>,
        wrote: bool,
    },
    Json(arrow::json::LineDelimitedWriter<&'a mut Stdout>),
    None,
}

impl<'a> Printer<'a> {
    pub(crate) fn new(kind: CatOutput, schema: SchemaRef, out: &'a mut Stdout) -> Result<Self> {
        if kind == CatOutput::Csv {
            crate::display::check_csv(&schema)?;
        }
        Ok(match kind {
            CatOutput::Table => Printer::Table {
                schema,
                pending: Vec::new(),
                pending_rows: 0,
                printed: false,
                out,
            },
            CatOutput::Csv => Printer::Csv {
                schema,
                writer: Box::new(
                    arrow::csv::WriterBuilder::new()
                        .with_header(true)
                        .build(out),
                ),
                wrote: false,
            },
            CatOutput::Json => Printer::Json(arrow::json::LineDelimitedWriter::new(out)),
            CatOutput::None => Printer::None,
        })
    }

    pub(crate) fn print(&mut self, batch: RecordBatch) -> Result<()> {
        match self {
            Printer::Table {
                pending,
                pending_rows,
                ..
            } => {
                *pending_rows += batch.num_rows();
                pending.push(batch);
                if *pending_rows >= MAX_BLOCK_ROWS {
                    self.flush_table()?;
                }
            }
            Printer::Csv { writer, wrote, .. } => {
                writer.write(&batch)?;
                *wrote = true;
            }
            Printer::Json(writer) => writer.write(&batch)?,
            Printer::None => drop(batch),
        }
        Ok(())
    }

    fn flush_table(&mut self) -> Result<()> {
        if let Printer::Table {
            pending,
            pending_rows,
            printed,
            out,
            ..
        } = self
            && !pending.is_empty()
        {
            let table = arrow::util::pretty::pretty_format_batches(pending)?;
            writeln!(out, "{table}")?;
            pending.clear();
            *pending_rows = 0;
            *printed = true;
        }
        Ok(())
    }

    pub(crate) fn finish(&mut self) -> Result<()> {
        self.flush_table()?;
        match self {
            // Nothing selected: still show the column names.
            Printer::Table {
                schema,
                printed: false,
                out,
                ..
            } => {
                let empty = RecordBatch::new_empty(schema.clone());
                let table = arrow::util::pretty::pretty_format_batches(&[empty])?;
                writeln!(out, "{table}")?;
            }
            Printer::Csv {
                schema,
                writer,
                wrote: false,
            } => writer.write(&RecordBatch::new_empty(schema.clone()))?,
            Printer::Json(writer) => writer.finish()?,
            _ => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_ranges_parse() {
        let r = |s| parse_block_range(s);
        assert_eq!(
            r("2..5"),
            Ok(BlockRange {
                start: 2,
                end: Some(5)
            })
        );
        assert_eq!(
            r("2.."),
            Ok(BlockRange {
                start: 2,
                end: None
            })
        );
        assert_eq!(
            r("..3"),
            Ok(BlockRange {
                start: 0,
                end: Some(3)
            })
        );
        assert_eq!(
            r("7"),
            Ok(BlockRange {
                start: 7,
                end: Some(8)
            })
        );
        assert!(r("5..2").is_err());
        assert!(r("x..2").is_err());
    }
}
