//! The streaming writer: Arrow batches in, a Sift file out, atomically.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch, RecordBatchOptions};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use sift_encoding::{EncodeOptions, encode_array_with, encode_lookups};

use crate::aligned::AlignedWriter;
use crate::error::{Error, Result, io_err};
use crate::footer::{BlockMeta, ChunkMeta, Footer, MAGIC, Segment};
use crate::nested::{Layout, max_elements, shred};
use crate::schema::{StoredField, check_schema};

/// The largest (and default) number of rows in a block: 64Ki.
pub const MAX_BLOCK_ROWS: usize = 1 << 16;

/// Alignment of segment offsets in the file.
pub const SEGMENT_ALIGN: u64 = 8;

/// The zeros written before a segment to align it.
const PADDING: [u8; SEGMENT_ALIGN as usize] = [0; SEGMENT_ALIGN as usize];

/// Writer settings.
#[derive(Debug, Clone)]
pub struct WriteOptions {
    /// Rows per block, 1..=[`MAX_BLOCK_ROWS`]. Smaller blocks are for tests and experiments.
    pub block_rows: usize,
    /// Threads that encode a block's columns at once (1: on the calling thread). The file's
    /// bytes are the same for any count: each column is encoded on its own, and written in
    /// column order.
    pub threads: usize,
    /// Columns whose codes are stored as byte slices
    /// ([`EncodeOptions::byteslice`](sift_encoding::EncodeOptions::byteslice)): range
    /// filters on wide codes stop after a byte or two, for a larger file. Every name must
    /// be a column of the schema.
    pub byteslice: Vec<String>,
}

impl Default for WriteOptions {
    fn default() -> Self {
        Self {
            block_rows: MAX_BLOCK_ROWS,
            threads: 1,
            byteslice: Vec::new(),
        }
    }
}

/// What a finished write produced.
#[derive(Debug, Clone)]
pub struct WriteSummary {
    /// Rows written.
    pub rows: u64,
    /// Blocks written.
    pub blocks: usize,
    /// File size in bytes.
    pub bytes: u64,
}

/// Writes a Sift file from a stream of record batches.
///
/// Memory is bounded by one block of input plus its encoding: rows are buffered until a
/// block is full, then encoded and written. The file is written under a temporary name in
/// the target directory and renamed into place by [`SiftWriter::finish`]; if the writer is
/// dropped without finishing, the temporary file is removed and the target is untouched.
pub struct SiftWriter {
    // Declared before `tmp`, so that an unfinished writer closes its file before
    // `TempFile`'s drop removes it.
    out: Option<AlignedWriter<File>>,
    tmp: TempFile,
    schema: SchemaRef,
    /// `schema` with top-level dictionary columns as their value type: what blocks are cut
    /// from.
    stored: SchemaRef,
    /// The footer columns: one per column, and one per node of a nested column.
    fields: Vec<StoredField>,
    /// Per footer column, whether it holds one value per row (not list elements).
    row_aligned: Vec<bool>,
    options: WriteOptions,
    pending: Vec<RecordBatch>,
    pending_rows: usize,
    offset: u64,
    blocks: Vec<BlockMeta>,
    rows: u64,
}

impl SiftWriter {
    /// Starts writing `path` with the given schema.
    ///
    /// Fails at once, naming the column, if the schema holds a type Sift cannot store.
    pub fn create(
        path: impl AsRef<Path>,
        schema: SchemaRef,
        options: WriteOptions,
    ) -> Result<Self> {
        let fields = check_schema(&schema)?;
        if options.block_rows == 0 || options.block_rows > MAX_BLOCK_ROWS {
            return Err(Error::Invalid(format!(
                "block_rows must be in 1..={MAX_BLOCK_ROWS}"
            )));
        }
        if let Some(name) = options
            .byteslice
            .iter()
            .find(|n| !fields.iter().any(|f| &f.name == *n))
        {
            return Err(Error::Invalid(format!(
                "byte slices asked for column '{name}', which the schema does not have"
            )));
        }
        let layout = Layout::new(&fields.iter().collect::<Vec<_>>()).map_err(Error::Invalid)?;
        let row_aligned = layout.nodes.iter().map(|n| n.row_aligned).collect();
        // Top-level dictionaries are cast to their values as batches arrive (so that a
        // block's values can be checked against the key type); nested ones when shredded.
        let stored_fields: Vec<Field> = schema
            .fields()
            .iter()
            .map(|f| match f.data_type() {
                DataType::Dictionary(_, values) => {
                    f.as_ref().clone().with_data_type(values.as_ref().clone())
                }
                _ => f.as_ref().clone(),
            })
            .collect();
        let stored = Arc::new(Schema::new_with_metadata(
            stored_fields,
            schema.metadata().clone(),
        ));
        let (tmp, file) = TempFile::create(path)?;
        let mut out = AlignedWriter::new(file);
        out.write_all(&MAGIC).map_err(io_err(tmp.path()))?;
        Ok(Self {
            out: Some(out),
            tmp,
            schema,
            stored,
            fields,
            row_aligned,
            options,
            pending: Vec::new(),
            pending_rows: 0,
            offset: MAGIC.len() as u64,
            blocks: Vec::new(),
            rows: 0,
        })
    }

    /// The schema being written.
    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// Rows accepted so far (written or buffered).
    pub fn rows(&self) -> u64 {
        self.rows + self.pending_rows as u64
    }

    /// Appends a batch. Its schema must have the writer's column types, in order.
    pub fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        if batch.num_columns() != self.schema.fields().len() {
            return Err(Error::Invalid(format!(
                "batch has {} columns, the file {}",
                batch.num_columns(),
                self.schema.fields().len()
            )));
        }
        for (i, (col, field)) in batch.columns().iter().zip(self.schema.fields()).enumerate() {
            if col.data_type() != field.data_type() {
                return Err(Error::Invalid(format!(
                    "column {i} '{}': batch has type {}, the file {}",
                    field.name(),
                    col.data_type(),
                    field.data_type()
                )));
            }
            // The Null type is all nulls by definition; Arrow allows it in non-nullable fields.
            let null_type = field.data_type() == &DataType::Null;
            if !field.is_nullable() && !null_type && col.logical_null_count() > 0 {
                return Err(Error::Invalid(format!(
                    "column '{}' is not nullable but the batch has nulls",
                    field.name()
                )));
            }
        }
        if batch.num_rows() == 0 {
            return Ok(());
        }
        // Dictionaries are stored as their values, encoded like any other column.
        let columns = batch
            .columns()
            .iter()
            .zip(self.stored.fields())
            .map(|(col, field)| match col.data_type() {
                DataType::Dictionary(..) => arrow_cast::cast(col, field.data_type()),
                _ => Ok(col.clone()),
            })
            .collect::<std::result::Result<Vec<_>, _>>()?;
        // Re-wrap with the writer's schema so field names and metadata are the file's.
        // The row count is explicit so that a schema without columns keeps its rows.
        let options = RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
        let batch = RecordBatch::try_new_with_options(self.stored.clone(), columns, &options)?;
        self.pending_rows += batch.num_rows();
        self.pending.push(batch);
        while self.pending_rows >= self.options.block_rows {
            self.flush_block(self.options.block_rows)?;
        }
        Ok(())
    }

    /// Encodes and writes the first `rows` pending rows as one block.
    fn flush_block(&mut self, rows: usize) -> Result<()> {
        // Take the block's rows off the front; slices are zero-copy, so a large input batch
        // is not copied again for every block cut from it.
        let mut take = Vec::new();
        let mut rest = Vec::new();
        let mut need = rows;
        for b in self.pending.drain(..) {
            if need == 0 {
                rest.push(b);
            } else if b.num_rows() <= need {
                need -= b.num_rows();
                take.push(b);
            } else {
                take.push(b.slice(0, need));
                rest.push(b.slice(need, b.num_rows() - need));
                need = 0;
            }
        }
        self.pending = rest;
        self.pending_rows -= rows;
        let block = match take.as_slice() {
            [one] => one.clone(),
            _ => arrow_select::concat::concat_batches(&self.stored, &take)?,
        };
        let block_no = self.blocks.len();
        let mut arrays: Vec<ArrayRef> = Vec::with_capacity(self.fields.len());
        for (c, array) in block.columns().iter().enumerate() {
            let name = self.schema.field(c).name();
            // A block joins batches with different dictionaries: make sure its values still
            // fit the key type, or reading it back would fail.
            if let written @ DataType::Dictionary(key, _) = self.schema.field(c).data_type()
                && arrow_cast::cast(array, written).is_err()
            {
                return Err(Error::Invalid(format!(
                    "column '{name}', block {block_no}: more distinct values than {key} \
                     dictionary keys can index; write smaller blocks or use a wider key type"
                )));
            }
            shred(self.stored.field(c), array, &mut arrays)
                .map_err(|e| Error::Invalid(format!("column '{name}', block {block_no}: {e}")))?;
        }
        let encode = |c: usize| {
            let array = &arrays[c];
            let name = &self.fields[c].name;
            let options = EncodeOptions {
                byteslice: self.options.byteslice.contains(name),
            };
            encode_array_with(array.as_ref(), options)
                .map_err(|e| Error::Invalid(format!("column '{name}', block {block_no}: {e}")))
        };
        let mut encoded_columns = parallel_map(arrays.len(), self.options.threads, encode)?;
        let types: Vec<Option<DataType>> = (arrays.iter().zip(&self.row_aligned))
            .map(|(a, &aligned)| aligned.then(|| a.data_type().clone()))
            .collect();
        encode_lookups(&mut encoded_columns, &types, rows);
        let mut columns = Vec::with_capacity(arrays.len());
        for (c, encoded) in encoded_columns.into_iter().enumerate() {
            // List elements are bounded by their stored bytes when read (their count comes
            // from data, not from the block's rows): refuse what a reader would.
            let stored: usize = encoded.buffers.iter().map(Vec::len).sum();
            if !self.row_aligned[c] && arrays[c].len() > max_elements(stored) {
                return Err(Error::Invalid(format!(
                    "column '{}', block {block_no}: {} list elements in one block are more than a reader accepts from {stored} stored bytes (write smaller blocks)",
                    self.fields[c].name,
                    arrays[c].len()
                )));
            }
            let mut segments = Vec::with_capacity(encoded.buffers.len());
            let mut crc = crc32fast::Hasher::new();
            for (i, buffer) in encoded.buffers.iter().enumerate() {
                let (segment, pad) = self.write_segment(buffer)?;
                // The chunk's checksum covers its byte range: the padding between its
                // segments, not the one before its first.
                if i > 0 {
                    crc.update(&PADDING[..pad]);
                }
                crc.update(buffer);
                segments.push(segment);
            }
            columns.push(ChunkMeta {
                encoding: encoded.encoding,
                stats: encoded.stats,
                segments,
                crc32: crc.finalize(),
            });
        }
        self.blocks.push(BlockMeta {
            rows: rows as u32,
            columns,
        });
        self.rows += rows as u64;
        Ok(())
    }

    /// Writes one buffer at the next multiple of 8; returns its segment and the padding
    /// written before it.
    fn write_segment(&mut self, bytes: &[u8]) -> Result<(Segment, usize)> {
        let out = self
            .out
            .as_mut()
            .ok_or_else(|| Error::Invalid("writer already finished".into()))?;
        // Segments start at multiples of 8 so that readers can use packed 64-bit words in
        // place instead of copying them out.
        let pad = self.offset.next_multiple_of(SEGMENT_ALIGN) - self.offset;
        out.write_all(&PADDING[..pad as usize])
            .map_err(io_err(self.tmp.path()))?;
        self.offset += pad;
        out.write_all(bytes).map_err(io_err(self.tmp.path()))?;
        let seg = Segment {
            offset: self.offset,
            len: bytes.len() as u64,
        };
        self.offset += bytes.len() as u64;
        Ok((seg, pad as usize))
    }

    /// Writes the remaining rows and the footer, syncs, and renames the file into place.
    pub fn finish(mut self) -> Result<WriteSummary> {
        if self.pending_rows > 0 {
            self.flush_block(self.pending_rows)?;
        }
        let footer = Footer {
            fields: self.fields.clone(),
            metadata: sorted_metadata(&self.schema),
            num_rows: self.rows,
            blocks: std::mem::take(&mut self.blocks),
            created_by: format!("sift {}", env!("CARGO_PKG_VERSION")),
        };
        let bytes = footer.to_bytes()?;
        let Some(mut out) = self.out.take() else {
            return Err(Error::Invalid("writer already finished".into()));
        };
        out.write_all(&bytes).map_err(io_err(self.tmp.path()))?;
        let file = out.into_inner().map_err(io_err(self.tmp.path()))?;
        // On failure here the temporary file is removed when `self.tmp` drops.
        let len = self.tmp.commit(file)?;
        Ok(WriteSummary {
            rows: footer.num_rows,
            blocks: footer.blocks.len(),
            bytes: len,
        })
    }
}

fn sorted_metadata(schema: &SchemaRef) -> Vec<(String, String)> {
    let mut md: Vec<(String, String)> = schema
        .metadata()
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    md.sort();
    md
}

/// `f(0..n)` in order, computed by up to `threads` scoped threads that each take the next
/// index; the first error (by index) is returned.
fn parallel_map<T: Send>(
    n: usize,
    threads: usize,
    f: impl Fn(usize) -> Result<T> + Sync,
) -> Result<Vec<T>> {
    let threads = threads.clamp(1, n.max(1));
    if threads == 1 {
        return (0..n).map(f).collect();
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut results: Vec<(usize, Result<T>)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    let mut done = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= n {
                            return done;
                        }
                        done.push((i, f(i)));
                    }
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| {
                w.join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect()
    });
    results.sort_by_key(|(i, _)| *i);
    results.into_iter().map(|(_, r)| r).collect()
}

/// The temporary files of unfinished writes in this process. Creating, renaming and
/// removing them holds the lock, so [`remove_temp_files`] sees each one either not yet
/// created or fully registered, and once it took the lock no new one appears.
static LIVE_TEMP_FILES: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

fn live_temp_files() -> MutexGuard<'static, Vec<PathBuf>> {
    // A panic elsewhere while holding the lock leaves a valid list: keep using it.
    LIVE_TEMP_FILES.lock().unwrap_or_else(|e| e.into_inner())
}

/// Removes the temporary files of every unfinished write in the process and keeps any
/// new one from being created, so that the process can exit at once without leaving
/// partial files behind. For signal handlers (Ctrl-C, `kill`): call it, then exit;
/// writes still running in other threads fail or are cut off with the process.
pub fn remove_temp_files() {
    let mut live = live_temp_files();
    for path in live.drain(..) {
        let _ = std::fs::remove_file(&path);
    }
    // Hold the lock until the process exits: a writer that tries to create or commit a
    // temporary file now waits instead.
    std::mem::forget(live);
}

/// A file written under a temporary name next to its target and renamed into place by
/// [`TempFile::commit`]. It is removed if dropped before that, and by
/// [`remove_temp_files`] when the process is interrupted. [`SiftWriter`] writes through
/// one; other writers can use it for the same guarantees.
#[derive(Debug)]
pub struct TempFile {
    target: PathBuf,
    path: PathBuf,
    committed: bool,
}

impl TempFile {
    /// Creates the temporary file for `target` (in the same directory, so the final
    /// rename stays on one file system).
    pub fn create(target: impl AsRef<Path>) -> Result<(Self, File)> {
        let target = target.as_ref().to_path_buf();
        let path = temp_path(&target);
        let mut live = live_temp_files();
        let file = File::create(&path).map_err(io_err(&path))?;
        live.push(path.clone());
        drop(live);
        Ok((
            Self {
                target,
                path,
                committed: false,
            },
            file,
        ))
    }

    /// The temporary file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Syncs `file` (the one [`TempFile::create`] returned) and renames it into place;
    /// returns its size in bytes.
    pub fn commit(mut self, file: File) -> Result<u64> {
        file.sync_all().map_err(io_err(&self.path))?;
        let len = file.metadata().map_err(io_err(&self.path))?.len();
        drop(file);
        let mut live = live_temp_files();
        std::fs::rename(&self.path, &self.target).map_err(io_err(&self.target))?;
        live.retain(|p| p != &self.path);
        self.committed = true;
        Ok(len)
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        if !self.committed {
            let mut live = live_temp_files();
            let _ = std::fs::remove_file(&self.path);
            live.retain(|p| p != &self.path);
        }
    }
}

/// A temporary name next to the target, unique within the process.
fn temp_path(path: &Path) -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "out".into());
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    path.with_file_name(format!(".{name}.tmp-{}-{n}", std::process::id()))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::sync::Arc;

    use arrow_array::types::{Int8Type, Int32Type};
    use arrow_array::{ArrayRef, DictionaryArray, Int64Array};
    use arrow_schema::{Field, Schema};

    use super::*;
    use crate::SiftFile;

    fn dictionary_batch(schema: &SchemaRef, words: &[Option<&str>], offset: i64) -> RecordBatch {
        let utf8: DictionaryArray<Int32Type> = words.iter().copied().collect();
        let small: DictionaryArray<Int8Type> = words.iter().rev().copied().collect();
        let ids = Int64Array::from_iter_values((0..words.len() as i64).map(|i| i + offset));
        let columns: Vec<ArrayRef> = vec![Arc::new(ids), Arc::new(utf8), Arc::new(small)];
        RecordBatch::try_new(schema.clone(), columns).unwrap()
    }

    #[test]
    fn dictionary_columns_read_back_as_written() {
        let dict = |k: DataType| DataType::Dictionary(Box::new(k), Box::new(DataType::Utf8));
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("city", dict(DataType::Int32), true),
            Field::new("tag", dict(DataType::Int8), true),
        ]));
        // Two batches with different dictionaries that end up in one block.
        let batches = [
            dictionary_batch(
                &schema,
                &[Some("oslo"), None, Some("rome"), Some("oslo")],
                0,
            ),
            dictionary_batch(
                &schema,
                &[Some("lima"), Some("rome"), Some("bern"), None],
                4,
            ),
        ];
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("dict.sift");
        let mut w = SiftWriter::create(
            &path,
            schema.clone(),
            WriteOptions {
                block_rows: 6,
                ..Default::default()
            },
        )
        .unwrap();
        for b in &batches {
            w.write(b).unwrap();
        }
        w.finish().unwrap();

        let f = SiftFile::open(&path).unwrap();
        assert_eq!(f.schema().unwrap(), &schema);
        assert_eq!(
            f.stored_schema().unwrap().field(1).data_type(),
            &DataType::Utf8
        );
        assert!(f.schema().unwrap().field(1).metadata().is_empty());
        let got =
            arrow_select::concat::concat_batches(&schema, &f.read_all(None).unwrap()).unwrap();
        let want = arrow_select::concat::concat_batches(&schema, &batches).unwrap();
        assert_eq!(got, want);
    }

    #[test]
    fn a_block_too_varied_for_its_dictionary_keys_is_refused() {
        let dict = DataType::Dictionary(Box::new(DataType::Int8), Box::new(DataType::Utf8));
        let schema = Arc::new(Schema::new(vec![Field::new("k", dict, false)]));
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("keys.sift");
        let mut w = SiftWriter::create(&path, schema.clone(), WriteOptions::default()).unwrap();
        // Each batch fits Int8 keys; the 200 distinct values of the block do not.
        for part in 0..2 {
            let words: Vec<String> = (0..100).map(|i| format!("w{part}-{i}")).collect();
            let array: DictionaryArray<Int8Type> = words.iter().map(String::as_str).collect();
            let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(array)]).unwrap();
            w.write(&batch).unwrap();
        }
        let err = w.finish().unwrap_err().to_string();
        assert!(err.contains("column 'k', block 0"), "{err}");
        assert!(err.contains("Int8"), "{err}");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
