//! A write into an Icechunk repository (`COPY … TO '<repository>'`, `INSERT INTO` a table on
//! one): the objects of the write go into a writable session of a branch, and one commit at
//! the end makes them its new snapshot, or nothing is committed.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use icechunk::Store;
use icechunk::format::manifest::ChunkPayload;
use icechunk::format::{ByteRange, CHUNKS_FILE_PATH, ChunkIndices};
use icechunk::session::{Session, SessionErrorKind};
use icechunk::store::StoreErrorKind;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use tokio::sync::RwLock;

use super::layout::{self, Layout};
use super::repository::{check_spec_version, repository_error};
use super::snapshot_store::chunk_key;
use super::storage::ObjectStoreStorage;
use crate::error::{Result, ZarrError};
use crate::limits::Limits;
use crate::options::ZarrOptions;
use crate::store::ZarrStore;

/// A writable session of one branch of a repository.
pub(crate) struct RepositoryWrite {
    session: Arc<RwLock<Session>>,
    keys: Store,
    branch: String,
    /// The repository's objects (a failed write removes the chunk objects it wrote).
    objects: Arc<dyn ObjectStore>,
    root: Path,
    /// The repository (for its errors: shown without credentials).
    store: ZarrStore,
    /// Chunks written and not yet referenced: each array's chunk references, set once its
    /// metadata is written. The writers put an array's metadata after its chunks (a new
    /// array's, and an append's grown shape), and icechunk keeps a chunk only inside the
    /// shape of an array it knows.
    waiting: Mutex<HashMap<String, BTreeMap<Vec<u32>, ChunkPayload>>>,
    /// The chunk objects this write made.
    made: Mutex<HashSet<String>>,
}

impl std::fmt::Debug for RepositoryWrite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let shown = self.store.display_location();
        write!(f, "RepositoryWrite({shown}, branch {})", self.branch)
    }
}

impl RepositoryWrite {
    /// A writable session of `branch` of the repository at `store`, or `None` when `store`
    /// holds no repository.
    pub(crate) async fn open(store: &ZarrStore, branch: &str) -> Result<Option<Self>> {
        let limits = Limits::of(&ZarrOptions::default());
        let spec_version = match layout::detect(store, limits.metadata.bytes).await? {
            Layout::Plain => return Ok(None),
            Layout::Repository { spec_version, .. } => spec_version,
        };
        check_spec_version(store, spec_version, "writes")?;
        let storage = ObjectStoreStorage::writable(store, &limits);
        let (objects, root) = store.parts();
        let failed = |doing: &str, kind: &dyn std::error::Error| {
            repository_error(
                store,
                format!("{doing}: {}", store.redact(&super::error_text(kind))),
            )
        };
        let repository = icechunk::Repository::open(None, Arc::new(storage), HashMap::new())
            .await
            .map_err(|e| failed("cannot open it", &e.kind))?;
        let session = repository.writable_session(branch).await.map_err(|e| {
            failed(
                &format!("cannot write to its branch '{branch}' (it must exist)"),
                &e.kind,
            )
        })?;
        let session = Arc::new(RwLock::new(session));
        let keys = Store::from_session(Arc::clone(&session)).await;
        Ok(Some(Self {
            session,
            keys,
            branch: branch.to_string(),
            objects: Arc::clone(objects),
            root: root.clone(),
            store: store.clone(),
            waiting: Mutex::default(),
            made: Mutex::default(),
        }))
    }

    /// The snapshot the write starts from (the branch's tip when it was opened).
    pub(crate) async fn base(&self) -> String {
        self.session.read().await.snapshot_id().to_string()
    }

    /// An error about this repository, cleared of the store's credentials.
    fn error(&self, message: String) -> ZarrError {
        repository_error(&self.store, self.store.redact(&message))
    }

    fn store_error(&self, key: &str, e: &icechunk::store::StoreError) -> ZarrError {
        self.error(format!("{key}: {}", super::error_text(&e.kind)))
    }

    /// Whether the branch holds no node (an existing store is replaced only with `mode
    /// 'overwrite'`).
    pub(crate) async fn is_empty(&self) -> Result<bool> {
        self.keys
            .is_empty("")
            .await
            .map_err(|e| self.store_error("listing the branch", &e))
    }

    /// Removes every node of the branch (what `mode 'overwrite'` replaces).
    pub(crate) async fn clear(&self) -> Result<()> {
        self.keys
            .clear()
            .await
            .map_err(|e| self.store_error("clearing the branch", &e))
    }

    /// Writes the object `key`: metadata through icechunk, then the references of the chunks
    /// that waited for it; a chunk as a chunk object (or inline), referenced once its array's
    /// metadata is written.
    pub(crate) async fn put(&self, key: &str, bytes: Bytes) -> Result<()> {
        if is_zarr_v2(key) {
            return Err(self.error(format!(
                "{key}: an Icechunk repository holds Zarr V3 only (give zarr_format 3)"
            )));
        }
        if let Some(node) = metadata_node(key) {
            self.keys
                .set(key, bytes)
                .await
                .map_err(|e| self.store_error(key, &e))?;
            let waiting = (self.waiting.lock().ok())
                .and_then(|mut w| w.remove(node))
                .unwrap_or_default();
            for (coords, payload) in waiting {
                self.set_reference(key, node, ChunkIndices(coords), payload)
                    .await?;
            }
            return Ok(());
        }
        let Some((path, coords)) = chunk_key(key) else {
            return Err(self.error(format!("{key}: not a Zarr V3 metadata or chunk key")));
        };
        let writer = (self.session.read().await.get_chunk_writer())
            .map_err(|e| self.error(format!("{key}: {}", super::error_text(&e.kind))))?;
        let payload = writer(bytes)
            .await
            .map_err(|e| self.error(format!("{key}: {}", super::error_text(&e.kind))))?;
        if let ChunkPayload::Ref(chunk) = &payload
            && let Ok(mut made) = self.made.lock()
        {
            made.insert(chunk.id.to_string());
        }
        let node = path.to_string().trim_start_matches('/').to_string();
        let replaced = (self.waiting.lock().ok())
            .and_then(|mut w| w.entry(node).or_default().insert(coords.0, payload));
        if let Some(ChunkPayload::Ref(old)) = replaced {
            // Written again (a string column widened): the first object is nobody's.
            let path = self.chunk_object(&old.id.to_string());
            if self.objects.delete(&path).await.is_ok()
                && let Ok(mut made) = self.made.lock()
            {
                made.remove(&old.id.to_string());
            }
        }
        Ok(())
    }

    fn chunk_object(&self, id: &str) -> Path {
        self.root.clone().join(CHUNKS_FILE_PATH).join(id)
    }

    /// The bytes of a chunk written and not yet referenced, or `None`.
    async fn waiting_chunk(&self, key: &str) -> Result<Option<Bytes>> {
        let Some((path, coords)) = chunk_key(key) else {
            return Ok(None);
        };
        let node = path.to_string();
        let payload = (self.waiting.lock().ok()).and_then(|w| {
            w.get(node.trim_start_matches('/'))
                .and_then(|chunks| chunks.get(&coords.0).cloned())
        });
        match payload {
            Some(ChunkPayload::Inline(bytes)) => Ok(Some(bytes)),
            Some(ChunkPayload::Ref(chunk)) => {
                let range = chunk.offset..chunk.offset.saturating_add(chunk.length);
                let path = self.chunk_object(&chunk.id.to_string());
                let bytes = (self.objects.get_range(&path, range).await)
                    .map_err(|e| self.error(format!("{key}: {e}")))?;
                Ok(Some(bytes))
            }
            Some(_) => Err(self.error(format!("{key}: a virtual chunk cannot be written"))),
            None => Ok(None),
        }
    }

    async fn set_reference(
        &self,
        key: &str,
        node: &str,
        coords: ChunkIndices,
        payload: ChunkPayload,
    ) -> Result<()> {
        let path = icechunk::format::Path::try_from(format!("/{node}"))
            .map_err(|e| self.error(format!("{key}: {e}")))?;
        self.session
            .write()
            .await
            .set_chunk_ref(path, coords, Some(payload))
            .await
            .map_err(|e| self.error(format!("{key}: {}", super::error_text(&e.kind))))
    }

    /// The object `key` as the session holds it (what the branch had, with this write's
    /// changes), or `None`.
    pub(crate) async fn get(&self, key: &str) -> Result<Option<Bytes>> {
        if let Some(bytes) = self.waiting_chunk(key).await? {
            return Ok(Some(bytes));
        }
        match self.keys.get(key, &ByteRange::ALL).await {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e)
                if matches!(
                    e.kind,
                    StoreErrorKind::NotFound(_)
                        | StoreErrorKind::SessionError(SessionErrorKind::NodeNotFound { .. })
                ) =>
            {
                Ok(None)
            }
            Err(e) => Err(self.store_error(key, &e)),
        }
    }

    /// Commits the session as the branch's new snapshot; returns its id. A commit that landed
    /// on the branch since this write began is a conflict: nothing is committed.
    pub(crate) async fn commit(&self, message: &str) -> Result<String> {
        let pending: Vec<String> = (self.waiting.lock().ok())
            .map(|w| w.keys().cloned().collect())
            .unwrap_or_default();
        if let Some(node) = pending.first() {
            return Err(self.error(format!(
                "chunks of '{node}' were written without its metadata; nothing was committed"
            )));
        }
        let mut session = self.session.write().await;
        let base = session.snapshot_id().to_string();
        let committed = session.commit(message).allow_empty(true).execute().await;
        match committed {
            Ok(id) => Ok(id.to_string()),
            Err(e) => Err(match &e.kind {
                SessionErrorKind::Conflict { actual_parent, .. } => self.error(format!(
                    "branch '{}' moved from snapshot {base} to {} while this write ran \
                     (another commit landed): nothing was committed; run it again",
                    self.branch,
                    actual_parent
                        .as_ref()
                        .map_or_else(|| "none".to_string(), |id| id.to_string())
                )),
                kind => self.error(format!(
                    "committing to branch '{}': {}; nothing was committed",
                    self.branch,
                    super::error_text(kind)
                )),
            }),
        }
    }

    /// Removes the chunk objects this write made (no snapshot refers to them).
    pub(crate) async fn abort(&self) {
        let made = (self.made.lock().ok())
            .map(|mut m| std::mem::take(&mut *m))
            .unwrap_or_default();
        for id in made {
            let _ = self.objects.delete(&self.chunk_object(&id)).await;
        }
    }

    /// The repository's objects.
    pub(crate) fn objects(&self) -> Arc<dyn ObjectStore> {
        Arc::clone(&self.objects)
    }

    /// The chunk objects made so far, for a cancelled write to remove in the background.
    pub(crate) fn made(&self) -> Vec<Path> {
        let made = (self.made.lock().ok())
            .map(|mut m| std::mem::take(&mut *m))
            .unwrap_or_default();
        made.iter().map(|id| self.chunk_object(id)).collect()
    }
}

/// The node whose metadata `key` is (`""` for the root), or `None` for a chunk.
fn metadata_node(key: &str) -> Option<&str> {
    if key == "zarr.json" {
        return Some("");
    }
    key.strip_suffix("/zarr.json")
}

fn is_zarr_v2(key: &str) -> bool {
    let name = key.rsplit('/').next().unwrap_or(key);
    matches!(name, ".zarray" | ".zgroup" | ".zattrs" | ".zmetadata")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_told_apart() {
        assert_eq!(metadata_node("zarr.json"), Some(""));
        assert_eq!(metadata_node("a/b/zarr.json"), Some("a/b"));
        assert_eq!(metadata_node("a/c/0"), None);
        assert!(is_zarr_v2("a/.zarray"));
        assert!(!is_zarr_v2("a/zarr.json"));
        let (node, coords) = chunk_key("c/c/0").unwrap();
        assert_eq!((node.to_string(), coords.0), ("/c".to_string(), vec![0]));
        let (node, coords) = chunk_key("a/c/1/2").unwrap();
        assert_eq!((node.to_string(), coords.0), ("/a".to_string(), vec![1, 2]));
        assert!(chunk_key("c/zarr.json").is_none());
    }
}
