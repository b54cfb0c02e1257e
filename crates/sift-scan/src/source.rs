//! Where blocks come from: a Sift file (encoded chunks, evaluated in place) or a Parquet
//! file (row groups decoded by the `parquet` crate, evaluated on Arrow arrays).

use std::cell::OnceCell;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::{DataType, Schema, SchemaRef};
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder,
};
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
    /// A decoded row group; `columns[c]` is the batch column of schema column `c`. A
    /// column read as a dictionary (see [`Source::block`]) is a dictionary array in `batch`;
    /// `plain[c]` is `Some` for those columns, and holds their values cast to the schema's
    /// type once something asks for them.
    Arrow {
        batch: RecordBatch,
        columns: Vec<Option<usize>>,
        plain: Vec<Option<OnceCell<ArrayRef>>>,
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
        let file = SiftFile::open_with(path, options)?;
        file.stored_schema()?;
        Ok(Source::Sift(file))
    }

    pub(crate) fn schema(&self) -> SchemaRef {
        match self {
            // Chunks decode to the stored types: a column written as a dictionary is
            // filtered and returned as its values (`read_dictionary` asks for a dictionary).
            // Built and checked when the source was opened, so never the empty fallback.
            Source::Sift(f) => f
                .stored_schema()
                .map_or_else(|_| SchemaRef::new(Schema::empty()), Arc::clone),
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
            Source::Sift(f) => f.block_rows(b).map_or(0, |r| r as usize),
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
            // A chunk whose metadata does not decode is not pruned: reading it reports why.
            Source::Sift(f) => f.chunk_meta(b, col).ok().map(|c| &c.stats),
            Source::Parquet(_) => None,
        }
    }

    /// Opens block `b`; a Parquet row group is decoded for `needed` columns here, and those
    /// of `dictionary` that the Parquet reader can return as `Dictionary(Int32, type)` come
    /// out as such: dictionary-encoded pages keep their dictionary and only the keys are
    /// decoded (the reader builds a dictionary itself for pages stored plain).
    pub(crate) fn block(
        &self,
        b: usize,
        needed: &[usize],
        dictionary: &[usize],
    ) -> Result<BlockData<'_>> {
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
                let meta = p.dictionary_meta(dictionary, &sorted);
                let meta = meta.as_ref().unwrap_or(&p.meta);
                let reader = ParquetRecordBatchReaderBuilder::new_with_metadata(file, meta.clone())
                    .with_row_groups(vec![b])
                    .with_projection(mask)
                    .with_batch_size(rows.max(1))
                    .build()
                    .map_err(|e| err(&e))?;
                let batches = reader.collect::<Result<Vec<_>, _>>().map_err(|e| err(&e))?;
                let schema = match batches.first() {
                    Some(first) => first.schema(),
                    None => SchemaRef::new(meta.schema().project(&sorted)?),
                };
                let batch = arrow_select::concat::concat_batches(&schema, &batches)?;
                let fields = p.meta.schema().fields();
                let mut columns = vec![None; fields.len()];
                let mut plain: Vec<_> = (0..fields.len()).map(|_| None).collect();
                for (i, &c) in sorted.iter().enumerate() {
                    columns[c] = Some(i);
                    let is_dictionary = |dt: &DataType| matches!(dt, DataType::Dictionary(..));
                    if is_dictionary(batch.column(i).data_type())
                        && !is_dictionary(fields[c].data_type())
                    {
                        plain[c] = Some(OnceCell::new());
                    }
                }
                Ok(BlockData::Arrow {
                    batch,
                    columns,
                    plain,
                })
            }
        }
    }
}

impl ParquetSource {
    /// Reader metadata whose schema asks for columns `dictionary ∩ needed` as
    /// `Dictionary(Int32, type)` — the type `read_dictionary` returns on Sift files
    /// ([`sift_encoding::dictionary_type`]) — for the string and binary types with offsets
    /// the Parquet reader decodes into dictionaries. `None` when no column qualifies or the
    /// reader refuses the schema: those columns are then read plain and dictionary-encoded
    /// after decoding, as before.
    fn dictionary_meta(
        &self,
        dictionary: &[usize],
        needed: &[usize],
    ) -> Option<ArrowReaderMetadata> {
        let schema = self.meta.schema();
        let mut changed = false;
        let fields: Vec<_> = schema
            .fields()
            .iter()
            .enumerate()
            .map(|(c, f)| {
                let hint = dictionary.contains(&c)
                    && needed.contains(&c)
                    && matches!(
                        f.data_type(),
                        DataType::Utf8
                            | DataType::LargeUtf8
                            | DataType::Binary
                            | DataType::LargeBinary
                    );
                changed |= hint;
                match hint {
                    true => f
                        .as_ref()
                        .clone()
                        .with_data_type(sift_encoding::dictionary_type(f.data_type()))
                        .into(),
                    false => f.clone(),
                }
            })
            .collect();
        if !changed {
            return None;
        }
        let hinted = SchemaRef::new(Schema::new_with_metadata(fields, schema.metadata().clone()));
        let options = ArrowReaderOptions::new().with_schema(hinted);
        ArrowReaderMetadata::try_new(self.meta.metadata().clone(), options).ok()
    }
}

impl BlockData<'_> {
    /// Column `col` with the schema's type.
    pub(crate) fn column(&self, col: usize) -> Result<ColumnData<'_>> {
        let data = self.dictionary_column(col)?;
        let (BlockData::Arrow { plain, .. }, ColumnData::Decoded(a)) = (self, &data) else {
            return Ok(data);
        };
        let (Some(Some(cell)), DataType::Dictionary(_, values)) = (plain.get(col), a.data_type())
        else {
            return Ok(data);
        };
        // A column read as a dictionary, wanted plain (by a filter or a column comparison):
        // its values, cast once per block.
        if let Some(p) = cell.get() {
            return Ok(ColumnData::Decoded(p.clone()));
        }
        let p = arrow_cast::cast(a, values)?;
        Ok(ColumnData::Decoded(cell.get_or_init(|| p).clone()))
    }

    /// Column `col` as read: a dictionary array if [`Source::block`] read it as one.
    pub(crate) fn dictionary_column(&self, col: usize) -> Result<ColumnData<'_>> {
        match self {
            BlockData::Sift { file, block } => Ok(ColumnData::Encoded(file.chunk(*block, col)?)),
            BlockData::Arrow { batch, columns, .. } => {
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
