//! A reference set as an [`ObjectStore`]: its Zarr keys (`.zgroup`, `temp/.zarray`,
//! `temp/0.0.1`) served from the references, read-only, so the scan reads a netCDF archive
//! exactly as it reads a plain store (pruning, fetching ahead, limits). Inline data is served
//! from memory; a range of a file is one range request to the store that file lives in.
//!
//! Written by hand, as `icechunk/snapshot_store.rs` is: a thin mapping of `get`, ranges, `head`
//! and listings onto the references.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use chrono::{DateTime, Utc};
use futures::StreamExt;
use futures::stream::BoxStream;
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, GetResultPayload, ListResult, MultipartUpload, ObjectMeta,
    ObjectStore, ObjectStoreExt, PutMultipartOptions, PutOptions, PutPayload, PutResult,
};
use tokio::sync::Mutex;

use super::set::Entry;
use crate::error::ZarrError;
use crate::limits::Limit;
use crate::read_only_store;
use crate::store::ReadsMany;

/// Reads many keys at once: the byte ranges each file holds of them in one call to its store
/// (object_store's `get_ranges`: neighbouring ranges coalesced into one request on a remote
/// store, the file opened once on a local one), the files at once.
#[async_trait]
impl ReadsMany for ReferenceStore {
    async fn get_many(
        &self,
        keys: &[String],
        limit: Limit,
        shown: &str,
    ) -> Vec<crate::error::Result<Option<Bytes>>> {
        let error = |key: &str, message: String| ZarrError::Store {
            location: format!("{shown}/{key}"),
            message,
        };
        let mut out: Vec<crate::error::Result<Option<Bytes>>> = Vec::with_capacity(keys.len());
        // Per file, the keys' positions in `out` and their ranges.
        let mut wanted: HashMap<u32, Vec<(usize, Range<u64>)>> = HashMap::new();
        for (i, key) in keys.iter().enumerate() {
            let (target, range) = match self.entries.get(key) {
                None => {
                    out.push(Ok(None));
                    continue;
                }
                Some(Entry::Inline(bytes)) => {
                    let size = bytes.len() as u64;
                    out.push(
                        limit
                            .check(format_args!("{shown}/{key}"), "object", Some(size))
                            .map(|()| Some(bytes.clone())),
                    );
                    continue;
                }
                Some(Entry::Whole { target }) => {
                    match self.size(key, &Entry::Whole { target: *target }).await {
                        Ok(size) => (*target, 0..size),
                        Err(e) => {
                            out.push(Err(error(key, e.to_string())));
                            continue;
                        }
                    }
                }
                Some(Entry::Range {
                    target,
                    offset,
                    length,
                }) => (*target, *offset..offset.saturating_add(*length)),
            };
            let size = range.end - range.start;
            match limit.check(format_args!("{shown}/{key}"), "object", Some(size)) {
                Ok(()) => {
                    out.push(Ok(None));
                    wanted.entry(target).or_default().push((i, range));
                }
                Err(e) => out.push(Err(e)),
            }
        }
        let reads = wanted.into_iter().map(|(target, wanted)| async move {
            let ranges: Vec<Range<u64>> = wanted.iter().map(|(_, r)| r.clone()).collect();
            let read = match self.target("", target) {
                Ok(t) => t
                    .store
                    .get_ranges(&t.path, &ranges)
                    .await
                    .map_err(|e| (t.shown.clone(), e.to_string())),
                Err(e) => Err((String::new(), e.to_string())),
            };
            (target, wanted, read)
        });
        for (target, wanted, read) in futures::future::join_all(reads).await {
            let file = self
                .target("", target)
                .map(|t| t.shown.clone())
                .unwrap_or_default();
            match read {
                Ok(parts) if parts.len() == wanted.len() => {
                    for ((i, range), bytes) in wanted.into_iter().zip(parts) {
                        let key = keys.get(i).map_or("", String::as_str);
                        let result = match bytes.len() as u64 == range.end - range.start {
                            true => Ok(Some(bytes)),
                            false => Err(error(
                                key,
                                format!(
                                    "reference '{key}': it reads bytes {}..{} of {file}, which ends {} bytes short",
                                    range.start,
                                    range.end,
                                    (range.end - range.start).saturating_sub(bytes.len() as u64)
                                ),
                            )),
                        };
                        if let Some(slot) = out.get_mut(i) {
                            *slot = result;
                        }
                    }
                }
                failed => {
                    let message = match failed {
                        Err((_, e)) => e,
                        Ok(parts) => format!("{} ranges read for {}", parts.len(), wanted.len()),
                    };
                    for (i, range) in wanted {
                        let key = keys.get(i).map_or("", String::as_str);
                        if let Some(slot) = out.get_mut(i) {
                            *slot = Err(error(
                                key,
                                format!(
                                    "reference '{key}': bytes {range:?} of {file} cannot be read: {message}"
                                ),
                            ));
                        }
                    }
                }
            }
        }
        out
    }
}

/// What the errors of writes call this store.
const WHAT: &str = "a reference set";

/// A file references read from: the store it lives in, its path there, and its URL as shown.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    pub(crate) store: Arc<dyn ObjectStore>,
    pub(crate) path: Path,
    pub(crate) shown: String,
}

/// The keys of one reference set.
#[derive(Clone)]
pub(crate) struct ReferenceStore {
    entries: Arc<BTreeMap<String, Entry>>,
    targets: Arc<Vec<Target>>,
    /// The reference file as shown: what every key's errors and versions name.
    shown: Arc<str>,
    /// When the reference file was last modified (every key's `last_modified`).
    modified: DateTime<Utc>,
    /// Sizes of whole files (`[url]` references), asked once each.
    sizes: Arc<Mutex<HashMap<u32, u64>>>,
}

impl fmt::Debug for ReferenceStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ReferenceStore({})", self.shown)
    }
}

impl fmt::Display for ReferenceStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ReferenceStore({})", self.shown)
    }
}

impl ReferenceStore {
    pub(crate) fn new(
        entries: BTreeMap<String, Entry>,
        targets: Vec<Target>,
        shown: String,
        modified: DateTime<Utc>,
    ) -> Self {
        Self {
            entries: Arc::new(entries),
            targets: Arc::new(targets),
            shown: shown.into(),
            modified,
            sizes: Arc::default(),
        }
    }

    fn target(&self, key: &str, id: u32) -> object_store::Result<&Target> {
        usize::try_from(id)
            .ok()
            .and_then(|i| self.targets.get(i))
            .ok_or_else(|| failure(key, format!("it names file {id}, which the set lacks")))
    }

    /// The size of `key`'s bytes: from the reference, or (a whole file) asked of its store.
    async fn size(&self, key: &str, entry: &Entry) -> object_store::Result<u64> {
        match entry {
            Entry::Inline(bytes) => Ok(bytes.len() as u64),
            Entry::Range { length, .. } => Ok(*length),
            Entry::Whole { target } => {
                if let Some(size) = self.sizes.lock().await.get(target) {
                    return Ok(*size);
                }
                let t = self.target(key, *target)?;
                let size = t.store.head(&t.path).await.map_err(|e| {
                    failure(key, format!("its file {} cannot be read: {e}", t.shown))
                })?;
                self.sizes.lock().await.insert(*target, size.size);
                Ok(size.size)
            }
        }
    }

    fn meta(&self, key: &str, size: u64) -> ObjectMeta {
        ObjectMeta {
            location: Path::from(key),
            last_modified: self.modified,
            size,
            e_tag: None,
            version: None,
        }
    }

    fn entry(&self, key: &str) -> object_store::Result<&Entry> {
        self.entries
            .get(key)
            .ok_or_else(|| object_store::Error::NotFound {
                path: key.to_string(),
                source: format!("the reference set {} has no key '{key}'", self.shown).into(),
            })
    }
}

impl ReferenceStore {
    /// Bytes `range` of `key`, which starts at `start` in file `target`: fetched when polled.
    fn read_file(
        &self,
        key: String,
        target: u32,
        start: u64,
        range: Range<u64>,
    ) -> object_store::Result<BoxStream<'static, object_store::Result<Bytes>>> {
        let t = self.target(&key, target)?.clone();
        let within = (start.checked_add(range.start))
            .zip(start.checked_add(range.end))
            .map(|(from, to)| from..to)
            .ok_or_else(|| failure(&key, "its offset overflows".to_string()))?;
        Ok(futures::stream::once(async move {
            let wanted = within.end - within.start;
            let bytes: Bytes = match t.store.get_range(&t.path, within.clone()).await {
                Ok(bytes) => bytes,
                Err(object_store::Error::NotFound { .. }) => {
                    return Err(failure(
                        &key,
                        format!("its file {} does not exist", t.shown),
                    ));
                }
                Err(e) => {
                    return Err(failure(
                        &key,
                        format!("bytes {within:?} of {} cannot be read: {e}", t.shown),
                    ));
                }
            };
            if bytes.len() as u64 != wanted {
                return Err(failure(
                    &key,
                    format!(
                        "it reads bytes {}..{} of {}, which ends {} bytes short",
                        within.start,
                        within.end,
                        t.shown,
                        wanted.saturating_sub(bytes.len() as u64)
                    ),
                ));
            }
            Ok(bytes)
        })
        .boxed())
    }
}

/// The keys below `prefix` start with this (`""` for the root, given as `None` or as the empty
/// path).
fn key_prefix(prefix: Option<&Path>) -> String {
    match prefix.map(|p| p.as_ref()) {
        None | Some("") => String::new(),
        Some(p) => format!("{p}/"),
    }
}

fn failure(key: &str, message: String) -> object_store::Error {
    object_store::Error::Generic {
        store: "ReferenceSet",
        source: format!("reference '{key}': {message}").into(),
    }
}

#[async_trait]
impl ObjectStore for ReferenceStore {
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

    /// The size comes from the reference (no read); the bytes are fetched only when the payload
    /// is polled, so a caller that refuses the size (`max_chunk_bytes`) never fetches what a
    /// reference claims. A file that ends before the reference's range is an error naming the
    /// key and the file.
    async fn get_opts(
        &self,
        location: &Path,
        options: GetOptions,
    ) -> object_store::Result<GetResult> {
        let key = location.as_ref().to_string();
        let entry = self.entry(&key)?.clone();
        let size = self.size(&key, &entry).await?;
        let range = read_only_store::resolve(options.range.clone(), size, &key, "ReferenceSet")?;
        let meta = self.meta(&key, size);
        let payload = match (options.head, entry) {
            (true, _) => futures::stream::empty().boxed(),
            (false, Entry::Inline(bytes)) => {
                let part = read_only_store::slice(&bytes, &range, &key, "ReferenceSet");
                futures::stream::once(async move { part }).boxed()
            }
            (false, Entry::Whole { target }) => self.read_file(key, target, 0, range.clone())?,
            (false, Entry::Range { target, offset, .. }) => {
                self.read_file(key, target, offset, range.clone())?
            }
        };
        Ok(GetResult {
            payload: GetResultPayload::Stream(payload),
            meta,
            range,
            attributes: Default::default(),
        })
    }

    /// The keys below `prefix`, in key order; a whole file's size is asked of its store.
    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        let this = self.clone();
        let prefix = key_prefix(prefix);
        let keys: Vec<(String, Entry)> = (this.entries.range(prefix.clone()..))
            .take_while(|(k, _)| k.starts_with(&prefix))
            .map(|(k, e)| (k.clone(), e.clone()))
            .collect();
        futures::stream::iter(keys)
            .then(move |(key, entry)| {
                let this = this.clone();
                async move {
                    let size = this.size(&key, &entry).await?;
                    Ok(this.meta(&key, size))
                }
            })
            .boxed()
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> object_store::Result<ListResult> {
        let prefix = key_prefix(prefix);
        let mut listed = ListResult {
            common_prefixes: Vec::new(),
            objects: Vec::new(),
        };
        for (key, entry) in self.entries.range(prefix.clone()..) {
            let Some(rest) = key.strip_prefix(&prefix) else {
                break;
            };
            match rest.split_once('/') {
                Some((child, _)) => {
                    let child = Path::from(format!("{prefix}{child}"));
                    if listed.common_prefixes.last() != Some(&child) {
                        listed.common_prefixes.push(child);
                    }
                }
                None => {
                    let size = self.size(key, entry).await?;
                    listed.objects.push(self.meta(key, size));
                }
            }
        }
        Ok(listed)
    }
}
