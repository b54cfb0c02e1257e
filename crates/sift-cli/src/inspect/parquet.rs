//! `sift inspect` on a Parquet file: its row groups and column chunks (encodings, codecs,
//! sizes) from the footer, and next to each column what Sift's encoder chooses for the
//! same values (the first block's worth of rows of the first row group).

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};
use arrow::array::{Array, ArrayRef};
use arrow::datatypes::DataType;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::parquet_column;
use parquet::file::metadata::{ColumnChunkMetaData, ParquetMetaData};
use parquet::file::reader::Length;
use serde::Serialize;
use sift_format::MAX_BLOCK_ROWS;
use sift_scan::ParquetFile;

use super::{InspectArgs, scheme_text};
use crate::table::{Align, Table, fmt_ratio, human_bytes, human_count, ratio};

#[derive(Debug, Serialize)]
struct ParquetReport {
    path: String,
    format: &'static str,
    file_bytes: u64,
    created_by: Option<String>,
    num_rows: u64,
    num_row_groups: usize,
    compressed_bytes: u64,
    uncompressed_bytes: u64,
    columns: Vec<ColumnReport>,
    row_groups: Vec<RowGroupReport>,
}

/// A leaf column over all row groups.
#[derive(Debug, Serialize)]
struct ColumnReport {
    index: usize,
    /// Dotted path (the name, for a top-level column).
    name: String,
    /// The Arrow type the Parquet reader gives the column, for a top-level column.
    data_type: Option<String>,
    physical_type: String,
    /// Encodings used by any row group's chunk.
    encodings: Vec<String>,
    codecs: Vec<String>,
    compressed_bytes: u64,
    uncompressed_bytes: u64,
    /// What Sift's encoder chooses for the first rows of the first row group.
    sift: Option<SiftTrial>,
}

#[derive(Debug, Serialize)]
struct SiftTrial {
    rows: usize,
    /// The cascade (as `inspect --schemes` prints it), or why Sift cannot store the column.
    scheme: String,
    /// Sift's bytes for those rows (absent if the column cannot be stored).
    bytes: Option<u64>,
    /// The first row group's compressed chunk, prorated to those rows.
    parquet_bytes: u64,
}

#[derive(Debug, Serialize)]
struct RowGroupReport {
    index: usize,
    first_row: u64,
    rows: u64,
    compressed_bytes: u64,
    uncompressed_bytes: u64,
    columns: Vec<ChunkReport>,
}

#[derive(Debug, Serialize)]
struct ChunkReport {
    name: String,
    encodings: Vec<String>,
    codec: String,
    offset: u64,
    compressed_bytes: u64,
    uncompressed_bytes: u64,
}

/// Prints the report on a Parquet file.
pub(super) fn run(args: &InspectArgs, out: &mut impl Write) -> Result<()> {
    let report = build_report(&args.file, !args.no_decode)?;
    if args.json {
        serde_json::to_writer_pretty(&mut *out, &report)
            .with_context(|| format!("cannot print the report on {}", args.file.display()))?;
        writeln!(out)?;
    } else {
        print_report(out, &report, args.blocks)?;
    }
    Ok(())
}

fn size(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

fn encodings(chunk: &ColumnChunkMetaData) -> Vec<String> {
    chunk.encodings().map(|e| format!("{e:?}")).collect()
}

fn build_report(path: &Path, try_sift: bool) -> Result<ParquetReport> {
    let file =
        ParquetFile::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let file_bytes = file.len();
    let builder = file
        .into_reader()
        .with_context(|| format!("cannot open {} as Parquet", path.display()))?;
    let meta = builder.metadata().clone();
    let trials = if try_sift {
        sift_trials(builder, &meta).with_context(|| {
            format!(
                "cannot read the first row group of {} to try Sift's encodings (skip with --no-decode)",
                path.display()
            )
        })?
    } else {
        Vec::new()
    };

    let descr = meta.file_metadata().schema_descr();
    let arrow_types = leaf_arrow_types(&meta);
    let mut columns: Vec<ColumnReport> = descr
        .columns()
        .iter()
        .enumerate()
        .map(|(i, c)| ColumnReport {
            index: i,
            name: c.path().string(),
            data_type: arrow_types.get(i).cloned().flatten(),
            physical_type: format!("{:?}", c.physical_type()),
            encodings: Vec::new(),
            codecs: Vec::new(),
            compressed_bytes: 0,
            uncompressed_bytes: 0,
            sift: None,
        })
        .collect();
    for (leaf, trial) in trials {
        if let Some(c) = columns.get_mut(leaf) {
            c.sift = Some(trial);
        }
    }
    let mut row_groups = Vec::with_capacity(meta.num_row_groups());
    let mut first_row = 0u64;
    for (g, group) in meta.row_groups().iter().enumerate() {
        let mut chunks = Vec::with_capacity(group.num_columns());
        for (c, chunk) in group.columns().iter().enumerate() {
            let report = ChunkReport {
                name: chunk.column_path().string(),
                encodings: encodings(chunk),
                codec: sift_scan::codec_name(chunk.compression()),
                offset: size(
                    chunk
                        .dictionary_page_offset()
                        .unwrap_or(chunk.data_page_offset()),
                ),
                compressed_bytes: size(chunk.compressed_size()),
                uncompressed_bytes: size(chunk.uncompressed_size()),
            };
            if let Some(column) = columns.get_mut(c) {
                for e in &report.encodings {
                    if !column.encodings.contains(e) {
                        column.encodings.push(e.clone());
                    }
                }
                if !column.codecs.contains(&report.codec) {
                    column.codecs.push(report.codec.clone());
                }
                column.compressed_bytes += report.compressed_bytes;
                column.uncompressed_bytes += report.uncompressed_bytes;
            }
            chunks.push(report);
        }
        let rows = size(group.num_rows());
        row_groups.push(RowGroupReport {
            index: g,
            first_row,
            rows,
            compressed_bytes: chunks.iter().map(|c| c.compressed_bytes).sum(),
            uncompressed_bytes: chunks.iter().map(|c| c.uncompressed_bytes).sum(),
            columns: chunks,
        });
        first_row += rows;
    }
    Ok(ParquetReport {
        path: path.display().to_string(),
        format: "parquet",
        file_bytes,
        created_by: meta.file_metadata().created_by().map(str::to_string),
        num_rows: size(meta.file_metadata().num_rows()),
        num_row_groups: meta.num_row_groups(),
        compressed_bytes: columns.iter().map(|c| c.compressed_bytes).sum(),
        uncompressed_bytes: columns.iter().map(|c| c.uncompressed_bytes).sum(),
        columns,
        row_groups,
    })
}

/// Per leaf column, the Arrow type of the top-level field it is (none for nested leaves).
fn leaf_arrow_types(meta: &ParquetMetaData) -> Vec<Option<String>> {
    let descr = meta.file_metadata().schema_descr();
    let mut types = vec![None; descr.num_columns()];
    let Ok(schema) =
        parquet::arrow::parquet_to_arrow_schema(descr, meta.file_metadata().key_value_metadata())
    else {
        return types;
    };
    for field in schema.fields() {
        if let Some((leaf, f)) = parquet_column(descr, &schema, field.name())
            && let Some(slot) = types.get_mut(leaf)
        {
            *slot = Some(f.data_type().to_string());
        }
    }
    types
}

/// Sift's encoding of the first block's worth of rows of the first row group, per leaf
/// column: `(leaf index, trial)`.
fn sift_trials(
    builder: ParquetRecordBatchReaderBuilder<ParquetFile>,
    meta: &ParquetMetaData,
) -> Result<Vec<(usize, SiftTrial)>> {
    let Some(group) = meta.row_groups().first() else {
        return Ok(Vec::new());
    };
    let schema = builder.schema().clone();
    let mut reader = builder
        .with_row_groups(vec![0])
        .with_batch_size(MAX_BLOCK_ROWS)
        .build()?;
    let Some(batch) = reader.next().transpose()? else {
        return Ok(Vec::new());
    };
    let descr = meta.file_metadata().schema_descr();
    let group_rows = size(group.num_rows()).max(1);
    let rows = batch.num_rows();
    let mut trials = Vec::new();
    for leaf in 0..descr.num_columns() {
        // The top-level column the leaf belongs to; a leaf of a nested column is not a
        // column of its own, and Sift stores no nested types.
        let root = descr.get_column_root_idx(leaf);
        let Some(field) = schema.fields().get(root) else {
            continue;
        };
        let (scheme, bytes) = match parquet_column(descr, &schema, field.name()) {
            Some((l, _)) if l == leaf => match sift_encode(batch.column(root)) {
                Ok((scheme, bytes)) => (scheme, Some(bytes)),
                Err(why) => (why, None),
            },
            _ => (format!("not stored by Sift ({})", field.data_type()), None),
        };
        let parquet_bytes = group
            .columns()
            .get(leaf)
            .map_or(0, |c| size(c.compressed_size()) * rows as u64 / group_rows);
        trials.push((
            leaf,
            SiftTrial {
                rows,
                scheme,
                bytes,
                parquet_bytes,
            },
        ));
    }
    Ok(trials)
}

/// Runs Sift's encoder on one column as the writer would (a dictionary as its values):
/// the cascade chosen and its size, or why the column cannot be stored.
fn sift_encode(array: &ArrayRef) -> std::result::Result<(String, u64), String> {
    let values = match array.data_type() {
        DataType::Dictionary(_, values) => {
            arrow::compute::cast(array, values).map_err(|e| e.to_string())?
        }
        _ => array.clone(),
    };
    if sift_format::ColumnType::from_arrow(values.data_type()).is_none() {
        return Err(format!("not stored by Sift ({})", array.data_type()));
    }
    let encoded = sift_encoding::encode_array(values.as_ref()).map_err(|e| e.to_string())?;
    let bytes = encoded.buffers.iter().map(|b| b.len() as u64).sum();
    Ok((scheme_text(&encoded.encoding), bytes))
}

fn print_report(out: &mut impl Write, r: &ParquetReport, blocks: bool) -> Result<()> {
    writeln!(out, "file        {} (Parquet)", r.path)?;
    writeln!(
        out,
        "size        {} ({} bytes; column chunks {} compressed, {} uncompressed)",
        human_bytes(r.file_bytes),
        human_count(r.file_bytes),
        human_bytes(r.compressed_bytes),
        human_bytes(r.uncompressed_bytes)
    )?;
    writeln!(
        out,
        "rows        {} in {} row group{}",
        human_count(r.num_rows),
        human_count(r.num_row_groups as u64),
        if r.num_row_groups == 1 { "" } else { "s" }
    )?;
    if let Some(by) = &r.created_by {
        writeln!(out, "created by  {by}")?;
    }
    writeln!(out)?;

    let trial_rows = r
        .columns
        .iter()
        .find_map(|c| c.sift.as_ref().map(|t| t.rows));
    let sift_header = match trial_rows {
        Some(n) => format!("Sift on the first {} rows", human_count(n as u64)),
        None => "Sift".to_string(),
    };
    let mut t = Table::new(&[
        ("#", Align::Right),
        ("column", Align::Left),
        ("type", Align::Left),
        ("physical", Align::Left),
        ("encodings", Align::Left),
        ("codec", Align::Left),
        ("compressed", Align::Right),
        ("uncompressed", Align::Right),
        ("Parquet ≈", Align::Right),
        ("Sift", Align::Right),
        ("Parquet/Sift", Align::Right),
        (&sift_header, Align::Left),
    ]);
    for c in &r.columns {
        let trial = c.sift.as_ref();
        t.row(vec![
            c.index.to_string(),
            c.name.clone(),
            c.data_type.clone().unwrap_or_else(|| "-".into()),
            c.physical_type.clone(),
            c.encodings.join(", "),
            c.codecs.join(", "),
            human_bytes(c.compressed_bytes),
            human_bytes(c.uncompressed_bytes),
            trial.map_or_else(|| "-".into(), |t| human_bytes(t.parquet_bytes)),
            trial
                .and_then(|t| t.bytes)
                .map_or_else(|| "-".into(), human_bytes),
            fmt_ratio(trial.and_then(|t| ratio(t.parquet_bytes, t.bytes?))),
            trial.map_or_else(|| "-".into(), |t| t.scheme.clone()),
        ]);
    }
    write!(out, "{t}")?;
    if trial_rows.is_some() {
        writeln!(
            out,
            "(Parquet ≈: the first row group's chunk prorated to the rows Sift encoded)"
        )?;
    }

    writeln!(out)?;
    let mut t = Table::new(&[
        ("row group", Align::Right),
        ("first row", Align::Right),
        ("rows", Align::Right),
        ("column", Align::Left),
        ("encodings", Align::Left),
        ("codec", Align::Left),
        ("offset", Align::Right),
        ("compressed", Align::Right),
        ("uncompressed", Align::Right),
    ]);
    for g in &r.row_groups {
        t.row(vec![
            g.index.to_string(),
            human_count(g.first_row),
            human_count(g.rows),
            String::new(),
            String::new(),
            String::new(),
            String::new(),
            human_bytes(g.compressed_bytes),
            human_bytes(g.uncompressed_bytes),
        ]);
        if blocks {
            for c in &g.columns {
                t.row(vec![
                    String::new(),
                    String::new(),
                    String::new(),
                    c.name.clone(),
                    c.encodings.join(", "),
                    c.codec.clone(),
                    c.offset.to_string(),
                    human_bytes(c.compressed_bytes),
                    human_bytes(c.uncompressed_bytes),
                ]);
            }
        }
    }
    write!(out, "{t}")?;
    Ok(())
}
