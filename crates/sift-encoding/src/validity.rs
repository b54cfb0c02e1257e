//! Where a chunk's non-null values go: a boolean node tree (bit set = value present),
//! cascaded like any boolean column into runs when nulls cluster, as they do in real data
//! (the missing values of a day, of a sensor, of an optional field that was added late).
//! A raw bitmap costs one bit per row however few the nulls; runs cost a few bits per run;
//! rare scattered nulls are stored as their positions (a patch over the constant `true`).

use arrow_buffer::BooleanBuffer;
use sift_bits::Bitmap;

use crate::domain::Value;
use crate::error::{Result, corrupt};
use crate::predicate::BoolEq;
use crate::tree::MAX_CASCADE;
use crate::tree::{BufferSink, Ctx, Validity};

/// Encodes the validity of a chunk that has some nulls and some values. Its nodes follow
/// the values' tree, which must already be in `sink` (its root is node 0).
pub(crate) fn encode(valid: &BooleanBuffer, sink: &mut BufferSink) -> Validity {
    let bits: Vec<bool> = valid.iter().collect();
    let root = bool::encode(&bits, sink, MAX_CASCADE);
    Validity::Encoded { root }
}

/// The validity of a chunk of `len` rows: `None` when every row is valid. Decoded as the
/// rows where the boolean tree is `true`, so each encoding answers with words and ranges
/// (a bitmap as is, runs as bit ranges), never a value at a time.
pub(crate) fn decode(ctx: &Ctx<'_>, len: usize) -> Result<Option<Bitmap>> {
    match ctx.enc.validity {
        Validity::AllValid => Ok(None),
        Validity::AllNull => Ok(Some(Bitmap::zeros(len))),
        Validity::Encoded { root } => bool::filter(ctx, root, len, 0, &BoolEq(true))
            .map(Some)
            .map_err(|e| in_validity(&e)),
    }
}

fn in_validity(e: &crate::EncodingError) -> crate::EncodingError {
    corrupt(format!("validity: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Node;
    use crate::tree::ColumnEncoding;
    use proptest::prelude::*;

    /// Encodes `bits` as the validity of a chunk whose values' tree is one plain node, and
    /// decodes it back.
    fn round_trip(bits: &[bool]) -> std::result::Result<(Bitmap, String), String> {
        let mut sink = BufferSink::default();
        let buffer = sink.buffer(vec![]);
        sink.push_node(Node::Plain(crate::encodings::Plain { width: 1, buffer }));
        let validity = encode(&BooleanBuffer::from(bits.to_vec()), &mut sink);
        let enc = ColumnEncoding {
            validity,
            nodes: sink.nodes.clone(),
        };
        let bufs: Vec<&[u8]> = sink.buffers.iter().map(Vec::as_slice).collect();
        let ctx = Ctx::new(&enc, &bufs);
        let out = decode(&ctx, bits.len())
            .map_err(|e| e.to_string())?
            .ok_or("no bitmap")?;
        Ok((out, enc.validity_shape().unwrap_or_default()))
    }

    proptest! {
        #[test]
        fn bitmap_equals_the_input(
            runs in proptest::collection::vec((any::<bool>(), 1usize..300), 1..40),
            noise in proptest::collection::vec(0usize..5000, 0..20),
        ) {
            let mut bits: Vec<bool> = runs.iter().flat_map(|&(v, n)| std::iter::repeat_n(v, n)).collect();
            for i in noise {
                if let Some(b) = bits.get_mut(i) {
                    *b = !*b;
                }
            }
            let (out, _) = round_trip(&bits).map_err(TestCaseError::fail)?;
            prop_assert_eq!(out, Bitmap::from_bools(bits.iter().copied()));
        }
    }

    #[test]
    fn clustered_nulls_are_runs_rare_ones_positions_frequent_ones_a_bitmap()
    -> std::result::Result<(), String> {
        // A day's cancelled flights at its end: a few long runs.
        let clustered: Vec<bool> = (0..65_536).map(|i| i % 900 < 870).collect();
        let (_, shape) = round_trip(&clustered)?;
        assert!(shape.starts_with("rle"), "{shape}");
        // One row in about a hundred missing, each on its own: their positions are half
        // as many numbers as the runs around them.
        let rare: Vec<bool> = (0..65_536u64)
            .map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 57 != 0)
            .collect();
        let (out, shape) = round_trip(&rare)?;
        assert!(shape.starts_with("patch"), "{shape}");
        assert_eq!(out, Bitmap::from_bools(rare.iter().copied()));
        let scattered: Vec<bool> = (0..65_536).map(|i| i % 7 != 3).collect();
        let (_, shape) = round_trip(&scattered)?;
        assert_eq!(shape, "bitmap");
        Ok(())
    }

    #[test]
    fn hostile_trees_are_errors() {
        let bufs: Vec<&[u8]> = vec![&[0u8; 8]];
        let check = |nodes: Vec<Node>, root: u32, want: &str| {
            let enc = ColumnEncoding {
                validity: Validity::Encoded { root },
                nodes,
            };
            let ctx = Ctx::new(&enc, &bufs);
            let err = decode(&ctx, 100).err().map(|e| e.to_string());
            assert!(
                err.as_deref().is_some_and(|e| e.contains(want)),
                "{err:?} does not contain {want:?}"
            );
        };
        let plain = Node::Plain(crate::encodings::Plain {
            width: 1,
            buffer: 0,
        });
        check(vec![plain.clone()], 5, "node 5 does not exist");
        check(vec![plain.clone()], 0, "cannot hold booleans");
        // A bitmap buffer shorter than the chunk.
        check(
            vec![
                plain.clone(),
                Node::Bitmap(crate::encodings::Bitmap { buffer: 0 }),
            ],
            1,
            "holds 8 bytes",
        );
        // Runs that do not cover the chunk.
        check(
            vec![
                plain.clone(),
                Node::Rle(crate::encodings::Rle {
                    values: 2,
                    runs: 2,
                    lengths: 3,
                }),
                Node::Constant(crate::encodings::Constant { value: vec![1] }),
                Node::Constant(crate::encodings::Constant {
                    value: 7i64.to_le_bytes().to_vec(),
                }),
            ],
            1,
            "runs hold 14 values, 100 expected",
        );
        // Null positions: more than the chunk has rows, and one past its last row.
        let patch = |exceptions: u32, position: i64| {
            vec![
                plain.clone(),
                Node::Patch(crate::encodings::Patch {
                    inner: 2,
                    exceptions,
                    positions: 3,
                    values: 4,
                }),
                Node::Constant(crate::encodings::Constant { value: vec![1] }),
                Node::Constant(crate::encodings::Constant {
                    value: position.to_le_bytes().to_vec(),
                }),
                Node::Constant(crate::encodings::Constant { value: vec![0] }),
            ]
        };
        check(patch(101, 5), 1, "101 exceptions for 100 values");
        check(patch(1, 100), 1, "index 100 out of range 0..=99");
    }
}
