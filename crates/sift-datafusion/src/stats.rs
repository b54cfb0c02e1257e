//! DataFusion statistics from the files' metadata: row counts, and per column the null
//! count and bounds merged over the blocks' zone maps. Bounds are exact where every
//! block's are (integer-like columns of Sift files, exact Parquet statistics), so that
//! DataFusion answers an unfiltered `MIN`, `MAX` or `COUNT` from them without a scan.

use std::borrow::{Borrow, Cow};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use datafusion::arrow::datatypes::{DataType, Schema, SchemaRef, TimeUnit};
use datafusion::common::stats::Precision;
use datafusion::common::{ColumnStatistics, ScalarValue, Statistics};
use sift_format::{ChunkStats, Scalar};
use sift_scan::{SortedColumns, Table};

use crate::table::TableFiles;

/// Statistics already merged, by schema and blocks. DataFusion asks a scan for the same
/// statistics several times while it plans one query, and again for the next query on
/// the table; merging the zone maps of 256 blocks × 20 columns took about 0.5 ms a time,
/// a third of a short query's time in all. A table's files, and so their zone maps, do
/// not change while it is registered.
#[derive(Debug, Default)]
pub(crate) struct StatsMemo(Mutex<VecDeque<MemoEntry>>);

type MemoEntry = (SchemaRef, Vec<(usize, usize)>, Arc<Statistics>);

/// Block lists remembered (all blocks, each partition's): the oldest is forgotten first.
const MEMO_ENTRIES: usize = 32;

impl StatsMemo {
    fn get_or_insert(
        &self,
        schema: &SchemaRef,
        blocks: &[(usize, usize)],
        merge: impl FnOnce() -> Statistics,
    ) -> Arc<Statistics> {
        let same = |(s, b, _): &&MemoEntry| b == blocks && (Arc::ptr_eq(s, schema) || s == schema);
        if let Ok(memo) = self.0.lock()
            && let Some((_, _, stats)) = memo.iter().find(same)
        {
            return Arc::clone(stats);
        }
        let stats = Arc::new(merge());
        if let Ok(mut memo) = self.0.lock() {
            if memo.len() == MEMO_ENTRIES {
                memo.pop_front();
            }
            memo.push_back((Arc::clone(schema), blocks.to_vec(), Arc::clone(&stats)));
        }
        stats
    }
}

/// Statistics of whole files.
pub(crate) fn table_statistics(files: &TableFiles, schema: &SchemaRef) -> Statistics {
    let blocks: Vec<(usize, usize)> = (files.files.iter().enumerate())
        .flat_map(|(f, file)| (0..file.table.num_blocks()).map(move |b| (f, b)))
        .collect();
    blocks_statistics(files, schema, &blocks)
}

/// Statistics of some blocks `(file, block)` of the files, before any filter (remembered:
/// see [`StatsMemo`]).
pub(crate) fn blocks_statistics(
    files: &TableFiles,
    schema: &SchemaRef,
    blocks: &[(usize, usize)],
) -> Statistics {
    let merged =
        (files.stats_memo).get_or_insert(schema, blocks, || merge_blocks(files, schema, blocks));
    Statistics::clone(&merged)
}

/// [`blocks_statistics`], merged from the zone maps.
fn merge_blocks(files: &TableFiles, schema: &Schema, blocks: &[(usize, usize)]) -> Statistics {
    let (dataset, opened) = (&files.dataset, opened(files));
    let rows: u64 = blocks.iter().map(|&(f, b)| opened[f].1.block_rows(b)).sum();
    let file_schemas: Vec<_> = opened.iter().map(|(_, t)| t.schema()).collect();
    let columns = schema
        .fields()
        .iter()
        .map(|field| {
            let zones = (blocks.iter())
                .map(|&(f, b)| dataset.block_zone(opened[f], &file_schemas[f], b, field.name()));
            column_statistics(zones, field.data_type())
        })
        .collect();
    Statistics {
        num_rows: Precision::Exact(usize::try_from(rows).unwrap_or(usize::MAX)),
        total_byte_size: Precision::Absent,
        column_statistics: columns,
    }
}

/// The zone map of column `name` in each of `blocks` (file, block), borrowed from the
/// file where it holds one; `None` where a block has none.
pub(crate) fn block_zones<'a>(
    files: &'a TableFiles,
    blocks: &[(usize, usize)],
    name: &str,
) -> Vec<Option<Cow<'a, ChunkStats>>> {
    let opened = opened(files);
    let file_schemas: Vec<_> = files.files.iter().map(|f| f.table.schema()).collect();
    (blocks.iter())
        .map(|&(f, b)| {
            let (z, _) = (files.dataset).block_zone(opened[f], &file_schemas[f], b, name)?;
            Some(z)
        })
        .collect()
}

/// The zone-map bound of column `name` in each of `blocks` (file, block): its smallest
/// value, or with `max` its largest; `None` where a block has none.
pub(crate) fn block_bounds(
    files: &TableFiles,
    blocks: &[(usize, usize)],
    name: &str,
    max: bool,
) -> Vec<Option<Scalar>> {
    (block_zones(files, blocks, name).iter())
        .map(|z| {
            let z = z.as_deref()?;
            if max { z.max.clone() } else { z.min.clone() }
        })
        .collect()
}

/// The columns of `schema` (positions) sorted over `blocks` (file, block) in their order
/// ([`Dataset::sorted_columns`](sift_scan::Dataset::sorted_columns)).
pub(crate) fn sorted_columns(
    files: &TableFiles,
    schema: &Schema,
    blocks: &[(usize, usize)],
) -> SortedColumns {
    (files.dataset).sorted_columns(&opened(files), schema, blocks)
}

/// Each file's index in the dataset and its table.
fn opened(files: &TableFiles) -> Vec<(usize, &Table)> {
    (files.files.iter()).map(|f| (f.index, &f.table)).collect()
}

/// One column's statistics over the zone maps of its blocks, each with whether its bounds
/// are exact; a block without one makes the merged value unknown.
fn column_statistics<Z: Borrow<ChunkStats>>(
    mut zones: impl Iterator<Item = Option<(Z, bool)>>,
    dt: &DataType,
) -> ColumnStatistics {
    let mut nulls = Some(0u64);
    let mut min: Option<ScalarValue> = None;
    let mut max: Option<ScalarValue> = None;
    let mut bounds_known = true;
    // Integer-like values only: their bounds convert to the column's type unchanged.
    let mut exact = sift_scan::has_extremes(dt);
    let mut any = false;
    for zone in zones.by_ref() {
        any = true;
        let Some((z, z_exact)) = zone else {
            return ColumnStatistics::new_unknown();
        };
        let z = z.borrow();
        exact &= z_exact;
        nulls = nulls.map(|n| n + z.null_count);
        let lo = z.min.as_ref().and_then(|s| zone_bound(s, dt));
        let hi = z.max.as_ref().and_then(|s| zone_bound(s, dt));
        match (lo, hi) {
            (Some(lo), Some(hi)) if bounds_known => {
                min = Some(match min {
                    Some(m) if m <= lo => m,
                    _ => lo,
                });
                max = Some(match max {
                    Some(m) if m >= hi => m,
                    _ => hi,
                });
            }
            // An all-null block has no bounds and changes none.
            (None, None) if z.min.is_none() && z.max.is_none() => {}
            _ => bounds_known = false,
        }
    }
    let mut stats = ColumnStatistics::new_unknown();
    if let Some(n) = nulls.filter(|_| any) {
        stats = stats.with_null_count(Precision::Exact(usize::try_from(n).unwrap_or(usize::MAX)));
    }
    // Zone-map bounds enclose the values (byte strings are truncated, Parquet bounds
    // need not be values), so unless every block's are exact they are reported as
    // inexact: the optimizer may estimate with them, never answer from them.
    if bounds_known && let (Some(lo), Some(hi)) = (min, max) {
        let bound = |v| match exact {
            true => Precision::Exact(v),
            false => Precision::Inexact(v),
        };
        stats = stats.with_min_value(bound(lo)).with_max_value(bound(hi));
    }
    stats
}

/// A zone-map bound as a value of the column's type (`None` when it does not fit it).
pub fn zone_bound(s: &Scalar, dt: &DataType) -> Option<ScalarValue> {
    Some(match (s, dt) {
        (Scalar::Int(v), DataType::Int8) => ScalarValue::Int8(Some(i8::try_from(*v).ok()?)),
        (Scalar::Int(v), DataType::Int16) => ScalarValue::Int16(Some(i16::try_from(*v).ok()?)),
        (Scalar::Int(v), DataType::Int32) => ScalarValue::Int32(Some(i32::try_from(*v).ok()?)),
        (Scalar::Int(v), DataType::Int64) => ScalarValue::Int64(Some(i64::try_from(*v).ok()?)),
        (Scalar::Int(v), DataType::UInt8) => ScalarValue::UInt8(Some(u8::try_from(*v).ok()?)),
        (Scalar::Int(v), DataType::UInt16) => ScalarValue::UInt16(Some(u16::try_from(*v).ok()?)),
        (Scalar::Int(v), DataType::UInt32) => ScalarValue::UInt32(Some(u32::try_from(*v).ok()?)),
        (Scalar::Int(v), DataType::UInt64) => ScalarValue::UInt64(Some(u64::try_from(*v).ok()?)),
        (Scalar::Int(v), DataType::Date32) => ScalarValue::Date32(Some(i32::try_from(*v).ok()?)),
        (Scalar::Int(v), DataType::Date64) => ScalarValue::Date64(Some(i64::try_from(*v).ok()?)),
        (Scalar::Int(v), DataType::Decimal128(p, s)) => ScalarValue::Decimal128(Some(*v), *p, *s),
        (Scalar::Int(v), DataType::Timestamp(unit, tz)) => {
            let v = Some(i64::try_from(*v).ok()?);
            let tz = tz.clone();
            match unit {
                TimeUnit::Second => ScalarValue::TimestampSecond(v, tz),
                TimeUnit::Millisecond => ScalarValue::TimestampMillisecond(v, tz),
                TimeUnit::Microsecond => ScalarValue::TimestampMicrosecond(v, tz),
                TimeUnit::Nanosecond => ScalarValue::TimestampNanosecond(v, tz),
            }
        }
        (Scalar::Float(x), DataType::Float64) => ScalarValue::Float64(Some(*x)),
        // A double bound of a float column holds a float exactly.
        (Scalar::Float(x), DataType::Float32) => ScalarValue::Float32(Some(*x as f32)),
        (Scalar::Bool(b), DataType::Boolean) => ScalarValue::Boolean(Some(*b)),
        (Scalar::Bytes(b), DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View) => {
            ScalarValue::Utf8(Some(String::from_utf8(b.clone()).ok()?))
                .cast_to(dt)
                .ok()?
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zone(nulls: u64, lo: i128, hi: i128) -> ChunkStats {
        ChunkStats {
            null_count: nulls,
            min: Some(Scalar::Int(lo)),
            max: Some(Scalar::Int(hi)),
            has_nan: false,
            sorted: false,
            descending: false,
        }
    }

    fn float_zone(lo: f64, hi: f64) -> ChunkStats {
        ChunkStats {
            null_count: 0,
            min: Some(Scalar::Float(lo)),
            max: Some(Scalar::Float(hi)),
            has_nan: false,
            sorted: false,
            descending: false,
        }
    }

    /// The memo merges once per schema and block list, answers again from what it kept,
    /// and forgets the oldest list when full.
    #[test]
    fn merged_statistics_are_remembered_by_schema_and_blocks() {
        use datafusion::arrow::datatypes::Field;
        let schema =
            |name: &str| SchemaRef::new(Schema::new(vec![Field::new(name, DataType::Int64, true)]));
        let (a, b) = (schema("a"), schema("b"));
        let memo = StatsMemo::default();
        let merges = std::cell::Cell::new(0);
        let get = |s: &SchemaRef, blocks: &[(usize, usize)]| {
            let stats = memo.get_or_insert(s, blocks, || {
                merges.set(merges.get() + 1);
                Statistics::new_unknown(s).with_num_rows(Precision::Exact(blocks.len()))
            });
            (stats.num_rows, merges.get())
        };
        assert_eq!(get(&a, &[(0, 0), (0, 1)]), (Precision::Exact(2), 1));
        assert_eq!(get(&a, &[(0, 0), (0, 1)]), (Precision::Exact(2), 1));
        // An equal schema in another allocation is the same key.
        assert_eq!(
            get(&schema("a"), &[(0, 0), (0, 1)]),
            (Precision::Exact(2), 1)
        );
        assert_eq!(get(&a, &[(0, 1)]), (Precision::Exact(1), 2));
        assert_eq!(get(&b, &[(0, 1)]), (Precision::Exact(1), 3));
        for i in 0..MEMO_ENTRIES {
            get(&a, &[(1, i)]);
        }
        assert_eq!(merges.get(), 3 + MEMO_ENTRIES);
        // The first list was forgotten, the last is still there.
        assert_eq!(get(&a, &[(0, 0), (0, 1)]).1, 4 + MEMO_ENTRIES);
        assert_eq!(get(&a, &[(1, MEMO_ENTRIES - 1)]).1, 4 + MEMO_ENTRIES);
    }

    #[test]
    fn zones_merge_into_column_statistics() {
        let zones = [zone(1, 5, 9), zone(0, -3, 4)];
        let merged = |exact: [bool; 2], dt: &DataType| {
            column_statistics(zones.iter().zip(exact).map(Some), dt)
        };
        let s = merged([false, true], &DataType::Int32);
        assert_eq!(s.null_count, Precision::Exact(1));
        assert_eq!(
            s.min_value,
            Precision::Inexact(ScalarValue::Int32(Some(-3)))
        );
        assert_eq!(s.max_value, Precision::Inexact(ScalarValue::Int32(Some(9))));
        // Exact only when every block's bounds are, and the column holds integers.
        let s = merged([true, true], &DataType::Int32);
        assert_eq!(s.min_value, Precision::Exact(ScalarValue::Int32(Some(-3))));
        assert_eq!(s.max_value, Precision::Exact(ScalarValue::Int32(Some(9))));
        let floats = [float_zone(-3.5, 4.0), float_zone(5.0, 9.5)];
        let s = column_statistics(floats.iter().map(|z| Some((z, true))), &DataType::Float64);
        assert_eq!(
            s.max_value,
            Precision::Inexact(ScalarValue::Float64(Some(9.5)))
        );
        // A block without a zone map makes everything unknown.
        let s = column_statistics(
            [Some((&zones[0], true)), None].into_iter(),
            &DataType::Int32,
        );
        assert_eq!(s.null_count, Precision::Absent);
        assert_eq!(s.min_value, Precision::Absent);
    }

    #[test]
    fn decimal_and_string_bounds_take_the_column_type() {
        assert_eq!(
            zone_bound(&Scalar::Int(12345), &DataType::Decimal128(15, 2)),
            Some(ScalarValue::Decimal128(Some(12345), 15, 2))
        );
        assert_eq!(
            zone_bound(&Scalar::Bytes(b"ab".to_vec()), &DataType::Utf8View),
            Some(ScalarValue::Utf8View(Some("ab".into())))
        );
        assert_eq!(zone_bound(&Scalar::Int(300), &DataType::Int8), None);
    }
}
