//! The reader: footer in at most two range reads, then blocks as Arrow batches.

use std::fs::File;
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use arrow_array::{Array, ArrayRef, RecordBatch, RecordBatchOptions};
use arrow_schema::SchemaRef;
use sift_encoding::{decode_array, decode_lookup, lookup_source};

use crate::error::{Error, Result, corrupt, io_err};
use crate::footer::{ChunkMeta, Footer, MAGIC, TRAILER_LEN};
use crate::schema::{ColumnType, to_arrow_schemas};

/// How much of the tail the first read fetches; footers up to this size need one read.
const TAIL_GUESS: u64 = 64 * 1024;

/// Reader settings.
#[derive(Debug, Clone)]
pub struct ReadOptions {
    /// Verify the CRC-32 of every segment read (default true). Each chunk is verified the
    /// first time it is read through an open file, not again on later reads.
    pub verify_checksums: bool,
    /// Map the file into memory (default true): chunks are read in place, without a copy,
    /// and a scan touches only the pages it decodes. Off: every chunk is read with one
    /// positioned read into a fresh buffer.
    pub mmap: bool,
}

impl Default for ReadOptions {
    fn default() -> Self {
        Self {
            verify_checksums: true,
            mmap: true,
        }
    }
}

/// The bytes of one column chunk: borrowed from the mapping, or read into 8-aligned words.
enum ChunkBytes<'a> {
    Mapped(&'a [u8]),
    Read(Vec<u64>, usize),
}

/// One column chunk of one block, read and checksum-verified, ready to decode or filter.
pub struct ChunkRef<'a> {
    /// The footer's entry for the chunk.
    pub meta: &'a ChunkMeta,
    /// Rows in the block.
    pub rows: usize,
    /// The Arrow type the chunk decodes to (a dictionary column's value type).
    pub data_type: &'a arrow_schema::DataType,
    bytes: ChunkBytes<'a>,
    start: u64,
}

impl ChunkRef<'_> {
    /// The chunk's buffers (segment `i` is buffer `i` of the encoding).
    pub fn buffers(&self) -> Vec<&[u8]> {
        let bytes: &[u8] = match &self.bytes {
            ChunkBytes::Mapped(b) => b,
            ChunkBytes::Read(words, len) => &bytemuck::cast_slice::<u64, u8>(words)[..*len],
        };
        self.meta
            .segments
            .iter()
            .map(|s| {
                let from = (s.offset - self.start) as usize;
                &bytes[from..from + s.len as usize]
            })
            .collect()
    }
}

/// An open Sift file.
pub struct SiftFile {
    path: PathBuf,
    file: File,
    map: Option<memmap2::Mmap>,
    len: u64,
    footer: Footer,
    schema: SchemaRef,
    /// `schema` with dictionary columns as their value type: what chunks decode to.
    stored: SchemaRef,
    options: ReadOptions,
    /// Per block × column: the chunk's checksums were verified.
    verified: Vec<AtomicBool>,
}

impl std::fmt::Debug for SiftFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SiftFile")
            .field("path", &self.path)
            .field("len", &self.len)
            .field("mapped", &self.map.is_some())
            .field("blocks", &self.footer.blocks.len())
            .finish()
    }
}

impl SiftFile {
    /// Opens a file with default options.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        Self::open_with(path, ReadOptions::default())
    }

    /// Opens a file: reads the tail (and, for a footer larger than 64 KiB, the rest of the
    /// footer), checks magic, version and footer checksum, and validates the footer.
    pub fn open_with(path: impl AsRef<Path>, options: ReadOptions) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        let file = File::open(&path).map_err(io_err(&path))?;
        let len = file.metadata().map_err(io_err(&path))?.len();
        let min_len = (MAGIC.len() + TRAILER_LEN) as u64;
        if len < min_len {
            return Err(corrupt(
                &path,
                format!("{len} bytes is too short for a Sift file (at least {min_len})"),
            ));
        }
        let tail_len = len.min(TAIL_GUESS);
        let mut tail = vec![0u8; tail_len as usize];
        file.read_exact_at(&mut tail, len - tail_len)
            .map_err(io_err(&path))?;
        let (footer_len, crc) =
            Footer::parse_trailer(&path, &tail[tail.len() - TRAILER_LEN..], len)?;
        let footer_offset = len - TRAILER_LEN as u64 - footer_len;
        let have = tail_len - TRAILER_LEN as u64;
        let footer_bytes = if footer_len <= have {
            let start = (have - footer_len) as usize;
            tail[start..start + footer_len as usize].to_vec()
        } else {
            // footer_len is bounded by the file length (checked in parse_trailer).
            let mut bytes = vec![0u8; footer_len as usize];
            file.read_exact_at(&mut bytes, footer_offset)
                .map_err(io_err(&path))?;
            bytes
        };
        if tail_len == len && tail[..MAGIC.len()] != MAGIC {
            return Err(corrupt(
                &path,
                "not a Sift file (no SIFTDATA magic at the start)",
            ));
        }
        let footer = Footer::from_bytes(&path, &footer_bytes, crc, footer_offset)?;
        let (schema, stored) =
            to_arrow_schemas(&footer.fields, &footer.metadata).map_err(|e| corrupt(&path, e))?;
        let map = if options.mmap {
            // SAFETY: the mapping is read-only and private to this process. Sift files are
            // immutable once written (the writer renames a finished file into place), so
            // the bytes do not change under us; a file truncated by another process while
            // open would fault, the caveat every mmap-based reader accepts.
            let map = unsafe { memmap2::Mmap::map(&file) }.map_err(io_err(&path))?;
            if map.len() as u64 != len {
                return Err(corrupt(&path, "file changed size while opening"));
            }
            Some(map)
        } else {
            None
        };
        let chunks = footer.blocks.len() * footer.fields.len();
        Ok(Self {
            path,
            file,
            map,
            len,
            footer,
            schema,
            stored,
            options,
            verified: (0..chunks).map(|_| AtomicBool::new(false)).collect(),
        })
    }

    /// The file path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// File size in bytes.
    pub fn file_len(&self) -> u64 {
        self.len
    }

    /// The decoded footer.
    pub fn footer(&self) -> &Footer {
        &self.footer
    }

    /// The Arrow schema of the file, as written: the schema of the batches read.
    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// The schema the column chunks decode to ([`ChunkRef::data_type`]): as
    /// [`SiftFile::schema`], except that a column written as an Arrow dictionary has its
    /// value type (it is stored and filtered as its values).
    pub fn stored_schema(&self) -> &SchemaRef {
        &self.stored
    }

    /// Total rows.
    pub fn num_rows(&self) -> u64 {
        self.footer.num_rows
    }

    /// Number of blocks.
    pub fn num_blocks(&self) -> usize {
        self.footer.blocks.len()
    }

    /// Index of the column called `name`.
    pub fn column_index(&self, name: &str) -> Option<usize> {
        self.footer.fields.iter().position(|f| f.name == name)
    }

    /// Resolves column names to indices, with an error naming an unknown column.
    pub fn projection(&self, names: &[impl AsRef<str>]) -> Result<Vec<usize>> {
        names
            .iter()
            .map(|n| {
                let n = n.as_ref();
                self.column_index(n).ok_or_else(|| {
                    let known: Vec<&str> =
                        self.footer.fields.iter().map(|f| f.name.as_str()).collect();
                    Error::Invalid(format!(
                        "{}: no column '{n}' (columns: {})",
                        self.path.display(),
                        known.join(", ")
                    ))
                })
            })
            .collect()
    }

    /// Reads and decodes one column of one block.
    pub fn read_chunk(&self, block: usize, column: usize) -> Result<ArrayRef> {
        let chunk = self.chunk(block, column)?;
        let buffers = chunk.buffers();
        let enc = &chunk.meta.encoding;
        let array = match lookup_source(enc) {
            None => decode_array(enc, chunk.data_type, chunk.rows, &buffers),
            Some(source) => {
                let src = self.chunk(block, source)?;
                let source = (&src.meta.encoding, &src.buffers()[..]);
                decode_lookup(enc, chunk.data_type, chunk.rows, &buffers, source, None)
            }
        }
        .map_err(|e| self.chunk_error(block, column, e))?;
        let nulls = array.logical_null_count() as u64;
        let field = &self.footer.fields[column];
        let null_type = field.ty == ColumnType::Null;
        if nulls != chunk.meta.stats.null_count || (nulls > 0 && !field.nullable && !null_type) {
            return Err(corrupt(
                &self.path,
                format!(
                    "{}: {nulls} nulls decoded, footer says {}",
                    self.chunk_place(block, column),
                    chunk.meta.stats.null_count
                ),
            ));
        }
        // A dictionary column: back to the dictionary type it was written with.
        let written = self.schema.field(column).data_type();
        if array.data_type() != written {
            return arrow_cast::cast(&array, written)
                .map_err(|e| self.chunk_error(block, column, e));
        }
        Ok(array)
    }

    /// Where a chunk is, for messages: `block 3 column 'x' at offset 1234`.
    pub fn chunk_place(&self, block: usize, column: usize) -> String {
        let name = self
            .footer
            .fields
            .get(column)
            .map_or("?", |f| f.name.as_str());
        let offset = self
            .footer
            .blocks
            .get(block)
            .and_then(|b| b.columns.get(column))
            .map_or(0, |c| c.byte_range().0);
        format!("block {block} column '{name}' at offset {offset}")
    }

    /// An error from decoding a chunk, with the file, block, column and offset.
    pub fn chunk_error(&self, block: usize, column: usize, e: impl std::fmt::Display) -> Error {
        corrupt(
            &self.path,
            format!("{}: {e}", self.chunk_place(block, column)),
        )
    }

    /// One column chunk of one block, read (in place when mapped) with its checksums
    /// verified the first time.
    pub fn chunk(&self, block: usize, column: usize) -> Result<ChunkRef<'_>> {
        let meta = self.block_meta(block)?;
        if column >= self.footer.fields.len() {
            return Err(Error::Invalid(format!(
                "column {column} out of range ({})",
                self.footer.fields.len()
            )));
        }
        let chunk = &meta.columns[column];
        let (start, len) = chunk.byte_range();
        let bytes = match &self.map {
            // The footer was validated: segments lie inside the file.
            Some(map) => ChunkBytes::Mapped(&map[start as usize..(start + len) as usize]),
            None => {
                let mut words = vec![0u64; (len as usize).div_ceil(8)];
                let buf = &mut bytemuck::cast_slice_mut::<u64, u8>(&mut words)[..len as usize];
                self.file
                    .read_exact_at(buf, start)
                    .map_err(io_err(&self.path))?;
                ChunkBytes::Read(words, len as usize)
            }
        };
        let out = ChunkRef {
            meta: chunk,
            rows: meta.rows as usize,
            data_type: self.stored.field(column).data_type(),
            bytes,
            start,
        };
        let flag = &self.verified[block * self.footer.fields.len() + column];
        if self.options.verify_checksums && !flag.load(Ordering::Relaxed) {
            for (i, (s, b)) in chunk.segments.iter().zip(out.buffers()).enumerate() {
                let actual = crc32fast::hash(b);
                if actual != s.crc32 {
                    return Err(corrupt(
                        &self.path,
                        format!(
                            "block {block} column '{}' at offset {}: segment {i} checksum mismatch (stored {:#010x}, computed {actual:#010x})",
                            self.footer.fields[column].name, s.offset, s.crc32
                        ),
                    ));
                }
            }
            flag.store(true, Ordering::Relaxed);
        }
        Ok(out)
    }

    fn block_meta(&self, block: usize) -> Result<&crate::footer::BlockMeta> {
        self.footer.blocks.get(block).ok_or_else(|| {
            Error::Invalid(format!(
                "block {block} out of range ({} blocks)",
                self.footer.blocks.len()
            ))
        })
    }

    /// Reads one block; `projection` lists column indices (all columns if `None`).
    pub fn read_block(&self, block: usize, projection: Option<&[usize]>) -> Result<RecordBatch> {
        let all: Vec<usize>;
        let cols = match projection {
            Some(p) => p,
            None => {
                all = (0..self.footer.fields.len()).collect();
                &all
            }
        };
        let schema = SchemaRef::new(self.schema.project(cols)?);
        let rows = self.block_meta(block)?.rows as usize;
        let arrays = cols
            .iter()
            .map(|&c| self.read_chunk(block, c))
            .collect::<Result<Vec<_>>>()?;
        let options = RecordBatchOptions::new().with_row_count(Some(rows));
        Ok(RecordBatch::try_new_with_options(schema, arrays, &options)?)
    }

    /// Iterates over blocks `blocks` (clamped to the file), one batch per block.
    pub fn batches(
        &self,
        projection: Option<Vec<usize>>,
        blocks: Range<usize>,
    ) -> Result<BlockBatches<'_>> {
        if let Some(p) = &projection
            && let Some(&bad) = p.iter().find(|&&c| c >= self.footer.fields.len())
        {
            return Err(Error::Invalid(format!(
                "column {bad} out of range ({})",
                self.footer.fields.len()
            )));
        }
        let end = blocks.end.min(self.num_blocks());
        Ok(BlockBatches {
            file: self,
            projection,
            next: blocks.start.min(end),
            end,
        })
    }

    /// Reads every block into one list of batches.
    pub fn read_all(&self, projection: Option<Vec<usize>>) -> Result<Vec<RecordBatch>> {
        self.batches(projection, 0..self.num_blocks())?.collect()
    }
}

/// Iterator over the blocks of a file as record batches.
pub struct BlockBatches<'a> {
    file: &'a SiftFile,
    projection: Option<Vec<usize>>,
    next: usize,
    end: usize,
}

impl Iterator for BlockBatches<'_> {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.next >= self.end {
            return None;
        }
        let b = self.next;
        self.next += 1;
        Some(self.file.read_block(b, self.projection.as_deref()))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.end - self.next;
        (n, Some(n))
    }
}
