//! A local store written as a hidden directory beside its target ([`AtomicDirectory`]) and
//! moved into place only when complete ([`LocalStage`]): a failed, cancelled or killed write
//! leaves no partial store and keeps the old one. A directory cannot replace another in one
//! rename, so the old store is first renamed aside, then removed once the new one is in place.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use bytes::Bytes;

use super::{Shown, Stage, StoreLock, beside_local, hidden_name, object_path};
use crate::error::{Result, ZarrError};

/// A temporary directory beside `target`, removed on drop unless [`AtomicDirectory::commit`]
/// moved it into place.
#[derive(Debug)]
struct AtomicDirectory {
    target: PathBuf,
    temp: PathBuf,
    committed: bool,
}

impl AtomicDirectory {
    /// Prepares to write the store `target`, creating its parent directory if needed (what
    /// killed writes to it left was put right as its lock was taken).
    fn new(target: &Path) -> Result<Self> {
        let error = |message: String| ZarrError::Write {
            target: target.display().to_string(),
            message,
        };
        let (dir, name) = beside_local(target, error)?;
        if target.is_file() {
            return Err(error("it is a file, not a store".into()));
        }
        let temp = dir.join(hidden_name(&name, "tmp"));
        std::fs::create_dir(&temp).map_err(|e| error(format!("{}: {e}", temp.display())))?;
        Ok(Self {
            target: target.to_path_buf(),
            temp,
            committed: false,
        })
    }

    /// The temporary directory to write.
    fn temp_path(&self) -> &Path {
        &self.temp
    }

    /// Moves the finished store into place; an existing store at the target is replaced: on
    /// Linux by exchanging the two directories in one step (`renameat2(RENAME_EXCHANGE)`), so
    /// there is no moment without a store; elsewhere the old one is renamed aside first, and put
    /// back by the next writer if this one is killed before the new one is in place.
    fn commit(mut self) -> Result<()> {
        let error = |what: &str, e: std::io::Error| ZarrError::Write {
            target: self.target.display().to_string(),
            message: format!("cannot {what}: {e}"),
        };
        let replacing = self.target.exists();
        super::pause_point("overwrite:staged");
        if replacing {
            match exchange(&self.temp, &self.target) {
                Ok(()) => {
                    // The hidden directory now holds the old store.
                    self.committed = true;
                    super::pause_point("overwrite:exchanged");
                    let _ = std::fs::remove_dir_all(&self.temp);
                    return Ok(());
                }
                Err(e) if exchange_unsupported(&e) => {}
                Err(e) => return Err(error("exchange the new store with the old one", e)),
            }
        }
        let old = self.temp.with_extension("old");
        if replacing {
            std::fs::rename(&self.target, &old)
                .map_err(|e| error("move the old store aside", e))?;
            super::pause_point("overwrite:aside");
        }
        if let Err(e) = std::fs::rename(&self.temp, &self.target) {
            // Put the old store back: nothing is lost.
            if replacing {
                let _ = std::fs::rename(&old, &self.target);
            }
            return Err(error("move the new store into place", e));
        }
        self.committed = true;
        if replacing {
            let _ = std::fs::remove_dir_all(&old);
        }
        Ok(())
    }
}

/// Exchanges the directories `a` and `b` in one step.
#[cfg(target_os = "linux")]
fn exchange(a: &Path, b: &Path) -> std::io::Result<()> {
    use rustix::fs::{CWD, RenameFlags, renameat_with};
    renameat_with(CWD, a, CWD, b, RenameFlags::EXCHANGE).map_err(std::io::Error::from)
}

#[cfg(not(target_os = "linux"))]
fn exchange(_a: &Path, _b: &Path) -> std::io::Result<()> {
    Err(std::io::ErrorKind::Unsupported.into())
}

/// Whether `e` says the OS or file system cannot exchange two directories (then they are
/// renamed one after the other).
fn exchange_unsupported(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::Unsupported
        || matches!(e.raw_os_error(), Some(code) if code == 22 || code == 38 || code == 95)
}

impl Drop for AtomicDirectory {
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_dir_all(&self.temp);
        }
    }
}

/// The staging of a local store: its files are written into an [`AtomicDirectory`] on the
/// blocking pool, which moves into place on commit.
#[derive(Debug)]
pub(crate) struct LocalStage {
    /// `None` once committed.
    directory: Option<AtomicDirectory>,
    shown: Shown,
    /// The store's lock, held until the stage is dropped (after its commit).
    _lock: StoreLock,
    /// Files being written on the blocking pool: a cancelled write waits for them before its
    /// directory is removed (else they would make it again).
    in_flight: Arc<AtomicUsize>,
}

/// One local file being written (counted in [`LocalStage::in_flight`] until dropped).
struct InFlight(Arc<AtomicUsize>);

impl InFlight {
    fn enter(count: &Arc<AtomicUsize>) -> Self {
        count.fetch_add(1, Ordering::SeqCst);
        Self(count.clone())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl LocalStage {
    /// Prepares to write the store `target` under its `lock`, creating its parent directory if
    /// needed; removes what killed writes to it left.
    pub(crate) fn new(target: &Path, lock: StoreLock) -> Result<Self> {
        Ok(Self {
            directory: Some(AtomicDirectory::new(target)?),
            _lock: lock,
            shown: Shown::new(target.display().to_string(), &Default::default()),
            in_flight: Arc::default(),
        })
    }

    /// The file of `key` in the hidden directory.
    fn file(&self, key: &str) -> Result<PathBuf> {
        let directory = (self.directory.as_ref())
            .ok_or_else(|| self.shown.error(format!("{key}: the store is committed")))?;
        let path = object_path(&Default::default(), key, &self.shown)?;
        Ok(path
            .parts()
            .fold(directory.temp_path().to_path_buf(), |p, part| {
                p.join(part.as_ref())
            }))
    }
}

#[async_trait]
impl Stage for LocalStage {
    async fn put(&self, key: &str, bytes: Bytes) -> Result<()> {
        // Written on the blocking pool and counted until done (object_store's local put would
        // go on writing after a cancel unseen).
        let file = self.file(key)?;
        let flight = InFlight::enter(&self.in_flight);
        let written = tokio::task::spawn_blocking(move || {
            let _flight = flight;
            if let Some(parent) = file.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::write(&file, &bytes)
        })
        .await;
        match written {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(self.shown.error(format!("{key}: {e}"))),
            Err(e) => Err(self.shown.error(format!("{key}: {e}"))),
        }
    }

    async fn replace(&self, key: &str, bytes: Bytes) -> Result<()> {
        // A new store: nothing outside the hidden directory is replaced.
        self.put(key, bytes).await
    }

    async fn get(&self, key: &str) -> Result<Option<Bytes>> {
        match std::fs::read(self.file(key)?) {
            Ok(bytes) => Ok(Some(bytes.into())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(self.shown.error(format!("{key}: {e}"))),
        }
    }

    async fn commit(&mut self) -> Result<()> {
        match self.directory.take() {
            Some(directory) => directory.commit(),
            None => Ok(()),
        }
    }

    async fn abort(&mut self) {
        // The hidden directory goes when the stage is dropped, once its files are written.
    }
}

impl Drop for LocalStage {
    /// The hidden directory goes with its [`AtomicDirectory`], once the files being written
    /// are done (at most 10 s).
    fn drop(&mut self) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while self.in_flight.load(Ordering::SeqCst) > 0 && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
    }
}
