//! Sorted dictionaries, for every value domain. Because the dictionary is sorted, code
//! order is value order and range predicates become code ranges; any predicate is
//! evaluated once per entry, and selections decode only the selected codes.

// FxHash: encoding hashes millions of small keys; SipHash's DoS resistance buys nothing
// here and cost most of the dictionary-building time.
use rustc_hash::FxHashMap as HashMap;
use serde::{Deserialize, Serialize};
use sift_bits::Bitmap;

use crate::Node;
use crate::byte_values::{ByteValues, GatherTable, gather};
use crate::domain::{Domain, Strings, Value, decode_indices, select_indices};
use crate::encoding::{DECODE_ROW_COST, Encoding};
use crate::encodings::Hybrid;
use crate::error::{Result, corrupt};
use crate::predicate::{BytesMatcher, BytesShape, CodeMask, DomainPred, IntRange};
use crate::tree::{BufferSink, ColumnEncoding, Ctx, NodeId};
use crate::wire::{Reader, Writer};

/// A sorted dictionary of `len` distinct values (child `values`) and one integer code per
/// value (child `codes`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dict {
    /// The distinct values, sorted.
    pub values: NodeId,
    /// The number of entries.
    pub len: u32,
    /// The codes.
    pub codes: NodeId,
}

/// The sorted distinct values of `values` and the code of every value (used for byte
/// strings too, whose keys are slices).
pub(crate) fn build<K: Copy + Eq + std::hash::Hash + Ord>(values: &[K]) -> (Vec<K>, Vec<i64>) {
    let mut first_codes: HashMap<K, u32> = HashMap::default();
    let codes: Vec<u32> = values
        .iter()
        .map(|&v| {
            let next = first_codes.len() as u32;
            *first_codes.entry(v).or_insert(next)
        })
        .collect();
    // Sort the distinct values and renumber codes so that code order is value order.
    let mut distinct: Vec<(K, u32)> = first_codes.into_iter().collect();
    distinct.sort_unstable();
    let mut rank = vec![0i64; distinct.len()];
    for (r, (_, first)) in distinct.iter().enumerate() {
        rank[*first as usize] = r as i64;
    }
    (
        distinct.into_iter().map(|(v, _)| v).collect(),
        codes.into_iter().map(|c| rank[c as usize]).collect(),
    )
}

/// Encodes `values` as a sorted dictionary plus codes.
pub(crate) fn encode<V: Value>(values: &[V], sink: &mut BufferSink, depth: u8) -> NodeId {
    let id = sink.reserve_node();
    let (distinct, codes) = build(values);
    let child_depth = depth.saturating_sub(1);
    let vals = V::encode(&distinct, sink, child_depth);
    let codes = i64::encode(&codes, sink, child_depth);
    sink.set_node(
        id,
        Dict {
            values: vals,
            len: distinct.len() as u32,
            codes,
        },
    );
    id
}

/// Encodes byte strings as a sorted dictionary plus codes.
pub(crate) fn encode_bytes(
    values: &[&[u8]],
    fixed: Option<u32>,
    sink: &mut BufferSink,
    depth: u8,
) -> NodeId {
    let (sorted, codes) = build(values);
    let id = sink.reserve_node();
    let child_depth = depth.saturating_sub(1);
    let vals = Strings::encode(&sorted, fixed, sink, child_depth);
    let codes = i64::encode(&codes, sink, child_depth);
    sink.set_node(
        id,
        Dict {
            values: vals,
            len: sorted.len() as u32,
            codes,
        },
    );
    id
}

/// When the selected `codes` (each below `len`) are few next to the dictionary's `len`
/// entries, the entries they use and the codes renumbered into those entries: only the
/// used entries are then decoded. A Parquet dictionary page serves every data page of its
/// column chunk and may hold a hundred thousand entries for a page's few selected rows.
fn sparse(codes: &[u64], len: usize) -> Option<(Bitmap, Vec<u64>)> {
    if codes.len().saturating_mul(4) >= len {
        return None;
    }
    let mut used = Bitmap::zeros(len);
    for &c in codes {
        used.set(c as usize, true);
    }
    // The rank of an entry among the used ones: ones in the words before its word,
    // plus ones below it in its own word.
    let words = used.words();
    let mut before = Vec::with_capacity(words.len());
    let mut total = 0u64;
    for w in words {
        before.push(total);
        total += u64::from(w.count_ones());
    }
    let rank = |c: u64| {
        let (w, b) = ((c / 64) as usize, c % 64);
        before[w] + u64::from((words[w] & ((1u64 << b) - 1)).count_ones())
    };
    let codes = codes.iter().map(|&c| rank(c)).collect();
    Some((used, codes))
}

/// The first and the last set bit of `bits`, if any.
fn first_and_last_one(bits: &Bitmap) -> Option<(usize, usize)> {
    let words = bits.words();
    let first = words.iter().position(|&w| w != 0)?;
    let last = words.iter().rposition(|&w| w != 0)?;
    Some((
        64 * first + words[first].trailing_zeros() as usize,
        64 * last + 63 - words[last].leading_zeros() as usize,
    ))
}

impl Dict {
    /// The entry count, checked against the `count` values it serves. A dictionary shared
    /// by several chunks (a Parquet column chunk's dictionary page, read with each of its
    /// data pages) may have more entries than one chunk has values, as long as the chunk's
    /// bytes hold one per entry, so that decoding it allocates what the file justifies.
    pub(crate) fn checked_len(&self, ctx: &Ctx<'_>, count: usize) -> Result<usize> {
        let len = self.len as usize;
        if count > 0 && len > count && len <= ctx.encoded {
            return Ok(len);
        }
        ctx.declared("dictionary entries", self.len, count)
    }

    /// The `len` entries of a fixed-width domain.
    fn entries<V: Value>(
        &self,
        ctx: &Ctx<'_>,
        id: NodeId,
        len: usize,
        depth: usize,
    ) -> Result<Vec<V>> {
        V::decode(ctx, ctx.child(id, self.values)?, len, depth + 1)
    }

    /// `compute`'s entries (`len` of them), or for the root dictionary, those kept in the
    /// memo.
    fn kept<T: 'static>(
        ctx: &Ctx<'_>,
        id: NodeId,
        len: usize,
        compute: impl FnOnce() -> Result<T>,
    ) -> Result<std::rc::Rc<T>> {
        match Self::memo(ctx, id) {
            Some(memo) => memo.entries(len, compute),
            None => compute().map(std::rc::Rc::new),
        }
    }

    /// [`entries`](Self::entries), or for the root dictionary, those kept in the memo.
    fn shared_entries<V: Value>(
        &self,
        ctx: &Ctx<'_>,
        id: NodeId,
        len: usize,
        depth: usize,
    ) -> Result<std::rc::Rc<Vec<V>>> {
        Self::kept(ctx, id, len, || self.entries::<V>(ctx, id, len, depth))
    }

    /// The values of all `count` codes, or of those selected by `sel`, in `dict` (the
    /// decoded entries).
    fn look_up_codes<V: Value>(
        &self,
        ctx: &Ctx<'_>,
        id: NodeId,
        count: usize,
        depth: usize,
        sel: Option<&Bitmap>,
        dict: &[V],
    ) -> Result<Vec<V>> {
        if let Some(values) = self.lookup(ctx, id, count, sel, dict)? {
            return Ok(values);
        }
        let codes = self.codes(ctx, id, count, dict.len(), depth, sel)?;
        Ok(codes.into_iter().map(|c| dict[c as usize]).collect())
    }

    /// The smallest and largest entry among the codes of all `count` values, or of those
    /// `sel` selects, of a dictionary of 64-bit integers whose codes are a Parquet hybrid
    /// stream or frame-of-reference codes: the codes are folded as they are unpacked, no
    /// value is materialised. `Ok(Some(None))` when no value is selected; `Ok(None)` for
    /// codes of another encoding, where the fold declines, and for a code past the entries
    /// (the caller's decode then reports it).
    pub(crate) fn extremes(
        &self,
        ctx: &Ctx<'_>,
        id: NodeId,
        count: usize,
        depth: usize,
        sel: Option<&Bitmap>,
    ) -> Result<Option<Option<(i64, i64)>>> {
        let codes = ctx.child(id, self.codes)?;
        let entries = || {
            let len = self.checked_len(ctx, count)?;
            self.shared_entries::<i64>(ctx, id, len, depth)
        };
        match ctx.node(codes, 0)? {
            Node::Hybrid(h) => h.extremes(ctx, codes, count, sel, &entries()?, Self::memo(ctx, id)),
            Node::For(f) => {
                // The entries are decoded only once the codes' fold has not declined.
                let Some(range) = f.code_extremes(ctx, count, sel)? else {
                    return Ok(None);
                };
                let dict = entries()?;
                // Sift writes its dictionaries sorted, so the extreme codes name the
                // extreme entries; any other order (a damaged file) is left to the decode.
                if !dict.is_sorted() {
                    return Ok(None);
                }
                let entry = |c: u64| {
                    let at = usize::try_from(f.base.checked_add(i128::from(c))?).ok()?;
                    dict.get(at).copied()
                };
                Ok(match range {
                    None => Some(None),
                    Some((lo, hi)) => entry(lo).zip(entry(hi)).map(Some),
                })
            }
            _ => Ok(None),
        }
    }

    /// The `len` entries of a string dictionary.
    pub(crate) fn byte_entries(
        &self,
        ctx: &Ctx<'_>,
        id: NodeId,
        len: usize,
        depth: usize,
    ) -> Result<ByteValues> {
        Strings::decode(ctx, ctx.child(id, self.values)?, len, depth + 1)
    }

    /// The string entries prepared for gathers: for the root dictionary, those kept in
    /// the memo (prepared once for every page of a column chunk).
    fn gather_table(
        &self,
        ctx: &Ctx<'_>,
        id: NodeId,
        len: usize,
        depth: usize,
    ) -> Result<std::rc::Rc<GatherTable>> {
        Self::kept(ctx, id, len, || {
            Ok(GatherTable::new(self.byte_entries(ctx, id, len, depth)?))
        })
    }

    /// The codes of all `count` values, or of those selected by `sel`.
    pub(crate) fn codes(
        &self,
        ctx: &Ctx<'_>,
        id: NodeId,
        count: usize,
        len: usize,
        depth: usize,
        sel: Option<&Bitmap>,
    ) -> Result<Vec<u64>> {
        let codes = ctx.child(id, self.codes)?;
        match sel {
            None => decode_indices(ctx, codes, count, len.saturating_sub(1) as u64, depth + 1),
            Some(s) => select_indices(ctx, codes, count, len, depth + 1, s),
        }
    }

    /// The codes of all `count` values, or of those selected by `sel`, as Arrow dictionary
    /// keys (`len`, the dictionary's length, fits `i32`), when the codes are a Parquet
    /// hybrid stream: unpacked a span at a time and narrowed there, not held as 64-bit
    /// integers first. `None` for codes of any other encoding, and for a code past the
    /// dictionary (the caller's own path then reports it).
    pub(crate) fn keys(
        &self,
        ctx: &Ctx<'_>,
        id: NodeId,
        count: usize,
        len: usize,
        sel: Option<&Bitmap>,
    ) -> Result<Option<Vec<i32>>> {
        match self.hybrid_codes(ctx, id)? {
            Some((h, codes)) => h.keys(ctx, codes, count, sel, len),
            None => Ok(None),
        }
    }

    /// The codes of all `count` values, or of those selected by `sel`, looked up in
    /// `dict` as they are unpacked, when the codes are a Parquet hybrid stream (a
    /// dictionary-encoded Parquet page): `None` for codes of any other encoding, and for
    /// a code past the dictionary (the caller's own path then reports it).
    fn lookup<V: Value>(
        &self,
        ctx: &Ctx<'_>,
        id: NodeId,
        count: usize,
        sel: Option<&Bitmap>,
        dict: &[V],
    ) -> Result<Option<Vec<V>>> {
        match self.hybrid_codes(ctx, id)? {
            Some((h, codes)) => h.lookup(ctx, codes, count, sel, dict),
            None => Ok(None),
        }
    }

    /// The codes' node and id when they are a Parquet hybrid stream.
    fn hybrid_codes<'c>(&self, ctx: &Ctx<'c>, id: NodeId) -> Result<Option<(&'c Hybrid, NodeId)>> {
        let codes = ctx.child(id, self.codes)?;
        Ok(match ctx.node(codes, 0)? {
            Node::Hybrid(h) => Some((h, codes)),
            _ => None,
        })
    }

    /// The context's [`DictionaryMemo`](crate::DictionaryMemo) when this node is the root
    /// dictionary (the one shared with chunks filtered before).
    fn memo<'c>(ctx: &Ctx<'c>, id: NodeId) -> Option<&'c crate::DictionaryMemo> {
        ctx.memo.filter(|_| id == 0)
    }

    /// The verdicts on the `len` entries: `compute`'s, or, for the root dictionary, those
    /// kept in the memo.
    fn verdicts(
        &self,
        ctx: &Ctx<'_>,
        id: NodeId,
        len: usize,
        compute: impl FnOnce() -> Result<Bitmap>,
    ) -> Result<std::rc::Rc<Bitmap>> {
        match Self::memo(ctx, id) {
            Some(memo) => memo.mask(len, compute),
            None => compute().map(std::rc::Rc::new),
        }
    }

    /// The values whose entries matched as `mask` (a bit per entry): a contiguous set of
    /// codes (or the complement of one) becomes a range evaluated on the codes' own
    /// encoding; any other set is looked up code by code.
    fn filter_codes(
        &self,
        ctx: &Ctx<'_>,
        id: NodeId,
        count: usize,
        depth: usize,
        mask: &Bitmap,
    ) -> Result<Bitmap> {
        let codes = ctx.child(id, self.codes)?;
        let depth = depth + 1;
        let Some((first, last)) = first_and_last_one(mask) else {
            return Ok(Bitmap::zeros(count));
        };
        if mask.count_ones_in(first..last + 1) == last + 1 - first {
            let range = IntRange::new(first as i128, last as i128, false);
            return i64::filter(ctx, codes, count, depth, &range);
        }
        // The complement: trues at both ends, one run of falses inside.
        let n = mask.len();
        if mask.get(0)
            && mask.get(n - 1)
            && let Some((f0, f1)) = first_and_last_one(&mask.not())
            && mask.count_ones_in(f0..f1 + 1) == 0
        {
            let range = IntRange::new(f0 as i128, f1 as i128, true);
            return i64::filter(ctx, codes, count, depth, &range);
        }
        // Any other set: tested code by code on the codes' own encoding where it can
        // (without materialising the codes), else on the decoded codes.
        let set = match Self::memo(ctx, id) {
            Some(memo) => memo.code_set(mask),
            None => std::rc::Rc::new(CodeMask::new(mask)),
        };
        let out = i64::filter(ctx, codes, count, depth, set.as_ref())?;
        if set.out_of_range.get() {
            return Err(corrupt(format!(
                "a dictionary code beyond the dictionary's {n} entries"
            )));
        }
        Ok(out)
    }
}

impl Encoding for Dict {
    const ID: u8 = 4;
    const NAME: &'static str = "dict";
    const DOMAINS: &'static [Domain] = &[Domain::Int, Domain::Float, Domain::Bool, Domain::Bytes];
    const FILTERS_ENCODED: bool = true;

    fn write(&self, w: &mut Writer) {
        w.varint(u64::from(self.values));
        w.varint(u64::from(self.len));
        w.varint(u64::from(self.codes));
    }

    fn read(r: &mut Reader<'_>) -> Result<Self> {
        Ok(Self {
            values: r.varint_u32("dict values")?,
            len: r.varint_u32("dict len")?,
            codes: r.varint_u32("dict codes")?,
        })
    }

    fn label(&self) -> String {
        format!("dict[{}]", self.len)
    }

    fn children(&self) -> Vec<NodeId> {
        vec![self.values, self.codes]
    }

    fn decode<V: Value>(
        &self,
        ctx: &Ctx<'_>,
        id: NodeId,
        count: usize,
        depth: usize,
    ) -> Result<Option<Vec<V>>> {
        let len = self.checked_len(ctx, count)?;
        let dict = self.shared_entries::<V>(ctx, id, len, depth)?;
        self.look_up_codes(ctx, id, count, depth, None, &dict)
            .map(Some)
    }

    fn decode_bytes(
        &self,
        ctx: &Ctx<'_>,
        id: NodeId,
        count: usize,
        depth: usize,
    ) -> Result<Option<ByteValues>> {
        let len = self.checked_len(ctx, count)?;
        let table = self.gather_table(ctx, id, len, depth)?;
        let codes = self.codes(ctx, id, count, len, depth, None)?;
        gather(ctx, id, &table, &codes).map(Some)
    }

    fn select<V: Value>(
        &self,
        ctx: &Ctx<'_>,
        id: NodeId,
        count: usize,
        depth: usize,
        sel: &Bitmap,
    ) -> Result<Option<Vec<V>>> {
        let len = self.checked_len(ctx, count)?;
        let (memo, dense) = (
            Self::memo(ctx, id),
            sel.count_ones().saturating_mul(4) >= len,
        );
        // Few codes selected over plain entries not decoded yet: each read where it lies.
        if !dense
            && !memo.is_some_and(|m| m.has_entries::<Vec<V>>(len))
            && let Node::Plain(plain) = ctx.node(ctx.child(id, self.values)?, depth + 1)?
        {
            let codes = self.codes(ctx, id, count, len, depth, Some(sel))?;
            if let Some(values) = plain.gather(ctx, len, &codes)? {
                return Ok(Some(values));
            }
        }
        // Looked up as they are unpacked when the entries are decoded already (kept in
        // the memo) or when at least a quarter as many codes are selected; else `sparse`
        // below decodes only the entries they use.
        if memo.is_some() || dense {
            let dict = self.shared_entries::<V>(ctx, id, len, depth)?;
            return self
                .look_up_codes(ctx, id, count, depth, Some(sel), &dict)
                .map(Some);
        }
        let codes = self.codes(ctx, id, count, len, depth, Some(sel))?;
        let (dict, codes) = match sparse(&codes, len) {
            Some((used, codes)) => {
                let child = ctx.child(id, self.values)?;
                (V::select(ctx, child, len, depth + 1, &used)?, codes)
            }
            None => (self.entries::<V>(ctx, id, len, depth)?, codes),
        };
        Ok(Some(codes.into_iter().map(|c| dict[c as usize]).collect()))
    }

    fn select_bytes(
        &self,
        ctx: &Ctx<'_>,
        id: NodeId,
        count: usize,
        depth: usize,
        sel: &Bitmap,
    ) -> Result<Option<ByteValues>> {
        let len = self.checked_len(ctx, count)?;
        let codes = self.codes(ctx, id, count, len, depth, Some(sel))?;
        // The entries kept in the memo (decoded once for every page of the chunk), else
        // only those the selected codes use, when they are few.
        if Self::memo(ctx, id).is_some() {
            let table = self.gather_table(ctx, id, len, depth)?;
            return gather(ctx, id, &table, &codes).map(Some);
        }
        let (dict, codes) = match sparse(&codes, len) {
            Some((used, codes)) => {
                let child = ctx.child(id, self.values)?;
                (Strings::select(ctx, child, len, depth + 1, &used)?, codes)
            }
            None => (self.byte_entries(ctx, id, len, depth)?, codes),
        };
        gather(ctx, id, &GatherTable::new(dict), &codes).map(Some)
    }

    fn filter<V: Value, P: DomainPred<V>>(
        &self,
        ctx: &Ctx<'_>,
        id: NodeId,
        count: usize,
        depth: usize,
        p: &P,
    ) -> Result<Option<Bitmap>> {
        let len = self.checked_len(ctx, count)?;
        // The entries tested on their own encoding (a plain child's doubles on its bytes,
        // bit-packed integers on their codes), else decoded and tested one by one.
        let mask = self.verdicts(ctx, id, len, || {
            let values = ctx.child(id, self.values)?;
            let verdicts = V::filter(ctx, values, len, depth + 1, p)?;
            if verdicts.len() != len {
                return Err(corrupt(format!(
                    "{} verdicts on a dictionary of {len} entries",
                    verdicts.len()
                )));
            }
            Ok(verdicts)
        })?;
        self.filter_codes(ctx, id, count, depth, &mask).map(Some)
    }

    fn filter_bytes(
        &self,
        ctx: &Ctx<'_>,
        id: NodeId,
        count: usize,
        depth: usize,
        m: &BytesMatcher,
        _shape: &BytesShape,
    ) -> Result<Option<Bitmap>> {
        let len = self.checked_len(ctx, count)?;
        let mask = self.verdicts(ctx, id, len, || {
            let dict = self.byte_entries(ctx, id, len, depth)?;
            Ok(Bitmap::from_bools((0..len).map(|i| m(dict.value(i)))))
        })?;
        self.filter_codes(ctx, id, count, depth, &mask).map(Some)
    }

    fn scan_cost(&self, enc: &ColumnEncoding, id: NodeId) -> Option<f64> {
        let codes = enc
            .child(id, self.codes)
            .ok()
            .and_then(|c| c.scan_cost(enc, self.codes));
        Some(0.3 + codes.unwrap_or(DECODE_ROW_COST / 2.0))
    }
}
