//! One writer at a time per local store ([`StoreLock`]): an exclusive OS lock (`flock`) on a
//! file beside the store, `.{name}.lock`, held for the whole of every write to it (a COPY, an
//! overwrite, an INSERT). Beside the store, not in it: readers (ours, zarr-python, xarray)
//! never list it, and an overwrite that moves the store's directory does not move the lock
//! with it. The OS releases the lock when its holder exits, killed or not, so a lock is never
//! waited on for a writer that is gone.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::{Lease, Shown};
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

/// The lock of one local store, released on drop. Its file stays beside a store, empty
/// between writes: a holder writes its name into it and empties it as it lets go, so a file
/// that still names someone when the lock is taken was left by a writer that was killed, and
/// only then is the directory searched for what that writer left. (Opening, locking and
/// emptying one file that stays is six system calls; creating and removing it each time, and
/// searching the directory on every write, was three times that: issue #47's target is a lock
/// that costs a one-row INSERT at most 5%.)
#[derive(Debug)]
pub(crate) struct StoreLock {
    file: File,
    /// The lock file.
    path: PathBuf,
    /// The store it locks.
    store: PathBuf,
}

impl StoreLock {
    /// Takes the lock of the store at `store` (a directory that may not exist yet), waiting up
    /// to `timeout` for another writer to finish; after that, an error of `shown` naming the
    /// holder.
    pub(crate) async fn acquire(store: &Path, timeout: Duration, shown: &Shown) -> Result<Self> {
        let (dir, name) = beside(store, shown)?;
        let path = dir.join(format!(".{name}.lock"));
        let deadline = Instant::now() + timeout;
        loop {
            let (mut file, created) = open_lock_file(&path, &dir, shown)?;
            match file.try_lock() {
                // Removed by a holder that left no store, as this one waited: try the next.
                Ok(()) if is_removed(&file) => continue,
                Ok(()) => {
                    let mut left = [0u8; 1];
                    let named = file.read(&mut left).map_or(true, |n| n > 0);
                    if created || named {
                        // What a killed writer left is the holder's to put right first.
                        super::recover_killed_writes(&dir, &name);
                    }
                    write_holder(&file, named);
                    return Ok(Self {
                        file,
                        path,
                        store: store.to_path_buf(),
                    });
                }
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
}

impl Drop for StoreLock {
    fn drop(&mut self) {
        // Emptied, then unlocked as the file closes: the next holder finds no one named. A
        // write that left no store (it failed before its first commit) leaves nothing beside
        // it either: the file is removed while still locked, and a writer that waited on it
        // sees it gone and opens the next.
        if self.store.exists() {
            let _ = self.file.set_len(0);
        } else {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// The directory a store is in and its name there (neither created).
fn beside(store: &Path, shown: &Shown) -> Result<(PathBuf, String)> {
    let name = (store.file_name())
        .ok_or_else(|| shown.error("not a directory name"))?
        .to_string_lossy()
        .to_string();
    let dir = match store.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    Ok((dir, name))
}

/// Opens the lock file at `path`, creating it (and its directory `dir`) if missing; whether it
/// was created.
fn open_lock_file(path: &Path, dir: &Path, shown: &Shown) -> Result<(File, bool)> {
    let cannot =
        |e: std::io::Error| shown.error(format!("cannot open the lock {}: {e}", path.display()));
    let open = |create: bool| {
        OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(create)
            .open(path)
    };
    match open(false) {
        Ok(file) => return Ok((file, false)),
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(cannot(e)),
        Err(_) => {}
    }
    std::fs::create_dir_all(dir).map_err(|e| shown.error(format!("{}: {e}", dir.display())))?;
    match open(true) {
        Ok(file) => Ok((file, true)),
        // Another writer created it first.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            open(false).map(|f| (f, false)).map_err(cannot)
        }
        Err(e) => Err(cannot(e)),
    }
}

/// Writes who holds the lock into its file (emptied first if a killed writer's name is in
/// it), for a writer that waits in vain to name. Best effort.
fn write_holder(mut file: &File, named: bool) {
    use std::io::Seek;
    let text = super::holder_text();
    // An empty file was read to its end at 0: no need to go back.
    if named && file.set_len(0).and_then(|()| file.rewind()).is_err() {
        return;
    }
    let _ = file.write_all(text.as_bytes());
}

/// Whether the open `file` has been removed from its directory.
#[cfg(unix)]
fn is_removed(file: &File) -> bool {
    use std::os::unix::fs::MetadataExt;
    file.metadata().is_ok_and(|m| m.nlink() == 0)
}

#[cfg(not(unix))]
fn is_removed(_file: &File) -> bool {
    false
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A holder that leaves no store removes the lock file as it lets go; a writer that was
    /// waiting on that file sees it removed and takes the next one, so a third writer still
    /// finds the lock held (and no two hold it at once).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_lock_file_removed_under_a_waiter_is_not_held_twice() {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("new.zarr");
        let shown = Shown::new("new.zarr", &Default::default());
        let first = StoreLock::acquire(&store, Duration::ZERO, &shown)
            .await
            .unwrap();
        let waiter = {
            let (store, shown) = (store.clone(), shown.clone());
            tokio::spawn(async move {
                StoreLock::acquire(&store, Duration::from_secs(10), &shown).await
            })
        };
        tokio::time::sleep(RETRY * 3).await;
        drop(first);
        assert!(!dir.path().join(".new.zarr.lock").exists() || !waiter.is_finished());
        let second = waiter.await.unwrap().unwrap();
        let third = StoreLock::acquire(&store, Duration::ZERO, &shown).await;
        assert!(
            third
                .unwrap_err()
                .to_string()
                .contains("another writer holds it"),
            "two holders at once"
        );
        drop(second);
        assert!(!dir.path().join(".new.zarr.lock").exists());
    }

    /// The narrow case the test above rarely meets: a waiter that opened the file just before
    /// the holder removed it locks a removed file, and sees that it did.
    #[test]
    fn a_removed_lock_file_is_seen_as_removed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".x.zarr.lock");
        let file = File::create(&path).unwrap();
        assert!(!is_removed(&file));
        std::fs::remove_file(&path).unwrap();
        assert!(file.try_lock().is_ok());
        assert!(is_removed(&file));
    }
}
