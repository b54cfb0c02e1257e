//! Where blocks come from: a Sift file (encoded chunks, evaluated in place) or a Parquet
//! file (row groups decoded by the `parquet` crate, evaluated on Arrow arrays).

use std::fs::File;
use std::path::{Path, PathBuf};

use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::SchemaRef;
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ParquetRecordBatchReaderBuilder};
use sift_format::{ChunkRef, ChunkStats, SiftFile};

use crate::error::{Error, Result};

/// A file the scan reads.
pub(crate) enum Source {
    Sift(SiftFile),
    Parquet(ParquetSource),
}

/// A Parquet file opened once: its metadata is parsed once and reused per row group.
pub(crate) struct ParquetSource {
    path: PathBuf,
    file: File,
    meta: ArrowReaderMetadata,
}

/// One block's columns, as the evaluator reads them.
pub(crate) enum BlockData<'a> {
    /// Encoded chunks, fetched on demand.
    Sift { file: &'a SiftFile, block: usize },
    /// A decoded row group; `columns[c]` is the batch column of schema column `c`.
    Arrow {
        batch: RecordBatch,
        columns: Vec<Option<usize>>,
    },
}

/// One column of one block.
pub(crate) enum ColumnData<'a> {
    Encoded(ChunkRef<'a>),
    Decoded(ArrayRef),
}

impl Source {
    pub(crate) fn open(path: &Path, verify_checksums: bool) -> Result<Source> {
        let is_parquet = path.extension().is_some_and(|e| {
            ["parquet", "parq", "pq"]
                .iter()
                .any(|x| e.eq_ignore_ascii_case(x))
        });
        if is_parquet {
            let file =
                File::open(path).map_err(|e| Error::Parquet(format!("{}: {e}", path.display())))?;
            let meta = ArrowReaderMetadata::load(&file, Default::default())
                .map_err(|e| Error::Parquet(format!("{}: {e}", path.display())))?;
            return Ok(Source::Parquet(ParquetSource {
                path: path.to_path_buf(),
                file,
                meta,
            }));
        }
        let options = sift_format::ReadOptions {
            verify_checksums,
            ..Default::default()
        };
        Ok(Source::Sift(SiftFile::open_with(path, options)?))
    }

    pub(crate) fn schema(&self) -> SchemaRef {
        match self {
            Source::Sift(f) => f.schema().clone(),
            Source::Parquet(p) => p.meta.schema().clone(),
        }
    }

    pub(crate) fn num_blocks(&self) -> usize {
        match self {
            Source::Sift(f) => f.num_blocks(),
            Source::Parquet(p) => p.meta.metadata().num_row_groups(),
        }
    }

    pub(crate) fn block_rows(&self, b: usize) -> usize {
        match self {
            Source::Sift(f) => f.footer().blocks.get(b).map_or(0, |m| m.rows as usize),
            Source::Parquet(p) => p
                .meta
                .metadata()
                .row_groups()
                .get(b)
                .map_or(0, |g| g.num_rows().max(0) as usize),
        }
    }

    /// The zone map of a column in a block (Sift only; Parquet row groups are not pruned).
    pub(crate) fn stats(&self, b: usize, col: usize) -> Option<&ChunkStats> {
        match self {
            Source::Sift(f) => f
                .footer()
                .blocks
                .get(b)
                .and_then(|m| m.columns.get(col))
                .map(|c| &c.stats),
            Source::Parquet(_) => None,
        }
    }

    /// Opens block `b`; a Parquet row group is decoded for `needed` columns here.
    pub(crate) fn block(&self, b: usize, needed: &[usize]) -> Result<BlockData<'_>> {
        match self {
            Source::Sift(f) => Ok(BlockData::Sift { file: f, block: b }),
            Source::Parquet(p) => {
                let err = |e: &dyn std::fmt::Display| {
                    Error::Parquet(format!("{}: row group {b}: {e}", p.path.display()))
                };
                let file = p.file.try_clone().map_err(|e| err(&e))?;
                let schema_descr = p.meta.metadata().file_metadata().schema_descr();
                let mut sorted = needed.to_vec();
                sorted.sort_unstable();
                sorted.dedup();
                let mask = ProjectionMask::roots(schema_descr, sorted.iter().copied());
                let rows = self.block_rows(b);
                let reader =
                    ParquetRecordBatchReaderBuilder::new_with_metadata(file, p.meta.clone())
                        .with_row_groups(vec![b])
                        .with_projection(mask)
                        .with_batch_size(rows.max(1))
                        .build()
                        .map_err(|e| err(&e))?;
                let batches = reader.collect::<Result<Vec<_>, _>>().map_err(|e| err(&e))?;
                let schema = match batches.first() {
                    Some(first) => first.schema(),
                    None => SchemaRef::new(p.meta.schema().project(&sorted)?),
                };
                let batch = arrow_select::concat::concat_batches(&schema, &batches)?;
                let mut columns = vec![None; p.meta.schema().fields().len()];
                for (i, &c) in sorted.iter().enumerate() {
                    columns[c] = Some(i);
                }
                Ok(BlockData::Arrow { batch, columns })
            }
        }
    }
}

impl BlockData<'_> {
    pub(crate) fn column(&self, col: usize) -> Result<ColumnData<'_>> {
        match self {
            BlockData::Sift { file, block } => Ok(ColumnData::Encoded(file.chunk(*block, col)?)),
            BlockData::Arrow { batch, columns } => {
                let i = columns
                    .get(col)
                    .copied()
                    .flatten()
                    .ok_or_else(|| Error::Invalid(format!("column {col} was not read")))?;
                Ok(ColumnData::Decoded(batch.column(i).clone()))
            }
        }
    }
}
