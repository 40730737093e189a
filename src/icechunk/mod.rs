//! Icechunk repositories: a location that holds a repository rather than a plain store is
//! recognised by its layout and opened at the version the options name (`branch`, `tag`,
//! `snapshot`, `as_of`); the scan then reads that snapshot's keys as it reads any store. A
//! write into one goes through a [`Stage`] of a branch's session (`stage.rs`), one commit at
//! the end (`commit.rs`).

#[cfg(feature = "icechunk")]
mod commit;
#[cfg(feature = "icechunk")]
mod history;
mod layout;
#[cfg(feature = "icechunk")]
mod repository;
#[cfg(feature = "icechunk")]
mod snapshot_store;
#[cfg(feature = "icechunk")]
mod stage;
#[cfg(feature = "icechunk")]
mod storage;

#[cfg(feature = "icechunk")]
pub(crate) use commit::RepositoryWrite;
#[cfg(feature = "icechunk")]
pub use history::{
    IcechunkRefsFunction, IcechunkSnapshotsFunction, icechunk_refs, icechunk_snapshots,
};
#[cfg(feature = "icechunk")]
pub(crate) use stage::RepositoryStage;

use crate::error::{Result, ZarrError};
use crate::limits::Limits;
use datafusion::execution::runtime_env::RuntimeEnv;

use crate::node::{Node, open_node};
use crate::options::ZarrOptions;
use crate::staging::{Shown, Stage};
use crate::store::ZarrStore;

pub(crate) use layout::Layout;

/// An icechunk error's message with its causes ("I/O error: unexpected end of file"), without
/// the span trace icechunk's `Display` appends.
#[cfg(feature = "icechunk")]
pub(crate) fn error_text(kind: &dyn std::error::Error) -> String {
    let mut text = kind.to_string();
    let mut cause = kind.source();
    while let Some(e) = cause {
        let next = e.to_string();
        if !text.ends_with(&next) {
            text.push_str(": ");
            text.push_str(&next);
        }
        cause = e.source();
    }
    text
}

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

/// Where the readers (a table, `inspect`) find the node `options.path` at `location`: the
/// version of an Icechunk repository the options name, else the plain store, else (no node
/// there) the tip of `main` of a repository there; with the store and options that read it.
/// `arrays`: open only the arrays the option `arrays` names (a table), not every child.
pub(crate) async fn open_node_at(
    runtime: &RuntimeEnv,
    location: &str,
    options: ZarrOptions,
    arrays: bool,
) -> Result<(ZarrStore, ZarrOptions, Node)> {
    let store = match crate::references::is_reference_set(location) {
        true => crate::references::open(runtime, location, &options).await?,
        false => ZarrStore::open(runtime, location, &options.storage)?,
    };
    let (store, options) = checkout_named(store, options).await?;
    match open_named_node(&store, &options, arrays).await {
        Ok(node) => Ok((store, options, node)),
        Err(failure) => {
            let (store, options) = checkout_if_repository(store, options, failure).await?;
            let node = open_named_node(&store, &options, arrays).await?;
            Ok((store, options, node))
        }
    }
}

/// The node `options.path` of `store` (with only the arrays `options.arrays` names if `arrays`).
async fn open_named_node(store: &ZarrStore, options: &ZarrOptions, arrays: bool) -> Result<Node> {
    let names = options.arrays.as_deref().filter(|_| arrays);
    open_node(store, &options.path, &Limits::of(options), names).await
}

/// The store to read for `store` opened with `options` when they name a version (`branch`,
/// `tag`, `snapshot`, `as_of`): that snapshot of the repository at `store`, and the options
/// naming it (`snapshot`, the others cleared), so that the table's `location()`, `EXPLAIN` and
/// a cluster's executors read exactly it. Without a version, the store as it is: a plain store
/// costs no request more, and [`checkout_if_repository`] looks for a repository where no node is.
async fn checkout_named(
    store: ZarrStore,
    options: ZarrOptions,
) -> Result<(ZarrStore, ZarrOptions)> {
    match Version::of(&options)? {
        None => Ok((store, options)),
        Some(version) => match layout::detect(&store, Limits::of(&options).metadata.bytes).await? {
            Layout::Plain => Err(ZarrError::Option(format!(
                "{version}: '{}' is a Zarr store, not an Icechunk repository (the options \
                 branch, tag, snapshot and as_of select a repository's version)",
                store.display_location()
            ))),
            Layout::Repository { spec_version, seen } => {
                checkout(store, options, Some(version), spec_version, seen).await
            }
        },
    }
}

/// After opening a node of `store` failed with `failure`: the tip of `main` of the repository
/// at `store` when the failure was a missing node and a repository is there (its root holds
/// no `zarr.json`), or else `failure`.
async fn checkout_if_repository(
    store: ZarrStore,
    options: ZarrOptions,
    failure: ZarrError,
) -> Result<(ZarrStore, ZarrOptions)> {
    if options.snapshot.is_some() || !crate::node::is_no_node(&failure) {
        return Err(failure);
    }
    match layout::detect(&store, Limits::of(&options).metadata.bytes).await? {
        Layout::Plain => Err(failure),
        Layout::Repository { spec_version, seen } => {
            checkout(store, options, None, spec_version, seen).await
        }
    }
}

#[cfg(feature = "icechunk")]
async fn checkout(
    store: ZarrStore,
    options: ZarrOptions,
    version: Option<Version>,
    spec_version: u8,
    seen: layout::Seen,
) -> Result<(ZarrStore, ZarrOptions)> {
    repository::checkout(store, options, version, spec_version, seen).await
}

#[cfg(not(feature = "icechunk"))]
async fn checkout(
    store: ZarrStore,
    _options: ZarrOptions,
    _version: Option<Version>,
    spec_version: u8,
    _seen: layout::Seen,
) -> Result<(ZarrStore, ZarrOptions)> {
    Err(ZarrError::Repository {
        repository: store.display_location().to_string(),
        message: format!(
            "this is an Icechunk repository (spec version {spec_version}), and this build of \
             datafusion-zarr reads none: build it with the cargo feature `icechunk`"
        ),
    })
}

/// The stage of a write into the Icechunk repository at `store` (see
/// [`RepositoryStage::open`]), or `None` when no repository is there.
#[cfg(feature = "icechunk")]
pub(crate) async fn repository_stage(
    store: &ZarrStore,
    branch: Option<&str>,
    message: Option<String>,
    flags: (bool, bool),
    shown: &Shown,
) -> Result<Option<Box<dyn Stage>>> {
    let stage = RepositoryStage::open(store, branch, message, flags, shown).await?;
    Ok(stage.map(|s| Box::new(s) as Box<dyn Stage>))
}

/// Without the feature, a repository at `store` is an error that says so.
#[cfg(not(feature = "icechunk"))]
pub(crate) async fn repository_stage(
    store: &ZarrStore,
    _branch: Option<&str>,
    _message: Option<String>,
    _flags: (bool, bool),
    _shown: &Shown,
) -> Result<Option<Box<dyn Stage>>> {
    refuse_without_feature(store).await?;
    Ok(None)
}

/// Without the feature, a write into a repository at `store` is an error that says why.
#[cfg(not(feature = "icechunk"))]
pub(crate) async fn refuse_without_feature(store: &ZarrStore) -> Result<()> {
    let limit = Limits::of(&ZarrOptions::default()).metadata.bytes;
    match layout::detect(store, limit).await? {
        Layout::Plain => Ok(()),
        Layout::Repository { spec_version, seen } => {
            let options = ZarrOptions::default();
            checkout(store.clone(), options, None, spec_version, seen)
                .await
                .map(|_| ())
        }
    }
}
