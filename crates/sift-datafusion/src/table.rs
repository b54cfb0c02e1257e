//! [`SiftTable`]: one or more Sift or Parquet files of one schema as a DataFusion table.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::{Field, Schema, SchemaRef};
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::{DataFusionError, Result, Statistics};
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown, TableType};
use datafusion::physical_plan::ExecutionPlan;
use sift_scan::Table;

use crate::exec::SiftScanExec;
use crate::stats::table_statistics;
use crate::translate::to_sift;

/// Sift or Parquet files scanned by Sift's engine, as a DataFusion table.
///
/// Filters that Sift evaluates exactly are pushed into the scan and reported as
/// [`Exact`](TableProviderFilterPushDown::Exact), so DataFusion keeps no filter of its own
/// above the scan; projections and `LIMIT` are pushed too. Statistics (row counts, and
/// bounds and null counts from the zone maps) come from the files' metadata. A scan
/// splits into as many partitions as the session's `target_partitions`, each a run of
/// blocks (Parquet: row groups), scanned on its own thread.
#[derive(Debug, Clone)]
pub struct SiftTable {
    files: Arc<[TableFile]>,
    schema: SchemaRef,
}

/// One opened file.
#[derive(Clone)]
pub(crate) struct TableFile {
    pub(crate) table: Table,
}

impl std::fmt::Debug for TableFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.table.path().display())
    }
}

impl SiftTable {
    /// The table of the files at `location`: a file, a directory, a glob or an
    /// object-store URL (see [`sift_store::resolve`]), object stores configured from the
    /// environment.
    pub fn open(location: &str) -> Result<SiftTable> {
        Self::open_with(location, &sift_store::StoreOptions::default())
    }

    /// [`open`](Self::open) with explicit object-store settings.
    pub fn open_with(location: &str, options: &sift_store::StoreOptions) -> Result<SiftTable> {
        let files = sift_store::resolve(location, options).map_err(external)?;
        if let Some(f) = files.iter().find(|f| !f.partitions.is_empty()) {
            return Err(DataFusionError::NotImplemented(format!(
                "{location}: {} lies in a Hive partition directory ({}); SQL tables do not \
                 have partition columns yet: name the files of one partition, or use \
                 `sift scan` or sift.dataset, which do",
                f.location,
                f.partitions
                    .iter()
                    .map(|(k, v)| format!("{k}={}", v.as_deref().unwrap_or("null")))
                    .collect::<Vec<_>>()
                    .join("/")
            )));
        }
        let tables = files
            .iter()
            .map(|f| {
                sift_store::open_table(&f.location, options, true).map_err(|e| match e {
                    // The reader's errors name the file.
                    sift_store::StoreError::Scan(e) => DataFusionError::External(Box::new(e)),
                    e => external(e),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Self::from_tables(tables)
    }

    /// The table of these files, which must all have the same schema.
    pub fn open_files(paths: &[PathBuf]) -> Result<SiftTable> {
        let tables = paths
            .iter()
            .map(|path| {
                Table::open(path).map_err(|e| {
                    DataFusionError::External(format!("cannot open {}: {e}", path.display()).into())
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Self::from_tables(tables)
    }

    /// The table of these open files, which must all have the same schema.
    pub fn from_tables(tables: Vec<Table>) -> Result<SiftTable> {
        let mut files = Vec::with_capacity(tables.len());
        let mut schema: Option<SchemaRef> = None;
        for table in tables {
            match &schema {
                None => schema = Some(table.schema()),
                Some(first) => {
                    if let Some(difference) = schema_difference(first, &table.schema()) {
                        return Err(DataFusionError::Plan(format!(
                            "{} and {} cannot be one table: {difference}",
                            files.first().map_or(String::new(), |f: &TableFile| f
                                .table
                                .path()
                                .display()
                                .to_string()),
                            table.path().display(),
                        )));
                    }
                }
            }
            files.push(TableFile { table });
        }
        let Some(schema) = schema else {
            return Err(DataFusionError::Plan(
                "a table needs at least one file".into(),
            ));
        };
        // Field metadata is the file's business; the table's schema is the columns.
        let schema = SchemaRef::new(Schema::new(schema.fields().clone()));
        Ok(SiftTable {
            files: files.into(),
            schema,
        })
    }

    /// The files of the table.
    pub fn paths(&self) -> impl Iterator<Item = &Path> {
        self.files.iter().map(|f| f.table.path())
    }
}

/// How two files' columns differ (names, types, nullability; field metadata aside), or
/// `None` when they are the same.
fn schema_difference(a: &Schema, b: &Schema) -> Option<String> {
    if a.fields().len() != b.fields().len() {
        return Some(format!(
            "{} columns against {}",
            a.fields().len(),
            b.fields().len()
        ));
    }
    a.fields()
        .iter()
        .zip(b.fields())
        .enumerate()
        .find(|(_, (x, y))| {
            x.name() != y.name()
                || x.data_type() != y.data_type()
                || x.is_nullable() != y.is_nullable()
        })
        .map(|(i, (x, y))| {
            let show = |f: &Field| {
                let null = if f.is_nullable() { "" } else { " not null" };
                format!("{} {}{null}", f.name(), f.data_type())
            };
            format!("column {i} is {} against {}", show(x), show(y))
        })
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
                Some(_) => TableProviderFilterPushDown::Exact,
                None => TableProviderFilterPushDown::Unsupported,
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
        let filters = filters
            .iter()
            .map(|f| {
                to_sift(f, &self.schema).ok_or_else(|| {
                    DataFusionError::Internal(format!("filter {f} cannot be pushed into Sift"))
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let partitions = state.config().target_partitions().max(1);
        Ok(Arc::new(SiftScanExec::new(
            self.files.clone(),
            self.schema.clone(),
            projection.cloned(),
            filters,
            limit,
            partitions,
        )?))
    }

    fn statistics(&self) -> Option<Statistics> {
        Some(table_statistics(&self.files, &self.schema))
    }
}
