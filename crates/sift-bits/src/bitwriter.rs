//! Appends bit fields of varying width to a word buffer (the output side of PEXT).

/// A little-endian bit appender over a buffer sized up front.
///
/// `put` is branch-free: it always stores the accumulator to the current word and moves on
/// when the word is full. A branchy flush mispredicts at every ragged field boundary, and a
/// read-modify-write of the output word chains store-to-load latencies; this does neither.
pub(crate) struct BitWriter {
    buf: Vec<u64>,
    pos: usize,
    acc: u64,
    fill: u32,
}

impl BitWriter {
    /// A writer reusing `buf`'s allocation, able to take `bits` bits.
    pub(crate) fn new(mut buf: Vec<u64>, bits: usize) -> Self {
        buf.clear();
        // One spare word: `put` stores the (possibly empty) accumulator one past the data.
        buf.resize(bits / 64 + 2, 0);
        Self {
            buf,
            pos: 0,
            acc: 0,
            fill: 0,
        }
    }

    /// Moves the writer out of `slot` (leaving an empty one). Kernels work on the moved-out
    /// local: behind a `&mut` the compiler must assume each store into the buffer may
    /// overwrite the cursor fields and reloads them, chaining every `put` through memory.
    pub(crate) fn take(slot: &mut BitWriter) -> BitWriter {
        std::mem::replace(
            slot,
            BitWriter {
                buf: Vec::new(),
                pos: 0,
                acc: 0,
                fill: 0,
            },
        )
    }

    /// Appends the low `n` bits of `x` (`n` in 0..=64). `x` must have no bits at or above `n`.
    #[inline(always)]
    pub(crate) fn put(&mut self, x: u64, n: u32) {
        debug_assert!(n == 64 || x >> n == 0);
        self.acc |= x << self.fill;
        self.buf[self.pos] = self.acc;
        let total = self.fill + n;
        // `(x >> 1) >> (63 - fill)` is `x >> (64 - fill)`, and 0 (not x) when `fill == 0`.
        let spilled = (x >> 1) >> (63 - self.fill);
        let full = total >= 64;
        self.pos += usize::from(full);
        self.acc = if full { spilled } else { self.acc };
        self.fill = total & 63;
    }

    /// Number of bits written.
    pub(crate) fn bits(&self) -> usize {
        self.pos * 64 + self.fill as usize
    }

    /// The written words (the last one zero-padded).
    pub(crate) fn finish(mut self) -> Vec<u64> {
        let words = self.bits().div_ceil(64);
        // The bits that spilled out of the last full word are only in the accumulator.
        if let Some(slot) = self.buf.get_mut(self.pos) {
            *slot = self.acc;
        }
        self.buf.truncate(words);
        self.buf
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pack::{low_mask, pack};
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn writes_like_pack(fields in proptest::collection::vec((any::<u64>(), 0u32..=64), 0..200)) {
            let total: usize = fields.iter().map(|&(_, n)| n as usize).sum();
            let mut w = BitWriter::new(Vec::new(), total);
            let mut bits = Vec::new();
            for &(x, n) in &fields {
                w.put(x & low_mask(n), n);
                bits.extend((0..n).map(|i| (x >> i) & 1));
            }
            prop_assert_eq!(w.bits(), total);
            prop_assert_eq!(w.finish(), pack(&bits, 1));
        }
    }
}
