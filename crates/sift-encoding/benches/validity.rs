//! Criterion benchmark of decoding a block's validity (64Ki rows, Sift's block size) as
//! the writer stores it for each layout of nulls: rare and scattered (their positions),
//! clustered (runs), frequent (a bitmap). Each iteration decodes [`BLOCKS`] blocks whose
//! nulls differ, so that the branch predictor cannot learn one block's positions by heart
//! (it does with a single block, and then favours branchy code that real scans, never
//! seeing a block twice, pay for). `cargo bench -p sift-encoding --bench validity`.
//!
//! The `parquet levels` group decodes the same scattered nulls stored as a Parquet page
//! stores them: one-bit definition levels in an RLE/bit-packed hybrid run stream, as
//! Parquet writers encode them (a bit-packed run for the groups of 8 that hold a null, a
//! repeated run of ones between them), read in place as Sift's Parquet scan reads a page.

#![allow(clippy::unwrap_used, clippy::expect_used)] // bench code

use std::hint::black_box;

use arrow_array::Int64Array;
use arrow_schema::DataType;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
#[path = "../tests/common/levels.rs"]
mod levels;

use levels::write_levels;
use sift_encoding::encodings::{Hybrid, Plain};
use sift_encoding::{Chunk, ColumnEncoding, Node, Validity, encode_array};

const N: usize = 1 << 16;
/// Blocks decoded per iteration, each with other null positions.
const BLOCKS: u64 = 128;

/// A well-mixed hash of `i`, for null positions without a period.
fn hash(i: u64) -> u64 {
    let x = i.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    (x ^ (x >> 29)).wrapping_mul(0xbf58_476d_1ce4_e5b9) ^ (x >> 32)
}

/// A layout of nulls: its name, and whether row `i` is null.
type Layout = (&'static str, fn(u64) -> bool);

fn validity(c: &mut Criterion) {
    let layouts: [Layout; 4] = [
        ("1% scattered", |i| hash(i).is_multiple_of(100)),
        ("2% scattered", |i| hash(i).is_multiple_of(50)),
        ("10% scattered", |i| hash(i).is_multiple_of(10)),
        ("3% in runs of 200", |i| hash(i / 200).is_multiple_of(33)),
    ];
    let mut g = c.benchmark_group("validity");
    g.throughput(Throughput::Elements(N as u64 * BLOCKS));
    for (name, null) in layouts {
        let encoded: Vec<_> = (0..BLOCKS)
            .map(|b| {
                let offset = b * N as u64 * 1000;
                let array: Int64Array = (0..N as u64)
                    .map(|i| (!null(offset + i)).then_some(7))
                    .collect();
                encode_array(&array).unwrap()
            })
            .collect();
        let shape = encoded[0].encoding.validity_shape().unwrap_or_default();
        assert!(
            encoded
                .iter()
                .all(|e| e.encoding.validity_shape().unwrap_or_default() == shape),
            "{name}: the blocks' layouts differ"
        );
        let chunks: Vec<_> = encoded
            .iter()
            .map(|e| e.chunk(&DataType::Int64, N))
            .collect();
        g.bench_function(format!("{name} ({shape})"), |b| {
            b.iter(|| {
                for chunk in &chunks {
                    black_box(black_box(chunk).validity().unwrap());
                }
            })
        });
    }
    g.finish();
}

fn parquet_levels(c: &mut Criterion) {
    let layouts: [Layout; 2] = [
        ("1% scattered", |i| hash(i).is_multiple_of(100)),
        ("10% scattered", |i| hash(i).is_multiple_of(10)),
    ];
    let mut g = c.benchmark_group("parquet levels");
    g.throughput(Throughput::Elements(N as u64 * BLOCKS));
    // A page's tree as the Parquet scan builds it: plain values, the levels as validity.
    let encoding = ColumnEncoding {
        validity: Validity::Encoded { root: 1 },
        nodes: vec![
            Node::Plain(Plain {
                width: 8,
                buffer: 0,
            }),
            Node::Hybrid(Hybrid { bits: 1, buffer: 1 }),
        ],
    };
    let values = vec![0u8; N * 8];
    for (name, null) in layouts {
        let pages: Vec<(Vec<bool>, Vec<u8>)> = (0..BLOCKS)
            .map(|b| {
                let offset = b * N as u64 * 1000;
                let valid: Vec<bool> = (0..N as u64).map(|i| !null(offset + i)).collect();
                let levels = write_levels(&valid);
                (valid, levels)
            })
            .collect();
        let chunks: Vec<_> = pages
            .iter()
            .map(|(_, levels)| Chunk::new(&encoding, &DataType::Int64, N, vec![&values, levels]))
            .collect();
        // The decode is checked once against the levels written.
        for ((valid, _), chunk) in pages.iter().zip(&chunks) {
            let got = chunk.validity().unwrap().unwrap();
            assert!(
                got.len() == N && (0..N).all(|i| got.get(i) == valid[i]),
                "{name}: levels decoded wrong"
            );
        }
        let bytes: usize = pages.iter().map(|(_, l)| l.len()).sum();
        let per_byte = (N as u64 * BLOCKS) as f64 / bytes as f64;
        g.bench_function(format!("{name} ({per_byte:.1} levels a byte)"), |b| {
            b.iter(|| {
                for chunk in &chunks {
                    black_box(black_box(chunk).validity().unwrap());
                }
            })
        });
    }
    g.finish();
}

criterion_group!(benches, validity, parquet_levels);
criterion_main!(benches);
