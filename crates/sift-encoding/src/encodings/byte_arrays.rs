//! Length-prefixed byte strings: Parquet's PLAIN byte arrays, each value a 4-byte
//! little-endian length and then its bytes, read in place. A node of this encoding over a
//! PLAIN page's bytes (or a dictionary page's) lets a string column be read without
//! splitting the lengths from the bytes first: a selection walks the lengths and copies
//! only the selected strings (a projected string column behind a selective filter copied
//! every page whole, twice, before). Sift's writer never chooses it: its own `bytes` keeps
//! the lengths apart, where they cascade.

use serde::{Deserialize, Serialize};
use sift_bits::Bitmap;

use crate::byte_values::{ByteValues, MAX_CHUNK_BYTES};
use crate::domain::Domain;
use crate::encoding::Encoding;
use crate::error::{Result, corrupt};
use crate::tree::{Ctx, NodeId};
use crate::wire::{Reader, Writer};

/// Byte strings in buffer `buffer`, each a 4-byte little-endian length and its bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ByteArrays {
    /// The buffer holding the strings.
    pub buffer: u32,
}

impl ByteArrays {
    /// Walks the first `count` strings of `buf`, handing each one's index and bytes to
    /// `each` in order; an error when one's length runs past the buffer or fewer than
    /// `count` are there.
    fn walk<'a>(buf: &'a [u8], count: usize, mut each: impl FnMut(usize, &'a [u8])) -> Result<()> {
        let mut rest = buf;
        for i in 0..count {
            let Some((len, tail)) = rest.split_first_chunk::<4>() else {
                return Err(corrupt(format!(
                    "{count} byte arrays expected, {i} found in {} bytes",
                    buf.len()
                )));
            };
            let len = u32::from_le_bytes(*len) as usize;
            let Some((value, tail)) = tail.split_at_checked(len) else {
                return Err(corrupt(format!(
                    "byte array {i} of {len} bytes runs past the end of its {} bytes",
                    buf.len()
                )));
            };
            each(i, value);
            rest = tail;
        }
        Ok(())
    }
}

impl Encoding for ByteArrays {
    const ID: u8 = 21;
    const NAME: &'static str = "byte_arrays";
    const DOMAINS: &'static [Domain] = &[Domain::Bytes];

    fn write(&self, w: &mut Writer) {
        w.varint(u64::from(self.buffer));
    }

    fn read(r: &mut Reader<'_>) -> Result<Self> {
        Ok(Self {
            buffer: r.varint_u32("byte arrays buffer")?,
        })
    }

    fn decode_bytes(
        &self,
        ctx: &Ctx<'_>,
        _id: NodeId,
        count: usize,
        _depth: usize,
    ) -> Result<Option<ByteValues>> {
        let buf = ctx.bufs.get(self.buffer, 0)?;
        // The strings take the buffer less their lengths: the allocation is the buffer's.
        let bytes = buf.len().saturating_sub(4 * count).min(MAX_CHUNK_BYTES);
        let mut out = ByteValues::with_capacity(count.min(buf.len() / 4), bytes);
        Self::walk(buf, count, |_, v| out.push(v))?;
        Ok(Some(out))
    }

    /// Every length up to the last selected string is read; only the selected strings
    /// are copied.
    fn select_bytes(
        &self,
        ctx: &Ctx<'_>,
        _id: NodeId,
        count: usize,
        _depth: usize,
        sel: &Bitmap,
    ) -> Result<Option<ByteValues>> {
        let buf = ctx.bufs.get(self.buffer, 0)?;
        let Some(last) = sel.iter_ones().last() else {
            return Ok(Some(ByteValues::with_capacity(0, 0)));
        };
        let mut out = ByteValues::with_capacity(sel.count_ones(), 0);
        let mut next = sel.iter_ones().peekable();
        Self::walk(buf, (last + 1).min(count), |i, v| {
            if next.next_if_eq(&i).is_some() {
                out.push(v);
            }
        })?;
        Ok(Some(out))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::domain::Strings;
    use crate::tree::ColumnEncoding;
    use crate::{Node, Validity};

    fn prefixed(values: &[Vec<u8>]) -> Vec<u8> {
        let mut out = Vec::new();
        for v in values {
            out.extend_from_slice(&(v.len() as u32).to_le_bytes());
            out.extend_from_slice(v);
        }
        out
    }

    fn node() -> ColumnEncoding {
        ColumnEncoding {
            validity: Validity::AllValid,
            nodes: vec![Node::ByteArrays(ByteArrays { buffer: 0 })],
        }
    }

    proptest::proptest! {
        /// All strings decoded, and a random selection, against the strings written.
        #[test]
        fn decodes_and_selects_what_was_written(
            values in proptest::collection::vec(proptest::collection::vec(0u8..=255, 0..40), 0..200),
            picks in proptest::collection::vec(proptest::bool::ANY, 200),
        ) {
            let buf = prefixed(&values);
            let enc = node();
            let bufs = [buf.as_slice()];
            let ctx = Ctx::new(&enc, &bufs);
            let all = Strings::decode(&ctx, 0, values.len(), 0).unwrap();
            let got: Vec<&[u8]> = (0..all.len()).map(|i| all.value(i)).collect();
            let want: Vec<&[u8]> = values.iter().map(Vec::as_slice).collect();
            proptest::prop_assert_eq!(got, want);
            let sel = Bitmap::from_bools(picks[..values.len()].iter().copied());
            let picked = Strings::select(&ctx, 0, values.len(), 0, &sel).unwrap();
            let got: Vec<&[u8]> = (0..picked.len()).map(|i| picked.value(i)).collect();
            let want: Vec<&[u8]> = sel.iter_ones().map(|i| values[i].as_slice()).collect();
            proptest::prop_assert_eq!(got, want);
        }
    }

    /// A length past the end, or fewer strings than asked for, is an error naming them;
    /// a selection reads no further than its last string.
    #[test]
    fn cut_buffers_are_errors() {
        let mut buf = prefixed(&[b"ab".to_vec(), b"cde".to_vec()]);
        let enc = node();
        let bufs = [buf.as_slice()];
        let ctx = Ctx::new(&enc, &bufs);
        let err = Strings::decode(&ctx, 0, 3, 0).unwrap_err().to_string();
        assert!(err.contains("3 byte arrays expected, 2 found"), "{err}");
        let first = Bitmap::from_bools([true, false, false]);
        assert_eq!(
            Strings::select(&ctx, 0, 3, 0, &first).unwrap().value(0),
            b"ab"
        );
        buf.extend_from_slice(&u32::MAX.to_le_bytes());
        let bufs = [buf.as_slice()];
        let ctx = Ctx::new(&enc, &bufs);
        let err = Strings::decode(&ctx, 0, 3, 0).unwrap_err().to_string();
        assert!(err.contains("runs past the end"), "{err}");
    }
}
