//! End-to-end tests of the `sift` binary.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::ffi::OsStr;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, BinaryArray, BooleanArray, Date32Array, Decimal128Array, FixedSizeBinaryArray,
    Float32Array, Float64Array, Int8Array, Int16Array, Int32Array, Int64Array, LargeStringArray,
    ListArray, RecordBatch, StringArray, StringViewArray, Time64MicrosecondArray,
    TimestampMicrosecondArray, UInt8Array, UInt16Array, UInt32Array, UInt64Array,
};
use arrow::datatypes::{DataType, Field, Int32Type, Schema, SchemaRef};
use arrow::util::pretty::pretty_format_batches;
use parquet::arrow::ArrowWriter;

fn sift<I, S>(args: I) -> Output
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    Command::new(env!("CARGO_BIN_EXE_sift"))
        .args(args)
        .output()
        .expect("run sift")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[track_caller]
fn ok(o: Output) -> Output {
    assert!(
        o.status.success(),
        "sift failed ({:?})\nstdout:\n{}\nstderr:\n{}",
        o.status,
        stdout(&o),
        stderr(&o)
    );
    o
}

/// Fails with a clean error: exit code 1 (not a panic's 101), a message, no backtrace.
#[track_caller]
fn clean_failure(o: &Output) -> String {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(1), "stderr:\n{err}");
    assert!(err.contains("sift: error:"), "stderr:\n{err}");
    assert!(!err.contains("panicked"), "stderr:\n{err}");
    err
}

/// A batch with every kind of column Sift stores, nulls included.
fn sample_batch(rows: usize) -> RecordBatch {
    let n = rows as i64;
    let opt = |i: i64| (i % 7 != 3).then_some(i);
    let cols: Vec<(&str, ArrayRef)> = vec![
        (
            "i8",
            Arc::new(Int8Array::from_iter(
                (0..n).map(|i| opt(i).map(|v| (v % 100) as i8)),
            )),
        ),
        (
            "i16",
            Arc::new(Int16Array::from_iter_values(
                (0..n).map(|i| (i * 3 - 500) as i16),
            )),
        ),
        (
            "i32",
            Arc::new(Int32Array::from_iter(
                (0..n).map(|i| opt(i).map(|v| (v * v) as i32)),
            )),
        ),
        (
            "i64",
            Arc::new(Int64Array::from_iter_values(
                (0..n).map(|i| i * 1_000_003 - (1 << 40)),
            )),
        ),
        (
            "u8",
            Arc::new(UInt8Array::from_iter_values(
                (0..n).map(|i| (i % 256) as u8),
            )),
        ),
        (
            "u16",
            Arc::new(UInt16Array::from_iter_values(
                (0..n).map(|i| (i * 7) as u16),
            )),
        ),
        (
            "u32",
            Arc::new(UInt32Array::from_iter(
                (0..n).map(|i| opt(i).map(|v| v as u32)),
            )),
        ),
        (
            "u64",
            Arc::new(UInt64Array::from_iter_values(
                (0..n).map(|i| u64::MAX - i as u64),
            )),
        ),
        (
            "f16",
            arrow::compute::cast(
                &Float32Array::from_iter_values((0..n).map(|i| i as f32 / 4.0)),
                &DataType::Float16,
            )
            .unwrap(),
        ),
        (
            "f32",
            Arc::new(Float32Array::from_iter(
                (0..n).map(|i| opt(i).map(|v| v as f32 * 0.5)),
            )),
        ),
        (
            "f64",
            Arc::new(Float64Array::from_iter_values(
                (0..n).map(|i| (i as f64).sin() * 1e6),
            )),
        ),
        (
            "bool",
            Arc::new(BooleanArray::from_iter(
                (0..n).map(|i| opt(i).map(|v| v % 3 == 0)),
            )),
        ),
        (
            "utf8",
            Arc::new(StringArray::from_iter((0..n).map(|i| {
                opt(i).map(|v| format!("value {} {}", v % 13, "x".repeat((v % 20) as usize)))
            }))),
        ),
        (
            "large_utf8",
            Arc::new(LargeStringArray::from_iter_values(
                (0..n).map(|i| ["alpha", "beta", "gamma"][(i % 3) as usize]),
            )),
        ),
        (
            "utf8_view",
            Arc::new(StringViewArray::from_iter_values(
                (0..n).map(|i| format!("a somewhat longer string number {i}")),
            )),
        ),
        (
            "binary",
            Arc::new(BinaryArray::from_iter((0..n).map(|i| {
                opt(i).map(|v| v.to_le_bytes()[..(v % 8) as usize].to_vec())
            }))),
        ),
        (
            "fixed",
            Arc::new(
                FixedSizeBinaryArray::try_from_iter((0..n).map(|i| (i as u32).to_be_bytes()))
                    .unwrap(),
            ),
        ),
        (
            "date",
            Arc::new(Date32Array::from_iter_values(
                (0..n).map(|i| 8000 + (i % 2500) as i32),
            )),
        ),
        (
            "time",
            Arc::new(Time64MicrosecondArray::from_iter_values(
                (0..n).map(|i| (i * 1_000_117) % 86_400_000_000),
            )),
        ),
        (
            "ts",
            Arc::new(
                TimestampMicrosecondArray::from_iter(
                    (0..n).map(|i| opt(i).map(|v| 1_600_000_000_000_000 + v * 1_234_567)),
                )
                .with_timezone("UTC"),
            ),
        ),
        (
            "dec",
            Arc::new(
                Decimal128Array::from_iter((0..n).map(|i| opt(i).map(|v| v as i128 * 12_345 - 99)))
                    .with_precision_and_scale(20, 3)
                    .unwrap(),
            ),
        ),
    ];
    let fields: Vec<Field> = cols
        .iter()
        .map(|(name, a)| Field::new(*name, a.data_type().clone(), a.null_count() > 0))
        .collect();
    let arrays = cols.into_iter().map(|(_, a)| a).collect();
    RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays).unwrap()
}

fn write_parquet(path: &Path, batch: &RecordBatch) {
    let mut w = ArrowWriter::try_new(File::create(path).unwrap(), batch.schema(), None).unwrap();
    // Several batches, so readers see more than one.
    let mut offset = 0;
    while offset < batch.num_rows() {
        let len = 700.min(batch.num_rows() - offset);
        w.write(&batch.slice(offset, len)).unwrap();
        offset += len;
    }
    w.close().unwrap();
}

fn read_ipc_file(path: &Path) -> (SchemaRef, RecordBatch) {
    let reader = arrow::ipc::reader::FileReader::try_new(File::open(path).unwrap(), None).unwrap();
    let schema = reader.schema();
    let batches: Vec<RecordBatch> = reader.collect::<Result<_, _>>().unwrap();
    let all = arrow::compute::concat_batches(&schema, &batches).unwrap();
    (schema, all)
}

fn assert_same_data(expected: &RecordBatch, actual: &RecordBatch) {
    assert_eq!(expected.num_rows(), actual.num_rows());
    assert_eq!(expected.num_columns(), actual.num_columns());
    for (i, field) in expected.schema().fields().iter().enumerate() {
        let got = actual.schema().field(i).clone();
        assert_eq!(got.name(), field.name());
        assert_eq!(
            got.data_type(),
            field.data_type(),
            "column {}",
            field.name()
        );
        assert_eq!(
            got.is_nullable(),
            field.is_nullable(),
            "column {}",
            field.name()
        );
        assert!(
            expected.column(i).as_ref() == actual.column(i).as_ref(),
            "column {} differs:\nexpected {:?}\nactual {:?}",
            field.name(),
            expected.column(i).slice(0, 10.min(expected.num_rows())),
            actual.column(i).slice(0, 10.min(actual.num_rows()))
        );
    }
}

/// Converts the sample to a Sift file with small blocks; returns its path.
fn sample_sift(dir: &Path, rows: usize, block_rows: usize) -> PathBuf {
    let pq = dir.join("sample.parquet");
    write_parquet(&pq, &sample_batch(rows));
    let sift_path = dir.join("sample.sift");
    ok(sift([
        OsStr::new("convert"),
        pq.as_os_str(),
        sift_path.as_os_str(),
        OsStr::new("--block-rows"),
        OsStr::new(&block_rows.to_string()),
    ]));
    sift_path
}

fn dir_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn help_for_every_command() {
    for cmd in [
        vec!["--help"],
        vec!["convert", "--help"],
        vec!["inspect", "--help"],
        vec!["cat", "--help"],
        vec!["demo", "--help"],
    ] {
        let o = ok(sift(&cmd));
        assert!(stdout(&o).contains("Usage:"), "{cmd:?}");
    }
    let o = ok(sift(["--version"]));
    assert!(stdout(&o).starts_with("sift "));
}

#[test]
fn demo_at_tiny_scale() {
    let dir = tempfile::tempdir().unwrap();
    let o = ok(sift([
        OsStr::new("demo"),
        OsStr::new("--scale"),
        OsStr::new("0.01"),
        OsStr::new("--dir"),
        dir.path().as_os_str(),
    ]));
    let out = stdout(&o);
    for needle in [
        "TPC-H lineitem",
        "Arrow (memory)",
        "Sift",
        "Parquet zstd",
        "Parquet snappy",
        "cold read",
        "warm read",
        "GB/s (best)",
        "read back equal",
        "Sift cold",
        "Parquet warm",
        "same answer to every query",
    ] {
        assert!(out.contains(needle), "missing {needle:?} in:\n{out}");
    }
    // Without --keep the files are removed.
    assert!(
        dir_names(dir.path()).is_empty(),
        "{:?}",
        dir_names(dir.path())
    );
}

#[test]
fn parquet_sift_parquet_arrow_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let input = sample_batch(2500);
    let sift_path = sample_sift(d, 2500, 1000);
    let back = d.join("back.parquet");
    let arrow_path = d.join("back.arrow");
    let o = ok(sift([
        OsStr::new("convert"),
        sift_path.as_os_str(),
        back.as_os_str(),
        OsStr::new("--compression"),
        OsStr::new("snappy"),
    ]));
    assert!(stdout(&o).contains("2,500 rows"), "{}", stdout(&o));
    ok(sift([
        OsStr::new("convert"),
        back.as_os_str(),
        arrow_path.as_os_str(),
    ]));
    let (_, actual) = read_ipc_file(&arrow_path);
    assert_same_data(&input, &actual);
    // No temporary files left behind.
    assert_eq!(
        dir_names(d),
        [
            "back.arrow",
            "back.parquet",
            "sample.parquet",
            "sample.sift"
        ]
    );
}

#[test]
fn arrow_stream_and_csv_inputs() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let input = sample_batch(300);
    let sift_path = sample_sift(d, 300, 128);
    let stream = d.join("x.arrows");
    let sift2 = d.join("x.sift");
    let file = d.join("x.arrow");
    ok(sift([
        OsStr::new("convert"),
        sift_path.as_os_str(),
        stream.as_os_str(),
    ]));
    ok(sift([
        OsStr::new("convert"),
        stream.as_os_str(),
        sift2.as_os_str(),
    ]));
    ok(sift([
        OsStr::new("convert"),
        sift2.as_os_str(),
        file.as_os_str(),
    ]));
    assert_same_data(&input, &read_ipc_file(&file).1);

    let csv = d.join("t.csv");
    std::fs::write(&csv, "id,name,score\n1,ann,1.5\n2,,2.25\n3,carl,\n").unwrap();
    let csv_sift = d.join("t.sift");
    ok(sift([
        OsStr::new("convert"),
        csv.as_os_str(),
        csv_sift.as_os_str(),
    ]));
    let o = ok(sift([
        OsStr::new("cat"),
        csv_sift.as_os_str(),
        OsStr::new("--output"),
        OsStr::new("csv"),
    ]));
    assert_eq!(stdout(&o), "id,name,score\n1,ann,1.5\n2,,2.25\n3,carl,\n");
}

#[test]
fn inspect_json_has_row_count_and_columns() {
    let dir = tempfile::tempdir().unwrap();
    let sift_path = sample_sift(dir.path(), 2500, 1000);
    let o = ok(sift([
        OsStr::new("inspect"),
        sift_path.as_os_str(),
        OsStr::new("--json"),
        OsStr::new("--blocks"),
    ]));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["num_rows"], 2500);
    assert_eq!(v["num_blocks"], 3);
    let cols = v["columns"].as_array().unwrap();
    assert_eq!(cols.len(), sample_batch(1).num_columns());
    let i64_col = cols.iter().find(|c| c["name"] == "i64").unwrap();
    assert_eq!(i64_col["data_type"], "Int64");
    assert_eq!(i64_col["null_count"], 0);
    assert_eq!(i64_col["arrow_bytes"], 2500 * 8);
    assert_eq!(i64_col["min"], (-(1i64 << 40)).to_string());
    let enc_blocks: u64 = i64_col["encodings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["blocks"].as_u64().unwrap())
        .sum();
    assert_eq!(enc_blocks, 3);
    let i8_col = cols.iter().find(|c| c["name"] == "i8").unwrap();
    assert_eq!(
        i8_col["null_count"],
        (0..2500).filter(|i| i % 7 == 3).count()
    );
    let date = cols.iter().find(|c| c["name"] == "date").unwrap();
    assert_eq!(date["min"], "1991-11-27");
    assert!(cols.iter().all(|c| c["arrow_bytes"].is_u64()));
    let blocks = v["blocks"].as_array().unwrap();
    assert_eq!(blocks.len(), 3);
    assert_eq!(blocks[2]["first_row"], 2000);
    assert_eq!(blocks[2]["rows"], 500);

    // The text form shows the same things.
    let o = ok(sift([OsStr::new("inspect"), sift_path.as_os_str()]));
    let out = stdout(&o);
    assert!(out.contains("2,500 in 3 blocks"), "{out}");
    assert!(out.contains("Decimal128(20, 3)"), "{out}");
}

#[test]
fn cat_limit_columns_and_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let sift_path = sample_sift(dir.path(), 2500, 1000);
    let p = sift_path.as_os_str();
    let o = ok(sift([
        OsStr::new("cat"),
        p,
        OsStr::new("--limit"),
        OsStr::new("5"),
        OsStr::new("--columns"),
        OsStr::new("i64,utf8"),
        OsStr::new("--output"),
        OsStr::new("csv"),
    ]));
    let expected = pretty_csv(&sample_batch(5), &["i64", "utf8"]);
    assert_eq!(stdout(&o), expected);

    // Table output with a limit crossing a block boundary.
    let o = ok(sift([
        OsStr::new("cat"),
        p,
        OsStr::new("--blocks"),
        OsStr::new("0..2"),
        OsStr::new("-n"),
        OsStr::new("1001"),
        OsStr::new("-c"),
        OsStr::new("u16"),
    ]));
    let lines: Vec<String> = stdout(&o).lines().map(str::to_string).collect();
    assert_eq!(lines.len(), 1001 + 4, "{}", lines[..6].join("\n"));
    assert!(lines[1].contains("u16"));

    // JSON lines from the last block only.
    let o = ok(sift([
        OsStr::new("cat"),
        p,
        OsStr::new("--blocks"),
        OsStr::new("2.."),
        OsStr::new("-c"),
        OsStr::new("i16"),
        OsStr::new("-o"),
        OsStr::new("json"),
    ]));
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 500);
    assert_eq!(lines[0], format!("{{\"i16\":{}}}", 2000 * 3 - 500));

    // Timestamps in a named zone print (as UTC) instead of failing.
    let o = ok(sift([
        OsStr::new("cat"),
        p,
        OsStr::new("-c"),
        OsStr::new("ts"),
        OsStr::new("-n"),
        OsStr::new("1"),
        OsStr::new("-o"),
        OsStr::new("csv"),
    ]));
    assert_eq!(stdout(&o), "ts\n2020-09-13T12:26:40Z\n");

    // --output none decodes and prints nothing on stdout.
    let o = ok(sift([
        OsStr::new("cat"),
        p,
        OsStr::new("-o"),
        OsStr::new("none"),
    ]));
    assert!(o.stdout.is_empty());
}

fn pretty_csv(batch: &RecordBatch, columns: &[&str]) -> String {
    let idx: Vec<usize> = columns
        .iter()
        .map(|c| batch.schema().index_of(c).unwrap())
        .collect();
    let b = batch.project(&idx).unwrap();
    let mut w = arrow::csv::WriterBuilder::new()
        .with_header(true)
        .build(Vec::new());
    w.write(&b).unwrap();
    String::from_utf8(w.into_inner()).unwrap()
}

#[test]
fn cat_unknown_column_lists_columns() {
    let dir = tempfile::tempdir().unwrap();
    let sift_path = sample_sift(dir.path(), 100, 1000);
    let o = sift([
        OsStr::new("cat"),
        sift_path.as_os_str(),
        OsStr::new("--columns"),
        OsStr::new("i64,nope"),
    ]);
    let err = clean_failure(&o);
    assert!(err.contains("no column 'nope'"), "{err}");
    assert!(err.contains("i8, i16, i32"), "{err}");
    assert!(o.stdout.is_empty());
}

#[test]
fn unsupported_type_names_the_column() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Intervals are a type Sift does not store.
    let months = arrow::array::IntervalYearMonthArray::from(vec![Some(1), None, Some(14)]);
    let schema = Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("span", months.data_type().clone(), true),
    ]);
    let batch = RecordBatch::try_new(
        Arc::new(schema),
        vec![Arc::new(Int64Array::from(vec![1, 2, 3])), Arc::new(months)],
    )
    .unwrap();
    let pq = d.join("spans.parquet");
    write_parquet(&pq, &batch);
    let out = d.join("spans.sift");
    let o = sift([OsStr::new("convert"), pq.as_os_str(), out.as_os_str()]);
    let err = clean_failure(&o);
    assert!(err.contains("'span'"), "{err}");
    assert!(err.contains("not supported"), "{err}");
    assert!(err.contains("spans.sift"), "{err}");
    assert_eq!(dir_names(d), ["spans.parquet"]);
}

#[test]
fn truncated_file_is_a_clean_error() {
    let dir = tempfile::tempdir().unwrap();
    let sift_path = sample_sift(dir.path(), 2500, 1000);
    let len = std::fs::metadata(&sift_path).unwrap().len();
    for keep in [len / 2, len - 1, 10, 0] {
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(&sift_path)
            .unwrap();
        f.set_len(keep).unwrap();
        drop(f);
        for cmd in ["inspect", "cat"] {
            let o = sift([OsStr::new(cmd), sift_path.as_os_str()]);
            let err = clean_failure(&o);
            assert!(err.contains(&*sift_path.to_string_lossy()), "{err}");
        }
        let back = dir.path().join("back.parquet");
        let o = sift([
            OsStr::new("convert"),
            sift_path.as_os_str(),
            back.as_os_str(),
        ]);
        clean_failure(&o);
        assert!(!back.exists());
    }
}

/// `cat` decodes blocks on several threads and prints them in the file's order: the same
/// bytes for every thread count, whole and for a range of blocks with a limit.
#[test]
fn cat_threads_keep_the_file_order() {
    let dir = tempfile::tempdir().unwrap();
    let sift_path = sample_sift(dir.path(), 9_000, 700);
    let cat = |extra: &[&str], threads: &str| {
        let mut args = vec![OsStr::new("cat"), sift_path.as_os_str()];
        args.extend(["-o", "csv", "--threads", threads].map(OsStr::new));
        args.extend(extra.iter().map(OsStr::new));
        stdout(&ok(sift(args)))
    };
    for extra in [&[][..], &["--blocks", "3..11", "--limit", "4000"][..]] {
        let one = cat(extra, "1");
        assert!(one.lines().count() > 1000, "{extra:?}");
        for threads in ["2", "5"] {
            assert!(
                one == cat(extra, threads),
                "{extra:?} with {threads} threads"
            );
        }
    }
}

#[test]
fn corrupt_segment_is_a_clean_error() {
    let dir = tempfile::tempdir().unwrap();
    let sift_path = sample_sift(dir.path(), 2500, 1000);
    let mut bytes = std::fs::read(&sift_path).unwrap();
    bytes[100] ^= 0xFF;
    std::fs::write(&sift_path, &bytes).unwrap();
    let o = sift([
        OsStr::new("cat"),
        sift_path.as_os_str(),
        OsStr::new("-o"),
        OsStr::new("none"),
    ]);
    let err = clean_failure(&o);
    assert!(err.contains("checksum"), "{err}");
    assert!(err.contains(&*sift_path.to_string_lossy()), "{err}");
}

#[test]
fn broken_pipe_is_quiet() {
    let dir = tempfile::tempdir().unwrap();
    let sift_path = sample_sift(dir.path(), 20_000, 4096);
    let mut child = Command::new(env!("CARGO_BIN_EXE_sift"))
        .args([
            OsStr::new("cat"),
            sift_path.as_os_str(),
            OsStr::new("-o"),
            OsStr::new("csv"),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut head = [0u8; 100];
    child.stdout.take().unwrap().read_exact(&mut head).unwrap();
    // The read end is closed here, while sift still has megabytes to write.
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{:?} {}", o.status, stderr(&o));
    assert!(o.stderr.is_empty(), "{}", stderr(&o));
}

#[test]
fn bad_arguments_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let sift_path = sample_sift(d, 10, 1000);
    let o = sift([
        OsStr::new("convert"),
        sift_path.as_os_str(),
        d.join("x.txt").as_os_str(),
    ]);
    assert!(clean_failure(&o).contains("unknown file type"));
    let o = sift([
        OsStr::new("convert"),
        sift_path.as_os_str(),
        d.join("x.sift").as_os_str(),
        OsStr::new("--compression"),
        OsStr::new("zstd"),
    ]);
    assert!(clean_failure(&o).contains("--compression"));
    let o = sift([
        OsStr::new("convert"),
        sift_path.as_os_str(),
        d.join("x.sift").as_os_str(),
        OsStr::new("--block-rows"),
        OsStr::new("0"),
    ]);
    assert!(clean_failure(&o).contains("block_rows"));
    let o = sift([
        OsStr::new("convert"),
        d.join("missing.parquet").as_os_str(),
        d.join("x.sift").as_os_str(),
    ]);
    assert!(clean_failure(&o).contains("missing.parquet"));
    let o = sift([
        OsStr::new("cat"),
        sift_path.as_os_str(),
        OsStr::new("--blocks"),
        OsStr::new("3..5"),
    ]);
    assert!(clean_failure(&o).contains("out of range"));
    // Nothing was written.
    assert_eq!(dir_names(d), ["sample.parquet", "sample.sift"]);
    // Sanity check that the table printer is what cat uses by default.
    let o = ok(sift([
        OsStr::new("cat"),
        sift_path.as_os_str(),
        OsStr::new("-c"),
        OsStr::new("u8"),
    ]));
    let expected = pretty_format_batches(&[sample_batch(10).project(&[4]).unwrap()])
        .unwrap()
        .to_string();
    assert_eq!(stdout(&o).trim_end(), expected.trim_end());
}

// ------------------------------------------------------------------------------ scan

/// `sift scan FILE ARGS…` with the given extra arguments.
fn scan(file: &Path, args: &[&str]) -> Output {
    let mut all = vec![OsStr::new("scan"), file.as_os_str()];
    all.extend(args.iter().map(OsStr::new));
    sift(all)
}

/// Rows `sift scan` returns for `filter` (as CSV of one column, minus the header).
fn scan_count(file: &Path, filter: &str) -> usize {
    let o = ok(scan(file, &["-f", filter, "-c", "i16", "-o", "csv"]));
    let out = stdout(&o);
    assert!(out.starts_with("i16\n"), "{filter}: {out}");
    out.lines().count() - 1
}

#[test]
fn scan_help() {
    let o = ok(sift(["scan", "--help"]));
    let out = stdout(&o);
    assert!(out.contains("Usage:"), "{out}");
    assert!(out.contains("--filter"), "{out}");
}

/// Filters over every kind of column, on the Sift file and on the Parquet file it came
/// from (both through the engine), against counts computed from the generator.
#[test]
fn scan_filters_select_the_expected_rows() {
    let dir = tempfile::tempdir().unwrap();
    let sift_path = sample_sift(dir.path(), 2500, 1000);
    let pq = dir.path().join("sample.parquet");
    let valid = |i: u64| i % 7 != 3;
    let count = |f: &dyn Fn(u64) -> bool| (0..2500u64).filter(|&i| f(i)).count();
    let i16_of = |i: u64| i as i64 * 3 - 500;
    let f64_of = |i: u64| (i as f64).sin() * 1e6;
    let cases: Vec<(&str, usize)> = vec![
        ("i16 >= 0 and i16 < 300", 100),
        ("i8 is null", count(&|i| !valid(i))),
        (
            "i8 is not null and i8 < 10",
            count(&|i| valid(i) && i % 100 < 10),
        ),
        ("u64 > 18446744073709551000", 615),
        ("large_utf8 in ('alpha', 'gamma')", count(&|i| i % 3 != 1)),
        (
            "utf8 like 'value 1%'",
            count(&|i| valid(i) && [1, 10, 11, 12].contains(&(i % 13))),
        ),
        (
            "starts_with(utf8_view, 'a somewhat longer string number 12')",
            count(&|i| i.to_string().starts_with("12")),
        ),
        (
            "f32 between 10 and 20.5",
            count(&|i| valid(i) && (20..=41).contains(&i)),
        ),
        ("bool = true", count(&|i| valid(i) && i % 3 == 0)),
        (
            "bool = false or bool is null",
            count(&|i| !valid(i) || i % 3 != 0),
        ),
        // Day 8035 is 1992-01-01; the column holds days 8000 + i.
        ("\"date\" >= date '1992-01-01'", 2500 - 35),
        // 2020-09-13 12:26:40 UTC is the first value; each row adds 1.234567 s.
        (
            "ts < timestamp '2020-09-13 12:30:00'",
            count(&|i| valid(i) && i * 1_234_567 < 200_000_000),
        ),
        (
            "dec > 100.5",
            count(&|i| valid(i) && (i as i128 * 12_345 - 99) > 100_500),
        ),
        ("u8 < i16", count(&|i| ((i % 256) as i64) < i16_of(i))),
        (
            "not (i16 < 0 or u8 = 7)",
            count(&|i| i16_of(i) >= 0 && i % 256 != 7),
        ),
        ("1000 > u16", count(&|i| i * 7 < 1000)),
        (
            "f64 > 0 and f64 <= 500000",
            count(&|i| f64_of(i) > 0.0 && f64_of(i) <= 500_000.0),
        ),
        ("u32 <> 5", count(&|i| valid(i) && i != 5)),
        (
            "i8 not in (1, 2, 3)",
            count(&|i| valid(i) && !(1..=3).contains(&(i % 100))),
        ),
        ("utf8 not like '%x'", count(&|i| valid(i) && i % 20 == 0)),
        ("u64 < 18446744073709551000", 2500 - 616),
        (
            "i8 not between 10 and 90",
            count(&|i| valid(i) && !(10..=90).contains(&(i % 100))),
        ),
        ("u16 in ()", 0),
        ("not u16 in ()", 2500),
        ("i32 >= 1000000", count(&|i| valid(i) && i * i >= 1_000_000)),
        ("large_utf8 >= 'beta'", count(&|i| i % 3 != 0)),
        (
            "utf8_view like '%number 1_'",
            count(&|i| (10..20).contains(&i)),
        ),
        ("f16 > 100", count(&|i| i > 400)),
        (
            "i64 between -1099511627776 and -1099000000000",
            count(&|i| (i as i64) * 1_000_003 <= 511_627_776),
        ),
        (
            "dec between 0 and 10.5",
            count(&|i| valid(i) && (99..=10_599).contains(&(i as i128 * 12_345))),
        ),
        ("true", 2500),
        ("false", 0),
    ];
    let mut wrong = Vec::new();
    for file in [&sift_path, &pq] {
        for (filter, expected) in &cases {
            let got = scan_count(file, filter);
            if got != *expected {
                wrong.push(format!(
                    "{}: {filter}: {got} rows, expected {expected}",
                    file.display()
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn scan_limit_rows_and_output_formats() {
    let dir = tempfile::tempdir().unwrap();
    let sift_path = sample_sift(dir.path(), 2500, 1000);
    let all = sample_batch(2500);
    // Rows 167..=266 have 0 <= i16 < 300.
    let filter = "i16 >= 0 and i16 < 300";
    let o = ok(scan(
        &sift_path,
        &["-f", filter, "-c", "i64,utf8", "-o", "csv"],
    ));
    assert_eq!(
        stdout(&o),
        pretty_csv(&all.slice(167, 100), &["i64", "utf8"])
    );

    // The limit counts rows that passed the filter.
    let o = ok(scan(
        &sift_path,
        &["-f", filter, "-c", "i64,utf8", "-o", "csv", "--limit", "7"],
    ));
    assert_eq!(stdout(&o), pretty_csv(&all.slice(167, 7), &["i64", "utf8"]));

    // --rows restricts by row number before filtering, across a block boundary; the
    // batch size does not change what is returned.
    let o = ok(scan(
        &sift_path,
        &[
            "--rows",
            "990..1010",
            "-f",
            "u8 < 250",
            "-c",
            "u8",
            "-o",
            "json",
            "--batch-size",
            "3",
        ],
    ));
    let expected: Vec<String> = (990..1010u64)
        .filter(|i| i % 256 < 250)
        .map(|i| format!("{{\"u8\":{}}}", i % 256))
        .collect();
    assert_eq!(stdout(&o).lines().collect::<Vec<_>>(), expected);

    // The default table, as `cat` prints it.
    let o = ok(scan(&sift_path, &["-f", "i16 = 1", "-c", "u8"]));
    let expected = pretty_format_batches(&[all.slice(167, 1).project(&[4]).unwrap()])
        .unwrap()
        .to_string();
    assert_eq!(stdout(&o).trim_end(), expected.trim_end());

    // No match: a table with only the header; CSV with only the header.
    let o = ok(scan(&sift_path, &["-f", "i16 > 100000", "-c", "u8,i16"]));
    let out = stdout(&o);
    assert!(out.contains("| u8 | i16 |"), "{out}");
    assert_eq!(out.lines().count(), 4, "{out}");
    let o = ok(scan(
        &sift_path,
        &["-f", "i16 > 100000", "-c", "u8,i16", "-o", "csv"],
    ));
    assert_eq!(stdout(&o), "u8,i16\n");

    // --output none prints nothing on stdout. (All columns but u64: see
    // `scan_selected_rows_of_u64_above_i64_max`.)
    let o = ok(scan(
        &sift_path,
        &["-f", filter, "-o", "none", "-c", "i8,i64,f64,utf8,ts,dec"],
    ));
    assert!(o.stdout.is_empty());
}

/// ENGINE BUG (reported, not fixed here): decoding only the selected rows of a UInt64
/// column whose frame-of-reference base is above i64::MAX fails with "corrupt encoding:
/// frame-of-reference base 18446744073709550616 out of range" (`sift-encoding`'s
/// `selected.rs` converts the base with `i64::try_from`, while the full decode in
/// `int.rs` converts it to the column's own type). Any filter that selects some but not
/// all rows of a block, with `u64` projected, hits it.
#[test]
fn scan_selected_rows_of_u64_above_i64_max() {
    let dir = tempfile::tempdir().unwrap();
    let sift_path = sample_sift(dir.path(), 2500, 1000);
    let o = ok(scan(
        &sift_path,
        &["-f", "i16 = 1", "-c", "u64", "-o", "csv"],
    ));
    assert_eq!(stdout(&o), format!("u64\n{}\n", u64::MAX - 167));
    // Every column, as `sift scan FILE --filter …` reads by default.
    let o = ok(scan(
        &sift_path,
        &["-f", "i16 >= 0 and i16 < 300", "-o", "none"],
    ));
    assert!(o.stdout.is_empty());
}

#[test]
fn scan_out_writes_files_that_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let sift_path = sample_sift(d, 2500, 1000);
    let filter = "i16 >= 0 and i16 < 300";
    let columns = ["i16", "utf8", "ts", "dec", "date"];
    let idx: Vec<usize> = columns
        .iter()
        .map(|c| sample_batch(1).schema().index_of(c).unwrap())
        .collect();
    let expected = sample_batch(2500).slice(167, 100).project(&idx).unwrap();

    let pq = d.join("out.parquet");
    let o = ok(scan(
        &sift_path,
        &[
            "-f",
            filter,
            "-c",
            &columns.join(","),
            "--out",
            pq.to_str().unwrap(),
        ],
    ));
    assert!(stdout(&o).contains("100 rows"), "{}", stdout(&o));
    let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(
        File::open(&pq).unwrap(),
    )
    .unwrap()
    .build()
    .unwrap();
    let schema = arrow::array::RecordBatchReader::schema(&reader);
    let batches: Vec<RecordBatch> = reader.collect::<Result<_, _>>().unwrap();
    let actual = arrow::compute::concat_batches(&schema, &batches).unwrap();
    assert_same_data(&expected, &actual);

    // The written file scans again, through the engine's Parquet path.
    assert_eq!(scan_count(&pq, "i16 < 100"), 33);

    // Sift and Arrow IPC outputs, then CSV.
    let sift_out = d.join("out.sift");
    ok(scan(
        &sift_path,
        &[
            "-f",
            filter,
            "-c",
            &columns.join(","),
            "--out",
            sift_out.to_str().unwrap(),
        ],
    ));
    let arrow_out = d.join("out.arrow");
    ok(scan(&sift_out, &["--out", arrow_out.to_str().unwrap()]));
    assert_same_data(&expected, &read_ipc_file(&arrow_out).1);
    let csv_out = d.join("out.csv");
    ok(scan(
        &sift_path,
        &[
            "-f",
            filter,
            "-c",
            "i64,utf8",
            "--out",
            csv_out.to_str().unwrap(),
        ],
    ));
    assert_eq!(
        std::fs::read_to_string(&csv_out).unwrap(),
        pretty_csv(&sample_batch(2500).slice(167, 100), &["i64", "utf8"])
    );

    // Refused: writing over the input, an unknown extension, --out with --output.
    let o = scan(&sift_path, &["--out", sift_path.to_str().unwrap()]);
    assert!(clean_failure(&o).contains("same file"));
    let o = scan(&sift_path, &["--out", d.join("x.txt").to_str().unwrap()]);
    assert!(clean_failure(&o).contains("unknown file type"));
    let o = scan(
        &sift_path,
        &["--out", d.join("x.sift").to_str().unwrap(), "-o", "csv"],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    // No temporary files left behind, nothing written by the refused runs.
    assert_eq!(
        dir_names(d),
        [
            "out.arrow",
            "out.csv",
            "out.parquet",
            "out.sift",
            "sample.parquet",
            "sample.sift"
        ]
    );
}

#[test]
fn scan_stats_go_to_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let sift_path = sample_sift(dir.path(), 2500, 1000);
    // i16 grows with the row number, so zone maps rule out blocks 1 and 2.
    let o = ok(scan(
        &sift_path,
        &[
            "-f",
            "i16 >= 0 and i16 < 300",
            "-o",
            "none",
            "--stats",
            "-c",
            "i64,utf8",
        ],
    ));
    assert!(o.stdout.is_empty());
    let err = stderr(&o);
    assert!(err.contains("blocks 3 (pruned 2, no match 0)"), "{err}");
    assert!(err.contains("rows scanned 1000, matched 100"), "{err}");
    assert!(err.contains("values decoded"), "{err}");
    assert!(err.contains("bytes read"), "{err}");
    assert!(err.contains("100 rows returned in"), "{err}");
    // Without --stats, and with --quiet, stderr stays empty.
    let o = ok(scan(
        &sift_path,
        &["-f", "i16 < 0", "-c", "i16", "-o", "csv", "-q"],
    ));
    assert!(o.stderr.is_empty(), "{}", stderr(&o));
}

#[test]
fn scan_errors_are_clean() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let sift_path = sample_sift(d, 100, 1000);

    // A filter that does not parse: the parser's message, with the column.
    let o = scan(&sift_path, &["-f", "i16 >= and u8 = 1"]);
    let err = clean_failure(&o);
    assert!(err.contains("invalid --filter"), "{err}");
    assert!(
        err.contains("at column 8: expected a literal after '>=', found 'and'"),
        "{err}"
    );
    assert!(o.stdout.is_empty());
    let o = scan(&sift_path, &["-f", "utf8 = 'open"]);
    assert!(clean_failure(&o).contains("unterminated string"));

    // Unknown columns, in the filter and in the projection: the engine lists the columns.
    for args in [&["-f", "nope = 1"][..], &["-c", "i64,nope"][..]] {
        let o = scan(&sift_path, args);
        let err = clean_failure(&o);
        assert!(err.contains("no column 'nope'"), "{args:?}: {err}");
        assert!(err.contains("i8, i16, i32"), "{args:?}: {err}");
        assert!(o.stdout.is_empty());
    }
    // A literal the column's type cannot hold.
    let o = scan(&sift_path, &["-f", "date = 'not a date'"]);
    assert!(clean_failure(&o).contains("date"));

    // Missing file, and a format the engine does not scan.
    let o = scan(&d.join("missing.sift"), &[]);
    assert!(clean_failure(&o).contains("missing.sift"));
    let csv = d.join("t.csv");
    std::fs::write(&csv, "a\n1\n").unwrap();
    let o = scan(&csv, &[]);
    assert!(clean_failure(&o).contains("convert"));

    // Bad arguments are clap's usage errors.
    for args in [&["--rows", "5..2"][..], &["--batch-size", "0"][..]] {
        let o = scan(&sift_path, args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
    }
}

/// A CSV file of `rows` rows large enough that converting it takes a while.
fn write_big_csv(path: &Path, rows: usize) {
    use std::io::Write;
    let mut w = std::io::BufWriter::new(File::create(path).unwrap());
    writeln!(w, "id,name,price").unwrap();
    for i in 0..rows {
        writeln!(
            w,
            "{i},customer#{:09},{}.{:02}",
            i * 7919 % 100_003,
            i % 9973,
            i % 100
        )
        .unwrap();
    }
    w.flush().unwrap();
}

/// Starts `sift` with `args`, waits until a temporary output file exists in `dir`, sends
/// `signal`, and returns how the process ended.
fn interrupt_when_writing(dir: &Path, args: &[&OsStr], signal: &str) -> std::process::ExitStatus {
    let mut child = Command::new(env!("CARGO_BIN_EXE_sift"))
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("sift ended ({status:?}) before it was interrupted; make the input larger");
        }
        let writing = dir_names(dir)
            .iter()
            .any(|n| n.starts_with('.') && n.contains(".tmp-"));
        if writing {
            break;
        }
        assert!(start.elapsed().as_secs() < 60, "no temporary file appeared");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    // Let it write for a moment, so the signal lands mid-write (briefly: on an idle
    // machine `scan --out` of the 2,000,000 rows takes about 0.2 s in all).
    std::thread::sleep(std::time::Duration::from_millis(30));
    let killed = Command::new("kill")
        .args([format!("-{signal}"), child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let start = std::time::Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(
            start.elapsed().as_secs() < 10,
            "sift did not exit promptly after SIG{signal}"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

#[test]
fn interrupted_writes_leave_nothing_behind() {
    use std::os::unix::process::ExitStatusExt;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let csv = d.join("big.csv");
    write_big_csv(&csv, 2_000_000);
    let before = dir_names(d);
    let sift_out = d.join("big.sift");
    let parquet_out = d.join("big.parquet");
    let scan_out = d.join("scanned.parquet");
    let runs: [(Vec<&OsStr>, &str, i32); 3] = [
        (
            vec![OsStr::new("convert"), csv.as_os_str(), sift_out.as_os_str()],
            "INT",
            2,
        ),
        (
            vec![
                OsStr::new("convert"),
                csv.as_os_str(),
                parquet_out.as_os_str(),
            ],
            "TERM",
            15,
        ),
        (vec![], "INT", 2),
    ];
    for (i, (args, signal, number)) in runs.into_iter().enumerate() {
        let args = if i == 2 {
            // `scan --out` needs a Sift or Parquet input: make one first.
            ok(sift([
                OsStr::new("convert"),
                csv.as_os_str(),
                sift_out.as_os_str(),
            ]));
            vec![
                OsStr::new("scan"),
                sift_out.as_os_str(),
                OsStr::new("--out"),
                scan_out.as_os_str(),
            ]
        } else {
            args
        };
        let expected = dir_names(d);
        let status = interrupt_when_writing(d, &args, signal);
        // Killed by the signal, as the shell expects (it reports 128 + the signal).
        assert_eq!(status.signal(), Some(number), "{args:?}: {status:?}");
        assert_eq!(dir_names(d), expected, "{args:?} left files behind");
    }
    assert_eq!(
        dir_names(d),
        [before, vec!["big.sift".to_string()]].concat()
    );
}

#[test]
fn duplicate_column_names_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let csv = d.join("dup.csv");
    std::fs::write(&csv, "a,b,a\n1,x,2\n3,y,4\n").unwrap();
    for out in ["dup.sift", "dup.parquet", "dup.arrow"] {
        let out = d.join(out);
        let o = sift([OsStr::new("convert"), csv.as_os_str(), out.as_os_str()]);
        let err = clean_failure(&o);
        assert!(err.contains("duplicate column names"), "{err}");
        assert!(err.contains("'a' (columns 0 and 2)"), "{err}");
        assert!(!err.contains("'b'"), "{err}");
        assert_eq!(dir_names(d), ["dup.csv"]);
    }
}

#[test]
fn output_format_and_out_path_are_told_apart() {
    let dir = tempfile::tempdir().unwrap();
    let file = sample_sift(dir.path(), 100, 50);
    let f = file.as_os_str();
    // A file name given to -o: the error says -o takes a format and where files go.
    let o = sift([
        OsStr::new("scan"),
        f,
        OsStr::new("-o"),
        OsStr::new("out.parquet"),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("-o/--output takes a format (table, csv, json, none)"),
        "{err}"
    );
    assert!(err.contains("use --out out.parquet"), "{err}");
    let o = sift([
        OsStr::new("cat"),
        f,
        OsStr::new("--output"),
        OsStr::new("rows.csv"),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("-o/--output takes a format"), "{err}");
    assert!(err.contains("sift convert FILE rows.csv"), "{err}");
    // A format given to --out: the error points at -o.
    let o = sift([
        OsStr::new("scan"),
        f,
        OsStr::new("--out"),
        OsStr::new("csv"),
    ]);
    let err = clean_failure(&o);
    assert!(err.contains("--out takes a file path"), "{err}");
    assert!(err.contains("use -o csv"), "{err}");
    // A mistyped format still gets clap's suggestion.
    let o = sift([OsStr::new("scan"), f, OsStr::new("-o"), OsStr::new("jsn")]);
    assert!(stderr(&o).contains("'json'"), "{}", stderr(&o));
    // --help says which is which.
    for cmd in ["scan", "cat"] {
        let help = stdout(&ok(sift([cmd, "--help"])));
        assert!(help.contains("a format, not a file"), "{cmd}: {help}");
    }
    let help = stdout(&ok(sift(["scan", "--help"])));
    assert!(help.contains("a path, not a format"), "{help}");
}

#[test]
fn dictionary_columns_convert_and_read_back_as_dictionaries() {
    use arrow::array::DictionaryArray;
    use arrow::datatypes::Int8Type;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let rows = 5000;
    let cities = ["oslo", "rome", "lima", "bern", "kyiv"];
    let city: DictionaryArray<Int32Type> = (0..rows)
        .map(|i| (i % 11 != 4).then(|| cities[i * 7 % cities.len()]))
        .collect();
    let tag: DictionaryArray<Int8Type> = (0..rows)
        .map(|i| Some(["a", "b", "c"][i / 1000 % 3]))
        .collect();
    let id = Int64Array::from_iter_values(0..rows as i64);
    let schema = Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("city", city.data_type().clone(), true),
        Field::new("tag", tag.data_type().clone(), false),
    ]);
    let batch = RecordBatch::try_new(
        Arc::new(schema),
        vec![Arc::new(id), Arc::new(city), Arc::new(tag)],
    )
    .unwrap();
    let arrow_in = d.join("in.arrow");
    let mut w =
        arrow::ipc::writer::FileWriter::try_new(File::create(&arrow_in).unwrap(), &batch.schema())
            .unwrap();
    for offset in (0..rows).step_by(1500) {
        w.write(&batch.slice(offset, 1500.min(rows - offset)))
            .unwrap();
    }
    w.finish().unwrap();
    let parquet_in = d.join("in.parquet");
    write_parquet(&parquet_in, &batch);

    for input in [&arrow_in, &parquet_in] {
        let sift_path = d.join("dict.sift");
        // An Arrow IPC stream: each block has its own dictionary, which IPC files (one
        // dictionary per field) cannot hold.
        let back = d.join("back.arrows");
        ok(sift([
            OsStr::new("convert"),
            input.as_os_str(),
            sift_path.as_os_str(),
            OsStr::new("--block-rows"),
            OsStr::new("2048"),
        ]));
        ok(sift([
            OsStr::new("convert"),
            sift_path.as_os_str(),
            back.as_os_str(),
        ]));
        let reader =
            arrow::ipc::reader::StreamReader::try_new(File::open(&back).unwrap(), None).unwrap();
        let schema = reader.schema();
        assert_eq!(schema.as_ref(), batch.schema().as_ref(), "{input:?}");
        let batches: Vec<RecordBatch> = reader.collect::<Result<_, _>>().unwrap();
        let got = arrow::compute::concat_batches(&schema, &batches).unwrap();
        assert_same_data(&batch, &got);
        // `cat` prints the values.
        let o = ok(sift([
            OsStr::new("cat"),
            sift_path.as_os_str(),
            OsStr::new("-o"),
            OsStr::new("csv"),
            OsStr::new("-n"),
            OsStr::new("5"),
        ]));
        assert_eq!(
            stdout(&o),
            pretty_csv(&batch.slice(0, 5), &["id", "city", "tag"])
        );
        // `scan` filters on the values.
        let oslo = (0..rows)
            .filter(|&i| i % 11 != 4 && cities[i * 7 % cities.len()] == "oslo")
            .count();
        let o = ok(scan(
            &sift_path,
            &["-f", "city = 'oslo'", "-c", "city", "-o", "csv"],
        ));
        assert_eq!(stdout(&o), format!("city\n{}", "oslo\n".repeat(oslo)));
        // `inspect` shows the type as written.
        let o = ok(sift([OsStr::new("inspect"), sift_path.as_os_str()]));
        assert!(
            stdout(&o).contains("Dictionary(Int8, Utf8)"),
            "{}",
            stdout(&o)
        );
    }
}

#[test]
fn cat_reads_parquet_and_arrow_files() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let batch = sample_batch(2500);
    // Three row groups of 1000, 1000 and 500 rows.
    let pq = d.join("groups.parquet");
    let props = parquet::file::properties::WriterProperties::builder()
        .set_max_row_group_row_count(Some(1000))
        .build();
    let mut w =
        ArrowWriter::try_new(File::create(&pq).unwrap(), batch.schema(), Some(props)).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
    let arrow_file = d.join("sample.arrow");
    ok(sift([
        OsStr::new("convert"),
        pq.as_os_str(),
        arrow_file.as_os_str(),
    ]));
    let columns = ["utf8", "i32", "date"];
    for file in [&pq, &arrow_file] {
        let o = ok(sift([
            OsStr::new("cat"),
            file.as_os_str(),
            OsStr::new("-c"),
            OsStr::new("utf8,i32,date"),
            OsStr::new("-n"),
            OsStr::new("7"),
            OsStr::new("-o"),
            OsStr::new("csv"),
        ]));
        assert_eq!(
            stdout(&o),
            pretty_csv(&batch.slice(0, 7), &columns),
            "{file:?}"
        );
    }
    // --blocks selects row groups.
    let o = ok(sift([
        OsStr::new("cat"),
        pq.as_os_str(),
        OsStr::new("--blocks"),
        OsStr::new("1.."),
        OsStr::new("-c"),
        OsStr::new("utf8,i32,date"),
        OsStr::new("-o"),
        OsStr::new("csv"),
    ]));
    assert_eq!(stdout(&o), pretty_csv(&batch.slice(1000, 1500), &columns));
    let o = sift([
        OsStr::new("cat"),
        pq.as_os_str(),
        OsStr::new("--blocks"),
        OsStr::new("2..4"),
    ]);
    let err = clean_failure(&o);
    assert!(err.contains("the file has 3 row groups"), "{err}");
    let o = sift([
        OsStr::new("cat"),
        pq.as_os_str(),
        OsStr::new("-c"),
        OsStr::new("nope"),
    ]);
    let err = clean_failure(&o);
    assert!(err.contains("no column 'nope'"), "{err}");
    assert!(err.contains("i8, i16, i32"), "{err}");
}

#[test]
fn inspect_shows_parquet_layout_and_sifts_choice() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let batch = sample_batch(2500);
    // Three row groups of 1000, 1000 and 500 rows, plus a column Sift cannot store.
    let list = ListArray::from_iter_primitive::<Int32Type, _, _>(
        (0..2500).map(|i| Some(vec![Some(i), None])),
    );
    let mut fields: Vec<Field> = batch
        .schema()
        .fields()
        .iter()
        .map(|f| f.as_ref().clone())
        .collect();
    fields.push(Field::new("tags", list.data_type().clone(), true));
    let mut columns = batch.columns().to_vec();
    columns.push(Arc::new(list));
    let with_list = RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap();
    let write_groups = |path: &Path, batch: &RecordBatch| {
        let props = parquet::file::properties::WriterProperties::builder()
            .set_max_row_group_row_count(Some(1000))
            .set_compression(parquet::basic::Compression::SNAPPY)
            .build();
        let mut w =
            ArrowWriter::try_new(File::create(path).unwrap(), batch.schema(), Some(props)).unwrap();
        w.write(batch).unwrap();
        w.close().unwrap();
    };
    let pq = d.join("groups.parquet");
    write_groups(&pq, &with_list);
    let plain = d.join("plain.parquet");
    write_groups(&plain, &batch);

    let o = ok(sift([
        OsStr::new("inspect"),
        pq.as_os_str(),
        OsStr::new("--json"),
    ]));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["format"], "parquet");
    assert_eq!(v["num_rows"], 2500);
    assert_eq!(v["num_row_groups"], 3);
    let groups = v["row_groups"].as_array().unwrap();
    assert_eq!(groups[2]["first_row"], 2000);
    assert_eq!(groups[2]["rows"], 500);
    let chunk = &groups[0]["columns"][0];
    assert_eq!(chunk["codec"], "SNAPPY");
    assert!(chunk["compressed_bytes"].as_u64().unwrap() > 0);
    assert!(!chunk["encodings"].as_array().unwrap().is_empty());
    let cols = v["columns"].as_array().unwrap();
    let tags = cols
        .iter()
        .find(|c| c["name"].as_str().unwrap().starts_with("tags."))
        .unwrap();
    assert!(tags["sift"]["bytes"].is_null(), "{tags}");
    let why = tags["sift"]["scheme"].as_str().unwrap();
    assert!(why.starts_with("not stored by Sift (List("), "{why}");

    // Sift's choice is what the writer stores for the same rows: compare with the first
    // block of the file `convert` writes with blocks the size of the row groups.
    let sift_path = d.join("groups.sift");
    ok(sift([
        OsStr::new("convert"),
        plain.as_os_str(),
        sift_path.as_os_str(),
        OsStr::new("--block-rows"),
        OsStr::new("1000"),
    ]));
    let o = ok(sift([
        OsStr::new("inspect"),
        sift_path.as_os_str(),
        OsStr::new("--json"),
        OsStr::new("--blocks"),
    ]));
    let s: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    for name in ["utf8", "f64", "large_utf8", "date"] {
        let trial = &cols.iter().find(|c| c["name"] == name).unwrap()["sift"];
        let block = s["blocks"][0]["columns"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .unwrap();
        assert_eq!(trial["rows"], 1000, "{name}");
        assert_eq!(trial["bytes"], block["stored_bytes"], "{name}");
        let scheme = trial["scheme"].as_str().unwrap();
        assert!(
            scheme.starts_with(block["encoding"].as_str().unwrap()),
            "{name}: {scheme} vs {block}"
        );
    }

    // The text form: row groups, codecs, and the scheme as `inspect --schemes` prints it.
    let o = ok(sift([
        OsStr::new("inspect"),
        pq.as_os_str(),
        OsStr::new("--blocks"),
    ]));
    let out = stdout(&o);
    assert!(out.contains("2,500 in 3 row groups"), "{out}");
    assert!(out.contains("SNAPPY"), "{out}");
    assert!(out.contains("not stored by Sift"), "{out}");
    let o = ok(sift([
        OsStr::new("inspect"),
        sift_path.as_os_str(),
        OsStr::new("--schemes"),
    ]));
    let schemes = stdout(&o);
    let utf8 = cols.iter().find(|c| c["name"] == "utf8").unwrap();
    let utf8_scheme = utf8["sift"]["scheme"].as_str().unwrap();
    assert!(
        schemes.contains(&format!("  {utf8_scheme}\n")),
        "{utf8_scheme:?} not in\n{schemes}"
    );
    assert!(out.contains(utf8_scheme), "{utf8_scheme:?} not in\n{out}");
}

#[test]
fn datasets_of_directories_globs_and_hive_partitions() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Two partitions of one table, and a hidden staging directory that is not part of it.
    for (part, rows) in [("year=2023", 300), ("year=2024", 500), ("_staging", 700)] {
        std::fs::create_dir_all(d.join(part)).unwrap();
        let file = sample_sift(&d.join(part), rows, 128);
        std::fs::rename(&file, d.join(part).join("part-0.sift")).unwrap();
    }
    let count = |args: &[&str]| {
        let o = ok(sift(args));
        stdout(&o).lines().count() - 1
    };
    let root = d.to_str().unwrap();
    // A directory is every file below it (the hidden one aside), partitions as columns.
    assert_eq!(count(&["cat", root, "-o", "csv"]), 800);
    assert_eq!(count(&["scan", root, "-c", "year", "-o", "csv"]), 800);
    let glob = format!("{root}/year=*/*.sift");
    assert_eq!(count(&["scan", &glob, "-o", "csv", "-c", "i64"]), 800);
    // A filter on the partition drops the other file before it is opened.
    let o = ok(sift([
        "scan",
        root,
        "-f",
        "year = 2024",
        "-o",
        "csv",
        "-c",
        "year",
        "--stats",
    ]));
    assert_eq!(stdout(&o).lines().count() - 1, 500);
    assert!(
        stdout(&o).lines().skip(1).all(|l| l == "2024"),
        "{}",
        stdout(&o)
    );
    assert!(
        stderr(&o).contains("files 2 (pruned 1, opened 1)"),
        "{}",
        stderr(&o)
    );
    // Two inputs on the command line are one table.
    let a = d.join("year=2023/part-0.sift");
    let b = d.join("year=2024/part-0.sift");
    let o = ok(sift([
        "scan",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "-o",
        "csv",
    ]));
    assert_eq!(stdout(&o).lines().count() - 1, 800);
    // A file with a column of another type cannot join the dataset.
    let other = d.join("year=2025");
    std::fs::create_dir_all(&other).unwrap();
    let batch =
        RecordBatch::try_from_iter([("i64", Arc::new(StringArray::from(vec!["x"])) as ArrayRef)])
            .unwrap();
    let path = other.join("part-0.sift");
    let mut w = sift_format::SiftWriter::create(&path, batch.schema(), Default::default()).unwrap();
    w.write(&batch).unwrap();
    w.finish().unwrap();
    let err = clean_failure(&sift(["scan", root]));
    assert!(
        err.contains("cannot be one dataset") && err.contains("year=2025"),
        "{err}"
    );
}

/// Nested columns convert from Parquet; a struct's field is filtered and projected by its
/// path; CSV refuses a nested column before printing anything, JSON prints it.
#[test]
fn nested_columns_convert_filter_and_print() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let a = Int64Array::from(vec![Some(1), Some(5), None, Some(2)]);
    let name = StringArray::from(vec!["x", "y", "z", "w"]);
    let s = arrow::array::StructArray::try_new(
        vec![
            Field::new("a", DataType::Int64, true),
            Field::new("name", DataType::Utf8, true),
        ]
        .into(),
        vec![Arc::new(a), Arc::new(name)],
        Some(vec![true, true, true, false].into()),
    )
    .unwrap();
    let tags = ListArray::from_iter_primitive::<Int32Type, _, _>(vec![
        Some(vec![Some(1), Some(2)]),
        None,
        Some(vec![]),
        Some(vec![Some(7)]),
    ]);
    let batch = RecordBatch::try_from_iter([
        (
            "id",
            Arc::new(Int64Array::from(vec![10, 11, 12, 13])) as arrow::array::ArrayRef,
        ),
        ("s", Arc::new(s)),
        ("tags", Arc::new(tags)),
    ])
    .unwrap();
    let pq = d.join("nested.parquet");
    write_parquet(&pq, &batch);
    let out = d.join("nested.sift");
    ok(sift([
        OsStr::new("convert"),
        pq.as_os_str(),
        out.as_os_str(),
    ]));
    let o = ok(sift([
        OsStr::new("scan"),
        out.as_os_str(),
        OsStr::new("--columns"),
        OsStr::new("id,s.name"),
        OsStr::new("--filter"),
        OsStr::new("s.a < 3"),
        OsStr::new("-o"),
        OsStr::new("csv"),
    ]));
    // Row 13's struct is null, so its `s.a` is too: only row 10 matches.
    assert_eq!(stdout(&o), "id,s.name\n10,x\n");
    let o = sift([
        OsStr::new("cat"),
        out.as_os_str(),
        OsStr::new("-o"),
        OsStr::new("csv"),
    ]);
    let err = clean_failure(&o);
    assert!(err.contains("column 's' is nested"), "{err}");
    assert!(stdout(&o).is_empty(), "{}", stdout(&o));
    let o = ok(sift([
        OsStr::new("cat"),
        out.as_os_str(),
        OsStr::new("--columns"),
        OsStr::new("id,tags"),
        OsStr::new("-o"),
        OsStr::new("json"),
    ]));
    assert_eq!(
        stdout(&o),
        "{\"id\":10,\"tags\":[1,2]}\n{\"id\":11}\n{\"id\":12,\"tags\":[]}\n{\"id\":13,\"tags\":[7]}\n"
    );
}

/// A damaged Parquet file on which the `parquet` crate's decoder panics (the scan catches
/// it): one clean error naming the file and column, no panic message before it.
#[test]
fn damaged_parquet_is_a_clean_error() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/damaged-parquet/levels-past-the-bitmap.parquet");
    let o = sift([
        "scan".as_ref(),
        path.as_os_str(),
        "-o".as_ref(),
        "none".as_ref(),
    ]);
    let err = clean_failure(&o);
    assert!(err.contains("levels-past-the-bitmap.parquet"), "{err}");
    assert!(err.contains("column flba_field"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}

/// A Parquet file whose footer holds the `parquet` crate's Thrift decoder for seconds,
/// given to DataFusion's reader: refused by Sift's check before DataFusion reads it, in one
/// clean error naming the table and the file.
#[test]
fn datafusion_reader_is_given_checked_files_only() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/damaged-parquet/thrift-list-of-booleans.parquet");
    let mut table = std::ffi::OsString::from("t=");
    table.push(path.as_os_str());
    let o = sift([
        "sql".as_ref(),
        "--parquet-reader".as_ref(),
        "datafusion".as_ref(),
        "-t".as_ref(),
        table.as_os_str(),
        "select count(*) from t".as_ref(),
    ]);
    let err = clean_failure(&o);
    assert!(err.contains("table t"), "{err}");
    assert!(err.contains("thrift-list-of-booleans.parquet"), "{err}");
    assert!(err.contains("footer metadata"), "{err}");
}

/// The `sorting_columns` of every row group of the Parquet file at `path`, as
/// (column, descending, nulls first).
fn parquet_sorting(path: &Path) -> Vec<Vec<(i32, bool, bool)>> {
    let builder = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(
        File::open(path).unwrap(),
    )
    .unwrap();
    (builder.metadata().row_groups().iter())
        .map(|g| {
            (g.sorting_columns().into_iter().flatten())
                .map(|c| (c.column_idx, c.descending, c.nulls_first))
                .collect()
        })
        .collect()
}

/// A Parquet file written from rows whose order is known declares it: `convert` from a
/// Sift file, the columns its writer found sorted; `sql --out`, the order of the query's
/// result; `scan --out`, the columns its files hold sorted over all their blocks. Sift's scan then drops a sort on the declared column of such a file.
#[test]
fn parquet_outputs_declare_the_order_of_their_rows() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let csv = d.join("t.csv");
    let rows: String = (0..1000)
        .map(|i| format!("{i},{}\n", i * 37 % 101))
        .collect();
    std::fs::write(&csv, format!("k,v\n{rows}")).unwrap();
    let sorted = d.join("t.sift");
    ok(sift([
        OsStr::new("convert"),
        csv.as_os_str(),
        sorted.as_os_str(),
        OsStr::new("--block-rows"),
        OsStr::new("100"),
    ]));
    let converted = d.join("converted.parquet");
    ok(sift([
        OsStr::new("convert"),
        sorted.as_os_str(),
        converted.as_os_str(),
    ]));
    assert_eq!(parquet_sorting(&converted), [vec![(0, false, false)]]);
    // From CSV nothing is known of the order.
    let plain = d.join("plain.parquet");
    ok(sift([
        OsStr::new("convert"),
        csv.as_os_str(),
        plain.as_os_str(),
    ]));
    assert_eq!(parquet_sorting(&plain), [Vec::new()]);
    let t = sorted.to_str().unwrap();
    let cases = [
        (
            format!("select v, k from '{t}' order by v desc, k"),
            vec![(0, true, true), (1, false, false)],
        ),
        (
            format!("select k * 2 as j from '{t}' order by j"),
            vec![(0, false, false)],
        ),
        // Rows tied on `v` are in no known order of `k`.
        (
            format!("select v, k from '{t}' order by v"),
            vec![(0, false, false)],
        ),
        (format!("select v from '{t}'"), vec![]),
    ];
    for (query, want) in cases {
        let out = d.join("out.parquet");
        ok(sift([
            OsStr::new("sql"),
            OsStr::new("--threads"),
            OsStr::new("2"),
            OsStr::new(&query),
            OsStr::new("--out"),
            out.as_os_str(),
        ]));
        assert_eq!(parquet_sorting(&out), [want], "{query}");
    }
    // `sift scan --out` declares the columns its inputs hold sorted, among those it
    // returns: over one file, a descending Parquet file, files in their keys' order (not
    // out of it), a filter and a limit.
    let desc = d.join("desc.parquet");
    ok(sift([
        OsStr::new("sql"),
        OsStr::new(&format!("select k, v from '{t}' order by k desc")),
        OsStr::new("--out"),
        desc.as_os_str(),
    ]));
    let parts = d.join("parts");
    std::fs::create_dir(&parts).unwrap();
    for (name, keys) in [("a.sift", "k < 500"), ("b.sift", "k >= 500")] {
        ok(sift([
            OsStr::new("scan"),
            sorted.as_os_str(),
            OsStr::new("-f"),
            OsStr::new(keys),
            OsStr::new("--out"),
            parts.join(name).as_os_str(),
        ]));
    }
    let swapped = d.join("swapped");
    std::fs::create_dir(&swapped).unwrap();
    std::fs::copy(parts.join("a.sift"), swapped.join("b.sift")).unwrap();
    std::fs::copy(parts.join("b.sift"), swapped.join("a.sift")).unwrap();
    // (input, the scan's arguments, the sorting columns declared)
    type Case<'a> = (&'a Path, &'a [&'a str], Vec<(i32, bool, bool)>);
    let scans: [Case; 6] = [
        (&sorted, &["-c", "v,k"], vec![(1, false, false)]),
        (
            &sorted,
            &["-f", "v < 50", "--limit", "20"],
            vec![(0, false, false)],
        ),
        (&desc, &[], vec![(0, true, true)]),
        (&parts, &["-c", "v,k"], vec![(1, false, false)]),
        (&swapped, &["-c", "v,k"], vec![]),
        (&sorted, &["-c", "v"], vec![]),
    ];
    for (input, args, want) in scans {
        let out = d.join("scanned.parquet");
        let mut argv = vec![OsStr::new("scan"), input.as_os_str()];
        argv.extend(args.iter().map(OsStr::new));
        argv.extend([OsStr::new("--out"), out.as_os_str()]);
        ok(sift(argv));
        assert_eq!(parquet_sorting(&out), [want], "{input:?} {args:?}");
        std::fs::remove_file(&out).unwrap();
    }
    let o = ok(sift([
        OsStr::new("sql"),
        OsStr::new("--explain"),
        OsStr::new(&format!(
            "select k, v from '{}' order by k desc limit 3",
            converted.display()
        )),
    ]));
    let plan = stdout(&o);
    assert!(!plan.contains("SortExec"), "{plan}");
    assert!(plan.contains("reversed"), "{plan}");
}
