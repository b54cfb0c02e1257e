//! The encoding tree of a chunk: its nodes (one [`Node`] per encoding step, children
//! referenced by index), where its non-null values go ([`Validity`]), the buffers its
//! leaves point at, and the decoding context that walks it ([`Ctx`]).
//!
//! The tree is a flat list: children always have larger indices than their parent, so it
//! deserializes without recursion and every walk terminates. The number of values a node
//! holds is not stored in it: the parent (or the chunk, for the root) knows it, which
//! keeps the format free of redundant counts that could disagree.

use serde::{Deserialize, Serialize};

use crate::byte_values::{DECODE_EXPANSION, DECODE_FLOOR, decode_budget};
use crate::error::{Result, corrupt};
pub use crate::registry::Node;

/// Index of a node in [`ColumnEncoding::nodes`].
pub type NodeId = u32;

/// Deepest cascade the writer builds (BtrBlocks uses 3).
pub(crate) const MAX_CASCADE: u8 = 3;

/// Deepest nesting of nodes a reader accepts (guards recursion on hostile footers).
pub const MAX_DEPTH: usize = 8;

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

    /// Estimated cycles per row to evaluate a predicate on the chunk's encoded values, for
    /// the scan's cost model (see `Encoding::scan_cost`); 0 without values.
    pub fn scan_cost(&self) -> f64 {
        match self.nodes.first() {
            None => 0.0,
            Some(root) => root
                .scan_cost(self, 0)
                .unwrap_or(crate::encoding::DECODE_ROW_COST),
        }
    }

    /// Whether a selective decode of the chunk reads only the parts of its buffers that
    /// hold selected rows (bit-packed roots without a validity tree), rather than all.
    pub fn row_addressable(&self) -> bool {
        !matches!(self.validity, Validity::Encoded { .. }) && self.values_addressable()
    }

    /// Whether the chunk's values are read where they lie by a selective decode, its
    /// validity aside (what selecting a row costs rather than what it reads).
    pub fn values_addressable(&self) -> bool {
        (self.nodes.first()).is_some_and(|r| r.row_addressable(self, 0))
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
            _ => self.render(0, 0, &|n: &Node| n.name().to_string()),
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
                Some(self.render(root, 0, &|n: &Node| n.name().to_string()))
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

/// What a decoder needs: the tree, its buffers, and how many bytes its values may decode to.
pub(crate) struct Ctx<'a> {
    pub enc: &'a ColumnEncoding,
    pub bufs: Buffers<'a>,
    /// The chunk's encoded size (see [`encoded_bytes`]).
    pub encoded: usize,
    /// The most bytes its byte strings may decode to ([`decode_budget`] of `encoded`).
    pub budget: usize,
    /// A root dictionary's verdicts shared with other chunks (see [`DictionaryMemo`]).
    pub memo: Option<&'a crate::predicate::DictionaryMemo>,
}

impl<'a> Ctx<'a> {
    /// The context of a chunk with encoding `enc` and buffers `bufs`.
    pub(crate) fn new(enc: &'a ColumnEncoding, bufs: &'a [&'a [u8]]) -> Self {
        let encoded = encoded_bytes(&enc.nodes, bufs.iter().map(|b| b.len()));
        Ctx {
            enc,
            bufs: Buffers(bufs),
            encoded,
            budget: decode_budget(encoded),
            memo: None,
        }
    }

    /// Checks, before they are allocated, that `count` values taking `total` bytes
    /// (`None`: more than `usize` holds) of node `id`, or of the whole chunk, fit the
    /// chunk's decode budget.
    pub(crate) fn check_decoded(
        &self,
        id: Option<NodeId>,
        count: usize,
        total: Option<usize>,
    ) -> Result<()> {
        match total {
            Some(total) if total <= self.budget => Ok(()),
            total => Err(corrupt(format!(
                "{}: {count} values decode to {} bytes, more than the chunk's decode limit of {} bytes (the larger of {DECODE_FLOOR} and {DECODE_EXPANSION} × its {} encoded bytes)",
                id.map_or_else(|| "chunk".to_string(), |id| format!("node {id}")),
                total.map_or_else(|| "too many".to_string(), |t| t.to_string()),
                self.budget,
                self.encoded,
            ))),
        }
    }

    /// Node `id`, with the nesting depth checked.
    pub(crate) fn node(&self, id: NodeId, depth: usize) -> Result<&'a Node> {
        if depth > MAX_DEPTH {
            return Err(corrupt(format!("encoding nested deeper than {MAX_DEPTH}")));
        }
        self.enc.node(id)
    }

    /// Child `child` of `parent`, which must come after it.
    pub(crate) fn child(&self, parent: NodeId, child: NodeId) -> Result<NodeId> {
        self.enc.child(parent, child).map(|_| child)
    }

    /// The checked count of entries a node declares (dictionary entries, runs,
    /// exceptions): at most the `count` values it serves, and none only when there are
    /// none.
    pub(crate) fn declared(&self, what: &str, declared: u32, count: usize) -> Result<usize> {
        let n = declared as usize;
        if n > count || (n == 0 && count > 0) {
            return Err(corrupt(format!("{n} {what} for {count} values")));
        }
        Ok(n)
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

    /// The first `count` values of `width` bytes each in buffer `i`, checked to be there.
    pub(crate) fn fixed(&self, i: u32, count: usize, width: u32) -> Result<&'a [u8]> {
        let total = count.saturating_mul(width as usize);
        Ok(&self.get(i, total)?[..total])
    }
}

/// The encoded size of a tree with buffers of `buffer_lens` bytes: the buffers plus the
/// bytes of its constants (which the footer stores), i.e. what a file spends on the values.
pub(crate) fn encoded_bytes(nodes: &[Node], buffer_lens: impl Iterator<Item = usize>) -> usize {
    let consts: usize = nodes.iter().map(Node::inline_bytes).sum();
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
    /// Frame-of-reference codes wider than a byte are stored as byte slices instead of
    /// bit-packed (a column option; sampling sinks leave it off, so the chooser's sizes
    /// compare bit-packed layouts).
    pub(crate) byteslice: bool,
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
        self.nodes.push(Node::placeholder());
        (self.nodes.len() - 1) as NodeId
    }

    pub(crate) fn set_node(&mut self, id: NodeId, node: impl Into<Node>) {
        self.nodes[id as usize] = node.into();
    }

    pub(crate) fn push_node(&mut self, node: impl Into<Node>) -> NodeId {
        self.nodes.push(node.into());
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
    pub(crate) fn decode_with<R>(&self, f: impl FnOnce(&Ctx<'_>) -> R) -> R {
        let enc = self.encoding();
        let bufs: Vec<&[u8]> = self.buffers.iter().map(Vec::as_slice).collect();
        f(&Ctx::new(&enc, &bufs))
    }
}
