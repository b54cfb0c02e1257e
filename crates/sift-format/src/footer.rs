//! The footer, format version 4: schema, blocks, per-chunk encodings, statistics and
//! segment locations, laid out so that a reader reaches any column's field and any chunk's
//! metadata through fixed-width offset tables, without decoding the others.
//!
//! `docs/format.md` specifies the layout byte by byte. In short:
//!
//! ```text
//! header (36 bytes)  num_rows u64, columns u32, blocks u32, head_len u32, names_len u32,
//!                    fields_len u32, schema_crc u32, chunks_len u32
//! head               created_by, schema metadata
//! block rows         u32 per block                          ─ core: the trailer's CRC
//! name offsets       u32 × (columns + 1), names             ┐
//! field offsets      u32 × (columns + 1), field records     ┘ schema_crc
//! chunk offsets      u32 × (blocks × columns + 1)
//! chunk records      per chunk: its own CRC, encoding, statistics, segments
//! ```

use std::ops::Range;
use std::path::{Path, PathBuf};

use sift_encoding::wire::{Reader, Writer};
use sift_encoding::{ChunkStats, ColumnEncoding, lookup_source};

use crate::error::{Error, Result, corrupt};
use crate::schema::{ColumnType, StoredField, read_pairs, utf8, write_pairs};
use crate::writer::{MAX_BLOCK_ROWS, SEGMENT_ALIGN};

/// The magic bytes at the start and the end of every Sift file.
pub const MAGIC: [u8; 8] = *b"SIFTDATA";

/// The format version this build writes, and the newest it reads.
pub const FORMAT_VERSION: u32 = 4;

/// The oldest format version this build reads. Version 3 is version 4 without the sorted
/// flag in chunk statistics (its flag byte is the NaN flag alone).
pub const OLDEST_FORMAT_VERSION: u32 = 3;

/// Bytes after the footer: length (8), CRC-32 (4), version (4), magic (8).
pub const TRAILER_LEN: usize = 24;

/// Bytes of the footer's fixed header.
pub const FOOTER_HEADER_LEN: usize = 36;

/// The smallest chunk record: its CRC, a validity tag, a node count, null count, two
/// absent bounds, the NaN flag, a segment count and the chunk's CRC.
const MIN_CHUNK_RECORD: usize = 15;

/// The smallest segment: a later segment at its aligned place is one length varint.
const MIN_SEGMENT_BYTES: usize = 1;

/// One contiguous byte range of the file holding one buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    /// Absolute file offset.
    pub offset: u64,
    /// Length in bytes.
    pub len: u64,
}

/// One column of one block.
#[derive(Debug, Clone, PartialEq)]
pub struct ChunkMeta {
    /// How the values are encoded.
    pub encoding: ColumnEncoding,
    /// Zone map.
    pub stats: ChunkStats,
    /// Buffer `i` of the encoding is `segments[i]`; in file order, within the data area.
    pub segments: Vec<Segment>,
    /// CRC-32 (IEEE) of the chunk's bytes: its [`byte_range`](Self::byte_range), the
    /// padding between segments included. One per chunk, because a chunk is read and
    /// verified whole.
    pub crc32: u32,
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
#[derive(Debug, Clone, PartialEq)]
pub struct BlockMeta {
    /// Rows in the block.
    pub rows: u32,
    /// One chunk per column, in schema order.
    pub columns: Vec<ChunkMeta>,
}

/// Everything a file's footer holds, decoded: what the writer builds, and what
/// [`Footer::decode`] returns for tools that want all of it. Readers go through
/// [`crate::SiftFile`], which decodes only what is used.
#[derive(Debug, Clone, PartialEq)]
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

/// A section length as the header's `u32`, or an error naming it.
fn len32(n: usize, what: &str) -> Result<u32> {
    u32::try_from(n).map_err(|_| {
        Error::Invalid(format!(
            "footer section '{what}' is {n} bytes, more than the format's 4 GiB limit"
        ))
    })
}

/// Writes `records` one after another into `data` and their start offsets (plus the end)
/// as `u32` into `table`.
fn offset_table(records: &[Vec<u8>], what: &str) -> Result<(Vec<u8>, Vec<u8>)> {
    let mut table = Vec::with_capacity(4 * (records.len() + 1));
    let mut data = Vec::new();
    for r in records {
        table.extend_from_slice(&len32(data.len(), what)?.to_le_bytes());
        data.extend_from_slice(r);
    }
    table.extend_from_slice(&len32(data.len(), what)?.to_le_bytes());
    Ok((table, data))
}

/// The CRC-32 of chunk `(block, column)`'s record body: the block and column numbers
/// (`u32` LE each) are hashed first, so a record found through a damaged offset, at
/// another chunk's place, does not pass.
fn chunk_crc(block: usize, column: usize, body: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&(block as u32).to_le_bytes());
    h.update(&(column as u32).to_le_bytes());
    h.update(body);
    h.finalize()
}

/// Encodes one field record: type, nullable flag, metadata.
fn field_record(f: &StoredField) -> Vec<u8> {
    let mut w = Writer::new();
    f.ty.write_wire(&mut w);
    w.u8(u8::from(f.nullable));
    write_pairs(&f.metadata, &mut w);
    w.into_bytes()
}

/// Encodes one chunk record: CRC, encoding, statistics, segments.
fn chunk_record(block: usize, column: usize, chunk: &ChunkMeta) -> Vec<u8> {
    let mut w = Writer::new();
    w.u32_le(0);
    chunk.encoding.write_wire(&mut w);
    chunk.stats.write_wire(&mut w);
    w.varint(chunk.segments.len() as u64);
    let mut end: Option<u64> = None;
    for s in &chunk.segments {
        // The first segment's offset is absolute. Every later length carries a flag in its
        // lowest bit: 0 means the segment starts where the previous one ends,
        // rounded up to the segment alignment, as the writer places it; flag 1 is followed
        // by the gap after the previous segment. A writer never goes backwards; a footer
        // built by hand that does is written with its absolute offset (and refused).
        match end {
            None => {
                w.varint(s.offset);
                w.varint(s.len);
            }
            Some(e) if e.checked_next_multiple_of(SEGMENT_ALIGN) == Some(s.offset) => {
                w.varint(s.len << 1)
            }
            Some(e) if s.offset >= e => {
                w.varint(s.len << 1 | 1);
                w.varint(s.offset - e);
            }
            Some(_) => {
                w.varint(s.len << 1 | 1);
                w.varint(s.offset);
            }
        }
        end = Some(s.offset.saturating_add(s.len));
    }
    w.u32_le(chunk.crc32);
    let mut bytes = w.into_bytes();
    let crc = chunk_crc(block, column, &bytes[4..]);
    bytes[..4].copy_from_slice(&crc.to_le_bytes());
    bytes
}

impl Footer {
    /// Encodes the footer (without the trailer) in the version-4 layout. Fails if a block
    /// does not have one chunk per field, or a section outgrows the format's limits.
    pub fn encode(&self) -> Result<Vec<u8>> {
        let columns = self.fields.len();
        let mut head = Writer::new();
        head.bytes(self.created_by.as_bytes());
        write_pairs(&self.metadata, &mut head);
        let names: Vec<Vec<u8>> = self
            .fields
            .iter()
            .map(|f| f.name.as_bytes().to_vec())
            .collect();
        let (name_table, name_data) = offset_table(&names, "names")?;
        let fields: Vec<Vec<u8>> = self.fields.iter().map(field_record).collect();
        let (field_table, field_data) = offset_table(&fields, "fields")?;
        let mut chunks = Vec::with_capacity(self.blocks.len() * columns);
        for (b, block) in self.blocks.iter().enumerate() {
            if block.columns.len() != columns {
                return Err(Error::Invalid(format!(
                    "block {b} has {} columns, the schema {columns}",
                    block.columns.len()
                )));
            }
            for (c, chunk) in block.columns.iter().enumerate() {
                chunks.push(chunk_record(b, c, chunk));
            }
        }
        let (chunk_table, chunk_data) = offset_table(&chunks, "chunks")?;

        let mut schema_crc = crc32fast::Hasher::new();
        for part in [&name_table, &name_data, &field_table, &field_data] {
            schema_crc.update(part);
        }
        let mut out = Writer::new();
        out.u64_le(self.num_rows);
        out.u32_le(len32(columns, "columns")?);
        out.u32_le(len32(self.blocks.len(), "blocks")?);
        out.u32_le(len32(head.len(), "head")?);
        out.u32_le(len32(name_data.len(), "names")?);
        out.u32_le(len32(field_data.len(), "fields")?);
        out.u32_le(schema_crc.finalize());
        out.u32_le(len32(chunk_data.len(), "chunks")?);
        out.raw(head.as_bytes());
        for block in &self.blocks {
            out.u32_le(block.rows);
        }
        for part in [
            &name_table,
            &name_data,
            &field_table,
            &field_data,
            &chunk_table,
            &chunk_data,
        ] {
            out.raw(part);
        }
        Ok(out.into_bytes())
    }

    /// The footer followed by its trailer.
    pub(crate) fn to_bytes(&self) -> Result<Vec<u8>> {
        let mut out = self.encode()?;
        let len = out.len() as u64;
        let crc = footer_checksum(&out).unwrap_or(0);
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&crc.to_le_bytes());
        out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        out.extend_from_slice(&MAGIC);
        Ok(out)
    }

    /// Decodes and validates every part of a footer (the bytes between the data and the
    /// trailer, which starts at `footer_offset` in the file): for tools and tests.
    pub fn decode(path: &Path, bytes: &[u8], footer_offset: u64) -> Result<Footer> {
        let crc = footer_checksum(bytes).unwrap_or(0);
        let view = FooterView::parse(path, bytes, crc, footer_offset)?;
        let fields = (0..view.num_columns())
            .map(|c| view.field(c))
            .collect::<Result<Vec<_>>>()?;
        let mut blocks = Vec::with_capacity(view.num_blocks());
        for b in 0..view.num_blocks() {
            let columns = (0..view.num_columns())
                .map(|c| view.chunk(b, c, crate::nested::per_row(&fields[c])))
                .collect::<Result<Vec<_>>>()?;
            for (c, chunk) in columns.iter().enumerate() {
                let source = lookup_source(&chunk.encoding).map(|s| (s, columns.get(s)));
                view.check_lookup(b, c, source.map(|(s, m)| (s, m.map(|m| &m.encoding))))?;
            }
            blocks.push(BlockMeta {
                rows: view.block_rows(b).unwrap_or(0),
                columns,
            });
        }
        let (created_by, metadata) = view.head()?;
        Ok(Footer {
            fields,
            metadata,
            num_rows: view.num_rows(),
            blocks,
            created_by,
        })
    }

    /// Parses the trailer (the last [`TRAILER_LEN`] bytes) into `(footer_len, crc32,
    /// version)`, refusing bad magic and unknown versions.
    pub(crate) fn parse_trailer(
        path: &Path,
        trailer: &[u8],
        file_len: u64,
    ) -> Result<(u64, u32, u32)> {
        let field = |r: Range<usize>| {
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
        if !(OLDEST_FORMAT_VERSION..=FORMAT_VERSION).contains(&version) {
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
        Ok((len, crc, version))
    }
}

/// The trailer's checksum of a footer: the CRC-32 of its core (header, head and block
/// rows), or `None` if the footer is too short to say where the core ends.
pub fn footer_checksum(footer: &[u8]) -> Option<u32> {
    let header = footer.get(..FOOTER_HEADER_LEN)?;
    let blocks = u64::from(u32::from_le_bytes(le4(&header[12..16])));
    let head = u64::from(u32::from_le_bytes(le4(&header[16..20])));
    let core = FOOTER_HEADER_LEN as u64 + head + 4 * blocks;
    Some(crc32fast::hash(footer.get(..usize::try_from(core).ok()?)?))
}

/// Where a footer's sections are, from its header (byte ranges of the footer).
struct Sections {
    columns: usize,
    blocks: usize,
    head: Range<usize>,
    rows_table: Range<usize>,
    name_table: usize,
    names: Range<usize>,
    field_table: usize,
    fields: Range<usize>,
    chunk_table: usize,
    chunks: Range<usize>,
}

impl Sections {
    /// The sections the header describes, if they add up to exactly the footer's length.
    fn of(footer: &[u8]) -> std::result::Result<Sections, String> {
        let total = footer.len();
        let Some(header) = footer.get(..FOOTER_HEADER_LEN) else {
            return Err(format!(
                "{total} bytes is shorter than the {FOOTER_HEADER_LEN}-byte header"
            ));
        };
        let u32_at = |at: usize| u32::from_le_bytes(le4(&header[at..]));
        let (columns, blocks) = (u32_at(8), u32_at(12));
        // In u128, every size below (at most 4 × 2^32 × 2^32 + 4) is exact.
        let mut at = FOOTER_HEADER_LEN as u128;
        let mut section = |len: u128| {
            let start = at;
            at += len;
            start..at
        };
        let (c, b) = (u128::from(columns), u128::from(blocks));
        let head = section(u128::from(u32_at(16)));
        let rows_table = section(4 * b);
        let name_table = section(4 * (c + 1));
        let names = section(u128::from(u32_at(20)));
        let field_table = section(4 * (c + 1));
        let fields = section(u128::from(u32_at(24)));
        let chunk_table = section(4 * (b * c + 1));
        let chunks = section(u128::from(u32_at(32)));
        if at != total as u128 {
            return Err(format!(
                "{total} bytes, but its header ({columns} columns, {blocks} blocks and section \
                 lengths) describes {at}"
            ));
        }
        // Now every range lies inside the footer, whose length fits usize.
        let r = |r: Range<u128>| r.start as usize..r.end as usize;
        Ok(Sections {
            columns: columns as usize,
            blocks: blocks as usize,
            head: r(head),
            rows_table: r(rows_table),
            name_table: r(name_table).start,
            names: r(names),
            field_table: r(field_table).start,
            fields: r(fields),
            chunk_table: r(chunk_table).start,
            chunks: r(chunks),
        })
    }
}

/// Recomputes the checksums inside a footer — the schema region's and every chunk
/// record's whose offsets make sense — and returns the trailer's ([`footer_checksum`]); if
/// the header's sizes do not add up, only the latter. For tools that build or damage
/// footers on purpose (tests, fuzzing): a hostile footer has valid checksums.
pub fn seal_footer(footer: &mut [u8]) -> Option<u32> {
    if let Ok(l) = Sections::of(footer) {
        let crc = crc32fast::hash(&footer[l.name_table..l.fields.end]);
        footer[28..32].copy_from_slice(&crc.to_le_bytes());
        let entry =
            |f: &[u8], i: usize| u32::from_le_bytes(le4(&f[l.chunk_table + 4 * i..])) as usize;
        for b in 0..l.blocks {
            for c in 0..l.columns {
                let i = b * l.columns + c;
                let (from, to) = (entry(footer, i), entry(footer, i + 1));
                if from + 4 > to || to > l.chunks.len() {
                    continue;
                }
                let record = l.chunks.start + from..l.chunks.start + to;
                let crc = chunk_crc(b, c, &footer[record.start + 4..record.end]);
                footer[record.start..record.start + 4].copy_from_slice(&crc.to_le_bytes());
            }
        }
    }
    footer_checksum(footer)
}

/// The footer's bytes: read from the file, or a range of its mapping.
pub(crate) enum FooterBytes {
    Owned(Vec<u8>),
    Mapped(std::sync::Arc<memmap2::Mmap>, Range<usize>),
}

impl std::ops::Deref for FooterBytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            FooterBytes::Owned(v) => v,
            FooterBytes::Mapped(m, r) => &m[r.clone()],
        }
    }
}

/// A footer whose always-needed sections (header, head, block rows, schema region) are
/// checked, and whose per-column and per-chunk records are decoded on request.
pub(crate) struct FooterView<B = FooterBytes> {
    path: PathBuf,
    bytes: B,
    footer_offset: u64,
    num_rows: u64,
    block_rows: Vec<u32>,
    sections: Sections,
}

/// Four bytes as a little-endian `u32`.
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

impl<B: std::ops::Deref<Target = [u8]>> FooterView<B> {
    /// Checks the header, the section sizes against the footer's length, the core's CRC
    /// (`crc`, from the trailer), the schema region's CRC and the block rows: work
    /// proportional to the blocks, and a CRC over the names and field records.
    pub(crate) fn parse(path: &Path, bytes: B, crc: u32, footer_offset: u64) -> Result<Self> {
        let bad = |msg: String| corrupt(path, format!("footer at offset {footer_offset}: {msg}"));
        let l = Sections::of(&bytes).map_err(bad)?;
        // The header is there: Sections::of checked the footer's length.
        let num_rows = u64::from_le_bytes(le8(&bytes));
        let schema_crc = u32::from_le_bytes(le4(&bytes[28..]));
        let actual = crc32fast::hash(&bytes[..l.rows_table.end]);
        if actual != crc {
            return Err(bad(format!(
                "checksum mismatch (stored {crc:#010x}, computed {actual:#010x})"
            )));
        }
        let actual = crc32fast::hash(&bytes[l.name_table..l.fields.end]);
        if actual != schema_crc {
            return Err(bad(format!(
                "schema checksum mismatch (stored {schema_crc:#010x}, computed {actual:#010x})"
            )));
        }
        let mut block_rows = Vec::with_capacity(l.blocks);
        let mut sum = 0u64;
        for (b, raw) in bytes[l.rows_table.clone()].chunks_exact(4).enumerate() {
            let rows = u32::from_le_bytes(le4(raw));
            if rows == 0 || rows as usize > MAX_BLOCK_ROWS {
                return Err(bad(format!(
                    "block {b} has {rows} rows (1..={MAX_BLOCK_ROWS} allowed)"
                )));
            }
            sum += u64::from(rows);
            block_rows.push(rows);
        }
        if sum != num_rows {
            return Err(bad(format!(
                "blocks hold {sum} rows, the footer says {num_rows}"
            )));
        }
        let view = Self {
            path: path.to_path_buf(),
            footer_offset,
            num_rows,
            block_rows,
            sections: l,
            bytes,
        };
        // The tables must start at 0 and end at their section's length.
        let l = &view.sections;
        for (what, table, n, len) in [
            ("name", l.name_table, l.columns, l.names.len()),
            ("field", l.field_table, l.columns, l.fields.len()),
            ("chunk", l.chunk_table, l.columns * l.blocks, l.chunks.len()),
        ] {
            if view.entry(table, 0) != 0 || view.entry(table, n) != len {
                return Err(bad(format!(
                    "the {what} offset table does not span its section"
                )));
            }
        }
        Ok(view)
    }

    /// Entry `i` of the `u32` table at `table` (in bounds: checked by `parse`'s sizes).
    fn entry(&self, table: usize, i: usize) -> usize {
        let at = table + 4 * i;
        u32::from_le_bytes(le4(&self.bytes[at..at + 4])) as usize
    }

    /// Record `i` of a section indexed by `table`, or an error if its offsets are out of
    /// order or outside the section.
    fn record(&self, table: usize, section: &Range<usize>, i: usize) -> Option<Range<usize>> {
        let (start, end) = (self.entry(table, i), self.entry(table, i + 1));
        (start <= end && end <= section.len()).then(|| section.start + start..section.start + end)
    }

    /// The footer's bytes and its offset in the file.
    pub(crate) fn bytes(&self) -> (&[u8], u64) {
        (&self.bytes, self.footer_offset)
    }

    pub(crate) fn num_rows(&self) -> u64 {
        self.num_rows
    }

    pub(crate) fn num_columns(&self) -> usize {
        self.sections.columns
    }

    pub(crate) fn num_blocks(&self) -> usize {
        self.block_rows.len()
    }

    pub(crate) fn block_rows(&self, block: usize) -> Option<u32> {
        self.block_rows.get(block).copied()
    }

    /// Column `c`'s name as stored (not checked to be UTF-8), `None` if its offsets are
    /// bad or `c` is out of range.
    pub(crate) fn name_bytes(&self, c: usize) -> Option<&[u8]> {
        if c >= self.sections.columns {
            return None;
        }
        Some(&self.bytes[self.record(self.sections.name_table, &self.sections.names, c)?])
    }

    /// Column `c`'s name, checked.
    pub(crate) fn name(&self, c: usize) -> Result<&str> {
        let bytes = self.name_bytes(c).ok_or_else(|| {
            self.bad(format!(
                "column {c}: name offsets out of place ({} columns)",
                self.sections.columns
            ))
        })?;
        std::str::from_utf8(bytes)
            .map_err(|_| self.bad(format!("column {c}: the name is not UTF-8")))
    }

    /// The first column called `name`: compares stored bytes, decodes nothing.
    pub(crate) fn column_index(&self, name: &str) -> Option<usize> {
        (0..self.sections.columns).find(|&c| self.name_bytes(c) == Some(name.as_bytes()))
    }

    fn bad(&self, msg: String) -> Error {
        corrupt(
            &self.path,
            format!("footer at offset {}: {msg}", self.footer_offset),
        )
    }

    /// Decodes column `c`'s field record.
    pub(crate) fn field(&self, c: usize) -> Result<StoredField> {
        let name = self.name(c)?.to_string();
        let range = self
            .record(self.sections.field_table, &self.sections.fields, c)
            .ok_or_else(|| self.bad(format!("column '{name}': field offsets out of place")))?;
        let at = range.start;
        let mut r = Reader::new(&self.bytes[range]);
        let read = |r: &mut Reader<'_>| -> sift_encoding::Result<(ColumnType, bool, _)> {
            let ty = ColumnType::read_wire(r)?;
            let nullable = r.bool("nullable")?;
            let metadata = read_pairs(r)?;
            r.finish()?;
            Ok((ty, nullable, metadata))
        };
        let (ty, nullable, metadata) = read(&mut r).map_err(|e| {
            self.bad(format!(
                "column '{name}': field record at footer byte {at}: {e}"
            ))
        })?;
        Ok(StoredField {
            name,
            ty,
            nullable,
            metadata,
        })
    }

    /// Decodes the head: `(created_by, schema metadata)`.
    pub(crate) fn head(&self) -> Result<(String, Vec<(String, String)>)> {
        let mut r = Reader::new(&self.bytes[self.sections.head.clone()]);
        let read = |r: &mut Reader<'_>| -> sift_encoding::Result<_> {
            let created_by = utf8(r.bytes("created_by")?, r)?;
            let metadata = read_pairs(r)?;
            r.finish()?;
            Ok((created_by, metadata))
        };
        read(&mut r).map_err(|e| self.bad(format!("head section: {e}")))
    }

    /// Where chunk `(block, column)` is, for messages.
    pub(crate) fn place(&self, block: usize, column: usize) -> String {
        let name = self
            .name_bytes(column)
            .map_or("?".into(), String::from_utf8_lossy);
        format!("block {block} column '{name}'")
    }

    /// Decodes and checks chunk `(block, column)`'s record: its offsets, its CRC, every
    /// field, nulls against the block's rows (if `per_row`: the column holds one value per
    /// row, which a column of a nested column may not; its nulls are checked when read),
    /// and its segments (inside the data area between the leading magic and the footer,
    /// in order). Lookups into other columns are checked by [`FooterView::check_lookup`].
    pub(crate) fn chunk(&self, block: usize, column: usize, per_row: bool) -> Result<ChunkMeta> {
        let Some(rows) = self.block_rows(block) else {
            return Err(Error::Invalid(format!(
                "block {block} out of range ({} blocks)",
                self.num_blocks()
            )));
        };
        if column >= self.sections.columns {
            return Err(Error::Invalid(format!(
                "column {column} out of range ({})",
                self.sections.columns
            )));
        }
        let place = || self.place(block, column);
        let i = block * self.sections.columns + column;
        let range = self
            .record(self.sections.chunk_table, &self.sections.chunks, i)
            .filter(|r| r.len() >= MIN_CHUNK_RECORD)
            .ok_or_else(|| self.bad(format!("{}: metadata offsets out of place", place())))?;
        let at = range.start;
        let record = &self.bytes[range];
        let stored = u32::from_le_bytes(le4(record));
        let actual = chunk_crc(block, column, &record[4..]);
        if stored != actual {
            return Err(self.bad(format!(
                "{}: metadata record at footer byte {at}: checksum mismatch (stored \
                 {stored:#010x}, computed {actual:#010x})",
                place()
            )));
        }
        let mut r = Reader::new(&record[4..]);
        let meta = read_chunk(&mut r, self.footer_offset).map_err(|e| {
            self.bad(format!(
                "{}: metadata record at footer byte {}: {e}",
                place(),
                at + 4
            ))
        })?;
        if per_row && meta.stats.null_count > u64::from(rows) {
            return Err(self.bad(format!(
                "{}: {} nulls in a block of {rows} rows",
                place(),
                meta.stats.null_count
            )));
        }
        Ok(meta)
    }

    /// Refuses a lookup whose source (`Some((column, its encoding if it exists))`) is not
    /// another stored column of the block that is not a lookup itself.
    pub(crate) fn check_lookup(
        &self,
        block: usize,
        column: usize,
        source: Option<(usize, Option<&ColumnEncoding>)>,
    ) -> Result<()> {
        let Some((source, encoding)) = source else {
            return Ok(());
        };
        let valid = source != column && encoding.is_some_and(|e| lookup_source(e).is_none());
        if valid {
            return Ok(());
        }
        Err(self.bad(format!(
            "{} is a lookup into column {source}, which is not another stored column",
            self.place(block, column)
        )))
    }
}

/// Reads a chunk record's body (after its CRC), checking segments against the data
/// area `[8, footer_offset)`.
fn read_chunk(r: &mut Reader<'_>, footer_offset: u64) -> sift_encoding::Result<ChunkMeta> {
    let encoding = ColumnEncoding::read_wire(r)?;
    let stats = ChunkStats::read_wire(r)?;
    let n = r.count(MIN_SEGMENT_BYTES, "segment count")?;
    let mut segments = Vec::with_capacity(n);
    let mut end = MAGIC.len() as u64;
    for s in 0..n {
        let (offset, len) = if s == 0 {
            let offset = r.varint("segment offset")?;
            (Some(offset), r.varint("segment length")?)
        } else {
            let flagged = r.varint("segment length")?;
            let offset = match flagged & 1 {
                0 => end.checked_next_multiple_of(SEGMENT_ALIGN),
                _ => end.checked_add(r.varint("segment gap")?),
            };
            (offset, flagged >> 1)
        };
        let offset = offset.filter(|&o| o >= MAGIC.len() as u64);
        let seg_end = offset.and_then(|o| o.checked_add(len));
        let (Some(offset), Some(seg_end)) = (offset, seg_end.filter(|&e| e <= footer_offset))
        else {
            return Err(r.error(format!(
                "segment {s} (+{len} bytes) lies outside the data area [8, {footer_offset})"
            )));
        };
        segments.push(Segment { offset, len });
        end = seg_end;
    }
    let crc32 = r.u32_le("chunk checksum")?;
    r.finish()?;
    Ok(ChunkMeta {
        encoding,
        stats,
        segments,
        crc32,
    })
}
