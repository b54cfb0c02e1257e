use std::path::PathBuf;

use thiserror::Error;

/// Errors of the Sift file format. Messages name the file, and where known the block,
/// column and byte offset.
#[derive(Debug, Error)]
pub enum Error {
    /// An I/O error on a file.
    #[error("{path}: {error}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error (part of the message, so not also reported as the cause).
        error: std::io::Error,
    },
    /// The file is not a Sift file, or is damaged.
    #[error("{path}: corrupt file: {msg}")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong, with block, column and offset where known.
        msg: String,
    },
    /// The file was written by a format version this reader does not know.
    #[error(
        "{path}: unsupported Sift format version {found} (this reader supports versions {} to {supported})",
        crate::footer::OLDEST_FORMAT_VERSION
    )]
    UnsupportedVersion {
        /// The file.
        path: PathBuf,
        /// The version in the file.
        found: u32,
        /// The newest version this build reads (and the one it writes).
        supported: u32,
    },
    /// A column's type cannot be stored (yet).
    #[error("column '{column}': type {data_type} is not supported by Sift yet")]
    UnsupportedType {
        /// The column name.
        column: String,
        /// The Arrow type.
        data_type: String,
    },
    /// Input batches do not match the schema, or a bad argument was given.
    #[error("{0}")]
    Invalid(String),
    /// Arrow failed while assembling batches.
    #[error("arrow: {0}")]
    Arrow(#[from] arrow_schema::ArrowError),
}

/// Result alias for this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

pub(crate) fn io_err(path: &std::path::Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |error| Error::Io {
        path: path.to_path_buf(),
        error,
    }
}

pub(crate) fn corrupt(path: &std::path::Path, msg: impl Into<String>) -> Error {
    Error::Corrupt {
        path: path.to_path_buf(),
        msg: msg.into(),
    }
}
