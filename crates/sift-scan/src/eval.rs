//! Evaluating a bound filter on one block, and decoding the projected rows.
//!
//! The pipeline of Parquet-Select §4: the first predicate of a conjunction runs on the
//! encoded chunk (`Chunk::filter`); later ones see the rows still selected and, where the
//! cost model (`order.rs`) says those are few enough, select their codes first
//! (`Chunk::decode_selected`, PEXT) and evaluate only them, depositing the verdicts back
//! (`sift_bits::levels::deposit`); a Parquet column decides so page by page. An OR
//! evaluates each branch only on the rows the branches before it left unmatched.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, BooleanArray};
use arrow_buffer::{BooleanBuffer, Buffer};
use arrow_schema::DataType;
use sift_encoding::{Bitmap, ValuePredicate};

use crate::bind::{Bound, Leaf, LeafOp};
use crate::error::{Error, Result};
use crate::expr::CmpOp;
use crate::order::{LeafCost, Order};
use crate::scan::Read;
use crate::source::{BlockData, ColumnData};
use crate::stats::ScanStats;

/// Rows per mini-block for payload accounting: a projected chunk stored as bit-packed
/// codes is read only where a mini-block has a selected row.
pub(crate) const MINI_BLOCK: usize = 1024;

pub(crate) struct BlockEval<'a, 'b> {
    pub data: &'b BlockData<'a>,
    pub rows: usize,
    pub stats: &'b mut ScanStats,
    pub order: &'b mut Order,
    /// The columns the scan returns, and how ([`Read`]), each at the same index.
    projection: &'b [usize],
    reads: &'b [Read],
    /// Whether the test evaluated next is the last of the filter: its rows are the
    /// filter's unless the filter selects none.
    tail: bool,
    /// A returned column read while its test was evaluated (see [`ReadEarly`]).
    early: Option<ReadEarly>,
    /// A returned column of the block decoded whole by a test on it, and kept for the
    /// output (see [`BlockEval::kept_values`]).
    kept: Option<(usize, ArrayRef)>,
}

/// A Parquet column that the filter's last test reads and the scan returns, decoded page
/// by page right after each page is tested, at the rows that test leaves: the page's
/// bytes are then still in cache, where decoding them once the whole row group is tested
/// reads them from memory a second time (`f < 0.125` and `max(f)` on PLAIN float pages:
/// the value read took about as long as the test). Used when the rows finally selected
/// are those rows (the filter's, with no limit cutting them).
#[cfg_attr(not(feature = "parquet"), allow(dead_code))]
pub(crate) struct ReadEarly {
    col: usize,
    read: Read,
    rows: Bitmap,
    pieces: Vec<ArrayRef>,
}

impl<'a, 'b> BlockEval<'a, 'b> {
    /// Evaluates on `rows` rows of `data`; `projection` and `reads`: the columns that may
    /// be read as their tests are evaluated (those the scan returns, each read as `reads`
    /// says at the same index; none for a scan with a limit).
    pub(crate) fn new(
        data: &'b BlockData<'a>,
        rows: usize,
        stats: &'b mut ScanStats,
        order: &'b mut Order,
        (projection, reads): (&'b [usize], &'b [Read]),
    ) -> Self {
        BlockEval {
            data,
            rows,
            stats,
            order,
            projection,
            reads,
            tail: false,
            early: None,
            kept: None,
        }
    }

    /// The rows of `input` (all rows if `None`) where the filter `b` is true.
    pub(crate) fn filter(&mut self, b: &Bound, input: Option<&Bitmap>) -> Result<Bitmap> {
        self.tail = true;
        let out = self.eval(b, input);
        self.tail = false;
        out
    }

    /// The rows of `input` (all rows if `None`) where `b` is true.
    fn eval(&mut self, b: &Bound, input: Option<&Bitmap>) -> Result<Bitmap> {
        // Only the last test of a conjunction that is itself last (or the whole filter)
        // is the filter's last.
        let tail = std::mem::replace(&mut self.tail, false);
        match b {
            Bound::Const(true) => Ok(input.cloned().unwrap_or_else(|| Bitmap::ones(self.rows))),
            Bound::Const(false) => Ok(Bitmap::zeros(self.rows)),
            Bound::Leaf(l) => self.leaf(l, input, tail),
            Bound::And(children) => {
                let order = self.order.and_order(children, self, input);
                let last = order.last().copied();
                let mut sel: Option<Bitmap> = input.cloned();
                for i in order {
                    self.tail = tail && Some(i) == last;
                    let r = self.eval(&children[i], sel.as_ref())?;
                    let done = r.count_ones() == 0;
                    sel = Some(r);
                    if done {
                        break;
                    }
                }
                Ok(sel.unwrap_or_else(|| Bitmap::ones(self.rows)))
            }
            Bound::Or(children) => {
                let mut acc = Bitmap::zeros(self.rows);
                let mut rest = input.cloned().unwrap_or_else(|| Bitmap::ones(self.rows));
                for c in children {
                    if rest.count_ones() == 0 {
                        break;
                    }
                    let r = self.eval(c, Some(&rest))?;
                    rest.and_not_assign(&r);
                    acc.or_assign(&r);
                }
                Ok(acc)
            }
        }
    }

    /// `tail`: whether this test is the filter's last.
    fn leaf(&mut self, l: &Leaf, input: Option<&Bitmap>, tail: bool) -> Result<Bitmap> {
        let rows_in = input.map_or(self.rows, Bitmap::count_ones);
        let out = match &l.op {
            LeafOp::Value(p) => self.value_leaf(l.id, l.column, p, input, tail)?,
            LeafOp::Null { negated } => {
                let valid = match self.data.column(l.column)? {
                    ColumnData::Encoded(c) => c
                        .view()
                        .validity()
                        .map_err(|e| self.decode_error(l.column, e))?,
                    #[cfg(feature = "parquet")]
                    ColumnData::Paged(p) => p.validity()?,
                    ColumnData::Decoded(a) => a.logical_nulls().map(|n| bitmap_of(n.inner())),
                };
                let mut bm = valid.unwrap_or_else(|| Bitmap::ones(self.rows));
                if !negated {
                    bm.not_assign();
                }
                and_input(bm, input)
            }
            LeafOp::Columns { right, op } => {
                let a = self.project(l.column, input)?;
                let b = self.project(*right, input)?;
                let (a, b) = common_type(a, b)?;
                let r = match op {
                    CmpOp::Eq => arrow_ord::cmp::eq(&a, &b),
                    CmpOp::Ne => arrow_ord::cmp::neq(&a, &b),
                    CmpOp::Lt => arrow_ord::cmp::lt(&a, &b),
                    CmpOp::Le => arrow_ord::cmp::lt_eq(&a, &b),
                    CmpOp::Gt => arrow_ord::cmp::gt(&a, &b),
                    CmpOp::Ge => arrow_ord::cmp::gt_eq(&a, &b),
                }?;
                self.deposit(true_bits(&r, false), input)?
            }
            LeafOp::Udf { columns, f, negate } => {
                let arrays = columns
                    .iter()
                    .map(|&c| self.project(c, input))
                    .collect::<Result<Vec<_>>>()?;
                let r = f(&arrays).map_err(|e| Error::Invalid(format!("{}: {e}", l.label)))?;
                if r.len() != rows_in {
                    return Err(Error::Invalid(format!(
                        "{}: returned {} values for {rows_in} rows",
                        l.label,
                        r.len()
                    )));
                }
                self.deposit(true_bits(&r, *negate), input)?
            }
        };
        self.order.observe(l.id, rows_in, out.count_ones());
        Ok(out)
    }

    #[cfg_attr(not(feature = "parquet"), allow(unused_variables))]
    fn value_leaf(
        &mut self,
        leaf: usize,
        col: usize,
        p: &ValuePredicate,
        input: Option<&Bitmap>,
        tail: bool,
    ) -> Result<Bitmap> {
        let data = self.data.column(col)?;
        match data {
            ColumnData::Decoded(a) => {
                let compact = match input {
                    Some(s) if s.count_ones() < self.rows => {
                        let a = arrow_select::filter::filter(&a, &boolean_of(s))?;
                        return self.deposit(matches(p, &a)?, input);
                    }
                    _ => matches(p, &a)?,
                };
                Ok(and_input(compact, input))
            }
            #[cfg(feature = "parquet")]
            ColumnData::Paged(c) => {
                let sel = input.filter(|s| s.count_ones() != self.rows);
                // A returned column of the filter's last test is read as it is tested.
                let read = tail.then(|| self.read_of(col)).flatten();
                let (rows, decoded, cost, pieces) = c.filter_within(p, sel, read)?;
                self.stats.values_decoded += decoded as u64;
                self.order.observe_cost(leaf, cost);
                if let (Some(read), Some(pieces)) = (read, pieces) {
                    let rows = rows.clone();
                    self.early = Some(ReadEarly {
                        col,
                        read,
                        rows,
                        pieces,
                    });
                }
                Ok(rows)
            }
            ColumnData::Encoded(c) => {
                let view = c.view();
                let cost = LeafCost::of(&c.meta.encoding, Some(p));
                let sparse = input.filter(|s| cost.select_first(s.count_ones(), self.rows));
                if let Some(all) = self.kept_values(col, &c, &view, sparse.is_some())? {
                    // Tested at the rows still in play where they are few, as below.
                    return match sparse {
                        Some(s) => {
                            let some = arrow_select::filter::filter(&all, &boolean_of(s))?;
                            self.deposit(matches(p, &some)?, Some(s))
                        }
                        None => Ok(and_input(matches(p, &all)?, input)),
                    };
                }
                if view.filters_encoded() && sparse.is_none() {
                    self.stats.bytes_read += c.stored_bytes();
                    let bm = view.filter(p).map_err(|e| self.decode_error(col, e))?;
                    return Ok(and_input(bm, input));
                }
                // Few rows left, or a chunk that cannot be filtered encoded: decode the
                // rows still selected, evaluate them, and put the verdicts back on the rows.
                let sel = input.filter(|s| s.count_ones() != self.rows);
                self.stats.bytes_read += match sel {
                    Some(s) => payload_bytes(&c, s),
                    None => c.stored_bytes(),
                };
                // `sel` is `None` only where every row is still selected.
                let (rows, decoded) = test_decoded(&view, p, sel, |e| self.decode_error(col, e))?;
                self.stats.values_decoded += decoded as u64;
                Ok(rows)
            }
        }
    }

    /// Every value of an encoded chunk of column `col` that a test on it is about to
    /// decode anyway (its filter cannot evaluate on the encoded values, or `sparse`: the
    /// test would select the rows still in play, and the chunk cannot decode those alone),
    /// when the scan returns the column as values: decoded once and kept, so that the
    /// output selects its rows instead of decoding the chunk a second time. Sorted keys
    /// (delta-encoded) that a join filter tests and the join reads are the common case.
    /// A column kept by an earlier test is reused.
    fn kept_values(
        &mut self,
        col: usize,
        c: &sift_format::ChunkRef<'_>,
        view: &sift_encoding::Chunk<'_>,
        sparse: bool,
    ) -> Result<Option<ArrayRef>> {
        if let Some((_, all)) = self.kept.as_ref().filter(|(k, _)| *k == col) {
            return Ok(Some(all.clone()));
        }
        let decodes_all = view.filter_decodes() && (!sparse || !view.row_addressable());
        if !decodes_all || self.read_of(col) != Some(Read::Values) {
            return Ok(None);
        }
        self.stats.bytes_read += c.stored_bytes();
        let all = view.decode().map_err(|e| self.decode_error(col, e))?;
        self.check_nulls(col, &all)?;
        self.stats.values_decoded += all.len() as u64;
        self.kept = Some((col, all.clone()));
        Ok(Some(all))
    }

    /// How the scan returns column `col`, if it does and in a way that a test on the column
    /// can read it ([`Read::Dictionary`] reads another column: the stored dictionary's).
    fn read_of(&self, col: usize) -> Option<Read> {
        let at = self.projection.iter().position(|&c| c == col)?;
        self.reads
            .get(at)
            .copied()
            .filter(|&r| r != Read::Dictionary)
    }

    /// The values of column `col` at the rows of `sel` (all rows if `None`).
    pub(crate) fn project(&mut self, col: usize, sel: Option<&Bitmap>) -> Result<ArrayRef> {
        let pieces = self.read(col, sel, Read::Values)?;
        concat_pieces(pieces)
    }

    /// Column `col` at the rows of `sel` as `read` asks (see [`Read`]), in consecutive
    /// pieces: one array, or for a Parquet column read page by page one per page with
    /// selected rows, which the caller may hand on without joining them.
    pub(crate) fn project_pieces(
        &mut self,
        col: usize,
        sel: Option<&Bitmap>,
        read: Read,
    ) -> Result<Vec<ArrayRef>> {
        let pieces = self.read(col, sel, read)?;
        pieces
            .into_iter()
            .map(|out| match read {
                Read::Values | Read::Extremes { .. } => Ok(out),
                Read::Dictionary => as_dictionary(out),
                Read::Unscaled => self.as_unscaled(col, out),
            })
            .collect()
    }

    /// Column `col`'s smallest and largest value over the rows of `sel` (all rows if
    /// `None`), nulls ignored, as a two-row array `[min, max]` (see [`crate::extremes`]);
    /// `read` is [`Read::Extremes`].
    pub(crate) fn extremes(
        &mut self,
        col: usize,
        sel: Option<&Bitmap>,
        read: Read,
    ) -> Result<ArrayRef> {
        let pair = crate::extremes::combine(self.read(col, sel, read)?)?;
        match read {
            Read::Extremes { unscaled: true } => self.as_unscaled(col, pair),
            _ => Ok(pair),
        }
    }

    /// A decimal column's values (of precision 18 or less) as `Int64` unscaled values:
    /// as they are when read so (straight from the stored 64-bit integers), otherwise
    /// narrowed (a value beyond 64 bits is an error).
    fn as_unscaled(&self, col: usize, out: ArrayRef) -> Result<ArrayRef> {
        if out.data_type() == &DataType::Int64 {
            return Ok(out);
        }
        let d = out
            .as_primitive_opt::<arrow_array::types::Decimal128Type>()
            .ok_or_else(|| {
                self.decode_error(
                    col,
                    format!("{} read for a decimal column", out.data_type()),
                )
            })?;
        let narrow: Option<Vec<i64>> = (d.values().iter().enumerate())
            .map(|(i, &v)| i64::try_from(v).ok().or(d.is_null(i).then_some(0)))
            .collect();
        let values = narrow.ok_or_else(|| {
            self.decode_error(
                col,
                "a decimal value beyond 64 bits in a column of precision ≤ 18",
            )
        })?;
        Ok(Arc::new(arrow_array::Int64Array::new(
            values.into(),
            d.nulls().cloned(),
        )))
    }

    /// Column `col` at the rows of `sel`, as `output` asks where the chunk allows: with
    /// [`Read::Dictionary`], a chunk dictionary-encoded at its root comes out as its
    /// codes over its stored dictionary.
    /// With [`Read::Extremes`], every piece is the `[min, max]` pair of its rows.
    fn read(&mut self, col: usize, sel: Option<&Bitmap>, output: Read) -> Result<Vec<ArrayRef>> {
        let dictionary = output == Read::Dictionary;
        // Values decoded as they are, summarised where extremes are asked for.
        let finish = |out: ArrayRef| -> Result<ArrayRef> {
            match output {
                Read::Extremes { .. } => Ok(crate::extremes::of(out.as_ref())?),
                _ => Ok(out),
            }
        };
        // Read as its test was evaluated, at the same rows.
        if let Some(early) = self
            .early
            .take_if(|e| (e.col, e.read) == (col, output) && sel == Some(&e.rows))
        {
            for p in &early.pieces {
                self.check_nulls(col, p)?;
                self.stats.values_decoded += p.len() as u64;
            }
            return Ok(early.pieces);
        }
        // Selecting every row is reading them all.
        let sel = sel.filter(|s| s.count_ones() != self.rows);
        // Decoded whole as it was tested.
        if output == Read::Values
            && let Some((_, all)) = self.kept.take_if(|(k, _)| *k == col)
        {
            let out = match sel {
                Some(s) => arrow_select::filter::filter(&all, &boolean_of(s))?,
                None => all,
            };
            return Ok(vec![out]);
        }
        // A nested column: assembled from its nodes, a selection reaching only the
        // selected rows' list elements.
        if let BlockData::Sift { file, block } = self.data
            && file.column_shape(col)? == sift_format::ColumnShape::Nested
        {
            let (array, counts) = file.read_nested(*block, col, sel, false)?;
            self.stats.values_decoded += counts.values;
            self.stats.bytes_read += counts.bytes;
            return Ok(vec![finish(array)?]);
        }
        // The extremes of every row of a block: its statistics where they state them
        // exactly, the column unread.
        if let (Read::Extremes { .. }, None) = (output, sel)
            && let Some(pair) = self.data.extremes_of_stats(col, self.rows)?
        {
            return Ok(vec![pair]);
        }
        // A Parquet column decoded by the `parquet` crate, read at the selected rows only.
        #[cfg(feature = "parquet")]
        if let (BlockData::Parquet(block), Some(s)) = (self.data, sel)
            && let Some(out) = block.selected(col, s)?
        {
            self.stats.values_decoded += out.len() as u64;
            return Ok(vec![finish(out)?]);
        }
        let data = match dictionary {
            true => self.data.dictionary_column(col)?,
            false => self.data.column(col)?,
        };
        let out = match data {
            ColumnData::Decoded(a) => finish(match sel {
                Some(s) => arrow_select::filter::filter(&a, &boolean_of(s))?,
                None => a,
            })?,
            #[cfg(feature = "parquet")]
            ColumnData::Paged(c) => {
                let pieces = c.decode_pieces(sel, output)?;
                for p in &pieces {
                    self.check_nulls(col, p)?;
                    self.stats.values_decoded += p.len() as u64;
                }
                return Ok(pieces);
            }
            ColumnData::Encoded(c) => {
                let view = c.view();
                self.stats.bytes_read += match sel {
                    Some(s) => payload_bytes(&c, s),
                    None => c.stored_bytes(),
                };
                decode_as(&view, sel, output).map_err(|e| self.decode_error(col, e))?
            }
        };
        self.check_nulls(col, &out)?;
        self.stats.values_decoded += out.len() as u64;
        Ok(vec![out])
    }

    /// Refuses nulls decoded in a column the schema declares non-nullable (a damaged
    /// footer's validity or nullability), which Arrow would otherwise reject later without
    /// naming the file or the chunk.
    fn check_nulls(&self, col: usize, a: &ArrayRef) -> Result<()> {
        if let BlockData::Sift { file, .. } = self.data
            && a.null_count() > 0
            && file.field(col).is_ok_and(|f| !f.nullable)
        {
            return Err(self.decode_error(
                col,
                format!(
                    "{} nulls in a column the schema declares non-nullable",
                    a.null_count()
                ),
            ));
        }
        Ok(())
    }

    fn decode_error(&self, col: usize, e: impl std::fmt::Display) -> Error {
        match self.data {
            BlockData::Sift { file, block } => Error::Format(file.chunk_error(*block, col, e)),
            #[cfg(feature = "parquet")]
            BlockData::Parquet(_) => Error::Invalid(format!("column {col}: {e}")),
        }
    }

    /// Spreads verdicts on the selected rows back over all rows.
    fn deposit(&self, compact: Bitmap, input: Option<&Bitmap>) -> Result<Bitmap> {
        match input {
            None => Ok(compact),
            Some(s) => {
                sift_bits::levels::deposit(&compact, s).map_err(|e| Error::Invalid(e.to_string()))
            }
        }
    }
}

/// Bytes of a chunk a selective decode touches: row-addressable encodings (bit-packed
/// codes) are read only in mini-blocks with a selected row; any other is read whole.
fn payload_bytes(c: &sift_format::ChunkRef<'_>, sel: &Bitmap) -> u64 {
    let total = c.stored_bytes();
    if !c.meta.encoding.row_addressable() || c.rows == 0 {
        return total;
    }
    let minis = c.rows.div_ceil(MINI_BLOCK);
    let words_per_mini = MINI_BLOCK / 64;
    let touched = sel
        .words()
        .chunks(words_per_mini)
        .filter(|w| w.iter().any(|&x| x != 0))
        .count();
    total * touched as u64 / minis as u64
}

/// An encoded chunk's rows (all, or those set in `sel`) as `read` asks where the chunk
/// can give them so directly (see [`Read`]), else decoded as they are (and with
/// [`Read::Extremes`], summarised).
pub(crate) fn decode_as(
    chunk: &sift_encoding::Chunk<'_>,
    sel: Option<&Bitmap>,
    read: Read,
) -> sift_encoding::Result<ArrayRef> {
    let direct = match read {
        Read::Dictionary => chunk.decode_dictionary(sel)?,
        Read::Unscaled => chunk.decode_unscaled(sel)?,
        Read::Extremes { .. } => chunk.decode_extremes(sel)?,
        Read::Values => None,
    };
    match (direct, read) {
        (Some(d), _) => Ok(d),
        (None, Read::Extremes { .. }) => Ok(crate::extremes::of(chunk.decode_rows(sel)?.as_ref())?),
        (None, _) => chunk.decode_rows(sel),
    }
}

/// A string or binary column's values as an Arrow dictionary array: as they are when
/// read so (codes over the block's stored dictionary, for a chunk dictionary-encoded at
/// its root), otherwise dictionary-encoded by Arrow.
fn as_dictionary(out: ArrayRef) -> Result<ArrayRef> {
    if matches!(out.data_type(), DataType::Dictionary(..)) {
        return Ok(out);
    }
    let dt = sift_encoding::dictionary_type(out.data_type());
    Ok(arrow_cast::cast(&out, &dt)?)
}

/// Consecutive pieces of one column as one array.
pub(crate) fn concat_pieces(mut pieces: Vec<ArrayRef>) -> Result<ArrayRef> {
    if pieces.len() == 1 {
        return Ok(pieces.swap_remove(0));
    }
    let refs: Vec<&dyn Array> = pieces.iter().map(|a| a.as_ref()).collect();
    Ok(arrow_select::concat::concat(&refs)?)
}

pub(crate) fn and_input(mut bm: Bitmap, input: Option<&Bitmap>) -> Bitmap {
    if let Some(s) = input {
        bm.and_assign(s);
    }
    bm
}

/// A bitmap as an Arrow boolean array (for `filter`).
pub(crate) fn boolean_of(b: &Bitmap) -> BooleanArray {
    BooleanArray::new(
        BooleanBuffer::new(Buffer::from_slice_ref(b.words()), 0, b.len()),
        None,
    )
}

/// A boolean buffer's bits as a bitmap.
fn bitmap_of(b: &BooleanBuffer) -> Bitmap {
    // A word at a time (the buffer's bit offset handled by its chunks).
    let words = b.bit_chunks().iter_padded().collect();
    Bitmap::from_words(words, b.len()).unwrap_or_default()
}

/// True where `r` is non-null and true (xor `negate` on non-null values).
fn true_bits(r: &BooleanArray, negate: bool) -> Bitmap {
    let mut bits = bitmap_of(r.values());
    if negate {
        bits.not_assign();
    }
    if let Some(nulls) = r.nulls() {
        bits.and_assign(&bitmap_of(nulls.inner()));
    }
    bits
}

/// Casts two arrays to one type for a column comparison.
fn common_type(a: ArrayRef, b: ArrayRef) -> Result<(ArrayRef, ArrayRef)> {
    if a.data_type() == b.data_type() {
        return Ok((a, b));
    }
    let int_like =
        |t: &DataType| t.is_integer() || matches!(t, DataType::Date32 | DataType::Date64);
    let target = if int_like(a.data_type()) && int_like(b.data_type()) {
        DataType::Int64
    } else if a.data_type().is_numeric() && b.data_type().is_numeric() {
        DataType::Float64
    } else {
        DataType::Utf8
    };
    Ok((
        arrow_cast::cast(&a, &target)?,
        arrow_cast::cast(&b, &target)?,
    ))
}

/// `p` tested on the values of `chunk` at the rows of `sel` alone (every row if `None`):
/// those values decoded, tested through Arrow, and the verdicts put back on their rows.
/// Returns the rows that satisfy `p` and the number of values decoded; `error` places a
/// decoding error in its file.
pub(crate) fn test_decoded(
    chunk: &sift_encoding::Chunk<'_>,
    p: &ValuePredicate,
    sel: Option<&Bitmap>,
    error: impl Fn(String) -> Error,
) -> Result<(Bitmap, usize)> {
    let values = chunk.decode_rows(sel).map_err(|e| error(e.to_string()))?;
    let verdicts = matches(p, &values)?;
    let rows = match sel {
        Some(s) => sift_bits::levels::deposit(&verdicts, s).map_err(|e| error(e.to_string()))?,
        None => verdicts,
    };
    Ok((rows, values.len()))
}

/// The rows of a decoded array whose value matches `p` (see `ValuePredicate::eval_array`).
pub(crate) fn matches(p: &ValuePredicate, a: &ArrayRef) -> Result<Bitmap> {
    p.eval_array(a.as_ref()).map_err(|e| match e {
        sift_encoding::EncodingError::Arrow(e) => Error::Arrow(e),
        e => Error::Type(e.to_string()),
    })
}
