//! Where a write's objects go: the location is resolved into a local directory, an object
//! store or an Icechunk repository's branch, and the write handed the [`Stage`] that keeps
//! what it writes out of sight until it commits (`staging/`): nothing half-written is visible
//! and nothing that existed is lost.

use std::path::PathBuf;

use bytes::Bytes;
use datafusion::execution::runtime_env::RuntimeEnv;
use futures::TryStreamExt;
use object_store::ObjectStore;
use object_store::path::Path;

use super::options::{WriteMode, WriteOptions, ZarrVersion};
use crate::error::{Result, ZarrError};
use crate::staging::{
    LocalStage, METADATA_KEYS, ObjectStage, Placement, Shown, Stage, StoreLock, WriterLock,
    is_store, recover_killed_overwrites,
};
use crate::store::ZarrStore;

/// What an object store's target holds, for a write.
enum Found {
    /// Where the write's objects go.
    Placement(Placement),
    /// An Icechunk repository, written by a commit.
    Repository(Target),
}

/// The objects of one write.
#[derive(Debug)]
pub(crate) struct Target {
    stage: Box<dyn Stage>,
    shown: Shown,
}

impl Target {
    /// Prepares a new store at `location`: an existing store there is an error unless
    /// `mode` is `overwrite`.
    pub(crate) async fn create(
        runtime: &RuntimeEnv,
        location: &str,
        options: &WriteOptions,
    ) -> Result<Self> {
        if let Some(path) = local_path(location)? {
            return Self::create_local(runtime, location, &path, options).await;
        }
        let store = ZarrStore::open(runtime, location, &options.storage)?;
        let shown = Shown::new(store.display_location(), &options.storage);
        if matches!(store.url().scheme(), "http" | "https") {
            return Err(shown.error(
                "HTTP stores are read-only: write to a local path, s3://, gs:// or az:// \
                 instead",
            ));
        }
        // One writer at a time, from before the target is looked at to after the commit.
        let lock = WriterLock::acquire(&store, options.lock_times(), &shown).await?;
        let found = Self::look_under_lock(&store, options, &lock, &shown).await;
        let (objects, root) = store.parts();
        match found {
            Ok(Found::Placement(placement)) => {
                let stage = ObjectStage::new(
                    objects.clone(),
                    root.clone(),
                    placement,
                    shown.clone(),
                    Some(lock),
                );
                Ok(Self::with(stage, shown))
            }
            Ok(Found::Repository(target)) => {
                lock.release().await;
                Ok(target)
            }
            Err(e) => {
                lock.release().await;
                Err(e)
            }
        }
    }

    /// What is at an object store's target, looked at under its `lock`: where the write goes,
    /// or the Icechunk repository there. What an overwrite killed midway left is put right
    /// first.
    async fn look_under_lock(
        store: &ZarrStore,
        options: &WriteOptions,
        lock: &WriterLock,
        shown: &Shown,
    ) -> Result<Found> {
        let (objects, root) = store.parts();
        let mut exists = is_store(objects.as_ref(), root, shown).await?;
        let occupied = exists || any_object(objects.as_ref(), root, shown).await?;
        if occupied && (!exists || options.mode == WriteMode::Overwrite) {
            // An overwrite killed midway leaves a target that is no store, or half of two.
            recover_killed_overwrites(objects.as_ref(), root, lock, shown).await?;
            exists = is_store(objects.as_ref(), root, shown).await?;
        }
        if !exists && occupied {
            // Not a store: perhaps an Icechunk repository, whose commits settle races.
            if let Some(target) = Self::in_a_repository_at(store, options, shown).await? {
                return Ok(Found::Repository(target));
            }
        }
        refuse_repository_options(shown, options)?;
        match (exists, occupied, options.mode) {
            (_, false, _) => Ok(Found::Placement(Placement::Direct)),
            (false, true, _) => Err(shown.error(
                "objects that are not a Zarr store are there; they are not replaced (a write \
                 that was killed leaves chunks without metadata: remove them)",
            )),
            (true, _, WriteMode::Error) => {
                Err(shown.error("a Zarr store is there (give mode 'overwrite' to replace it)"))
            }
            (true, _, WriteMode::Overwrite) => Ok(Found::Placement(Placement::Beside {
                target: root.clone(),
            })),
        }
    }

    async fn create_local(
        runtime: &RuntimeEnv,
        location: &str,
        path: &std::path::Path,
        options: &WriteOptions,
    ) -> Result<Self> {
        let shown = Shown::new(path.display().to_string(), &options.storage);
        let (is_store, occupied) = local_contents(path);
        if occupied && !is_store {
            // Not a store: perhaps an Icechunk repository, whose commits settle races.
            let store = ZarrStore::open(runtime, location, &options.storage)?;
            if let Some(target) = Self::in_a_repository_at(&store, options, &shown).await? {
                return Ok(target);
            }
        }
        refuse_repository_options(&shown, options)?;
        // One writer at a time, from before the target is looked at to after the commit.
        let timeout = std::time::Duration::from_secs(options.lock_timeout);
        let lock = StoreLock::acquire(path, timeout, &shown).await?;
        match (local_contents(path), options.mode) {
            ((_, false), _) | ((true, _), WriteMode::Overwrite) => {}
            ((true, _), WriteMode::Error) => {
                return Err(
                    shown.error("a Zarr store is there (give mode 'overwrite' to replace it)")
                );
            }
            ((false, true), _) => {
                return Err(shown
                    .error("a directory that is not a Zarr store is there; it is not replaced"));
            }
        }
        Ok(Self::with(LocalStage::new(path, lock)?, shown))
    }

    /// A write into the Icechunk repository at `store`, or `None` if none is there.
    async fn in_a_repository_at(
        store: &ZarrStore,
        options: &WriteOptions,
        shown: &Shown,
    ) -> Result<Option<Self>> {
        let flags = (
            options.zarr_format == ZarrVersion::V2,
            options.mode == WriteMode::Overwrite,
        );
        let branch = options.branch.as_deref();
        let message = options.message.clone();
        let stage = crate::icechunk::repository_stage(store, branch, message, flags, shown).await?;
        Ok(stage.map(|stage| Self {
            stage,
            shown: shown.clone(),
        }))
    }

    fn with(stage: impl Stage + 'static, shown: Shown) -> Self {
        Self {
            stage: Box::new(stage),
            shown,
        }
    }

    /// An existing store at `store`'s root, to append to under its `lock`.
    pub(crate) fn in_place(store: &ZarrStore, options: &WriteOptions, lock: WriterLock) -> Self {
        let (objects, root) = store.parts();
        let shown = Shown::new(store.display_location(), &options.storage);
        let stage = ObjectStage::new(
            objects.clone(),
            root.clone(),
            Placement::InPlace,
            shown.clone(),
            Some(lock),
        );
        Self::with(stage, shown)
    }

    /// A session of an Icechunk repository's branch, to append to (`INSERT INTO`).
    #[cfg(feature = "icechunk")]
    pub(crate) fn in_repository(
        store: &ZarrStore,
        write: crate::icechunk::RepositoryWrite,
        message: String,
    ) -> Self {
        let shown = Shown::new(store.display_location(), &Default::default());
        Self::with(crate::icechunk::RepositoryStage::new(write, message), shown)
    }

    /// `options` as this target takes them: a repository's group holds no consolidated
    /// metadata (its snapshot lists its nodes; a later write by icechunk's own writers
    /// would leave a copy stale).
    pub(crate) fn options_for(&self, options: &WriteOptions) -> WriteOptions {
        let mut options = options.clone();
        if self.stage.is_repository() {
            options.consolidated = false;
        }
        options
    }

    /// The error of this write.
    pub(crate) fn error(&self, message: String) -> ZarrError {
        self.shown.error(message)
    }

    /// Writes the object `key` (relative to the store root).
    pub(crate) async fn put(&self, key: &str, bytes: Bytes) -> Result<()> {
        self.stage.put(key, bytes).await
    }

    /// Writes the metadata document `document` at `key`.
    pub(crate) async fn put_json(&self, key: &str, document: &serde_json::Value) -> Result<()> {
        let bytes = serde_json::to_vec(document).map_err(|e| self.error(e.to_string()))?;
        self.put(key, bytes.into()).await
    }

    /// Rewrites the existing object `key` (an append's boundary chunk and metadata): a failed
    /// write does not remove it.
    pub(crate) async fn replace(&self, key: &str, bytes: Bytes) -> Result<()> {
        self.stage.replace(key, bytes).await
    }

    /// Reads the object `key` of the store written to (appends read the last chunk).
    pub(crate) async fn get(&self, key: &str) -> Result<Option<Bytes>> {
        self.stage.get(key).await
    }

    /// Makes the written store the target's.
    pub(crate) async fn commit(&mut self) -> Result<()> {
        self.stage.commit().await
    }

    /// Removes what this write wrote (the store that was there stays as it was).
    pub(crate) async fn abort(mut self) {
        self.stage.abort().await;
    }
}

/// Whether the local directory `path` holds a Zarr node's metadata, and whether it holds
/// anything (a path that is no directory holds nothing).
fn local_contents(path: &std::path::Path) -> (bool, bool) {
    if !path.is_dir() {
        return (false, false);
    }
    let is_store = METADATA_KEYS.iter().any(|k| path.join(k).is_file());
    let empty = std::fs::read_dir(path)
        .map(|mut entries| entries.next().is_none())
        .unwrap_or(false);
    (is_store, !empty)
}

/// Whether any object is below `root` of `store`.
async fn any_object(store: &dyn ObjectStore, root: &Path, shown: &Shown) -> Result<bool> {
    let mut listing = store.list(Some(root));
    match listing.try_next().await {
        Ok(first) => Ok(first.is_some()),
        Err(e) => Err(shown.error(e.to_string())),
    }
}

/// `branch` and `message` name a commit: for a target that is not a repository, an error.
fn refuse_repository_options(shown: &Shown, options: &WriteOptions) -> Result<()> {
    let given: Vec<&str> = [
        ("branch", options.branch.is_some()),
        ("message", options.message.is_some()),
    ]
    .into_iter()
    .filter_map(|(key, set)| set.then_some(key))
    .collect();
    if given.is_empty() {
        return Ok(());
    }
    Err(shown.error(format!(
        "{} name a commit to an Icechunk repository, and no repository is there (create one \
         with icechunk's `Repository.create`, then write to it)",
        given.join(" and ")
    )))
}

/// The local directory `location` names (a path or a `file://` URL), or `None` for a URL of
/// another scheme.
fn local_path(location: &str) -> Result<Option<PathBuf>> {
    if !location.contains("://") {
        return Ok(Some(PathBuf::from(location)));
    }
    let url = url::Url::parse(location).map_err(|e| {
        ZarrError::Location(format!(
            "'{}' is not a URL: {e}",
            crate::object_stores::redact_unparsed(location)
        ))
    })?;
    if url.scheme() != "file" {
        return Ok(None);
    }
    url.to_file_path()
        .map(Some)
        .map_err(|()| ZarrError::Location(format!("'{location}' is not a local path")))
}
