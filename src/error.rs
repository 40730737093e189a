//! One error type for everything the reader can reject, with messages that name the store,
//! the array, the chunk and the rule that was broken.

use datafusion::error::DataFusionError;

/// Errors raised while opening or scanning a Zarr store.
#[derive(Debug, thiserror::Error)]
pub enum ZarrError {
    /// A table option is unknown or has a bad value.
    #[error("invalid option: {0}")]
    Option(String),

    /// A location cannot be opened as a Zarr store.
    #[error("location {0}")]
    Location(String),

    /// Metadata (`zarr.json`, `.zarray`, `.zgroup`, `.zattrs`, `.zmetadata`) is missing or invalid.
    #[error("{node}: {message}")]
    Metadata {
        /// The store and node path the metadata belongs to.
        node: String,
        /// What is wrong with it.
        message: String,
    },

    /// The array's data type has no Arrow mapping.
    #[error("unsupported data type {data_type} in array {array}")]
    UnsupportedDataType {
        /// The data type as written in the metadata.
        data_type: String,
        /// The array (store and path).
        array: String,
    },

    /// A chunk could not be read or decoded.
    #[error("array {array}, chunk {chunk}: {message}")]
    Chunk {
        /// The array (store and path).
        array: String,
        /// The chunk key.
        chunk: String,
        /// What went wrong.
        message: String,
    },

    /// A `fixed_length_utf32` element holds a code unit that is not a Unicode scalar value.
    #[error(
        "array {array}, chunk {chunk}, element {index}: code unit 0x{code_unit:08X} is not a \
         Unicode scalar value (a surrogate or above 0x10FFFF); invalid_utf32 is 'error', set it \
         to 'replace' or 'null' to read such elements"
    )]
    InvalidUtf32 {
        /// The array (store and path).
        array: String,
        /// The chunk key.
        chunk: String,
        /// The element's index within the chunk, in C order.
        index: u64,
        /// The offending code unit.
        code_unit: u32,
    },

    /// The object store failed.
    #[error("{location}: {source}")]
    Store {
        /// What was being read.
        location: String,
        /// The store's error.
        #[source]
        source: object_store::Error,
    },
}

/// Shorthand for results with [`ZarrError`].
pub type Result<T, E = ZarrError> = std::result::Result<T, E>;

impl From<ZarrError> for DataFusionError {
    fn from(e: ZarrError) -> Self {
        DataFusionError::External(Box::new(e))
    }
}

impl ZarrError {
    /// A metadata error for `node`.
    pub(crate) fn metadata(node: impl std::fmt::Display, message: impl Into<String>) -> Self {
        ZarrError::Metadata {
            node: node.to_string(),
            message: message.into(),
        }
    }
}
