//! The size limits of a table, built once from its options and handed to every read: one
//! check, one error kind ([`ZarrError::Limit`]), and the bound codecs decode within.
//!
//! Codecs are zarrs plugins created from metadata, with no table in sight, so the bound for
//! sizes the metadata does not declare (variable-length strings) reaches them through
//! [`Limit::decode_within`]: a thread-local set around one synchronous decode call. Each
//! table keeps its own bound; nothing process-wide is raised by one table for another.

use std::cell::Cell;
use std::fmt::Display;

use crate::error::{Result, ZarrError};
use crate::options::ZarrOptions;

/// A bound on a size in bytes, named after the option that sets it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Limit {
    /// The option's name, as shown in errors.
    pub(crate) option: &'static str,
    /// The bound.
    pub(crate) bytes: u64,
}

/// The limits a table reads within.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Limits {
    /// Largest chunk: its declared decoded size, and the encoded object fetched.
    pub(crate) chunk: Limit,
    /// Largest metadata document.
    pub(crate) metadata: Limit,
    /// Most arrays a group's table opens (`max_arrays`).
    pub(crate) arrays: u64,
}

impl Limits {
    /// The limits `options` set.
    pub(crate) fn of(options: &ZarrOptions) -> Self {
        Self {
            chunk: Limit {
                option: "max_chunk_bytes",
                bytes: options.max_chunk_bytes,
            },
            metadata: Limit {
                option: "max_metadata_bytes",
                bytes: options.max_metadata_bytes,
            },
            arrays: options.max_arrays,
        }
    }
}

/// The least a variable-length element (the `string` data type) takes once decoded: zarrs keeps
/// an offset (`usize`) for it, so a chunk's element count alone can exhaust memory.
pub(crate) const VARIABLE_ELEMENT_BYTES: u64 = std::mem::size_of::<usize>() as u64;

thread_local! {
    /// The bound of the decode running on this thread, if one is.
    static DECODE_BOUND: Cell<Option<u64>> = const { Cell::new(None) };
}

/// The bound for decoded sizes the metadata does not declare, used when no decode of ours is
/// running on this thread (as for a decode zarrs would move to another thread, which
/// [`Limit::decode_within`]'s callers prevent): the default `max_chunk_bytes`.
const FALLBACK_DECODE_BOUND: u64 = 1 << 30;

impl Limit {
    /// Checks that `size` (`None`: it overflows `u64`) of `what` at `location` is within the
    /// limit.
    pub(crate) fn check(self, location: impl Display, what: &str, size: Option<u64>) -> Result<()> {
        match size {
            Some(n) if n <= self.bytes => Ok(()),
            _ => Err(ZarrError::Limit {
                location: location.to_string(),
                what: what.to_string(),
                size,
                option: self.option,
                limit: self.bytes,
            }),
        }
    }

    /// Runs `decode`, a synchronous call into zarrs' codecs, with this limit as the bound of
    /// decoded sizes the metadata does not declare.
    pub(crate) fn decode_within<T>(self, decode: impl FnOnce() -> T) -> T {
        /// Restores the previous bound, also when `decode` unwinds.
        struct Restore(Option<u64>);
        impl Drop for Restore {
            fn drop(&mut self) {
                DECODE_BOUND.set(self.0);
            }
        }
        let _restore = Restore(DECODE_BOUND.replace(Some(self.bytes)));
        decode()
    }
}

/// The bound of the decode running on this thread.
pub(crate) fn decode_bound() -> u64 {
    DECODE_BOUND.get().unwrap_or(FALLBACK_DECODE_BOUND)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decode_bounds_nest_and_restore() {
        let small = Limit {
            option: "max_chunk_bytes",
            bytes: 10,
        };
        let large = Limit {
            bytes: 1000,
            ..small
        };
        assert_eq!(decode_bound(), FALLBACK_DECODE_BOUND);
        small.decode_within(|| {
            assert_eq!(decode_bound(), 10);
            large.decode_within(|| assert_eq!(decode_bound(), 1000));
            assert_eq!(decode_bound(), 10);
        });
        assert_eq!(decode_bound(), FALLBACK_DECODE_BOUND);
    }

    #[test]
    fn check_names_the_option() {
        let limit = Limit {
            option: "max_chunk_bytes",
            bytes: 16,
        };
        assert!(limit.check("x", "object", Some(16)).is_ok());
        let e = limit.check("array a, chunk c/0", "decoded chunk", Some(17));
        let e = e.unwrap_err().to_string();
        assert_eq!(
            e,
            "array a, chunk c/0: decoded chunk is 17 bytes, more than max_chunk_bytes = 16"
        );
        assert!(limit.check("x", "object", None).is_err());
    }
}
