//! Parquet files as a scan source: row groups decoded by the `parquet` crate, evaluated on
//! Arrow arrays (feature `parquet`).

use std::cell::OnceCell;
use std::fs::File;
use std::path::{Path, PathBuf};

use arrow_schema::{DataType, Schema, SchemaRef};
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder,
};

use crate::error::{Error, Result};
use crate::source::BlockData;

/// A Parquet file opened once: its metadata is parsed once and reused per row group.
pub(crate) struct ParquetSource {
    path: PathBuf,
    file: File,
    meta: ArrowReaderMetadata,
}

impl ParquetSource {
    pub(crate) fn open(path: &Path) -> Result<ParquetSource> {
        let file =
            File::open(path).map_err(|e| Error::Parquet(format!("{}: {e}", path.display())))?;
        let meta = ArrowReaderMetadata::load(&file, Default::default())
            .map_err(|e| Error::Parquet(format!("{}: {e}", path.display())))?;
        Ok(ParquetSource {
            path: path.to_path_buf(),
            file,
            meta,
        })
    }

    pub(crate) fn schema(&self) -> SchemaRef {
        self.meta.schema().clone()
    }

    pub(crate) fn num_blocks(&self) -> usize {
        self.meta.metadata().num_row_groups()
    }

    pub(crate) fn block_rows(&self, b: usize) -> usize {
        self.meta
            .metadata()
            .row_groups()
            .get(b)
            .map_or(0, |g| g.num_rows().max(0) as usize)
    }

    /// Row group `b`, decoded for `needed` columns (see [`crate::source::Source::block`]).
    pub(crate) fn block(
        &self,
        b: usize,
        needed: &[usize],
        dictionary: &[usize],
    ) -> Result<BlockData<'_>> {
        let err = |e: &dyn std::fmt::Display| {
            Error::Parquet(format!("{}: row group {b}: {e}", self.path.display()))
        };
        let file = self.file.try_clone().map_err(|e| err(&e))?;
        let schema_descr = self.meta.metadata().file_metadata().schema_descr();
        let mut sorted = needed.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        let mask = ProjectionMask::roots(schema_descr, sorted.iter().copied());
        let rows = self.block_rows(b);
        let meta = self.dictionary_meta(dictionary, &sorted);
        let meta = meta.as_ref().unwrap_or(&self.meta);
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
        let fields = self.meta.schema().fields();
        let mut columns = vec![None; fields.len()];
        let mut plain: Vec<_> = (0..fields.len()).map(|_| None).collect();
        for (i, &c) in sorted.iter().enumerate() {
            columns[c] = Some(i);
            let is_dictionary = |dt: &DataType| matches!(dt, DataType::Dictionary(..));
            if is_dictionary(batch.column(i).data_type()) && !is_dictionary(fields[c].data_type()) {
                plain[c] = Some(OnceCell::new());
            }
        }
        Ok(BlockData::Arrow {
            batch,
            columns,
            plain,
        })
    }

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
