//! The Python package `sift`, the Rust half: files opened and scanned, data written and
//! converted, SQL run, all in Rust with the interpreter released (`Python::detach`), and
//! Arrow data handed to pyarrow through the Arrow C data interface, without copies.
//!
//! The Python half (`python/sift/`) holds what is easier said in Python: accepting pandas
//! and Polars frames, `pyarrow.dataset` integration, and the public docstrings.

mod dataset;
mod errors;
mod expression;
mod file;
mod interrupt;
mod sql;
mod write;

use pyo3::prelude::*;

/// As in the `sift` binary: decoding allocates and frees block-sized buffers over and
/// over, and glibc's allocator returns large ones to the kernel each time, so every block
/// would pay for fresh zeroed pages. mimalloc keeps and reuses them. (Buffers handed to
/// pyarrow are freed through their release callback, by this allocator.)
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[pymodule]
fn _sift(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("SiftError", py.get_type::<errors::SiftError>())?;
    m.add(
        "CorruptFileError",
        py.get_type::<errors::CorruptFileError>(),
    )?;
    m.add(
        "UnsupportedTypeError",
        py.get_type::<errors::UnsupportedTypeError>(),
    )?;
    m.add("FilterError", py.get_type::<errors::FilterError>())?;
    m.add("SqlError", py.get_type::<errors::SqlError>())?;
    m.add_class::<file::File>()?;
    m.add_function(wrap_pyfunction!(file::resolve, m)?)?;
    m.add_class::<file::Scanner>()?;
    m.add_class::<dataset::Dataset>()?;
    m.add_function(wrap_pyfunction!(expression::translate_expression, m)?)?;
    m.add_function(wrap_pyfunction!(write::write, m)?)?;
    m.add_function(wrap_pyfunction!(write::convert, m)?)?;
    m.add_function(wrap_pyfunction!(sql::sql, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}

/// A `threads` argument's value, or every core the process may use.
fn threads(option: Option<usize>) -> usize {
    match option {
        Some(n) => n.max(1),
        None => std::thread::available_parallelism().map_or(1, |n| n.get()),
    }
}
