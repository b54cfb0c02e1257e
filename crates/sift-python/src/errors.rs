//! Sift's errors as Python exceptions: `sift.SiftError` and its subclasses, with the
//! messages the command-line tool prints.

use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyFileNotFoundError};
use pyo3::prelude::*;

create_exception!(
    sift,
    SiftError,
    PyException,
    "An error reading, writing, scanning or querying Sift or Parquet files."
);
create_exception!(
    sift,
    CorruptFileError,
    SiftError,
    "A file is damaged, truncated or not of the format its name says."
);
create_exception!(
    sift,
    UnsupportedTypeError,
    SiftError,
    "A column type that Sift cannot store or read."
);
create_exception!(
    sift,
    FilterError,
    SiftError,
    "A filter that does not parse or does not fit the schema (unknown column, literal of the wrong type)."
);
create_exception!(
    sift,
    SqlError,
    SiftError,
    "A SQL statement that does not parse, plan or run."
);

/// The exception for a scan engine error.
pub fn scan_error(e: sift_scan::Error) -> PyErr {
    use sift_scan::Error;
    match e {
        Error::Type(_) | Error::Parse(_) => FilterError::new_err(e.to_string()),
        Error::Format(f) => format_error(f),
        Error::Parquet(_) => CorruptFileError::new_err(e.to_string()),
        Error::Invalid(_) | Error::Arrow(_) => SiftError::new_err(e.to_string()),
    }
}

/// The exception for a file format error.
pub fn format_error(e: sift_format::Error) -> PyErr {
    let message = e.to_string();
    format_class(&e, message)
}

/// The exception class a file format error belongs to, with `message`.
fn format_class(e: &sift_format::Error, message: String) -> PyErr {
    use sift_format::Error;
    match e {
        Error::Io { error, .. } if error.kind() == std::io::ErrorKind::NotFound => {
            PyFileNotFoundError::new_err(message)
        }
        Error::Corrupt { .. } | Error::UnsupportedVersion { .. } => {
            CorruptFileError::new_err(message)
        }
        Error::UnsupportedType { .. } => UnsupportedTypeError::new_err(message),
        _ => SiftError::new_err(message),
    }
}

/// The exception for an error with context (file conversion and writing): the class
/// follows the innermost Sift error of the chain, the message is the whole chain.
pub fn chain_error(e: anyhow::Error) -> PyErr {
    let message = sift_io::error_message(&e);
    for cause in e.chain() {
        if let Some(f) = cause.downcast_ref::<sift_format::Error>() {
            return format_class(f, message);
        }
        if let Some(io) = cause.downcast_ref::<std::io::Error>()
            && io.kind() == std::io::ErrorKind::NotFound
        {
            return PyFileNotFoundError::new_err(message);
        }
        if cause
            .downcast_ref::<datafusion::parquet::errors::ParquetError>()
            .is_some()
        {
            return CorruptFileError::new_err(message);
        }
    }
    SiftError::new_err(message)
}
