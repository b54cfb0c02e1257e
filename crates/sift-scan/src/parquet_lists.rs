//! Parquet list columns read page by page in place (feature `parquet`), for the rows a
//! scan selects: Parquet-Select's method for repeated fields. A list of a flat type is one
//! leaf with one repetition level; its pages hold, per value slot, a repetition level
//! (0 opens a row), a definition level (how much of the path is present: a null list, an
//! empty one, a null element, a value), and the present values alone.
//!
//! The levels are read as bitmaps, straight from their run streams and appended page
//! after page to the column chunk's (`hybrid::append_level_bitmaps`, one walk per stream
//! for every bitmap it yields): `starts` (repetition level 0), `elements` (the level of
//! the repeated node reached), `present` (the maximum level) and `lists` (the list node
//! present).
//! The row selection is then carried down with `sift_bits::levels`: spread over each
//! selected row's level slots (`extend`, PDEP), kept at the present values (`extract`,
//! PEXT), and the pages' values (dictionary codes or PLAIN, through the same encoding
//! trees as flat columns, `parquet_pages.rs`) are decoded at the selected values only.
//! The offsets, list validity and element validity of the selected rows come from the
//! same bitmaps restricted to the selected slots. Unselected lists are never assembled,
//! and pages holding no selected row (known from the offset index) are not read.
//!
//! Written here rather than through the `parquet` crate's reader: it assembles every list
//! of a page it reads and skips rows by decoding their levels one run at a time, which
//! costs more than decoding the whole column chunk once a few rows in a hundred are asked.

use std::sync::Arc;

use arrow_array::types::UInt32Type;
use arrow_array::{Array, ArrayRef, GenericListArray, OffsetSizeTrait, PrimitiveArray};
use arrow_buffer::{NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, Field, FieldRef};
use bytes::Bytes;
use parquet::basic::{Encoding, Repetition};
use parquet::column::page::Page;
use parquet::file::metadata::ParquetMetaData;
use parquet::schema::types::ColumnDescriptor;
use sift_encoding::{Bitmap, Chunk, ColumnEncoding, Validity};

use crate::error::{Error, Result};
use crate::parquet_page_reader::ChunkPages;
use crate::parquet_pages::{DictValues, Layout, PageStep};
use crate::parquet_source::guarded;
use crate::scan::Read;

/// How a list column's levels map to its Arrow list.
pub(crate) struct ListShape {
    layout: Layout,
    item: FieldRef,
    large: bool,
    /// The definition level at which a row's list has an element (the repeated node's).
    element_def: u16,
    /// The definition level of a present value (the leaf's maximum).
    max_def: u16,
    /// Whether a list can be null: a level below `element_def - 1` is then a null list.
    list_nullable: bool,
}

impl ListShape {
    /// The shape of leaf `descr` read as top-level Arrow field `field`, when this module
    /// reads it: one repetition level, a list (or large list) of a flat type whose values
    /// [`parquet_pages`](crate::parquet_pages) reads in place, the list node optional or
    /// required, its elements optional, required or (two-level lists) the repeated leaf.
    pub(crate) fn of(descr: &ColumnDescriptor, field: &Field) -> Option<ListShape> {
        if descr.max_rep_level() != 1 {
            return None;
        }
        let (item, large) = match field.data_type() {
            DataType::List(item) => (item.clone(), false),
            DataType::LargeList(item) => (item.clone(), true),
            _ => return None,
        };
        if item.data_type().is_nested() {
            return None;
        }
        let layout = crate::parquet_pages::layout(item.data_type(), descr)?;
        let max_def = u16::try_from(descr.max_def_level()).ok()?;
        let optional_leaf = descr.self_type().get_basic_info().repetition() == Repetition::OPTIONAL;
        let element_def = max_def.checked_sub(u16::from(optional_leaf))?;
        let list_nullable = match element_def {
            1 => false,
            2 => true,
            _ => return None,
        };
        // Nulls the Arrow type cannot hold are left to the `parquet` crate to report.
        if (list_nullable && !field.is_nullable()) || (optional_leaf && !item.is_nullable()) {
            return None;
        }
        Some(ListShape {
            layout,
            item,
            large,
            element_def,
            max_def,
            list_nullable,
        })
    }
}

/// Whether a column chunk of leaf `descr` (Arrow field `field`) whose pages use
/// `encodings` is a list this module reads.
pub(crate) fn reads_list(
    descr: &ColumnDescriptor,
    field: &Field,
    encodings: impl Iterator<Item = Encoding>,
) -> bool {
    ListShape::of(descr, field).is_some() && crate::parquet_pages::encodings_in_place(encodings)
}

/// A list column's rows as read: the array and what reading it did.
pub(crate) struct ListRead {
    pub array: ArrayRef,
    /// Data pages read.
    pub pages: u64,
    /// Of them, pages decoded to PLAIN values first (DELTA, BYTE_STREAM_SPLIT).
    pub unpacked: u64,
    /// Stored bytes read: the pages read (with the offset index), else the whole chunk.
    pub bytes: u64,
}

/// The levels of the pages read, one bit per value slot, joined across pages.
struct Levels {
    /// Repetition level 1: the slot continues a row (its complement, the slots that open
    /// a row, once every page is read).
    continues: Bitmap,
    /// The definition levels each bitmap of `def` marks the slots at or above: the
    /// repeated node's, the leaf's maximum, and (for nullable lists) the list node's.
    at_least: Vec<u16>,
    /// One bitmap per threshold of `at_least`: the row's list has an element at the slot
    /// (null or not); the slot holds a present value; the row's list is not null.
    def: Vec<Bitmap>,
}

/// One data page's values: present values only, as a Sift chunk's tree and buffers.
struct ValuePage {
    encoding: ColumnEncoding,
    buffers: Vec<Bytes>,
    values: usize,
}

/// Reads the rows set in `rows` (one bit per row of row group `rg`) of the list column
/// whose leaf is `leaf` (Arrow field `field`, checked by [`reads_list`]) from `bytes`, the
/// file's bytes from offset `start` holding the column chunk. `Ok(None)` when a page is
/// one this module does not read (other encodings, deprecated BIT_PACKED levels).
pub(crate) fn read_list(
    (start, bytes): (u64, Bytes),
    md: &ParquetMetaData,
    (rg, leaf): (usize, usize),
    field: &Field,
    rows: &Bitmap,
    place: &str,
) -> Result<Option<ListRead>> {
    let err = |e: &dyn std::fmt::Display| Error::Parquet(format!("{place}: {e}"));
    let descr = md.file_metadata().schema_descr().column(leaf);
    let Some(shape) = ListShape::of(&descr, field) else {
        return Ok(None);
    };
    let group = md
        .row_groups()
        .get(rg)
        .ok_or_else(|| err(&"no such row group"))?;
    let chunk = group.column(leaf);
    let total = usize::try_from(group.num_rows()).map_err(|_| err(&"negative row count"))?;
    if rows.len() != total {
        return Err(err(&format!(
            "a selection of {} rows over a row group of {total}",
            rows.len()
        )));
    }
    let locations = md
        .offset_index()
        .and_then(|o| o.get(rg)?.get(leaf))
        .map(|o| o.page_locations().clone());
    let whole = u64::try_from(chunk.compressed_size()).unwrap_or(0);
    let mut stored = match &locations {
        // The dictionary page (if any) lies before the first data page.
        Some(pages) => pages.first().map_or(whole, |p| {
            (p.offset.max(0) as u64).saturating_sub(start).min(whole)
        }),
        None => whole,
    };
    let mut pages = guarded(|| ChunkPages::new(start, bytes, chunk, total, locations.clone()))
        .map_err(|e| err(&e))?;
    let mut dictionary: Option<(DictValues, usize)> = None;
    let mut levels = Levels::new(&shape);
    let mut selected = Bitmap::zeros(0);
    let mut values: Vec<ValuePage> = Vec::new();
    let mut unpacked = 0u64;
    let (mut row, mut page_no, mut data_page) = (0usize, 0usize, 0usize);
    // Whether the next page read must open a row: the first, and any after a skipped one.
    let mut must_open = true;
    loop {
        let perr = |e: &dyn std::fmt::Display| err(&format!("page {page_no}: {e}"));
        let step = crate::parquet_pages::next_page(
            &mut pages,
            row,
            |r| rows.count_ones_in(r) > 0,
            shape.layout,
            &mut dictionary,
        )
        .map_err(|e| perr(&e))?;
        let (page, known) = match step {
            None => return Ok(None),
            Some(PageStep::End) => break,
            Some(PageStep::Dictionary) => {
                page_no += 1;
                continue;
            }
            Some(PageStep::Skipped(n)) => {
                (row, must_open) = (row.saturating_add(n), true);
                page_no += 1;
                data_page += 1;
                continue;
            }
            Some(PageStep::Data(page, known)) => (page, known),
        };
        if let Some(p) = locations.as_ref().and_then(|l| l.get(data_page)) {
            stored += p.compressed_page_size.max(0) as u64;
        }
        // The rows the offset index gives the page (they decide which pages are skipped,
        // so the levels read must agree).
        let indexed = known.filter(|_| locations.is_some());
        let (rep, def, body, count, encoding) = match page {
            // `next_page` reads dictionary pages itself.
            Page::DictionaryPage { .. } => return Ok(None),
            Page::DataPage {
                buf,
                num_values,
                encoding,
                def_level_encoding,
                rep_level_encoding,
                ..
            } => {
                if rep_level_encoding != Encoding::RLE || def_level_encoding != Encoding::RLE {
                    return Ok(None);
                }
                let (rep, rest) =
                    crate::parquet_pages::v1_levels(&buf, "repetition").map_err(|e| perr(&e))?;
                let (def, body) =
                    crate::parquet_pages::v1_levels(&rest, "definition").map_err(|e| perr(&e))?;
                (rep, def, body, num_values as usize, encoding)
            }
            Page::DataPageV2 {
                buf,
                num_values,
                encoding,
                def_levels_byte_len,
                rep_levels_byte_len,
                ..
            } => {
                let (rep, rest) = crate::parquet_pages::split_levels(
                    &buf,
                    0,
                    rep_levels_byte_len as usize,
                    "repetition",
                )
                .map_err(|e| perr(&e))?;
                let (def, body) = crate::parquet_pages::split_levels(
                    &rest,
                    0,
                    def_levels_byte_len as usize,
                    "definition",
                )
                .map_err(|e| perr(&e))?;
                (rep, def, body, num_values as usize, encoding)
            }
        };
        data_page += 1;
        let first = levels.continues.len();
        levels
            .append(&shape, &rep, &def, count)
            .map_err(|e| perr(&e))?;
        if count > 0 {
            if must_open && levels.continues.get(first) {
                return Err(perr(
                    &"the page's first value continues a row of a page not read",
                ));
            }
            must_open = false;
        }
        let opened = count - levels.continues.count_ones_in(first..first + count);
        if let Some(n) = indexed
            && n != opened
        {
            return Err(perr(&format!(
                "the page opens {opened} rows, the offset index gives it {n}"
            )));
        }
        if opened > total - row.min(total) {
            return Err(perr(&format!(
                "pages hold more than the row group's {total} rows"
            )));
        }
        selected.append(&rows.slice(row..row + opened));
        row += opened;
        let present = levels.present().count_ones_in(first..first + count);
        let Some((nodes, buffers)) = crate::parquet_pages::page_values(
            encoding,
            shape.layout,
            body,
            count,
            dictionary.as_ref(),
        )
        .map_err(|e| perr(&e))?
        else {
            return Ok(None);
        };
        if present > 0 && nodes.is_empty() {
            return Err(perr(&format!(
                "the levels promise {present} values, the page holds none"
            )));
        }
        unpacked += u64::from(crate::parquet_unpack::unpacks(encoding));
        values.push(ValuePage {
            encoding: ColumnEncoding {
                validity: Validity::AllValid,
                nodes,
            },
            buffers,
            values: present,
        });
        page_no += 1;
    }
    if row != total {
        return Err(err(&format!(
            "pages hold {row} rows of the row group's {total}"
        )));
    }
    let mut starts = std::mem::take(&mut levels.continues);
    starts.not_assign();
    Ok(Some(ListRead {
        array: assemble(&shape, &starts, &levels, &selected, &values, place)?,
        pages: values.len() as u64,
        unpacked,
        bytes: stored,
    }))
}

impl Levels {
    fn new(shape: &ListShape) -> Levels {
        let mut at_least = vec![shape.element_def, shape.max_def];
        if shape.list_nullable {
            at_least.push(shape.element_def - 1);
        }
        Levels {
            continues: Bitmap::default(),
            def: vec![Bitmap::default(); at_least.len()],
            at_least,
        }
    }

    fn elements(&self) -> &Bitmap {
        &self.def[0]
    }

    fn present(&self) -> &Bitmap {
        &self.def[1]
    }

    /// For nullable lists only.
    fn lists(&self) -> Option<&Bitmap> {
        self.def.get(2)
    }

    /// Appends one page's `count` levels: repetition levels `rep` and definition levels
    /// `def`, RLE/bit-packed hybrid streams.
    fn append(
        &mut self,
        shape: &ListShape,
        rep: &Bytes,
        def: &Bytes,
        count: usize,
    ) -> std::result::Result<(), String> {
        use sift_encoding::encodings::hybrid::{append_level_bitmaps, check_stream};
        let def_bits = (u16::BITS - shape.max_def.leading_zeros()) as u8;
        // Each level costs a bit in every bitmap: a count far beyond what the streams'
        // bytes hold bit-packed (a header's count is not to be trusted) is first checked
        // against their runs, which allocates nothing in proportion to it.
        if count / 8 > rep.len() + def.len() + 64 {
            check_stream(1, rep, count).map_err(|e| format!("repetition levels: {e}"))?;
            check_stream(def_bits, def, count).map_err(|e| format!("definition levels: {e}"))?;
        }
        let continues = std::slice::from_mut(&mut self.continues);
        append_level_bitmaps(1, rep, count, &[1], continues)
            .map_err(|e| format!("repetition levels: {e}"))?;
        // Elements, present values and (for nullable lists) present lists in one walk.
        append_level_bitmaps(def_bits, def, count, &self.at_least, &mut self.def)
            .map_err(|e| format!("definition levels: {e}"))
    }
}

/// The selected rows' lists from the levels and value pages read: `selected` has one bit
/// per row read.
fn assemble(
    shape: &ListShape,
    row_starts: &Bitmap,
    levels: &Levels,
    selected: &Bitmap,
    pages: &[ValuePage],
    place: &str,
) -> Result<ArrayRef> {
    let err = |e: &dyn std::fmt::Display| Error::Parquet(format!("{place}: {e}"));
    // The slots of the selected rows, then the selected present values.
    let slots = sift_bits::levels::extend(selected, row_starts).map_err(|e| err(&e))?;
    let chosen = sift_bits::levels::extract(&slots, levels.present()).map_err(|e| err(&e))?;
    // Each page's present values (a range of `chosen`) and how many of them are chosen.
    let mut at = 0usize;
    let chosen_in: Vec<(std::ops::Range<usize>, usize)> = (pages.iter())
        .map(|p| {
            let r = at..at + p.values;
            at = r.end;
            let n = chosen.count_ones_in(r.clone());
            (r, n)
        })
        .collect();
    let memo = sift_encoding::DictionaryMemo::default();
    let decoded = chosen_in.iter().filter(|(_, n)| *n > 0).count();
    let memo = crate::parquet_pages::shared_memo(&memo, decoded);
    let mut pieces = Vec::new();
    for (i, (page, (r, n))) in pages.iter().zip(chosen_in).enumerate() {
        if n == 0 {
            continue;
        }
        let buffers = page.buffers.iter().map(|b| b.as_ref()).collect();
        let chunk = Chunk::new(&page.encoding, shape.item.data_type(), page.values, buffers)
            .with_memo(memo);
        let sel = chosen.slice(r);
        let sel = (n != page.values).then_some(&sel);
        let piece = crate::eval::decode_as(&chunk, sel, Read::Values)
            .map_err(|e| err(&format!("values of data page {i}: {e}")))?;
        pieces.push(piece);
    }
    let values = match pieces.is_empty() {
        true => arrow_array::new_empty_array(shape.item.data_type()),
        false => crate::eval::concat_pieces(pieces)?,
    };
    // The same levels at the selected slots only.
    let keep = |b: &Bitmap| sift_bits::levels::extract(b, &slots).map_err(|e| err(&e));
    let starts = keep(row_starts)?;
    let elements = keep(levels.elements())?;
    let children = elements.count_ones();
    // Element validity: which elements hold a present value.
    let items = match shape.max_def == shape.element_def {
        true => values,
        false => {
            let valid = sift_bits::levels::extract(&keep(levels.present())?, &elements)
                .map_err(|e| err(&e))?;
            with_nulls(values, &valid).map_err(|e| err(&e))?
        }
    };
    if items.len() != children {
        return Err(err(&format!(
            "{} values decoded for {children} list elements",
            items.len()
        )));
    }
    let nulls = match shape.list_nullable {
        false => None,
        true => {
            let lists = levels.lists().ok_or_else(|| err(&"no list validity"))?;
            let valid = sift_bits::levels::extract(&keep(lists)?, &starts).map_err(|e| err(&e))?;
            (valid.count_ones() != valid.len()).then(|| null_buffer(valid))
        }
    };
    let array: ArrayRef = match shape.large {
        false => {
            Arc::new(list::<i32>(shape, &starts, &elements, items, nulls).map_err(|e| err(&e))?)
        }
        true => {
            Arc::new(list::<i64>(shape, &starts, &elements, items, nulls).map_err(|e| err(&e))?)
        }
    };
    Ok(array)
}

/// The list array of the rows whose first slots are set in `starts`, with an element at
/// each slot set in `elements` (both over the same slots).
fn list<O: OffsetSizeTrait>(
    shape: &ListShape,
    starts: &Bitmap,
    elements: &Bitmap,
    items: ArrayRef,
    nulls: Option<NullBuffer>,
) -> std::result::Result<GenericListArray<O>, String> {
    let mut offsets: Vec<O> = Vec::with_capacity(starts.count_ones() + 1);
    let mut before = 0usize;
    for (&s, &e) in starts.words().iter().zip(elements.words()) {
        let mut s = s;
        while s != 0 {
            let below = (1u64 << s.trailing_zeros()) - 1;
            offsets.push(offset(before + (e & below).count_ones() as usize)?);
            s &= s - 1;
        }
        before += e.count_ones() as usize;
    }
    offsets.push(offset(before)?);
    let offsets = OffsetBuffer::new(ScalarBuffer::from(offsets));
    GenericListArray::try_new(shape.item.clone(), offsets, items, nulls).map_err(|e| e.to_string())
}

/// A list offset of type `O`.
fn offset<O: OffsetSizeTrait>(n: usize) -> std::result::Result<O, String> {
    O::from_usize(n).ok_or_else(|| format!("{n} list elements overflow the list's offsets"))
}

/// `values` (the present elements) spread over the elements whose bits are set in
/// `valid`, nulls at the others.
fn with_nulls(values: ArrayRef, valid: &Bitmap) -> std::result::Result<ArrayRef, String> {
    if valid.count_ones() == valid.len() {
        return Ok(values);
    }
    if values.len() != valid.count_ones() {
        return Err(format!(
            "{} values decoded for {} present elements",
            values.len(),
            valid.count_ones()
        ));
    }
    let mut next = 0u32;
    let indices: PrimitiveArray<UInt32Type> = (0..valid.len())
        .map(|i| {
            valid.get(i).then(|| {
                next += 1;
                next - 1
            })
        })
        .collect();
    arrow_select::take::take(values.as_ref(), &indices, None).map_err(|e| e.to_string())
}

/// A bitmap as Arrow validity (its words handed over, not copied).
fn null_buffer(valid: Bitmap) -> NullBuffer {
    let len = valid.len();
    NullBuffer::new(arrow_buffer::BooleanBuffer::new(
        arrow_buffer::Buffer::from_vec(valid.into_words()),
        0,
        len,
    ))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// Offsets count the elements of each row up to its first slot; rows without an
    /// element (an empty or null list's one slot) get none.
    #[test]
    fn offsets_count_elements_per_row() {
        // Slots:   r0 r0 r0 | r1 (empty) | r2 r2 | r3 ... (70 slots, one row)
        let mut starts = vec![true, false, false, true, true, false, true];
        let mut elements = vec![true, true, true, false, true, true, true];
        starts.extend(std::iter::repeat_n(false, 69));
        elements.extend(std::iter::repeat_n(true, 69));
        let (starts, elements) = (Bitmap::from_bools(starts), Bitmap::from_bools(elements));
        let shape = ListShape {
            layout: Layout::Fixed { width: 8 },
            item: Arc::new(Field::new("item", DataType::Int64, true)),
            large: false,
            element_def: 1,
            max_def: 1,
            list_nullable: false,
        };
        let items: ArrayRef = Arc::new(arrow_array::Int64Array::from_iter_values(0..75));
        let l = list::<i32>(&shape, &starts, &elements, items, None).unwrap();
        assert_eq!(l.value_offsets(), &[0, 3, 3, 5, 75]);
    }
}
