//! Big-endian decimals: Parquet's FIXED_LEN_BYTE_ARRAY decimals of at most 18 digits,
//! `width` (1–8) bytes per value, two's complement, most significant byte first, read in
//! place as the unscaled integers of the `i64` cascade. A node of this encoding over a
//! PLAIN page's bytes lets a decimal column's pages be read without converting them first:
//! a selection widens only the selected values (a projected column behind a selective
//! filter touches a few of a page's values; widening every page up front took a third of
//! TPC-H Q6 on such files). Sift's writer never chooses it.
//!
//! A value is one 8-byte big-endian load shifted down with its sign (the bytes of the
//! values after it shifted out), in a loop compiled for the CPU's vector level, so that
//! LLVM reverses 8 values' bytes with one shuffle; a selection of at least one value in
//! `DENSE` widens them all and keeps the selected ones. On 8 M pyarrow-written 7-byte
//! decimals, one core, best of runs 2–8, three alternated rounds: `select sum(d) from t`
//! 21.3–22.6 -> 11.9–14.9 ms, with 10 % nulls 29.2–37.7 -> 18.3–20.6 (the nullable sum
//! also taken without a copy of the column, in the aggregate); `where k < 75` 24.2–25.9
//! -> 18.2–18.5, with nulls 33.6–47.4 -> 21.2–22.4.

use serde::{Deserialize, Serialize};
use sift_bits::Bitmap;

use crate::domain::{Domain, Value};
use crate::encoding::Encoding;
use crate::error::{Result, corrupt};
use crate::tree::{Ctx, NodeId};
use crate::wire::{Reader, Writer};

/// The widest value: 8 bytes hold every decimal of 18 digits.
pub const MAX_WIDTH: u32 = 8;

/// `width`-byte big-endian two's-complement integers, one after another in buffer
/// `buffer`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BigEndian {
    /// Bytes per value, 1–8.
    pub width: u32,
    /// The buffer holding the values.
    pub buffer: u32,
}

/// One value's `W` bytes as an `i64`: the top bytes of a big-endian word, brought down
/// with their sign by an arithmetic shift.
#[inline(always)]
fn widen<const W: usize>(v: &[u8]) -> i64 {
    let mut be = [0u8; 8];
    be[..W].copy_from_slice(&v[..W]);
    i64::from_be_bytes(be) >> (64 - 8 * W)
}

/// Runs `$body` with `$w` a constant equal to `$width` (1–8), so that each value's load
/// and shift compile without a branch on the width.
macro_rules! with_width {
    ($width:expr, $w:ident => $body:expr) => {
        match $width {
            1 => {
                const $w: usize = 1;
                $body
            }
            2 => {
                const $w: usize = 2;
                $body
            }
            3 => {
                const $w: usize = 3;
                $body
            }
            4 => {
                const $w: usize = 4;
                $body
            }
            5 => {
                const $w: usize = 5;
                $body
            }
            6 => {
                const $w: usize = 6;
                $body
            }
            7 => {
                const $w: usize = 7;
                $body
            }
            _ => {
                const $w: usize = 8;
                $body
            }
        }
    };
}

/// A selection of at least one value in this many is read by widening every value (8 at
/// a time where the CPU has the vectors) and keeping the selected ones (compressed 8 at a
/// time), rather than each selected value at its offset: TPC-H Q1 on a file pyarrow wrote
/// (its decimals 7 bytes, 98 % of the rows selected) reads every decimal so.
const DENSE: usize = 4;

/// A value from the 8 bytes `word` at its offset: one load, the bytes of the values after
/// it shifted out with the sign brought down. (Copied into a zeroed word first, as
/// [`widen`] does, a 7-byte value is three loads.)
#[inline(always)]
fn widen_loaded<const W: usize>(word: &[u8]) -> i64 {
    let mut be = [0u8; 8];
    be.copy_from_slice(&word[..8]);
    i64::from_be_bytes(be) >> (64 - 8 * W)
}

/// How many of the values of `bytes` (`W` bytes each) have 8 bytes from their offset on.
fn loadable<const W: usize>(bytes: &[u8]) -> usize {
    bytes.len().checked_sub(8).map_or(0, |rest| rest / W + 1)
}

impl BigEndian {
    /// The first `count` values' bytes, checked to be present.
    fn bytes<'a>(&self, ctx: &Ctx<'a>, count: usize) -> Result<&'a [u8]> {
        ctx.bufs.fixed(self.buffer, count, self.width)
    }

    /// All of the first `count` values.
    fn widen_all(&self, ctx: &Ctx<'_>, count: usize) -> Result<Vec<i64>> {
        let bytes = self.bytes(ctx, count)?;
        // Written in place rather than zeroed first: a page's values are megabytes.
        let mut out: Vec<i64> = Vec::with_capacity(count);
        let written = with_width!(self.width, W => {
            let slots = &mut out.spare_capacity_mut()[..count];
            let loaded = loadable::<W>(bytes).min(count);
            let (head, tail) = slots.split_at_mut(loaded);
            // Compiled for the CPU's vector level: the baseline's SSE2 has no byte shuffle
            // and reverses a value's bytes in eight steps.
            let head_written = sift_bits::dispatch::compiled_for_active(
                #[inline(always)]
                || {
                    let words = bytes.windows(8).step_by(W);
                    (head.iter_mut().zip(words))
                        .map(|(o, word)| o.write(widen_loaded::<W>(word)))
                        .count()
                },
            );
            let rest = bytes.get(loaded * W..).unwrap_or_default().chunks_exact(W);
            let tail_written = (tail.iter_mut().zip(rest))
                .map(|(o, v)| o.write(widen::<W>(v)))
                .count();
            match head_written == loaded {
                true => loaded + tail_written,
                // Not reached: `loadable` counts the 8-byte words there are.
                false => 0,
            }
        });
        // SAFETY: the first `loaded` slots were each written, one per value from the first,
        // and the `tail_written` after them; `written` counts them (0 if the head missed
        // one, so that no unwritten slot is exposed).
        unsafe { out.set_len(written) };
        if written != count {
            return Err(corrupt(format!(
                "{count} big-endian values of {} bytes, {written} read",
                self.width
            )));
        }
        Ok(out)
    }

    /// The values `sel` selects among the first `count`, each read at its offset; where
    /// at least one in [`DENSE`] is selected, all widened and the selected ones kept.
    fn widen_selected(&self, ctx: &Ctx<'_>, count: usize, sel: &Bitmap) -> Result<Vec<i64>> {
        let ones = sel.count_ones();
        if ones.saturating_mul(DENSE) >= count && sel.len() == count {
            let all = self.widen_all(ctx, count)?;
            let kept = sift_bits::compact::filter(bytemuck::cast_slice::<i64, u64>(&all), sel)
                .map_err(|e| corrupt(format!("big-endian values: {e}")))?;
            return Ok(bytemuck::cast_vec(kept));
        }
        let bytes = self.bytes(ctx, count)?;
        let mut out = Vec::with_capacity(ones);
        with_width!(self.width, W => {
            let loaded = loadable::<W>(bytes);
            out.extend(sel.iter_ones().filter_map(|i| match i < loaded {
                true => bytes.get(i * W..).map(widen_loaded::<W>),
                false => bytes.get(i * W..(i + 1) * W).map(widen::<W>),
            }))
        });
        Ok(out)
    }
}

impl Encoding for BigEndian {
    const ID: u8 = 20;
    const NAME: &'static str = "be";
    const DOMAINS: &'static [Domain] = &[Domain::Int];

    fn write(&self, w: &mut Writer) {
        w.varint(u64::from(self.width));
        w.varint(u64::from(self.buffer));
    }

    fn read(r: &mut Reader<'_>) -> Result<Self> {
        let width = r.varint_u32("big-endian width")?;
        if !(1..=MAX_WIDTH).contains(&width) {
            return Err(corrupt(format!(
                "big-endian values of {width} bytes (1 to {MAX_WIDTH})"
            )));
        }
        Ok(Self {
            width,
            buffer: r.varint_u32("big-endian buffer")?,
        })
    }

    fn label(&self) -> String {
        format!("be{}", u64::from(self.width) * 8)
    }

    fn decode<V: Value>(
        &self,
        ctx: &Ctx<'_>,
        _id: NodeId,
        count: usize,
        _depth: usize,
    ) -> Result<Option<Vec<V>>> {
        if V::DOMAIN != Domain::Int {
            return Ok(None);
        }
        Ok(V::from_ints(self.widen_all(ctx, count)?))
    }

    /// Only the selected values are read and widened.
    fn select<V: Value>(
        &self,
        ctx: &Ctx<'_>,
        _id: NodeId,
        count: usize,
        _depth: usize,
        sel: &Bitmap,
    ) -> Result<Option<Vec<V>>> {
        if V::DOMAIN != Domain::Int {
            return Ok(None);
        }
        Ok(V::from_ints(self.widen_selected(ctx, count, sel)?))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::tree::ColumnEncoding;
    use crate::{Node, Validity};

    /// `values` as `width`-byte big-endian two's complement (each fits).
    fn big_endian(values: &[i64], width: usize) -> Vec<u8> {
        values
            .iter()
            .flat_map(|v| v.to_be_bytes()[8 - width..].to_vec())
            .collect()
    }

    proptest::proptest! {
        /// Every width, values at its extremes and between, all decoded and a random
        /// selection, against the values written.
        #[test]
        fn decodes_and_selects_what_was_written(
            width in 1usize..=8,
            raw in proptest::collection::vec(proptest::num::i64::ANY, 0..300),
            picks in proptest::collection::vec(proptest::bool::ANY, 300),
            sparse in proptest::collection::vec(proptest::bool::weighted(0.05), 300),
        ) {
            let shift = 64 - 8 * width as u32;
            // Values that fit `width` bytes: the raw ones shifted down with their sign.
            let values: Vec<i64> = raw.iter().map(|v| v.checked_shr(shift).unwrap_or(*v >> 63)).collect();
            let buf = big_endian(&values, width);
            let enc = ColumnEncoding {
                validity: Validity::AllValid,
                nodes: vec![Node::BigEndian(BigEndian { width: width as u32, buffer: 0 })],
            };
            let bufs = [buf.as_slice()];
            let ctx = Ctx::new(&enc, &bufs);
            // Every instruction-set level the CPU has widens as the scalar code does.
            for level in sift_bits::Level::supported() {
                let got = sift_bits::with_level(level, || i64::decode(&ctx, 0, values.len(), 0));
                proptest::prop_assert_eq!(got.unwrap(), values.clone(), "{:?}", level);
            }
            // A dense selection (widened whole, then compacted) and a sparse one (each
            // selected value read at its offset).
            for picks in [&picks, &sparse] {
                let sel = Bitmap::from_bools(picks[..values.len()].iter().copied());
                let want: Vec<i64> = sel.iter_ones().map(|i| values[i]).collect();
                for level in sift_bits::Level::supported() {
                    let got = sift_bits::with_level(level, || i64::select(&ctx, 0, values.len(), 0, &sel));
                    proptest::prop_assert_eq!(got.unwrap(), want.clone(), "{:?}", level);
                }
            }
        }
    }

    #[test]
    fn short_buffers_and_bad_widths_are_errors() {
        let enc = ColumnEncoding {
            validity: Validity::AllValid,
            nodes: vec![Node::BigEndian(BigEndian {
                width: 7,
                buffer: 0,
            })],
        };
        let buf = [0u8; 20];
        let bufs = [&buf[..]];
        let ctx = Ctx::new(&enc, &bufs);
        assert!(i64::decode(&ctx, 0, 3, 0).is_err());
        assert!(i64::select(&ctx, 0, 3, 0, &Bitmap::ones(3)).is_err());
        for width in [0u64, 9, 1 << 40] {
            let mut w = Writer::new();
            w.varint(width);
            w.varint(0);
            let bytes = w.into_bytes();
            let err = BigEndian::read(&mut Reader::new(&bytes)).unwrap_err();
            assert!(err.to_string().contains("big-endian"), "{err}");
        }
    }
}
