//! The headline measurements of `BENCHMARKS.md`, printed as Markdown tables (custom
//! harness: a full criterion run of 128 Fig. 12 cells on 2^27 values would take far too
//! long here).
//!
//! 1. Parquet-Select Fig. 12: select-then-unpack vs unpack-all-then-select, widths 1–16,
//!    selectivities 1/1 … 1/128, 2^27 values (`SIFT_FIG12_LOG2N` to change).
//! 2. ByteSlice `<` on 12-bit uniform codes at 10 % selectivity, cycles per value, against
//!    unpack-and-compare and the packed compare (`packed_cmp`).
//! 3. Unpack throughput, values per cycle, widths 1–64 into the narrowest type.
//! 4. Range compare, cycles per value: packed codes per width, decoded values per lane type.
//! 5. Register-blocked Bloom filter (`bloom`): probe rates in keys per cycle, and measured
//!    false-positive rates against the theory and against parquet's split-block filter.
//!
//! Each cell is the minimum of several timed repetitions. Cycles are core cycles: the core
//! clock is probed between repetitions with a chain of dependent register adds (1 cycle
//! each), and the best time is multiplied by the fastest clock observed (see `measure`);
//! the TSC, which ticks at a constant nominal rate, is only reported.
//!
//! Run: `taskset -c 1 cargo bench -p sift-bits --bench paper`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // bench code

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use sift_bits::bloom::BloomFilter;
use sift_bits::byteslice::ByteSlices;
use sift_bits::compact::compact_words;
use sift_bits::pack::{low_mask, pack};
use sift_bits::packed_cmp::compare_into;
use sift_bits::range::compare_values;
use sift_bits::select::unpack_selected_into;
use sift_bits::unpack::{Lane, unpack_for_at};
use sift_bits::{Bitmap, Level, Predicate, with_level};

mod common;
use common::bloom_of_size;

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// Core clock in GHz: the fastest of 40 short runs of 10 dependent adds per iteration.
/// The maximum matches the minimum-of-runs timings below: both describe the runs in which
/// this thread had the core to itself (the machine is shared, see BENCHMARKS.md).
fn core_ghz() -> f64 {
    let g = (0..40).map(|_| core_ghz_once()).fold(0.0, f64::max);
    // Positive f64s order like their bit patterns, so `fetch_max` on the bits is a max.
    MAX_GHZ.fetch_max(g.to_bits(), Ordering::Relaxed);
    max_ghz()
}

fn core_ghz_once() -> f64 {
    probe(20_000_000)
}

/// Clock over `iters` iterations of 10 dependent adds (GHz as seen by this thread: lower
/// than the real clock while another process shares the core).
fn probe(iters: u64) -> f64 {
    let t = Instant::now();
    #[cfg(target_arch = "x86_64")]
    // SAFETY: register-only arithmetic on the two operands, no memory or stack access.
    unsafe {
        std::arch::asm!(
            "2:",
            "add {a}, {b}", "add {a}, {b}", "add {a}, {b}", "add {a}, {b}", "add {a}, {b}",
            "add {a}, {b}", "add {a}, {b}", "add {a}, {b}", "add {a}, {b}", "add {a}, {b}",
            "dec {n}",
            "jnz 2b",
            a = inout(reg) 0u64 => _,
            b = in(reg) 1u64,
            n = inout(reg) iters => _,
            options(nomem, nostack),
        );
    }
    (iters * 10) as f64 / t.elapsed().as_secs_f64() / 1e9
}

/// TSC ticks per ns over ~300 ms.
fn tsc_ghz() -> f64 {
    #[cfg(target_arch = "x86_64")]
    {
        let t = Instant::now();
        // SAFETY: RDTSC only reads the time-stamp counter (present on every x86_64).
        let a = unsafe { std::arch::x86_64::_rdtsc() };
        while t.elapsed().as_millis() < 300 {}
        // SAFETY: as above.
        let b = unsafe { std::arch::x86_64::_rdtsc() };
        (b - a) as f64 / t.elapsed().as_secs_f64() / 1e9
    }
    #[cfg(not(target_arch = "x86_64"))]
    0.0
}

/// Minimum wall time of `reps` runs of `f`, in seconds.
fn time(reps: usize, f: impl FnMut()) -> f64 {
    measure(reps, f).secs
}

/// Best-of-`reps` wall time and core cycles of `f`.
struct Sample {
    secs: f64,
    cycles: f64,
}

/// The fastest core clock any probe has seen so far (GHz, as f64 bits).
static MAX_GHZ: AtomicU64 = AtomicU64::new(0);

fn max_ghz() -> f64 {
    f64::from_bits(MAX_GHZ.load(Ordering::Relaxed))
}

/// Times `reps` runs of `f`, each followed by a ~1.5 ms clock probe. Cycles are the best
/// time × the fastest clock seen by any probe so far: the best run is one in which this
/// thread had the core (another process shares it at times), and the fastest probe is the
/// clock then. If the clock during that run was lower, cycles are overestimated, so the
/// reported throughput errs low.
fn measure(reps: usize, mut f: impl FnMut()) -> Sample {
    let mut secs = f64::INFINITY;
    for _ in 0..reps {
        let t = Instant::now();
        f();
        secs = secs.min(t.elapsed().as_secs_f64());
        let g = probe(500_000);
        MAX_GHZ.fetch_max(g.to_bits(), Ordering::Relaxed);
    }
    Sample {
        secs,
        cycles: secs * max_ghz() * 1e9,
    }
}

/// The baseline's selection of decoded values: whole words copied, else one copy per bit.
fn compact(vals: &[u32], bm: &[u64], out: &mut [u32]) -> usize {
    let mut k = 0;
    for (c, &b) in bm.iter().enumerate() {
        let base = c * 64;
        if b == u64::MAX && base + 64 <= vals.len() {
            out[k..k + 64].copy_from_slice(&vals[base..base + 64]);
            k += 64;
            continue;
        }
        let mut b = b;
        while b != 0 {
            out[k] = vals[base + b.trailing_zeros() as usize];
            k += 1;
            b &= b - 1;
        }
    }
    k
}

fn fig12(level: Level, ghz: f64) {
    let log2n: u32 = std::env::var("SIFT_FIG12_LOG2N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(27);
    let n = 1usize << log2n;
    let reps = 5;
    let mut rng = Rng(12);
    let raw: Vec<u64> = (0..n).map(|_| rng.next()).collect();
    let mut all = vec![0u32; n];
    let mut out = vec![0u32; n + 64];
    let mut fused: Vec<u32> = Vec::with_capacity(n);
    let mut block = vec![0u32; 4096];
    println!(
        "\n### Fig. 12: select-then-unpack vs unpack-then-select ({level:?}, n = 2^{log2n}, u32 output)\n"
    );
    println!(
        "Speedup = time(baseline) / time(select + unpack). Baseline A materializes all values with the"
    );
    println!(
        "SIMD unpacker, then selects with a scalar loop (the paper's baseline); baseline B unpacks per"
    );
    println!(
        "4096-value block into L1 and selects with AVX-512 VPCOMPRESS (the strongest unpack-then-select)."
    );
    println!(
        "Cells: `A× / B×`; the last column is the fused path's ns per input value at 1/1 and 1/128.\n"
    );
    println!("| w | 1/1 | 1/2 | 1/4 | 1/8 | 1/16 | 1/32 | 1/64 | 1/128 | ns/value 1/1, 1/128 |");
    println!("|---|---|---|---|---|---|---|---|---|---|");
    let sels: Vec<Bitmap> = (0..8u32)
        .map(|k| {
            let words: Vec<u64> = (0..n / 64)
                .map(|_| (0..k).fold(u64::MAX, |acc, _| acc & rng.next()))
                .collect();
            Bitmap::from_words(words, n).unwrap()
        })
        .collect();
    let mut csv = Vec::new();
    // `SIFT_FIG12_WIDTHS=7,8` limits the widths (for quick checks).
    let widths: Vec<u32> = std::env::var("SIFT_FIG12_WIDTHS")
        .ok()
        .map(|v| v.split(',').filter_map(|x| x.trim().parse().ok()).collect())
        .unwrap_or_else(|| (1..=16).collect());
    for w in widths {
        let packed = pack(&raw, w);
        let mut row = format!("| {w} |");
        let mut edge = Vec::new();
        for (k, sel) in sels.iter().enumerate() {
            let t_new = time(reps, || {
                unpack_selected_into(level, &packed, w, 0u32, sel, &mut fused).unwrap();
                black_box(&fused);
            });
            let t_full = time(reps, || {
                unpack_for_at(level, &packed, w, 0u32, &mut all).unwrap();
                black_box(compact(&all, sel.words(), &mut out));
            });
            let t_block = time(reps, || {
                let mut k = 0;
                let wpb = 4096 / 64 * w as usize;
                for (b, bm) in sel.words().chunks(64).enumerate() {
                    unpack_for_at(level, &packed[b * wpb..], w, 0u32, &mut block).unwrap();
                    k += compact_words(level, &block, bm, &mut out[k..]);
                }
                black_box(k);
            });
            // Agreement check on the measured outputs.
            let k2 = compact(&all, sel.words(), &mut out);
            assert_eq!(&out[..k2], &fused[..]);
            row += &format!(" {:.1}× / {:.1}× |", t_full / t_new, t_block / t_new);
            if k == 0 || k == 7 {
                edge.push(t_new / n as f64 * 1e9);
            }
            csv.push((w, k, t_new, t_full, t_block));
        }
        row += &format!(" {:.3}, {:.3} |", edge[0], edge[1]);
        println!("{row}");
    }
    let sp: Vec<f64> = csv.iter().map(|c| c.3 / c.2).collect();
    let spb: Vec<f64> = csv.iter().map(|c| c.4 / c.2).collect();
    let mm = |v: &[f64]| {
        (
            v.iter().cloned().fold(f64::INFINITY, f64::min),
            v.iter().cloned().fold(0.0, f64::max),
        )
    };
    println!(
        "\nspeedup vs A: min {:.2}×, max {:.2}×; vs B: min {:.2}×, max {:.2}× (core clock {ghz:.2} GHz)",
        mm(&sp).0,
        mm(&sp).1,
        mm(&spb).0,
        mm(&spb).1
    );
}

/// Single-core read bandwidth in GB/s (sum over a 256 MB array, best of 3).
fn read_bandwidth() -> f64 {
    let v: Vec<u64> = (0..1u64 << 25).collect();
    let t = time(3, || {
        black_box(v.chunks_exact(8).fold([0u64; 8], |mut acc, c| {
            for i in 0..8 {
                acc[i] ^= c[i];
            }
            acc
        }));
    });
    (v.len() * 8) as f64 / t / 1e9
}

fn byteslice(ghz: f64) {
    println!("\nsingle-core read bandwidth: {:.1} GB/s", read_bandwidth());
    byteslice_n(ghz, 25, 7, 1);
    byteslice_n(ghz, 16, 7, 300);
}

fn byteslice_n(ghz: f64, log2n: u32, reps: usize, inner: usize) {
    let n = 1usize << log2n;
    let w = 12u32;
    let mut rng = Rng(4);
    let codes: Vec<u64> = (0..n).map(|_| rng.next() & low_mask(w)).collect();
    let c = 410u64; // 410 / 4096 = 10.0 %
    let pred = Predicate::Lt(c);
    let bs = ByteSlices::from_codes(&codes, w).unwrap();
    let packed = pack(&codes, w);
    let expect = codes.iter().filter(|&&x| x < c).count();
    let _ = ghz;
    let cpv = |m: &Sample| m.cycles / (n * inner) as f64;
    println!(
        "\n### ByteSlice `x < {c}` on 12-bit uniform codes (n = 2^{log2n}, selectivity {:.2} %, {})\n",
        100.0 * expect as f64 / n as f64,
        if log2n > 20 {
            "data in DRAM"
        } else {
            "data in L2, time per pass"
        }
    );
    println!("| method | level | ms | cycles/value |");
    println!("|---|---|---|---|");
    // Results go to a reused bitmap (as a scan loop would): a fresh 4 MB result per call
    // would mostly measure the kernel's page faults.
    for level in Level::supported().into_iter().rev() {
        let mut r = Bitmap::default();
        let t = measure(reps, || {
            for _ in 0..inner {
                bs.compare_into(level, pred, None, &mut r).unwrap();
            }
        });
        assert_eq!(r.count_ones(), expect);
        println!(
            "| ByteSlice scan (early stop) | {level:?} | {:.2} | {:.3} |",
            t.secs * 1e3 / inner as f64,
            cpv(&t)
        );
    }
    for level in Level::supported().into_iter().rev() {
        let mut r = Bitmap::default();
        let t = measure(reps, || {
            for _ in 0..inner {
                compare_into(level, &packed, w, n, pred, &mut r).unwrap();
            }
        });
        assert_eq!(r.count_ones(), expect);
        println!(
            "| packed compare (bit-packed input) | {level:?} | {:.2} | {:.3} |",
            t.secs * 1e3 / inner as f64,
            cpv(&t)
        );
    }
    // Baseline: unpack a 4096-value block (fastest unpacker) to u16, compare, build the bitmap.
    for level in Level::supported().into_iter().rev() {
        let mut block = vec![0u16; 4096];
        let mut words = vec![0u64; n / 64];
        let t = measure(reps, || {
            for _ in 0..inner {
                for (b, chunk) in words.chunks_mut(64).enumerate() {
                    unpack_for_at(level, &packed[b * 64 * w as usize..], w, 0u16, &mut block)
                        .unwrap();
                    for (wd, vals) in chunk.iter_mut().zip(block.chunks_exact(64)) {
                        *wd = vals
                            .iter()
                            .enumerate()
                            .fold(0u64, |acc, (i, &v)| acc | (u64::from(v < c as u16) << i));
                    }
                }
                black_box(&words);
            }
        });
        assert_eq!(
            words.iter().map(|w| w.count_ones() as usize).sum::<usize>(),
            expect
        );
        println!(
            "| unpack + compare (baseline) | {level:?} | {:.2} | {:.3} |",
            t.secs * 1e3 / inner as f64,
            cpv(&t)
        );
    }
}

fn unpack_one<T: Lane>(level: Level, w: u32, ghz: f64) -> f64 {
    let n = 4096;
    let mut rng = Rng(u64::from(w));
    let raw: Vec<u64> = (0..n).map(|_| rng.next()).collect();
    let packed = pack(&raw, w);
    let mut out = vec![T::default(); n];
    let inner = 1000;
    let _ = ghz;
    let t = measure(7, || {
        for _ in 0..inner {
            unpack_for_at(level, black_box(&packed), w, T::default(), &mut out).unwrap();
            black_box(&out);
        }
    });
    (n * inner) as f64 / t.cycles
}

fn unpack_table(ghz: f64) {
    let levels: Vec<Level> = Level::supported().into_iter().rev().collect();
    println!(
        "\n### Unpack throughput, values per core cycle (4096-value blocks, in cache, narrowest output type)\n"
    );
    let head: Vec<String> = levels.iter().map(|l| format!("{l:?}")).collect();
    println!("| w | type | {} |", head.join(" | "));
    println!("|---|---|{}", "---|".repeat(levels.len()));
    for w in 1..=64u32 {
        let (ty, cells): (&str, Vec<f64>) = match w {
            1..=8 => (
                "u8",
                levels
                    .iter()
                    .map(|&l| unpack_one::<u8>(l, w, ghz))
                    .collect(),
            ),
            9..=16 => (
                "u16",
                levels
                    .iter()
                    .map(|&l| unpack_one::<u16>(l, w, ghz))
                    .collect(),
            ),
            17..=32 => (
                "u32",
                levels
                    .iter()
                    .map(|&l| unpack_one::<u32>(l, w, ghz))
                    .collect(),
            ),
            _ => (
                "u64",
                levels
                    .iter()
                    .map(|&l| unpack_one::<u64>(l, w, ghz))
                    .collect(),
            ),
        };
        let cells: Vec<String> = cells.iter().map(|v| format!("{v:.2}")).collect();
        println!("| {w} | {ty} | {} |", cells.join(" | "));
    }
}

/// Cycles per value of `f`, which evaluates `n` values per call: best of 30 batches.
fn cycles_per_value(level: Level, n: usize, mut f: impl FnMut()) -> f64 {
    // The scalar level is ~100× slower; fewer calls per batch keep the batches short.
    let inner = if level == Level::Scalar { 2 } else { 50 };
    let t = measure(30, || {
        for _ in 0..inner {
            f();
        }
    });
    t.cycles / (n * inner) as f64
}

/// One `range_values` instantiation.
type RangeBench = fn(Level, &[u64]) -> f64;

fn range_values<T: Lane>(level: Level, raw: &[u64]) -> f64 {
    let vals: Vec<T> = raw.iter().map(|&v| T::from_u64(v)).collect();
    let m = low_mask(T::BITS);
    let (lo, hi) = (T::from_u64(m / 4), T::from_u64(m / 4 + m / 2));
    let mut out = Bitmap::default();
    cycles_per_value(level, vals.len(), || {
        compare_values(level, black_box(&vals), lo, hi, false, &mut out);
    })
}

/// Range compare on 2^16 values (one block, in L2): `packed_cmp::compare_into` per width and
/// `range::compare_values` per lane type, `BETWEEN max/4 AND 3·max/4` on uniform codes.
fn range_table() {
    let n = 1 << 16;
    let mut rng = Rng(5);
    let raw: Vec<u64> = (0..n).map(|_| rng.next()).collect();
    let levels: Vec<Level> = Level::supported().into_iter().rev().collect();
    let head: Vec<String> = levels.iter().map(|l| format!("{l:?}")).collect();
    println!("\n### Range compare on bit-packed codes, cycles/value (2^16 values, data in L2)\n");
    println!("| w | {} |", head.join(" | "));
    println!("|---|{}", "---|".repeat(levels.len()));
    for w in (1..=32u32).chain([64]) {
        let packed = pack(&raw, w);
        let m = low_mask(w);
        let pred = Predicate::Between(m / 4, m / 4 + m / 2);
        let mut out = Bitmap::default();
        let cells: Vec<String> = levels
            .iter()
            .map(|&l| {
                let c = cycles_per_value(l, n, || {
                    compare_into(l, black_box(&packed), w, n, pred, &mut out).unwrap();
                });
                format!("{c:.3}")
            })
            .collect();
        println!("| {w} | {} |", cells.join(" | "));
    }
    println!("\n### Range compare on decoded values, cycles/value (2^16 values, data in L2)\n");
    println!("| type | {} |", head.join(" | "));
    println!("|---|{}", "---|".repeat(levels.len()));
    let rows: [(&str, RangeBench); 4] = [
        ("u8", range_values::<u8>),
        ("u16", range_values::<u16>),
        ("u32", range_values::<u32>),
        ("u64", range_values::<u64>),
    ];
    for (ty, f) in rows {
        let cells: Vec<String> = levels
            .iter()
            .map(|&l| format!("{:.3}", f(l, &raw)))
            .collect();
        println!("| {ty} | {} |", cells.join(" | "));
    }
}

/// Keys per core cycle of `f`, which probes `n` keys per call: best of 30 batches of
/// `inner` calls.
fn keys_per_cycle(n: usize, inner: usize, mut f: impl FnMut()) -> f64 {
    let t = measure(30, || {
        for _ in 0..inner {
            f();
        }
    });
    (n * inner) as f64 / t.cycles
}

/// Section 5: Bloom filter probe rates and false-positive rates.
fn bloom_table() {
    const N: usize = 1 << 16;
    let mut rng = Rng(77);
    // Random probe keys; top bit set, so none was inserted.
    let keys64: Vec<u64> = (0..N).map(|_| rng.next() | 1 << 63).collect();
    let keys32: Vec<u32> = keys64.iter().map(|&k| k as u32).collect();
    let levels: Vec<Level> = Level::supported();
    let sizes = [
        (16usize << 10, "L1, 16 KiB"),
        (256 << 10, "L2, 256 KiB"),
        (64 << 20, "DRAM, 64 MiB"),
    ];
    let filters: Vec<BloomFilter> = sizes
        .iter()
        .map(|&(b, _)| bloom_of_size(b, || rng.next() >> 1))
        .collect();
    println!(
        "\n### Bloom filter probe, keys per core cycle (2^16 random keys per call, filter at design load for fpr 0.01)\n"
    );
    let head: Vec<String> = sizes
        .iter()
        .zip(&filters)
        .map(|(&(_, name), f)| format!("{name} (k = {})", f.k()))
        .collect();
    println!("| keys | level | {} |", head.join(" | "));
    println!("|---|---|{}", "---|".repeat(sizes.len()));
    for wide in [false, true] {
        for &level in &levels {
            let cells: Vec<String> = filters
                .iter()
                .map(|f| {
                    let inner = if level == Level::Scalar || f.size_bytes() > 1 << 20 {
                        2
                    } else {
                        10
                    };
                    let r = if wide {
                        keys_per_cycle(N, inner, || {
                            black_box(with_level(level, || f.probe(black_box(&keys64))));
                        })
                    } else {
                        keys_per_cycle(N, inner, || {
                            black_box(with_level(level, || f.probe_u32(black_box(&keys32))));
                        })
                    };
                    format!("{r:.3}")
                })
                .collect();
            let what = if wide {
                "u64 (`probe`)"
            } else {
                "u32 (`probe_u32`)"
            };
            println!("| {what} | {level:?} | {} |", cells.join(" | "));
        }
    }

    println!(
        "\n### False-positive rates at the design size: register-blocked filter vs parquet `Sbbf`\n"
    );
    println!(
        "Random keys (top bit clear) inserted, 2^22 random keys with the top bit set probed; \
         \"1..n\": keys 1..=n inserted, n+1..n+2^22 probed. Probe rates: 2^16 random keys per \
         call at the default level (`probe`, u64 keys) and parquet's `Sbbf::check` on the same \
         keys as i64 (scalar, xxHash64 per key).\n"
    );
    println!(
        "| n | design fpr | bytes | bits/key | k | theoretical | measured (random) | ratio | measured (1..n) | ratio | keys/cycle | Sbbf bytes | Sbbf bits/key | Sbbf measured | Sbbf keys/cycle |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    const NEG: u64 = 1 << 22;
    for fpr in [0.01, 0.001] {
        for n in [10_000usize, 100_000, 1_000_000] {
            let inserted: Vec<u64> = (0..n).map(|_| rng.next() >> 1).collect();
            let negatives: Vec<u64> = (0..NEG).map(|_| rng.next() | 1 << 63).collect();
            let mut f = BloomFilter::with_capacity(n, fpr);
            let mut sbbf = parquet::bloom_filter::Sbbf::new_with_ndv_fpp(n as u64, fpr).unwrap();
            for &k in &inserted {
                f.insert(k);
                sbbf.insert(&(k as i64));
            }
            assert!(inserted.iter().all(|&k| f.contains(k)));
            let theory = f.design_fpr();
            let measured = f.probe(&negatives).count_ones() as f64 / NEG as f64;
            let sbbf_measured = negatives
                .iter()
                .filter(|&&k| sbbf.check(&(k as i64)))
                .count() as f64
                / NEG as f64;
            let mut seq = BloomFilter::with_capacity(n, fpr);
            for k in 1..=n as u64 {
                seq.insert(k);
            }
            let seq_neg: Vec<u64> = (n as u64 + 1..n as u64 + 1 + NEG).collect();
            let seq_measured = seq.probe(&seq_neg).count_ones() as f64 / NEG as f64;
            let rate = keys_per_cycle(N, 4, || {
                black_box(f.probe(black_box(&keys64)));
            });
            let sbbf_rate = keys_per_cycle(N, 1, || {
                black_box(keys64.iter().filter(|&&k| sbbf.check(&(k as i64))).count());
            });
            let sbbf_bytes = sbbf.num_blocks() * 32;
            println!(
                "| {n} | {fpr} | {} | {:.1} | {} | {theory:.5} | {measured:.5} | {:.2} | {seq_measured:.5} | {:.2} | {rate:.3} | {sbbf_bytes} | {:.1} | {sbbf_measured:.5} | {sbbf_rate:.3} |",
                f.size_bytes(),
                f.size_bytes() as f64 * 8.0 / n as f64,
                f.k(),
                measured / theory,
                seq_measured / theory,
                sbbf_bytes as f64 * 8.0 / n as f64,
            );
        }
    }
}

fn main() {
    // `cargo bench` passes `--bench`; a name filter selects sections: fig12, byteslice, unpack,
    // range, bloom.
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let want = |s: &str| args.is_empty() || args.iter().any(|a| s.contains(a.as_str()));
    let ghz = core_ghz();
    println!(
        "core clock (dependent-add chain): {ghz:.3} GHz; TSC: {:.3} GHz; levels: {:?}; fast BMI2: {}",
        tsc_ghz(),
        Level::supported(),
        sift_bits::dispatch::fast_bmi2()
    );
    // Fig. 12 reports time ratios only and runs first: its many clock probes settle the
    // fastest-clock estimate before the sections that convert time to cycles.
    if want("fig12") {
        fig12(Level::detected(), ghz);
    }
    // More probes (~2 s) so the estimate has seen the boost clock.
    let ghz = (0..10).map(|_| core_ghz()).fold(ghz, f64::max);
    println!("\ncore clock used for cycle figures below (fastest observed so far): {ghz:.3} GHz");
    if want("unpack") {
        unpack_table(ghz);
    }
    if want("byteslice") {
        byteslice(ghz);
    }
    if want("range") {
        range_table();
    }
    if want("bloom") {
        bloom_table();
    }
    println!(
        "\nfastest core clock observed by the end: {:.3} GHz (if above the clock used, the cycle \
         figures are optimistic by at most that ratio)",
        core_ghz()
    );
}
