//! Whether a store root holds an Icechunk repository, by its layout: spec 2 keeps a binary
//! `repo` file that starts with icechunk's magic, spec 1 a JSON ref of the branch `main`.

use crate::error::{Result, ZarrError};
use crate::store::ZarrStore;

/// What a store root holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Layout {
    /// Zarr keys (`zarr.json`, `.zgroup`, …), or nothing yet.
    Plain,
    /// An Icechunk repository of this spec version.
    Repository { spec_version: u8 },
}

/// The 12 bytes every Icechunk metadata file starts with.
const MAGIC: &[u8] = "ICE🧊CHUNK".as_bytes();
/// Where a file's spec version is: after the magic and the 24-byte implementation name.
const SPEC_VERSION_AT: usize = 36;
/// The header's length (magic, implementation name, spec version, file type, compression).
const HEADER_BYTES: u64 = 39;

/// Reads the layout of `store`'s root: two small requests at once (the header of `repo` and
/// whether `refs/branch.main/ref.json` exists), as icechunk itself detects a repository. A
/// probe that fails (a store that answers 403 for a missing key) reads as absent: the store is
/// then read as a plain one and fails there with its own error.
pub(crate) async fn detect(store: &ZarrStore) -> Result<Layout> {
    let (repo, v1_ref) = futures::join!(
        store.probe("repo", HEADER_BYTES),
        store.probe_exists("refs/branch.main/ref.json"),
    );
    if let Some(header) = repo
        && header.starts_with(MAGIC)
    {
        let spec_version =
            header
                .get(SPEC_VERSION_AT)
                .copied()
                .ok_or_else(|| ZarrError::Repository {
                    repository: store.display_location().to_string(),
                    message: format!(
                        "its `repo` file is {} bytes, shorter than an Icechunk header",
                        header.len()
                    ),
                })?;
        return Ok(Layout::Repository { spec_version });
    }
    if v1_ref {
        return Ok(Layout::Repository { spec_version: 1 });
    }
    Ok(Layout::Plain)
}
