//! Parquet files as a scan source (feature `parquet`): row groups (only the pages of the
//! candidate rows, when the file has a page index) whose columns are read when first asked
//! for, page by page in place (`parquet_pages.rs`) where the pages allow, else decoded by
//! the `parquet` crate, which a damaged file must not make panic or hang the scan.
//! Pruning reads the file's metadata through `parquet_zones.rs`; the bytes come from a
//! local file or an object store through `parquet_input.rs`.

use std::cell::{Cell, OnceCell};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::ArrayRef;
use arrow_schema::{DataType, Schema, SchemaRef};
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder, RowSelection,
};
use parquet::file::metadata::{PageIndexPolicy, ParquetMetaData, ParquetMetaDataReader};

use crate::bind::Bound;
use crate::error::{Error, Result};
use crate::parquet_input::{Held, ParquetInput, check_page_headers, check_thrift, index_structs};
use crate::parquet_pages::PagedColumn;
use crate::parquet_zones::ParquetZones;
use crate::prune::{Membership, candidate_rows};
use crate::source::{BlockData, ColumnData};
use sift_encoding::Bitmap;
use sift_format::{ChunkStats, RangeCounts, RangeOptions, RangeSource};

/// A Parquet file opened once: its metadata is parsed once and reused per row group.
pub(crate) struct ParquetSource {
    path: PathBuf,
    input: ParquetInput,
    meta: ArrowReaderMetadata,
    zones: ParquetZones,
    /// Every column: the schema's columns are all top-level.
    top: Vec<usize>,
}

impl ParquetSource {
    /// A local file.
    pub(crate) fn open(path: &Path) -> Result<ParquetSource> {
        let input = ParquetInput::local(path)
            .map_err(|e| Error::Parquet(format!("{}: {e}", path.display())))?;
        Self::with_input(path.to_path_buf(), input)
    }

    /// An object read by byte range (see `parquet_input.rs`).
    pub(crate) fn open_ranges(
        source: Arc<dyn RangeSource>,
        ranges: RangeOptions,
    ) -> Result<ParquetSource> {
        let path = PathBuf::from(source.location());
        let input = ParquetInput::remote(source, ranges)
            .map_err(|e| Error::Parquet(format!("{}: {e}", path.display())))?;
        Self::with_input(path, input)
    }

    fn with_input(path: PathBuf, input: ParquetInput) -> Result<ParquetSource> {
        let err = |e: &dyn std::fmt::Display| Error::Parquet(format!("{}: {e}", path.display()));
        // The page index (when the writer stored one) prunes pages; one that does not
        // parse, or does not fit the column chunks, only costs that pruning, never the
        // file. The footer is read without its embedded Arrow schema, applied on its own.
        let footer = input.footer().map_err(|e| err(&e))?;
        let mut metadata = Arc::new(with_page_index(&input, footer).map_err(|e| err(&e))?);
        if !offset_index_fits(&metadata) {
            metadata = Arc::new(
                ParquetMetaData::clone(&metadata)
                    .into_builder()
                    .set_offset_index(None)
                    .set_column_index(None)
                    .build(),
            );
        }
        // The embedded Arrow schema (the `ARROW:schema` key: string views, large types,
        // time zones...) is decoded by arrow-ipc, which panics on some damaged ones
        // rather than returning an error. Such a file is read with the Parquet schema
        // alone, as readers that ignore the key do.
        let meta = match crate::error::catch(|| {
            ArrowReaderMetadata::try_new(metadata.clone(), ArrowReaderOptions::new())
        }) {
            Ok(typed) => typed,
            Err(_) => ArrowReaderMetadata::try_new(metadata, plain_schema()),
        }
        .map_err(|e| err(&e))?;
        input.index_chunks(meta.metadata());
        Ok(ParquetSource {
            zones: ParquetZones::new(&meta, input.clone()),
            top: (0..meta.schema().fields().len()).collect(),
            path,
            input,
            meta,
        })
    }

    /// Whether the file is an object read by range.
    pub(crate) fn is_remote(&self) -> bool {
        self.input.remote_input().is_some()
    }

    /// The column chunks `(row group, leaf)` of `columns` in row group `b`, with their
    /// byte ranges; chunks whose range lies outside the file are left out (reading them
    /// reports the damage).
    fn chunk_ranges(&self, b: usize, columns: &[usize]) -> Vec<sift_format::ChunkRange> {
        let Some(group) = self.meta.metadata().row_groups().get(b) else {
            return Vec::new();
        };
        let mut chunks: Vec<_> = columns
            .iter()
            .filter_map(|&c| self.leaves(c))
            .flatten()
            .filter_map(|leaf| {
                let range = self.input.chunk_range(group.columns().get(leaf)?)?;
                Some(((b, leaf), range))
            })
            .collect();
        chunks.sort_unstable_by_key(|(k, _)| *k);
        chunks.dedup_by_key(|(k, _)| *k);
        chunks
    }

    /// For an object read by range: fetches the column chunks of `columns` in row groups
    /// `blocks` with coalesced, concurrent requests, and holds them for the scan (see
    /// [`Remote::fetch`](sift_format::Remote::fetch) for `finished`).
    pub(crate) fn prefetch(
        &self,
        blocks: &[usize],
        columns: &[usize],
        finished: &dyn Fn(usize) -> bool,
    ) -> Result<RangeCounts> {
        let Some(remote) = self.input.remote_input() else {
            return Ok(RangeCounts::default());
        };
        let wanted = blocks
            .iter()
            .map(|&b| (b, self.chunk_ranges(b, columns)))
            .collect();
        remote
            .remote
            .fetch(wanted, finished)
            .map_err(|e| Error::Parquet(format!("{}: {e}", self.path.display())))
    }

    /// Bytes [`prefetch`](Self::prefetch) would request for these column chunks.
    pub(crate) fn prefetch_bytes(&self, blocks: &[usize], columns: &[usize]) -> u64 {
        blocks
            .iter()
            .flat_map(|&b| self.chunk_ranges(b, columns))
            .map(|(_, r)| r.end - r.start)
            .sum()
    }

    /// Whether the chunks of `columns` in row group `b` are held or being fetched (always
    /// true for a local file).
    pub(crate) fn prefetched(&self, b: usize, columns: &[usize]) -> bool {
        match self.input.remote_input() {
            Some(r) => self
                .chunk_ranges(b, columns)
                .iter()
                .all(|(k, _)| r.remote.claimed(*k)),
            None => true,
        }
    }

    /// Drops the fetched chunks of row group `b`.
    pub(crate) fn release(&self, b: usize) {
        if let Some(r) = self.input.remote_input() {
            r.remote.release(b);
        }
    }

    /// The statistics of column `col` in row group `b`.
    pub(crate) fn stats(&self, b: usize, col: usize) -> Option<&ChunkStats> {
        self.zones.row_group(b, col)
    }

    /// The statistics of column `col` in row group `b` if they state its exact smallest
    /// and largest values (see [`ParquetZones::exact_row_group`]).
    pub(crate) fn exact_stats(&self, b: usize, col: usize) -> Option<&ChunkStats> {
        self.zones.exact_row_group(b, col)
    }

    /// The Bloom filter of column `col` in row group `b`.
    pub(crate) fn members(&self, b: usize, col: usize) -> Option<&dyn Membership> {
        self.zones.members(b, col)
    }

    /// The rows of row group `b` where `filter` may be true by the page index; `None`
    /// without one.
    pub(crate) fn candidates(&self, b: usize, filter: &Bound) -> Option<Vec<Range<usize>>> {
        if !self.zones.has_page_index() {
            return None;
        }
        let parts = |c: usize| self.zones.pages(b, c);
        Some(candidate_rows(filter, self.block_rows(b), &parts))
    }

    pub(crate) fn schema(&self) -> SchemaRef {
        self.meta.schema().clone()
    }

    pub(crate) fn top_level(&self) -> &[usize] {
        &self.top
    }

    pub(crate) fn num_blocks(&self) -> usize {
        self.meta.metadata().num_row_groups()
    }

    pub(crate) fn block_rows(&self, b: usize) -> usize {
        self.meta
            .metadata()
            .row_groups()
            .get(b)
            .map_or(0, |g| g.num_rows().max(0) as usize)
    }

    /// Row group `b` (see [`crate::source::Source::block`]), only at `rows` if given
    /// (sorted, disjoint ranges): pages without such rows are not read when the file has
    /// an offset index. Columns are read when first asked for, page by page where the
    /// pages can be read in place; those of `dictionary` asked for as dictionaries are
    /// decoded by the parquet crate into dictionary arrays.
    pub(crate) fn block(
        &self,
        b: usize,
        dictionary: &[usize],
        rows: Option<&[Range<usize>]>,
    ) -> Result<BlockData<'_>> {
        let columns = self.meta.schema().fields().len();
        Ok(BlockData::Parquet(ParquetBlock {
            source: self,
            rg: b,
            rows: rows.map(<[_]>::to_vec),
            columns: (0..columns).map(|_| OnceCell::new()).collect(),
            dictionaries: (0..columns)
                .map(|c| dictionary.contains(&c).then(OnceCell::new))
                .collect(),
            counts: Cell::new(Counts::default()),
        }))
    }

    /// Column `col` of row group `b` at `rows` (all if `None`, else sorted, disjoint
    /// ranges) decoded by the `parquet` crate's Arrow reader, as a dictionary array when
    /// `dictionary` (see [`Self::dictionary_meta`]); with the stored bytes read.
    fn decode(
        &self,
        b: usize,
        col: usize,
        dictionary: bool,
        rows: Option<&[Range<usize>]>,
    ) -> Result<(ArrayRef, u64)> {
        let err = |e: &dyn std::fmt::Display| {
            Error::Parquet(format!(
                "{}: row group {b}, column {}: {e}",
                self.path.display(),
                self.meta.schema().field(col).name()
            ))
        };
        let schema_descr = self.meta.metadata().file_metadata().schema_descr();
        let mask = ProjectionMask::roots(schema_descr, [col]);
        let total = self.block_rows(b);
        let meta = dictionary.then(|| self.dictionary_meta(col)).flatten();
        let meta = meta.as_ref().unwrap_or(&self.meta);
        let selection =
            rows.map(|r| RowSelection::from_consecutive_ranges(r.iter().cloned(), total));
        if selection
            .as_ref()
            .is_some_and(|s| s.skipped_row_count() > 0)
        {
            self.check_repetition_levels(b, col)?;
        }
        // The page index's pages, whose headers the crate reads from there.
        if let Some(index) = meta.metadata().offset_index().and_then(|o| o.get(b)) {
            for leaf in self.leaves(col).into_iter().flatten() {
                let pages = index.get(leaf).map_or(&[][..], |o| o.page_locations());
                check_page_headers(&self.input, pages).map_err(|e| err(&e))?;
            }
        }
        // Several threads may decode row groups of one file at once: they read the mapping,
        // the file at explicit offsets, or the chunks fetched ahead (see `ParquetInput`).
        let batches = guarded(|| {
            row_group_reader(self.input.clone(), meta, b, mask, total, selection)?
                .map(|b| b.map_err(parquet::errors::ParquetError::from))
                .collect::<parquet::errors::Result<Vec<_>>>()
        })
        .map_err(|e| err(&e))?;
        let bytes = self.chunk_bytes(b, col, rows);
        let schema = match batches.first() {
            Some(first) => first.schema(),
            None => SchemaRef::new(meta.schema().project(&[col])?),
        };
        let batch = arrow_select::concat::concat_batches(&schema, &batches)?;
        let want = rows.map_or(total, |r| r.iter().map(ExactSizeIterator::len).sum());
        if batch.num_rows() != want {
            return Err(err(&format!(
                "decoded {} rows where the metadata promises {want}",
                batch.num_rows()
            )));
        }
        Ok((batch.column(0).clone(), bytes))
    }

    /// Column `col` of row group `b` at `rows` (all if `None`): its pages as Sift chunks
    /// when every page read is one `parquet_pages.rs` reads, else decoded; with the
    /// stored bytes read, and the data pages read and of them decoded to PLAIN first.
    fn read_column(
        &self,
        b: usize,
        col: usize,
        rows: Option<&[Range<usize>]>,
    ) -> Result<(ParquetColumn, u64, (u64, u64))> {
        let md = self.meta.metadata();
        let leaves = self.leaves(col).unwrap_or(0..0);
        let field = self.meta.schema().field(col);
        if self.pages_in_place(b, col) {
            let place = format!(
                "{}: row group {b}, column {}",
                self.path.display(),
                field.name()
            );
            let chunk = self.leaf_chunk(b, leaves.start, &place)?;
            let leaf = (b, leaves.start);
            if let Some(p) = PagedColumn::read(chunk, md, leaf, field, rows, place)? {
                // Its packed pages are counted as they are decoded (`account`).
                let pages = (p.pages() as u64, 0);
                return Ok((
                    ParquetColumn::Paged(p),
                    self.chunk_bytes(b, col, rows),
                    pages,
                ));
            }
        }
        if let Some(list) = self.read_list(b, col, rows, None)? {
            let pages = (list.pages, list.unpacked);
            return Ok((ParquetColumn::List(list.array), list.bytes, pages));
        }
        let (array, bytes) = self.decode(b, col, false, rows)?;
        Ok((ParquetColumn::Decoded(array), bytes, (0, 0)))
    }

    /// List column `col` of row group `b` at the rows asked for (`rows`, all if `None`),
    /// of them only those set in `sel` if given, read in place by `parquet_lists.rs`;
    /// `None` when the column is not a list it reads.
    fn read_list(
        &self,
        b: usize,
        col: usize,
        rows: Option<&[Range<usize>]>,
        sel: Option<&Bitmap>,
    ) -> Result<Option<crate::parquet_lists::ListRead>> {
        if !self.list_in_place(b, col) {
            return Ok(None);
        }
        let field = self.meta.schema().field(col);
        let place = format!(
            "{}: row group {b}, column {}",
            self.path.display(),
            field.name()
        );
        let leaf = self.leaves(col).map_or(0, |l| l.start);
        let chunk = self.leaf_chunk(b, leaf, &place)?;
        let total = self.block_rows(b);
        let all = 0..total;
        let asked = rows.unwrap_or(std::slice::from_ref(&all));
        let wanted = crate::parquet_pages::spread_selection(total, asked, sel, 0);
        crate::parquet_lists::read_list(
            chunk,
            self.meta.metadata(),
            (b, leaf),
            field,
            &wanted,
            &place,
        )
    }

    /// Whether column `col` of row group `b` is a list whose pages `parquet_lists.rs`
    /// reads in place.
    fn list_in_place(&self, b: usize, col: usize) -> bool {
        let md = self.meta.metadata();
        let (Some(leaves), Some(group)) = (self.leaves(col), md.row_groups().get(b)) else {
            return false;
        };
        leaves.len() == 1
            && crate::parquet_lists::reads_list(
                &md.file_metadata().schema_descr().column(leaves.start),
                self.meta.schema().field(col),
                group.column(leaves.start).encodings(),
            )
    }

    /// Checks the repetition levels of column `col`'s repeated leaves in row group `b`
    /// before a selection is pushed into the `parquet` crate's reader of them (see
    /// [`crate::parquet_pages::check_repetition_levels`]).
    fn check_repetition_levels(&self, b: usize, col: usize) -> Result<()> {
        let md = self.meta.metadata();
        let Some(leaves) = self.leaves(col) else {
            return Ok(());
        };
        let schema = md.file_metadata().schema_descr();
        for leaf in leaves.filter(|&l| schema.column(l).max_rep_level() > 0) {
            let place = format!(
                "{}: row group {b}, column {}",
                self.path.display(),
                schema.column(leaf).path()
            );
            let chunk = self.leaf_chunk(b, leaf, &place)?;
            crate::parquet_pages::check_repetition_levels(chunk, md, (b, leaf), &place)?;
        }
        Ok(())
    }

    /// The bytes of leaf column `leaf`'s chunk in row group `b`, with the file offset
    /// they start at; `place` names the column in errors.
    fn leaf_chunk(&self, b: usize, leaf: usize, place: &str) -> Result<(u64, bytes::Bytes)> {
        let chunk = self
            .meta
            .metadata()
            .row_groups()
            .get(b)
            .map(|g| g.column(leaf))
            .ok_or_else(|| Error::Parquet(format!("{place}: no such row group")))?;
        let Some(range) = self.input.chunk_range(chunk) else {
            return Err(Error::Parquet(format!(
                "{place}: the column chunk (offset {}, {} bytes) lies outside the file of {} bytes",
                chunk.data_page_offset(),
                chunk.compressed_size(),
                self.input.len()
            )));
        };
        let bytes = self
            .input
            .bytes(range.start, range.end - range.start)
            .map_err(|e| Error::Parquet(format!("{place}: {e}")))?;
        Ok((range.start, bytes))
    }

    /// Whether the pages of column `col` in row group `b` are read in place
    /// (`parquet_pages.rs`), rather than decoded by the `parquet` crate.
    fn pages_in_place(&self, b: usize, col: usize) -> bool {
        let md = self.meta.metadata();
        let (Some(leaves), Some(group)) = (self.leaves(col), md.row_groups().get(b)) else {
            return false;
        };
        leaves.len() == 1
            && crate::parquet_pages::reads_in_place(
                &md.file_metadata().schema_descr().column(leaves.start),
                self.meta.schema().field(col),
                group.column(leaves.start).encodings(),
            )
    }

    /// Stored bytes of column `col` in row group `b` that a read of `rows` fetches: with
    /// an offset index, the dictionary page and the pages holding those rows; otherwise
    /// the whole column chunk.
    fn chunk_bytes(&self, b: usize, col: usize, rows: Option<&[Range<usize>]>) -> u64 {
        let md = self.meta.metadata();
        let Some(leaves) = self.leaves(col) else {
            return 0;
        };
        let mut total = 0u64;
        for leaf in leaves {
            let Some(chunk) = md.row_groups().get(b).map(|g| g.column(leaf)) else {
                continue;
            };
            let whole = u64::try_from(chunk.compressed_size()).unwrap_or(0);
            let index = md.offset_index().and_then(|o| o.get(b)?.get(leaf));
            let (Some(rows), Some(index)) = (rows, index) else {
                total += whole;
                continue;
            };
            let pages = index.page_locations();
            let Some(start) = crate::parquet_input::chunk_start(chunk) else {
                continue;
            };
            let first_page = pages.first().map_or(start, |p| p.offset.max(0) as u64);
            // The dictionary page (if any) lies before the first data page.
            total += first_page.saturating_sub(start).min(whole);
            for (i, p) in pages.iter().enumerate() {
                let lo = p.first_row_index.max(0) as usize;
                let hi = pages
                    .get(i + 1)
                    .map_or(usize::MAX, |n| n.first_row_index.max(0) as usize);
                if rows.iter().any(|r| r.start < hi && lo < r.end) {
                    total += p.compressed_page_size.max(0) as u64;
                }
            }
        }
        total
    }

    /// The Parquet leaf columns of schema column `col` (one for the flat types the scan
    /// reads).
    fn leaves(&self, col: usize) -> Option<Range<usize>> {
        let descr = self.meta.parquet_schema();
        let leaves: Vec<usize> = (0..descr.num_columns())
            .filter(|&l| descr.get_column_root_idx(l) == col)
            .collect();
        Some(*leaves.first()?..*leaves.last()? + 1)
    }

    /// Reader metadata whose schema asks for column `col` as `Dictionary(Int32, type)` —
    /// the type `read_dictionary` returns on Sift files ([`sift_encoding::dictionary_type`])
    /// — when the Parquet reader decodes its type into dictionaries
    /// ([`crate_keeps_dictionary`]). `None` when the column does not
    /// qualify or the reader refuses the schema: the column is then read plain and
    /// dictionary-encoded after decoding.
    fn dictionary_meta(&self, col: usize) -> Option<ArrowReaderMetadata> {
        let schema = self.meta.schema();
        let field = schema.fields().get(col)?;
        if !crate_keeps_dictionary(field.data_type()) {
            return None;
        }
        let mut fields: Vec<_> = schema.fields().iter().cloned().collect();
        fields[col] = field
            .as_ref()
            .clone()
            .with_data_type(sift_encoding::dictionary_type(field.data_type()))
            .into();
        let hinted = SchemaRef::new(Schema::new_with_metadata(fields, schema.metadata().clone()));
        let options = ArrowReaderOptions::new().with_schema(hinted);
        ArrowReaderMetadata::try_new(self.meta.metadata().clone(), options).ok()
    }
}

/// `footer` with the file's page index added, when it has one whose Thrift passes
/// [`check_thrift`] and that the `parquet` crate decodes; else `footer`.
fn with_page_index(
    input: &ParquetInput,
    footer: ParquetMetaData,
) -> parquet::errors::Result<ParquetMetaData> {
    let indexes: Vec<_> = footer
        .row_groups()
        .iter()
        .flat_map(|g| g.columns())
        .flat_map(index_structs)
        .collect();
    if indexes.is_empty() {
        return Ok(footer);
    }
    // Writers store the indexes together before the footer: read at once (one request
    // for an object), each checked inside its own bytes.
    let ranges: Option<Vec<_>> = indexes
        .iter()
        .map(|&((at, len), what, bools)| {
            let start = u64::try_from(at).ok()?;
            let end = start.checked_add(u64::try_from(len).ok()?)?;
            Some((start..end, what, bools))
        })
        .collect();
    let Some(ranges) = ranges else {
        return Ok(footer);
    };
    let lo = ranges.iter().map(|(r, ..)| r.start).min().unwrap_or(0);
    let hi = ranges.iter().map(|(r, ..)| r.end).max().unwrap_or(0);
    let Ok(bytes) = input.bytes(lo, hi - lo) else {
        return Ok(footer);
    };
    let checked = ranges.iter().all(|(r, what, bools)| {
        let inside = bytes.get((r.start - lo) as usize..(r.end - lo) as usize);
        inside.is_some_and(|b| check_thrift(b, r.start, what, *bools).is_ok())
    });
    if !checked {
        return Ok(footer);
    }
    let mut reader = ParquetMetaDataReader::new_with_metadata(footer)
        .with_page_index_policy(PageIndexPolicy::Optional);
    let held = Held {
        input,
        start: lo,
        bytes,
    };
    reader
        .read_page_indexes(&held)
        .and_then(|()| reader.finish())
        // The reader took the footer: it is parsed again, without the index.
        .or_else(|_| ParquetMetaDataReader::new().parse_and_finish(input))
}

/// Reader options that type the columns by the Parquet schema alone, ignoring the
/// embedded Arrow schema.
fn plain_schema() -> ArrowReaderOptions {
    ArrowReaderOptions::new().with_skip_arrow_metadata(true)
}

/// Whether the offset index (if any) agrees with the column chunks: every chunk's pages
/// lie inside it in order, and their first rows rise from 0 within the row group. The
/// `parquet` crate trusts these locations (a page before its chunk's start makes its page
/// reader panic), so a file whose index does not fit is read without its page index: it
/// only costs the pruning of pages.
fn offset_index_fits(md: &ParquetMetaData) -> bool {
    let Some(index) = md.offset_index() else {
        return true;
    };
    index.len() == md.num_row_groups()
        && md.row_groups().iter().zip(index).all(|(group, columns)| {
            columns.len() == group.num_columns()
                && group.columns().iter().zip(columns).all(|(chunk, pages)| {
                    let start = crate::parquet_input::chunk_start(chunk);
                    let size = u64::try_from(chunk.compressed_size()).ok();
                    let (Some(start), Some(size)) = (start, size) else {
                        return false;
                    };
                    let end = start.saturating_add(size);
                    let (mut at, mut row) = (start, None::<i64>);
                    pages.page_locations().iter().all(|p| {
                        let fits = u64::try_from(p.offset).is_ok_and(|o| o >= at)
                            && p.compressed_page_size > 0
                            && p.first_row_index < group.num_rows()
                            && row.map_or(p.first_row_index == 0, |r| p.first_row_index > r);
                        at = (p.offset as u64).saturating_add(p.compressed_page_size as u64);
                        row = Some(p.first_row_index);
                        fits && at <= end
                    })
                })
        })
}

/// Runs `f`, a call into the `parquet` crate's decoders, turning a panic into an error:
/// some of them panic on damaged pages (an overflowing length in a DELTA_BYTE_ARRAY page,
/// for one) where they should return one.
pub(crate) fn guarded<T>(
    f: impl FnOnce() -> parquet::errors::Result<T>,
) -> std::result::Result<T, String> {
    match crate::error::catch(f) {
        Ok(r) => r.map_err(|e| e.to_string()),
        Err(p) => Err(format!(
            "the parquet decoder failed on damaged data ({})",
            p.downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| p.downcast_ref::<&str>().copied())
                .unwrap_or("panic")
        )),
    }
}

/// A row group whose columns are read when first asked for.
pub(crate) struct ParquetBlock<'a> {
    source: &'a ParquetSource,
    rg: usize,
    /// The rows read (all if `None`).
    rows: Option<Vec<Range<usize>>>,
    /// Per schema column, once read.
    columns: Vec<OnceCell<ParquetColumn>>,
    /// Per schema column asked for as a dictionary (`None`: not asked so), once read.
    dictionaries: Vec<Option<OnceCell<ArrayRef>>>,
    /// What reading columns did so far.
    counts: Cell<Counts>,
}

/// What reading a row group's columns did.
#[derive(Clone, Copy, Default)]
struct Counts {
    bytes: u64,
    pages_in_place: u64,
    pages_unpacked: u64,
    chunks_decoded: u64,
}

/// Whether the parquet crate's Arrow reader decodes a column of type `dt` into a
/// dictionary array, keeping its dictionary pages (strings and binary with offsets; not
/// views).
fn crate_keeps_dictionary(dt: &DataType) -> bool {
    matches!(
        dt,
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Binary | DataType::LargeBinary
    )
}

/// A column of a row group as read.
enum ParquetColumn {
    Paged(PagedColumn),
    Decoded(ArrayRef),
    /// A list column read in place (`parquet_lists.rs`).
    List(ArrayRef),
}

/// Rows the `parquet` crate decodes at a time. Its buffers grow as a batch is read (by
/// doubling, each step a copy into fresh memory), so a whole row group in one batch
/// copies its values several times; smaller batches reuse memory and are joined once.
const DECODE_BATCH_ROWS: usize = 65_536;

/// A reader of the rows `selection` (default: all `total`) of row group `b`'s columns
/// `mask`, decoded by the `parquet` crate.
fn row_group_reader<T: parquet::file::reader::ChunkReader + 'static>(
    input: T,
    meta: &ArrowReaderMetadata,
    b: usize,
    mask: ProjectionMask,
    total: usize,
    selection: Option<RowSelection>,
) -> parquet::errors::Result<parquet::arrow::arrow_reader::ParquetRecordBatchReader> {
    let mut builder = ParquetRecordBatchReaderBuilder::new_with_metadata(input, meta.clone())
        .with_row_groups(vec![b])
        .with_projection(mask)
        .with_batch_size(total.clamp(1, DECODE_BATCH_ROWS));
    if let Some(selection) = selection {
        builder = builder.with_row_selection(selection);
    }
    builder.build()
}

impl ParquetBlock<'_> {
    /// The `[min, max]` pair of column `col` over the `rows` rows of the row group, from its
    /// statistics alone when they state the exact extremes (see
    /// [`ParquetSource::exact_stats`]); `None` when they do not, when the column is not an
    /// integer, date, time, timestamp or decimal, or when only some rows are read.
    pub(crate) fn extremes_of_stats(&self, col: usize, rows: usize) -> Result<Option<ArrayRef>> {
        let (None, Some(stats)) = (&self.rows, self.source.exact_stats(self.rg, col)) else {
            return Ok(None);
        };
        let field = self.source.meta.schema().field(col);
        sift_encoding::extremes_of_stats(field.data_type(), stats, rows).map_err(|e| {
            Error::Parquet(format!(
                "{}: row group {}, column {}: {e}",
                self.source.path.display(),
                self.rg,
                field.name()
            ))
        })
    }

    /// Column `col`, read on first use.
    pub(crate) fn column(&self, col: usize) -> Result<ColumnData<'_>> {
        let cell = self
            .columns
            .get(col)
            .ok_or_else(|| Error::Invalid(format!("no column {col}")))?;
        if cell.get().is_none() {
            let (column, bytes, (pages, unpacked)) =
                self.source
                    .read_column(self.rg, col, self.rows.as_deref())?;
            let mut c = self.counts.get();
            c.bytes += bytes;
            c.pages_in_place += pages;
            c.pages_unpacked += unpacked;
            if let ParquetColumn::Decoded(_) = column {
                c.chunks_decoded += 1;
            }
            self.counts.set(c);
            let _ = cell.set(column);
        }
        match cell.get() {
            Some(ParquetColumn::Paged(p)) => Ok(ColumnData::Paged(p)),
            Some(ParquetColumn::Decoded(a) | ParquetColumn::List(a)) => {
                Ok(ColumnData::Decoded(a.clone()))
            }
            None => Err(Error::Invalid(format!("column {col} was not read"))),
        }
    }

    /// Column `col` as a dictionary array where the scan asked for it so: strings and
    /// binary with offsets decoded by the parquet crate, which keeps their dictionary
    /// pages; views whose pages are read in place as each page's codes over the chunk's
    /// dictionary (the crate would decode every string, to be dictionary-encoded again);
    /// anything else as [`column`](Self::column) reads it (dictionary-encoded by the
    /// caller).
    pub(crate) fn dictionary_column(&self, col: usize) -> Result<ColumnData<'_>> {
        let Some(Some(cell)) = self.dictionaries.get(col) else {
            return self.column(col);
        };
        let field = self.source.meta.schema().fields().get(col);
        if field.is_some_and(|f| !crate_keeps_dictionary(f.data_type()))
            && self.source.pages_in_place(self.rg, col)
        {
            return self.column(col);
        }
        if let Some(a) = cell.get() {
            return Ok(ColumnData::Decoded(a.clone()));
        }
        let (array, bytes) = self
            .source
            .decode(self.rg, col, true, self.rows.as_deref())?;
        let mut c = self.counts.get();
        c.bytes += bytes;
        c.chunks_decoded += 1;
        self.counts.set(c);
        Ok(ColumnData::Decoded(cell.get_or_init(|| array).clone()))
    }

    /// Column `col` at the rows set in `sel` (over the rows read), decoded by the `parquet`
    /// crate with the selection pushed into its reader, when the column is not read yet
    /// and its pages are not read in place (nested columns, other encodings): pages
    /// holding no selected row are skipped where the file has an offset index, and the
    /// values (and lists) of unselected rows are skipped, not assembled. `None` when the
    /// column is read otherwise, or the selection is too dense for skipping to pay (the
    /// reader's cost grows with the number of selected runs).
    pub(crate) fn selected(&self, col: usize, sel: &Bitmap) -> Result<Option<ArrayRef>> {
        let unread = self.columns.get(col).is_some_and(|c| c.get().is_none());
        if !unread || self.source.pages_in_place(self.rg, col) {
            return Ok(None);
        }
        if let Some(list) = self
            .source
            .read_list(self.rg, col, self.rows.as_deref(), Some(sel))?
        {
            let mut c = self.counts.get();
            c.bytes += list.bytes;
            c.pages_in_place += list.pages;
            c.pages_unpacked += list.unpacked;
            self.counts.set(c);
            return Ok(Some(list.array));
        }
        // Counting the runs stops once they are too many.
        let most = sel.len() / SKIP_RUN_ROWS;
        let sparse = sel.count_ones() <= most || sel.runs().take(most + 1).count() <= most;
        if !sparse {
            return Ok(None);
        }
        let total = self.source.block_rows(self.rg);
        let all = 0..total;
        let asked = self.rows.as_deref().unwrap_or(std::slice::from_ref(&all));
        let rows = selected_ranges(asked, sel);
        let (array, bytes) = self.source.decode(self.rg, col, false, Some(&rows))?;
        let mut c = self.counts.get();
        c.bytes += bytes;
        c.chunks_decoded += 1;
        self.counts.set(c);
        Ok(Some(array))
    }

    /// Adds what reading columns did to `stats`.
    pub(crate) fn account(&self, stats: &mut crate::stats::ScanStats) {
        let c = self.counts.get();
        let unpacked: usize = (self.columns.iter())
            .filter_map(|c| match c.get() {
                Some(ParquetColumn::Paged(p)) => Some(p.unpacked()),
                _ => None,
            })
            .sum();
        stats.bytes_read += c.bytes;
        stats.parquet_pages_in_place += c.pages_in_place;
        stats.parquet_pages_unpacked += c.pages_unpacked + unpacked as u64;
        stats.parquet_chunks_decoded += c.chunks_decoded;
    }
}

/// A selection pushed into the `parquet` crate's reader pays when its selected runs
/// (or selected rows) average at least this many rows of the block apart: each run costs
/// the reader a skip and a read call, dearer than decoding a few values and filtering.
/// Measured on a list column of 16M rows (0–8 elements each) at random selections: about
/// 0.5 µs per run over a fixed 240 ms, against 700–750 ms to decode it all and filter, so
/// the two meet near one row in 16.
const SKIP_RUN_ROWS: usize = 16;

/// The rows of the row group at the bits set in `sel`, whose bits are the rows of `asked`
/// (sorted, disjoint ranges of the row group) in order: sorted, disjoint ranges.
fn selected_ranges(asked: &[Range<usize>], sel: &Bitmap) -> Vec<Range<usize>> {
    let mut out: Vec<Range<usize>> = Vec::new();
    // `asked[i]` holds the bits `offset..offset + asked[i].len()`.
    let (mut i, mut offset) = (0usize, 0usize);
    for (start, len) in sel.runs() {
        let (mut at, end) = (start, start + len);
        while at < end {
            while i < asked.len() && offset + asked[i].len() <= at {
                offset += asked[i].len();
                i += 1;
            }
            let Some(range) = asked.get(i) else {
                return out;
            };
            let take = (end - at).min(offset + range.len() - at);
            let from = range.start + (at - offset);
            match out.last_mut() {
                Some(last) if last.end == from => last.end += take,
                _ => out.push(from..from + take),
            }
            at += take;
        }
    }
    out
}
