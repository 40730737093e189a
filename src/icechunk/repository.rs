//! Opens a repository through the session's object store and checks out the snapshot a table
//! reads: the version the options name, resolved once to a snapshot id.

use std::collections::HashMap;
use std::sync::Arc;

use icechunk::Repository;
use icechunk::config::Credentials;
use icechunk::format::SnapshotId;
use icechunk::repository::{RepositoryError, VersionInfo};
use object_store::path::Path;
use tokio::sync::RwLock;

use super::Version;
use super::layout::Seen;
use super::snapshot_store::{SnapshotStore, into_object_store};
use super::storage::ObjectStoreStorage;
use crate::error::{Result, ZarrError};
use crate::limits::Limits;
use crate::options::{ZarrOptions, parse_timestamp};
use crate::store::ZarrStore;

/// The newest spec version icechunk 2.1.0 reads.
const NEWEST_SPEC_VERSION: u8 = 2;

/// A repository opened for reading, with the store it lives in (for its errors).
pub(super) struct OpenRepository {
    pub(super) repository: Repository,
    pub(super) store: ZarrStore,
}

impl OpenRepository {
    /// An error about this repository.
    pub(super) fn error(&self, message: impl Into<String>) -> ZarrError {
        repository_error(&self.store, message)
    }

    /// An error of icechunk's about this repository, cleared of the store's credentials:
    /// its kind only (icechunk's `Display` appends a span trace).
    pub(super) fn icechunk_error(&self, doing: &str, e: &RepositoryError) -> ZarrError {
        let text = self.store.redact(&super::error_text(&e.kind));
        self.error(format!("{doing}: {text}"))
    }

    /// The snapshot `version` names, with a list of what exists when it names nothing.
    pub(super) async fn resolve(&self, version: &Version) -> Result<SnapshotId> {
        let info = match version {
            Version::Branch(name) => VersionInfo::BranchTipRef(name.clone()),
            Version::Tag(name) => VersionInfo::TagRef(name.clone()),
            Version::Snapshot(id) => VersionInfo::SnapshotId(
                SnapshotId::try_from(id.as_str())
                    .map_err(|e| self.error(format!("snapshot id {id}: {e}")))?,
            ),
            Version::AsOf { branch, at } => VersionInfo::AsOf {
                branch: branch.clone(),
                at: parse_timestamp(at)?,
            },
        };
        let resolved = match self.repository.resolve_version(&info).await {
            Ok(id) => id,
            Err(e) => {
                let known = self.known_names(version).await;
                return Err(self.icechunk_error(&format!("{version}{known}"), &e));
            }
        };
        if let Version::Snapshot(_) = version {
            // resolve_version takes an id as it is: check that the repository holds it.
            self.repository
                .lookup_snapshot(&resolved)
                .await
                .map_err(|e| self.icechunk_error(&format!("{version}"), &e))?;
        }
        Ok(resolved)
    }

    /// " (branches: a, b)" or " (tags: …)" for a branch or tag that was not found.
    async fn known_names(&self, version: &Version) -> String {
        let (what, names) = match version {
            Version::Branch(_) | Version::AsOf { .. } => {
                ("branches", self.repository.list_branches().await)
            }
            Version::Tag(_) => ("tags", self.repository.list_tags().await),
            Version::Snapshot(_) => return String::new(),
        };
        match names {
            Ok(names) => format!(
                " (its {what}: {})",
                names.into_iter().collect::<Vec<_>>().join(", ")
            ),
            Err(_) => String::new(),
        }
    }
}

pub(super) fn repository_error(store: &ZarrStore, message: impl Into<String>) -> ZarrError {
    ZarrError::Repository {
        repository: store.display_location().to_string(),
        message: message.into(),
    }
}

/// A repository of a spec version this build `does` (reads, writes) nothing of is an error.
pub(super) fn check_spec_version(store: &ZarrStore, spec_version: u8, does: &str) -> Result<()> {
    if spec_version > NEWEST_SPEC_VERSION || spec_version == 0 {
        return Err(repository_error(
            store,
            format!(
                "its spec version is {spec_version}; this build {does} spec versions 1 to \
                 {NEWEST_SPEC_VERSION} (icechunk 2.1)"
            ),
        ));
    }
    Ok(())
}

/// Opens the repository at `store`'s root, read through the store's own object store.
pub(super) async fn open(
    store: &ZarrStore,
    spec_version: u8,
    seen: Seen,
    options: &ZarrOptions,
) -> Result<OpenRepository> {
    check_spec_version(store, spec_version, "reads")?;
    let limits = Limits::of(options);
    let storage = ObjectStoreStorage::read_only(store, &limits, seen);
    // Only the containers the options name are authorised (credentials from the environment,
    // as icechunk's `None` means): a chunk that refers to a file in another is an error naming
    // the chunk and its container (docs/icechunk.md). A repository chooses where its virtual
    // chunks point; the user chooses which of those places a query may read.
    let authorized: HashMap<String, Option<Credentials>> = options
        .virtual_chunk_containers
        .iter()
        .flatten()
        .map(|prefix| (prefix.clone(), None))
        .collect();
    let repository = Repository::open(None, Arc::new(storage), authorized)
        .await
        .map_err(|e| {
            repository_error(
                store,
                format!(
                    "cannot open it: {}",
                    store.redact(&super::error_text(&e.kind))
                ),
            )
        })?;
    Ok(OpenRepository {
        repository,
        store: store.clone(),
    })
}

/// The snapshot `version` (default: the tip of `main`) of the repository at `store`, as a store
/// of its Zarr keys; the options then name that snapshot.
pub(super) async fn checkout(
    store: ZarrStore,
    mut options: ZarrOptions,
    version: Option<Version>,
    spec_version: u8,
    seen: Seen,
) -> Result<(ZarrStore, ZarrOptions)> {
    let repository = open(&store, spec_version, seen, &options).await?;
    let version = version.unwrap_or_else(|| Version::Branch("main".into()));
    let branch = match &version {
        Version::Branch(name) => Some(name.clone()),
        _ => None,
    };
    let snapshot = repository.resolve(&version).await?;
    let info = repository
        .repository
        .lookup_snapshot(&snapshot)
        .await
        .map_err(|e| repository.icechunk_error(&format!("snapshot {snapshot}"), &e))?;
    let session = repository
        .repository
        .readonly_session(&VersionInfo::SnapshotId(snapshot.clone()))
        .await
        .map_err(|e| repository.icechunk_error(&format!("reading snapshot {snapshot}"), &e))?;
    let session = Arc::new(RwLock::new(session));
    let keys = icechunk::Store::from_session(Arc::clone(&session)).await;
    let id = snapshot.to_string();
    let (objects, root) = store.parts();
    let repository_objects = (Arc::clone(objects), root.clone());
    let adapter = SnapshotStore::new(
        keys,
        session,
        repository_objects,
        id.clone(),
        info.flushed_at,
    );
    let shown = format!("{}@{id}", store.display_location());
    options.branch = None;
    options.tag = None;
    options.as_of = None;
    options.snapshot = Some(id);
    let snapshot_store =
        (store.with_object_store(into_object_store(adapter), Path::default(), shown))
            .on_branch(branch);
    Ok((snapshot_store, options))
}
