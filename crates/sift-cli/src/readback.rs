//! Reading a whole file back, the way the demo and `sift bench read` time it: every read
//! opens the file anew (footer parsed, Sift checksums verified again) and decodes the
//! chosen columns of every row on this thread. What happens to each batch (kept in memory,
//! checked, dropped) is the caller's and is not timed. Sift and Parquet are read through
//! the same function so that the two are timed alike.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use arrow::array::RecordBatch;
use sift_format::{MAX_BLOCK_ROWS, SiftFile};

use crate::measure::batch_bytes;
use sift_io::{Format, InputOptions, open_input};

/// What one timed read of a whole file saw.
pub struct Read {
    /// Time spent opening the file and decoding, not in the caller's `consume`.
    pub time: Duration,
    pub rows: u64,
    /// Bytes of the decoded columns as Arrow arrays.
    pub arrow_bytes: u64,
}

/// Opens and reads `path` once on this thread, handing each batch to `consume` (whose
/// time is not counted). `columns`: the columns to decode, by name (all if `None`).
pub fn read_with(
    path: &Path,
    columns: Option<&[String]>,
    mut consume: impl FnMut(RecordBatch) -> Result<()>,
) -> Result<Read> {
    let format = Format::of(path)?;
    let mut read = Read {
        time: Duration::ZERO,
        rows: 0,
        arrow_bytes: 0,
    };
    let mut clock = Instant::now();
    let mut take = |batch: RecordBatch, read: &mut Read| -> Result<()> {
        read.time += clock.elapsed();
        read.rows += batch.num_rows() as u64;
        read.arrow_bytes += batch_bytes(&batch);
        consume(batch)?;
        clock = Instant::now();
        Ok(())
    };
    match format {
        Format::Sift => {
            let file = SiftFile::open(path)?;
            let projection = columns.map(|c| file.projection(c)).transpose()?;
            for batch in file.batches(projection, 0..file.num_blocks())? {
                let batch = batch.with_context(|| format!("cannot read {}", path.display()))?;
                take(batch, &mut read)?;
            }
            // Closing the file (unmapping it) counts too.
            drop(file);
        }
        // The reader `convert` and `cat` use, with the columns pushed into it.
        Format::Parquet => {
            let options = InputOptions {
                batch_rows: MAX_BLOCK_ROWS,
                columns: columns.map(<[String]>::to_vec).unwrap_or_default(),
                ..InputOptions::default()
            };
            for batch in open_input(path, &options)?.batches {
                take(batch?, &mut read)?;
            }
        }
        other => bail!(
            "{}: reading back is timed for Sift and Parquet files, not {}",
            path.display(),
            other.name()
        ),
    }
    read.time += clock.elapsed();
    Ok(read)
}
