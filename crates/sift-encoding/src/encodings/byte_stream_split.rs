//! Byte-stream split for doubles (Parquet's `BYTE_STREAM_SPLIT`): byte `k` of every value
//! goes to stream `k`, and each of the eight streams cascades as integers on its own. The
//! sign, exponent and leading mantissa bytes of real measurements repeat (a dictionary or
//! runs), the trailing bytes do not (eight bits each); ALP_RD makes one cut, this makes
//! seven. Selections decode only the selected bytes of each stream.

use serde::{Deserialize, Serialize};
use sift_bits::Bitmap;

use crate::domain::{Domain, FloatBits, Value, decode_indices, select_indices};
use crate::encoding::Encoding;
use crate::error::Result;
use crate::tree::{BufferSink, Ctx, NodeId};
use crate::wire::{Reader, Writer};

/// Bytes per value: doubles.
const STREAMS: usize = 8;

/// Eight integer streams (children), stream `k` holding byte `k` (little-endian) of every
/// value's bit pattern, each in `0..=255`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ByteStreamSplit {
    /// The streams, least significant byte first.
    pub streams: [NodeId; STREAMS],
}

/// Splits doubles into byte streams, each cascading on its own.
pub(crate) fn encode(values: &[FloatBits], sink: &mut BufferSink, depth: u8) -> NodeId {
    let id = sink.reserve_node();
    let mut streams = [0; STREAMS];
    for (k, stream) in streams.iter_mut().enumerate() {
        let bytes: Vec<i64> = values
            .iter()
            .map(|v| (v.0 >> (8 * k) & 0xFF) as i64)
            .collect();
        *stream = i64::encode(&bytes, sink, depth.saturating_sub(1));
    }
    sink.set_node(id, ByteStreamSplit { streams });
    id
}

impl ByteStreamSplit {
    /// Joins the streams' bytes back into doubles.
    fn join(streams: Vec<Vec<u64>>) -> Vec<FloatBits> {
        let n = streams.first().map_or(0, Vec::len);
        let mut out = vec![0u64; n];
        for (k, stream) in streams.iter().enumerate() {
            for (v, &b) in out.iter_mut().zip(stream) {
                *v |= b << (8 * k);
            }
        }
        out.into_iter().map(FloatBits).collect()
    }
}

impl Encoding for ByteStreamSplit {
    const ID: u8 = 13;
    const NAME: &'static str = "bss";
    const DOMAINS: &'static [Domain] = &[Domain::Float];

    fn write(&self, w: &mut Writer) {
        for &s in &self.streams {
            w.varint(u64::from(s));
        }
    }

    fn read(r: &mut Reader<'_>) -> Result<Self> {
        let mut streams = [0; STREAMS];
        for s in &mut streams {
            *s = r.varint_u32("bss stream")?;
        }
        Ok(Self { streams })
    }

    fn children(&self) -> Vec<NodeId> {
        self.streams.to_vec()
    }

    fn decode<V: Value>(
        &self,
        ctx: &Ctx<'_>,
        id: NodeId,
        count: usize,
        depth: usize,
    ) -> Result<Option<Vec<V>>> {
        if V::DOMAIN != Domain::Float {
            return Ok(None);
        }
        let streams = self
            .streams
            .iter()
            .map(|&s| decode_indices(ctx, ctx.child(id, s)?, count, 0xFF, depth + 1))
            .collect::<Result<Vec<_>>>()?;
        Ok(V::from_floats(Self::join(streams)))
    }

    /// The selected bytes of every stream, then joined.
    fn select<V: Value>(
        &self,
        ctx: &Ctx<'_>,
        id: NodeId,
        count: usize,
        depth: usize,
        sel: &Bitmap,
    ) -> Result<Option<Vec<V>>> {
        if V::DOMAIN != Domain::Float {
            return Ok(None);
        }
        let streams = self
            .streams
            .iter()
            .map(|&s| select_indices(ctx, ctx.child(id, s)?, count, 0x100, depth + 1, sel))
            .collect::<Result<Vec<_>>>()?;
        Ok(V::from_floats(Self::join(streams)))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::encodings::Constant;
    use crate::tree::ColumnEncoding;
    use crate::tree::MAX_CASCADE;
    use crate::{Node, Validity};

    /// Temperatures with two decimals' worth of noise in the low mantissa bits: real
    /// doubles, whose high bytes repeat.
    fn measurements(n: usize) -> Vec<FloatBits> {
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                FloatBits((15.0 + (x % 1000) as f64 / 77.0).to_bits())
            })
            .collect()
    }

    #[test]
    fn round_trips_all_and_selected() {
        let values = measurements(5000);
        let mut sink = BufferSink::default();
        let root = encode(&values, &mut sink, MAX_CASCADE);
        assert_eq!(root, 0);
        assert!(sink.encoding().describe().starts_with("bss("));
        let all = sink
            .decode_with(|ctx| FloatBits::decode(ctx, 0, values.len(), 0))
            .unwrap();
        assert_eq!(all, values);
        let sel = Bitmap::from_bools((0..values.len()).map(|i| i % 7 == 3));
        let picked = sink
            .decode_with(|ctx| FloatBits::select(ctx, 0, values.len(), 0, &sel))
            .unwrap();
        let want: Vec<FloatBits> = sel.iter_ones().map(|i| values[i]).collect();
        assert_eq!(picked, want);
    }

    #[test]
    fn the_high_bytes_cascade_into_few_bits() {
        let values = measurements(65_536);
        let mut sink = BufferSink::default();
        encode(&values, &mut sink, MAX_CASCADE);
        // Eight bytes a value plain; the sign and exponent bytes cost almost nothing.
        assert!(
            sink.stored_size() < values.len() * 7,
            "{} bytes",
            sink.stored_size()
        );
    }

    #[test]
    fn a_stream_byte_out_of_range_is_an_error() {
        let big = |v: i64| {
            Node::Constant(Constant {
                value: v.to_le_bytes().to_vec(),
            })
        };
        let mut nodes = vec![Node::ByteStreamSplit(ByteStreamSplit {
            streams: [1, 2, 3, 4, 5, 6, 7, 8],
        })];
        nodes.extend((0..8).map(|k| big(if k == 5 { 256 } else { 1 })));
        let enc = ColumnEncoding {
            validity: Validity::AllValid,
            nodes,
        };
        let ctx = Ctx::new(&enc, &[]);
        let err = FloatBits::decode(&ctx, 0, 4, 0).unwrap_err().to_string();
        assert!(err.contains("index 256 out of range 0..=255"), "{err}");
        let sel = Bitmap::ones(4);
        let err = FloatBits::select(&ctx, 0, 4, 0, &sel)
            .unwrap_err()
            .to_string();
        assert!(err.contains("index 256 out of range 0..=255"), "{err}");
    }
}
