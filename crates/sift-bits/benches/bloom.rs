//! Criterion benchmarks of the register-blocked Bloom filter's batch probes: 32-bit and
//! 64-bit keys at every level the CPU supports, with the filter in L1, in L2, in L3 on either
//! side of the size where the AVX-512 kernel gives way to the AVX2 one, and beyond L3,
//! 64Ki random keys per iteration (throughput in keys).
//! `taskset -c 1 cargo bench -p sift-bits --bench bloom`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // bench code

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use sift_bits::bloom::BloomFilter;
use sift_bits::{Level, with_level};

mod common;
use common::{bloom_of_size, rng};

const N: usize = 1 << 16;

fn probe(c: &mut Criterion) {
    let mut next = rng(1);
    let keys64: Vec<u64> = (0..N).map(|_| next()).collect();
    let keys32: Vec<u32> = keys64.iter().map(|&k| k as u32).collect();
    let levels = Level::supported();
    let sizes = [
        ("L1_16KiB", 16 << 10),
        ("L2_256KiB", 256 << 10),
        ("L3_8MiB", 8 << 20),
        ("L3_32MiB", 32 << 20),
        ("DRAM_64MiB", 64 << 20),
    ];
    let filters: Vec<(&str, BloomFilter)> = sizes
        .iter()
        .map(|&(name, bytes)| (name, bloom_of_size(bytes, || next() >> 32)))
        .collect();
    for (group, wide) in [("bloom probe_u32", false), ("bloom probe u64", true)] {
        let mut g = c.benchmark_group(group);
        g.throughput(Throughput::Elements(N as u64));
        for &level in &levels {
            for (name, f) in &filters {
                let id = BenchmarkId::new(format!("{level:?}"), name);
                if wide {
                    g.bench_function(id, |b| {
                        b.iter(|| with_level(level, || f.probe(black_box(&keys64))))
                    });
                } else {
                    g.bench_function(id, |b| {
                        b.iter(|| with_level(level, || f.probe_u32(black_box(&keys32))))
                    });
                }
            }
        }
        g.finish();
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_millis(700));
    targets = probe
}
criterion_main!(benches);
