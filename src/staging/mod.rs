//! Writing so that a failure leaves nothing: what is written is staged, and replaces the
//! target only when complete. One [`Stage`] trait for every kind of target, in the manner of
//! iceberg-rust's and delta-rs's writers (writers hand over objects, one commit step): a local
//! directory (`directory.rs`: a hidden directory moved into place), an object store
//! (`objects.rs`: in place, metadata last, or beside an existing store and copied over it), an
//! Icechunk session (`icechunk/stage.rs`: one commit). [`AtomicTarget`] stages one file (a
//! Parquet export). Every temporary beside a target is named `.{name}.{pid}-{nanos}.{what}`
//! ([`hidden_name`]); one whose process is gone (killed: no drop ran) is an orphan
//! ([`orphans`]) that the next write to the same target removes. A local store has one
//! writer at a time ([`StoreLock`]).

mod directory;
mod file;
mod lease;
mod lock;
mod objects;

use std::path::{Path, PathBuf};

use async_trait::async_trait;
use bytes::Bytes;
use object_store::path::{Path as ObjectPath, PathPart};
use object_store::{ObjectStore, ObjectStoreExt};

use crate::error::{Result, ZarrError};
use crate::object_stores::{StorageOptions, redact_text};
pub(crate) use directory::LocalStage;
pub use file::AtomicTarget;
pub(crate) use lease::{Lease, lease_state};
pub(crate) use lock::{LockTimes, StoreLock, WriterLock};
pub(crate) use objects::{
    METADATA_KEYS, ObjectStage, Placement, is_store, recover_killed_overwrites,
};

/// Where one write's objects go until it commits. Keys are paths below the store's root
/// (`zarr.json`, `names/c/0`). A stage dropped before [`Stage::commit`] or [`Stage::abort`]
/// (a cancelled write) removes what it wrote, best effort.
#[async_trait]
pub(crate) trait Stage: Send + Sync + std::fmt::Debug {
    /// Writes the new object `key`.
    async fn put(&self, key: &str, bytes: Bytes) -> Result<()>;

    /// Rewrites the existing object `key` (an append's boundary chunk and metadata): a failed
    /// write does not remove it.
    async fn replace(&self, key: &str, bytes: Bytes) -> Result<()>;

    /// Reads the object `key` as this write sees it (appends read the last chunk).
    async fn get(&self, key: &str) -> Result<Option<Bytes>>;

    /// Makes what was written the target's.
    async fn commit(&mut self) -> Result<()>;

    /// Removes what this write wrote; what was there before stays as it was.
    async fn abort(&mut self);

    /// Whether the objects go into an Icechunk repository.
    fn is_repository(&self) -> bool {
        false
    }
}

/// The target of a write as errors show it, and the values they must not show: the one
/// error of staging ([`ZarrError::Write`]).
#[derive(Debug, Clone, Default)]
pub(crate) struct Shown {
    target: String,
    secrets: StorageOptions,
}

impl Shown {
    /// `target` (already without credentials), with `secrets` kept out of its errors.
    pub(crate) fn new(target: impl Into<String>, secrets: &StorageOptions) -> Self {
        Self {
            target: target.into(),
            secrets: secrets.clone(),
        }
    }

    /// An error of this write.
    pub(crate) fn error(&self, message: impl AsRef<str>) -> ZarrError {
        ZarrError::Write {
            target: self.target.clone(),
            message: redact_text(message.as_ref(), &self.secrets),
        }
    }
}

/// The object path of `key` below `root`, its names as they are (`é/c/0` is the object
/// `é/c/0`, as zarr-python writes it; object_store's `Path::join` would percent-encode it, and
/// the metadata would name an array with no chunks).
pub(crate) fn object_path(root: &ObjectPath, key: &str, shown: &Shown) -> Result<ObjectPath> {
    let mut path = root.clone();
    for part in key.split('/').filter(|p| !p.is_empty()) {
        let part = PathPart::parse(part)
            .map_err(|e| shown.error(format!("{key}: a name no object store holds: {e}")))?;
        path = path.join(part);
    }
    Ok(path)
}

/// The directory holding the local target `target` (created if missing) and the target's
/// name in it: where its temporaries and its lock go. `error` makes the error of a failure.
pub(crate) fn beside_local(
    target: &Path,
    error: impl Fn(String) -> ZarrError,
) -> Result<(PathBuf, String)> {
    let name = (target.file_name())
        .ok_or_else(|| error("not a directory name".into()))?
        .to_string_lossy()
        .to_string();
    let dir = match target.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&dir).map_err(|e| error(format!("{}: {e}", dir.display())))?;
    Ok((dir, name))
}

/// Removes `paths` of `store` in the background, best effort: what a write dropped unfinished
/// (cancelled) wrote.
pub(crate) fn delete_in_background(store: std::sync::Arc<dyn ObjectStore>, paths: Vec<ObjectPath>) {
    if paths.is_empty() {
        return;
    }
    if let Ok(handle) = tokio::runtime::Handle::try_current() {
        handle.spawn(async move {
            for path in paths {
                let _ = store.delete(&path).await;
            }
        });
    }
}

/// A step of a write where a test may stop the process: with `DATAFUSION_ZARR_PAUSE_AT` set
/// to `step`, the process says `paused at {step}` on standard error and sleeps (up to a
/// minute) so that the test can kill it there. Costs one environment lookup otherwise.
pub(crate) fn pause_point(step: &str) {
    if std::env::var("DATAFUSION_ZARR_PAUSE_AT").is_ok_and(|at| at == step) {
        eprintln!("paused at {step}");
        std::thread::sleep(std::time::Duration::from_secs(60));
    }
}

/// Who this writer is, as a lock or lease names its holder: "process P on HOST since T".
pub(crate) fn holder_text() -> String {
    static HOST: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    let host = HOST.get_or_init(|| {
        std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|h| h.trim().to_string())
            .unwrap_or_else(|_| "this host".into())
    });
    let since = chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ");
    format!("process {} on {host} since {since}", std::process::id())
}

/// The hidden name of a temporary of this process beside the target `name`:
/// `.{name}.{pid}-{nanos}.{what}`.
pub(crate) fn hidden_name(name: &str, what: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!(".{name}.{}-{nanos}.{what}", std::process::id())
}

/// The entries of `dir` named `.{name}.{pid}-{rest}` whose process `pid` is gone, with `rest`:
/// what writes that were killed left beside their target `name` (this export's temporary
/// files, the Zarr writer's temporary stores).
pub(crate) fn orphans(dir: &Path, name: &str) -> Vec<(PathBuf, String)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let prefix = format!(".{name}.");
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let file = entry.file_name();
        let Some(rest) = file.to_str().and_then(|f| f.strip_prefix(&prefix)) else {
            continue;
        };
        let Some((pid, after)) = rest.split_once('-') else {
            continue;
        };
        if pid.parse::<u32>().is_ok_and(process_is_gone) {
            found.push((entry.path(), after.to_string()));
        }
    }
    found
}

/// Removes the hidden `.{name}.{pid}-{n}.tmp` (and `.old`) directories of earlier writes to
/// `name` in `dir` whose process is gone (killed before it could clean up); an `.old` is the
/// only copy of the store when the target is missing (its writer was killed between its two
/// renames) and is put back instead. Best effort; run by the lock's holder.
pub(crate) fn recover_killed_writes(dir: &Path, name: &str) {
    let target = dir.join(name);
    for (path, after) in orphans(dir, name) {
        let kind = [".tmp", ".old"].into_iter().find(|ext| {
            after
                .strip_suffix(ext)
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        });
        match kind {
            Some(".old") if !target.exists() => {
                let _ = std::fs::rename(&path, &target);
            }
            Some(_) => {
                let _ = std::fs::remove_dir_all(path);
            }
            None => {}
        }
    }
}

/// Whether no process `pid` runs (on Linux, by `/proc`; elsewhere none is assumed gone).
fn process_is_gone(pid: u32) -> bool {
    cfg!(target_os = "linux")
        && pid != std::process::id()
        && Path::new("/proc").is_dir()
        && !Path::new("/proc").join(pid.to_string()).exists()
}
