//! Helpers shared by the integration tests: deterministic data of every supported type,
//! and a bit-exact batch comparison.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use arrow::array::*;
use arrow::datatypes::*;
use arrow::record_batch::RecordBatch;
use sift_format::{SiftFile, SiftWriter, WriteOptions};

/// Where nulls go in generated columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Nulls {
    /// Non-nullable field, no nulls.
    None,
    /// Nullable field, roughly a third null.
    Some,
    /// Nullable field, every value null.
    All,
}

impl Nulls {
    pub fn valid(self, i: usize) -> bool {
        match self {
            Nulls::None => true,
            Nulls::Some => !hash(i as u64 ^ 0xA5A5).is_multiple_of(3),
            Nulls::All => false,
        }
    }
}

/// splitmix64: deterministic pseudo-random values without a dependency.
pub fn hash(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn prim<T: ArrowPrimitiveType>(
    n: usize,
    nulls: Nulls,
    dt: DataType,
    f: impl Fn(usize) -> T::Native,
) -> ArrayRef {
    let a: PrimitiveArray<T> = (0..n).map(|i| nulls.valid(i).then(|| f(i))).collect();
    Arc::new(a.with_data_type(dt))
}

/// Full-range integers with the type's extremes sprinkled in (forces plain encoding).
macro_rules! full_range {
    ($t:ty, $n:expr, $nulls:expr, $dt:expr, $native:ty) => {
        prim::<$t>($n, $nulls, $dt, |i| match i % 5 {
            0 => <$native>::MIN,
            1 => <$native>::MAX,
            _ => hash(i as u64) as $native,
        })
    };
}

pub const TZS: [Option<&str>; 3] = [None, Some("UTC"), Some("+05:30")];

/// One column of every supported type (and a few variants), `n` rows.
pub fn all_types(n: usize, nulls: Nulls) -> Vec<(Field, ArrayRef)> {
    let h = |i: usize| hash(i as u64);
    let mut cols: Vec<(String, ArrayRef)> = vec![
        (
            "bool".into(),
            Arc::new(
                (0..n)
                    .map(|i| nulls.valid(i).then(|| h(i) % 3 == 0))
                    .collect::<BooleanArray>(),
            ),
        ),
        (
            "i8".into(),
            full_range!(Int8Type, n, nulls, DataType::Int8, i8),
        ),
        (
            "i16".into(),
            full_range!(Int16Type, n, nulls, DataType::Int16, i16),
        ),
        (
            "i32".into(),
            full_range!(Int32Type, n, nulls, DataType::Int32, i32),
        ),
        (
            "i64".into(),
            full_range!(Int64Type, n, nulls, DataType::Int64, i64),
        ),
        (
            "u8".into(),
            full_range!(UInt8Type, n, nulls, DataType::UInt8, u8),
        ),
        (
            "u16".into(),
            full_range!(UInt16Type, n, nulls, DataType::UInt16, u16),
        ),
        (
            "u32".into(),
            full_range!(UInt32Type, n, nulls, DataType::UInt32, u32),
        ),
        (
            "u64".into(),
            full_range!(UInt64Type, n, nulls, DataType::UInt64, u64),
        ),
        (
            "i8_narrow".into(),
            prim::<Int8Type>(n, nulls, DataType::Int8, |i| -100 + (h(i) % 7) as i8),
        ),
        (
            "i32_narrow".into(),
            prim::<Int32Type>(n, nulls, DataType::Int32, |i| -5 + (h(i) % 100) as i32),
        ),
        (
            "i64_narrow".into(),
            prim::<Int64Type>(n, nulls, DataType::Int64, |i| {
                i64::MIN + (h(i) % 1000) as i64
            }),
        ),
        (
            "u64_narrow".into(),
            prim::<UInt64Type>(n, nulls, DataType::UInt64, |i| u64::MAX - (h(i) % 100_000)),
        ),
        (
            "i64_const".into(),
            prim::<Int64Type>(n, nulls, DataType::Int64, |_| 42),
        ),
        (
            "f16".into(),
            prim::<Float16Type>(n, nulls, DataType::Float16, |i| {
                <Float16Type as ArrowPrimitiveType>::Native::from_bits(special_f16(i))
            }),
        ),
        (
            "f32".into(),
            prim::<Float32Type>(n, nulls, DataType::Float32, |i| {
                f32::from_bits(special_f32(i))
            }),
        ),
        (
            "f64".into(),
            prim::<Float64Type>(n, nulls, DataType::Float64, |i| {
                f64::from_bits(special_f64(i))
            }),
        ),
    ];
    let max38 = 10i128.pow(38) - 1;
    for (p, s) in [(38u8, 0i8), (38, 10), (10, 2), (1, 0), (5, 5), (20, -3)] {
        let max = 10i128.pow(u32::from(p)) - 1;
        cols.push((
            format!("dec_{p}_{s}"),
            prim::<Decimal128Type>(n, nulls, DataType::Decimal128(p, s), |i| match i % 4 {
                0 => -max,
                1 => max,
                _ => (h(i) as i128).wrapping_mul(h(i + 1) as i128) % (max + 1),
            }),
        ));
    }
    cols.push((
        "dec_38_narrow".into(),
        prim::<Decimal128Type>(n, nulls, DataType::Decimal128(38, 2), |i| {
            -max38 + (h(i) % 1000) as i128
        }),
    ));
    cols.push((
        "date32".into(),
        prim::<Date32Type>(n, nulls, DataType::Date32, |i| {
            (h(i) % 40_000) as i32 - 20_000
        }),
    ));
    cols.push((
        "date64".into(),
        prim::<Date64Type>(n, nulls, DataType::Date64, |i| {
            ((h(i) % 40_000) as i64 - 20_000) * 86_400_000
        }),
    ));
    for unit in [
        TimeUnit::Second,
        TimeUnit::Millisecond,
        TimeUnit::Microsecond,
        TimeUnit::Nanosecond,
    ] {
        for tz in TZS {
            let ts = |i: usize| match i % 7 {
                0 => i64::MIN,
                1 => i64::MAX,
                _ => 1_700_000_000 + (h(i) % 1_000_000) as i64,
            };
            let dt = DataType::Timestamp(unit, tz.map(Arc::from));
            let a = match unit {
                TimeUnit::Second => prim::<TimestampSecondType>(n, nulls, dt, ts),
                TimeUnit::Millisecond => prim::<TimestampMillisecondType>(n, nulls, dt, ts),
                TimeUnit::Microsecond => prim::<TimestampMicrosecondType>(n, nulls, dt, ts),
                TimeUnit::Nanosecond => prim::<TimestampNanosecondType>(n, nulls, dt, ts),
            };
            cols.push((format!("ts_{unit:?}_{}", tz.unwrap_or("none")), a));
        }
        let dur = |i: usize| (h(i) % 2_000_000) as i64 - 1_000_000;
        let dt = DataType::Duration(unit);
        let a = match unit {
            TimeUnit::Second => prim::<DurationSecondType>(n, nulls, dt, dur),
            TimeUnit::Millisecond => prim::<DurationMillisecondType>(n, nulls, dt, dur),
            TimeUnit::Microsecond => prim::<DurationMicrosecondType>(n, nulls, dt, dur),
            TimeUnit::Nanosecond => prim::<DurationNanosecondType>(n, nulls, dt, dur),
        };
        cols.push((format!("dur_{unit:?}"), a));
    }
    cols.push((
        "time32_s".into(),
        prim::<Time32SecondType>(n, nulls, DataType::Time32(TimeUnit::Second), |i| {
            (h(i) % 86_400) as i32
        }),
    ));
    cols.push((
        "time32_ms".into(),
        prim::<Time32MillisecondType>(n, nulls, DataType::Time32(TimeUnit::Millisecond), |i| {
            (h(i) % 86_400_000) as i32
        }),
    ));
    cols.push((
        "time64_us".into(),
        prim::<Time64MicrosecondType>(n, nulls, DataType::Time64(TimeUnit::Microsecond), |i| {
            (h(i) % 86_400_000_000) as i64
        }),
    ));
    cols.push((
        "time64_ns".into(),
        prim::<Time64NanosecondType>(n, nulls, DataType::Time64(TimeUnit::Nanosecond), |i| {
            (h(i) % 86_400_000_000_000) as i64
        }),
    ));
    // Strings: low cardinality (dictionary), high cardinality (plain), with non-ASCII.
    let low = |i: usize| {
        nulls
            .valid(i)
            .then(|| LOW_CARD[(h(i) % 5) as usize].to_string())
    };
    let high = |i: usize| nulls.valid(i).then(|| format!("v{}-ü{}", h(i), i % 13));
    cols.push((
        "utf8_low".into(),
        Arc::new((0..n).map(low).collect::<StringArray>()),
    ));
    cols.push((
        "utf8_high".into(),
        Arc::new((0..n).map(high).collect::<StringArray>()),
    ));
    cols.push((
        "large_utf8".into(),
        Arc::new((0..n).map(high).collect::<LargeStringArray>()),
    ));
    cols.push((
        "utf8_view_low".into(),
        Arc::new((0..n).map(low).collect::<StringViewArray>()),
    ));
    cols.push((
        "utf8_view_high".into(),
        Arc::new((0..n).map(high).collect::<StringViewArray>()),
    ));
    let bin = |i: usize| {
        nulls
            .valid(i)
            .then(|| bytes_of(h(i), (h(i + 7) % 40) as usize))
    };
    let bin_low = |i: usize| nulls.valid(i).then(|| bytes_of(h(i) % 3, 20));
    cols.push((
        "binary".into(),
        Arc::new(BinaryArray::from_iter(bins(n, bin))),
    ));
    cols.push((
        "binary_low".into(),
        Arc::new(BinaryArray::from_iter(bins(n, bin_low))),
    ));
    cols.push((
        "large_binary".into(),
        Arc::new(LargeBinaryArray::from_iter(bins(n, bin))),
    ));
    cols.push((
        "binary_view".into(),
        Arc::new(BinaryViewArray::from_iter(bins(n, bin))),
    ));
    cols.push((
        "binary_view_low".into(),
        Arc::new(BinaryViewArray::from_iter(bins(n, bin_low))),
    ));
    for (w, card) in [
        (0usize, 1u64),
        (1, 256),
        (5, u64::MAX),
        (16, 3),
        (16, u64::MAX),
    ] {
        let vals = bins(n, |i| nulls.valid(i).then(|| bytes_of(h(i) % card, w)));
        cols.push((
            format!("fsb_{w}_{card}"),
            Arc::new(
                FixedSizeBinaryArray::try_from_sparse_iter_with_size(vals.into_iter(), w as i32)
                    .unwrap(),
            ),
        ));
    }
    cols.push(("null".into(), Arc::new(NullArray::new(n))));
    cols.into_iter()
        .map(|(name, a)| {
            let nullable = nulls != Nulls::None;
            let mut md = HashMap::new();
            if name.starts_with("i64") {
                md.insert("unit".to_string(), format!("{name}-meta"));
            }
            (
                Field::new(name, a.data_type().clone(), nullable).with_metadata(md),
                a,
            )
        })
        .collect()
}

pub const LOW_CARD: [&str; 5] = [
    "",
    "alpha",
    "beta",
    "gamma δ",
    "a much longer value, repeated",
];

fn bins(n: usize, f: impl Fn(usize) -> Option<Vec<u8>>) -> Vec<Option<Vec<u8>>> {
    (0..n).map(f).collect()
}

pub fn bytes_of(seed: u64, len: usize) -> Vec<u8> {
    (0..len)
        .map(|k| hash(seed ^ (k as u64) << 8) as u8)
        .collect()
}

const F64_SPECIAL: [u64; 12] = [
    0x7FF8_0000_0000_0000, // NaN
    0xFFF8_0000_0000_0000, // -NaN
    0x7FF0_0000_0000_0001, // signalling NaN with payload
    0x0000_0000_0000_0000, // +0
    0x8000_0000_0000_0000, // -0
    0x7FF0_0000_0000_0000, // +inf
    0xFFF0_0000_0000_0000, // -inf
    0x0000_0000_0000_0001, // smallest subnormal
    0x7FEF_FFFF_FFFF_FFFF, // MAX
    0xFFEF_FFFF_FFFF_FFFF, // MIN
    0x3FF0_0000_0000_0000, // 1.0
    0x0010_0000_0000_0000, // MIN_POSITIVE
];

pub fn special_f64(i: usize) -> u64 {
    if i.is_multiple_of(3) {
        F64_SPECIAL[(i / 3) % F64_SPECIAL.len()]
    } else {
        ((hash(i as u64) % 2_000_000) as f64 / 7.0 - 100_000.0).to_bits()
    }
}

pub fn special_f32(i: usize) -> u32 {
    const S: [u32; 9] = [
        0x7FC0_0000,
        0xFFC0_0001,
        0x0000_0000,
        0x8000_0000,
        0x7F80_0000,
        0xFF80_0000,
        0x0000_0001,
        0x7F7F_FFFF,
        0xFF7F_FFFF,
    ];
    if i.is_multiple_of(3) {
        S[(i / 3) % S.len()]
    } else {
        ((hash(i as u64) % 2_000_000) as f32 / 7.0 - 100_000.0).to_bits()
    }
}

pub fn special_f16(i: usize) -> u16 {
    const S: [u16; 8] = [
        0x7E00, 0xFE01, 0x0000, 0x8000, 0x7C00, 0xFC00, 0x0001, 0x7BFF,
    ];
    if i.is_multiple_of(3) {
        S[(i / 3) % S.len()]
    } else {
        hash(i as u64) as u16 & 0x7BFF
    }
}

/// A batch of the given columns, with schema metadata.
pub fn batch_of(cols: Vec<(Field, ArrayRef)>) -> RecordBatch {
    let (fields, arrays): (Vec<Field>, Vec<ArrayRef>) = cols.into_iter().unzip();
    let mut md = HashMap::new();
    md.insert("origin".to_string(), "sift tests".to_string());
    md.insert("empty".to_string(), String::new());
    let schema = Arc::new(Schema::new_with_metadata(fields, md));
    let n = arrays.first().map_or(0, |a| a.len());
    RecordBatch::try_new_with_options(
        schema,
        arrays,
        &RecordBatchOptions::new().with_row_count(Some(n)),
    )
    .unwrap()
}

/// Writes `batches` to `path` and returns the file's bytes.
pub fn write(
    path: &Path,
    schema: &SchemaRef,
    batches: &[RecordBatch],
    block_rows: usize,
) -> Vec<u8> {
    let mut w = SiftWriter::create(
        path,
        schema.clone(),
        WriteOptions {
            block_rows,
            ..Default::default()
        },
    )
    .unwrap();
    for b in batches {
        w.write(b).unwrap();
    }
    let summary = w.finish().unwrap();
    let bytes = std::fs::read(path).unwrap();
    assert_eq!(summary.bytes, bytes.len() as u64);
    bytes
}

/// Reads a whole file into one batch.
pub fn read(path: &Path) -> (SiftFile, RecordBatch) {
    let f = SiftFile::open(path).unwrap();
    let batches = f.read_all(None).unwrap();
    let all = arrow::compute::concat_batches(f.schema().unwrap(), &batches).unwrap();
    (f, all)
}

/// Asserts schema (with metadata) and data are equal, floats by bit pattern.
pub fn assert_same(expected: &RecordBatch, actual: &RecordBatch) {
    assert_eq!(expected.schema(), actual.schema(), "schemas differ");
    assert_eq!(expected.num_rows(), actual.num_rows(), "row counts differ");
    for (c, field) in expected.schema().fields().iter().enumerate() {
        let (e, a) = (expected.column(c), actual.column(c));
        assert_eq!(e.data_type(), a.data_type(), "column {}", field.name());
        let valid = |x: &ArrayRef| (0..x.len()).map(|i| x.is_valid(i)).collect::<Vec<_>>();
        assert_eq!(valid(e), valid(a), "column {} validity", field.name());
        let bits_e = float_bits(e.as_ref());
        let bits_a = float_bits(a.as_ref());
        assert_eq!(bits_e, bits_a, "column {} float bits", field.name());
        assert!(
            e.to_data() == a.to_data(),
            "column {} differs",
            field.name()
        );
    }
}

/// Float values as bit patterns (`None` for nulls); empty for non-float arrays.
pub fn float_bits(a: &dyn Array) -> Vec<Option<u64>> {
    use arrow::array::AsArray;
    let n = a.len();
    match a.data_type() {
        DataType::Float16 => {
            let p = a.as_primitive::<Float16Type>();
            (0..n)
                .map(|i| p.is_valid(i).then(|| u64::from(p.value(i).to_bits())))
                .collect()
        }
        DataType::Float32 => {
            let p = a.as_primitive::<Float32Type>();
            (0..n)
                .map(|i| p.is_valid(i).then(|| u64::from(p.value(i).to_bits())))
                .collect()
        }
        DataType::Float64 => {
            let p = a.as_primitive::<Float64Type>();
            (0..n)
                .map(|i| p.is_valid(i).then(|| p.value(i).to_bits()))
                .collect()
        }
        _ => Vec::new(),
    }
}

/// Like [`assert_same`], as a boolean.
pub fn same(expected: &RecordBatch, actual: &RecordBatch) -> bool {
    expected.schema() == actual.schema()
        && expected.num_rows() == actual.num_rows()
        && expected
            .columns()
            .iter()
            .zip(actual.columns())
            .all(|(e, a)| {
                float_bits(e.as_ref()) == float_bits(a.as_ref()) && e.to_data() == a.to_data()
            })
}
