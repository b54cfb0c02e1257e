//! Plain: fixed-width little-endian values, `width` bytes each, in one buffer. The
//! terminal scheme for doubles, fixed-size binary values and integers whose range does
//! not fit a narrower bit-packing; 2- and 4-byte floats are stored only so. As integers of
//! the `i64` cascade, 4-byte values are signed (Parquet's PLAIN INT32 pages, read in
//! place, are such a node).

use serde::{Deserialize, Serialize};
use sift_bits::Bitmap;

use crate::byte_values::ByteValues;
use crate::domain::{Domain, FloatBits, Value};
use crate::encoding::Encoding;
use crate::encodings::frame::NativeInt;
use crate::error::Result;
use crate::tree::{BufferSink, Ctx, NodeId};
use crate::wire::{Reader, Writer};

/// Fixed-width little-endian values, `width` bytes each, in buffer `buffer`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plain {
    /// Bytes per value.
    pub width: u32,
    /// The buffer holding the values.
    pub buffer: u32,
}

impl Plain {
    /// The values `sel` selects among the first `count`, read where they lie.
    fn select_native<T: NativeInt>(
        &self,
        ctx: &Ctx<'_>,
        count: usize,
        sel: &Bitmap,
    ) -> Result<Vec<T>> {
        let bytes = self.bytes(ctx, count)?;
        let mut out = Vec::with_capacity(sel.count_ones());
        out.extend(
            sel.iter_ones()
                .filter_map(|i| bytes.get(i * T::BYTES..(i + 1) * T::BYTES))
                .map(T::get_le),
        );
        Ok(out)
    }

    /// The first `count` values' bytes, checked to be present.
    fn bytes<'a>(&self, ctx: &Ctx<'a>, count: usize) -> Result<&'a [u8]> {
        ctx.bufs.fixed(self.buffer, count, self.width)
    }
}

/// Stores `values` as they are.
pub(crate) fn encode_native<T: NativeInt>(values: &[T], sink: &mut BufferSink) -> NodeId {
    let mut bytes = Vec::with_capacity(values.len() * T::BYTES);
    for v in values {
        v.put_le(&mut bytes);
    }
    let buffer = sink.buffer(bytes);
    sink.push_node(Plain {
        width: T::BYTES as u32,
        buffer,
    })
}

/// Stores doubles as their bit patterns.
pub(crate) fn encode_floats(values: &[FloatBits], sink: &mut BufferSink, _depth: u8) -> NodeId {
    let bits: Vec<u64> = values.iter().map(|v| v.0).collect();
    encode_native(&bits, sink)
}

/// Stores byte strings of one width `width`, concatenated.
pub(crate) fn encode_fixed(values: &[&[u8]], width: u32, sink: &mut BufferSink) -> NodeId {
    let buffer = sink.buffer(values.concat());
    sink.push_node(Plain { width, buffer })
}

impl Encoding for Plain {
    const ID: u8 = 0;
    const NAME: &'static str = "plain";
    const DOMAINS: &'static [Domain] = &[Domain::Int, Domain::Float, Domain::Bytes];

    fn write(&self, w: &mut Writer) {
        w.varint(u64::from(self.width));
        w.varint(u64::from(self.buffer));
    }

    fn read(r: &mut Reader<'_>) -> Result<Self> {
        Ok(Self {
            width: r.varint_u32("plain width")?,
            buffer: r.varint_u32("plain buffer")?,
        })
    }

    fn label(&self) -> String {
        format!("plain{}", u64::from(self.width) * 8)
    }

    fn decode<V: Value>(
        &self,
        ctx: &Ctx<'_>,
        id: NodeId,
        count: usize,
        _depth: usize,
    ) -> Result<Option<Vec<V>>> {
        match V::DOMAIN {
            // Narrower values are signed (Parquet's INT32 pages read in place).
            Domain::Int => {
                let wide: Option<Vec<i64>> = match self.width {
                    4 => self
                        .decode_native::<i32>(ctx, id, count)?
                        .map(|v| v.into_iter().map(i64::from).collect()),
                    _ => self.decode_native::<i64>(ctx, id, count)?,
                };
                Ok(wide.and_then(V::from_ints))
            }
            Domain::Float if self.width == 8 => {
                let bits = self
                    .decode_native::<u64>(ctx, id, count)?
                    .unwrap_or_default();
                Ok(V::from_floats(bits.into_iter().map(FloatBits).collect()))
            }
            _ => Ok(None),
        }
    }

    /// Only the selected values are read: each is at a known offset of the buffer.
    fn select<V: Value>(
        &self,
        ctx: &Ctx<'_>,
        _id: NodeId,
        count: usize,
        _depth: usize,
        sel: &Bitmap,
    ) -> Result<Option<Vec<V>>> {
        match (V::DOMAIN, self.width) {
            (Domain::Int, 4) => {
                let v = self.select_native::<i32>(ctx, count, sel)?;
                Ok(V::from_ints(v.into_iter().map(i64::from).collect()))
            }
            (Domain::Int, 8) => Ok(V::from_ints(self.select_native::<i64>(ctx, count, sel)?)),
            (Domain::Float, 8) => {
                let bits = self.select_native::<u64>(ctx, count, sel)?;
                Ok(V::from_floats(bits.into_iter().map(FloatBits).collect()))
            }
            _ => Ok(None),
        }
    }

    fn decode_bytes(
        &self,
        ctx: &Ctx<'_>,
        id: NodeId,
        count: usize,
        _depth: usize,
    ) -> Result<Option<ByteValues>> {
        let width = self.width as usize;
        ctx.check_decoded(Some(id), count, count.checked_mul(width))?;
        let bytes = self.bytes(ctx, count)?;
        Ok(Some(ByteValues {
            offsets: (0..=count).map(|i| (i * width) as u32).collect(),
            data: bytes.to_vec(),
            utf8_checked: false,
        }))
    }

    fn decode_native<T: NativeInt>(
        &self,
        ctx: &Ctx<'_>,
        _id: NodeId,
        count: usize,
    ) -> Result<Option<Vec<T>>> {
        if self.width as usize != T::BYTES {
            return Ok(None);
        }
        let bytes = self.bytes(ctx, count)?;
        Ok(Some(bytes.chunks_exact(T::BYTES).map(T::get_le).collect()))
    }

    fn select_native<T: NativeInt>(
        &self,
        ctx: &Ctx<'_>,
        _id: NodeId,
        count: usize,
        sel: &Bitmap,
    ) -> Result<Option<Vec<T>>> {
        if self.width as usize != T::BYTES {
            return Ok(None);
        }
        Ok(Some(Plain::select_native::<T>(self, ctx, count, sel)?))
    }

    fn beyond_i64(&self, bytes: usize) -> bool {
        self.width as usize == bytes
    }
}
