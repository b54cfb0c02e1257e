//! The Sift file format, version 3.
//!
//! ```text
//! "SIFTDATA"                         8-byte magic
//! segments …                         the buffers of every column chunk, block by block;
//!                                    a chunk's segments are contiguous (one range read)
//! footer                             header, schema, offset tables and per-chunk
//!                                    records (see the `footer` module)
//! footer_len: u64 LE
//! footer_crc32: u32 LE
//! version: u32 LE                    refused unless supported
//! "SIFTDATA"                         8-byte magic
//! ```
//!
//! Blocks hold up to 64Ki rows and are aligned across all columns. The footer holds the
//! schema, and per block and column the encoding tree, zone-map statistics and the offset,
//! length and CRC-32 of every segment, each chunk's record reachable through an offset
//! table. Opening a file reads the tail (one range, two if the footer is larger than the
//! first guess) and decodes nothing per column; records are decoded when first used.

mod aligned;
mod error;
mod footer;
mod nested;
mod ranges;
mod reader;
mod schema;
mod writer;

pub use aligned::AlignedWriter;
pub use error::{Error, Result};
pub use footer::{
    BlockMeta, ChunkMeta, FOOTER_HEADER_LEN, FORMAT_VERSION, Footer, MAGIC, OLDEST_FORMAT_VERSION,
    Segment, TRAILER_LEN, footer_checksum, seal_footer,
};
pub use nested::{MAX_NESTING, NESTED_KEY, Role, element_selection, element_selection_reference};
pub use ranges::{ChunkRange, RangeCounts, RangeOptions, RangeSource, Remote, coalesce};
pub use reader::{
    BlockBatches, ChunkRef, ColumnShape, FooterCounts, NestedCounts, ReadOptions, SiftFile,
    map_file,
};
pub use schema::{ColumnType, DICTIONARY_KEY, StoredField, Unit, check_schema, check_unique_names};
pub use sift_encoding::{ChunkStats, Scalar};
pub use writer::{
    MAX_BLOCK_ROWS, SEGMENT_ALIGN, SiftWriter, TempFile, WriteOptions, WriteSummary,
    remove_temp_files,
};
