//! Staging on an object store (S3, GCS, Azure; also the local files of an append): a new
//! store is written in place, metadata last, and its objects removed if the write fails; an
//! existing store being replaced is written below a hidden prefix beside it and copied over it
//! only when complete; an append writes in place, its new chunks first and the grown metadata
//! last.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use bytes::Bytes;
use futures::TryStreamExt;
use object_store::path::{Path, PathPart};
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutPayload, UpdateVersion};

use super::{Shown, Stage, WriterLock, delete_in_background, hidden_name, object_path};
use crate::error::Result;

/// The metadata keys of a Zarr node (written last, removed first).
pub(crate) const METADATA_KEYS: [&str; 5] =
    ["zarr.json", ".zgroup", ".zarray", ".zattrs", ".zmetadata"];

/// Where the objects of an [`ObjectStage`] go.
#[derive(Debug)]
pub(crate) enum Placement {
    /// Straight into a new store; removed if the write fails.
    Direct,
    /// Below a hidden prefix beside the existing store at `target`, copied over it on commit.
    Beside {
        /// The store being replaced.
        target: Path,
    },
    /// Into an existing store (an append): new objects are removed if the write fails.
    InPlace,
}

/// The objects of one write to an object store.
#[derive(Debug)]
pub(crate) struct ObjectStage {
    store: Arc<dyn ObjectStore>,
    /// Where objects are written now.
    root: Path,
    placement: Placement,
    shown: Shown,
    /// The objects written so far (to remove if the write fails).
    written: Mutex<Vec<Path>>,
    /// The versions of the metadata documents read: an append rewrites them only if they are
    /// still what it read (where the store can tell).
    read_versions: Mutex<HashMap<Path, UpdateVersion>>,
    /// The store's one-writer lock, released after the commit or abort.
    lock: Option<WriterLock>,
    done: bool,
}

impl ObjectStage {
    /// A stage writing the store at `root` of `store` as `placement` says, under `lock`.
    pub(crate) fn new(
        store: Arc<dyn ObjectStore>,
        root: Path,
        placement: Placement,
        shown: Shown,
        lock: Option<WriterLock>,
    ) -> Self {
        let root = match &placement {
            Placement::Beside { target } => beside(target, "tmp"),
            Placement::Direct | Placement::InPlace => root,
        };
        Self {
            store,
            root,
            placement,
            shown,
            written: Mutex::new(Vec::new()),
            read_versions: Mutex::default(),
            lock,
            done: false,
        }
    }

    /// An error if this write no longer holds the store's lock.
    fn check_lock(&self) -> Result<()> {
        self.lock.as_ref().map_or(Ok(()), WriterLock::check)
    }

    /// Lets go of the store's lock.
    async fn release(&mut self) {
        if let Some(lock) = self.lock.take() {
            lock.release().await;
        }
    }

    fn written(&self) -> Vec<Path> {
        self.written.lock().map(|w| w.clone()).unwrap_or_default()
    }

    /// Copies the staged store over `target`. Object stores have no rename, so the old store
    /// is first copied aside (below a hidden `.old` prefix beside it); then its metadata goes
    /// (it stops being a store), the new chunks come, the arrays' metadata, the root's, and
    /// last the old objects the new store does not have. If that fails midway, the old store
    /// is copied back; if even that fails, the error names where it is kept.
    async fn copy_over(&self, target: &Path) -> Result<()> {
        let lease = super::lease::lease_path(target);
        let old = list(self.store.as_ref(), target, Some(&lease), &self.shown).await?;
        let moves = ordered_moves(&self.written(), &self.root, target);
        let aside = beside(target, "old");
        let kept = ordered_moves(&old, target, &aside);
        for (done, (from, to)) in kept.iter().enumerate() {
            if let Err(e) = self.store.copy(from, to).await {
                for (_, copy) in kept.iter().take(done) {
                    let _ = self.store.delete(copy).await;
                }
                return Err(self.shown.error(format!(
                    "cannot copy the old store aside before replacing it ({e}); it is unchanged"
                )));
            }
        }
        // The copy aside is whole: from here until it is removed, it is the store to put back
        // if this writer is killed (`recover_killed_overwrites`).
        let marker = aside.clone().join(SWAPPING);
        (self.store.put(&marker, PutPayload::default()).await)
            .map_err(|e| self.shown.error(format!("{marker}: {e}")))?;
        let restore: Vec<(Path, Path)> = kept.iter().map(|(a, b)| (b.clone(), a.clone())).collect();
        if let Some(lock) = &self.lock {
            lock.mark_replacing().await?;
        }
        let whole = || self.lock.as_ref().map(WriterLock::mark_whole);
        match self.swap_in(target, &old, &moves).await {
            Ok(()) => {
                whole();
                // The marker first: a copy aside without it is never put back.
                let _ = self.store.delete(&marker).await;
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
                    whole();
                    let old: HashSet<&Path> = old.iter().collect();
                    for (_, new) in moves.iter().filter(|(_, to)| !old.contains(to)) {
                        let _ = self.store.delete(new).await;
                    }
                    let _ = self.store.delete(&marker).await;
                    for (_, copy) in &kept {
                        let _ = self.store.delete(copy).await;
                    }
                    Err(self
                        .shown
                        .error(format!("{e}; the store that was there is restored")))
                }
                Err(again) => Err(self.shown.error(format!(
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
        swap_in(self.store.as_ref(), &self.shown, target, old, moves).await
    }

    /// The objects written, taken (they are removed once).
    fn take_written(&self) -> Vec<Path> {
        self.written
            .lock()
            .map(|mut w| std::mem::take(&mut *w))
            .unwrap_or_default()
    }
}

#[async_trait]
impl Stage for ObjectStage {
    async fn put(&self, key: &str, bytes: Bytes) -> Result<()> {
        self.check_lock()?;
        let path = object_path(&self.root, key, &self.shown)?;
        // Noted first: a put cut short may still have written it.
        if let Ok(mut written) = self.written.lock() {
            written.push(path.clone());
        }
        self.store
            .put(&path, PutPayload::from_bytes(bytes))
            .await
            .map_err(|e| self.shown.error(format!("{key}: {e}")))?;
        Ok(())
    }

    async fn replace(&self, key: &str, bytes: Bytes) -> Result<()> {
        self.check_lock()?;
        let path = object_path(&self.root, key, &self.shown)?;
        let read = self
            .read_versions
            .lock()
            .ok()
            .and_then(|v| v.get(&path).cloned());
        let payload = PutPayload::from_bytes(bytes);
        let put = match read {
            Some(version) => {
                let result = (self.store)
                    .put_opts(&path, payload.clone(), PutMode::Update(version).into())
                    .await;
                match result {
                    // A store that cannot put conditionally (local files, whose lock is the
                    // OS's): as it is.
                    Err(object_store::Error::NotImplemented { .. }) => {
                        self.store.put(&path, payload).await
                    }
                    Err(object_store::Error::Precondition { .. }) => {
                        return Err(self.shown.error(format!(
                            "{key}: another writer changed it while this write ran; nothing of \
                             this write is kept"
                        )));
                    }
                    other => other,
                }
            }
            None => self.store.put(&path, payload).await,
        };
        put.map_err(|e| self.shown.error(format!("{key}: {e}")))?;
        Ok(())
    }

    async fn get(&self, key: &str) -> Result<Option<Bytes>> {
        let path = object_path(&self.root, key, &self.shown)?;
        match self.store.get(&path).await {
            Ok(result) => {
                let is_metadata = path
                    .filename()
                    .is_some_and(|name| METADATA_KEYS.contains(&name));
                if is_metadata && let Ok(mut versions) = self.read_versions.lock() {
                    let version = UpdateVersion {
                        e_tag: result.meta.e_tag.clone(),
                        version: result.meta.version.clone(),
                    };
                    if version.e_tag.is_some() || version.version.is_some() {
                        versions.insert(path.clone(), version);
                    }
                }
                Ok(Some(
                    result
                        .bytes()
                        .await
                        .map_err(|e| self.shown.error(format!("{key}: {e}")))?,
                ))
            }
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(self.shown.error(format!("{key}: {e}"))),
        }
    }

    async fn commit(&mut self) -> Result<()> {
        // On failure the staged objects are removed by the abort that follows.
        self.check_lock()?;
        if let Placement::Beside { target } = &self.placement {
            super::pause_point("overwrite:staged");
            self.copy_over(target).await?;
        }
        self.done = true;
        self.release().await;
        Ok(())
    }

    async fn abort(&mut self) {
        self.done = true;
        for path in self.take_written() {
            let _ = self.store.delete(&path).await;
        }
        self.release().await;
    }
}

impl Drop for ObjectStage {
    /// A write dropped unfinished (cancelled) removes its objects in the background, best
    /// effort.
    fn drop(&mut self) {
        if self.done {
            return;
        }
        delete_in_background(self.store.clone(), self.take_written());
    }
}

/// The marker in an overwrite's copy of the old store (`.{name}.{pid}-{n}.old/`) while the
/// target is being replaced: that copy is then the only whole old store.
const SWAPPING: &str = ".swapping";

/// Replaces the store at `target` by copying `moves` (chunks first, metadata from the deepest
/// node up), after removing its root metadata; then removes the objects of `old` that no move
/// wrote.
async fn swap_in(
    store: &dyn ObjectStore,
    shown: &Shown,
    target: &Path,
    old: &[Path],
    moves: &[(Path, Path)],
) -> Result<()> {
    for key in METADATA_KEYS {
        let path = target.clone().join(key);
        match store.delete(&path).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
            Err(e) => return Err(shown.error(format!("{key}: {e}"))),
        }
    }
    super::pause_point("overwrite:swapping");
    for (from, to) in moves {
        (store.copy(from, to).await).map_err(|e| shown.error(format!("{to}: {e}")))?;
    }
    let written: HashSet<&Path> = moves.iter().map(|m| &m.1).collect();
    for path in old.iter().filter(|p| !written.contains(p)) {
        let _ = store.delete(path).await;
    }
    Ok(())
}

/// Puts right what overwrites of the store at `target` that were killed (or lost their lease)
/// left beside it; run by the holder of the store's lease, so every such prefix is an orphan.
/// A copy of the old store marked as being swapped in is copied back over the target (the
/// target may hold half of each); other hidden prefixes (`.tmp` staging, `.old` copies not
/// marked) are removed. Costs one listing of the target's parent. Once done, `lock` says the
/// store is whole.
pub(crate) async fn recover_killed_overwrites(
    store: &dyn ObjectStore,
    target: &Path,
    lock: &WriterLock,
    shown: &Shown,
) -> Result<()> {
    let Some(name) = target.filename() else {
        return Ok(());
    };
    let prefix = format!(".{name}.");
    let parts: Vec<_> = target.parts().collect();
    let parent = Path::from_iter(parts.iter().take(parts.len().saturating_sub(1)).cloned());
    let listing = store
        .list_with_delimiter(Some(&parent))
        .await
        .map_err(|e| shown.error(format!("cannot list {parent}: {e}")))?;
    let lease = super::lease::lease_path(target);
    for hidden in listing.common_prefixes {
        let Some(kind) = hidden
            .filename()
            .and_then(|n| n.strip_prefix(&prefix))
            .and_then(|rest| [".old", ".tmp"].into_iter().find(|k| rest.ends_with(k)))
        else {
            continue;
        };
        let objects = list(store, &hidden, None, shown).await?;
        let marker = hidden.clone().join(SWAPPING);
        if kind == ".old" && objects.contains(&marker) {
            let old: Vec<Path> = objects.iter().filter(|p| **p != marker).cloned().collect();
            let now = list(store, target, Some(&lease), shown).await?;
            let moves = ordered_moves(&old, &hidden, target);
            swap_in(store, shown, target, &now, &moves)
                .await
                .map_err(|e| {
                    shown.error(format!(
                        "a killed overwrite left it half replaced, and putting back the old store \
                     kept whole at {hidden} failed: {e}"
                    ))
                })?;
            store
                .delete(&marker)
                .await
                .map_err(|e| shown.error(format!("{marker}: {e}")))?;
        }
        for path in objects.iter().filter(|p| **p != marker) {
            let _ = store.delete(path).await;
        }
    }
    lock.mark_whole();
    Ok(())
}

/// The objects below `root` of `store`, but `except`.
async fn list(
    store: &dyn ObjectStore,
    root: &Path,
    except: Option<&Path>,
    shown: &Shown,
) -> Result<Vec<Path>> {
    store
        .list(Some(root))
        .map_ok(|meta| meta.location)
        .try_filter(|path| std::future::ready(Some(path) != except))
        .try_collect()
        .await
        .map_err(|e| shown.error(format!("cannot list {root}: {e}")))
}

/// Whether a Zarr node's metadata is at `root` of `store`.
pub(crate) async fn is_store(store: &dyn ObjectStore, root: &Path, shown: &Shown) -> Result<bool> {
    for key in METADATA_KEYS {
        match store.head(&root.clone().join(key)).await {
            Ok(_) => return Ok(true),
            Err(object_store::Error::NotFound { .. }) => {}
            Err(e) => return Err(shown.error(format!("{key}: {e}"))),
        }
    }
    Ok(false)
}

/// A hidden prefix beside `root` (`.name.<pid>-<nanos>.<what>`), for a staged store or the
/// copy of the one it replaces.
fn beside(root: &Path, what: &str) -> Path {
    let parts: Vec<_> = root.parts().collect();
    let name = root.filename().unwrap_or("store").to_string();
    let hidden = hidden_name(&name, what);
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
