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
use parquet::errors::ParquetError;
use parquet::file::metadata::{ColumnChunkMetaData, ParquetMetaData};
use parquet::file::reader::{ChunkReader, Length};
use sift_format::{RangeOptions, RangeSource, Remote};

/// The bytes of one Parquet file. Clones share the file (or object) and what was fetched.
#[derive(Clone)]
pub(crate) enum ParquetInput {
    /// A local file; mapped into memory unless it cannot be, then read with `pread`.
    Local {
        file: Arc<File>,
        len: u64,
        map: Option<Bytes>,
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
    /// Every column chunk's byte range and key `(row group, leaf)`, sorted by start; set
    /// once the metadata is parsed.
    chunks: OnceLock<Vec<Located>>,
}

/// A column chunk's byte range and its key `(row group, leaf)`.
type Located = (Range<u64>, (usize, usize));

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

    /// Records where the column chunks lie (from the parsed metadata), so that reads
    /// inside a chunk fetched ahead are served from it.
    pub(crate) fn index_chunks(&self, meta: &ParquetMetaData) {
        let ParquetInput::Remote(r) = self else {
            return;
        };
        let mut chunks = Vec::new();
        for (rg, group) in meta.row_groups().iter().enumerate() {
            for (leaf, chunk) in group.columns().iter().enumerate() {
                if let Some(range) = self.chunk_range(chunk) {
                    chunks.push((range, (rg, leaf)));
                }
            }
        }
        chunks.sort_unstable_by_key(|(range, _)| range.start);
        let _ = r.chunks.set(chunks);
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
        if let Some((chunk, key)) = self.chunk_at(range.start)
            && range.end <= chunk.end
            && let Some(held) = self.remote.held(key)
        {
            let at = (range.start - chunk.start) as usize;
            return Ok(held.slice(at..at + (range.end - range.start) as usize));
        }
        self.remote.read(range)
    }

    /// The column chunk holding byte `at`, if any.
    fn chunk_at(&self, at: u64) -> Option<Located> {
        let chunks = self.chunks.get()?;
        let i = chunks
            .partition_point(|(r, _)| r.start <= at)
            .checked_sub(1)?;
        let (range, key) = &chunks[i];
        (at < range.end).then(|| (range.clone(), *key))
    }

    /// The bytes from `start` to the end of the column chunk holding it (of the object's
    /// tail, outside chunks): what a reader of page headers reads from.
    fn rest_from(&self, start: u64) -> std::io::Result<Bytes> {
        let end = match self.chunk_at(start) {
            Some((chunk, _)) => chunk.end,
            None => self.len,
        };
        self.bytes(start..end)
    }
}

impl Length for ParquetInput {
    fn len(&self) -> u64 {
        ParquetInput::len(self)
    }
}

/// A reader of [`ParquetInput`] from an offset.
pub(crate) enum InputRead {
    /// A local file at an explicit offset. The `parquet` crate's own reader for `File`
    /// seeks a cloned handle, and clones share one offset: two threads reading one table
    /// through it read each other's positions.
    File { file: Arc<File>, pos: u64 },
    /// Bytes in memory (a mapped file, an object's tail or fetched chunk), read from `pos`.
    Bytes { bytes: Bytes, pos: usize },
}

impl InputRead {
    pub(crate) fn bytes(bytes: Bytes) -> InputRead {
        InputRead::Bytes { bytes, pos: 0 }
    }
}

/// Reading past the end is an error, not an end: the `parquet` crate reads page headers
/// through this, and its Thrift decoder skips a field by copying its declared length
/// without checking that the bytes were there. A damaged header declaring a list of 2^31
/// strings would otherwise be skipped string by string at the end of the file, for
/// minutes. No valid page header reaches the end of the file.
impl Read for InputRead {
    #[inline]
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = match self {
            InputRead::File { file, pos } => {
                let n = std::os::unix::fs::FileExt::read_at(file.as_ref(), buf, *pos)?;
                *pos += n as u64;
                n
            }
            InputRead::Bytes { bytes, pos } => {
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

    fn get_read(&self, start: u64) -> parquet::errors::Result<InputRead> {
        if start > self.len() {
            return Err(ParquetError::EOF(format!(
                "offset {start} lies beyond the end of the file"
            )));
        }
        match self {
            ParquetInput::Local { map: Some(map), .. } if start <= map.len() as u64 => {
                Ok(InputRead::bytes(map.slice(start as usize..)))
            }
            ParquetInput::Local { file, .. } => Ok(InputRead::File {
                file: file.clone(),
                pos: start,
            }),
            ParquetInput::Remote(r) => r
                .rest_from(start)
                .map(InputRead::bytes)
                .map_err(|e| ParquetError::External(Box::new(e))),
        }
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<Bytes> {
        self.bytes(start, length as u64)
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::UnexpectedEof => ParquetError::EOF(e.to_string()),
                _ => ParquetError::External(Box::new(e)),
            })
    }
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
