//! Helpers for the scan tests: a generated table of varied distributions and null
//! layouts, and an independent reference evaluator of filters built from Arrow compute
//! kernels on the in-memory batch (never from the engine's own code paths).
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::sync::Arc;

use arrow::array::*;
use arrow::buffer::BooleanBuffer;
use arrow::compute::kernels::boolean::{and_kleene, not, or_kleene};
use arrow::compute::kernels::cast::cast;
use arrow::compute::kernels::cmp;
use arrow::compute::kernels::comparison::{like, starts_with};
use arrow::compute::{filter_record_batch, is_not_null, is_null};
use arrow::datatypes::*;
use arrow::record_batch::RecordBatch;
use sift_format::{SiftWriter, WriteOptions};
use sift_scan::{CmpOp, Expr, Literal};

/// The storage kinds of the generated columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Int64,
    Int32,
    Date,
    Float,
    Str,
    Bool,
    Float32,
    UInt32,
    UInt64,
}

impl Kind {
    pub fn data_type(self) -> DataType {
        match self {
            Kind::Int64 => DataType::Int64,
            Kind::Int32 => DataType::Int32,
            Kind::Date => DataType::Date32,
            Kind::Float => DataType::Float64,
            Kind::Str => DataType::Utf8,
            Kind::Bool => DataType::Boolean,
            Kind::Float32 => DataType::Float32,
            Kind::UInt32 => DataType::UInt32,
            Kind::UInt64 => DataType::UInt64,
        }
    }
}

/// The generated table's columns.
pub const COLS: [(&str, Kind); 18] = [
    ("i_small", Kind::Int64),  // -20..=20
    ("i_runs", Kind::Int64),   // long runs of one value
    ("i_sorted", Kind::Int64), // non-decreasing
    ("i_few", Kind::Int64),    // six distinct values, including i64::MIN / MAX
    ("i_wide", Kind::Int64),   // full range
    ("i32", Kind::Int32),      // small values mixed with the extremes
    ("d1", Kind::Date),        // 1991..1999
    ("d2", Kind::Date),        // d1 - 5 .. d1 + 30
    ("f1", Kind::Float),       // 2-digit decimals, NaNs (±, payload), ±0.0, ±inf
    ("f2", Kind::Float),       // 2-digit decimals overlapping f1, more specials
    ("s_low", Kind::Str),      // low cardinality
    ("s_uniq", Kind::Str),     // unique, a quarter longer than the 64-byte zone-map bound
    ("s_uni", Kind::Str),      // non-ASCII words
    ("b", Kind::Bool),
    ("i_of_low", Kind::Int64), // a function of s_low: stored as a lookup when neither has nulls
    ("f32", Kind::Float32),    // 2-digit decimals and the specials of f1, as 32-bit floats
    ("u32", Kind::UInt32),     // small values mixed with 2^31 and u32::MAX
    ("u64", Kind::UInt64),     // small values, 2^40, i64::MAX; u64::MAX in half the tables
];

pub const NCOLS: usize = COLS.len();

pub fn col_index(name: &str) -> usize {
    COLS.iter().position(|c| c.0 == name).unwrap()
}

/// Low-cardinality strings (TPC-H ship modes and friends).
pub const LOW: [&str; 8] = ["AIR", "AIR REG", "MAIL", "SHIP", "TRUCK", "RAIL", "FOB", ""];
/// Words for the unicode column (no `%`, `_` or `\`: LIKE patterns are cut from values).
pub const WORDS: [&str; 12] = [
    "héllo",
    "日本語",
    "naïve café",
    "ß",
    "emoji 😀 x",
    "AIR",
    "Ωmega",
    "añb",
    "a",
    "zzz",
    "Ünïcödé",
    "ℝ≠ℂ",
];
/// The long prefix of a quarter of `s_uniq` (longer than the zone-map bound of 64 bytes).
pub fn long_prefix() -> String {
    "z".repeat(66)
}

/// Where a column's nulls go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Nulls {
    None,
    /// About one row in eight.
    Some,
    /// About one in eight, plus whole blocks (a third of them) all null.
    Blocky,
    All,
}

/// A generated table: row count, block size, per-column null layout and a data seed.
#[derive(Debug, Clone)]
pub struct TableSpec {
    pub rows: usize,
    pub block_rows: usize,
    pub nulls: Vec<Nulls>,
    pub seed: u64,
}

/// splitmix64.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    pub fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + self.below((hi - lo + 1) as u64) as i64
    }
    pub fn pick<'a, T>(&mut self, v: &'a [T]) -> &'a T {
        &v[self.below(v.len() as u64) as usize]
    }
    /// `n` values, each one of `specials` one time in `one_in`, else drawn by `usual`.
    pub fn sprinkled<T: Copy>(
        &mut self,
        n: usize,
        one_in: u64,
        specials: &[T],
        mut usual: impl FnMut(&mut Rng) -> T,
    ) -> Vec<T> {
        (0..n)
            .map(|_| match self.below(one_in) {
                0 => *self.pick(specials),
                _ => usual(self),
            })
            .collect()
    }
}

impl TableSpec {
    /// The table as one record batch.
    pub fn generate(&self) -> RecordBatch {
        let n = self.rows;
        let mut rng = Rng::new(self.seed);
        let valid: Vec<Vec<bool>> = (0..NCOLS)
            .map(|c| {
                let mode = self.nulls[c];
                let mut win = Rng::new(self.seed ^ ((c as u64 + 1) * 0x1234_5678));
                let null_windows: Vec<bool> = (0..n / self.block_rows.max(1) + 1)
                    .map(|_| win.below(3) == 0)
                    .collect();
                (0..n)
                    .map(|i| match mode {
                        Nulls::None => true,
                        Nulls::Some => rng.below(8) != 0,
                        Nulls::Blocky => !null_windows[i / self.block_rows] && rng.below(8) != 0,
                        Nulls::All => false,
                    })
                    .collect()
            })
            .collect();
        let v = |c: usize, i: usize| valid[c][i];

        let i_small: Vec<i64> = (0..n).map(|_| rng.range(-20, 20)).collect();
        let mut cur = rng.range(-1000, 1000);
        let i_runs: Vec<i64> = (0..n)
            .map(|_| {
                if rng.below(60) == 0 {
                    cur = rng.range(-1000, 1000);
                }
                cur
            })
            .collect();
        let mut acc = rng.range(-100, 100);
        let i_sorted: Vec<i64> = (0..n)
            .map(|_| {
                acc += rng.range(0, 3);
                acc
            })
            .collect();
        let few = [i64::MIN, -1_000_000_007, 0, 7, 1 << 40, i64::MAX];
        let i_few: Vec<i64> = (0..n).map(|_| *rng.pick(&few)).collect();
        let i_wide: Vec<i64> = (0..n)
            .map(|_| match rng.below(10) {
                0 => i64::MIN,
                1 => i64::MAX,
                2 => rng.range(-5, 5),
                _ => rng.next() as i64,
            })
            .collect();
        let i32s: Vec<i32> = (0..n)
            .map(|_| match rng.below(8) {
                0 => i32::MIN,
                1 => i32::MAX,
                2 => rng.next() as i32,
                _ => rng.range(-50, 50) as i32,
            })
            .collect();
        let d1: Vec<i32> = (0..n).map(|_| rng.range(7700, 10900) as i32).collect();
        let d2: Vec<i32> = d1.iter().map(|d| d + rng.range(-5, 30) as i32).collect();
        // Quiet NaN, NaN with its sign bit set, NaN with a payload.
        let nans = [f64::NAN, -f64::NAN, f64::from_bits(0x7FF8_0000_0000_0001)];
        let specials = [
            nans[0],
            nans[1],
            nans[2],
            -0.0,
            0.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ];
        let f1 = rng.sprinkled(n, 16, &specials, |r| r.range(-2000, 2000) as f64 / 100.0);
        let f2 = rng.sprinkled(n, 6, &specials, |r| r.range(-500, 500) as f64 / 100.0);
        let s_low: Vec<String> = (0..n).map(|_| rng.pick(&LOW).to_string()).collect();
        let s_uniq: Vec<String> = (0..n)
            .map(|i| {
                // Long values at both ends of the order, so blocks' min and max are
                // often longer than the zone-map bound.
                if rng.below(8) == 0 {
                    format!("{}-{i:05}", "A".repeat(66))
                } else if rng.below(7) == 0 {
                    format!("{}-{i:05}", long_prefix())
                } else {
                    format!("u{i:05}-{:x}", rng.below(0xfff))
                }
            })
            .collect();
        let s_uni: Vec<String> = (0..n)
            .map(|_| {
                let first = rng.pick(&WORDS);
                if rng.below(2) == 0 {
                    first.to_string()
                } else {
                    format!("{first} {}", rng.pick(&WORDS))
                }
            })
            .collect();
        let bools: Vec<bool> = (0..n).map(|_| rng.below(3) == 0).collect();
        let i_of_low: Vec<i64> = s_low
            .iter()
            .map(|s| LOW.iter().position(|l| l == s).unwrap_or(0) as i64 * 1000 - 3)
            .collect();
        // A float NaN with a payload too; a signalling one (quiet bit clear).
        let f32_specials = [
            f32::NAN,
            -f32::NAN,
            f32::from_bits(0x7f80_0001),
            -0.0,
            0.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
        ];
        let f32s = rng.sprinkled(n, 12, &f32_specials, |r| {
            r.range(-3000, 3000) as f32 / 100.0
        });
        let u32s: Vec<u32> = (0..n)
            .map(|_| match rng.below(8) {
                0 => u32::MAX,
                1 => 1 << 31,
                2 => rng.next() as u32,
                _ => rng.range(0, 60) as u32,
            })
            .collect();
        // u64::MAX only in tables of even seeds: a Parquet dictionary holding it (beyond
        // i64) is decoded by the `parquet` crate, the others are read in place.
        let top = if self.seed.is_multiple_of(2) { 4 } else { 3 };
        let u64s: Vec<u64> = (0..n)
            .map(|_| match rng.below(10) {
                0 => [1 << 40, i64::MAX as u64, u64::MAX, rng.next() >> 1][rng.below(top) as usize],
                _ => rng.range(0, 90) as u64,
            })
            .collect();

        fn prim<T: ArrowPrimitiveType>(
            vals: &[T::Native],
            valid: impl Fn(usize) -> bool,
        ) -> ArrayRef {
            Arc::new(
                vals.iter()
                    .enumerate()
                    .map(|(i, x)| valid(i).then_some(*x))
                    .collect::<PrimitiveArray<T>>(),
            )
        }
        let strs = |c: usize, vals: &[String]| -> ArrayRef {
            Arc::new(
                vals.iter()
                    .enumerate()
                    .map(|(i, s)| v(c, i).then_some(s.as_str()))
                    .collect::<StringArray>(),
            )
        };
        let arrays: Vec<ArrayRef> = vec![
            prim::<Int64Type>(&i_small, |i| v(0, i)),
            prim::<Int64Type>(&i_runs, |i| v(1, i)),
            prim::<Int64Type>(&i_sorted, |i| v(2, i)),
            prim::<Int64Type>(&i_few, |i| v(3, i)),
            prim::<Int64Type>(&i_wide, |i| v(4, i)),
            prim::<Int32Type>(&i32s, |i| v(5, i)),
            prim::<Date32Type>(&d1, |i| v(6, i)),
            prim::<Date32Type>(&d2, |i| v(7, i)),
            prim::<Float64Type>(&f1, |i| v(8, i)),
            prim::<Float64Type>(&f2, |i| v(9, i)),
            strs(10, &s_low),
            strs(11, &s_uniq),
            strs(12, &s_uni),
            Arc::new(
                bools
                    .iter()
                    .enumerate()
                    .map(|(i, b)| v(13, i).then_some(*b))
                    .collect::<BooleanArray>(),
            ),
            prim::<Int64Type>(&i_of_low, |i| v(14, i)),
            prim::<Float32Type>(&f32s, |i| v(15, i)),
            prim::<UInt32Type>(&u32s, |i| v(16, i)),
            prim::<UInt64Type>(&u64s, |i| v(17, i)),
        ];
        let fields: Vec<Field> = COLS
            .iter()
            .map(|(name, kind)| Field::new(*name, kind.data_type(), true))
            .collect();
        RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays).unwrap()
    }
}

/// Writes `batch` as a Sift file of `block_rows`-row blocks, fed in uneven pieces.
pub fn write_sift(path: &Path, batch: &RecordBatch, block_rows: usize) {
    write_sift_with(
        path,
        batch,
        WriteOptions {
            block_rows,
            ..Default::default()
        },
    );
}

/// [`write_sift`] with any writer options.
pub fn write_sift_with(path: &Path, batch: &RecordBatch, options: WriteOptions) {
    let mut w = SiftWriter::create(path, batch.schema(), options).unwrap();
    let mut off = 0;
    let mut piece = 1;
    while off < batch.num_rows() {
        let len = piece.min(batch.num_rows() - off);
        w.write(&batch.slice(off, len)).unwrap();
        off += len;
        piece = piece * 3 + 7;
    }
    w.finish().unwrap();
}

/// The message of a caught panic.
pub fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<String>()
        .cloned()
        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

/// The Parquet file at `path` as arrow-rs reads it, in one batch.
pub fn read_parquet(path: &Path) -> RecordBatch {
    let file = std::fs::File::open(path).unwrap();
    let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
        .unwrap()
        .build()
        .unwrap();
    let schema = reader.schema();
    let batches: Vec<RecordBatch> = reader.map(|b| b.unwrap()).collect();
    arrow::compute::concat_batches(&schema, &batches).unwrap()
}

/// Writes `batches` as a Parquet file of `group_rows`-row row groups.
pub fn write_parquet(path: &Path, schema: SchemaRef, batches: &[RecordBatch], group_rows: usize) {
    let props = parquet::file::properties::WriterProperties::builder()
        .set_max_row_group_row_count(Some(group_rows))
        .build();
    write_parquet_with(path, schema, batches, props);
}

/// How a Parquet file is laid out: its pruning metadata and the writer settings that shape
/// its pages.
#[derive(Debug, Clone, Copy)]
pub struct ParquetLayout {
    pub group_rows: usize,
    /// Rows per data page (at most).
    pub page_rows: usize,
    /// Statistics per page (a page index), per row group only, or none.
    pub statistics: parquet::file::properties::EnabledStatistics,
    pub bloom_filters: bool,
    /// Dictionary encoding on, and the dictionary page's size limit in bytes: a small
    /// limit makes the writer fall back to PLAIN in the middle of a column chunk.
    pub dictionary: Option<usize>,
    /// Data pages v2 (levels uncompressed, outside the compressed values) instead of v1.
    pub pages_v2: bool,
    /// With dictionaries off, values stored in the DELTA encodings and BYTE_STREAM_SPLIT
    /// instead of PLAIN: integers DELTA_BINARY_PACKED, strings and binary DELTA_BYTE_ARRAY,
    /// floats and decimals BYTE_STREAM_SPLIT; with `Some(true)`, integers
    /// BYTE_STREAM_SPLIT and strings DELTA_LENGTH_BYTE_ARRAY instead.
    pub delta: Option<bool>,
    pub compression: parquet::basic::Compression,
}

impl ParquetLayout {
    /// arrow-rs's defaults with `group_rows`-row row groups and `page_rows`-row pages.
    pub fn new(group_rows: usize, page_rows: usize) -> Self {
        ParquetLayout {
            group_rows,
            page_rows,
            statistics: parquet::file::properties::EnabledStatistics::Page,
            bloom_filters: false,
            dictionary: Some(1024 * 1024),
            pages_v2: false,
            delta: None,
            compression: parquet::basic::Compression::UNCOMPRESSED,
        }
    }

    /// A layout picked by `seed`: pages of 7 to 300 rows, each statistics level, Bloom
    /// filters on or off, dictionaries off (values PLAIN, or DELTA and BYTE_STREAM_SPLIT),
    /// whole or falling back to PLAIN, pages v1 or v2, and every codec.
    pub fn from_seed(seed: u64, group_rows: usize) -> Self {
        use parquet::basic::{BrotliLevel, Compression, GzipLevel, ZstdLevel};
        use parquet::file::properties::EnabledStatistics;
        let mut rng = Rng::new(seed ^ 0x005e_ed0f_9a9e);
        let statistics = match rng.below(4) {
            0 => EnabledStatistics::None,
            1 => EnabledStatistics::Chunk,
            _ => EnabledStatistics::Page,
        };
        let page_rows = 7 + rng.below(294) as usize;
        let bloom_filters = rng.below(2) == 0;
        let dictionary = match rng.below(4) {
            0 => None,
            1 => Some(64 + rng.below(512) as usize),
            _ => Some(1024 * 1024),
        };
        let pages_v2 = rng.below(2) == 0;
        let compression = *rng.pick(&[
            Compression::UNCOMPRESSED,
            Compression::SNAPPY,
            Compression::ZSTD(ZstdLevel::default()),
            Compression::LZ4_RAW,
            Compression::LZ4,
            Compression::GZIP(GzipLevel::default()),
            Compression::BROTLI(BrotliLevel::default()),
        ]);
        // Drawn last, so that each seed's other choices stay what they were before.
        let delta = match (dictionary, rng.below(3)) {
            (None, 0) => Some(false),
            (None, 1) => Some(true),
            _ => None,
        };
        ParquetLayout {
            group_rows,
            page_rows,
            statistics,
            bloom_filters,
            dictionary,
            pages_v2,
            delta,
            compression,
        }
    }
}

/// Writes `batches` as a Parquet file laid out as `layout`.
pub fn write_parquet_layout(
    path: &Path,
    schema: SchemaRef,
    batches: &[RecordBatch],
    layout: ParquetLayout,
) {
    use parquet::file::properties::WriterVersion;
    let mut props = parquet::file::properties::WriterProperties::builder()
        .set_max_row_group_row_count(Some(layout.group_rows))
        .set_data_page_row_count_limit(layout.page_rows)
        .set_write_batch_size(layout.page_rows)
        .set_statistics_enabled(layout.statistics)
        .set_bloom_filter_enabled(layout.bloom_filters)
        .set_dictionary_enabled(layout.dictionary.is_some())
        .set_dictionary_page_size_limit(layout.dictionary.unwrap_or(1024 * 1024))
        .set_writer_version(if layout.pages_v2 {
            WriterVersion::PARQUET_2_0
        } else {
            WriterVersion::PARQUET_1_0
        })
        .set_compression(layout.compression);
    if let (Some(alternate), None) = (layout.delta, layout.dictionary) {
        use parquet::basic::Encoding::*;
        for field in schema.fields() {
            let encoding = match (field.data_type(), alternate) {
                (DataType::Float16 | DataType::Float32 | DataType::Float64, _) => BYTE_STREAM_SPLIT,
                (DataType::Decimal128(..), _) => BYTE_STREAM_SPLIT,
                (
                    DataType::Utf8 | DataType::LargeUtf8 | DataType::Binary | DataType::Utf8View,
                    false,
                ) => DELTA_BYTE_ARRAY,
                (
                    DataType::Utf8 | DataType::LargeUtf8 | DataType::Binary | DataType::Utf8View,
                    true,
                ) => DELTA_LENGTH_BYTE_ARRAY,
                (dt, false) if dt.is_integer() || dt.is_temporal() => DELTA_BINARY_PACKED,
                (dt, true) if dt.is_integer() || dt.is_temporal() => BYTE_STREAM_SPLIT,
                _ => continue,
            };
            let path = parquet::schema::types::ColumnPath::from(field.name().as_str());
            props = props.set_column_encoding(path, encoding);
        }
    }
    write_parquet_with(path, schema, batches, props.build());
}

pub fn write_parquet_with(
    path: &Path,
    schema: SchemaRef,
    batches: &[RecordBatch],
    props: parquet::file::properties::WriterProperties,
) {
    // arrow-rs's writer splits a batch longer than a row group by calling itself on the
    // rest, a stack frame per row group: thousands of one-row groups in one batch overflow
    // a test thread's stack in a debug build. So batches go in pieces of one row group.
    let piece = props.max_row_group_row_count().unwrap_or(usize::MAX).max(1);
    let file = std::fs::File::create(path).unwrap();
    let mut w = parquet::arrow::ArrowWriter::try_new(file, schema, Some(props)).unwrap();
    for b in batches {
        let mut at = 0;
        while at < b.num_rows() {
            let len = piece.min(b.num_rows() - at);
            w.write(&b.slice(at, len)).unwrap();
            at += len;
        }
    }
    w.close().unwrap();
}

// ---------------------------------------------------------------------------------------
// The reference evaluator.

/// `a op b` with Arrow's comparison kernels (null in, null out).
pub fn kernel(op: CmpOp, a: &dyn Datum, b: &dyn Datum) -> BooleanArray {
    match op {
        CmpOp::Eq => cmp::eq(a, b),
        CmpOp::Ne => cmp::neq(a, b),
        CmpOp::Lt => cmp::lt(a, b),
        CmpOp::Le => cmp::lt_eq(a, b),
        CmpOp::Gt => cmp::gt(a, b),
        CmpOp::Ge => cmp::gt_eq(a, b),
    }
    .unwrap()
}

/// `value` on every non-null row of `a`, null elsewhere.
fn constant(a: &ArrayRef, value: bool) -> BooleanArray {
    let n = a.len();
    let values = if value {
        BooleanBuffer::new_set(n)
    } else {
        BooleanBuffer::new_unset(n)
    };
    BooleanArray::new(values, a.logical_nulls())
}

fn decimal_scalar(v: i128) -> Scalar<Decimal128Array> {
    Scalar::new(
        Decimal128Array::from(vec![v])
            .with_precision_and_scale(38, 0)
            .unwrap(),
    )
}

/// `a op lit`, in SQL semantics, for the column kinds of the generated tables (and the
/// Decimal128 / Utf8View columns of TPC-H lineitem).
pub fn literal_cmp(a: &ArrayRef, op: CmpOp, lit: &Literal) -> BooleanArray {
    match (a.data_type(), lit) {
        // Integers compare exactly with any integer, in or out of the column type's range:
        // widen both sides to a 38-digit decimal.
        (
            DataType::Int64
            | DataType::Int32
            | DataType::Int16
            | DataType::Int8
            | DataType::UInt64
            | DataType::UInt32
            | DataType::UInt16
            | DataType::UInt8,
            Literal::Int(v),
        ) => {
            let wide = cast(a, &DataType::Decimal128(38, 0)).unwrap();
            kernel(op, &wide, &decimal_scalar(*v))
        }
        (
            DataType::Int64 | DataType::Int32 | DataType::UInt32 | DataType::UInt64,
            Literal::Float(x),
        ) => {
            assert!(!x.is_nan(), "NaN literal on an integer column");
            if x.abs() >= 1e37 {
                let beyond = if *x > 0.0 {
                    10i128.pow(37)
                } else {
                    -10i128.pow(37)
                };
                literal_cmp(a, op, &Literal::Int(beyond))
            } else if x.fract() == 0.0 {
                literal_cmp(a, op, &Literal::Int(*x as i128))
            } else {
                // No integer equals a fractional x; below it are exactly those ≤ floor(x).
                let fl = x.floor() as i128;
                match op {
                    CmpOp::Eq => constant(a, false),
                    CmpOp::Ne => constant(a, true),
                    CmpOp::Lt | CmpOp::Le => literal_cmp(a, CmpOp::Le, &Literal::Int(fl)),
                    CmpOp::Gt | CmpOp::Ge => literal_cmp(a, CmpOp::Ge, &Literal::Int(fl + 1)),
                }
            }
        }
        (DataType::Date32, Literal::Date(d)) => kernel(op, a, &Date32Array::new_scalar(*d)),
        (DataType::Date32, Literal::Str(s)) => {
            let parsed = cast(&StringArray::from(vec![s.as_str()]), &DataType::Date32).unwrap();
            let d = parsed.as_primitive::<Date32Type>();
            assert!(d.is_valid(0), "{s} is not a date");
            kernel(op, a, &Date32Array::new_scalar(d.value(0)))
        }
        // A decimal literal on floats: the nearest double (Rust's parsing rounds exactly).
        (DataType::Float32 | DataType::Float64, Literal::Decimal { unscaled, scale }) => {
            let x: f64 = format!("{unscaled}e{}", -scale).parse().unwrap();
            literal_cmp(a, op, &Literal::Float(x))
        }
        // Every 32-bit float is exactly a 64-bit one.
        (DataType::Float32, Literal::Float(_) | Literal::Int(_)) => {
            literal_cmp(&cast(a, &DataType::Float64).unwrap(), op, lit)
        }
        (DataType::Float64, Literal::Float(_) | Literal::Int(_)) => {
            let x = match lit {
                Literal::Float(x) => *x,
                Literal::Int(i) => *i as f64,
                _ => unreachable!(),
            };
            // SQL order: every NaN equals every other and is above every number, and −0.0
            // equals +0.0. Fold all NaNs into one positive NaN and −0.0 into +0.0 on both
            // sides, then compare in IEEE total order.
            let fold = |v: f64| {
                if v.is_nan() {
                    f64::NAN
                } else if v == 0.0 {
                    0.0
                } else {
                    v
                }
            };
            let folded: Float64Array = a.as_primitive::<Float64Type>().unary(fold);
            kernel(op, &folded, &Float64Array::new_scalar(fold(x)))
        }
        (DataType::Decimal128(p, s), Literal::Int(_) | Literal::Float(_)) => {
            // Exact for the TPC-H literals (whole numbers and cents).
            let x = match lit {
                Literal::Int(i) => *i as f64,
                Literal::Float(x) => *x,
                _ => unreachable!(),
            };
            let scaled = x * 10f64.powi(i32::from(*s));
            assert_eq!(scaled, scaled.round(), "{x} is not exact at scale {s}");
            let sc = Scalar::new(
                Decimal128Array::from(vec![scaled.round() as i128])
                    .with_precision_and_scale(*p, *s)
                    .unwrap(),
            );
            kernel(op, a, &sc)
        }
        // Exact decimals: the column and the literal both cast by Arrow to 76-digit
        // decimals at the finer of their two scales.
        (
            DataType::Decimal128(..) | DataType::Int64 | DataType::Int32,
            Literal::Decimal { unscaled, scale },
        ) => {
            let lit_scale = i8::try_from(*scale).expect("reference: a decimal scale beyond i8");
            let col_scale = match a.data_type() {
                DataType::Decimal128(_, s) => *s,
                _ => 0,
            };
            let wide = DataType::Decimal256(76, lit_scale.max(col_scale));
            let lit = Decimal256Array::from(vec![i256::from_i128(*unscaled)])
                .with_precision_and_scale(76, lit_scale)
                .unwrap();
            let lit = cast(&lit, &wide).unwrap();
            let column = cast(a, &wide).unwrap();
            assert!(lit.is_valid(0) && column.null_count() == a.null_count());
            kernel(op, &column, &Scalar::new(lit))
        }
        (DataType::Utf8, Literal::Str(s)) => kernel(op, a, &StringArray::new_scalar(s)),
        (DataType::Utf8View, Literal::Str(s)) => kernel(op, a, &StringViewArray::new_scalar(s)),
        (DataType::LargeUtf8, Literal::Str(s)) => kernel(op, a, &LargeStringArray::new_scalar(s)),
        (DataType::Boolean, Literal::Bool(b)) => kernel(op, a, &BooleanArray::new_scalar(*b)),
        (DataType::Boolean, Literal::Str(s)) => {
            let b = match s.to_ascii_lowercase().as_str() {
                "true" => true,
                "false" => false,
                _ => panic!("{s} is not a boolean"),
            };
            literal_cmp(a, op, &Literal::Bool(b))
        }
        (dt, lit) => panic!("reference: no comparison of {dt} with {lit:?}"),
    }
}

/// The three-valued truth of `e` on every row of `batch` (null = unknown).
pub fn eval(e: &Expr, batch: &RecordBatch) -> BooleanArray {
    let column = |name: &str| -> ArrayRef {
        batch
            .column_by_name(name)
            .unwrap_or_else(|| panic!("reference: no column {name}"))
            .clone()
    };
    let n = batch.num_rows();
    match e {
        Expr::Cmp {
            column: c,
            op,
            value,
        } => literal_cmp(&column(c), *op, value),
        Expr::ColumnCmp { left, op, right } => kernel(*op, &column(left), &column(right)),
        Expr::Between {
            column: c,
            low,
            high,
        } => {
            let a = column(c);
            and_kleene(
                &literal_cmp(&a, CmpOp::Ge, low),
                &literal_cmp(&a, CmpOp::Le, high),
            )
            .unwrap()
        }
        Expr::In { column: c, values } => {
            let a = column(c);
            values
                .iter()
                .map(|v| literal_cmp(&a, CmpOp::Eq, v))
                .fold(BooleanArray::from(vec![false; n]), |acc, x| {
                    or_kleene(&acc, &x).unwrap()
                })
        }
        Expr::IsNull { column: c, negated } => {
            let a = column(c);
            if *negated {
                is_not_null(&a).unwrap()
            } else {
                is_null(&a).unwrap()
            }
        }
        Expr::Like { column: c, pattern } => {
            let a = column(c);
            match a.data_type() {
                DataType::Utf8View => like(&a, &StringViewArray::new_scalar(pattern)).unwrap(),
                _ => like(&a, &StringArray::new_scalar(pattern)).unwrap(),
            }
        }
        Expr::StartsWith { column: c, prefix } => {
            let a = column(c);
            match a.data_type() {
                DataType::Utf8View => {
                    starts_with(&a, &StringViewArray::new_scalar(prefix)).unwrap()
                }
                _ => starts_with(&a, &StringArray::new_scalar(prefix)).unwrap(),
            }
        }
        Expr::And(v) => v.iter().fold(BooleanArray::from(vec![true; n]), |acc, c| {
            and_kleene(&acc, &eval(c, batch)).unwrap()
        }),
        Expr::Or(v) => v.iter().fold(BooleanArray::from(vec![false; n]), |acc, c| {
            or_kleene(&acc, &eval(c, batch)).unwrap()
        }),
        Expr::Not(inner) => not(&eval(inner, batch)).unwrap(),
        Expr::Udf(u) => {
            let cols: Vec<ArrayRef> = u.columns.iter().map(|c| column(c)).collect();
            (u.f)(&cols).unwrap()
        }
        Expr::InBloom { column: c, keys } => bloom_reference(&column(c), keys),
    }
}

/// The scalar probe of every value of `a` (nulls unknown), integers outside the keys'
/// range failing: what the scan's dictionary masks and batch probes must answer.
fn bloom_reference(a: &ArrayRef, keys: &sift_scan::KeyFilter) -> BooleanArray {
    use sift_bits::bloom::{bytes_key, i128_key};
    let bloom = keys.bloom();
    let (lo, hi) = keys.bounds().unwrap_or((i128::MIN, i128::MAX));
    let int = |v: i128| lo <= v && v <= hi && bloom.contains(i128_key(v));
    let probe = |i: usize| -> bool {
        match a.data_type() {
            DataType::Utf8 => bloom.contains(bytes_key(a.as_string::<i32>().value(i).as_bytes())),
            DataType::Utf8View => bloom.contains(bytes_key(a.as_string_view().value(i).as_bytes())),
            DataType::Decimal128(..) => int(a.as_primitive::<Decimal128Type>().value(i)),
            _ => {
                let wide = cast(a, &DataType::Int64).unwrap();
                int(i128::from(wide.as_primitive::<Int64Type>().value(i)))
            }
        }
    };
    (0..a.len())
        .map(|i| a.is_valid(i).then(|| probe(i)))
        .collect()
}

/// The rows of `batch` where `filter` is true (all rows without one).
pub fn filter_batch(batch: &RecordBatch, filter: Option<&Expr>) -> RecordBatch {
    match filter {
        None => batch.clone(),
        Some(e) => filter_record_batch(batch, &eval(e, batch)).unwrap(),
    }
}

/// An integer, date, time, timestamp or decimal column's values as 128-bit integers (a
/// decimal's unscaled, a date's days...); `None` for other types.
pub fn wide_ints(a: &dyn Array) -> Option<Vec<Option<i128>>> {
    fn of<T: ArrowPrimitiveType>(a: &dyn Array) -> Vec<Option<i128>>
    where
        T::Native: Into<i128>,
    {
        a.as_primitive::<T>()
            .iter()
            .map(|v| v.map(Into::into))
            .collect()
    }
    Some(match a.data_type() {
        DataType::Decimal128(..) => of::<Decimal128Type>(a),
        DataType::UInt8 => of::<UInt8Type>(a),
        DataType::UInt16 => of::<UInt16Type>(a),
        DataType::UInt32 => of::<UInt32Type>(a),
        DataType::UInt64 => of::<UInt64Type>(a),
        d if sift_scan::has_extremes(d) => {
            let a = cast(a, &DataType::Int64).ok()?;
            of::<Int64Type>(&a)
        }
        _ => return None,
    })
}
