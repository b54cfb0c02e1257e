//! Tables made from SQL: `CREATE EXTERNAL TABLE … STORED AS SIFT`, and file paths named
//! in `FROM`.

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::catalog::{Session, TableProvider, TableProviderFactory, UrlTableFactory};
use datafusion::common::{DataFusionError, Result};
use datafusion::logical_expr::CreateExternalTable;

use crate::table::SiftTable;

/// Makes a [`SiftTable`] for `CREATE EXTERNAL TABLE name STORED AS SIFT LOCATION '…'`; the
/// location is a file, a directory or a glob of `.sift` (or `.parquet`) files.
#[derive(Debug, Default)]
pub struct SiftTableFactory;

#[async_trait]
impl TableProviderFactory for SiftTableFactory {
    async fn create(
        &self,
        _state: &dyn Session,
        cmd: &CreateExternalTable,
    ) -> Result<Arc<dyn TableProvider>> {
        if !cmd.table_partition_cols.is_empty() {
            return Err(DataFusionError::NotImplemented(
                "PARTITIONED BY is not supported for Sift tables".into(),
            ));
        }
        let [location] = cmd.locations.as_slice() else {
            return Err(DataFusionError::Plan(format!(
                "a Sift table takes one LOCATION, not {}",
                cmd.locations.len()
            )));
        };
        let table = SiftTable::open(location)?;
        // A declared schema must be the files' (DataFusion would otherwise plan with one
        // and read another).
        let declared = cmd.schema.as_arrow();
        if !declared.fields().is_empty() && declared.fields() != table.schema().fields() {
            return Err(DataFusionError::Plan(format!(
                "{location}: the declared columns ({declared}) are not the file's ({})",
                table.schema()
            )));
        }
        Ok(Arc::new(table))
    }
}

/// Resolves a table name that is a path of Sift or Parquet files (`'data/lineitem.sift'`,
/// `'data/*.parquet'`, a directory) to a [`SiftTable`]; other names are left to the
/// catalog.
#[derive(Debug, Default)]
pub struct SiftUrlTables;

#[async_trait]
impl UrlTableFactory for SiftUrlTables {
    async fn try_new(&self, url: &str) -> Result<Option<Arc<dyn TableProvider>>> {
        let names_files = sift_store::readable(url)
            || std::path::Path::new(url).is_dir()
            || (sift_store::is_url(url) && url.ends_with('/'));
        if !names_files {
            return Ok(None);
        }
        Ok(Some(Arc::new(SiftTable::open(url)?)))
    }
}
