//! A Parquet file written beside its target under a temporary name and renamed into place only
//! when complete: a failed or cancelled export leaves no partial file and keeps the old one.

use std::path::{Path, PathBuf};

use datafusion::error::{DataFusionError, Result};

use super::{hidden_name, orphans};

/// A temporary file beside `target`, removed on drop unless [`AtomicTarget::commit`] renamed it
/// into place. Also removes the `<temp>#N` part files that object_store's local multipart
/// upload stages, whose own cleanup may not run before the process exits.
#[derive(Debug)]
pub struct AtomicTarget {
    target: PathBuf,
    temp: PathBuf,
    committed: bool,
}

impl AtomicTarget {
    /// Prepares to write `target`, creating its directory if needed.
    pub fn new(target: &Path) -> Result<Self> {
        let name = target
            .file_name()
            .ok_or_else(|| {
                DataFusionError::Execution(format!(
                    "cannot write {}: not a file name",
                    target.display()
                ))
            })?
            .to_string_lossy()
            .to_string();
        let dir = match target.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        // Like DataFusion's writer, create missing parent directories.
        if let Err(e) = std::fs::create_dir_all(&dir) {
            return Err(DataFusionError::Execution(format!(
                "cannot write {}: {} is not a directory and cannot be created ({e})",
                target.display(),
                dir.display()
            )));
        }
        if target.is_dir() {
            return Err(DataFusionError::Execution(format!(
                "cannot write {}: it is a directory",
                target.display()
            )));
        }
        // The temporary name keeps the target's extension, which DataFusion's COPY reads the
        // format from.
        let ext = target
            .extension()
            .map_or("parquet".to_string(), |e| e.to_string_lossy().to_string());
        let temp = dir.join(hidden_name(&name, &format!("tmp.{ext}")));
        remove_orphans(&dir, &name);
        Ok(Self {
            target: target.to_path_buf(),
            temp,
            committed: false,
        })
    }

    /// The temporary path to write.
    pub fn temp_path(&self) -> &Path {
        &self.temp
    }

    /// Moves the finished temporary file over the target, atomically.
    pub fn commit(mut self) -> Result<()> {
        let io = |what: &str, e: std::io::Error| {
            DataFusionError::Execution(format!("cannot {what} {}: {e}", self.target.display()))
        };
        std::fs::File::open(&self.temp)
            .and_then(|f| f.sync_all())
            .map_err(|e| io("finish", e))?;
        std::fs::rename(&self.temp, &self.target).map_err(|e| io("replace", e))?;
        if let Some(dir) = self.target.parent().filter(|p| !p.as_os_str().is_empty()) {
            // Make the rename durable; not every platform can open a directory.
            let _ = std::fs::File::open(dir).and_then(|d| d.sync_all());
        }
        self.committed = true;
        Ok(())
    }

    /// Removes the temporary file and any staged parts.
    pub fn clean_up(&self) {
        let _ = std::fs::remove_file(&self.temp);
        let (Some(dir), Some(name)) = (self.temp.parent(), self.temp.file_name()) else {
            return;
        };
        let prefix = format!("{}#", name.to_string_lossy());
        if let Ok(entries) = std::fs::read_dir(dir) {
            for e in entries.flatten() {
                if e.file_name().to_string_lossy().starts_with(&prefix) {
                    let _ = std::fs::remove_file(e.path());
                }
            }
        }
    }
}

impl Drop for AtomicTarget {
    fn drop(&mut self) {
        if !self.committed {
            self.clean_up();
        }
    }
}

/// Removes the temporaries an earlier export to `name` in `dir` left when its process was
/// killed (`SIGKILL`, an OOM kill, a power loss: no drop ran), and their `#N` part files: the
/// hidden `.{name}.{pid}-{n}.tmp.{ext}` whose process is gone. A temporary of a running
/// process (another export to the same target) is left alone. Best effort: what cannot be
/// listed or removed stays, and the export goes on.
fn remove_orphans(dir: &Path, name: &str) {
    for (path, after) in orphans(dir, name) {
        // `{n}.tmp.{ext}`, or a part file `…#N`.
        let is_temp = after
            .split_once(".tmp.")
            .is_some_and(|(n, _)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
        if is_temp {
            let _ = std::fs::remove_file(path);
        }
    }
}
