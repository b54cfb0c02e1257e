//! The stable wire form of encoding trees and statistics, as stored in a file's footer.
//!
//! Integers are little-endian: fixed-width where the width is part of the format, LEB128
//! varints (unsigned) elsewhere, signed values zigzag-mapped before the varint. Every node
//! is its encoding's stable numeric id followed by the fields that encoding writes in a
//! fixed order (each encoding's module; the registry maps ids to encodings). Reading is
//! bounds-checked: a truncated or inconsistent record is an error naming the byte offset,
//! and no read allocates more than the remaining bytes could hold.

use crate::error::{EncodingError, Result};
use crate::stats::{ChunkStats, Scalar};
use crate::tree::{ColumnEncoding, Node, Validity};

/// Validity tag: no nulls.
const VALIDITY_ALL_VALID: u8 = 0;
/// Validity tag: only nulls.
const VALIDITY_ALL_NULL: u8 = 1;
/// Validity tag: a boolean tree, followed by its root node id.
const VALIDITY_ENCODED: u8 = 2;

/// Scalar tags (an absent bound is tag 0).
const SCALAR_NONE: u8 = 0;
const SCALAR_INT: u8 = 1;
const SCALAR_FLOAT: u8 = 2;
const SCALAR_BOOL: u8 = 3;
const SCALAR_BYTES: u8 = 4;

/// Appends wire-form values to a byte vector.
#[derive(Debug, Default, Clone)]
pub struct Writer {
    buf: Vec<u8>,
}

impl Writer {
    /// An empty writer.
    pub fn new() -> Self {
        Self::default()
    }

    /// The bytes written so far.
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf
    }

    /// The bytes written.
    pub fn into_bytes(self) -> Vec<u8> {
        self.buf
    }

    /// Bytes written so far.
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    /// True if nothing was written.
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// One byte.
    pub fn u8(&mut self, v: u8) {
        self.buf.push(v);
    }

    /// A fixed-width little-endian `u32`.
    pub fn u32_le(&mut self, v: u32) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }

    /// A fixed-width little-endian `u64`.
    pub fn u64_le(&mut self, v: u64) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }

    /// Bytes as they are, without a length.
    pub fn raw(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// An unsigned LEB128 varint.
    pub fn varint(&mut self, v: u64) {
        self.varint128(u128::from(v));
    }

    /// An unsigned LEB128 varint of up to 128 bits.
    pub fn varint128(&mut self, mut v: u128) {
        while v >= 0x80 {
            self.buf.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.buf.push(v as u8);
    }

    /// A zigzag-mapped signed varint.
    pub fn zigzag(&mut self, v: i64) {
        self.varint(((v << 1) ^ (v >> 63)) as u64);
    }

    /// A zigzag-mapped signed varint of up to 128 bits.
    pub fn zigzag128(&mut self, v: i128) {
        self.varint128(((v << 1) ^ (v >> 127)) as u128);
    }

    /// Length-prefixed bytes: a varint length, then the bytes.
    pub fn bytes(&mut self, bytes: &[u8]) {
        self.varint(bytes.len() as u64);
        self.raw(bytes);
    }
}

/// Reads wire-form values from a byte slice, checking every bound.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    /// A reader at the start of `bytes`.
    pub fn new(bytes: &'a [u8]) -> Self {
        Self { bytes, pos: 0 }
    }

    /// Bytes consumed so far.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Bytes left.
    pub fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }

    /// An error unless every byte was consumed.
    pub fn finish(&self) -> Result<()> {
        if self.remaining() == 0 {
            return Ok(());
        }
        Err(self.error(format!("{} unexpected bytes at the end", self.remaining())))
    }

    /// A corruption error at the current position.
    pub fn error(&self, msg: impl std::fmt::Display) -> EncodingError {
        EncodingError::Corrupt(format!("at byte {}: {msg}", self.pos))
    }

    /// The next `n` bytes as they are.
    pub fn raw(&mut self, n: usize, what: &str) -> Result<&'a [u8]> {
        if n > self.remaining() {
            return Err(self.error(format!(
                "{what} needs {n} bytes, {} left (truncated)",
                self.remaining()
            )));
        }
        let out = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    /// One byte.
    pub fn u8(&mut self, what: &str) -> Result<u8> {
        Ok(self.raw(1, what)?[0])
    }

    /// A byte that must be 0 or 1.
    pub fn bool(&mut self, what: &str) -> Result<bool> {
        match self.u8(what)? {
            0 => Ok(false),
            1 => Ok(true),
            v => Err(self.error(format!("{what} is {v}, not 0 or 1"))),
        }
    }

    /// A fixed-width little-endian `u32`.
    pub fn u32_le(&mut self, what: &str) -> Result<u32> {
        let mut a = [0u8; 4];
        a.copy_from_slice(self.raw(4, what)?);
        Ok(u32::from_le_bytes(a))
    }

    /// A fixed-width little-endian `u64`.
    pub fn u64_le(&mut self, what: &str) -> Result<u64> {
        let mut a = [0u8; 8];
        a.copy_from_slice(self.raw(8, what)?);
        Ok(u64::from_le_bytes(a))
    }

    /// An unsigned LEB128 varint of up to 128 bits.
    pub fn varint128(&mut self, what: &str) -> Result<u128> {
        self.varint_bits(128, what)
    }

    /// An unsigned LEB128 varint that must fit 64 bits.
    pub fn varint(&mut self, what: &str) -> Result<u64> {
        Ok(self.varint_bits(64, what)? as u64)
    }

    /// An unsigned varint that must fit 32 bits.
    pub fn varint_u32(&mut self, what: &str) -> Result<u32> {
        Ok(self.varint_bits(32, what)? as u32)
    }

    fn varint_bits(&mut self, bits: u32, what: &str) -> Result<u128> {
        let start = self.pos;
        let mut v: u128 = 0;
        let mut shift = 0u32;
        loop {
            let Some(&b) = self.bytes.get(self.pos) else {
                self.pos = start;
                return Err(self.error(format!("{what}: varint truncated")));
            };
            self.pos += 1;
            let low = u128::from(b & 0x7F);
            // The bits left for this group; anything above them overflows the type.
            let room = bits.saturating_sub(shift);
            if room == 0 || (room < 7 && low >> room != 0) {
                self.pos = start;
                return Err(self.error(format!("{what}: varint exceeds {bits} bits")));
            }
            v |= low << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
            shift += 7;
        }
    }

    /// A zigzag-mapped signed varint of 64 bits.
    pub fn zigzag(&mut self, what: &str) -> Result<i64> {
        let v = self.varint(what)?;
        Ok((v >> 1) as i64 ^ -((v & 1) as i64))
    }

    /// A zigzag-mapped signed varint of up to 128 bits.
    pub fn zigzag128(&mut self, what: &str) -> Result<i128> {
        let v = self.varint128(what)?;
        Ok((v >> 1) as i128 ^ -((v & 1) as i128))
    }

    /// Length-prefixed bytes, borrowed.
    pub fn bytes(&mut self, what: &str) -> Result<&'a [u8]> {
        let len = self.varint(what)?;
        let len = usize::try_from(len).unwrap_or(usize::MAX);
        self.raw(len, what)
    }

    /// A varint count of items that take at least `min_bytes` each: refused if the bytes
    /// left cannot hold that many, so that a hostile count never sizes an allocation.
    pub fn count(&mut self, min_bytes: usize, what: &str) -> Result<usize> {
        let n = self.varint(what)?;
        let fits = usize::try_from(n)
            .ok()
            .and_then(|n| n.checked_mul(min_bytes.max(1)))
            .is_some_and(|need| need <= self.remaining());
        if !fits {
            return Err(self.error(format!(
                "{what}: {n} entries cannot fit in the {} bytes left",
                self.remaining()
            )));
        }
        Ok(n as usize)
    }
}

/// The smallest wire size of a node (an id and one varint): bounds the node count.
const MIN_NODE_BYTES: usize = 2;

impl ColumnEncoding {
    /// Writes the encoding: the validity (a tag, and for a tree its root), the node count,
    /// then every node.
    pub fn write_wire(&self, w: &mut Writer) {
        match self.validity {
            Validity::AllValid => w.u8(VALIDITY_ALL_VALID),
            Validity::AllNull => w.u8(VALIDITY_ALL_NULL),
            Validity::Encoded { root } => {
                w.u8(VALIDITY_ENCODED);
                w.varint(u64::from(root));
            }
        }
        w.varint(self.nodes.len() as u64);
        for node in &self.nodes {
            node.write_wire(w);
        }
    }

    /// Reads an encoding written by [`ColumnEncoding::write_wire`]. The tree's structure
    /// (children after parents, buffers that exist) is checked when it is decoded.
    pub fn read_wire(r: &mut Reader<'_>) -> Result<ColumnEncoding> {
        let validity = match r.u8("validity")? {
            VALIDITY_ALL_VALID => Validity::AllValid,
            VALIDITY_ALL_NULL => Validity::AllNull,
            VALIDITY_ENCODED => Validity::Encoded {
                root: r.varint_u32("validity root")?,
            },
            other => return Err(r.error(format!("unknown validity tag {other}"))),
        };
        let n = r.count(MIN_NODE_BYTES, "node count")?;
        let mut nodes = Vec::with_capacity(n);
        for _ in 0..n {
            let id = r.u8("encoding id")?;
            nodes.push(Node::read_wire(id, r)?);
        }
        Ok(ColumnEncoding { validity, nodes })
    }
}

fn write_scalar(s: Option<&Scalar>, w: &mut Writer) {
    match s {
        None => w.u8(SCALAR_NONE),
        Some(Scalar::Int(v)) => {
            w.u8(SCALAR_INT);
            w.zigzag128(*v);
        }
        Some(Scalar::Float(v)) => {
            w.u8(SCALAR_FLOAT);
            w.raw(&v.to_le_bytes());
        }
        Some(Scalar::Bool(v)) => {
            w.u8(SCALAR_BOOL);
            w.u8(u8::from(*v));
        }
        Some(Scalar::Bytes(v)) => {
            w.u8(SCALAR_BYTES);
            w.bytes(v);
        }
    }
}

fn read_scalar(r: &mut Reader<'_>, what: &str) -> Result<Option<Scalar>> {
    Ok(Some(match r.u8(what)? {
        SCALAR_NONE => return Ok(None),
        SCALAR_INT => Scalar::Int(r.zigzag128(what)?),
        SCALAR_FLOAT => Scalar::Float(f64::from_bits(r.u64_le(what)?)),
        SCALAR_BOOL => Scalar::Bool(r.bool(what)?),
        SCALAR_BYTES => Scalar::Bytes(r.bytes(what)?.to_vec()),
        other => return Err(r.error(format!("{what}: unknown scalar tag {other}"))),
    }))
}

impl ChunkStats {
    /// Writes the statistics: null count (varint), min and max (a tag, then the value),
    /// and a flag byte (bit 0: NaN, bit 1: sorted).
    pub fn write_wire(&self, w: &mut Writer) {
        w.varint(self.null_count);
        write_scalar(self.min.as_ref(), w);
        write_scalar(self.max.as_ref(), w);
        w.u8(u8::from(self.has_nan) | u8::from(self.sorted) << 1);
    }

    /// Reads statistics written by [`ChunkStats::write_wire`].
    pub fn read_wire(r: &mut Reader<'_>) -> Result<ChunkStats> {
        let (null_count, min, max) = (
            r.varint("null count")?,
            read_scalar(r, "min")?,
            read_scalar(r, "max")?,
        );
        let flags = r.u8("statistics flags")?;
        if flags > 3 {
            return Err(r.error(format!("statistics flags are {flags}, above 3")));
        }
        Ok(ChunkStats {
            null_count,
            min,
            max,
            has_nan: flags & 1 == 1,
            sorted: flags & 2 == 2,
            descending: false,
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn every_node() -> Vec<Node> {
        vec![
            Node::Plain(crate::encodings::Plain {
                width: 8,
                buffer: 3,
            }),
            Node::For(crate::encodings::For {
                base: i128::MIN,
                bits: 64,
                buffer: 1,
            }),
            Node::Bitmap(crate::encodings::Bitmap { buffer: u32::MAX }),
            Node::Bytes(crate::encodings::Bytes {
                lengths: 4,
                data: 0,
            }),
            Node::Dict(crate::encodings::Dict {
                values: 5,
                len: 300,
                codes: 6,
            }),
            Node::Constant(crate::encodings::Constant {
                value: vec![1, 2, 3],
            }),
            Node::Rle(crate::encodings::Rle {
                values: 7,
                runs: 2,
                lengths: 8,
            }),
            Node::Patch(crate::encodings::Patch {
                inner: 9,
                exceptions: 1,
                positions: 10,
                values: 11,
            }),
            Node::Delta(crate::encodings::Delta {
                first: i64::MIN,
                deltas: 12,
            }),
            Node::Alp(crate::encodings::Alp {
                exponent: 14,
                factor: 2,
                ints: 13,
            }),
            Node::AlpRd(crate::encodings::AlpRd {
                right_bits: 48,
                left: 14,
                right: 15,
            }),
            Node::Fsst(crate::encodings::Fsst {
                symbols: 0,
                lengths: 16,
                data: 1,
            }),
            Node::Lookup(crate::encodings::Lookup {
                column: 7,
                len: 9,
                table: 17,
            }),
        ]
    }

    #[test]
    fn encodings_round_trip_with_stable_ids() {
        let enc = ColumnEncoding {
            validity: Validity::Encoded { root: 12 },
            nodes: every_node(),
        };
        let mut w = Writer::new();
        enc.write_wire(&mut w);
        let bytes = w.into_bytes();
        let mut r = Reader::new(&bytes);
        assert_eq!(ColumnEncoding::read_wire(&mut r).unwrap(), enc);
        r.finish().unwrap();
        // Each node starts with its id, in the documented order.
        let mut ids = Vec::new();
        for node in &enc.nodes {
            let mut w = Writer::new();
            node.write_wire(&mut w);
            ids.push(w.as_bytes()[0]);
        }
        assert_eq!(ids, (0..=12).collect::<Vec<u8>>());
        // Plain { width: 8, buffer: 3 } is exactly [0, 8, 3].
        let mut w = Writer::new();
        enc.nodes[0].write_wire(&mut w);
        assert_eq!(w.as_bytes(), [0, 8, 3]);
    }

    #[test]
    fn stats_round_trip() {
        for stats in [
            ChunkStats::default(),
            ChunkStats {
                null_count: u64::MAX,
                min: Some(Scalar::Int(i128::MIN)),
                max: Some(Scalar::Int(i128::MAX)),
                has_nan: false,
                sorted: true,
                descending: false,
            },
            ChunkStats {
                null_count: 3,
                min: Some(Scalar::Float(-0.0)),
                max: Some(Scalar::Float(f64::INFINITY)),
                has_nan: true,
                sorted: false,
                descending: false,
            },
            ChunkStats {
                null_count: 0,
                min: Some(Scalar::Bool(false)),
                max: Some(Scalar::Bytes(b"zz".to_vec())),
                has_nan: false,
                sorted: false,
                descending: false,
            },
        ] {
            let mut w = Writer::new();
            stats.write_wire(&mut w);
            let bytes = w.into_bytes();
            let mut r = Reader::new(&bytes);
            let back = ChunkStats::read_wire(&mut r).unwrap();
            r.finish().unwrap();
            // -0.0 == 0.0 for PartialEq; compare bit patterns through Debug.
            assert_eq!(format!("{back:?}"), format!("{stats:?}"));
        }
    }

    #[test]
    fn varints_are_bounds_checked() {
        let mut w = Writer::new();
        w.varint(u64::MAX);
        w.zigzag128(i128::MIN);
        w.zigzag(-1);
        let bytes = w.into_bytes();
        let mut r = Reader::new(&bytes);
        assert_eq!(r.varint("a").unwrap(), u64::MAX);
        assert_eq!(r.zigzag128("b").unwrap(), i128::MIN);
        assert_eq!(r.zigzag("c").unwrap(), -1);
        r.finish().unwrap();
        // Too wide for the type, and truncated.
        let err = Reader::new(&[0xFF, 0xFF, 0xFF, 0xFF, 0x1F])
            .varint_u32("x")
            .unwrap_err();
        assert!(err.to_string().contains("exceeds 32 bits"), "{err}");
        let err = Reader::new(&[0xFF; 11]).varint("x").unwrap_err();
        assert!(err.to_string().contains("exceeds 64 bits"), "{err}");
        let err = Reader::new(&[0x80, 0x80]).varint("x").unwrap_err();
        assert!(err.to_string().contains("truncated"), "{err}");
        let err = Reader::new(&[5, 1, 2]).bytes("name").unwrap_err();
        assert!(err.to_string().contains("needs 5 bytes, 2 left"), "{err}");
    }

    #[test]
    fn hostile_records_are_refused() {
        // Unknown id, named.
        let err = ColumnEncoding::read_wire(&mut Reader::new(&[0, 1, 99, 0])).unwrap_err();
        assert!(err.to_string().contains("unknown encoding id 99"), "{err}");
        // A node count the bytes cannot hold: refused before any allocation.
        let mut w = Writer::new();
        w.u8(0);
        w.varint(u64::MAX >> 1);
        let err = ColumnEncoding::read_wire(&mut Reader::new(w.as_bytes())).unwrap_err();
        assert!(err.to_string().contains("cannot fit"), "{err}");
        // Every truncation of a valid record is an error.
        let enc = ColumnEncoding {
            validity: Validity::AllValid,
            nodes: every_node(),
        };
        let mut w = Writer::new();
        enc.write_wire(&mut w);
        let bytes = w.into_bytes();
        for cut in 0..bytes.len() {
            assert!(ColumnEncoding::read_wire(&mut Reader::new(&bytes[..cut])).is_err());
        }
        // Unknown tags.
        let err = ChunkStats::read_wire(&mut Reader::new(&[0, 9])).unwrap_err();
        assert!(err.to_string().contains("unknown scalar tag 9"), "{err}");
        // A statistics flag past NaN (bit 0) and sorted (bit 1).
        let err = ChunkStats::read_wire(&mut Reader::new(&[0, 0, 0, 4])).unwrap_err();
        assert!(err.to_string().contains("flags are 4"), "{err}");
    }
}
