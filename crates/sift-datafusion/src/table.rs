//! [`SiftTable`]: one or more Sift or Parquet files (a dataset, Hive partitions included)
//! as a DataFusion table.

use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::{Schema, SchemaRef};
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::{DFSchema, DataFusionError, Result, Statistics};
use datafusion::logical_expr::utils::conjunction;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown, TableType};
use datafusion::physical_plan::ExecutionPlan;
use sift_scan::{Dataset, Table};

use crate::exec::SiftScanExec;
use crate::stats::{StatsMemo, table_statistics};
use crate::translate::to_sift;

/// Sift or Parquet files scanned by Sift's engine, as a DataFusion table.
///
/// The files are a dataset ([`sift_scan::Dataset`]): their schemas unify by its rules
/// (columns matched by name, a column missing from a file is null there, integers widen),
/// and the directories of a Hive-partitioned tree (`year=2024/…`) become columns after
/// the files' columns. Filters that Sift evaluates exactly are pushed into the scan and
/// reported as [`Exact`](TableProviderFilterPushDown::Exact), so DataFusion keeps no
/// filter of its own above the scan: files whose partition values rule a filter out are
/// not scanned, and the rest are scanned with the filter specialised to them. Projections
/// and `LIMIT` are pushed too. Statistics (row counts, and bounds and null counts from
/// the zone maps) come from the files' metadata. A scan splits into as many partitions as
/// the session's `target_partitions`, each a run of blocks (Parquet: row groups), scanned
/// on its own thread.
#[derive(Debug, Clone)]
pub struct SiftTable {
    files: Arc<TableFiles>,
    schema: SchemaRef,
}

/// A table's files, opened, and how they form one table.
#[derive(Debug)]
pub(crate) struct TableFiles {
    pub(crate) dataset: Dataset,
    /// Every file of the dataset, in its order.
    pub(crate) files: Vec<TableFile>,
    /// The files' unified columns (without the partition columns).
    pub(crate) columns: SchemaRef,
    /// Statistics merged from the files' zone maps, kept for the next planning.
    pub(crate) stats_memo: StatsMemo,
}

impl TableFiles {
    /// A scan of `file` returning the columns of `schema` (see
    /// [`Dataset::scan_file`]); `None` when `filter` rules the file out as a whole.
    pub(crate) fn scan(
        &self,
        file: &TableFile,
        schema: SchemaRef,
        filter: Option<&sift_scan::Expr>,
        configure: impl FnOnce(sift_scan::ScanBuilder) -> sift_scan::ScanBuilder,
    ) -> Result<Option<sift_scan::FileScan>> {
        self.dataset
            .scan_file(
                file.index,
                &file.table,
                &self.columns,
                schema,
                filter,
                configure,
            )
            .map_err(|e| crate::exec::scan_error(file.table.path(), e))
    }
}

/// One opened file.
#[derive(Clone)]
pub(crate) struct TableFile {
    pub(crate) table: Table,
    /// Its index in the dataset.
    pub(crate) index: usize,
}

impl std::fmt::Debug for TableFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.table.path().display())
    }
}

impl SiftTable {
    /// The table of the files at `location`: a file, a directory (a Hive-partitioned tree
    /// included), a glob or an object-store URL (see [`sift_store::resolve`]), object
    /// stores configured from the environment.
    pub fn open(location: &str) -> Result<SiftTable> {
        Self::open_with(location, &sift_store::StoreOptions::default())
    }

    /// [`open`](Self::open) with explicit object-store settings.
    pub fn open_with(location: &str, options: &sift_store::StoreOptions) -> Result<SiftTable> {
        let dataset = sift_store::open_dataset(&[location], options, true).map_err(external)?;
        Self::from_dataset(dataset)
    }

    /// The table of a dataset's files; every file is opened (a footer read each).
    pub fn from_dataset(dataset: Dataset) -> Result<SiftTable> {
        let all: Vec<usize> = (0..dataset.files().len()).collect();
        let (tables, columns) = dataset.open(&all).map_err(|e| match e {
            // Columns that do not unify are a planning error naming both files.
            sift_scan::Error::Type(_) => DataFusionError::Plan(e.to_string()),
            e => DataFusionError::External(Box::new(e)),
        })?;
        // Field metadata is the files' business; the table's schema is the columns.
        let columns = SchemaRef::new(Schema::new(columns.fields().clone()));
        let files = tables
            .into_iter()
            .zip(all)
            .map(|(table, index)| TableFile { table, index })
            .collect();
        let schema = dataset.with_partitions(&columns);
        Ok(SiftTable {
            files: Arc::new(TableFiles {
                dataset,
                files,
                columns,
                stats_memo: StatsMemo::default(),
            }),
            schema,
        })
    }

    /// The files of the table.
    pub fn paths(&self) -> impl Iterator<Item = &Path> {
        self.files.files.iter().map(|f| f.table.path())
    }
}

fn external(e: sift_store::StoreError) -> DataFusionError {
    match e {
        sift_store::StoreError::Invalid { .. } => DataFusionError::Plan(e.to_string()),
        e => DataFusionError::External(Box::new(e)),
    }
}

#[async_trait]
impl TableProvider for SiftTable {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> Result<Vec<TableProviderFilterPushDown>> {
        Ok(filters
            .iter()
            .map(|f| match to_sift(f, &self.schema) {
                // A filter on partition columns must be one they can be decided by.
                Some(e) if self.files.dataset.keep(Some(&e)).is_ok() => {
                    TableProviderFilterPushDown::Exact
                }
                _ => TableProviderFilterPushDown::Unsupported,
            })
            .collect())
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        // Only filters reported Exact arrive here; each translates.
        let logical = filters;
        let filters = filters
            .iter()
            .map(|f| {
                to_sift(f, &self.schema).ok_or_else(|| {
                    DataFusionError::Internal(format!("filter {f} cannot be pushed into Sift"))
                })
            })
            .collect::<Result<Vec<_>>>()?;
        // Files whose partition values rule the filters out are not scanned.
        let filter = sift_scan::Expr::all(filters);
        let kept = self
            .files
            .dataset
            .keep(filter.as_ref())
            .map_err(|e| DataFusionError::External(Box::new(e)))?;
        let partitions = state.config().target_partitions().max(1);
        let scan = SiftScanExec::new(
            self.files.clone(),
            kept,
            self.schema.clone(),
            projection.cloned(),
            filter,
            limit,
            partitions,
        )?;
        let Some(predicate) = conjunction(logical.iter().cloned()) else {
            return Ok(Arc::new(scan));
        };
        let df_schema = DFSchema::try_from(self.schema.as_ref().clone())?;
        let predicate = state.create_physical_expr(predicate, &df_schema)?;
        let selectivity = state.config_options().optimizer.default_filter_selectivity;
        Ok(Arc::new(scan.with_filter_estimate(predicate, selectivity)?))
    }

    fn statistics(&self) -> Option<Statistics> {
        Some(table_statistics(&self.files, &self.schema))
    }
}
