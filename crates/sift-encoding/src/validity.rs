//! Where a chunk's non-null values go: a boolean node tree (bit set = value present),
//! cascaded like any boolean column into runs when nulls cluster, as they do in real data
//! (the missing values of a day, of a sensor, of an optional field that was added late).
//! A raw bitmap costs one bit per row however few the nulls; runs cost a few bits per run.

use arrow_buffer::BooleanBuffer;
use sift_bits::Bitmap;

use crate::cascade::{Ctx, MAX_CASCADE, Value, constant};
use crate::error::{Result, corrupt};
use crate::filter::set_range;
use crate::node::{BufferSink, Node, Validity};
use crate::rle;

/// Encodes the validity of a chunk that has some nulls and some values. Its nodes follow
/// the values' tree, which must already be in `sink` (its root is node 0).
pub(crate) fn encode(valid: &BooleanBuffer, sink: &mut BufferSink) -> Validity {
    let bits: Vec<bool> = valid.iter().collect();
    let root = bool::encode(&bits, sink, MAX_CASCADE);
    Validity::Encoded { root }
}

/// The validity of a chunk of `len` rows: `None` when every row is valid.
pub(crate) fn decode(ctx: &Ctx<'_>, len: usize) -> Result<Option<Bitmap>> {
    match ctx.enc.validity {
        Validity::AllValid => Ok(None),
        Validity::AllNull => Ok(Some(Bitmap::zeros(len))),
        Validity::Encoded { root } => decode_node(ctx, root, len).map(Some),
    }
}

/// Decodes the boolean tree at `root` as a bitmap of `len` bits, word by word rather than
/// through a `Vec<bool>` (validity is decoded for every nullable chunk read).
fn decode_node(ctx: &Ctx<'_>, root: u32, len: usize) -> Result<Bitmap> {
    let node = ctx.node(root, 0).map_err(|e| in_validity(&e))?;
    match node {
        Node::Bitmap { buffer } => {
            let words = len.div_ceil(64);
            let bytes = ctx.bufs.get(*buffer, words * 8)?;
            Bitmap::from_words(le_words(&bytes[..words * 8]), len)
                .ok_or_else(|| corrupt("validity bitmap too short"))
        }
        Node::Constant { value } => Ok(if constant::<bool>(value)? {
            Bitmap::ones(len)
        } else {
            Bitmap::zeros(len)
        }),
        Node::Rle {
            values,
            runs,
            lengths,
        } => {
            let (vals, lens) = rle::runs::<bool>(ctx, root, (*values, *runs, *lengths), len, 0)?;
            let mut words = vec![0u64; len.div_ceil(64)];
            let mut start = 0usize;
            for (v, n) in vals.into_iter().zip(lens) {
                // `runs` checked that the lengths add up to `len`.
                let end = start + n as usize;
                if v {
                    set_range(&mut words, start, end);
                }
                start = end;
            }
            Bitmap::from_words(words, len).ok_or_else(|| corrupt("validity bitmap too short"))
        }
        node => Err(corrupt(format!(
            "validity node {root} ({}) cannot hold booleans",
            node.label()
        ))),
    }
}

/// Little-endian bytes as words (a copy; a short tail is zero-padded).
fn le_words(bytes: &[u8]) -> Vec<u64> {
    let mut words = vec![0u64; bytes.len().div_ceil(8)];
    bytemuck::cast_slice_mut::<u64, u8>(&mut words)[..bytes.len()].copy_from_slice(bytes);
    if cfg!(target_endian = "big") {
        words.iter_mut().for_each(|w| *w = u64::from_le(*w));
    }
    words
}

fn in_validity(e: &crate::EncodingError) -> crate::EncodingError {
    corrupt(format!("validity: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::ColumnEncoding;
    use proptest::prelude::*;

    /// Encodes `bits` as the validity of a chunk whose values' tree is one plain node, and
    /// decodes it back.
    fn round_trip(bits: &[bool]) -> std::result::Result<(Bitmap, String), String> {
        let mut sink = BufferSink::default();
        let buffer = sink.buffer(vec![]);
        sink.push_node(Node::Plain { width: 1, buffer });
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
    fn clustered_nulls_are_runs_scattered_nulls_a_bitmap() -> std::result::Result<(), String> {
        // A day's cancelled flights at its end: a few long runs.
        let clustered: Vec<bool> = (0..65_536).map(|i| i % 900 < 870).collect();
        let (_, shape) = round_trip(&clustered)?;
        assert!(shape.starts_with("rle"), "{shape}");
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
        let plain = Node::Plain {
            width: 1,
            buffer: 0,
        };
        check(vec![plain.clone()], 5, "node 5 does not exist");
        check(vec![plain.clone()], 0, "cannot hold booleans");
        // A bitmap buffer shorter than the chunk.
        check(
            vec![plain.clone(), Node::Bitmap { buffer: 0 }],
            1,
            "holds 8 bytes",
        );
        // Runs that do not cover the chunk.
        check(
            vec![
                plain.clone(),
                Node::Rle {
                    values: 2,
                    runs: 2,
                    lengths: 3,
                },
                Node::Constant { value: vec![1] },
                Node::Constant {
                    value: 7i64.to_le_bytes().to_vec(),
                },
            ],
            1,
            "runs hold 14 values, 100 expected",
        );
    }
}
