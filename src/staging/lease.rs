//! One writer at a time per store on an object store (S3, GCS, Azure) ([`Lease`]): a lease
//! object `.{name}.lock` beside the store, created only if absent (a conditional put:
//! If-None-Match on S3 and Azure, generation 0 on GCS), naming its holder and when it expires;
//! renewed while a long write runs, and taken over (by a put conditional on its ETag) once
//! expired, so a killed writer blocks the next one at most `lease_ttl`. Beside the store, not in
//! it: readers (ours, zarr-python, xarray) never list it, and an overwrite's copy over the
//! store leaves it alone. A writer that cannot renew its lease stops before its next object.
//!
//! The lease also tells our readers when a store is replaced ([`LeaseState`]): an overwrite
//! marks it `replacing` before it starts copying over the store, and on release leaves it
//! behind, expired, with its `epoch` counted up (a store never overwritten has no lease
//! between writes). A reader that finds it replacing, or its epoch changed since it opened the
//! store, knows it may have read two stores and says so.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use object_store::path::{Path, PathPart};
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutPayload, PutResult, UpdateVersion};
use serde::{Deserialize, Serialize};

use super::Shown;
use crate::error::Result;

/// How often a waiting writer reads the lease again.
const RETRY: Duration = Duration::from_millis(100);

/// The largest lease document read (a lease is a line of JSON).
const MAX_DOCUMENT: usize = 4096;

/// What a lease object holds.
#[derive(Debug, Serialize, Deserialize)]
struct Document {
    /// "process P on HOST since T".
    holder: String,
    /// When it expires unless renewed, in milliseconds since the Unix epoch.
    expires_unix_ms: i64,
    /// An overwrite is copying the new store over the old one.
    #[serde(default)]
    replacing: bool,
    /// How many overwrites replaced the store.
    #[serde(default)]
    epoch: u64,
}

/// What a reader learns of a store's lease.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LeaseState {
    /// Who holds (or last held) it.
    pub(crate) holder: String,
    /// An overwrite is replacing the store (or was killed doing so).
    pub(crate) replacing: bool,
    /// How many overwrites replaced the store.
    pub(crate) epoch: u64,
}

/// The state of the lease of the store at `root` of `store`; `None` if it has none.
pub(crate) async fn lease_state(
    store: &Arc<dyn ObjectStore>,
    root: &Path,
) -> object_store::Result<Option<LeaseState>> {
    Ok(read(store, &lease_path(root))
        .await?
        .map(|(d, _)| LeaseState {
            holder: d.holder,
            replacing: d.replacing,
            epoch: d.epoch,
        }))
}

/// What the holder knows of its lease.
#[derive(Debug)]
struct Held {
    /// The lease object's version as last written by us.
    version: UpdateVersion,
    /// Until when it is ours for certain (by this machine's clock).
    valid_until: Instant,
    /// Why it is not ours any more.
    lost: Option<String>,
    /// What the lease says of the store.
    replacing: bool,
    epoch: u64,
    /// The store changed under this lease in a way readers must learn (replaced, or put
    /// back after a killed overwrite): its release counts the epoch up.
    changed: bool,
}

impl Held {
    /// A holder's state before its lease is written.
    fn new(epoch: u64, replacing: bool) -> Self {
        Self {
            version: UpdateVersion {
                e_tag: None,
                version: None,
            },
            valid_until: Instant::now(),
            lost: None,
            replacing,
            epoch,
            changed: replacing,
        }
    }

    /// The lease document of this holder, expiring `ttl` from now.
    fn document(&self, ttl: Duration) -> Document {
        Document {
            holder: super::holder_text(),
            expires_unix_ms: now_ms().saturating_add(i64::try_from(ttl.as_millis()).unwrap_or(0)),
            replacing: self.replacing,
            epoch: self.epoch,
        }
    }
}

/// The lease of one store on an object store, renewed in the background while held; released
/// by [`Lease::release`] (or, best effort, when dropped).
#[derive(Debug)]
pub(crate) struct Lease {
    store: Arc<dyn ObjectStore>,
    path: Path,
    held: Arc<Mutex<Held>>,
    renewer: Option<tokio::task::JoinHandle<()>>,
    shown: Shown,
    ttl: Duration,
    released: bool,
}

impl Lease {
    /// Takes the lease of the store at `root` of `store`, waiting up to `timeout` for another
    /// writer to finish (or its lease to expire); after that, an error of `shown` naming the
    /// holder. `ttl` is how long the lease lasts unless renewed.
    pub(crate) async fn acquire(
        store: Arc<dyn ObjectStore>,
        root: &Path,
        timeout: Duration,
        ttl: Duration,
        shown: &Shown,
    ) -> Result<Self> {
        let path = lease_path(root);
        let deadline = Instant::now() + timeout;
        loop {
            let taken = Instant::now();
            let fresh = Held::new(0, false);
            match put(&store, &path, &fresh.document(ttl), PutMode::Create).await {
                Ok(put) => return Ok(Self::held(store, path, fresh, put, taken, ttl, shown)),
                Err(object_store::Error::AlreadyExists { .. })
                | Err(object_store::Error::Precondition { .. }) => {}
                Err(object_store::Error::NotImplemented { .. }) => {
                    return Err(shown.error(
                        "this object store cannot create an object only if it is absent (a \
                         conditional put), which keeps two writers of one store apart; enable \
                         it (S3-compatible stores: aws_conditional_put 'etag') or write to \
                         another store",
                    ));
                }
                Err(e) => return Err(shown.error(format!("cannot take the lease {path}: {e}"))),
            }
            // Held by another writer: taken over if expired, else waited for.
            let holder = match read(&store, &path).await {
                Ok(Some((document, version))) if document.expires_unix_ms < now_ms() => {
                    let taken = Instant::now();
                    // What the lease says of the store stays (a killed overwrite's
                    // `replacing` until the store is put right).
                    let next = Held::new(document.epoch, document.replacing);
                    match put(&store, &path, &next.document(ttl), PutMode::Update(version)).await {
                        Ok(put) => {
                            return Ok(Self::held(store, path, next, put, taken, ttl, shown));
                        }
                        Err(object_store::Error::NotImplemented { .. }) => {
                            // No conditional update here: the expired lease is removed and
                            // created again, still only if absent.
                            let _ = store.delete(&path).await;
                        }
                        Err(_) => {}
                    }
                    document.holder
                }
                Ok(Some((document, _))) => document.holder,
                Ok(None) => "a writer that just finished".into(),
                Err(e) => return Err(shown.error(format!("cannot read the lease {path}: {e}"))),
            };
            let now = Instant::now();
            if now >= deadline {
                return Err(shown.error(format!(
                    "another writer holds it ({holder}; its lease is {path}) and did not finish \
                     within the lock_timeout of {} s; nothing was written",
                    timeout.as_secs_f64()
                )));
            }
            tokio::time::sleep(RETRY.min(deadline - now)).await;
        }
    }

    /// The lease `held` just written by `put`, renewed every third of `ttl` from now on.
    fn held(
        store: Arc<dyn ObjectStore>,
        path: Path,
        mut held: Held,
        put: PutResult,
        taken: Instant,
        ttl: Duration,
        shown: &Shown,
    ) -> Self {
        held.version = version_of(put);
        held.valid_until = taken + ttl;
        let held = Arc::new(Mutex::new(held));
        let renewer = tokio::spawn(renew(store.clone(), path.clone(), held.clone(), ttl));
        Self {
            store,
            path,
            held,
            renewer: Some(renewer),
            shown: shown.clone(),
            ttl,
            released: false,
        }
    }

    /// Marks the store as being replaced (readers that find it so, or find the epoch changed,
    /// refuse what they read): before an overwrite starts copying over it.
    pub(crate) async fn mark_replacing(&self) -> Result<()> {
        self.check()?;
        let (document, version) = {
            let mut held = self.lock_held()?;
            held.replacing = true;
            held.changed = true;
            (held.document(self.ttl), held.version.clone())
        };
        let sent = Instant::now();
        match put(&self.store, &self.path, &document, PutMode::Update(version)).await {
            Ok(put) => {
                let mut held = self.lock_held()?;
                held.version = version_of(put);
                held.valid_until = sent + self.ttl;
                Ok(())
            }
            Err(e) => Err(self.shown.error(format!(
                "cannot mark the lease {} as replacing the store ({e}); the store is unchanged",
                self.path
            ))),
        }
    }

    /// The store is whole again (the new one copied over it, or the old one put back): the
    /// lease stops saying it is being replaced when released.
    pub(crate) fn mark_whole(&self) {
        if let Ok(mut held) = self.held.lock() {
            held.replacing = false;
        }
    }

    fn lock_held(&self) -> Result<std::sync::MutexGuard<'_, Held>> {
        self.held
            .lock()
            .map_err(|_| self.shown.error("the lease's state is poisoned"))
    }

    /// An error if the lease is no longer certainly ours: a write stops before its next
    /// object, and does not commit.
    pub(crate) fn check(&self) -> Result<()> {
        let Ok(held) = self.held.lock() else {
            return Err(self.shown.error("the lease's state is poisoned"));
        };
        let why = match (&held.lost, Instant::now() >= held.valid_until) {
            (Some(why), _) => why.clone(),
            (None, true) => "it expired before it could be renewed".into(),
            (None, false) => return Ok(()),
        };
        Err(self.shown.error(format!(
            "this write lost its lease {} ({why}): another writer may have taken over the \
             store, so nothing of this write is kept",
            self.path
        )))
    }

    /// Stops renewing and lets go of the lease (if it is still ours): removed, or, once the
    /// store has been replaced, left expired with its epoch counted up for readers.
    pub(crate) async fn release(mut self) {
        if let Some(renewer) = self.renewer.take() {
            renewer.abort();
        }
        self.released = true;
        if self.check().is_ok() {
            let_go(
                self.store.clone(),
                self.path.clone(),
                self.held.clone(),
                self.ttl,
            )
            .await;
        }
    }
}

/// Lets go of the lease `held` at `path`: removed, or, once the store has changed under it,
/// left expired with its epoch counted up (and still `replacing` if the store is not whole).
async fn let_go(store: Arc<dyn ObjectStore>, path: Path, held: Arc<Mutex<Held>>, ttl: Duration) {
    let Ok(mut held) = held.lock().map(|h| Held {
        version: h.version.clone(),
        valid_until: h.valid_until,
        lost: None,
        replacing: h.replacing,
        epoch: h.epoch,
        changed: h.changed,
    }) else {
        return;
    };
    if !held.changed && held.epoch == 0 {
        let _ = store.delete(&path).await;
        return;
    }
    if held.changed {
        held.epoch = held.epoch.saturating_add(1);
    }
    let mut document = held.document(ttl);
    document.expires_unix_ms = 0;
    let _ = put(&store, &path, &document, PutMode::Update(held.version)).await;
}

impl Drop for Lease {
    /// A lease dropped unreleased (a cancelled write) stops renewing and is let go in the
    /// background, best effort; else it expires.
    fn drop(&mut self) {
        if let Some(renewer) = self.renewer.take() {
            renewer.abort();
        }
        if self.released || self.check().is_err() {
            return;
        }
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            let (store, path, held) = (self.store.clone(), self.path.clone(), self.held.clone());
            handle.spawn(let_go(store, path, held, self.ttl));
        }
    }
}

/// Renews the lease every third of `ttl` until it is lost (or the task is aborted).
async fn renew(store: Arc<dyn ObjectStore>, path: Path, held: Arc<Mutex<Held>>, ttl: Duration) {
    loop {
        tokio::time::sleep(ttl / 3).await;
        let Some((document, version)) = held
            .lock()
            .ok()
            .map(|h| (h.document(ttl), h.version.clone()))
        else {
            return;
        };
        let sent = Instant::now();
        let result = match version.e_tag.is_some() || version.version.is_some() {
            true => put(&store, &path, &document, PutMode::Update(version)).await,
            // A store that names no version: renewed unconditionally.
            false => put(&store, &path, &document, PutMode::Overwrite).await,
        };
        let Ok(mut held) = held.lock() else {
            return;
        };
        match result {
            Ok(put) => {
                held.version = version_of(put);
                held.valid_until = sent + ttl;
            }
            Err(object_store::Error::Precondition { .. }) => {
                held.lost = Some("another writer replaced it".into());
                return;
            }
            // A failed renewal is tried again until the lease runs out.
            Err(_) if Instant::now() < held.valid_until => {}
            Err(e) => {
                held.lost = Some(format!("renewing it failed: {e}"));
                return;
            }
        }
    }
}

/// Writes the lease `document` at `path`, as `mode` says.
async fn put(
    store: &Arc<dyn ObjectStore>,
    path: &Path,
    document: &Document,
    mode: PutMode,
) -> object_store::Result<PutResult> {
    let bytes = serde_json::to_vec(document).unwrap_or_default();
    store
        .put_opts(
            path,
            PutPayload::from_bytes(Bytes::from(bytes)),
            mode.into(),
        )
        .await
}

/// The lease document at `path` and its version; `None` if there is none. A document that
/// is not ours to read (too large, not JSON) counts as an expired lease of an unknown holder.
async fn read(
    store: &Arc<dyn ObjectStore>,
    path: &Path,
) -> object_store::Result<Option<(Document, UpdateVersion)>> {
    let got = match store.get(path).await {
        Ok(got) => got,
        Err(object_store::Error::NotFound { .. }) => return Ok(None),
        Err(e) => return Err(e),
    };
    let version = UpdateVersion {
        e_tag: got.meta.e_tag.clone(),
        version: got.meta.version.clone(),
    };
    let size = got.meta.size;
    let document = match size <= MAX_DOCUMENT as u64 {
        true => serde_json::from_slice(&got.bytes().await?).ok(),
        false => None,
    };
    let document = document.unwrap_or(Document {
        holder: format!("an unreadable lease of {size} bytes"),
        expires_unix_ms: 0,
        replacing: false,
        epoch: 0,
    });
    Ok(Some((document, version)))
}

/// The lease object of the store at `root`: `.{name}.lock` beside it (in the bucket's root,
/// `.zarr.lock`, for a store that is the whole bucket).
pub(crate) fn lease_path(root: &Path) -> Path {
    let parts: Vec<_> = root.parts().collect();
    match root.filename() {
        Some(name) => {
            let name = format!(".{name}.lock");
            let lock = PathPart::parse(&name).unwrap_or_else(|_| PathPart::from(name.as_str()));
            let parent = parts.iter().take(parts.len().saturating_sub(1)).cloned();
            Path::from_iter(parent.chain([lock]))
        }
        None => Path::from(".zarr.lock"),
    }
}

fn version_of(put: PutResult) -> UpdateVersion {
    UpdateVersion {
        e_tag: put.e_tag,
        version: put.version,
    }
}

/// Milliseconds since the Unix epoch by this machine's clock.
fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}
