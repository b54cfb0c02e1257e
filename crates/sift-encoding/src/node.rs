//! The encoding tree stored in the footer, and access to its buffers.

use serde::{Deserialize, Serialize};

use crate::error::{Result, corrupt};

/// Index of a node in [`ColumnEncoding::nodes`].
pub type NodeId = u32;

/// Deepest nesting of nodes a reader accepts (guards recursion on hostile footers).
pub const MAX_DEPTH: usize = 8;

/// One step of an encoding cascade. Children are referenced by index, always to a later
/// node, so the tree is a flat, acyclic list that deserializes without recursion.
///
/// The number of values a node holds is not stored in it: the parent (or the chunk, for the
/// root) knows it, which keeps the format free of redundant counts that could disagree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Node {
    /// Fixed-width little-endian values, `width` bytes each, in buffer `buffer`.
    Plain { width: u32, buffer: u32 },
    /// Frame of reference plus bit-packing: value = `base` + code, codes `bits` wide,
    /// packed little-endian contiguously in buffer `buffer`.
    For { base: i128, bits: u8, buffer: u32 },
    /// Booleans as a bitmap (bit `i` of little-endian word `i / 64`).
    Bitmap { buffer: u32 },
    /// Variable-length byte strings: integer `lengths` (a node) and concatenated bytes.
    Bytes { lengths: NodeId, data: u32 },
    /// A sorted dictionary of `len` distinct `values` (a node) and integer `codes` (a node).
    Dict {
        values: NodeId,
        len: u32,
        codes: NodeId,
    },
    /// Every value equal to `value` (little-endian bytes of the domain's value).
    Constant { value: Vec<u8> },
    /// Run-length encoding: `runs` run `values` (a node) and their `lengths` (integers ≥ 1).
    Rle {
        values: NodeId,
        runs: u32,
        lengths: NodeId,
    },
    /// Exceptions over a base: decode `inner`, then overwrite the values at `positions`
    /// (strictly increasing integers) with `values`. Frequency encoding is a patch over a
    /// constant; patched FOR a patch over narrow bit-packing; ALP's exceptions a patch too.
    Patch {
        inner: NodeId,
        exceptions: u32,
        positions: NodeId,
        values: NodeId,
    },
    /// Delta encoding of integers: value `i` = value `i - 1` + `deltas[i]` (wrapping),
    /// where value `-1` is `first`.
    Delta { first: i64, deltas: NodeId },
    /// ALP (SIGMOD 2024): float = `ints[i]` × 10^`factor` × 10^-`exponent`.
    Alp {
        exponent: u8,
        factor: u8,
        ints: NodeId,
    },
    /// ALP for real doubles: the high bits (`left`, usually a small dictionary) and the low
    /// `right_bits` bits (`right`) of each bit pattern, both integer nodes.
    AlpRd {
        right_bits: u8,
        left: NodeId,
        right: NodeId,
    },
    /// FSST-compressed strings: a symbol table (buffer), compressed lengths (a node) and
    /// the compressed bytes (buffer).
    Fsst {
        symbols: u32,
        lengths: NodeId,
        data: u32,
    },
    /// Integers that are a function of column `column` of the same block: value `i` =
    /// `table[k_i]`, where `k_i` is row `i`'s dictionary code in that column's chunk (which
    /// has no nulls and a dictionary of `len` entries at its root; never a lookup itself).
    /// `table` holds `len` integers. Only at the root of a chunk without nulls.
    Lookup {
        column: u32,
        len: u32,
        table: NodeId,
    },
}

impl Node {
    /// A short label with the node's parameters, e.g. `for7` or `dict[25]`.
    pub fn label(&self) -> String {
        match self {
            Node::Plain { width, .. } => format!("plain{}", width * 8),
            Node::For { bits, .. } => format!("for{bits}"),
            Node::Bitmap { .. } => "bitmap".into(),
            Node::Bytes { .. } => "bytes".into(),
            Node::Dict { len, .. } => format!("dict[{len}]"),
            Node::Constant { .. } => "const".into(),
            Node::Rle { runs, .. } => format!("rle[{runs}]"),
            Node::Patch { exceptions, .. } => format!("patch[{exceptions}]"),
            Node::Delta { .. } => "delta".into(),
            Node::Alp {
                exponent, factor, ..
            } => format!("alp[e{exponent},f{factor}]"),
            Node::AlpRd { right_bits, .. } => format!("alprd[{right_bits}]"),
            Node::Fsst { .. } => "fsst".into(),
            Node::Lookup { column, len, .. } => format!("lookup[#{column}:{len}]"),
        }
    }

    /// The scheme's name without parameters, e.g. `for` or `dict`.
    pub fn scheme(&self) -> &'static str {
        match self {
            Node::Plain { .. } => "plain",
            Node::For { .. } => "for",
            Node::Bitmap { .. } => "bitmap",
            Node::Bytes { .. } => "bytes",
            Node::Dict { .. } => "dict",
            Node::Constant { .. } => "const",
            Node::Rle { .. } => "rle",
            Node::Patch { .. } => "patch",
            Node::Delta { .. } => "delta",
            Node::Alp { .. } => "alp",
            Node::AlpRd { .. } => "alprd",
            Node::Fsst { .. } => "fsst",
            Node::Lookup { .. } => "lookup",
        }
    }

    /// The child nodes, in a fixed order.
    pub fn children(&self) -> Vec<NodeId> {
        match self {
            Node::Plain { .. } | Node::For { .. } | Node::Bitmap { .. } | Node::Constant { .. } => {
                vec![]
            }
            Node::Bytes { lengths, .. } | Node::Fsst { lengths, .. } => vec![*lengths],
            Node::Dict { values, codes, .. } => vec![*values, *codes],
            Node::Rle {
                values, lengths, ..
            } => vec![*values, *lengths],
            Node::Patch {
                inner,
                positions,
                values,
                ..
            } => vec![*inner, *positions, *values],
            Node::Delta { deltas, .. } => vec![*deltas],
            Node::Alp { ints, .. } | Node::Lookup { table: ints, .. } => vec![*ints],
            Node::AlpRd { left, right, .. } => vec![*left, *right],
        }
    }
}

/// Where the non-null values of a chunk go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Validity {
    /// No nulls.
    AllValid,
    /// Only nulls; the chunk has no nodes.
    AllNull,
    /// A boolean node tree rooted at `root` (bit set = value present): a bitmap, or runs
    /// when nulls cluster. Its nodes follow the values' tree (whose root is node 0) and are
    /// not part of it.
    Encoded { root: NodeId },
}

/// The encoding of one column chunk: validity plus a node tree rooted at `nodes[0]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ColumnEncoding {
    /// Where the values are.
    pub validity: Validity,
    /// The node tree; empty only when there are no non-null values.
    pub nodes: Vec<Node>,
}

impl ColumnEncoding {
    /// The node with index `id`, checked.
    pub(crate) fn node(&self, id: NodeId) -> Result<&Node> {
        self.nodes
            .get(id as usize)
            .ok_or_else(|| corrupt(format!("node {id} does not exist")))
    }

    /// A child of `parent`, checked to come after it (so recursion always terminates).
    pub(crate) fn child(&self, parent: NodeId, child: NodeId) -> Result<&Node> {
        if child <= parent {
            return Err(corrupt(format!(
                "node {parent} refers back to node {child}"
            )));
        }
        self.node(child)
    }

    /// A short human-readable description of the tree, e.g. `dict(bytes(for8), for5)`.
    pub fn describe(&self) -> String {
        match self.validity {
            Validity::AllNull => "all-null".into(),
            _ if self.nodes.is_empty() => "empty".into(),
            _ => self.describe_node(0, 0),
        }
    }

    /// The cascade's shape: [`describe`](Self::describe) without parameters, e.g.
    /// `dict(bytes(for), for)`, so that blocks with the same choice group together.
    pub fn shape(&self) -> String {
        match self.validity {
            Validity::AllNull => "all-null".into(),
            _ if self.nodes.is_empty() => "empty".into(),
            _ => self.render(0, 0, &|n: &Node| n.scheme().to_string()),
        }
    }

    /// The validity's cascade with parameters, e.g. `rle[12](bitmap, for14)`; `None`
    /// without a validity tree (no nulls, or only nulls).
    pub fn validity_describe(&self) -> Option<String> {
        match self.validity {
            Validity::Encoded { root } => Some(self.describe_node(root, 0)),
            _ => None,
        }
    }

    /// The validity's cascade without parameters, e.g. `rle(bitmap, for)`.
    pub fn validity_shape(&self) -> Option<String> {
        match self.validity {
            Validity::Encoded { root } => {
                Some(self.render(root, 0, &|n: &Node| n.scheme().to_string()))
            }
            _ => None,
        }
    }

    fn describe_node(&self, id: NodeId, depth: usize) -> String {
        self.render(id, depth, &Node::label)
    }

    fn render(&self, id: NodeId, depth: usize, label: &dyn Fn(&Node) -> String) -> String {
        let Some(node) = self.nodes.get(id as usize) else {
            return "?".into();
        };
        if depth > MAX_DEPTH {
            return "…".into();
        }
        let children: Vec<String> = node
            .children()
            .iter()
            .map(|&c| self.render(c, depth + 1, label))
            .collect();
        if children.is_empty() {
            label(node)
        } else {
            format!("{}({})", label(node), children.join(", "))
        }
    }
}

/// The buffers of a chunk, as read from the file.
pub(crate) struct Buffers<'a>(pub &'a [&'a [u8]]);

impl<'a> Buffers<'a> {
    /// Buffer `i`, which must hold at least `min_len` bytes.
    pub(crate) fn get(&self, i: u32, min_len: usize) -> Result<&'a [u8]> {
        let b = self.0.get(i as usize).ok_or_else(|| {
            corrupt(format!(
                "buffer {i} does not exist ({} buffers)",
                self.0.len()
            ))
        })?;
        if b.len() < min_len {
            return Err(corrupt(format!(
                "buffer {i} holds {} bytes, {min_len} needed",
                b.len()
            )));
        }
        Ok(b)
    }
}

/// The encoded size of a tree with buffers of `buffer_lens` bytes: the buffers plus the
/// bytes of its constants (which the footer stores), i.e. what a file spends on the values.
pub(crate) fn encoded_bytes(nodes: &[Node], buffer_lens: impl Iterator<Item = usize>) -> usize {
    let consts: usize = nodes
        .iter()
        .map(|n| match n {
            Node::Constant { value } => value.len(),
            _ => 0,
        })
        .sum();
    buffer_lens.fold(consts, usize::saturating_add)
}

/// Bytes a tree and its buffers store: [`encoded_bytes`] plus a rough footer cost per
/// node, so that schemes with many tiny nodes do not look free.
pub(crate) fn stored_size(nodes: &[Node], buffers: &[Vec<u8>]) -> usize {
    const NODE_OVERHEAD: usize = 8;
    encoded_bytes(nodes, buffers.iter().map(Vec::len)) + NODE_OVERHEAD * nodes.len()
}

/// Collects buffers while encoding.
#[derive(Default)]
pub(crate) struct BufferSink {
    pub(crate) buffers: Vec<Vec<u8>>,
    pub(crate) nodes: Vec<Node>,
}

impl BufferSink {
    /// Bytes this sink would store (see [`stored_size`]).
    pub(crate) fn stored_size(&self) -> usize {
        stored_size(&self.nodes, &self.buffers)
    }

    pub(crate) fn buffer(&mut self, bytes: Vec<u8>) -> u32 {
        self.buffers.push(bytes);
        (self.buffers.len() - 1) as u32
    }

    /// Reserves a node slot so that children pushed afterwards get larger indices.
    pub(crate) fn reserve_node(&mut self) -> NodeId {
        self.nodes.push(Node::Bitmap { buffer: u32::MAX });
        (self.nodes.len() - 1) as NodeId
    }

    pub(crate) fn set_node(&mut self, id: NodeId, node: Node) {
        self.nodes[id as usize] = node;
    }

    pub(crate) fn push_node(&mut self, node: Node) -> NodeId {
        self.nodes.push(node);
        (self.nodes.len() - 1) as NodeId
    }
}

#[cfg(test)]
impl BufferSink {
    /// The tree this sink holds, as the encoding of a chunk without nulls (tests).
    pub(crate) fn encoding(&self) -> ColumnEncoding {
        ColumnEncoding {
            validity: Validity::AllValid,
            nodes: self.nodes.clone(),
        }
    }

    /// Runs `f` with a decoding context over this sink's tree and buffers (tests).
    pub(crate) fn decode_with<R>(&self, f: impl FnOnce(&crate::cascade::Ctx<'_>) -> R) -> R {
        let enc = self.encoding();
        let bufs: Vec<&[u8]> = self.buffers.iter().map(Vec::as_slice).collect();
        f(&crate::cascade::Ctx::new(&enc, &bufs))
    }
}
