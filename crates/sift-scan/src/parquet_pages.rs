//! Parquet column chunks read page by page as Sift chunks (feature `parquet`), so that the
//! engine filters and selects on Parquet's encoded pages as it does on Sift's: each data
//! page becomes a [`Chunk`] over the page's own bytes, with an encoding tree built from
//! the page header, and the registry's encodings do the work:
//!
//! - a dictionary-encoded page is `dict` over the dictionary page's values (`plain`) and
//!   the page's RLE/bit-packed index stream (`hybrid`): a predicate is evaluated once per
//!   dictionary entry and applied to the codes; a selection unpacks only selected codes;
//! - a PLAIN page of fixed-width values is `plain`, read in place; decimals of at most 18
//!   digits are their unscaled integers (INT32, INT64, or FIXED_LEN_BYTE_ARRAY read by a
//!   `be` node, which widens from big-endian only the values asked for);
//! - byte arrays (strings, binary) are `byte_arrays`, read in place (each a length, then
//!   its bytes): a dictionary page's values, decoded once per column chunk so that string
//!   predicates run once per dictionary entry, or a PLAIN page's, of which a selection
//!   copies only the selected strings;
//! - definition levels (nullable columns) are a `hybrid` validity of 1-bit levels;
//! - a page in a DELTA encoding or BYTE_STREAM_SPLIT is decoded when read into the bytes
//!   of a PLAIN page of the same values ([`crate::parquet_unpack`]) and read as that.
//!
//! [`ChunkPages`] reads the pages' headers and decompresses their bodies (with the
//! `parquet` crate's codecs; page v1 and v2); what this module adds is reading their
//! contents in place. A column chunk with
//! a page this module does not read (other encodings, nested levels, types whose Parquet
//! width differs from the Arrow one) is left to the `parquet` crate's Arrow reader whole:
//! [`PagedColumn::read`] answers `None`.

use std::ops::Range;

use arrow_array::ArrayRef;
use arrow_schema::{DataType, Field};
use bytes::Bytes;
use parquet::basic::{Encoding, Type as PhysicalType};
use parquet::column::page::Page;
use parquet::file::metadata::ParquetMetaData;
use parquet::schema::types::ColumnDescriptor;
use sift_encoding::encodings::{BigEndian, ByteArrays, Dict, Hybrid, Plain};
use sift_encoding::{
    Bitmap, Chunk, ColumnEncoding, DictionaryMemo, Node, Validity, ValuePredicate,
};

use crate::error::{Error, Result};
use crate::order::LeafCost;
use crate::parquet_page_reader::ChunkPages;
use crate::parquet_source::guarded;
use crate::scan::Read;

/// One column chunk of one row group, as Sift chunks (one per data page read), seen
/// through the rows asked for: all of the row group's, or some ranges of them (the pages
/// holding none of those rows are skipped unread and not decompressed).
pub(crate) struct PagedColumn {
    data_type: DataType,
    pages: Vec<EncodedPage>,
    /// The rows asked for (the column's rows are these, in order).
    rows: usize,
    /// What errors name: file, row group, column.
    place: String,
}

/// One data page: its rows in the row group, its encoding tree and buffers, and which of
/// its rows are asked for.
struct EncodedPage {
    rows: Range<usize>,
    encoding: ColumnEncoding,
    buffers: Vec<Bytes>,
    /// The rows asked for, as ranges of the page's rows, ascending.
    wanted: Vec<Range<usize>>,
    /// Values still in a DELTA or BYTE_STREAM_SPLIT encoding, whose PLAIN bytes take
    /// buffer 0 once decoded.
    packed: Option<Packed>,
}

/// A data page's values in an encoding decoded into the PLAIN layout
/// ([`unpack`](crate::parquet_unpack::unpack)) the first time they are read: a page read
/// for its levels alone, or holding no selected row, is never decoded.
struct Packed {
    encoding: Encoding,
    layout: Layout,
    bytes: Bytes,
    count: usize,
    /// The page's number in its column chunk, for errors.
    page: usize,
    plain: std::cell::OnceCell<std::result::Result<Bytes, String>>,
}

impl Packed {
    /// The values as a PLAIN page holds them, decoded on first use.
    fn plain(&self) -> std::result::Result<&Bytes, &str> {
        let plain = self.plain.get_or_init(|| {
            let values = page_values(
                self.encoding,
                self.layout,
                self.bytes.clone(),
                self.count,
                None,
            )?;
            match values.and_then(|(_, buffers)| buffers.into_iter().next()) {
                Some(plain) => Ok(plain),
                None => Err(format!(
                    "{:?} values that are not decoded here",
                    self.encoding
                )),
            }
        });
        plain.as_ref().map_err(String::as_str)
    }
}

impl EncodedPage {
    /// Whether every row of the page is asked for.
    fn whole(&self) -> bool {
        matches!(self.wanted.as_slice(), [r] if r.len() == self.rows.len())
    }

    /// The bits of `bm` (one per page row) at the rows asked for, appended to `out`.
    fn append_wanted(&self, bm: &Bitmap, out: &mut Bitmap) {
        if self.whole() {
            out.append(bm);
        } else {
            for r in &self.wanted {
                out.append(&bm.slice(r.clone()));
            }
        }
    }

    /// The page rows to decode, given `sel` over the asked rows from `at` (the page's
    /// first asked row) on: `None` for every page row.
    fn selection(&self, sel: Option<&Bitmap>, at: usize) -> Option<Bitmap> {
        if sel.is_none() && self.whole() {
            return None;
        }
        Some(spread_selection(self.rows.len(), &self.wanted, sel, at))
    }
}

/// One bit per row of `total` rows, set at the rows of `asked` (sorted, disjoint ranges,
/// cut at `total`), of them only those whose bit is set in `sel` if given: `sel` holds one
/// bit per asked row, in order, from bit `from` on.
pub(crate) fn spread_selection(
    total: usize,
    asked: &[Range<usize>],
    sel: Option<&Bitmap>,
    from: usize,
) -> Bitmap {
    let mut out = Bitmap::zeros(0);
    let mut at = from;
    for r in asked {
        let r = r.start.min(total)..r.end.min(total);
        out.append(&Bitmap::zeros(r.start.saturating_sub(out.len())));
        let part = match sel {
            Some(s) => s.slice(at..at + r.len()),
            None => Bitmap::ones(r.len()),
        };
        // A first range from row 0 (a whole page or row group asked for) is the part
        // itself, not a copy of it.
        if out.is_empty() {
            out = part;
        } else {
            out.append(&part);
        }
        at += r.len();
    }
    out.append(&Bitmap::zeros(total.saturating_sub(out.len())));
    out
}

/// Checks that every data page of the repeated column chunk `(rg, leaf)`, whose bytes
/// (from file offset `start`) are `bytes`, holds as many repetition levels as its header
/// counts values. The `parquet` crate's reader checks this when it reads a page, but not
/// when it skips rows inside one: a damaged page whose levels end early makes that skip
/// loop forever. So a selection is pushed into a repeated column only after this check;
/// it decompresses version-1 pages, whose levels are compressed with the values.
pub(crate) fn check_repetition_levels(
    (start, bytes): (u64, Bytes),
    md: &ParquetMetaData,
    (rg, leaf): (usize, usize),
    place: &str,
) -> Result<()> {
    let err = |e: &dyn std::fmt::Display| Error::Parquet(format!("{place}: {e}"));
    let descr = md.file_metadata().schema_descr().column(leaf);
    let max = descr.max_rep_level();
    let Ok(max) = u16::try_from(max) else {
        return Err(err(&format!("repetition level {max} out of range")));
    };
    if max == 0 {
        return Ok(());
    }
    let bits = (u16::BITS - max.leading_zeros()) as u8;
    let group = md
        .row_groups()
        .get(rg)
        .ok_or_else(|| err(&"no such row group"))?;
    let rows = usize::try_from(group.num_rows()).map_err(|_| err(&"negative row count"))?;
    let mut pages = guarded(|| ChunkPages::new(start, bytes, group.column(leaf), rows, None))
        .map_err(|e| err(&e))?;
    let mut page_no = 0usize;
    while let Some(page) =
        guarded(|| pages.get_next_page()).map_err(|e| err(&format!("page {page_no}: {e}")))?
    {
        // The page's repetition levels and its value count.
        let (levels, count) = match page {
            Page::DictionaryPage { .. } => continue,
            Page::DataPage {
                buf,
                num_values,
                rep_level_encoding,
                ..
            } => {
                // The deprecated BIT_PACKED levels are read by a decoder that stops at
                // the value count.
                if rep_level_encoding != Encoding::RLE {
                    page_no += 1;
                    continue;
                }
                (v1_levels(&buf, "repetition").map(|(l, _)| l), num_values)
            }
            Page::DataPageV2 {
                buf,
                num_values,
                rep_levels_byte_len,
                ..
            } => {
                let levels = split_levels(&buf, 0, rep_levels_byte_len as usize, "repetition");
                (levels.map(|(l, _)| l), num_values)
            }
        };
        let checked = levels
            .and_then(|l| sift_encoding::encodings::hybrid::check_stream(bits, &l, count as usize));
        checked.map_err(|e| err(&format!("page {page_no}: repetition levels: {e}")))?;
        page_no += 1;
    }
    Ok(())
}

/// The RLE levels at the start of a version-1 page's `buf` (a 4-byte little-endian
/// length, then the run stream) and the bytes after them; `what` names the levels in
/// errors.
pub(crate) fn v1_levels(buf: &Bytes, what: &str) -> std::result::Result<(Bytes, Bytes), String> {
    let Some(len) = buf.get(..4) else {
        return Err(format!("{what} levels cut short"));
    };
    let len = u32::from_le_bytes([len[0], len[1], len[2], len[3]]) as usize;
    split_levels(buf, 4, len, what)
}

/// The `len` bytes of levels at offset `at` of a page's `buf` (`at <= buf.len()`) and the
/// bytes after them; `what` names the levels in errors.
pub(crate) fn split_levels(
    buf: &Bytes,
    at: usize,
    len: usize,
    what: &str,
) -> std::result::Result<(Bytes, Bytes), String> {
    if len > buf.len() - at {
        return Err(format!(
            "{what} levels of {len} bytes in a page of {}",
            buf.len()
        ));
    }
    Ok((buf.slice(at..at + len), buf.slice(at + len..)))
}

/// How a column's values are laid out in PLAIN pages.
#[derive(Clone, Copy)]
pub(crate) enum Layout {
    /// Fixed-width values of `width` bytes (4-byte ones are integers, whose dictionary
    /// values are widened to the `i64` cascade's 8 bytes).
    Fixed { width: usize },
    /// Byte arrays, each a 4-byte little-endian length and its bytes.
    Bytes,
    /// Decimals of at most 18 digits as `width`-byte big-endian two's complement
    /// (FIXED_LEN_BYTE_ARRAY, 1–8 bytes), read in place by a `be` node as the unscaled
    /// values the `i64` cascade holds for such a decimal column.
    BigEndian { width: usize },
    /// Booleans, one bit each (PLAIN), or a length-prefixed RLE/bit-packed hybrid run
    /// stream of 1-bit values (RLE).
    Bits,
    /// 4-byte floats, read in place by a 4-byte `plain` node (data and dictionary pages
    /// alike), whose values the double domain widens exactly.
    Float32,
    /// Unsigned integers of `width` (4 or 8) bytes (INT32 or INT64 annotated unsigned):
    /// PLAIN pages read in the column's own type; dictionary values zero-extended to the
    /// `i64` cascade's 8 bytes, or (8 bytes) kept where every one fits `i64`, else the
    /// chunk is left to the fallback.
    Unsigned { width: usize },
}

/// The layout of Arrow type `dt` stored as leaf `descr`, when the Arrow values are the
/// Parquet values' own bytes: integers (signed as plain integer nodes of the cascade are;
/// 8- and 16-bit integers, unsigned too, are INT32 values within their range; wider
/// unsigned ones read in their own type), floats, decimals of at most 18 digits (held as
/// their unscaled 64-bit integers, as Sift stores them) or booleans.
pub(crate) fn layout(dt: &DataType, descr: &ColumnDescriptor) -> Option<Layout> {
    use DataType::*;
    let width = match (descr.physical_type(), dt) {
        (
            PhysicalType::INT32,
            Int8 | Int16 | Int32 | UInt8 | UInt16 | Date32 | Time32(_) | Decimal128(..),
        ) => 4,
        (PhysicalType::BOOLEAN, Boolean) => return Some(Layout::Bits),
        (PhysicalType::INT64, Int64 | Date64 | Time64(_) | Duration(_) | Timestamp(..)) => 8,
        (PhysicalType::INT64, Decimal128(p, _)) if *p <= 18 => 8,
        (PhysicalType::DOUBLE, Float64) => 8,
        (PhysicalType::FLOAT, Float32) => return Some(Layout::Float32),
        (PhysicalType::INT32, UInt32) => return Some(Layout::Unsigned { width: 4 }),
        (PhysicalType::INT64, UInt64) => return Some(Layout::Unsigned { width: 8 }),
        (PhysicalType::FIXED_LEN_BYTE_ARRAY, Decimal128(p, _))
            if *p <= 18 && (1..=8).contains(&descr.type_length()) =>
        {
            return Some(Layout::BigEndian {
                width: descr.type_length() as usize,
            });
        }
        (
            PhysicalType::BYTE_ARRAY,
            Utf8 | LargeUtf8 | Utf8View | Binary | LargeBinary | BinaryView,
        ) => return Some(Layout::Bytes),
        _ => return None,
    };
    Some(Layout::Fixed { width })
}

/// The layout of the values of leaf `descr` read as Arrow field `field`, when this module
/// may read its pages in place: a flat column (no repetition, at most one definition
/// level) of a type [`layout`] knows.
fn flat_layout(descr: &ColumnDescriptor, field: &Field) -> Option<Layout> {
    if descr.max_rep_level() > 0 || descr.max_def_level() > 1 {
        return None;
    }
    layout(field.data_type(), descr)
}

/// Whether the pages of a column chunk of leaf `descr` (Arrow field `field`) whose pages
/// use `encodings` can be read in place: else the `parquet` crate decodes it.
pub(crate) fn reads_in_place(
    descr: &ColumnDescriptor,
    field: &Field,
    encodings: impl Iterator<Item = Encoding>,
) -> bool {
    flat_layout(descr, field).is_some() && encodings_in_place(encodings)
}

/// Whether every one of a column chunk's `encodings` is one whose pages this module reads
/// (values PLAIN or dictionary-encoded, read in place, or in a DELTA encoding or
/// BYTE_STREAM_SPLIT, decoded to PLAIN values first; levels RLE).
pub(crate) fn encodings_in_place(mut encodings: impl Iterator<Item = Encoding>) -> bool {
    encodings.all(|e| {
        matches!(
            e,
            Encoding::PLAIN | Encoding::PLAIN_DICTIONARY | Encoding::RLE_DICTIONARY | Encoding::RLE
        ) || crate::parquet_unpack::unpacks(e)
    })
}

/// A dictionary page's values as the dictionary's `values` child holds them.
pub(crate) enum DictValues {
    /// Fixed-width values (`plain`, or `be` for big-endian decimals).
    Fixed {
        values: Bytes,
        width: u32,
        big_endian: bool,
    },
    /// Byte strings, each a 4-byte length and its bytes (`byte_arrays`).
    Bytes(Bytes),
}

impl PagedColumn {
    /// Reads column `col` (Parquet leaf `leaf`, Arrow field `field`) of row group `rg`
    /// from `bytes`, the file's bytes `start..` holding the column chunk, at the rows
    /// `want` (sorted, disjoint; all rows if `None`); `None` when some page read or the
    /// type is not one this module reads in place. With an offset index, pages holding
    /// none of the wanted rows are skipped without being read or decompressed.
    pub(crate) fn read(
        (start, bytes): (u64, Bytes),
        md: &ParquetMetaData,
        (rg, leaf): (usize, usize),
        field: &Field,
        want: Option<&[Range<usize>]>,
        place: String,
    ) -> Result<Option<PagedColumn>> {
        let err = |e: &dyn std::fmt::Display| Error::Parquet(format!("{place}: {e}"));
        let descr = md.file_metadata().schema_descr().column(leaf);
        let Some(layout) = flat_layout(&descr, field) else {
            return Ok(None);
        };
        let nullable = descr.max_def_level() == 1;
        let group = md
            .row_groups()
            .get(rg)
            .ok_or_else(|| err(&"no such row group"))?;
        let chunk = group.column(leaf);
        let rows = usize::try_from(group.num_rows()).map_err(|_| err(&"negative row count"))?;
        let all = 0..rows;
        let want = want.unwrap_or(std::slice::from_ref(&all));
        let locations = md
            .offset_index()
            .and_then(|o| o.get(rg)?.get(leaf))
            .map(|o| o.page_locations().clone());
        let mut pages = guarded(|| ChunkPages::new(start, bytes, chunk, rows, locations))
            .map_err(|e| err(&e))?;
        let mut dictionary: Option<(DictValues, usize)> = None;
        let mut out = Vec::new();
        let mut row = 0usize;
        let mut page_no = 0usize;
        loop {
            let perr = |e: &dyn std::fmt::Display| err(&format!("page {page_no}: {e}"));
            let step = next_page(
                &mut pages,
                row,
                |rows| overlaps(want, rows),
                layout,
                &mut dictionary,
            )
            .map_err(|e| perr(&e))?;
            let page = match step {
                None => return Ok(None),
                Some(PageStep::End) => break,
                Some(PageStep::Dictionary) => continue,
                Some(PageStep::Skipped(n)) => {
                    row = row.saturating_add(n);
                    page_no += 1;
                    continue;
                }
                Some(PageStep::Data(page, _)) => page,
            };
            let (values, count, encoding, levels) = match page {
                // `next_page` reads dictionary pages itself.
                Page::DictionaryPage { .. } => return Ok(None),
                Page::DataPage {
                    buf,
                    num_values,
                    encoding,
                    def_level_encoding,
                    ..
                } => {
                    let count = num_values as usize;
                    let (levels, values) = match nullable {
                        false => (None, buf),
                        true => {
                            if def_level_encoding != Encoding::RLE {
                                return Ok(None);
                            }
                            let (levels, values) =
                                v1_levels(&buf, "definition").map_err(|e| perr(&e))?;
                            (Some(levels), values)
                        }
                    };
                    (values, count, encoding, levels)
                }
                Page::DataPageV2 {
                    buf,
                    num_values,
                    encoding,
                    num_rows,
                    def_levels_byte_len,
                    rep_levels_byte_len,
                    ..
                } => {
                    let count = num_values as usize;
                    if num_rows != num_values || rep_levels_byte_len != 0 {
                        return Ok(None);
                    }
                    let (levels, values) =
                        split_levels(&buf, 0, def_levels_byte_len as usize, "definition")
                            .map_err(|e| perr(&e))?;
                    (values, count, encoding, nullable.then_some(levels))
                }
            };
            let page_rows = row..row.saturating_add(count);
            if page_rows.end > rows {
                return Err(perr(&format!(
                    "pages hold more than the row group's {rows} rows"
                )));
            }
            let wanted: Vec<Range<usize>> =
                crate::prune::intersect(want, std::slice::from_ref(&page_rows))
                    .into_iter()
                    .map(|r| r.start - page_rows.start..r.end - page_rows.start)
                    .collect();
            // A page read only to count its rows (no offset index) is not decoded.
            if wanted.is_empty() {
                page_no += 1;
                row = page_rows.end;
                continue;
            }
            // Values to decode into the PLAIN layout first are so when read; until then
            // the page's tree is a PLAIN page's, its values buffer empty.
            let packed = crate::parquet_unpack::applies(encoding, layout).then(|| Packed {
                encoding,
                layout,
                bytes: values.clone(),
                count,
                page: page_no,
                plain: std::cell::OnceCell::new(),
            });
            let (read_as, values) = match packed {
                Some(_) => (Encoding::PLAIN, Bytes::new()),
                None => (encoding, values),
            };
            let Some((nodes, mut buffers)) =
                page_values(read_as, layout, values, count, dictionary.as_ref())
                    .map_err(|e| perr(&e))?
            else {
                return Ok(None);
            };
            let encoding = with_validity(nodes, levels, &mut buffers);
            page_no += 1;
            row = page_rows.end;
            out.push(EncodedPage {
                rows: page_rows,
                encoding,
                buffers,
                wanted,
                packed,
            });
        }
        if row != rows {
            return Err(err(&format!(
                "pages hold {row} rows of the row group's {rows}"
            )));
        }
        let asked: usize = out
            .iter()
            .flat_map(|p| &p.wanted)
            .map(ExactSizeIterator::len)
            .sum();
        let expected: usize = want
            .iter()
            .map(|r| r.end.min(rows).saturating_sub(r.start))
            .sum();
        if asked != expected {
            return Err(err(&format!(
                "pages hold {asked} of the {expected} rows asked for"
            )));
        }
        let mut column = PagedColumn {
            data_type: field.data_type().clone(),
            pages: out,
            rows: asked,
            place,
        };
        // Pages whose validity says they hold no value, or every value, are marked so
        // (levels are then never decoded again).
        column.settle_validity()?;
        Ok(Some(column))
    }

    /// Decodes each page's definition levels once: the validity becomes `AllValid` or
    /// `AllNull` where the levels say so, else a `bitmap` node over the decoded bits
    /// (every later filter and projection of the page asks for its validity, and copying
    /// a bitmap is far cheaper than parsing the level runs again).
    fn settle_validity(&mut self) -> Result<()> {
        for i in 0..self.pages.len() {
            let Validity::Encoded { root } = self.pages[i].encoding.validity else {
                continue;
            };
            let rows = self.pages[i].rows.len();
            let valid = self.levels(i).validity().map_err(|e| self.error(i, e))?;
            let ones = valid.as_ref().map_or(rows, Bitmap::count_ones);
            let page = &mut self.pages[i];
            if ones == rows {
                page.encoding.validity = Validity::AllValid;
                page.encoding.nodes.pop();
            } else if ones == 0 {
                page.encoding = ColumnEncoding {
                    validity: Validity::AllNull,
                    nodes: Vec::new(),
                };
                page.packed = None;
            } else if let (Some(valid), Some(Node::Hybrid(levels))) =
                (valid, page.encoding.nodes.get(root as usize))
            {
                let buffer = levels.buffer;
                page.buffers[buffer as usize] = if cfg!(target_endian = "little") {
                    Bytes::from_owner(LeWords(valid.into_words()))
                } else {
                    Bytes::from(valid.to_le_bytes())
                };
                page.encoding.nodes[root as usize] =
                    Node::Bitmap(sift_encoding::encodings::Bitmap { buffer });
            }
        }
        Ok(())
    }

    /// Page `i` as a Sift chunk, its values decoded into the PLAIN layout first where
    /// they are still packed.
    fn chunk(&self, i: usize) -> Result<Chunk<'_>> {
        let p = &self.pages[i];
        let mut buffers: Vec<&[u8]> = p.buffers.iter().map(|b| b.as_ref()).collect();
        if let Some(packed) = &p.packed {
            let plain = packed.plain().map_err(|e| {
                Error::Parquet(format!("{}: page {}: {e}", self.place, packed.page))
            })?;
            buffers[0] = plain.as_ref();
        }
        Ok(Chunk::new(
            &p.encoding,
            &self.data_type,
            p.rows.len(),
            buffers,
        ))
    }

    /// Page `i` as a Sift chunk for its validity alone (packed values left as they are).
    fn levels(&self, i: usize) -> Chunk<'_> {
        let p = &self.pages[i];
        let buffers = p.buffers.iter().map(|b| b.as_ref()).collect();
        Chunk::new(&p.encoding, &self.data_type, p.rows.len(), buffers)
    }

    fn error(&self, page: usize, e: impl std::fmt::Display) -> Error {
        Error::Parquet(format!("{}: page {page}: {e}", self.place))
    }

    fn rows(&self) -> usize {
        self.rows
    }

    /// An error unless `sel` (if given) holds one bit per row read.
    fn check_selection(&self, sel: Option<&Bitmap>) -> Result<()> {
        match sel {
            Some(s) if s.len() != self.rows() => Err(Error::Invalid(format!(
                "{}: a selection of {} rows over {}",
                self.place,
                s.len(),
                self.rows()
            ))),
            _ => Ok(()),
        }
    }

    /// The data pages.
    pub(crate) fn pages(&self) -> usize {
        self.pages.len()
    }

    /// The data pages decoded to PLAIN values first (DELTA, BYTE_STREAM_SPLIT), so far.
    pub(crate) fn unpacked(&self) -> usize {
        (self.pages.iter())
            .filter(|p| p.packed.as_ref().is_some_and(|k| k.plain.get().is_some()))
            .count()
    }

    /// The rows of `sel` (every row if `None`) whose value is non-null and satisfies
    /// `p`, page by page: a page is filtered on its encoded values, or, where the cost
    /// model says its rows still selected cost less tested alone, only their values are
    /// decoded and tested. Returns the rows, the number of values decoded, and the cost of
    /// `p` per row over the pages (weighed by their rows), for ordering the next row
    /// group's filters. With `read`, each page's rows that pass are also decoded as
    /// [`decode_pieces`](Self::decode_pieces) would decode them, right after the page is
    /// tested, while its bytes are in cache: the pieces come fourth.
    pub(crate) fn filter_within(
        &self,
        p: &ValuePredicate,
        sel: Option<&Bitmap>,
        read: Option<Read>,
    ) -> Result<(Bitmap, usize, LeafCost, Option<Vec<ArrayRef>>)> {
        self.check_selection(sel)?;
        let memo = DictionaryMemo::default();
        let (mut out, mut decoded, mut at) = (Bitmap::zeros(0), 0, 0);
        let mut costs = Vec::with_capacity(self.pages.len());
        let mut pieces = read.map(|_| Vec::new());
        for (i, page) in self.pages.iter().enumerate() {
            let asked = page
                .wanted
                .iter()
                .map(ExactSizeIterator::len)
                .sum::<usize>();
            let from = at;
            at += asked;
            let rows = page.rows.len();
            let n = sel.map_or(asked, |s| s.count_ones_in(from..at));
            let cost = LeafCost::of(&page.encoding, Some(p));
            costs.push((cost, rows));
            if n == 0 {
                out.append(&Bitmap::zeros(asked));
                continue;
            }
            let chunk = self
                .chunk(i)?
                .with_memo(shared_memo(&memo, self.pages.len()));
            // Rows scanned are cut to `sel` once, at the end.
            let tested = if chunk.filters_encoded() && !cost.select_first(n, rows) {
                chunk.filter_memo(p, &memo).map_err(|e| self.error(i, e))?
            } else {
                let s = page.selection(sel, from).filter(|s| n < s.len());
                let (rows, n) =
                    crate::eval::test_decoded(&chunk, p, s.as_ref(), |e| self.error(i, e))?;
                decoded += n;
                rows
            };
            page.append_wanted(&tested, &mut out);
            if let (Some(read), Some(pieces)) = (read, pieces.as_mut()) {
                // The page's rows that pass, of those asked for and still selected.
                let mut passed = out.slice(from..at);
                if let Some(s) = sel {
                    passed.and_assign(&s.slice(from..at));
                }
                let s = page.selection(Some(&passed), 0);
                let n = s.as_ref().map_or(rows, Bitmap::count_ones);
                if n > 0 {
                    pieces.push(self.decode_page(i, &chunk, s.as_ref(), n, read)?);
                }
            }
        }
        if let Some(pieces) = pieces.as_mut() {
            self.one_at_least(pieces);
        }
        let out = crate::eval::and_input(out, sel);
        Ok((out, decoded, LeafCost::weighed(&costs), pieces))
    }

    /// The rows that are not null; `None` when every row is valid.
    pub(crate) fn validity(&self) -> Result<Option<Bitmap>> {
        let mut out = Bitmap::zeros(0);
        let mut any_null = false;
        for (i, page) in self.pages.iter().enumerate() {
            let v = self.levels(i).validity().map_err(|e| self.error(i, e))?;
            any_null |= v.is_some();
            page.append_wanted(
                &v.unwrap_or_else(|| Bitmap::ones(page.rows.len())),
                &mut out,
            );
        }
        Ok(any_null.then_some(out))
    }

    /// All rows (`sel` = `None`) or the rows set in `sel`, decoding only the selected
    /// values of the pages holding selected rows, as one array per page with selected rows
    /// (an empty array when no page has any), in order: what a scan hands on as it is, so
    /// that a row group's pages are not copied into one array. Each page is decoded as
    /// `read` asks where it can be (a decimal column's pages as `Int64` arrays of their
    /// unscaled values, as the pages hold them).
    pub(crate) fn decode_pieces(&self, sel: Option<&Bitmap>, read: Read) -> Result<Vec<ArrayRef>> {
        self.check_selection(sel)?;
        // Each page's rows to decode (`None`: all), and how many of them.
        let mut at = 0;
        let selections: Vec<(Option<Bitmap>, usize)> = (self.pages.iter())
            .map(|p| {
                let s = p.selection(sel, at);
                at += p.wanted.iter().map(ExactSizeIterator::len).sum::<usize>();
                let n = s.as_ref().map_or(p.rows.len(), Bitmap::count_ones);
                (s, n)
            })
            .collect();
        let memo = DictionaryMemo::default();
        let decoded = selections.iter().filter(|(_, n)| *n > 0).count();
        let memo = shared_memo(&memo, decoded);
        let mut parts = Vec::with_capacity(self.pages.len());
        for (i, (s, n)) in selections.iter().enumerate() {
            if *n == 0 {
                continue;
            }
            let chunk = self.chunk(i)?.with_memo(memo);
            parts.push(self.decode_page(i, &chunk, s.as_ref(), *n, read)?);
        }
        self.one_at_least(&mut parts);
        Ok(parts)
    }

    /// Page `i` (as `chunk`) at its rows `sel` (`None`: all), `n` of them, as `read` asks.
    fn decode_page(
        &self,
        i: usize,
        chunk: &Chunk<'_>,
        sel: Option<&Bitmap>,
        n: usize,
        read: Read,
    ) -> Result<ArrayRef> {
        let sel = sel.filter(|s| n < s.len());
        crate::eval::decode_as(chunk, sel, read).map_err(|e| self.error(i, e))
    }

    /// Pieces of a row group's column as handed on: an empty array when no page has any
    /// selected row.
    fn one_at_least(&self, parts: &mut Vec<ArrayRef>) {
        if parts.is_empty() {
            parts.push(arrow_array::new_empty_array(&self.data_type));
        }
    }
}

/// Bitmap words as the little-endian bytes a `Bitmap` node reads, handed to `Bytes`
/// without a copy (on a little-endian target they are those bytes).
struct LeWords(Vec<u64>);

impl AsRef<[u8]> for LeWords {
    fn as_ref(&self) -> &[u8] {
        bytemuck::cast_slice(&self.0)
    }
}

/// A data page's values as a Sift chunk's encoding tree (root first) and buffers.
pub(crate) type PageValues = (Vec<Node>, Vec<Bytes>);

/// The encoding tree (root first) and buffers of a data page's values, `values` its bytes
/// after the levels (at most `count` values), for a column of `layout` whose chunk's
/// dictionary page (if read) is `dictionary`; `Ok(None)` for an encoding this module does
/// not read. Pages of the DELTA encodings and BYTE_STREAM_SPLIT are decoded into the
/// PLAIN layout first ([`unpack`](crate::parquet_unpack::unpack)).
pub(crate) fn page_values(
    encoding: Encoding,
    layout: Layout,
    values: Bytes,
    count: usize,
    dictionary: Option<&(DictValues, usize)>,
) -> std::result::Result<Option<PageValues>, String> {
    if let Some(plain) = crate::parquet_unpack::unpack(encoding, layout, &values, count)? {
        return page_values(Encoding::PLAIN, layout, plain, count, dictionary);
    }
    let mut buffers = vec![values];
    let nodes = match (encoding, layout) {
        (Encoding::PLAIN, Layout::Fixed { width } | Layout::Unsigned { width }) => {
            vec![Node::Plain(Plain {
                width: width as u32,
                buffer: 0,
            })]
        }
        (Encoding::PLAIN, Layout::Float32) => vec![Node::Plain(Plain {
            width: 4,
            buffer: 0,
        })],
        (Encoding::PLAIN, Layout::BigEndian { width }) => {
            if !buffers[0].len().is_multiple_of(width) {
                return Err(format!(
                    "a PLAIN page of {width}-byte decimals holds {} bytes",
                    buffers[0].len()
                ));
            }
            vec![Node::BigEndian(BigEndian {
                width: width as u32,
                buffer: 0,
            })]
        }
        (Encoding::PLAIN, Layout::Bytes) => vec![Node::ByteArrays(ByteArrays { buffer: 0 })],
        // Bits LSB first, as a bitmap node reads them (from whole little-endian words:
        // the page's bytes padded to them, a copy of an eighth of a byte a value).
        (Encoding::PLAIN, Layout::Bits) => {
            let mut bits = buffers[0].to_vec();
            bits.resize(bits.len().next_multiple_of(8), 0);
            buffers[0] = Bytes::from(bits);
            vec![Node::Bitmap(sift_encoding::encodings::Bitmap { buffer: 0 })]
        }
        (Encoding::RLE, Layout::Bits) => {
            let Some((len, stream)) = buffers[0].split_first_chunk::<4>() else {
                return Err("an RLE boolean page without its 4-byte length".into());
            };
            let len = u32::from_le_bytes(*len) as usize;
            if len > stream.len() {
                return Err(format!(
                    "an RLE boolean page's runs take {len} bytes, {} are there",
                    stream.len()
                ));
            }
            buffers[0] = buffers[0].slice(4..4 + len);
            vec![Node::Hybrid(Hybrid { bits: 1, buffer: 0 })]
        }
        (Encoding::PLAIN_DICTIONARY | Encoding::RLE_DICTIONARY, _) => {
            let Some((dict, len)) = dictionary else {
                return Err("dictionary-encoded page without a dictionary page".into());
            };
            match buffers[0].first() {
                // No values, only levels: a page of nulls (a page whose levels
                // say otherwise fails to decode, naming the missing values).
                None => {
                    buffers.clear();
                    Vec::new()
                }
                Some(&bits) => {
                    buffers[0] = buffers[0].slice(1..);
                    let dict_node = Node::Dict(Dict {
                        values: 1,
                        len: *len as u32,
                        codes: 2,
                    });
                    let codes = Node::Hybrid(Hybrid { bits, buffer: 0 });
                    match dict {
                        DictValues::Fixed {
                            values,
                            width,
                            big_endian,
                        } => {
                            buffers.push(values.clone());
                            let (width, buffer) = (*width, 1);
                            let values = match big_endian {
                                true => Node::BigEndian(BigEndian { width, buffer }),
                                false => Node::Plain(Plain { width, buffer }),
                            };
                            vec![dict_node, values, codes]
                        }
                        DictValues::Bytes(values) => {
                            buffers.push(values.clone());
                            let values = Node::ByteArrays(ByteArrays { buffer: 1 });
                            vec![dict_node, values, codes]
                        }
                    }
                }
            }
        }
        _ => return Ok(None),
    };
    Ok(Some((nodes, buffers)))
}

/// An encoding tree of value nodes `nodes` (root first) with the validity of `levels`
/// (a page's 1-bit definition levels), whose buffer is appended to `buffers`.
fn with_validity(
    mut nodes: Vec<Node>,
    levels: Option<Bytes>,
    buffers: &mut Vec<Bytes>,
) -> ColumnEncoding {
    let Some(levels) = levels else {
        return ColumnEncoding {
            validity: Validity::AllValid,
            nodes,
        };
    };
    let root = nodes.len() as u32;
    nodes.push(Node::Hybrid(Hybrid {
        bits: 1,
        buffer: buffers.len() as u32,
    }));
    buffers.push(levels);
    ColumnEncoding {
        validity: Validity::Encoded { root },
        nodes,
    }
}

/// Whether any of the sorted ranges `want` overlaps `rows`.
fn overlaps(want: &[Range<usize>], rows: Range<usize>) -> bool {
    want.iter()
        .any(|r| r.start < rows.end && rows.start < r.end)
}

/// The memo through which the `decoded` data pages of a column chunk share its dictionary
/// page's entries, decoded once for all of them: only when more than one page is decoded
/// (a single page decodes only the entries its codes use).
pub(crate) fn shared_memo(memo: &DictionaryMemo, decoded: usize) -> Option<&DictionaryMemo> {
    (decoded > 1).then_some(memo)
}

/// What [`next_page`] did.
pub(crate) enum PageStep {
    /// Skipped a data page unread (not decompressed): its row count is known before it is
    /// read (from the offset index, or a version-2 header) and `keep` rejected its rows.
    Skipped(usize),
    /// Read the dictionary page into the chunk's dictionary.
    Dictionary,
    /// Read a data page, with the row count known before it was read, if any.
    Data(Page, Option<usize>),
    /// The chunk has no more pages.
    End,
}

/// Reads the next page of a column chunk whose next data page starts at row `row`, or
/// skips it when `keep` rejects its rows. `Ok(None)`: a dictionary page that is not read
/// in place (another encoding, a second one, values of another layout).
pub(crate) fn next_page(
    pages: &mut ChunkPages,
    row: usize,
    keep: impl Fn(Range<usize>) -> bool,
    layout: Layout,
    dictionary: &mut Option<(DictValues, usize)>,
) -> std::result::Result<Option<PageStep>, String> {
    let Some(next) = guarded(|| pages.peek_next_page())? else {
        return Ok(Some(PageStep::End));
    };
    let known = next.num_rows.filter(|_| !next.is_dict);
    if let Some(n) = known
        && !keep(row..row.saturating_add(n))
    {
        guarded(|| pages.skip_next_page())?;
        return Ok(Some(PageStep::Skipped(n)));
    }
    let Some(page) = guarded(|| pages.get_next_page())? else {
        return Ok(Some(PageStep::End));
    };
    if let Page::DictionaryPage {
        buf,
        num_values,
        encoding,
        ..
    } = &page
    {
        let Some(d) = dictionary_page(buf, *num_values, *encoding, layout, dictionary.is_some())?
        else {
            return Ok(None);
        };
        *dictionary = Some(d);
        return Ok(Some(PageStep::Dictionary));
    }
    Ok(Some(PageStep::Data(page, known)))
}

/// A dictionary page's values (`buf`, `num_values` of them, stored as `encoding`) for a
/// column of `layout`, and their count; `Ok(None)` when the page is one this module leaves
/// to the fallback: another encoding, or a second dictionary page in the chunk (`seen`:
/// its pages share the first one's verdicts).
pub(crate) fn dictionary_page(
    buf: &Bytes,
    num_values: u32,
    encoding: Encoding,
    layout: Layout,
    seen: bool,
) -> std::result::Result<Option<(DictValues, usize)>, String> {
    let dictionary = matches!(encoding, Encoding::PLAIN | Encoding::PLAIN_DICTIONARY);
    if !dictionary || seen || matches!(layout, Layout::Bits) {
        return Ok(None);
    }
    let n = num_values as usize;
    // Unsigned 64-bit entries beyond `i64` (the cascade's domain) go to the fallback.
    if let Layout::Unsigned { width: 8 } = layout
        && let Some(entries) = buf.get(..n.saturating_mul(8))
        && entries.chunks_exact(8).any(|v| v[7] >= 0x80)
    {
        return Ok(None);
    }
    match dictionary_values(buf, n, layout) {
        Some(values) => Ok(Some((values, n))),
        None => Err(format!(
            "dictionary page of {n} values holds {} bytes, too few",
            buf.len()
        )),
    }
}

/// The dictionary page's `n` values as the dictionary's child holds them: 8-byte values,
/// floats and big-endian decimals as they are (checked to be present), 4-byte integers
/// widened to the cascade's 8-byte `i64` (sign- or, when unsigned, zero-extended), byte
/// arrays as they are (their lengths read and checked when the dictionary is decoded).
fn dictionary_values(buf: &Bytes, n: usize, layout: Layout) -> Option<DictValues> {
    let (width, big_endian) = match layout {
        Layout::Bytes => return Some(DictValues::Bytes(buf.clone())),
        Layout::Fixed { width } | Layout::Unsigned { width } => (width, false),
        Layout::BigEndian { width } => (width, true),
        Layout::Float32 => (4, false),
        // Booleans have no dictionary pages here (`dictionary_page` leaves them).
        Layout::Bits => return None,
    };
    let bytes = buf.get(..n.checked_mul(width)?)?;
    if width == 8 || big_endian || matches!(layout, Layout::Float32) {
        let values = buf.slice(..bytes.len());
        let width = width as u32;
        return Some(DictValues::Fixed {
            values,
            width,
            big_endian,
        });
    }
    let unsigned = matches!(layout, Layout::Unsigned { .. });
    let mut wide = Vec::with_capacity(n * 8);
    for v in bytes.chunks_exact(4) {
        let v = [v[0], v[1], v[2], v[3]];
        let x = match unsigned {
            true => i64::from(u32::from_le_bytes(v)),
            false => i64::from(i32::from_le_bytes(v)),
        };
        wide.extend_from_slice(&x.to_le_bytes());
    }
    Some(DictValues::Fixed {
        values: Bytes::from(wide),
        width: 8,
        big_endian: false,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// A page's values the encoding tree cannot read are refused when the page is read,
    /// each error saying what is wrong: decimals cut mid-value, an RLE boolean page
    /// without its length, or whose runs run past the page.
    #[test]
    fn damaged_pages_are_refused_with_what_is_wrong() {
        let read = |encoding, layout, bytes: &[u8]| {
            let values = Bytes::copy_from_slice(bytes);
            page_values(encoding, layout, values, 8, None)
                .err()
                .unwrap()
        };
        let decimals = Layout::BigEndian { width: 7 };
        let err = read(Encoding::PLAIN, decimals, &[0; 10]);
        assert!(err.contains("7-byte decimals holds 10 bytes"), "{err}");
        let err = read(Encoding::RLE, Layout::Bits, &[4, 0]);
        assert!(err.contains("without its 4-byte length"), "{err}");
        let err = read(Encoding::RLE, Layout::Bits, &[9, 0, 0, 0, 2, 1]);
        assert!(err.contains("runs take 9 bytes, 2 are there"), "{err}");
        // Whole values, and a length the page holds, are read.
        let ok = |encoding, layout, bytes: &[u8]| {
            page_values(encoding, layout, Bytes::copy_from_slice(bytes), 8, None).unwrap()
        };
        assert!(ok(Encoding::PLAIN, decimals, &[0; 14]).is_some());
        assert!(ok(Encoding::RLE, Layout::Bits, &[2, 0, 0, 0, 2, 1]).is_some());
    }
}
