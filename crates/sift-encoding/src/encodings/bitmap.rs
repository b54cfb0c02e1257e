//! Bitmap: booleans as one bit per value (bit `i` of little-endian word `i / 64`). The
//! boolean domain's terminal scheme; the chooser prefers a constant or runs when they are
//! smaller, and validity trees use the same domain.

use serde::{Deserialize, Serialize};
use sift_bits::Bitmap as Bits;

use crate::domain::{Domain, Value, uniform};
use crate::encoding::Encoding;
use crate::error::{Result, corrupt};
use crate::predicate::DomainPred;
use crate::tree::{BufferSink, Ctx, NodeId};
use crate::wire::{Reader, Writer};

/// Booleans as a bitmap in buffer `buffer`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bitmap {
    /// The buffer holding the bits.
    pub buffer: u32,
}

/// Stores booleans as a bitmap.
pub(crate) fn encode(values: &[bool], sink: &mut BufferSink, _depth: u8) -> NodeId {
    let buffer = sink.buffer(Bits::from_bools(values.iter().copied()).to_le_bytes());
    sink.push_node(Bitmap { buffer })
}

impl Bitmap {
    /// The `count` bits as a bitmap (a copy of the buffer's words).
    fn bits(&self, ctx: &Ctx<'_>, count: usize) -> Result<Bits> {
        let words = count.div_ceil(64);
        let bytes = &ctx.bufs.get(self.buffer, words * 8)?[..words * 8];
        Bits::from_words(le_words(bytes), count).ok_or_else(|| corrupt("bitmap too short"))
    }
}

/// Little-endian bytes as words (a copy; a short tail is zero-padded).
fn le_words(bytes: &[u8]) -> Vec<u64> {
    // Bytes that already are aligned words (a bitmap the scan decoded) copied in one pass.
    if let (true, Ok(words)) = (
        cfg!(target_endian = "little"),
        bytemuck::try_cast_slice::<u8, u64>(bytes),
    ) {
        return words.to_vec();
    }
    let mut words = vec![0u64; bytes.len().div_ceil(8)];
    bytemuck::cast_slice_mut::<u64, u8>(&mut words)[..bytes.len()].copy_from_slice(bytes);
    if cfg!(target_endian = "big") {
        words.iter_mut().for_each(|w| *w = u64::from_le(*w));
    }
    words
}

impl Encoding for Bitmap {
    const ID: u8 = 2;
    const NAME: &'static str = "bitmap";
    const DOMAINS: &'static [Domain] = &[Domain::Bool];
    const FILTERS_ENCODED: bool = true;

    fn write(&self, w: &mut Writer) {
        w.varint(u64::from(self.buffer));
    }

    fn read(r: &mut Reader<'_>) -> Result<Self> {
        Ok(Self {
            buffer: r.varint_u32("bitmap buffer")?,
        })
    }

    fn decode<V: Value>(
        &self,
        ctx: &Ctx<'_>,
        _id: NodeId,
        count: usize,
        _depth: usize,
    ) -> Result<Option<Vec<V>>> {
        if V::DOMAIN != Domain::Bool {
            return Ok(None);
        }
        let words = count.div_ceil(64);
        let bytes = ctx.bufs.get(self.buffer, words * 8)?;
        Ok(Some(
            (0..count)
                .map(|i| V::from_le_bytes8([bytes[i / 8] >> (i % 8) & 1, 0, 0, 0, 0, 0, 0, 0]))
                .collect(),
        ))
    }

    /// A boolean predicate is its answers for `true` and `false`: the bitmap itself, its
    /// complement, or uniform; word by word, never value by value (validity is decoded so
    /// for every nullable chunk read).
    fn filter<V: Value, P: DomainPred<V>>(
        &self,
        ctx: &Ctx<'_>,
        _id: NodeId,
        count: usize,
        _depth: usize,
        p: &P,
    ) -> Result<Option<Bits>> {
        if V::DOMAIN != Domain::Bool {
            return Ok(None);
        }
        let on = |b: bool| p.eval(V::from_le_bytes8([u8::from(b), 0, 0, 0, 0, 0, 0, 0]));
        Ok(Some(match (on(true), on(false)) {
            (true, false) => self.bits(ctx, count)?,
            (false, true) => {
                let mut bits = self.bits(ctx, count)?;
                bits.not_assign();
                bits
            }
            (both, _) => uniform(count, both),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn round_trip(values: &[bool]) -> std::result::Result<String, TestCaseError> {
        let mut sink = BufferSink::default();
        let root = bool::encode(values, &mut sink, crate::tree::MAX_CASCADE);
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
