//! Whether a store root holds an Icechunk repository, by its layout: spec 2 keeps a binary
//! `repo` file that starts with icechunk's magic, spec 1 a JSON ref of the branch `main`.

use bytes::Bytes;

use crate::error::{Result, ZarrError};
use crate::store::{Probed, ZarrStore};

/// What a store root holds.
#[derive(Debug, Clone)]
pub(crate) enum Layout {
    /// Zarr keys (`zarr.json`, `.zgroup`, …), or nothing yet.
    Plain,
    /// An Icechunk repository of this spec version, with the files detection read (or found
    /// absent): what opening the repository reads first, so that it need not ask again.
    Repository { spec_version: u8, seen: Seen },
}

/// Files of a repository's root read while detecting it: each key with its bytes and version,
/// or `None` where there is no such file.
pub(crate) type Seen = Vec<(String, Option<(Bytes, Option<String>)>)>;

/// The 12 bytes every Icechunk metadata file starts with.
const MAGIC: &[u8] = "ICE🧊CHUNK".as_bytes();
/// Where a file's spec version is: after the magic and the 24-byte implementation name.
const SPEC_VERSION_AT: usize = 36;
/// What icechunk reads first when it opens a repository (spec 2's `repo`, spec 1's ref of
/// `main` and its optional configuration), all read at once here.
const FIRST_FILES: [&str; 3] = ["repo", "refs/branch.main/ref.json", "config.yaml"];

/// Reads the layout of `store`'s root: the files icechunk reads first when it opens a
/// repository, in one round of requests, each within `limit` bytes. Spec 2 has a `repo` file
/// that starts with icechunk's header; spec 1 a ref of the branch `main`. A probe that fails
/// (a store that answers 403 for a missing key) reads as absent: the store is then read as a
/// plain one and fails there with its own error.
pub(crate) async fn detect(store: &ZarrStore, limit: u64) -> Result<Layout> {
    let probes = futures::future::join_all(FIRST_FILES.iter().map(|key| store.probe(key, limit)));
    let found: Vec<(&str, Probed)> = FIRST_FILES.into_iter().zip(probes.await).collect();
    let seen: Seen = (found.iter())
        .filter_map(|(key, probed)| match probed {
            Probed::Absent => Some((key.to_string(), None)),
            Probed::Found { bytes, e_tag } => {
                Some((key.to_string(), Some((bytes.clone(), e_tag.clone()))))
            }
            Probed::Unread => None,
        })
        .collect();
    let bytes_of = |wanted: &str| {
        found.iter().find_map(|(key, probed)| match probed {
            Probed::Found { bytes, .. } if *key == wanted => Some(bytes),
            _ => None,
        })
    };
    if let Some(repo) = bytes_of("repo")
        && repo.starts_with(MAGIC)
    {
        let spec_version =
            repo.get(SPEC_VERSION_AT)
                .copied()
                .ok_or_else(|| ZarrError::Repository {
                    repository: store.display_location().to_string(),
                    message: format!(
                        "its `repo` file is {} bytes, shorter than an Icechunk header",
                        repo.len()
                    ),
                })?;
        return Ok(Layout::Repository { spec_version, seen });
    }
    if bytes_of("refs/branch.main/ref.json").is_some() {
        return Ok(Layout::Repository {
            spec_version: 1,
            seen,
        });
    }
    Ok(Layout::Plain)
}
