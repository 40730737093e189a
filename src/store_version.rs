//! Whether the store a table reads was replaced while (or since) the table's metadata was read
//! ([`StoreVersion`]): a reader has no lock, and an overwrite by another writer between opening
//! a table and reading its last chunk would mix the old store's metadata with the new one's
//! chunks. Taken before the metadata is read and checked again as each partition of a scan
//! ends: a local store's directory must be the same directory (a local overwrite exchanges
//! it), an object store's lease (`staging/lease.rs`) must not say it is being replaced and
//! must count the same overwrites. Appends do not change either: a reader of the old shape
//! reads the old rows. A lease the reader may not read (credentials for the store's prefix
//! only) leaves the store unchecked.

use crate::error::{Result, ZarrError};
use crate::staging::lease_state;
use crate::store::ZarrStore;

/// What identifies one version of a store, as far as overwrites go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum StoreVersion {
    /// A local store's root directory (device and inode), `None` if there is none.
    Directory(Option<(u64, u64)>),
    /// An object store's count of overwrites (its lease's epoch; 0 without a lease).
    Overwrites(u64),
    /// A store no writer of ours replaces (HTTP, an Icechunk snapshot).
    Unchecked,
}

impl StoreVersion {
    /// The version of `store` now; an error if an overwrite is replacing it.
    pub(crate) async fn of(store: &ZarrStore) -> Result<Self> {
        let url = store.url();
        match url.scheme() {
            "file" => Ok(Self::Directory(
                url.to_file_path().ok().and_then(|p| directory_id(&p)),
            )),
            "s3" | "s3a" | "gs" | "az" | "abfs" | "abfss" | "adl" | "azure" => {
                let (objects, root) = store.parts();
                // A lease this reader may not read (credentials for the store's prefix only)
                // or cannot reach: not checked.
                let Ok(state) = lease_state(objects, root).await else {
                    return Ok(Self::Unchecked);
                };
                match state {
                    Some(state) if state.replacing => Err(ZarrError::Store {
                        location: store.display_location().to_string(),
                        message: format!(
                            "it is being replaced by another writer ({}); read it again once \
                             the overwrite is done",
                            state.holder
                        ),
                    }),
                    Some(state) => Ok(Self::Overwrites(state.epoch)),
                    None => Ok(Self::Overwrites(0)),
                }
            }
            _ => Ok(Self::Unchecked),
        }
    }

    /// An error if `store` is no longer this version: it was replaced since this version was
    /// taken, and what was read may mix two stores.
    pub(crate) async fn check(&self, store: &ZarrStore) -> Result<()> {
        if *self == Self::Unchecked {
            return Ok(());
        }
        let now = Self::of(store).await?;
        if now == *self || now == Self::Unchecked {
            return Ok(());
        }
        Err(ZarrError::Store {
            location: store.display_location().to_string(),
            message: "another writer replaced the store while it was read (or since the table \
                      was opened), so what was read may mix the two; read it again (register \
                      the table again)"
                .into(),
        })
    }
}

/// The device and inode of the directory `path`.
#[cfg(unix)]
fn directory_id(path: &std::path::Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

#[cfg(not(unix))]
fn directory_id(_path: &std::path::Path) -> Option<(u64, u64)> {
    None
}
