//! A write's [`Stage`] in an Icechunk repository: every object goes into a writable session
//! of a branch ([`RepositoryWrite`]), committed once at the end; a failed write commits
//! nothing and removes the chunk objects it made.

use async_trait::async_trait;
use bytes::Bytes;

use super::commit::RepositoryWrite;
use crate::error::Result;
use crate::staging::{Shown, Stage, delete_in_background};
use crate::store::ZarrStore;

/// The message of a commit that the write options do not name.
pub(crate) const DEFAULT_MESSAGE: &str = "COPY by datafusion-zarr";

/// A session of a branch, committed with `message` on success.
#[derive(Debug)]
pub(crate) struct RepositoryStage {
    write: RepositoryWrite,
    message: String,
    done: bool,
}

impl RepositoryStage {
    /// The stage of the session `write`, committed with `message`.
    pub(crate) fn new(write: RepositoryWrite, message: String) -> Self {
        Self {
            write,
            message,
            done: false,
        }
    }

    /// The stage of a write into the repository at `store`, on `branch` (default `main`), or
    /// `None` if no repository is there. Zarr V2 (`zarr_v2`) cannot go in; what the branch
    /// holds is replaced only if `overwrite`. Refusals are errors of the write `shown`.
    pub(crate) async fn open(
        store: &ZarrStore,
        branch: Option<&str>,
        message: Option<String>,
        (zarr_v2, overwrite): (bool, bool),
        shown: &Shown,
    ) -> Result<Option<Self>> {
        let branch = branch.unwrap_or("main");
        let Some(write) = RepositoryWrite::open(store, branch).await? else {
            return Ok(None);
        };
        if zarr_v2 {
            return Err(shown
                .error("an Icechunk repository holds Zarr V3 only (zarr_format 3, the default)"));
        }
        if !write.is_empty().await? {
            if !overwrite {
                return Err(shown.error(format!(
                    "branch '{branch}' of this Icechunk repository holds a Zarr store (give \
                     mode 'overwrite' to replace it in a new snapshot)"
                )));
            }
            write.clear().await?;
        }
        let message = message.unwrap_or_else(|| DEFAULT_MESSAGE.to_string());
        Ok(Some(Self::new(write, message)))
    }
}

#[async_trait]
impl Stage for RepositoryStage {
    async fn put(&self, key: &str, bytes: Bytes) -> Result<()> {
        self.write.put(key, bytes).await
    }

    async fn replace(&self, key: &str, bytes: Bytes) -> Result<()> {
        self.write.put(key, bytes).await
    }

    async fn get(&self, key: &str) -> Result<Option<Bytes>> {
        self.write.get(key).await
    }

    async fn commit(&mut self) -> Result<()> {
        // On failure the chunk objects are removed by the abort that follows.
        self.write.commit(&self.message).await?;
        self.done = true;
        Ok(())
    }

    async fn abort(&mut self) {
        self.done = true;
        // Nothing was committed; the chunk objects no snapshot refers to go.
        self.write.abort().await;
    }

    fn is_repository(&self) -> bool {
        true
    }
}

impl Drop for RepositoryStage {
    /// A write dropped unfinished (cancelled) removes the chunk objects it made in the
    /// background, best effort.
    fn drop(&mut self) {
        if self.done {
            return;
        }
        delete_in_background(self.write.objects(), self.write.made());
    }
}
