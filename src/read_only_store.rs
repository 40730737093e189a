//! What the read-only object stores over Zarr keys share (an Icechunk snapshot's,
//! `icechunk/snapshot_store.rs`, and a reference set's, `references/store.rs`): a requested
//! range resolved against an object's size, inline bytes sliced to it, and the error a write
//! gets.

use std::ops::Range;

use bytes::Bytes;
use object_store::GetRange;

/// The byte range of `key` (an object of `size` bytes in the store named `store`) that `range`
/// asks for, or an error as object_store gives for a range that starts past the end.
pub(crate) fn resolve(
    range: Option<GetRange>,
    size: u64,
    key: &str,
    store: &'static str,
) -> object_store::Result<Range<u64>> {
    let resolved = match range {
        None => 0..size,
        Some(GetRange::Bounded(r)) => r.start..r.end.min(size),
        Some(GetRange::Offset(o)) => o..size,
        Some(GetRange::Suffix(n)) => size.saturating_sub(n)..size,
    };
    if resolved.start > resolved.end || (resolved.start >= size && size > 0) {
        return Err(object_store::Error::Generic {
            store,
            source: format!("'{key}': the range {resolved:?} is outside its {size} bytes").into(),
        });
    }
    Ok(resolved)
}

/// `range` of inline `bytes` (the bytes of `key` in the store named `store`).
pub(crate) fn slice(
    bytes: &Bytes,
    range: &Range<u64>,
    key: &str,
    store: &'static str,
) -> object_store::Result<Bytes> {
    usize::try_from(range.start)
        .ok()
        .zip(usize::try_from(range.end).ok())
        .filter(|(start, end)| start <= end && *end <= bytes.len())
        .map(|(start, end)| bytes.slice(start..end))
        .ok_or_else(|| object_store::Error::Generic {
            store,
            source: format!("'{key}': {range:?} is outside its inline bytes").into(),
        })
}

/// The error of a write (`operation`) to `what` (`an Icechunk snapshot`), which is read-only.
pub(crate) fn refused(operation: &str, what: &str) -> object_store::Error {
    object_store::Error::NotSupported {
        source: format!("{operation}: {what} is read-only").into(),
    }
}
