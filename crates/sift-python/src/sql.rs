//! `sql(query, tables)`: SQL over Sift and Parquet files through DataFusion, with Sift's
//! scan underneath (the `sift-datafusion` crate), as a `pyarrow.Table`.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock, mpsc};
use std::time::Duration;

use arrow::array::RecordBatch;
use datafusion::error::DataFusionError;
use pyo3::prelude::*;
use sift_datafusion::SiftTable;

use crate::errors::{SiftError, SqlError};

/// The runtime queries run on, started at the first query.
fn runtime() -> PyResult<&'static tokio::runtime::Runtime> {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    if let Some(rt) = RUNTIME.get() {
        return Ok(rt);
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .thread_name("sift-sql")
        .build()
        .map_err(|e| SiftError::new_err(format!("cannot start the query runtime: {e}")))?;
    Ok(RUNTIME.get_or_init(|| rt))
}

/// Runs `query` (one statement; earlier `;`-separated statements run first, for their
/// effects) with `tables` registered by name, on `threads` partitions.
#[pyfunction]
#[pyo3(signature = (query, tables = None, threads = None))]
pub fn sql<'py>(
    py: Python<'py>,
    query: String,
    tables: Option<HashMap<String, String>>,
    threads: Option<usize>,
) -> PyResult<Bound<'py, PyAny>> {
    let ctx = sift_datafusion::session(crate::threads(threads));
    for (name, path) in tables.unwrap_or_default() {
        let table = py
            .detach(|| SiftTable::open(&path))
            .map_err(|e| SqlError::new_err(format!("table {name}: {}", e.strip_backtrace())))?;
        ctx.register_table(name.as_str(), Arc::new(table))
            .map_err(|e| SqlError::new_err(e.strip_backtrace()))?;
    }
    let rt = runtime()?;
    let (tx, rx) = mpsc::channel();
    let text = query.clone();
    let task = rt.spawn(async move {
        let result: Result<(arrow::datatypes::SchemaRef, Vec<RecordBatch>), DataFusionError> =
            async {
                let df = ctx.sql(&text).await?;
                let schema = Arc::new(df.schema().as_arrow().clone());
                Ok((schema, df.collect().await?))
            }
            .await;
        let _ = tx.send(result);
    });
    // Wait without the interpreter's lock, looking for Ctrl-C now and then.
    let result = py.detach(move || {
        loop {
            match rx.recv_timeout(Duration::from_millis(50)) {
                Ok(r) => return Ok(r),
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    if let Err(e) = crate::interrupt::check() {
                        task.abort();
                        return Err(e);
                    }
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(SiftError::new_err("the query stopped without a result"));
                }
            }
        }
    })?;
    let (schema, batches) =
        result.map_err(|e| SqlError::new_err(sift_datafusion::error_message(&e, &query)))?;
    crate::file::batches_to_table(py, schema, batches)
}
