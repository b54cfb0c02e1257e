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
mod filter;
mod fsst;
mod int;
mod lookup;
mod node;
mod patch;
mod rle;
mod sample;
mod selected;
mod stats;
mod validity;
pub mod wire;

pub use bytes::{DECODE_EXPANSION, DECODE_FLOOR, decode_budget};
pub use column::{
    EncodedColumn, PhysicalKind, chunk_validity, decode_array, decode_dictionary, decode_selected,
    dictionary_type, encode_array, filter_chunk, physical_kind,
};
pub use error::{EncodingError, Result};
pub use filter::{BytesMatcher, BytesShape, ValuePredicate, float_from_key, float_key};
pub use lookup::{decode_lookup, encode_lookups, lookup_source};
pub use node::{ColumnEncoding, MAX_DEPTH, Node, NodeId, Validity};
pub use sift_bits::Bitmap;
pub use stats::{ChunkStats, MAX_STAT_BYTES, Scalar};
