//! icechunk's `Storage` over the session's own object store: a repository is read through the
//! same clients, credentials, retries and registry as a plain store, and every object it asks
//! for is held to the table's size limits.

use std::fmt;
use std::ops::Range;
use std::pin::Pin;
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use chrono::{DateTime, Utc};
use futures::stream::BoxStream;
use futures::{Stream, StreamExt, TryStreamExt};
use icechunk::storage::{
    DeleteObjectsResult, ETag, GetModifiedResult, ListInfo, Settings, Storage, StorageError,
    StorageErrorKind, StorageInfo, StorageResult, VersionInfo, VersionedUpdateResult,
};
use object_store::path::Path;
use object_store::{GetOptions, GetRange, ObjectStore, ObjectStoreExt};
use serde::{Deserialize, Serialize};

/// A repository's objects below `root` of `store`, read-only. Written by hand because icechunk
/// builds its own object_store clients from its own options otherwise: this way a repository
/// is opened with the storage options, the registered stores (and their proxies in tests) that
/// open a plain store. icechunk serialises a `Storage` (typetag) for its Python pickling only;
/// ours is never serialised (the object store is skipped and a deserialised one refuses reads).
#[derive(Serialize, Deserialize)]
pub(super) struct ObjectStoreStorage {
    /// The repository's root within the store, as shown.
    root: String,
    #[serde(skip)]
    inner: Option<Inner>,
}

struct Inner {
    store: Arc<dyn ObjectStore>,
    root: Path,
    /// Largest object read whole (the repository's own files: `repo`, refs, snapshots,
    /// transaction logs): `max_metadata_bytes`.
    max_file_bytes: u64,
    /// Largest manifest, read whole too: `max_chunk_bytes` (a manifest of millions of chunk
    /// references outgrows the metadata limit).
    max_manifest_bytes: u64,
}

impl ObjectStoreStorage {
    pub(super) fn new(
        store: Arc<dyn ObjectStore>,
        root: Path,
        max_file_bytes: u64,
        max_manifest_bytes: u64,
    ) -> Self {
        Self {
            root: root.to_string(),
            inner: Some(Inner {
                store,
                root,
                max_file_bytes,
                max_manifest_bytes,
            }),
        }
    }

    fn inner(&self) -> StorageResult<&Inner> {
        self.inner.as_ref().ok_or_else(|| {
            failed("a repository storage that crossed a process boundary has no object store")
        })
    }
}

impl Inner {
    fn path(&self, key: &str) -> Path {
        key.split('/')
            .filter(|part| !part.is_empty())
            .fold(self.root.clone(), |path, part| path.join(part))
    }

    /// The most bytes a whole read of `key` may return.
    fn limit(&self, key: &str) -> u64 {
        if key.starts_with("manifests/") {
            self.max_manifest_bytes
        } else {
            self.max_file_bytes
        }
    }
}

impl fmt::Debug for ObjectStoreStorage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ObjectStoreStorage({})", self.root)
    }
}

impl fmt::Display for ObjectStoreStorage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

impl icechunk_types::sealed::Sealed for ObjectStoreStorage {}

fn failed(message: impl Into<String>) -> StorageError {
    StorageError::capture(StorageErrorKind::Other(message.into()))
}

fn store_error(e: object_store::Error) -> StorageError {
    match e {
        object_store::Error::NotFound { .. } => {
            StorageError::capture(StorageErrorKind::ObjectNotFound)
        }
        e => StorageError::capture(StorageErrorKind::ObjectStore(Box::new(e))),
    }
}

fn read_only<T>() -> StorageResult<T> {
    Err(failed(
        "datafusion-zarr reads Icechunk repositories without writing to them",
    ))
}

fn version_of(meta: &object_store::ObjectMeta) -> VersionInfo {
    VersionInfo {
        etag: meta.e_tag.clone().map(ETag),
        generation: None,
    }
}

#[async_trait]
#[typetag::serde(name = "datafusion_zarr_object_store")]
impl Storage for ObjectStoreStorage {
    fn storage_info(&self) -> StorageInfo {
        StorageInfo {
            backend_type: "object_store",
            fields: vec![("root", self.root.clone())],
        }
    }

    async fn can_write(&self) -> StorageResult<bool> {
        Ok(false)
    }

    async fn get_object_range(
        &self,
        _settings: &Settings,
        key: &str,
        range: Option<&Range<u64>>,
    ) -> StorageResult<(
        Pin<Box<dyn Stream<Item = Result<Bytes, StorageError>> + Send>>,
        VersionInfo,
    )> {
        let inner = self.inner()?;
        let options = GetOptions {
            range: range.map(|r| GetRange::Bounded(r.clone())),
            ..Default::default()
        };
        let result = inner
            .store
            .get_opts(&inner.path(key), options)
            .await
            .map_err(store_error)?;
        // A whole file is held to the limits before its body is read; a range (a chunk of the
        // repository's own objects) was held to `max_chunk_bytes` by its size in the manifest
        // before it was asked for (see `snapshot_store`).
        let limit = inner.limit(key);
        if range.is_none() && result.meta.size > limit {
            return Err(failed(format!(
                "'{key}' is {} bytes, more than the limit of {limit} (max_metadata_bytes, or \
                 max_chunk_bytes for a manifest)",
                result.meta.size
            )));
        }
        let version = version_of(&result.meta);
        Ok((Box::pin(result.into_stream().map_err(store_error)), version))
    }

    async fn put_object(
        &self,
        _: &Settings,
        _: &str,
        _: Bytes,
        _: Option<&str>,
        _: Vec<(String, String)>,
        _: Option<&VersionInfo>,
    ) -> StorageResult<VersionedUpdateResult> {
        read_only()
    }

    async fn copy_object(
        &self,
        _: &Settings,
        _: &str,
        _: &str,
        _: Option<&str>,
        _: &VersionInfo,
    ) -> StorageResult<VersionedUpdateResult> {
        read_only()
    }

    async fn list_objects<'a>(
        &'a self,
        _settings: &Settings,
        prefix: &str,
    ) -> StorageResult<BoxStream<'a, StorageResult<ListInfo<String>>>> {
        let inner = self.inner()?;
        let base = inner.path(prefix);
        let listed = inner.store.list(Some(&base)).map(move |meta| {
            let meta = meta.map_err(store_error)?;
            let id = meta
                .location
                .prefix_match(&base)
                .map(|parts| {
                    parts
                        .map(|p| p.as_ref().to_string())
                        .collect::<Vec<_>>()
                        .join("/")
                })
                .unwrap_or_else(|| meta.location.to_string());
            Ok(ListInfo {
                id,
                created_at: meta.last_modified,
                size_bytes: meta.size,
            })
        });
        Ok(listed.boxed())
    }

    async fn delete_batch(
        &self,
        _: &Settings,
        _: &str,
        _: Vec<(String, u64)>,
    ) -> StorageResult<DeleteObjectsResult> {
        read_only()
    }

    async fn get_object_last_modified(
        &self,
        key: &str,
        _settings: &Settings,
    ) -> StorageResult<DateTime<Utc>> {
        let inner = self.inner()?;
        let meta = inner
            .store
            .head(&inner.path(key))
            .await
            .map_err(store_error)?;
        Ok(meta.last_modified)
    }

    async fn get_object_conditional(
        &self,
        _settings: &Settings,
        key: &str,
        previous_version: Option<&VersionInfo>,
    ) -> StorageResult<GetModifiedResult> {
        let inner = self.inner()?;
        let options = GetOptions {
            if_none_match: previous_version.and_then(|v| v.etag().cloned()),
            ..Default::default()
        };
        match inner.store.get_opts(&inner.path(key), options).await {
            Ok(result) => {
                let limit = inner.limit(key);
                if result.meta.size > limit {
                    return Err(failed(format!(
                        "'{key}' is {} bytes, more than the limit of {limit} (max_metadata_bytes)",
                        result.meta.size
                    )));
                }
                let new_version = version_of(&result.meta);
                let stream = result.into_stream().map_err(std::io::Error::other);
                Ok(GetModifiedResult::Modified {
                    data: Box::pin(tokio_util::io::StreamReader::new(stream)),
                    new_version,
                })
            }
            Err(object_store::Error::NotModified { .. }) => Ok(GetModifiedResult::OnLatestVersion),
            Err(e) => Err(store_error(e)),
        }
    }
}
