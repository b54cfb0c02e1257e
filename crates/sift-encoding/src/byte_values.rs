//! Decoded byte strings (utf8, binary, fixed-size binary) and the limits on what a chunk
//! may decode to.

use crate::domain::decode_indices;
use crate::error::{Result, corrupt};
use crate::tree::{Ctx, NodeId};

/// The most bytes one chunk may decode to in any case: offsets are `u32`.
pub(crate) const MAX_CHUNK_BYTES: usize = u32::MAX as usize;

/// Bytes the values of any chunk may decode to, however small its encoding: 64 MiB, e.g.
/// a block of 64Ki rows of a 1 KiB constant string, or of a few distinct 1 KiB strings.
///
/// Constants and dictionaries expand without limit in principle (a 64 KiB footer could
/// otherwise ask for 64Ki × 64 KiB = 4 GiB); together with [`DECODE_EXPANSION`] this makes
/// the memory a chunk can demand proportional to its size, and a small file cannot ask
/// for more than this.
pub const DECODE_FLOOR: usize = 64 << 20;

/// Bytes the values of a chunk may decode to per byte of its encoding, above
/// [`DECODE_FLOOR`]. Plain strings decode to their stored size and FSST to at most 8× it
/// (one code byte stands for at most 8); only repetition (constants, dictionaries with
/// long entries) expands more, and a chunk that does, beyond the floor, is refused by the
/// writer too ("use smaller blocks"), so what Sift writes stays readable.
pub const DECODE_EXPANSION: usize = 16;

/// The most bytes the values of a chunk whose encoding takes `encoded` bytes may decode
/// to: the larger of [`DECODE_FLOOR`] and [`DECODE_EXPANSION`] × `encoded`, and never more
/// than `u32` offsets address. Checked before each allocation sized by the encoded data
/// (constants, dictionary gathers, FSST output, fixed-size values including nulls).
pub fn decode_budget(encoded: usize) -> usize {
    DECODE_FLOOR
        .max(encoded.saturating_mul(DECODE_EXPANSION))
        .min(MAX_CHUNK_BYTES)
}

/// Decoded byte strings: value `i` is `data[offsets[i]..offsets[i + 1]]`.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct ByteValues {
    pub offsets: Vec<u32>,
    pub data: Vec<u8>,
    /// Every value was checked to be valid UTF-8 on its own (so `data` is UTF-8 and every
    /// offset a char boundary), and Arrow need not check the bytes again. Set only by
    /// [`gather`], which checks each dictionary entry once instead of every row.
    pub utf8_checked: bool,
}

impl ByteValues {
    /// The number of strings.
    pub(crate) fn len(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }

    pub(crate) fn value(&self, i: usize) -> &[u8] {
        &self.data[self.offsets[i] as usize..self.offsets[i + 1] as usize]
    }

    pub(crate) fn with_capacity(count: usize, bytes: usize) -> Self {
        let mut offsets = Vec::with_capacity(count + 1);
        offsets.push(0);
        Self {
            offsets,
            data: Vec::with_capacity(bytes),
            utf8_checked: false,
        }
    }

    pub(crate) fn push(&mut self, v: &[u8]) {
        self.data.extend_from_slice(v);
        // Callers bound the total by the chunk's decode budget (at most MAX_CHUNK_BYTES),
        // so it fits.
        self.offsets.push(self.data.len() as u32);
    }
}

/// A string dictionary prepared for [`gather`], once per dictionary: the lengths of its
/// entries, the longest, where each starts in a zero-padded copy of its bytes (so that a
/// short entry moves as one fixed-size copy), and whether every entry is UTF-8. A column
/// chunk's pages share one (kept in the dictionary memo), so this work is not repeated
/// for each page.
pub(crate) struct GatherTable {
    dict: ByteValues,
    lens: Vec<usize>,
    longest: usize,
    /// For entries of at most 32 bytes: `dict.data` followed by 32 zero bytes (every
    /// entry has 32 bytes from its start), and each entry's (start, length), so that a
    /// value costs one table lookup.
    padded: Vec<u8>,
    entries: Vec<(usize, usize)>,
    utf8: bool,
}

impl GatherTable {
    pub(crate) fn new(dict: ByteValues) -> Self {
        let lens: Vec<usize> = dict
            .offsets
            .windows(2)
            .map(|w| (w[1] - w[0]) as usize)
            .collect();
        let longest = lens.iter().copied().max().unwrap_or(0);
        let (mut padded, mut entries) = (Vec::new(), Vec::new());
        if longest <= 32 {
            padded.reserve_exact(dict.data.len() + 32);
            padded.extend_from_slice(&dict.data);
            padded.resize(dict.data.len() + 32, 0);
            let starts = dict.offsets.iter().map(|&o| o as usize);
            entries = starts.zip(lens.iter().copied()).collect();
        }
        // Once per entry rather than once per row in Arrow's constructor.
        let utf8 = (0..lens.len()).all(|i| std::str::from_utf8(dict.value(i)).is_ok());
        GatherTable {
            dict,
            lens,
            longest,
            padded,
            entries,
            utf8,
        }
    }
}

/// The entries of dictionary node `id`'s `table` named by `codes` (checked to be in
/// range), concatenated; their total is checked against the chunk's decode budget before
/// the output is allocated.
pub(crate) fn gather(
    ctx: &Ctx<'_>,
    id: NodeId,
    table: &GatherTable,
    codes: &[u64],
) -> Result<ByteValues> {
    let (dict, lens, longest) = (&table.dict, &table.lens, table.longest);
    let exact = || -> Result<usize> {
        let total = codes
            .iter()
            .try_fold(0usize, |t, &c| t.checked_add(lens[c as usize]));
        ctx.check_decoded(Some(id), codes.len(), total)?;
        Ok(total.unwrap_or(usize::MAX))
    };
    // For short entries, the longest times the values bounds the output without a pass
    // over the codes before the gather (at most 32 bytes a value, so the bound is close).
    let bound = match longest.checked_mul(codes.len()) {
        Some(b) if b <= ctx.budget && longest <= 32 => b,
        _ => exact()?,
    };
    // Short entries (flags, modes, instructions) are copied as one fixed-size move each
    // from the zero-padded copy of the dictionary, advancing by the true length; a
    // `memcpy` call per value costs more than the bytes it moves.
    let mut out = match longest {
        1 if lens.iter().all(|&l| l == 1) => gather_bytes(dict, codes),
        0..=8 => gather_fixed::<8>(table, codes, bound),
        9..=16 => gather_fixed::<16>(table, codes, bound),
        17..=32 => gather_fixed::<32>(table, codes, bound),
        _ => {
            let mut out = ByteValues::with_capacity(codes.len(), bound);
            for &c in codes {
                out.push(dict.value(c as usize));
            }
            out
        }
    };
    out.utf8_checked = table.utf8;
    Ok(out)
}

/// [`gather`] for entries of exactly one byte (flags, single-letter codes): a byte table
/// lookup per value, and offsets that are just the row numbers.
fn gather_bytes(dict: &ByteValues, codes: &[u64]) -> ByteValues {
    // 256 entries so that `c & 0xFF` needs no bounds check; the codes were checked to be
    // below the dictionary's length.
    let mut table = [0u8; 256];
    let n = dict.data.len().min(256);
    table[..n].copy_from_slice(&dict.data[..n]);
    ByteValues {
        offsets: (0..=codes.len() as u32).collect(),
        data: codes.iter().map(|&c| table[(c & 0xFF) as usize]).collect(),
        utf8_checked: false,
    }
}

/// [`gather`] for entries of at most `W` bytes: one `W`-byte move per value.
///
/// Written through pointers into spare capacity: zero-filling the output first (and
/// checking each move's bounds) cost more than the moves.
fn gather_fixed<const W: usize>(table: &GatherTable, codes: &[u64], bound: usize) -> ByteValues {
    let (padded, entries) = (&table.padded, &table.entries);
    let mut data: Vec<u8> = Vec::with_capacity(bound + W);
    let mut offsets: Vec<u32> = Vec::with_capacity(codes.len() + 1);
    let (dst, ends) = (data.as_mut_ptr(), offsets.as_mut_ptr());
    let mut pos = 0;
    // SAFETY: `offsets` has room for `codes.len() + 1` entries.
    unsafe { ends.write(0) };
    for (i, &c) in codes.iter().enumerate() {
        let (start, len) = entries[c as usize];
        // SAFETY: `pos` is the sum of the lengths of the values before, at most `bound`
        // (the longest entry times the values), so the `W` bytes at `pos` are within the
        // capacity `bound + W`; the source has `W` bytes from `start` (the padded copy
        // ends 32 zero bytes past the dictionary's bytes); `i + 1 <= codes.len()`.
        unsafe {
            std::ptr::copy_nonoverlapping(padded.as_ptr().add(start), dst.add(pos), W);
            pos += len;
            // `bound` was checked against the decode budget (at most MAX_CHUNK_BYTES).
            ends.add(i + 1).write(pos as u32);
        }
    }
    // SAFETY: the values' moves covered `0..pos` (each at least its own length from its
    // start, one after another), and every offset was written.
    unsafe {
        data.set_len(pos);
        offsets.set_len(codes.len() + 1);
    }
    ByteValues {
        offsets,
        data,
        utf8_checked: false,
    }
}

/// Decodes the lengths child of `parent` and turns them into offsets, checked against the
/// `available` data bytes (and the chunk limit).
pub(crate) fn decode_offsets(
    ctx: &Ctx<'_>,
    parent: NodeId,
    lengths: NodeId,
    count: usize,
    available: usize,
    depth: usize,
) -> Result<Vec<u32>> {
    let lens = decode_indices(
        ctx,
        ctx.child(parent, lengths)?,
        count,
        available as u64,
        depth + 1,
    )?;
    let available = available.min(MAX_CHUNK_BYTES);
    let mut offsets = Vec::with_capacity(lens.len() + 1);
    let mut end = 0usize;
    offsets.push(0);
    for l in lens {
        end = end
            .checked_add(l as usize)
            .filter(|&e| e <= available)
            .ok_or_else(|| corrupt(format!("string lengths exceed the {available} data bytes")))?;
        offsets.push(end as u32);
    }
    Ok(offsets)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Node;
    use crate::domain::Strings;
    use crate::tree::BufferSink;
    use proptest::prelude::*;

    fn round_trip(
        values: &[Vec<u8>],
        fixed: Option<u32>,
    ) -> std::result::Result<(), TestCaseError> {
        let refs: Vec<&[u8]> = values.iter().map(Vec::as_slice).collect();
        let mut sink = BufferSink::default();
        let root = Strings::encode(&refs, fixed, &mut sink, crate::tree::MAX_CASCADE);
        prop_assert_eq!(root, 0);
        let out = sink
            .decode_with(|ctx| Strings::decode(ctx, root, values.len(), 0))
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(out.offsets.len(), values.len() + 1);
        for (i, v) in values.iter().enumerate() {
            prop_assert_eq!(out.value(i), v.as_slice());
        }
        Ok(())
    }

    /// Decodes `count` byte strings of the hand-made tree `nodes` (no buffers).
    fn decode_tree(nodes: Vec<Node>, count: usize) -> Result<ByteValues> {
        let enc = crate::ColumnEncoding {
            validity: crate::Validity::AllValid,
            nodes,
        };
        Strings::decode(&Ctx::new(&enc, &[]), 0, count, 0)
    }

    #[allow(clippy::panic)]
    fn refused(r: Result<ByteValues>) -> String {
        match r {
            Ok(v) => panic!("decoded {} bytes", v.data.len()),
            Err(e) => e.to_string(),
        }
    }

    /// A constant repeated over the rows decodes to rows × its length: refused past the
    /// chunk's budget (the floor, for a chunk this small) before anything is allocated.
    #[test]
    fn constant_beyond_the_budget_is_refused() {
        let value = vec![b'x'; DECODE_FLOOR / 65_536 + 1];
        let msg = refused(decode_tree(
            vec![Node::Constant(crate::encodings::Constant { value })],
            65_536,
        ));
        assert!(
            msg.contains("node 0: 65536 values decode to 67174400 bytes, more than the chunk's decode limit of 67108864 bytes"),
            "{msg}"
        );
        // Within the budget, it decodes.
        let value = vec![b'x'; 1024];
        assert_eq!(
            decode_tree(
                vec![Node::Constant(crate::encodings::Constant { value })],
                4096
            )
            .map(|v| v.data.len())
            .map_err(|e| e.to_string()),
            Ok(4 << 20)
        );
    }

    /// One long dictionary entry named by every row: the gather is refused before its
    /// output is allocated (its exact size is checked, since the entry is long).
    #[test]
    fn long_dictionary_entry_beyond_the_budget_is_refused() {
        let nodes = vec![
            Node::Dict(crate::encodings::Dict {
                values: 1,
                len: 1,
                codes: 2,
            }),
            Node::Constant(crate::encodings::Constant {
                value: vec![b'x'; 2000],
            }),
            Node::Constant(crate::encodings::Constant {
                value: 0i64.to_le_bytes().to_vec(),
            }),
        ];
        let msg = refused(decode_tree(nodes, 65_536));
        assert!(
            msg.contains("node 0: 65536 values decode to 131072000 bytes"),
            "{msg}"
        );
    }

    /// The budget: the floor for small chunks, proportional above, capped by u32 offsets.
    #[test]
    fn budget_grows_with_the_encoding() {
        assert_eq!(decode_budget(0), DECODE_FLOOR);
        assert_eq!(decode_budget(1 << 20), DECODE_FLOOR);
        assert_eq!(decode_budget(10 << 20), 160 << 20);
        assert_eq!(decode_budget(usize::MAX), MAX_CHUNK_BYTES);
    }

    /// A long entry used by few rows: the output is sized exactly, not by the longest
    /// entry times the rows (70,000 × 70,000 bytes would exceed the chunk limit).
    #[test]
    fn rare_long_entry_is_not_an_error() {
        let long = vec![b'x'; 70_000];
        let mut dict = ByteValues::with_capacity(2, long.len() + 1);
        dict.push(b"a");
        dict.push(&long);
        let mut codes = vec![0u64; 70_000];
        codes[123] = 1;
        let enc = crate::ColumnEncoding {
            validity: crate::Validity::AllValid,
            nodes: vec![],
        };
        let ctx = Ctx::new(&enc, &[]);
        let out = gather(&ctx, 0, &GatherTable::new(dict), &codes).map_err(|e| e.to_string());
        let out = out
            .as_ref()
            .map(|o| (o.data.len(), o.value(123).len(), o.value(0)));
        assert_eq!(out, Ok((69_999 + 70_000, 70_000, &b"a"[..])));
    }

    proptest! {
        #[test]
        fn variable(values in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..12), 0..200)) {
            round_trip(&values, None)?;
        }
        #[test]
        fn repetitive(values in proptest::collection::vec(0u8..4, 0..300)) {
            let values: Vec<Vec<u8>> = values.into_iter().map(|v| vec![b'a'; v as usize]).collect();
            round_trip(&values, None)?;
        }
        /// One-byte entries (flags), including runs: the byte-table gather, also under RLE.
        #[test]
        fn one_byte_flags(picks in proptest::collection::vec((0usize..3, 1usize..40), 20..200)) {
            let values: Vec<Vec<u8>> = picks
                .iter()
                .flat_map(|&(p, run)| std::iter::repeat_n(vec![b"ANR"[p]], run))
                .collect();
            let refs: Vec<&[u8]> = values.iter().map(Vec::as_slice).collect();
            let mut sink = BufferSink::default();
            Strings::encode(&refs, None, &mut sink, crate::tree::MAX_CASCADE);
            let distinct = picks.iter().map(|&(p, _)| p).collect::<std::collections::BTreeSet<_>>();
            if distinct.len() > 1 {
                prop_assert!(matches!(sink.nodes[0], Node::Dict(crate::encodings::Dict { .. })), "{:?}", sink.nodes[0]);
            }
            round_trip(&values, None)?;
        }
        #[test]
        fn fixed(values in proptest::collection::vec(proptest::collection::vec(0u8..3, 3), 0..200)) {
            round_trip(&values, Some(3))?;
        }
    }
}
