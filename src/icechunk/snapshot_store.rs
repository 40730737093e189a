//! One snapshot of an Icechunk repository as an [`ObjectStore`]: its Zarr keys (`zarr.json`,
//! `temp/c/0/1`) served from the snapshot's manifests, read-only, so the scan reads a
//! repository exactly as it reads a plain store (pruning, prefetch, limits, sharding).

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use chrono::{DateTime, Utc};
use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use icechunk::Store;
use icechunk::format::manifest::ChunkPayload;
use icechunk::format::{ByteRange, CHUNKS_FILE_PATH, ChunkIndices};
use icechunk::session::Session;
use icechunk::store::{ListDirItem, StoreError, StoreErrorKind};
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, GetResultPayload, ListResult, MultipartUpload, ObjectMeta,
    ObjectStore, ObjectStoreExt, PutMultipartOptions, PutOptions, PutPayload, PutResult,
};
use tokio::sync::RwLock;

use crate::read_only_store;

/// What the errors of writes call this store.
const WHAT: &str = "an Icechunk snapshot";

/// The keys of one snapshot. Written by hand (icechunk offers zarrs' storage traits through
/// `zarrs_icechunk`, but our scan reads through `object_store`): a thin mapping of `get`,
/// ranges, `head` and listings onto icechunk's `Store`. A chunk kept in one of the
/// repository's own objects is read from that object directly through the store the
/// repository lives in (its manifest says which bytes): icechunk's own read copies each chunk
/// once more, which cost a scan of a local repository a tenth of its time.
#[derive(Clone)]
pub(crate) struct SnapshotStore {
    store: Store,
    session: Arc<RwLock<Session>>,
    /// The object store the repository lives in, and the repository's root within it.
    objects: Arc<dyn ObjectStore>,
    root: Path,
    snapshot: String,
    written_at: DateTime<Utc>,
}

/// Where a key's bytes are.
enum Located {
    /// In the manifest.
    Inline(Bytes),
    /// In one of the repository's own objects, from `start`.
    Object { path: Path, start: u64 },
    /// Where icechunk finds them: metadata, and virtual chunks (whose containers icechunk
    /// authorises).
    Icechunk,
}

/// The node path and chunk coordinates of a chunk key (`temp/c/0/1`, `c/3`), as icechunk
/// reads its keys (Zarr V3's default chunk key encoding); `None` for other keys.
pub(super) fn chunk_key(key: &str) -> Option<(icechunk::format::Path, ChunkIndices)> {
    // The last `c` that only numbers follow: a node may itself be called `c` (`c/c/0`).
    let parts: Vec<&str> = key.split('/').collect();
    let at = parts.iter().rposition(|p| *p == "c")?;
    let coords = (parts.get(at + 1..)?.iter())
        .map(|c| c.parse::<u32>().ok())
        .collect::<Option<Vec<u32>>>()?;
    let node = parts.get(..at)?.join("/");
    let node = icechunk::format::Path::try_from(format!("/{node}")).ok()?;
    Some((node, ChunkIndices(coords)))
}

impl SnapshotStore {
    pub(super) fn new(
        store: Store,
        session: Arc<RwLock<Session>>,
        (objects, root): (Arc<dyn ObjectStore>, Path),
        snapshot: String,
        written_at: DateTime<Utc>,
    ) -> Self {
        Self {
            store,
            session,
            objects,
            root,
            snapshot,
            written_at,
        }
    }

    /// Where the bytes of `key` are, and how many there are (from the manifest: nothing is
    /// read). Anything but a chunk found in the manifest is left to icechunk.
    async fn locate(&self, key: &str) -> object_store::Result<(Located, u64)> {
        if let Some((node, coords)) = chunk_key(key) {
            let payload = self
                .session
                .read()
                .await
                .get_chunk_ref(&node, &coords)
                .await;
            match payload {
                Ok(Some(ChunkPayload::Inline(bytes))) => {
                    let size = bytes.len() as u64;
                    return Ok((Located::Inline(bytes), size));
                }
                Ok(Some(ChunkPayload::Ref(chunk))) => {
                    let path = (self.root.clone())
                        .join(CHUNKS_FILE_PATH)
                        .join(chunk.id.to_string());
                    let located = Located::Object {
                        path,
                        start: chunk.offset,
                    };
                    return Ok((located, chunk.length));
                }
                // A missing chunk, a virtual one, or an error: as icechunk reports it.
                _ => {}
            }
        }
        Ok((Located::Icechunk, self.size(key).await?))
    }

    fn meta(&self, key: &str, size: u64) -> ObjectMeta {
        ObjectMeta {
            location: Path::from(key),
            last_modified: self.written_at,
            size,
            // A snapshot never changes: its id tags every key's content.
            e_tag: Some(format!("{}:{key}", self.snapshot)),
            version: Some(self.snapshot.clone()),
        }
    }

    async fn size(&self, key: &str) -> object_store::Result<u64> {
        self.store
            .getsize(key)
            .await
            .map_err(|e| to_store_error(e, key))
    }
}

impl fmt::Debug for SnapshotStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "IcechunkSnapshot({})", self.snapshot)
    }
}

impl fmt::Display for SnapshotStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

fn to_store_error(e: StoreError, key: &str) -> object_store::Error {
    if matches!(e.kind, StoreErrorKind::NotFound(_)) {
        object_store::Error::NotFound {
            path: key.to_string(),
            source: Box::new(e),
        }
    } else {
        let mut text = super::error_text(&e.kind);
        if text.contains("authorize the virtual chunk container") {
            text.push_str(" (datafusion-zarr: name it in the option virtual_chunk_containers)");
        }
        object_store::Error::Generic {
            store: "Icechunk",
            source: text.into(),
        }
    }
}

/// A failure reading `key` that is the repository's, not the store's.
fn failure(key: &str, message: String) -> object_store::Error {
    object_store::Error::Generic {
        store: "Icechunk",
        source: format!("'{key}': {message}").into(),
    }
}

#[async_trait]
impl ObjectStore for SnapshotStore {
    async fn put_opts(
        &self,
        _: &Path,
        _: PutPayload,
        _: PutOptions,
    ) -> object_store::Result<PutResult> {
        Err(read_only_store::refused("put", WHAT))
    }

    async fn put_multipart_opts(
        &self,
        _: &Path,
        _: PutMultipartOptions,
    ) -> object_store::Result<Box<dyn MultipartUpload>> {
        Err(read_only_store::refused("put", WHAT))
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, object_store::Result<Path>>,
    ) -> BoxStream<'static, object_store::Result<Path>> {
        locations
            .map(|_| Err(read_only_store::refused("delete", WHAT)))
            .boxed()
    }

    async fn copy_opts(&self, _: &Path, _: &Path, _: CopyOptions) -> object_store::Result<()> {
        Err(read_only_store::refused("copy", WHAT))
    }

    /// The size comes from the manifest (no read); the bytes are fetched only when the
    /// payload is polled, so a caller that refuses the size (our `max_chunk_bytes`) never
    /// fetches what a manifest claims.
    async fn get_opts(
        &self,
        location: &Path,
        options: GetOptions,
    ) -> object_store::Result<GetResult> {
        let key = location.as_ref().to_string();
        let (located, size) = self.locate(&key).await?;
        let range = read_only_store::resolve(options.range.clone(), size, &key, "Icechunk")?;
        let meta = self.meta(&key, size);
        let payload = match (options.head, located) {
            (true, _) => futures::stream::empty().boxed(),
            (false, Located::Inline(bytes)) => {
                let part = read_only_store::slice(&bytes, &range, &key, "Icechunk");
                futures::stream::once(async move { part }).boxed()
            }
            (false, Located::Object { path, start }) => {
                let objects = Arc::clone(&self.objects);
                let within = (start.checked_add(range.start))
                    .zip(start.checked_add(range.end))
                    .map(|(from, to)| from..to);
                futures::stream::once(async move {
                    let within = within
                        .ok_or_else(|| failure(&key, "its manifest's offset overflows".into()))?;
                    let wanted = within.end - within.start;
                    let bytes = objects.get_range(&path, within).await?;
                    if bytes.len() as u64 != wanted {
                        let message = format!(
                            "its manifest says {wanted} bytes of the repository's {}, which holds {}",
                            path.filename().map_or_else(|| path.to_string(), |id| format!("{CHUNKS_FILE_PATH}/{id}")),
                            bytes.len()
                        );
                        return Err(failure(&key, message));
                    }
                    Ok(bytes)
                })
                .boxed()
            }
            (false, Located::Icechunk) => {
                let store = self.store.clone();
                let wanted = range.clone();
                futures::stream::once(async move {
                    let bytes = store.get(&key, &ByteRange::Bounded(wanted)).await;
                    bytes.map_err(|e| to_store_error(e, &key))
                })
                .boxed()
            }
        };
        Ok(GetResult {
            payload: GetResultPayload::Stream(payload),
            meta,
            range,
            attributes: Default::default(),
        })
    }

    /// icechunk lists a prefix by walking the snapshot's nodes and manifests (every key of the
    /// prefix at once); each key's size is a manifest lookup.
    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        let this = self.clone();
        let prefix = prefix.map(|p| p.to_string()).unwrap_or_default();
        futures::stream::once(async move {
            let keys = this
                .store
                .list_prefix(&prefix)
                .await
                .map_err(|e| to_store_error(e, &prefix))?;
            let sized = keys.map(move |key| {
                let this = this.clone();
                let prefix = prefix.clone();
                async move {
                    let key = key.map_err(|e| to_store_error(e, &prefix))?;
                    let size = this.size(&key).await?;
                    Ok::<_, object_store::Error>(this.meta(&key, size))
                }
            });
            Ok::<_, object_store::Error>(sized.buffered(16))
        })
        .try_flatten()
        .boxed()
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> object_store::Result<ListResult> {
        let prefix = prefix.map(|p| p.to_string()).unwrap_or_default();
        let items: Vec<ListDirItem> = self
            .store
            .list_dir_items(&prefix)
            .await
            .map_err(|e| to_store_error(e, &prefix))?
            .try_collect()
            .await
            .map_err(|e| to_store_error(e, &prefix))?;
        let join = |name: &str| {
            if prefix.is_empty() {
                name.to_string()
            } else {
                format!("{prefix}/{name}")
            }
        };
        let mut listed = ListResult {
            common_prefixes: Vec::new(),
            objects: Vec::new(),
        };
        for item in items {
            match item {
                ListDirItem::Prefix(name) => listed.common_prefixes.push(Path::from(join(&name))),
                ListDirItem::Key(name) => {
                    let key = join(&name);
                    let size = self.size(&key).await?;
                    listed.objects.push(self.meta(&key, size));
                }
            }
        }
        Ok(listed)
    }
}

/// The adapter as an `Arc<dyn ObjectStore>`.
pub(super) fn into_object_store(store: SnapshotStore) -> Arc<dyn ObjectStore> {
    Arc::new(store)
}
