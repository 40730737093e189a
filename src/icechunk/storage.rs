//! icechunk's `Storage` over the session's own object store: a repository is read (and, for a
//! commit, written) through the same clients, credentials, retries and registry as a plain
//! store, and every object it asks for is held to the table's size limits.

use std::collections::HashMap;
use std::fmt;
use std::ops::Range;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use bytes::Bytes;
use chrono::{DateTime, Utc};
use futures::stream::BoxStream;
use futures::{Stream, StreamExt, TryStreamExt};
use std::num::NonZeroU64;

use icechunk::storage::{
    ConcurrencySettings, DeleteObjectsResult, ETag, Generation, GetModifiedResult, ListInfo,
    Settings, Storage, StorageError, StorageErrorKind, StorageInfo, StorageResult, VersionInfo,
    VersionedUpdateResult,
};
use object_store::path::Path;
use object_store::{
    GetOptions, GetRange, ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload,
    UpdateVersion,
};
use serde::{Deserialize, Serialize};

use super::layout::Seen;
use crate::limits::Limits;
use crate::store::ZarrStore;

/// A repository's objects below `root` of `store`: read-only for a table, writable for a
/// commit (`COPY`, `INSERT`). Written by hand because icechunk
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
    /// The files of the repository's root as first read (`None`: absent): detection reads
    /// them, and icechunk reads `repo` again (or asks whether it changed) for each step of
    /// opening a version; over a remote store each was a round trip. A table resolves its
    /// version once, at opening, so the first read is the view it opens.
    first_read: Mutex<HashMap<String, Option<(Bytes, VersionInfo)>>>,
    store: Arc<dyn ObjectStore>,
    root: Path,
    /// Largest object read whole (the repository's own files: `repo`, refs, snapshots,
    /// transaction logs): `max_metadata_bytes`.
    max_file_bytes: u64,
    /// Largest manifest, read whole too: `max_chunk_bytes` (a manifest of millions of chunk
    /// references outgrows the metadata limit).
    max_manifest_bytes: u64,
    /// Whether icechunk may write (a commit): then nothing is remembered, so that a commit
    /// sees the branch as it is when it lands, not as it was opened.
    writable: bool,
}

impl ObjectStoreStorage {
    /// The storage a table reads `store`'s repository through, within `limits`, starting from
    /// the files detection read (`seen`).
    pub(super) fn read_only(store: &ZarrStore, limits: &Limits, seen: Seen) -> Self {
        Self::with(store, limits, seen, false)
    }

    /// The storage a commit writes through: nothing of the first reads is kept.
    pub(super) fn writable(store: &ZarrStore, limits: &Limits) -> Self {
        Self::with(store, limits, Seen::default(), true)
    }

    /// Repository files are held to `max_metadata_bytes`, manifests to `max_chunk_bytes`.
    fn with(store: &ZarrStore, limits: &Limits, seen: Seen, writable: bool) -> Self {
        let (objects, root) = store.parts();
        let first_read = (seen.into_iter())
            .map(|(key, found)| {
                let found = found.map(|(bytes, e_tag)| {
                    let version = VersionInfo {
                        etag: e_tag.map(ETag),
                        generation: None,
                    };
                    (bytes, version)
                });
                (key, found)
            })
            .collect();
        Self {
            root: root.to_string(),
            inner: Some(Inner {
                first_read: Mutex::new(first_read),
                store: Arc::clone(objects),
                root: root.clone(),
                max_file_bytes: limits.metadata.bytes,
                max_manifest_bytes: limits.chunk.bytes,
                writable,
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

    /// The file at `key` as read before: `Some(None)` if it was absent.
    fn remembered(&self, key: &str) -> Option<Option<(Bytes, VersionInfo)>> {
        self.first_read.lock().ok()?.get(key).cloned()
    }

    /// Keeps the `repo` file's bytes, if `key` is it (when reading only).
    fn remember(&self, key: &str, bytes: &Bytes, version: &VersionInfo) {
        if key == REPO_FILE
            && !self.writable
            && let Ok(mut kept) = self.first_read.lock()
        {
            kept.insert(key.to_string(), Some((bytes.clone(), version.clone())));
        }
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

/// The file of a spec 2 repository that names its branches, tags and snapshots.
const REPO_FILE: &str = "repo";

/// Checks that the icechunk file `bytes` (read whole from `key`) decompresses to at most
/// `limit` bytes. icechunk decompresses its snapshots, manifests, transaction logs and `repo`
/// file whole (`zstd::decode_all`), with no bound: a small file could ask for gigabytes. The
/// check decompresses it once more, into nothing, and stops after `limit` bytes; a file that
/// is not a compressed icechunk file, or that does not decode, is left to icechunk's reader
/// (which reports it).
fn check_decompressed_size(key: &str, bytes: &[u8], limit: u64) -> StorageResult<()> {
    use icechunk::format::format_constants::{
        CompressionAlgorithmBin, ICECHUNK_COMPRESSION_OFFSET, ICECHUNK_FILE_HEADER_LEN,
        ICECHUNK_FORMAT_MAGIC_BYTES,
    };
    let compressed =
        bytes.get(ICECHUNK_COMPRESSION_OFFSET) == Some(&(CompressionAlgorithmBin::Zstd as u8));
    let (true, Some(body)) = (
        bytes.starts_with(ICECHUNK_FORMAT_MAGIC_BYTES) && compressed,
        bytes.get(ICECHUNK_FILE_HEADER_LEN..),
    ) else {
        return Ok(());
    };
    let Ok(decoder) = zstd::stream::read::Decoder::new(body) else {
        return Ok(());
    };
    let mut bounded = std::io::Read::take(decoder, limit.saturating_add(1));
    match std::io::copy(&mut bounded, &mut std::io::sink()) {
        Ok(size) if size > limit => Err(failed(format!(
            "'{key}' decompresses to more than {limit} bytes (max_metadata_bytes, or \
             max_chunk_bytes for a manifest)"
        ))),
        _ => Ok(()),
    }
}

/// The whole object at `key` within its size limit, read at once, with its version.
async fn read_whole(inner: &Inner, key: &str) -> StorageResult<(Bytes, VersionInfo)> {
    let result = inner
        .store
        .get_opts(&inner.path(key), GetOptions::default())
        .await
        .map_err(store_error)?;
    let limit = inner.limit(key);
    if result.meta.size > limit {
        return Err(failed(format!(
            "'{key}' is {} bytes, more than the limit of {limit} (max_metadata_bytes, or \
             max_chunk_bytes for a manifest)",
            result.meta.size
        )));
    }
    let version = version_of(&result.meta);
    let bytes = result.bytes().await.map_err(store_error)?;
    check_decompressed_size(key, &bytes, limit)?;
    inner.remember(key, &bytes, &version);
    Ok((bytes, version))
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
        "a table reads an Icechunk repository without writing to it",
    ))
}

fn version_of(meta: &object_store::ObjectMeta) -> VersionInfo {
    VersionInfo {
        etag: meta.e_tag.clone().map(ETag),
        generation: meta.version.clone().map(Generation),
    }
}

/// The version a put or copy made (from the store's answer).
fn version_put(result: &object_store::PutResult) -> VersionInfo {
    VersionInfo {
        etag: result.e_tag.clone().map(ETag),
        generation: result.version.clone().map(Generation),
    }
}

impl Inner {
    /// Writes `bytes` at `key` if the object there is still `previous` (`None`: whatever is
    /// there; a version with neither etag nor generation: nothing may be there), as icechunk's
    /// own object_store backend does. A store without conditional updates (a local file
    /// system) is checked by its etag just before the write, as icechunk itself does there
    /// (it turns conditional updates off for local files).
    async fn put(
        &self,
        key: &str,
        bytes: Bytes,
        previous: Option<&VersionInfo>,
    ) -> StorageResult<VersionedUpdateResult> {
        if !self.writable {
            return read_only();
        }
        let path = self.path(key);
        let mode = match previous {
            None => PutMode::Overwrite,
            Some(v) if v.is_create() => PutMode::Create,
            Some(v) => PutMode::Update(UpdateVersion {
                e_tag: v.etag().cloned(),
                version: v.generation().cloned(),
            }),
        };
        let options = |mode| PutOptions {
            mode,
            ..Default::default()
        };
        let payload = PutPayload::from_bytes(bytes.clone());
        let written = match self.store.put_opts(&path, payload, options(mode)).await {
            Err(object_store::Error::NotImplemented { .. }) => {
                // No conditional update here: compare the etag, then overwrite.
                let now = self.store.head(&path).await.map(|m| version_of(&m));
                match (now, previous) {
                    (Ok(now), Some(previous)) if now.etag() != previous.etag() => {
                        return Ok(VersionedUpdateResult::NotOnLatestVersion);
                    }
                    (Err(object_store::Error::NotFound { .. }), _) => {}
                    (Err(e), _) => return Err(store_error(e)),
                    _ => {}
                }
                let payload = PutPayload::from_bytes(bytes);
                let overwrite = options(PutMode::Overwrite);
                self.store.put_opts(&path, payload, overwrite).await
            }
            other => other,
        };
        match written {
            Ok(result) => Ok(VersionedUpdateResult::Updated {
                new_version: version_put(&result),
            }),
            Err(object_store::Error::Precondition { .. })
            | Err(object_store::Error::AlreadyExists { .. }) => {
                Ok(VersionedUpdateResult::NotOnLatestVersion)
            }
            Err(e) => Err(store_error(e)),
        }
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

    /// icechunk's defaults, but a manifest (at most `max_chunk_bytes`) read in one request,
    /// so that its decompressed size can be checked (`check_decompressed_size`).
    async fn default_settings(&self) -> StorageResult<Settings> {
        let inner = self.inner()?;
        let whole = NonZeroU64::new(inner.max_manifest_bytes.max(1)).unwrap_or(NonZeroU64::MIN);
        Ok(Settings {
            concurrency: Some(ConcurrencySettings {
                ideal_concurrent_request_size: Some(whole),
                ..Default::default()
            }),
            ..Default::default()
        })
    }

    async fn can_write(&self) -> StorageResult<bool> {
        Ok(self.inner()?.writable)
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
        let Some(range) = range else {
            // A whole file: held to the limits before its body is read.
            let (bytes, version) = match inner.remembered(key) {
                Some(Some(kept)) => {
                    check_decompressed_size(key, &kept.0, inner.limit(key))?;
                    kept
                }
                Some(None) => return Err(StorageError::capture(StorageErrorKind::ObjectNotFound)),
                None => read_whole(inner, key).await?,
            };
            let stream = futures::stream::once(async move { Ok(bytes) });
            return Ok((Box::pin(stream), version));
        };
        if key.starts_with("manifests/") && range.start == 0 {
            // A manifest, read whole in one range (see `default_settings`): held to
            // `max_chunk_bytes`, compressed and decompressed.
            let length = range.end.saturating_sub(range.start);
            if length > inner.max_manifest_bytes {
                return Err(failed(format!(
                    "'{key}' is {length} bytes, more than the limit of {} (max_chunk_bytes)",
                    inner.max_manifest_bytes
                )));
            }
            let options = GetOptions {
                range: Some(GetRange::Bounded(range.clone())),
                ..Default::default()
            };
            let result =
                (inner.store.get_opts(&inner.path(key), options).await).map_err(store_error)?;
            let version = version_of(&result.meta);
            let bytes = result.bytes().await.map_err(store_error)?;
            check_decompressed_size(key, &bytes, inner.max_manifest_bytes)?;
            let stream = futures::stream::once(async move { Ok(bytes) });
            return Ok((Box::pin(stream), version));
        }
        // Any other range is a chunk of the repository's own objects, held to `max_chunk_bytes`
        // by its size in the manifest before it was asked for (see `snapshot_store`).
        let options = GetOptions {
            range: Some(GetRange::Bounded(range.clone())),
            ..Default::default()
        };
        let result = inner
            .store
            .get_opts(&inner.path(key), options)
            .await
            .map_err(store_error)?;
        let version = version_of(&result.meta);
        Ok((Box::pin(result.into_stream().map_err(store_error)), version))
    }

    async fn put_object(
        &self,
        _settings: &Settings,
        key: &str,
        bytes: Bytes,
        _content_type: Option<&str>,
        _metadata: Vec<(String, String)>,
        previous_version: Option<&VersionInfo>,
    ) -> StorageResult<VersionedUpdateResult> {
        self.inner()?.put(key, bytes, previous_version).await
    }

    /// A copy of `from` taken only while it is still `version`: object_store has no
    /// conditional copy, so a read that checks the version, then a write (as icechunk's own
    /// object_store backend does).
    async fn copy_object(
        &self,
        _settings: &Settings,
        from: &str,
        to: &str,
        _content_type: Option<&str>,
        version: &VersionInfo,
    ) -> StorageResult<VersionedUpdateResult> {
        let inner = self.inner()?;
        if !inner.writable {
            return read_only();
        }
        let options = GetOptions {
            if_match: version.etag().cloned(),
            ..Default::default()
        };
        let bytes = match inner.store.get_opts(&inner.path(from), options).await {
            Ok(result) => {
                let limit = inner.limit(from);
                if result.meta.size > limit {
                    return Err(failed(format!(
                        "'{from}' is {} bytes, more than the limit of {limit}",
                        result.meta.size
                    )));
                }
                result.bytes().await.map_err(store_error)?
            }
            Err(object_store::Error::Precondition { .. }) => {
                return Ok(VersionedUpdateResult::NotOnLatestVersion);
            }
            Err(e) => return Err(store_error(e)),
        };
        inner.put(to, bytes, None).await
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
        _settings: &Settings,
        prefix: &str,
        batch: Vec<(String, u64)>,
    ) -> StorageResult<DeleteObjectsResult> {
        let inner = self.inner()?;
        if !inner.writable {
            return read_only();
        }
        let mut result = DeleteObjectsResult::default();
        for (id, size) in batch {
            match inner
                .store
                .delete(&inner.path(&format!("{prefix}/{id}")))
                .await
            {
                Ok(()) => {
                    result.deleted_objects += 1;
                    result.deleted_bytes += size;
                }
                Err(object_store::Error::NotFound { .. }) => {}
                Err(e) => return Err(store_error(e)),
            }
        }
        Ok(result)
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
        let (data, new_version) = match inner.remembered(key) {
            Some(Some((_, kept))) if previous_version.is_some_and(|v| v.etag() == kept.etag()) => {
                return Ok(GetModifiedResult::OnLatestVersion);
            }
            Some(Some(kept)) => {
                check_decompressed_size(key, &kept.0, inner.limit(key))?;
                kept
            }
            Some(None) => return Err(StorageError::capture(StorageErrorKind::ObjectNotFound)),
            None => {
                let options = GetOptions {
                    if_none_match: previous_version.and_then(|v| v.etag().cloned()),
                    ..Default::default()
                };
                match inner.store.get_opts(&inner.path(key), options).await {
                    Ok(result) => {
                        let limit = inner.limit(key);
                        if result.meta.size > limit {
                            return Err(failed(format!(
                                "'{key}' is {} bytes, more than the limit of {limit} \
                                 (max_metadata_bytes)",
                                result.meta.size
                            )));
                        }
                        let version = version_of(&result.meta);
                        let bytes = result.bytes().await.map_err(store_error)?;
                        check_decompressed_size(key, &bytes, limit)?;
                        inner.remember(key, &bytes, &version);
                        (bytes, version)
                    }
                    Err(object_store::Error::NotModified { .. }) => {
                        return Ok(GetModifiedResult::OnLatestVersion);
                    }
                    Err(e) => return Err(store_error(e)),
                }
            }
        };
        Ok(GetModifiedResult::Modified {
            data: Box::pin(std::io::Cursor::new(data)),
            new_version,
        })
    }
}
