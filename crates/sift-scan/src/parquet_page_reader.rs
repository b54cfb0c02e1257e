//! Sift's reader of a Parquet column chunk's pages (feature `parquet`): each page header is
//! read in the one bounded walk that also checks it ([`page_header`]); each body is a
//! slice of the chunk's bytes, or is decompressed with the `parquet` crate's codec into a
//! buffer of the size its header declares, once that size is checked against how far the
//! codec can expand the stored bytes ([`check_expansion`]).
//!
//! Written here rather than taken from the crate's `SerializedPageReader` because that
//! reader decodes each header a byte at a time through `std::io::Read`, after Sift's check
//! has already walked the same bytes: on pages of 20,000 rows (pyarrow's default) the two
//! passes took a fifth of a selective scan.

use std::collections::VecDeque;

use bytes::Bytes;
use parquet::basic::{Compression, Encoding};
use parquet::column::page::{Page, PageMetadata};
use parquet::compression::{Codec, CodecOptions, create_codec};
use parquet::errors::{ParquetError, Result};
use parquet::file::metadata::ColumnChunkMetaData;
use parquet::file::page_index::offset_index::PageLocation;

use crate::parquet_input::check_expansion;
use crate::parquet_thrift::{PageHeader, PageKind, page_header};

/// Bytes of a page's body loaded ahead when it is returned.
const PREFETCH: usize = 4 << 10;

/// The pages of one column chunk, read from its bytes in memory.
pub(crate) struct ChunkPages {
    bytes: Bytes,
    /// The file offset of `bytes[0]`.
    start: u64,
    compression: Compression,
    codec: Option<Box<dyn Codec>>,
    /// Where in `bytes` the next page starts, and its header once read.
    pos: usize,
    peeked: Option<(usize, PageHeader)>,
    /// The page index's data pages not yet read or skipped, as (offset in `bytes`, first
    /// row); pages before the first of them (a dictionary page) are read in turn.
    located: VecDeque<(usize, usize)>,
    /// The chunk's rows (the end of the last located page).
    rows: usize,
}

impl ChunkPages {
    /// The pages of `chunk` (`rows` rows), whose bytes `bytes` start at file offset
    /// `start`; its data pages at the page index's `locations` when given.
    pub(crate) fn new(
        start: u64,
        bytes: Bytes,
        chunk: &ColumnChunkMetaData,
        rows: usize,
        locations: Option<Vec<PageLocation>>,
    ) -> Result<ChunkPages> {
        let compression = chunk.compression();
        let codec = create_codec(compression, &CodecOptions::default())?;
        let mut located = VecDeque::new();
        for page in locations.unwrap_or_default() {
            let at = u64::try_from(page.offset)
                .ok()
                .and_then(|at| at.checked_sub(start))
                .and_then(|at| usize::try_from(at).ok())
                .filter(|&at| at < bytes.len());
            let (Some(at), Ok(first)) = (at, usize::try_from(page.first_row_index)) else {
                return Err(ParquetError::General(format!(
                    "the page index places a page at byte {} (first row {}), outside the \
                     column chunk at bytes {start}..{}",
                    page.offset,
                    page.first_row_index,
                    start + bytes.len() as u64
                )));
            };
            located.push_back((at, first));
        }
        Ok(ChunkPages {
            bytes,
            start,
            compression,
            codec,
            pos: 0,
            peeked: None,
            located,
            rows,
        })
    }

    /// The located page the reader has reached, if any.
    fn at_location(&self) -> Option<(usize, usize)> {
        self.located
            .front()
            .copied()
            .filter(|&(at, _)| self.pos >= at)
    }

    /// Moves past the next page: to the next located page, or to `end`, where the page
    /// read in turn ends.
    fn advance(&mut self, end: usize) {
        self.peeked = None;
        if self.at_location().is_some() {
            self.located.pop_front();
            self.pos = self
                .located
                .front()
                .map_or(self.bytes.len(), |&(next, _)| next);
        } else {
            self.pos = end;
        }
    }

    /// The header of the page at `at` (checked to lie, with its body, inside the chunk);
    /// `None` at the chunk's end.
    fn header(&mut self, at: usize) -> Result<Option<PageHeader>> {
        if let Some((p, h)) = self.peeked
            && p == at
        {
            return Ok(Some(h));
        }
        let Some(rest) = self.bytes.get(at..).filter(|rest| !rest.is_empty()) else {
            return Ok(None);
        };
        let offset = self.start + at as u64;
        let damaged =
            |e: String| ParquetError::General(format!("page header at byte {offset}: {e}"));
        let header = page_header(rest, offset).map_err(|e| damaged(e.message))?;
        let stored = usize::try_from(header.stored).ok();
        if header.raw < 0 || stored.is_none_or(|s| s > rest.len() - header.len) {
            return Err(damaged(format!(
                "a page of {} bytes ({} uncompressed) runs past the column chunk's {} bytes \
                 left",
                header.stored,
                header.raw,
                rest.len() - header.len
            )));
        }
        check_expansion(&header, self.compression, |skip, n| {
            let from = (skip as usize).min(rest.len());
            &rest[from..from + (n as usize).min(rest.len() - from)]
        })
        .map_err(damaged)?;
        self.peeked = Some((at, header));
        Ok(Some(header))
    }

    /// Where the next page starts: the located page reached, or the next in turn.
    fn next_at(&self) -> usize {
        self.at_location().map_or(self.pos, |(at, _)| at)
    }

    /// What the next page is without reading its body: a located page's rows come from
    /// the page index, without reading its header.
    pub(crate) fn peek_next_page(&mut self) -> Result<Option<PageMetadata>> {
        loop {
            if let Some((_, first)) = self.at_location() {
                let end = self.located.get(1).map_or(self.rows, |&(_, next)| next);
                return Ok(Some(PageMetadata {
                    num_rows: Some(end.saturating_sub(first)),
                    num_levels: None,
                    is_dict: false,
                }));
            }
            let at = self.pos;
            let Some(header) = self.header(at)? else {
                return Ok(None);
            };
            let (num_rows, num_levels, is_dict) = match header.page {
                PageKind::Data { num_values, .. } => (None, Some(num_values), false),
                PageKind::DataV2 {
                    num_values,
                    num_rows,
                    ..
                } => (Some(num_rows), Some(num_values), false),
                PageKind::Dictionary { .. } => (None, None, true),
                PageKind::Other => {
                    self.advance(at + header.len + header.stored as usize);
                    continue;
                }
            };
            let count = |n: i32| usize::try_from(n).ok();
            return Ok(Some(PageMetadata {
                num_rows: num_rows.and_then(count),
                num_levels: num_levels.and_then(count),
                is_dict,
            }));
        }
    }

    /// Moves past the next page without reading its body (nor, for a located page, its
    /// header).
    pub(crate) fn skip_next_page(&mut self) -> Result<()> {
        if self.at_location().is_some() {
            self.advance(self.pos);
            return Ok(());
        }
        let at = self.pos;
        if let Some(header) = self.header(at)? {
            self.advance(at + header.len + header.stored as usize);
        }
        Ok(())
    }

    /// The next page, its body decompressed; `None` at the chunk's end.
    pub(crate) fn get_next_page(&mut self) -> Result<Option<Page>> {
        loop {
            let at = self.next_at();
            let Some(header) = self.header(at)? else {
                return Ok(None);
            };
            let (body, end) = (at + header.len, at + header.len + header.stored as usize);
            let body = self.bytes.slice(body..end);
            self.advance(end);
            // The next header, whose place is known only now, is loaded while the caller
            // reads this page rather than when the next page is asked for. This page's
            // first bytes are loaded too: its levels, then its values' run headers, are
            // walked one run after another, each waiting for the one before; lines asked
            // for at once overlap their trips to memory. (4 KiB, about the levels of a
            // 20,000-row page, was measured faster than 1, 12 or 32 KiB.)
            let next = self.next_at();
            if let Some(ahead) = self.bytes.get(next..(next + 128).min(self.bytes.len())) {
                sift_bits::select::prefetch_bytes(ahead);
            }
            sift_bits::select::prefetch_bytes(&body[..body.len().min(PREFETCH)]);
            let offset = self.start + at as u64;
            let page = match header.page {
                PageKind::Other => continue,
                PageKind::Dictionary {
                    num_values,
                    encoding,
                    is_sorted,
                } => Page::DictionaryPage {
                    buf: self.body(&header, body, offset)?,
                    num_values: count(num_values, offset)?,
                    encoding: encoding_of(encoding, offset)?,
                    is_sorted,
                },
                PageKind::Data {
                    num_values,
                    encoding,
                    def_encoding,
                    rep_encoding,
                } => Page::DataPage {
                    buf: self.body(&header, body, offset)?,
                    num_values: count(num_values, offset)?,
                    encoding: encoding_of(encoding, offset)?,
                    def_level_encoding: encoding_of(def_encoding, offset)?,
                    rep_level_encoding: encoding_of(rep_encoding, offset)?,
                    statistics: None,
                },
                PageKind::DataV2 {
                    num_values,
                    num_nulls,
                    num_rows,
                    encoding,
                    def_len,
                    rep_len,
                    compressed,
                } => Page::DataPageV2 {
                    buf: self.body(&header, body, offset)?,
                    num_values: count(num_values, offset)?,
                    encoding: encoding_of(encoding, offset)?,
                    num_nulls: count(num_nulls, offset)?,
                    num_rows: count(num_rows, offset)?,
                    def_levels_byte_len: count(def_len, offset)?,
                    rep_levels_byte_len: count(rep_len, offset)?,
                    is_compressed: compressed,
                    statistics: None,
                },
            };
            return Ok(Some(page));
        }
    }

    /// A page's body as its values' decoder reads it: `stored` as it is, or (when the
    /// chunk has a codec and the page says its values are compressed) its uncompressed
    /// levels followed by its values decompressed, exactly `header.raw` bytes in all.
    fn body(&mut self, header: &PageHeader, stored: Bytes, offset: u64) -> Result<Bytes> {
        let Some(codec) = self.codec.as_mut().filter(|_| header.compressed()) else {
            return Ok(stored);
        };
        let damaged = |e: String| ParquetError::General(format!("page at byte {offset}: {e}"));
        let raw = header.raw as usize;
        let levels = usize::try_from(header.levels()).unwrap_or(usize::MAX);
        if levels > stored.len() || levels > raw {
            return Err(damaged(format!(
                "{levels} bytes of levels in a page of {} bytes ({raw} uncompressed)",
                stored.len()
            )));
        }
        let mut out = Vec::with_capacity(raw);
        out.extend_from_slice(&stored[..levels]);
        if raw > levels {
            codec
                .decompress(&stored[levels..], &mut out, Some(raw - levels))
                .map_err(|e| damaged(e.to_string()))?;
        }
        if out.len() != raw {
            return Err(damaged(format!(
                "decompresses to {} bytes, not the {raw} its header declares",
                out.len()
            )));
        }
        Ok(Bytes::from(out))
    }
}

/// A count a page header states, which must not be negative.
fn count(n: i32, offset: u64) -> Result<u32> {
    u32::try_from(n).map_err(|_| {
        ParquetError::General(format!(
            "page header at byte {offset} states a count of {n}"
        ))
    })
}

/// The encoding numbered `n` in `parquet.thrift`.
fn encoding_of(n: i32, offset: u64) -> Result<Encoding> {
    #[allow(deprecated)]
    let bit_packed = Encoding::BIT_PACKED;
    Ok(match n {
        0 => Encoding::PLAIN,
        2 => Encoding::PLAIN_DICTIONARY,
        3 => Encoding::RLE,
        4 => bit_packed,
        5 => Encoding::DELTA_BINARY_PACKED,
        6 => Encoding::DELTA_LENGTH_BYTE_ARRAY,
        7 => Encoding::DELTA_BYTE_ARRAY,
        8 => Encoding::RLE_DICTIONARY,
        9 => Encoding::BYTE_STREAM_SPLIT,
        _ => {
            return Err(ParquetError::General(format!(
                "page header at byte {offset} names encoding {n}, which Parquet does not define"
            )));
        }
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};
    use parquet::arrow::ArrowWriter;
    use parquet::basic::{BrotliLevel, GzipLevel, ZstdLevel};
    use parquet::column::page::PageReader;
    use parquet::file::metadata::{PageIndexPolicy, ParquetMetaDataReader};
    use parquet::file::properties::{WriterProperties, WriterVersion};
    use parquet::file::serialized_reader::SerializedPageReader;

    use super::*;

    /// What a page holds, for comparing two readers' pages.
    fn summary(page: &Page) -> String {
        let extra = match page {
            Page::DataPage {
                def_level_encoding,
                rep_level_encoding,
                ..
            } => format!("{def_level_encoding} {rep_level_encoding}"),
            Page::DataPageV2 {
                num_nulls,
                num_rows,
                def_levels_byte_len,
                rep_levels_byte_len,
                is_compressed,
                ..
            } => format!(
                "{num_nulls} {num_rows} {def_levels_byte_len} {rep_levels_byte_len} \
                 {is_compressed}"
            ),
            Page::DictionaryPage { is_sorted, .. } => format!("{is_sorted}"),
        };
        format!(
            "{} {} {} {extra} {:?}",
            page.page_type(),
            page.num_values(),
            page.encoding(),
            page.buffer()
        )
    }

    /// Every page of every column chunk, read by [`ChunkPages`] and by the `parquet`
    /// crate's reader, with and without the page index, every other page skipped after
    /// a peek in a second pass: the same pages, under every codec and both page versions.
    #[test]
    fn pages_match_the_crates_reader() {
        let n = 5_000i64;
        let ints = Int64Array::from_iter((0..n).map(|i| (i % 7 != 0).then_some(i % 300)));
        let strs =
            StringArray::from_iter((0..n).map(|i| (i % 5 != 0).then(|| format!("s{}", i % 40))));
        let batch = RecordBatch::try_from_iter([
            ("i", Arc::new(ints) as ArrayRef),
            ("s", Arc::new(strs) as ArrayRef),
        ])
        .unwrap();
        let codecs = [
            Compression::UNCOMPRESSED,
            Compression::SNAPPY,
            Compression::GZIP(GzipLevel::default()),
            Compression::LZ4,
            Compression::LZ4_RAW,
            Compression::ZSTD(ZstdLevel::default()),
            Compression::BROTLI(BrotliLevel::default()),
        ];
        for codec in codecs {
            for (version, dictionary) in [
                (WriterVersion::PARQUET_1_0, true),
                (WriterVersion::PARQUET_2_0, false),
                (WriterVersion::PARQUET_2_0, true),
            ] {
                let props = WriterProperties::builder()
                    .set_compression(codec)
                    .set_writer_version(version)
                    .set_dictionary_enabled(dictionary)
                    .set_data_page_size_limit(512)
                    .set_write_batch_size(64)
                    .set_max_row_group_row_count(Some(3_000))
                    .build();
                let mut file = Vec::new();
                let mut w = ArrowWriter::try_new(&mut file, batch.schema(), Some(props)).unwrap();
                w.write(&batch).unwrap();
                w.close().unwrap();
                let file = Bytes::from(file);
                let md = ParquetMetaDataReader::new()
                    .with_page_index_policy(PageIndexPolicy::Required)
                    .parse_and_finish(&file)
                    .unwrap();
                let index = md.offset_index().unwrap();
                for (rg, group) in md.row_groups().iter().enumerate() {
                    let rows = group.num_rows() as usize;
                    for (leaf, chunk) in group.columns().iter().enumerate() {
                        let (start, len) = chunk.byte_range();
                        let bytes = file.slice(start as usize..(start + len) as usize);
                        let located = index[rg][leaf].page_locations().clone();
                        for locations in [None, Some(located)] {
                            let case = format!("{codec} {version:?} {dictionary} {rg} {leaf}");
                            let crate_pages = || {
                                let reader = Arc::new(file.clone());
                                SerializedPageReader::new(reader, chunk, rows, locations.clone())
                                    .unwrap()
                            };
                            let ours = || {
                                ChunkPages::new(
                                    start,
                                    bytes.clone(),
                                    chunk,
                                    rows,
                                    locations.clone(),
                                )
                                .unwrap()
                            };
                            let (mut theirs, mut mine) = (crate_pages(), ours());
                            let mut count = 0;
                            loop {
                                let (a, b) = (
                                    theirs.get_next_page().unwrap(),
                                    mine.get_next_page().unwrap(),
                                );
                                assert_eq!(
                                    a.as_ref().map(summary),
                                    b.as_ref().map(summary),
                                    "{case}"
                                );
                                if a.is_none() {
                                    break;
                                }
                                count += 1;
                            }
                            assert!(count > 1, "{case}: {count} pages");
                            let (mut theirs, mut mine) = (crate_pages(), ours());
                            for i in 0.. {
                                let (a, b) = (
                                    theirs.peek_next_page().unwrap(),
                                    mine.peek_next_page().unwrap(),
                                );
                                let meta = |m: Option<PageMetadata>| {
                                    m.map(|m| (m.num_rows, m.num_levels, m.is_dict))
                                };
                                let (a, b) = (meta(a), meta(b));
                                assert_eq!(a, b, "{case} page {i}");
                                if a.is_none() {
                                    break;
                                }
                                if i % 2 == 1 {
                                    theirs.skip_next_page().unwrap();
                                    mine.skip_next_page().unwrap();
                                } else {
                                    let (a, b) = (
                                        theirs.get_next_page().unwrap(),
                                        mine.get_next_page().unwrap(),
                                    );
                                    assert_eq!(
                                        a.as_ref().map(summary),
                                        b.as_ref().map(summary),
                                        "{case}"
                                    );
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    /// A page whose stored size runs past the chunk, or whose header names an unknown
    /// encoding, is an error naming the header's file offset.
    #[test]
    fn damaged_headers_name_their_offset() {
        // type 0, sizes 4 and 3, data page header {7 values, encodings 8, 3, 3}.
        let header = [
            0x15, 0, 0x15, 8, 0x15, 6, 0x2C, 0x15, 14, 0x15, 16, 0x15, 6, 0x15, 6, 0, 0,
        ];
        let batch =
            RecordBatch::try_from_iter([("i", Arc::new(Int64Array::from(vec![1i64])) as ArrayRef)])
                .unwrap();
        let mut file = Vec::new();
        let mut w = ArrowWriter::try_new(&mut file, batch.schema(), None).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
        let md = ParquetMetaDataReader::new()
            .parse_and_finish(&Bytes::from(file))
            .unwrap();
        let chunk = md.row_group(0).column(0);
        let read = |bytes: Vec<u8>| {
            let mut pages = ChunkPages::new(100, Bytes::from(bytes), chunk, 7, None).unwrap();
            pages.get_next_page().map(|p| p.map(|p| summary(&p)))
        };
        let mut whole = header.to_vec();
        whole.extend([1, 2, 3]);
        assert!(
            read(whole.clone())
                .unwrap()
                .unwrap()
                .starts_with("DATA_PAGE 7 RLE_DICTIONARY")
        );
        let short = read(header.to_vec()).unwrap_err().to_string();
        assert!(
            short.contains("page header at byte 100") && short.contains("runs past"),
            "{short}"
        );
        whole[10] = 40;
        let unknown = read(whole).unwrap_err().to_string();
        assert!(
            unknown.contains("byte 100") && unknown.contains("encoding 20"),
            "{unknown}"
        );
    }
}
