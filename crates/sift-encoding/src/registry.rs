//! The one list of encodings, and the dispatch through it.
//!
//! [`Node`] is generated here with one variant per registered encoding, so that every
//! operation dispatches statically (a `match` the compiler can inline into each caller;
//! dispatch happens once per node of a chunk, never per value). The value domains'
//! entry points ([`Value`] for integers, doubles and booleans, [`Strings`] for byte
//! strings) are implemented here too: the chooser picks among the schemes registered for
//! a domain, and decode, select and filter go to the node's encoding with the generic
//! fallback for what an encoding does not implement.
//!
//! Adding an encoding: one module under `encodings/`, one line in `registry!` below, and
//! its schemes in the domain lists further down (if the writer should choose it).

use serde::{Deserialize, Serialize};
use sift_bits::Bitmap;

use crate::byte_values::ByteValues;
use crate::chooser::{self, BoolSchemes, Scheme, StringSchemes, When};
use crate::domain::{Domain, FloatBits, Strings, Value, compact, exact_count, uniform};
use crate::encoding::Encoding;
use crate::encodings::frame::NativeInt;
use crate::encodings::{
    alp, alp_rd, big_endian, bitmap, bitset, byte_arrays, byte_stream_split, bytes, byteslice,
    constant, cycle, delta, dict, frame, fsst, huffman, hybrid, lookup, patch, plain, prefix, rle,
};
use crate::error::{Result, corrupt};
use crate::predicate::{BytesMatcher, BytesShape, DomainPred};
use crate::tree::{BufferSink, ColumnEncoding, Ctx, NodeId};
use crate::wire::{Reader, Writer};

macro_rules! registry {
    ($($variant:ident($ty:ty)),* $(,)?) => {
        /// One node of an encoding tree: one variant per registered encoding, holding that
        /// encoding's parameters, child ids and buffer indices.
        #[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
        pub enum Node {
            $(
                #[allow(missing_docs)]
                $variant($ty),
            )*
        }

        $(
            impl From<$ty> for Node {
                fn from(e: $ty) -> Self {
                    Node::$variant(e)
                }
            }
        )*

        /// Runs `$body` with `$e` bound to the node's encoding.
        macro_rules! each {
            ($node:expr, $e:ident => $body:expr) => {
                match $node {
                    $(Node::$variant($e) => $body,)*
                }
            };
        }

        impl Node {
            /// The encoding's stable numeric id (see `docs/format.md`).
            pub fn id(&self) -> u8 {
                match self {
                    $(Node::$variant(_) => <$ty as Encoding>::ID,)*
                }
            }

            /// The encoding's name without parameters, e.g. `for` or `dict`.
            pub fn name(&self) -> &'static str {
                match self {
                    $(Node::$variant(_) => <$ty as Encoding>::NAME,)*
                }
            }

            /// The domains the encoding's nodes hold.
            pub fn domains(&self) -> &'static [Domain] {
                match self {
                    $(Node::$variant(_) => <$ty as Encoding>::DOMAINS,)*
                }
            }

            /// Whether a filter on this node evaluates some predicates on its encoded
            /// values (else it decodes them all first).
            pub fn filters_encoded(&self) -> bool {
                match self {
                    $(Node::$variant(_) => <$ty as Encoding>::FILTERS_ENCODED,)*
                }
            }
        }

        impl Node {
            /// Writes the node: its encoding's id, then the encoding's fields.
            pub fn write_wire(&self, w: &mut Writer) {
                w.u8(self.id());
                match self {
                    $(Node::$variant(e) => e.write(w),)*
                }
            }

            /// Reads the fields of a node whose encoding id `id` was just read; an id no
            /// encoding is registered under is an error naming it.
            pub fn read_wire(id: u8, r: &mut Reader<'_>) -> Result<Node> {
                $(
                    if id == <$ty as Encoding>::ID {
                        return <$ty as Encoding>::read(r).map(Node::$variant);
                    }
                )*
                Err(r.error(format!("unknown encoding id {id}")))
            }
        }

        /// Every registered encoding as `(id, name)`, in registration order.
        pub const ENCODINGS: &[(u8, &str)] = &[
            $((<$ty as Encoding>::ID, <$ty as Encoding>::NAME),)*
        ];
    };
}

/// No two encodings share an id (checked when the crate compiles).
const _: () = {
    let mut i = 0;
    while i < ENCODINGS.len() {
        let mut j = i + 1;
        while j < ENCODINGS.len() {
            assert!(
                ENCODINGS[i].0 != ENCODINGS[j].0,
                "two encodings share an id"
            );
            j += 1;
        }
        i += 1;
    }
};

registry! {
    Plain(plain::Plain),
    For(frame::For),
    Bitmap(bitmap::Bitmap),
    Bytes(bytes::Bytes),
    Dict(dict::Dict),
    Constant(constant::Constant),
    Rle(rle::Rle),
    Patch(patch::Patch),
    Delta(delta::Delta),
    Alp(alp::Alp),
    AlpRd(alp_rd::AlpRd),
    Fsst(fsst::Fsst),
    Lookup(lookup::Lookup),
    ByteStreamSplit(byte_stream_split::ByteStreamSplit),
    Hybrid(hybrid::Hybrid),
    ByteSlice(byteslice::ByteSlice),
    BitSet(bitset::BitSet),
    Cycle(cycle::Cycle),
    Prefix(prefix::Prefix),
    Huffman(huffman::Huffman),
    BigEndian(big_endian::BigEndian),
    ByteArrays(byte_arrays::ByteArrays),
}

impl Node {
    /// A short label with the node's parameters, e.g. `for7` or `dict[25]`.
    pub fn label(&self) -> String {
        each!(self, e => e.label())
    }

    /// The child nodes, in a fixed order.
    pub fn children(&self) -> Vec<NodeId> {
        each!(self, e => e.children())
    }

    /// Bytes of values the node keeps in the footer (a constant's value).
    pub(crate) fn inline_bytes(&self) -> usize {
        each!(self, e => e.inline_bytes())
    }

    /// The slot a node takes before its children are encoded (see
    /// [`BufferSink::reserve_node`]); always overwritten.
    pub(crate) fn placeholder() -> Node {
        Node::Constant(constant::Constant { value: Vec::new() })
    }

    /// The dictionary at a chunk's root, as `(values, len, codes)`.
    pub(crate) fn as_dict(&self) -> Option<&dict::Dict> {
        match self {
            Node::Dict(d) => Some(d),
            _ => None,
        }
    }

    /// The lookup at a chunk's root.
    pub(crate) fn as_lookup(&self) -> Option<&lookup::Lookup> {
        match self {
            Node::Lookup(l) => Some(l),
            _ => None,
        }
    }

    /// Fixed-width values stored as they are, as `(width, buffer)` (2- and 4-byte floats
    /// are stored only so).
    pub(crate) fn as_plain(&self) -> Option<(u32, u32)> {
        match self {
            Node::Plain(p) => Some((p.width, p.buffer)),
            _ => None,
        }
    }

    pub(crate) fn decode_native<T: NativeInt>(
        &self,
        ctx: &Ctx<'_>,
        id: NodeId,
        count: usize,
    ) -> Result<Option<Vec<T>>> {
        each!(self, e => e.decode_native::<T>(ctx, id, count))
    }

    pub(crate) fn select_native<T: NativeInt>(
        &self,
        ctx: &Ctx<'_>,
        id: NodeId,
        count: usize,
        sel: &Bitmap,
    ) -> Result<Option<Vec<T>>> {
        each!(self, e => e.select_native::<T>(ctx, id, count, sel))
    }

    pub(crate) fn beyond_i64(&self, bytes: usize) -> bool {
        each!(self, e => e.beyond_i64(bytes))
    }

    pub(crate) fn scan_cost(&self, enc: &ColumnEncoding, id: NodeId) -> Option<f64> {
        each!(self, e => e.scan_cost(enc, id))
    }

    pub(crate) fn row_addressable(&self, enc: &ColumnEncoding, id: NodeId) -> bool {
        each!(self, e => e.row_addressable(enc, id))
    }

    fn cannot_hold(&self, id: NodeId, domain: Domain) -> crate::EncodingError {
        corrupt(format!(
            "node {id} ({}) cannot hold {}",
            self.label(),
            match domain {
                Domain::Int => "integers",
                Domain::Float => "floats",
                Domain::Bool => "booleans",
                Domain::Bytes => "byte strings",
            }
        ))
    }
}

/// Decodes node `id` of any fixed-width domain, checked to give exactly `count` values.
fn decode<V: Value>(ctx: &Ctx<'_>, id: NodeId, count: usize, depth: usize) -> Result<Vec<V>> {
    let node = ctx.node(id, depth)?;
    let out = each!(node, e => e.decode::<V>(ctx, id, count, depth))?
        .ok_or_else(|| node.cannot_hold(id, V::DOMAIN))?;
    exact_count(ctx, id, out.len(), count)?;
    Ok(out)
}

/// The selected values of node `id`: the encoding's selective decode, or all then compacted.
fn select<V: Value>(
    ctx: &Ctx<'_>,
    id: NodeId,
    count: usize,
    depth: usize,
    sel: &Bitmap,
) -> Result<Vec<V>> {
    let node = ctx.node(id, depth)?;
    let out = match each!(node, e => e.select::<V>(ctx, id, count, depth, sel))? {
        Some(out) => out,
        None => compact(&decode::<V>(ctx, id, count, depth)?, sel),
    };
    exact_count(ctx, id, out.len(), sel.count_ones())?;
    Ok(out)
}

/// `p` on node `id`: on the encoded values where the encoding can, else value by value.
fn filter<V: Value, P: DomainPred<V>>(
    ctx: &Ctx<'_>,
    id: NodeId,
    count: usize,
    depth: usize,
    p: &P,
) -> Result<Bitmap> {
    if let Some(answer) = p.uniform() {
        return Ok(uniform(count, answer));
    }
    let node = ctx.node(id, depth)?;
    match each!(node, e => e.filter::<V, P>(ctx, id, count, depth, p))? {
        Some(out) => Ok(out),
        None => {
            let values = decode::<V>(ctx, id, count, depth)?;
            Ok(p.eval_slice(&values))
        }
    }
}

/// Integer schemes, in the order the chooser tries them (ties go to the earlier one).
const INT_SCHEMES: &[Scheme<i64>] = &[
    Scheme::new("bitpack", When::Always, frame::encode_ints::<i64>),
    Scheme::new("pfor", When::Always, patch::encode_pfor),
    Scheme::new("rle", When::Runs, rle::encode::<i64>),
    Scheme::new("dict", When::Repetition, dict::encode::<i64>),
    Scheme::new("frequency", When::Dominant, patch::encode_frequency::<i64>),
    Scheme::new("delta", When::Sorted, delta::encode),
    Scheme::new("cycle", When::Periodic, cycle::encode::<i64>),
    Scheme::skewed(
        "huffman",
        huffman::encode,
        huffman::size_bound,
        huffman::PREMIUM,
    ),
];

/// Double schemes, in the order the chooser tries them.
const FLOAT_SCHEMES: &[Scheme<FloatBits>] = &[
    Scheme::new("plain", When::Always, plain::encode_floats),
    Scheme::new("alp", When::Always, alp::encode),
    Scheme::new("alprd", When::Always, alp_rd::encode),
    Scheme::new("bss", When::Always, byte_stream_split::encode),
    Scheme::new("rle", When::Runs, rle::encode::<FloatBits>),
    Scheme::new("dict", When::Repetition, dict::encode::<FloatBits>),
    Scheme::new(
        "frequency",
        When::Dominant,
        patch::encode_frequency::<FloatBits>,
    ),
    Scheme::new("delta", When::Increasing, delta::encode_floats),
    Scheme::new("cycle", When::Periodic, cycle::encode::<FloatBits>),
];

/// A domain's registered schemes.
pub(crate) trait SchemeList: Sized + 'static {
    const SCHEMES: &'static [Scheme<Self>];
    /// A dictionary is tried on the whole input when it holds at most one distinct value
    /// in this many (see `chooser::encode_chosen`).
    const FULL_DISTINCT_RATIO: usize;
}

impl SchemeList for i64 {
    const SCHEMES: &'static [Scheme<i64>] = INT_SCHEMES;
    const FULL_DISTINCT_RATIO: usize = 8;
}

impl SchemeList for FloatBits {
    const SCHEMES: &'static [Scheme<FloatBits>] = FLOAT_SCHEMES;
    const FULL_DISTINCT_RATIO: usize = 2;
}

/// Implements a domain's entry points through the registry.
macro_rules! dispatch {
    () => {
        fn decode(ctx: &Ctx<'_>, id: NodeId, count: usize, depth: usize) -> Result<Vec<Self>> {
            decode::<Self>(ctx, id, count, depth)
        }
        fn select(
            ctx: &Ctx<'_>,
            id: NodeId,
            count: usize,
            depth: usize,
            sel: &Bitmap,
        ) -> Result<Vec<Self>> {
            select::<Self>(ctx, id, count, depth, sel)
        }
        fn filter<P: DomainPred<Self>>(
            ctx: &Ctx<'_>,
            id: NodeId,
            count: usize,
            depth: usize,
            p: &P,
        ) -> Result<Bitmap> {
            filter::<Self, P>(ctx, id, count, depth, p)
        }
    };
}

impl Value for i64 {
    const DOMAIN: Domain = Domain::Int;
    fn le_bytes(self) -> [u8; 8] {
        self.to_le_bytes()
    }
    fn from_le_bytes8(b: [u8; 8]) -> Self {
        i64::from_le_bytes(b)
    }
    fn from_ints(v: Vec<i64>) -> Option<Vec<Self>> {
        Some(v)
    }
    fn look_up(codes: &[u32], table: &[Self], out: &mut Vec<Self>) -> bool {
        crate::domain::lookup_u64(codes, table, out)
    }
    fn encode(values: &[i64], sink: &mut BufferSink, depth: u8) -> NodeId {
        chooser::encode_chosen(
            values,
            sink,
            depth,
            Self::SCHEMES,
            constant::encode,
            Self::FULL_DISTINCT_RATIO,
        )
    }
    dispatch!();
}

impl Value for FloatBits {
    const DOMAIN: Domain = Domain::Float;
    fn le_bytes(self) -> [u8; 8] {
        self.0.to_le_bytes()
    }
    fn from_le_bytes8(b: [u8; 8]) -> Self {
        FloatBits(u64::from_le_bytes(b))
    }
    fn from_floats(v: Vec<FloatBits>) -> Option<Vec<Self>> {
        Some(v)
    }
    fn look_up(codes: &[u32], table: &[Self], out: &mut Vec<Self>) -> bool {
        crate::domain::lookup_u64(codes, table, out)
    }
    fn encode(values: &[FloatBits], sink: &mut BufferSink, depth: u8) -> NodeId {
        chooser::encode_chosen(
            values,
            sink,
            depth,
            Self::SCHEMES,
            constant::encode,
            Self::FULL_DISTINCT_RATIO,
        )
    }
    dispatch!();
}

impl Value for bool {
    const DOMAIN: Domain = Domain::Bool;
    const CONSTANT_BYTES: usize = 1;
    fn le_bytes(self) -> [u8; 8] {
        [u8::from(self), 0, 0, 0, 0, 0, 0, 0]
    }
    fn from_le_bytes8(b: [u8; 8]) -> Self {
        b[0] != 0
    }
    fn encode(values: &[bool], sink: &mut BufferSink, depth: u8) -> NodeId {
        chooser::encode_bools(values, sink, depth, &BOOL_SCHEMES)
    }
    dispatch!();
}

/// Boolean schemes.
const BOOL_SCHEMES: BoolSchemes = BoolSchemes {
    constant: constant::encode,
    runs: rle::encode::<bool>,
    frequency: patch::encode_frequency::<bool>,
    bitmap: bitmap::encode,
};

/// Byte-string schemes.
const STRING_SCHEMES: StringSchemes = StringSchemes {
    constant: constant::encode_bytes,
    plain: bytes::encode,
    dict: dict::encode_bytes,
    fsst: fsst::encode,
    prefix: prefix::encode,
};

impl Strings {
    /// Encodes byte strings (`fixed`: the width of fixed-size binary values).
    pub(crate) fn encode(
        values: &[&[u8]],
        fixed: Option<u32>,
        sink: &mut BufferSink,
        depth: u8,
    ) -> NodeId {
        chooser::encode_strings(values, fixed, sink, depth, &STRING_SCHEMES)
    }

    /// Decodes `count` byte strings of node `id`, checked to be exactly `count`.
    pub(crate) fn decode(
        ctx: &Ctx<'_>,
        id: NodeId,
        count: usize,
        depth: usize,
    ) -> Result<ByteValues> {
        let node = ctx.node(id, depth)?;
        let out = each!(node, e => e.decode_bytes(ctx, id, count, depth))?
            .ok_or_else(|| node.cannot_hold(id, Domain::Bytes))?;
        exact_count(ctx, id, out.len(), count)?;
        Ok(out)
    }

    /// The selected byte strings of node `id`.
    pub(crate) fn select(
        ctx: &Ctx<'_>,
        id: NodeId,
        count: usize,
        depth: usize,
        sel: &Bitmap,
    ) -> Result<ByteValues> {
        let node = ctx.node(id, depth)?;
        if let Some(out) = each!(node, e => e.select_bytes(ctx, id, count, depth, sel))? {
            return Ok(out);
        }
        let all = Self::decode(ctx, id, count, depth)?;
        let mut out = ByteValues::with_capacity(sel.count_ones(), 0);
        for i in sel.iter_ones() {
            out.push(all.value(i));
        }
        Ok(out)
    }

    /// The strings of node `id` that `m` accepts.
    pub(crate) fn filter(
        ctx: &Ctx<'_>,
        id: NodeId,
        count: usize,
        depth: usize,
        m: &BytesMatcher,
        shape: &BytesShape,
    ) -> Result<Bitmap> {
        let node = ctx.node(id, depth)?;
        if let Some(out) = each!(node, e => e.filter_bytes(ctx, id, count, depth, m, shape))? {
            return Ok(out);
        }
        let values = Self::decode(ctx, id, count, depth)?;
        let mut words = vec![0u64; count.div_ceil(64)];
        for i in 0..count {
            if m(values.value(i)) {
                words[i / 64] |= 1 << (i % 64);
            }
        }
        Bitmap::from_words(words, count).ok_or_else(|| corrupt("string bitmap"))
    }
}

/// The chunk root's own evaluation of `p`, without the generic fallback and without
/// [`DomainPred::uniform`] (a root outside the `i64` cascade may hold values an `i64`
/// range cannot describe); `None` if the root's encoding cannot evaluate it.
pub(crate) fn filter_root<V: Value, P: DomainPred<V>>(
    ctx: &Ctx<'_>,
    count: usize,
    p: &P,
) -> Result<Option<Bitmap>> {
    let node = ctx.node(0, 0)?;
    each!(node, e => e.filter::<V, P>(ctx, 0, count, 0, p))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree::Validity;

    /// A hostile tree whose nodes point back at themselves: the cost model and the payload
    /// accounting walk children only forward, so they end (with the decode cost) instead
    /// of recursing without end.
    #[test]
    fn cost_walks_end_on_cycles() {
        let cyclic = |nodes: Vec<Node>| ColumnEncoding {
            validity: Validity::AllValid,
            nodes,
        };
        let dict = cyclic(vec![Node::Dict(dict::Dict {
            values: 0,
            len: 1,
            codes: 0,
        })]);
        assert_eq!(
            dict.scan_cost(),
            0.3 + crate::encoding::DECODE_ROW_COST / 2.0
        );
        let alp = cyclic(vec![Node::Alp(alp::Alp {
            exponent: 1,
            factor: 0,
            ints: 0,
        })]);
        assert_eq!(alp.scan_cost(), crate::encoding::DECODE_ROW_COST);
        assert!(!alp.row_addressable());
    }
}
