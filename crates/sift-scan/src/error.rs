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

thread_local! {
    // How deep this thread is in calls whose panics the scan catches.
    static CATCHING: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// Whether this thread is inside a call whose panics the scan catches and reports as
/// errors naming the file (a third-party decoder on damaged input). A program's panic hook
/// can stay silent for those: the error follows.
pub fn catching_panics() -> bool {
    CATCHING.with(|c| c.get() > 0)
}

/// Runs `f`, catching its panic; [`catching_panics`] is true meanwhile.
#[cfg_attr(not(feature = "parquet"), allow(dead_code))]
pub(crate) fn catch<T>(f: impl FnOnce() -> T) -> std::thread::Result<T> {
    CATCHING.with(|c| c.set(c.get() + 1));
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    CATCHING.with(|c| c.set(c.get() - 1));
    r
}
