//! ALP (Sift's float cascade) against BtrBlocks' Pseudodecimal, measured per column.
//!
//! Pseudodecimal is implemented here only, as a comparison; it is not part of the format.
//! Following BtrBlocks (`scheme/double/Decimal.cpp`), every double becomes the smallest
//! exponent `e` ≤ 22 with `v = digits × 10^-e` exactly and `digits` a 32-bit integer, else an
//! exception (exponent code 23, value patched in; -0.0, NaN and ±inf are always exceptions).
//! Digits, exponents and patches are then cascaded. Both sides use Sift's own cascade for
//! their integer parts, so the comparison is between the float schemes, not the integer pool.
//!
//! ```text
//! cargo run --release -p sift-encoding --example alp_vs_pseudodecimal                 # synthetic
//! cargo run --release -p sift-encoding --example alp_vs_pseudodecimal -- --synthetic price
//! cargo run --release -p sift-encoding --example alp_vs_pseudodecimal -- lineitem.arrow [col…]
//! ```
//!
//! Sizes are buffer bytes plus 8 bytes per node (the compressor's own estimate of footer
//! cost); speeds are in input bytes (8 per value) per second on one core, per-chunk best of several
//! runs, with 64Ki-value chunks as the writer uses.

use std::error::Error;
use std::fs::File;
use std::hint::black_box;
use std::time::{Duration, Instant};

use arrow::array::{Array, ArrayRef, Float64Array, Int32Array};
use arrow::datatypes::DataType;
use arrow::ipc::reader::FileReader;
use sift_encoding::{EncodedColumn, Node, encode_array};

type Res<T> = Result<T, Box<dyn Error>>;

const CHUNK: usize = 65_536;
const RUNS: usize = 7;

/// Largest Pseudodecimal exponent, and the code marking an exception.
const PDE_MAX_EXPONENT: usize = 22;
const PDE_EXCEPTION: i32 = 23;

/// The nearest doubles to 10^-i (BtrBlocks' `exact_fractions_of_ten`), padded to 32 so that
/// the decoder indexes with `e & 31` and no bounds check, as BtrBlocks does.
const FRAC10: [f64; 32] = [
    1e0, 1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-9, 1e-10, 1e-11, 1e-12, 1e-13, 1e-14,
    1e-15, 1e-16, 1e-17, 1e-18, 1e-19, 1e-20, 1e-21, 1e-22, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
    0.0,
];

/// One Pseudodecimal chunk: three cascaded children.
struct Pseudodecimal {
    digits: EncodedColumn,
    exponents: EncodedColumn,
    patches: EncodedColumn,
    converted: usize,
}

/// BtrBlocks' conversion of one double, or `None` for an exception.
fn pde_convert(v: f64) -> Option<(i32, i32)> {
    if v == 0.0 && v.is_sign_negative() {
        return None;
    }
    for (e, &frac) in FRAC10[..=PDE_MAX_EXPONENT].iter().enumerate() {
        let cd = (v / frac).round();
        // BtrBlocks stores digits as a 32-bit INTEGER.
        if cd.abs() < 2_147_483_648.0 {
            let digits = cd as i32;
            if f64::from(digits) * frac == v {
                return Some((digits, e as i32));
            }
        }
    }
    None
}

fn pde_encode(values: &[f64]) -> Res<Pseudodecimal> {
    let mut digits = Vec::with_capacity(values.len());
    let mut exponents = Vec::with_capacity(values.len());
    let mut patches = Vec::new();
    for &v in values {
        match pde_convert(v) {
            Some((d, e)) => {
                digits.push(d);
                exponents.push(e);
            }
            None => {
                exponents.push(PDE_EXCEPTION);
                patches.push(v);
            }
        }
    }
    Ok(Pseudodecimal {
        converted: digits.len(),
        digits: encode_array(&Int32Array::from(digits))?,
        exponents: encode_array(&Int32Array::from(exponents))?,
        patches: encode_array(&Float64Array::from(patches))?,
    })
}

fn decode_child(c: &EncodedColumn, dt: &DataType, len: usize) -> Res<ArrayRef> {
    Ok(c.chunk(dt, len).decode()?)
}

fn pde_decode(p: &Pseudodecimal, len: usize) -> Res<Vec<f64>> {
    let digits = decode_child(&p.digits, &DataType::Int32, p.converted)?;
    let exponents = decode_child(&p.exponents, &DataType::Int32, len)?;
    let patches = decode_child(&p.patches, &DataType::Float64, len - p.converted)?;
    let (Some(digits), Some(exponents), Some(patches)) = (
        digits.as_any().downcast_ref::<Int32Array>(),
        exponents.as_any().downcast_ref::<Int32Array>(),
        patches.as_any().downcast_ref::<Float64Array>(),
    ) else {
        return Err("unexpected decoded types".into());
    };
    let (digits, patches) = (digits.values(), patches.values());
    let mut out = Vec::with_capacity(len);
    let (mut di, mut pi) = (0, 0);
    for &e in exponents.values().iter() {
        if e == PDE_EXCEPTION {
            out.push(patches[pi]);
            pi += 1;
        } else {
            out.push(f64::from(digits[di]) * FRAC10[(e as usize) & 31]);
            di += 1;
        }
    }
    Ok(out)
}

fn stored(c: &EncodedColumn) -> usize {
    let consts: usize = c
        .encoding
        .nodes
        .iter()
        .map(|n| match n {
            Node::Constant(c) => c.value.len(),
            _ => 0,
        })
        .sum();
    c.buffers.iter().map(Vec::len).sum::<usize>() + consts + 8 * c.encoding.nodes.len()
}

fn alp_decode(c: &EncodedColumn, len: usize) -> Res<ArrayRef> {
    decode_child(c, &DataType::Float64, len)
}

struct Measured {
    bytes: usize,
    encode: Duration,
    decode: Duration,
}

/// Runs `f` on every chunk, `RUNS` times each, and sums the per-chunk minimum times (robust
/// against a busy machine preempting single runs).
fn timed<C, T>(chunks: &[C], mut f: impl FnMut(&C) -> Res<T>) -> Res<(Vec<T>, Duration)> {
    let mut total = Duration::ZERO;
    let mut outs = Vec::with_capacity(chunks.len());
    for c in chunks {
        let mut best = Duration::MAX;
        let mut out = None;
        for _ in 0..RUNS {
            let t = Instant::now();
            let r = black_box(f(c)?);
            best = best.min(t.elapsed());
            out = Some(r);
        }
        total += best;
        outs.push(out.ok_or("no runs")?);
    }
    Ok((outs, total))
}

fn same_bits(a: impl IntoIterator<Item = f64>, b: &[f64]) -> bool {
    a.into_iter()
        .map(f64::to_bits)
        .eq(b.iter().map(|v| v.to_bits()))
}

fn measure_alp(chunks: &[Float64Array]) -> Res<(Measured, usize, String)> {
    let (encoded, encode) = timed(chunks, |c| Ok(encode_array(c)?))?;
    let pairs: Vec<_> = encoded.iter().zip(chunks).collect();
    let (decoded, decode) = timed(&pairs, |(e, c)| alp_decode(e, c.len()))?;
    for (d, c) in decoded.iter().zip(chunks) {
        let d = d.as_any().downcast_ref::<Float64Array>().ok_or("not f64")?;
        if !same_bits(d.values().iter().copied(), c.values()) {
            return Err("ALP round trip differs".into());
        }
    }
    // The trees chosen, most frequent first.
    let mut trees: Vec<(String, usize)> = Vec::new();
    for e in &encoded {
        let t = e.encoding.describe();
        match trees.iter_mut().find(|(s, _)| *s == t) {
            Some((_, n)) => *n += 1,
            None => trees.push((t, 1)),
        }
    }
    trees.sort_by_key(|(_, n)| std::cmp::Reverse(*n));
    let trees: Vec<String> = trees
        .into_iter()
        .take(2)
        .map(|(t, n)| format!("{t} ×{n}"))
        .collect();
    let bytes = encoded.iter().map(stored).sum();
    // Exceptions patched over an ALP node at the root.
    let exceptions = encoded
        .iter()
        .map(|e| match e.encoding.nodes.as_slice() {
            [Node::Patch(p), Node::Alp(_), ..] => p.exceptions as usize,
            _ => 0,
        })
        .sum();
    Ok((
        Measured {
            bytes,
            encode,
            decode,
        },
        exceptions,
        trees.join(", "),
    ))
}

fn measure_pde(chunks: &[Float64Array]) -> Res<(Measured, usize)> {
    let (encoded, encode) = timed(chunks, |c| pde_encode(c.values()))?;
    let pairs: Vec<_> = encoded.iter().zip(chunks).collect();
    let (decoded, decode) = timed(&pairs, |(p, c)| pde_decode(p, c.len()))?;
    for (d, c) in decoded.iter().zip(chunks) {
        if !same_bits(d.iter().copied(), c.values()) {
            return Err("Pseudodecimal round trip differs".into());
        }
    }
    let bytes = encoded
        .iter()
        .map(|p| stored(&p.digits) + stored(&p.exponents) + stored(&p.patches))
        .sum();
    let exceptions = chunks.iter().map(Array::len).sum::<usize>()
        - encoded.iter().map(|p| p.converted).sum::<usize>();
    Ok((
        Measured {
            bytes,
            encode,
            decode,
        },
        exceptions,
    ))
}

/// Synthetic columns when no file is given.
fn synthetic() -> Vec<(String, Vec<f64>)> {
    let mut state = 42u64;
    let mut next = move || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    let n = 1 << 20;
    let mut column = |name: &str, f: &dyn Fn(u64) -> f64| {
        (name.to_string(), (0..n).map(|_| f(next())).collect())
    };
    vec![
        column("price (cents/100)", &|r| {
            (90_000 + r % 10_410_000) as f64 / 100.0
        }),
        column("quantity (1..50)", &|r| (1 + r % 50) as f64),
        column("discount (0..0.10)", &|r| (r % 11) as f64 / 100.0),
        column("coordinate (6 dec.)", &|r| {
            ((r % 360_000_000) as i64 - 180_000_000) as f64 / 1e6
        }),
        column("real [20,30)", &|r| {
            20.0 + (r >> 11) as f64 / (1u64 << 53) as f64 * 10.0
        }),
    ]
}

fn from_file(path: &str, wanted: &[String]) -> Res<Vec<(String, Vec<f64>)>> {
    let reader = FileReader::try_new(File::open(path)?, None)?;
    let schema = reader.schema();
    let names: Vec<String> = schema
        .fields()
        .iter()
        .filter(|f| {
            f.data_type() == &DataType::Float64 && (wanted.is_empty() || wanted.contains(f.name()))
        })
        .map(|f| f.name().clone())
        .collect();
    let mut cols: Vec<(String, Vec<f64>)> = names.iter().map(|n| (n.clone(), Vec::new())).collect();
    for batch in reader {
        let batch = batch?;
        for (name, values) in &mut cols {
            let col = batch.column_by_name(name).ok_or("missing column")?;
            let col = col
                .as_any()
                .downcast_ref::<Float64Array>()
                .ok_or("not Float64")?;
            if col.null_count() > 0 {
                return Err(
                    format!("{name} has nulls; this comparison takes dense columns").into(),
                );
            }
            values.extend_from_slice(col.values());
        }
    }
    Ok(cols)
}

fn main() -> Res<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let cols = match args.split_first() {
        Some((path, wanted)) if path != "--synthetic" => from_file(path, wanted)?,
        Some((_, wanted)) => synthetic()
            .into_iter()
            .filter(|(n, _)| wanted.iter().all(|w| n.contains(w.as_str())))
            .collect(),
        None => synthetic(),
    };
    println!(
        "{:<20} {:>10} | {:>9} {:>10} {:>10} {:>7} | {:>9} {:>10} {:>10} {:>7} | ALP tree (chunks)",
        "column",
        "values",
        "ALP B/v",
        "comp MB/s",
        "dec MB/s",
        "ALP exc",
        "PDE B/v",
        "comp MB/s",
        "dec MB/s",
        "PDE exc"
    );
    for (name, values) in cols {
        let chunks: Vec<Float64Array> = values
            .chunks(CHUNK)
            .map(|c| Float64Array::from(c.to_vec()))
            .collect();
        let n = values.len();
        let input = (n * 8) as f64 / 1e6;
        let (alp, alp_exceptions, trees) = measure_alp(&chunks)?;
        let (pde, exceptions) = measure_pde(&chunks)?;
        let mbs = |d: Duration| input / d.as_secs_f64();
        println!(
            "{:<20} {:>10} | {:>9.3} {:>10.0} {:>10.0} {:>7} | {:>9.3} {:>10.0} {:>10.0} {:>7} | {}",
            name,
            n,
            alp.bytes as f64 / n as f64,
            mbs(alp.encode),
            mbs(alp.decode),
            alp_exceptions,
            pde.bytes as f64 / n as f64,
            mbs(pde.encode),
            mbs(pde.decode),
            exceptions,
            trees
        );
    }
    Ok(())
}
