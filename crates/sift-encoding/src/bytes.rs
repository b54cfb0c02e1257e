//! Byte strings (utf8, binary, fixed-size binary): plain or sorted dictionary.

use std::collections::HashMap;

use sift_bits::pack::bit_width;

use crate::error::{Result, corrupt};
use crate::int::{decode_indices, encode_for, encode_ints};
use crate::node::{BufferSink, Buffers, ColumnEncoding, MAX_DEPTH, Node, NodeId};

/// Decoded byte strings: value `i` is `data[offsets[i]..offsets[i + 1]]`.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct ByteValues {
    pub offsets: Vec<usize>,
    pub data: Vec<u8>,
}

impl ByteValues {
    pub(crate) fn value(&self, i: usize) -> &[u8] {
        &self.data[self.offsets[i]..self.offsets[i + 1]]
    }
}

/// Encodes byte strings; `fixed` is the width of fixed-size binary values.
///
/// A sorted dictionary is chosen when its estimated size is smaller than plain storage.
pub(crate) fn encode_bytes(values: &[&[u8]], fixed: Option<u32>, sink: &mut BufferSink) -> NodeId {
    if let Some(dict) = Dictionary::build(values)
        && dict.estimated_size(values.len()) < plain_size(values)
    {
        let id = sink.reserve_node();
        let len = dict.sorted.len() as u32;
        let vals = encode_plain(&dict.sorted, fixed, sink);
        let codes = encode_for(0, &dict.codes, sink);
        sink.set_node(
            id,
            Node::Dict {
                values: vals,
                len,
                codes,
            },
        );
        return id;
    }
    encode_plain(values, fixed, sink)
}

fn plain_size(values: &[&[u8]]) -> usize {
    let total: usize = values.iter().map(|v| v.len()).sum();
    let max_len = values.iter().map(|v| v.len()).max().unwrap_or(0);
    total + values.len() * bit_width(max_len as u64) as usize / 8
}

fn encode_plain(values: &[&[u8]], fixed: Option<u32>, sink: &mut BufferSink) -> NodeId {
    let data = values.concat();
    match fixed {
        Some(width) => {
            let buffer = sink.buffer(data);
            sink.push_node(Node::Plain { width, buffer })
        }
        None => {
            let id = sink.reserve_node();
            let lens: Vec<u64> = values.iter().map(|v| v.len() as u64).collect();
            let lengths = encode_ints(&lens, sink);
            let data = sink.buffer(data);
            sink.set_node(id, Node::Bytes { lengths, data });
            id
        }
    }
}

struct Dictionary<'a> {
    sorted: Vec<&'a [u8]>,
    codes: Vec<u64>,
}

impl<'a> Dictionary<'a> {
    /// Builds a sorted dictionary, giving up early when values are mostly distinct.
    fn build(values: &[&'a [u8]]) -> Option<Self> {
        let limit = values.len() / 2 + 1;
        let mut first_codes: HashMap<&[u8], u32> = HashMap::new();
        let mut codes = Vec::with_capacity(values.len());
        for v in values {
            let next = first_codes.len() as u32;
            let c = *first_codes.entry(v).or_insert(next);
            if first_codes.len() > limit {
                return None;
            }
            codes.push(c);
        }
        // Sort the distinct values and renumber codes so that code order is value order.
        let mut distinct: Vec<(&[u8], u32)> = first_codes.into_iter().collect();
        distinct.sort_unstable();
        let mut rank = vec![0u64; distinct.len()];
        for (r, (_, first)) in distinct.iter().enumerate() {
            rank[*first as usize] = r as u64;
        }
        let codes = codes.into_iter().map(|c| rank[c as usize]).collect();
        Some(Self {
            sorted: distinct.into_iter().map(|(v, _)| v).collect(),
            codes,
        })
    }

    fn estimated_size(&self, n: usize) -> usize {
        let code_bits = bit_width(self.sorted.len().saturating_sub(1) as u64) as usize;
        plain_size(&self.sorted) + n * code_bits / 8
    }
}

/// Decodes `count` byte strings from node `id`.
pub(crate) fn decode_bytes(
    enc: &ColumnEncoding,
    id: NodeId,
    count: usize,
    bufs: &Buffers<'_>,
    depth: usize,
) -> Result<ByteValues> {
    if depth > MAX_DEPTH {
        return Err(corrupt(format!("encoding nested deeper than {MAX_DEPTH}")));
    }
    match enc.node(id)? {
        Node::Plain { width, buffer } => {
            let width = *width as usize;
            let total = count
                .checked_mul(width)
                .ok_or_else(|| corrupt("fixed width overflows"))?;
            let bytes = bufs.get(*buffer, total)?;
            Ok(ByteValues {
                offsets: (0..=count).map(|i| i * width).collect(),
                data: bytes[..total].to_vec(),
            })
        }
        Node::Bytes { lengths, data } => {
            enc.child(id, *lengths)?;
            let bytes = bufs.get(*data, 0)?;
            let lens = decode_indices(enc, *lengths, count, bytes.len() as u64, bufs)?;
            let mut offsets = Vec::with_capacity(count + 1);
            let mut end = 0usize;
            offsets.push(0);
            for l in lens {
                end = end
                    .checked_add(l as usize)
                    .filter(|&e| e <= bytes.len())
                    .ok_or_else(|| {
                        corrupt(format!(
                            "string lengths exceed the {} data bytes",
                            bytes.len()
                        ))
                    })?;
                offsets.push(end);
            }
            Ok(ByteValues {
                offsets,
                data: bytes[..end].to_vec(),
            })
        }
        Node::Dict { values, len, codes } => {
            enc.child(id, *values)?;
            enc.child(id, *codes)?;
            let len = *len as usize;
            if len > count.max(1) || (len == 0 && count > 0) {
                return Err(corrupt(format!(
                    "dictionary of {len} entries for {count} values"
                )));
            }
            let dict = decode_bytes(enc, *values, len, bufs, depth + 1)?;
            let codes = decode_indices(enc, *codes, count, len.saturating_sub(1) as u64, bufs)?;
            let total: usize = codes.iter().map(|&c| dict.value(c as usize).len()).sum();
            let mut out = ByteValues {
                offsets: Vec::with_capacity(count + 1),
                data: Vec::with_capacity(total),
            };
            out.offsets.push(0);
            for c in codes {
                out.data.extend_from_slice(dict.value(c as usize));
                out.offsets.push(out.data.len());
            }
            Ok(out)
        }
        other => Err(corrupt(format!(
            "node {id} ({other:?}) cannot hold byte strings"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn round_trip(
        values: &[Vec<u8>],
        fixed: Option<u32>,
    ) -> std::result::Result<(), TestCaseError> {
        let refs: Vec<&[u8]> = values.iter().map(Vec::as_slice).collect();
        let mut sink = BufferSink::default();
        let root = encode_bytes(&refs, fixed, &mut sink);
        prop_assert_eq!(root, 0);
        let enc = ColumnEncoding {
            validity: crate::Validity::AllValid,
            nodes: sink.nodes,
        };
        let bufs: Vec<&[u8]> = sink.buffers.iter().map(Vec::as_slice).collect();
        let out = decode_bytes(&enc, root, values.len(), &Buffers(&bufs), 0)
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(out.offsets.len(), values.len() + 1);
        for (i, v) in values.iter().enumerate() {
            prop_assert_eq!(out.value(i), v.as_slice());
        }
        Ok(())
    }

    proptest! {
        #[test]
        fn variable(values in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..12), 0..200)) {
            round_trip(&values, None)?;
        }
        #[test]
        fn repetitive(values in proptest::collection::vec(0u8..4, 0..300)) {
            let values: Vec<Vec<u8>> = values.into_iter().map(|v| vec![b'a'; v as usize]).collect();
            round_trip(&values, None)?;
        }
        #[test]
        fn fixed(values in proptest::collection::vec(proptest::collection::vec(0u8..3, 3), 0..200)) {
            round_trip(&values, Some(3))?;
        }
    }
}
