//! Ctrl-C in long work done without the interpreter's lock: Python's signal handler only
//! sets a flag, so loops ask the interpreter between steps (`check_signals` raises
//! `KeyboardInterrupt` there, and the work stops with it).

use pyo3::prelude::*;

/// `Err(KeyboardInterrupt)` (or what another signal handler raised) once a signal came.
pub fn check() -> PyResult<()> {
    Python::attach(|py| py.check_signals())
}

/// A `PyErr` carried through `anyhow` (so that a cancelled copy keeps the exception).
#[derive(Debug)]
pub struct Interrupted(pub PyErr);

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "interrupted")
    }
}

impl std::error::Error for Interrupted {}

/// The `PyErr` for an error of work that `check` may have cancelled.
pub fn unwrap_chain(e: anyhow::Error) -> PyErr {
    match e.downcast::<Interrupted>() {
        Ok(Interrupted(err)) => err,
        Err(e) => crate::errors::chain_error(e),
    }
}
