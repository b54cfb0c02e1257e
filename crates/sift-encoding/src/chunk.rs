//! A chunk view: everything needed to read one column chunk (its encoding tree, the Arrow
//! type its values decode to, its row count, its buffers and, for a lookup, the chunk it
//! reads codes from), with one method per operation. Callers hold a view instead of
//! passing `(encoding, type, rows, buffers, selection)` around, and never need to know
//! which chunks are lookups beyond attaching the source a view asks for.

use arrow_array::ArrayRef;
use arrow_schema::DataType;
use sift_bits::Bitmap;

use crate::column::{self, EncodedColumn, PhysicalKind};
use crate::error::{Result, corrupt};
use crate::predicate::{DictionaryMemo, ValuePredicate};
use crate::tree::ColumnEncoding;

/// One column chunk, ready to decode or filter.
#[derive(Debug, Clone)]
pub struct Chunk<'a> {
    encoding: &'a ColumnEncoding,
    data_type: &'a DataType,
    rows: usize,
    buffers: Vec<&'a [u8]>,
    source: Option<Box<Chunk<'a>>>,
    /// What the chunk shares with others over its root dictionary (see
    /// [`with_memo`](Self::with_memo)).
    memo: Option<&'a DictionaryMemo>,
}

impl<'a> Chunk<'a> {
    /// A chunk of `rows` rows of type `data_type` (the stored type: a dictionary column's
    /// value type), encoded as `encoding` over `buffers`.
    pub fn new(
        encoding: &'a ColumnEncoding,
        data_type: &'a DataType,
        rows: usize,
        buffers: Vec<&'a [u8]>,
    ) -> Self {
        Self {
            encoding,
            data_type,
            rows,
            buffers,
            source: None,
            memo: None,
        }
    }

    /// Shares `memo` (if any) with the other chunks over the same root dictionary (the
    /// data pages of one Parquet column chunk): its entries are decoded once for all of
    /// them. Only decoding uses it; a filter's verdicts are shared through
    /// [`filter_memo`](Self::filter_memo), one memo per predicate.
    pub fn with_memo(mut self, memo: Option<&'a DictionaryMemo>) -> Self {
        self.memo = memo;
        self
    }

    /// The column of the same block whose chunk this one needs to be read (its values are
    /// a table over that chunk's dictionary codes); attach it with
    /// [`with_source`](Self::with_source).
    pub fn needs_source(&self) -> Option<usize> {
        crate::encodings::lookup::lookup_source(self.encoding)
    }

    /// Attaches the chunk that [`needs_source`](Self::needs_source) names.
    pub fn with_source(mut self, source: Chunk<'a>) -> Self {
        self.source = Some(Box::new(source));
        self
    }

    /// The rows.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// The encoding tree.
    pub fn encoding(&self) -> &'a ColumnEncoding {
        self.encoding
    }

    /// The Arrow type the values decode to.
    pub fn data_type(&self) -> &'a DataType {
        self.data_type
    }

    /// The source of a lookup, checked to be attached.
    fn source(&self, column: usize) -> Result<&Chunk<'a>> {
        self.source.as_deref().ok_or_else(|| {
            corrupt(format!(
                "a lookup into column {column} read without that column's chunk"
            ))
        })
    }

    /// All rows (`sel` = `None`) or the rows set in `sel`, decoding only those where the
    /// encoding allows.
    pub fn decode_rows(&self, sel: Option<&Bitmap>) -> Result<ArrayRef> {
        match self.needs_source() {
            None => column::decode_rows(
                self.encoding,
                self.data_type,
                self.rows,
                &self.buffers,
                sel,
                self.memo,
            ),
            Some(column) => {
                let src = self.source(column)?;
                crate::encodings::lookup::decode_lookup(
                    self.encoding,
                    self.data_type,
                    self.rows,
                    &self.buffers,
                    (src.encoding, &src.buffers),
                    sel,
                )
            }
        }
    }

    /// Every row, as an Arrow array of [`data_type`](Self::data_type).
    pub fn decode(&self) -> Result<ArrayRef> {
        self.decode_rows(None)
    }

    /// The rows set in `sel` (one bit per row of the chunk).
    pub fn decode_selected(&self, sel: &Bitmap) -> Result<ArrayRef> {
        self.decode_rows(Some(sel))
    }

    /// A decimal chunk's rows (all, or those set in `sel`) as an `Int64` array of their
    /// unscaled values, decoded straight from the 64-bit cascade they are stored in, with
    /// no 128-bit copy. `None` when the chunk is not a decimal one or its values lie
    /// beyond 64 bits (decode it as it is, then).
    pub fn decode_unscaled(&self, sel: Option<&Bitmap>) -> Result<Option<ArrayRef>> {
        let decimal = matches!(self.data_type, DataType::Decimal128(..));
        let root = self.encoding.nodes.first();
        if !decimal || self.needs_source().is_some() || root.is_none_or(|n| n.beyond_i64(16)) {
            return Ok(None);
        }
        column::decode_rows(
            self.encoding,
            &DataType::Int64,
            self.rows,
            &self.buffers,
            sel,
            self.memo,
        )
        .map(Some)
    }

    /// The smallest and largest value of an integer chunk's rows (all, or those set in
    /// `sel`), nulls ignored, as a two-row array `[min, max]` of its type (both null when
    /// no value counts), folded over its codes without decoding the values: a
    /// dictionary's codes (a Parquet hybrid stream or frame-of-reference codes) or
    /// frame-of-reference codes at the root. `None` for any other integer chunk, and where
    /// the fold declines (decode it and take the extremes of its values, then).
    pub fn decode_extremes(&self, sel: Option<&Bitmap>) -> Result<Option<ArrayRef>> {
        if self.needs_source().is_some() {
            return Ok(None);
        }
        column::decode_extremes(
            self.encoding,
            self.data_type,
            self.rows,
            &self.buffers,
            sel,
            self.memo,
        )
    }

    /// A string or binary chunk dictionary-encoded at its root, decoded as an Arrow
    /// dictionary array over its own stored dictionary (type
    /// [`dictionary_type`](crate::dictionary_type)): only the codes are decoded. `None`
    /// when the chunk is not dictionary-encoded.
    pub fn decode_dictionary(&self, sel: Option<&Bitmap>) -> Result<Option<ArrayRef>> {
        column::decode_dictionary(self.encoding, self.data_type, self.rows, &self.buffers, sel)
    }

    /// The rows that are not null; `None` when every row is valid.
    pub fn validity(&self) -> Result<Option<Bitmap>> {
        column::chunk_validity(self.encoding, self.rows, &self.buffers)
    }

    /// The rows whose value is non-null and satisfies `pred`: evaluated on the encoded
    /// values where the type and encoding allow, else on the decoded values.
    pub fn filter(&self, pred: &ValuePredicate) -> Result<Bitmap> {
        self.filter_with(pred, None)
    }

    /// [`filter`](Self::filter) for a chunk whose root dictionary it shares with other
    /// chunks: the predicate's verdicts on the entries are kept in `memo` and reused by
    /// the next chunk filtered with it (see [`DictionaryMemo`]).
    pub fn filter_memo(&self, pred: &ValuePredicate, memo: &DictionaryMemo) -> Result<Bitmap> {
        self.filter_with(pred, Some(memo))
    }

    fn filter_with(&self, pred: &ValuePredicate, memo: Option<&DictionaryMemo>) -> Result<Bitmap> {
        if self.filters_encoded() {
            return column::filter_chunk(
                self.encoding,
                self.data_type,
                self.rows,
                &self.buffers,
                pred,
                memo,
            );
        }
        pred.eval_array(self.decode()?.as_ref())
    }

    /// Whether [`filter`](Self::filter) evaluates on the encoded values (else it decodes
    /// every row first).
    pub fn filters_encoded(&self) -> bool {
        self.needs_source().is_none()
            && !matches!(
                column::physical_kind(self.data_type),
                Ok(PhysicalKind::Float(2) | PhysicalKind::Null)
            )
    }

    /// Whether [`filter`](Self::filter) decodes every value first, whatever the predicate
    /// (its root cannot evaluate on encoded values): a caller that also returns the
    /// column can decode it once ([`decode`](Self::decode)) and test the decoded values
    /// (`ValuePredicate::eval_array`).
    pub fn filter_decodes(&self) -> bool {
        !self.filters_encoded()
            || (self.encoding.nodes.first()).is_some_and(|root| !root.filters_encoded())
    }

    /// Estimated cycles per row to evaluate a predicate on this chunk (the scan's cost
    /// model; see `Encoding::scan_cost`).
    pub fn scan_cost(&self) -> f64 {
        self.encoding.scan_cost()
    }

    /// Whether a selective decode reads only the parts of the buffers that hold selected
    /// rows.
    pub fn row_addressable(&self) -> bool {
        self.encoding.row_addressable()
    }
}

impl EncodedColumn {
    /// The freshly encoded chunk as a view (tests and tools that read what they encoded).
    pub fn chunk<'a>(&'a self, data_type: &'a DataType, rows: usize) -> Chunk<'a> {
        let buffers = self.buffers.iter().map(Vec::as_slice).collect();
        Chunk::new(&self.encoding, data_type, rows, buffers)
    }
}
