//! The encodings, one module each. Every module holds the node type (its parameters,
//! children and buffers), its encoder(s) and its implementation of
//! `Encoding` (`encoding.rs`); `registry.rs` lists them.

pub mod alp;
pub mod alp_rd;
pub mod big_endian;
pub mod bitmap;
pub mod bitset;
pub mod byte_arrays;
pub mod byte_stream_split;
pub mod bytes;
pub mod byteslice;
pub mod constant;
pub mod cycle;
pub mod delta;
pub mod dict;
pub mod frame;
pub mod fsst;
pub mod huffman;
pub mod hybrid;
pub mod lookup;
pub mod patch;
pub mod plain;
pub mod prefix;
pub mod rle;

pub use alp::Alp;
pub use alp_rd::AlpRd;
pub use big_endian::BigEndian;
pub use bitmap::Bitmap;
pub use bitset::BitSet;
pub use byte_arrays::ByteArrays;
pub use byte_stream_split::ByteStreamSplit;
pub use bytes::Bytes;
pub use byteslice::ByteSlice;
pub use constant::Constant;
pub use cycle::Cycle;
pub use delta::Delta;
pub use dict::Dict;
pub use frame::For;
pub use fsst::Fsst;
pub use huffman::Huffman;
pub use hybrid::Hybrid;
pub use lookup::Lookup;
pub use patch::Patch;
pub use plain::Plain;
pub use prefix::Prefix;
pub use rle::Rle;
