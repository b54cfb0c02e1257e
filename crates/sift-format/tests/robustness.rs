//! Damaged and hostile files: truncation, byte corruption (with and without checksums),
//! footer mutations with a valid footer checksum, and hand-crafted hostile footers. Every
//! case must end in an error (or, where the damage is harmless, a result), never a panic, a
//! hang, or an allocation out of proportion to the file.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
#[path = "common/tracking.rs"]
mod tracking;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock, mpsc};
use std::time::Duration;

use arrow::array::*;
use arrow::datatypes::*;
use arrow::record_batch::RecordBatch;
use common::{Nulls, hash};
use sift_encoding::{ColumnEncoding, Node, Validity};
const DECODE_FLOOR: usize = 64 << 20;
use sift_format::{
    BlockMeta, ChunkMeta, ChunkStats, ColumnType, Error, FORMAT_VERSION, Footer, MAGIC, NESTED_KEY,
    ReadOptions, Segment, SiftFile, SiftWriter, StoredField, TRAILER_LEN, Unit, WriteOptions,
    footer_checksum, seal_footer,
};
use tracking::{tracked, tracked_refusing_above};

/// Far above anything these small files need, far below what a hostile length would ask.
const ALLOC_LIMIT: usize = 16 << 20;

/// A valid sample file: its bytes and what it holds.
struct Sample {
    name: &'static str,
    bytes: Vec<u8>,
    batch: RecordBatch,
}

fn mixed_batch(n: usize) -> RecordBatch {
    let keep = [
        "bool",
        "i32",
        "i64_narrow",
        "u64_narrow",
        "f64",
        "f32",
        "utf8_low",
        "utf8_high",
        "utf8_view_low",
        "binary_low",
        "fsb_16_3",
        "dec_10_2",
        "ts_Microsecond_UTC",
        "null",
    ];
    let mut cols: Vec<(Field, ArrayRef)> = common::all_types(n, Nulls::Some)
        .into_iter()
        .filter(|(f, _)| keep.contains(&f.name().as_str()))
        .collect();
    // A column that is entirely null in some blocks and not in others.
    let sparse: Int64Array = (0..n).map(|i| (i >= 250).then_some(i as i64)).collect();
    cols.push((
        Field::new("sparse", DataType::Int64, true),
        Arc::new(sparse),
    ));
    // Strings no symbol table shortens (4 to 10 characters drawn from 64 by a hash), with
    // nulls: stored as plain bytes, which the hostile cases tamper with.
    const CHARS: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let random: StringArray = (0..n)
        .map(|i| {
            let h = common::hash(i as u64);
            (i % 7 != 3).then(|| {
                (0..4 + (h >> 60) % 7)
                    .map(|k| char::from(CHARS[((h >> (6 * k)) % 64) as usize]))
                    .collect::<String>()
            })
        })
        .collect();
    cols.push((
        Field::new("utf8_random", DataType::Utf8, true),
        Arc::new(random),
    ));
    common::batch_of(cols)
}

/// Nested columns: a list of structs, a struct holding a list, a map, and two flat int
/// columns whose chunks the hostile cases put in place of list lengths.
fn nested_batch(n: usize) -> RecordBatch {
    use arrow::array::{ListArray, MapBuilder, StringBuilder, StructArray};
    use arrow::buffer::OffsetBuffer;
    let id: Int32Array = (0..n as i32).map(Some).collect();
    let neg: Int32Array = (0..n as i32).map(|i| Some(-i - 1)).collect();
    let lengths: Vec<usize> = (0..n).map(|i| i % 4).collect();
    let elements: usize = lengths.iter().sum();
    let fields = Fields::from(vec![
        Field::new("a", DataType::Int64, true),
        Field::new("b", DataType::Utf8, true),
    ]);
    let a: Int64Array = (0..elements as i64)
        .map(|i| (i % 5 != 0).then_some(i * 3))
        .collect();
    let b: StringArray = (0..elements).map(|i| Some(format!("v{}", i % 7))).collect();
    let entries =
        StructArray::try_new(fields.clone(), vec![Arc::new(a), Arc::new(b)], None).unwrap();
    let item = Arc::new(Field::new("item", DataType::Struct(fields), true));
    let items = ListArray::try_new(
        item,
        OffsetBuffer::from_lengths(lengths),
        Arc::new(entries),
        Some((0..n).map(|i| i % 6 != 1).collect::<Vec<_>>().into()),
    )
    .unwrap();
    let l = ListArray::from_iter_primitive::<Int32Type, _, _>(
        (0..n).map(|i| (i % 5 != 2).then(|| (0..(i % 3) as i32).map(Some).collect::<Vec<_>>())),
    );
    let x: Int32Array = (0..n as i32).map(|i| (i % 7 != 0).then_some(i)).collect();
    let rec = StructArray::try_new(
        Fields::from(vec![
            Field::new("x", DataType::Int32, true),
            Field::new("l", l.data_type().clone(), true),
        ]),
        vec![Arc::new(x), Arc::new(l)],
        Some((0..n).map(|i| i % 9 != 4).collect::<Vec<_>>().into()),
    )
    .unwrap();
    let mut m = MapBuilder::new(None, StringBuilder::new(), Int32Builder::new());
    for i in 0..n {
        for j in 0..i % 3 {
            m.keys().append_value(format!("k{j}"));
            m.values().append_value(j as i32);
        }
        m.append(i % 8 != 3).unwrap();
    }
    RecordBatch::try_from_iter([
        ("id", Arc::new(id) as ArrayRef),
        ("neg", Arc::new(neg)),
        ("items", Arc::new(items)),
        ("rec", Arc::new(rec)),
        ("m", Arc::new(m.finish())),
    ])
    .unwrap()
}

fn plain_batch(n: usize) -> RecordBatch {
    let keep = [
        "i8",
        "u64",
        "binary",
        "fsb_5_18446744073709551615",
        "date32",
        "bool",
    ];
    common::batch_of(
        common::all_types(n, Nulls::None)
            .into_iter()
            .filter(|(f, _)| keep.contains(&f.name().as_str()))
            .collect(),
    )
}

/// Skewed small integers (half the values one, a quarter another, …), stored as Huffman
/// codes; sorted doubles that are not decimals, stored as delta-coded bit patterns; and
/// integers with about one null in a hundred and booleans with about one `true` in a
/// hundred, scattered: the nulls' and the trues' positions stored.
fn skewed_batch(n: usize) -> RecordBatch {
    // Hashed, so that no period is there for a cycle to find.
    let skewed: Int64Array = (0..n as u64)
        .map(|i| Some(((common::hash(i) >> 54) + 1).ilog2() as i64))
        .collect();
    let sorted: Float64Array = (0..n).map(|i| Some((i as f64 + 1.0).ln() / 7.0)).collect();
    common::batch_of(vec![
        (
            Field::new("skewed", DataType::Int64, false),
            Arc::new(skewed),
        ),
        (
            Field::new("sorted", DataType::Float64, false),
            Arc::new(sorted),
        ),
        (
            Field::new("rare_nulls", DataType::Int64, true),
            Arc::new(
                (0..n as u64)
                    .map(|i| (!hash(i ^ 0x5bd1).is_multiple_of(100)).then_some(i as i64 % 37))
                    .collect::<Int64Array>(),
            ),
        ),
        (
            Field::new("rare_trues", DataType::Boolean, false),
            Arc::new(
                (0..n as u64)
                    .map(|i| Some(hash(i ^ 0x2c9f).is_multiple_of(100)))
                    .collect::<BooleanArray>(),
            ),
        ),
    ])
}

fn make_sample(name: &'static str, batch: RecordBatch, block_rows: usize) -> Sample {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    let bytes = common::write(
        &path,
        &batch.schema(),
        std::slice::from_ref(&batch),
        block_rows,
    );
    Sample { name, bytes, batch }
}

/// A sample whose every column stores its codes as byte slices.
fn byteslice_sample(name: &'static str, batch: RecordBatch, block_rows: usize) -> Sample {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    let options = WriteOptions {
        block_rows,
        byteslice: batch
            .schema()
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect(),
        ..WriteOptions::default()
    };
    let mut w = SiftWriter::create(&path, batch.schema(), options).unwrap();
    w.write(&batch).unwrap();
    w.finish().unwrap();
    let bytes = std::fs::read(&path).unwrap();
    Sample { name, bytes, batch }
}

fn samples() -> &'static [Sample] {
    static SAMPLES: OnceLock<Vec<Sample>> = OnceLock::new();
    SAMPLES.get_or_init(|| {
        vec![
            make_sample("mixed.sift", mixed_batch(350), 100),
            make_sample("plain.sift", plain_batch(230), 100),
            make_sample("tiny.sift", mixed_batch(1), 100),
            make_sample("empty.sift", mixed_batch(0), 100),
            byteslice_sample("byteslice.sift", mixed_batch(350), 100),
            make_sample("nested.sift", nested_batch(300), 100),
            make_sample("skewed.sift", skewed_batch(2000), 2000),
        ]
    })
}

fn sample(name: &str) -> &'static Sample {
    samples().iter().find(|s| s.name == name).unwrap()
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

/// Opens and reads a whole file.
fn open_read(path: &Path, options: ReadOptions) -> Result<RecordBatch, Error> {
    let f = SiftFile::open_with(path, options)?;
    let batches = f.read_all(None)?;
    Ok(arrow::compute::concat_batches(
        f.schema().unwrap(),
        &batches,
    )?)
}

/// The outcome of reading damaged bytes.
enum Outcome {
    Same,
    Different,
    Failed(Error),
    Panicked(String),
    /// An allocation of this many bytes happened while reading.
    HugeAlloc(usize),
}

/// Writes `bytes` to `path` and reads it, catching panics.
fn attempt(path: &Path, bytes: &[u8], options: ReadOptions, original: &RecordBatch) -> Outcome {
    std::fs::write(path, bytes).unwrap();
    let (result, largest) = tracked(|| catch_unwind(AssertUnwindSafe(|| open_read(path, options))));
    if largest > ALLOC_LIMIT {
        return Outcome::HugeAlloc(largest);
    }
    match result {
        Ok(Ok(b)) if common::same(original, &b) => Outcome::Same,
        Ok(Ok(_)) => Outcome::Different,
        Ok(Err(e)) => Outcome::Failed(e),
        Err(p) => Outcome::Panicked(
            p.downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default(),
        ),
    }
}

/// Collects problems per case, so one run reports all of them.
#[derive(Default)]
struct Problems(Vec<String>);

impl Problems {
    fn check(&mut self, case: &str, path: &Path, outcome: Outcome, allow_different: bool) {
        match outcome {
            Outcome::Same => {}
            Outcome::Different if allow_different => {}
            Outcome::Different => self
                .0
                .push(format!("{case}: read succeeded with different data")),
            Outcome::Panicked(msg) => self.0.push(format!("{case}: PANIC: {msg}")),
            Outcome::HugeAlloc(n) => self.0.push(format!("{case}: allocated {n} bytes")),
            Outcome::Failed(e) => {
                let msg = e.to_string();
                if !msg.contains(&path.display().to_string()) {
                    self.0
                        .push(format!("{case}: error does not name the file: {msg}"));
                }
            }
        }
    }

    fn assert_none(self, what: &str) {
        assert!(
            self.0.is_empty(),
            "{what}: {} problems:\n{}",
            self.0.len(),
            self.0
                .iter()
                .take(40)
                .cloned()
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
}

fn checked() -> ReadOptions {
    ReadOptions::default()
}

fn unchecked() -> ReadOptions {
    ReadOptions {
        verify_checksums: false,
        ..ReadOptions::default()
    }
}

#[test]
fn samples_are_valid_and_small() {
    let dir = tempfile::tempdir().unwrap();
    for s in samples() {
        let path = dir.path().join(s.name);
        std::fs::write(&path, &s.bytes).unwrap();
        let f = SiftFile::open(&path).unwrap();
        assert!(
            s.bytes.len() < 40_000,
            "{}: {} bytes",
            s.name,
            s.bytes.len()
        );
        let out = open_read(&path, checked()).unwrap();
        common::assert_same(&s.batch, &out);
        if s.name == "mixed.sift" {
            assert_eq!(f.num_blocks(), 4);
            let kinds: Vec<String> = f
                .decode_footer()
                .unwrap()
                .blocks
                .iter()
                .flat_map(|b| b.columns.iter().map(|c| c.encoding.describe()))
                .collect();
            for k in ["dict", "for", "plain64", "bitmap", "all-null", "bytes"] {
                assert!(kinds.iter().any(|d| d.contains(k)), "no {k} in {kinds:?}");
            }
        }
        if s.name == "skewed.sift" {
            let kinds: Vec<String> = f.decode_footer().unwrap().blocks[0]
                .columns
                .iter()
                .map(|c| c.encoding.describe())
                .collect();
            assert!(kinds[0].contains("huffman"), "{kinds:?}");
            assert!(kinds[1].starts_with("delta"), "{kinds:?}");
            assert!(kinds[3].starts_with("patch"), "{kinds:?}");
            let validity = f.decode_footer().unwrap().blocks[0].columns[2]
                .encoding
                .validity_shape();
            assert!(
                validity.as_deref().is_some_and(|v| v.starts_with("patch")),
                "{validity:?}"
            );
        }
    }
}

#[test]
fn truncated_files_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let mut problems = Problems::default();
    for s in samples() {
        let path = dir.path().join(s.name);
        let n = s.bytes.len();
        // Every length near both ends, a spread in between.
        let mut lengths: Vec<usize> = (0..n.min(400)).chain(n.saturating_sub(400)..n).collect();
        lengths.extend((0..300).map(|k| k * n / 300));
        lengths.sort_unstable();
        lengths.dedup();
        lengths.retain(|&l| l < n);
        for len in lengths {
            let outcome = attempt(&path, &s.bytes[..len], checked(), &s.batch);
            if matches!(outcome, Outcome::Same | Outcome::Different) {
                problems.0.push(format!(
                    "{}: truncated to {len} bytes, yet it opened",
                    s.name
                ));
            }
            problems.check(
                &format!("{} truncated to {len}", s.name),
                &path,
                outcome,
                false,
            );
        }
    }
    problems.assert_none("truncation");
}

/// Byte mutations: xor with 0x01 and 0xFF, and a pseudo-random byte.
fn mutations(pos: usize, byte: u8) -> [u8; 3] {
    let r = hash(pos as u64 ^ 0x5EED) as u8;
    [byte ^ 0x01, byte ^ 0xFF, if r == byte { !r } else { r }]
}

/// How many positions to try per region; `SIFT_ROBUSTNESS_SCALE=10` for a deeper local run.
fn budget(base: usize) -> usize {
    let scale = std::env::var("SIFT_ROBUSTNESS_SCALE")
        .ok()
        .and_then(|s| s.parse::<usize>().ok())
        .unwrap_or(1);
    base * scale.max(1)
}

fn positions(from: usize, to: usize, max: usize) -> Vec<usize> {
    let n = to - from;
    if n <= max {
        (from..to).collect()
    } else {
        let mut v: Vec<usize> = (0..max).map(|k| from + k * n / max).collect();
        v.dedup();
        v
    }
}

#[test]
fn corruption_with_checksums_is_detected() {
    let dir = tempfile::tempdir().unwrap();
    let mut problems = Problems::default();
    for s in samples() {
        let path = dir.path().join(s.name);
        let footer = footer_offset(&s.bytes);
        // Every byte of the header, footer and trailer; a spread of the data region.
        let mut pos = positions(0, 8, 8);
        pos.extend(positions(8, footer, budget(300)));
        pos.extend(positions(footer, s.bytes.len(), budget(1_000)));
        for p in pos {
            for m in mutations(p, s.bytes[p]) {
                let mut bytes = s.bytes.clone();
                bytes[p] = m;
                let outcome = attempt(&path, &bytes, checked(), &s.batch);
                // Every byte is covered by the magic, a checksum or the trailer.
                problems.check(
                    &format!("{} byte {p} := {m:#04x}", s.name),
                    &path,
                    outcome,
                    false,
                );
            }
        }
    }
    problems.assert_none("corruption with checksums");
}

#[test]
fn corruption_without_checksums_never_panics() {
    let dir = tempfile::tempdir().unwrap();
    let mut problems = Problems::default();
    for s in samples() {
        let path = dir.path().join(s.name);
        let footer = footer_offset(&s.bytes);
        for p in positions(8, footer, budget(700)) {
            for m in mutations(p, s.bytes[p]) {
                let mut bytes = s.bytes.clone();
                bytes[p] = m;
                let outcome = attempt(&path, &bytes, unchecked(), &s.batch);
                problems.check(
                    &format!("{} byte {p} := {m:#04x}", s.name),
                    &path,
                    outcome,
                    true,
                );
            }
        }
        // Runs of damage, as a torn write would leave.
        for p in positions(8, footer, 50) {
            let mut bytes = s.bytes.clone();
            let end = (p + 64).min(footer);
            bytes[p..end].iter_mut().for_each(|b| *b = 0xFF);
            let outcome = attempt(&path, &bytes, unchecked(), &s.batch);
            problems.check(
                &format!("{} bytes {p}..{end} := 0xff", s.name),
                &path,
                outcome,
                true,
            );
        }
    }
    problems.assert_none("corruption without checksums");
}

/// A file made of `data` (header and segments) followed by `footer` and a trailer.
fn assemble(data: &[u8], footer: &[u8], version: u32, magic: &[u8; 8]) -> Vec<u8> {
    let mut out = data.to_vec();
    out.extend_from_slice(footer);
    out.extend_from_slice(&(footer.len() as u64).to_le_bytes());
    out.extend_from_slice(&footer_checksum(footer).unwrap_or(0).to_le_bytes());
    out.extend_from_slice(&version.to_le_bytes());
    out.extend_from_slice(magic);
    out
}

fn with_footer(s: &Sample, footer: &Footer) -> Vec<u8> {
    let data = &s.bytes[..footer_offset(&s.bytes)];
    assemble(data, &footer.encode().unwrap(), FORMAT_VERSION, &MAGIC)
}

fn footer_of(s: &Sample) -> Footer {
    let at = footer_offset(&s.bytes);
    let fb = &s.bytes[at..s.bytes.len() - TRAILER_LEN];
    Footer::decode(Path::new(s.name), fb, at as u64).unwrap()
}

#[test]
fn footer_mutations_with_valid_checksum_never_panic() {
    // The footer checksum only catches accidents; a hostile footer has a valid one.
    let dir = tempfile::tempdir().unwrap();
    let mut problems = Problems::default();
    // tiny and empty have footers like mixed's, only shorter.
    for s in [sample("mixed.sift"), sample("plain.sift")] {
        let path = dir.path().join(s.name);
        let start = footer_offset(&s.bytes);
        let data = &s.bytes[..start];
        let footer = &s.bytes[start..s.bytes.len() - TRAILER_LEN];
        for p in positions(0, footer.len(), budget(1_000)) {
            for m in mutations(p, footer[p]) {
                let mut f = footer.to_vec();
                f[p] = m;
                let bytes = assemble(data, &f, FORMAT_VERSION, &MAGIC);
                let outcome = attempt(&path, &bytes, unchecked(), &s.batch);
                problems.check(
                    &format!("{} footer byte {p} := {m:#04x}", s.name),
                    &path,
                    outcome,
                    true,
                );
            }
        }
        // Truncated and extended footers.
        for cut in positions(0, footer.len(), budget(100)) {
            let bytes = assemble(data, &footer[..cut], FORMAT_VERSION, &MAGIC);
            let outcome = attempt(&path, &bytes, unchecked(), &s.batch);
            problems.check(
                &format!("{} footer cut at {cut}", s.name),
                &path,
                outcome,
                false,
            );
        }
        let mut longer = footer.to_vec();
        longer.extend_from_slice(&[0xFF; 16]);
        let outcome = attempt(
            &path,
            &assemble(data, &longer, FORMAT_VERSION, &MAGIC),
            unchecked(),
            &s.batch,
        );
        problems.check(
            &format!("{} footer with trailing bytes", s.name),
            &path,
            outcome,
            true,
        );
    }
    problems.assert_none("footer mutations");
}

/// Runs `f` on another thread and fails the test if it does not finish in time.
fn with_timeout<T: Send + 'static>(case: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(Duration::from_secs(30)) {
        Ok(v) => v,
        Err(_) => panic!("{case}: no result after 30 s (hang?)"),
    }
}

/// How a hostile case must end.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Expect {
    /// An error naming the file.
    Error,
    /// An error or a result (the damage may be harmless), but no panic.
    Anything,
    /// An error when checksums are verified, anything when they are not.
    Checksum,
}

struct Hostile {
    name: String,
    bytes: Vec<u8>,
    expect: Expect,
}

fn column(footer: &Footer, name: &str) -> usize {
    footer.fields.iter().position(|f| f.name == name).unwrap()
}

/// Nested columns whose roles, paths, types or lengths do not fit together.
fn hostile_nested_cases() -> Vec<Hostile> {
    let s = sample("nested.sift");
    let base = footer_of(s);
    let mut cases = Vec::new();
    let mut add = |name: &str, edit: &dyn Fn(&mut Footer)| {
        let mut f = base.clone();
        edit(&mut f);
        assert!(f != base, "case {name} changes nothing");
        cases.push(Hostile {
            name: format!("nested: {name}"),
            bytes: with_footer(s, &f),
            expect: Expect::Error,
        });
    };
    let role = |f: &mut Footer, c: usize, v: &str| {
        let md = &mut f.fields[c].metadata;
        md.retain(|(k, _)| k != NESTED_KEY);
        md.push((NESTED_KEY.into(), v.into()));
    };
    let id = column(&base, "id");
    let neg = column(&base, "neg");
    let items = column(&base, "items");
    let rec = column(&base, "rec");
    let a = column(&base, "items.item.a");
    let l = column(&base, "rec.l");
    add("struct with more fields than follow", &|f| {
        role(f, rec, "struct:9")
    });
    // The field left over becomes a leaf outside any nested column.
    let item = column(&base, "items.item");
    add("struct with fewer fields", &|f| role(f, item, "struct:1"));
    add("unknown role", &|f| role(f, items, "tree"));
    add("leaf at the top", &|f| role(f, id, "leaf"));
    add("list as a leaf", &|f| role(f, items, "leaf"));
    add("fixed-size list of -1", &|f| {
        role(f, rec, "fixed_size_list:-1")
    });
    add("child not under its parent", &|f| {
        f.fields[a].name = "elsewhere.a".into()
    });
    add("lengths stored as strings", &|f| {
        f.fields[l].ty = ColumnType::Utf8
    });
    add("presence stored as int", &|f| {
        f.fields[rec].ty = ColumnType::Int32
    });
    add("lengths beyond the elements", &|f| {
        for b in &mut f.blocks {
            b.columns[items] = b.columns[id].clone();
        }
    });
    add("negative lengths", &|f| {
        for b in &mut f.blocks {
            b.columns[items] = b.columns[neg].clone();
        }
    });
    cases
}

fn hostile_cases() -> Vec<Hostile> {
    let s = sample("mixed.sift");
    let base = footer_of(s);
    let mut cases = Vec::new();
    let mut add = |name: &str, expect: Expect, edit: &dyn Fn(&mut Footer)| {
        let mut f = base.clone();
        edit(&mut f);
        assert!(f != base, "case {name} changes nothing");
        cases.push(Hostile {
            name: name.to_string(),
            bytes: with_footer(s, &f),
            expect,
        });
    };
    use Expect::*;
    let low = column(&base, "utf8_low");
    let high = column(&base, "utf8_random");
    let narrow = column(&base, "i64_narrow");
    let fsb = column(&base, "fsb_16_3");
    let float = column(&base, "f64");
    let boolean = column(&base, "bool");
    let dec = column(&base, "dec_10_2");
    let null = column(&base, "null");
    let sparse = column(&base, "sparse");
    let binlow = column(&base, "binary_low");
    let rows: u64 = base.num_rows;
    assert!(matches!(
        base.blocks[0].columns[low].encoding.nodes[0],
        Node::Dict(sift_encoding::encodings::Dict { .. })
    ));
    assert!(matches!(
        base.blocks[0].columns[high].encoding.nodes[0],
        Node::Bytes(sift_encoding::encodings::Bytes { .. })
    ));
    assert!(matches!(
        base.blocks[0].columns[narrow].encoding.nodes[0],
        Node::For(sift_encoding::encodings::For { .. })
    ));
    assert!(matches!(
        base.blocks[0].columns[fsb].encoding.nodes[0],
        Node::Dict(sift_encoding::encodings::Dict { .. })
    ));
    assert!(matches!(
        base.blocks[0].columns[narrow].encoding.validity,
        Validity::Encoded { .. }
    ));
    assert!(matches!(
        base.blocks[0].columns[sparse].encoding.validity,
        Validity::AllNull
    ));

    // Row counts.
    add("num_rows u64::MAX", Error, &|f| f.num_rows = u64::MAX);
    add("num_rows + 1", Error, &|f| f.num_rows += 1);
    add("num_rows 0", Error, &|f| f.num_rows = 0);
    add("block rows u32::MAX", Error, &|f| {
        f.blocks[0].rows = u32::MAX
    });
    add("block rows 0", Error, &|f| f.blocks[0].rows = 0);
    add("block rows 64Ki", Error, &|f| {
        f.num_rows = f.num_rows - u64::from(f.blocks[0].rows) + 65_536;
        f.blocks[0].rows = 65_536;
    });
    add("block rows 64Ki+1", Error, &|f| {
        f.num_rows = f.num_rows - u64::from(f.blocks[0].rows) + 65_537;
        f.blocks[0].rows = 65_537;
    });
    add("block rows - 1", Anything, &|f| {
        f.blocks[0].rows -= 1;
        f.num_rows -= 1;
    });
    add("no blocks", Error, &|f| f.blocks.clear());
    add("no blocks, no rows", Anything, &|f| {
        f.blocks.clear();
        f.num_rows = 0;
    });
    // Chunks are checked one by one when first used, so two blocks whose segments are the
    // same or out of file order read as the rows they point at: other data, never unsafe.
    add("a block repeated", Anything, &|f| {
        let b = f.blocks[0].clone();
        f.blocks.push(b);
        f.num_rows = rows + 100;
    });
    add("huge block list", Error, &|f| {
        let b = f.blocks[3].clone();
        f.blocks.extend(std::iter::repeat_n(b, 2_000));
    });

    // Segments.
    add("segment past EOF", Error, &|f| {
        f.blocks[1].columns[high].segments[0].offset = 1 << 40
    });
    add("segment len u64::MAX", Error, &|f| {
        f.blocks[1].columns[high].segments[0].len = u64::MAX
    });
    add("segment offset u64::MAX", Error, &|f| {
        f.blocks[3].columns[high].segments[0].offset = u64::MAX
    });
    add("last segment into the footer", Error, &|f| {
        let seg = f.blocks[3]
            .columns
            .iter_mut()
            .rev()
            .find_map(|c| c.segments.last_mut())
            .unwrap();
        seg.len += 1;
    });
    add("segments overlap", Error, &|f| {
        let segs = &mut f.blocks[1].columns[high].segments;
        segs[1].offset = segs[0].offset;
    });
    add("segment over the magic", Error, &|f| {
        f.blocks[0].columns[0].segments[0].offset = 0
    });
    add("blocks swapped", Anything, &|f| f.blocks.swap(0, 1));
    add("chunk segments swapped", Error, &|f| {
        f.blocks[0].columns[high].segments.swap(0, 1)
    });
    add("segment shortened", Error, &|f| {
        f.blocks[0].columns[high].segments[1].len -= 1
    });
    add("segment dropped", Error, &|f| {
        f.blocks[0].columns[high].segments.pop();
    });
    add("segment crc", Checksum, &|f| {
        f.blocks[2].columns[low].crc32 ^= 1
    });
    add("segment shifted", Error, &|f| {
        for seg in &mut f.blocks[2].columns[low].segments {
            seg.offset += 1;
        }
    });

    // Encoding trees.
    let node = |f: &mut Footer, col: usize, n: usize, v: Node| {
        f.blocks[0].columns[col].encoding.nodes[n] = v
    };
    add("dict len u32::MAX", Error, &|f| {
        if let Node::Dict(sift_encoding::encodings::Dict { len, .. }) =
            &mut f.blocks[0].columns[low].encoding.nodes[0]
        {
            *len = u32::MAX;
        }
    });
    add("dict len 0", Error, &|f| {
        if let Node::Dict(sift_encoding::encodings::Dict { len, .. }) =
            &mut f.blocks[0].columns[low].encoding.nodes[0]
        {
            *len = 0;
        }
    });
    // An unused extra entry (decoded from the padding of the packed lengths) is harmless.
    add("dict len + 1", Anything, &|f| {
        if let Node::Dict(sift_encoding::encodings::Dict { len, .. }) =
            &mut f.blocks[0].columns[low].encoding.nodes[0]
        {
            *len += 1;
        }
    });
    add("dict len - 1", Error, &|f| {
        if let Node::Dict(sift_encoding::encodings::Dict { len, .. }) =
            &mut f.blocks[0].columns[low].encoding.nodes[0]
        {
            *len -= 1;
        }
    });
    add("dict values self", Error, &|f| {
        if let Node::Dict(sift_encoding::encodings::Dict { values, .. }) =
            &mut f.blocks[0].columns[low].encoding.nodes[0]
        {
            *values = 0;
        }
    });
    add("dict codes self", Error, &|f| {
        if let Node::Dict(sift_encoding::encodings::Dict { codes, .. }) =
            &mut f.blocks[0].columns[low].encoding.nodes[0]
        {
            *codes = 0;
        }
    });
    add("dict codes out of range", Error, &|f| {
        if let Node::Dict(sift_encoding::encodings::Dict { codes, .. }) =
            &mut f.blocks[0].columns[low].encoding.nodes[0]
        {
            *codes = u32::MAX;
        }
    });
    add("bytes lengths backward", Error, &|f| {
        let nodes = &mut f.blocks[0].columns[low].encoding.nodes;
        let i = nodes
            .iter()
            .position(|n| matches!(n, Node::Bytes(sift_encoding::encodings::Bytes { .. })))
            .unwrap();
        if let Node::Bytes(sift_encoding::encodings::Bytes { lengths, .. }) = &mut nodes[i] {
            *lengths = 0;
        }
    });
    add("bytes lengths self", Error, &|f| {
        if let Node::Bytes(sift_encoding::encodings::Bytes { lengths, .. }) =
            &mut f.blocks[0].columns[high].encoding.nodes[0]
        {
            *lengths = 0;
        }
    });
    add("bytes lengths to a bytes node", Error, &|f| {
        let nodes = &mut f.blocks[0].columns[high].encoding.nodes;
        nodes.push(Node::Bytes(sift_encoding::encodings::Bytes {
            lengths: 1,
            data: 1,
        }));
        if let Node::Bytes(sift_encoding::encodings::Bytes { lengths, .. }) = &mut nodes[0] {
            *lengths = 2;
        }
    });
    add("for bits 200", Error, &|f| {
        if let Node::For(sift_encoding::encodings::For { bits, .. }) =
            &mut f.blocks[0].columns[narrow].encoding.nodes[0]
        {
            *bits = 200;
        }
    });
    add("for bits 65", Error, &|f| {
        if let Node::For(sift_encoding::encodings::For { bits, .. }) =
            &mut f.blocks[0].columns[narrow].encoding.nodes[0]
        {
            *bits = 65;
        }
    });
    add("for bits 64", Error, &|f| {
        if let Node::For(sift_encoding::encodings::For { bits, .. }) =
            &mut f.blocks[0].columns[narrow].encoding.nodes[0]
        {
            *bits = 64;
        }
    });
    add("for bits 0", Anything, &|f| {
        if let Node::For(sift_encoding::encodings::For { bits, .. }) =
            &mut f.blocks[0].columns[narrow].encoding.nodes[0]
        {
            *bits = 0;
        }
    });
    add("for base i128::MIN", Error, &|f| {
        if let Node::For(sift_encoding::encodings::For { base, .. }) =
            &mut f.blocks[0].columns[narrow].encoding.nodes[0]
        {
            *base = i128::MIN;
        }
    });
    add("for base wraps", Anything, &|f| {
        if let Node::For(sift_encoding::encodings::For { base, .. }) =
            &mut f.blocks[0].columns[narrow].encoding.nodes[0]
        {
            *base = i128::from(i64::MAX);
        }
    });
    add("lengths base negative", Error, &|f| {
        let nodes = &mut f.blocks[0].columns[high].encoding.nodes;
        if let Node::For(sift_encoding::encodings::For { base, .. }) = &mut nodes[1] {
            *base = -1;
        }
    });
    add("for buffer out of range", Error, &|f| {
        node(
            f,
            narrow,
            0,
            Node::For(sift_encoding::encodings::For {
                base: 0,
                bits: 3,
                buffer: 99,
            }),
        )
    });
    add("for buffer u32::MAX", Error, &|f| {
        node(
            f,
            narrow,
            0,
            Node::For(sift_encoding::encodings::For {
                base: 0,
                bits: 3,
                buffer: u32::MAX,
            }),
        )
    });
    add("lookup into its own column", Error, &|f| {
        f.blocks[0].columns[narrow].encoding.nodes[0] =
            Node::Lookup(sift_encoding::encodings::Lookup {
                column: narrow as u32,
                len: 1,
                table: 1,
            })
    });
    add("lookup into a missing column", Error, &|f| {
        f.blocks[0].columns[narrow].encoding.nodes[0] =
            Node::Lookup(sift_encoding::encodings::Lookup {
                column: 999,
                len: 1,
                table: 1,
            })
    });
    add("lookups into each other", Error, &|f| {
        f.blocks[0].columns[narrow].encoding.nodes[0] =
            Node::Lookup(sift_encoding::encodings::Lookup {
                column: low as u32,
                len: 1,
                table: 1,
            });
        f.blocks[0].columns[low].encoding.nodes[0] =
            Node::Lookup(sift_encoding::encodings::Lookup {
                column: narrow as u32,
                len: 1,
                table: 1,
            });
    });
    add(
        "lookup of the wrong size into a dictionary",
        Anything,
        &|f| {
            let enc = &mut f.blocks[0].columns[narrow].encoding;
            enc.validity = Validity::AllValid;
            enc.nodes = vec![
                Node::Lookup(sift_encoding::encodings::Lookup {
                    column: low as u32,
                    len: 3,
                    table: 1,
                }),
                Node::For(sift_encoding::encodings::For {
                    base: 0,
                    bits: 0,
                    buffer: 0,
                }),
            ];
        },
    );
    add("lookup on a string column", Error, &|f| {
        let enc = &mut f.blocks[0].columns[high].encoding;
        enc.nodes[0] = Node::Lookup(sift_encoding::encodings::Lookup {
            column: low as u32,
            len: 1,
            table: 1,
        });
    });
    add("validity node out of range", Error, &|f| {
        f.blocks[0].columns[narrow].encoding.validity = Validity::Encoded { root: 99 }
    });
    add("validity is the values' tree", Anything, &|f| {
        f.blocks[0].columns[narrow].encoding.validity = Validity::Encoded { root: 0 }
    });
    add("validity bitmap buffer out of range", Error, &|f| {
        let enc = &mut f.blocks[0].columns[narrow].encoding;
        enc.nodes
            .push(Node::Bitmap(sift_encoding::encodings::Bitmap {
                buffer: 99,
            }));
        enc.validity = Validity::Encoded {
            root: (enc.nodes.len() - 1) as u32,
        };
    });
    add("validity dropped", Error, &|f| {
        f.blocks[0].columns[narrow].encoding.validity = Validity::AllValid
    });
    add("all null but not", Error, &|f| {
        f.blocks[0].columns[narrow].encoding.validity = Validity::AllNull
    });
    add("all null for a non-null column", Error, &|f| {
        f.fields[narrow].nullable = false;
        f.blocks[0].columns[narrow].encoding.validity = Validity::AllNull;
        f.blocks[0].columns[narrow].stats.null_count = u64::from(f.blocks[0].rows);
    });
    add("nodes removed", Error, &|f| {
        f.blocks[0].columns[narrow].encoding.nodes.clear()
    });
    add("many nodes", Anything, &|f| {
        f.blocks[0].columns[narrow]
            .encoding
            .nodes
            .extend(std::iter::repeat_n(
                Node::Bitmap(sift_encoding::encodings::Bitmap { buffer: 0 }),
                10_000,
            ))
    });
    add("plain width 0 for ints", Error, &|f| {
        node(
            f,
            narrow,
            0,
            Node::Plain(sift_encoding::encodings::Plain {
                width: 0,
                buffer: 1,
            }),
        )
    });
    add("plain width u32::MAX for ints", Error, &|f| {
        node(
            f,
            narrow,
            0,
            Node::Plain(sift_encoding::encodings::Plain {
                width: u32::MAX,
                buffer: 1,
            }),
        )
    });
    add("plain width u32::MAX for strings", Error, &|f| {
        node(
            f,
            high,
            0,
            Node::Plain(sift_encoding::encodings::Plain {
                width: u32::MAX,
                buffer: 1,
            }),
        )
    });
    add("plain width 0 for strings", Anything, &|f| {
        node(
            f,
            high,
            0,
            Node::Plain(sift_encoding::encodings::Plain {
                width: 0,
                buffer: 1,
            }),
        )
    });
    add("float width 4", Error, &|f| {
        node(
            f,
            float,
            0,
            Node::Plain(sift_encoding::encodings::Plain {
                width: 4,
                buffer: 1,
            }),
        )
    });
    add("float as for", Error, &|f| {
        node(
            f,
            float,
            0,
            Node::For(sift_encoding::encodings::For {
                base: 0,
                bits: 1,
                buffer: 1,
            }),
        )
    });
    add("bool as for", Error, &|f| {
        node(
            f,
            boolean,
            0,
            Node::For(sift_encoding::encodings::For {
                base: 0,
                bits: 1,
                buffer: 1,
            }),
        )
    });
    add("ints as bitmap", Error, &|f| {
        node(
            f,
            narrow,
            0,
            Node::Bitmap(sift_encoding::encodings::Bitmap { buffer: 1 }),
        )
    });
    add("ints as dict", Error, &|f| {
        node(
            f,
            narrow,
            0,
            Node::Dict(sift_encoding::encodings::Dict {
                values: 1,
                len: 1,
                codes: 2,
            }),
        )
    });
    add("decimal as bytes", Error, &|f| {
        node(
            f,
            dec,
            0,
            Node::Bytes(sift_encoding::encodings::Bytes {
                lengths: 1,
                data: 1,
            }),
        )
    });
    add("null column with values", Error, &|f| {
        f.blocks[0].columns[null].encoding = f.blocks[0].columns[narrow].encoding.clone();
        f.blocks[0].columns[null].encoding.validity = Validity::AllValid;
    });
    add("fsb dict values as bytes", Error, &|f| {
        // The dictionary of a fixed-size column replaced by variable-length strings.
        let from = f.blocks[0].columns[low].encoding.clone();
        f.blocks[0].columns[fsb].encoding.nodes = from.nodes;
    });

    // Statistics and structure.
    add("null_count + 1", Error, &|f| {
        f.blocks[0].columns[narrow].stats.null_count += 1
    });
    add("null_count > rows", Error, &|f| {
        f.blocks[0].columns[narrow].stats.null_count = u64::MAX
    });
    add("stats min/max swapped", Anything, &|f| {
        let st = &mut f.blocks[0].columns[narrow].stats;
        std::mem::swap(&mut st.min, &mut st.max);
    });
    // A block with more or fewer chunks than fields cannot be written in this layout
    // (one offset-table entry per block and column); `v3_layout_damage_is_refused` covers
    // tables that say otherwise.

    // Schema.
    let ty = |f: &mut Footer, col: usize, t: ColumnType| f.fields[col].ty = t;
    add("decimal precision 0", Error, &|f| {
        ty(
            f,
            dec,
            ColumnType::Decimal128 {
                precision: 0,
                scale: 0,
            },
        )
    });
    add("decimal precision 39", Error, &|f| {
        ty(
            f,
            dec,
            ColumnType::Decimal128 {
                precision: 39,
                scale: 0,
            },
        )
    });
    add("decimal scale 127", Error, &|f| {
        ty(
            f,
            dec,
            ColumnType::Decimal128 {
                precision: 10,
                scale: 127,
            },
        )
    });
    add("decimal scale -128", Error, &|f| {
        ty(
            f,
            dec,
            ColumnType::Decimal128 {
                precision: 10,
                scale: -128,
            },
        )
    });
    add("decimal scale > precision", Anything, &|f| {
        ty(
            f,
            dec,
            ColumnType::Decimal128 {
                precision: 2,
                scale: 10,
            },
        )
    });
    add("time32 ns", Error, &|f| {
        ty(f, narrow, ColumnType::Time32(unit(3)))
    });
    add("time64 s", Error, &|f| {
        ty(f, narrow, ColumnType::Time64(unit(0)))
    });
    add("fixed size binary -1", Error, &|f| {
        ty(f, fsb, ColumnType::FixedSizeBinary(-1))
    });
    add("fixed size binary narrower", Error, &|f| {
        ty(f, fsb, ColumnType::FixedSizeBinary(15))
    });
    add("fixed size binary wider", Error, &|f| {
        ty(f, fsb, ColumnType::FixedSizeBinary(17))
    });
    add("fixed size binary 0", Error, &|f| {
        ty(f, fsb, ColumnType::FixedSizeBinary(0))
    });
    add("fixed size binary i32::MAX", Error, &|f| {
        ty(f, fsb, ColumnType::FixedSizeBinary(i32::MAX))
    });
    add("all-null fixed size binary i32::MAX", Error, &|f| {
        ty(f, sparse, ColumnType::FixedSizeBinary(i32::MAX))
    });
    add("strings read as ints", Error, &|f| {
        ty(f, high, ColumnType::Int64)
    });
    add("dict read as ints", Error, &|f| {
        ty(f, low, ColumnType::Int32)
    });
    add("ints read as strings", Error, &|f| {
        ty(f, narrow, ColumnType::Utf8)
    });
    add("ints read as bools", Error, &|f| {
        ty(f, narrow, ColumnType::Bool)
    });
    add("ints read as narrower ints", Anything, &|f| {
        ty(f, narrow, ColumnType::Int8)
    });
    add("ints read as decimals", Anything, &|f| {
        ty(
            f,
            narrow,
            ColumnType::Decimal128 {
                precision: 38,
                scale: 0,
            },
        )
    });
    add("binary read as utf8", Anything, &|f| {
        ty(f, binlow, ColumnType::Utf8)
    });
    add("binary read as utf8 view", Anything, &|f| {
        ty(f, binlow, ColumnType::Utf8View)
    });
    add("strings read as fixed size", Error, &|f| {
        ty(f, high, ColumnType::FixedSizeBinary(4))
    });
    add("bools read as null", Error, &|f| {
        ty(f, boolean, ColumnType::Null)
    });
    add("weird time zone", Anything, &|f| {
        ty(
            f,
            narrow,
            ColumnType::Timestamp {
                unit: unit(0),
                tz: Some("Not/AZone\u{0}".into()),
            },
        )
    });
    cases
}

/// A stored time unit by its index (Second, Millisecond, Microsecond, Nanosecond).
fn unit(index: usize) -> Unit {
    [
        Unit::Second,
        Unit::Millisecond,
        Unit::Microsecond,
        Unit::Nanosecond,
    ][index]
}

/// A file of format version 3 (chunk statistics without the sorted flag) is still read.
#[test]
fn version_3_files_are_read() {
    let dir = tempfile::tempdir().unwrap();
    let s = sample("mixed.sift");
    let mut footer = footer_of(s);
    for chunk in footer.blocks.iter_mut().flat_map(|b| &mut b.columns) {
        chunk.stats.sorted = false;
    }
    let data = &s.bytes[..footer_offset(&s.bytes)];
    let path = dir.path().join("v3.sift");
    std::fs::write(&path, assemble(data, &footer.encode().unwrap(), 3, &MAGIC)).unwrap();
    assert_eq!(SiftFile::open(&path).unwrap().format_version(), 3);
    assert_eq!(open_read(&path, checked()).unwrap(), s.batch);
}

#[test]
fn hostile_footers_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let s = sample("mixed.sift");
    let mut cases = hostile_cases();
    let data = &s.bytes[..footer_offset(&s.bytes)];
    let footer = &s.bytes[footer_offset(&s.bytes)..s.bytes.len() - TRAILER_LEN];
    // Trailers.
    for (name, version, magic) in [
        ("next version", FORMAT_VERSION + 1, MAGIC),
        ("version 0", 0, MAGIC),
        ("version u32::MAX", u32::MAX, MAGIC),
        ("wrong end magic", FORMAT_VERSION, *b"SIFTDATB"),
        ("parquet magic", FORMAT_VERSION, *b"PAR1PAR1"),
    ] {
        cases.push(Hostile {
            name: name.into(),
            bytes: assemble(data, footer, version, &magic),
            expect: Expect::Error,
        });
    }
    let mut bad_start = s.bytes.clone();
    bad_start[0] = b'X';
    cases.push(Hostile {
        name: "wrong start magic".into(),
        bytes: bad_start,
        expect: Expect::Error,
    });
    for (name, len) in [
        ("footer len u64::MAX", u64::MAX),
        ("footer len = file", s.bytes.len() as u64),
        ("footer len 0", 0),
        ("footer len + 1", footer.len() as u64 + 1),
        ("footer len - 1", footer.len() as u64 - 1),
    ] {
        let mut b = s.bytes.clone();
        let at = b.len() - TRAILER_LEN;
        b[at..at + 8].copy_from_slice(&len.to_le_bytes());
        cases.push(Hostile {
            name: name.into(),
            bytes: b,
            expect: Expect::Error,
        });
    }
    let mut bad_crc = s.bytes.clone();
    let at = bad_crc.len() - TRAILER_LEN + 8;
    bad_crc[at] ^= 1;
    cases.push(Hostile {
        name: "footer crc".into(),
        bytes: bad_crc,
        expect: Expect::Error,
    });
    // A footer that is not a footer at all.
    cases.push(Hostile {
        name: "garbage footer".into(),
        bytes: assemble(data, &[0xFF; 300], FORMAT_VERSION, &MAGIC),
        expect: Expect::Error,
    });
    cases.push(Hostile {
        name: "empty footer".into(),
        bytes: assemble(data, &[], FORMAT_VERSION, &MAGIC),
        expect: Expect::Error,
    });
    // Huge declared counts with nothing behind them.
    let mut huge = footer.to_vec();
    huge[8..16].copy_from_slice(&[0xFF; 8]);
    cases.push(Hostile {
        name: "huge column and block counts".into(),
        bytes: assemble(data, &huge, FORMAT_VERSION, &MAGIC),
        expect: Expect::Error,
    });

    cases.extend(hostile_nested_cases());

    let mut problems = Problems::default();
    for (k, case) in cases.into_iter().enumerate() {
        let path: PathBuf = dir.path().join(format!("hostile-{k}.sift"));
        std::fs::write(&path, &case.bytes).unwrap();
        let p = path.clone();
        let original = s.batch.clone();
        for options in [checked(), unchecked()] {
            let must_fail = match case.expect {
                Expect::Error => true,
                Expect::Checksum => options.verify_checksums,
                Expect::Anything => false,
            };
            let p = p.clone();
            let original = original.clone();
            let outcome = with_timeout(&case.name, move || {
                let out = attempt(&p, &std::fs::read(&p).unwrap(), options, &original);
                match out {
                    Outcome::Failed(e) => Ok(e),
                    other => Err(other),
                }
            });
            match outcome {
                Ok(e) => {
                    if case.name.starts_with("version")
                        && !matches!(e, Error::UnsupportedVersion { .. })
                    {
                        problems.0.push(format!(
                            "{}: expected UnsupportedVersion, got {e}",
                            case.name
                        ));
                    }
                    problems.check(&case.name, &path, Outcome::Failed(e), false);
                }
                Err(Outcome::Panicked(msg)) => {
                    problems.0.push(format!("{}: PANIC: {msg}", case.name))
                }
                Err(Outcome::HugeAlloc(n)) => problems
                    .0
                    .push(format!("{}: allocated {n} bytes", case.name)),
                Err(other) if must_fail => problems.0.push(format!(
                    "{}: expected an error, read {}",
                    case.name,
                    if matches!(other, Outcome::Same) {
                        "the original data"
                    } else {
                        "other data"
                    }
                )),
                Err(_) => {}
            }
        }
    }
    problems.assert_none("hostile footers");
}

/// A file of one non-null Utf8 column `s`: one block of `rows` rows whose chunk is
/// `encoding` over the buffers `data` (stored after the magic, one segment each).
fn crafted(rows: u32, encoding: ColumnEncoding, data: &[&[u8]]) -> Vec<u8> {
    let mut bytes = MAGIC.to_vec();
    let mut segments = Vec::new();
    for d in data {
        segments.push(Segment {
            offset: bytes.len() as u64,
            len: d.len() as u64,
        });
        bytes.extend_from_slice(d);
    }
    let crc32 = crc32fast::hash(&bytes[MAGIC.len()..]);
    let footer = Footer {
        fields: vec![StoredField {
            name: "s".into(),
            ty: ColumnType::Utf8,
            nullable: false,
            metadata: vec![],
        }],
        metadata: vec![],
        num_rows: u64::from(rows),
        blocks: vec![BlockMeta {
            rows,
            columns: vec![ChunkMeta {
                encoding,
                stats: ChunkStats::default(),
                segments,
                crc32,
            }],
        }],
        created_by: "robustness test".into(),
    };
    assemble(&bytes, &footer.encode().unwrap(), FORMAT_VERSION, &MAGIC)
}

/// Footers whose few kilobytes expand to gigabytes — a byte-string constant over a full
/// block, a dictionary of one long entry named by every row (in the footer or in a data
/// segment) — are refused with an error naming the file, block and column, before the
/// output is allocated: no allocation comes near the chunk's decode budget (allocations
/// above 64 MiB are refused outright, so a regression aborts instead of taking gigabytes).
#[test]
fn expanding_footers_are_refused_before_allocating() {
    let dir = tempfile::tempdir().unwrap();
    let long = vec![b'x'; 65_000];
    let code0 = Node::Constant(sift_encoding::encodings::Constant {
        value: 0i64.to_le_bytes().to_vec(),
    });
    let one_long_entry = Node::Dict(sift_encoding::encodings::Dict {
        values: 1,
        len: 1,
        codes: 2,
    });
    /// A name, the chunk's nodes and its buffers.
    type Case<'a> = (&'a str, Vec<Node>, Vec<&'a [u8]>);
    // Every case asks for 64Ki × 65,000 bytes.
    let cases: Vec<Case<'_>> = vec![
        (
            "constant",
            vec![Node::Constant(sift_encoding::encodings::Constant {
                value: long.clone(),
            })],
            vec![],
        ),
        (
            "dictionary entry in the footer",
            vec![
                one_long_entry.clone(),
                Node::Constant(sift_encoding::encodings::Constant {
                    value: long.clone(),
                }),
                code0.clone(),
            ],
            vec![],
        ),
        (
            "dictionary entry in a segment",
            vec![
                one_long_entry,
                Node::Bytes(sift_encoding::encodings::Bytes {
                    lengths: 3,
                    data: 0,
                }),
                code0,
                Node::Constant(sift_encoding::encodings::Constant {
                    value: (long.len() as i64).to_le_bytes().to_vec(),
                }),
            ],
            vec![&long],
        ),
    ];
    for (name, nodes, data) in cases {
        let encoding = ColumnEncoding {
            validity: Validity::AllValid,
            nodes,
        };
        let bytes = crafted(65_536, encoding, &data);
        assert!(bytes.len() < 140_000, "{name}: {} bytes", bytes.len());
        let path = dir.path().join(format!("{name}.sift"));
        std::fs::write(&path, &bytes).unwrap();
        let (result, largest) =
            tracked_refusing_above(DECODE_FLOOR, || open_read(&path, checked()));
        let msg = match result {
            Ok(b) => panic!("{name}: read {} rows", b.num_rows()),
            Err(e) => e.to_string(),
        };
        assert!(largest <= ALLOC_LIMIT, "{name}: allocated {largest} bytes");
        for want in [
            &path.display().to_string(),
            "block 0 column 's'",
            "node 0: 65536 values decode to 4259840000 bytes, more than the chunk's decode limit of 67108864 bytes",
        ] {
            assert!(msg.contains(want), "{name}: {msg}");
        }
    }
}

/// Long strings that repeat read back whole: a block of 64Ki rows drawn from 8 distinct
/// strings of 900 bytes decodes to 59 MB from a file of a few tens of kilobytes, within
/// the floor that every chunk may decode to.
#[test]
fn repeated_long_strings_still_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("long.sift");
    let rows = 65_536;
    let words: Vec<String> = (0..8u8)
        .map(|k| {
            format!("{k}{}", "Sift ".repeat(180))
                .chars()
                .take(900)
                .collect()
        })
        .collect();
    let s: StringArray = (0..rows)
        .map(|i| Some(words[(hash(i as u64) % 8) as usize].as_str()))
        .collect();
    let batch = common::batch_of(vec![(Field::new("s", DataType::Utf8, false), Arc::new(s))]);
    let bytes = common::write(&path, &batch.schema(), std::slice::from_ref(&batch), rows);
    assert!(bytes.len() < 100_000, "{} bytes", bytes.len());
    let out = open_read(&path, checked()).unwrap();
    common::assert_same(&batch, &out);
    let decoded = out.column(0).as_string::<i32>().value_data().len();
    assert_eq!(decoded, rows * 900);
    assert!(decoded > 16 * bytes.len());
}

/// A footer whose lookup points at its own column is refused, when the chunk is first
/// used, with a message naming the block, the column and the source.
#[test]
fn lookup_into_itself_names_the_column() {
    let dir = tempfile::tempdir().unwrap();
    let s = sample("mixed.sift");
    let mut f = footer_of(s);
    let narrow = column(&f, "i64_narrow");
    f.blocks[0].columns[narrow].encoding.nodes[0] =
        Node::Lookup(sift_encoding::encodings::Lookup {
            column: narrow as u32,
            len: 1,
            table: 1,
        });
    let path = dir.path().join("self-lookup.sift");
    std::fs::write(&path, with_footer(s, &f)).unwrap();
    let file = SiftFile::open(&path).unwrap();
    assert!(file.chunk_meta(0, narrow).is_err());
    let msg = file.read_all(None).unwrap_err().to_string();
    let want = format!(
        "block 0 column 'i64_narrow' is a lookup into column {narrow}, which is not another stored column"
    );
    assert!(msg.contains(&want), "{msg}");
    assert!(msg.contains(&path.display().to_string()), "{msg}");
}

#[test]
fn unsupported_version_error_names_both_versions() {
    let dir = tempfile::tempdir().unwrap();
    let s = sample("tiny.sift");
    let start = footer_offset(&s.bytes);
    let bytes = assemble(
        &s.bytes[..start],
        &s.bytes[start..s.bytes.len() - TRAILER_LEN],
        7,
        &MAGIC,
    );
    let path = dir.path().join("v7.sift");
    std::fs::write(&path, bytes).unwrap();
    let err = SiftFile::open(&path).unwrap_err();
    assert!(
        matches!(
            err,
            Error::UnsupportedVersion {
                found: 7,
                supported: FORMAT_VERSION,
                ..
            }
        ),
        "{err:?}"
    );
    let msg = err.to_string();
    assert!(
        msg.contains("7") && msg.contains(&path.display().to_string()),
        "{msg}"
    );
}

/// Writes the seed corpus of the `read_file` fuzz target (`cargo test -- --ignored`).
#[test]
#[ignore = "writes fuzz/corpus/read_file; run by hand after format changes"]
fn write_fuzz_seeds() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/read_file");
    std::fs::create_dir_all(&dir).unwrap();
    let seeds: Vec<(&str, Vec<u8>)> = vec![
        ("mixed-small", make_sample("m", mixed_batch(40), 16).bytes),
        ("plain", make_sample("p", plain_batch(30), 16).bytes),
        ("tiny", sample("tiny.sift").bytes.clone()),
        (
            "schemes-ints",
            make_sample("si", scheme_batch(400, 0..8), 400).bytes,
        ),
        (
            "schemes-other",
            make_sample("so", scheme_batch(400, 8..16), 400).bytes,
        ),
        (
            "schemes-more",
            make_sample("sm", scheme_batch(400, 16..18), 400).bytes,
        ),
        ("empty", sample("empty.sift").bytes.clone()),
        (
            "byteslice",
            byteslice_sample("b", mixed_batch(40), 16).bytes,
        ),
        ("nested", make_sample("n", nested_batch(40), 16).bytes),
        ("skewed", make_sample("sk", skewed_batch(1200), 1200).bytes),
    ];
    for (name, bytes) in seeds {
        assert!(bytes.len() < 10_000, "{name}: {} bytes", bytes.len());
        std::fs::write(dir.join(format!("{name}.sift")), bytes).unwrap();
    }
}

/// Columns shaped so that the writer picks every scheme of the pool at least once.
fn scheme_batch(n: usize, columns: std::ops::Range<usize>) -> RecordBatch {
    let n64 = n as i64;
    let words = [
        "final", "deposits", "sleep", "quickly", "ironic", "packages", "blithely", "among",
    ];
    let all: Vec<(&str, ArrayRef)> = vec![
        ("const", Arc::new(Int64Array::from(vec![42i64; n]))),
        (
            "runs",
            Arc::new(Int64Array::from_iter_values(
                (0..n64).map(|i| (i / 50) * 1_000_003),
            )),
        ),
        (
            "few",
            Arc::new(Int64Array::from_iter_values((0..n64).map(|i| {
                [3i64 << 40, 5 << 50, -7][(hash(i as u64) % 3) as usize]
            }))),
        ),
        (
            "skewed",
            Arc::new(Int64Array::from_iter_values((0..n64).map(|i| {
                if hash(i as u64) % 10 < 8 {
                    7
                } else {
                    (hash(i as u64 + 99) % 100_000) as i64
                }
            }))),
        ),
        (
            "outliers",
            Arc::new(Int64Array::from_iter_values((0..n64).map(|i| {
                if i % 97 == 0 {
                    (hash(i as u64) as i64) >> 4
                } else {
                    (hash(i as u64) % 64) as i64
                }
            }))),
        ),
        (
            "sorted",
            Arc::new(Int64Array::from_iter_values(
                (0..n64).map(|i| i * 5 + (hash(i as u64) % 3) as i64),
            )),
        ),
        (
            "uniform",
            Arc::new(Int32Array::from_iter_values(
                (0..n as u32).map(|i| (hash(u64::from(i)) % 4096) as i32),
            )),
        ),
        (
            "wide",
            Arc::new(Int64Array::from_iter_values(
                (0..n64).map(|i| hash(i as u64) as i64),
            )),
        ),
        (
            "price",
            Arc::new(Float64Array::from_iter_values(
                (0..n64).map(|i| (hash(i as u64) % 1_000_000) as f64 / 100.0),
            )),
        ),
        (
            "real",
            Arc::new(Float64Array::from_iter_values(
                (0..n64).map(|i| (hash(i as u64) % 1_000_000) as f64 / 7.0),
            )),
        ),
        (
            "mantissa",
            Arc::new(Float64Array::from_iter_values((0..n64).map(|i| {
                1.0 + (hash(i as u64) >> 12) as f64 / (1u64 << 52) as f64
            }))),
        ),
        (
            "flag",
            Arc::new(BooleanArray::from_iter(
                (0..n).map(|i| Some(hash(i as u64).is_multiple_of(3))),
            )),
        ),
        (
            "flag_runs",
            Arc::new(BooleanArray::from_iter(
                (0..n).map(|i| Some(i < n / 3 || i > 2 * n / 3)),
            )),
        ),
        (
            "text",
            Arc::new(StringArray::from_iter_values((0..n as u64).map(|i| {
                (0..4)
                    .map(|k| words[(hash(i * 4 + k) % 8) as usize])
                    .collect::<Vec<_>>()
                    .join(" ")
            }))),
        ),
        (
            "mode",
            Arc::new(StringArray::from_iter_values(
                (0..n as u64).map(|i| ["AIR", "RAIL", "SHIP"][(hash(i) % 3) as usize]),
            )),
        ),
        (
            "mode_rank",
            Arc::new(Int64Array::from_iter_values(
                (0..n as u64).map(|i| (hash(i) % 3) as i64 * 1_000_000 + 7),
            )),
        ),
        (
            "periodic",
            Arc::new(Int64Array::from_iter_values(
                (0..n as u64).map(|i| (hash(i % 90) % 1000) as i64),
            )),
        ),
        (
            "mostly_zero",
            Arc::new(Float64Array::from_iter_values((0..n as u64).map(|i| {
                if hash(i).is_multiple_of(5) || hash(i + 1).is_multiple_of(3) {
                    (hash(i + 2) % 200) as f64 / 10.0
                } else {
                    0.0
                }
            }))),
        ),
    ];
    RecordBatch::try_from_iter(all[columns].iter().cloned()).unwrap()
}

/// Every scheme of the pool appears in the committed fuzz seeds, so the fuzz target starts
/// from each decoder.
#[test]
fn fuzz_seeds_reach_every_scheme() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/read_file");
    let mut seen = std::collections::BTreeSet::new();
    for e in std::fs::read_dir(&dir).unwrap() {
        let path = e.unwrap().path();
        if path.extension().is_some_and(|x| x == "sift") {
            let file = SiftFile::open(&path).unwrap();
            for block in &file.decode_footer().unwrap().blocks {
                for chunk in &block.columns {
                    seen.extend(chunk.encoding.nodes.iter().map(Node::name));
                }
            }
        }
    }
    let all = [
        "plain",
        "for",
        "bitmap",
        "bytes",
        "dict",
        "const",
        "rle",
        "patch",
        "delta",
        "alp",
        "alprd",
        "bss",
        "fsst",
        "lookup",
        "byteslice",
        "huffman",
    ];
    let missing: Vec<&str> = all.iter().copied().filter(|s| !seen.contains(s)).collect();
    assert!(
        missing.is_empty(),
        "schemes missing from the fuzz seeds: {missing:?} (seen {seen:?})"
    );
}

/// The committed fuzz seeds stay readable as the format evolves.
#[test]
fn fuzz_seeds_are_valid_files() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/read_file");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        panic!(
            "{}: missing; run `cargo test -p sift-format --test robustness -- --ignored write_fuzz_seeds`",
            dir.display()
        );
    };
    let mut n = 0;
    for e in entries {
        let path = e.unwrap().path();
        if path.extension().is_some_and(|x| x == "sift") {
            open_read(&path, checked()).unwrap_or_else(|e| panic!("{e}"));
            n += 1;
        }
    }
    assert!(n >= 4, "only {n} seeds in {}", dir.display());
}

/// Where the sections of a version-3 footer are (byte ranges within the footer), read from
/// its header the way docs/format.md specifies.
struct Layout {
    columns: usize,
    name_table: usize,
    names: std::ops::Range<usize>,
    field_table: usize,
    fields: std::ops::Range<usize>,
    chunk_table: usize,
    chunks: std::ops::Range<usize>,
}

impl Layout {
    fn of(footer: &[u8]) -> Self {
        let u32_at =
            |at: usize| u32::from_le_bytes(footer[at..at + 4].try_into().unwrap()) as usize;
        let (columns, blocks) = (u32_at(8), u32_at(12));
        let mut at = 36;
        let mut section = |len: usize| {
            at += len;
            at - len..at
        };
        section(u32_at(16));
        section(4 * blocks);
        let name_table = section(4 * (columns + 1)).start;
        let names = section(u32_at(20));
        let field_table = section(4 * (columns + 1)).start;
        let fields = section(u32_at(24));
        let chunk_table = section(4 * (blocks * columns + 1)).start;
        let chunks = section(u32_at(32));
        assert_eq!(at, footer.len());
        Layout {
            columns,
            name_table,
            names,
            field_table,
            fields,
            chunk_table,
            chunks,
        }
    }

    fn entry(footer: &[u8], table: usize, i: usize) -> usize {
        u32::from_le_bytes(footer[table + 4 * i..table + 4 * i + 4].try_into().unwrap()) as usize
    }

    fn set_entry(footer: &mut [u8], table: usize, i: usize, v: usize) {
        footer[table + 4 * i..table + 4 * i + 4].copy_from_slice(&(v as u32).to_le_bytes());
    }

    /// Chunk `(b, c)`'s record, as a range of the footer.
    fn chunk(&self, footer: &[u8], b: usize, c: usize) -> std::ops::Range<usize> {
        let i = b * self.columns + c;
        let start = Layout::entry(footer, self.chunk_table, i);
        let end = Layout::entry(footer, self.chunk_table, i + 1);
        self.chunks.start + start..self.chunks.start + end
    }
}

/// Damage to the version-3 layout itself — sections, offset tables, record checksums,
/// encoding ids, counts — each with every checksum made valid again where the case is
/// about structure, ends in an error that says what is wrong, never a panic or an
/// allocation the file does not justify.
#[test]
fn v3_layout_damage_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let s = sample("mixed.sift");
    let start = footer_offset(&s.bytes);
    let data = &s.bytes[..start];
    let footer = s.bytes[start..s.bytes.len() - TRAILER_LEN].to_vec();
    let base = footer_of(s);
    let narrow = column(&base, "i64_narrow");
    let high = column(&base, "utf8_high");
    type Edit = Box<dyn Fn(&mut Vec<u8>)>;
    let cases: Vec<(&str, Edit, &str)> = vec![
        (
            "footer cut after the header",
            Box::new(|f| f.truncate(36)),
            "describes",
        ),
        (
            "footer shorter than the header",
            Box::new(|f| f.truncate(20)),
            "shorter than the 36-byte header",
        ),
        (
            "chunk section cut",
            Box::new(|f| {
                let n = f.len();
                f.truncate(n - 10)
            }),
            "describes",
        ),
        (
            "chunk offset past its section",
            Box::new(move |f| {
                let t = l_chunk_table(f);
                Layout::set_entry(f, t, narrow + 1, 1 << 30)
            }),
            "metadata offsets out of place",
        ),
        (
            "chunk offsets out of order",
            Box::new(move |f| {
                let t = l_chunk_table(f);
                let prev = Layout::entry(f, t, narrow);
                Layout::set_entry(f, t, narrow + 1, prev.saturating_sub(3))
            }),
            "metadata offsets out of place",
        ),
        (
            "chunk table does not span its section",
            Box::new(move |f| {
                let t = l_chunk_table(f);
                Layout::set_entry(f, t, 0, 4)
            }),
            "offset table does not span",
        ),
        (
            "two chunk records swapped in the table",
            Box::new(move |f| {
                // Column narrow's entry points at column high's record (same block).
                let t = l_chunk_table(f);
                let (a, b) = (Layout::entry(f, t, narrow), Layout::entry(f, t, high));
                let a_end = Layout::entry(f, t, narrow + 1);
                let b_end = Layout::entry(f, t, high + 1);
                if a_end - a == b_end - b {
                    Layout::set_entry(f, t, narrow, b);
                    Layout::set_entry(f, t, narrow + 1, b_end);
                } else {
                    Layout::set_entry(f, t, narrow, a + 1);
                }
            }),
            "checksum mismatch",
        ),
        (
            "name offsets out of order",
            Box::new(move |f| {
                let l = Layout::of(f);
                Layout::set_entry(f, l.name_table, 1, 1 << 20);
                seal_footer(f);
            }),
            "name offsets out of place",
        ),
        (
            "field offsets past their section",
            Box::new(move |f| {
                let l = Layout::of(f);
                Layout::set_entry(f, l.field_table, narrow + 1, l.fields.len() + 1);
                seal_footer(f);
            }),
            "field offsets out of place",
        ),
        (
            "schema byte flipped",
            Box::new(move |f| {
                let l = Layout::of(f);
                f[l.names.start] ^= 0x20;
            }),
            "schema checksum mismatch",
        ),
        (
            "unknown column type id",
            Box::new(move |f| {
                let l = Layout::of(f);
                let at = l.fields.start + Layout::entry(f, l.field_table, narrow);
                f[at] = 200;
                seal_footer(f);
            }),
            "unknown column type id 200",
        ),
        (
            "huge field metadata count",
            Box::new(move |f| {
                // The last field's record ends with its metadata count: make it huge.
                let l = Layout::of(f);
                let last = l.columns - 1;
                let at = l.fields.start + Layout::entry(f, l.field_table, last);
                let end = l.fields.end;
                assert_eq!(f[end - 1], 0, "last field has metadata");
                let mut rec = f[at..end - 1].to_vec();
                rec.extend_from_slice(&[0xFF, 0xFF, 0xFF, 0xFF, 0x0F]);
                let grow = rec.len() - (end - at);
                f.splice(at..end, rec);
                let fields_len = u32::from_le_bytes(f[24..28].try_into().unwrap()) as usize;
                f[24..28].copy_from_slice(&((fields_len + grow) as u32).to_le_bytes());
                let t = l.field_table;
                Layout::set_entry(f, t, l.columns, fields_len + grow);
                seal_footer(f);
            }),
            "cannot fit",
        ),
        (
            "chunk record byte flipped",
            Box::new(move |f| {
                let l = Layout::of(f);
                let r = l.chunk(f, 1, high);
                f[r.end - 1] ^= 1;
            }),
            "block 1 column 'utf8_high': metadata record at footer byte",
        ),
        (
            "unknown encoding id",
            Box::new(move |f| {
                let l = Layout::of(f);
                let r = l.chunk(f, 0, narrow);
                // After the CRC: the validity tag, the node count (one byte), then the
                // first node's id.
                let id_at = r.start + 4 + validity_len(f[r.start + 4]) + 1;
                f[id_at] = 99;
                seal_footer(f);
            }),
            "unknown encoding id 99",
        ),
        (
            "huge node count",
            Box::new(move |f| {
                let l = Layout::of(f);
                let r = l.chunk(f, 0, narrow);
                let count_at = r.start + 4 + validity_len(f[r.start + 4]);
                // Longer than the one-byte count it replaces: grow the record and shift
                // the offsets after it.
                let huge = [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F];
                f.splice(count_at..count_at + 1, huge);
                let grow = huge.len() - 1;
                let entries = (l.chunks.start - l.chunk_table) / 4;
                for e in narrow + 1..entries {
                    let v = Layout::entry(f, l.chunk_table, e);
                    Layout::set_entry(f, l.chunk_table, e, v + grow);
                }
                let chunks_len = u32::from_le_bytes(f[32..36].try_into().unwrap()) as usize;
                f[32..36].copy_from_slice(&((chunks_len + grow) as u32).to_le_bytes());
                seal_footer(f);
            }),
            "cannot fit",
        ),
    ];
    let mut names = std::collections::BTreeSet::new();
    for (name, edit, want) in cases {
        assert!(names.insert(name));
        let mut f = footer.clone();
        edit(&mut f);
        assert_ne!(f, footer, "{name} changes nothing");
        let path = dir.path().join("v3.sift");
        let outcome = attempt(
            &path,
            &assemble(data, &f, FORMAT_VERSION, &MAGIC),
            checked(),
            &s.batch,
        );
        match outcome {
            Outcome::Failed(e) => {
                let msg = e.to_string();
                assert!(msg.contains(want), "{name}: {msg}");
                assert!(msg.contains(&path.display().to_string()), "{name}: {msg}");
            }
            Outcome::Panicked(p) => panic!("{name}: PANIC {p}"),
            Outcome::HugeAlloc(n) => panic!("{name}: allocated {n} bytes"),
            _ => panic!("{name}: read without an error"),
        }
    }
    for version in [2, 99] {
        let path = dir.path().join(format!("v{version}.sift"));
        std::fs::write(&path, assemble(data, &footer, version, &MAGIC)).unwrap();
        let err = SiftFile::open(&path).unwrap_err();
        assert!(
            matches!(err, Error::UnsupportedVersion { found, .. } if found == version),
            "{err:?}"
        );
        assert!(
            err.to_string().contains(&format!("version {version}")),
            "{err}"
        );
    }
}

/// Where the chunk offset table starts in a footer.
fn l_chunk_table(f: &[u8]) -> usize {
    Layout::of(f).chunk_table
}

/// Bytes of a chunk record's validity given its tag (tag 2 carries a one-byte root here).
fn validity_len(tag: u8) -> usize {
    if tag == 2 { 2 } else { 1 }
}

/// A damaged chunk record is found when that chunk is first used, with its block, column
/// and footer byte; other columns of the file still read.
#[test]
fn a_damaged_chunk_record_fails_only_its_chunk() {
    let dir = tempfile::tempdir().unwrap();
    let s = sample("mixed.sift");
    let start = footer_offset(&s.bytes);
    let mut footer = s.bytes[start..s.bytes.len() - TRAILER_LEN].to_vec();
    let base = footer_of(s);
    let (narrow, high) = (column(&base, "i64_narrow"), column(&base, "utf8_high"));
    let l = Layout::of(&footer);
    let r = l.chunk(&footer, 2, high);
    footer[r.start + 6] ^= 0x40;
    let path = dir.path().join("damaged-record.sift");
    std::fs::write(
        &path,
        assemble(&s.bytes[..start], &footer, FORMAT_VERSION, &MAGIC),
    )
    .unwrap();
    let f = SiftFile::open(&path).unwrap();
    let got = f.read_all(Some(vec![narrow])).unwrap();
    let got = arrow::compute::concat_batches(&got[0].schema(), &got).unwrap();
    assert_eq!(got.column(0).as_ref(), s.batch.column(narrow).as_ref());
    for b in [0, 1, 3] {
        f.chunk_meta(b, high).unwrap();
    }
    let msg = f.read_all(Some(vec![high])).unwrap_err().to_string();
    let want = format!(
        "block 2 column 'utf8_high': metadata record at footer byte {}: checksum mismatch",
        r.start
    );
    assert!(msg.contains(&want), "{msg}");
    assert!(msg.contains(&path.display().to_string()), "{msg}");
}
