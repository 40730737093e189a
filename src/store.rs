//! Locations and object stores: turns a user's location into an [`ObjectStore`] from the
//! session's registry, and reads keys below the store root with size limits and path safety.

use std::io::Read;
use std::ops::Range;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::execution::runtime_env::RuntimeEnv;
use futures::future::join_all;
use object_store::local::LocalFileSystem;
use object_store::path::{Path, PathPart};
use object_store::{GetOptions, GetRange, ObjectStore, ObjectStoreExt};
use url::Url;

use crate::error::{Result, ZarrError};
use crate::limits::Limit;
use crate::object_stores::{
    StorageOptions, build_store, is_remote_scheme, redact, redact_text, redact_unparsed,
    supported_schemes,
};

/// What [`ZarrStore::probe`] found of one object.
#[derive(Debug, Clone)]
pub(crate) enum Probed {
    /// There is no such object.
    Absent,
    /// Its bytes and its version.
    Found { bytes: Bytes, e_tag: Option<String> },
    /// It could not be read (a directory, a refusal, more than the limit).
    Unread,
}

/// A Zarr store: an object store and the prefix of the store root within it.
#[derive(Debug, Clone)]
pub(crate) struct ZarrStore {
    store: Arc<dyn ObjectStore>,
    root: Path,
    url: Url,
    /// The URL as shown in errors, plans and file metadata: no user, password or query.
    shown: String,
    /// The options the store was built with, whose values errors must not show.
    storage: StorageOptions,
    /// Whether the store is object_store's `LocalFileSystem` without a prefix (as
    /// DataFusion registers for `file://`): then [`Self::get_many`] reads its files itself.
    local: bool,
    /// An Icechunk snapshot opened as the tip of a branch: that branch (`INSERT INTO`
    /// commits to it).
    branch: Option<String>,
    /// A store whose keys are read better many at once than one by one (a reference set:
    /// one coalesced request per file), which [`Self::get_many`] hands them to.
    reads_many: Option<Arc<dyn ReadsMany>>,
}

/// A store that reads many keys at once better than one by one.
#[async_trait::async_trait]
pub(crate) trait ReadsMany: std::fmt::Debug + Send + Sync {
    /// The objects at `keys` of the store shown as `shown`, each `None` if it does not exist,
    /// each held to `limit` before it is read; each key's own error.
    async fn get_many(
        &self,
        keys: &[String],
        limit: Limit,
        shown: &str,
    ) -> Vec<Result<Option<Bytes>>>;
}

impl std::fmt::Display for ZarrStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.display_location())
    }
}

impl ZarrStore {
    /// Resolves `location` (a local directory or a URL) to a store. The session's registry is
    /// asked first; when it has no store for the URL, one is built from the URL, `storage` and
    /// the environment and registered, as datafusion-cli does. A table that brings its own
    /// storage options gets a store built from them even when the session has one; a local
    /// store has no use for them (they configure remote stores and their retries) and reads
    /// as without them.
    pub(crate) fn open(
        runtime: &RuntimeEnv,
        location: &str,
        storage: &StorageOptions,
    ) -> Result<Self> {
        Self::open_url(runtime, location_url(location)?, storage)
    }

    /// [`ZarrStore::open`] for a single file (a reference set, or a file it reads): its root is
    /// the file, read with key `""`.
    pub(crate) fn open_file(
        runtime: &RuntimeEnv,
        location: &str,
        storage: &StorageOptions,
    ) -> Result<Self> {
        Self::open_url(runtime, file_url(location)?, storage)
    }

    /// [`ZarrStore::open_file`] for a file's URL already parsed (and checked).
    pub(crate) fn open_url_of_file(
        runtime: &RuntimeEnv,
        url: Url,
        storage: &StorageOptions,
    ) -> Result<Self> {
        Self::open_url(runtime, url, storage)
    }

    fn open_url(runtime: &RuntimeEnv, url: Url, storage: &StorageOptions) -> Result<Self> {
        let shown = redact(&url);
        if matches!(url.scheme(), "http" | "https") && url.query().is_some() {
            // object_store asks for each object by its own path; a query (a presigned or SAS
            // URL's signature) would be dropped without a word and every read refused.
            return Err(ZarrError::Location(format!(
                "'{shown}?***': the query of an http(s) location is not sent with the requests \
                 for its objects, which are asked for by their own paths (a presigned URL names \
                 one object, not a store)"
            )));
        }
        let store_url = ObjectStoreUrl::parse(&url[..url::Position::BeforePath])
            .map_err(|e| ZarrError::Location(format!("'{shown}' is not a usable URL: {e}")))?;
        let store_root: &Url = store_url.as_ref();
        let registered = runtime.object_store(&store_url).ok();
        let store = match registered {
            Some(store) if storage.is_empty() || !is_remote_scheme(url.scheme()) => store,
            registered if is_remote_scheme(url.scheme()) => {
                let built = build_store(&url, storage)?;
                if registered.is_none() {
                    runtime.register_object_store(store_root, built.clone());
                }
                built
            }
            _ => {
                return Err(ZarrError::Location(format!(
                    "'{shown}': no object store is registered for {}, and this build reads {}",
                    redact(store_root),
                    supported_schemes().join(", ")
                )));
            }
        };
        let root = Path::from_url_path(url.path())
            .map_err(|e| ZarrError::Location(format!("'{shown}' has an invalid path: {e}")))?;
        let local = url.scheme() == "file" && store.to_string() == LOCAL_FILE_SYSTEM;
        Ok(Self {
            store,
            root,
            url,
            shown,
            storage: storage.clone(),
            local,
            branch: None,
            reads_many: None,
        })
    }

    /// The store's URL as opened (with any user, password or query it was given): what another
    /// process opens the same store from. Never show it.
    #[cfg_attr(not(feature = "ballista"), allow(dead_code))]
    pub(crate) fn url(&self) -> &Url {
        &self.url
    }

    /// The object store and the store root within it (for the writer).
    pub(crate) fn parts(&self) -> (&Arc<dyn ObjectStore>, &Path) {
        (&self.store, &self.root)
    }

    /// `text` (an error of a library that reads this store) cleared of the store's credentials.
    #[cfg(feature = "icechunk")]
    pub(crate) fn redact(&self, text: &str) -> String {
        redact_text(text, &self.storage)
    }

    /// The store's URL, as shown in errors, plans and file metadata (without credentials).
    pub(crate) fn display_location(&self) -> &str {
        &self.shown
    }

    /// The object path of `key` (a `/`-separated path relative to the store root), its names
    /// as they are: the key `é/c/0` is the object `é/c/0`, as zarr-python writes it.
    /// (object_store's `Path::join` percent-encodes a name, which made `é` the object
    /// `%C3%A9`: a child array so named read as missing, or as another directory's chunks.)
    /// A name no object store holds (`.`, `..`, a control character) is an error.
    pub(crate) fn key_path(&self, key: &str) -> Result<Path> {
        let mut path = self.root.clone();
        for part in key.split('/').filter(|p| !p.is_empty()) {
            let part = PathPart::parse(part).map_err(|e| {
                ZarrError::metadata(
                    format!("{}/{}", self.display_location(), key),
                    format!("the key holds a name no object store holds: {e}"),
                )
            })?;
            path = path.join(part);
        }
        Ok(path)
    }

    /// Reads the object at `key`, or `None` if it does not exist. Objects larger than `limit`
    /// are rejected before their body is read.
    pub(crate) async fn get(&self, key: &str, limit: Limit) -> Result<Option<Bytes>> {
        Ok(self
            .get_opts(key, GetOptions::default(), limit)
            .await?
            .map(|(bytes, _)| bytes))
    }

    /// Whether [`Self::get_many`] reads all its keys in one call (a local store, on one
    /// blocking thread; a reference set, in one coalesced request per file).
    pub(crate) fn reads_many_at_once(&self) -> bool {
        self.local || self.reads_many.is_some()
    }

    /// Reads the objects at `keys`, each `None` if it does not exist, with [`Self::get`]'s
    /// size limit; each key's own error, so that a caller fails only the work that needs it.
    /// A remote store is asked concurrently. A local one is read on one blocking thread, key
    /// after key: object_store's `LocalFileSystem` hands each read to a blocking thread twice
    /// (to open, then to read), and for stores of many small chunks those hand-offs took a
    /// tenth to a fifth of a scan's CPU time (an N-D store of 40 KB chunks).
    pub(crate) async fn get_many(&self, keys: Vec<String>, limit: Limit) -> Result<ManyObjects> {
        if let Some(reader) = &self.reads_many {
            return Ok(ManyObjects {
                objects: reader.get_many(&keys, limit, &self.shown).await,
                local_read_time: None,
            });
        }
        if !self.local || keys.is_empty() {
            let objects = join_all(keys.iter().map(|key| self.get(key, limit))).await;
            return Ok(ManyObjects {
                objects,
                local_read_time: None,
            });
        }
        let store = self.clone();
        let read = move || {
            let started = Instant::now();
            let files = LocalFileSystem::new();
            let objects = keys
                .iter()
                .map(|key| store.read_local(&files, key, limit))
                .collect();
            ManyObjects {
                objects,
                local_read_time: Some(started.elapsed()),
            }
        };
        // As object_store does: on a blocking thread of the runtime, or here without one.
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => runtime
                .spawn_blocking(read)
                .await
                .map_err(|e| ZarrError::internal(format!("reading {}: {e}", self.shown))),
            Err(_) => Ok(read()),
        }
    }

    /// Reads the local file of `key` as `files.get` would (the same path mapping and size
    /// limit; a directory is an error, as in [`Self::get`]), but on the calling thread.
    fn read_local(
        &self,
        files: &LocalFileSystem,
        key: &str,
        limit: Limit,
    ) -> Result<Option<Bytes>> {
        let location = || format!("{}/{}", self.display_location(), key);
        let failed = |e: std::io::Error| ZarrError::Store {
            location: location(),
            message: e.to_string(),
        };
        let path = files
            .path_to_filesystem(&self.key_path(key)?)
            .map_err(|source| self.store_error(key, &source))?;
        refuse_special_file(&path, location)?;
        let file = match std::fs::File::open(&path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(failed(e)),
        };
        let metadata = file.metadata().map_err(failed)?;
        if metadata.is_dir() {
            return Err(directory_error(location()));
        }
        // The size read is the size checked, as `LocalFileSystem` reads it.
        let size = metadata.len();
        let shown = self.display_location();
        limit.check(format_args!("{shown}/{key}"), "object", Some(size))?;
        let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
        file.take(size).read_to_end(&mut bytes).map_err(failed)?;
        if bytes.len() as u64 != size {
            return Err(ZarrError::Store {
                location: location(),
                message: format!("the file ended after {} of its {size} bytes", bytes.len()),
            });
        }
        Ok(Some(Bytes::from(bytes)))
    }

    /// The object at `key` read whole if it is at most `limit` bytes: a probe of the store's
    /// layout. A failure (a directory, a refusal, a larger object) is [`Probed::Unread`],
    /// which leaves the store to be read as a plain one (and fail there with its own error).
    pub(crate) async fn probe(&self, key: &str, limit: u64) -> Probed {
        let Ok(path) = self.key_path(key) else {
            return Probed::Unread;
        };
        match self.store.get_opts(&path, GetOptions::default()).await {
            Err(object_store::Error::NotFound { .. }) => Probed::Absent,
            Err(_) => Probed::Unread,
            Ok(result) if result.meta.size > limit => Probed::Unread,
            Ok(result) => {
                let e_tag = result.meta.e_tag.clone();
                match result.bytes().await {
                    Ok(bytes) => Probed::Found { bytes, e_tag },
                    Err(_) => Probed::Unread,
                }
            }
        }
    }

    /// The same location read through `store` at `root` (an Icechunk snapshot's keys, or a
    /// reference set's), shown as `shown`.
    pub(crate) fn with_object_store(
        &self,
        store: Arc<dyn ObjectStore>,
        root: Path,
        shown: String,
    ) -> Self {
        Self {
            store,
            root,
            url: self.url.clone(),
            shown,
            storage: self.storage.clone(),
            local: false,
            branch: None,
            reads_many: None,
        }
    }

    /// This store, its keys read many at once by `reader` ([`Self::get_many`]).
    pub(crate) fn reading_many_with(mut self, reader: Arc<dyn ReadsMany>) -> Self {
        self.reads_many = Some(reader);
        self
    }

    /// Whether this is a directory of local files (read-ahead buys little there).
    pub(crate) fn is_local(&self) -> bool {
        self.local
    }

    /// This store, a snapshot read as the tip of `branch`.
    #[cfg_attr(not(feature = "icechunk"), allow(dead_code))]
    pub(crate) fn on_branch(mut self, branch: Option<String>) -> Self {
        self.branch = branch;
        self
    }

    /// The Icechunk branch whose tip this store was opened at, if any.
    pub(crate) fn branch(&self) -> Option<&str> {
        self.branch.as_deref()
    }

    /// Reads `range` of the object at `key`: the bytes and the object's whole size, or `None`
    /// if it does not exist. Ranges longer than `limit` are rejected before they are read.
    pub(crate) async fn get_range(
        &self,
        key: &str,
        range: GetRange,
        limit: Limit,
    ) -> Result<Option<(Bytes, u64)>> {
        let range = match range {
            // Azure has no suffix ranges: ask for the size, then read a bounded range.
            GetRange::Suffix(n) if self.no_suffix_ranges() => {
                let size = match self.store.head(&self.key_path(key)?).await {
                    Ok(meta) => meta.size,
                    Err(object_store::Error::NotFound { .. }) => return Ok(None),
                    Err(source) => return Err(self.store_error(key, &source)),
                };
                GetRange::Bounded(size.saturating_sub(n)..size)
            }
            range => range,
        };
        let options = GetOptions::default().with_range(Some(range));
        self.get_opts(key, options, limit).await
    }

    /// Reads `ranges` of the object at `key` (object_store coalesces nearby ranges into one
    /// request), or `None` if it does not exist. Each range is checked against `limit` first.
    pub(crate) async fn get_ranges(
        &self,
        key: &str,
        ranges: &[Range<u64>],
        limit: Limit,
    ) -> Result<Option<Vec<Bytes>>> {
        let location = || format!("{}/{}", self.display_location(), key);
        for r in ranges {
            limit.check(location(), "object range", r.end.checked_sub(r.start))?;
        }
        match self.store.get_ranges(&self.key_path(key)?, ranges).await {
            Ok(parts) => Ok(Some(parts)),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(source) => Err(self.store_error(key, &source)),
        }
    }

    fn is_http(&self) -> bool {
        matches!(self.url.scheme(), "http" | "https")
    }

    /// The children of `prefix` from the HTML directory index an HTTP server serves for it
    /// (nginx's `autoindex`, Apache's, Python's `http.server`): the links to subdirectories.
    /// Without one, an error that says how to read the group without a listing.
    async fn list_by_index(&self, prefix: &str, limit: Limit) -> Result<Vec<String>> {
        let unlisted = || ZarrError::Store {
            location: format!("{}/{}", self.display_location(), prefix),
            message: "the group has no consolidated metadata and the HTTP server cannot list it \
                      (it answers WebDAV PROPFIND with 405 or 501 and serves no directory \
                      index); name the arrays with the option 'arrays', or consolidate the \
                      group's metadata (zarr.consolidate_metadata)"
                .into(),
        };
        // The directory's URL with its trailing slash, read within the metadata limit.
        let directory = self.key_path(prefix)?;
        let mut url = self.url.clone();
        url.set_path(&format!("/{directory}/"));
        url.set_query(None);
        let index = crate::object_stores::http_directory_index(&url, &self.storage, limit.bytes);
        let Some(page) = index.await else {
            return Err(unlisted());
        };
        let html = std::str::from_utf8(&page).map_err(|_| unlisted())?;
        let names = index_links(html);
        if names.is_empty() && !html.to_ascii_lowercase().contains("<a ") {
            return Err(unlisted());
        }
        Ok(names)
    }

    fn no_suffix_ranges(&self) -> bool {
        matches!(self.url.scheme(), "az" | "abfs" | "abfss" | "azure" | "adl")
    }

    /// A store failure reading `key`, its text cleared of credentials.
    fn store_error(&self, key: &str, source: &object_store::Error) -> ZarrError {
        ZarrError::Store {
            location: format!("{}/{}", self.display_location(), key),
            message: redact_text(&source.to_string(), &self.storage),
        }
    }

    async fn get_opts(
        &self,
        key: &str,
        options: GetOptions,
        limit: Limit,
    ) -> Result<Option<(Bytes, u64)>> {
        let path = self.key_path(key)?;
        let location = || format!("{}/{}", self.display_location(), key);
        if self.local
            && let Ok(file) = LocalFileSystem::new().path_to_filesystem(&path)
        {
            refuse_special_file(&file, location)?;
        }
        let result = match self.store.get_opts(&path, options).await {
            Ok(r) => r,
            Err(object_store::Error::NotFound { .. }) => {
                // Object stores have no directories; a local one reports a directory where an
                // object should be as missing. That is a broken store, not a missing chunk.
                if self.url.scheme() == "file"
                    && let Ok(dir) = self.url.join(key)
                    && let Ok(local) = dir.to_file_path()
                    && local.is_dir()
                {
                    return Err(directory_error(location()));
                }
                return Ok(None);
            }
            Err(source) => return Err(self.store_error(key, &source)),
        };
        let size = result.meta.size;
        limit.check(
            location(),
            "object",
            Some(result.range.end - result.range.start),
        )?;
        let bytes = result
            .bytes()
            .await
            .map_err(|source| self.store_error(key, &source))?;
        Ok(Some((bytes, size)))
    }

    /// Names of the direct children (sub-directories) of `prefix`, sorted.
    pub(crate) async fn list_children(&self, prefix: &str, limit: Limit) -> Result<Vec<String>> {
        let path = self.key_path(prefix)?;
        let listing = match self.store.list_with_delimiter(Some(&path)).await {
            Ok(listing) => listing,
            // A plain HTTP server (nginx, Apache, Python's http.server without WebDAV) refuses
            // PROPFIND: its directory index page lists, as fsspec's HTTP filesystem reads it.
            Err(source) if self.is_http() && refuses_method(&source) => {
                return self.list_by_index(prefix, limit).await;
            }
            Err(source) => return Err(self.store_error(prefix, &source)),
        };
        let mut names: Vec<String> = listing
            .common_prefixes
            .iter()
            .filter_map(|p| p.filename().map(str::to_string))
            .collect();
        names.sort();
        Ok(names)
    }
}

/// Whether an HTTP server refused the request's method (405 Method Not Allowed, 501 Not
/// Implemented): object_store reports the status only in its message.
fn refuses_method(error: &object_store::Error) -> bool {
    let text = error.to_string();
    ["405", "501", "Method Not Allowed", "Not Implemented"]
        .iter()
        .any(|s| text.contains(s))
}

/// The subdirectories a directory index links to, in order, decoded: each `href="name/"` of
/// one path segment (not a parent, sort or absolute link), as nginx, Apache and Python's
/// `http.server` write them.
fn index_links(html: &str) -> Vec<String> {
    let mut names = Vec::new();
    for piece in html.split("href=").skip(1) {
        let Some(quote) = piece.chars().next().filter(|c| *c == '"' || *c == '\'') else {
            continue;
        };
        let Some(target) = piece.get(1..).and_then(|rest| rest.split(quote).next()) else {
            continue;
        };
        let Some(dir) = target.strip_suffix('/') else {
            continue;
        };
        let name = percent_encoding::percent_decode_str(dir).decode_utf8_lossy();
        let plain = !name.is_empty()
            && !name.contains('/')
            && !name.starts_with('?')
            && !name.starts_with('#')
            && name != "."
            && name != "..";
        if plain && !names.iter().any(|n| n == name.as_ref()) {
            names.push(name.into_owned());
        }
    }
    names.sort();
    names
}

/// A directory in a store where an object should be: a broken store, not a missing chunk.
fn directory_error(location: String) -> ZarrError {
    ZarrError::metadata(
        location,
        "is a directory where a chunk or metadata object should be",
    )
}

/// Refuses a local object that is neither a regular file nor a directory (a FIFO, a socket, a
/// device) before it is opened: opening a FIFO blocks until a writer comes, and a device may
/// never end. A stat, as object_store's own reads begin with.
fn refuse_special_file(path: &std::path::Path, location: impl FnOnce() -> String) -> Result<()> {
    match std::fs::metadata(path) {
        Ok(meta) if !meta.is_file() && !meta.is_dir() => Err(ZarrError::metadata(
            location(),
            "is not a regular file (a FIFO, socket or device) where a chunk or metadata object \
             should be",
        )),
        _ => Ok(()),
    }
}

/// The objects [`ZarrStore::get_many`] read, in the order of its keys.
pub(crate) struct ManyObjects {
    /// Each object, `None` where it does not exist, or the error reading it.
    pub objects: Vec<Result<Option<Bytes>>>,
    /// For a local store, the time the reads took on their blocking thread (not the wait for
    /// one): how fast the files came.
    pub local_read_time: Option<Duration>,
}

/// How object_store's `LocalFileSystem` without a prefix shows itself.
const LOCAL_FILE_SYSTEM: &str = "LocalFileSystem(file:///)";

/// Turns a location into a URL: URLs pass through, local paths must name an existing directory.
pub(crate) fn location_url(location: &str) -> Result<Url> {
    if location.contains("://") {
        // Not yet parsed: shown without anything that may be a password or a token.
        let shown = redact_unparsed(location);
        let mut url = Url::parse(location)
            .map_err(|e| ZarrError::Location(format!("'{shown}' is not a URL: {e}")))?;
        if url.scheme() == "file" {
            let path = url
                .to_file_path()
                .map_err(|_| ZarrError::Location(format!("'{shown}' is not a file path")))?;
            return local_url(&shown, &path);
        }
        if !url.path().ends_with('/') {
            let p = format!("{}/", url.path());
            url.set_path(&p);
        }
        return Ok(url);
    }
    local_url(location, std::path::Path::new(location))
}

/// Turns the location of a single file into a URL: URLs pass through, local paths must name an
/// existing file.
pub(crate) fn file_url(location: &str) -> Result<Url> {
    let path = match location.contains("://") {
        true => {
            let shown = redact_unparsed(location);
            let url = Url::parse(location)
                .map_err(|e| ZarrError::Location(format!("'{shown}' is not a URL: {e}")))?;
            if url.scheme() != "file" {
                return Ok(url);
            }
            url.to_file_path()
                .map_err(|_| ZarrError::Location(format!("'{shown}' is not a file path")))?
        }
        false => std::path::PathBuf::from(location),
    };
    let abs = std::fs::canonicalize(&path)
        .map_err(|e| ZarrError::Location(format!("'{location}' cannot be opened: {e}")))?;
    if !abs.is_file() {
        return Err(ZarrError::Location(format!("'{location}' is not a file")));
    }
    Url::from_file_path(&abs)
        .map_err(|_| ZarrError::Location(format!("'{location}' is not an absolute path")))
}

fn local_url(location: &str, path: &std::path::Path) -> Result<Url> {
    let abs = std::fs::canonicalize(path)
        .map_err(|e| ZarrError::Location(format!("'{location}' cannot be opened: {e}")))?;
    if !abs.is_dir() {
        // zarr-python 2's ZipStore writes a store as one zip file.
        let zip = match abs.extension().and_then(|e| e.to_str()) {
            Some(e) if e.eq_ignore_ascii_case("zip") => {
                " (zip stores are not read: unzip it and give the directory)"
            }
            _ => "",
        };
        return Err(ZarrError::Location(format!(
            "'{location}' is a file, not a Zarr store directory{zip}"
        )));
    }
    Url::from_directory_path(&abs)
        .map_err(|_| ZarrError::Location(format!("'{location}' is not an absolute path")))
}

/// Normalises a node path inside a store: `/`-separated, no empty or `.` segments.
/// A `..` segment is rejected: it would leave the store root.
pub(crate) fn normalize_node_path(path: &str) -> Result<String> {
    let mut parts = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                return Err(ZarrError::Option(format!(
                    "path '{path}' contains '..', which would leave the store root"
                )));
            }
            p => parts.push(p),
        }
    }
    Ok(parts.join("/"))
}

/// Joins a node path and a key.
pub(crate) fn join_key(node: &str, key: &str) -> String {
    if node.is_empty() {
        key.to_string()
    } else {
        format!("{node}/{key}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `get_many` of `keys` with a chunk limit of `bytes`: the objects, or the error's text.
    async fn read(
        store: &ZarrStore,
        keys: &[&str],
        bytes: u64,
    ) -> Result<Vec<Option<Bytes>>, String> {
        let limit = Limit {
            option: "max_chunk_bytes",
            bytes,
        };
        let keys = keys.iter().map(|k| k.to_string()).collect();
        let many = store
            .get_many(keys, limit)
            .await
            .map_err(|e| e.to_string())?;
        many.objects
            .into_iter()
            .map(|o| o.map_err(|e| e.to_string()))
            .collect()
    }

    /// Storage options configure remote stores; a local store reads as without them (it was
    /// an error saying no store was registered for file://).
    #[tokio::test]
    async fn a_local_store_reads_as_it_is_whatever_storage_options_come_with_it() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("k"), b"object").unwrap();
        let mut storage = StorageOptions::default();
        storage.set("retry.max_retries", "3").unwrap();
        storage.set("aws.region", "us-east-1").unwrap();
        let runtime = RuntimeEnv::default();
        let location = dir.path().to_str().unwrap();
        let store = ZarrStore::open(&runtime, location, &storage).unwrap();
        let limit = Limit {
            option: "max_metadata_bytes",
            bytes: 1 << 20,
        };
        let object = store.get("k", limit).await.unwrap();
        assert_eq!(object, Some(Bytes::from_static(b"object")));
    }

    /// A local directory under DataFusion's own `file://` store is read by `read_local`
    /// (absent files, directories and the size limit as `get` has them); a store the
    /// application registered for `file://` is used as it is.
    #[tokio::test]
    async fn local_files_are_read_directly_unless_another_store_is_registered() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("c/0")).unwrap();
        std::fs::write(dir.path().join("c/1"), b"chunk").unwrap();
        let location = dir.path().to_str().unwrap();
        let chunk = Some(Bytes::from_static(b"chunk"));

        let runtime = RuntimeEnv::default();
        let store = ZarrStore::open(&runtime, location, &StorageOptions::default()).unwrap();
        assert!(store.reads_many_at_once());
        assert_eq!(
            read(&store, &["c/1", "c/2"], 5).await,
            Ok(vec![chunk.clone(), None])
        );
        let e = read(&store, &["c/1"], 4).await.unwrap_err();
        assert!(
            e.contains("c/1: object is 5 bytes, more than max_chunk_bytes = 4"),
            "{e}"
        );
        let e = read(&store, &["c/0"], 4).await.unwrap_err();
        assert!(e.contains("c/0: is a directory where a chunk"), "{e}");

        let runtime = RuntimeEnv::default();
        let other = object_store::local::LocalFileSystem::new_with_prefix("/").unwrap();
        let limited = object_store::limit::LimitStore::new(other, 1);
        runtime.register_object_store(&Url::parse("file://").unwrap(), Arc::new(limited));
        let store = ZarrStore::open(&runtime, location, &StorageOptions::default()).unwrap();
        assert!(!store.reads_many_at_once());
        assert_eq!(
            read(&store, &["c/1", "c/2"], 5).await,
            Ok(vec![chunk, None])
        );
    }

    #[test]
    fn an_http_location_with_a_query_is_refused_without_showing_it() {
        let runtime = RuntimeEnv::default();
        let location = "https://127.0.0.1:1/x.zarr?sig=s3cret";
        let e = ZarrStore::open(&runtime, location, &StorageOptions::default())
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            e.contains("'https://127.0.0.1:1/x.zarr?***': the query"),
            "{e}"
        );
        assert!(!e.contains("s3cret"), "{e}");
    }

    #[test]
    fn node_paths_are_normalised_and_dotdot_rejected() {
        assert_eq!(normalize_node_path("/a//b/./c/").unwrap(), "a/b/c");
        assert_eq!(normalize_node_path("").unwrap(), "");
        assert!(normalize_node_path("a/../../etc").is_err());
    }

    #[test]
    fn directory_indexes_list_their_subdirectories() {
        // nginx's autoindex, Python's http.server, Apache's (with a sort link and a parent).
        let nginx = r#"<html><head><title>Index of /g/</title></head><body><h1>Index of /g/</h1>
            <hr><pre><a href="../">../</a>
            <a href="lat/">lat/</a>                 05-Dec-2026 21:47       -
            <a href="na%C3%AFve%20name/">na&#239;ve name/</a>  05-Dec-2026 21:47   -
            <a href="zarr.json">zarr.json</a>         05-Dec-2026 21:47    1033
            </pre><hr></body></html>"#;
        assert_eq!(index_links(nginx), ["lat", "naïve name"]);
        let python = r#"<ul><li><a href="temp/">temp/</a></li><li><a href='x/'>x/</a></li>
            <li><a href="zarr.json">zarr.json</a></li></ul>"#;
        assert_eq!(index_links(python), ["temp", "x"]);
        let apache = r#"<a href="?C=N;O=D">Name</a><a href="/data/">Parent Directory</a>
            <a href="b/">b/</a><a href="a/">a/</a><a href="a/">a/</a><a href="http://x/y/">y</a>"#;
        assert_eq!(index_links(apache), ["a", "b"]);
    }
}
