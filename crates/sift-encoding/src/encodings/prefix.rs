//! Front coding of byte strings: each string as the length of the prefix it shares with
//! the string before it (an integer node) and the rest (a byte-string node).
//!
//! Sorted strings share long prefixes with their neighbours: a sorted dictionary of dates
//! or names as text, row labels counting up (`X3.3.20031`, `X3.3.20032`, …), URLs under
//! one site. FSST compresses each string on its own and cannot see that the next one
//! repeats most of it; front coding stores the repeated part as one small number. Decoding
//! is sequential (each string starts from the one before), so selections decode the whole
//! node.

use serde::{Deserialize, Serialize};

use crate::byte_values::ByteValues;
use crate::domain::{Domain, Strings, Value};
use crate::encoding::Encoding;
use crate::error::{Result, corrupt};
use crate::tree::{BufferSink, Ctx, NodeId};
use crate::wire::{Reader, Writer};

/// String `i` = the first `shared[i]` bytes of string `i - 1` (none for the first), then
/// `suffixes[i]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Prefix {
    /// The length of the prefix each string shares with the one before.
    pub shared: NodeId,
    /// The rest of each string.
    pub suffixes: NodeId,
}

/// The length of the prefix `a` and `b` share.
pub(crate) fn shared_len(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// Front-codes `values`.
pub(crate) fn encode(values: &[&[u8]], sink: &mut BufferSink, depth: u8) -> NodeId {
    let id = sink.reserve_node();
    let mut shared = Vec::with_capacity(values.len());
    let mut suffixes = Vec::with_capacity(values.len());
    let mut prev: &[u8] = &[];
    for &v in values {
        let k = shared_len(prev, v);
        shared.push(k as i64);
        suffixes.push(&v[k..]);
        prev = v;
    }
    let child_depth = depth.saturating_sub(1);
    let shared = i64::encode(&shared, sink, child_depth);
    let suffixes = Strings::encode(&suffixes, None, sink, child_depth);
    sink.set_node(id, Prefix { shared, suffixes });
    id
}

impl Encoding for Prefix {
    const ID: u8 = 18;
    const NAME: &'static str = "prefix";
    const DOMAINS: &'static [Domain] = &[Domain::Bytes];

    fn write(&self, w: &mut Writer) {
        w.varint(u64::from(self.shared));
        w.varint(u64::from(self.suffixes));
    }

    fn read(r: &mut Reader<'_>) -> Result<Self> {
        Ok(Self {
            shared: r.varint_u32("prefix shared")?,
            suffixes: r.varint_u32("prefix suffixes")?,
        })
    }

    fn children(&self) -> Vec<NodeId> {
        vec![self.shared, self.suffixes]
    }

    fn decode_bytes(
        &self,
        ctx: &Ctx<'_>,
        id: NodeId,
        count: usize,
        depth: usize,
    ) -> Result<Option<ByteValues>> {
        let shared = i64::decode(ctx, ctx.child(id, self.shared)?, count, depth + 1)?;
        let suffixes = Strings::decode(ctx, ctx.child(id, self.suffixes)?, count, depth + 1)?;
        // The output's size, checked against the chunk's decode budget before it is
        // allocated: a hostile file could otherwise repeat a long prefix in every row.
        let mut total = Some(suffixes.data.len());
        let mut prev_len = 0usize;
        for (i, &k) in shared.iter().enumerate() {
            let k = usize::try_from(k)
                .ok()
                .filter(|&k| k <= prev_len)
                .ok_or_else(|| {
                    corrupt(format!(
                        "node {id}: string {i} shares {k} bytes with a string of {prev_len}"
                    ))
                })?;
            total = total.and_then(|t| t.checked_add(k));
            prev_len = k + suffixes.value(i).len();
        }
        ctx.check_decoded(Some(id), count, total)?;
        let mut out = ByteValues::with_capacity(count, total.unwrap_or(0));
        let mut start = 0usize;
        for (i, &k) in shared.iter().enumerate() {
            let next = out.data.len();
            // `k` is at most the previous string's length (checked above).
            out.data.extend_from_within(start..start + k as usize);
            out.push(suffixes.value(i));
            start = next;
        }
        Ok(Some(out))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn round_trip(mut values in proptest::collection::vec(proptest::collection::vec(0u8..4, 0..12), 0..300), sort in any::<bool>()) {
            if sort {
                values.sort();
            }
            let refs: Vec<&[u8]> = values.iter().map(Vec::as_slice).collect();
            let mut sink = BufferSink::default();
            let root = encode(&refs, &mut sink, 3);
            let out = sink.decode_with(|ctx| Strings::decode(ctx, root, refs.len(), 0)).unwrap();
            let got: Vec<&[u8]> = (0..out.len()).map(|i| out.value(i)).collect();
            prop_assert_eq!(got, refs);
        }
    }

    #[test]
    fn a_prefix_longer_than_the_string_before_is_an_error() {
        let refs: Vec<&[u8]> = vec![b"abc", b"abd", b"x"];
        let mut sink = BufferSink::default();
        let root = encode(&refs, &mut sink, 2);
        let crate::registry::Node::Prefix(p) = sink.nodes[root as usize].clone() else {
            panic!("not a prefix node");
        };
        // Claim the third string shares 9 bytes with the second.
        let shared = i64::encode(&[0, 2, 9], &mut sink, 1);
        sink.nodes[root as usize] = Prefix { shared, ..p }.into();
        let err = sink
            .decode_with(|ctx| Strings::decode(ctx, root, 3, 0))
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("shares 9 bytes with a string of 3"),
            "{err}"
        );
    }
}
