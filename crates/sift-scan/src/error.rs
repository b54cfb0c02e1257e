//! Errors of the scan engine.

/// A scan error.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A filter does not fit the schema: unknown column, literal of the wrong type.
    #[error("{0}")]
    Type(String),
    /// A filter's text does not parse.
    #[error("{0}")]
    Parse(String),
    /// Invalid scan settings (projection, row range, …).
    #[error("{0}")]
    Invalid(String),
    /// Reading or decoding the file failed.
    #[error(transparent)]
    Format(#[from] sift_format::Error),
    /// A Parquet file could not be read.
    #[error("{0}")]
    Parquet(String),
    /// An Arrow operation failed.
    #[error(transparent)]
    Arrow(#[from] arrow_schema::ArrowError),
}

/// Result with a scan [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Characters of a user's text (a literal, a column name) an error message repeats at most.
const QUOTE_MAX: usize = 60;

/// `text`, or its first characters and "…" when it is long: a message about a 100 KB
/// literal names it without repeating it.
pub(crate) fn shorten(text: &str) -> String {
    match text.char_indices().nth(QUOTE_MAX) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_string(),
    }
}
