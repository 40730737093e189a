//! One writer at a time per local store ([`StoreLock`]): an exclusive OS lock (`flock`) on a
//! file beside the store, `.{name}.lock`, held for the whole of a COPY over an existing store
//! and of an INSERT. Beside the store, not in it: readers (ours, zarr-python, xarray) never
//! list it, and an overwrite that moves the store's directory does not move the lock with it.
//! The OS releases the lock when its holder exits, killed or not, so a lock is never waited on
//! for a writer that is gone.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::{Lease, Shown, beside_local};
use crate::error::Result;
use crate::store::ZarrStore;

/// How long a write waits for another writer, and how long its lease on an object store
/// lasts unless renewed.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LockTimes {
    /// How long a write waits for another writer (`0`: not at all).
    pub(crate) timeout: Duration,
    /// How long a lease lasts unless renewed (a killed writer's blocks others this long).
    pub(crate) lease_ttl: Duration,
}

/// What keeps a store to one writer at a time, held from before a write looks at the store
/// to after its commit: an OS lock on a local store, a lease on an object store.
#[derive(Debug)]
pub(crate) enum WriterLock {
    /// A local directory's [`StoreLock`].
    Local(StoreLock),
    /// An object store's [`Lease`].
    Lease(Lease),
}

impl WriterLock {
    /// Takes the lock of `store`, waiting as `times` say.
    pub(crate) async fn acquire(
        store: &ZarrStore,
        times: LockTimes,
        shown: &Shown,
    ) -> Result<Self> {
        let url = store.url();
        match url.scheme() {
            "file" => {
                let path = url
                    .to_file_path()
                    .map_err(|()| shown.error("not a local path"))?;
                Ok(Self::Local(
                    StoreLock::acquire(&path, times.timeout, shown).await?,
                ))
            }
            "http" | "https" => Err(shown.error(
                "HTTP stores are read-only: write to a local path, s3://, gs:// or az:// instead",
            )),
            _ => {
                let (objects, root) = store.parts();
                let lease =
                    Lease::acquire(objects.clone(), root, times.timeout, times.lease_ttl, shown)
                        .await?;
                Ok(Self::Lease(lease))
            }
        }
    }

    /// An error if the lock is no longer certainly held (an object store's lease that could
    /// not be renewed): the write stops and does not commit.
    pub(crate) fn check(&self) -> Result<()> {
        match self {
            Self::Local(_) => Ok(()),
            Self::Lease(lease) => lease.check(),
        }
    }

    /// Tells readers the store is about to be replaced (an object store's lease says so; a
    /// local overwrite is one exchange, and readers see the directory change).
    pub(crate) async fn mark_replacing(&self) -> Result<()> {
        match self {
            Self::Local(_) => Ok(()),
            Self::Lease(lease) => lease.mark_replacing().await,
        }
    }

    /// The store is whole again after [`WriterLock::mark_replacing`] or a killed overwrite.
    pub(crate) fn mark_whole(&self) {
        if let Self::Lease(lease) = self {
            lease.mark_whole();
        }
    }

    /// Lets go of the lock.
    pub(crate) async fn release(self) {
        match self {
            Self::Local(lock) => drop(lock),
            Self::Lease(lease) => lease.release().await,
        }
    }
}

/// How often a waiting writer tries the lock again.
const RETRY: Duration = Duration::from_millis(20);

/// The lock of one local store, released (and its file removed) on drop.
#[derive(Debug)]
pub(crate) struct StoreLock {
    file: Option<File>,
    path: PathBuf,
}

impl StoreLock {
    /// Takes the lock of the store at `store` (a directory that may not exist yet), waiting up
    /// to `timeout` for another writer to finish; after that, an error of `shown` naming the
    /// holder.
    pub(crate) async fn acquire(store: &Path, timeout: Duration, shown: &Shown) -> Result<Self> {
        let path = lock_path(store, shown)?;
        let deadline = Instant::now() + timeout;
        loop {
            let file = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(&path)
                .map_err(|e| {
                    shown.error(format!("cannot open the lock {}: {e}", path.display()))
                })?;
            match file.try_lock() {
                // The holder removes the file as it lets go: a lock on a removed file is none.
                Ok(()) if same_file(&file, &path) => {
                    let mut lock = Self {
                        file: Some(file),
                        path,
                    };
                    lock.write_holder();
                    // What a killed writer left is the holder's to put right first.
                    let (dir, name) = beside_local(store, |message| shown.error(message))?;
                    super::recover_killed_writes(&dir, &name);
                    return Ok(lock);
                }
                Ok(()) => continue,
                Err(TryLockError::WouldBlock) if Instant::now() < deadline => {
                    drop(file);
                    tokio::time::sleep(RETRY).await;
                }
                Err(TryLockError::WouldBlock) => {
                    return Err(shown.error(format!(
                        "another writer holds it ({}) and did not finish within the \
                         lock_timeout of {} s; nothing was written",
                        holder(&path),
                        timeout.as_secs_f64()
                    )));
                }
                Err(TryLockError::Error(e)) => {
                    return Err(shown.error(format!("cannot lock {}: {e}", path.display())));
                }
            }
        }
    }

    /// Writes who holds the lock, for a writer that waits in vain to name.
    fn write_holder(&mut self) {
        let text = super::holder_text();
        if let Some(file) = &mut self.file {
            let _ = file
                .set_len(0)
                .and_then(|()| file.write_all(text.as_bytes()));
        }
    }
}

impl Drop for StoreLock {
    fn drop(&mut self) {
        // Removed while held, then released: a waiter that opened it finds it gone and opens
        // the next one.
        let _ = std::fs::remove_file(&self.path);
        self.file = None;
    }
}

/// `.{name}.lock` beside the store `store`.
fn lock_path(store: &Path, shown: &Shown) -> Result<PathBuf> {
    let (dir, name) = beside_local(store, |message| shown.error(message))?;
    Ok(dir.join(format!(".{name}.lock")))
}

/// What the lock file says of its holder.
fn holder(path: &Path) -> String {
    let mut text = String::new();
    let read = File::open(path).and_then(|f| f.take(256).read_to_string(&mut text));
    match read {
        Ok(_) if !text.trim().is_empty() => text.trim().to_string(),
        _ => format!("the lock {}", path.display()),
    }
}

/// Whether `file` is the file at `path` now.
#[cfg(unix)]
fn same_file(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), std::fs::metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

#[cfg(not(unix))]
fn same_file(_file: &File, path: &Path) -> bool {
    path.exists()
}
