//! Sift's encoding pool.
//!
//! A column chunk (one column of one block) is encoded into a small tree of [`Node`]s whose
//! leaves point at byte buffers. The tree is stored in the file footer; the buffers become
//! checksummed segments. Values are stored *compacted*: only non-null values are encoded, and
//! a separate [`Validity`] says where they go.
//!
//! The v1 pool is deliberately small (plain, frame of reference + bit-packing, sorted
//! dictionary, bitmaps); the cascading pool chosen by sampling builds on the same tree.

mod alp;
mod boolean;
mod bytes;
mod cascade;
#[cfg(test)]
mod cascade_tests;
mod column;
mod dict;
mod error;
mod fsst;
mod int;
mod node;
mod patch;
mod rle;
mod sample;
mod stats;

pub use column::{EncodedColumn, PhysicalKind, decode_array, encode_array, physical_kind};
pub use error::{EncodingError, Result};
pub use node::{ColumnEncoding, MAX_DEPTH, Node, NodeId, Validity};
pub use stats::{ChunkStats, MAX_STAT_BYTES, Scalar};
