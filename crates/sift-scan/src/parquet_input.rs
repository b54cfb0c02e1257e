//! Where a Parquet file's bytes come from (feature `parquet`): a local file, mapped or read
//! at explicit offsets, or an object read by byte range. One [`ParquetInput`] serves the
//! `parquet` crate's readers (metadata, page index, Bloom filters, row groups) and Sift's
//! own page reader alike.
//!
//! An object is opened with one suffix request of
//! [`RangeOptions::footer_guess`](sift_format::RangeOptions) bytes: the footer, and the
//! metadata and page index a writer puts before it, are read from those bytes when they
//! fit (one more request each when they do not). A scan fetches the column chunks it
//! needs ahead of their use, several row groups at a time, through a [`Remote`] shared by
//! its threads (coalesced, concurrent requests; see `ParquetSource::prefetch`). Bytes
//! nothing fetched ahead (a Bloom filter, a chunk read outside a scan) cost one request
//! each.

use std::fs::File;
use std::io::Read;
use std::ops::Range;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder,
};
use parquet::basic::Compression;
use parquet::column::page::PageReader;
use parquet::errors::ParquetError;
use parquet::file::metadata::{ColumnChunkMetaData, ParquetMetaData, ParquetMetaDataReader};
use parquet::file::page_index::offset_index::PageLocation;
use parquet::file::reader::{ChunkReader, Length};
use parquet::file::serialized_reader::SerializedPageReader;
use sift_format::{RangeOptions, RangeSource, Remote};

use crate::parquet_source::guarded;
use crate::parquet_thrift::{BoolLists, Damage, PageHeader, check_struct, page_header};

/// The bytes of one Parquet file. Clones share the file (or object) and what was fetched.
#[derive(Clone)]
pub(crate) enum ParquetInput {
    /// A local file; mapped into memory unless it cannot be, then read with `pread`.
    Local {
        file: Arc<File>,
        len: u64,
        map: Option<Bytes>,
        /// The column chunks, as [`RemoteInput::chunks`].
        chunks: Arc<OnceLock<Vec<Located>>>,
    },
    /// An object read by byte range.
    Remote(Arc<RemoteInput>),
}

/// An object read by byte range, with its tail and the column chunks fetched ahead.
pub(crate) struct RemoteInput {
    pub(crate) remote: Remote,
    len: u64,
    /// The object's last bytes, read when it was opened.
    tail: Bytes,
    /// Every column chunk, sorted by start; set once the metadata is parsed.
    chunks: OnceLock<Vec<Located>>,
}

/// A column chunk where the metadata places it.
pub(crate) struct Located {
    range: Range<u64>,
    /// `(row group, leaf)`.
    key: (usize, usize),
    /// What its pages are compressed with: a page header's uncompressed size is checked
    /// against what that codec can expand the page to.
    codec: Compression,
}

/// The chunk of `chunks` (sorted by start) holding byte `at`, if any.
fn locate(chunks: &[Located], at: u64) -> Option<&Located> {
    let i = chunks
        .partition_point(|c| c.range.start <= at)
        .checked_sub(1)?;
    let chunk = &chunks[i];
    chunk.range.contains(&at).then_some(chunk)
}

impl ParquetInput {
    /// A local file.
    pub(crate) fn local(path: &Path) -> std::io::Result<ParquetInput> {
        let file = File::open(path)?;
        let len = file.metadata()?.len();
        let map = sift_format::map_file(&file).ok().map(Bytes::from_owner);
        Ok(ParquetInput::Local {
            file: Arc::new(file),
            len,
            map,
            chunks: Arc::default(),
        })
    }

    /// An object, opened with one suffix request.
    pub(crate) fn remote(
        source: Arc<dyn RangeSource>,
        options: RangeOptions,
    ) -> std::io::Result<ParquetInput> {
        let (tail, len) = source.read_suffix(options.footer_guess.max(8))?;
        if tail.len() as u64 > len {
            return Err(std::io::Error::other(format!(
                "{}: the store returned {} bytes for the tail of a {len}-byte object",
                source.location(),
                tail.len()
            )));
        }
        Ok(ParquetInput::Remote(Arc::new(RemoteInput {
            remote: Remote::new(source, options),
            len,
            tail,
            chunks: OnceLock::new(),
        })))
    }

    /// The footer's metadata, its Thrift checked ([`check_struct`]), for the `parquet`
    /// crate to decode from these bytes (no second read or request): `None` for a file too
    /// short for a footer, or not ending in `PAR1` (an encrypted footer, or no Parquet
    /// file), which the crate reports.
    pub(crate) fn checked_footer(&self) -> std::io::Result<Option<Held<'_>>> {
        let len = self.len();
        let Some(at) = len.checked_sub(8) else {
            return Ok(None);
        };
        let tail = self.bytes(at, 8)?;
        if &tail[4..] != b"PAR1" {
            return Ok(None);
        }
        let size = u64::from(u32::from_le_bytes([tail[0], tail[1], tail[2], tail[3]]));
        let Some(start) = at.checked_sub(size) else {
            return Ok(None);
        };
        let bytes = self.bytes(start, size)?;
        check_struct(&bytes, start, BoolLists::None).map_err(|e| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("footer metadata (bytes {start}..{at}): {e}"),
            )
        })?;
        Ok(Some(Held {
            input: self,
            start,
            bytes,
        }))
    }

    /// The footer's metadata, its Thrift checked ([`checked_footer`](Self::checked_footer))
    /// and decoded by the `parquet` crate from the same bytes; for a file without a footer
    /// the crate's own error.
    pub(crate) fn footer(&self) -> Result<ParquetMetaData, String> {
        match self.checked_footer().map_err(|e| e.to_string())? {
            Some(checked) => ParquetMetaDataReader::new().parse_and_finish(&checked),
            None => ParquetMetaDataReader::new().parse_and_finish(self),
        }
        .map_err(|e| e.to_string())
    }

    /// Records where the column chunks lie and their codecs (from the parsed metadata):
    /// reads inside a chunk fetched ahead are served from it, and every page header read
    /// ([`get_read`](ChunkReader::get_read)) is checked against its chunk's codec.
    pub(crate) fn index_chunks(&self, meta: &ParquetMetaData) {
        let mut chunks = Vec::new();
        for (rg, group) in meta.row_groups().iter().enumerate() {
            for (leaf, chunk) in group.columns().iter().enumerate() {
                if let Some(range) = self.chunk_range(chunk) {
                    chunks.push(Located {
                        range,
                        key: (rg, leaf),
                        codec: chunk.compression(),
                    });
                }
            }
        }
        chunks.sort_unstable_by_key(|c| c.range.start);
        let _ = match self {
            ParquetInput::Local { chunks: held, .. } => held.set(chunks),
            ParquetInput::Remote(r) => r.chunks.set(chunks),
        };
    }

    /// The column chunk holding byte `at`, once the chunks are indexed.
    fn chunk_at(&self, at: u64) -> Option<&Located> {
        match self {
            ParquetInput::Local { chunks, .. } => locate(chunks.get()?, at),
            ParquetInput::Remote(r) => locate(r.chunks(), at),
        }
    }

    /// The byte range of a column chunk, if it lies inside the file (reading one that
    /// does not reports the damage).
    pub(crate) fn chunk_range(&self, chunk: &ColumnChunkMetaData) -> Option<Range<u64>> {
        let start = chunk_start(chunk)?;
        let length = u64::try_from(chunk.compressed_size()).ok()?;
        let end = start.checked_add(length).filter(|&e| e <= self.len())?;
        Some(start..end)
    }

    /// The object read by range, if this is one.
    pub(crate) fn remote_input(&self) -> Option<&RemoteInput> {
        match self {
            ParquetInput::Remote(r) => Some(r),
            ParquetInput::Local { .. } => None,
        }
    }

    /// The file's length in bytes.
    pub(crate) fn len(&self) -> u64 {
        match self {
            ParquetInput::Local { len, .. } => *len,
            ParquetInput::Remote(r) => r.len,
        }
    }

    /// Bytes `start..start + length`: a slice of the mapping, of the object's tail or of a
    /// chunk fetched ahead, or read.
    pub(crate) fn bytes(&self, start: u64, length: u64) -> std::io::Result<Bytes> {
        let len = self.len();
        let end = start
            .checked_add(length)
            .filter(|&end| end <= len)
            .ok_or_else(|| {
                std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    format!("bytes {start}+{length} extend past the end of the file ({len} bytes)"),
                )
            })?;
        match self {
            ParquetInput::Local { map: Some(map), .. } if end <= map.len() as u64 => {
                Ok(map.slice(start as usize..end as usize))
            }
            ParquetInput::Local { file, .. } => {
                let mut buf = vec![0u8; length as usize];
                std::os::unix::fs::FileExt::read_exact_at(file.as_ref(), &mut buf, start)?;
                Ok(Bytes::from(buf))
            }
            ParquetInput::Remote(r) => r.bytes(start..end),
        }
    }
}

impl RemoteInput {
    /// The bytes of `range` (inside the object).
    fn bytes(&self, range: Range<u64>) -> std::io::Result<Bytes> {
        let tail_start = self.len - self.tail.len() as u64;
        if range.start >= tail_start {
            let at = (range.start - tail_start) as usize;
            return Ok(self.tail.slice(at..at + (range.end - range.start) as usize));
        }
        if let Some(chunk) = locate(self.chunks(), range.start)
            && range.end <= chunk.range.end
            && let Some(held) = self.remote.held(chunk.key)
        {
            let at = (range.start - chunk.range.start) as usize;
            return Ok(held.slice(at..at + (range.end - range.start) as usize));
        }
        self.remote.read(range)
    }

    /// The column chunks, once indexed.
    fn chunks(&self) -> &[Located] {
        self.chunks.get().map_or(&[], Vec::as_slice)
    }

    /// The bytes from `start` to the end of the column chunk holding it (of the object's
    /// tail, outside chunks): what a reader of page headers reads from.
    fn rest_from(&self, start: u64) -> std::io::Result<Bytes> {
        let end = locate(self.chunks(), start).map_or(self.len, |chunk| chunk.range.end);
        self.bytes(start..end)
    }
}

impl Length for ParquetInput {
    fn len(&self) -> u64 {
        ParquetInput::len(self)
    }
}

/// A reader of [`ParquetInput`] from an offset: of a page header, checked
/// ([`check_struct`]) when its first byte is read, or of the footer's last 8 bytes.
pub(crate) struct InputRead {
    from: ReadFrom,
    /// The file offset of the page header to check before the first read (the crate also
    /// asks for readers it does not read from, at the data of a page whose header it has
    /// already read).
    header: Option<u64>,
    /// The column chunk's codec: the header's uncompressed size is checked against how far
    /// it expands (the crate allocates that size before decompressing).
    codec: Option<Compression>,
}

/// How far a codec expands a page's compressed bytes.
#[derive(Clone, Copy)]
enum Expansion {
    /// To at most this many bytes each, as the format bounds it: Snappy's longest copy is
    /// 64 bytes from 3 (21.3), LZ4's match length grows 255 a byte, deflate's limit is 1032
    /// to 1, and a zstd block regenerates at most 128 KiB from at least 4 bytes (a 3-byte
    /// block header and the one byte an RLE block repeats), frames adding bytes of their
    /// own.
    AtMost(u64),
    /// Too far to bound a page by (Brotli: a few bits can copy megabytes, and a valid 4 KB
    /// page can hold gigabytes): a page declaring more than this many bytes each is
    /// decompressed into nothing first, counting, up to what it declares (gzip's bound,
    /// which pages of real data stay far below: they are decompressed once).
    BrotliPast(u64),
}

/// How far `codec` expands a page (`None`: a codec the crate does not read).
fn expansion(codec: Compression) -> Option<Expansion> {
    match codec {
        Compression::UNCOMPRESSED => Some(Expansion::AtMost(1)),
        Compression::SNAPPY => Some(Expansion::AtMost(24)),
        Compression::LZ4 | Compression::LZ4_RAW => Some(Expansion::AtMost(256)),
        Compression::GZIP(_) => Some(Expansion::AtMost(1040)),
        Compression::ZSTD(_) => Some(Expansion::AtMost(32_768)),
        Compression::BROTLI(_) => Some(Expansion::BrotliPast(1040)),
        _ => None,
    }
}

/// Bytes of a page's uncompressed size allowed past its codec's expansion (a codec's own
/// framing around a tiny page).
const EXPANSION_SLACK: i64 = 64;

enum ReadFrom {
    /// A local file at an explicit offset. The `parquet` crate's own reader for `File`
    /// seeks a cloned handle, and clones share one offset: two threads reading one table
    /// through it read each other's positions.
    File { file: Arc<File>, pos: u64 },
    /// Bytes in memory (a mapped file, an object's tail or fetched chunk), read from `pos`.
    Bytes { bytes: Bytes, pos: usize },
}

impl ReadFrom {
    /// The same bytes, read from `skip` bytes further on.
    fn further(&self, skip: u64) -> ReadFrom {
        match self {
            ReadFrom::File { file, pos } => ReadFrom::File {
                file: file.clone(),
                pos: pos.saturating_add(skip),
            },
            ReadFrom::Bytes { bytes, pos } => ReadFrom::Bytes {
                bytes: bytes.clone(),
                pos: pos.saturating_add(usize::try_from(skip).unwrap_or(usize::MAX)),
            },
        }
    }
}

impl InputRead {
    /// Checks the page header at the start (once, before the first byte is read, or when
    /// [`check_page_headers`] asks).
    fn check(&mut self) -> std::io::Result<()> {
        let Some(at) = self.header.take() else {
            return Ok(());
        };
        let damaged = |e: Damage| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("page header at byte {at}: {e}"),
            )
        };
        let header = match &self.from {
            ReadFrom::Bytes { bytes, .. } => page_header(bytes, at).map_err(damaged)?,
            // Windows growing from 4 KiB until the header ends inside one, or the file.
            ReadFrom::File { file, pos } => {
                let mut window = 4096usize;
                loop {
                    let mut buf = vec![0u8; window];
                    let n = std::os::unix::fs::FileExt::read_at(file.as_ref(), &mut buf, *pos)?;
                    match page_header(&buf[..n], at) {
                        Err(e) if e.cut_off && n == window => window *= 16,
                        done => break done.map_err(damaged)?,
                    }
                }
            }
        };
        let Some(codec) = self.codec else {
            return Ok(());
        };
        check_expansion(&header, codec, |skip, n| {
            InputRead {
                from: self.from.further(skip),
                header: None,
                codec: None,
            }
            .take(n)
        })
        .map_err(|e| damaged(Damage::from(e)))
    }
}

/// Refuses a page whose `header` declares more uncompressed bytes than its chunk's
/// `codec` can expand its stored bytes to: what [`Expansion`] bounds, counted by
/// decompressing into nothing for Brotli, whose values `values(skip, n)` reads (`n` bytes
/// from `skip` bytes after the header's start). A codec the crate does not read passes.
pub(crate) fn check_expansion<R: Read>(
    header: &PageHeader,
    codec: Compression,
    values: impl FnOnce(u64, u64) -> R,
) -> std::result::Result<(), String> {
    let Some(expands) = expansion(codec) else {
        return Ok(());
    };
    let (raw, stored) = (i64::from(header.raw), i64::from(header.stored).max(0));
    let beyond = |most: u64| {
        raw > (most as i64)
            .saturating_mul(stored)
            .saturating_add(EXPANSION_SLACK)
    };
    let levels = header.levels();
    let refused = match expands {
        Expansion::AtMost(most) if beyond(most) => Some(format!(
            "more than {} expands {stored} bytes to",
            codec_name(codec)
        )),
        Expansion::BrotliPast(most) if header.compressed() && beyond(most) => {
            let wanted = raw.saturating_sub(levels).max(0) as u64;
            // The values follow the header and a version-2 page's levels.
            let data = (header.len as u64).saturating_add(levels as u64);
            let stored_values = stored.saturating_sub(levels).max(0) as u64;
            match brotli_len(values(data, stored_values), wanted) {
                Ok(n) if n < wanted => Some(format!(
                    "more than its {} data decompresses to ({} bytes)",
                    codec_name(codec),
                    n + levels as u64
                )),
                Ok(_) => None,
                Err(e) => Some(format!(
                    "and its {} data is damaged: {e}",
                    codec_name(codec)
                )),
            }
        }
        _ => None,
    };
    match refused {
        Some(why) => Err(format!(
            "a page of {stored} bytes compressed with {} declares {raw} bytes uncompressed, \
             {why}",
            codec_name(codec)
        )),
        None => Ok(()),
    }
}

/// A codec's name without its level (`ZSTD`, not `ZSTD(ZstdLevel(1))`).
pub fn codec_name(codec: Compression) -> String {
    let name = codec.to_string();
    name.split('(').next().unwrap_or(&name).to_owned()
}

/// How many bytes the Brotli stream `compressed` decompresses to, counted up to `most`
/// (decompressed into nothing, a few KiB and the stream's window at a time).
fn brotli_len(compressed: impl Read, most: u64) -> std::io::Result<u64> {
    let mut stream = brotli::Decompressor::new(compressed, 4096).take(most);
    std::io::copy(&mut stream, &mut std::io::sink())
}

/// Reading past the end is an error, not an end: the `parquet` crate reads page headers
/// through this, and its Thrift decoder skips a field by copying its declared length
/// without checking that the bytes were there. A damaged header declaring a list of 2^31
/// strings would otherwise be skipped string by string at the end of the file, for
/// minutes. No valid page header reaches the end of the file.
impl Read for InputRead {
    #[inline]
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.header.is_some() {
            self.check()?;
        }
        let n = match &mut self.from {
            ReadFrom::File { file, pos } => {
                let n = std::os::unix::fs::FileExt::read_at(file.as_ref(), buf, *pos)?;
                *pos += n as u64;
                n
            }
            ReadFrom::Bytes { bytes, pos } => {
                let rest = bytes.get(*pos..).unwrap_or_default();
                let n = buf.len().min(rest.len());
                // The Thrift decoder reads page headers a byte at a time: a single byte
                // is moved directly rather than through a `memcpy` call.
                if n == 1 {
                    buf[0] = rest[0];
                } else {
                    buf[..n].copy_from_slice(&rest[..n]);
                }
                *pos += n;
                n
            }
        };
        if n == 0 && !buf.is_empty() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "read past the end of the file",
            ));
        }
        Ok(n)
    }
}

impl ChunkReader for ParquetInput {
    type T = InputRead;

    /// The crate reads page headers through this (checked when first read from), and the
    /// footer's length and magic (the last 8 bytes, where no page header can start).
    fn get_read(&self, start: u64) -> parquet::errors::Result<InputRead> {
        if start > self.len() {
            return Err(ParquetError::EOF(format!(
                "offset {start} lies beyond the end of the file"
            )));
        }
        let header = (self.len() - start > 8).then_some(start);
        let from = match self {
            ParquetInput::Local { map: Some(map), .. } if start <= map.len() as u64 => {
                ReadFrom::Bytes {
                    bytes: map.slice(start as usize..),
                    pos: 0,
                }
            }
            ParquetInput::Local { file, .. } => ReadFrom::File {
                file: file.clone(),
                pos: start,
            },
            ParquetInput::Remote(r) => ReadFrom::Bytes {
                bytes: r
                    .rest_from(start)
                    .map_err(|e| ParquetError::External(Box::new(e)))?,
                pos: 0,
            },
        };
        Ok(InputRead {
            from,
            header,
            codec: self.chunk_at(start).map(|chunk| chunk.codec),
        })
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<Bytes> {
        self.bytes(start, length as u64)
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::UnexpectedEof => ParquetError::EOF(e.to_string()),
                _ => ParquetError::External(Box::new(e)),
            })
    }
}

/// A local Parquet file for readers of the `parquet` crate, its footer checked when opened
/// and each page header before it is read, as Sift's scan checks them (the crate's own
/// decoder can be held for seconds by a few bytes of a damaged file, and allocates the
/// uncompressed size a page header declares).
#[derive(Clone)]
pub struct ParquetFile {
    input: ParquetInput,
    /// The footer's metadata, parsed when the file was opened.
    meta: Arc<ParquetMetaData>,
}

impl ParquetFile {
    /// Opens `path`, checking and parsing its footer.
    pub fn open(path: &Path) -> std::io::Result<ParquetFile> {
        let input = ParquetInput::local(path)?;
        let meta = guarded(|| Ok(input.footer()))
            .and_then(|footer| footer)
            .map_err(|e| {
                std::io::Error::new(std::io::ErrorKind::InvalidData, format!("footer: {e}"))
            })?;
        input.index_chunks(&meta);
        Ok(ParquetFile {
            input,
            meta: Arc::new(meta),
        })
    }

    /// A reader of the file's rows by the `parquet` crate, from the metadata parsed when
    /// the file was opened.
    pub fn into_reader(self) -> parquet::errors::Result<ParquetRecordBatchReaderBuilder<Self>> {
        let meta = ArrowReaderMetadata::try_new(self.meta.clone(), ArrowReaderOptions::new())?;
        Ok(ParquetRecordBatchReaderBuilder::new_with_metadata(
            self, meta,
        ))
    }

    /// Checks every Thrift structure of the file that a reader of the `parquet` crate may
    /// decode, not only those it decodes through this file: the footer (checked at open),
    /// each column chunk's column and offset index and Bloom filter header, and every page
    /// header, each walked as Sift's scan walks them before the crate decodes them (a
    /// page's data is skipped, not read). For a reader that fetches bytes and decodes them
    /// itself (DataFusion's Parquet scan): a file that passes holds nothing that can hold
    /// the crate's decoder for long.
    pub fn check_all(&self) -> std::io::Result<()> {
        let invalid =
            |message: String| std::io::Error::new(std::io::ErrorKind::InvalidData, message);
        for (rg, group) in self.meta.row_groups().iter().enumerate() {
            for chunk in group.columns() {
                let place = |e: &dyn std::fmt::Display| {
                    invalid(format!(
                        "row group {rg}, column {}: {e}",
                        chunk.column_path()
                    ))
                };
                let bloom = chunk.bloom_filter_offset().map(|at| {
                    // Without a stated length, the header is read from the bytes after it.
                    let left =
                        u64::try_from(at).map_or(0, |at| self.input.len().saturating_sub(at));
                    let read = i64::try_from(left.min(BLOOM_HEADER_READ)).unwrap_or(0);
                    (at, chunk.bloom_filter_length().map_or(read, i64::from))
                });
                let structs = index_structs(chunk)
                    .map(|((at, n), what, bools)| ((at, i64::from(n)), what, bools))
                    .chain(bloom.map(|b| (b, "Bloom filter header", BoolLists::None)));
                for ((at, length), what, bools) in structs {
                    let (Ok(start), Ok(length)) = (u64::try_from(at), u64::try_from(length)) else {
                        return Err(place(&format!("{what} at byte {at}, {length} bytes long")));
                    };
                    let bytes = self
                        .input
                        .bytes(start, length)
                        .map_err(|e| place(&format!("{what}: {e}")))?;
                    check_thrift(&bytes, start, what, bools).map_err(|e| place(&e))?;
                }
                if chunk_start(chunk).is_none() {
                    return Err(place(&"the chunk starts at a negative offset"));
                }
                let rows = usize::try_from(group.num_rows()).unwrap_or(0);
                let mut pages = guarded(|| {
                    SerializedPageReader::new(Arc::new(self.clone()), chunk, rows, None)
                })
                .map_err(|e| place(&e))?;
                while guarded(|| pages.peek_next_page())
                    .map_err(|e| place(&e))?
                    .is_some()
                {
                    guarded(|| pages.skip_next_page()).map_err(|e| place(&e))?;
                }
            }
        }
        Ok(())
    }
}

/// Bytes read for a Bloom filter header whose filter's length the footer does not give:
/// a header is a few dozen bytes.
const BLOOM_HEADER_READ: u64 = 256;

impl Length for ParquetFile {
    fn len(&self) -> u64 {
        self.input.len()
    }
}

impl ChunkReader for ParquetFile {
    type T = Box<dyn Read + Send>;

    fn get_read(&self, start: u64) -> parquet::errors::Result<Self::T> {
        Ok(Box::new(self.input.get_read(start)?))
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<Bytes> {
        self.input.get_bytes(start, length)
    }
}

/// The file with bytes `start..start + bytes.len()` served from `bytes`: what was read once
/// to be checked ([`check_thrift`]), then decoded by the `parquet` crate from the same
/// bytes (the page index, a Bloom filter), with no second read or request.
pub(crate) struct Held<'a> {
    pub(crate) input: &'a ParquetInput,
    pub(crate) start: u64,
    pub(crate) bytes: Bytes,
}

impl Length for Held<'_> {
    fn len(&self) -> u64 {
        self.input.len()
    }
}

impl ChunkReader for Held<'_> {
    type T = InputRead;

    fn get_read(&self, start: u64) -> parquet::errors::Result<Self::T> {
        self.input.get_read(start)
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<Bytes> {
        let inside = start
            .checked_sub(self.start)
            .and_then(|at| usize::try_from(at).ok())
            .filter(|&at| at.saturating_add(length) <= self.bytes.len());
        match inside {
            Some(at) => Ok(self.bytes.slice(at..at + length)),
            None => self.input.get_bytes(start, length),
        }
    }
}

/// Checks the page headers at a page index's locations `pages`, which the `parquet` crate
/// reads from the bytes it asks for rather than through `get_read` (whose readers check
/// the header they start at).
pub(crate) fn check_page_headers(
    reader: &impl ChunkReader<T = InputRead>,
    pages: &[PageLocation],
) -> parquet::errors::Result<()> {
    for page in pages {
        let at = u64::try_from(page.offset).unwrap_or(u64::MAX);
        reader
            .get_read(at)?
            .check()
            .map_err(|e| ParquetError::External(Box::new(e)))?;
    }
    Ok(())
}

/// [`check_struct`] of `bytes`, which start at file offset `start`, as a `parquet` error
/// naming `what` and the offset.
pub(crate) fn check_thrift(
    bytes: &[u8],
    start: u64,
    what: &str,
    bools: BoolLists,
) -> parquet::errors::Result<()> {
    check_struct(bytes, start, bools)
        .map(drop)
        .map_err(|e| ParquetError::General(format!("{what} at byte {start}: {e}")))
}

/// A column chunk's page-index structures, where the footer places them: `((offset,
/// length), what, bools)` for its column index (whose `null_pages` is the one list of
/// booleans writers produce) and its offset index.
pub(crate) fn index_structs(
    chunk: &ColumnChunkMetaData,
) -> impl Iterator<Item = ((i64, i32), &'static str, BoolLists)> {
    let column = chunk.column_index_offset().zip(chunk.column_index_length());
    let offset = chunk.offset_index_offset().zip(chunk.offset_index_length());
    column
        .map(|i| (i, "column index", BoolLists::FirstField))
        .into_iter()
        .chain(offset.map(|i| (i, "offset index", BoolLists::None)))
}

/// Where a column chunk starts (its dictionary page, else its first data page); `None`
/// when a damaged footer gives a negative offset (the `parquet` crate's `byte_range`
/// panics on those).
pub(crate) fn chunk_start(chunk: &ColumnChunkMetaData) -> Option<u64> {
    let start = chunk
        .dictionary_page_offset()
        .unwrap_or(chunk.data_page_offset());
    u64::try_from(start).ok()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use arrow_array::{ArrayRef, Int64Array, RecordBatch};
    use parquet::arrow::ArrowWriter;
    use parquet::basic::BrotliLevel;
    use parquet::file::properties::{WriterProperties, WriterVersion};

    /// A Brotli page is counted from its values (after its header, and a version-2 page's
    /// levels) whether the file is mapped or read at offsets: undamaged, its header
    /// passes; declaring more than its data decompresses to, it is refused with the size
    /// the data has.
    #[test]
    fn brotli_pages_are_counted_mapped_or_read() {
        let header_read = |path: &Path, mapped: bool| {
            let mut input = ParquetInput::local(path).unwrap();
            if let ParquetInput::Local { map, .. } = &mut input {
                assert!(map.is_some());
                if !mapped {
                    *map = None;
                }
            }
            let meta = input.footer().unwrap();
            input.index_chunks(&meta);
            let at = meta.row_group(0).column(0).data_page_offset() as u64;
            let mut first = [0u8];
            input
                .get_read(at)
                .unwrap()
                .read(&mut first)
                .map_err(|e| e.to_string())
        };
        let versions = [
            (WriterVersion::PARQUET_1_0, 0),
            (WriterVersion::PARQUET_2_0, 6),
        ];
        for ((version, page_type), nulls) in versions.into_iter().zip([false, true]) {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("zeros.parquet");
            let rows = 1 << 16;
            // Nulls in one stretch: a few bytes of levels.
            let x = (0..rows).map(|i| (!nulls || i >= 1000).then_some(0i64));
            let batch =
                RecordBatch::try_from_iter([("x", Arc::new(Int64Array::from_iter(x)) as ArrayRef)])
                    .unwrap();
            let props = WriterProperties::builder()
                .set_writer_version(version)
                .set_dictionary_enabled(false)
                .set_encoding(parquet::basic::Encoding::PLAIN)
                .set_compression(Compression::BROTLI(BrotliLevel::default()))
                .set_data_page_row_count_limit(rows)
                .build();
            let file = File::create(&path).unwrap();
            let mut writer = ArrowWriter::try_new(file, batch.schema(), Some(props)).unwrap();
            writer.write(&batch).unwrap();
            writer.close().unwrap();
            for mapped in [true, false] {
                header_read(&path, mapped).unwrap();
            }

            // The header's type, then its uncompressed size (at most half a MiB: a 3-byte
            // varint), made 2^20 - 1.
            let mut bytes = std::fs::read(&path).unwrap();
            let meta = ParquetMetaDataReader::new()
                .parse_and_finish(&Bytes::from(bytes.clone()))
                .unwrap();
            let at = meta.row_group(0).column(0).data_page_offset() as usize;
            assert_eq!(
                bytes[at..at + 3],
                [0x15, page_type, 0x15],
                "a data page header"
            );
            let size = &bytes[at + 3..at + 6];
            assert!(size[..2].iter().all(|b| b & 0x80 != 0) && size[2] < 0x80);
            let zigzag = (0..3).fold(0, |z, i| z | u32::from(size[i] & 0x7F) << (7 * i));
            let raw = zigzag >> 1;
            bytes[at + 3..at + 6].copy_from_slice(&[0xFE, 0xFF, 0x7F]);
            std::fs::write(&path, &bytes).unwrap();
            for mapped in [true, false] {
                let e = header_read(&path, mapped).unwrap_err();
                let expected = format!(
                    "declares 1048575 bytes uncompressed, more than its BROTLI data \
                     decompresses to ({raw} bytes)"
                );
                assert!(e.contains(&expected), "{e}");
            }
        }
    }
}
