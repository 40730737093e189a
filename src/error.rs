//! One error type for everything the reader can reject, with messages that name the store,
//! the array, the chunk and the rule that was broken.

use datafusion::error::DataFusionError;

/// Errors raised while opening or scanning a Zarr store.
#[derive(thiserror::Error)]
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

    /// A size is above one of the table's limits (`max_chunk_bytes`, `max_metadata_bytes`);
    /// checked before the bytes are fetched or decoded.
    #[error("{location}: {what} is {} bytes, more than {option} = {limit}", size_text(*.size))]
    Limit {
        /// Where (an object's URL, or the array and chunk).
        location: String,
        /// What was measured (`object`, `decoded chunk`, …).
        what: String,
        /// Its size, or `None` when it overflows `u64`.
        size: Option<u64>,
        /// The option that sets the limit.
        option: &'static str,
        /// The limit in bytes.
        limit: u64,
    },

    /// The object store failed (after its retries).
    #[error("{location}: {message}")]
    Store {
        /// What was being read (the store's URL and the key).
        location: String,
        /// The store's error, cleared of credentials.
        message: String,
    },

    /// An Icechunk repository cannot be opened, or has no version the options name.
    #[error("Icechunk repository {repository}: {message}")]
    Repository {
        /// The repository's URL (without credentials).
        repository: String,
        /// What is wrong, naming the branch, tag, snapshot, key or file.
        message: String,
    },

    /// A kerchunk reference set cannot be read: the reference (its key, or `gen[i]`) and the
    /// rule it breaks.
    #[error("reference set {references}{}: {message}", if at.is_empty() { String::new() } else { format!(", reference '{at}'") })]
    References {
        /// The reference file's URL (without credentials).
        references: String,
        /// The key or generator, or empty for the file as a whole.
        at: String,
        /// What is wrong.
        message: String,
    },

    /// A row of a query cannot be written (a NULL the type cannot hold, a string too long).
    #[error("column {column}, row {row}: {message}")]
    Row {
        /// The column.
        column: String,
        /// The row, counted from 0 in the order the query gave them.
        row: u64,
        /// The rule it breaks.
        message: String,
    },

    /// Writing a store failed (what was there before is kept).
    #[error("cannot write {target}: {message}")]
    Write {
        /// The store or file being written.
        target: String,
        /// What failed.
        message: String,
    },

    /// A failure of this crate or of DataFusion inside the reader (not of the data): a bug to
    /// report, with what was being done.
    #[error("internal error in datafusion-zarr while {0}")]
    Internal(String),
}

fn size_text(size: Option<u64>) -> String {
    size.map_or_else(|| "over 2^64".to_string(), |n| n.to_string())
}

/// Shorthand for results with [`ZarrError`].
pub type Result<T, E = ZarrError> = std::result::Result<T, E>;

impl From<ZarrError> for DataFusionError {
    fn from(e: ZarrError) -> Self {
        DataFusionError::External(Box::new(e))
    }
}

/// Debug shows the message, as Display does: errors that cross processes travel as their Debug
/// text (Ballista sends an executor's failure to the client that way), and a user reading it
/// should see "array …, chunk …: rule", not the variant's fields.
impl std::fmt::Debug for ZarrError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
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

    /// An internal error: `doing` says what the reader was doing.
    pub(crate) fn internal(doing: impl std::fmt::Display) -> Self {
        ZarrError::Internal(doing.to_string())
    }
}

/// The message of `e` as a user should read it: the root cause, without the layers DataFusion
/// wraps around it ("External error: …", "Context(…)"), so a [`ZarrError`] reads as written.
/// `zarr-sql` prints errors this way and the Python module raises them this way.
pub fn error_message(e: &DataFusionError) -> String {
    match e.find_root() {
        DataFusionError::External(inner) => inner.to_string(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_reads_as_the_message() {
        let e = ZarrError::Chunk {
            array: "s3://bkt/a".into(),
            chunk: "c/0".into(),
            message: "zstd data is truncated".into(),
        };
        assert_eq!(
            format!("{e:?}"),
            "array s3://bkt/a, chunk c/0: zstd data is truncated"
        );
        assert_eq!(format!("{e:?}"), e.to_string());
    }
}
