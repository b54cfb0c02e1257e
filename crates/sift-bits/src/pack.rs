//! Plain little-endian contiguous bit-packing.
//!
//! Value `i` of width `w` occupies bits `[i*w, (i+1)*w)` of the bit stream, where stream bit
//! `k` is bit `k % 64` of 64-bit word `k / 64`, and words are stored little-endian. This is the
//! layout the PEXT-based select operator works on (DESIGN §3), so it is written by hand rather
//! than taken from a crate with a different (e.g. interleaved FastLanes) order.

/// Number of 64-bit words needed to hold `len` values of `width` bits.
///
/// Returns `None` on arithmetic overflow (only reachable with hostile lengths).
pub fn packed_words(len: usize, width: u32) -> Option<usize> {
    len.checked_mul(width as usize)?
        .checked_add(63)
        .map(|bits| bits / 64)
}

/// The number of bits needed to represent `v` (0 for 0).
pub fn bit_width(v: u64) -> u32 {
    64 - v.leading_zeros()
}

/// Packs the low `width` bits of every value into words.
///
/// Bits of a value above `width` are ignored.
///
/// # Panics
/// Panics if `width > 64` (a programming error on the write path, never data-dependent).
pub fn pack(values: &[u64], width: u32) -> Vec<u64> {
    assert!(width <= 64, "bit width {width} out of range");
    let Some(n_words) = packed_words(values.len(), width) else {
        unreachable!("a slice in memory cannot overflow the bit count")
    };
    let mut out = vec![0u64; n_words];
    if width == 0 {
        return out;
    }
    let mask = low_mask(width);
    let mut bit = 0usize;
    for &v in values {
        let v = v & mask;
        let word = bit / 64;
        let off = bit % 64;
        out[word] |= v << off;
        if off + width as usize > 64 {
            out[word + 1] |= v >> (64 - off);
        }
        bit += width as usize;
    }
    out
}

/// A mask of the low `width` bits (`width` in 0..=64).
#[inline]
pub fn low_mask(width: u32) -> u64 {
    if width >= 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    }
}

/// Error returned when a packed buffer is too short for the requested values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShortBuffer {
    /// Words required.
    pub needed: usize,
    /// Words available.
    pub available: usize,
}

/// Appends `count` values of `width` bits from `packed` to `out`, calling `map` on each code.
///
/// `map` lets callers fuse the frame-of-reference addition and the narrowing cast into the
/// same pass. The codes are decoded by the dispatched SIMD unpacker ([`crate::unpack`]) in
/// chunks of 256 values that stay in L1, then mapped; chunk starts are word-aligned because
/// 256 values of any width fill whole words. Appending (rather than filling a slice) spares
/// callers a zeroed buffer that would be overwritten: on a whole-file read, zeroing every
/// decoded column first cost as much memory traffic as writing it.
#[inline]
pub fn unpack_map<T, F: Fn(u64) -> T>(
    packed: &[u64],
    width: u32,
    count: usize,
    out: &mut Vec<T>,
    map: F,
) -> Result<(), ShortBuffer> {
    const CHUNK: usize = 256;
    let width = width.min(64);
    let needed = packed_words(count, width).unwrap_or(usize::MAX);
    if packed.len() < needed {
        return Err(ShortBuffer {
            needed,
            available: packed.len(),
        });
    }
    out.reserve(count);
    let mut buf = [0u64; CHUNK];
    let words_per_chunk = CHUNK / 64 * width as usize;
    for c in 0..count.div_ceil(CHUNK) {
        let len = CHUNK.min(count - c * CHUNK);
        let src = packed.get(c * words_per_chunk..).unwrap_or(&[]);
        let codes = &mut buf[..len];
        crate::unpack::unpack_to(src, width, codes).map_err(|_| ShortBuffer {
            needed,
            available: packed.len(),
        })?;
        out.extend(codes.iter().map(|&v| map(v)));
    }
    Ok(())
}

/// Unpacks `out.len()` values of `width` bits from `packed` into `u64`s (dispatched to the
/// SIMD unpackers; see [`crate::unpack::unpack_to`] for narrower outputs).
pub fn unpack(packed: &[u64], width: u32, out: &mut [u64]) -> Result<(), ShortBuffer> {
    let width = width.min(64);
    crate::unpack::unpack_to(packed, width, out).map_err(|_| ShortBuffer {
        needed: packed_words(out.len(), width).unwrap_or(usize::MAX),
        available: packed.len(),
    })
}

/// Reads little-endian 64-bit words from bytes. A trailing partial word is zero-extended.
pub fn words_from_le_bytes(bytes: &[u8]) -> Vec<u64> {
    let mut words = Vec::with_capacity(bytes.len().div_ceil(8));
    let mut chunks = bytes.chunks_exact(8);
    for c in &mut chunks {
        let mut b = [0u8; 8];
        b.copy_from_slice(c);
        words.push(u64::from_le_bytes(b));
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut b = [0u8; 8];
        b[..rest.len()].copy_from_slice(rest);
        words.push(u64::from_le_bytes(b));
    }
    words
}

/// Appends words to a byte buffer in little-endian order.
pub fn extend_le_bytes(out: &mut Vec<u8>, words: &[u64]) {
    // Sized once and filled in place (a copy of the words on a little-endian machine):
    // extending by 8 bytes a word checked the capacity word by word.
    let start = out.len();
    out.resize(start + words.len() * 8, 0);
    for (dst, w) in out[start..].chunks_exact_mut(8).zip(words) {
        dst.copy_from_slice(&w.to_le_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn reference_get(packed: &[u64], width: u32, i: usize) -> u64 {
        // Bit-at-a-time reference: obviously correct, slow.
        let mut v = 0u64;
        for b in 0..width as usize {
            let bit = i * width as usize + b;
            if packed[bit / 64] >> (bit % 64) & 1 == 1 {
                v |= 1 << b;
            }
        }
        v
    }

    proptest! {
        #[test]
        fn round_trip(width in 0u32..=64, values in proptest::collection::vec(any::<u64>(), 0..300)) {
            let mask = low_mask(width);
            let packed = pack(&values, width);
            prop_assert_eq!(packed.len(), packed_words(values.len(), width).unwrap_or(0));
            let mut out = vec![0u64; values.len()];
            unpack(&packed, width, &mut out).map_err(|e| TestCaseError::fail(format!("{e:?}")))?;
            for (i, (&v, &o)) in values.iter().zip(&out).enumerate() {
                prop_assert_eq!(v & mask, o);
                prop_assert_eq!(reference_get(&packed, width, i), o);
            }
        }
    }

    #[test]
    fn short_buffer_is_an_error() {
        let packed = pack(&[1, 2, 3], 7);
        let mut out = vec![0u64; 20];
        assert!(unpack(&packed, 7, &mut out).is_err());
    }

    #[test]
    fn widths() {
        assert_eq!(bit_width(0), 0);
        assert_eq!(bit_width(1), 1);
        assert_eq!(bit_width(255), 8);
        assert_eq!(bit_width(u64::MAX), 64);
    }

    #[test]
    fn le_bytes_round_trip() {
        let words = vec![1u64, u64::MAX, 0x0102_0304_0506_0708];
        let mut bytes = Vec::new();
        extend_le_bytes(&mut bytes, &words);
        assert_eq!(words_from_le_bytes(&bytes), words);
        assert_eq!(words_from_le_bytes(&bytes[..3]), vec![1]);
    }
}
