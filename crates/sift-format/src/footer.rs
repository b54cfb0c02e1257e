//! The footer: schema, blocks, per-chunk encodings, statistics and segment locations.

use std::path::Path;

use serde::{Deserialize, Serialize};
use sift_encoding::{ChunkStats, ColumnEncoding};

use crate::error::{Error, Result, corrupt};
use crate::schema::StoredField;
use crate::writer::MAX_BLOCK_ROWS;

/// The magic bytes at the start and the end of every Sift file.
pub const MAGIC: [u8; 8] = *b"SIFTDATA";

/// The format version this build writes and reads.
pub const FORMAT_VERSION: u32 = 2;

/// Bytes after the footer: length (8), CRC-32 (4), version (4), magic (8).
pub const TRAILER_LEN: usize = 24;

/// One contiguous byte range of the file holding one buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Segment {
    /// Absolute file offset.
    pub offset: u64,
    /// Length in bytes.
    pub len: u64,
    /// CRC-32 (IEEE) of the bytes.
    pub crc32: u32,
}

/// One column of one block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChunkMeta {
    /// How the values are encoded.
    pub encoding: ColumnEncoding,
    /// Zone map.
    pub stats: ChunkStats,
    /// Buffer `i` of the encoding is `segments[i]`; contiguous and in order.
    pub segments: Vec<Segment>,
}

impl ChunkMeta {
    /// The byte range covering all segments of the chunk, `(offset, len)`.
    pub fn byte_range(&self) -> (u64, u64) {
        match (self.segments.first(), self.segments.last()) {
            (Some(first), Some(last)) => (first.offset, last.offset + last.len - first.offset),
            _ => (0, 0),
        }
    }

    /// Total stored bytes.
    pub fn stored_bytes(&self) -> u64 {
        self.segments.iter().map(|s| s.len).sum()
    }
}

/// One block: up to 64Ki rows, the same rows in every column.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BlockMeta {
    /// Rows in the block.
    pub rows: u32,
    /// One chunk per column, in schema order.
    pub columns: Vec<ChunkMeta>,
}

/// Everything needed to read a file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Footer {
    /// The columns.
    pub fields: Vec<StoredField>,
    /// Schema-level metadata.
    pub metadata: Vec<(String, String)>,
    /// Total rows.
    pub num_rows: u64,
    /// The blocks, in row order.
    pub blocks: Vec<BlockMeta>,
    /// The writer, e.g. `sift 0.1.0`.
    pub created_by: String,
}

impl Footer {
    /// Serializes the footer and the trailer that follows it.
    pub(crate) fn to_bytes(&self) -> std::result::Result<Vec<u8>, postcard::Error> {
        let mut out = postcard::to_stdvec(self)?;
        let len = out.len() as u64;
        let crc = crc32fast::hash(&out);
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&crc.to_le_bytes());
        out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        out.extend_from_slice(&MAGIC);
        Ok(out)
    }

    /// Parses the trailer (the last [`TRAILER_LEN`] bytes) into `(footer_len, crc32)`,
    /// refusing bad magic and unknown versions.
    pub(crate) fn parse_trailer(path: &Path, trailer: &[u8], file_len: u64) -> Result<(u64, u32)> {
        let field = |r: std::ops::Range<usize>| {
            trailer
                .get(r)
                .ok_or_else(|| corrupt(path, "trailer too short"))
        };
        if field(16..24)? != MAGIC {
            return Err(corrupt(
                path,
                "not a Sift file (no SIFTDATA magic at the end)",
            ));
        }
        let version = u32::from_le_bytes(le4(field(12..16)?));
        if version != FORMAT_VERSION {
            return Err(Error::UnsupportedVersion {
                path: path.to_path_buf(),
                found: version,
                supported: FORMAT_VERSION,
            });
        }
        let len = u64::from_le_bytes(le8(field(0..8)?));
        let crc = u32::from_le_bytes(le4(field(8..12)?));
        let max = file_len.saturating_sub((TRAILER_LEN + MAGIC.len()) as u64);
        if len > max {
            return Err(corrupt(
                path,
                format!("footer length {len} exceeds the file ({file_len} bytes)"),
            ));
        }
        Ok((len, crc))
    }

    /// Decodes and validates a footer whose bytes start at `footer_offset`.
    pub(crate) fn from_bytes(
        path: &Path,
        bytes: &[u8],
        crc: u32,
        footer_offset: u64,
    ) -> Result<Self> {
        let actual = crc32fast::hash(bytes);
        if actual != crc {
            return Err(corrupt(
                path,
                format!(
                    "footer checksum mismatch at offset {footer_offset} (stored {crc:#010x}, computed {actual:#010x})"
                ),
            ));
        }
        let footer: Footer = postcard::from_bytes(bytes).map_err(|e| {
            corrupt(
                path,
                format!("footer at offset {footer_offset} does not decode: {e}"),
            )
        })?;
        footer.validate(path, footer_offset)?;
        Ok(footer)
    }

    /// Checks every structural invariant a reader relies on, so that later reads can only
    /// fail on the data itself, never on inconsistent metadata.
    fn validate(&self, path: &Path, footer_offset: u64) -> Result<()> {
        let mut rows = 0u64;
        let mut next_offset = MAGIC.len() as u64;
        for (b, block) in self.blocks.iter().enumerate() {
            if block.rows == 0 || block.rows as usize > MAX_BLOCK_ROWS {
                return Err(corrupt(
                    path,
                    format!(
                        "block {b} has {} rows (1..={MAX_BLOCK_ROWS} allowed)",
                        block.rows
                    ),
                ));
            }
            rows += u64::from(block.rows);
            if block.columns.len() != self.fields.len() {
                return Err(corrupt(
                    path,
                    format!(
                        "block {b} has {} columns, the schema {}",
                        block.columns.len(),
                        self.fields.len()
                    ),
                ));
            }
            for (c, chunk) in block.columns.iter().enumerate() {
                let name = &self.fields[c].name;
                if chunk.stats.null_count > u64::from(block.rows) {
                    return Err(corrupt(
                        path,
                        format!("block {b} column '{name}': more nulls than rows"),
                    ));
                }
                if let Some(source) = sift_encoding::lookup_source(&chunk.encoding) {
                    let valid = source != c
                        && block.columns.get(source).is_some_and(|src| {
                            sift_encoding::lookup_source(&src.encoding).is_none()
                        });
                    if !valid {
                        return Err(corrupt(
                            path,
                            format!(
                                "block {b} column '{name}' is a lookup into column {source}, which is not another stored column"
                            ),
                        ));
                    }
                }
                for (s, seg) in chunk.segments.iter().enumerate() {
                    let end = seg.offset.checked_add(seg.len);
                    if seg.offset < next_offset || end.is_none_or(|e| e > footer_offset) {
                        return Err(corrupt(
                            path,
                            format!(
                                "block {b} column '{name}' segment {s} at offset {} (+{} bytes) is out of place",
                                seg.offset, seg.len
                            ),
                        ));
                    }
                    next_offset = end.unwrap_or(footer_offset);
                }
            }
        }
        if rows != self.num_rows {
            return Err(corrupt(
                path,
                format!("blocks hold {rows} rows, the footer says {}", self.num_rows),
            ));
        }
        Ok(())
    }
}

fn le4(b: &[u8]) -> [u8; 4] {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[..4]);
    a
}

fn le8(b: &[u8]) -> [u8; 8] {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[..8]);
    a
}
