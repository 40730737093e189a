//! One snapshot of an Icechunk repository as an [`ObjectStore`]: its Zarr keys (`zarr.json`,
//! `temp/c/0/1`) served from the snapshot's manifests, read-only, so the scan reads a
//! repository exactly as it reads a plain store (pruning, prefetch, limits, sharding).

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use icechunk::Store;
use icechunk::format::ByteRange;
use icechunk::store::{ListDirItem, StoreError, StoreErrorKind};
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetRange, GetResult, GetResultPayload, ListResult, MultipartUpload,
    ObjectMeta, ObjectStore, PutMultipartOptions, PutOptions, PutPayload, PutResult,
};

/// The keys of one snapshot. Written by hand (icechunk offers zarrs' storage traits through
/// `zarrs_icechunk`, but our scan reads through `object_store`): a thin mapping of `get`,
/// ranges, `head` and listings onto icechunk's `Store`.
#[derive(Clone)]
pub(crate) struct SnapshotStore {
    store: Store,
    snapshot: String,
    written_at: DateTime<Utc>,
}

impl SnapshotStore {
    pub(super) fn new(store: Store, snapshot: String, written_at: DateTime<Utc>) -> Self {
        Self {
            store,
            snapshot,
            written_at,
        }
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

fn read_only(operation: &str) -> object_store::Error {
    object_store::Error::NotSupported {
        source: format!("{operation}: an Icechunk snapshot is read-only").into(),
    }
}

/// The byte range of an object of `size` bytes that `range` asks for, or an error as
/// object_store gives for a range that starts past the end.
fn resolve(
    range: Option<GetRange>,
    size: u64,
    key: &str,
) -> object_store::Result<std::ops::Range<u64>> {
    let resolved = match range {
        None => 0..size,
        Some(GetRange::Bounded(r)) => r.start..r.end.min(size),
        Some(GetRange::Offset(o)) => o..size,
        Some(GetRange::Suffix(n)) => size.saturating_sub(n)..size,
    };
    if resolved.start > resolved.end || (resolved.start >= size && size > 0) {
        return Err(object_store::Error::Generic {
            store: "Icechunk",
            source: format!("'{key}': the range {resolved:?} is outside the object's {size} bytes")
                .into(),
        });
    }
    Ok(resolved)
}

#[async_trait]
impl ObjectStore for SnapshotStore {
    async fn put_opts(
        &self,
        _: &Path,
        _: PutPayload,
        _: PutOptions,
    ) -> object_store::Result<PutResult> {
        Err(read_only("put"))
    }

    async fn put_multipart_opts(
        &self,
        _: &Path,
        _: PutMultipartOptions,
    ) -> object_store::Result<Box<dyn MultipartUpload>> {
        Err(read_only("put"))
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
        let size = self.size(&key).await?;
        let range = resolve(options.range.clone(), size, &key)?;
        let meta = self.meta(&key, size);
        let payload = if options.head {
            futures::stream::empty().boxed()
        } else {
            let store = self.store.clone();
            let wanted = range.clone();
            futures::stream::once(async move {
                store
                    .get(&key, &ByteRange::Bounded(wanted))
                    .await
                    .map_err(|e| to_store_error(e, &key))
            })
            .boxed()
        };
        Ok(GetResult {
            payload: GetResultPayload::Stream(payload),
            meta,
            range,
            attributes: Default::default(),
        })
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, object_store::Result<Path>>,
    ) -> BoxStream<'static, object_store::Result<Path>> {
        locations.map(|_| Err(read_only("delete"))).boxed()
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

    async fn copy_opts(&self, _: &Path, _: &Path, _: CopyOptions) -> object_store::Result<()> {
        Err(read_only("copy"))
    }
}

/// The adapter as an `Arc<dyn ObjectStore>`.
pub(super) fn into_object_store(store: SnapshotStore) -> Arc<dyn ObjectStore> {
    Arc::new(store)
}
