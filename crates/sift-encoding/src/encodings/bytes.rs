//! Byte strings as they are: their lengths (an integer node) and their bytes concatenated
//! in one buffer. The byte-string domain's terminal scheme; fixed-size binary values go to
//! `plain` instead, needing no lengths.

use serde::{Deserialize, Serialize};

use crate::byte_values::{ByteValues, decode_offsets};
use crate::domain::{Domain, Value};
use crate::encoding::Encoding;
use crate::encodings::plain;
use crate::error::Result;
use crate::tree::{BufferSink, Ctx, NodeId};
use crate::wire::{Reader, Writer};

/// Variable-length byte strings: integer `lengths` (a node) and concatenated bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bytes {
    /// The length of every string.
    pub lengths: NodeId,
    /// The buffer holding the bytes.
    pub data: u32,
}

/// Stores byte strings as they are (`fixed`: the width of fixed-size binary values).
pub(crate) fn encode(
    values: &[&[u8]],
    fixed: Option<u32>,
    sink: &mut BufferSink,
    depth: u8,
) -> NodeId {
    if let Some(width) = fixed {
        return plain::encode_fixed(values, width, sink);
    }
    let id = sink.reserve_node();
    let lens: Vec<i64> = values.iter().map(|v| v.len() as i64).collect();
    let lengths = i64::encode(&lens, sink, depth.saturating_sub(1));
    let data = sink.buffer(values.concat());
    sink.set_node(id, Bytes { lengths, data });
    id
}

impl Encoding for Bytes {
    const ID: u8 = 3;
    const NAME: &'static str = "bytes";
    const DOMAINS: &'static [Domain] = &[Domain::Bytes];

    fn write(&self, w: &mut Writer) {
        w.varint(u64::from(self.lengths));
        w.varint(u64::from(self.data));
    }

    fn read(r: &mut Reader<'_>) -> Result<Self> {
        Ok(Self {
            lengths: r.varint_u32("bytes lengths")?,
            data: r.varint_u32("bytes data")?,
        })
    }

    fn children(&self) -> Vec<NodeId> {
        vec![self.lengths]
    }

    fn decode_bytes(
        &self,
        ctx: &Ctx<'_>,
        id: NodeId,
        count: usize,
        depth: usize,
    ) -> Result<Option<ByteValues>> {
        let bytes = ctx.bufs.get(self.data, 0)?;
        let offsets = decode_offsets(ctx, id, self.lengths, count, bytes.len(), depth)?;
        let end = offsets.last().copied().unwrap_or(0) as usize;
        Ok(Some(ByteValues {
            offsets,
            data: bytes[..end].to_vec(),
            utf8_checked: false,
        }))
    }
}
