//! Big-endian decimals: Parquet's FIXED_LEN_BYTE_ARRAY decimals of at most 18 digits,
//! `width` (1–8) bytes per value, two's complement, most significant byte first, read in
//! place as the unscaled integers of the `i64` cascade. A node of this encoding over a
//! PLAIN page's bytes lets a decimal column's pages be read without converting them first:
//! a selection widens only the selected values (a projected column behind a selective
//! filter touches a few of a page's values; widening every page up front took a third of
//! TPC-H Q6 on such files). Sift's writer never chooses it.

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

impl BigEndian {
    /// The first `count` values' bytes, checked to be present.
    fn bytes<'a>(&self, ctx: &Ctx<'a>, count: usize) -> Result<&'a [u8]> {
        ctx.bufs.fixed(self.buffer, count, self.width)
    }

    /// All of the first `count` values.
    fn widen_all(&self, ctx: &Ctx<'_>, count: usize) -> Result<Vec<i64>> {
        let bytes = self.bytes(ctx, count)?;
        Ok(with_width!(self.width, W => {
            bytes.chunks_exact(W).map(widen::<W>).collect()
        }))
    }

    /// The values `sel` selects among the first `count`, each read at its offset.
    fn widen_selected(&self, ctx: &Ctx<'_>, count: usize, sel: &Bitmap) -> Result<Vec<i64>> {
        let bytes = self.bytes(ctx, count)?;
        let mut out = Vec::with_capacity(sel.count_ones());
        with_width!(self.width, W => {
            out.extend(
                sel.iter_ones()
                    .filter_map(|i| bytes.get(i * W..(i + 1) * W))
                    .map(widen::<W>),
            )
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
            proptest::prop_assert_eq!(i64::decode(&ctx, 0, values.len(), 0).unwrap(), values.clone());
            let sel = Bitmap::from_bools(picks[..values.len()].iter().copied());
            let want: Vec<i64> = sel.iter_ones().map(|i| values[i]).collect();
            proptest::prop_assert_eq!(i64::select(&ctx, 0, values.len(), 0, &sel).unwrap(), want);
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
