//! Booleans: a bitmap, or cascaded into a constant or runs when that is smaller.

use sift_bits::Bitmap;

use crate::cascade::{Ctx, Value};
use crate::error::{Result, corrupt};
use crate::node::{BufferSink, Node, NodeId};
use crate::rle;

impl Value for bool {
    const CONSTANT_BYTES: usize = 1;
    fn le_bytes(self) -> [u8; 8] {
        [u8::from(self), 0, 0, 0, 0, 0, 0, 0]
    }
    fn from_le_bytes8(b: [u8; 8]) -> Self {
        b[0] != 0
    }

    fn encode(values: &[bool], sink: &mut BufferSink, depth: u8) -> NodeId {
        if let Some(&first) = values.first()
            && values.iter().all(|&v| v == first)
        {
            return sink.push_node(Node::Constant {
                value: vec![u8::from(first)],
            });
        }
        let runs = 1 + values.windows(2).filter(|w| w[0] != w[1]).count();
        // A run costs its length (a few bits once bit-packed) against one bit per value in
        // the bitmap; only long runs pay off.
        if depth > 1 && runs * 16 < values.len() {
            return rle::encode(values, sink, depth);
        }
        let buffer = sink.buffer(Bitmap::from_bools(values.iter().copied()).to_le_bytes());
        sink.push_node(Node::Bitmap { buffer })
    }

    fn decode_node(ctx: &Ctx<'_>, id: NodeId, count: usize, depth: usize) -> Result<Vec<bool>> {
        match ctx.node(id, depth)? {
            Node::Bitmap { buffer } => {
                let words = count.div_ceil(64);
                let bytes = ctx.bufs.get(*buffer, words * 8)?;
                Ok((0..count)
                    .map(|i| bytes[i / 8] >> (i % 8) & 1 == 1)
                    .collect())
            }
            Node::Constant { value } => match value.as_slice() {
                [b] => Ok(vec![*b != 0; count]),
                _ => Err(corrupt(format!(
                    "boolean constant of {} bytes",
                    value.len()
                ))),
            },
            Node::Rle {
                values,
                runs,
                lengths,
            } => rle::decode(ctx, id, (*values, *runs, *lengths), count, depth),
            node => Err(corrupt(format!(
                "node {id} ({}) cannot hold booleans",
                node.label()
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn round_trip(values: &[bool]) -> std::result::Result<String, TestCaseError> {
        let mut sink = BufferSink::default();
        let root = bool::encode(values, &mut sink, crate::cascade::MAX_CASCADE);
        prop_assert_eq!(root, 0);
        let out = sink
            .decode_with(|ctx| bool::decode(ctx, 0, values.len(), 0))
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(out.as_slice(), values);
        Ok(sink.encoding().shape())
    }

    proptest! {
        #[test]
        fn random(values in proptest::collection::vec(any::<bool>(), 0..2000)) {
            round_trip(&values)?;
        }
        #[test]
        fn long_runs(runs in proptest::collection::vec(1usize..500, 1..40)) {
            let values: Vec<bool> = runs.iter().enumerate().flat_map(|(i, &n)| std::iter::repeat_n(i % 2 == 0, n)).collect();
            round_trip(&values)?;
        }
    }

    #[test]
    fn picks_constant_and_runs() -> std::result::Result<(), TestCaseError> {
        assert_eq!(round_trip(&[true; 100])?, "const");
        let runs: Vec<bool> = (0..10_000).map(|i| (i / 1000) % 2 == 0).collect();
        // Equal run lengths cascade further, into a constant.
        assert_eq!(round_trip(&runs)?, "rle(bitmap, const)");
        Ok(())
    }
}
