//! A plain bitmap: bit `i` is bit `i % 64` of word `i / 64`.

/// A fixed-length bitmap backed by 64-bit words. Bits past `len` are always zero.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Bitmap {
    words: Vec<u64>,
    len: usize,
}

impl Bitmap {
    /// A bitmap of `len` zero bits.
    pub fn zeros(len: usize) -> Self {
        Self {
            words: vec![0; len.div_ceil(64)],
            len,
        }
    }

    /// A bitmap of `len` one bits.
    pub fn ones(len: usize) -> Self {
        let mut b = Self {
            words: vec![u64::MAX; len.div_ceil(64)],
            len,
        };
        b.clear_tail();
        b
    }

    /// Builds a bitmap from booleans.
    pub fn from_bools(bits: impl IntoIterator<Item = bool>) -> Self {
        let mut words = Vec::new();
        let mut len = 0usize;
        for b in bits {
            if len.is_multiple_of(64) {
                words.push(0);
            }
            if let (true, Some(w)) = (b, words.last_mut()) {
                *w |= 1 << (len % 64);
            }
            len += 1;
        }
        Self { words, len }
    }

    /// Wraps words; bits past `len` are cleared. Returns `None` if `words` is too short.
    pub fn from_words(mut words: Vec<u64>, len: usize) -> Option<Self> {
        let needed = len.div_ceil(64);
        if words.len() < needed {
            return None;
        }
        words.truncate(needed);
        let mut b = Self { words, len };
        b.clear_tail();
        Some(b)
    }

    fn clear_tail(&mut self) {
        let rem = self.len % 64;
        if let (true, Some(w)) = (rem != 0, self.words.last_mut()) {
            *w &= (1u64 << rem) - 1;
        }
    }

    /// Number of bits.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True if the bitmap has no bits.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The backing words.
    pub fn words(&self) -> &[u64] {
        &self.words
    }

    /// Bit `i`; false past the end.
    #[inline]
    pub fn get(&self, i: usize) -> bool {
        i < self.len && (self.words[i / 64] >> (i % 64)) & 1 == 1
    }

    /// Sets bit `i` to `v`. Out-of-range indices are ignored.
    #[inline]
    pub fn set(&mut self, i: usize, v: bool) {
        if i >= self.len {
            return;
        }
        let w = &mut self.words[i / 64];
        if v {
            *w |= 1 << (i % 64);
        } else {
            *w &= !(1 << (i % 64));
        }
    }

    /// Number of one bits.
    pub fn count_ones(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Iterates over the positions of one bits, in increasing order.
    pub fn iter_ones(&self) -> impl Iterator<Item = usize> + '_ {
        self.words.iter().enumerate().flat_map(|(wi, &w)| {
            let mut w = w;
            std::iter::from_fn(move || {
                if w == 0 {
                    return None;
                }
                let t = w.trailing_zeros() as usize;
                w &= w - 1;
                Some(wi * 64 + t)
            })
        })
    }

    /// Serializes as little-endian words (the on-disk bitmap layout).
    pub fn to_le_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.words.len() * 8);
        crate::pack::extend_le_bytes(&mut out, &self.words);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn bools_round_trip(bits in proptest::collection::vec(any::<bool>(), 0..300)) {
            let b = Bitmap::from_bools(bits.iter().copied());
            prop_assert_eq!(b.len(), bits.len());
            prop_assert_eq!(b.count_ones(), bits.iter().filter(|&&x| x).count());
            let ones: Vec<usize> = b.iter_ones().collect();
            let expect: Vec<usize> = bits.iter().enumerate().filter(|(_, x)| **x).map(|(i, _)| i).collect();
            prop_assert_eq!(ones, expect);
            for (i, &x) in bits.iter().enumerate() {
                prop_assert_eq!(b.get(i), x);
            }
        }
    }

    #[test]
    fn ones_clears_tail() {
        let b = Bitmap::ones(70);
        assert_eq!(b.count_ones(), 70);
        assert!(!b.get(70));
    }
}
