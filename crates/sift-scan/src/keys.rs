//! Join keys as a scan filter: the key values of a join's build side, collected here and
//! tested on the probe side's column while it is scanned, before its payload columns are
//! decoded.
//!
//! A few distinct integer keys become an exact `IN` list (a semi-join filter); more become
//! a register-blocked Bloom filter ([`sift_bits::bloom`]) with the keys' minimum and
//! maximum for zone-map pruning. On a dictionary-encoded chunk the filter is probed once
//! per dictionary entry and becomes a mask over the codes; on other encodings it is probed
//! on the decoded values (only the rows still selected, when earlier filters left few).
//! A Bloom filter lets a few non-keys through, never drops a key: whoever joins still
//! decides which rows match.

use std::fmt;
use std::sync::Arc;

use arrow_array::Array;
use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_schema::DataType;
use sift_bits::bloom::{BloomFilter, bytes_key, i128_key};
use sift_encoding::{PhysicalKind, physical_kind};

use crate::error::{Error, Result};
use crate::expr::{Expr, Literal};

/// At most this many distinct integer keys are pushed as an exact `IN` list: the scan
/// evaluates a short list per dictionary entry or by binary search, and it prunes blocks
/// by membership as well as by range.
pub const EXACT_KEYS: usize = 64;

/// Beyond this many build-side rows no filter is built (the keys would not fit a filter
/// small enough to stay in cache, and a join that large rarely drops probe rows).
pub const MAX_KEYS: usize = 1 << 25;

/// The false-positive rate Bloom filters are sized for.
pub const BLOOM_FPR: f64 = 0.01;

/// What a key is, in the storage domain of the column it is tested on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyDomain {
    /// Integer-like values (integers, dates, times, timestamps, decimals unscaled).
    Int,
    /// Byte strings (strings and binary).
    Bytes,
}

impl KeyDomain {
    /// The domain of a column of type `dt`, or `None` when keys of that type are not
    /// collected (floats, booleans, nested types).
    pub fn of(dt: &DataType) -> Option<KeyDomain> {
        match physical_kind(dt).ok()? {
            PhysicalKind::Int(_) => Some(KeyDomain::Int),
            PhysicalKind::Bytes | PhysicalKind::FixedBytes(_) => Some(KeyDomain::Bytes),
            _ => None,
        }
    }
}

/// A Bloom filter over a join's build-side keys, with what the scan needs besides.
pub struct KeyFilter {
    domain: KeyDomain,
    bloom: Arc<BloomFilter>,
    /// Smallest and largest key, for integers.
    bounds: Option<(i128, i128)>,
    distinct: usize,
}

impl KeyFilter {
    /// The keys' domain.
    pub fn domain(&self) -> KeyDomain {
        self.domain
    }

    /// The Bloom filter.
    pub fn bloom(&self) -> &Arc<BloomFilter> {
        &self.bloom
    }

    /// Smallest and largest integer key.
    pub fn bounds(&self) -> Option<(i128, i128)> {
        self.bounds
    }

    /// Distinct keys inserted.
    pub fn distinct(&self) -> usize {
        self.distinct
    }
}

impl fmt::Debug for KeyFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "bloom({} keys, {} KiB",
            self.distinct,
            self.bloom.size_bytes().div_ceil(1024)
        )?;
        if let Some((lo, hi)) = self.bounds {
            write!(f, ", {lo}..={hi}")?;
        }
        f.write_str(")")
    }
}

/// The keys of a build side, collected batch by batch.
#[derive(Debug)]
pub struct KeyCollector {
    data_type: DataType,
    domain: KeyDomain,
    /// Integer keys as values (exact set, bounds); byte strings as their keys.
    ints: Vec<i128>,
    hashes: Vec<u64>,
    /// More rows than [`MAX_KEYS`]: no filter.
    overflow: bool,
}

impl KeyCollector {
    /// A collector for keys of type `dt`; an error for types without key support.
    pub fn new(dt: &DataType) -> Result<KeyCollector> {
        let domain = KeyDomain::of(dt)
            .ok_or_else(|| Error::Type(format!("join keys of type {dt} are not collected")))?;
        Ok(KeyCollector {
            data_type: dt.clone(),
            domain,
            ints: Vec::new(),
            hashes: Vec::new(),
            overflow: false,
        })
    }

    /// Adds the non-null values of `a` (of the collector's type).
    pub fn add(&mut self, a: &dyn Array) -> Result<()> {
        if a.data_type() != &self.data_type {
            return Err(Error::Type(format!(
                "join keys of type {} given a {} array",
                self.data_type,
                a.data_type()
            )));
        }
        if self.overflow || self.ints.len() + self.hashes.len() + a.len() > MAX_KEYS {
            self.overflow = true;
            self.ints = Vec::new();
            self.hashes = Vec::new();
            return Ok(());
        }
        let nulls = a.logical_nulls();
        let valid = |i: usize| nulls.as_ref().is_none_or(|n| n.is_valid(i));
        macro_rules! ints {
            ($t:ty) => {{
                let values = a.as_primitive::<$t>().values();
                let keep = values.iter().enumerate().filter(|(i, _)| valid(*i));
                self.ints.extend(keep.map(|(_, &v)| v as i128));
            }};
        }
        use DataType as D;
        match a.data_type() {
            D::Int8 => ints!(Int8Type),
            D::Int16 => ints!(Int16Type),
            D::Int32 => ints!(Int32Type),
            D::Int64 => ints!(Int64Type),
            D::UInt8 => ints!(UInt8Type),
            D::UInt16 => ints!(UInt16Type),
            D::UInt32 => ints!(UInt32Type),
            D::UInt64 => ints!(UInt64Type),
            D::Date32 => ints!(Date32Type),
            D::Date64 => ints!(Date64Type),
            D::Decimal128(..) => ints!(Decimal128Type),
            D::Time32(_) | D::Time64(_) | D::Timestamp(..) | D::Duration(_) => {
                let target = match a.data_type() {
                    D::Time32(_) => D::Int32,
                    _ => D::Int64,
                };
                let cast = arrow_cast::cast(a, &target)?;
                let mut inner = KeyCollector::new(&target)?;
                inner.add(cast.as_ref())?;
                self.ints.extend(inner.ints);
            }
            _ => {
                let hashes = &mut self.hashes;
                sift_encoding::for_each_bytes(a, |_, v| {
                    if let Some(v) = v {
                        hashes.push(bytes_key(v));
                    }
                })
                .map_err(|e| Error::Type(e.to_string()))?;
            }
        }
        Ok(())
    }

    /// The integer keys as literals of the filter language, for the types that have one.
    fn literals(&self) -> Option<Vec<Literal>> {
        let literal = |v: i128| match self.data_type {
            DataType::Decimal128(_, scale) => Some(Literal::Decimal {
                unscaled: v,
                scale: i32::from(scale),
            }),
            DataType::Date32 => i32::try_from(v).ok().map(Literal::Date),
            ref dt if dt.is_integer() => Some(Literal::Int(v)),
            _ => None,
        };
        self.ints.iter().map(|&v| literal(v)).collect()
    }

    /// The filter on `column` that every collected key passes: `IN` the exact keys when
    /// there are at most [`EXACT_KEYS`] distinct integers, else a Bloom filter; `None`
    /// when more than [`MAX_KEYS`] rows were collected.
    pub fn into_filter(mut self, column: &str) -> Option<Expr> {
        if self.overflow {
            return None;
        }
        let keys: Vec<u64> = match self.domain {
            KeyDomain::Int => {
                self.ints.sort_unstable();
                self.ints.dedup();
                if self.ints.len() <= EXACT_KEYS
                    && let Some(values) = self.literals()
                {
                    return Some(Expr::In {
                        column: column.to_string(),
                        values,
                    });
                }
                self.ints.iter().map(|&v| i128_key(v)).collect()
            }
            KeyDomain::Bytes => {
                self.hashes.sort_unstable();
                self.hashes.dedup();
                self.hashes
            }
        };
        let mut bloom = BloomFilter::with_capacity(keys.len(), BLOOM_FPR);
        for &k in &keys {
            bloom.insert(k);
        }
        let bounds = (self.domain == KeyDomain::Int)
            .then(|| Some((*self.ints.first()?, *self.ints.last()?)))
            .flatten();
        Some(Expr::InBloom {
            column: column.to_string(),
            keys: Arc::new(KeyFilter {
                domain: self.domain,
                bloom: Arc::new(bloom),
                bounds,
                distinct: keys.len(),
            }),
        })
    }
}
