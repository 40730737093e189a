//! A store written as a hidden directory beside its target and moved into place only when
//! complete: a failed, cancelled or killed write leaves no partial store and keeps the old
//! one. A directory cannot replace another in one rename, so the old store is first renamed
//! aside, then removed once the new one is in place.

use std::path::{Path, PathBuf};

use crate::error::{Result, ZarrError};
use crate::export::orphans;

/// A temporary directory beside `target`, removed on drop unless [`AtomicDirectory::commit`]
/// moved it into place.
#[derive(Debug)]
pub(crate) struct AtomicDirectory {
    target: PathBuf,
    temp: PathBuf,
    committed: bool,
}

impl AtomicDirectory {
    /// Prepares to write the store `target`, creating its parent directory if needed; removes
    /// what killed writes to it left.
    pub(crate) fn new(target: &Path) -> Result<Self> {
        let error = |message: String| ZarrError::Write {
            target: target.display().to_string(),
            message,
        };
        let name = (target.file_name())
            .ok_or_else(|| error("not a directory name".into()))?
            .to_string_lossy()
            .to_string();
        let dir = match target.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        std::fs::create_dir_all(&dir).map_err(|e| error(format!("{}: {e}", dir.display())))?;
        if target.is_file() {
            return Err(error("it is a file, not a store".into()));
        }
        remove_orphans(&dir, &name);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let temp = dir.join(format!(".{name}.{}-{nanos}.tmp", std::process::id()));
        std::fs::create_dir(&temp).map_err(|e| error(format!("{}: {e}", temp.display())))?;
        Ok(Self {
            target: target.to_path_buf(),
            temp,
            committed: false,
        })
    }

    /// The temporary directory to write.
    pub(crate) fn temp_path(&self) -> &Path {
        &self.temp
    }

    /// Moves the finished store into place; an existing store at the target is replaced.
    pub(crate) fn commit(mut self) -> Result<()> {
        let error = |what: &str, e: std::io::Error| ZarrError::Write {
            target: self.target.display().to_string(),
            message: format!("cannot {what}: {e}"),
        };
        let old = self.temp.with_extension("old");
        let replacing = self.target.exists();
        if replacing {
            std::fs::rename(&self.target, &old)
                .map_err(|e| error("move the old store aside", e))?;
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

impl Drop for AtomicDirectory {
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_dir_all(&self.temp);
        }
    }
}

/// Removes the hidden `.{name}.{pid}-{n}.tmp` (and `.old`) directories of earlier writes to
/// `name` in `dir` whose process is gone (killed before it could clean up). Best effort.
fn remove_orphans(dir: &Path, name: &str) {
    for (path, after) in orphans(dir, name) {
        let ours = [".tmp", ".old"].iter().any(|ext| {
            after
                .strip_suffix(ext)
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        });
        if ours {
            let _ = std::fs::remove_dir_all(path);
        }
    }
}
