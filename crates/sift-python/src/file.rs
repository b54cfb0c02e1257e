//! `sift.File` (an open Sift or Parquet file) and `Scanner` (one running scan of it).

use std::sync::{Arc, Mutex, PoisonError};

use arrow::array::{RecordBatch, RecordBatchIterator, RecordBatchReader};
use arrow::datatypes::SchemaRef;
use arrow::error::ArrowError;
use arrow_pyarrow::{IntoPyArrow, ToPyArrow};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use sift_scan::{Expr, FileScan, Scan, ScanStats, Table, parse_filter};

use crate::errors::{SiftError, format_error, scan_error};

/// Hive partition values: `(key, value or None)` pairs, outermost first.
pub(crate) type Partitions = Vec<(String, Option<String>)>;

/// The files a location names (a file, a directory, a glob or an object-store URL), each
/// with its Hive partition values: `[(location, [(key, value or None), …]), …]`.
#[pyfunction]
#[pyo3(signature = (location, storage_options = None))]
pub fn resolve(
    py: Python<'_>,
    location: String,
    storage_options: Option<Vec<(String, String)>>,
) -> PyResult<Vec<(String, Partitions)>> {
    let options = store_options(storage_options);
    let files = py
        .detach(|| sift_store::resolve(&location, &options))
        .map_err(store_error)?;
    Ok(files
        .into_iter()
        .map(|f| (f.location, f.partitions))
        .collect())
}

/// Object-store settings: the client's keys (`aws_endpoint`, `aws_region`, …) on top of
/// the environment.
pub(crate) fn store_options(config: Option<Vec<(String, String)>>) -> sift_store::StoreOptions {
    sift_store::StoreOptions {
        config: config.unwrap_or_default(),
        ..Default::default()
    }
}

/// A store error as the package's exception (a scan error keeps its kind).
pub(crate) fn store_error(e: sift_store::StoreError) -> PyErr {
    match e {
        sift_store::StoreError::Scan(e) => scan_error(e),
        e => SiftError::new_err(e.to_string()),
    }
}

/// An open Sift or Parquet file (by its extension). The footer is read once; every scan
/// of the object reuses it.
#[pyclass(module = "sift._sift", frozen)]
pub struct File {
    pub(crate) table: Table,
}

#[pymethods]
impl File {
    #[new]
    #[pyo3(signature = (path, verify_checksums = true, storage_options = None))]
    fn new(
        py: Python<'_>,
        path: String,
        verify_checksums: bool,
        storage_options: Option<Vec<(String, String)>>,
    ) -> PyResult<Self> {
        let options = store_options(storage_options);
        let table = py
            .detach(|| sift_store::open_table(&path, &options, verify_checksums))
            .map_err(store_error)?;
        Ok(File { table })
    }

    /// The local path or the object's URL (a string: a path type would fold `s3://`).
    #[getter]
    fn path(&self) -> String {
        self.table.path().to_string_lossy().into_owned()
    }

    #[getter]
    fn schema<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.table.schema().as_ref().to_pyarrow(py)
    }

    #[getter]
    fn num_rows(&self) -> u64 {
        self.table.num_rows()
    }

    #[getter]
    fn num_blocks(&self) -> usize {
        self.table.num_blocks()
    }

    /// Rows of every block (Parquet: row group), in order.
    #[getter]
    fn block_rows(&self) -> Vec<u64> {
        (0..self.table.num_blocks())
            .map(|b| self.table.block_rows(b))
            .collect()
    }

    /// Blocks (Parquet: row groups) with their rows, and per column the encoding, stored
    /// bytes, null count and zone-map bounds.
    fn metadata<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        metadata(py, &self.table)
    }

    /// Starts a scan. `filter` is Sift's filter text; `expression` a pickled
    /// `pyarrow.compute.Expression`, of which the part Sift evaluates exactly is pushed
    /// into the scan (see `translate_expression`); the caller applies the rest.
    #[pyo3(signature = (columns = None, filter = None, expression = None, limit = None,
                        read_dictionary = None, threads = None, batch_size = None, rows = None))]
    #[allow(clippy::too_many_arguments)]
    fn scan(
        &self,
        py: Python<'_>,
        columns: Option<Vec<String>>,
        filter: Option<String>,
        expression: Option<Vec<u8>>,
        limit: Option<u64>,
        read_dictionary: Option<Vec<String>>,
        threads: Option<usize>,
        batch_size: Option<usize>,
        rows: Option<(u64, u64)>,
    ) -> PyResult<Scanner> {
        let filters = filters(filter, expression, &self.table.schema())?;
        let mut builder = self.table.scan().threads(crate::threads(threads));
        if let Some(columns) = columns {
            builder = builder.project(columns);
        }
        for f in filters {
            builder = builder.filter(f);
        }
        if let Some(n) = limit {
            builder = builder.limit(n);
        }
        if let Some(names) = read_dictionary {
            builder = builder.read_dictionary(names);
        }
        if let Some(n) = batch_size {
            builder = builder.batch_size(n);
        }
        if let Some((start, end)) = rows {
            builder = builder.rows(start..end);
        }
        let scan = py.detach(|| builder.build()).map_err(scan_error)?;
        Ok(Scanner::new(scan.schema(), Box::new(scan)))
    }
}

/// A scan's filters: Sift's filter text, and the part of a pickled
/// `pyarrow.compute.Expression` that Sift evaluates exactly (see `translate_expression`),
/// for a table of `schema`.
pub(crate) fn filters(
    text: Option<String>,
    expression: Option<Vec<u8>>,
    schema: &arrow::datatypes::Schema,
) -> PyResult<Vec<Expr>> {
    let mut filters: Vec<Expr> = Vec::new();
    if let Some(text) = text {
        filters.push(parse_filter(&text).map_err(scan_error)?);
    }
    if let Some(bytes) = expression {
        filters.extend(crate::expression::translate(&bytes, schema)?.pushed);
    }
    Ok(filters)
}

/// What a [`Scanner`] reads: a file's scan, or a dataset file's.
pub(crate) trait Batches: Iterator<Item = sift_scan::Result<RecordBatch>> + Send {
    fn stats(&self) -> &ScanStats;
}

impl Batches for Scan {
    fn stats(&self) -> &ScanStats {
        Scan::stats(self)
    }
}

impl Batches for FileScan {
    fn stats(&self) -> &ScanStats {
        FileScan::stats(self)
    }
}

/// One scan: read it once, as a `pyarrow.Table` (`read_all`) or a
/// `pyarrow.RecordBatchReader` (`to_reader`); `stats` says what it did so far.
#[pyclass(module = "sift._sift", frozen)]
pub struct Scanner {
    schema: SchemaRef,
    scan: Mutex<Option<Box<dyn Batches>>>,
    stats: Arc<Mutex<ScanStats>>,
}

impl Scanner {
    pub(crate) fn new(schema: SchemaRef, scan: Box<dyn Batches>) -> Scanner {
        Scanner {
            schema,
            scan: Mutex::new(Some(scan)),
            stats: Arc::new(Mutex::new(ScanStats::default())),
        }
    }

    fn take(&self) -> PyResult<Box<dyn Batches>> {
        self.scan
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
            .ok_or_else(|| SiftError::new_err("this scan was already read"))
    }
}

#[pymethods]
impl Scanner {
    /// The schema of the scan's batches.
    #[getter]
    fn schema<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.schema.as_ref().to_pyarrow(py)
    }

    /// Reads the whole scan into a `pyarrow.Table` (zero-copy: pyarrow takes Sift's
    /// buffers). Ctrl-C stops it between batches with `KeyboardInterrupt`.
    fn read_all<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let mut scan = self.take()?;
        let mut batches = Vec::new();
        loop {
            let next = py.detach(|| scan.next());
            *self.stats.lock().unwrap_or_else(PoisonError::into_inner) = scan.stats().clone();
            py.check_signals()?;
            match next {
                Some(batch) => batches.push(batch.map_err(scan_error)?),
                None => break,
            }
        }
        batches_to_table(py, self.schema.clone(), batches)
    }

    /// The scan as a `pyarrow.RecordBatchReader`, read lazily through the Arrow C
    /// stream interface.
    fn to_reader<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let reader: Box<dyn RecordBatchReader + Send> = Box::new(StatsReader {
            scan: self.take()?,
            schema: self.schema.clone(),
            stats: self.stats.clone(),
        });
        reader.into_pyarrow(py)
    }

    /// What the scan did so far: blocks pruned by zone maps, blocks without a match,
    /// rows scanned and matched, values decoded, bytes read.
    #[getter]
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self
            .stats
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let d = PyDict::new(py);
        d.set_item("blocks_total", s.blocks_total)?;
        d.set_item("blocks_pruned", s.blocks_pruned)?;
        d.set_item("blocks_empty", s.blocks_empty)?;
        d.set_item("rows_scanned", s.rows_scanned)?;
        d.set_item("rows_matched", s.rows_matched)?;
        d.set_item("values_decoded", s.values_decoded)?;
        d.set_item("bytes_read", s.bytes_read)?;
        d.set_item("parquet_pages_in_place", s.parquet_pages_in_place)?;
        d.set_item("parquet_pages_unpacked", s.parquet_pages_unpacked)?;
        d.set_item("parquet_chunks_decoded", s.parquet_chunks_decoded)?;
        Ok(d)
    }
}

/// `batches` as a `pyarrow.Table`, handed over as one Arrow C stream: pyarrow imports the
/// schema once and every batch in C++, not one Python call per batch.
pub fn batches_to_table<'py>(
    py: Python<'py>,
    schema: SchemaRef,
    batches: Vec<RecordBatch>,
) -> PyResult<Bound<'py, PyAny>> {
    let reader: Box<dyn RecordBatchReader + Send> = Box::new(RecordBatchIterator::new(
        batches.into_iter().map(Ok),
        schema,
    ));
    reader.into_pyarrow(py)?.call_method0("read_all")
}

/// A scan as an Arrow record batch reader that keeps the scanner's statistics current.
struct StatsReader {
    scan: Box<dyn Batches>,
    schema: SchemaRef,
    stats: Arc<Mutex<ScanStats>>,
}

impl Iterator for StatsReader {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        let next = self.scan.next();
        *self.stats.lock().unwrap_or_else(PoisonError::into_inner) = self.scan.stats().clone();
        next.map(|r| r.map_err(|e| ArrowError::ExternalError(Box::new(e))))
    }
}

impl RecordBatchReader for StatsReader {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}

/// `File.metadata()`: the file's layout as Python values.
fn metadata<'py>(py: Python<'py>, table: &Table) -> PyResult<Bound<'py, PyDict>> {
    let schema = table.schema();
    // Sift files also say how each chunk is encoded and how many bytes it takes.
    let is_sift = sift_datafusion::has_extension(
        &table.path().to_string_lossy(),
        sift_datafusion::SIFT_EXTENSIONS,
    );
    let footer = if is_sift {
        let file = sift_format::SiftFile::open(table.path()).map_err(format_error)?;
        Some(file.decode_footer().map_err(format_error)?)
    } else {
        None
    };
    let blocks = PyList::empty(py);
    for b in 0..table.num_blocks() {
        let columns = PyList::empty(py);
        for (c, field) in schema.fields().iter().enumerate() {
            let col = PyDict::new(py);
            col.set_item("name", field.name())?;
            let chunk = footer
                .as_ref()
                .and_then(|f| f.blocks.get(b))
                .and_then(|block| block.columns.get(table.file_column(c)));
            col.set_item("encoding", chunk.map(|m| m.encoding.describe()))?;
            col.set_item("stored_bytes", chunk.map(|m| m.stored_bytes()))?;
            let zone = table.block_stats(b, c);
            col.set_item("null_count", zone.map(|z| z.null_count))?;
            let bound = |s: Option<&sift_format::Scalar>| -> PyResult<Py<PyAny>> {
                let value = s.and_then(|s| sift_datafusion::zone_bound(s, field.data_type()));
                match value.map(|v| v.to_array()) {
                    Some(Ok(array)) => Ok(array
                        .to_data()
                        .to_pyarrow(py)?
                        .get_item(0)?
                        .call_method0("as_py")?
                        .unbind()),
                    _ => Ok(py.None()),
                }
            };
            col.set_item("min", bound(zone.and_then(|z| z.min.as_ref()))?)?;
            col.set_item("max", bound(zone.and_then(|z| z.max.as_ref()))?)?;
            columns.append(col)?;
        }
        let block = PyDict::new(py);
        block.set_item("index", b)?;
        block.set_item("rows", table.block_rows(b))?;
        block.set_item("columns", columns)?;
        blocks.append(block)?;
    }
    let d = PyDict::new(py);
    d.set_item("path", table.path())?;
    d.set_item("format", if is_sift { "sift" } else { "parquet" })?;
    d.set_item("num_rows", table.num_rows())?;
    d.set_item("num_blocks", table.num_blocks())?;
    d.set_item("schema", schema.as_ref().to_pyarrow(py)?)?;
    d.set_item("blocks", blocks)?;
    Ok(d)
}
