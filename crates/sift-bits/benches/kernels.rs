//! Criterion micro-benchmarks of each kernel at every supported level, on 64Ki-value blocks
//! (Sift's block size). `cargo bench -p sift-bits --bench kernels`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // bench code

use std::hint::black_box;
use std::time::Duration;

use criterion::measurement::WallTime;
use criterion::{
    BenchmarkGroup, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main,
};
use sift_bits::byteslice::ByteSlices;
use sift_bits::expand::expand_at;
use sift_bits::levels::{deposit_at, extend_at, extract_at};
use sift_bits::lookup::lookup_u64;
use sift_bits::pack::{low_mask, pack};
use sift_bits::packed_cmp::compare_into;
use sift_bits::range::compare_values;
use sift_bits::select::{select_into, unpack_selected_into};
use sift_bits::unpack::{Lane, unpack_for_at};
use sift_bits::{Bitmap, Level, Predicate};

mod common;
use common::rng;

const N: usize = 1 << 16;

fn bitmap(next: &mut impl FnMut() -> u64, ands: u32) -> Bitmap {
    let words = (0..N / 64)
        .map(|_| (0..ands).fold(u64::MAX, |a, _| a & next()))
        .collect();
    Bitmap::from_words(words, N).unwrap()
}

fn unpack(c: &mut Criterion) {
    let mut next = rng(1);
    let raw: Vec<u64> = (0..N).map(|_| next()).collect();
    let mut g = c.benchmark_group("unpack");
    g.throughput(Throughput::Elements(N as u64));
    for level in Level::supported() {
        for w in [3u32, 12, 20, 40] {
            let packed = pack(&raw, w);
            let id = BenchmarkId::new(format!("{level:?}"), format!("w{w}"));
            match w {
                1..=8 => {
                    let mut out = vec![0u8; N];
                    g.bench_function(id, |b| {
                        b.iter(|| unpack_for_at(level, &packed, w, 0, &mut out))
                    });
                }
                9..=16 => {
                    let mut out = vec![0u16; N];
                    g.bench_function(id, |b| {
                        b.iter(|| unpack_for_at(level, &packed, w, 0, &mut out))
                    });
                }
                17..=32 => {
                    let mut out = vec![0u32; N];
                    g.bench_function(id, |b| {
                        b.iter(|| unpack_for_at(level, &packed, w, 0, &mut out))
                    });
                }
                _ => {
                    let mut out = vec![0u64; N];
                    g.bench_function(id, |b| {
                        b.iter(|| unpack_for_at(level, &packed, w, 0, &mut out))
                    });
                }
            }
        }
    }
    g.finish();
}

fn select(c: &mut Criterion) {
    let mut next = rng(2);
    let raw: Vec<u64> = (0..N).map(|_| next()).collect();
    let sel = bitmap(&mut next, 3); // 1/8
    let mut g = c.benchmark_group("select_1_8");
    g.throughput(Throughput::Elements(N as u64));
    for level in Level::supported() {
        for w in [3u32, 9] {
            let packed = pack(&raw, w);
            let mut out = Vec::new();
            g.bench_function(
                BenchmarkId::new(format!("{level:?}/packed"), format!("w{w}")),
                |b| b.iter(|| select_into(level, &packed, w, &sel, &mut out)),
            );
            let mut vals: Vec<u32> = Vec::new();
            g.bench_function(
                BenchmarkId::new(format!("{level:?}/unpacked"), format!("w{w}")),
                |b| b.iter(|| unpack_selected_into(level, &packed, w, 0u32, &sel, &mut vals)),
            );
        }
    }
    g.finish();
}

/// Selected values of 24-bit codes, bit-packed (`unpack_selected_into`) against byte slices
/// (`ByteSlices::select`, at the active level), at 1/1024, 1/8 and 1/2 of the rows.
fn byteslice_select(c: &mut Criterion) {
    let mut next = rng(6);
    let w = 24;
    let codes: Vec<u64> = (0..N).map(|_| next() & low_mask(w)).collect();
    let packed = pack(&codes, w);
    let bs = ByteSlices::from_codes(&codes, w).unwrap();
    let mut g = c.benchmark_group("select_w24");
    g.throughput(Throughput::Elements(N as u64));
    for (name, k) in [("1_1024", 10), ("1_8", 3), ("1_2", 1)] {
        let sel = bitmap(&mut next, k);
        let mut vals: Vec<u64> = Vec::new();
        let level = Level::active();
        g.bench_function(BenchmarkId::new("packed", name), |b| {
            b.iter(|| unpack_selected_into(level, &packed, w, 0u64, &sel, &mut vals))
        });
        g.bench_function(BenchmarkId::new("byteslice", name), |b| {
            b.iter(|| bs.select(&sel).unwrap())
        });
    }
    g.bench_function("byteslice/decode", |b| b.iter(|| bs.decode()));
    g.finish();
}

fn predicates(c: &mut Criterion) {
    let mut next = rng(3);
    let w = 12;
    let codes: Vec<u64> = (0..N).map(|_| next() & low_mask(w)).collect();
    let packed = pack(&codes, w);
    let bs = ByteSlices::from_codes(&codes, w).unwrap();
    let mut g = c.benchmark_group("predicate_w12");
    g.throughput(Throughput::Elements(N as u64));
    for level in Level::supported() {
        for (name, pred) in [
            ("lt", Predicate::Lt(410)),
            ("between", Predicate::Between(100, 2000)),
            ("eq", Predicate::Eq(7)),
        ] {
            let mut out = Bitmap::default();
            g.bench_function(
                BenchmarkId::new(format!("{level:?}/byteslice"), name),
                |b| b.iter(|| bs.compare_into(level, pred, None, &mut out)),
            );
            g.bench_function(BenchmarkId::new(format!("{level:?}/packed"), name), |b| {
                b.iter(|| compare_into(level, &packed, w, N, pred, &mut out))
            });
        }
    }
    g.finish();
}

/// `packed_cmp::compare_into` with a 50 %-selective `BETWEEN` on uniform codes, per width.
fn range_compare(c: &mut Criterion) {
    let mut next = rng(5);
    let raw: Vec<u64> = (0..N).map(|_| next()).collect();
    let mut g = c.benchmark_group("range compare");
    g.throughput(Throughput::Elements(N as u64));
    for level in Level::supported() {
        for w in (1u32..=32).chain([64]) {
            let packed = pack(&raw, w);
            let m = low_mask(w);
            let pred = Predicate::Between(m / 4, m / 4 + m / 2);
            let mut out = Bitmap::default();
            g.bench_function(
                BenchmarkId::new(format!("{level:?}"), format!("w{w}")),
                |b| b.iter(|| compare_into(level, black_box(&packed), w, N, pred, &mut out)),
            );
        }
    }
    g.finish();
}

/// `range::compare_values` on decoded values of each lane type, 50 % selective.
fn range_compare_values(c: &mut Criterion) {
    fn one<T: Lane>(g: &mut BenchmarkGroup<'_, WallTime>, level: Level, raw: &[u64]) {
        let vals: Vec<T> = raw.iter().map(|&v| T::from_u64(v)).collect();
        let m = low_mask(T::BITS);
        let (lo, hi) = (T::from_u64(m / 4), T::from_u64(m / 4 + m / 2));
        let mut out = Bitmap::default();
        g.bench_function(
            BenchmarkId::new(format!("{level:?}"), format!("u{}", T::BITS)),
            |b| b.iter(|| compare_values(level, black_box(&vals), lo, hi, false, &mut out)),
        );
    }
    let mut next = rng(6);
    let raw: Vec<u64> = (0..N).map(|_| next()).collect();
    let mut g = c.benchmark_group("range compare values");
    g.throughput(Throughput::Elements(N as u64));
    for level in Level::supported() {
        one::<u8>(&mut g, level, &raw);
        one::<u16>(&mut g, level, &raw);
        one::<u32>(&mut g, level, &raw);
        one::<u64>(&mut g, level, &raw);
    }
    g.finish();
}

fn levels(c: &mut Criterion) {
    let mut next = rng(4);
    let valid = bitmap(&mut next, 1);
    let levels_bm = bitmap(&mut next, 1);
    let filtered = Bitmap::from_bools((0..valid.count_ones()).map(|_| next() & 1 == 1));
    let mut g = c.benchmark_group("levels");
    g.throughput(Throughput::Elements(N as u64));
    for level in Level::supported() {
        g.bench_function(BenchmarkId::new("extract", format!("{level:?}")), |b| {
            b.iter(|| extract_at(level, black_box(&levels_bm), &valid))
        });
        g.bench_function(BenchmarkId::new("deposit", format!("{level:?}")), |b| {
            b.iter(|| deposit_at(level, black_box(&filtered), &valid))
        });
        g.bench_function(BenchmarkId::new("extend", format!("{level:?}")), |b| {
            b.iter(|| extend_at(level, black_box(&filtered), &valid))
        });
    }
    g.finish();
    // Non-null 64-bit values spread over their rows: half the rows valid, and 15 in 16 (a
    // row null where three random words have its bit set and a fourth has it clear).
    let mut g = c.benchmark_group("expand_u64");
    g.throughput(Throughput::Elements(N as u64));
    let dense = Bitmap::from_words(
        (0..N / 64)
            .map(|_| !(next() & next() & next()) | next())
            .collect(),
        N,
    )
    .unwrap();
    for (name, rows) in [("half", &valid), ("dense", &dense)] {
        let values: Vec<u64> = (0..rows.count_ones() as u64).collect();
        for level in Level::supported() {
            g.bench_function(BenchmarkId::new(name, format!("{level:?}")), |b| {
                b.iter(|| expand_at(level, black_box(&values), rows.words(), N))
            });
        }
    }
    g.finish();
}

/// Dictionary codes mapped to 8-byte entries: tables of 16, 32 and 64 entries (the
/// register path's three shapes), 256 and 32,768 (past it: a large column chunk's dictionary).
fn lookup(c: &mut Criterion) {
    let mut next = rng(5);
    let mut g = c.benchmark_group("lookup");
    g.throughput(Throughput::Elements(N as u64));
    for entries in [16usize, 32, 64, 256, 32_768] {
        let table: Vec<u64> = (0..entries).map(|_| next()).collect();
        let codes: Vec<u32> = (0..N).map(|_| (next() % entries as u64) as u32).collect();
        let mut out = Vec::with_capacity(N);
        for level in Level::supported() {
            let id = BenchmarkId::new(format!("{level:?}"), format!("{entries}-entries"));
            g.bench_function(id, |b| {
                b.iter(|| {
                    out.clear();
                    lookup_u64(level, black_box(&codes), &table, &mut out)
                })
            });
        }
    }
    g.finish();
}

/// The extremes of a dictionary's entries over selected byte codes, folded through the
/// entries' ranks: every code, or half of them selected.
fn rank_extremes(c: &mut Criterion) {
    let mut next = rng(6);
    let mut g = c.benchmark_group("rank_extremes");
    g.throughput(Throughput::Elements(N as u64));
    let ranks: [u8; 256] = std::array::from_fn(|i| (i as u8).wrapping_mul(37));
    let codes: Vec<u8> = (0..N).map(|_| (next() % 32) as u8).collect();
    let half = bitmap(&mut next, 1);
    for level in Level::supported() {
        for (name, sel) in [("all", None), ("half", Some(half.words()))] {
            g.bench_function(BenchmarkId::new(format!("{level:?}"), name), |b| {
                b.iter(|| sift_bits::extreme::rank_extremes(level, black_box(&codes), sel, &ranks))
            });
        }
    }
    g.finish();
}

/// The smallest and largest of 32-bit codes (frame-of-reference codes wider than a
/// byte): every code, or half of them selected.
fn extremes_u32(c: &mut Criterion) {
    let mut next = rng(7);
    let mut g = c.benchmark_group("extremes_u32");
    g.throughput(Throughput::Elements(N as u64));
    let values: Vec<u32> = (0..N).map(|_| (next() % (1 << 20)) as u32).collect();
    let half = bitmap(&mut next, 1);
    for level in Level::supported() {
        for (name, sel) in [("all", None), ("half", Some(half.words()))] {
            g.bench_function(BenchmarkId::new(format!("{level:?}"), name), |b| {
                b.iter(|| sift_bits::extreme::extremes_u32(level, black_box(&values), sel))
            });
        }
    }
    g.finish();
}

/// Running sums of small differences (a delta-encoded sorted column), in place.
fn running_sum(c: &mut Criterion) {
    let mut next = rng(8);
    let mut g = c.benchmark_group("running_sum");
    g.throughput(Throughput::Elements(N as u64));
    // Summed again on every iteration (the sums wrap, which costs nothing extra).
    let mut values: Vec<i64> = (0..N).map(|_| (next() % 8) as i64).collect();
    for level in Level::supported() {
        g.bench_function(BenchmarkId::from_parameter(format!("{level:?}")), |b| {
            b.iter(|| sift_bits::running_sum::running_sum(level, 1, black_box(&mut values)))
        });
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_millis(700));
    targets = unpack, select, byteslice_select, predicates, range_compare, range_compare_values, levels, lookup,
        rank_extremes, extremes_u32, running_sum
}
criterion_main!(benches);
