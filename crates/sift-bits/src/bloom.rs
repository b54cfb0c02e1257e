//! A register-blocked Bloom filter: every key's `k` bits lie in one 32-bit word, so a probe
//! is one load and one mask test (Lang, Neumann, Kemper, Boncz, VLDB 2019, "Performance-
//! optimal filtering: Bloom overtakes Cuckoo at high throughput").
//!
//! A scan tests the join keys of a hash join's build side against a column's values
//! (`in_bloom` predicates) with [`BloomFilter::probe`] / [`BloomFilter::probe_u32`], 8 keys
//! per AVX2 step. The filter never drops an inserted key; a key that was not inserted is
//! reported present with about [`BloomFilter::theoretical_fpr`].
//!
//! # Keys
//!
//! Keys are `u64`. An integer column gives its value as `i64` bits (`v as i64 as u64`,
//! sign-extended from narrower types), so a value has the same key whatever its integer
//! width; a `u32` key is the same key as its zero-extension (`probe_u32(&[x])` equals
//! `probe(&[x as u64])`). Byte strings go through [`bytes_key`], 128-bit integers through
//! [`i128_key`].
//!
//! # Hashing
//!
//! With `lo`, `hi` the 32-bit halves of the key (all arithmetic wrapping `u32`):
//!
//! ```text
//! x  = lo ^ hi·FOLD_WORD          fold to 32 bits: a key < 2^32 folds to itself
//! y  = (x ^ x >> 16)·MIX
//! m  = y ^ y >> 15                nonlinear, bijective premix
//! h1 = m·WORD_MUL                 word index: h1 >> (32 - log2(words))
//! h2 = (m ^ hi·FOLD_BITS)·BITS_MUL
//! bit positions: h2 >> 27, (h2 >> 22) & 31, (h2 >> 17) & 31, (h2 >> 12) & 31, (h2 >> 7) & 31
//! ```
//!
//! Two deliberate additions to the bare "fold, then two multiplicative hashes" scheme, both
//! measured (see `BENCHMARKS.md`, section 6):
//!
//! - **The premix** `m`. Without it both hashes are linear in `x`, and keys in an
//!   arithmetic progression land in words and bit patterns correlated with those of the
//!   negatives. `1..n` was fine (0.01–0.67× the theoretical rate: the golden-ratio
//!   multiplier spreads it better than random), but other strides were not: 3.9× for
//!   multiples of 86400, and still 1.7× with an xor-shift alone (multiples of 1000). With
//!   the xor-shift–multiply–xor-shift premix (the first half of the "lowbias32" integer
//!   hash) every key set tried (strides 1 … 2^32, negative integers, random 32- and 64-bit
//!   keys, millisecond timestamps of days, 2-D keys; 10k–1M keys at 0.01 and 0.001)
//!   measured 0.99–1.24× the theoretical rate. It costs one multiply and four shifts/xors
//!   per 8 keys.
//! - **The second fold** `hi·FOLD_BITS` into `h2`. With one 32-bit fold, two 64-bit keys
//!   whose folds collide are indistinguishable, which adds `n / 2^32` to the rate of random
//!   64-bit keys (and of every [`bytes_key`]): 2.3·10^-4 at a million keys, twice a design
//!   rate of 0.001 (measured: 2.1×). Folding `hi` in again with another multiplier makes
//!   `(h1, h2)` a bijection of the 64-bit key, so only the bits the filter keeps can
//!   collide. A key below 2^32 has `hi = 0`, so the `u32` path does neither fold.
//!
//! The positions take the top 25 bits of `h2`; positions may repeat (the theoretical rate
//! counts them as independent draws, so the measured rate of a well-mixed hash sits ~10 %
//! above it: a key whose own bits repeat has fewer bits to find set).
//!
//! # Sizing
//!
//! [`BloomFilter::with_capacity`] picks the smallest power-of-two number of words (at least
//! 2) and the `k` in 1..=5 whose theoretical rate meets the requested one, up to
//! 512 MiB (2^27 words): a `distinct` or `fpr` that would need more gets 512 MiB and the
//! best `k` for it, and a rate that is then higher than requested (see
//! [`BloomFilter::design_fpr`]). With at most 5 bits in one 32-bit word, low rates cost
//! much space: 14.2–28.5 bits per key for 0.01, 36–72 for 0.001 and 105–210 for 0.0001
//! (the range is the power-of-two rounding). `k` is 5 at every size these rates give.
//!
//! # Dispatch
//!
//! [`BloomFilter::probe`] runs at [`Level::active`]: the scalar code at [`Level::Scalar`],
//! the AVX2 kernel (8 keys per gather) at [`Level::Avx2`], and at [`Level::Avx512`] the
//! 16-lane kernel for filters up to 8 MiB and the AVX2 one beyond, where it is faster (see
//! `AVX512_MAX_WORDS`).

use crate::bitmap::Bitmap;
use crate::dispatch::Level;

/// Multiplier of the high half in the fold to 32 bits (the golden ratio, odd).
const FOLD_WORD: u32 = 0x9E37_79B1;
/// Multiplier of the high half folded into the bit-pattern hash.
const FOLD_BITS: u32 = 0xC2B2_AE35;
/// Multiplier of the premix (from the "lowbias32" integer hash).
const MIX: u32 = 0x7FEB_352D;
/// Multiplier of the word-index hash `h1`.
const WORD_MUL: u32 = 0x9E37_79B1;
/// Multiplier of the bit-pattern hash `h2`.
const BITS_MUL: u32 = 0x85EB_CA6B;

/// The largest filter: 2^27 words, 512 MiB.
const MAX_LOG2_WORDS: u32 = 27;
/// The smallest filter: 2 words.
const MIN_LOG2_WORDS: u32 = 1;
/// The most bits a key sets.
const MAX_K: u32 = 5;
/// The largest filter the AVX-512 kernel probes (8 MiB); larger ones go to the AVX2
/// kernel. Measured (64Ki random 64-bit keys, one core of a Xeon with 2 MiB of L2): the
/// 16-lane kernel takes 0.57× the AVX2 one's time with the filter in L1, 0.59–0.63×
/// at 256 KiB, 0.67× at 4 MiB, 0.88× at 8 MiB, but 1.17× at 16 MiB, 1.19× at 32 MiB and
/// 1.14× at 64 MiB, where most probes miss the cache (likely because a 16-word gather
/// completes only with its slowest load).
const AVX512_MAX_WORDS: usize = 1 << 21;

/// A register-blocked Bloom filter over `u64` keys; see the [module docs](self).
#[derive(Clone)]
pub struct BloomFilter {
    /// The bit array: a power-of-two number of words, at least 2, at most 2^27.
    words: Vec<u32>,
    /// `32 - log2(words.len())`, in 5..=31: `h1 >> shift` is a word index.
    shift: u32,
    /// Bits set per key, in 1..=5.
    k: u32,
    /// Keys inserted so far (with repeats).
    inserted: usize,
    /// The `distinct` the filter was sized for.
    capacity: usize,
}

impl std::fmt::Debug for BloomFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BloomFilter")
            .field("num_words", &self.num_words())
            .field("size_bytes", &self.size_bytes())
            .field("k", &self.k)
            .field("inserted", &self.inserted)
            .field("capacity", &self.capacity)
            .finish()
    }
}

impl BloomFilter {
    /// A filter sized for `distinct` keys at false-positive rate `fpr` (e.g. 0.01): the
    /// smallest power-of-two number of 32-bit words (at least 2), and the `k` in 1..=5 with
    /// the lowest [`theoretical_fpr`](Self::theoretical_fpr) at that size, for which that
    /// rate is `<= fpr`.
    ///
    /// `distinct` 0 gives the minimum size (2 words, `k` chosen for one key). The size is
    /// capped at 512 MiB (2^27 words): a `distinct` so large, or an `fpr` so low (`fpr <= 0`
    /// can never be met), that the filter would exceed it gets 512 MiB, and
    /// [`design_fpr`](Self::design_fpr) then says what rate it gives. A NaN `fpr` is taken
    /// as 1 (the minimum size). Never panics.
    pub fn with_capacity(distinct: usize, fpr: f64) -> BloomFilter {
        let target = if fpr.is_nan() { 1.0 } else { fpr.min(1.0) };
        let n = distinct.max(1) as f64;
        let best_k = |log2w: u32| {
            let lambda = n / (1u64 << log2w) as f64;
            (1..=MAX_K)
                .map(|k| (fpr_formula(lambda, k), k))
                .fold((f64::INFINITY, MAX_K), |a, b| if b.0 < a.0 { b } else { a })
        };
        let (log2w, k) = if distinct == 0 {
            (MIN_LOG2_WORDS, best_k(MIN_LOG2_WORDS).1)
        } else {
            // No Bloom filter beats ~1.44·log2(1/fpr) bits per key, so start a size below
            // that bound and double until the rate is met.
            let bits = n * 1.44 * (1.0 / target.max(f64::MIN_POSITIVE)).log2();
            let start = (bits / 32.0).max(1.0).log2().floor() as u32;
            let mut log2w = start
                .saturating_sub(1)
                .clamp(MIN_LOG2_WORDS, MAX_LOG2_WORDS);
            loop {
                let (rate, k) = best_k(log2w);
                if rate <= target || log2w >= MAX_LOG2_WORDS {
                    break (log2w, k);
                }
                log2w += 1;
            }
        };
        BloomFilter {
            words: vec![0; 1 << log2w],
            shift: 32 - log2w,
            k,
            inserted: 0,
            capacity: distinct,
        }
    }

    /// Adds `key`.
    pub fn insert(&mut self, key: u64) {
        let (h1, h2) = hash64(key);
        let i = (h1 >> self.shift) as usize;
        if let Some(w) = self.words.get_mut(i) {
            *w |= pattern(h2, self.k);
        }
        self.inserted = self.inserted.saturating_add(1);
    }

    /// Whether `key` may have been inserted (true for every inserted key): the scalar
    /// reference that the batch probes agree with.
    pub fn contains(&self, key: u64) -> bool {
        let (h1, h2) = hash64(key);
        let p = pattern(h2, self.k);
        self.words
            .get((h1 >> self.shift) as usize)
            .is_some_and(|&w| w & p == p)
    }

    /// Bit `i` of the result is [`contains`](Self::contains)`(keys[i])`. Runs at
    /// [`Level::active`] (see the [module docs](self) on dispatch).
    pub fn probe(&self, keys: &[u64]) -> Bitmap {
        self.probe_at(Level::active(), keys)
    }

    /// [`probe`](Self::probe) for integer values as a scan decodes them: `v` is the key
    /// `v as u64`, so `probe_i64(&[v]) == probe(&[v as u64])`, without a copy.
    pub fn probe_i64(&self, values: &[i64]) -> Bitmap {
        // SAFETY: i64 and u64 have the same size and alignment and every bit pattern is
        // valid for both, so the slice reads as the same keys reinterpreted.
        let keys =
            unsafe { std::slice::from_raw_parts(values.as_ptr().cast::<u64>(), values.len()) };
        self.probe(keys)
    }

    /// [`probe`](Self::probe) for 32-bit keys: `x` is the key `x as u64`, so
    /// `probe_u32(&[x]) == probe(&[x as u64])`. Faster: the fold to 32 bits is a no-op.
    pub fn probe_u32(&self, keys: &[u32]) -> Bitmap {
        self.probe_u32_at(Level::active(), keys)
    }

    /// The false-positive rate of this filter's geometry with `n` keys inserted: each word
    /// holds Poisson(λ = n / words) keys, each setting `k` of 32 bits uniformly (repeats
    /// allowed), and a probe tests `k` bits of one word:
    /// `Σ_j P(j) · (1 - (1 - 1/32)^(j·k))^k`.
    pub fn theoretical_fpr(&self, n: usize) -> f64 {
        fpr_formula(n as f64 / self.words.len() as f64, self.k)
    }

    /// [`theoretical_fpr`](Self::theoretical_fpr) at the `distinct` the filter was sized
    /// for.
    pub fn design_fpr(&self) -> f64 {
        self.theoretical_fpr(self.capacity)
    }

    /// Bits set (and tested) per key, in 1..=5.
    pub fn k(&self) -> u32 {
        self.k
    }

    /// Number of 32-bit words: a power of two, at least 2.
    pub fn num_words(&self) -> usize {
        self.words.len()
    }

    /// Size of the bit array in bytes.
    pub fn size_bytes(&self) -> usize {
        self.words.len() * 4
    }

    /// [`probe`](Self::probe) at an explicit level (clamped to the CPU).
    fn probe_at(&self, level: Level, keys: &[u64]) -> Bitmap {
        let mut out = vec![0u64; keys.len().div_ceil(64)];
        let done = self.simd_u64(level, keys, &mut out);
        self.scalar_into(keys, done, &mut out, |&key| hash64(key));
        Bitmap::from_words_trusted(out, keys.len())
    }

    /// [`probe_u32`](Self::probe_u32) at an explicit level (clamped to the CPU).
    fn probe_u32_at(&self, level: Level, keys: &[u32]) -> Bitmap {
        let mut out = vec![0u64; keys.len().div_ceil(64)];
        let done = self.simd_u32(level, keys, &mut out);
        self.scalar_into(keys, done, &mut out, |&key| hash32(key));
        Bitmap::from_words_trusted(out, keys.len())
    }

    /// Probes `keys[done..]` with the scalar code, specialized for the filter's `k`.
    fn scalar_into<T>(
        &self,
        keys: &[T],
        done: usize,
        out: &mut [u64],
        hash: impl Fn(&T) -> (u32, u32) + Copy,
    ) {
        match self.k {
            1 => self.scalar_words::<1, T>(keys, done, out, hash),
            2 => self.scalar_words::<2, T>(keys, done, out, hash),
            3 => self.scalar_words::<3, T>(keys, done, out, hash),
            4 => self.scalar_words::<4, T>(keys, done, out, hash),
            _ => self.scalar_words::<5, T>(keys, done, out, hash),
        }
    }

    /// The scalar probe of `keys[done..]` for a constant `K`, a bitmap word at a time.
    fn scalar_words<const K: u32, T>(
        &self,
        keys: &[T],
        done: usize,
        out: &mut [u64],
        hash: impl Fn(&T) -> (u32, u32),
    ) {
        let first = done / 64;
        for (wi, (o, chunk)) in out.iter_mut().zip(keys.chunks(64)).enumerate().skip(first) {
            let from = if wi == first { done % 64 } else { 0 };
            let mut word = 0u64;
            for (j, key) in chunk.iter().enumerate().skip(from) {
                let (h1, h2) = hash(key);
                let p = pattern(h2, K);
                let w = self.words.get((h1 >> self.shift) as usize).copied();
                word |= u64::from(w.is_some_and(|w| w & p == p)) << j;
            }
            *o |= word;
        }
    }

    /// Probes a prefix of `keys` with SIMD at `level`; returns how many keys it did.
    fn simd_u64(&self, level: Level, keys: &[u64], out: &mut [u64]) -> usize {
        #[cfg(target_arch = "x86_64")]
        if level.clamp() == Level::Avx512 && self.words.len() <= AVX512_MAX_WORDS {
            // SAFETY: `clamp` returned Avx512 only because avx512f was detected; the
            // filter's words are `1 << (32 - shift)` (its invariant), so every word index
            // `h1 >> shift` is inside them.
            return unsafe {
                match self.k {
                    1 => avx512::probe_u64::<1>(&self.words, self.shift, keys, out),
                    2 => avx512::probe_u64::<2>(&self.words, self.shift, keys, out),
                    3 => avx512::probe_u64::<3>(&self.words, self.shift, keys, out),
                    4 => avx512::probe_u64::<4>(&self.words, self.shift, keys, out),
                    _ => avx512::probe_u64::<5>(&self.words, self.shift, keys, out),
                }
            };
        }
        #[cfg(target_arch = "x86_64")]
        if level.clamp() >= Level::Avx2 {
            // SAFETY: `clamp` returned Avx2 (or higher) only because avx2 was detected;
            // word indices as above.
            return unsafe {
                match self.k {
                    1 => avx2::probe_u64::<1>(&self.words, self.shift, keys, out),
                    2 => avx2::probe_u64::<2>(&self.words, self.shift, keys, out),
                    3 => avx2::probe_u64::<3>(&self.words, self.shift, keys, out),
                    4 => avx2::probe_u64::<4>(&self.words, self.shift, keys, out),
                    _ => avx2::probe_u64::<5>(&self.words, self.shift, keys, out),
                }
            };
        }
        let _ = (level, keys, out);
        0
    }

    /// [`simd_u64`](Self::simd_u64) for 32-bit keys.
    fn simd_u32(&self, level: Level, keys: &[u32], out: &mut [u64]) -> usize {
        #[cfg(target_arch = "x86_64")]
        if level.clamp() == Level::Avx512 && self.words.len() <= AVX512_MAX_WORDS {
            // SAFETY: as in `simd_u64`.
            return unsafe {
                match self.k {
                    1 => avx512::probe_u32::<1>(&self.words, self.shift, keys, out),
                    2 => avx512::probe_u32::<2>(&self.words, self.shift, keys, out),
                    3 => avx512::probe_u32::<3>(&self.words, self.shift, keys, out),
                    4 => avx512::probe_u32::<4>(&self.words, self.shift, keys, out),
                    _ => avx512::probe_u32::<5>(&self.words, self.shift, keys, out),
                }
            };
        }
        #[cfg(target_arch = "x86_64")]
        if level.clamp() >= Level::Avx2 {
            // SAFETY: as in `simd_u64`.
            return unsafe {
                match self.k {
                    1 => avx2::probe_u32::<1>(&self.words, self.shift, keys, out),
                    2 => avx2::probe_u32::<2>(&self.words, self.shift, keys, out),
                    3 => avx2::probe_u32::<3>(&self.words, self.shift, keys, out),
                    4 => avx2::probe_u32::<4>(&self.words, self.shift, keys, out),
                    _ => avx2::probe_u32::<5>(&self.words, self.shift, keys, out),
                }
            };
        }
        let _ = (level, keys, out);
        0
    }
}

/// The premix: a bijection of `u32` whose output bits depend nonlinearly on all input bits.
#[inline(always)]
fn premix(x: u32) -> u32 {
    let y = (x ^ (x >> 16)).wrapping_mul(MIX);
    y ^ (y >> 15)
}

/// `(h1, h2)` of a 64-bit key: the word hash and the bit-pattern hash.
#[inline(always)]
fn hash64(key: u64) -> (u32, u32) {
    let (lo, hi) = (key as u32, (key >> 32) as u32);
    let m = premix(lo ^ hi.wrapping_mul(FOLD_WORD));
    (
        m.wrapping_mul(WORD_MUL),
        (m ^ hi.wrapping_mul(FOLD_BITS)).wrapping_mul(BITS_MUL),
    )
}

/// [`hash64`] of a key below 2^32 (`hi = 0`: both folds vanish).
#[inline(always)]
fn hash32(key: u32) -> (u32, u32) {
    let m = premix(key);
    (m.wrapping_mul(WORD_MUL), m.wrapping_mul(BITS_MUL))
}

/// The `k` bits of a key: bit positions from successive 5-bit fields of `h2`, top first.
#[inline(always)]
fn pattern(h2: u32, k: u32) -> u32 {
    (0..k.min(MAX_K)).fold(0, |p, i| p | 1 << ((h2 >> (27 - 5 * i)) & 31))
}

/// `Σ_j P(j) · (1 - q^(j·k))^k` with `j ~ Poisson(lambda)` and `q = 31/32`, summed over
/// `λ ± 12σ` (the mass outside is below 10^-30). Beyond λ = 4096 keys per word every term
/// is 1 to double precision.
fn fpr_formula(lambda: f64, k: u32) -> f64 {
    if lambda.is_nan() || lambda <= 0.0 {
        return 0.0;
    }
    if lambda > 4096.0 {
        return 1.0;
    }
    let ln_q = (31.0f64 / 32.0).ln();
    let sd = lambda.sqrt();
    let lo = (lambda - 12.0 * sd - 12.0).max(0.0).floor();
    let hi = (lambda + 12.0 * sd + 40.0).ceil();
    // P(lo) in log space, then the recurrence P(j + 1) = P(j) · λ / (j + 1).
    let mut p = (-lambda + lo * lambda.ln() - ln_factorial(lo)).exp();
    let mut sum = 0.0;
    let mut j = lo;
    while j <= hi {
        // 1 - q^(j·k), accurate also when it is tiny.
        let miss = -(j * f64::from(k) * ln_q).exp_m1();
        sum += p * miss.powi(k as i32);
        p *= lambda / (j + 1.0);
        j += 1.0;
    }
    sum.clamp(0.0, 1.0)
}

/// `ln(j!)` for a whole `j >= 0`: exact sum below 32, Stirling's series (error < 10^-12)
/// above.
fn ln_factorial(j: f64) -> f64 {
    if j < 32.0 {
        let mut s = 0.0;
        let mut i = 2.0;
        while i <= j {
            s += f64::ln(i);
            i += 1.0;
        }
        return s;
    }
    j * j.ln() - j + 0.5 * (2.0 * std::f64::consts::PI * j).ln() + 1.0 / (12.0 * j)
        - 1.0 / (360.0 * j * j * j)
}

/// The key of a byte string: a fast, fixed-seed, well-mixed 64-bit hash (not resistant to
/// chosen inputs; a collision only adds a false positive). Strings and integers share the
/// filter API: insert and probe `bytes_key(s)`.
pub fn bytes_key(b: &[u8]) -> u64 {
    const SEED: u64 = 0x243F_6A88_85A3_08D3;
    const K1: u64 = 0x9E37_79B9_7F4A_7C15;
    const K2: u64 = 0xD6E8_FEB8_6659_FD93;
    const K3: u64 = 0xA076_1D64_78BD_642F;
    let len = b.len();
    let mut h = SEED ^ (len as u64).wrapping_mul(K1);
    // Every byte is read at least once and the length is mixed in, so equal-length inputs
    // that differ anywhere give different (x, y) sequences.
    let (x, y) = match len {
        0 => (0, 0),
        1..=3 => {
            let x = u64::from(b[0]) | u64::from(b[len / 2]) << 8 | u64::from(b[len - 1]) << 16;
            (x, 0)
        }
        4..=7 => (u64::from(le32(b, 0)), u64::from(le32(b, len - 4))),
        8..=16 => (le64(b, 0), le64(b, len - 8)),
        _ => {
            let mut at = 0;
            while at + 16 < len {
                h = fold_mul(le64(b, at) ^ h ^ K2, le64(b, at + 8) ^ K3);
                at += 16;
            }
            // The last 16 bytes, overlapping the previous block when `len % 16 != 0`.
            (le64(b, len - 16), le64(b, len - 8))
        }
    };
    h = fold_mul(x ^ h ^ K2, y ^ K3);
    mix64(h ^ len as u64)
}

/// The key of a 128-bit integer (decimals): `v as i64 as u64` when `v` fits in `i64`, so a
/// decimal and an integer with the same value have the same key; a mix of both halves
/// otherwise.
pub fn i128_key(v: i128) -> u64 {
    match i64::try_from(v) {
        Ok(x) => x as u64,
        Err(_) => {
            let (lo, hi) = (v as u64, (v >> 64) as u64);
            mix64(lo ^ mix64(hi ^ 0x6A09_E667_F3BC_C908))
        }
    }
}

/// `a · b` as 128 bits, halves xored, then xored with `a + b` so that a zero factor does
/// not erase the other.
#[inline(always)]
fn fold_mul(a: u64, b: u64) -> u64 {
    let p = u128::from(a) * u128::from(b);
    (p as u64) ^ ((p >> 64) as u64) ^ a.wrapping_add(b)
}

/// A bijective 64-bit finalizer (xor-shift-multiply rounds).
#[inline(always)]
fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 32)).wrapping_mul(0xD6E8_FEB8_6659_FD93);
    z = (z ^ (z >> 32)).wrapping_mul(0xD6E8_FEB8_6659_FD93);
    z ^ (z >> 32)
}

/// Little-endian `u64` at `b[at..at + 8]` (zero past the end, which callers never reach).
#[inline(always)]
fn le64(b: &[u8], at: usize) -> u64 {
    b.get(at..at + 8)
        .and_then(|s| <[u8; 8]>::try_from(s).ok())
        .map_or(0, u64::from_le_bytes)
}

/// Little-endian `u32` at `b[at..at + 4]` (zero past the end, which callers never reach).
#[inline(always)]
fn le32(b: &[u8], at: usize) -> u32 {
    b.get(at..at + 4)
        .and_then(|s| <[u8; 4]>::try_from(s).ok())
        .map_or(0, u32::from_le_bytes)
}

/// Runs `step` (`LANES` keys to as many bits) on every whole group of `LANES` keys (8 or
/// 16), writing the bits of each 64 keys, put in order by `fix`, to a word of `out`;
/// returns the keys done. Whole words run their steps with a fixed trip count, so the
/// out-of-order core overlaps the gathers of several steps; the last partial word runs its
/// whole groups and leaves fewer than `LANES` keys to the scalar code.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn each_group<T, const LANES: usize>(
    keys: &[T],
    out: &mut [u64],
    fix: impl Fn(u64) -> u64,
    mut step: impl FnMut(&[T]) -> u32,
) -> usize {
    let (head, tail) = keys.split_at(keys.len() / 64 * 64);
    let mut done = 0;
    let mut words = out.iter_mut();
    for (o, block) in words.by_ref().zip(head.chunks_exact(64)) {
        let mut word = 0u64;
        for (j, v) in block.chunks_exact(LANES).enumerate() {
            word |= u64::from(step(v)) << (LANES * j);
        }
        *o = fix(word);
        done += 64;
    }
    // The partial word, if `out` had a word for every whole one (it always has).
    if let (Some(o), true) = (words.next(), done == head.len()) {
        let mut word = 0u64;
        for (j, v) in tail.chunks_exact(LANES).enumerate() {
            word |= u64::from(step(v)) << (LANES * j);
            done += LANES;
        }
        *o = fix(word);
    }
    done
}

/// The hash steps of the batch probes, written once for both vector widths: [`premix`]
/// and [`pattern`] on vectors of 32-bit lanes, given the width's intrinsics. Expanded in
/// each kernel's module, whose `Consts` holds the broadcast `mix`, `one` and `low5`.
#[cfg(target_arch = "x86_64")]
macro_rules! hash_lanes {
    (
        $feature:literal,
        $lanes:literal,
        $v:ty,
        $srli:ident,
        $and:ident,
        $or:ident,
        $xor:ident,
        $mullo:ident,
        $sllv:ident
    ) => {
        #[doc = concat!("[`super::premix`] on ", $lanes, " lanes.")]
        #[target_feature(enable = $feature)]
        #[inline]
        fn premix(c: &Consts, x: $v) -> $v {
            let y = $mullo($xor(x, $srli::<16>(x)), c.mix);
            $xor(y, $srli::<15>(y))
        }

        #[doc = concat!("[`super::pattern`] on ", $lanes, " lanes, for a constant `K`.")]
        #[target_feature(enable = $feature)]
        #[inline]
        fn pattern<const K: u32>(c: &Consts, h2: $v) -> $v {
            // Bit `i` of the pattern comes from bits `27 - 5i ..= 31 - 5i` of `h2`; the top
            // field needs no mask. Pairs are combined first to keep the OR chain short.
            let bit = |pos: $v| $sllv(c.one, pos);
            let field = |f: $v| bit($and(f, c.low5));
            let p0 = bit($srli::<27>(h2));
            let p1 = if K > 1 { field($srli::<22>(h2)) } else { p0 };
            let p2 = if K > 2 { field($srli::<17>(h2)) } else { p0 };
            let p3 = if K > 3 { field($srli::<12>(h2)) } else { p0 };
            let p4 = if K > 4 { field($srli::<7>(h2)) } else { p0 };
            $or($or($or(p0, p1), $or(p2, p3)), p4)
        }
    };
}
#[cfg(target_arch = "x86_64")]
use hash_lanes;

/// AVX2 batch probes, 8 keys per step in 32-bit lanes: VPMULLD for the hashes, a uniform
/// VPSRLD for the word index, VPSLLVD for the pattern bits, VPGATHERDD for the words, then
/// `(w & p) == p` and VMOVMSKPS into the bitmap, steps run by [`each_group`].
///
/// On Zen 3 VPGATHERDD is microcoded (10–14 cycles per 8 lanes even from L1) and is most
/// of the cost; 8 VPEXTRD-indexed VPINSRD loads instead measured −5 % to +8 % against it
/// (ahead only beyond L2), so the single instruction stays. See `BENCHMARKS.md`, section 6.
#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::{BITS_MUL, FOLD_BITS, FOLD_WORD, MIX, WORD_MUL, each_group};
    use std::arch::x86_64::*;

    /// Broadcast constants of one probe call.
    #[derive(Clone, Copy)]
    struct Consts {
        mix: __m256i,
        word_mul: __m256i,
        bits_mul: __m256i,
        fold_word: __m256i,
        fold_bits: __m256i,
        low5: __m256i,
        one: __m256i,
        /// `32 - log2(words)` for VPSRLD.
        shift: __m128i,
    }

    impl Consts {
        #[target_feature(enable = "avx2")]
        fn new(shift: u32) -> Consts {
            Consts {
                mix: _mm256_set1_epi32(MIX as i32),
                word_mul: _mm256_set1_epi32(WORD_MUL as i32),
                bits_mul: _mm256_set1_epi32(BITS_MUL as i32),
                fold_word: _mm256_set1_epi32(FOLD_WORD as i32),
                fold_bits: _mm256_set1_epi32(FOLD_BITS as i32),
                low5: _mm256_set1_epi32(31),
                one: _mm256_set1_epi32(1),
                shift: _mm_cvtsi32_si128(shift as i32),
            }
        }
    }

    super::hash_lanes!(
        "avx2",
        "8",
        __m256i,
        _mm256_srli_epi32,
        _mm256_and_si256,
        _mm256_or_si256,
        _mm256_xor_si256,
        _mm256_mullo_epi32,
        _mm256_sllv_epi32
    );

    /// Tests 8 keys given their premixed `m` and the `h2` input: one bit per lane.
    ///
    /// # Safety
    /// The CPU must support avx2; `words.len()` must be `1 << (32 - shift)`.
    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn test8<const K: u32>(c: &Consts, words: &[u32], m: __m256i, bits_in: __m256i) -> u32 {
        let h1 = _mm256_mullo_epi32(m, c.word_mul);
        let idx = _mm256_srl_epi32(h1, c.shift);
        let p = pattern::<K>(c, _mm256_mullo_epi32(bits_in, c.bits_mul));
        // SAFETY: every lane of `idx` is `h1 >> shift < 2^(32 - shift) = words.len()`,
        // non-negative as an i32 (`shift >= 5`); scaled by 4 bytes it addresses a word.
        let w = unsafe { _mm256_i32gather_epi32::<4>(words.as_ptr().cast(), idx) };
        let hit = _mm256_cmpeq_epi32(_mm256_and_si256(w, p), p);
        _mm256_movemask_ps(_mm256_castsi256_ps(hit)) as u32
    }

    /// 8 `u32` keys at `v` (8 elements): one bit per key.
    ///
    /// # Safety
    /// As [`test8`]; `v` holds at least 8 keys.
    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn step_u32<const K: u32>(c: &Consts, words: &[u32], v: &[u32]) -> u32 {
        debug_assert!(v.len() >= 8);
        // SAFETY: `v` holds 8 u32, 32 bytes; the load is unaligned.
        let x = unsafe { _mm256_loadu_si256(v.as_ptr().cast()) };
        let m = premix(c, x);
        // SAFETY: forwarded from the caller.
        unsafe { test8::<K>(c, words, m, m) }
    }

    /// 8 `u64` keys at `v` (8 elements): one bit per key, in the lane order
    /// `[0, 1, 4, 5, 2, 3, 6, 7]` (see [`unshuffle`]).
    ///
    /// # Safety
    /// As [`test8`]; `v` holds at least 8 keys.
    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn step_u64<const K: u32>(c: &Consts, words: &[u32], v: &[u64]) -> u32 {
        debug_assert!(v.len() >= 8);
        // SAFETY: `v` holds 8 u64, two 32-byte loads; both unaligned.
        let (a, b) = unsafe {
            (
                _mm256_castsi256_ps(_mm256_loadu_si256(v.as_ptr().cast())),
                _mm256_castsi256_ps(_mm256_loadu_si256(v[4..].as_ptr().cast())),
            )
        };
        // Per 128-bit half, the even (low) and odd (high) 32-bit elements of a then b:
        // keys 0, 1, 4, 5 in the low half and 2, 3, 6, 7 in the high half.
        let lo = _mm256_castps_si256(_mm256_shuffle_ps::<0b10_00_10_00>(a, b));
        let hi = _mm256_castps_si256(_mm256_shuffle_ps::<0b11_01_11_01>(a, b));
        let m = premix(c, _mm256_xor_si256(lo, _mm256_mullo_epi32(hi, c.fold_word)));
        let bits_in = _mm256_xor_si256(m, _mm256_mullo_epi32(hi, c.fold_bits));
        // SAFETY: forwarded from the caller.
        unsafe { test8::<K>(c, words, m, bits_in) }
    }

    /// Puts bits of [`step_u64`] masks, 8 per byte in lane order `[0, 1, 4, 5, 2, 3, 6, 7]`,
    /// into key order (swaps bit pairs 2–3 and 4–5 of every byte).
    #[inline(always)]
    fn unshuffle(w: u64) -> u64 {
        const KEEP: u64 = 0xC3C3_C3C3_C3C3_C3C3;
        const PAIR: u64 = 0x0C0C_0C0C_0C0C_0C0C;
        (w & KEEP) | ((w & PAIR) << 2) | ((w >> 2) & PAIR)
    }

    /// Probes whole groups of 8 keys into `out` (zeroed by the caller, at least
    /// `keys.len().div_ceil(64)` words); returns the keys done.
    ///
    /// # Safety
    /// The CPU must support avx2; `words.len()` must be `1 << (32 - shift)` with
    /// `5 <= shift <= 31`.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn probe_u32<const K: u32>(
        words: &[u32],
        shift: u32,
        keys: &[u32],
        out: &mut [u64],
    ) -> usize {
        debug_assert_eq!(words.len(), 1 << (32 - shift));
        let c = Consts::new(shift);
        // SAFETY: the caller's guarantees; `each_group` passes 8 keys per call.
        each_group::<_, 8>(keys, out, |w| w, |v| unsafe { step_u32::<K>(&c, words, v) })
    }

    /// [`probe_u32`] for `u64` keys.
    ///
    /// # Safety
    /// As [`probe_u32`].
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn probe_u64<const K: u32>(
        words: &[u32],
        shift: u32,
        keys: &[u64],
        out: &mut [u64],
    ) -> usize {
        debug_assert_eq!(words.len(), 1 << (32 - shift));
        let c = Consts::new(shift);
        // SAFETY: the caller's guarantees; `each_group` passes 8 keys per call.
        each_group::<_, 8>(keys, out, unshuffle, |v| unsafe {
            step_u64::<K>(&c, words, v)
        })
    }
}

/// AVX-512 batch probes, 16 keys per step: the AVX2 kernel's steps on 16 lanes
/// (`VPGATHERDD` of 16 words), the verdicts straight into a mask register (`VPCMPEQD` to
/// `k`), and 64-bit keys split into their 32-bit halves in key order by two `VPERMT2D`.
#[cfg(target_arch = "x86_64")]
mod avx512 {
    use super::{BITS_MUL, FOLD_BITS, FOLD_WORD, MIX, WORD_MUL, each_group};
    use std::arch::x86_64::*;

    /// Broadcast constants of one probe call.
    #[derive(Clone, Copy)]
    struct Consts {
        mix: __m512i,
        word_mul: __m512i,
        bits_mul: __m512i,
        fold_word: __m512i,
        fold_bits: __m512i,
        low5: __m512i,
        one: __m512i,
        /// Positions of the low (even) and high (odd) halves of 16 keys in two vectors.
        lows: __m512i,
        highs: __m512i,
        /// `32 - log2(words)` for VPSRLD.
        shift: __m128i,
    }

    impl Consts {
        #[target_feature(enable = "avx512f")]
        fn new(shift: u32) -> Consts {
            let even: [i32; 16] = std::array::from_fn(|i| 2 * i as i32);
            // SAFETY: 16 i32 are 64 bytes; the loads are unaligned.
            let (lows, highs) = unsafe {
                (
                    _mm512_loadu_si512(even.as_ptr().cast()),
                    _mm512_loadu_si512(even.map(|e| e + 1).as_ptr().cast()),
                )
            };
            Consts {
                mix: _mm512_set1_epi32(MIX as i32),
                word_mul: _mm512_set1_epi32(WORD_MUL as i32),
                bits_mul: _mm512_set1_epi32(BITS_MUL as i32),
                fold_word: _mm512_set1_epi32(FOLD_WORD as i32),
                fold_bits: _mm512_set1_epi32(FOLD_BITS as i32),
                low5: _mm512_set1_epi32(31),
                one: _mm512_set1_epi32(1),
                lows,
                highs,
                shift: _mm_cvtsi32_si128(shift as i32),
            }
        }
    }

    super::hash_lanes!(
        "avx512f",
        "16",
        __m512i,
        _mm512_srli_epi32,
        _mm512_and_si512,
        _mm512_or_si512,
        _mm512_xor_si512,
        _mm512_mullo_epi32,
        _mm512_sllv_epi32
    );

    /// Tests 16 keys given their premixed `m` and the `h2` input: one bit per lane.
    ///
    /// # Safety
    /// The CPU must support avx512f; `words.len()` must be `1 << (32 - shift)`.
    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn test16<const K: u32>(c: &Consts, words: &[u32], m: __m512i, bits_in: __m512i) -> u32 {
        let h1 = _mm512_mullo_epi32(m, c.word_mul);
        let idx = _mm512_srl_epi32(h1, c.shift);
        let p = pattern::<K>(c, _mm512_mullo_epi32(bits_in, c.bits_mul));
        // SAFETY: every lane of `idx` is `h1 >> shift < 2^(32 - shift) = words.len()`,
        // non-negative as an i32 (`shift >= 5`); scaled by 4 bytes it addresses a word.
        let w = unsafe { _mm512_i32gather_epi32::<4>(idx, words.as_ptr().cast()) };
        u32::from(_mm512_cmpeq_epi32_mask(_mm512_and_si512(w, p), p))
    }

    /// 16 `u32` keys at `v` (16 elements): one bit per key.
    ///
    /// # Safety
    /// As [`test16`]; `v` holds at least 16 keys.
    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn step_u32<const K: u32>(c: &Consts, words: &[u32], v: &[u32]) -> u32 {
        debug_assert!(v.len() >= 16);
        // SAFETY: `v` holds 16 u32, 64 bytes; the load is unaligned.
        let x = unsafe { _mm512_loadu_si512(v.as_ptr().cast()) };
        let m = premix(c, x);
        // SAFETY: forwarded from the caller.
        unsafe { test16::<K>(c, words, m, m) }
    }

    /// 16 `u64` keys at `v` (16 elements): one bit per key, in key order.
    ///
    /// # Safety
    /// As [`test16`]; `v` holds at least 16 keys.
    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn step_u64<const K: u32>(c: &Consts, words: &[u32], v: &[u64]) -> u32 {
        debug_assert!(v.len() >= 16);
        // SAFETY: `v` holds 16 u64, two 64-byte loads; both unaligned.
        let (a, b) = unsafe {
            (
                _mm512_loadu_si512(v.as_ptr().cast()),
                _mm512_loadu_si512(v[8..].as_ptr().cast()),
            )
        };
        let lo = _mm512_permutex2var_epi32(a, c.lows, b);
        let hi = _mm512_permutex2var_epi32(a, c.highs, b);
        let m = premix(c, _mm512_xor_si512(lo, _mm512_mullo_epi32(hi, c.fold_word)));
        let bits_in = _mm512_xor_si512(m, _mm512_mullo_epi32(hi, c.fold_bits));
        // SAFETY: forwarded from the caller.
        unsafe { test16::<K>(c, words, m, bits_in) }
    }

    /// Probes whole groups of 16 keys into `out` (zeroed by the caller, at least
    /// `keys.len().div_ceil(64)` words); returns the keys done.
    ///
    /// # Safety
    /// The CPU must support avx512f; `words.len()` must be `1 << (32 - shift)` with
    /// `5 <= shift <= 31`.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn probe_u32<const K: u32>(
        words: &[u32],
        shift: u32,
        keys: &[u32],
        out: &mut [u64],
    ) -> usize {
        debug_assert_eq!(words.len(), 1 << (32 - shift));
        let c = Consts::new(shift);
        // SAFETY: the caller's guarantees; `each_group` passes 16 keys per call.
        each_group::<_, 16>(keys, out, |w| w, |v| unsafe { step_u32::<K>(&c, words, v) })
    }

    /// [`probe_u32`] for `u64` keys.
    ///
    /// # Safety
    /// As [`probe_u32`].
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn probe_u64<const K: u32>(
        words: &[u32],
        shift: u32,
        keys: &[u64],
        out: &mut [u64],
    ) -> usize {
        debug_assert_eq!(words.len(), 1 << (32 - shift));
        let c = Consts::new(shift);
        // SAFETY: the caller's guarantees; `each_group` passes 16 keys per call.
        each_group::<_, 16>(keys, out, |w| w, |v| unsafe { step_u64::<K>(&c, words, v) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dispatch::with_level;
    use proptest::prelude::*;

    /// Every level the CPU supports.
    fn levels() -> Vec<Level> {
        Level::supported()
    }

    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        }
    }

    /// Checks every batch probe at every level against `contains`, bit by bit.
    fn check_batches(f: &BloomFilter, keys: &[u64]) -> Result<(), TestCaseError> {
        let expect: Vec<bool> = keys.iter().map(|&k| f.contains(k)).collect();
        let keys32: Vec<u32> = keys.iter().map(|&k| k as u32).collect();
        let expect32: Vec<bool> = keys32.iter().map(|&k| f.contains(u64::from(k))).collect();
        for level in levels() {
            let (b, b32) = with_level(level, || (f.probe(keys), f.probe_u32(&keys32)));
            prop_assert_eq!(
                &b,
                &Bitmap::from_bools(expect.iter().copied()),
                "{:?}",
                level
            );
            prop_assert_eq!(
                &b32,
                &Bitmap::from_bools(expect32.iter().copied()),
                "{:?}",
                level
            );
            prop_assert_eq!(&b, &f.probe_at(level, keys));
            prop_assert_eq!(&b32, &f.probe_u32_at(level, &keys32));
            let signed: Vec<i64> = keys.iter().map(|&k| k as i64).collect();
            prop_assert_eq!(&b, &with_level(level, || f.probe_i64(&signed)));
        }
        Ok(())
    }

    /// Keys with structure that the hash must survive: small, negative, high bits only.
    fn key() -> impl Strategy<Value = u64> {
        prop_oneof![
            any::<u64>(),
            0u64..1000,
            (0u32..1000).prop_map(|x| u64::from(x) << 32),
            (-1000i64..0).prop_map(|x| x as u64),
            any::<u32>().prop_map(u64::from),
            any::<i32>().prop_map(|x| x as i64 as u64),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn never_drops_an_inserted_key(
            keys in proptest::collection::vec(key(), 0..700),
            others in proptest::collection::vec(key(), 0..300),
            distinct in 0usize..2000,
            fpr in prop_oneof![Just(0.5), Just(0.01), Just(0.001), 0.0001f64..1.0],
        ) {
            let mut f = BloomFilter::with_capacity(distinct, fpr);
            for &k in &keys {
                f.insert(k);
            }
            for &k in &keys {
                prop_assert!(f.contains(k));
            }
            let small: Vec<u32> =
                keys.iter().filter_map(|&k| u32::try_from(k).ok()).collect();
            for level in levels() {
                let (b, b32) = with_level(level, || (f.probe(&keys), f.probe_u32(&small)));
                prop_assert_eq!(b.count_ones(), keys.len(), "{:?}", level);
                prop_assert_eq!(b32.count_ones(), small.len(), "{:?}", level);
            }
            // Inserted and other keys mixed, every slice length (tails of 0..64 keys).
            let mut all = keys.clone();
            all.extend_from_slice(&others);
            for len in [all.len(), all.len().saturating_sub(1), all.len() / 3, 7, 9, 65] {
                check_batches(&f, &all[..len.min(all.len())])?;
            }
        }

        #[test]
        fn batches_equal_contains(
            keys in proptest::collection::vec(key(), 0..200),
            probes in proptest::collection::vec(key(), 0..400),
            distinct in 0usize..300,
        ) {
            // A small, crowded filter, so that probes answer both ways.
            let mut f = BloomFilter::with_capacity(distinct, 0.2);
            for &k in &keys {
                f.insert(k);
            }
            check_batches(&f, &probes)?;
        }

        #[test]
        fn i128_key_extends_i64(v in any::<i64>(), w in any::<i128>()) {
            prop_assert_eq!(i128_key(i128::from(v)), v as u64);
            prop_assert_eq!(i128_key(w), i128_key(w));
        }

        #[test]
        fn bytes_key_is_deterministic(b in proptest::collection::vec(any::<u8>(), 0..100)) {
            prop_assert_eq!(bytes_key(&b), bytes_key(&b.clone()));
        }
    }

    #[test]
    fn every_k_and_size_every_tail() {
        let mut rng = Rng(7);
        for log2w in [1u32, 2, 5, 12] {
            for k in 1..=MAX_K {
                let mut f = BloomFilter {
                    words: vec![0; 1 << log2w],
                    shift: 32 - log2w,
                    k,
                    inserted: 0,
                    capacity: 0,
                };
                let keys: Vec<u64> = (0..(8u64 << log2w)).map(|_| rng.next()).collect();
                for &key in keys.iter().step_by(3) {
                    f.insert(key);
                }
                for len in (0..140).chain([keys.len()]) {
                    let slice = &keys[..len.min(keys.len())];
                    for level in levels() {
                        let b = f.probe_at(level, slice);
                        let want = Bitmap::from_bools(slice.iter().map(|&x| f.contains(x)));
                        assert_eq!(b, want, "log2w={log2w} k={k} len={len} {level:?}");
                        for (i, &x) in slice.iter().enumerate().step_by(3) {
                            assert!(b.get(i), "dropped {x}");
                        }
                        let s32: Vec<u32> = slice.iter().map(|&x| x as u32).collect();
                        let want32 = Bitmap::from_bools(s32.iter().map(|&x| f.contains(x.into())));
                        assert_eq!(f.probe_u32_at(level, &s32), want32);
                    }
                }
            }
        }
    }

    #[test]
    fn empty_and_single_key() {
        for distinct in [0usize, 1, 1000] {
            let mut f = BloomFilter::with_capacity(distinct, 0.01);
            let (none, none32) = (f.probe(&[]), f.probe_u32(&[]));
            assert!(none.is_empty() && none32.is_empty());
            // An empty filter holds nothing.
            for level in levels() {
                let keys: Vec<u64> = (0..100).collect();
                assert_eq!(f.probe_at(level, &keys).count_ones(), 0, "{level:?}");
            }
            for key in [
                0u64,
                1,
                u64::MAX,
                i64::MIN as u64,
                -1i64 as u64 - 7,
                1 << 32,
            ] {
                f.insert(key);
                for level in levels() {
                    assert!(f.probe_at(level, &[key]).get(0), "{key} {level:?}");
                    let all = vec![key; 77];
                    assert_eq!(f.probe_at(level, &all).count_ones(), 77, "{key} {level:?}");
                }
            }
            f.insert(5);
            for level in levels() {
                assert!(f.probe_u32_at(level, &[5]).get(0));
            }
        }
    }

    #[test]
    fn u32_keys_are_their_zero_extension() {
        let mut f = BloomFilter::with_capacity(100, 0.05);
        for x in (0..200u32).map(|x| x.wrapping_mul(0x0101_0101)) {
            f.insert(u64::from(x));
        }
        let keys: Vec<u32> = (0..1000u32).map(|x| x.wrapping_mul(0x0101_0101)).collect();
        let wide: Vec<u64> = keys.iter().map(|&x| u64::from(x)).collect();
        for level in levels() {
            with_level(level, || assert_eq!(f.probe_u32(&keys), f.probe(&wide)));
        }
        assert_eq!(hash32(123_456), hash64(123_456));
    }

    #[test]
    fn sizing() {
        // distinct 0 is the minimum; huge requests are capped at 512 MiB (lazily zeroed).
        let f = BloomFilter::with_capacity(0, 0.01);
        assert_eq!((f.num_words(), f.size_bytes()), (2, 8));
        assert!((1..=5).contains(&f.k()));
        assert_eq!(BloomFilter::with_capacity(10, f64::NAN).num_words(), 2);
        assert_eq!(BloomFilter::with_capacity(10, 7.0).num_words(), 2);
        let big = BloomFilter::with_capacity(usize::MAX, 0.01);
        assert_eq!(big.size_bytes(), 512 << 20);
        assert!(big.design_fpr() <= 1.0);
        for (n, fpr) in [
            (1usize, 0.01),
            (1000, 0.01),
            (100_000, 0.01),
            (100_000, 0.001),
        ] {
            let f = BloomFilter::with_capacity(n, fpr);
            assert!(f.num_words().is_power_of_two());
            assert!(f.design_fpr() <= fpr, "{f:?}");
            // Smallest: half the words would not meet the rate with any k.
            if f.num_words() > 2 {
                let lambda = n as f64 / (f.num_words() / 2) as f64;
                assert!((1..=5).all(|k| fpr_formula(lambda, k) > fpr), "{f:?}");
            }
            let dbg = format!("{f:?}");
            assert!(dbg.contains("size_bytes") && dbg.contains("k:"), "{dbg}");
        }
    }

    #[test]
    fn formula() {
        assert_eq!(fpr_formula(0.0, 3), 0.0);
        assert_eq!(fpr_formula(1e9, 3), 1.0);
        // k = 1 has a closed form: Σ P(j)·(1 - q^j) = 1 - E[q^J] = 1 - e^{-λ/32}. λ >= 100
        // starts the sum past j = 32, through Stirling's series.
        for lambda in [0.01, 0.3, 1.0, 10.0, 31.5, 100.0, 300.0, 2000.0] {
            let (got, want) = (1.0 - fpr_formula(lambda, 1), (-lambda / 32.0).exp());
            assert!(
                (got - want).abs() <= 1e-12 + 1e-9 * want,
                "λ={lambda}: {got} vs {want}"
            );
        }
        // k = 2: Σ P(j)·(1 - q^{2j})^2 = 1 - 2e^{-λ(1-q²)} + e^{-λ(1-q⁴)}.
        let q = 31.0f64 / 32.0;
        for lambda in [0.05, 0.5, 3.0, 150.0] {
            let want =
                1.0 - 2.0 * (-lambda * (1.0 - q * q)).exp() + (-lambda * (1.0 - q.powi(4))).exp();
            let got = fpr_formula(lambda, 2);
            assert!(
                (got - want).abs() <= 1e-12 + 1e-9 * want,
                "λ={lambda}: {got} vs {want}"
            );
        }
        let f = BloomFilter::with_capacity(1000, 0.01);
        assert_eq!(f.theoretical_fpr(0), 0.0);
        assert!(f.theoretical_fpr(500) < f.theoretical_fpr(1000));
    }

    #[test]
    fn bytes_keys_differ() {
        let inputs: Vec<Vec<u8>> = (0..40usize)
            .flat_map(|len| {
                let base: Vec<u8> = (0..len as u8).collect();
                let mut v = vec![base.clone()];
                for i in 0..len {
                    let mut c = base.clone();
                    c[i] ^= 1;
                    v.push(c);
                }
                v
            })
            .collect();
        let mut keys: Vec<u64> = inputs.iter().map(|b| bytes_key(b)).collect();
        keys.sort_unstable();
        keys.dedup();
        assert_eq!(keys.len(), inputs.len());
        assert_ne!(bytes_key(b""), bytes_key(b"\0"));
        assert_ne!(i128_key(1 << 64), i128_key(1));
        assert_ne!(i128_key(1 << 63), i128_key(i128::from(i64::MIN)));
    }

    /// The measured false-positive rate at the design size is within 1.5× of the theory,
    /// for sequential keys (1..n, as join keys often are) and random 64-bit keys: 100k keys
    /// at fpr 0.01, 10^6 keys that were not inserted probed.
    #[test]
    fn measured_fpr_matches_theory() {
        let n = 100_000u64;
        let probes = 1_000_000u64;
        let mut rng = Rng(99);
        // Random keys have the top bit clear, the random negatives have it set.
        let random: Vec<u64> = (0..n).map(|_| rng.next() >> 1).collect();
        let random_neg: Vec<u64> = (0..probes).map(|_| rng.next() | 1 << 63).collect();
        let cases = [
            (
                "sequential",
                (1..=n).collect(),
                (n + 1..=n + probes).collect(),
            ),
            ("random", random, random_neg),
        ];
        for (name, keys, negatives) in cases {
            let mut f = BloomFilter::with_capacity(n as usize, 0.01);
            for &k in &keys {
                f.insert(k);
            }
            let measured = f.probe(&negatives).count_ones() as f64 / probes as f64;
            let ratio = measured / f.design_fpr();
            assert!(f.design_fpr() <= 0.01);
            assert!(
                (1.0 / 1.5..=1.5).contains(&ratio),
                "{name}: measured {measured}, theory {}, ratio {ratio}",
                f.design_fpr()
            );
        }
    }
}
