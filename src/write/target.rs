//! Where a write's objects go, so that nothing half-written is visible and nothing that
//! existed is lost: a local store is written as a hidden directory beside its target and
//! moved into place ([`AtomicDirectory`]); a new remote store is written in place, metadata
//! last, and its objects removed if the write fails; an existing remote store being replaced
//! is written below a hidden prefix beside it and copied over it only when complete; an
//! append writes in place, its new chunks first and the grown metadata last. Into an
//! Icechunk repository, everything goes into a writable session of a branch, committed once
//! at the end (`icechunk/commit.rs`).

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use datafusion::execution::runtime_env::RuntimeEnv;
use futures::TryStreamExt;
use object_store::local::LocalFileSystem;
use object_store::path::{Path, PathPart};
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};

use super::atomic_directory::AtomicDirectory;
use super::options::{WriteMode, WriteOptions};
use crate::error::{Result, ZarrError};
use crate::object_stores::redact_text;
use crate::store::ZarrStore;

/// A hidden prefix beside `root` (`.name.<pid>-<nanos>.<what>`), for a staged store or the
/// copy of the one it replaces.
fn beside(root: &Path, what: &str) -> Path {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let parts: Vec<_> = root.parts().collect();
    let name = root.filename().unwrap_or("store").to_string();
    let hidden = format!(".{name}.{}-{nanos}.{what}", std::process::id());
    let parent = Path::from_iter(parts.iter().take(parts.len().saturating_sub(1)).cloned());
    parent.join(hidden.as_str())
}

/// The copies that move each of `paths` (below `from`) to the same key below `to`: chunks
/// first, then metadata from the deepest node up to the root's.
fn ordered_moves(paths: &[Path], from: &Path, to: &Path) -> Vec<(Path, Path)> {
    let mut moves: Vec<(Path, Path, bool, usize)> = Vec::new();
    for path in paths {
        let Some(parts) = path.prefix_match(from) else {
            continue;
        };
        let parts: Vec<PathPart<'static>> = parts
            .map(|p| PathPart::from(p.as_ref().to_string()))
            .collect();
        let metadata = parts
            .last()
            .is_some_and(|p| METADATA_KEYS.contains(&p.as_ref()));
        let depth = parts.len();
        let target = parts.into_iter().fold(to.clone(), |p, part| p.join(part));
        moves.push((path.clone(), target, metadata, depth));
    }
    moves.sort_by(|a, b| a.2.cmp(&b.2).then(b.3.cmp(&a.3)));
    moves.into_iter().map(|(a, b, _, _)| (a, b)).collect()
}

/// The metadata keys of a Zarr node (written last, removed first).
const METADATA_KEYS: [&str; 5] = ["zarr.json", ".zgroup", ".zarray", ".zattrs", ".zmetadata"];

/// How the objects reach the target.
#[derive(Debug)]
enum Staging {
    /// A local directory beside the target, moved into place on commit.
    Local(AtomicDirectory),
    /// Straight into a new remote store; removed if the write fails.
    Direct,
    /// Below a hidden prefix beside an existing remote store, copied over it on commit.
    Beside {
        /// The store being replaced.
        target: Path,
    },
    /// Into an existing store (an append): new objects are removed if the write fails.
    InPlace,
    /// Into a session of an Icechunk repository's branch, committed on success (nothing
    /// is visible before).
    #[cfg(feature = "icechunk")]
    Repository {
        write: Box<crate::icechunk::RepositoryWrite>,
        message: String,
    },
}

/// The objects of one write.
#[derive(Debug)]
pub(crate) struct Target {
    store: Arc<dyn ObjectStore>,
    /// Where objects are written now.
    root: Path,
    /// The target as shown in errors (no credentials).
    shown: String,
    staging: Staging,
    /// The objects written so far (to remove if the write fails).
    written: Mutex<Vec<Path>>,
    /// Values that errors must not show.
    storage: crate::object_stores::StorageOptions,
    done: bool,
    /// Local files being written on the blocking pool: a cancelled write waits for them
    /// before its directory is removed (else they would make it again).
    in_flight: Arc<AtomicUsize>,
}

/// One local file being written (counted in [`Target::in_flight`] until dropped).
struct InFlight(Arc<AtomicUsize>);

impl InFlight {
    fn enter(count: &Arc<AtomicUsize>) -> Self {
        count.fetch_add(1, Ordering::SeqCst);
        Self(count.clone())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
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
        let shown = store.display_location().to_string();
        if matches!(store.url().scheme(), "http" | "https") {
            return Err(ZarrError::Write {
                target: shown,
                message: "HTTP stores are read-only: write to a local path, s3://, gs:// or \
                          az:// instead"
                    .into(),
            });
        }
        let (object_store, root) = store.parts();
        let (object_store, root) = (object_store.clone(), root.clone());
        let mut target = Self {
            store: object_store,
            root: root.clone(),
            shown,
            staging: Staging::Direct,
            written: Mutex::new(Vec::new()),
            storage: options.storage.clone(),
            done: false,
            in_flight: Arc::default(),
        };
        let exists = target.is_store(&root).await?;
        let occupied = exists || target.any_object(&root).await?;
        if !exists && occupied {
            // Not a store: perhaps an Icechunk repository.
            if let Some(staging) = repository_staging(&store, options).await? {
                target.staging = staging;
                target.prepare_repository(options).await?;
                return Ok(target);
            }
        }
        refuse_repository_options(&shown_of(&target), options)?;
        match (exists, occupied, options.mode) {
            (_, false, _) => {}
            (false, true, _) => {
                return Err(target.error(
                    "objects that are not a Zarr store are there; they are not replaced (a \
                     write that was killed leaves chunks without metadata: remove them)"
                        .into(),
                ));
            }
            (true, _, WriteMode::Error) => {
                return Err(target
                    .error("a Zarr store is there (give mode 'overwrite' to replace it)".into()));
            }
            (true, _, WriteMode::Overwrite) => {
                target.root = beside(&root, "tmp");
                target.staging = Staging::Beside { target: root };
            }
        }
        Ok(target)
    }

    async fn create_local(
        runtime: &RuntimeEnv,
        location: &str,
        path: &std::path::Path,
        options: &WriteOptions,
    ) -> Result<Self> {
        let error = |message: String| ZarrError::Write {
            target: path.display().to_string(),
            message,
        };
        if path.is_dir() {
            let is_store = METADATA_KEYS.iter().any(|k| path.join(k).is_file());
            let empty = std::fs::read_dir(path)
                .map(|mut entries| entries.next().is_none())
                .unwrap_or(false);
            if !is_store && !empty {
                // Not a store: perhaps an Icechunk repository.
                let store = ZarrStore::open(runtime, location, &options.storage)?;
                if let Some(staging) = repository_staging(&store, options).await? {
                    let (objects, root) = store.parts();
                    let mut target = Self {
                        store: objects.clone(),
                        root: root.clone(),
                        shown: path.display().to_string(),
                        staging,
                        written: Mutex::new(Vec::new()),
                        storage: options.storage.clone(),
                        done: false,
                        in_flight: Arc::default(),
                    };
                    target.prepare_repository(options).await?;
                    return Ok(target);
                }
            }
            refuse_repository_options(&path.display().to_string(), options)?;
            match (is_store, empty, options.mode) {
                (_, true, _) | (true, _, WriteMode::Overwrite) => {}
                (true, _, WriteMode::Error) => {
                    return Err(error(
                        "a Zarr store is there (give mode 'overwrite' to replace it)".into(),
                    ));
                }
                (false, false, _) => {
                    return Err(error(
                        "a directory that is not a Zarr store is there; it is not replaced".into(),
                    ));
                }
            }
        }
        refuse_repository_options(&path.display().to_string(), options)?;
        let directory = AtomicDirectory::new(path)?;
        let store = LocalFileSystem::new_with_prefix(directory.temp_path())
            .map_err(|e| error(e.to_string()))?;
        Ok(Self {
            store: Arc::new(store),
            root: Path::default(),
            shown: path.display().to_string(),
            staging: Staging::Local(directory),
            written: Mutex::new(Vec::new()),
            storage: options.storage.clone(),
            done: false,
            in_flight: Arc::default(),
        })
    }

    /// An existing store at `store`'s root, to append to.
    pub(crate) fn in_place(store: &ZarrStore, options: &WriteOptions) -> Self {
        let (object_store, root) = store.parts();
        Self {
            store: object_store.clone(),
            root: root.clone(),
            shown: store.display_location().to_string(),
            staging: Staging::InPlace,
            written: Mutex::new(Vec::new()),
            storage: options.storage.clone(),
            done: false,
            in_flight: Arc::default(),
        }
    }

    /// A session of an Icechunk repository's branch, to append to (`INSERT INTO`).
    #[cfg(feature = "icechunk")]
    pub(crate) fn in_repository(
        store: &ZarrStore,
        write: crate::icechunk::RepositoryWrite,
        message: String,
    ) -> Self {
        let (object_store, root) = store.parts();
        Self {
            store: object_store.clone(),
            root: root.clone(),
            shown: store.display_location().to_string(),
            staging: Staging::Repository {
                write: Box::new(write),
                message,
            },
            written: Mutex::new(Vec::new()),
            storage: crate::object_stores::StorageOptions::default(),
            done: false,
            in_flight: Arc::default(),
        }
    }

    /// Whether the write goes into an Icechunk repository.
    pub(crate) fn in_a_repository(&self) -> bool {
        #[cfg(feature = "icechunk")]
        if let Staging::Repository { .. } = self.staging {
            return true;
        }
        false
    }

    /// `options` as this target takes them: a repository's group holds no consolidated
    /// metadata (its snapshot lists its nodes; a later write by icechunk's own writers
    /// would leave a copy stale).
    pub(crate) fn options_for(&self, options: &WriteOptions) -> WriteOptions {
        let mut options = options.clone();
        if self.in_a_repository() {
            options.consolidated = false;
        }
        options
    }

    /// Checks what a repository's branch holds against `options` (a store there is replaced
    /// only with `mode 'overwrite'`; Zarr V2 cannot go in).
    #[cfg(feature = "icechunk")]
    async fn prepare_repository(&mut self, options: &WriteOptions) -> Result<()> {
        let Staging::Repository { write, .. } = &self.staging else {
            return Ok(());
        };
        if options.zarr_format == super::options::ZarrVersion::V2 {
            return Err(self.error(
                "an Icechunk repository holds Zarr V3 only (zarr_format 3, the default)".into(),
            ));
        }
        if write.is_empty().await? {
            return Ok(());
        }
        match options.mode {
            WriteMode::Error => Err(self.error(format!(
                "branch '{}' of this Icechunk repository holds a Zarr store (give mode \
                 'overwrite' to replace it in a new snapshot)",
                write.branch()
            ))),
            WriteMode::Overwrite => write.clear().await,
        }
    }

    #[cfg(not(feature = "icechunk"))]
    async fn prepare_repository(&mut self, _options: &WriteOptions) -> Result<()> {
        Ok(())
    }

    /// The error of this write.
    pub(crate) fn error(&self, message: String) -> ZarrError {
        ZarrError::Write {
            target: self.shown.clone(),
            message: redact_text(&message, &self.storage),
        }
    }

    /// The object path of `key` below the root, its names as they are (`é/c/0` is the
    /// object `é/c/0`, as zarr-python writes it; object_store's `Path::join` would
    /// percent-encode it, and the metadata would name an array with no chunks).
    fn path(&self, key: &str) -> Result<Path> {
        let mut path = self.root.clone();
        for part in key.split('/').filter(|p| !p.is_empty()) {
            let part = PathPart::parse(part)
                .map_err(|e| self.error(format!("{key}: a name no object store holds: {e}")))?;
            path = path.join(part);
        }
        Ok(path)
    }

    /// Writes the object `key` (relative to the store root).
    pub(crate) async fn put(&self, key: &str, bytes: Bytes) -> Result<()> {
        #[cfg(feature = "icechunk")]
        if let Staging::Repository { write, .. } = &self.staging {
            return write.put(key, bytes).await;
        }
        if let Staging::Local(directory) = &self.staging {
            // A file of the hidden directory, written on the blocking pool and counted until
            // done (object_store's local put would go on writing after a cancel unseen).
            let path = self.path(key)?;
            let file = path
                .parts()
                .fold(directory.temp_path().to_path_buf(), |p, part| {
                    p.join(part.as_ref())
                });
            let flight = InFlight::enter(&self.in_flight);
            let written = tokio::task::spawn_blocking(move || {
                let _flight = flight;
                if let Some(parent) = file.parent() {
                    std::fs::create_dir_all(parent)?;
                }
                std::fs::write(&file, &bytes)
            })
            .await;
            return match written {
                Ok(Ok(())) => Ok(()),
                Ok(Err(e)) => Err(self.error(format!("{key}: {e}"))),
                Err(e) => Err(self.error(format!("{key}: {e}"))),
            };
        }
        let path = self.path(key)?;
        // Noted first: a put cut short may still have written it.
        if let Ok(mut written) = self.written.lock() {
            written.push(path.clone());
        }
        self.store
            .put(&path, PutPayload::from_bytes(bytes))
            .await
            .map_err(|e| self.error(format!("{key}: {e}")))?;
        Ok(())
    }

    /// Rewrites the existing object `key` (an append's boundary chunk and metadata): a failed
    /// write does not remove it.
    pub(crate) async fn replace(&self, key: &str, bytes: Bytes) -> Result<()> {
        #[cfg(feature = "icechunk")]
        if let Staging::Repository { write, .. } = &self.staging {
            return write.put(key, bytes).await;
        }
        self.store
            .put(&self.path(key)?, PutPayload::from_bytes(bytes))
            .await
            .map_err(|e| self.error(format!("{key}: {e}")))?;
        Ok(())
    }

    /// Reads the object `key` of the store written to (appends read the last chunk).
    pub(crate) async fn get(&self, key: &str) -> Result<Option<Bytes>> {
        #[cfg(feature = "icechunk")]
        if let Staging::Repository { write, .. } = &self.staging {
            return write.get(key).await;
        }
        if let Staging::Local(directory) = &self.staging {
            let path = self.path(key)?;
            let file = path
                .parts()
                .fold(directory.temp_path().to_path_buf(), |p, part| {
                    p.join(part.as_ref())
                });
            return match std::fs::read(&file) {
                Ok(bytes) => Ok(Some(bytes.into())),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                Err(e) => Err(self.error(format!("{key}: {e}"))),
            };
        }
        match self.store.get(&self.path(key)?).await {
            Ok(result) => Ok(Some(
                result
                    .bytes()
                    .await
                    .map_err(|e| self.error(format!("{key}: {e}")))?,
            )),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(self.error(format!("{key}: {e}"))),
        }
    }

    async fn is_store(&self, root: &Path) -> Result<bool> {
        for key in METADATA_KEYS {
            match self.store.head(&root.clone().join(key)).await {
                Ok(_) => return Ok(true),
                Err(object_store::Error::NotFound { .. }) => {}
                Err(e) => return Err(self.error(format!("{key}: {e}"))),
            }
        }
        Ok(false)
    }

    async fn any_object(&self, root: &Path) -> Result<bool> {
        let mut listing = self.store.list(Some(root));
        match listing.try_next().await {
            Ok(first) => Ok(first.is_some()),
            Err(e) => Err(self.error(e.to_string())),
        }
    }

    /// Makes the written store the target's: moves or copies it into place, metadata last.
    pub(crate) async fn commit(&mut self) -> Result<()> {
        let staging = std::mem::replace(&mut self.staging, Staging::InPlace);
        match staging {
            Staging::Local(directory) => directory.commit()?,
            Staging::Direct | Staging::InPlace => {}
            #[cfg(feature = "icechunk")]
            Staging::Repository { write, message } => {
                let committed = write.commit(&message).await;
                // The chunk objects are removed by the abort that follows a failure.
                self.staging = Staging::Repository { write, message };
                committed?;
            }
            Staging::Beside { target } => {
                let copied = self.copy_over(&target).await;
                // The staged objects are removed by the abort that follows a failure.
                self.staging = Staging::Beside { target };
                copied?;
            }
        }
        self.done = true;
        Ok(())
    }

    /// Copies the staged store over `target`. Object stores have no rename, so the old store
    /// is first copied aside (below a hidden `.old` prefix beside it); then its metadata goes
    /// (it stops being a store), the new chunks come, the arrays' metadata, the root's, and
    /// last the old objects the new store does not have. If that fails midway, the old store
    /// is copied back; if even that fails, the error names where it is kept.
    async fn copy_over(&self, target: &Path) -> Result<()> {
        let old: Vec<Path> = self
            .store
            .list(Some(target))
            .map_ok(|meta| meta.location)
            .try_collect()
            .await
            .map_err(|e| self.error(e.to_string()))?;
        let written = self.written.lock().map(|w| w.clone()).unwrap_or_default();
        let moves = ordered_moves(&written, &self.root, target);
        let aside = beside(target, "old");
        let kept = ordered_moves(&old, target, &aside);
        for (done, (from, to)) in kept.iter().enumerate() {
            if let Err(e) = self.store.copy(from, to).await {
                for (_, copy) in kept.iter().take(done) {
                    let _ = self.store.delete(copy).await;
                }
                return Err(self.error(format!(
                    "cannot copy the old store aside before replacing it ({e}); it is unchanged"
                )));
            }
        }
        let restore: Vec<(Path, Path)> = kept.iter().map(|(a, b)| (b.clone(), a.clone())).collect();
        match self.swap_in(target, &old, &moves).await {
            Ok(()) => {
                for (_, copy) in &kept {
                    let _ = self.store.delete(copy).await;
                }
                for (from, _) in &moves {
                    let _ = self.store.delete(from).await;
                }
                Ok(())
            }
            Err(e) => match self.swap_in(target, &[], &restore).await {
                Ok(()) => {
                    let old: std::collections::HashSet<&Path> = old.iter().collect();
                    for (_, new) in moves.iter().filter(|(_, to)| !old.contains(to)) {
                        let _ = self.store.delete(new).await;
                    }
                    for (_, copy) in &kept {
                        let _ = self.store.delete(copy).await;
                    }
                    Err(self.error(format!("{e}; the store that was there is restored")))
                }
                Err(again) => Err(self.error(format!(
                    "{e}; putting the old store back failed too ({again}): it is kept whole at \
                     {aside}"
                ))),
            },
        }
    }

    /// Replaces the store at `target` by copying `moves` (chunks first, metadata from the
    /// deepest node up), after removing its root metadata; then removes the objects of `old`
    /// that no move wrote.
    async fn swap_in(&self, target: &Path, old: &[Path], moves: &[(Path, Path)]) -> Result<()> {
        for key in METADATA_KEYS {
            let path = target.clone().join(key);
            match self.store.delete(&path).await {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
                Err(e) => return Err(self.error(format!("{key}: {e}"))),
            }
        }
        for (from, to) in moves {
            self.store
                .copy(from, to)
                .await
                .map_err(|e| self.error(format!("{to}: {e}")))?;
        }
        let written: std::collections::HashSet<&Path> = moves.iter().map(|m| &m.1).collect();
        for path in old.iter().filter(|p| !written.contains(p)) {
            let _ = self.store.delete(path).await;
        }
        Ok(())
    }

    /// Removes what this write wrote (the store that was there stays as it was).
    pub(crate) async fn abort(mut self) {
        self.done = true;
        let written = self
            .written
            .lock()
            .map(|mut w| std::mem::take(&mut *w))
            .unwrap_or_default();
        if let Staging::Local(_) = self.staging {
            // The hidden directory goes with the AtomicDirectory.
            return;
        }
        #[cfg(feature = "icechunk")]
        if let Staging::Repository { write, .. } = &self.staging {
            // Nothing was committed; the chunk objects no snapshot refers to go.
            write.abort().await;
            return;
        }
        for path in written {
            let _ = self.store.delete(&path).await;
        }
    }
}

impl Drop for Target {
    /// A write dropped unfinished (cancelled) removes its remote objects in the background,
    /// best effort; a local one's directory goes with its [`AtomicDirectory`], once the
    /// files being written are done (at most 10 s).
    fn drop(&mut self) {
        if let Staging::Local(_) = self.staging {
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
            while self.in_flight.load(Ordering::SeqCst) > 0 && std::time::Instant::now() < deadline
            {
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
            return;
        }
        if self.done {
            return;
        }
        let written = self
            .written
            .lock()
            .map(|mut w| std::mem::take(&mut *w))
            .unwrap_or_default();
        // Into a repository: the chunk objects the write made.
        #[cfg(feature = "icechunk")]
        let written = match &self.staging {
            Staging::Repository { write, .. } => write.made(),
            _ => written,
        };
        if written.is_empty() {
            return;
        }
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            let store = self.store.clone();
            handle.spawn(async move {
                for path in written {
                    let _ = store.delete(&path).await;
                }
            });
        }
    }
}

/// The staging of a write into the Icechunk repository at `store`, or `None` if none is there.
#[cfg(feature = "icechunk")]
async fn repository_staging(store: &ZarrStore, options: &WriteOptions) -> Result<Option<Staging>> {
    let branch = options.branch.as_deref().unwrap_or("main");
    let Some(write) = crate::icechunk::RepositoryWrite::open(store, branch).await? else {
        return Ok(None);
    };
    let message = (options.message.clone()).unwrap_or_else(|| DEFAULT_MESSAGE.to_string());
    Ok(Some(Staging::Repository {
        write: Box::new(write),
        message,
    }))
}

/// Without Icechunk, a repository at `store` is an error that says so.
#[cfg(not(feature = "icechunk"))]
async fn repository_staging(store: &ZarrStore, _options: &WriteOptions) -> Result<Option<Staging>> {
    crate::icechunk::refuse_without_feature(store).await?;
    Ok(None)
}

/// The message of a commit that `message` does not name.
#[cfg(feature = "icechunk")]
pub(crate) const DEFAULT_MESSAGE: &str = "COPY by datafusion-zarr";

/// `branch` and `message` name a commit: for a target that is not a repository, an error.
fn refuse_repository_options(shown: &str, options: &WriteOptions) -> Result<()> {
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
    Err(ZarrError::Write {
        target: shown.to_string(),
        message: format!(
            "{} name a commit to an Icechunk repository, and no repository is there (create one \
             with icechunk's `Repository.create`, then write to it)",
            given.join(" and ")
        ),
    })
}

fn shown_of(target: &Target) -> String {
    target.shown.clone()
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
