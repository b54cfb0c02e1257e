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
    fn floats_skip_nan() {
        let vals = [1.0f64, f64::NAN, -0.0, 0.0, f64::INFINITY];
        let bytes: Vec<u8> = vals.iter().flat_map(|v| v.to_le_bytes()).collect();
        let (min, max, nan) = float_bounds(&bytes, 8);
        assert_eq!(min, Some(Scalar::Float(-0.0)));
        assert_eq!(max, Some(Scalar::Float(f64::INFINITY)));
        assert!(nan);
    }
}
