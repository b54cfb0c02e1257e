//! Errors of object-store I/O and dataset resolution, each naming the object or location.

/// An error reaching, listing or reading an object store, or resolving a dataset.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The location or a setting is wrong (bad URL, unknown scheme or key, nothing
    /// matches, schemas that do not unify).
    #[error("{location}: {msg}")]
    Invalid { location: String, msg: String },
    /// The store refused or failed a request (after the retries).
    #[error("{location}: {source}")]
    Store {
        location: String,
        source: object_store::Error,
    },
    /// Local I/O.
    #[error("{location}: {source}")]
    Io {
        location: String,
        source: std::io::Error,
    },
    /// Opening or reading a file of the dataset.
    #[error(transparent)]
    Scan(#[from] sift_scan::Error),
}

pub(crate) fn invalid(location: &str, msg: impl Into<String>) -> StoreError {
    StoreError::Invalid {
        location: location.to_string(),
        msg: msg.into(),
    }
}

pub(crate) fn store_err(location: &str) -> impl FnOnce(object_store::Error) -> StoreError + '_ {
    move |source| StoreError::Store {
        location: location.to_string(),
        source,
    }
}

pub(crate) fn io_err(location: &str) -> impl FnOnce(std::io::Error) -> StoreError + '_ {
    move |source| StoreError::Io {
        location: location.to_string(),
        source,
    }
}

/// An object-store error as an I/O error that keeps the object's name (for the file
/// reader, which reports I/O errors).
pub(crate) fn to_io(location: &str, e: object_store::Error) -> std::io::Error {
    let kind = match &e {
        object_store::Error::NotFound { .. } => std::io::ErrorKind::NotFound,
        object_store::Error::PermissionDenied { .. }
        | object_store::Error::Unauthenticated { .. } => std::io::ErrorKind::PermissionDenied,
        _ => std::io::ErrorKind::Other,
    };
    std::io::Error::new(kind, format!("{location}: {e}"))
}
