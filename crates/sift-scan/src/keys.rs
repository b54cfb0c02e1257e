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
    /// Every key, repeats included ([`i128_key`] of integers, [`bytes_key`] of strings).
    keys: Vec<u64>,
    /// The distinct integers while there are at most [`EXACT_KEYS`], sorted.
    exact: Option<Vec<i128>>,
    /// Smallest and largest integer.
    bounds: Option<(i128, i128)>,
    /// At most this many rows are collected (repeats and nulls included).
    max_rows: usize,
    /// More rows than `max_rows`: no filter.
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
            keys: Vec::new(),
            exact: (domain == KeyDomain::Int).then(Vec::new),
            bounds: None,
            max_rows: MAX_KEYS,
            overflow: false,
        })
    }

    /// The collector with at most `rows` rows instead of [`MAX_KEYS`] (a smaller limit
    /// only): beyond them it gives no filter.
    pub fn max_rows(mut self, rows: usize) -> KeyCollector {
        self.max_rows = rows.min(MAX_KEYS);
        self
    }

    /// Whether more rows than the limit were added (the rest can be skipped).
    pub fn is_full(&self) -> bool {
        self.overflow
    }

    /// The rows added so far (repeats included; nulls are not kept).
    pub fn rows(&self) -> usize {
        self.keys.len()
    }

    fn add_int(&mut self, v: i128) {
        self.keys.push(i128_key(v));
        self.bounds = Some(match self.bounds {
            Some((lo, hi)) => (lo.min(v), hi.max(v)),
            None => (v, v),
        });
        if let Some(exact) = &mut self.exact
            && let Err(at) = exact.binary_search(&v)
        {
            if exact.len() == EXACT_KEYS {
                self.exact = None;
            } else {
                exact.insert(at, v);
            }
        }
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
        if self.overflow || self.keys.len() + a.len() > self.max_rows {
            self.overflow = true;
            self.keys = Vec::new();
            return Ok(());
        }
        let nulls = a.logical_nulls();
        let valid = |i: usize| nulls.as_ref().is_none_or(|n| n.is_valid(i));
        let ints = sift_encoding::for_each_int(a, |i, v| {
            if valid(i) {
                self.add_int(v);
            }
        });
        if !ints.map_err(|e| Error::Type(e.to_string()))? {
            let keys = &mut self.keys;
            sift_encoding::for_each_bytes(a, |_, v| {
                if let Some(v) = v {
                    keys.push(bytes_key(v));
                }
            })
            .map_err(|e| Error::Type(e.to_string()))?;
        }
        Ok(())
    }

    /// The integer keys as literals of the filter language, for the types that have one.
    fn literals(&self, ints: &[i128]) -> Option<Vec<Literal>> {
        let literal = |v: i128| match self.data_type {
            DataType::Decimal128(_, scale) => Some(Literal::Decimal {
                unscaled: v,
                scale: i32::from(scale),
            }),
            DataType::Date32 => i32::try_from(v).ok().map(Literal::Date),
            ref dt if dt.is_integer() => Some(Literal::Int(v)),
            _ => None,
        };
        ints.iter().map(|&v| literal(v)).collect()
    }

    /// The filter on `column` that every collected key passes: `IN` the exact keys when
    /// there are at most [`EXACT_KEYS`] distinct integers, else a Bloom filter; `None`
    /// when more rows than the limit were added.
    pub fn into_filter(mut self, column: &str) -> Option<Expr> {
        if self.overflow {
            return None;
        }
        if let Some(values) = self.exact.as_deref().and_then(|e| self.literals(e)) {
            return Some(Expr::In {
                column: column.to_string(),
                values,
            });
        }
        self.keys.sort_unstable();
        self.keys.dedup();
        let mut bloom = BloomFilter::with_capacity(self.keys.len(), BLOOM_FPR);
        for &k in &self.keys {
            bloom.insert(k);
        }
        Some(Expr::InBloom {
            column: column.to_string(),
            keys: Arc::new(KeyFilter {
                domain: self.domain,
                bloom: Arc::new(bloom),
                bounds: self.bounds,
                distinct: self.keys.len(),
            }),
        })
    }
}
