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

/// File extensions read as Sift files, and as Parquet files (through Sift's engine).
pub const SIFT_EXTENSIONS: &[&str] = &["sift"];
/// See [`SIFT_EXTENSIONS`].
pub const PARQUET_EXTENSIONS: &[&str] = &["parquet", "parq", "pq"];

/// Whether `path` ends in one of `extensions` (any case).
pub fn has_extension(path: &Path, extensions: &[&str]) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| extensions.iter().any(|x| e.eq_ignore_ascii_case(x)))
}

/// Whether `path` names a file a table reads (`.sift` or `.parquet`).
pub(crate) fn readable(path: &Path) -> bool {
    has_extension(path, SIFT_EXTENSIONS) || has_extension(path, PARQUET_EXTENSIONS)
}

/// The files a location names: a file, a directory (its `.sift` files, or its `.parquet`
/// files if it holds no `.sift` file; not recursively), or a glob pattern (`data/*.sift`).
/// Sorted, so partitions are stable.
pub fn resolve_location(location: &str) -> Result<Vec<PathBuf>> {
    let path = Path::new(location);
    if path.is_file() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut files = Vec::new();
    if path.is_dir() {
        let entries = std::fs::read_dir(path)
            .map_err(|e| DataFusionError::Execution(format!("{location}: {e}")))?;
        for entry in entries {
            let entry =
                entry.map_err(|e| DataFusionError::Execution(format!("{location}: {e}")))?;
            let p = entry.path();
            if p.is_file() && readable(&p) {
                files.push(p);
            }
        }
        // A directory holding both a table and its conversion is read once: as Sift.
        if files.iter().any(|p| has_extension(p, SIFT_EXTENSIONS)) {
            files.retain(|p| has_extension(p, SIFT_EXTENSIONS));
        }
        if files.is_empty() {
            return Err(DataFusionError::Plan(format!(
                "{location}: the directory holds no .sift or .parquet file"
            )));
        }
    } else if location.contains(['*', '?', '[']) {
        let matches = glob::glob(location)
            .map_err(|e| DataFusionError::Plan(format!("{location}: bad pattern: {e}")))?;
        for m in matches {
            let p = m.map_err(|e| DataFusionError::Execution(format!("{location}: {e}")))?;
            if p.is_file() {
                files.push(p);
            }
        }
        if files.is_empty() {
            return Err(DataFusionError::Plan(format!(
                "{location}: no file matches the pattern"
            )));
        }
    } else {
        return Err(DataFusionError::Plan(format!(
            "{location}: no such file or directory"
        )));
    }
    files.sort();
    Ok(files)
}

impl SiftTable {
    /// The table of the files at `location` (see [`resolve_location`]).
    pub fn open(location: &str) -> Result<SiftTable> {
        Self::open_files(&resolve_location(location)?)
    }

    /// The table of these files, which must all have the same schema.
    pub fn open_files(paths: &[PathBuf]) -> Result<SiftTable> {
        let mut files = Vec::with_capacity(paths.len());
        let mut schema: Option<SchemaRef> = None;
        for path in paths {
            let table = Table::open(path).map_err(|e| {
                DataFusionError::External(format!("cannot open {}: {e}", path.display()).into())
            })?;
            match &schema {
                None => schema = Some(table.schema()),
                Some(first) => {
                    if let Some(difference) = schema_difference(first, &table.schema()) {
                        return Err(DataFusionError::Plan(format!(
                            "{} and {} cannot be one table: {difference}",
                            paths[0].display(),
                            path.display(),
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
