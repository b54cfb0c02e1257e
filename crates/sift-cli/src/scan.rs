//! `sift scan`: run a filtered, projected scan through the engine and print or save the
//! rows that pass.

use std::fs::File;
use std::io::{BufWriter, IsTerminal, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use sift_format::TempFile;

use crate::cat::{CatOutput, OutputFormatParser, Printer};
use crate::display::printable_batch;
use sift_io::{Format, Output, OutputOptions, SortKey};

use crate::io::Stdout;
use crate::table::{fmt_secs, human_bytes, human_count};
use crate::ui::Ui;

/// Scan Sift or Parquet files: only the rows passing a filter, only some columns.
///
/// The input is one or more files, directories (every .sift file below, or every
/// .parquet file when there is none), glob patterns ('data/*.sift') or object-store URLs
/// (s3://bucket/lineitem/, gs://…, az://…, https://…), read as one table. Directories
/// named key=value are Hive partitions: the value becomes column `key`, and a filter on
/// it skips whole files before they are opened. Files' schemas must match, up to columns
/// some files lack (null there) and integers of different widths. Object stores are
/// configured by the usual environment variables (AWS_ACCESS_KEY_ID, AWS_REGION,
/// AWS_ENDPOINT_URL, GOOGLE_SERVICE_ACCOUNT, AZURE_STORAGE_ACCOUNT_NAME, …) or
/// --store-option.
///
/// The filter is evaluated by Sift's engine: blocks whose statistics rule it out are
/// skipped, predicates run on the compressed data where the encoding allows, and only
/// the selected rows of the requested columns are decoded. Parquet files go through the
/// same engine: row groups are skipped by their column statistics and Bloom filters
/// (equality and IN), pages by the page index when the file has one, and the rest is
/// decoded per row group.
///
/// Filter syntax: comparisons (= <> != < <= > >=) between a column and a literal or
/// two columns; `col [not] between a and b`; `col [not] in (a, b, …)`; `col is [not]
/// null`; `col [not] like 'a%b_'`; `starts_with(col, 'prefix')`; combined with `and`,
/// `or`, `not` and parentheses. Literals: 42, -1.5, 1e5 (numbers are exact: 0.1 is one
/// tenth on a decimal column), 'text' ('' for a quote),
/// date 'YYYY-MM-DD', timestamp 'YYYY-MM-DD HH:MM:SS', true, false. Column names that are
/// keywords or hold other characters go in double quotes: "order", "a b".
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  \
    sift scan lineitem.sift --filter \"l_shipdate >= date '1994-01-01' and l_quantity < 24\" --limit 10\n  \
    sift scan lineitem.sift -c l_orderkey,l_comment -f \"l_comment like '%special%'\" -o csv\n  \
    sift scan lineitem.parquet -f \"l_returnflag = 'R'\" --out returned.sift\n  \
    sift scan lineitem.sift -f \"l_discount between 0.05 and 0.07\" -o none --stats\n  \
    sift scan 's3://bucket/sales/' -f \"year = 2024 and amount > 100\" --stats\n  \
    sift scan 'parts/*.sift' -c id,name -n 20")]
pub struct ScanArgs {
    /// Files, directories, glob patterns or URLs to scan as one table (.sift or
    /// .parquet files).
    #[arg(required = true, value_name = "INPUT")]
    pub inputs: Vec<String>,
    /// Columns to return, comma-separated (default: all).
    #[arg(short, long, value_delimiter = ',', value_name = "A,B,…")]
    pub columns: Vec<String>,
    /// Only rows where this is true (syntax above).
    #[arg(short, long, value_name = "EXPR")]
    pub filter: Option<String>,
    /// Return at most N rows.
    #[arg(short = 'n', long, value_name = "N")]
    pub limit: Option<u64>,
    /// Rows to consider, by row number before filtering: START..END (END exclusive),
    /// START.., ..END or a single row N.
    #[arg(long, value_name = "START..END", value_parser = parse_row_range)]
    pub rows: Option<Range<u64>>,
    /// Rows per batch handed from the engine to the output (default: one per block).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub batch_size: Option<u64>,
    /// How rows are printed on stdout: a format, not a file (to write a file, use --out).
    #[arg(short, long, value_name = "FORMAT", default_value = "table",
        value_parser = OutputFormatParser { has_out: true })]
    pub output: CatOutput,
    /// Write the rows to the file PATH instead of printing them (a path, not a format:
    /// for the printed format, use -o); the file's format follows the extension: .sift,
    /// .parquet, .csv, .arrow/.feather/.ipc or .arrows.
    #[arg(long, value_name = "PATH", conflicts_with = "output")]
    pub out: Option<PathBuf>,
    /// Print what the scan did (blocks pruned, rows matched, values decoded, bytes read)
    /// and how long it took, on stderr.
    #[arg(long)]
    pub stats: bool,
    /// Threads reading blocks at once; default: every core. Rows still come in the
    /// file's order.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..1025))]
    pub threads: Option<u64>,
    #[command(flatten)]
    pub store: StoreArgs,
}

/// How object stores are reached.
#[derive(Debug, Clone, clap::Args)]
pub struct StoreArgs {
    /// A setting of the object store client, on top of the environment: aws_endpoint,
    /// aws_region, aws_allow_http, google_service_account, azure_storage_account_name, …
    /// (repeatable).
    #[arg(long = "store-option", value_name = "KEY=VALUE", value_parser = parse_key_value)]
    pub store_options: Vec<(String, String)>,
}

impl StoreArgs {
    pub fn options(&self) -> sift_store::StoreOptions {
        sift_store::StoreOptions {
            config: self.store_options.clone(),
            ..Default::default()
        }
    }
}

fn parse_key_value(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.to_string())),
        _ => Err(format!("'{s}' is not KEY=VALUE")),
    }
}

/// `START..END`, `START..`, `..END` or `N` (meaning `N..N+1`).
fn parse_row_range(s: &str) -> Result<Range<u64>, String> {
    let num = |t: &str| {
        t.trim()
            .parse::<u64>()
            .map_err(|_| format!("'{t}' is not a row number"))
    };
    let range = match s.split_once("..") {
        None => {
            let n = num(s)?;
            n..n.saturating_add(1)
        }
        Some((a, b)) => {
            let start = if a.trim().is_empty() { 0 } else { num(a)? };
            let end = if b.trim().is_empty() {
                u64::MAX
            } else {
                num(b)?
            };
            start..end
        }
    };
    if range.end < range.start {
        return Err(format!("row range {s} ends before it starts"));
    }
    Ok(range)
}

pub fn run(args: &ScanArgs, ui: &Ui) -> Result<()> {
    let start_time = Instant::now();
    // The engine reads what it can scan in place; other formats need `sift convert`.
    for input in &args.inputs {
        let path = Path::new(input);
        if path.is_file() {
            let format = Format::of(path)?;
            if !matches!(format, Format::Sift | Format::Parquet) {
                bail!(
                    "{input}: sift scan reads .sift and .parquet files; convert {} files \
                     first (sift convert IN OUT.sift)",
                    format.name()
                );
            }
        }
    }
    // Parse before opening the file so a typo is reported at once.
    let filter = match &args.filter {
        Some(text) => Some(
            // The error shows the filter around the failing column, not the whole text.
            sift_scan::parse_filter(text).context("invalid --filter")?,
        ),
        None => None,
    };
    if let Some(out) = &args.out {
        for input in &args.inputs {
            check_out_path(Path::new(input), out)?;
        }
    }

    let dataset = sift_store::open_dataset(&args.inputs, &args.store.options(), true)
        .context("cannot open the input")?;
    let mut builder = dataset.scan();
    if !args.columns.is_empty() {
        builder = builder.project(args.columns.iter().cloned());
    }
    if let Some(f) = filter {
        builder = builder.filter(f);
    }
    if let Some(n) = args.limit {
        builder = builder.limit(n);
    }
    if let Some(r) = &args.rows {
        builder = builder.rows(r.clone());
    }
    if let Some(n) = args.batch_size {
        builder = builder.batch_size(usize::try_from(n).unwrap_or(usize::MAX));
    }
    let mut scan = builder.threads(crate::threads(args.threads)).build()?;
    let schema = scan.schema();

    let mut stdout = Stdout::new();
    let mut sink = match &args.out {
        Some(path) => {
            // The columns the files' zone maps show sorted over every block.
            let order = sift_io::sort_keys(&schema, scan.sorted_columns());
            Sink::File(Box::new(FileSink::create(path, &schema, order)?))
        }
        None => Sink::Print(Printer::new(
            args.output,
            printable_batch(RecordBatch::new_empty(schema))?.schema(),
            &mut stdout,
        )?),
    };
    // The number of matching rows is unknown up front: a spinner counts them.
    let quiet_terminal =
        args.out.is_none() && args.output != CatOutput::None && std::io::stdout().is_terminal();
    let progress = if quiet_terminal {
        indicatif::ProgressBar::hidden()
    } else {
        ui.progress(None, "rows", "scanning")
    };
    let mut rows = 0u64;
    let what = args.inputs.join(" ");
    for batch in scan.by_ref() {
        let batch = batch.with_context(|| format!("cannot scan {what}"))?;
        rows += batch.num_rows() as u64;
        progress.inc(batch.num_rows() as u64);
        sink.write(batch)?;
    }
    let written = sink.finish()?;
    stdout.flush()?;
    progress.finish_and_clear();
    let secs = start_time.elapsed().as_secs_f64();

    if args.stats {
        let files = scan.file_counts();
        if files.total > 1 {
            eprintln!(
                "scan: files {} (pruned {}, opened {})",
                files.total, files.pruned, files.opened
            );
        }
        eprintln!("scan: {}", scan.stats());
        let http = sift_store::http_counts();
        if http.requests > 0 {
            eprintln!(
                "scan: {} HTTP requests, footers and listings included; {} failed and were retried",
                http.requests, http.failures
            );
        }
        eprintln!(
            "scan: {} rows returned in {}",
            human_count(rows),
            fmt_secs(secs)
        );
    }
    if let (Some(out), Some(bytes)) = (&args.out, written) {
        if ui.verbose() {
            writeln!(
                stdout,
                "{what} → {}: {} rows, {}, {}",
                out.display(),
                human_count(rows),
                human_bytes(bytes),
                fmt_secs(secs)
            )?;
            stdout.flush()?;
        }
    } else if args.output == CatOutput::None && ui.verbose() && !args.stats {
        eprintln!("{} rows matched in {}", human_count(rows), fmt_secs(secs));
    }
    Ok(())
}

/// Refuses an output path that is the input (writing would destroy what is read) or has
/// an extension no writer handles, before any work is done.
pub(crate) fn check_out_path(input: &Path, out: &Path) -> Result<()> {
    let name = out.to_string_lossy();
    if <CatOutput as clap::ValueEnum>::from_str(&name, true).is_ok() {
        bail!(
            "--out takes a file path, not a format; to print the rows as {name} use -o {name}, \
             to write them to a file use --out FILE.{name}"
        );
    }
    Format::of(out)?;
    if let (Ok(a), Ok(b)) = (std::fs::canonicalize(input), std::fs::canonicalize(out))
        && a == b
    {
        bail!("{}: input and output are the same file", out.display());
    }
    Ok(())
}

pub(crate) enum Sink<'a> {
    Print(Printer<'a>),
    File(Box<FileSink>),
}

impl Sink<'_> {
    pub(crate) fn write(&mut self, batch: RecordBatch) -> Result<()> {
        match self {
            Sink::Print(p) => p.print(printable_batch(batch)?),
            Sink::File(f) => f.write(&batch),
        }
    }

    /// Finishes the output; returns the bytes written to a file.
    pub(crate) fn finish(self) -> Result<Option<u64>> {
        match self {
            Sink::Print(mut p) => {
                p.finish()?;
                Ok(None)
            }
            Sink::File(f) => f.finish().map(Some),
        }
    }
}

/// A file being written: the shared writers of `io.rs`, plus CSV (which they do not
/// write), committed atomically the same way.
pub(crate) enum FileSink {
    Output(Output),
    Csv {
        writer: arrow::csv::Writer<BufWriter<File>>,
        tmp: TempFile,
        path: PathBuf,
    },
}

impl FileSink {
    /// A file at `path` for rows of `schema` that come in `order` (declared in a Parquet
    /// file, see [`OutputOptions::order`]).
    pub(crate) fn create(path: &Path, schema: &SchemaRef, order: Vec<SortKey>) -> Result<Self> {
        if Format::of(path)? != Format::Csv {
            let options = OutputOptions {
                order,
                ..OutputOptions::default()
            };
            return Ok(FileSink::Output(Output::create(path, schema, &options)?));
        }
        crate::display::check_csv(schema)?;
        let (tmp, file) =
            TempFile::create(path).with_context(|| format!("cannot write {}", path.display()))?;
        let mut writer = arrow::csv::WriterBuilder::new()
            .with_header(true)
            .build(BufWriter::with_capacity(1 << 20, file));
        // The header even when no row matches.
        let empty = printable_batch(RecordBatch::new_empty(schema.clone()))?;
        writer
            .write(&empty)
            .with_context(|| format!("cannot write {}", path.display()))?;
        Ok(FileSink::Csv {
            writer,
            tmp,
            path: path.to_path_buf(),
        })
    }

    fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        match self {
            FileSink::Output(o) => o.write(batch),
            FileSink::Csv { writer, path, .. } => writer
                .write(&printable_batch(batch.clone())?)
                .with_context(|| format!("cannot write {}", path.display())),
        }
    }

    fn finish(self) -> Result<u64> {
        match self {
            FileSink::Output(o) => o.finish(),
            FileSink::Csv { writer, tmp, path } => {
                let file = writer
                    .into_inner()
                    .into_inner()
                    .map_err(|e| e.into_error())
                    .with_context(|| format!("cannot write {}", path.display()))?;
                tmp.commit(file)
                    .with_context(|| format!("cannot write {}", path.display()))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_ranges_parse() {
        let r = |s| parse_row_range(s);
        assert_eq!(r("2..5"), Ok(2..5));
        assert_eq!(r("2.."), Ok(2..u64::MAX));
        assert_eq!(r("..3"), Ok(0..3));
        assert_eq!(r("7"), Ok(7..8));
        assert_eq!(r("4..4"), Ok(4..4));
        assert!(r("5..2").is_err());
        assert!(r("x..2").is_err());
        assert!(r("-1").is_err());
    }
}
