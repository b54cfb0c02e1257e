//! `write` (Arrow data from Python into a file) and `convert` (file to file).

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context;
use arrow::array::RecordBatchReader;
use arrow::ffi_stream::ArrowArrayStreamReader;
use arrow_pyarrow::FromPyArrow;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use pyo3::exceptions::PyKeyboardInterrupt;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use sift_io::{Format, Input, InputOptions, Output, OutputOptions, ParquetCompression};

use crate::errors::SiftError;
use crate::interrupt::{self, Interrupted};

/// `write(data, path, block_rows, threads, progress)`: streams any object with
/// `__arrow_c_stream__` (a `pyarrow.Table`, `RecordBatchReader`, a Polars frame …) into
/// `path` (`.sift`, `.parquet`, `.arrow`, `.arrows`), atomically; returns a summary.
#[pyfunction]
#[pyo3(signature = (data, path, block_rows = None, compression = None, threads = None, progress = None, byteslice = None))]
#[allow(clippy::too_many_arguments)] // the keyword arguments of `sift.write`
pub fn write<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    path: PathBuf,
    block_rows: Option<usize>,
    compression: Option<String>,
    threads: Option<usize>,
    progress: Option<bool>,
    byteslice: Option<Vec<String>>,
) -> PyResult<Bound<'py, PyDict>> {
    let options = output_options(&path, block_rows, compression, threads, byteslice)?;
    let stream = ArrowArrayStreamReader::from_pyarrow_bound(data)?;
    let schema = stream.schema();
    let input = Input {
        schema,
        rows: None,
        batches: Box::new(stream.map(|b| b.context("cannot read the input stream"))),
        order: Vec::new(),
    };
    run(py, input, &path, &options, progress, "writing")
}

/// `convert(src, dst, …)`: any input format `sift convert` reads into any output format.
#[pyfunction]
#[pyo3(signature = (src, dst, block_rows = None, compression = None, threads = None, progress = None, byteslice = None))]
#[allow(clippy::too_many_arguments)] // the keyword arguments of `sift.convert`
pub fn convert<'py>(
    py: Python<'py>,
    src: PathBuf,
    dst: PathBuf,
    block_rows: Option<usize>,
    compression: Option<String>,
    threads: Option<usize>,
    progress: Option<bool>,
    byteslice: Option<Vec<String>>,
) -> PyResult<Bound<'py, PyDict>> {
    let options = output_options(&dst, block_rows, compression, threads, byteslice)?;
    if sift_io::same_file(&src, &dst) {
        return Err(SiftError::new_err(format!(
            "{}: input and output are the same file",
            dst.display()
        )));
    }
    let in_options = InputOptions {
        batch_rows: options.block_rows,
        ..InputOptions::default()
    };
    let input = py
        .detach(|| sift_io::open_input(&src, &in_options))
        .map_err(crate::errors::chain_error)?;
    let label = format!(
        "{} → {}",
        Format::of(&src).map_err(crate::errors::chain_error)?.name(),
        Format::of(&dst).map_err(crate::errors::chain_error)?.name()
    );
    run(py, input, &dst, &options, progress, &label)
}

fn output_options(
    path: &std::path::Path,
    block_rows: Option<usize>,
    compression: Option<String>,
    threads: Option<usize>,
    byteslice: Option<Vec<String>>,
) -> PyResult<OutputOptions> {
    let format = Format::of(path).map_err(crate::errors::chain_error)?;
    let mut options = OutputOptions {
        threads: crate::threads(threads),
        ..OutputOptions::default()
    };
    if let Some(n) = block_rows {
        if format != Format::Sift {
            return Err(SiftError::new_err(
                "block_rows only applies to .sift output",
            ));
        }
        options.block_rows = n;
    }
    if let Some(columns) = byteslice {
        if format != Format::Sift {
            return Err(SiftError::new_err("byteslice only applies to .sift output"));
        }
        options.byteslice = columns;
    }
    if let Some(c) = compression {
        if format != Format::Parquet {
            return Err(SiftError::new_err(
                "compression only applies to .parquet output",
            ));
        }
        options.compression = match c.to_ascii_lowercase().as_str() {
            "zstd" => ParquetCompression::Zstd,
            "snappy" => ParquetCompression::Snappy,
            "none" | "uncompressed" => ParquetCompression::None,
            other => {
                return Err(SiftError::new_err(format!(
                    "unknown compression '{other}' (expected zstd, snappy or none)"
                )));
            }
        };
    }
    Ok(options)
}

/// Copies `input` into a new file at `path` without the interpreter's lock, checking for
/// Ctrl-C after every batch; a progress bar on a terminal when `progress` is not false.
fn run<'py>(
    py: Python<'py>,
    input: Input,
    path: &std::path::Path,
    options: &OutputOptions,
    progress: Option<bool>,
    label: &str,
) -> PyResult<Bound<'py, PyDict>> {
    let start = Instant::now();
    let bar = match input.rows {
        Some(n) => ProgressBar::new(n),
        None => ProgressBar::no_length(),
    };
    // indicatif draws only on a terminal; `progress=False` hides it there too.
    bar.set_draw_target(match progress {
        Some(false) => ProgressDrawTarget::hidden(),
        _ => ProgressDrawTarget::stderr(),
    });
    if let Ok(style) =
        ProgressStyle::with_template("{msg} {bar:30} {human_pos}/{human_len} rows {elapsed}")
    {
        bar.set_style(style);
    }
    bar.set_message(label.to_string());
    let (rows, bytes) = py
        .detach(|| {
            let options = OutputOptions {
                order: input.order.clone(),
                ..options.clone()
            };
            let output = Output::create(path, &input.schema, &options)?;
            sift_io::copy(input, output, |batch| {
                bar.inc(batch.num_rows() as u64);
                interrupt::check().map_err(|e| anyhow::Error::new(Interrupted(e)))
            })
        })
        .map_err(|e| {
            // Ctrl-C while pyarrow ran a Python producer of the stream (a generator) is
            // raised in that producer, and reaches us only as the stream error's text.
            let text = sift_io::error_message(&e);
            match text.contains("KeyboardInterrupt") {
                true => PyKeyboardInterrupt::new_err(text),
                false => interrupt::unwrap_chain(e),
            }
        })?;
    bar.finish_and_clear();
    let d = PyDict::new(py);
    d.set_item("path", path.display().to_string())?;
    d.set_item("rows", rows)?;
    d.set_item("bytes", bytes)?;
    d.set_item("seconds", start.elapsed().as_secs_f64())?;
    Ok(d)
}
