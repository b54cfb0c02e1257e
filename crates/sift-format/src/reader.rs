//! The reader: footer in at most two range reads, then blocks as Arrow batches.

use std::collections::HashMap;
use std::fs::File;
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use arrow_array::{Array, ArrayRef, RecordBatch, RecordBatchOptions};
use arrow_schema::{FieldRef, Schema, SchemaRef};
use sift_bits::Bitmap;
use sift_encoding::{Chunk, lookup_source};

use crate::error::{Error, Result, corrupt, io_err};
use crate::footer::{ChunkMeta, Footer, FooterBytes, FooterView, MAGIC, TRAILER_LEN};
use crate::nested::{ColumnReader, Layout, Role, assemble, per_row};
use crate::ranges::{RangeCounts, RangeOptions, RangeSource, Remote};
use crate::schema::{ColumnType, StoredField, to_arrow_fields};

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

impl ChunkBytes<'_> {
    /// `len` bytes in 8-aligned words (decoders read buffers as aligned integers), filled
    /// by `fill`.
    fn aligned(len: usize, fill: impl FnOnce(&mut [u8]) -> Result<()>) -> Result<Self> {
        let mut words = vec![0u64; len.div_ceil(8)];
        fill(&mut bytemuck::cast_slice_mut::<u64, u8>(&mut words)[..len])?;
        Ok(ChunkBytes::Read(words, len))
    }
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
    /// For a chunk whose values are a table over another column's dictionary codes, that
    /// column's chunk of the same block (read and verified with it).
    source: Option<Box<ChunkRef<'a>>>,
}

impl ChunkRef<'_> {
    /// The chunk as a [`Chunk`] view, ready to decode or filter (with its lookup source
    /// attached, if it has one).
    pub fn view(&self) -> Chunk<'_> {
        let view = Chunk::new(
            &self.meta.encoding,
            self.data_type,
            self.rows,
            self.buffers(),
        );
        match &self.source {
            Some(src) => view.with_source(src.view()),
            None => view,
        }
    }

    /// Bytes stored for the chunk, its lookup source included.
    pub fn stored_bytes(&self) -> u64 {
        self.meta.stored_bytes() + self.source.as_ref().map_or(0, |s| s.meta.stored_bytes())
    }

    /// The chunk's whole byte range (its segments and the padding between them).
    fn bytes(&self) -> &[u8] {
        match &self.bytes {
            ChunkBytes::Mapped(b) => b,
            ChunkBytes::Read(words, len) => &bytemuck::cast_slice::<u64, u8>(words)[..*len],
        }
    }

    /// The chunk's buffers (segment `i` is buffer `i` of the encoding).
    pub fn buffers(&self) -> Vec<&[u8]> {
        let bytes = self.bytes();
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

/// How much footer work an open file has done: records decoded so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FooterCounts {
    /// Field records decoded (at most one per column).
    pub fields: usize,
    /// Chunk-metadata records decoded (at most one per block and column).
    pub chunks: usize,
}

/// A column whose field record was decoded: its field, Arrow fields and chunk slots.
struct Column {
    field: StoredField,
    /// The Arrow field as written (a dictionary column as a dictionary).
    written: FieldRef,
    /// The Arrow field chunks decode to (a dictionary column's value type).
    stored: FieldRef,
    /// One per block.
    chunks: Box<[ChunkSlot]>,
}

#[derive(Default)]
struct ChunkSlot {
    /// The decoded record (lookups into other columns are checked on each access).
    meta: OnceLock<ChunkMeta>,
    /// The chunk's segment checksums were verified.
    verified: AtomicBool,
}

/// The head section, decoded.
struct Head {
    created_by: String,
    metadata: HashMap<String, String>,
}

/// Where an open file's bytes are.
enum Storage {
    /// A local file, mapped into memory unless the options said not to.
    Local {
        file: File,
        map: Option<Arc<memmap2::Mmap>>,
    },
    /// An object read by byte range.
    Remote(Remote),
}

/// An open Sift file.
///
/// Opening checks the trailer and the footer's always-needed sections and decodes nothing
/// per column: a column's field, a chunk's metadata and the Arrow schema are decoded (and
/// validated) the first time they are used, then kept.
pub struct SiftFile {
    /// The local path, or the object's address.
    path: PathBuf,
    storage: Storage,
    len: u64,
    /// The format version the file was written in.
    version: u32,
    /// Boxed: an open file stays small to move around.
    footer: Box<FooterView>,
    options: ReadOptions,
    /// Per column, once its field record is decoded.
    columns: Box<[OnceLock<Box<Column>>]>,
    head: OnceLock<Head>,
    /// The schema as written and as stored.
    schemas: OnceLock<(SchemaRef, SchemaRef)>,
    /// The nested columns, built from every field record on first use.
    layout: OnceLock<Layout>,
    decoded_fields: AtomicUsize,
    decoded_chunks: AtomicUsize,
}

impl std::fmt::Debug for SiftFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SiftFile")
            .field("path", &self.path)
            .field("len", &self.len)
            .field(
                "storage",
                &match &self.storage {
                    Storage::Local { map: Some(_), .. } => "mapped",
                    Storage::Local { map: None, .. } => "file",
                    Storage::Remote(_) => "ranges",
                },
            )
            .field("blocks", &self.footer.num_blocks())
            .field("columns", &self.footer.num_columns())
            .finish()
    }
}

/// Maps a data file (Sift or Parquet) read-only into memory, so that chunks and pages are
/// read in place without a copy.
pub fn map_file(file: &File) -> std::io::Result<memmap2::Mmap> {
    // SAFETY: the mapping is read-only and private to this process. Data files are
    // immutable once written (writers rename a finished file into place), so the bytes do
    // not change under us; a file truncated by another process while open would fault,
    // the caveat every mmap-based reader accepts.
    let map = unsafe { memmap2::Mmap::map(file) }?;
    // Pages this mapping faults in from storage are read ahead into 2 MiB folios, which
    // later scans (in any process) map with one entry per 2 MiB instead of one fault per
    // few pages: on lineitem SF1 (Linux 6.18, ext4), a fresh process's first Q6 took 5 ms
    // instead of 9 after Sift had read the file from storage, and that read itself 47–74 ms
    // instead of 162. The price is reading ahead up to 2 MiB around a cold page. A hint:
    // where the kernel or file system cannot honour it, nothing changes.
    #[cfg(target_os = "linux")]
    let _ = map.advise(memmap2::Advice::HugePage);
    Ok(map)
}

/// A file shorter than magic and trailer is not a Sift file.
fn check_len(path: &Path, len: u64) -> Result<()> {
    let min_len = (MAGIC.len() + TRAILER_LEN) as u64;
    if len < min_len {
        return Err(corrupt(
            path,
            format!("{len} bytes is too short for a Sift file (at least {min_len})"),
        ));
    }
    Ok(())
}

/// A chunk's byte range in the file.
fn range_of(meta: &ChunkMeta) -> Range<u64> {
    let (start, len) = meta.byte_range();
    start..start + len
}

impl SiftFile {
    /// Opens a file with default options.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        Self::open_with(path, ReadOptions::default())
    }

    /// Opens a file: reads the tail (and, for a footer larger than 64 KiB, the rest of the
    /// footer, taken from the mapping when there is one), checks magic, version and the
    /// footer's always-needed sections. Per-column metadata is decoded when first used.
    pub fn open_with(path: impl AsRef<Path>, options: ReadOptions) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        let file = File::open(&path).map_err(io_err(&path))?;
        let len = file.metadata().map_err(io_err(&path))?.len();
        check_len(&path, len)?;
        let tail_len = len.min(TAIL_GUESS);
        let mut tail = vec![0u8; tail_len as usize];
        file.read_exact_at(&mut tail, len - tail_len)
            .map_err(io_err(&path))?;
        let map = if options.mmap {
            let map = map_file(&file).map_err(io_err(&path))?;
            if map.len() as u64 != len {
                return Err(corrupt(&path, "file changed size while opening"));
            }
            Some(Arc::new(map))
        } else {
            None
        };
        let storage = Storage::Local { file, map };
        Self::from_tail(path, storage, len, tail, options)
    }

    /// Opens a file read by byte range (an object in an object store): one suffix request
    /// reads the tail, and a second the rest of a footer larger than
    /// [`RangeOptions::footer_guess`]. Chunks are fetched by [`prefetch`](Self::prefetch)
    /// ahead of their use, or one request each when read without.
    pub fn open_ranges(
        source: Arc<dyn RangeSource>,
        options: ReadOptions,
        ranges: RangeOptions,
    ) -> Result<Self> {
        let path = PathBuf::from(source.location());
        let (tail, len) = source
            .read_suffix(ranges.footer_guess.max((MAGIC.len() + TRAILER_LEN) as u64))
            .map_err(io_err(&path))?;
        check_len(&path, len)?;
        if tail.len() as u64 > len || tail.len() < TRAILER_LEN {
            return Err(corrupt(
                &path,
                format!(
                    "the store returned {} bytes for the tail of a {len}-byte object",
                    tail.len()
                ),
            ));
        }
        let remote = Remote::new(source, ranges);
        Self::from_tail(path, Storage::Remote(remote), len, tail.to_vec(), options)
    }

    /// Parses the footer from the file's last `tail.len()` bytes, reading the rest of a
    /// footer that does not fit.
    fn from_tail(
        path: PathBuf,
        storage: Storage,
        len: u64,
        tail: Vec<u8>,
        options: ReadOptions,
    ) -> Result<Self> {
        let tail_len = tail.len() as u64;
        let (footer_len, crc, version) =
            Footer::parse_trailer(&path, &tail[tail.len() - TRAILER_LEN..], len)?;
        let footer_offset = len - TRAILER_LEN as u64 - footer_len;
        if tail_len == len && tail[..MAGIC.len()] != MAGIC {
            return Err(corrupt(
                &path,
                "not a Sift file (no SIFTDATA magic at the start)",
            ));
        }
        let have = tail_len - TRAILER_LEN as u64;
        // footer_len is bounded by the file length (checked in parse_trailer).
        let footer_bytes = if footer_len <= have {
            let start = (have - footer_len) as usize;
            FooterBytes::Owned(tail[start..start + footer_len as usize].to_vec())
        } else {
            match &storage {
                Storage::Local { map: Some(map), .. } => {
                    let start = footer_offset as usize;
                    FooterBytes::Mapped(Arc::clone(map), start..start + footer_len as usize)
                }
                Storage::Local { file, map: None } => {
                    let mut bytes = vec![0u8; footer_len as usize];
                    file.read_exact_at(&mut bytes, footer_offset)
                        .map_err(io_err(&path))?;
                    FooterBytes::Owned(bytes)
                }
                Storage::Remote(remote) => {
                    // The part of the footer the tail did not hold.
                    let missing = footer_offset..len - tail_len;
                    let head = remote.read(missing).map_err(io_err(&path))?;
                    let mut bytes = head.to_vec();
                    bytes.extend_from_slice(&tail[..have as usize]);
                    FooterBytes::Owned(bytes)
                }
            }
        };
        let footer = Box::new(FooterView::parse(&path, footer_bytes, crc, footer_offset)?);
        let columns = (0..footer.num_columns()).map(|_| OnceLock::new()).collect();
        Ok(Self {
            path,
            storage,
            len,
            version,
            footer,
            options,
            columns,
            head: OnceLock::new(),
            schemas: OnceLock::new(),
            layout: OnceLock::new(),
            decoded_fields: AtomicUsize::new(0),
            decoded_chunks: AtomicUsize::new(0),
        })
    }

    /// Whether the file is read by byte range (from an object store).
    pub fn is_remote(&self) -> bool {
        matches!(self.storage, Storage::Remote(_))
    }

    /// For a file read by range: fetches the chunks of `columns` in `blocks` (and the
    /// lookup sources they need) that are not held yet, with coalesced, concurrent
    /// requests, and holds them until [`release`](Self::release); returns the requests
    /// made. `blocks` are in the order the scan reads them; fetching stops at the first
    /// block (after the first) that another thread claimed or that `finished` says the
    /// scan has read. Does nothing for a local file.
    pub fn prefetch(
        &self,
        blocks: &[usize],
        columns: &[usize],
        finished: &dyn Fn(usize) -> bool,
    ) -> Result<RangeCounts> {
        let Storage::Remote(remote) = &self.storage else {
            return Ok(RangeCounts::default());
        };
        let mut wanted = Vec::with_capacity(blocks.len());
        for &b in blocks {
            let mut chunks = Vec::with_capacity(columns.len());
            for &c in columns {
                let meta = self.chunk_meta(b, c)?;
                chunks.push(((b, c), range_of(meta)));
                if let Some(src) = lookup_source(&meta.encoding) {
                    chunks.push(((b, src), range_of(self.chunk_meta(b, src)?)));
                }
            }
            chunks.sort_unstable_by_key(|(k, _)| *k);
            chunks.dedup_by_key(|(k, _)| *k);
            wanted.push((b, chunks));
        }
        remote.fetch(wanted, finished).map_err(io_err(&self.path))
    }

    /// Bytes [`prefetch`](Self::prefetch) would request for these chunks (before
    /// coalescing), for planning how far ahead to fetch.
    pub fn chunk_bytes(&self, blocks: &[usize], columns: &[usize]) -> Result<u64> {
        let mut total = 0;
        for &b in blocks {
            for &c in columns {
                total += self.chunk_meta(b, c)?.byte_range().1;
            }
        }
        Ok(total)
    }

    /// Whether the chunks of `columns` in `block` are held or being fetched (always true
    /// for a local file).
    pub fn prefetched(&self, block: usize, columns: &[usize]) -> bool {
        match &self.storage {
            Storage::Remote(remote) => columns.iter().all(|&c| remote.claimed((block, c))),
            Storage::Local { .. } => true,
        }
    }

    /// Drops the fetched chunks of `block` (a file read by range).
    pub fn release(&self, block: usize) {
        if let Storage::Remote(remote) = &self.storage {
            remote.release(block);
        }
    }

    /// The file path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// File size in bytes.
    pub fn file_len(&self) -> u64 {
        self.len
    }

    /// The format version the file was written in (see [`crate::OLDEST_FORMAT_VERSION`]).
    pub fn format_version(&self) -> u32 {
        self.version
    }

    /// Footer records decoded so far: open decodes none; each first use of a column's
    /// field or a chunk's metadata decodes one.
    pub fn footer_counts(&self) -> FooterCounts {
        FooterCounts {
            fields: self.decoded_fields.load(Ordering::Relaxed),
            chunks: self.decoded_chunks.load(Ordering::Relaxed),
        }
    }

    /// Decodes and validates the whole footer, every column and chunk: for tools that
    /// show all of it. Readers use the accessors, which decode only what they need.
    pub fn decode_footer(&self) -> Result<Footer> {
        let (bytes, offset) = self.footer.bytes();
        Footer::decode(&self.path, bytes, offset)
    }

    /// Column `c`, its field record decoded on first use.
    fn column(&self, c: usize) -> Result<&Column> {
        let slot = self.columns.get(c).ok_or_else(|| {
            Error::Invalid(format!(
                "column {c} out of range ({})",
                self.footer.num_columns()
            ))
        })?;
        if let Some(col) = slot.get() {
            return Ok(col);
        }
        let field = self.footer.field(c)?;
        let (written, stored) = to_arrow_fields(&field).map_err(|e| corrupt(&self.path, e))?;
        self.decoded_fields.fetch_add(1, Ordering::Relaxed);
        let chunks = (0..self.footer.num_blocks())
            .map(|_| ChunkSlot::default())
            .collect();
        Ok(slot.get_or_init(|| {
            Box::new(Column {
                field,
                written: Arc::new(written),
                stored: Arc::new(stored),
                chunks,
            })
        }))
    }

    /// The Arrow type column `c`'s chunks decode to (a dictionary column's value type).
    pub fn stored_type(&self, c: usize) -> Result<&arrow_schema::DataType> {
        Ok(self.column(c)?.stored.data_type())
    }

    /// Column `c`'s stored field (name, type, nullability, metadata).
    pub fn field(&self, c: usize) -> Result<&StoredField> {
        Ok(&self.column(c)?.field)
    }

    /// Column `c`'s name, read without decoding its field record.
    pub fn column_name(&self, c: usize) -> Result<&str> {
        self.footer.name(c)
    }

    /// The chunk record of `(block, column)`, decoded on first use, without the lookup
    /// check (which needs the source column's record too).
    fn decoded_chunk(&self, block: usize, column: usize) -> Result<&ChunkMeta> {
        let col = self.column(column)?;
        let slot = col.chunks.get(block).ok_or_else(|| {
            Error::Invalid(format!(
                "block {block} out of range ({} blocks)",
                self.num_blocks()
            ))
        })?;
        if let Some(meta) = slot.meta.get() {
            return Ok(meta);
        }
        let meta = self.footer.chunk(block, column, per_row(&col.field))?;
        self.decoded_chunks.fetch_add(1, Ordering::Relaxed);
        Ok(slot.meta.get_or_init(|| meta))
    }

    /// The metadata of column `column` in block `block` (encoding, statistics, segments),
    /// decoded and validated on first use.
    pub fn chunk_meta(&self, block: usize, column: usize) -> Result<&ChunkMeta> {
        let meta = self.decoded_chunk(block, column)?;
        if let Some(source) = lookup_source(&meta.encoding) {
            let encoding = if source < self.num_columns() && source != column {
                Some(&self.decoded_chunk(block, source)?.encoding)
            } else {
                None
            };
            self.footer
                .check_lookup(block, column, Some((source, encoding)))?;
        }
        Ok(meta)
    }

    fn head(&self) -> Result<&Head> {
        if let Some(h) = self.head.get() {
            return Ok(h);
        }
        let (created_by, metadata) = self.footer.head()?;
        Ok(self.head.get_or_init(|| Head {
            created_by,
            metadata: metadata.into_iter().collect(),
        }))
    }

    /// The writer that made the file, e.g. `sift 0.1.0`.
    pub fn created_by(&self) -> Result<&str> {
        Ok(&self.head()?.created_by)
    }

    fn schemas(&self) -> Result<&(SchemaRef, SchemaRef)> {
        if let Some(s) = self.schemas.get() {
            return Ok(s);
        }
        let md = &self.head()?.metadata;
        let layout = self.layout()?;
        let mut written = Vec::with_capacity(layout.top.len());
        let mut stored = Vec::with_capacity(self.num_columns());
        for &c in &layout.top {
            written.push(self.column_field(c, true)?);
        }
        for c in 0..self.num_columns() {
            stored.push(self.column_field(c, false)?);
        }
        let schemas = (
            Arc::new(Schema::new_with_metadata(written, md.clone())),
            Arc::new(Schema::new_with_metadata(stored, md.clone())),
        );
        Ok(self.schemas.get_or_init(|| schemas))
    }

    /// The nested structure of the columns, built from every field record.
    fn layout(&self) -> Result<&Layout> {
        if let Some(l) = self.layout.get() {
            return Ok(l);
        }
        let fields = (0..self.num_columns())
            .map(|c| Ok(&self.column(c)?.field))
            .collect::<Result<Vec<_>>>()?;
        let layout = Layout::new(&fields).map_err(|e| corrupt(&self.path, e))?;
        Ok(self.layout.get_or_init(|| layout))
    }

    /// Column `c`'s Arrow field, named by its path: as written, or as its chunks (or, for a
    /// nested node, its assembled values) are returned by a scan (dictionaries as their
    /// values).
    fn column_field(&self, c: usize, written: bool) -> Result<FieldRef> {
        let col = self.column(c)?;
        if per_row(&col.field) {
            return Ok(Arc::clone(if written { &col.written } else { &col.stored }));
        }
        let node = &self.layout()?.nodes[c];
        let f = if written { &node.written } else { &node.stored };
        Ok(Arc::new(f.as_ref().clone().with_name(&col.field.name)))
    }

    /// How column `c` is read: see [`ColumnShape`].
    pub fn column_shape(&self, c: usize) -> Result<ColumnShape> {
        let col = self.column(c)?;
        if per_row(&col.field) {
            return Ok(ColumnShape::Flat);
        }
        let node = &self.layout()?.nodes[c];
        Ok(match (node.row_aligned, node.role) {
            (false, _) => ColumnShape::Element,
            (true, Some(Role::Leaf)) => ColumnShape::Flat,
            (true, _) => ColumnShape::Nested,
        })
    }

    /// The columns of the schema as written: the footer columns of top-level columns (a
    /// nested column's first; the others store its nodes).
    pub fn top_level(&self) -> Result<&[usize]> {
        Ok(&self.layout()?.top)
    }

    /// Reads nested column `c` (a [`ColumnShape::Nested`] column) of block `block` at the
    /// rows of `sel` (all if `None`), assembled from its footer columns; a selection
    /// reaches a list's elements extended over the lengths, so only selected rows'
    /// elements are decoded. `written`: dictionary leaves as dictionaries (as written),
    /// else as their values.
    pub fn read_nested(
        &self,
        block: usize,
        c: usize,
        sel: Option<&Bitmap>,
        written: bool,
    ) -> Result<(ArrayRef, NestedCounts)> {
        let rows = self.block_rows(block).ok_or_else(|| {
            Error::Invalid(format!(
                "block {block} out of range ({} blocks)",
                self.num_blocks()
            ))
        })? as usize;
        if self.column_shape(c)? != ColumnShape::Nested {
            return Err(Error::Invalid(format!(
                "column '{}' is not a nested column of one value per row",
                self.column_name(c)?
            )));
        }
        let reader = NestedReader {
            file: self,
            block,
            counts: Default::default(),
        };
        let array = assemble(self.layout()?, &reader, c, rows, sel, written)?;
        Ok((array, reader.counts.into_inner()))
    }

    /// The Arrow schema of the file, as written: its top-level columns, the schema of the
    /// batches read. Built on first use from every column's field;
    /// [`SiftFile::project_schema`] builds only the columns asked for.
    pub fn schema(&self) -> Result<&SchemaRef> {
        Ok(&self.schemas()?.0)
    }

    /// One field per footer column (see [`SiftFile::num_columns`]), as a scan returns it:
    /// named by its path, a column written as an Arrow dictionary with its value type (it
    /// is stored and filtered as its values), a nested column's first footer column with
    /// the whole nested type (dictionary leaves as their values), its other footer columns
    /// with their subtrees' types. For a file without nested columns, [`SiftFile::schema`]
    /// with dictionaries as their values.
    pub fn stored_schema(&self) -> Result<&SchemaRef> {
        Ok(&self.schemas()?.1)
    }

    /// The schema of the footer columns `columns` (indices), as written, decoding only
    /// their field records (and, for nested columns, every field record).
    pub fn project_schema(&self, columns: &[usize]) -> Result<SchemaRef> {
        let fields = columns
            .iter()
            .map(|&c| self.column_field(c, true))
            .collect::<Result<Vec<_>>>()?;
        let md = self.head()?.metadata.clone();
        Ok(Arc::new(Schema::new_with_metadata(fields, md)))
    }

    /// Total rows.
    pub fn num_rows(&self) -> u64 {
        self.footer.num_rows()
    }

    /// Number of blocks.
    pub fn num_blocks(&self) -> usize {
        self.footer.num_blocks()
    }

    /// Number of footer columns: one per column, and for a nested column one per node of
    /// its type ([`SiftFile::top_level`] lists those of the schema's columns).
    pub fn num_columns(&self) -> usize {
        self.footer.num_columns()
    }

    /// Rows in block `block`, `None` if there is no such block.
    pub fn block_rows(&self, block: usize) -> Option<u32> {
        self.footer.block_rows(block)
    }

    /// Index of the column called `name` (compares the stored names, decodes nothing).
    pub fn column_index(&self, name: &str) -> Option<usize> {
        self.footer.column_index(name)
    }

    /// Resolves column names to indices, with an error naming an unknown column.
    pub fn projection(&self, names: &[impl AsRef<str>]) -> Result<Vec<usize>> {
        names
            .iter()
            .map(|n| {
                let n = n.as_ref();
                self.column_index(n).ok_or_else(|| {
                    let known: Vec<String> = (0..self.num_columns())
                        .map(|c| self.column_name(c).unwrap_or("?").to_string())
                        .collect();
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
        match self.column_shape(column)? {
            ColumnShape::Flat => {}
            ColumnShape::Nested => return Ok(self.read_nested(block, column, None, true)?.0),
            ColumnShape::Element => {
                return Err(Error::Invalid(format!(
                    "column '{}' holds list elements, not one value per row: read the list",
                    self.column_name(column)?
                )));
            }
        }
        let chunk = self.chunk(block, column)?;
        let array = self.decode_checked(block, column, &chunk, None)?;
        // A dictionary column: back to the dictionary type it was written with.
        let written = self.column(column)?.written.data_type();
        if array.data_type() != written {
            return arrow_cast::cast(&array, written)
                .map_err(|e| self.chunk_error(block, column, e));
        }
        Ok(array)
    }

    /// Decodes a chunk at the rows of `sel` (all if `None`), checking its nulls against
    /// the footer.
    fn decode_checked(
        &self,
        block: usize,
        column: usize,
        chunk: &ChunkRef<'_>,
        sel: Option<&Bitmap>,
    ) -> Result<ArrayRef> {
        let array = chunk
            .view()
            .decode_rows(sel)
            .map_err(|e| self.chunk_error(block, column, e))?;
        let nulls = array.logical_null_count() as u64;
        let col = self.column(column)?;
        let null_type = col.field.ty == ColumnType::Null;
        let all = sel.is_none_or(|s| s.count_ones() == s.len());
        if (all && nulls != chunk.meta.stats.null_count)
            || (nulls > 0 && !col.field.nullable && !null_type)
        {
            return Err(corrupt(
                &self.path,
                format!(
                    "{}: {nulls} nulls decoded, footer says {}",
                    self.chunk_place(block, column),
                    chunk.meta.stats.null_count
                ),
            ));
        }
        Ok(array)
    }

    /// Where a chunk is, for messages: `block 3 column 'x' at offset 1234` (the offset
    /// when its metadata was already decoded).
    pub fn chunk_place(&self, block: usize, column: usize) -> String {
        let place = self.footer.place(block, column);
        let offset = self
            .columns
            .get(column)
            .and_then(OnceLock::get)
            .and_then(|c| c.chunks.get(block))
            .and_then(|s| s.meta.get())
            .map_or(0, |m| m.byte_range().0);
        format!("{place} at offset {offset}")
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
        let mut out = self.chunk_alone(block, column)?;
        // The footer's check on first use made sure a source is another column that is
        // not a lookup itself, so this goes one level deep.
        if let Some(source) = lookup_source(&out.meta.encoding) {
            out.source = Some(Box::new(self.chunk_alone(block, source)?));
        }
        Ok(out)
    }

    /// One chunk without its lookup source.
    fn chunk_alone(&self, block: usize, column: usize) -> Result<ChunkRef<'_>> {
        let chunk = self.chunk_meta(block, column)?;
        let col = self.column(column)?;
        let rows = self.block_rows(block).unwrap_or(0) as usize;
        let (start, len) = chunk.byte_range();
        let bytes = match &self.storage {
            // The chunk's metadata was validated: its segments lie inside the file.
            Storage::Local { map: Some(map), .. } => {
                ChunkBytes::Mapped(&map[start as usize..(start + len) as usize])
            }
            Storage::Local { file, map: None } => ChunkBytes::aligned(len as usize, |buf| {
                file.read_exact_at(buf, start).map_err(io_err(&self.path))
            })?,
            // Copied into words: received bytes have no alignment.
            Storage::Remote(remote) => {
                let fetched = match remote.held((block, column)) {
                    Some(b) => b,
                    None => remote
                        .read(start..start + len)
                        .map_err(io_err(&self.path))?,
                };
                ChunkBytes::aligned(len as usize, |buf| {
                    buf.copy_from_slice(&fetched);
                    Ok(())
                })?
            }
        };
        let out = ChunkRef {
            meta: chunk,
            rows,
            data_type: col.stored.data_type(),
            bytes,
            start,
            source: None,
        };
        // chunk_meta found the block, so its slot exists.
        let verified = col.chunks.get(block).map(|s| &s.verified);
        if self.options.verify_checksums
            && let Some(flag) = verified
            && !flag.load(Ordering::Relaxed)
        {
            let actual = crc32fast::hash(out.bytes());
            if actual != chunk.crc32 {
                return Err(corrupt(
                    &self.path,
                    format!(
                        "block {block} column '{}' at offset {start}: checksum mismatch over its {len} bytes (stored {:#010x}, computed {actual:#010x})",
                        col.field.name, chunk.crc32
                    ),
                ));
            }
            flag.store(true, Ordering::Relaxed);
        }
        Ok(out)
    }

    /// Reads one block; `projection` lists column indices (all columns if `None`).
    pub fn read_block(&self, block: usize, projection: Option<&[usize]>) -> Result<RecordBatch> {
        let cols = match projection {
            Some(p) => p,
            None => self.top_level()?,
        };
        let rows = self.block_rows(block).ok_or_else(|| {
            Error::Invalid(format!(
                "block {block} out of range ({} blocks)",
                self.num_blocks()
            ))
        })? as usize;
        let schema = match projection {
            None => Arc::clone(self.schema()?),
            Some(p) => self.project_schema(p)?,
        };
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
            && let Some(&bad) = p.iter().find(|&&c| c >= self.num_columns())
        {
            return Err(Error::Invalid(format!(
                "column {bad} out of range ({})",
                self.num_columns()
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

/// How a footer column is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnShape {
    /// A chunk of one value per row: a column that is not nested, or a leaf reached
    /// through structs only. Filters evaluate on its encoded values.
    Flat,
    /// The first footer column of a nested value of one per row (a struct, list or map, at
    /// the top or inside structs): read assembled ([`SiftFile::read_nested`]); its chunk
    /// holds the node's presence or lengths, null where the value is null.
    Nested,
    /// A column under a list: one value per element, read only through its list.
    Element,
}

/// What reading a nested column decoded.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NestedCounts {
    /// Values decoded, over all its footer columns (lengths and presence included).
    pub values: u64,
    /// Stored bytes of the chunks read.
    pub bytes: u64,
}

/// Reads the footer columns of a nested column in one block.
struct NestedReader<'a> {
    file: &'a SiftFile,
    block: usize,
    counts: std::cell::Cell<NestedCounts>,
}

impl ColumnReader for NestedReader<'_> {
    fn read(&self, c: usize, count: usize, sel: Option<&Bitmap>) -> Result<ArrayRef> {
        let file = self.file;
        let mut chunk = file.chunk(self.block, c)?;
        if count != chunk.rows {
            // A column under a list: its count comes from the lengths above it, so it is
            // bounded like a decode, and it cannot be a lookup into another column's rows.
            let limit = self.max_elements(c)?;
            if count > limit {
                return Err(self.error(
                    c,
                    format!("{count} elements are more than the {limit} its stored bytes allow"),
                ));
            }
            if lookup_source(&chunk.meta.encoding).is_some() {
                return Err(self.error(c, "a column of list elements is a lookup".into()));
            }
            chunk.rows = count;
        }
        let array = file.decode_checked(self.block, c, &chunk, sel)?;
        let mut counts = self.counts.get();
        counts.values += array.len() as u64;
        counts.bytes += chunk.stored_bytes();
        self.counts.set(counts);
        Ok(array)
    }

    fn max_elements(&self, c: usize) -> Result<usize> {
        let stored = self.file.chunk_meta(self.block, c)?.stored_bytes();
        Ok(crate::nested::max_elements(stored as usize))
    }

    fn error(&self, c: usize, msg: String) -> Error {
        self.file.chunk_error(self.block, c, msg)
    }
}
