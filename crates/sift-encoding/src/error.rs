use thiserror::Error;

/// Errors raised while encoding or decoding a column chunk.
///
/// Decoding errors describe what is wrong with the encoded data; the format layer adds the
/// file, column, block and offset.
#[derive(Debug, Error)]
pub enum EncodingError {
    /// The encoded data is inconsistent (corrupt or hostile input).
    #[error("corrupt encoding: {0}")]
    Corrupt(String),
    /// The Arrow type cannot be stored.
    #[error("unsupported type {0}")]
    Unsupported(String),
    /// Arrow rejected the decoded data (e.g. invalid UTF-8).
    #[error("invalid decoded data: {0}")]
    Arrow(#[from] arrow_schema::ArrowError),
}

/// Result alias for this crate.
pub type Result<T, E = EncodingError> = std::result::Result<T, E>;

/// Shorthand for a corruption error.
pub(crate) fn corrupt(msg: impl Into<String>) -> EncodingError {
    EncodingError::Corrupt(msg.into())
}
