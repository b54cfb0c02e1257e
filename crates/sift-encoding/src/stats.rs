//! Per-chunk statistics (zone maps), computed on the compacted non-null values while encoding.

use serde::{Deserialize, Serialize};

/// Longest byte-string bound kept in a zone map; longer values are truncated.
pub const MAX_STAT_BYTES: usize = 64;

/// A zone-map bound.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Scalar {
    /// Any integer type, dates, times, timestamps, durations, and decimals (scaled).
    Int(i128),
    /// Floats, ordered by `f64::total_cmp`; NaN never appears in a bound.
    Float(f64),
    /// Booleans (false < true).
    Bool(bool),
    /// Byte strings, compared as unsigned bytes.
    Bytes(Vec<u8>),
}

/// Statistics of one column chunk.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ChunkStats {
    /// Number of nulls.
    pub null_count: u64,
    /// A lower bound of the non-null values (exact unless truncated), `None` if unknown.
    pub min: Option<Scalar>,
    /// An upper bound of the non-null values (exact unless truncated), `None` if unknown.
    pub max: Option<Scalar>,
    /// True if the chunk contains NaN (floats only); NaN is excluded from `min`/`max`.
    pub has_nan: bool,
    /// True if the non-null values never decrease in row order (integer, date, time,
    /// timestamp and decimal chunks; false where unknown), so that a column whose blocks
    /// follow each other's bounds is known to be sorted.
    pub sorted: bool,
    /// True if the non-null values never increase in row order: a Parquet row group whose
    /// writer declares so (a Sift writer finds ascending order only, and its files do not
    /// store this).
    #[serde(default)]
    pub descending: bool,
}

impl ChunkStats {
    /// Whether a column is sorted over `chunks` (their statistics in row order, `None`
    /// where a chunk has none): every chunk holds no null and its values never decrease
    /// (`sorted`), and the chunks follow one another ([`follow_over`](Self::follow_over));
    /// with `descending`, the same the other way round (values that never increase).
    pub fn sorted_over<S: std::borrow::Borrow<ChunkStats>>(
        chunks: impl IntoIterator<Item = Option<S>>,
        descending: bool,
    ) -> bool {
        let in_order = |z: &S| {
            let z = z.borrow();
            let monotone = if descending { z.descending } else { z.sorted };
            monotone && z.null_count == 0
        };
        Self::follow_over(chunks.into_iter().map(|c| c.filter(in_order)), descending)
    }

    /// Whether `chunks` (statistics in row order, `None` where a chunk has none) follow
    /// one another: every chunk has integer bounds and starts at or above the greatest
    /// value of the chunk before; with `descending`, at or below the least value before
    /// it. The rows inside a chunk may be in any order.
    pub fn follow_over<S: std::borrow::Borrow<ChunkStats>>(
        chunks: impl IntoIterator<Item = Option<S>>,
        descending: bool,
    ) -> bool {
        let mut last: Option<i128> = None;
        chunks.into_iter().all(|chunk| {
            let Some(z) = chunk else {
                return false;
            };
            let (Some(Scalar::Int(lo)), Some(Scalar::Int(hi))) = (&z.borrow().min, &z.borrow().max)
            else {
                return false;
            };
            let (first, end) = if descending { (*hi, *lo) } else { (*lo, *hi) };
            let follows = last.is_none_or(|last| match descending {
                false => last <= first,
                true => last >= first,
            });
            last = Some(end);
            follows
        })
    }
}

pub(crate) fn int_bounds<T: crate::encodings::frame::NativeInt>(
    values: &[T],
) -> (Option<Scalar>, Option<Scalar>) {
    let min = values.iter().min().map(|v| Scalar::Int(v.to_i128()));
    let max = values.iter().max().map(|v| Scalar::Int(v.to_i128()));
    (min, max)
}

/// Bounds of floats given as little-endian bytes of width 4 or 8 (other widths: unknown).
pub(crate) fn float_bounds(bytes: &[u8], width: usize) -> (Option<Scalar>, Option<Scalar>, bool) {
    let values: Box<dyn Iterator<Item = f64>> = match width {
        4 => Box::new(
            bytes
                .chunks_exact(4)
                .map(|c| f64::from(f32::from_le_bytes([c[0], c[1], c[2], c[3]]))),
        ),
        8 => Box::new(bytes.chunks_exact(8).map(|c| {
            let mut a = [0u8; 8];
            a.copy_from_slice(c);
            f64::from_le_bytes(a)
        })),
        _ => return (None, None, false),
    };
    let mut has_nan = false;
    let mut min: Option<f64> = None;
    let mut max: Option<f64> = None;
    for v in values {
        if v.is_nan() {
            has_nan = true;
            continue;
        }
        min = Some(min.map_or(v, |m| if v.total_cmp(&m).is_lt() { v } else { m }));
        max = Some(max.map_or(v, |m| if v.total_cmp(&m).is_gt() { v } else { m }));
    }
    (min.map(Scalar::Float), max.map(Scalar::Float), has_nan)
}

/// Bounds of byte strings, truncated to [`MAX_STAT_BYTES`] so they stay valid bounds.
pub(crate) fn bytes_bounds(values: &[&[u8]]) -> (Option<Scalar>, Option<Scalar>) {
    let min = values
        .iter()
        .min()
        .map(|v| Scalar::Bytes(v[..v.len().min(MAX_STAT_BYTES)].to_vec()));
    let max = values
        .iter()
        .max()
        .and_then(|v| truncated_upper_bound(v))
        .map(Scalar::Bytes);
    (min, max)
}

/// Element `i` of `array` (statistics read from another format, such as Parquet's
/// column and page statistics decoded by the `parquet` crate) as a lower bound
/// (`upper == false`) or an upper bound of the values it describes, in the domain Sift's
/// zone maps use for the array's type. `None` when the element is null, NaN, or of a type
/// with no zone-map domain. A zero float is widened to the signed zero on the outer side
/// (a writer may record `+0.0` as the minimum of a chunk holding `-0.0`), and long byte
/// strings are truncated to [`MAX_STAT_BYTES`] as Sift's own bounds are.
pub fn arrow_bound(array: &dyn arrow_array::Array, i: usize, upper: bool) -> Option<Scalar> {
    use arrow_array::cast::AsArray;
    use arrow_array::types::*;
    use arrow_schema::{DataType, IntervalUnit, TimeUnit};
    if i >= array.len() || array.is_null(i) {
        return None;
    }
    macro_rules! int {
        ($t:ty) => {
            Scalar::Int(i128::from(array.as_primitive::<$t>().value(i)))
        };
    }
    let bytes = |v: &[u8]| match upper {
        false => Some(Scalar::Bytes(v[..v.len().min(MAX_STAT_BYTES)].to_vec())),
        true => truncated_upper_bound(v).map(Scalar::Bytes),
    };
    let float = |v: f64| match v {
        _ if v.is_nan() => None,
        0.0 if upper => Some(Scalar::Float(0.0)),
        0.0 => Some(Scalar::Float(-0.0)),
        _ => Some(Scalar::Float(v)),
    };
    Some(match array.data_type() {
        DataType::Int8 => int!(Int8Type),
        DataType::Int16 => int!(Int16Type),
        DataType::Int32 => int!(Int32Type),
        DataType::Int64 => int!(Int64Type),
        DataType::UInt8 => int!(UInt8Type),
        DataType::UInt16 => int!(UInt16Type),
        DataType::UInt32 => int!(UInt32Type),
        DataType::UInt64 => int!(UInt64Type),
        DataType::Date32 => int!(Date32Type),
        DataType::Date64 => int!(Date64Type),
        DataType::Time32(TimeUnit::Second) => int!(Time32SecondType),
        DataType::Time32(TimeUnit::Millisecond) => int!(Time32MillisecondType),
        DataType::Time64(TimeUnit::Microsecond) => int!(Time64MicrosecondType),
        DataType::Time64(TimeUnit::Nanosecond) => int!(Time64NanosecondType),
        DataType::Timestamp(TimeUnit::Second, _) => int!(TimestampSecondType),
        DataType::Timestamp(TimeUnit::Millisecond, _) => int!(TimestampMillisecondType),
        DataType::Timestamp(TimeUnit::Microsecond, _) => int!(TimestampMicrosecondType),
        DataType::Timestamp(TimeUnit::Nanosecond, _) => int!(TimestampNanosecondType),
        DataType::Duration(TimeUnit::Second) => int!(DurationSecondType),
        DataType::Duration(TimeUnit::Millisecond) => int!(DurationMillisecondType),
        DataType::Duration(TimeUnit::Microsecond) => int!(DurationMicrosecondType),
        DataType::Duration(TimeUnit::Nanosecond) => int!(DurationNanosecondType),
        DataType::Interval(IntervalUnit::YearMonth) => int!(IntervalYearMonthType),
        DataType::Decimal32(..) => int!(Decimal32Type),
        DataType::Decimal64(..) => int!(Decimal64Type),
        DataType::Decimal128(..) => Scalar::Int(array.as_primitive::<Decimal128Type>().value(i)),
        DataType::Float16 => float(f64::from(array.as_primitive::<Float16Type>().value(i)))?,
        DataType::Float32 => float(f64::from(array.as_primitive::<Float32Type>().value(i)))?,
        DataType::Float64 => float(array.as_primitive::<Float64Type>().value(i))?,
        DataType::Boolean => Scalar::Bool(array.as_boolean().value(i)),
        DataType::Utf8 => bytes(array.as_string::<i32>().value(i).as_bytes())?,
        DataType::LargeUtf8 => bytes(array.as_string::<i64>().value(i).as_bytes())?,
        DataType::Utf8View => bytes(array.as_string_view().value(i).as_bytes())?,
        DataType::Binary => bytes(array.as_binary::<i32>().value(i))?,
        DataType::LargeBinary => bytes(array.as_binary::<i64>().value(i))?,
        DataType::BinaryView => bytes(array.as_binary_view().value(i))?,
        DataType::FixedSizeBinary(_) => bytes(array.as_fixed_size_binary().value(i))?,
        _ => return None,
    })
}

/// The shortest prefix-based value of at most [`MAX_STAT_BYTES`] bytes that is >= `v`:
/// `v` itself if short enough, else a prefix with its last non-0xFF byte incremented.
fn truncated_upper_bound(v: &[u8]) -> Option<Vec<u8>> {
    if v.len() <= MAX_STAT_BYTES {
        return Some(v.to_vec());
    }
    let mut p = v[..MAX_STAT_BYTES].to_vec();
    while let Some(last) = p.pop() {
        if last < u8::MAX {
            p.push(last + 1);
            return Some(p);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zone(lo: i128, hi: i128, nulls: u64, sorted: bool, descending: bool) -> ChunkStats {
        ChunkStats {
            null_count: nulls,
            min: Some(Scalar::Int(lo)),
            max: Some(Scalar::Int(hi)),
            has_nan: false,
            sorted,
            descending,
        }
    }

    #[test]
    fn chunks_follow_one_another_whatever_their_inner_order() {
        let shuffled = [zone(1, 5, 0, false, false), zone(5, 9, 2, false, false)];
        assert!(ChunkStats::follow_over(shuffled.iter().map(Some), false));
        assert!(!ChunkStats::follow_over(shuffled.iter().map(Some), true));
        // Following is not being sorted: the rows inside are not in order, and nulls.
        assert!(!ChunkStats::sorted_over(shuffled.iter().map(Some), false));
        let sorted = [zone(1, 5, 0, true, false), zone(5, 9, 0, true, false)];
        assert!(ChunkStats::sorted_over(sorted.iter().map(Some), false));
        let falling = [zone(6, 9, 0, false, true), zone(1, 6, 0, false, true)];
        assert!(ChunkStats::follow_over(falling.iter().map(Some), true));
        assert!(ChunkStats::sorted_over(falling.iter().map(Some), true));
        assert!(!ChunkStats::follow_over(falling.iter().map(Some), false));
        let overlapping = [zone(1, 5, 0, true, false), zone(4, 9, 0, true, false)];
        assert!(!ChunkStats::follow_over(
            overlapping.iter().map(Some),
            false
        ));
        let unknown = [Some(&sorted[0]), None];
        assert!(!ChunkStats::follow_over(unknown, false));
        let floats = ChunkStats {
            min: Some(Scalar::Float(1.0)),
            max: Some(Scalar::Float(2.0)),
            ..sorted[0].clone()
        };
        assert!(!ChunkStats::follow_over([Some(floats)], false));
    }

    #[test]
    fn long_strings_get_valid_bounds() {
        let long = vec![b'a'; 100];
        let (min, max) = bytes_bounds(&[&long, b"b"]);
        assert_eq!(min, Some(Scalar::Bytes(vec![b'a'; 64])));
        assert_eq!(max, Some(Scalar::Bytes(b"b".to_vec())));
        let (_, max) = bytes_bounds(&[&long]);
        let mut expect = vec![b'a'; 63];
        expect.push(b'b');
        assert_eq!(max, Some(Scalar::Bytes(expect)));
        assert_eq!(truncated_upper_bound(&[0xFF; 70]), None);
    }

    #[test]
    fn arrow_bounds_widen_zeros_and_truncate() {
        use arrow_array::{Float64Array, Int16Array, StringArray};
        let f = Float64Array::from(vec![Some(0.0), Some(-0.0), None, Some(f64::NAN), Some(2.5)]);
        assert_eq!(arrow_bound(&f, 0, false), Some(Scalar::Float(-0.0)));
        assert!(matches!(arrow_bound(&f, 1, true), Some(Scalar::Float(z)) if z.to_bits() == 0));
        assert_eq!(arrow_bound(&f, 2, false), None);
        assert_eq!(arrow_bound(&f, 3, true), None);
        assert_eq!(arrow_bound(&f, 4, true), Some(Scalar::Float(2.5)));
        assert_eq!(arrow_bound(&f, 9, true), None);
        let i = Int16Array::from(vec![-7]);
        assert_eq!(arrow_bound(&i, 0, true), Some(Scalar::Int(-7)));
        let long = "z".repeat(100);
        let s = StringArray::from(vec![long.as_str()]);
        assert_eq!(
            arrow_bound(&s, 0, false),
            Some(Scalar::Bytes(vec![b'z'; 64]))
        );
        let mut up = vec![b'z'; 63];
        up.push(b'{');
        assert_eq!(arrow_bound(&s, 0, true), Some(Scalar::Bytes(up)));
    }

    #[test]
    fn floats_skip_nan() {
        let vals = [1.0f64, f64::NAN, -0.0, 0.0, f64::INFINITY];
        let bytes: Vec<u8> = vals.iter().flat_map(|v| v.to_le_bytes()).collect();
        let (min, max, nan) = float_bounds(&bytes, 8);
        assert_eq!(min, Some(Scalar::Float(-0.0)));
        assert_eq!(max, Some(Scalar::Float(f64::INFINITY)));
        assert!(nan);
    }
}
