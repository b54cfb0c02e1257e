//! `sift convert`: stream batches from one file format into another.

use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result, bail};

use sift_io::{Format, InputOptions, Output, OutputOptions, ParquetCompression, open_input};

use crate::io::Stdout;
use crate::table::{fmt_ratio, fmt_secs, human_bytes, human_count, ratio};
use crate::ui::Ui;

/// Convert between Sift, Parquet and Arrow IPC files, or from CSV.
///
/// Formats are chosen by extension. Inputs: .sift, .parquet, .csv (header row, schema
/// inferred), .arrow/.feather/.ipc (Arrow IPC file), .arrows (Arrow IPC stream).
/// Outputs: .sift, .parquet, .arrow/.feather/.ipc, .arrows.
///
/// Data is streamed batch by batch, so memory stays bounded by about one block. The output
/// appears at OUT only once it is complete; on an error, Ctrl-C (SIGINT) or SIGTERM
/// nothing is left behind (OUT keeps what it held before).
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  \
    sift convert lineitem.parquet lineitem.sift\n  \
    sift convert lineitem.sift lineitem.parquet --compression snappy\n  \
    sift convert data.csv data.sift --infer-rows 10000\n  \
    sift convert lineitem.parquet s3://bucket/lineitem/part-0.sift")]
pub struct ConvertArgs {
    /// Input file.
    pub input: PathBuf,
    /// Output file (overwritten if it exists), or an object-store URL (s3://, gs://,
    /// az://): the file is written locally, then uploaded with a multipart upload, so the
    /// object appears whole or not at all.
    pub output: PathBuf,
    /// Rows per Sift block (1..=65536); only for .sift output.
    #[arg(long, value_name = "N")]
    pub block_rows: Option<usize>,
    /// Compression codec; only for .parquet output [default: zstd].
    #[arg(long, value_enum)]
    pub compression: Option<ParquetCompression>,
    /// Rows of a CSV input read to infer its schema.
    #[arg(long, value_name = "N", default_value_t = 1000)]
    pub infer_rows: usize,
    /// Threads encoding a Sift block's columns at once; default: every core. The output is
    /// the same file for any count.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..1025))]
    pub threads: Option<u64>,
    /// Columns whose codes are stored as byte slices (comma-separated); only for .sift
    /// output. Range filters on wide codes (keys, prices, timestamps) then compare a byte
    /// or two per value instead of every bit, for a larger file: an integer column is
    /// stored as its block minimum plus byte-sliced codes, whatever encoding would be
    /// smaller.
    #[arg(long, value_name = "COLUMNS", value_delimiter = ',')]
    pub byteslice: Vec<String>,
    #[command(flatten)]
    pub store: crate::scan::StoreArgs,
}

pub fn run(args: &ConvertArgs, ui: &Ui) -> Result<()> {
    let in_format = Format::of(&args.input)?;
    let out_format = Format::of(&args.output)?;
    if args.block_rows.is_some() && out_format != Format::Sift {
        bail!("--block-rows only applies to .sift output");
    }
    if args.compression.is_some() && out_format != Format::Parquet {
        bail!("--compression only applies to .parquet output");
    }
    if !args.byteslice.is_empty() && out_format != Format::Sift {
        bail!("--byteslice only applies to .sift output");
    }
    if sift_io::same_file(&args.input, &args.output) {
        bail!(
            "{}: input and output are the same file",
            args.output.display()
        );
    }
    let mut out_options = OutputOptions::default();
    if let Some(n) = args.block_rows {
        out_options.block_rows = n;
    }
    if let Some(c) = args.compression {
        out_options.compression = c;
    }
    out_options.threads = crate::threads(args.threads);
    out_options.byteslice.clone_from(&args.byteslice);
    let in_options = InputOptions {
        batch_rows: out_options.block_rows,
        csv_infer_rows: args.infer_rows.max(1),
        ..InputOptions::default()
    };

    let start = Instant::now();
    let bytes_in = std::fs::metadata(&args.input)
        .with_context(|| format!("cannot open {}", args.input.display()))?
        .len();
    let input = open_input(&args.input, &in_options)?;
    let url = args.output.to_string_lossy().into_owned();
    // An object is written to a local file first, then uploaded.
    let staged = sift_store::is_url(&url).then(|| {
        let name = args
            .output
            .file_name()
            .unwrap_or_default()
            .to_string_lossy();
        Staged(std::env::temp_dir().join(format!("sift-upload-{}-{name}", std::process::id())))
    });
    let local = staged
        .as_ref()
        .map_or(args.output.as_path(), |s| s.0.as_path());
    out_options.order.clone_from(&input.order);
    let output = Output::create(local, &input.schema, &out_options)?;
    let progress = ui.progress(
        input.rows,
        "rows",
        &format!("{} → {}", in_format.name(), out_format.name()),
    );
    let (rows, bytes_out) = sift_io::copy(input, output, |batch| {
        progress.inc(batch.num_rows() as u64);
        Ok(())
    })?;
    progress.finish_and_clear();
    if let Some(staged) = &staged {
        let uploading = ui.progress(None, "bytes", "uploading");
        sift_store::upload(&staged.0, &url, &args.store.options())
            .with_context(|| format!("cannot upload to {url}"))?;
        uploading.finish_and_clear();
    }
    let secs = start.elapsed().as_secs_f64();

    if ui.verbose() {
        let mut out = Stdout::new();
        writeln!(
            out,
            "{} → {}: {} rows, {} → {} ({}), {}",
            args.input.display(),
            args.output.display(),
            human_count(rows),
            human_bytes(bytes_in),
            human_bytes(bytes_out),
            fmt_ratio(ratio(bytes_in, bytes_out)),
            fmt_secs(secs)
        )?;
        out.flush()?;
    }
    Ok(())
}

/// A local file standing in for an object until it is uploaded; removed in any case.
struct Staged(PathBuf);

impl Drop for Staged {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
