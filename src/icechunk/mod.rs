//! Icechunk repositories: a location that holds a repository rather than a plain store is
//! recognised by its layout and opened at the version the options name (`branch`, `tag`,
//! `snapshot`, `as_of`); the scan then reads that snapshot's keys as it reads any store.

#[cfg(feature = "icechunk")]
mod history;
mod layout;
#[cfg(feature = "icechunk")]
mod repository;
#[cfg(feature = "icechunk")]
mod snapshot_store;
#[cfg(feature = "icechunk")]
mod storage;

#[cfg(feature = "icechunk")]
pub use history::{IcechunkRefsFunction, IcechunkSnapshotsFunction};

use crate::error::{Result, ZarrError};
use crate::options::ZarrOptions;
use crate::store::ZarrStore;

pub(crate) use layout::Layout;

/// The version of a repository the options name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Version {
    /// The tip of a branch (`main` when nothing is named).
    Branch(String),
    Tag(String),
    Snapshot(String),
    /// The newest snapshot of `branch` written at or before `at` (as given).
    AsOf {
        branch: String,
        at: String,
    },
}

impl Version {
    /// The version `options` name; more than one of `tag`, `snapshot` and `branch`/`as_of` is
    /// an error (`branch` with `as_of` names the branch whose history is searched).
    pub(crate) fn of(options: &ZarrOptions) -> Result<Option<Self>> {
        let named: Vec<&str> = [
            (
                "branch",
                options.branch.is_some() && options.as_of.is_none(),
            ),
            ("tag", options.tag.is_some()),
            ("snapshot", options.snapshot.is_some()),
            ("as_of", options.as_of.is_some()),
        ]
        .into_iter()
        .filter_map(|(key, set)| set.then_some(key))
        .collect();
        if named.len() > 1 {
            return Err(ZarrError::Option(format!(
                "{} each name a version of an Icechunk repository: give one of them (with \
                 `as_of`, `branch` names the branch whose history is searched)",
                named.join(" and ")
            )));
        }
        Ok(
            match (
                &options.branch,
                &options.tag,
                &options.snapshot,
                &options.as_of,
            ) {
                (branch, _, _, Some(at)) => Some(Self::AsOf {
                    branch: branch.clone().unwrap_or_else(|| "main".into()),
                    at: at.clone(),
                }),
                (_, Some(tag), _, _) => Some(Self::Tag(tag.clone())),
                (_, _, Some(id), _) => Some(Self::Snapshot(id.clone())),
                (Some(branch), _, _, _) => Some(Self::Branch(branch.clone())),
                _ => None,
            },
        )
    }
}

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Branch(name) => write!(f, "branch '{name}'"),
            Self::Tag(name) => write!(f, "tag '{name}'"),
            Self::Snapshot(id) => write!(f, "snapshot {id}"),
            Self::AsOf { branch, at } => write!(f, "branch '{branch}' as of {at}"),
        }
    }
}

/// The store to read for `store` opened with `options`: the store itself when it is a plain
/// Zarr store, or the snapshot the options name when it is an Icechunk repository; the options
/// then name that snapshot (`snapshot`, the others cleared), so that the table's `location()`,
/// `EXPLAIN` and a cluster's executors read exactly it.
pub(crate) async fn checkout(
    store: ZarrStore,
    options: ZarrOptions,
) -> Result<(ZarrStore, ZarrOptions)> {
    let version = Version::of(&options)?;
    match layout::detect(&store).await? {
        Layout::Plain => match version {
            None => Ok((store, options)),
            Some(version) => Err(ZarrError::Option(format!(
                "{version}: '{}' is a Zarr store, not an Icechunk repository (the options \
                 branch, tag, snapshot and as_of select a repository's version)",
                store.display_location()
            ))),
        },
        #[cfg(feature = "icechunk")]
        Layout::Repository { spec_version } => {
            repository::checkout(store, options, version, spec_version).await
        }
        #[cfg(not(feature = "icechunk"))]
        Layout::Repository { spec_version } => Err(ZarrError::Repository {
            repository: store.display_location().to_string(),
            message: format!(
                "this is an Icechunk repository (spec version {spec_version}), and this build \
                 of datafusion-zarr reads none: build it with the cargo feature `icechunk`"
            ),
        }),
    }
}
