//! Damaged Parquet files through the scan engine: Sift's own page reader (dictionary and
//! PLAIN pages read in place, DELTA and BYTE_STREAM_SPLIT pages decoded, definition
//! levels, decompression), the row-group and page pruning by the file's statistics, page
//! index and Bloom filters, and the `parquet` crate's reader for what Sift does not read
//! (nested columns).
//!
//! A small table with flat, nullable, dictionary, decimal and nested columns is written
//! four ways (pages v1 with dictionaries and a page index; pages v2, snappy, no
//! dictionaries, which arrow-rs writes DELTA_BINARY_PACKED and DELTA_BYTE_ARRAY; zstd
//! with dictionaries falling back to PLAIN; pages v1, no dictionaries, integers, floats and
//! decimals BYTE_STREAM_SPLIT and strings DELTA_LENGTH_BYTE_ARRAY). Each is then damaged:
//! truncated, with bytes changed anywhere, at the start of every page (its header and
//! levels) and in the footer. Every damaged file is opened and scanned with filters of
//! every kind, projections and dictionary reads; each scan must end in `Ok` or in an
//! error naming the file, never a panic, a hang or an allocation out of proportion to
//! the file. `SIFT_HOSTILE_SCALE=10` tries ten times as many variants.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
#[path = "../../sift-format/tests/common/tracking.rs"]
mod tracking;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use arrow::array::builder::{Int64Builder, ListBuilder};
use arrow::array::*;
use arrow::record_batch::RecordBatch;
use common::{ParquetLayout, Rng};
use parquet::basic::{BrotliLevel, Compression, ZstdLevel};
use parquet::file::properties::EnabledStatistics;
use sift_scan::{ScanBuilder, Table, col, parse_filter};
use tracking::tracked_refusing_above;

/// Far above what a scan of these files needs (a few hundred KB), far below what a
/// hostile length would ask for.
const ALLOC_LIMIT: usize = 64 << 20;
/// Requests above this are refused (the process aborts): a damaged length must never
/// make the test machine allocate gigabytes.
const ALLOC_REFUSE: usize = 2 << 30;
/// How long all the scans of one damaged file may take before it counts as a hang.
const TIMEOUT: Duration = Duration::from_secs(30);

const ROWS: usize = 2400;
const LOW: [&str; 5] = ["AIR", "MAIL", "SHIP", "TRUCK", "RAIL"];

/// `id` sorted; `small` 0..20 with nulls; `low` five strings with nulls; `uniq` distinct
/// strings; `f` floats with nulls; `dec` decimal(12,2); `b` booleans with nulls; `d`
/// dates; `tags` lists of longs with null lists and elements.
fn batch() -> RecordBatch {
    let mut rng = Rng::new(0x0bad_f11e);
    let id = Int64Array::from_iter_values(0..ROWS as i64);
    let small = Int32Array::from_iter((0..ROWS).map(|i| (i % 11 != 4).then_some((i % 20) as i32)));
    let low = StringArray::from_iter(
        (0..ROWS).map(|i| (i % 13 != 6).then(|| LOW[rng.below(LOW.len() as u64) as usize])),
    );
    let uniq = StringArray::from_iter_values((0..ROWS).map(|i| format!("u-{:06}", i * 37)));
    let f =
        Float64Array::from_iter((0..ROWS).map(|i| (i % 7 != 2).then(|| (i as f64 - 1000.0) / 8.0)));
    let dec = Decimal128Array::from_iter_values((0..ROWS).map(|i| (i as i128 % 500) * 101 - 9000))
        .with_precision_and_scale(12, 2)
        .unwrap();
    let b = BooleanArray::from_iter((0..ROWS).map(|i| (i % 5 != 0).then_some(i % 3 == 0)));
    let d = Date32Array::from_iter_values((0..ROWS).map(|i| 8000 + (i / 3) as i32));
    let mut tags = ListBuilder::new(Int64Builder::new());
    for i in 0..ROWS {
        if i % 17 == 3 {
            tags.append_null();
            continue;
        }
        for j in 0..rng.below(5) {
            tags.values()
                .append_option((j != 2).then(|| rng.below(1000) as i64));
        }
        tags.append(true);
    }
    RecordBatch::try_from_iter([
        ("id", Arc::new(id) as ArrayRef),
        ("small", Arc::new(small)),
        ("low", Arc::new(low)),
        ("uniq", Arc::new(uniq)),
        ("f", Arc::new(f)),
        ("dec", Arc::new(dec)),
        ("b", Arc::new(b)),
        ("d", Arc::new(d)),
        ("tags", Arc::new(tags.finish())),
    ])
    .unwrap()
}

/// The four files' layouts.
fn layouts() -> [(&'static str, ParquetLayout); 4] {
    let base = ParquetLayout::new(1000, 250);
    [
        (
            "v1-dictionary-page-index",
            ParquetLayout {
                bloom_filters: true,
                ..base
            },
        ),
        (
            "v2-snappy-plain",
            ParquetLayout {
                page_rows: 400,
                statistics: EnabledStatistics::Chunk,
                dictionary: None,
                pages_v2: true,
                compression: Compression::SNAPPY,
                ..base
            },
        ),
        (
            "zstd-dictionary-fallback",
            ParquetLayout {
                dictionary: Some(200),
                compression: Compression::ZSTD(ZstdLevel::default()),
                ..base
            },
        ),
        (
            "v1-split-delta-lengths",
            ParquetLayout {
                dictionary: None,
                delta: Some(true),
                ..base
            },
        ),
    ]
}

/// One scan of a damaged file.
type Scan = (&'static str, fn(&Table) -> ScanBuilder);

/// Scans reaching every path: whole columns, each kind of predicate on encoded pages
/// (dictionary, PLAIN, levels, decimals, booleans), a sparse selection pushed into the
/// nested and the remaining columns, pruning by page index and Bloom filter, and
/// dictionary reads.
fn scans() -> Vec<Scan> {
    fn filtered(t: &Table, f: &str) -> ScanBuilder {
        t.scan().filter(parse_filter(f).unwrap())
    }
    vec![
        ("all columns", |t| t.scan()),
        ("id range", |t| filtered(t, "id >= 700 and id < 1900")),
        ("small", |t| filtered(t, "small = 3 or small is null")),
        ("low", |t| filtered(t, "low in ('MAIL', 'SHIP')")),
        ("uniq", |t| filtered(t, "uniq = 'u-003700'")),
        ("f", |t| filtered(t, "f < 1.5 and f is not null")),
        ("dec", |t| filtered(t, "dec >= 10.00")),
        ("b", |t| filtered(t, "b = true")),
        ("d", |t| {
            filtered(t, "d between date '1992-01-01' and date '1992-01-20'")
        }),
        ("tags null", |t| t.scan().filter(col("tags").is_null())),
        ("sparse, nested projected", |t| {
            filtered(t, "small = 7 and low = 'AIR'").project(["tags", "low", "f"])
        }),
        ("low as dictionary", |t| {
            filtered(t, "low = 'AIR'").read_dictionary(["low"])
        }),
        ("row window", |t| {
            t.scan()
                .rows(1100..1400)
                .filter(parse_filter("small < 5").unwrap())
        }),
    ]
}

/// A damaged file and what was done to it.
struct Variant {
    damage: String,
    bytes: Vec<u8>,
}

/// What the scans of the damaged files did.
#[derive(Default)]
struct Tally {
    problems: Vec<String>,
    opened: usize,
    ok: usize,
    failed: usize,
}

/// Opens the file at `path` and runs every scan, each under `catch_unwind` and the
/// allocation tracker; notes panics, large allocations and errors not naming the file.
fn run_scans(path: &Path, current: &Mutex<&'static str>) -> Tally {
    let mut out = Tally::default();
    let file = path.display().to_string();
    let mut check = |what: &str, r: std::thread::Result<Option<String>>, largest: usize| {
        if largest > ALLOC_LIMIT {
            out.problems
                .push(format!("{what}: allocated {largest} bytes"));
        }
        match r {
            Err(p) => out.problems.push(format!(
                "{what}: PANIC: {}",
                common::panic_message(p.as_ref())
            )),
            Ok(Some(e)) if !e.contains(&file) => out
                .problems
                .push(format!("{what}: error does not name the file: {e}")),
            Ok(Some(_)) => out.failed += 1,
            Ok(None) => out.ok += 1,
        }
    };
    let (opened, largest) = tracked_refusing_above(ALLOC_REFUSE, || {
        catch_unwind(AssertUnwindSafe(|| Table::open(path)))
    });
    let table = match opened {
        Ok(Ok(t)) => t,
        Ok(Err(e)) => {
            check("open", Ok(Some(e.to_string())), largest);
            return out;
        }
        Err(p) => {
            check("open", Err(p), largest);
            return out;
        }
    };
    out.opened = 1;
    for (name, scan) in scans() {
        if let Ok(mut c) = current.lock() {
            *c = name;
        }
        let (r, largest) = tracked_refusing_above(ALLOC_REFUSE, || {
            catch_unwind(AssertUnwindSafe(|| {
                let mut scan = scan(&table).build()?;
                for b in scan.by_ref() {
                    b?;
                }
                sift_scan::Result::Ok(())
            }))
        });
        check(
            &format!("scan {name:?}"),
            r.map(|r: sift_scan::Result<()>| r.err().map(|e| e.to_string())),
            largest,
        );
    }
    out
}

/// Runs the scans of every variant of `name`, each on another thread with a timeout, and
/// fails with every problem found.
fn check_variants(name: &str, variants: Vec<Variant>) {
    let dir = tempfile::tempdir().unwrap();
    let path: PathBuf = dir.path().join(format!("{name}.parquet"));
    let n = variants.len();
    let mut all = Tally::default();
    for v in variants {
        std::fs::write(&path, &v.bytes).unwrap();
        let current = Arc::new(Mutex::new("open"));
        let (tx, rx) = mpsc::channel();
        let (p, cur) = (path.clone(), current.clone());
        std::thread::spawn(move || {
            let _ = tx.send(run_scans(&p, &cur));
        });
        let out = rx.recv_timeout(TIMEOUT).unwrap_or_else(|_| {
            // Kept for a look at the hang (the temporary directory goes with the panic).
            let kept = std::env::temp_dir().join(format!("sift-hang-{name}.parquet"));
            let _ = std::fs::write(&kept, &v.bytes);
            panic!(
                "{name}, {}: scan {:?} gave no result after {} s (hang?); the file is kept at {}",
                v.damage,
                current.lock().map(|c| *c).unwrap_or_default(),
                TIMEOUT.as_secs(),
                kept.display()
            )
        });
        all.problems
            .extend(out.problems.iter().map(|p| format!("{}: {p}", v.damage)));
        all.opened += out.opened;
        all.ok += out.ok;
        all.failed += out.failed;
    }
    eprintln!(
        "{name}: {n} variants, {} opened; {} scans returned rows, {} failed",
        all.opened, all.ok, all.failed
    );
    assert!(
        all.problems.is_empty(),
        "{name}: {} problems in {n} variants:\n{}",
        all.problems.len(),
        all.problems[..all.problems.len().min(40)].join("\n")
    );
}

/// `SIFT_HOSTILE_SCALE` (default 1) times `n`.
fn scaled(n: usize) -> usize {
    let scale: usize = std::env::var("SIFT_HOSTILE_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    n * scale.max(1)
}

/// A byte unlike `byte`: flipped bits, zero, 0xFF, or off by one (varints and lengths
/// change size or value a little, which reaches more checks than random bytes).
fn mutate(rng: &mut Rng, byte: u8) -> u8 {
    let m = match rng.below(5) {
        0 => byte ^ (1 << rng.below(8)),
        1 => 0,
        2 => 0xFF,
        3 => byte.wrapping_add(1),
        _ => rng.below(256) as u8,
    };
    if m == byte { !byte } else { m }
}

/// The file's page starts (dictionary and data pages, from the footer and the page
/// index) and where its footer begins.
fn landmarks(bytes: &[u8]) -> (Vec<usize>, usize) {
    let meta = parquet::file::metadata::ParquetMetaDataReader::new()
        .with_page_index_policy(parquet::file::metadata::PageIndexPolicy::Optional)
        .parse_and_finish(&bytes::Bytes::copy_from_slice(bytes))
        .unwrap();
    let mut pages = Vec::new();
    for (rg, group) in meta.row_groups().iter().enumerate() {
        for (c, chunk) in group.columns().iter().enumerate() {
            pages.push(chunk.data_page_offset() as usize);
            pages.extend(chunk.dictionary_page_offset().map(|o| o as usize));
            if let Some(index) = meta.offset_index().and_then(|o| o.get(rg)?.get(c)) {
                pages.extend(index.page_locations().iter().map(|l| l.offset as usize));
            }
        }
    }
    pages.sort_unstable();
    pages.dedup();
    let n = bytes.len();
    let footer_len = u32::from_le_bytes(bytes[n - 8..n - 4].try_into().unwrap()) as usize;
    (pages, n - 8 - footer_len)
}

/// The damaged variants of one file.
fn variants(bytes: &[u8], seed: u64) -> Vec<Variant> {
    let mut rng = Rng::new(seed);
    let n = bytes.len();
    let (pages, footer) = landmarks(bytes);
    let mut out = Vec::new();
    let flip = |rng: &mut Rng, at: usize, what: &str| {
        let mut b = bytes.to_vec();
        b[at] = mutate(rng, b[at]);
        Variant {
            damage: format!("{what}: byte {at} {:#04x} -> {:#04x}", bytes[at], b[at]),
            bytes: b,
        }
    };
    // Truncations: the footer's tail, inside the footer, and anywhere in the pages.
    let mut cuts: Vec<usize> = vec![0, 1, 4, 8, n - 1, n - 4, n - 8, n - 9, footer];
    cuts.extend((0..scaled(12)).map(|_| footer + rng.below((n - footer) as u64) as usize));
    cuts.extend((0..scaled(12)).map(|_| rng.below(footer as u64) as usize));
    for c in cuts {
        let mut b = bytes[..c].to_vec();
        // Half of them keep a valid-looking end: the magic after the cut.
        if rng.below(2) == 0 && c >= 8 {
            b.extend_from_slice(b"PAR1");
        }
        out.push(Variant {
            damage: format!("cut at {c} of {n} ({} bytes)", b.len()),
            bytes: b,
        });
    }
    // A byte changed anywhere in the pages.
    for _ in 0..scaled(60) {
        let at = rng.below(footer as u64) as usize;
        out.push(flip(&mut rng, at, "pages"));
    }
    // A byte changed in the first 24 bytes of a page: its header (type, sizes, value
    // count, encodings) or the start of its levels or values.
    for _ in 0..scaled(120) {
        let at = pages[rng.below(pages.len() as u64) as usize] + rng.below(24) as usize;
        out.push(flip(&mut rng, at.min(n - 1), "page start"));
    }
    // A byte changed in the footer (schema, row counts, offsets, statistics).
    for _ in 0..scaled(80) {
        let at = footer + rng.below((n - 8 - footer) as u64) as usize;
        out.push(flip(&mut rng, at, "footer"));
    }
    out
}

#[test]
fn damaged_parquet_files_are_errors_never_panics() {
    let dir = tempfile::tempdir().unwrap();
    let batch = batch();
    for (i, (name, layout)) in layouts().into_iter().enumerate() {
        let path = dir.path().join(format!("{name}.parquet"));
        common::write_parquet_layout(&path, batch.schema(), std::slice::from_ref(&batch), layout);
        let bytes = std::fs::read(&path).unwrap();
        // The undamaged file answers every scan.
        let table = Table::open(&path).unwrap();
        for (what, scan) in scans() {
            let rows: usize = scan(&table)
                .build()
                .unwrap()
                .map(|b| b.unwrap().num_rows())
                .sum();
            assert!(rows > 0, "{name}: {what} found no rows");
        }
        check_variants(name, variants(&bytes, 0x5eed + i as u64));
    }
}

/// The damaged files the fuzzer found (`testdata/damaged-parquet`): every column of each,
/// scanned alone, ends promptly in rows or an error naming the file, never a panic.
#[test]
fn fuzzer_findings_are_errors() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/damaged-parquet");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "parquet"))
        .collect();
    files.sort();
    assert!(files.len() >= 3, "{}", dir.display());
    for path in files {
        let (tx, rx) = mpsc::channel();
        let p = path.clone();
        std::thread::spawn(move || {
            let file = p.display().to_string();
            let mut problems = Vec::new();
            let r = catch_unwind(AssertUnwindSafe(|| -> sift_scan::Result<()> {
                let table = Table::open(&p)?;
                for field in table.schema().fields() {
                    let scan = table.scan().project([field.name().as_str()]).build()?;
                    match scan.collect::<sift_scan::Result<Vec<_>>>() {
                        Err(e) if !e.to_string().contains(&file) => {
                            problems.push(format!("{}: {e}", field.name()))
                        }
                        _ => {}
                    }
                }
                Ok(())
            }));
            let _ = tx.send((r.map_err(|p| common::panic_message(p.as_ref())), problems));
        });
        let (r, problems) = rx
            .recv_timeout(TIMEOUT)
            .unwrap_or_else(|_| panic!("{}: no result after {TIMEOUT:?}", path.display()));
        match r {
            Err(p) => panic!("{}: PANIC: {p}", path.display()),
            Ok(Err(e)) => assert!(e.to_string().contains(&path.display().to_string()), "{e}"),
            Ok(Ok(())) => {}
        }
        assert!(problems.is_empty(), "{}: {problems:?}", path.display());
    }
}

/// A DELTA_BYTE_ARRAY page whose suffix lengths' stream, by its last block's bit widths,
/// ends past the page (found by the fuzzer): refused with the stream's end and the bytes it
/// was read from, the file, column and page named, where the page was once sliced there.
#[test]
fn delta_streams_ending_past_their_page_are_refused() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/damaged-parquet/delta-stream-past-the-page.parquet");
    let table = Table::open(&path).unwrap();
    let scan = table
        .scan()
        .project(["c_preferred_cust_flag"])
        .build()
        .unwrap();
    let e = scan
        .collect::<sift_scan::Result<Vec<_>>>()
        .unwrap_err()
        .to_string();
    for part in [
        path.display().to_string().as_str(),
        "column c_preferred_cust_flag: page 0",
        "a DELTA_BINARY_PACKED stream of 971 values ends at byte 866, past the 806 bytes it is read from",
    ] {
        assert!(e.contains(part), "{e}");
    }
}

/// A list of 2^31 - 1 booleans as a Thrift field no reader knows (id 100): 9 bytes.
const BOOLEAN_BOMB: [u8; 9] = [0x09, 0xC8, 0x01, 0xF1, 0xFF, 0xFF, 0xFF, 0xFF, 0x07];

/// The `parquet` crate skips the elements of such a list without reading a byte of them,
/// 2^31 - 1 times over: seconds per list. Put in the footer (eight times) or in a page header
/// (in place of the page statistics' minimum), the file is refused as soon as it is opened
/// or its page is read, the error naming the file and the list's length, for Sift's scan
/// and for the crate's reader through `ParquetFile`.
#[test]
fn lists_of_booleans_in_thrift_are_refused_promptly() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("plain.parquet");
    let batch = RecordBatch::try_from_iter([(
        "x",
        Arc::new(Int64Array::from_iter_values(0..100)) as ArrayRef,
    )])
    .unwrap();
    let props = parquet::file::properties::WriterProperties::builder()
        .set_dictionary_enabled(false)
        .set_statistics_enabled(EnabledStatistics::Page)
        .set_write_page_header_statistics(true)
        .set_bloom_filter_enabled(true)
        .build();
    common::write_parquet_with(&path, batch.schema(), &[batch], props);
    let bytes = std::fs::read(&path).unwrap();
    let n = bytes.len();

    // The footer: the bombs before the stop byte that ends it.
    let footer_len = u32::from_le_bytes(bytes[n - 8..n - 4].try_into().unwrap());
    let mut footer = bytes[..n - 9].to_vec();
    for _ in 0..8 {
        footer.extend_from_slice(&BOOLEAN_BOMB);
    }
    footer.push(0);
    footer.extend_from_slice(&(footer_len + 8 * BOOLEAN_BOMB.len() as u32).to_le_bytes());
    footer.extend_from_slice(b"PAR1");

    // The page header (from byte 4): the statistics' 8-byte minimum (field header 0x18,
    // length 8) becomes the bomb and a boolean field, ten bytes for ten.
    let mut page = bytes.clone();
    let at = 4 + page[4..68]
        .windows(2)
        .position(|w| w == [0x18, 0x08])
        .expect("the page header holds its statistics");
    page[at..at + 9].copy_from_slice(&BOOLEAN_BOMB);
    page[at + 9] = 0x11;

    // The Bloom filter's header: the bomb where its first field starts.
    let meta = parquet::file::metadata::ParquetMetaDataReader::new()
        .parse_and_finish(&bytes::Bytes::from(bytes.clone()))
        .unwrap();
    let bloom_at = meta
        .row_group(0)
        .column(0)
        .bloom_filter_offset()
        .expect("a Bloom filter");
    let mut bloom = bytes.clone();
    let bloom_at = bloom_at as usize;
    bloom[bloom_at..bloom_at + 9].copy_from_slice(&BOOLEAN_BOMB);
    bloom[bloom_at + 9] = 0x11;

    // `ParquetFile::check_all`, which readers that decode the bytes themselves (DataFusion's)
    // are given files through, refuses a bomb wherever the crate could meet one, a Bloom
    // filter header that Sift's scan without an equality filter never reads included; the
    // undamaged file passes.
    sift_scan::ParquetFile::open(&path)
        .unwrap()
        .check_all()
        .unwrap();
    for (name, damaged) in [("page", page.clone()), ("bloom", bloom)] {
        let path = dir.path().join(format!("check-{name}.parquet"));
        std::fs::write(&path, &damaged).unwrap();
        let (tx, rx) = mpsc::channel();
        let p = path.clone();
        std::thread::spawn(move || {
            let checked = sift_scan::ParquetFile::open(&p).and_then(|f| f.check_all());
            let _ = tx.send(checked.map_err(|e| e.to_string()));
        });
        let checked = rx
            .recv_timeout(TIMEOUT)
            .unwrap_or_else(|_| panic!("{name}: no result after {TIMEOUT:?}"));
        let e = checked.expect_err(name);
        assert!(
            e.contains("row group 0, column \"x\"") && e.contains("Thrift container"),
            "{name}: {e}"
        );
    }

    for (name, damaged) in [("footer", footer), ("page", page)] {
        let path = dir.path().join(format!("{name}.parquet"));
        std::fs::write(&path, &damaged).unwrap();
        let (tx, rx) = mpsc::channel();
        let p = path.clone();
        std::thread::spawn(move || {
            let scanned = Table::open(&p).and_then(|t| {
                t.scan()
                    .build()?
                    .collect::<sift_scan::Result<Vec<_>>>()
                    .map(drop)
            });
            let crate_read = sift_scan::ParquetFile::open(&p)
                .map_err(|e| e.to_string())
                .and_then(|f| {
                    parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(f)
                        .and_then(|b| b.build())
                        .map_err(|e| e.to_string())?
                        .collect::<Result<Vec<_>, _>>()
                        .map_err(|e| e.to_string())
                });
            let _ = tx.send((scanned.map_err(|e| e.to_string()), crate_read.map(drop)));
        });
        let (scanned, crate_read) = rx
            .recv_timeout(TIMEOUT)
            .unwrap_or_else(|_| panic!("{name}: no result after {TIMEOUT:?}"));
        let e = scanned.expect_err(name);
        assert!(e.contains(&path.display().to_string()), "{name}: {e}");
        assert!(e.contains("Thrift container"), "{name}: {e}");
        let e = crate_read.expect_err(name);
        assert!(e.contains("Thrift container"), "{name}: {e}");
    }
}

/// Every reader of a Parquet file Sift offers: its scan (pages read in place, and the
/// `parquet` crate's decoding of columns it leaves to the crate), the crate's reader
/// through `ParquetFile` (conversion, inspection), and `ParquetFile::check_all` (for
/// DataFusion's reader). Each result is the error, if any, and the largest allocation.
fn every_reader(path: &Path) -> [(&'static str, Result<(), String>, usize); 3] {
    let (scanned, scan_alloc) = tracking::tracked(|| {
        Table::open(path)
            .and_then(|t| t.scan().build()?.collect::<sift_scan::Result<Vec<_>>>())
            .map(drop)
            .map_err(|e| e.to_string())
    });
    let (read, read_alloc) = tracking::tracked(|| {
        let file = sift_scan::ParquetFile::open(path).map_err(|e| e.to_string())?;
        let reader = file.into_reader().and_then(|b| b.build());
        reader
            .map_err(|e| e.to_string())?
            .collect::<Result<Vec<_>, _>>()
            .map(drop)
            .map_err(|e| e.to_string())
    });
    let (checked, check_alloc) = tracking::tracked(|| {
        sift_scan::ParquetFile::open(path)
            .and_then(|f| f.check_all())
            .map_err(|e| e.to_string())
    });
    [
        ("scan", scanned, scan_alloc),
        ("crate reader", read, read_alloc),
        ("check_all", checked, check_alloc),
    ]
}

/// A page whose header declares more uncompressed bytes than its codec can expand its
/// compressed bytes to is refused at its header by every reader, before the `parquet`
/// crate allocates and zeroes the declared size: an LZ4_RAW page of 1,627 bytes declaring
/// a gigabyte (found by the fuzzer), and zstd pages of a few hundred bytes declaring 128
/// MiB, in a column Sift reads in place (int64) and one it leaves to the crate (float32).
/// Brotli pages, whose expansion has no useful bound, are refused when they declare more
/// than their data decompresses to. The same pages undamaged, as compressed as each codec
/// can make them, read.
#[test]
fn pages_larger_than_their_codec_expands_to_are_refused() {
    let lz4 = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/damaged-parquet/lz4-page-declaring-a-gigabyte.parquet");
    refused_by_every_reader(
        &lz4,
        "declares 1073741828 bytes uncompressed, more than LZ4_RAW expands",
    );
    let e = every_reader(&lz4)[0].1.clone().unwrap_err();
    assert!(e.contains("column a: page 0"), "{e}");

    // One page of a million zeros per column: zstd stores each 128 KiB as a 4-byte block
    // (a few hundred bytes for the 8 and 4 MiB, near 30,000 to 1); Brotli, whose expansion
    // has no useful bound, stores them in a few dozen bytes.
    let codecs = [
        (
            Compression::ZSTD(ZstdLevel::default()),
            "more than ZSTD expands",
        ),
        (
            Compression::BROTLI(BrotliLevel::default()),
            "more than its BROTLI data decompresses to",
        ),
    ];
    for (codec, message) in codecs {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("zeros.parquet");
        let rows = 1 << 20;
        let batch = RecordBatch::try_from_iter([
            (
                "x",
                Arc::new(Int64Array::from(vec![0i64; rows])) as ArrayRef,
            ),
            (
                "f",
                Arc::new(Float32Array::from(vec![0f32; rows])) as ArrayRef,
            ),
        ])
        .unwrap();
        let props = parquet::file::properties::WriterProperties::builder()
            .set_dictionary_enabled(false)
            .set_compression(codec)
            .set_data_page_size_limit(64 << 20)
            .set_data_page_row_count_limit(rows)
            .build();
        common::write_parquet_with(&path, batch.schema(), &[batch], props);
        for (reader, result, _) in every_reader(&path) {
            result.unwrap_or_else(|e| panic!("{codec}, {reader}: {e}"));
        }

        // Each page header starts with its type (a data page: 0) and its uncompressed
        // size, a 4-byte varint here, which becomes 2^27 - 1 (zigzag encoded).
        let mut bytes = std::fs::read(&path).unwrap();
        let meta = parquet::file::metadata::ParquetMetaDataReader::new()
            .parse_and_finish(&bytes::Bytes::from(bytes.clone()))
            .unwrap();
        for chunk in meta.row_group(0).columns() {
            let at = chunk.data_page_offset() as usize;
            assert_eq!(bytes[at..at + 3], [0x15, 0x00, 0x15], "a data page header");
            assert!(bytes[at + 3..at + 6].iter().all(|b| b & 0x80 != 0) && bytes[at + 6] < 0x80);
            bytes[at + 3..at + 7].copy_from_slice(&[0xFE, 0xFF, 0xFF, 0x7F]);
        }
        std::fs::write(&path, &bytes).unwrap();
        refused_by_every_reader(
            &path,
            &format!("declares 134217727 bytes uncompressed, {message}"),
        );
    }
}

/// Every reader refuses `path` with an error holding `message`, none allocating
/// [`ALLOC_LIMIT`] bytes at once on the way.
fn refused_by_every_reader(path: &Path, message: &str) {
    for (reader, result, largest) in every_reader(path) {
        let e = result.expect_err(reader);
        assert!(e.contains(message), "{reader}: {e}");
        assert!(largest < ALLOC_LIMIT, "{reader}: allocated {largest} bytes");
    }
}
