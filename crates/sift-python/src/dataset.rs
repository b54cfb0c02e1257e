//! `_sift.Dataset`: the files of one or more locations as one table (see
//! [`sift_scan::Dataset`]): schemas unified, Hive partition values as columns, and each
//! file scanned with the filter specialised to it. `sift.dataset` (the Python half) builds
//! its `pyarrow.dataset` fragments on it.

use arrow::datatypes::{Field, Schema, SchemaRef};
use arrow_pyarrow::ToPyArrow;
use pyo3::prelude::*;
use sift_scan::{ScanStats, Table};

use crate::errors::{SiftError, scan_error};
use crate::file::{Batches, File, Partitions, Scanner, store_error, store_options};

/// Files opened as one table: every file's footer is read when it is made.
#[pyclass(module = "sift._sift", frozen)]
pub struct Dataset {
    dataset: sift_scan::Dataset,
    tables: Vec<Table>,
    /// The files' unified columns.
    columns: SchemaRef,
    /// `columns`, then the partition columns.
    schema: SchemaRef,
}

#[pymethods]
impl Dataset {
    #[new]
    #[pyo3(signature = (locations, storage_options = None, verify_checksums = true))]
    fn new(
        py: Python<'_>,
        locations: Vec<String>,
        storage_options: Option<Vec<(String, String)>>,
        verify_checksums: bool,
    ) -> PyResult<Self> {
        let options = store_options(storage_options);
        let (dataset, tables, columns) = py.detach(|| {
            let dataset = sift_store::open_dataset(&locations, &options, verify_checksums)
                .map_err(store_error)?;
            let all: Vec<usize> = (0..dataset.files().len()).collect();
            let (tables, columns) = dataset.open(&all).map_err(scan_error)?;
            Ok::<_, PyErr>((dataset, tables, columns))
        })?;
        let schema = dataset.with_partitions(&columns);
        Ok(Dataset {
            dataset,
            tables,
            columns,
            schema,
        })
    }

    /// The columns: the files' (unified), then the partition columns.
    #[getter]
    fn schema<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.schema.as_ref().to_pyarrow(py)
    }

    /// The files, in scan order.
    #[getter]
    fn files(&self) -> Vec<String> {
        self.dataset
            .files()
            .iter()
            .map(|f| f.location.clone())
            .collect()
    }

    /// File `i`, open.
    fn file(&self, i: usize) -> PyResult<File> {
        let table = self.table(i)?;
        Ok(File {
            table: table.clone(),
        })
    }

    /// The partition values of file `i`: `[(key, value or None), …]`.
    fn partitions(&self, i: usize) -> PyResult<Partitions> {
        self.table(i)?;
        Ok(self.dataset.files()[i].partitions.clone())
    }

    /// Starts a scan of file `i` (arguments as `File.scan`), returning the dataset's
    /// columns; a file whose partition values (or the columns it lacks) make the filter
    /// false for all its rows is not read, and its scan returns no rows.
    #[pyo3(signature = (i, columns = None, filter = None, expression = None, limit = None,
                        threads = None, batch_size = None, rows = None))]
    #[allow(clippy::too_many_arguments)]
    fn scan(
        &self,
        py: Python<'_>,
        i: usize,
        columns: Option<Vec<String>>,
        filter: Option<String>,
        expression: Option<Vec<u8>>,
        limit: Option<u64>,
        threads: Option<usize>,
        batch_size: Option<usize>,
        rows: Option<(u64, u64)>,
    ) -> PyResult<Scanner> {
        let table = self.table(i)?;
        let schema = match &columns {
            None => self.schema.clone(),
            Some(names) => {
                let fields = names
                    .iter()
                    .map(|n| {
                        self.schema.field_with_name(n).cloned().map_err(|_| {
                            SiftError::new_err(format!(
                                "no column '{n}' in the dataset (columns: {})",
                                self.schema
                                    .fields()
                                    .iter()
                                    .map(|f| f.name().as_str())
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            ))
                        })
                    })
                    .collect::<PyResult<Vec<Field>>>()?;
                SchemaRef::new(Schema::new(fields))
            }
        };
        let filters = crate::file::filters(filter, expression, &self.schema)?;
        let filter = sift_scan::Expr::all(filters);
        let scan = py
            .detach(|| {
                self.dataset.scan_file(
                    i,
                    table,
                    &self.columns,
                    schema.clone(),
                    filter.as_ref(),
                    |mut b| {
                        b = b.threads(crate::threads(threads));
                        if let Some(n) = limit {
                            b = b.limit(n);
                        }
                        if let Some(n) = batch_size {
                            b = b.batch_size(n);
                        }
                        if let Some((start, end)) = rows {
                            b = b.rows(start..end);
                        }
                        b
                    },
                )
            })
            .map_err(scan_error)?;
        Ok(match scan {
            Some(s) => Scanner::new(schema, Box::new(s)),
            None => Scanner::new(schema, Box::new(NoRows(ScanStats::default()))),
        })
    }
}

/// The scan of a file the filter rules out as a whole.
struct NoRows(ScanStats);

impl Iterator for NoRows {
    type Item = sift_scan::Result<arrow::array::RecordBatch>;

    fn next(&mut self) -> Option<Self::Item> {
        None
    }
}

impl Batches for NoRows {
    fn stats(&self) -> &ScanStats {
        &self.0
    }
}

impl Dataset {
    fn table(&self, i: usize) -> PyResult<&Table> {
        self.tables.get(i).ok_or_else(|| {
            SiftError::new_err(format!(
                "the dataset has {} files, not {}",
                self.tables.len(),
                i + 1
            ))
        })
    }
}
