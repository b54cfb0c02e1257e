//! Files in and out: readers that stream record batches from every supported input
//! format (Sift, Parquet, CSV, Arrow IPC), and writers that stream them into every output
//! format, atomically. The command-line tool and the Python package convert through here.

use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use arrow::array::{ArrayRef, RecordBatch, RecordBatchReader};
use arrow::compute::SortOptions;
use arrow::datatypes::{Schema, SchemaRef};
use arrow::ipc::reader::{FileReader, StreamReader};
use arrow::ipc::writer::{FileWriter, StreamWriter};
use arrow::row::{OwnedRow, RowConverter, SortField};
use parquet::arrow::{ArrowSchemaConverter, ArrowWriter, ProjectionMask};
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::metadata::SortingColumn;
use parquet::file::properties::WriterProperties;
use sift_format::{
    AlignedWriter, SiftFile, SiftWriter, TempFile, WriteOptions, check_unique_names,
};

/// A file format, recognized by the file name's extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `.sift`
    Sift,
    /// `.parquet`, `.pq`
    Parquet,
    /// `.csv` (input only)
    Csv,
    /// Arrow IPC file format: `.arrow`, `.feather`, `.ipc`
    ArrowFile,
    /// Arrow IPC stream format: `.arrows`
    ArrowStream,
}

impl Format {
    /// The format of `path`, from its extension.
    pub fn of(path: &Path) -> Result<Self> {
        let ext = path
            .extension()
            .map(|e| e.to_string_lossy().to_ascii_lowercase())
            .unwrap_or_default();
        Ok(match ext.as_str() {
            "sift" => Format::Sift,
            "parquet" | "pq" => Format::Parquet,
            "csv" => Format::Csv,
            "arrow" | "feather" | "ipc" => Format::ArrowFile,
            "arrows" => Format::ArrowStream,
            _ => bail!(
                "{}: unknown file type '.{ext}' (expected .sift, .parquet, .csv, \
                 .arrow/.feather/.ipc or .arrows)",
                path.display()
            ),
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Format::Sift => "Sift",
            Format::Parquet => "Parquet",
            Format::Csv => "CSV",
            Format::ArrowFile => "Arrow IPC file",
            Format::ArrowStream => "Arrow IPC stream",
        }
    }
}

// ------------------------------------------------------------------------------ input

/// Settings for reading inputs.
#[derive(Debug, Clone)]
pub struct InputOptions {
    /// Rows per batch where the reader lets us choose (Parquet, CSV).
    pub batch_rows: usize,
    /// Rows of a CSV file used to infer its schema.
    pub csv_infer_rows: usize,
    /// Columns to read, in this order (all if empty).
    pub columns: Vec<String>,
    /// Row groups to read, `start..end` with `None` for an open end (Parquet only; all
    /// if `None`).
    pub row_groups: Option<(usize, Option<usize>)>,
}

impl Default for InputOptions {
    fn default() -> Self {
        Self {
            batch_rows: sift_format::MAX_BLOCK_ROWS,
            csv_infer_rows: 1000,
            columns: Vec::new(),
            row_groups: None,
        }
    }
}

/// A stream of record batches from a file, never holding more than one batch.
pub struct Input {
    /// The schema of every batch.
    pub schema: SchemaRef,
    /// Total rows, when the format says so up front (for progress bars).
    pub rows: Option<u64>,
    /// The batches; errors name the file.
    pub batches: Box<dyn Iterator<Item = Result<RecordBatch>> + Send>,
    /// The order the rows come in, as far as it is known (a Sift file's columns that its
    /// writer found sorted over the whole file); empty when unknown.
    pub order: Vec<SortKey>,
}

/// One key of the order rows are in: ordered by the first key, rows tied on it by the
/// next (as SQL's `ORDER BY` and Parquet's `sorting_columns` list them).
#[derive(Debug, Clone, PartialEq)]
pub struct SortKey {
    /// The column, by name.
    pub column: String,
    /// Descending or not, and where nulls go.
    pub options: SortOptions,
}

impl SortKey {
    /// `column` ascending (nulls last).
    pub fn ascending(column: &str) -> SortKey {
        SortKey {
            column: column.to_string(),
            options: SortOptions::new(false, false),
        }
    }
}

/// The order of rows that come sorted on each of `sorted` (columns of `schema`), as keys
/// in column order: each is sorted over all rows, so also among rows tied on the ones
/// before it. Sorted columns hold no null; nulls go where SQL puts them by default.
pub fn sort_keys(schema: &Schema, sorted: &sift_scan::SortedColumns) -> Vec<SortKey> {
    (sorted.all.iter())
        .map(|&c| {
            let descending = sorted.is_descending(c);
            SortKey {
                column: schema.field(c).name().clone(),
                options: SortOptions::new(descending, descending),
            }
        })
        .collect()
}

/// Opens `path` for streaming, choosing the reader by extension.
pub fn open_input(path: &Path, options: &InputOptions) -> Result<Input> {
    let input = open_all_columns(path, options)?;
    if options.columns.is_empty() {
        return Ok(input);
    }
    let indices = options
        .columns
        .iter()
        .map(|name| {
            input.schema.index_of(name).map_err(|_| {
                let known: Vec<&str> = input
                    .schema
                    .fields()
                    .iter()
                    .map(|f| f.name().as_str())
                    .collect();
                anyhow::anyhow!(
                    "{}: no column '{name}' (columns: {})",
                    path.display(),
                    known.join(", ")
                )
            })
        })
        .collect::<Result<Vec<usize>>>()?;
    let schema = SchemaRef::new(input.schema.project(&indices)?);
    let batches = input.batches.map(move |b| Ok(b?.project(&indices)?));
    // The keys up to the first one left out: ties on the ones before it are no longer
    // ordered by the keys after it.
    let kept = (input.order.iter())
        .take_while(|k| options.columns.contains(&k.column))
        .count();
    let mut order = input.order;
    order.truncate(kept);
    Ok(Input {
        schema,
        rows: input.rows,
        batches: Box::new(batches),
        order,
    })
}

fn open_all_columns(path: &Path, options: &InputOptions) -> Result<Input> {
    let format = Format::of(path)?;
    if options.row_groups.is_some() && format != Format::Parquet {
        bail!(
            "{}: {} files have no row groups or blocks to select (Sift and Parquet files do)",
            path.display(),
            format.name()
        );
    }
    let owned = path.to_path_buf();
    let ctx = move || format!("cannot read {}", owned.display());
    match format {
        Format::Sift => {
            let file = SiftFile::open(path).context("cannot open the Sift file")?;
            let schema = file.schema()?.clone();
            let rows = Some(file.num_rows());
            let table = sift_scan::Table::open(path).context("cannot open the Sift file")?;
            let order = sort_keys(&table.schema(), &table.sorted_columns());
            Ok(Input {
                schema,
                rows,
                batches: Box::new(SiftBlocks { file, next: 0 }),
                order,
            })
        }
        Format::Parquet => {
            // Sift's checked input: a damaged footer or page header is refused before
            // the `parquet` crate's decoder can be held on it.
            let file = sift_scan::ParquetFile::open(path)
                .with_context(|| format!("cannot open {}", path.display()))?;
            let builder = file
                .into_reader()
                .with_context(|| format!("cannot open {} as Parquet", path.display()))?;
            let groups = builder.metadata().row_groups();
            let selected = match options.row_groups {
                None => 0..groups.len(),
                Some((start, end)) => start..end.unwrap_or(groups.len()),
            };
            let Some(selected_groups) = groups.get(selected.clone()) else {
                let end = options.row_groups.and_then(|(_, e)| e);
                bail!(
                    "{}: row groups {}..{} are out of range (the file has {} row group{})",
                    path.display(),
                    selected.start,
                    end.map_or(String::new(), |e| e.to_string()),
                    groups.len(),
                    if groups.len() == 1 { "" } else { "s" }
                );
            };
            let rows = selected_groups
                .iter()
                .map(|g| u64::try_from(g.num_rows()).ok())
                .sum();
            // Decode only the wanted columns; `open_input` puts them in the asked order (and
            // names an unknown one, so all are kept then).
            let schema = builder.schema().clone();
            let all = options.columns.is_empty()
                || options
                    .columns
                    .iter()
                    .any(|c| schema.field_with_name(c).is_err());
            let roots: Vec<usize> = (0..schema.fields().len())
                .filter(|&i| all || options.columns.contains(schema.field(i).name()))
                .collect();
            let mask = ProjectionMask::roots(builder.parquet_schema(), roots);
            let reader = builder
                .with_projection(mask)
                .with_row_groups(selected.collect())
                .with_batch_size(options.batch_rows)
                .build()
                .with_context(|| format!("cannot read {}", path.display()))?;
            let schema = reader.schema();
            Ok(Input {
                schema,
                rows,
                batches: Box::new(reader.map(move |b| b.with_context(&ctx))),
                order: Vec::new(),
            })
        }
        Format::Csv => {
            let format = arrow::csv::reader::Format::default().with_header(true);
            let (schema, _) = format
                .infer_schema(
                    BufReader::new(open_file(path)?),
                    Some(options.csv_infer_rows),
                )
                .with_context(|| format!("cannot infer the schema of {}", path.display()))?;
            let schema = SchemaRef::new(schema);
            let reader = arrow::csv::ReaderBuilder::new(schema.clone())
                .with_format(format)
                .with_batch_size(options.batch_rows)
                .build(BufReader::new(open_file(path)?))
                .with_context(|| format!("cannot read {}", path.display()))?;
            Ok(Input {
                schema,
                rows: None,
                batches: Box::new(reader.map(move |b| b.with_context(&ctx))),
                order: Vec::new(),
            })
        }
        Format::ArrowFile => {
            let reader = FileReader::try_new(BufReader::new(open_file(path)?), None)
                .with_context(|| format!("cannot open {} as an Arrow IPC file", path.display()))?;
            Ok(Input {
                schema: reader.schema(),
                rows: None,
                batches: Box::new(reader.map(move |b| b.with_context(&ctx))),
                order: Vec::new(),
            })
        }
        Format::ArrowStream => {
            let reader = StreamReader::try_new(BufReader::new(open_file(path)?), None)
                .with_context(|| {
                    format!("cannot open {} as an Arrow IPC stream", path.display())
                })?;
            Ok(Input {
                schema: reader.schema(),
                rows: None,
                batches: Box::new(reader.map(move |b| b.with_context(&ctx))),
                order: Vec::new(),
            })
        }
    }
}

fn open_file(path: &Path) -> Result<File> {
    File::open(path).with_context(|| format!("cannot open {}", path.display()))
}

/// The blocks of a Sift file, one batch each; owns the file so it can be boxed.
struct SiftBlocks {
    file: SiftFile,
    next: usize,
}

impl Iterator for SiftBlocks {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.next >= self.file.num_blocks() {
            return None;
        }
        let block = self.next;
        self.next += 1;
        Some(self.file.read_block(block, None).with_context(|| {
            format!(
                "cannot read block {block} of {}",
                self.file.path().display()
            )
        }))
    }
}

// ----------------------------------------------------------------------------- output

/// Parquet compression codecs offered for writing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum ParquetCompression {
    /// Zstandard, level 1 (the default).
    Zstd,
    /// Snappy.
    Snappy,
    /// Uncompressed.
    None,
}

impl ParquetCompression {
    fn codec(self) -> Compression {
        match self {
            ParquetCompression::Zstd => Compression::ZSTD(ZstdLevel::default()),
            ParquetCompression::Snappy => Compression::SNAPPY,
            ParquetCompression::None => Compression::UNCOMPRESSED,
        }
    }
}

/// Settings for writing outputs.
#[derive(Debug, Clone)]
pub struct OutputOptions {
    /// Rows per Sift block.
    pub block_rows: usize,
    /// Parquet codec.
    pub compression: ParquetCompression,
    /// Threads encoding a Sift block's columns (the file is the same for any count).
    pub threads: usize,
    /// Sift columns whose codes are stored as byte slices
    /// ([`WriteOptions::byteslice`]).
    pub byteslice: Vec<String>,
    /// The order the rows are written in, where it is known: a Parquet file declares it
    /// (each row group's `sorting_columns`, the keys up to the first that is not a
    /// top-level column of one value per row), so that readers which use it (Sift's
    /// scan drops sorts on such a column) need not sort, and every row written is
    /// checked against it: a row out of that order is an error, never a false
    /// declaration. A Sift file finds its sorted columns from the values itself; Arrow
    /// IPC files have no place for it.
    pub order: Vec<SortKey>,
}

impl Default for OutputOptions {
    fn default() -> Self {
        Self {
            block_rows: sift_format::MAX_BLOCK_ROWS,
            compression: ParquetCompression::Zstd,
            threads: 1,
            byteslice: Vec::new(),
            order: Vec::new(),
        }
    }
}

/// A file being written batch by batch. Nothing appears at the target path until
/// [`Output::finish`] succeeds; dropping an unfinished output removes its temporary file.
pub struct Output {
    path: PathBuf,
    sink: Sink,
}

enum Sink {
    Sift(SiftWriter),
    Parquet(
        ArrowWriter<AlignedWriter<File>>,
        TempFile,
        Option<OrderCheck>,
    ),
    ArrowFile(FileWriter<AlignedWriter<File>>, TempFile),
    ArrowStream(StreamWriter<AlignedWriter<File>>, TempFile),
}

impl Output {
    /// Starts writing `path` with the writer its extension names.
    pub fn create(path: &Path, schema: &SchemaRef, options: &OutputOptions) -> Result<Self> {
        let format = Format::of(path)?;
        let ctx = || format!("cannot write {}", path.display());
        // Every format, not just Sift: a later filter by name would bind to the first.
        check_unique_names(schema).with_context(ctx)?;
        let sink = match format {
            Format::Sift => {
                let options = WriteOptions {
                    block_rows: options.block_rows,
                    threads: options.threads,
                    byteslice: options.byteslice.clone(),
                };
                Sink::Sift(SiftWriter::create(path, schema.clone(), options).with_context(ctx)?)
            }
            Format::Parquet => {
                let (sorting, check) = declared_order(schema, &options.order).with_context(ctx)?;
                let (tmp, file) = TempFile::create(path).with_context(ctx)?;
                let props = WriterProperties::builder()
                    .set_compression(options.compression.codec())
                    .set_sorting_columns(sorting)
                    .build();
                let writer =
                    ArrowWriter::try_new(AlignedWriter::new(file), schema.clone(), Some(props))
                        .with_context(ctx)?;
                Sink::Parquet(writer, tmp, check)
            }
            Format::ArrowFile => {
                let (tmp, file) = TempFile::create(path).with_context(ctx)?;
                let writer =
                    FileWriter::try_new(AlignedWriter::new(file), schema).with_context(ctx)?;
                Sink::ArrowFile(writer, tmp)
            }
            Format::ArrowStream => {
                let (tmp, file) = TempFile::create(path).with_context(ctx)?;
                let writer =
                    StreamWriter::try_new(AlignedWriter::new(file), schema).with_context(ctx)?;
                Sink::ArrowStream(writer, tmp)
            }
            Format::Csv => bail!(
                "{}: writing CSV files is not supported; use `sift cat FILE --output csv`",
                path.display()
            ),
        };
        Ok(Self {
            path: path.to_path_buf(),
            sink,
        })
    }

    /// Appends a batch.
    pub fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        let ctx = || format!("cannot write {}", self.path.display());
        match &mut self.sink {
            Sink::Sift(w) => w.write(batch).with_context(ctx),
            Sink::Parquet(w, _, check) => {
                if let Some(check) = check {
                    check.check(batch).with_context(ctx)?;
                }
                w.write(batch).with_context(ctx)
            }
            Sink::ArrowFile(w, _) => w.write(batch).with_context(ctx),
            Sink::ArrowStream(w, _) => w.write(batch).with_context(ctx),
        }
    }

    /// Finishes the file and moves it into place; returns its size in bytes.
    pub fn finish(self) -> Result<u64> {
        let path = self.path;
        let ctx = || format!("cannot write {}", path.display());
        match self.sink {
            Sink::Sift(w) => Ok(w.finish().with_context(ctx)?.bytes),
            Sink::Parquet(w, tmp, _) => {
                let file = w
                    .into_inner()
                    .with_context(ctx)?
                    .into_inner()
                    .with_context(ctx)?;
                Ok(tmp.commit(file).with_context(ctx)?)
            }
            Sink::ArrowFile(mut w, tmp) => {
                w.finish().with_context(ctx)?;
                let file = w
                    .into_inner()
                    .with_context(ctx)?
                    .into_inner()
                    .with_context(ctx)?;
                Ok(tmp.commit(file).with_context(ctx)?)
            }
            Sink::ArrowStream(mut w, tmp) => {
                w.finish().with_context(ctx)?;
                let file = w
                    .into_inner()
                    .with_context(ctx)?
                    .into_inner()
                    .with_context(ctx)?;
                Ok(tmp.commit(file).with_context(ctx)?)
            }
        }
    }
}

/// The Parquet `sorting_columns` declaring `order` over `schema` (its keys up to the first
/// that is not a top-level leaf column) and the check of the rows against them; `None`
/// for both when no key can be declared.
fn declared_order(
    schema: &SchemaRef,
    order: &[SortKey],
) -> Result<(Option<Vec<SortingColumn>>, Option<OrderCheck>)> {
    if order.is_empty() {
        return Ok((None, None));
    }
    let leaves = ArrowSchemaConverter::new().convert(schema)?;
    let mut sorting = Vec::new();
    let (mut columns, mut fields) = (Vec::new(), Vec::new());
    for key in order {
        let leaf = (0..leaves.num_columns())
            .find(|&i| leaves.column(i).path().parts() == [key.column.as_str()]);
        let (Some(leaf), Ok(c)) = (leaf, schema.index_of(&key.column)) else {
            break;
        };
        sorting.push(SortingColumn {
            column_idx: i32::try_from(leaf)?,
            descending: key.options.descending,
            nulls_first: key.options.nulls_first,
        });
        columns.push(c);
        let field = SortField::new_with_options(schema.field(c).data_type().clone(), key.options);
        fields.push(field);
    }
    if sorting.is_empty() {
        return Ok((None, None));
    }
    let check = OrderCheck {
        names: order[..sorting.len()].to_vec(),
        columns,
        converter: RowConverter::new(fields)?,
        last: None,
        rows: 0,
    };
    Ok((Some(sorting), Some(check)))
}

/// The order a Parquet output declares, checked on every row written: row-format keys
/// (`arrow::row`) compare as the order does, the last row of a batch kept for the first
/// row of the next.
struct OrderCheck {
    names: Vec<SortKey>,
    columns: Vec<usize>,
    converter: RowConverter,
    last: Option<OwnedRow>,
    rows: u64,
}

impl OrderCheck {
    fn check(&mut self, batch: &RecordBatch) -> Result<()> {
        let keys: Vec<ArrayRef> = (self.columns.iter())
            .map(|&c| std::sync::Arc::clone(batch.column(c)))
            .collect();
        let rows = self.converter.convert_columns(&keys)?;
        let mut previous = self.last.as_ref().map(|r| r.row());
        for (i, row) in rows.iter().enumerate() {
            if previous.is_some_and(|p| p > row) {
                let keys: Vec<String> = (self.names.iter())
                    .map(|k| match k.options.descending {
                        true => format!("{} DESC", k.column),
                        false => k.column.clone(),
                    })
                    .collect();
                bail!(
                    "row {} is out of the order the rows were declared in ({})",
                    self.rows + i as u64,
                    keys.join(", ")
                );
            }
            previous = Some(row);
        }
        if let Some(last) = rows.iter().next_back() {
            self.last = Some(last.owned());
        }
        self.rows += batch.num_rows() as u64;
        Ok(())
    }
}

/// Whether two paths name the same existing file (converting one into the other would
/// destroy the input).
pub fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// Streams every batch of `input` into `output` and finishes it. `each` sees every batch
/// once it is written (for progress, or to cancel: its error abandons the output, which
/// then leaves nothing behind). Returns the rows and the bytes written.
pub fn copy(
    input: Input,
    mut output: Output,
    mut each: impl FnMut(&RecordBatch) -> Result<()>,
) -> Result<(u64, u64)> {
    let mut rows = 0u64;
    for batch in input.batches {
        let batch = batch?;
        output.write(&batch)?;
        rows += batch.num_rows() as u64;
        each(&batch)?;
    }
    Ok((rows, output.finish()?))
}

/// The error and its causes on one line, `outer: inner: root`, leaving out a cause whose
/// text the message already holds (some errors print their source themselves).
pub fn error_message(e: &anyhow::Error) -> String {
    let mut message = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if message.contains(&text) {
            continue;
        }
        if !message.is_empty() {
            message.push_str(": ");
        }
        message.push_str(&text);
    }
    message
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{Int64Array, ListArray, StringArray};
    use arrow::datatypes::{DataType, Field, Int64Type, Schema};

    use super::*;

    fn batch(keys: &[i64], schema: &SchemaRef) -> RecordBatch {
        let n = keys.len();
        let lists = ListArray::from_iter_primitive::<Int64Type, _, _>(
            (0..n).map(|i| Some(vec![Some(i as i64)])),
        );
        let names = StringArray::from_iter_values(keys.iter().map(|k| format!("n{k}")));
        let columns: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from(keys.to_vec())),
            Arc::new(lists),
            Arc::new(names),
        ];
        RecordBatch::try_new(Arc::clone(schema), columns).unwrap()
    }

    fn sorting(path: &Path) -> Vec<SortingColumn> {
        let reader = parquet::file::reader::SerializedFileReader::new(File::open(path).unwrap());
        let metadata = parquet::file::reader::FileReader::metadata(&reader.unwrap()).clone();
        let group = metadata.row_group(0);
        group.sorting_columns().cloned().unwrap_or_default()
    }

    /// A Sift input's order is its columns that the writer found sorted over the whole
    /// file, kept by a projection up to the first key it leaves out.
    #[test]
    fn sift_inputs_know_their_sorted_columns() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.sift");
        let schema = SchemaRef::new(Schema::new(vec![
            Field::new("k", DataType::Int64, true),
            Field::new("v", DataType::Int64, true),
        ]));
        let columns: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from_iter_values(0..300)),
            Arc::new(Int64Array::from_iter_values((0..300).map(|i| i * 37 % 101))),
        ];
        let rows = RecordBatch::try_new(Arc::clone(&schema), columns).unwrap();
        let options = OutputOptions {
            block_rows: 100,
            ..OutputOptions::default()
        };
        let mut out = Output::create(&path, &schema, &options).unwrap();
        out.write(&rows).unwrap();
        out.finish().unwrap();
        for (columns, want) in [
            (vec![], vec!["k"]),
            (vec!["v", "k"], vec!["k"]),
            (vec!["v"], vec![]),
        ] {
            let options = InputOptions {
                columns: columns.iter().map(|c| c.to_string()).collect(),
                ..InputOptions::default()
            };
            let input = open_input(&path, &options).unwrap();
            let got: Vec<_> = input.order.iter().map(|k| k.column.as_str()).collect();
            assert_eq!(got, want, "{columns:?}");
        }
    }

    /// A Parquet output declares the keys of its order up to the first that is not a
    /// top-level leaf column, at that leaf's position, and refuses a row out of that
    /// order, leaving no file behind.
    #[test]
    fn parquet_outputs_declare_and_check_their_order() {
        let schema = SchemaRef::new(Schema::new(vec![
            Field::new("k", DataType::Int64, true),
            Field::new_list("l", Field::new_list_field(DataType::Int64, true), true),
            Field::new("s", DataType::Utf8, true),
        ]));
        let dir = tempfile::tempdir().unwrap();
        let descending = SortKey {
            column: "s".into(),
            options: SortOptions::new(true, true),
        };
        let cases = [
            (vec![SortKey::ascending("k")], vec![(0, false, false)]),
            // `s` is the third leaf: the list's values are the second.
            (
                vec![SortKey::ascending("k"), descending.clone()],
                vec![(0, false, false), (2, true, true)],
            ),
            (vec![SortKey::ascending("l"), descending], vec![]),
        ];
        for (order, want) in cases {
            let path = dir.path().join("ok.parquet");
            let options = OutputOptions {
                order: order.clone(),
                ..OutputOptions::default()
            };
            let mut out = Output::create(&path, &schema, &options).unwrap();
            out.write(&batch(&[1, 2, 2], &schema)).unwrap();
            out.write(&batch(&[2, 5], &schema)).unwrap();
            out.finish().unwrap();
            let got: Vec<_> = (sorting(&path).iter())
                .map(|c| (c.column_idx, c.descending, c.nulls_first))
                .collect();
            assert_eq!(got, want, "{order:?}");
        }
        let path = dir.path().join("broken.parquet");
        let options = OutputOptions {
            order: vec![SortKey::ascending("k")],
            ..OutputOptions::default()
        };
        // Inside a batch, and from one batch to the next.
        for batches in [vec![vec![1, 3, 2]], vec![vec![1, 4], vec![], vec![3]]] {
            let mut out = Output::create(&path, &schema, &options).unwrap();
            let errors: Vec<_> = (batches.iter())
                .filter_map(|keys| out.write(&batch(keys, &schema)).err())
                .collect();
            let message = format!("{:#}", errors.first().unwrap());
            assert!(message.contains("broken.parquet"), "{message}");
            assert!(message.contains("row 2 is out of the order"), "{message}");
            assert!(message.contains("(k)"), "{message}");
            drop(out);
            assert!(!path.exists());
            let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
            assert_eq!(left.len(), 1, "{left:?}");
        }
    }
}
