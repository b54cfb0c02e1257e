//! Damaged and hostile files through the scan engine's encoded-domain paths: predicates on
//! encoded data (`Chunk::filter`), selective decode (`Chunk::decode_selected`) and
//! dictionary reads (`decode_dictionary`, via `ScanBuilder::read_dictionary`).
//!
//! A small table whose columns reach most encodings is written with small blocks; then
//! many damaged variants of it (truncations, byte flips across the data region and at the
//! start of every segment, zero-filled tails, and footer flips with the footer checksum
//! re-sealed so the damage gets past it) are opened with segment checksums off, so the
//! damage reaches the decoders, and scanned with filters of every kind, projections of
//! every column, selective filters and dictionary reads. Every scan must end in `Ok` or
//! `Err` (an error naming the file): never a panic, a hang, or an allocation out of
//! proportion to the file. Each damaged file runs the scans that read the damaged chunk
//! (located from the footer), or all of them when the damage is not in one chunk.
//! `SIFT_HOSTILE_SCALE=10` samples ten times as many variants.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
#[path = "../../sift-format/tests/common/tracking.rs"]
mod tracking;

use std::ops::Range;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, mpsc};
use std::time::Duration;

use arrow::array::*;
use arrow::record_batch::RecordBatch;
use common::Rng;
use sift_format::{FOOTER_HEADER_LEN, SiftFile, TRAILER_LEN, seal_footer};
use sift_scan::{Expr, Literal, ScanBuilder, Table, col};
use tracking::tracked;

// ---------------------------------------------------------------------------------------
// Allocation tracking (sift-format's tracking allocator, included by path).

/// Far above anything a scan of this file needs (a few hundred KB), far below what a
/// hostile length would ask for.
const ALLOC_LIMIT: usize = 64 << 20;

// ---------------------------------------------------------------------------------------
// The sample table.

const ROWS: usize = 3500;
/// Three full blocks and a short one.
const BLOCK_ROWS: usize = 1024;
const BLOCKS: usize = ROWS.div_ceil(BLOCK_ROWS);

/// The table's columns, and the encodings they are shaped for.
const COLUMNS: [&str; 20] = [
    "s_low",      // low cardinality, some nulls: dictionary
    "s_view",     // low cardinality Utf8View, some nulls: dictionary
    "s_uniq",     // unique, sequential: front coding
    "s_text",     // four words of eight: FSST
    "i_sorted",   // non-decreasing: delta
    "i_small",    // 0..100, some nulls: bit-packing
    "i_runs",     // runs of random values: RLE
    "i_few",      // four wide values: dictionary
    "i_skewed",   // mostly one value: frequency (patch over a constant)
    "i_outliers", // small with rare huge values: patched bit-packing
    "u_big",      // u64 above i64::MAX: bit-packed over its own range
    "dec",        // decimal(12, 2): bit-packed, read as i128
    "f_price",    // two decimals, some nulls: ALP
    "f_real",     // x / 7: byte-stream split (the repeating sevenths cascade per byte)
    "f_rd",       // in [1, 2), random mantissas: ALP-RD
    "i_const",    // constant
    "b",          // booleans, some nulls: bitmap
    "b_runs",     // boolean runs
    "d",          // dates
    "i_sparse",   // all null in block 1, a third null elsewhere
];

/// String columns.
const STR_COLS: [&str; 4] = ["s_low", "s_view", "s_uniq", "s_text"];
/// String columns stored as dictionaries (`read_dictionary` hands out their codes).
const DICT_COLS: [&str; 2] = ["s_low", "s_view"];

const FEW: [i64; 4] = [3 << 40, 5 << 50, -7, 123_456_789];
const LOW: [&str; 7] = ["AIR", "AIR REG", "MAIL", "SHIP", "TRUCK", "RAIL", "FOB"];
const WORDS: [&str; 8] = [
    "final", "deposits", "sleep", "quickly", "ironic", "packages", "blithely", "among",
];

/// `u_big` values: 2^63 plus multiples of 2^20, all exact as `f64` (the reference compares
/// them as decimals through `f64`).
const U_BASE: u64 = 1 << 63;
const U_STEP: u64 = 1 << 20;

fn table() -> RecordBatch {
    let n = ROWS;
    let mut rng = Rng::new(0x5EED_CAFE);
    let mut nullable =
        |every: u64| -> Vec<bool> { (0..n).map(|_| rng.below(every) != 0).collect() };
    let v_low = nullable(9);
    let v_view = nullable(6);
    let v_small = nullable(12);
    let v_price = nullable(10);
    let v_bool = nullable(7);
    let v_sparse = nullable(3);
    let mut rng = Rng::new(0xD00D);
    let s_low: StringArray = (0..n).map(|i| v_low[i].then(|| *rng.pick(&LOW))).collect();
    let s_view: StringViewArray = (0..n).map(|i| v_view[i].then(|| *rng.pick(&LOW))).collect();
    let s_uniq = StringArray::from_iter_values(
        (0..n).map(|i| format!("Customer#{i:06}-{:04x}", rng.below(0x10000))),
    );
    let s_text = StringArray::from_iter_values((0..n).map(|_| {
        (0..4)
            .map(|_| *rng.pick(&WORDS))
            .collect::<Vec<_>>()
            .join(" ")
    }));
    let mut acc = 1000i64;
    let i_sorted = Int64Array::from_iter_values((0..n).map(|_| {
        acc += rng.range(0, 3);
        acc
    }));
    let i_small: Int32Array = (0..n)
        .map(|i| v_small[i].then(|| rng.range(0, 99) as i32))
        .collect();
    let mut run = 0;
    let i_runs = Int64Array::from_iter_values((0..n).map(|_| {
        if rng.below(60) == 0 {
            run = rng.range(-1000, 1000);
        }
        run
    }));
    let i_few = Int64Array::from_iter_values((0..n).map(|_| *rng.pick(&FEW)));
    let i_skewed = Int64Array::from_iter_values((0..n).map(|_| {
        if rng.below(10) < 8 {
            7
        } else {
            rng.range(0, 100_000)
        }
    }));
    let i_outliers = Int64Array::from_iter_values((0..n).map(|i| {
        if i % 97 == 0 {
            (rng.next() >> 4) as i64
        } else {
            rng.range(0, 63)
        }
    }));
    let u_big = UInt64Array::from_iter_values((0..n).map(|_| U_BASE + rng.below(1 << 16) * U_STEP));
    let dec =
        Decimal128Array::from_iter_values((0..n).map(|_| i128::from(rng.range(0, 1_000_000))))
            .with_precision_and_scale(12, 2)
            .unwrap();
    let f_price: Float64Array = (0..n)
        .map(|i| v_price[i].then(|| rng.range(0, 1_000_000) as f64 / 100.0))
        .collect();
    let f_real =
        Float64Array::from_iter_values((0..n).map(|_| rng.range(0, 1_000_000) as f64 / 7.0));
    let f_rd = Float64Array::from_iter_values(
        (0..n).map(|_| 1.0 + (rng.next() >> 12) as f64 / (1u64 << 52) as f64),
    );
    let i_const = Int64Array::from(vec![42i64; n]);
    let b: BooleanArray = (0..n)
        .map(|i| v_bool[i].then(|| rng.below(3) == 0))
        .collect();
    let b_runs = BooleanArray::from_iter((0..n).map(|i| Some((i / 300) % 2 == 0)));
    let d = Date32Array::from_iter_values((0..n).map(|_| rng.range(8000, 10_000) as i32));
    let i_sparse: Int64Array = (0..n)
        .map(|i| {
            (v_sparse[i] && !(BLOCK_ROWS..2 * BLOCK_ROWS).contains(&i))
                .then(|| rng.range(-500, 500))
        })
        .collect();
    let arrays: Vec<ArrayRef> = vec![
        Arc::new(s_low),
        Arc::new(s_view),
        Arc::new(s_uniq),
        Arc::new(s_text),
        Arc::new(i_sorted),
        Arc::new(i_small),
        Arc::new(i_runs),
        Arc::new(i_few),
        Arc::new(i_skewed),
        Arc::new(i_outliers),
        Arc::new(u_big),
        Arc::new(dec),
        Arc::new(f_price),
        Arc::new(f_real),
        Arc::new(f_rd),
        Arc::new(i_const),
        Arc::new(b),
        Arc::new(b_runs),
        Arc::new(d),
        Arc::new(i_sparse),
    ];
    RecordBatch::try_from_iter(COLUMNS.into_iter().zip(arrays)).unwrap()
}

/// The valid sample: its bytes, the table it holds, and where each chunk lives.
struct Sample {
    bytes: Vec<u8>,
    batch: RecordBatch,
    /// Per chunk (block, column): its segments' byte range in the file.
    data_ranges: Vec<(Target, Range<usize>)>,
    /// Per chunk: its metadata's byte range in the footer (relative to the footer start).
    footer_ranges: Vec<(Target, Range<usize>)>,
}

/// The chunk some damage falls in, when known: scans that read neither its column nor its
/// block are skipped for that damage.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Target {
    block: Option<usize>,
    column: Option<usize>,
}

impl Target {
    fn of(ranges: &[(Target, Range<usize>)], pos: usize) -> Target {
        ranges
            .iter()
            .find(|(_, r)| r.contains(&pos))
            .map_or(Target::default(), |(t, _)| *t)
    }
}

fn sample() -> &'static Sample {
    static SAMPLE: OnceLock<Sample> = OnceLock::new();
    SAMPLE.get_or_init(|| {
        let batch = table();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sample.sift");
        common::write_sift(&path, &batch, BLOCK_ROWS);
        let bytes = std::fs::read(&path).unwrap();
        let file = SiftFile::open(&path).unwrap();
        let (data_ranges, footer_ranges) = chunk_ranges(&file, &bytes);
        Sample {
            bytes,
            batch,
            data_ranges,
            footer_ranges,
        }
    })
}

/// Where each chunk's segments lie in the file, and its metadata in the footer. The
/// footer's chunk offset table gives each chunk's record; a block's entry in the block
/// rows table belongs to the whole block. The header, schema and tables stay untargeted
/// (every scan runs for damage there).
#[allow(clippy::type_complexity)]
fn chunk_ranges(
    file: &SiftFile,
    bytes: &[u8],
) -> (Vec<(Target, Range<usize>)>, Vec<(Target, Range<usize>)>) {
    let start = footer_offset(bytes);
    let footer = &bytes[start..bytes.len() - TRAILER_LEN];
    let u32_at = |at: usize| u32::from_le_bytes(footer[at..at + 4].try_into().unwrap()) as usize;
    let (columns, blocks) = (file.num_columns(), file.num_blocks());
    let rows_table = FOOTER_HEADER_LEN + u32_at(16);
    let chunk_table = rows_table + 4 * blocks + 8 * (columns + 1) + u32_at(20) + u32_at(24);
    let chunks = chunk_table + 4 * (blocks * columns + 1);
    let mut data = Vec::new();
    let mut meta = Vec::new();
    for b in 0..blocks {
        let whole_block = Target {
            block: Some(b),
            column: None,
        };
        meta.push((whole_block, rows_table + 4 * b..rows_table + 4 * b + 4));
        for c in 0..columns {
            let t = Target {
                block: Some(b),
                column: Some(c),
            };
            for s in &file.chunk_meta(b, c).unwrap().segments {
                data.push((t, s.offset as usize..(s.offset + s.len) as usize));
            }
            let i = b * columns + c;
            let record =
                chunks + u32_at(chunk_table + 4 * i)..chunks + u32_at(chunk_table + 4 * i + 4);
            meta.push((t, record));
        }
    }
    assert_eq!(chunks + u32_at(32), footer.len());
    (data, meta)
}

/// Where the footer starts (from the trailer of a valid file).
fn footer_offset(bytes: &[u8]) -> usize {
    let n = bytes.len();
    let len = u64::from_le_bytes(
        bytes[n - TRAILER_LEN..n - TRAILER_LEN + 8]
            .try_into()
            .unwrap(),
    );
    n - TRAILER_LEN - len as usize
}

/// Where a version-3 footer's field records and their offset table are, from its header.
struct Sections {
    fields: Range<usize>,
    field_table: usize,
}

impl Sections {
    fn of(footer: &[u8]) -> Sections {
        let u32_at =
            |at: usize| u32::from_le_bytes(footer[at..at + 4].try_into().unwrap()) as usize;
        let (columns, blocks) = (u32_at(8), u32_at(12));
        let field_table =
            FOOTER_HEADER_LEN + u32_at(16) + 4 * blocks + 4 * (columns + 1) + u32_at(20);
        let fields = field_table + 4 * (columns + 1);
        Sections {
            fields: fields..fields + u32_at(24),
            field_table,
        }
    }

    fn entry(footer: &[u8], table: usize, i: usize) -> usize {
        u32::from_le_bytes(footer[table + 4 * i..table + 4 * i + 4].try_into().unwrap()) as usize
    }
}

/// `bytes` with every footer checksum recomputed over the (possibly damaged) footer, as a
/// hostile writer would.
fn reseal(mut bytes: Vec<u8>) -> Vec<u8> {
    let start = footer_offset(&bytes);
    let end = bytes.len() - TRAILER_LEN;
    let crc = seal_footer(&mut bytes[start..end]).unwrap_or(0);
    bytes[end + 8..end + 12].copy_from_slice(&crc.to_le_bytes());
    bytes
}

// ---------------------------------------------------------------------------------------
// Deterministic sampling.

/// A tiny LCG (Knuth's MMIX constants), the high bits as output.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// How many variants to try per kind of damage; `SIFT_HOSTILE_SCALE=10` for a deeper
/// local run.
fn budget(base: usize) -> usize {
    let scale = std::env::var("SIFT_HOSTILE_SCALE")
        .ok()
        .and_then(|s| s.parse::<usize>().ok())
        .unwrap_or(1);
    base * scale.max(1)
}

/// `count` positions in `range`: one at a random offset in each of `count` equal strata;
/// when `count` exceeds the range, every position, as many times as fit (each time damaged
/// differently).
fn spread(rng: &mut Lcg, range: Range<usize>, count: usize) -> Vec<usize> {
    let n = range.len();
    if n <= count {
        return range.cycle().take(count / n.max(1) * n).collect();
    }
    let mut v: Vec<usize> = (0..count)
        .map(|k| {
            let (lo, hi) = (k * n / count, (k + 1) * n / count);
            range.start + lo + rng.below(hi - lo)
        })
        .collect();
    v.dedup();
    v
}

/// A damaging replacement for `byte`: small flips, the varint continuation bit, all bits,
/// the extremes, off by one, or a random byte; never `byte` itself.
fn mutate(rng: &mut Lcg, byte: u8) -> u8 {
    let m = match rng.below(9) {
        0 => byte ^ 0x01,
        1 => byte ^ 0x80,
        2 => byte ^ 0xFF,
        3 => 0x00,
        4 => 0xFF,
        5 => byte ^ (1 << rng.below(8)),
        // Off by one: a count, width or index just past what the data holds.
        6 => byte.wrapping_add(1),
        7 => byte.wrapping_sub(1),
        _ => rng.below(256) as u8,
    };
    if m == byte { !byte } else { m }
}

// ---------------------------------------------------------------------------------------
// The scans.

/// One scan of the table: what it reads and how.
#[derive(Clone)]
struct ScanSpec {
    name: String,
    filter: Option<Expr>,
    /// Columns to return (all if `None`).
    projection: Option<Vec<&'static str>>,
    /// Columns returned with `read_dictionary`.
    dictionary: Vec<&'static str>,
    rows: Option<Range<u64>>,
    limit: Option<u64>,
}

impl ScanSpec {
    fn new(name: impl Into<String>, filter: Option<Expr>) -> Self {
        ScanSpec {
            name: name.into(),
            filter,
            projection: None,
            dictionary: Vec::new(),
            rows: None,
            limit: None,
        }
    }

    fn project(mut self, columns: &[&'static str]) -> Self {
        self.projection = Some(columns.to_vec());
        self
    }

    /// Reads the projected string columns of `among` as dictionaries.
    fn dictionaries(mut self, among: &[&'static str]) -> Self {
        self.dictionary = among
            .iter()
            .copied()
            .filter(|c| self.projection.as_ref().is_none_or(|p| p.contains(c)))
            .collect();
        if !self.dictionary.is_empty() {
            self.name = format!(
                "{}, {} as dictionaries",
                self.name,
                self.dictionary.join("+")
            );
        }
        self
    }

    fn rows(mut self, r: Range<u64>) -> Self {
        self.name = format!("{}, rows {}..{}", self.name, r.start, r.end);
        self.rows = Some(r);
        self
    }

    fn builder(&self, t: &Table) -> ScanBuilder {
        let mut b = t.scan();
        if let Some(p) = &self.projection {
            b = b.project(p.iter().copied());
        }
        if let Some(f) = &self.filter {
            b = b.filter(f.clone());
        }
        if !self.dictionary.is_empty() {
            b = b.read_dictionary(self.dictionary.iter().copied());
        }
        if let Some(r) = &self.rows {
            b = b.rows(r.clone());
        }
        if let Some(n) = self.limit {
            b = b.limit(n);
        }
        b
    }

    /// Runs the scan to the end: the rows it returned.
    fn run(&self, t: &Table) -> sift_scan::Result<usize> {
        let mut rows = 0;
        for batch in self.builder(t).build()? {
            rows += batch?.num_rows();
        }
        Ok(rows)
    }

    /// Whether damage to `t` can reach this scan (it reads the column, in the block).
    fn reads(&self, t: Target) -> bool {
        let column_read = t.column.is_none_or(|c| {
            let name = COLUMNS[c];
            self.projection.as_ref().is_none_or(|p| p.contains(&name))
                || self
                    .filter
                    .as_ref()
                    .is_some_and(|f| f.columns().iter().any(|x| x == name))
        });
        let block_read = match (t.block, &self.rows) {
            (Some(b), Some(r)) => {
                let (lo, hi) = ((b * BLOCK_ROWS) as u64, ((b + 1) * BLOCK_ROWS) as u64);
                r.start < hi && r.end > lo
            }
            _ => true,
        };
        column_read && block_read
    }

    /// The rows the scan returns on the valid table, by the reference evaluator (on a copy
    /// of the table with `u64` columns as decimals, which it compares exactly).
    fn expected_rows(&self, batch: &RecordBatch) -> usize {
        let columns: Vec<ArrayRef> = batch
            .columns()
            .iter()
            .map(|a| match a.data_type() {
                arrow::datatypes::DataType::UInt64 => {
                    arrow::compute::cast(a, &arrow::datatypes::DataType::Decimal128(38, 0)).unwrap()
                }
                _ => a.clone(),
            })
            .collect();
        let batch = RecordBatch::try_from_iter(COLUMNS.into_iter().zip(columns)).unwrap();
        let r = self.rows.clone().unwrap_or(0..batch.num_rows() as u64);
        let end = (r.end as usize).min(batch.num_rows());
        let slice = batch.slice(r.start as usize, end - r.start as usize);
        let n = common::filter_batch(&slice, self.filter.as_ref()).num_rows();
        self.limit.map_or(n, |l| n.min(l as usize))
    }
}

/// Predicates on every column, each matching some of its rows.
fn predicates() -> Vec<Expr> {
    let date = |s: &str| Literal::date(s).unwrap();
    let u = |k: u64| U_BASE + k * U_STEP;
    vec![
        col("s_low").eq("AIR"),
        col("s_low").in_list(["MAIL", "SHIP", "NONE"]),
        col("s_low").like("%AI%"),
        col("s_low").gt("M"),
        col("s_view").eq("RAIL"),
        col("s_view").starts_with("TR"),
        col("s_view").lt("FOC"),
        col("s_uniq").eq("Customer#001234-0000"),
        col("s_uniq").like("%#0012%"),
        col("s_uniq").lt("Customer#000500"),
        col("s_uniq").starts_with("Customer#0031"),
        col("s_uniq").like("Customer#002%"),
        col("s_text").like("%ironic%"),
        col("s_text").eq("final final final final"),
        col("s_text").in_list(["ironic sleep among final", "final final final final"]),
        col("i_sorted").between(2000, 2600),
        col("i_sorted").gte(3000),
        col("i_small").lt(10),
        col("i_small").between(20, 30),
        col("i_small").in_list([1, 5, 77]),
        col("i_runs").between(-100, 100),
        col("i_runs").in_list([0, 7, 500]),
        col("i_runs").lt(0),
        col("i_few").eq(-7),
        col("i_few").in_list([3i64 << 40, 123_456_789]),
        col("i_few").gt(0),
        col("i_skewed").eq(7),
        col("i_skewed").gt(50_000),
        col("i_outliers").gt(60),
        col("i_outliers").in_list([0, 1, 2, 3]),
        col("u_big").gt(u(40_000)),
        col("u_big").between(u(100), u(9_000)),
        col("dec").lt(1000.5),
        col("dec").between(Literal::Int(100), Literal::Float(2500.25)),
        col("f_price").lt(1000.0),
        col("f_price").between(100.5, 2000.25),
        col("f_price").in_list([12.34, 99.99, 5000.0]),
        col("f_real").gt(100_000.0),
        col("f_real").between(10.0, 50_000.0),
        col("f_rd").lt(1.5),
        col("i_const").eq(42),
        col("i_const").lt(0),
        col("b").eq(true),
        col("b_runs").eq(false),
        col("d").between(date("1992-01-01"), date("1994-06-30")),
        col("d").lt(date("1993-01-01")),
        col("i_sparse").lt(0),
        col("s_low").is_null(),
        col("s_view").is_not_null(),
        col("i_small").is_null(),
        col("f_price").is_not_null(),
        col("b").is_null(),
        col("i_sparse").is_not_null(),
    ]
}

/// A window of 15 rows in block `b` (a sparse selection from the start: every predicate
/// decodes its rows selectively).
fn window(b: usize) -> Range<u64> {
    let start = (b * BLOCK_ROWS + 100) as u64;
    start..start + 15
}

/// Every scan; each damaged file runs those that read the damaged chunk.
fn scans() -> &'static [ScanSpec] {
    static SCANS: OnceLock<Vec<ScanSpec>> = OnceLock::new();
    SCANS.get_or_init(|| {
        let preds = predicates();
        let mut v = Vec::new();
        // Each column alone: decoded whole, and strings as dictionaries (stored ones hand
        // out their codes, the others are dictionary-encoded after decoding).
        for c in COLUMNS {
            v.push(ScanSpec::new(format!("{c} whole"), None).project(&[c]));
        }
        for c in STR_COLS {
            v.push(
                ScanSpec::new(format!("{c} whole"), None)
                    .project(&[c])
                    .dictionaries(&STR_COLS),
            );
        }
        // Each predicate on the encoded chunk (filter_chunk), projecting its column (a
        // selection: decoded selectively, as a dictionary for strings); negated in a
        // window of each block (decode_selected for the predicate too).
        for p in &preds {
            let c = p.columns()[0].clone();
            let c = COLUMNS.into_iter().find(|n| *n == c).unwrap();
            v.push(
                ScanSpec::new(p.to_string(), Some(p.clone()))
                    .project(&[c])
                    .dictionaries(&DICT_COLS),
            );
            for b in 0..BLOCKS {
                v.push(
                    ScanSpec::new(format!("NOT {p}"), Some(p.clone().not()))
                        .project(&[c])
                        .rows(window(b)),
                );
            }
        }
        // Every column at once, whole and as dictionaries.
        v.push(ScanSpec::new("every column", None));
        v.push(ScanSpec::new("every column", None).dictionaries(&DICT_COLS));
        // Combinations: OR, NOT, AND of several kinds, their columns projected.
        let combos = [
            col("i_small")
                .lt(5)
                .or(col("s_low").eq("AIR"))
                .or(col("f_price").gt(9000.0)),
            col("s_uniq").like("%7%").or(col("b").eq(true)).not(),
            col("i_runs")
                .gte(0)
                .and(col("s_text").like("%a%"))
                .and(col("f_real").lt(140_000.0))
                .and(col("b_runs").eq(true).not()),
            col("i_skewed")
                .in_list([7])
                .not()
                .or(col("i_sparse").is_null())
                .or(col("s_view").eq("SHIP")),
            col("u_big")
                .lt(U_BASE + 30_000 * U_STEP)
                .and(col("dec").gt(20))
                .or(col("i_outliers").gt(1000).not()),
        ];
        for e in combos {
            let columns: Vec<&'static str> = COLUMNS
                .into_iter()
                .filter(|c| e.columns().iter().any(|x| x == c))
                .collect();
            let s = ScanSpec::new(e.to_string(), Some(e)).project(&columns);
            v.push(s.clone().dictionaries(&DICT_COLS));
            v.push(s);
        }
        // Selective: a narrow first predicate, then every column's predicate on the few
        // rows left (decode_selected on each), every column projected from those rows.
        let any = Expr::Or(preds.clone());
        let narrow = col("i_sorted").between(2000, 2040);
        let s = ScanSpec::new(
            "narrow range AND (OR of every predicate)",
            Some(narrow.and(any.clone())),
        );
        v.push(s.clone().dictionaries(&DICT_COLS));
        v.push(s);
        // A window of each block, an OR over every predicate: each decodes selectively.
        for b in 0..BLOCKS {
            let s = ScanSpec::new("OR of every predicate", Some(any.clone())).rows(window(b));
            v.push(if b % 2 == 0 {
                s.dictionaries(&DICT_COLS)
            } else {
                s
            });
            let all_valid = Expr::And(
                COLUMNS
                    .into_iter()
                    .map(|c| col(c).is_not_null().or(col("i_const").eq(42)))
                    .collect(),
            );
            v.push(
                ScanSpec::new("AND of every column's not-null", Some(all_valid)).rows(window(b)),
            );
        }
        let mut s = ScanSpec::new("i_small >= 50, limit 700", Some(col("i_small").gte(50)))
            .dictionaries(&DICT_COLS);
        s.limit = Some(700);
        v.push(s);
        v
    })
}

// ---------------------------------------------------------------------------------------
// Running scans on damaged files.

/// One damaged file: what was done, its bytes, and the chunk it hits (if known).
struct Variant {
    damage: String,
    bytes: Vec<u8>,
    target: Target,
}

/// What the scans of one damaged file did.
#[derive(Default)]
struct Outcome {
    problems: Vec<String>,
    opened: bool,
    /// Scans that returned rows (the damage was harmless or went unnoticed).
    ok: usize,
    /// Scans that returned an error.
    failed: usize,
}

/// How long one damaged file may take for all its scans before it counts as a hang.
const TIMEOUT: Duration = Duration::from_secs(30);

/// Writes the variant to `path`, opens it with checksums off and runs the scans that read
/// the damaged chunk, each under `catch_unwind` and allocation tracking, on another thread
/// with a timeout. The problems name the damage and the scan.
fn attempt(path: &Path, v: Variant) -> Outcome {
    std::fs::write(path, &v.bytes).unwrap();
    let current = Arc::new(Mutex::new(String::from("open")));
    let (tx, rx) = mpsc::channel();
    let (p, cur, target) = (path.to_path_buf(), current.clone(), v.target);
    std::thread::spawn(move || {
        let _ = tx.send(run_scans(&p, target, &cur));
    });
    match rx.recv_timeout(TIMEOUT) {
        Ok(mut out) => {
            for p in &mut out.problems {
                *p = format!("{}: {p}", v.damage);
            }
            out
        }
        Err(_) => panic!(
            "{}: scan {:?} gave no result after {} s (hang?)",
            v.damage,
            current.lock().map(|c| c.clone()).unwrap_or_default(),
            TIMEOUT.as_secs()
        ),
    }
}

fn run_scans(path: &Path, target: Target, current: &Mutex<String>) -> Outcome {
    let mut out = Outcome::default();
    let file = path.display().to_string();
    let problems = &mut out.problems;
    let mut check = |what: &str, r: std::thread::Result<Option<String>>, largest: usize| {
        if largest > ALLOC_LIMIT {
            problems.push(format!("{what}: allocated {largest} bytes"));
        }
        match r {
            Err(p) => problems.push(format!(
                "{what}: PANIC: {}",
                common::panic_message(p.as_ref())
            )),
            Ok(Some(e)) if !e.contains(&file) => {
                problems.push(format!("{what}: error does not name the file: {e}"))
            }
            Ok(_) => {}
        }
    };
    let (opened, largest) =
        tracked(|| catch_unwind(AssertUnwindSafe(|| Table::open_with(path, false))));
    let table = match opened {
        Ok(Ok(t)) => {
            check("open", Ok(None), largest);
            t
        }
        Ok(Err(e)) => {
            check("open", Ok(Some(e.to_string())), largest);
            return out;
        }
        Err(p) => {
            check("open", Err(p), largest);
            return out;
        }
    };
    let (mut ok, mut failed) = (0, 0);
    for s in scans().iter().filter(|s| s.reads(target)) {
        if let Ok(mut c) = current.lock() {
            c.clone_from(&s.name);
        }
        let (r, largest) = tracked(|| catch_unwind(AssertUnwindSafe(|| s.run(&table))));
        let r = r.map(|r| r.err().map(|e| e.to_string()));
        match &r {
            Ok(None) => ok += 1,
            Ok(Some(_)) => failed += 1,
            Err(_) => {}
        }
        check(&format!("scan {:?}", s.name), r, largest);
    }
    out.opened = true;
    (out.ok, out.failed) = (ok, failed);
    out
}

/// Runs every variant, failing with every problem found (panics, huge allocations, errors
/// that do not name the file); returns how many variants opened.
fn check_variants(what: &str, variants: Vec<Variant>) -> usize {
    let dir = tempfile::tempdir().unwrap();
    let path: PathBuf = dir.path().join("damaged.sift");
    let mut problems = Vec::new();
    let n = variants.len();
    let (mut opened, mut ok, mut failed) = (0, 0, 0);
    for v in variants {
        let out = attempt(&path, v);
        problems.extend(out.problems);
        opened += usize::from(out.opened);
        ok += out.ok;
        failed += out.failed;
    }
    eprintln!(
        "{what}: {n} variants, {opened} opened; {} scans: {ok} returned rows, {failed} failed",
        ok + failed
    );
    assert!(
        problems.is_empty(),
        "{what}: {} problems in {n} variants:\n{}",
        problems.len(),
        problems
            .iter()
            .take(40)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
    opened
}

/// The sample with byte `p` replaced by `m`.
fn with_byte(p: usize, m: u8) -> Vec<u8> {
    let mut b = sample().bytes.clone();
    b[p] = m;
    b
}

// ---------------------------------------------------------------------------------------
// The tests.

#[test]
fn sample_reaches_the_encodings_and_scans_match_the_reference() {
    let s = sample();
    assert!(s.bytes.len() < 400_000, "{} bytes", s.bytes.len());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sample.sift");
    std::fs::write(&path, &s.bytes).unwrap();
    let file = SiftFile::open(&path).unwrap();
    assert_eq!(file.num_blocks(), BLOCKS);
    let mut seen = std::collections::BTreeSet::new();
    for block in &file.decode_footer().unwrap().blocks {
        for chunk in &block.columns {
            seen.extend(chunk.encoding.nodes.iter().map(|n| n.name()));
        }
    }
    for scheme in [
        "dict", "fsst", "delta", "for", "rle", "patch", "alp", "alprd", "bss", "const", "bitmap",
        "prefix",
    ] {
        assert!(seen.contains(scheme), "no {scheme} in {seen:?}");
    }
    // The roots the encoded-domain paths branch on.
    for (c, scheme) in [
        ("s_low", "dict"),
        ("s_view", "dict"),
        ("s_uniq", "prefix"),
        ("i_runs", "rle"),
        ("i_few", "dict"),
        ("i_outliers", "patch"),
        ("u_big", "for"),
        ("dec", "for"),
        ("f_price", "alp"),
        ("f_real", "bss"),
        ("f_rd", "alprd"),
        ("i_const", "const"),
    ] {
        let c = COLUMNS.iter().position(|n| *n == c).unwrap();
        let root = file.chunk_meta(0, c).unwrap().encoding.nodes[0].name();
        assert_eq!(root, scheme, "{}", COLUMNS[c]);
    }
    // The footer checksum is the one `reseal` computes.
    assert_eq!(reseal(s.bytes.clone()), s.bytes);
    // Every chunk's segments and metadata were located.
    assert_eq!(
        s.data_ranges.len(),
        file.decode_footer()
            .unwrap()
            .blocks
            .iter()
            .map(|b| b.columns.iter().map(|c| c.segments.len()).sum::<usize>())
            .sum::<usize>()
    );
    let chunks = BLOCKS * COLUMNS.len();
    let targeted = s
        .footer_ranges
        .iter()
        .filter(|(t, _)| t.column.is_some())
        .count();
    assert_eq!(targeted, chunks, "every chunk's record is located");
    // Every scan succeeds on the valid file and returns what the reference returns.
    let t = Table::open(&path).unwrap();
    for spec in scans() {
        let got = spec
            .run(&t)
            .unwrap_or_else(|e| panic!("{}: {e}", spec.name));
        assert_eq!(got, spec.expected_rows(&s.batch), "{}", spec.name);
    }
    // The selective scan does select few rows (so its later predicates and projections
    // decode selectively).
    let narrow = scans()
        .iter()
        .find(|s| s.name.starts_with("narrow"))
        .unwrap();
    let n = narrow.expected_rows(&s.batch);
    assert!(n > 0 && n < ROWS / 50, "{}: {n} rows", narrow.name);
}

#[test]
fn truncated_files_are_errors() {
    let s = sample();
    let n = s.bytes.len();
    let mut rng = Lcg(1);
    // Every length near both ends, a spread in between.
    let mut lengths: Vec<usize> = (0..64).chain(n - 64..n).collect();
    lengths.extend(spread(&mut rng, 0..n, budget(150)));
    lengths.sort_unstable();
    lengths.dedup();
    let variants = lengths
        .into_iter()
        .map(|len| Variant {
            damage: format!("truncated to {len} bytes"),
            bytes: s.bytes[..len].to_vec(),
            target: Target::default(),
        })
        .collect();
    let opened = check_variants("truncation", variants);
    assert_eq!(opened, 0, "a truncated file opened");
}

#[test]
fn damaged_data_never_panics_in_scans() {
    let s = sample();
    let footer = footer_offset(&s.bytes);
    let mut rng = Lcg(2);
    let mut variants = Vec::new();
    let at = |p: usize| Target::of(&s.data_ranges, p);
    // Single bytes across the data region.
    for p in spread(&mut rng, 8..footer, budget(400)) {
        let m = mutate(&mut rng, s.bytes[p]);
        variants.push(Variant {
            damage: format!("data byte {p} := {m:#04x}"),
            bytes: with_byte(p, m),
            target: at(p),
        });
    }
    // The first bytes of every segment, where lengths, offsets, symbol tables and headers
    // live, and its last byte.
    for (k, (t, r)) in s.data_ranges.iter().enumerate() {
        if r.is_empty() {
            continue;
        }
        for _ in 0..budget(2) {
            let p = r.start + rng.below(r.len().min(16));
            let m = mutate(&mut rng, s.bytes[p]);
            variants.push(Variant {
                damage: format!("segment {k} byte {p} := {m:#04x}"),
                bytes: with_byte(p, m),
                target: *t,
            });
        }
        let p = r.end - 1;
        let m = mutate(&mut rng, s.bytes[p]);
        variants.push(Variant {
            damage: format!("segment {k} last byte {p} := {m:#04x}"),
            bytes: with_byte(p, m),
            target: *t,
        });
    }
    // Runs of damage, as a torn write would leave: 64 bytes of 0xFF, and a zeroed tail of
    // the data region.
    for p in spread(&mut rng, 8..footer, budget(30)) {
        let mut b = s.bytes.clone();
        let end = (p + 64).min(footer);
        b[p..end].fill(0xFF);
        let target = if at(p) == at(end - 1) {
            at(p)
        } else {
            Target::default()
        };
        variants.push(Variant {
            damage: format!("bytes {p}..{end} := 0xff"),
            bytes: b,
            target,
        });
    }
    for p in spread(&mut rng, 8..footer, budget(6)) {
        let mut b = s.bytes.clone();
        b[p..footer].fill(0);
        variants.push(Variant {
            damage: format!("bytes {p}..{footer} (the data's tail) := 0"),
            bytes: b,
            target: Target::default(),
        });
    }
    // The data region cut short under an intact footer.
    for cut in spread(&mut rng, 8..footer, budget(10)) {
        let mut b = s.bytes[..cut].to_vec();
        b.extend_from_slice(&s.bytes[footer..]);
        variants.push(Variant {
            damage: format!("data cut at {cut}, footer kept"),
            bytes: b,
            target: Target::default(),
        });
    }
    check_variants("data damage", variants);
}

#[test]
fn damaged_footers_with_valid_checksums_never_panic_in_scans() {
    // The footer checksum only catches accidents; a hostile footer has a valid one.
    let s = sample();
    let footer = footer_offset(&s.bytes);
    let end = s.bytes.len() - TRAILER_LEN;
    let mut rng = Lcg(3);
    let mut variants = Vec::new();
    let at = |p: usize| Target::of(&s.footer_ranges, p - footer);
    for p in spread(&mut rng, footer..end, budget(1500)) {
        let m = mutate(&mut rng, s.bytes[p]);
        variants.push(Variant {
            damage: format!("footer byte {} := {m:#04x} (resealed)", p - footer),
            bytes: reseal(with_byte(p, m)),
            target: at(p),
        });
    }
    // Two bytes at once, so a varint and its neighbour both change.
    for p in spread(&mut rng, footer..end - 1, budget(200)) {
        let (m0, m1) = (
            mutate(&mut rng, s.bytes[p]),
            mutate(&mut rng, s.bytes[p + 1]),
        );
        let mut b = with_byte(p, m0);
        b[p + 1] = m1;
        let target = if at(p) == at(p + 1) {
            at(p)
        } else {
            Target::default()
        };
        variants.push(Variant {
            damage: format!(
                "footer bytes {}..{} := {m0:#04x} {m1:#04x} (resealed)",
                p - footer,
                p - footer + 2
            ),
            bytes: reseal(b),
            target,
        });
    }
    // Each field's type, nullability and metadata count (the first bytes of its record):
    // type confusion, and nulls where the schema allows none.
    let l = Sections::of(&s.bytes[footer..end]);
    for (c, name) in COLUMNS.into_iter().enumerate() {
        let record =
            |i| footer + l.fields.start + Sections::entry(&s.bytes[footer..], l.field_table, i);
        let from = record(c);
        for p in from..record(c + 1).min(from + 4) {
            for m in [0x00, s.bytes[p] ^ 0x01, s.bytes[p].wrapping_add(1)] {
                if m == s.bytes[p] {
                    continue;
                }
                variants.push(Variant {
                    damage: format!(
                        "footer byte {} (field {name}) := {m:#04x} (resealed)",
                        p - footer
                    ),
                    bytes: reseal(with_byte(p, m)),
                    target: Target {
                        block: None,
                        column: Some(c),
                    },
                });
            }
        }
    }
    check_variants("footer damage", variants);
}

// ---------------------------------------------------------------------------------------
// Column types the engine cannot read, refused before any block is decoded.

/// A Parquet file of 32 rows: `id` (Int64) and `m`, a list of 32,768 decimals of 40
/// digits (Decimal256, which Sift does not store) in every row. Compressed, the file is
/// small; decoded, `m` takes 32 MiB, which a scan would hold before it could refuse it.
fn unsupported_parquet(path: &Path) {
    use arrow::buffer::OffsetBuffer;
    use arrow::datatypes::{Field, i256};
    let (rows, per_row) = (32, 1 << 15);
    let values =
        Decimal256Array::from_iter_values(std::iter::repeat_n(i256::from(7), rows * per_row))
            .with_precision_and_scale(40, 0)
            .unwrap();
    let item = Arc::new(Field::new("item", values.data_type().clone(), false));
    let offsets = OffsetBuffer::from_lengths(std::iter::repeat_n(per_row, rows));
    let m = ListArray::new(item, offsets, Arc::new(values), None);
    let id = Int64Array::from_iter_values(0..rows as i64);
    let batch = RecordBatch::try_from_iter([
        ("id", Arc::new(id) as ArrayRef),
        ("m", Arc::new(m) as ArrayRef),
    ])
    .unwrap();
    let props = parquet::file::properties::WriterProperties::builder()
        .set_compression(parquet::basic::Compression::ZSTD(Default::default()))
        .build();
    let file = std::fs::File::create(path).unwrap();
    let mut w = parquet::arrow::ArrowWriter::try_new(file, batch.schema(), Some(props)).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
}

/// Projecting or filtering a Parquet column of a type Sift does not read is an error
/// naming the column and its type, raised when the scan starts: no row group is decoded
/// (allocations above 16 MiB are refused outright, so decoding the 32 MiB column would
/// abort the test). A scan that does not read the column runs.
#[test]
fn unsupported_parquet_columns_are_refused_before_reading() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("decimal256.parquet");
    unsupported_parquet(&path);
    assert!(std::fs::metadata(&path).unwrap().len() < 64 << 10);
    let table = Table::open(&path).unwrap();
    let scans: Vec<(&str, ScanBuilder)> = vec![
        ("all columns", table.scan()),
        ("projected", table.scan().project(["id", "m"])),
        (
            "filtered",
            table.scan().project(["id"]).filter(col("m").is_not_null()),
        ),
    ];
    for (name, scan) in scans {
        let (result, largest) = tracking::tracked_refusing_above(16 << 20, || {
            scan.into_iter().collect::<Result<Vec<_>, _>>()
        });
        let msg = match result {
            Ok(b) => panic!("{name}: read {} batches", b.len()),
            Err(e) => e.to_string(),
        };
        assert!(largest < 1 << 20, "{name}: allocated {largest} bytes");
        for want in [
            &path.display().to_string(),
            "column 'm'",
            "Decimal256(40, 0)",
        ] {
            assert!(msg.contains(want), "{name}: {msg}");
        }
    }
    let ids: usize = table
        .scan()
        .project(["id"])
        .filter(col("id").lt(10i64))
        .into_iter()
        .map(|b| b.unwrap().num_rows())
        .sum();
    assert_eq!(ids, 10);
}
