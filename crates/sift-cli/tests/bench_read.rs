//! `sift bench read`: the timing the comparison harness and the demo rely on reads every
//! row of Sift and Parquet files, the same data, and reports what it says it does.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::process::{Command, Output};

fn sift(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sift"))
        .args(args)
        .output()
        .expect("run sift")
}

fn ok(o: Output) -> String {
    assert!(
        o.status.success(),
        "sift failed ({:?}): {}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

fn bench_read(path: &Path, extra: &[&str]) -> serde_json::Value {
    let mut args = vec!["bench", "read", path.to_str().unwrap(), "--runs", "3"];
    args.extend_from_slice(extra);
    serde_json::from_str(&ok(sift(&args))).unwrap()
}

#[test]
fn reads_every_row_of_sift_and_parquet_alike() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("t.csv");
    let mut text = String::from("id,name,score\n");
    for i in 0..5000 {
        text.push_str(&format!("{i},name-{},{}.5\n", i % 37, i % 101));
    }
    std::fs::write(&csv, text).unwrap();
    let (s, p) = (dir.path().join("t.sift"), dir.path().join("t.parquet"));
    for out in [&s, &p] {
        ok(sift(&[
            "convert",
            csv.to_str().unwrap(),
            out.to_str().unwrap(),
        ]));
    }
    let mut bytes = Vec::new();
    for (path, format) in [(&s, "sift"), (&p, "parquet")] {
        for mode in ["materialize", "stream"] {
            let r = bench_read(path, &["--mode", mode]);
            assert_eq!(r["format"], format, "{r}");
            assert_eq!(r["mode"], mode, "{r}");
            assert_eq!(r["rows"], 5000, "{r}");
            let runs: Vec<f64> = r["runs_ms"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_f64().unwrap())
                .collect();
            assert_eq!(runs.len(), 3, "{r}");
            assert!(runs.iter().all(|&t| t > 0.0), "{r}");
            assert_eq!(r["first_ms"].as_f64().unwrap(), runs[0], "{r}");
            let best = runs.iter().copied().fold(f64::INFINITY, f64::min);
            assert_eq!(r["best_ms"].as_f64().unwrap(), best, "{r}");
            assert!(r["median_ms"].as_f64().unwrap() >= best, "{r}");
            bytes.push(r["arrow_bytes"].as_u64().unwrap());
        }
    }
    // The same table decodes to the same Arrow bytes from both files, in both modes.
    assert!(bytes[0] > 5000 * 8, "{bytes:?}");
    assert!(bytes.iter().all(|&b| b == bytes[0]), "{bytes:?}");

    let one = bench_read(&s, &["--columns", "score"]);
    assert_eq!(one["rows"], 5000);
    assert_eq!(one["arrow_bytes"].as_u64().unwrap(), 5000 * 8);

    let bad = sift(&["bench", "read", csv.to_str().unwrap()]);
    assert_eq!(bad.status.code(), Some(1));
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(err.contains("Sift and Parquet files, not CSV"), "{err}");
    let missing = sift(&["bench", "read", s.to_str().unwrap(), "--columns", "nope"]);
    assert!(String::from_utf8_lossy(&missing.stderr).contains("no column 'nope'"));
}
