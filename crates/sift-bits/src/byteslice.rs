//! The ByteSlice layout and its early-stopping scan (Feng et al., SIGMOD 2015).
//!
//! A code of `w` bits is split into `S = ceil(w / 8)` bytes stored in `S` separate slices,
//! most significant byte first: slice `j` holds byte `j` of every code. Codes are
//! **left-aligned** (shifted up by `8·S − w`), so every slice but the last carries a full 8
//! bits of the code and the last one's low bits are zero padding. Comparing two left-aligned
//! codes byte by byte, most significant first, orders them like the codes themselves (the
//! same zero padding on both sides never decides), and the first slice is then as selective
//! as a byte can be: with 12-bit codes it resolves all but 1/256 of the codes, where right
//! alignment would resolve all but 1/16 and force the second slice far more often.
//!
//! The scan compares 64 codes per step (one AVX-512 register of one slice, or two AVX2
//! registers) with the constant's byte, keeps per-segment masks of codes "equal so far", and
//! stops descending to lower slices once no code of the segment is still equal: the
//! early stop. The SIMD levels apply it from the third slice on and compare the first two
//! without a branch (see `DENSE_SLICES` for why and what was measured). A `prior`
//! bitmap (the result of earlier conjuncts) seeds those masks, so codes already rejected are never compared, and segments whose prior word is zero are
//! skipped without touching the slices (column-first pipelining, ByteSlice Algorithm 2).

use std::borrow::Cow;

use crate::bitmap::Bitmap;
use crate::dispatch::Level;
use crate::error::BitsError;
use crate::pack::low_mask;
use crate::predicate::{Predicate, Range};

/// Codes stored as byte slices, each slice padded to whole 64-code segments.
///
/// The slices lie one after another in one byte buffer (slice `j` at `j · stride`, with
/// `stride` the code count rounded up to 64), which is also the layout a file stores: a
/// reader borrows the file's bytes ([`ByteSlices::from_bytes`]) and the scan touches only
/// the slices it needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ByteSlices<'a> {
    width: u32,
    len: usize,
    data: Cow<'a, [u8]>,
}

/// Bytes that `len` codes of `width` bits take as byte slices, or `None` if that
/// overflows `usize` (only reachable with hostile metadata).
pub fn sliced_bytes(len: usize, width: u32) -> Option<usize> {
    len.div_ceil(64)
        .checked_mul(64)?
        .checked_mul(width.div_ceil(8) as usize)
}

impl ByteSlices<'static> {
    /// Slices `codes` of `width` bits (bits above `width` are ignored).
    pub fn from_codes(codes: &[u64], width: u32) -> Result<Self, BitsError> {
        if width > 64 {
            return Err(BitsError::Width { width, max: 64 });
        }
        let s = width.div_ceil(8) as usize;
        let pad = 8 * s as u32 - width;
        let stride = codes.len().div_ceil(64) * 64;
        let mut data = vec![0u8; stride * s];
        let mask = low_mask(width);
        for (j, slice) in data.chunks_exact_mut(stride.max(1)).take(s).enumerate() {
            let shift = 8 * (s - 1 - j) as u32;
            for (b, &c) in slice.iter_mut().zip(codes) {
                *b = (((c & mask) << pad) >> shift) as u8;
            }
        }
        Ok(Self {
            width,
            len: codes.len(),
            data: Cow::Owned(data),
        })
    }
}

impl<'a> ByteSlices<'a> {
    /// The `len` codes of `width` bits stored as byte slices at the start of `bytes`
    /// (borrowed, not copied); an error if `bytes` is shorter than
    /// [`sliced_bytes`]`(len, width)`.
    pub fn from_bytes(bytes: &'a [u8], width: u32, len: usize) -> Result<Self, BitsError> {
        if width > 64 {
            return Err(BitsError::Width { width, max: 64 });
        }
        let needed = sliced_bytes(len, width).ok_or(BitsError::Overflow { len, width })?;
        if bytes.len() < needed {
            return Err(BitsError::Length {
                what: "byte slices",
                got: bytes.len(),
                expected: needed,
            });
        }
        Ok(Self {
            width,
            len,
            data: Cow::Borrowed(&bytes[..needed]),
        })
    }

    /// The stored bytes: every slice in order, each padded to a multiple of 64 bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.data
    }

    /// Bit width of the codes.
    pub fn width(&self) -> u32 {
        self.width
    }

    /// Number of codes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True if there are no codes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Number of slices (bytes per code).
    pub fn num_slices(&self) -> usize {
        self.width.div_ceil(8) as usize
    }

    fn stride(&self) -> usize {
        self.len.div_ceil(64) * 64
    }

    /// Slice `j` (byte `j` of every code, most significant first), padded with zeros to
    /// a multiple of 64.
    pub fn slice(&self, j: usize) -> &[u8] {
        let stride = self.stride();
        &self.data[j * stride..(j + 1) * stride]
    }

    /// Alignment padding of the codes: a stored code is the code shifted up by this.
    fn pad(&self) -> u32 {
        8 * self.num_slices() as u32 - self.width
    }

    /// Code `i` (0 past the end).
    pub fn get(&self, i: usize) -> u64 {
        if i >= self.len {
            return 0;
        }
        let stride = self.stride();
        let v = (0..self.num_slices()).fold(0u64, |acc, j| {
            (acc << 8) | u64::from(self.data[j * stride + i])
        });
        v >> self.pad()
    }

    /// Every code, in order.
    pub fn decode(&self) -> Vec<u64> {
        let mut out = vec![0u64; self.len];
        self.assemble(Level::active(), 0, &mut out);
        out
    }

    /// Codes `start..start + out.len()` into `out` (which must lie within the codes).
    fn assemble(&self, level: Level, start: usize, out: &mut [u64]) {
        let (stride, pad) = (self.stride(), self.pad());
        let (data, s) = (&self.data[..], self.num_slices());
        match level.clamp() {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `clamp` returned a SIMD level only if AVX2 (which both imply) was
            // detected.
            Level::Avx512 | Level::Avx2 => unsafe {
                assemble_avx2(data, stride, s, pad, start, out)
            },
            _ => assemble_slices(data, stride, s, pad, start, out),
        }
    }

    /// The codes at the rows set in `sel` (which must have [`len`](Self::len) bits), in
    /// order; only the selected rows' bytes are read when the selection is sparse.
    pub fn select(&self, sel: &Bitmap) -> Result<Vec<u64>, BitsError> {
        if sel.len() != self.len {
            return Err(BitsError::Length {
                what: "selection bitmap",
                got: sel.len(),
                expected: self.len,
            });
        }
        let selected = sel.count_ones();
        if selected * DENSE_SELECT > self.len {
            // Dense: assemble each segment holding a selected row whole (sequential, in
            // SIMD registers), then keep its selected codes: one by one when they are few,
            // else with branch-free stores (every code is written, the position advances
            // only past selected ones; 64 slots of slack absorb the writes past the last).
            let level = Level::active();
            let mut out: Vec<u64> = vec![0; selected + 64];
            let mut buf = [0u64; 64];
            let mut k = 0;
            for (seg, &word) in sel.words().iter().enumerate() {
                if word == 0 {
                    continue;
                }
                let start = seg * 64;
                let n = (self.len - start).min(64);
                self.assemble(level, start, &mut buf[..n]);
                // The bitmap has no bits past `len`, so `k + b <= selected + 63` here.
                let dst = &mut out[k..k + n];
                let ones = word.count_ones() as usize;
                if ones >= 24 {
                    let mut at = 0;
                    for (b, &code) in buf[..n].iter().enumerate() {
                        dst[at] = code;
                        at += ((word >> b) & 1) as usize;
                    }
                } else {
                    let mut w = word;
                    for d in &mut dst[..ones] {
                        *d = buf[w.trailing_zeros() as usize];
                        w &= w - 1;
                    }
                }
                k += ones;
            }
            out.truncate(selected);
            return Ok(out);
        }
        let mut out: Vec<u64> = vec![0; selected];
        // Sparse: gather the selected rows' bytes, slice by slice.
        let stride = self.stride();
        for j in 0..self.num_slices() {
            let slice = &self.data[j * stride..(j + 1) * stride];
            for (o, i) in out.iter_mut().zip(sel.iter_ones()) {
                *o = (*o << 8) | u64::from(slice[i]);
            }
        }
        let pad = self.pad();
        if pad > 0 {
            out.iter_mut().for_each(|o| *o >>= pad);
        }
        Ok(out)
    }

    /// Evaluates `pred` on every code, restricted to the codes set in `prior` (if given,
    /// it must have `len()` bits). Uses the active [`Level`].
    pub fn compare(&self, pred: Predicate, prior: Option<&Bitmap>) -> Result<Bitmap, BitsError> {
        self.compare_at(Level::active(), pred, prior)
    }

    /// [`ByteSlices::compare`] at an explicit level.
    pub fn compare_at(
        &self,
        level: Level,
        pred: Predicate,
        prior: Option<&Bitmap>,
    ) -> Result<Bitmap, BitsError> {
        let mut out = Bitmap::default();
        self.compare_into(level, pred, prior, &mut out)?;
        Ok(out)
    }

    /// [`ByteSlices::compare_at`] writing into `out`, whose allocation is reused: a scan
    /// loop over many blocks then allocates (and page-faults) its result bitmap only once.
    pub fn compare_into(
        &self,
        level: Level,
        pred: Predicate,
        prior: Option<&Bitmap>,
        out: &mut Bitmap,
    ) -> Result<(), BitsError> {
        if let Some(p) = prior
            && p.len() != self.len
        {
            return Err(BitsError::Length {
                what: "prior bitmap",
                got: p.len(),
                expected: self.len,
            });
        }
        let (lo, hi, negate) = match pred.range(low_mask(self.width)) {
            Range::Empty => {
                *out = Bitmap::zeros(self.len);
                return Ok(());
            }
            Range::All => {
                *out = prior.cloned().unwrap_or_else(|| Bitmap::ones(self.len));
                return Ok(());
            }
            Range::In { lo, hi } => (lo, hi, false),
            Range::Out { lo, hi } => (lo, hi, true),
        };
        let plan = Plan::new(self, lo, hi, negate);
        let nseg = self.len.div_ceil(64);
        let prior_word = |s: usize| -> u64 {
            let valid = if s + 1 == nseg && !self.len.is_multiple_of(64) {
                low_mask((self.len % 64) as u32)
            } else {
                u64::MAX
            };
            prior.map_or(valid, |p| p.words().get(s).copied().unwrap_or(0) & valid)
        };
        let mut words = std::mem::take(out).into_words();
        words.clear();
        words.resize(nseg, 0);
        match level.clamp() {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `clamp` returned Avx512 only if its features were detected.
            Level::Avx512 => unsafe { scan_avx512(self, &plan, prior_word, &mut words) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `clamp` returned Avx2 only if AVX2 was detected.
            Level::Avx2 => unsafe { scan_avx2(self, &plan, prior_word, &mut words) },
            _ => scan::<Scalar>(self, &plan, prior_word, &mut words),
        }
        *out = Bitmap::from_words_trusted(words, self.len);
        Ok(())
    }
}

/// A selection of more than one row in this many assembles whole segments and compacts
/// ([`ByteSlices::select`]) instead of gathering row by row.
const DENSE_SELECT: usize = 16;

/// Codes `start..start + out.len()` of `s` slices `stride` bytes apart in `data`, each
/// shifted down by `pad`: one pass writing each code once, with the slice count a constant
/// so that the per-row loop over slices unrolls and the row loop vectorises.
#[inline(always)]
fn assemble_slices(data: &[u8], stride: usize, s: usize, pad: u32, start: usize, out: &mut [u64]) {
    #[inline(always)]
    fn rows<const S: usize>(data: &[u8], stride: usize, pad: u32, start: usize, out: &mut [u64]) {
        let n = out.len();
        let slices: [&[u8]; S] =
            std::array::from_fn(|j| &data[j * stride + start..j * stride + start + n]);
        for (i, o) in out.iter_mut().enumerate() {
            let mut v = 0u64;
            for slice in slices {
                v = (v << 8) | u64::from(slice[i]);
            }
            *o = v >> pad;
        }
    }
    match s {
        0 => out.fill(0),
        1 => rows::<1>(data, stride, pad, start, out),
        2 => rows::<2>(data, stride, pad, start, out),
        3 => rows::<3>(data, stride, pad, start, out),
        4 => rows::<4>(data, stride, pad, start, out),
        5 => rows::<5>(data, stride, pad, start, out),
        6 => rows::<6>(data, stride, pad, start, out),
        7 => rows::<7>(data, stride, pad, start, out),
        _ => rows::<8>(data, stride, pad, start, out),
    }
}

/// [`assemble_slices`] compiled with AVX2.
///
/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn assemble_avx2(
    data: &[u8],
    stride: usize,
    s: usize,
    pad: u32,
    start: usize,
    out: &mut [u64],
) {
    assemble_slices(data, stride, s, pad, start, out);
}

/// The constant's bytes per slice and which sides of the range are live.
struct Plan {
    lo: [u8; 8],
    hi: [u8; 8],
    /// `x >= lo` must be tested (`lo > 0`).
    test_lo: bool,
    /// `x <= hi` must be tested (`hi < max`).
    test_hi: bool,
    negate: bool,
}

impl Plan {
    fn new(bs: &ByteSlices<'_>, lo: u64, hi: u64, negate: bool) -> Plan {
        let s = bs.num_slices();
        let pad = 8 * s as u32 - bs.width;
        let bytes = |c: u64| -> [u8; 8] {
            let v = c << pad;
            std::array::from_fn(|j| {
                if j < s {
                    (v >> (8 * (s - 1 - j))) as u8
                } else {
                    0
                }
            })
        };
        Plan {
            lo: bytes(lo),
            hi: bytes(hi),
            test_lo: lo > 0,
            test_hi: hi < low_mask(bs.width),
            negate,
        }
    }
}

/// Compares the 64 bytes at a segment of a slice with a byte constant.
trait ByteCmp {
    /// Slices compared in every live segment before early stopping may skip the rest.
    const DENSE: usize = DENSE_SLICES;
    /// The constant in the form the comparison wants (a broadcast register).
    type C: Copy;
    /// # Safety
    /// The CPU features of the implementation must be present.
    unsafe fn splat(c: u8) -> Self::C;
    /// `(lt, eq)` masks: bit `i` set if byte `i` is below / equal to the constant.
    ///
    /// # Safety
    /// 64 bytes readable at `p`; the CPU features of the implementation present.
    unsafe fn cmp(p: *const u8, c: Self::C) -> (u64, u64);
}

struct Scalar;

impl ByteCmp for Scalar {
    const DENSE: usize = 1;
    type C = u8;
    unsafe fn splat(c: u8) -> u8 {
        c
    }
    #[inline(always)]
    unsafe fn cmp(p: *const u8, c: u8) -> (u64, u64) {
        // SAFETY: the caller guarantees 64 readable bytes at `p`.
        let bytes = unsafe { std::slice::from_raw_parts(p, 64) };
        let (mut lt, mut eq) = (0u64, 0u64);
        for (i, &b) in bytes.iter().enumerate() {
            lt |= u64::from(b < c) << i;
            eq |= u64::from(b == c) << i;
        }
        (lt, eq)
    }
}

/// Slices the SIMD levels compare in every live segment before early stopping may skip
/// the rest (the scalar level, where a comparison costs a 64-byte loop, stops from the
/// second slice on).
///
/// The early stop after the first slice skips the second for most segments (with 12-bit
/// codes and a 10 % constant ~78 % of them), but the test is a branch the predictor cannot
/// learn, and the skipped reads leave the second slice a sparse, irregular access pattern
/// that the hardware prefetcher does not follow. Comparing the first two slices without a
/// branch keeps both as sequential streams. Measured on 12-bit codes with AVX-512
/// (`benches/paper.rs`): from DRAM 0.25–0.27 cycles/value, against 0.33 for the early stop
/// with the second slice software-prefetched whole (prefetching only the lines a
/// first-slice look-ahead marks as needed was 3× slower); with the data in L2 it costs a
/// little more, 0.114 against 0.102 (AVX2: 0.164 against 0.135). From the third slice on a
/// segment still has a tie only when 16 bits of a code equal the constant's, so the stop is
/// predictable and saves whole slices.
const DENSE_SLICES: usize = 2;

/// The segment loop shared by all levels (inlined into each level's entry point, so the
/// comparisons compile with that level's instructions).
// `j` indexes the slice pointers and the per-slice constants in lockstep.
#[allow(clippy::needless_range_loop)]
#[inline(always)]
fn scan<B: ByteCmp>(
    bs: &ByteSlices<'_>,
    plan: &Plan,
    prior_word: impl Fn(usize) -> u64,
    out: &mut [u64],
) {
    let s = bs.num_slices();
    // SAFETY: `splat` needs B's features, which the caller of `scan` (a level entry point)
    // has enabled.
    let (lo, hi): ([B::C; 8], [B::C; 8]) = unsafe {
        (
            std::array::from_fn(|j| B::splat(plan.lo[j])),
            std::array::from_fn(|j| B::splat(plan.hi[j])),
        )
    };
    let ptrs: [*const u8; 8] = std::array::from_fn(|j| {
        if j < s {
            bs.slice(j).as_ptr()
        } else {
            std::ptr::null()
        }
    });
    for (seg, slot) in out.iter_mut().enumerate() {
        let p = prior_word(seg);
        if p == 0 {
            *slot = 0;
            continue;
        }
        // SAFETY: every slice holds `nseg * 64` bytes, so the 64 bytes at `64 * seg` of
        // slice `j < s` are in bounds; B's features are enabled by the caller.
        let hit = unsafe {
            let at = |j: usize| ptrs[j].add(64 * seg);
            match (plan.test_lo, plan.test_hi) {
                (true, true) if plan.lo == plan.hi => {
                    let mut eq = p;
                    for j in 0..s {
                        if j >= B::DENSE && eq == 0 {
                            break;
                        }
                        eq &= B::cmp(at(j), lo[j]).1;
                    }
                    eq
                }
                (true, true) => {
                    let (mut gt_lo, mut eq_lo, mut lt_hi, mut eq_hi) = (0, p, 0, p);
                    for j in 0..s {
                        let dense = j < B::DENSE;
                        if !dense && eq_lo | eq_hi == 0 {
                            break;
                        }
                        if dense || eq_lo != 0 {
                            let (l, e) = B::cmp(at(j), lo[j]);
                            gt_lo |= eq_lo & !(l | e);
                            eq_lo &= e;
                        }
                        if dense || eq_hi != 0 {
                            let (l, e) = B::cmp(at(j), hi[j]);
                            lt_hi |= eq_hi & l;
                            eq_hi &= e;
                        }
                    }
                    (gt_lo | eq_lo) & (lt_hi | eq_hi)
                }
                (true, false) => {
                    let (mut gt, mut eq) = (0, p);
                    for j in 0..s {
                        if j >= B::DENSE && eq == 0 {
                            break;
                        }
                        let (l, e) = B::cmp(at(j), lo[j]);
                        gt |= eq & !(l | e);
                        eq &= e;
                    }
                    gt | eq
                }
                (false, _) => {
                    let (mut lt, mut eq) = (0, p);
                    for j in 0..s {
                        if j >= B::DENSE && eq == 0 {
                            break;
                        }
                        let (l, e) = B::cmp(at(j), hi[j]);
                        lt |= eq & l;
                        eq &= e;
                    }
                    lt | eq
                }
            }
        };
        *slot = if plan.negate { !hit & p } else { hit };
    }
}

#[cfg(target_arch = "x86_64")]
mod simd {
    use super::ByteCmp;
    use std::arch::x86_64::*;

    pub(super) struct Avx512;

    impl ByteCmp for Avx512 {
        type C = __m512i;
        #[inline]
        #[target_feature(enable = "avx512f,avx512bw")]
        unsafe fn splat(c: u8) -> __m512i {
            _mm512_set1_epi8(c as i8)
        }
        #[inline]
        #[target_feature(enable = "avx512f,avx512bw")]
        unsafe fn cmp(p: *const u8, c: __m512i) -> (u64, u64) {
            // SAFETY: the caller guarantees 64 readable bytes at `p`.
            let v = unsafe { _mm512_loadu_si512(p.cast()) };
            (_mm512_cmplt_epu8_mask(v, c), _mm512_cmpeq_epu8_mask(v, c))
        }
    }

    pub(super) struct Avx2;

    impl ByteCmp for Avx2 {
        type C = __m256i;
        #[inline]
        #[target_feature(enable = "avx2")]
        unsafe fn splat(c: u8) -> __m256i {
            _mm256_set1_epi8(c as i8)
        }
        #[inline]
        #[target_feature(enable = "avx2")]
        unsafe fn cmp(p: *const u8, c: __m256i) -> (u64, u64) {
            // SAFETY: the caller guarantees 64 readable bytes at `p`.
            let (a, b) = unsafe {
                (
                    _mm256_loadu_si256(p.cast()),
                    _mm256_loadu_si256(p.add(32).cast()),
                )
            };
            // AVX2 compares bytes as signed only: `x >= c` iff `max_epu8(x, c) == x`.
            let ge = |x| _mm256_movemask_epi8(_mm256_cmpeq_epi8(_mm256_max_epu8(x, c), x)) as u32;
            let eq = |x| _mm256_movemask_epi8(_mm256_cmpeq_epi8(x, c)) as u32;
            let ge = u64::from(ge(a)) | (u64::from(ge(b)) << 32);
            let eq = u64::from(eq(a)) | (u64::from(eq(b)) << 32);
            (!ge, eq)
        }
    }
}

/// # Safety
/// The CPU must support avx512f and avx512bw.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,popcnt")]
unsafe fn scan_avx512(
    bs: &ByteSlices<'_>,
    plan: &Plan,
    prior_word: impl Fn(usize) -> u64,
    out: &mut [u64],
) {
    scan::<simd::Avx512>(bs, plan, prior_word, out);
}

/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,popcnt")]
unsafe fn scan_avx2(
    bs: &ByteSlices<'_>,
    plan: &Plan,
    prior_word: impl Fn(usize) -> u64,
    out: &mut [u64],
) {
    scan::<simd::Avx2>(bs, plan, prior_word, out);
}
