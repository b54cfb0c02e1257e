//! What the system asks of an encoding. Every encoding is one module under `encodings/`
//! with one type implementing [`Encoding`], listed once in `registry.rs`; the reader, the
//! filter evaluator, selective decoding, the scan's cost model and the footer reach it
//! only through that list.
//!
//! An operation an encoding does not implement answers `None` ("cannot"), and the
//! registry falls back to the generic path in one place: decode everything, then compact
//! (selection) or evaluate value by value (filters).

use sift_bits::Bitmap;

use crate::byte_values::ByteValues;
use crate::domain::{Domain, Value};
use crate::error::Result;
use crate::predicate::{BytesMatcher, BytesShape, DomainPred};
use crate::tree::{ColumnEncoding, Ctx, NodeId};
use crate::wire::{Reader, Writer};

/// One node type of the encoding tree.
///
/// Nodes hold only their parameters, child node ids and buffer indices; the values they
/// stand for are *compacted* (non-null values only, in row order) and their number comes
/// from the parent (the chunk, for the root). Every decode must return exactly the count it
/// was asked for (the registry checks); selections and filter results are bitmaps over
/// those compacted values.
pub(crate) trait Encoding: Sized {
    /// Stable id written in the footer; never reused for another encoding.
    const ID: u8;
    /// The name without parameters (`for`, `dict`), as `sift inspect` shows cascades.
    const NAME: &'static str;
    /// The value domains this node can hold.
    const DOMAINS: &'static [Domain];
    /// Whether [`filter`](Self::filter) or [`filter_bytes`](Self::filter_bytes) evaluates
    /// some predicates on the encoded values. When false, a filter on this node as a
    /// chunk's root decodes every value first, which a scan returning the column can then
    /// keep instead of decoding it again.
    const FILTERS_ENCODED: bool = false;

    /// The name with its parameters, e.g. `for7` or `dict[25]`.
    fn label(&self) -> String {
        Self::NAME.to_string()
    }

    /// The child nodes, in the fixed order the footer documents.
    fn children(&self) -> Vec<NodeId> {
        Vec::new()
    }

    /// Bytes of values this node keeps in the footer itself (a constant's value), counted
    /// as stored data.
    fn inline_bytes(&self) -> usize {
        0
    }

    /// Writes the node's fields (after its id) in their documented order (`docs/format.md`).
    fn write(&self, w: &mut Writer);

    /// Reads the fields [`write`](Self::write) wrote; the reader bounds every count.
    fn read(r: &mut Reader<'_>) -> Result<Self>;

    /// All `count` values of node `id` as domain `V`; `None` if this node cannot hold `V`.
    fn decode<V: Value>(
        &self,
        _ctx: &Ctx<'_>,
        _id: NodeId,
        _count: usize,
        _depth: usize,
    ) -> Result<Option<Vec<V>>> {
        Ok(None)
    }

    /// All `count` byte strings of node `id`; `None` if this node cannot hold strings.
    fn decode_bytes(
        &self,
        _ctx: &Ctx<'_>,
        _id: NodeId,
        _count: usize,
        _depth: usize,
    ) -> Result<Option<ByteValues>> {
        Ok(None)
    }

    /// The values selected by `sel` (over the node's `count` values) without decoding the
    /// others; `None`: decode all and compact.
    fn select<V: Value>(
        &self,
        _ctx: &Ctx<'_>,
        _id: NodeId,
        _count: usize,
        _depth: usize,
        _sel: &Bitmap,
    ) -> Result<Option<Vec<V>>> {
        Ok(None)
    }

    /// The byte strings selected by `sel`; `None`: decode all and compact.
    fn select_bytes(
        &self,
        _ctx: &Ctx<'_>,
        _id: NodeId,
        _count: usize,
        _depth: usize,
        _sel: &Bitmap,
    ) -> Result<Option<ByteValues>> {
        Ok(None)
    }

    /// `p` evaluated on the encoded values; `None`: decode and evaluate value by value.
    fn filter<V: Value, P: DomainPred<V>>(
        &self,
        _ctx: &Ctx<'_>,
        _id: NodeId,
        _count: usize,
        _depth: usize,
        _p: &P,
    ) -> Result<Option<Bitmap>> {
        Ok(None)
    }

    /// The strings `m` accepts, decided on the encoded values where `shape` allows;
    /// `None`: decode and match every string.
    fn filter_bytes(
        &self,
        _ctx: &Ctx<'_>,
        _id: NodeId,
        _count: usize,
        _depth: usize,
        _m: &BytesMatcher,
        _shape: &BytesShape,
    ) -> Result<Option<Bitmap>> {
        Ok(None)
    }

    /// Decodes a chunk root directly into the column's own integer type `T` (`u64` and
    /// decimals beyond `i64`, and roots that bypass the `i64` cascade); `None` if this
    /// node holds the cascade's `i64` values instead.
    fn decode_native<T: crate::encodings::frame::NativeInt>(
        &self,
        _ctx: &Ctx<'_>,
        _id: NodeId,
        _count: usize,
    ) -> Result<Option<Vec<T>>> {
        Ok(None)
    }

    /// The values `sel` selects among a chunk root's first `count`, in the column's own
    /// integer type `T`, where this node holds them so ([`decode_native`]) and can read
    /// the selected ones alone; `None` otherwise (the caller decodes all and compacts).
    ///
    /// [`decode_native`]: Self::decode_native
    fn select_native<T: crate::encodings::frame::NativeInt>(
        &self,
        _ctx: &Ctx<'_>,
        _id: NodeId,
        _count: usize,
        _sel: &Bitmap,
    ) -> Result<Option<Vec<T>>> {
        Ok(None)
    }

    /// Whether a root's values lie outside the `i64` cascade for a `bytes`-wide integer
    /// column, so that only [`decode_native`](Self::decode_native) reads them.
    fn beyond_i64(&self, _bytes: usize) -> bool {
        false
    }

    /// Estimated cycles per row to evaluate a predicate on this node as a chunk's root
    /// (narrow packed codes are cheap, runs and constants nearly free); `None`: about the
    /// cost of decoding.
    fn scan_cost(&self, _enc: &ColumnEncoding, _id: NodeId) -> Option<f64> {
        None
    }

    /// Whether a selective decode of this node reads only the parts of its buffers that
    /// hold selected rows (fixed-width codes addressable by row).
    fn row_addressable(&self, _enc: &ColumnEncoding, _id: NodeId) -> bool {
        false
    }
}

/// Estimated cycles per row to decode a value and evaluate a predicate on it, the unit of
/// `Encoding::scan_cost` for encodings that cannot evaluate on their encoded form.
pub const DECODE_ROW_COST: f64 = 5.0;
