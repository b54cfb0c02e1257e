//! `sift inspect`: what a Sift file holds and how it is encoded, from its footer (and the
//! same for a Parquet file, with what Sift would choose for its columns).

mod parquet;

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use arrow::array::{ArrayData, make_array};
use arrow::buffer::Buffer;
use arrow::datatypes::{DataType, Field, Schema};
use serde::Serialize;
use sift_encoding::ColumnEncoding;
use sift_format::{ChunkStats, ColumnShape, Scalar, SiftFile};

use crate::display::printable_type;
use sift_io::Format;

use crate::io::Stdout;
use crate::measure::array_bytes;
use crate::table::{Align, Table, fmt_ratio, human_bytes, human_count, ratio};
use crate::ui::Ui;

/// Show the schema, layout, encodings and statistics of a Sift or Parquet file.
///
/// Per column: the encodings chosen (counted over blocks), stored bytes, the size the
/// column has as Arrow arrays in memory, the compression ratio between the two, the null
/// count and min/max from the zone maps. For fixed-width types the Arrow size is computed;
/// for strings and binaries the column is decoded to measure it (skip with --no-decode).
///
/// For a Parquet file: its row groups and column chunks (encodings, codec, compressed and
/// uncompressed sizes), and per column the cascade Sift's encoder chooses for the first
/// 64Ki rows of the first row group, with its size next to Parquet's for those rows.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  \
    sift inspect lineitem.sift\n  \
    sift inspect lineitem.sift --blocks\n  \
    sift inspect lineitem.sift --json | jq '.columns[] | {name, ratio}'\n  \
    sift inspect lineitem.parquet --blocks")]
pub struct InspectArgs {
    /// The file (.sift or .parquet).
    pub file: PathBuf,
    /// Print JSON instead of tables.
    #[arg(long)]
    pub json: bool,
    /// Also list every block: per column its encoding, bytes, nulls, min and max (for
    /// Parquet, every column chunk of every row group).
    #[arg(long)]
    pub blocks: bool,
    /// Do not decode variable-length columns to measure their Arrow size (for Parquet, do
    /// not decode the first row group to try Sift's encodings).
    #[arg(long)]
    pub no_decode: bool,
    /// List the encoding cascade chosen for every column and block, with its parameters
    /// (bit widths, dictionary sizes, run and exception counts).
    #[arg(long)]
    pub schemes: bool,
}

#[derive(Debug, Serialize)]
struct FileReport {
    path: String,
    file_bytes: u64,
    format_version: u32,
    created_by: String,
    num_rows: u64,
    num_blocks: usize,
    /// Bytes of all column segments (the file minus magic, footer and trailer).
    stored_bytes: u64,
    /// Arrow in-memory size of all columns, if known for every column.
    arrow_bytes: Option<u64>,
    /// `arrow_bytes / stored_bytes`.
    ratio: Option<f64>,
    metadata: BTreeMap<String, String>,
    columns: Vec<ColumnReport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    blocks: Option<Vec<BlockReport>>,
}

#[derive(Debug, Serialize)]
struct ColumnReport {
    index: usize,
    name: String,
    data_type: String,
    nullable: bool,
    /// Encoding cascades (as `ColumnEncoding::shape`, without parameters) with the number
    /// of blocks using each, most used first.
    encodings: Vec<EncodingUse>,
    stored_bytes: u64,
    arrow_bytes: Option<u64>,
    ratio: Option<f64>,
    null_count: u64,
    min: Option<String>,
    max: Option<String>,
    has_nan: bool,
}

#[derive(Debug, Serialize)]
struct EncodingUse {
    encoding: String,
    blocks: usize,
}

#[derive(Debug, Serialize)]
struct BlockReport {
    index: usize,
    first_row: u64,
    rows: u32,
    stored_bytes: u64,
    columns: Vec<BlockColumnReport>,
}

#[derive(Debug, Serialize)]
struct BlockColumnReport {
    name: String,
    encoding: String,
    /// File offset of the chunk's first segment (absent for chunks without segments).
    offset: Option<u64>,
    stored_bytes: u64,
    null_count: u64,
    min: Option<String>,
    max: Option<String>,
    has_nan: bool,
    /// The chunk's non-null values never decrease (integer-like columns).
    sorted: bool,
}

pub fn run(args: &InspectArgs, ui: &Ui) -> Result<()> {
    // Any other name is opened as a Sift file (which is what it says if it is not one).
    match Format::of(&args.file) {
        Ok(Format::Parquet) => {
            let mut out = Stdout::new();
            parquet::run(args, &mut out)?;
            out.flush()?;
            return Ok(());
        }
        Ok(f @ (Format::Csv | Format::ArrowFile | Format::ArrowStream)) => bail!(
            "{}: sift inspect reads Sift and Parquet files, not {} files (convert it first: \
             sift convert {} OUT.sift)",
            args.file.display(),
            f.name(),
            args.file.display()
        ),
        _ => {}
    }
    let file = SiftFile::open(&args.file).context("cannot open the Sift file")?;
    let report = build_report(&file, args, ui)?;
    let mut out = Stdout::new();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &report)
            .with_context(|| format!("cannot print the report on {}", args.file.display()))?;
        writeln!(out)?;
    } else {
        print_report(&mut out, &report)?;
        if args.schemes {
            print_schemes(&mut out, &file)?;
        }
    }
    out.flush()?;
    Ok(())
}

fn build_report(file: &SiftFile, args: &InspectArgs, ui: &Ui) -> Result<FileReport> {
    let footer = file.decode_footer()?;
    // Sizes and bounds are those of the stored values (a dictionary column's value type;
    // a nested column's presence or lengths, and its nodes' own columns); the type shown
    // is the one written. Arrow sizes are measured for the columns of one value per row.
    let chunk_types = (0..file.num_columns())
        .map(|c| {
            let f = file.field(c)?;
            let dt = f.ty.to_arrow().map_err(|e| anyhow::anyhow!(e))?;
            Ok(Field::new(&f.name, dt, f.nullable))
        })
        .collect::<Result<Vec<_>>>()?;
    let schema = Schema::new(chunk_types);
    let flat = (0..file.num_columns())
        .map(|c| Ok(file.column_shape(c)? == ColumnShape::Flat))
        .collect::<Result<Vec<bool>>>()?;
    let decode_cols: Vec<usize> = (0..schema.fields().len())
        .filter(|&c| !args.no_decode && flat[c] && is_variable(schema.field(c).data_type()))
        .collect();
    let progress = ui.progress(
        Some((decode_cols.len() * file.num_blocks()) as u64),
        "chunks",
        "measuring",
    );

    let mut columns = Vec::with_capacity(schema.fields().len());
    for (c, field) in schema.fields().iter().enumerate() {
        let dt = field.data_type();
        let mut encodings: Vec<EncodingUse> = Vec::new();
        let mut stored = 0u64;
        let mut nulls = 0u64;
        let mut has_nan = false;
        let mut min: Option<Scalar> = None;
        let mut max: Option<Scalar> = None;
        let mut arrow = if decode_cols.contains(&c) || (flat[c] && !is_variable(dt)) {
            Some(0u64)
        } else {
            None
        };
        for (b, block) in footer.blocks.iter().enumerate() {
            let Some(chunk) = block.columns.get(c) else {
                continue;
            };
            let name = chunk.encoding.shape();
            match encodings.iter_mut().find(|e| e.encoding == name) {
                Some(e) => e.blocks += 1,
                None => encodings.push(EncodingUse {
                    encoding: name,
                    blocks: 1,
                }),
            }
            stored += chunk.stored_bytes();
            nulls += chunk.stats.null_count;
            has_nan |= chunk.stats.has_nan;
            min = merge(min, chunk.stats.min.as_ref(), Ordering::Less);
            max = merge(max, chunk.stats.max.as_ref(), Ordering::Greater);
            if let Some(total) = arrow.as_mut() {
                *total += if is_variable(dt) {
                    let array = file.read_chunk(b, c).with_context(|| {
                        format!(
                            "cannot decode block {b} column '{}' of {}",
                            field.name(),
                            args.file.display()
                        )
                    })?;
                    progress.inc(1);
                    array_bytes(array.as_ref())
                } else {
                    fixed_bytes(dt, u64::from(block.rows), &chunk.stats)
                };
            }
        }
        encodings.sort_by(|a, b| b.blocks.cmp(&a.blocks).then(a.encoding.cmp(&b.encoding)));
        columns.push(ColumnReport {
            index: c,
            name: field.name().clone(),
            data_type: file.project_schema(&[c])?.field(0).data_type().to_string(),
            nullable: field.is_nullable(),
            encodings,
            stored_bytes: stored,
            arrow_bytes: arrow,
            ratio: arrow.and_then(|a| ratio(a, stored)),
            null_count: nulls,
            min: min.as_ref().map(|s| show_scalar(s, dt)),
            max: max.as_ref().map(|s| show_scalar(s, dt)),
            has_nan,
        });
    }
    progress.finish_and_clear();

    let blocks = (args.blocks || (args.schemes && args.json)).then(|| {
        let mut first_row = 0u64;
        footer
            .blocks
            .iter()
            .enumerate()
            .map(|(b, block)| {
                let report = BlockReport {
                    index: b,
                    first_row,
                    rows: block.rows,
                    stored_bytes: block.columns.iter().map(|c| c.stored_bytes()).sum(),
                    columns: block
                        .columns
                        .iter()
                        .zip(schema.fields())
                        .map(|(chunk, field)| BlockColumnReport {
                            name: field.name().clone(),
                            encoding: chunk.encoding.describe(),
                            offset: chunk.segments.first().map(|s| s.offset),
                            stored_bytes: chunk.stored_bytes(),
                            null_count: chunk.stats.null_count,
                            min: chunk
                                .stats
                                .min
                                .as_ref()
                                .map(|s| show_scalar(s, field.data_type())),
                            max: chunk
                                .stats
                                .max
                                .as_ref()
                                .map(|s| show_scalar(s, field.data_type())),
                            has_nan: chunk.stats.has_nan,
                            sorted: chunk.stats.sorted,
                        })
                        .collect(),
                };
                first_row += u64::from(block.rows);
                report
            })
            .collect()
    });

    let stored_bytes: u64 = columns.iter().map(|c| c.stored_bytes).sum();
    let arrow_bytes: Option<u64> = columns.iter().map(|c| c.arrow_bytes).sum();
    Ok(FileReport {
        path: args.file.display().to_string(),
        file_bytes: file.file_len(),
        format_version: file.format_version(),
        created_by: footer.created_by.clone(),
        num_rows: file.num_rows(),
        num_blocks: file.num_blocks(),
        stored_bytes,
        arrow_bytes,
        ratio: arrow_bytes.and_then(|a| ratio(a, stored_bytes)),
        metadata: footer.metadata.iter().cloned().collect(),
        columns,
        blocks,
    })
}

/// The cascade of every column in every block, consecutive blocks with the same cascade
/// (parameters included) on one line.
fn print_schemes(out: &mut impl Write, file: &SiftFile) -> Result<()> {
    let footer = file.decode_footer()?;
    writeln!(
        out,
        "\nschemes (cascade per block, with bit widths, dictionary sizes, run and exception counts)"
    )?;
    let describe = |b: usize, c: usize| scheme_text(&footer.blocks[b].columns[c].encoding);
    for (c, field) in footer.fields.iter().enumerate() {
        writeln!(out, "{}", field.name)?;
        let mut b = 0;
        while b < footer.blocks.len() {
            let cascade = describe(b, c);
            let mut end = b + 1;
            let mut bytes = footer.blocks[b].columns[c].stored_bytes();
            while end < footer.blocks.len() && describe(end, c) == cascade {
                bytes += footer.blocks[end].columns[c].stored_bytes();
                end += 1;
            }
            let range = if end - b == 1 {
                format!("block {b}")
            } else {
                format!("blocks {b}–{}", end - 1)
            };
            writeln!(out, "  {range:<16} {:>9}  {cascade}", human_bytes(bytes))?;
            b = end;
        }
    }
    Ok(())
}

/// A chunk's cascade with its parameters: the values', then the validity's when the chunk
/// has one.
pub(crate) fn scheme_text(enc: &ColumnEncoding) -> String {
    match enc.validity_describe() {
        Some(v) => format!("{}  validity {v}", enc.describe()),
        None => enc.describe(),
    }
}

fn print_report(out: &mut impl Write, r: &FileReport) -> Result<()> {
    writeln!(out, "file        {}", r.path)?;
    writeln!(
        out,
        "size        {} ({} bytes; column data {})",
        human_bytes(r.file_bytes),
        human_count(r.file_bytes),
        human_bytes(r.stored_bytes)
    )?;
    writeln!(
        out,
        "rows        {} in {} block{}",
        human_count(r.num_rows),
        human_count(r.num_blocks as u64),
        if r.num_blocks == 1 { "" } else { "s" }
    )?;
    writeln!(
        out,
        "created by  {} (format version {})",
        r.created_by, r.format_version
    )?;
    if let Some(a) = r.arrow_bytes {
        writeln!(
            out,
            "as Arrow    {} in memory, compression ratio {}",
            human_bytes(a),
            fmt_ratio(r.ratio)
        )?;
    }
    for (k, v) in &r.metadata {
        writeln!(out, "metadata    {k} = {}", clip(v, 60))?;
    }
    writeln!(out)?;

    let mut t = Table::new(&[
        ("#", Align::Right),
        ("column", Align::Left),
        ("type", Align::Left),
        ("null?", Align::Left),
        ("encodings (blocks)", Align::Left),
        ("stored", Align::Right),
        ("as Arrow", Align::Right),
        ("ratio", Align::Right),
        ("nulls", Align::Right),
        ("min", Align::Left),
        ("max", Align::Left),
    ]);
    for c in &r.columns {
        let encodings: Vec<String> = c
            .encodings
            .iter()
            .map(|e| format!("{} ×{}", e.encoding, e.blocks))
            .collect();
        t.row(vec![
            c.index.to_string(),
            c.name.clone(),
            c.data_type.clone(),
            if c.nullable { "yes" } else { "no" }.into(),
            encodings.join(", "),
            human_bytes(c.stored_bytes),
            c.arrow_bytes.map_or_else(|| "?".into(), human_bytes),
            fmt_ratio(c.ratio),
            human_count(c.null_count),
            show_bound(c.min.as_deref(), false),
            show_bound(c.max.as_deref(), c.has_nan),
        ]);
    }
    write!(out, "{t}")?;

    if let Some(blocks) = &r.blocks {
        writeln!(out)?;
        let mut t = Table::new(&[
            ("block", Align::Right),
            ("first row", Align::Right),
            ("rows", Align::Right),
            ("column", Align::Left),
            ("encoding", Align::Left),
            ("offset", Align::Right),
            ("stored", Align::Right),
            ("nulls", Align::Right),
            ("min", Align::Left),
            ("max", Align::Left),
        ]);
        for b in blocks {
            for (i, c) in b.columns.iter().enumerate() {
                let first = i == 0;
                t.row(vec![
                    if first {
                        b.index.to_string()
                    } else {
                        String::new()
                    },
                    if first {
                        human_count(b.first_row)
                    } else {
                        String::new()
                    },
                    if first {
                        human_count(u64::from(b.rows))
                    } else {
                        String::new()
                    },
                    c.name.clone(),
                    c.encoding.clone(),
                    c.offset.map_or_else(|| "-".into(), |o| o.to_string()),
                    human_bytes(c.stored_bytes),
                    human_count(c.null_count),
                    show_bound(c.min.as_deref(), false),
                    show_bound(c.max.as_deref(), c.has_nan),
                ]);
            }
        }
        write!(out, "{t}")?;
    }
    Ok(())
}

fn show_bound(v: Option<&str>, has_nan: bool) -> String {
    let s = v.map_or_else(|| "-".to_string(), |s| clip(s, 28));
    if has_nan { format!("{s} (+NaN)") } else { s }
}

/// At most `max` characters, with an ellipsis if cut.
fn clip(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut c: String = s.chars().take(max - 1).collect();
        c.push('…');
        c
    }
}

/// Strings and binaries: their Arrow size depends on the data, not just the row count.
fn is_variable(dt: &DataType) -> bool {
    sift_encoding::is_byte_string(dt) && !matches!(dt, DataType::FixedSizeBinary(_))
}

/// Arrow bytes of `rows` values of a fixed-width type, with a validity bitmap if the chunk
/// has nulls (as the decoder produces it).
fn fixed_bytes(dt: &DataType, rows: u64, stats: &ChunkStats) -> u64 {
    let values = match dt {
        DataType::Null => return 0,
        DataType::Boolean => rows.div_ceil(8),
        DataType::FixedSizeBinary(w) => rows * u64::try_from(*w).unwrap_or(0),
        other => rows * other.primitive_width().unwrap_or(0) as u64,
    };
    let validity = if stats.null_count > 0 {
        rows.div_ceil(8)
    } else {
        0
    };
    values + validity
}

/// Folds a chunk's bound into the running bound: keeps the smaller (`Less`) or the larger
/// (`Greater`). Bounds of different kinds (a damaged footer) leave the running bound as is.
fn merge(acc: Option<Scalar>, next: Option<&Scalar>, keep: Ordering) -> Option<Scalar> {
    match (acc, next) {
        (None, n) => n.cloned(),
        (Some(a), None) => Some(a),
        (Some(a), Some(n)) => match compare(n, &a) {
            Some(o) if o == keep => Some(n.clone()),
            _ => Some(a),
        },
    }
}

fn compare(a: &Scalar, b: &Scalar) -> Option<Ordering> {
    match (a, b) {
        (Scalar::Int(a), Scalar::Int(b)) => Some(a.cmp(b)),
        (Scalar::Float(a), Scalar::Float(b)) => Some(a.total_cmp(b)),
        (Scalar::Bool(a), Scalar::Bool(b)) => Some(a.cmp(b)),
        (Scalar::Bytes(a), Scalar::Bytes(b)) => Some(a.cmp(b)),
        _ => None,
    }
}

/// A zone-map bound as a value of the column's type: dates as dates, decimals with their
/// scale, strings as text, binaries as hex.
fn show_scalar(s: &Scalar, dt: &DataType) -> String {
    match s {
        Scalar::Int(v) => int_as(*v, dt).unwrap_or_else(|| v.to_string()),
        Scalar::Float(v) => match dt {
            // Debug keeps exponents short (`-1e300`) and shows `-0.0`.
            DataType::Float32 => format!("{:?}", *v as f32),
            _ => format!("{v:?}"),
        },
        Scalar::Bool(v) => v.to_string(),
        Scalar::Bytes(b) => match dt {
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
                String::from_utf8_lossy(b).escape_debug().to_string()
            }
            _ => b.iter().map(|x| format!("{x:02x}")).collect(),
        },
    }
}

/// Formats an integer bound with Arrow's display of `dt` (dates, times, decimals …).
fn int_as(v: i128, dt: &DataType) -> Option<String> {
    let width = dt.primitive_width()?;
    let bytes = v.to_le_bytes();
    let data = ArrayData::builder(printable_type(dt))
        .len(1)
        .add_buffer(Buffer::from(bytes.get(..width)?.to_vec()))
        .build()
        .ok()?;
    let array = make_array(data);
    arrow::util::display::array_value_to_string(array.as_ref(), 0).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::datatypes::TimeUnit;

    #[test]
    fn bounds_show_as_their_type() {
        assert_eq!(show_scalar(&Scalar::Int(-5), &DataType::Int8), "-5");
        assert_eq!(
            show_scalar(&Scalar::Int(u64::MAX as i128), &DataType::UInt64),
            u64::MAX.to_string()
        );
        assert_eq!(
            show_scalar(&Scalar::Int(9568), &DataType::Date32),
            "1996-03-13"
        );
        assert_eq!(
            show_scalar(&Scalar::Int(2116823), &DataType::Decimal128(15, 2)),
            "21168.23"
        );
        assert_eq!(
            show_scalar(
                &Scalar::Int(1_000_000),
                &DataType::Timestamp(TimeUnit::Millisecond, None)
            ),
            "1970-01-01T00:16:40"
        );
        assert_eq!(
            show_scalar(
                &Scalar::Int(3_600_000),
                &DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into()))
            ),
            "1970-01-01T01:00:00Z"
        );
        assert_eq!(
            show_scalar(&Scalar::Float(0.1f32 as f64), &DataType::Float32),
            "0.1"
        );
        assert_eq!(
            show_scalar(&Scalar::Bytes(b"a\nb".to_vec()), &DataType::Utf8),
            "a\\nb"
        );
        assert_eq!(
            show_scalar(&Scalar::Bytes(vec![0, 255]), &DataType::Binary),
            "00ff"
        );
    }

    #[test]
    fn merge_keeps_extremes() {
        let m = merge(None, Some(&Scalar::Int(3)), Ordering::Less);
        let m = merge(m, Some(&Scalar::Int(1)), Ordering::Less);
        let m = merge(m, Some(&Scalar::Int(2)), Ordering::Less);
        let m = merge(m, None, Ordering::Less);
        assert_eq!(m, Some(Scalar::Int(1)));
        let m = merge(
            Some(Scalar::Float(1.0)),
            Some(&Scalar::Float(2.0)),
            Ordering::Greater,
        );
        assert_eq!(m, Some(Scalar::Float(2.0)));
    }
}
