//! The scan API: `scan(path).project([...]).filter(expr).limit(n).batch_size(n)`, an
//! iterator of Arrow record batches.

use std::collections::VecDeque;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, sync_channel};
use std::sync::{Arc, Mutex};

use arrow_array::{ArrayRef, RecordBatch, RecordBatchOptions, UInt64Array};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use sift_encoding::{Bitmap, PhysicalKind};

use crate::bind::{Bound, bind, column_index};
use crate::error::{Error, Result};
use crate::eval::BlockEval;
use crate::expr::Expr;
use crate::extremes::SELECTED_ROWS;
use crate::order::Order;
use crate::prune::{Zone, prunes};
use crate::source::Source;
use crate::stats::ScanStats;

/// How far ahead a scan of a file read by range fetches: at most this many bytes of
/// chunks (more when one block alone is larger)…
const READ_AHEAD_BYTES: u64 = 32 << 20;
/// …and at most this many blocks.
const READ_AHEAD_BLOCKS: usize = 16;

/// An open file (Sift, or Parquet read through the same engine) that scans run on. Open
/// it once to scan it many times: the footer is parsed and the checksums verified once.
#[derive(Clone)]
pub struct Table {
    source: Arc<Source>,
    path: PathBuf,
    /// The top-level columns of the source's schema.
    schema: SchemaRef,
}

impl Table {
    /// Opens a `.sift` file, or a `.parquet` file (by its extension; with the `parquet`
    /// feature, on by default).
    pub fn open(path: impl AsRef<Path>) -> Result<Table> {
        Self::open_with(path, true)
    }

    /// Opens a file, choosing whether Sift segment checksums are verified.
    pub fn open_with(path: impl AsRef<Path>, verify_checksums: bool) -> Result<Table> {
        let path = path.as_ref().to_path_buf();
        Ok(Table::new(Source::open(&path, verify_checksums)?, path))
    }

    /// Opens a file read by byte range (an object in an object store): a Sift file (see
    /// [`SiftFile::open_ranges`](sift_format::SiftFile::open_ranges)), or a Parquet file
    /// by its extension (with the `parquet` feature). Scans fetch the chunks of several
    /// blocks ahead with coalesced, concurrent requests.
    pub fn open_ranges(
        source: Arc<dyn sift_format::RangeSource>,
        verify_checksums: bool,
        ranges: sift_format::RangeOptions,
    ) -> Result<Table> {
        let path = PathBuf::from(source.location());
        let source = Source::open_ranges(source, verify_checksums, ranges)?;
        Ok(Table::new(source, path))
    }

    fn new(source: Source, path: PathBuf) -> Table {
        let all = source.schema();
        let fields: Vec<_> = (source.top_level().iter())
            .map(|&c| all.field(c).clone())
            .collect();
        let schema = SchemaRef::new(Schema::new_with_metadata(fields, all.metadata().clone()));
        Table {
            source: Arc::new(source),
            path,
            schema,
        }
    }

    /// The file's schema: its top-level columns, as scans return them (a column written
    /// as a dictionary as its values, unless a scan asks for a dictionary).
    pub fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    /// The file's column for column `c` of [`schema`](Self::schema): a Sift file stores a
    /// nested column in several columns (its nodes, named by their paths, `s.a`), of which
    /// this is the first.
    pub fn file_column(&self, c: usize) -> usize {
        self.source
            .top_level()
            .get(c)
            .copied()
            .unwrap_or(usize::MAX)
    }

    /// Total rows.
    pub fn num_rows(&self) -> u64 {
        (0..self.source.num_blocks())
            .map(|b| self.source.block_rows(b) as u64)
            .sum()
    }

    /// Whether the file's columns marked sorted were found so by its writer from the
    /// values (a Sift file: the flag is part of its checksummed statistics), not only
    /// declared by the writer's caller (Parquet's `sorting_columns`, which writers store as
    /// given): a scan that relies on a declaration checks the rows.
    pub fn sorted_from_values(&self) -> bool {
        self.source.sorted_from_values()
    }

    /// The columns (positions in [`schema`](Self::schema)) sorted over the whole file,
    /// ascending or descending, without a null: every non-empty block's chunk sorted,
    /// starting at or above the greatest value of the block before (or the other way
    /// round). Found from the values where [`sorted_from_values`](Self::sorted_from_values)
    /// says so, else as declared.
    pub fn sorted_columns(&self) -> crate::SortedColumns {
        let blocks: Vec<usize> = (0..self.num_blocks())
            .filter(|&b| self.block_rows(b) > 0)
            .collect();
        if blocks.is_empty() {
            return crate::SortedColumns::default();
        }
        crate::SortedColumns::find(self.schema.fields().len(), |c, descending| {
            let chunks = blocks.iter().map(|&b| self.block_stats(b, c));
            sift_format::ChunkStats::sorted_over(chunks, descending)
        })
    }

    /// The path the table was opened from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Blocks (Parquet: row groups), the units a scan reads and prunes.
    pub fn num_blocks(&self) -> usize {
        self.source.num_blocks()
    }

    /// Rows of block `b` (0 for a block that does not exist).
    pub fn block_rows(&self, b: usize) -> u64 {
        self.source.block_rows(b) as u64
    }

    /// The zone map of column `col` in block `b` (null count, bounds), when the file
    /// stores one that can be read.
    pub fn block_stats(&self, b: usize, col: usize) -> Option<&sift_format::ChunkStats> {
        let c = self.file_column(col);
        // A nested column's first chunk holds its presence or lengths: its null count is
        // the column's, its bounds are not.
        match self.source.is_nested(c) {
            false => self.source.stats(b, c),
            true => None,
        }
    }

    /// [`block_stats`](Self::block_stats) when its bounds are the column's exact smallest
    /// and largest non-null values in the block, not only bounds of them (integer, date,
    /// time, timestamp and decimal chunks of Sift files; Parquet statistics that state
    /// exact bounds in their current fields), so that they answer `MIN` and `MAX`.
    pub fn exact_block_stats(&self, b: usize, col: usize) -> Option<&sift_format::ChunkStats> {
        let c = self.file_column(col);
        match self.source.is_nested(c) {
            false => self.source.exact_stats(b, c),
            true => None,
        }
    }

    /// A scan of this table.
    pub fn scan(&self) -> ScanBuilder {
        ScanBuilder::new(Ok(self.clone()))
    }
}

/// Starts a scan of the file at `path`; see [`ScanBuilder`].
pub fn scan(path: impl AsRef<Path>) -> ScanBuilder {
    ScanBuilder::new(Table::open(path))
}

/// Scan settings; [`build`](Self::build) checks them and starts the scan (iterating the
/// builder directly does the same).
pub struct ScanBuilder {
    table: Result<Table>,
    projection: Option<Vec<String>>,
    filter: Option<Expr>,
    prune: Option<Expr>,
    limit: Option<u64>,
    batch_size: Option<usize>,
    rows: Option<Range<u64>>,
    dictionary: Vec<String>,
    unscaled: Vec<String>,
    extremes: bool,
    count_selected: bool,
    threads: usize,
}

impl ScanBuilder {
    /// Default settings on `table` (an open error is reported when the scan starts).
    fn new(table: Result<Table>) -> Self {
        ScanBuilder {
            table,
            projection: None,
            filter: None,
            prune: None,
            limit: None,
            batch_size: None,
            rows: None,
            dictionary: Vec::new(),
            unscaled: Vec::new(),
            extremes: false,
            count_selected: false,
            threads: 1,
        }
    }

    /// The columns to return, in this order (default: all).
    pub fn project<S: Into<String>>(mut self, columns: impl IntoIterator<Item = S>) -> Self {
        self.projection = Some(columns.into_iter().map(Into::into).collect());
        self
    }

    /// Only rows where `expr` is true (ANDed with an earlier filter).
    pub fn filter(mut self, expr: Expr) -> Self {
        self.filter = Some(conjoin(self.filter.take(), expr));
        self
    }

    /// Skips the blocks whose zone maps prove `expr` false (ANDed with an earlier one),
    /// without evaluating it on rows: for a condition that every row may pass but whole
    /// blocks may fail, such as the key bounds a hash join learns from its build side.
    pub fn prune_with(mut self, expr: Expr) -> Self {
        self.prune = Some(conjoin(self.prune.take(), expr));
        self
    }

    /// At most `n` rows.
    pub fn limit(mut self, n: u64) -> Self {
        self.limit = Some(n);
        self
    }

    /// Batches of `n` rows (the last may be shorter); default: one batch per block, of
    /// the rows that passed the filter.
    pub fn batch_size(mut self, n: usize) -> Self {
        self.batch_size = Some(n.max(1));
        self
    }

    /// Only rows `range` of the file (row numbers before filtering).
    pub fn rows(mut self, range: Range<u64>) -> Self {
        self.rows = Some(range);
        self
    }

    /// Returns these string or binary columns as Arrow dictionary arrays (`Int32` keys, the
    /// column's type as values), like pyarrow's `read_dictionary`. A dictionary-encoded
    /// block then decodes only its codes and hands out its stored dictionary, with no
    /// per-row string copies; grouping or comparing on the keys is much cheaper than on
    /// the strings. On Parquet files the Parquet reader returns each row group's
    /// dictionary (dictionary pages as they are). Other blocks are dictionary-encoded after
    /// decoding. Dictionaries differ from block to block (each batch carries its own).
    pub fn read_dictionary<S: Into<String>>(
        mut self,
        columns: impl IntoIterator<Item = S>,
    ) -> Self {
        self.dictionary.extend(columns.into_iter().map(Into::into));
        self
    }

    /// Returns these decimal columns (of precision at most 18) as `Int64` arrays of their
    /// unscaled values (`12.34` in a column of scale 2 is `1234`), decoded straight from
    /// the 64-bit integers they are stored as, with no 128-bit copy; for exact arithmetic
    /// on them, such as an aggregate's.
    pub fn read_unscaled<S: Into<String>>(mut self, columns: impl IntoIterator<Item = S>) -> Self {
        self.unscaled.extend(columns.into_iter().map(Into::into));
        self
    }

    /// Returns, for each block with selected rows, two rows instead of its rows: the
    /// smallest and the largest value of every projected column over the block's selected
    /// rows (nulls ignored; both null where no value is selected), all that `MIN` and
    /// `MAX` aggregates need. A dictionary-encoded Parquet page, and a Sift chunk
    /// frame-of-reference- or dictionary-encoded at its root, then folds its selected codes
    /// and decodes no value; other chunks are decoded and their extremes taken. Integer, date, time, timestamp and decimal columns only
    /// (floats have no single order with NaN), and no limit (rows are not returned).
    pub fn extremes_only(mut self) -> Self {
        self.extremes = true;
        self
    }

    /// With [`extremes_only`](Self::extremes_only): each block's two rows carry in a last
    /// column, `UInt64` and named [`SELECTED_ROWS`], the number of the block's selected
    /// rows and then 0, so that the column's sum over the scan is the `COUNT(*)` beside
    /// the `MIN` and `MAX` aggregates. The projection may then be empty.
    pub fn count_selected(mut self) -> Self {
        self.count_selected = true;
        self
    }

    /// Reads blocks on `n` threads at once (default 1: on the caller's thread). Batches
    /// still come in the file's order: block `i` is read by thread `i mod n`, and each
    /// thread runs at most two blocks ahead of the consumer, so memory stays bounded.
    pub fn threads(mut self, n: usize) -> Self {
        self.threads = n.max(1);
        self
    }

    /// Checks the projection and filter against the schema and starts the scan.
    pub fn build(self) -> Result<Scan> {
        let table = self.table?;
        // Every column the file stores: a nested column's nodes too, named by their paths,
        // so that a struct's field (`s.a`) is filtered and projected like any column.
        let schema = table.source.schema();
        let projection = match &self.projection {
            None => table.source.top_level().to_vec(),
            Some(names) => names
                .iter()
                .map(|n| {
                    column_index(&schema, n)
                        .map_err(|e| Error::Type(format!("{}: {e}", table.path.display())))
                })
                .collect::<Result<Vec<usize>>>()?,
        };
        let bound = |e: &Option<Expr>| match e {
            Some(e) => {
                bind(e, &schema).map_err(|e| Error::Type(format!("{}: {e}", table.path.display())))
            }
            None => Ok(Bound::Const(true)),
        };
        let (filter, prune) = (bound(&self.filter)?, bound(&self.prune)?);
        let leaves = filter.leaves();
        let mut needed: Vec<usize> = projection.clone();
        for l in &leaves {
            needed.push(l.column);
            match &l.op {
                crate::bind::LeafOp::Columns { right, .. } => needed.push(*right),
                crate::bind::LeafOp::Udf { columns, .. } => needed.extend(columns),
                _ => {}
            }
        }
        check_types(&table, &schema, &needed)?;
        let order = Order::new(leaves.len());
        let mut reads = vec![Read::Values; schema.fields().len()];
        let column = |name: &str| {
            column_index(&schema, name)
                .map_err(|e| Error::Type(format!("{}: {e}", table.path.display())))
        };
        for name in &self.dictionary {
            let c = column(name)?;
            let dt = schema.field(c).data_type();
            if sift_encoding::physical_kind(dt).ok() != Some(PhysicalKind::Bytes) {
                return Err(Error::Type(format!(
                    "{}: column {name:?} is {dt}; read_dictionary applies to string and binary columns",
                    table.path.display()
                )));
            }
            reads[c] = Read::Dictionary;
        }
        for name in &self.unscaled {
            let c = column(name)?;
            let dt = schema.field(c).data_type();
            if !matches!(dt, DataType::Decimal128(p, _) if *p <= 18) {
                return Err(Error::Type(format!(
                    "{}: column {name:?} is {dt}; read_unscaled applies to decimal columns of precision 18 or less",
                    table.path.display()
                )));
            }
            reads[c] = Read::Unscaled;
        }
        let mut reads: Vec<Read> = projection.iter().map(|&c| reads[c]).collect();
        if self.count_selected && !self.extremes {
            return Err(Error::Invalid(format!(
                "{}: count_selected applies to a scan returning extremes (extremes_only)",
                table.path.display()
            )));
        }
        if self.extremes {
            if self.limit.is_some() {
                return Err(Error::Invalid(format!(
                    "{}: a scan returning extremes has no rows to limit",
                    table.path.display()
                )));
            }
            for (&c, read) in projection.iter().zip(&mut reads) {
                let f = schema.field(c);
                if !crate::extremes::has_extremes(f.data_type()) {
                    return Err(Error::Type(format!(
                        "{}: column {:?} is {}; extremes_only applies to integer, date, time, timestamp and decimal columns",
                        table.path.display(),
                        f.name(),
                        f.data_type()
                    )));
                }
                *read = Read::Extremes {
                    unscaled: *read == Read::Unscaled,
                };
            }
        }
        let mut fields: Vec<Field> = projection
            .iter()
            .zip(&reads)
            .map(|(&c, read)| {
                let f = schema.field(c);
                match read {
                    Read::Values | Read::Extremes { unscaled: false } => f.clone(),
                    Read::Dictionary => f
                        .clone()
                        .with_data_type(sift_encoding::dictionary_type(f.data_type())),
                    Read::Unscaled | Read::Extremes { unscaled: true } => {
                        f.clone().with_data_type(DataType::Int64)
                    }
                }
            })
            .collect();
        if self.count_selected {
            fields.push(Field::new(SELECTED_ROWS, DataType::UInt64, false));
        }
        let out_schema =
            SchemaRef::new(Schema::new_with_metadata(fields, schema.metadata().clone()));
        // Blocks overlapping the row range, with each block's first row.
        let mut first_row = 0u64;
        let mut blocks = Vec::new();
        let range = self.rows.clone().unwrap_or(0..u64::MAX);
        if range.start > range.end {
            return Err(Error::Invalid(format!(
                "row range {}..{} is backwards",
                range.start, range.end
            )));
        }
        for b in 0..table.source.num_blocks() {
            let rows = table.source.block_rows(b) as u64;
            if first_row < range.end && first_row + rows > range.start {
                blocks.push((b, first_row));
            }
            first_row += rows;
        }
        let block_order: Arc<[usize]> = blocks.iter().map(|&(b, _)| b).collect();
        let mut scan = Scan {
            table: Some(table),
            projection,
            reads,
            extremes: self.extremes,
            count_selected: self.count_selected,
            needed,
            filter,
            prune,
            order,
            schema: out_schema,
            range,
            blocks: blocks.into(),
            remaining: self.limit,
            batch_size: self.batch_size,
            pending: VecDeque::new(),
            stats: ScanStats::default(),
            failed: false,
            workers: Vec::new(),
            worker_stats: Arc::default(),
            received: 0,
            returned: 0,
            block_order,
            done: Arc::default(),
            rounds: 0,
        };
        let threads = self.threads.min(scan.blocks.len());
        if threads > 1 {
            scan.workers = (0..threads)
                .map(|k| scan.spawn_worker(k, threads))
                .collect();
        }
        Ok(scan)
    }
}

/// Refuses, naming the column and its type, a scan that reads a column whose type the
/// engine cannot evaluate or return: any type Sift cannot store (the check `sift convert`
/// applies, [`sift_format::check_schema`], which judges a dictionary column by its values'
/// type). Checked before any block is read: a Parquet row group of a nested column (a map
/// of long strings) can take gigabytes to decode, only for the type to be refused
/// afterwards.
///
/// Of a nested column, a scan reads the columns of one value per row (the nested column,
/// a struct's fields), not a Sift file's columns of list elements.
fn check_types(table: &Table, schema: &Schema, needed: &[usize]) -> Result<()> {
    let path = table.path.display();
    // A column both filtered on and projected is listed twice; it is one column.
    let mut columns = needed.to_vec();
    columns.sort_unstable();
    columns.dedup();
    for &c in &columns {
        let field = schema.field(c);
        if table.source.is_element(c) {
            return Err(Error::Type(format!(
                "{path}: column '{}' holds list elements, not one value per row: read the list it belongs to",
                field.name()
            )));
        }
        // One at a time: a nested column and its fields (`s`, `s.a`) share storage.
        sift_format::check_schema(&schema.project(&[c])?)
            .map_err(|e| Error::Type(format!("{path}: {e}")))?;
    }
    Ok(())
}

impl IntoIterator for ScanBuilder {
    type Item = Result<RecordBatch>;
    type IntoIter = Scan;

    /// Starts the scan; a bad setting becomes the iterator's only item.
    fn into_iter(self) -> Scan {
        match self.build() {
            Ok(s) => s,
            Err(e) => Scan::failed(e),
        }
    }
}

/// How a projected column is returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Read {
    /// As the schema says.
    Values,
    /// As a dictionary array ([`ScanBuilder::read_dictionary`]): codes over a stored
    /// dictionary where the chunk has one.
    Dictionary,
    /// A decimal's unscaled values as `Int64` ([`ScanBuilder::read_unscaled`]), straight
    /// from the stored 64-bit integers where the chunk holds them so.
    Unscaled,
    /// The smallest and largest value over the selected rows, as a two-row array
    /// ([`ScanBuilder::extremes_only`]); a decimal's as `Int64` unscaled values when
    /// `unscaled`.
    Extremes { unscaled: bool },
}

/// Rows below which a block's output is not cut at a page boundary: shorter pieces are
/// joined with the next. Joining copies the values, so this is low: a selective scan of
/// Parquet pages (pyarrow writes 20,000 rows per page) yields pieces of a few thousand
/// rows, which operators take as they are. In the Parquet-Select micro at one row in four
/// (5,000 rows per piece) a minimum of 8,192 spent 10 % of the query joining.
const MIN_BATCH_ROWS: usize = 2048;

/// A block's `rows` output rows as batches of `schema`, from each projected column's
/// consecutive pieces (see [`BlockEval::project_pieces`](crate::eval::BlockEval)). Where
/// every column comes in one piece, one batch. Otherwise the block is cut at the pieces'
/// boundaries (at least [`MIN_BATCH_ROWS`] apart, the last batch joined to the one before
/// when shorter), and each column's rows of a batch are a slice of one of its pieces
/// where they lie in one (no copy: Parquet pages of the same rows across columns, as
/// pyarrow writes them) and the pieces' slices joined where they do not.
fn assemble(
    schema: &SchemaRef,
    columns: Vec<Vec<ArrayRef>>,
    rows: usize,
) -> Result<Vec<RecordBatch>> {
    if columns.iter().all(|p| p.len() <= 1) {
        let columns = (columns.into_iter())
            .map(crate::eval::concat_pieces)
            .collect::<Result<Vec<_>>>()?;
        let options = RecordBatchOptions::new().with_row_count(Some(rows));
        return Ok(vec![RecordBatch::try_new_with_options(
            schema.clone(),
            columns,
            &options,
        )?]);
    }
    for pieces in &columns {
        let total: usize = pieces.iter().map(|a| a.len()).sum();
        if total != rows {
            return Err(Error::Invalid(format!(
                "a column read as {total} rows of a block's {rows}"
            )));
        }
    }
    // Every piece's end, in order, thinned to cuts at least MIN_BATCH_ROWS apart.
    let mut ends: Vec<usize> = (columns.iter())
        .flat_map(|pieces| {
            pieces.iter().scan(0, |at, a| {
                *at += a.len();
                Some(*at)
            })
        })
        .collect();
    ends.sort_unstable();
    let mut cuts = vec![0usize];
    for e in ends {
        if e >= cuts[cuts.len() - 1] + MIN_BATCH_ROWS && e < rows {
            cuts.push(e);
        }
    }
    if cuts.len() > 1 && rows - cuts[cuts.len() - 1] < MIN_BATCH_ROWS {
        cuts.pop();
    }
    cuts.push(rows);
    let mut batches: Vec<Vec<ArrayRef>> = vec![Vec::with_capacity(columns.len()); cuts.len() - 1];
    for pieces in columns {
        // Piece `k` holds the column's rows `start..start + len`.
        let (mut k, mut start) = (0usize, 0usize);
        for (out, w) in batches.iter_mut().zip(cuts.windows(2)) {
            let (lo, hi) = (w[0], w[1]);
            let mut parts: Vec<ArrayRef> = Vec::new();
            while let Some(piece) = pieces.get(k)
                && start < hi
            {
                let end = start + piece.len();
                let (from, to) = (lo.max(start), hi.min(end));
                if to > from {
                    parts.push(piece.slice(from - start, to - from));
                }
                if end > hi {
                    break;
                }
                (k, start) = (k + 1, end);
            }
            if parts.is_empty() {
                return Err(Error::Invalid(format!(
                    "no rows {lo}..{hi} in a column's pieces"
                )));
            }
            out.push(crate::eval::concat_pieces(parts)?);
        }
    }
    (batches.into_iter().zip(cuts.windows(2)))
        .map(|(columns, w)| {
            let options = RecordBatchOptions::new().with_row_count(Some(w[1] - w[0]));
            Ok(RecordBatch::try_new_with_options(
                schema.clone(),
                columns,
                &options,
            )?)
        })
        .collect()
}

/// `earlier AND expr`, or `expr` alone.
fn conjoin(earlier: Option<Expr>, expr: Expr) -> Expr {
    match earlier {
        Some(f) => f.and(expr),
        None => expr,
    }
}

/// A running scan: an iterator of record batches.
pub struct Scan {
    table: Option<Table>,
    projection: Vec<usize>,
    /// Per projected column: how it is returned.
    reads: Vec<Read>,
    /// Each block returns two rows, its extremes ([`ScanBuilder::extremes_only`]), and
    /// its selected rows counted ([`ScanBuilder::count_selected`]).
    extremes: bool,
    count_selected: bool,
    needed: Vec<usize>,
    filter: Bound,
    /// Tested on zone maps only ([`ScanBuilder::prune_with`]).
    prune: Bound,
    order: Order,
    schema: SchemaRef,
    range: Range<u64>,
    blocks: VecDeque<(usize, u64)>,
    remaining: Option<u64>,
    batch_size: Option<usize>,
    pending: VecDeque<Result<RecordBatch>>,
    stats: ScanStats,
    failed: bool,
    /// With several threads: thread `k` reads blocks `k`, `k + n`, … of `blocks` and
    /// sends each one's result (`None`: no rows) in order.
    workers: Vec<Receiver<Result<Vec<RecordBatch>>>>,
    /// What the threads did, added up by them after each block.
    worker_stats: Arc<Mutex<ScanStats>>,
    /// Blocks received from the threads so far.
    received: usize,
    /// Rows handed out, for the limit.
    returned: u64,
    /// Every block of the scan in order, shared with its threads: a thread fetching ahead
    /// fetches the blocks of the others too, so that ranges are merged over the whole
    /// scan and no byte is fetched twice.
    block_order: Arc<[usize]>,
    /// Blocks of `block_order` the scan's threads have read (their chunks released).
    done: Arc<Mutex<std::collections::HashSet<usize>>>,
    /// Rounds of fetching ahead so far (with a limit, each round doubles the window).
    rounds: u32,
}

impl Scan {
    fn failed(e: Error) -> Scan {
        Scan {
            table: None,
            projection: vec![],
            reads: vec![],
            extremes: false,
            count_selected: false,
            needed: vec![],
            filter: Bound::Const(false),
            prune: Bound::Const(true),
            order: Order::default(),
            schema: SchemaRef::new(arrow_schema::Schema::empty()),
            range: 0..0,
            blocks: VecDeque::new(),
            remaining: Some(0),
            batch_size: None,
            pending: VecDeque::from([Err(e)]),
            stats: ScanStats::default(),
            failed: true,
            workers: Vec::new(),
            worker_stats: Arc::default(),
            received: 0,
            returned: 0,
            block_order: Arc::from([]),
            done: Arc::default(),
            rounds: 0,
        }
    }

    /// Starts thread `k` of `n`: a scan of every `n`th block from the `k`th, sending each
    /// block's result in order, at most two ahead of the consumer.
    fn spawn_worker(&self, k: usize, n: usize) -> Receiver<Result<Vec<RecordBatch>>> {
        let mut worker = Scan {
            table: self.table.clone(),
            projection: self.projection.clone(),
            reads: self.reads.clone(),
            extremes: self.extremes,
            count_selected: self.count_selected,
            needed: self.needed.clone(),
            filter: self.filter.clone(),
            prune: self.prune.clone(),
            order: self.order.clone(),
            schema: self.schema.clone(),
            range: self.range.clone(),
            blocks: self.blocks.iter().skip(k).step_by(n).copied().collect(),
            remaining: self.remaining,
            batch_size: None,
            pending: VecDeque::new(),
            stats: ScanStats::default(),
            failed: false,
            workers: Vec::new(),
            worker_stats: Arc::default(),
            received: 0,
            returned: 0,
            block_order: self.block_order.clone(),
            done: self.done.clone(),
            rounds: 0,
        };
        let shared = self.worker_stats.clone();
        let (tx, rx) = sync_channel(2);
        std::thread::spawn(move || {
            while let Some((b, first_row)) = worker.blocks.pop_front() {
                let result = worker.block(b, first_row);
                if let Ok(mut total) = shared.lock() {
                    total.add(&std::mem::take(&mut worker.stats));
                }
                let failed = result.is_err();
                // The consumer went away (dropped, or stopped at its limit): stop too.
                if tx.send(result).is_err() || failed {
                    return;
                }
            }
        });
        rx
    }

    /// The next block's result from the thread that read it.
    fn receive(&mut self) -> Result<Vec<RecordBatch>> {
        let k = self.received % self.workers.len();
        self.received += 1;
        self.workers[k]
            .recv()
            .unwrap_or_else(|_| Err(Error::Invalid("a scan thread stopped early".into())))
    }

    /// Stops the threads (dropping their channels) and takes their statistics: every
    /// block's once all were received, else those of the blocks read so far.
    fn finish_workers(&mut self) {
        self.workers.clear();
        if let Ok(total) = self.worker_stats.lock() {
            self.stats = total.clone();
        }
        // Threads cut blocks at the limit each on its own; what was returned is exact
        // (without a limit the threads' counts are, and a scan returning extremes returns
        // two rows per block, not its selected rows).
        if self.remaining.is_some() {
            self.stats.rows_matched = self.returned;
        }
    }

    /// The schema of the batches.
    pub fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    /// What the scan has done so far (with several threads: once the scan has ended).
    pub fn stats(&self) -> &ScanStats {
        &self.stats
    }

    /// Evaluates the filter on one block and decodes the projected rows.
    fn block(&mut self, b: usize, first_row: u64) -> Result<Vec<RecordBatch>> {
        let Some(table) = &self.table else {
            return Ok(Vec::new());
        };
        let source = table.source.clone();
        let block_rows = source.block_rows(b);
        self.stats.blocks_total += 1;
        if self.pruned(&source, b) {
            self.stats.blocks_pruned += 1;
            return Ok(Vec::new());
        }
        if !source.is_remote() {
            return self.read_block(&source, b, block_rows, first_row);
        }
        self.fetch_ahead(&source, b)?;
        let result = self.read_block(&source, b, block_rows, first_row);
        if let Ok(mut done) = self.done.lock() {
            done.insert(b);
        }
        source.release(b);
        result
    }

    /// Whether the zone maps of block `b` prove the filter false.
    fn pruned(&self, source: &Source, b: usize) -> bool {
        let zone = |c: usize| Zone {
            rows: source.block_rows(b) as u64,
            stats: source.stats(b, c),
            members: source.members(b, c),
        };
        prunes(&self.filter, &zone) || prunes(&self.prune, &zone)
    }

    /// For a file read by range: unless block `b` is fetched (or being fetched by another
    /// thread of the scan), fetches its chunks with those of the next blocks of the scan
    /// (skipping blocks the zone maps prune, up to a block already claimed), up to
    /// [`READ_AHEAD_BYTES`] or [`READ_AHEAD_BLOCKS`], in one round of coalesced,
    /// concurrent requests. With a limit, the window starts at one block and doubles each
    /// round, so that a scan stopping early fetches little more than it reads.
    fn fetch_ahead(&mut self, source: &Source, b: usize) -> Result<()> {
        if source.prefetched(b, &self.needed) {
            return Ok(());
        }
        let most = match self.remaining {
            Some(_) => (1usize << self.rounds.min(8)).min(READ_AHEAD_BLOCKS),
            None => READ_AHEAD_BLOCKS,
        };
        self.rounds += 1;
        let mut window = vec![b];
        let mut bytes = source.prefetch_bytes(&[b], &self.needed)?;
        let from = self
            .block_order
            .iter()
            .position(|&x| x == b)
            .map_or(0, |i| i + 1);
        for &next in &self.block_order[from.min(self.block_order.len())..] {
            if window.len() >= most || bytes >= READ_AHEAD_BYTES {
                break;
            }
            if self.pruned(source, next) {
                continue;
            }
            // A block another thread fetched or read ends the window: a window is a run
            // of blocks with no other fetch inside, so merging across gaps reads nothing
            // twice.
            let read = self.done.lock().is_ok_and(|d| d.contains(&next));
            if read || source.prefetched(next, &self.needed) {
                break;
            }
            bytes += source.prefetch_bytes(&[next], &self.needed)?;
            window.push(next);
        }
        let done = &self.done;
        let finished = |b: usize| done.lock().is_ok_and(|d| d.contains(&b));
        let made = source.prefetch(&window, &self.needed, &finished)?;
        self.stats.requests += made.requests;
        self.stats.bytes_fetched += made.bytes;
        Ok(())
    }

    /// Reads block `b`, which the zone maps do not prune.
    fn read_block(
        &mut self,
        source: &Arc<Source>,
        b: usize,
        block_rows: usize,
        first_row: u64,
    ) -> Result<Vec<RecordBatch>> {
        // Rows of this block inside the requested range.
        let lo = self
            .range
            .start
            .saturating_sub(first_row)
            .min(block_rows as u64) as usize;
        let hi = self
            .range
            .end
            .saturating_sub(first_row)
            .min(block_rows as u64) as usize;
        let dictionary: Vec<usize> = (self.projection.iter().zip(&self.reads))
            .filter_map(|(&c, &read)| (read == Read::Dictionary).then_some(c))
            .collect();
        // The filter's tests the block's zone maps prove true are dropped for it.
        let zone = |c: usize| Zone::of(block_rows as u64, source.stats(b, c));
        let filter = crate::prune::settle(&self.filter, &zone);
        // A source that reads row ranges is read only at the range's rows that the finer
        // zone maps (a page index) leave; the block's rows are then those rows alone.
        let (data, rows, input) = match source.reads_row_ranges() {
            true => {
                let candidates = source
                    .candidates(b, &filter)
                    .unwrap_or_else(|| std::iter::once(0..block_rows).collect());
                let ranges = crate::prune::intersect(&candidates, std::slice::from_ref(&(lo..hi)));
                let rows: usize = ranges.iter().map(ExactSizeIterator::len).sum();
                if rows == 0 {
                    self.stats.blocks_pruned += 1;
                    return Ok(Vec::new());
                }
                let ranges = (rows < block_rows).then_some(ranges.as_slice());
                let data = source.block(b, &dictionary, ranges)?;
                (data, rows, None)
            }
            false => {
                let input = (lo > 0 || hi < block_rows).then(|| {
                    let mut bm = Bitmap::zeros(block_rows);
                    for i in lo..hi {
                        bm.set(i, true);
                    }
                    bm
                });
                let data = source.block(b, &dictionary, None)?;
                (data, block_rows, input)
            }
        };
        self.stats.rows_scanned += rows as u64;
        // Under a limit the filter's rows may be cut before the columns are read, so no
        // column is read as its test is evaluated.
        let early: (&[usize], &[Read]) = match self.remaining {
            None => (&self.projection, &self.reads),
            Some(_) => (&[], &[]),
        };
        let mut ev = BlockEval::new(&data, rows, &mut self.stats, &mut self.order, early);
        let selected = match (&filter, &input) {
            (Bound::Const(true), None) => None,
            (f, input) => Some(ev.filter(f, input.as_ref())?),
        };
        let mut count = selected.as_ref().map_or(rows, Bitmap::count_ones);
        if count == 0 {
            ev.stats.blocks_empty += 1;
            data.account(ev.stats);
            return Ok(Vec::new());
        }
        // A limit that ends inside this block keeps only its first rows.
        let mut selected = selected;
        if let Some(rem) = self.remaining
            && (count as u64) > rem
        {
            let mut bm = selected.unwrap_or_else(|| Bitmap::ones(rows));
            let keep: Vec<usize> = bm.iter_ones().skip(rem as usize).collect();
            for i in keep {
                bm.set(i, false);
            }
            count = rem as usize;
            selected = Some(bm);
        }
        ev.stats.rows_matched += count as u64;
        if self.extremes {
            let mut columns = (self.projection.iter().zip(&self.reads))
                .map(|(&c, &read)| ev.extremes(c, selected.as_ref(), read))
                .collect::<Result<Vec<_>>>()?;
            if self.count_selected {
                columns.push(Arc::new(UInt64Array::from(vec![count as u64, 0])));
            }
            data.account(ev.stats);
            let options = RecordBatchOptions::new().with_row_count(Some(2));
            let batch = RecordBatch::try_new_with_options(self.schema.clone(), columns, &options)?;
            return Ok(vec![batch]);
        }
        let columns = self
            .projection
            .iter()
            .zip(&self.reads)
            .map(|(&c, &read)| ev.project_pieces(c, selected.as_ref(), read))
            .collect::<Result<Vec<_>>>()?;
        data.account(ev.stats);
        let batches = assemble(&self.schema, columns, count)?;
        if let Some(rem) = &mut self.remaining {
            *rem -= count as u64;
        }
        Ok(batches)
    }

    /// A block's rows from a thread, cut at the scan's limit.
    fn take_limit(&mut self, batch: RecordBatch) -> RecordBatch {
        let rows = batch.num_rows() as u64;
        let keep = self.remaining.map_or(rows, |r| r.min(rows));
        if let Some(r) = &mut self.remaining {
            *r -= keep;
        }
        self.returned += keep;
        match keep < rows {
            true => batch.slice(0, keep as usize),
            false => batch,
        }
    }

    /// Splits or joins block results into batches of `batch_size` rows.
    fn rebatch(&mut self, batch: RecordBatch) {
        let Some(size) = self.batch_size else {
            self.pending.push_back(Ok(batch));
            return;
        };
        let mut joined = batch;
        if let Some(Ok(last)) = self.pending.back()
            && last.num_rows() < size
            && let Some(Ok(last)) = self.pending.pop_back()
        {
            match arrow_select::concat::concat_batches(&self.schema, [&last, &joined]) {
                Ok(b) => joined = b,
                Err(e) => {
                    self.pending.push_back(Err(e.into()));
                    return;
                }
            }
        }
        let mut offset = 0;
        while offset < joined.num_rows() {
            let n = size.min(joined.num_rows() - offset);
            self.pending.push_back(Ok(joined.slice(offset, n)));
            offset += n;
        }
    }
}

/// A scan that stops early (at its limit, or dropped) releases the chunks fetched ahead
/// for the blocks it did not read (by it or by another of its threads).
impl Drop for Scan {
    fn drop(&mut self) {
        if let Some(table) = &self.table
            && table.source.is_remote()
        {
            for &(b, _) in &self.blocks {
                table.source.release(b);
            }
        }
    }
}

impl Iterator for Scan {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Result<RecordBatch>> {
        loop {
            // With a batch size, a short last batch waits for more rows unless the scan ended.
            let ready = match (self.pending.front(), self.batch_size) {
                (Some(Ok(b)), Some(size)) => {
                    b.num_rows() >= size || self.pending.len() > 1 || self.blocks.is_empty()
                }
                (Some(_), _) => true,
                (None, _) => false,
            };
            if ready || (self.blocks.is_empty() && !self.pending.is_empty()) {
                return self.pending.pop_front();
            }
            if self.failed || self.blocks.is_empty() || self.remaining == Some(0) {
                if !self.workers.is_empty() {
                    self.finish_workers();
                }
                self.blocks.clear();
                return self.pending.pop_front();
            }
            let (b, first_row) = self.blocks.pop_front()?;
            let result = match self.workers.is_empty() {
                true => self.block(b, first_row),
                false => self
                    .receive()
                    .map(|batches| (batches.into_iter()).map(|b| self.take_limit(b)).collect()),
            };
            match result {
                Ok(batches) => batches.into_iter().for_each(|b| self.rebatch(b)),
                Err(e) => {
                    self.failed = true;
                    self.blocks.clear();
                    self.pending.push_back(Err(e));
                }
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // test code asserts by panicking
mod tests {
    use super::*;
    use arrow_array::{Array, Int64Array};
    use proptest::prelude::*;

    /// `rows` values `0..rows` cut into pieces at `cuts` (sorted, inside `1..rows`).
    fn pieces(rows: usize, cuts: &[usize]) -> Vec<ArrayRef> {
        let mut bounds = vec![0];
        bounds.extend(cuts.iter().copied().filter(|&c| c > 0 && c < rows));
        bounds.push(rows);
        bounds.dedup();
        bounds
            .windows(2)
            .map(|w| Arc::new(Int64Array::from_iter_values(w[0] as i64..w[1] as i64)) as ArrayRef)
            .collect()
    }

    proptest! {
        /// Pieces cut anywhere come out as batches holding every row once, in order, each
        /// (but a lone one) at least `MIN_BATCH_ROWS` long; pieces cut at the same rows in
        /// every column are handed on as slices of themselves, never copied.
        #[test]
        fn assembled_batches_keep_rows_and_share_aligned_pieces(
            rows in 1usize..60_000,
            a in prop::collection::btree_set(1usize..60_000, 0..12),
            b in prop::collection::btree_set(1usize..60_000, 0..12),
        ) {
            let schema = Arc::new(Schema::new(vec![
                Field::new("a", DataType::Int64, false),
                Field::new("b", DataType::Int64, false),
                Field::new("c", DataType::Int64, false),
            ]));
            let (a, b): (Vec<usize>, Vec<usize>) = (a.into_iter().collect(), b.into_iter().collect());
            // Columns a and c share their cuts; b has its own.
            let columns = vec![pieces(rows, &a), pieces(rows, &b), pieces(rows, &a)];
            let batches = assemble(&schema, columns.clone(), rows).unwrap();
            let total: usize = batches.iter().map(RecordBatch::num_rows).sum();
            prop_assert_eq!(total, rows);
            if batches.len() > 1 {
                prop_assert!(batches.iter().all(|b| b.num_rows() >= MIN_BATCH_ROWS));
            }
            for c in 0..3 {
                let joined = arrow_select::concat::concat(
                    &batches.iter().map(|b| b.column(c).as_ref()).collect::<Vec<_>>(),
                ).unwrap();
                let want: Vec<i64> = (0..rows as i64).collect();
                prop_assert_eq!(joined.as_any().downcast_ref::<Int64Array>().unwrap().values().to_vec(), want);
            }
            // Where b's pieces end at a batch's ends too, nothing of a's or c's was copied:
            // each batch's column points into one of the pieces.
            let inside = |col: usize, batch: &RecordBatch| {
                let data = batch.column(col).to_data();
                let p = data.buffers()[0].as_ptr() as usize;
                columns[col].iter().any(|piece| {
                    let d = piece.to_data();
                    let s = d.buffers()[0].as_ptr() as usize;
                    s <= p && p < s + d.buffers()[0].len().max(1)
                })
            };
            let mut start = 0;
            for batch in &batches {
                let end = start + batch.num_rows();
                let one_a = pieces(rows, &a).iter().scan(0, |at, p| {
                    let s = *at;
                    *at += p.len();
                    Some((s, *at))
                }).any(|(s, e)| s <= start && end <= e);
                if one_a {
                    prop_assert!(inside(0, batch) && inside(2, batch));
                }
                start = end;
            }
        }
    }
}
