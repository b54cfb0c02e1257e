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
    move |source| match source {
        object_store::Error::NotFound { .. } => invalid(location, "no such bucket or object"),
        source => StoreError::Store {
            location: location.to_string(),
            source,
        },
    }
}

pub(crate) fn io_err(location: &str) -> impl FnOnce(std::io::Error) -> StoreError + '_ {
    move |source| StoreError::Io {
        location: location.to_string(),
        source,
    }
}

/// An object-store error as an I/O error (the file reader adds the object's name). A
/// missing object or bucket and refused credentials get short messages; other errors keep
/// the store's text.
pub(crate) fn to_io(e: object_store::Error) -> std::io::Error {
    use std::io::ErrorKind;
    match &e {
        object_store::Error::NotFound { .. } => {
            std::io::Error::new(ErrorKind::NotFound, "no such object (or bucket)")
        }
        object_store::Error::PermissionDenied { .. } => {
            std::io::Error::new(ErrorKind::PermissionDenied, "access denied")
        }
        object_store::Error::Unauthenticated { .. } => std::io::Error::new(
            ErrorKind::PermissionDenied,
            "not authenticated (check the store's credentials)",
        ),
        _ => std::io::Error::other(e.to_string()),
    }
}
