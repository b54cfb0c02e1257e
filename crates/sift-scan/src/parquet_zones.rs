//! Parquet metadata as zone maps (feature `parquet`): row-group statistics, page indexes
//! (column and offset index) and split-block Bloom filters, translated into the
//! [`ChunkStats`], [`PartZone`]s and [`Membership`] tests that `prune.rs` judges Sift
//! blocks by, so that one pruning logic serves both formats.
//!
//! Row-group statistics that state the exact extremes also answer `MIN` and `MAX` over a
//! whole row group (`extremes_only` scans), as a Sift chunk's statistics do.
//!
//! Everything is computed on first use (statistics per column over all row groups, page
//! zones per column and row group, Bloom filters per column chunk when an equality leaf
//! asks) and kept for the life of the open file. Statistics the file does not state, or
//! states inconsistently, prune nothing: an unknown null count of a nullable column, a
//! NaN bound, an offset index whose pages do not tile the row group.

use std::ops::Range;
use std::sync::OnceLock;

use arrow_array::{Array, ArrayRef, BooleanArray, UInt64Array};
use arrow_schema::DataType;
use parquet::arrow::arrow_reader::ArrowReaderMetadata;
use parquet::arrow::arrow_reader::statistics::StatisticsConverter;
use parquet::basic::Type as PhysicalType;
use parquet::bloom_filter::Sbbf;
use sift_encoding::{ChunkStats, arrow_bound};

use crate::parquet_input::{Held, ParquetInput, check_thrift};
use crate::parquet_thrift::BoolLists;
use crate::prune::{Membership, PartZone, Probe};

/// The order in which the writer declares leaf column `leaf` sorted over row group
/// `group` (`Some(false)`: ascending, `Some(true)`: descending): one of its
/// `sorting_columns`, after only columns that hold one value there (the rows are ordered
/// by the whole list, so a later column is only ordered where the ones before it tie).
/// Trusted as DataFusion trusts it; the SQL scan checks the rows of a column it declares
/// sorted as they pass.
fn sorted_in(group: &parquet::file::metadata::RowGroupMetaData, leaf: usize) -> Option<bool> {
    for c in group.sorting_columns().into_iter().flatten() {
        let at = usize::try_from(c.column_idx).ok()?;
        if at == leaf {
            return Some(c.descending);
        }
        if !constant(group, at) {
            return None;
        }
    }
    None
}

/// Whether leaf column `leaf` holds one value and no null in row group `group`, by its
/// exact statistics (equal bounds; not for floats, whose bounds leave NaN out).
fn constant(group: &parquet::file::metadata::RowGroupMetaData, leaf: usize) -> bool {
    use parquet::basic::Type;
    let Some(stats) = group.columns().get(leaf).and_then(|c| c.statistics()) else {
        return false;
    };
    let float = matches!(stats.physical_type(), Type::FLOAT | Type::DOUBLE);
    let (lo, hi) = (stats.min_bytes_opt(), stats.max_bytes_opt());
    !float
        && stats.null_count_opt() == Some(0)
        && stats.min_is_exact()
        && stats.max_is_exact()
        && lo.is_some()
        && lo == hi
}

/// A row group's statistics of one column.
#[derive(Clone)]
struct RowGroupZone {
    stats: ChunkStats,
    /// Whether `stats`' bounds are values of the column, not only bounds of them.
    exact: bool,
}

/// The zone maps of one Parquet file.
pub(crate) struct ParquetZones {
    meta: ArrowReaderMetadata,
    input: ParquetInput,
    /// The Parquet leaf column of each schema column (`None`: no statistics).
    leaves: Vec<Option<usize>>,
    /// Per schema column: the statistics of each row group.
    row_groups: Vec<OnceLock<Vec<Option<RowGroupZone>>>>,
    /// Per schema column: the page zones of each row group (`None`: no page index).
    pages: Vec<OnceLock<Vec<Option<Vec<PartZone>>>>>,
    /// Per row group: a Bloom filter slot per schema column.
    blooms: Vec<OnceLock<Vec<BloomSlot>>>,
}

impl ParquetZones {
    pub(crate) fn new(meta: &ArrowReaderMetadata, input: ParquetInput) -> ParquetZones {
        let schema = meta.schema();
        let descr = meta.parquet_schema();
        let leaves = schema
            .fields()
            .iter()
            .map(|f| {
                StatisticsConverter::try_new(f.name(), schema, descr)
                    .ok()
                    .and_then(|c| c.parquet_column_index())
            })
            .collect();
        let columns = schema.fields().len();
        ParquetZones {
            meta: meta.clone(),
            input,
            leaves,
            row_groups: (0..columns).map(|_| OnceLock::new()).collect(),
            pages: (0..columns).map(|_| OnceLock::new()).collect(),
            blooms: (0..meta.metadata().num_row_groups())
                .map(|_| OnceLock::new())
                .collect(),
        }
    }

    /// Whether the file has a page index to prune pages with.
    pub(crate) fn has_page_index(&self) -> bool {
        let md = self.meta.metadata();
        md.column_index().is_some() && md.offset_index().is_some()
    }

    /// The statistics of column `col` in row group `rg`.
    pub(crate) fn row_group(&self, rg: usize, col: usize) -> Option<&ChunkStats> {
        Some(&self.row_group_zone(rg, col)?.stats)
    }

    /// The statistics of column `col` in row group `rg` when they state its exact smallest
    /// and largest values (as the `parquet` crate reads the file: integer bounds always
    /// are, others when the file says so; never bounds in the deprecated fields) and its
    /// null count, or when every value is null; such statistics answer `MIN` and `MAX`
    /// over the whole row group without reading it.
    pub(crate) fn exact_row_group(&self, rg: usize, col: usize) -> Option<&ChunkStats> {
        let zone = self.row_group_zone(rg, col)?;
        zone.exact.then_some(&zone.stats)
    }

    fn row_group_zone(&self, rg: usize, col: usize) -> Option<&RowGroupZone> {
        let all = self.row_groups.get(col)?;
        all.get_or_init(|| self.row_group_stats(col))
            .get(rg)?
            .as_ref()
    }

    /// The zones of the pages of column `col` in row group `rg`.
    pub(crate) fn pages(&self, rg: usize, col: usize) -> Option<&[PartZone]> {
        let all = self.pages.get(col)?;
        let all = all.get_or_init(|| {
            (0..self.meta.metadata().num_row_groups())
                .map(|g| self.page_zones(g, col))
                .collect()
        });
        all.get(rg)?.as_deref()
    }

    /// The Bloom filter of column `col` in row group `rg` as a membership test, read from
    /// the file on its first probe; `None` if the column has none or its type's values
    /// cannot be probed exactly.
    pub(crate) fn members(&self, rg: usize, col: usize) -> Option<&dyn Membership> {
        let slots = self.blooms.get(rg)?.get_or_init(|| {
            (0..self.leaves.len())
                .map(|c| BloomSlot {
                    key: self.bloom_key(rg, c),
                    input: self.input.clone(),
                    meta: self.meta.clone(),
                    rg,
                    leaf: self.leaves.get(c).copied().flatten().unwrap_or(0),
                    filter: OnceLock::new(),
                })
                .collect()
        });
        let slot = slots.get(col)?;
        slot.key.as_ref()?;
        Some(slot)
    }

    fn converter(&self, col: usize) -> Option<StatisticsConverter<'_>> {
        let field = self.meta.schema().fields().get(col)?;
        let leaf = self.leaves.get(col).copied().flatten()?;
        let converter =
            StatisticsConverter::from_column_index(leaf, field, self.meta.parquet_schema()).ok()?;
        Some(converter.with_missing_null_counts_as_zero(false))
    }

    /// Zone maps of every row group for column `col`.
    fn row_group_stats(&self, col: usize) -> Vec<Option<RowGroupZone>> {
        let row_groups = self.meta.metadata().row_groups();
        let mut out = vec![None; row_groups.len()];
        let Some(conv) = self.converter(col) else {
            return out;
        };
        let (Ok(mins), Ok(maxes), Ok(nulls)) = (
            conv.row_group_mins(row_groups),
            conv.row_group_maxes(row_groups),
            conv.row_group_null_counts(row_groups),
        ) else {
            return out;
        };
        let (min_exact, max_exact) = (
            conv.row_group_is_min_value_exact(row_groups).ok(),
            conv.row_group_is_max_value_exact(row_groups).ok(),
        );
        // Unknown exactness: bounds only.
        let exact = |flags: &Option<BooleanArray>, i: usize| {
            flags
                .as_ref()
                .is_some_and(|f| i < f.len() && f.is_valid(i) && f.value(i))
        };
        // Bounds in the deprecated `min`/`max` fields, which old writers filled in signed
        // order whatever the column's type: bounds only.
        let leaf = self.leaves.get(col).copied().flatten();
        let current = |g: &parquet::file::metadata::RowGroupMetaData| {
            let stats = leaf.and_then(|l| g.columns().get(l)?.statistics());
            stats.is_some_and(|s| !s.is_min_max_deprecated())
        };
        for (i, (slot, group)) in out.iter_mut().zip(row_groups).enumerate() {
            *slot = self
                .stats_at(col, &mins, &maxes, &nulls, i)
                .map(|mut stats| {
                    let order = leaf.and_then(|l| sorted_in(group, l));
                    (stats.sorted, stats.descending) = (order == Some(false), order == Some(true));
                    RowGroupZone {
                        // A chunk of nulls only has no bounds, and needs none.
                        exact: (exact(&min_exact, i) && exact(&max_exact, i) && current(group))
                            || i64::try_from(stats.null_count) == Ok(group.num_rows()),
                        stats,
                    }
                });
        }
        out
    }

    /// The zone map of element `i` of statistics arrays (a row group's or a page's); not
    /// known sorted.
    fn stats_at(
        &self,
        col: usize,
        mins: &ArrayRef,
        maxes: &ArrayRef,
        nulls: &UInt64Array,
        i: usize,
    ) -> Option<ChunkStats> {
        let field = self.meta.schema().field(col);
        let null_count = match (nulls.is_valid(i), field.is_nullable()) {
            (true, _) if i < nulls.len() => nulls.value(i),
            // A required column has no nulls whatever the statistics say.
            (_, false) => 0,
            // Unknown nulls: nothing about the chunk can be proved.
            (_, true) => return None,
        };
        let is_float = matches!(
            field.data_type(),
            DataType::Float16 | DataType::Float32 | DataType::Float64
        );
        // NaN never appears in Parquet bounds, and the statistics this `parquet` version
        // reads carry no NaN count: a float column may hold NaN.
        let has_nan = is_float;
        Some(ChunkStats {
            null_count,
            min: arrow_bound(mins.as_ref(), i, false),
            max: arrow_bound(maxes.as_ref(), i, true),
            has_nan,
            sorted: false,
            descending: false,
        })
    }

    /// The page zones of column `col` in row group `rg`, from the column index (bounds,
    /// null counts) and the offset index (each page's first row).
    fn page_zones(&self, rg: usize, col: usize) -> Option<Vec<PartZone>> {
        let md = self.meta.metadata();
        let (columns, offsets) = (md.column_index()?, md.offset_index()?);
        let leaf = self.leaves.get(col).copied().flatten()?;
        columns.get(rg)?.get(leaf)?;
        let rows = usize::try_from(md.row_groups().get(rg)?.num_rows()).ok()?;
        let ranges = page_rows(
            offsets
                .get(rg)?
                .get(leaf)?
                .page_locations()
                .iter()
                .map(|p| p.first_row_index),
            rows,
        )?;
        let conv = self.converter(col)?;
        let mins = conv.data_page_mins(columns, offsets, [rg].iter()).ok()?;
        let maxes = conv.data_page_maxes(columns, offsets, [rg].iter()).ok()?;
        let nulls = conv
            .data_page_null_counts(columns, offsets, [rg].iter())
            .ok()?;
        if [mins.len(), maxes.len(), nulls.len()] != [ranges.len(); 3] {
            return None;
        }
        let zones = ranges.into_iter().enumerate().map(|(i, rows)| PartZone {
            stats: self.stats_at(col, &mins, &maxes, &nulls, i),
            rows,
        });
        Some(zones.collect())
    }

    /// How values of column `col` are hashed into its Bloom filter in row group `rg`, or
    /// `None` when it has no filter the file can justify reading, or its values' hashes
    /// are not determined by the Arrow value alone (floats, decimals, booleans).
    fn bloom_key(&self, rg: usize, col: usize) -> Option<BloomKey> {
        let leaf = self.leaves.get(col).copied().flatten()?;
        let chunk = self
            .meta
            .metadata()
            .row_groups()
            .get(rg)?
            .columns()
            .get(leaf)?;
        let offset = u64::try_from(chunk.bloom_filter_offset()?).ok()?;
        // Only filters of a stated length inside the file are read: a filter's header
        // alone could claim any size.
        let length = u64::try_from(chunk.bloom_filter_length()?).ok()?;
        let file_len = self.input.len();
        if offset.checked_add(length)? > file_len {
            return None;
        }
        let physical = self.meta.parquet_schema().column(leaf).physical_type();
        let dt = self.meta.schema().field(col).data_type();
        use DataType::*;
        match (physical, dt) {
            (PhysicalType::INT32, Int8 | Int16 | Int32 | UInt8 | UInt16 | UInt32 | Date32)
            | (PhysicalType::INT32, Time32(_)) => Some(BloomKey::Int32),
            (PhysicalType::INT64, Int64 | UInt64 | Date64 | Time64(_) | Timestamp(..))
            | (PhysicalType::INT64, Duration(_)) => Some(BloomKey::Int64),
            (
                PhysicalType::BYTE_ARRAY,
                Utf8 | LargeUtf8 | Utf8View | Binary | LargeBinary | BinaryView,
            )
            | (PhysicalType::FIXED_LEN_BYTE_ARRAY, FixedSizeBinary(_)) => Some(BloomKey::Bytes),
            _ => None,
        }
    }
}

/// The row range of each page, from the pages' first rows; `None` unless they start at
/// row 0, increase strictly and stay inside the row group.
fn page_rows(firsts: impl Iterator<Item = i64>, rows: usize) -> Option<Vec<Range<usize>>> {
    let firsts: Vec<usize> = firsts
        .map(|f| usize::try_from(f).ok())
        .collect::<Option<_>>()?;
    if firsts.first() != Some(&0) || firsts.last().is_some_and(|&l| l >= rows.max(1)) {
        return None;
    }
    let mut ends = firsts.iter().skip(1).copied().chain([rows]);
    let ranges: Vec<Range<usize>> = firsts
        .iter()
        .map(|&start| start..ends.next().unwrap_or(rows))
        .collect();
    ranges.iter().all(|r| r.start < r.end).then_some(ranges)
}

/// How a probe is hashed: as the column's physical Parquet value.
#[derive(Clone, Copy)]
enum BloomKey {
    Int32,
    Int64,
    Bytes,
}

/// One column chunk's Bloom filter, read on its first probe.
struct BloomSlot {
    key: Option<BloomKey>,
    input: ParquetInput,
    meta: ArrowReaderMetadata,
    rg: usize,
    leaf: usize,
    filter: OnceLock<Option<Sbbf>>,
}

impl BloomSlot {
    /// The filter, read once; one that does not read prunes nothing (the column's pages,
    /// read in full, report the damage).
    fn filter(&self) -> Option<&Sbbf> {
        self.filter
            .get_or_init(|| {
                let md = self.meta.metadata();
                let chunk = md.row_groups().get(self.rg)?.columns().get(self.leaf)?;
                // The filter's length is stated and inside the file (`bloom_key`): read
                // once, its header checked, then decoded from those bytes.
                let start = u64::try_from(chunk.bloom_filter_offset()?).ok()?;
                let length = u64::try_from(chunk.bloom_filter_length()?).ok()?;
                let bytes = self.input.bytes(start, length).ok()?;
                check_thrift(&bytes, start, "Bloom filter header", BoolLists::None).ok()?;
                let held = Held {
                    input: &self.input,
                    start,
                    bytes,
                };
                Sbbf::read_from_column_chunk(chunk, &held).ok().flatten()
            })
            .as_ref()
    }
}

impl Membership for BloomSlot {
    fn may_contain(&self, probe: Probe<'_>) -> bool {
        let (Some(key), Some(filter)) = (self.key, self.filter()) else {
            return true;
        };
        match (key, probe) {
            (BloomKey::Int32, Probe::Int(v)) => match (i32::try_from(v), u32::try_from(v)) {
                (Ok(v), _) => filter.check(&v),
                // Unsigned 32-bit values are stored as the same bits in an INT32.
                (_, Ok(v)) => filter.check(&(v as i32)),
                // No value of the column can equal it.
                _ => false,
            },
            (BloomKey::Int64, Probe::Int(v)) => match (i64::try_from(v), u64::try_from(v)) {
                (Ok(v), _) => filter.check(&v),
                (_, Ok(v)) => filter.check(&(v as i64)),
                _ => false,
            },
            (BloomKey::Bytes, Probe::Bytes(b)) => filter.check(b),
            _ => true,
        }
    }
}
