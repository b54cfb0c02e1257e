//! Sift's encoding pool.
//!
//! A column chunk (one column of one block) is encoded into a small tree of [`Node`]s whose
//! leaves point at byte buffers. The tree is stored in the file footer; the buffers become
//! checksummed segments. Values are stored *compacted*: only non-null values are encoded, and
//! a separate [`Validity`] says where they go.
//!
//! The modules follow the data path:
//!
//! - `chunk.rs`: the view of one chunk that readers and the scan use ([`Chunk`]);
//! - `column.rs`: Arrow arrays to value domains and back (type mapping, nulls, the rows a
//!   read selects), and the public entry points;
//! - `domain.rs`: the value domains (integers, doubles, booleans, byte strings) whose
//!   values the nodes hold;
//! - `chooser.rs`: the writer's choice of a scheme by sampling;
//! - `encoding.rs`: the `Encoding` trait, what every encoding answers;
//! - `encodings/`: one module per encoding;
//! - `registry.rs`: the list of encodings and the dispatch through it;
//! - `predicate.rs`: what a predicate means, and its entry into the encoded evaluation;
//! - `tree.rs`: the encoding tree of a chunk and the context that walks it;
//! - `validity.rs`, `stats.rs`: where the nulls are, and the zone map.

mod byte_values;
mod chooser;
#[cfg(test)]
mod chooser_tests;
mod chunk;
mod column;
mod domain;
mod encoding;
pub mod encodings;
mod error;
mod predicate;
mod registry;
mod sample;
mod stats;
mod strings;
mod tree;
mod validity;
pub mod wire;

pub use byte_values::{DECODE_EXPANSION, DECODE_FLOOR, decode_budget};
pub use chunk::Chunk;
pub use column::{
    EncodeOptions, EncodedColumn, PhysicalKind, dictionary_type, encode_array, encode_array_with,
    extremes_of_stats, physical_kind,
};
pub use domain::Domain;
pub use encoding::DECODE_ROW_COST;
pub use encodings::lookup::{encode_lookups, lookup_source};
pub use error::{EncodingError, Result};
pub use predicate::{
    BytesMatcher, BytesShape, DictionaryMemo, ValuePredicate, float_from_key, float_key,
    for_each_int,
};
pub use registry::ENCODINGS;
pub use sift_bits::Bitmap;
pub use stats::{ChunkStats, MAX_STAT_BYTES, Scalar, arrow_bound};
pub use strings::{for_each_bytes, is_byte_string};
pub use tree::{ColumnEncoding, MAX_DEPTH, Node, NodeId, Validity};
