//! Datasets: many files scanned as one table, with Hive partition columns.
//!
//! A [`Dataset`] is a list of files, each with the partition values of the directories
//! above it (`year=2024/month=1/part-0.sift`). A scan of it:
//!
//! 1. drops the files whose partition values make the filter false, before opening them;
//! 2. opens the others (a footer read each) and unifies their schemas: columns are
//!    matched by name; a column missing from some files is null there (so it must be
//!    nullable, or become so); integers of one signedness widen to the widest; any
//!    other difference, or files with no column in common, is an error naming the two
//!    files;
//! 3. scans each file in turn with the filter specialised to it: a leaf on a partition
//!    column, or on a column the file lacks, is decided once for the whole file (with
//!    SQL's null logic), so a file the filter rules out is skipped and the rest evaluate
//!    only their own columns, with zone maps pruning blocks as for a single file;
//! 4. appends the partition values (and nulls for missing columns) to each batch.
//!
//! Partition columns are 64-bit integers when every value of the key is one, else
//! strings; `__HIVE_DEFAULT_PARTITION__` is null.

use std::borrow::Cow;
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use arrow_array::{ArrayRef, Int64Array, RecordBatch, RecordBatchOptions, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use sift_format::{ChunkStats, Scalar};

use crate::bind::field_or_path;
use crate::error::{Error, Result};
use crate::expr::{CmpOp, Expr, Literal};
use crate::scan::{Scan, ScanBuilder, Table};
use crate::stats::ScanStats;

/// One file of a dataset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DatasetFile {
    /// A local path or a URL.
    pub location: String,
    /// The size, when listing told it.
    pub size: Option<u64>,
    /// Hive partition values from the directories above the file, outermost first
    /// (`None`: null).
    pub partitions: Vec<(String, Option<String>)>,
}

/// Opens one file of a dataset.
pub type Opener = dyn Fn(&DatasetFile) -> Result<Table> + Send + Sync;

/// A value that is the same for every row of a file: a partition value, or the null of
/// a column the file does not have.
#[derive(Debug, Clone, PartialEq)]
enum Constant {
    Null,
    Int(i64),
    Str(String),
}

/// Files scanned as one table, each with the Hive partition values of the directories
/// above it: a scan skips the files whose partition values make its filter false, matches
/// the others' columns by name (a column a file lacks is null there; integers widen to the
/// widest), and appends the partition columns to each batch.
#[derive(Clone)]
pub struct Dataset {
    files: Arc<[DatasetFile]>,
    /// Partition columns, in the order of the directories.
    partitions: Vec<Field>,
    /// Per file, its value of each partition column.
    values: Arc<[Vec<Constant>]>,
    opener: Arc<Opener>,
}

impl std::fmt::Debug for Dataset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dataset")
            .field("files", &self.files.len())
            .field("partitions", &self.partitions)
            .finish()
    }
}

impl Dataset {
    /// A dataset of `files`, opened with `opener` when a scan needs them. Every file must
    /// have the same partition keys, in the same order.
    pub fn new(files: Vec<DatasetFile>, opener: Arc<Opener>) -> Result<Dataset> {
        let Some(first) = files.first() else {
            return Err(Error::Invalid("a dataset needs at least one file".into()));
        };
        let keys: Vec<&str> = first.partitions.iter().map(|(k, _)| k.as_str()).collect();
        for f in &files {
            let these: Vec<&str> = f.partitions.iter().map(|(k, _)| k.as_str()).collect();
            if these != keys {
                return Err(Error::Invalid(format!(
                    "{} is partitioned by ({}) and {} by ({}): a dataset's files share one \
                     partition layout",
                    first.location,
                    keys.join(", "),
                    f.location,
                    these.join(", ")
                )));
            }
        }
        let mut partitions = Vec::with_capacity(keys.len());
        let mut values = vec![Vec::with_capacity(keys.len()); files.len()];
        for (k, key) in keys.iter().enumerate() {
            let all_int = files.iter().all(|f| {
                f.partitions[k]
                    .1
                    .as_deref()
                    .is_none_or(|v| v.parse::<i64>().is_ok())
            });
            let ty = if all_int {
                DataType::Int64
            } else {
                DataType::Utf8
            };
            let nullable = files.iter().any(|f| f.partitions[k].1.is_none());
            partitions.push(Field::new(*key, ty, nullable));
            for (f, vals) in files.iter().zip(values.iter_mut()) {
                vals.push(match (&f.partitions[k].1, all_int) {
                    (None, _) => Constant::Null,
                    (Some(v), true) => Constant::Int(v.parse().unwrap_or_default()),
                    (Some(v), false) => Constant::Str(v.clone()),
                });
            }
        }
        Ok(Dataset {
            files: files.into(),
            partitions,
            values: values.into(),
            opener,
        })
    }

    /// The files.
    pub fn files(&self) -> &[DatasetFile] {
        &self.files
    }

    /// The partition columns (appended after the files' columns).
    pub fn partition_fields(&self) -> &[Field] {
        &self.partitions
    }

    /// The dataset's columns: the files' unified `columns` (from [`open`](Self::open)),
    /// then the partition columns.
    pub fn with_partitions(&self, columns: &Schema) -> SchemaRef {
        let fields = columns
            .fields()
            .iter()
            .cloned()
            .chain(self.partitions.iter().map(|f| Arc::new(f.clone())));
        SchemaRef::new(Schema::new_with_metadata(
            fields.collect::<Vec<_>>(),
            columns.metadata().clone(),
        ))
    }

    /// The files `filter` may select rows of, judged by their partition values alone
    /// (nothing is opened).
    pub fn keep(&self, filter: Option<&Expr>) -> Result<Vec<usize>> {
        let mut kept = Vec::new();
        for (i, vals) in self.values.iter().enumerate() {
            let consts = self.constants(vals);
            let keep = match filter {
                None => true,
                Some(f) => !matches!(specialize(f, &consts, true)?, Tri::False),
            };
            if keep {
                kept.push(i);
            }
        }
        Ok(kept)
    }

    /// The zone map of `rows` rows of file `file` in a column of the dataset it does not
    /// store: a partition column (its value, or null) or a column of other files only
    /// (null). The bounds are exact: every row holds the value. `None` for a file the
    /// dataset lacks.
    pub fn constant_stats(&self, file: usize, column: &str, rows: u64) -> Option<ChunkStats> {
        let vals = self.values.get(file)?;
        let constant = match self.partitions.iter().position(|f| f.name() == column) {
            Some(k) => vals.get(k)?,
            None => &Constant::Null,
        };
        let value = match constant {
            Constant::Null => None,
            Constant::Int(v) => Some(Scalar::Int(i128::from(*v))),
            Constant::Str(s) => Some(Scalar::Bytes(s.as_bytes().to_vec())),
        };
        Some(ChunkStats {
            null_count: if value.is_none() { rows } else { 0 },
            min: value.clone(),
            max: value,
            has_nan: false,
            // One value: it never decreases, nor increases.
            sorted: true,
            descending: true,
        })
    }

    /// The zone map of column `name` in block `block` of file `index` (opened as `table`,
    /// whose schema is `file_schema`), and whether its bounds are exact. A column the
    /// file lacks (a partition column, or one of other files only) holds one value there:
    /// its partition value or null ([`constant_stats`](Self::constant_stats)).
    pub fn block_zone<'a>(
        &self,
        (index, table): (usize, &'a Table),
        file_schema: &Schema,
        block: usize,
        name: &str,
    ) -> Option<(Cow<'a, ChunkStats>, bool)> {
        let Ok(c) = file_schema.index_of(name) else {
            let constant = self.constant_stats(index, name, table.block_rows(block));
            return constant.map(|z| (Cow::Owned(z), true));
        };
        let exact = table.exact_block_stats(block, c).is_some();
        Some((Cow::Borrowed(table.block_stats(block, c)?), exact))
    }

    /// The columns of `schema` (positions) sorted over `blocks` (position in `files`,
    /// block) in their order, `files` holding each file's index in the dataset and its
    /// table: each non-empty block's chunk holds no null, never decreases, and starts at
    /// or above the largest value of the block before (bounds enclose the values, exact
    /// or not), or the same the other way round. Rows read from those blocks in order,
    /// or from a subsequence of them, come sorted on these columns.
    pub fn sorted_columns(
        &self,
        files: &[(usize, &Table)],
        schema: &Schema,
        blocks: &[(usize, usize)],
    ) -> SortedColumns {
        let file_schemas: Vec<_> = files.iter().map(|(_, t)| t.schema()).collect();
        let sorted = |name: &str, descending: bool| {
            let chunks = (blocks.iter())
                .filter(|&&(f, b)| files[f].1.block_rows(b) > 0)
                .map(|&(f, b)| Some(self.block_zone(files[f], &file_schemas[f], b, name)?.0));
            ChunkStats::sorted_over(chunks, descending)
        };
        let fields = schema.fields();
        SortedColumns::find(fields.len(), |i, descending| {
            sorted(fields[i].name(), descending)
        })
    }

    fn constants<'a>(&'a self, vals: &'a [Constant]) -> HashMap<&'a str, &'a Constant> {
        self.partitions
            .iter()
            .zip(vals)
            .map(|(f, v)| (f.name().as_str(), v))
            .collect()
    }

    /// A scan of the dataset.
    pub fn scan(&self) -> DatasetScanBuilder {
        DatasetScanBuilder {
            dataset: self.clone(),
            projection: None,
            filter: None,
            limit: None,
            batch_size: None,
            rows: None,
            threads: 1,
        }
    }

    /// Opens the files `kept` and unifies their schemas (see the module docs); returns
    /// the tables and the unified schema of the files' columns.
    pub fn open(&self, kept: &[usize]) -> Result<(Vec<Table>, SchemaRef)> {
        let mut tables = Vec::with_capacity(kept.len());
        let mut fields: Vec<Field> = Vec::new();
        let mut first_of: Vec<usize> = Vec::new();
        let mut metadata = HashMap::new();
        for (n, &i) in kept.iter().enumerate() {
            let file = &self.files[i];
            let table = (self.opener)(file)?;
            let schema = table.schema();
            if n == 0 {
                metadata = schema.metadata().clone();
            } else if !schema
                .fields()
                .iter()
                .any(|f| fields.iter().any(|g| g.name() == f.name()))
            {
                // Columns are matched by name; files sharing none are different tables.
                return Err(Error::Type(format!(
                    "{} and {} cannot be one dataset: they have no column in common",
                    self.files[kept[0]].location, file.location
                )));
            }
            for field in schema.fields() {
                if let Some(p) = self.partitions.iter().find(|p| p.name() == field.name()) {
                    return Err(Error::Invalid(format!(
                        "{}: column '{}' is also a partition key of the dataset",
                        file.location,
                        p.name()
                    )));
                }
                match fields.iter().position(|f| f.name() == field.name()) {
                    None => {
                        // A column that earlier files lack is null there.
                        let nullable = field.is_nullable() || n > 0;
                        fields.push(field.as_ref().clone().with_nullable(nullable));
                        first_of.push(i);
                    }
                    Some(k) => {
                        let ty = unify(fields[k].data_type(), field.data_type()).ok_or_else(|| {
                            Error::Type(format!(
                                "{} and {} cannot be one dataset: column '{}' is {} in one and {} in the other",
                                self.files[first_of[k]].location,
                                file.location,
                                field.name(),
                                fields[k].data_type(),
                                field.data_type()
                            ))
                        })?;
                        let nullable = fields[k].is_nullable() || field.is_nullable();
                        fields[k] = fields[k].clone().with_data_type(ty).with_nullable(nullable);
                    }
                }
            }
            tables.push(table);
        }
        // A column that later files lack is null there.
        for f in fields.iter_mut() {
            let everywhere = tables
                .iter()
                .all(|t| t.schema().field_with_name(f.name()).is_ok());
            if !everywhere {
                *f = f.clone().with_nullable(true);
            }
        }
        Ok((
            tables,
            SchemaRef::new(Schema::new_with_metadata(fields, metadata)),
        ))
    }

    /// A scan of file `index`, opened as `table`, returning the columns of `schema`
    /// (named among `columns`, the files' unified columns from [`open`](Self::open), and
    /// the partition columns). `filter` is specialised to the file: leaves on partition
    /// columns and on columns the file lacks are decided once (`None` when that makes it
    /// false for every row: the file is not read). `configure` sets the rest of the
    /// file's scan (rows, limit, threads, batch size).
    pub fn scan_file(
        &self,
        index: usize,
        table: &Table,
        columns: &Schema,
        schema: SchemaRef,
        filter: Option<&Expr>,
        configure: impl FnOnce(ScanBuilder) -> ScanBuilder,
    ) -> Result<Option<FileScan>> {
        let file = self
            .files
            .get(index)
            .ok_or_else(|| Error::Invalid(format!("a dataset has no file {index}")))?;
        let file_schema = table.schema();
        // Partition values, and nulls for the dataset's columns this file lacks.
        let mut consts: HashMap<&str, &Constant> = self.constants(&self.values[index]);
        for field in columns.fields() {
            if file_schema.field_with_name(field.name()).is_err() {
                consts.insert(field.name().as_str(), &Constant::Null);
            }
        }
        let filter = match filter {
            None => None,
            Some(e) => match specialize(e, &consts, true)
                .map_err(|e| Error::Type(format!("{}: {e}", file.location)))?
            {
                Tri::False => return Ok(None),
                Tri::True => None,
                Tri::Expr(e) => Some(e),
            },
        };
        let mut read: Vec<String> = Vec::new();
        let mut out = Vec::with_capacity(schema.fields().len());
        for f in schema.fields() {
            // A struct's field (`s.a`) is null where the file lacks its struct.
            let root = (f.name().match_indices('.'))
                .map(|(at, _)| &f.name()[..at])
                .find(|r| consts.get(r).is_some_and(|c| matches!(c, Constant::Null)));
            match root.map_or_else(|| consts.get(f.name().as_str()), |r| consts.get(r)) {
                Some(c) => out.push(Err((*c).clone())),
                None => {
                    out.push(Ok(read.len()));
                    read.push(f.name().clone());
                }
            }
        }
        let projected = read.len();
        let mut builder = configure(table.scan().project(read));
        if let Some(e) = filter {
            builder = builder.filter(e);
        }
        let scan = builder.build()?;
        // Columns the configured scan returns past the projected ones (the count of
        // `count_selected`) follow the dataset's as they come.
        let returned = scan.schema();
        let mut schema = schema;
        if let Some(extra) = returned.fields().get(projected..)
            && !extra.is_empty()
        {
            out.extend((projected..returned.fields().len()).map(Ok));
            let fields: Vec<_> = schema.fields().iter().chain(extra).cloned().collect();
            schema = SchemaRef::new(Schema::new_with_metadata(fields, schema.metadata().clone()));
        }
        Ok(Some(FileScan {
            scan,
            schema,
            columns: out,
        }))
    }
}

/// The type two files' columns of one name unify to: the same type, or the wider of two
/// integers of one signedness.
fn unify(a: &DataType, b: &DataType) -> Option<DataType> {
    use DataType::*;
    if a == b {
        return Some(a.clone());
    }
    let rank = |t: &DataType| match t {
        Int8 => Some((true, 1)),
        Int16 => Some((true, 2)),
        Int32 => Some((true, 4)),
        Int64 => Some((true, 8)),
        UInt8 => Some((false, 1)),
        UInt16 => Some((false, 2)),
        UInt32 => Some((false, 4)),
        UInt64 => Some((false, 8)),
        _ => None,
    };
    match (rank(a), rank(b)) {
        (Some((sa, wa)), Some((sb, wb))) if sa == sb => {
            Some(if wa >= wb { a.clone() } else { b.clone() })
        }
        _ => None,
    }
}

/// A filter specialised to one file.
#[derive(Debug, Clone)]
enum Tri {
    True,
    False,
    /// What is left to evaluate on the file's own columns.
    Expr(Expr),
}

/// `expr` with every leaf on a constant column decided. `positive`: the leaf is under an
/// even number of negations. A null leaf (a comparison with a null constant) is unknown
/// in SQL; a row is selected only when the whole filter is true, so under an even number
/// of negations unknown acts as false, under an odd number as true.
fn specialize(expr: &Expr, consts: &HashMap<&str, &Constant>, positive: bool) -> Result<Tri> {
    let truth = |t: Option<bool>| match t {
        Some(true) => Tri::True,
        Some(false) => Tri::False,
        None if positive => Tri::False,
        None => Tri::True,
    };
    Ok(match expr {
        Expr::Cmp { column, op, value } => match consts.get(column.as_str()) {
            None => Tri::Expr(expr.clone()),
            Some(c) => truth(compare(column, c, value)?.map(|o| holds(*op, o))),
        },
        Expr::Between { column, low, high } => match consts.get(column.as_str()) {
            None => Tri::Expr(expr.clone()),
            Some(c) => {
                let lo = compare(column, c, low)?;
                let hi = compare(column, c, high)?;
                truth(lo.zip(hi).map(|(lo, hi)| lo.is_ge() && hi.is_le()))
            }
        },
        Expr::In { column, values } => match consts.get(column.as_str()) {
            None => Tri::Expr(expr.clone()),
            Some(c) => {
                let mut any = Some(false);
                for v in values {
                    match compare(column, c, v)? {
                        Some(o) if o.is_eq() => any = Some(true),
                        Some(_) => {}
                        None => any = any.filter(|&a| a),
                    }
                }
                truth(any)
            }
        },
        Expr::IsNull { column, negated } => match consts.get(column.as_str()) {
            None => Tri::Expr(expr.clone()),
            Some(c) => truth(Some((**c == Constant::Null) != *negated)),
        },
        Expr::Like { column, pattern } => match consts.get(column.as_str()) {
            None => Tri::Expr(expr.clone()),
            Some(c) => {
                let p = crate::like::Pattern::parse(pattern);
                truth(text(column, c)?.map(|s| p.matches(s.as_bytes())))
            }
        },
        Expr::StartsWith { column, prefix } => match consts.get(column.as_str()) {
            None => Tri::Expr(expr.clone()),
            Some(c) => truth(text(column, c)?.map(|s| s.starts_with(prefix.as_str()))),
        },
        Expr::ColumnCmp { left, right, .. } => {
            let constant = [left, right]
                .into_iter()
                .find_map(|n| Some((n, *consts.get(n.as_str())?)));
            match constant {
                None => Tri::Expr(expr.clone()),
                // A column the file lacks is null: compared with anything, unknown.
                Some((_, Constant::Null)) => truth(None),
                Some((name, _)) => return Err(unsupported(name, "compared with another column")),
            }
        }
        Expr::Udf(udf) => {
            if let Some(name) = udf.columns.iter().find(|n| consts.contains_key(n.as_str())) {
                return Err(unsupported(name, "passed to a function"));
            }
            Tri::Expr(expr.clone())
        }
        Expr::InBloom { column, .. } => match consts.get(column.as_str()) {
            None => Tri::Expr(expr.clone()),
            // Null is in no key set: unknown, as for IN.
            Some(Constant::Null) => truth(None),
            Some(_) => return Err(unsupported(column, "a join key")),
        },
        Expr::Not(e) => match specialize(e, consts, !positive)? {
            Tri::True => Tri::False,
            Tri::False => Tri::True,
            Tri::Expr(e) => Tri::Expr(Expr::Not(Box::new(e))),
        },
        Expr::And(items) => {
            let mut rest = Vec::new();
            for e in items {
                match specialize(e, consts, positive)? {
                    Tri::False => return Ok(Tri::False),
                    Tri::True => {}
                    Tri::Expr(e) => rest.push(e),
                }
            }
            match rest.len() {
                0 => Tri::True,
                1 => Tri::Expr(rest.remove(0)),
                _ => Tri::Expr(Expr::And(rest)),
            }
        }
        Expr::Or(items) => {
            let mut rest = Vec::new();
            for e in items {
                match specialize(e, consts, positive)? {
                    Tri::True => return Ok(Tri::True),
                    Tri::False => {}
                    Tri::Expr(e) => rest.push(e),
                }
            }
            match rest.len() {
                0 => Tri::False,
                1 => Tri::Expr(rest.remove(0)),
                _ => Tri::Expr(Expr::Or(rest)),
            }
        }
    })
}

fn unsupported(column: &str, how: &str) -> Error {
    Error::Type(format!(
        "column '{column}' is a partition column (or missing from a file) and cannot be {how}"
    ))
}

/// Whether an ordering satisfies `op`.
fn holds(op: CmpOp, o: std::cmp::Ordering) -> bool {
    match op {
        CmpOp::Eq => o.is_eq(),
        CmpOp::Ne => o.is_ne(),
        CmpOp::Lt => o.is_lt(),
        CmpOp::Le => o.is_le(),
        CmpOp::Gt => o.is_gt(),
        CmpOp::Ge => o.is_ge(),
    }
}

/// How a constant compares with a literal (`None`: the constant is null). A literal of
/// another kind than the constant is an error, as it is on a stored column.
fn compare(column: &str, c: &Constant, lit: &Literal) -> Result<Option<std::cmp::Ordering>> {
    let mismatch = || {
        Error::Type(format!(
            "partition column '{column}' holds {}; it cannot be compared with {lit:?}",
            match c {
                Constant::Int(_) => "integers",
                Constant::Str(_) => "strings",
                Constant::Null => "nulls",
            }
        ))
    };
    Ok(match (c, lit) {
        (Constant::Null, _) => None,
        (Constant::Int(i), Literal::Int(l)) => Some(i128::from(*i).cmp(l)),
        (Constant::Int(i), Literal::Decimal { unscaled, scale }) => {
            // i against unscaled × 10^-scale, compared exactly when it fits.
            let (a, b) = match u32::try_from(*scale) {
                Ok(s) => (
                    10i128
                        .checked_pow(s)
                        .and_then(|p| p.checked_mul(i128::from(*i))),
                    Some(*unscaled),
                ),
                Err(_) => (
                    Some(i128::from(*i)),
                    10i128
                        .checked_pow(scale.unsigned_abs())
                        .and_then(|p| p.checked_mul(*unscaled)),
                ),
            };
            match (a, b) {
                (Some(a), Some(b)) => Some(a.cmp(&b)),
                _ => return Err(mismatch()),
            }
        }
        (Constant::Int(i), Literal::Float(f)) => (*i as f64).partial_cmp(f),
        (Constant::Str(s), Literal::Str(l)) => Some(s.as_str().cmp(l.as_str())),
        _ => return Err(mismatch()),
    })
}

/// A string constant's text (`None`: null); an integer is an error.
fn text<'a>(column: &str, c: &'a Constant) -> Result<Option<&'a str>> {
    match c {
        Constant::Str(s) => Ok(Some(s)),
        Constant::Null => Ok(None),
        Constant::Int(_) => Err(Error::Type(format!(
            "partition column '{column}' holds integers; LIKE and starts_with apply to strings"
        ))),
    }
}

/// Scan settings for a [`Dataset`]; the same as a single file's.
pub struct DatasetScanBuilder {
    dataset: Dataset,
    projection: Option<Vec<String>>,
    filter: Option<Expr>,
    limit: Option<u64>,
    batch_size: Option<usize>,
    rows: Option<std::ops::Range<u64>>,
    threads: usize,
}

impl DatasetScanBuilder {
    /// Only rows `range` by row number before filtering (a dataset of one file only).
    pub fn rows(mut self, range: std::ops::Range<u64>) -> Self {
        self.rows = Some(range);
        self
    }

    /// Columns to return, by name (default: the files' columns, then the partitions).
    pub fn project<S: Into<String>>(mut self, columns: impl IntoIterator<Item = S>) -> Self {
        self.projection = Some(columns.into_iter().map(Into::into).collect());
        self
    }

    /// Only rows where `expr` is true.
    pub fn filter(mut self, expr: Expr) -> Self {
        self.filter = Some(expr);
        self
    }

    /// At most `n` rows.
    pub fn limit(mut self, n: u64) -> Self {
        self.limit = Some(n);
        self
    }

    /// Rows per batch.
    pub fn batch_size(mut self, n: usize) -> Self {
        self.batch_size = Some(n);
        self
    }

    /// Threads per file's scan.
    pub fn threads(mut self, n: usize) -> Self {
        self.threads = n.max(1);
        self
    }

    /// Prunes files by partition, opens the rest and checks the settings.
    pub fn build(self) -> Result<DatasetScan> {
        let d = &self.dataset;
        if self.rows.is_some() && d.files.len() > 1 {
            return Err(Error::Invalid(format!(
                "a row range applies to one file, not to a dataset of {} files",
                d.files.len()
            )));
        }
        let kept = d.keep(self.filter.as_ref())?;
        let (tables, file_schema) = match kept.is_empty() {
            // Every file is pruned: the first one still tells the columns.
            true => {
                let (_, schema) = d.open(&[0])?;
                (Vec::new(), schema)
            }
            false => d.open(&kept)?,
        };
        let all_schema = d.with_partitions(&file_schema);
        let all = all_schema.fields();
        let names: Vec<String> = match &self.projection {
            Some(p) => p.clone(),
            None => all.iter().map(|f| f.name().clone()).collect(),
        };
        // Unknown columns are reported as a single file's scan reports them; a struct's
        // field is named by its path.
        let fields = names
            .iter()
            .map(|n| field_or_path(&all_schema, n))
            .collect::<Result<Vec<Field>>>()?;
        if let Some(f) = &self.filter {
            for c in f.columns() {
                field_or_path(&all_schema, &c)?;
            }
        }
        let schema = SchemaRef::new(Schema::new_with_metadata(
            fields,
            file_schema.metadata().clone(),
        ));
        // The files are read in turn, each in its order: a column sorted over all their
        // blocks comes sorted in any subsequence the filter, rows and limit leave.
        let sorted = match tables.is_empty() {
            true => SortedColumns::default(),
            false => {
                let opened: Vec<(usize, &Table)> = kept.iter().copied().zip(&tables).collect();
                let blocks: Vec<(usize, usize)> = (tables.iter().enumerate())
                    .flat_map(|(f, t)| (0..t.num_blocks()).map(move |b| (f, b)))
                    .collect();
                d.sorted_columns(&opened, &schema, &blocks)
            }
        };
        let files = kept
            .iter()
            .zip(tables)
            .map(|(&i, table)| OpenFile { index: i, table })
            .collect();
        Ok(DatasetScan {
            dataset: self.dataset.clone(),
            schema,
            file_schema,
            filter: self.filter,
            remaining: self.limit,
            batch_size: self.batch_size,
            rows: self.rows,
            threads: self.threads,
            files,
            sorted,
            current: None,
            stats: ScanStats::default(),
            files_total: d.files.len() as u64,
            files_pruned: (d.files.len() - kept.len()) as u64,
            files_opened: kept.len().max(1) as u64,
        })
    }
}

/// A file of the scan, opened.
struct OpenFile {
    index: usize,
    table: Table,
}

/// The scan of one file of a dataset: its batches in the dataset's columns, with the
/// partition values (and the nulls of columns the file lacks) added and integers widened
/// ([`Dataset::scan_file`]).
pub struct FileScan {
    scan: Scan,
    schema: SchemaRef,
    /// Per output column: the file scan's column, or a constant.
    columns: Vec<Result<usize, Constant>>,
}

impl FileScan {
    /// What the file's scan has done so far.
    pub fn stats(&self) -> &ScanStats {
        self.scan.stats()
    }

    /// A file's batch as the dataset's: constants added, integers widened.
    fn widen(&self, batch: RecordBatch) -> Result<RecordBatch> {
        let rows = batch.num_rows();
        let mut out: Vec<ArrayRef> = Vec::with_capacity(self.columns.len());
        for (field, col) in self.schema.fields().iter().zip(&self.columns) {
            let array: ArrayRef = match col {
                Ok(i) => batch.column(*i).clone(),
                Err(Constant::Null) => arrow_array::new_null_array(field.data_type(), rows),
                Err(Constant::Int(v)) => Arc::new(Int64Array::from_value(*v, rows)),
                Err(Constant::Str(s)) => {
                    Arc::new(StringArray::from_iter_values(std::iter::repeat_n(s, rows)))
                }
            };
            let array = match array.data_type() == field.data_type() {
                true => array,
                false => arrow_cast::cast(&array, field.data_type())?,
            };
            out.push(array);
        }
        let options = RecordBatchOptions::new().with_row_count(Some(rows));
        Ok(RecordBatch::try_new_with_options(
            self.schema.clone(),
            out,
            &options,
        )?)
    }
}

impl Iterator for FileScan {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Result<RecordBatch>> {
        let batch = self.scan.next()?;
        Some(batch.and_then(|b| self.widen(b)))
    }
}

/// A running scan of a dataset: an iterator of record batches, file after file.
pub struct DatasetScan {
    dataset: Dataset,
    schema: SchemaRef,
    file_schema: SchemaRef,
    filter: Option<Expr>,
    remaining: Option<u64>,
    batch_size: Option<usize>,
    rows: Option<std::ops::Range<u64>>,
    threads: usize,
    files: VecDeque<OpenFile>,
    sorted: SortedColumns,
    current: Option<FileScan>,
    stats: ScanStats,
    files_total: u64,
    files_pruned: u64,
    files_opened: u64,
}

/// The columns (positions) rows come sorted on, in either order
/// ([`Dataset::sorted_columns`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SortedColumns {
    /// Every sorted column.
    pub all: Vec<usize>,
    /// Those sorted descending.
    pub descending: Vec<usize>,
}

impl SortedColumns {
    /// Of columns `0..columns`, those `sorted(c, descending)` says are sorted ascending
    /// (asked first) or descending.
    pub fn find(columns: usize, sorted: impl Fn(usize, bool) -> bool) -> SortedColumns {
        let mut out = SortedColumns::default();
        for c in 0..columns {
            if sorted(c, false) {
                out.all.push(c);
            } else if sorted(c, true) {
                out.all.push(c);
                out.descending.push(c);
            }
        }
        out
    }

    /// Whether column `c` is sorted descending.
    pub fn is_descending(&self, c: usize) -> bool {
        self.descending.contains(&c)
    }
}

/// What a dataset scan did with files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FileCounts {
    /// Files in the dataset.
    pub total: u64,
    /// Files dropped by their partition values or ruled out by the filter as a whole
    /// (never read past the footer, most never opened).
    pub pruned: u64,
    /// Files opened (their footers read).
    pub opened: u64,
}

impl DatasetScan {
    /// The schema of the batches.
    pub fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    /// What the files' scans did, added up (the current file's once it ends).
    pub fn stats(&self) -> &ScanStats {
        &self.stats
    }

    /// The columns of [`schema`](Self::schema) whose values come sorted, ascending or
    /// descending and without a null, over every row the scan returns: found from the
    /// zone maps of the files' blocks ([`Dataset::sorted_columns`]).
    pub fn sorted_columns(&self) -> &SortedColumns {
        &self.sorted
    }

    /// Files pruned and opened.
    pub fn file_counts(&self) -> FileCounts {
        FileCounts {
            total: self.files_total,
            pruned: self.files_pruned,
            opened: self.files_opened,
        }
    }

    /// Starts the next file's scan; `None` when no file is left.
    fn next_file(&mut self) -> Result<Option<FileScan>> {
        while let Some(f) = self.files.pop_front() {
            let (threads, remaining) = (self.threads, self.remaining);
            let (batch_size, rows) = (self.batch_size, self.rows.clone());
            let scan = self.dataset.scan_file(
                f.index,
                &f.table,
                &self.file_schema,
                self.schema.clone(),
                self.filter.as_ref(),
                |mut builder| {
                    builder = builder.threads(threads);
                    if let Some(n) = remaining {
                        builder = builder.limit(n);
                    }
                    if let Some(n) = batch_size {
                        builder = builder.batch_size(n);
                    }
                    if let Some(r) = rows {
                        builder = builder.rows(r);
                    }
                    builder
                },
            )?;
            match scan {
                Some(scan) => return Ok(Some(scan)),
                None => self.files_pruned += 1,
            }
        }
        Ok(None)
    }
}

impl Iterator for DatasetScan {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Result<RecordBatch>> {
        loop {
            if self.remaining == Some(0) {
                // The file's scan ends at the same limit; ending it settles its counters.
                if let Some(mut c) = self.current.take() {
                    while c.scan.next().is_some() {}
                    self.stats.add(c.scan.stats());
                }
                return None;
            }
            if self.current.is_none() {
                match self.next_file() {
                    Ok(Some(c)) => self.current = Some(c),
                    Ok(None) => return None,
                    Err(e) => {
                        self.files.clear();
                        return Some(Err(e));
                    }
                }
            }
            let current = self.current.as_mut()?;
            match current.next() {
                Some(Ok(batch)) => {
                    if let Some(r) = &mut self.remaining {
                        *r = r.saturating_sub(batch.num_rows() as u64);
                    }
                    return Some(Ok(batch));
                }
                Some(Err(e)) => {
                    self.files.clear();
                    self.current = None;
                    return Some(Err(e));
                }
                None => {
                    if let Some(c) = self.current.take() {
                        self.stats.add(c.scan.stats());
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::col;

    fn consts(pairs: &[(&'static str, Constant)]) -> Vec<(&'static str, Constant)> {
        pairs.to_vec()
    }

    /// The specialised filter, shown (expressions compare by their text).
    fn run(e: &Expr, pairs: &[(&'static str, Constant)]) -> Result<String> {
        let owned = consts(pairs);
        let map: HashMap<&str, &Constant> = owned.iter().map(|(k, v)| (*k, v)).collect();
        specialize(e, &map, true).map(|t| format!("{t:?}"))
    }

    fn show(t: Tri) -> String {
        format!("{t:?}")
    }

    #[test]
    fn partition_leaves_are_decided_with_sql_null_logic() -> Result<()> {
        let year = [("year", Constant::Int(2024))];
        assert_eq!(run(&col("year").eq(2024), &year)?, show(Tri::True));
        assert_eq!(run(&col("year").gt(2024), &year)?, show(Tri::False));
        let rest = col("x").lt(5);
        assert_eq!(
            run(&Expr::And(vec![col("year").eq(2024), rest.clone()]), &year)?,
            show(Tri::Expr(rest.clone()))
        );
        assert_eq!(
            run(&Expr::Or(vec![col("year").eq(2023), rest.clone()]), &year)?,
            show(Tri::Expr(rest.clone()))
        );
        // A null partition: `year = 1` and `not (year = 1)` are both unknown, so both
        // select nothing; `year is null` holds.
        let null = [("year", Constant::Null)];
        assert_eq!(run(&col("year").eq(1), &null)?, show(Tri::False));
        assert_eq!(
            run(&Expr::Not(Box::new(col("year").eq(1))), &null)?,
            show(Tri::False)
        );
        assert_eq!(run(&col("year").is_null(), &null)?, show(Tri::True));
        // not (year = 1 and x < 5) with year null: true exactly where x < 5 is false.
        let e = Expr::Not(Box::new(Expr::And(vec![col("year").eq(1), rest.clone()])));
        assert_eq!(
            run(&e, &null)?,
            show(Tri::Expr(Expr::Not(Box::new(rest.clone()))))
        );
        let s = [("region", Constant::Str("eu-west".into()))];
        assert_eq!(run(&col("region").like("eu-%"), &s)?, show(Tri::True));
        assert!(run(&col("year").eq("2024"), &year).is_err());
        assert!(run(&col("region").lt(3), &s).is_err());
        // A column compared with another: undecidable for a partition value, unknown
        // for a column the file lacks (null).
        let cmp = Expr::ColumnCmp {
            left: "year".into(),
            op: CmpOp::Lt,
            right: "x".into(),
        };
        assert!(run(&cmp, &year).is_err());
        assert_eq!(run(&cmp, &null)?, show(Tri::False));
        assert_eq!(run(&Expr::Not(Box::new(cmp)), &null)?, show(Tri::False));
        Ok(())
    }

    #[test]
    fn integers_of_one_signedness_widen() {
        assert_eq!(
            unify(&DataType::Int32, &DataType::Int64),
            Some(DataType::Int64)
        );
        assert_eq!(
            unify(&DataType::UInt16, &DataType::UInt8),
            Some(DataType::UInt16)
        );
        assert_eq!(unify(&DataType::Int32, &DataType::UInt32), None);
        assert_eq!(unify(&DataType::Utf8, &DataType::Int64), None);
    }
}
