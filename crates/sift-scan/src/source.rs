//! Where blocks come from: a Sift file (encoded chunks, evaluated in place) or, with the
//! `parquet` feature, a Parquet file (row groups whose pages are read in place as Sift
//! chunks where `parquet_pages.rs` can, else decoded by the `parquet` crate;
//! `parquet_source.rs`).

use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

use arrow_array::ArrayRef;
use arrow_schema::{Schema, SchemaRef};
use sift_format::{
    ChunkRef, ChunkStats, ColumnShape, RangeCounts, RangeOptions, RangeSource, SiftFile,
};

use crate::bind::Bound;
use crate::error::Result;
#[cfg(feature = "parquet")]
use crate::parquet_pages::PagedColumn;
#[cfg(feature = "parquet")]
use crate::parquet_source::{ParquetBlock, ParquetSource};
use crate::prune::Membership;

/// A file the scan reads.
pub(crate) enum Source {
    Sift(SiftFile),
    #[cfg(feature = "parquet")]
    Parquet(ParquetSource),
}

/// One block's columns, as the evaluator reads them.
pub(crate) enum BlockData<'a> {
    /// Encoded chunks, fetched on demand.
    Sift { file: &'a SiftFile, block: usize },
    /// A Parquet row group whose columns are read when first asked for: page by page as
    /// Sift chunks where `parquet_pages.rs` reads the pages in place, else decoded.
    #[cfg(feature = "parquet")]
    Parquet(ParquetBlock<'a>),
}

/// One column of one block.
pub(crate) enum ColumnData<'a> {
    Encoded(ChunkRef<'a>),
    /// A Parquet column chunk as Sift chunks, one per page.
    #[cfg(feature = "parquet")]
    Paged(&'a PagedColumn),
    /// Decoded values (only Parquet columns read by the `parquet` crate).
    #[cfg_attr(not(feature = "parquet"), allow(dead_code))]
    Decoded(ArrayRef),
}

impl Source {
    pub(crate) fn open(path: &Path, verify_checksums: bool) -> Result<Source> {
        if is_parquet(path) {
            #[cfg(feature = "parquet")]
            return Ok(Source::Parquet(ParquetSource::open(path)?));
            #[cfg(not(feature = "parquet"))]
            return Err(no_parquet(path));
        }
        sift(SiftFile::open_with(path, read_options(verify_checksums))?)
    }

    /// A file read by byte range (an object in a store), Sift or Parquet by its extension.
    pub(crate) fn open_ranges(
        source: Arc<dyn RangeSource>,
        verify_checksums: bool,
        ranges: RangeOptions,
    ) -> Result<Source> {
        let location = source.location().to_string();
        if is_parquet(Path::new(&location)) {
            #[cfg(feature = "parquet")]
            return Ok(Source::Parquet(ParquetSource::open_ranges(source, ranges)?));
            #[cfg(not(feature = "parquet"))]
            return Err(no_parquet(Path::new(&location)));
        }
        sift(SiftFile::open_ranges(
            source,
            read_options(verify_checksums),
            ranges,
        )?)
    }

    /// Whether the file is read by range: a scan then fetches the chunks it needs ahead,
    /// several blocks at a time ([`prefetch`](Self::prefetch)).
    pub(crate) fn is_remote(&self) -> bool {
        match self {
            Source::Sift(f) => f.is_remote(),
            #[cfg(feature = "parquet")]
            Source::Parquet(p) => p.is_remote(),
        }
    }

    /// See [`Table::sorted_from_values`](crate::Table::sorted_from_values).
    pub(crate) fn sorted_from_values(&self) -> bool {
        matches!(self, Source::Sift(_))
    }

    /// Whether the chunks of `columns` in block `b` are held or being fetched.
    pub(crate) fn prefetched(&self, b: usize, columns: &[usize]) -> bool {
        match self {
            Source::Sift(f) => f.prefetched(b, columns),
            #[cfg(feature = "parquet")]
            Source::Parquet(p) => p.prefetched(b, columns),
        }
    }

    /// Bytes [`prefetch`](Self::prefetch) would request for these chunks (before
    /// coalescing).
    pub(crate) fn prefetch_bytes(&self, blocks: &[usize], columns: &[usize]) -> Result<u64> {
        match self {
            Source::Sift(f) => Ok(f.chunk_bytes(blocks, columns)?),
            #[cfg(feature = "parquet")]
            Source::Parquet(p) => Ok(p.prefetch_bytes(blocks, columns)),
        }
    }

    /// Fetches the chunks of `columns` in `blocks` with coalesced, concurrent requests
    /// and holds them until [`release`](Self::release)d; `finished` says which blocks the
    /// scan read already.
    pub(crate) fn prefetch(
        &self,
        blocks: &[usize],
        columns: &[usize],
        finished: &dyn Fn(usize) -> bool,
    ) -> Result<RangeCounts> {
        match self {
            Source::Sift(f) => Ok(f.prefetch(blocks, columns, finished)?),
            #[cfg(feature = "parquet")]
            Source::Parquet(p) => p.prefetch(blocks, columns, finished),
        }
    }

    /// Drops the fetched chunks of block `b`.
    pub(crate) fn release(&self, b: usize) {
        match self {
            Source::Sift(f) => f.release(b),
            #[cfg(feature = "parquet")]
            Source::Parquet(p) => p.release(b),
        }
    }

    pub(crate) fn schema(&self) -> SchemaRef {
        match self {
            // Chunks decode to the stored types: a column written as a dictionary is
            // filtered and returned as its values (`read_dictionary` asks for a dictionary).
            // Built and checked when the source was opened, so never the empty fallback.
            Source::Sift(f) => f
                .stored_schema()
                .map_or_else(|_| SchemaRef::new(Schema::empty()), Arc::clone),
            #[cfg(feature = "parquet")]
            Source::Parquet(p) => p.schema(),
        }
    }

    /// The columns of [`schema`](Self::schema) that are top-level columns (a Sift file
    /// stores a nested column as several: its nodes, named by their paths).
    pub(crate) fn top_level(&self) -> &[usize] {
        match self {
            // Built when the source was opened.
            Source::Sift(f) => f.top_level().unwrap_or(&[]),
            #[cfg(feature = "parquet")]
            Source::Parquet(p) => p.top_level(),
        }
    }

    /// Whether column `c` is a nested column read assembled from its nodes.
    pub(crate) fn is_nested(&self, c: usize) -> bool {
        match self {
            Source::Sift(f) => f.column_shape(c).ok() == Some(ColumnShape::Nested),
            #[cfg(feature = "parquet")]
            Source::Parquet(_) => false,
        }
    }

    /// Whether column `c` holds list elements, read only through its list.
    pub(crate) fn is_element(&self, c: usize) -> bool {
        match self {
            Source::Sift(f) => f.column_shape(c).ok() == Some(ColumnShape::Element),
            #[cfg(feature = "parquet")]
            Source::Parquet(_) => false,
        }
    }

    pub(crate) fn num_blocks(&self) -> usize {
        match self {
            Source::Sift(f) => f.num_blocks(),
            #[cfg(feature = "parquet")]
            Source::Parquet(p) => p.num_blocks(),
        }
    }

    pub(crate) fn block_rows(&self, b: usize) -> usize {
        match self {
            Source::Sift(f) => f.block_rows(b).map_or(0, |r| r as usize),
            #[cfg(feature = "parquet")]
            Source::Parquet(p) => p.block_rows(b),
        }
    }

    /// The zone map of a column in a block (a Parquet row group's column statistics).
    pub(crate) fn stats(&self, b: usize, col: usize) -> Option<&ChunkStats> {
        match self {
            // A chunk whose metadata does not decode is not pruned: reading it reports why.
            Source::Sift(f) => f.chunk_meta(b, col).ok().map(|c| &c.stats),
            #[cfg(feature = "parquet")]
            Source::Parquet(p) => p.stats(b, col),
        }
    }

    /// The zone map of column `col` in block `b` when its bounds are the exact smallest and
    /// largest non-null values, not only bounds of them: a Sift chunk of integers (the
    /// writer records their exact extremes), a Parquet row group's exact statistics (see
    /// `ParquetZones::exact_row_group`).
    pub(crate) fn exact_stats(&self, b: usize, col: usize) -> Option<&ChunkStats> {
        match self {
            Source::Sift(f) => {
                let kind = f.stored_type(col).map(sift_encoding::physical_kind);
                let ints = matches!(kind, Ok(Ok(sift_encoding::PhysicalKind::Int(_))));
                self.stats(b, col).filter(|_| ints)
            }
            #[cfg(feature = "parquet")]
            Source::Parquet(p) => p.exact_stats(b, col),
        }
    }

    /// A membership test of a column's values in a block (a Parquet Bloom filter).
    #[cfg_attr(not(feature = "parquet"), allow(unused_variables))]
    pub(crate) fn members(&self, b: usize, col: usize) -> Option<&dyn Membership> {
        match self {
            Source::Sift(_) => None,
            #[cfg(feature = "parquet")]
            Source::Parquet(p) => p.members(b, col),
        }
    }

    /// Whether a block can be read at some of its rows only ([`block`](Self::block)'s
    /// `rows`), skipping the storage of the others.
    pub(crate) fn reads_row_ranges(&self) -> bool {
        !matches!(self, Source::Sift(_))
    }

    /// The rows of block `b` where `filter` may be true by zone maps finer than the
    /// block's (a Parquet page index); `None` without them.
    #[cfg_attr(not(feature = "parquet"), allow(unused_variables))]
    pub(crate) fn candidates(&self, b: usize, filter: &Bound) -> Option<Vec<Range<usize>>> {
        match self {
            Source::Sift(_) => None,
            #[cfg(feature = "parquet")]
            Source::Parquet(p) => p.candidates(b, filter),
        }
    }

    /// Opens block `b`; of a Parquet row group, only `rows` are read if given (when
    /// [`reads_row_ranges`](Self::reads_row_ranges)), and the columns of `dictionary`
    /// that the Parquet reader can return as `Dictionary(Int32, type)` come out as such
    /// when asked for as dictionaries: dictionary-encoded pages keep their dictionary and
    /// only the keys are decoded (the reader builds a dictionary itself for pages stored
    /// plain).
    #[cfg_attr(not(feature = "parquet"), allow(unused_variables))]
    pub(crate) fn block(
        &self,
        b: usize,
        dictionary: &[usize],
        rows: Option<&[Range<usize>]>,
    ) -> Result<BlockData<'_>> {
        match self {
            Source::Sift(f) => Ok(BlockData::Sift { file: f, block: b }),
            #[cfg(feature = "parquet")]
            Source::Parquet(p) => p.block(b, dictionary, rows),
        }
    }
}

/// How a Sift file is read.
fn read_options(verify_checksums: bool) -> sift_format::ReadOptions {
    sift_format::ReadOptions {
        verify_checksums,
        ..Default::default()
    }
}

/// An opened Sift file as a source, once its schema is known to decode.
fn sift(file: SiftFile) -> Result<Source> {
    file.stored_schema()?;
    file.top_level()?;
    Ok(Source::Sift(file))
}

/// Whether `path` names a Parquet file, by its extension.
fn is_parquet(path: &Path) -> bool {
    path.extension().is_some_and(|e| {
        ["parquet", "parq", "pq"]
            .iter()
            .any(|x| e.eq_ignore_ascii_case(x))
    })
}

#[cfg(not(feature = "parquet"))]
fn no_parquet(path: &Path) -> crate::error::Error {
    crate::error::Error::Parquet(format!(
        "{}: cannot read Parquet files: sift-scan was built without its `parquet` feature",
        path.display()
    ))
}

impl BlockData<'_> {
    /// Column `col` with the schema's type.
    pub(crate) fn column(&self, col: usize) -> Result<ColumnData<'_>> {
        match self {
            BlockData::Sift { file, block } => Ok(ColumnData::Encoded(file.chunk(*block, col)?)),
            #[cfg(feature = "parquet")]
            BlockData::Parquet(p) => p.column(col),
        }
    }

    /// The `[min, max]` pair of column `col` over every row of the block (`rows` of them),
    /// from its statistics alone where they state the exact extremes: a Sift chunk of
    /// integers (`sift_encoding::extremes_of_stats`), a whole Parquet row group's exact
    /// statistics. `None` elsewhere.
    pub(crate) fn extremes_of_stats(&self, col: usize, rows: usize) -> Result<Option<ArrayRef>> {
        match self {
            BlockData::Sift { file, block } => {
                let stats = &file.chunk_meta(*block, col)?.stats;
                sift_encoding::extremes_of_stats(file.stored_type(col)?, stats, rows)
                    .map_err(|e| crate::error::Error::Format(file.chunk_error(*block, col, e)))
            }
            #[cfg(feature = "parquet")]
            BlockData::Parquet(p) => p.extremes_of_stats(col, rows),
        }
    }

    /// Adds to `stats` what reading the block's columns did, for the blocks whose columns
    /// are read when first asked for (Parquet): bytes read, pages read in place, column
    /// chunks decoded.
    #[cfg_attr(not(feature = "parquet"), allow(unused_variables))]
    pub(crate) fn account(&self, stats: &mut crate::stats::ScanStats) {
        match self {
            BlockData::Sift { .. } => {}
            #[cfg(feature = "parquet")]
            BlockData::Parquet(p) => p.account(stats),
        }
    }

    /// Column `col` as read for a dictionary output: a dictionary array where the block
    /// reads it as one (see [`Source::block`]).
    pub(crate) fn dictionary_column(&self, col: usize) -> Result<ColumnData<'_>> {
        match self {
            #[cfg(feature = "parquet")]
            BlockData::Parquet(p) => p.dictionary_column(col),
            _ => self.column(col),
        }
    }
}

#[cfg(all(test, not(feature = "parquet")))]
mod tests {
    use super::*;
    use crate::error::Error;

    /// Without the feature a Parquet file is refused by name, before it is opened, rather
    /// than read as a (damaged) Sift file.
    #[test]
    fn parquet_without_the_feature_is_a_clear_error() {
        let Err(e) = Source::open(Path::new("data/lineitem.parquet"), true) else {
            unreachable!("a Parquet path opened without the parquet feature");
        };
        let message = e.to_string();
        assert!(matches!(e, Error::Parquet(_)), "{message}");
        assert!(message.contains("data/lineitem.parquet"), "{message}");
        assert!(message.contains("`parquet` feature"), "{message}");
    }
}
