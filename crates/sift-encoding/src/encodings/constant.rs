//! Constant: every value equal to one value, kept in the footer (little-endian bytes of
//! the domain's value, or the byte string itself).

use serde::{Deserialize, Serialize};
use sift_bits::Bitmap;

use crate::byte_values::ByteValues;
use crate::domain::{Domain, Value, constant, uniform};
use crate::encoding::Encoding;
use crate::error::Result;
use crate::predicate::{BytesMatcher, BytesShape, DomainPred};
use crate::tree::{BufferSink, ColumnEncoding, Ctx, NodeId};
use crate::wire::{Reader, Writer};

/// Every value equal to `value`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Constant {
    /// Little-endian bytes of the domain's value (one byte for booleans), or the string.
    pub value: Vec<u8>,
}

/// A constant of a fixed-width domain.
pub(crate) fn encode<V: Value>(v: V, sink: &mut BufferSink) -> NodeId {
    sink.push_node(Constant {
        value: v.le_bytes()[..V::CONSTANT_BYTES].to_vec(),
    })
}

/// A constant byte string.
pub(crate) fn encode_bytes(v: &[u8], sink: &mut BufferSink) -> NodeId {
    sink.push_node(Constant { value: v.to_vec() })
}

impl Encoding for Constant {
    const ID: u8 = 5;
    const NAME: &'static str = "const";
    const DOMAINS: &'static [Domain] = &[Domain::Int, Domain::Float, Domain::Bool, Domain::Bytes];
    const FILTERS_ENCODED: bool = true;

    fn write(&self, w: &mut Writer) {
        w.bytes(&self.value);
    }

    fn read(r: &mut Reader<'_>) -> Result<Self> {
        Ok(Self {
            value: r.bytes("constant value")?.to_vec(),
        })
    }

    fn inline_bytes(&self) -> usize {
        self.value.len()
    }

    fn decode<V: Value>(
        &self,
        _ctx: &Ctx<'_>,
        _id: NodeId,
        count: usize,
        _depth: usize,
    ) -> Result<Option<Vec<V>>> {
        Ok(Some(vec![constant::<V>(&self.value)?; count]))
    }

    fn decode_bytes(
        &self,
        ctx: &Ctx<'_>,
        id: NodeId,
        count: usize,
        _depth: usize,
    ) -> Result<Option<ByteValues>> {
        let value = &self.value;
        ctx.check_decoded(Some(id), count, count.checked_mul(value.len()))?;
        let mut out = ByteValues::with_capacity(count, value.len() * count);
        for _ in 0..count {
            out.push(value);
        }
        Ok(Some(out))
    }

    fn select<V: Value>(
        &self,
        _ctx: &Ctx<'_>,
        _id: NodeId,
        _count: usize,
        _depth: usize,
        sel: &Bitmap,
    ) -> Result<Option<Vec<V>>> {
        Ok(Some(vec![constant::<V>(&self.value)?; sel.count_ones()]))
    }

    fn filter<V: Value, P: DomainPred<V>>(
        &self,
        _ctx: &Ctx<'_>,
        _id: NodeId,
        count: usize,
        _depth: usize,
        p: &P,
    ) -> Result<Option<Bitmap>> {
        Ok(Some(uniform(count, p.eval(constant::<V>(&self.value)?))))
    }

    fn filter_bytes(
        &self,
        _ctx: &Ctx<'_>,
        _id: NodeId,
        count: usize,
        _depth: usize,
        m: &BytesMatcher,
        _shape: &BytesShape,
    ) -> Result<Option<Bitmap>> {
        Ok(Some(uniform(count, m(&self.value))))
    }

    fn scan_cost(&self, _enc: &ColumnEncoding, _id: NodeId) -> Option<f64> {
        Some(0.0)
    }
}
