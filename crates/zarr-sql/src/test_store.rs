//! A test-only object store for local files that serves one read at a time, each after a
//! delay, so that tests of cancellation (Ctrl-C during an export) and of a store changing
//! mid-scan do not depend on timing: however many fetches the scan keeps in flight, N reads
//! take N delays. It is installed only when `ZARR_SQL_TEST_READ_DELAY_MS` is set, once per session;
//! the library knows nothing of it.

use std::fmt;
use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use datafusion::error::{DataFusionError, Result};
use datafusion::prelude::SessionContext;
use futures::stream::BoxStream;
use object_store::local::LocalFileSystem;
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMultipartOptions, PutOptions, PutPayload, PutResult,
};

/// The environment variable that turns the delay on (milliseconds per read).
const DELAY_VARIABLE: &str = "ZARR_SQL_TEST_READ_DELAY_MS";

/// Registers the delaying store for `file://` in `ctx` when the variable is set.
pub fn install(ctx: &SessionContext) -> Result<()> {
    let Some(value) = std::env::var_os(DELAY_VARIABLE) else {
        return Ok(());
    };
    let millis: u64 = value.to_str().and_then(|v| v.parse().ok()).ok_or_else(|| {
        DataFusionError::Configuration(format!("{DELAY_VARIABLE} must be a number"))
    })?;
    let url = url::Url::parse("file://").map_err(|e| DataFusionError::External(Box::new(e)))?;
    ctx.register_object_store(
        &url,
        Arc::new(DelayedStore {
            inner: LocalFileSystem::new(),
            delay: Duration::from_millis(millis),
            one_at_a_time: tokio::sync::Mutex::new(()),
        }),
    );
    Ok(())
}

/// Local files, read one at a time, each after `delay`.
#[derive(Debug)]
struct DelayedStore {
    inner: LocalFileSystem,
    delay: Duration,
    /// Held for the delay and the read.
    one_at_a_time: tokio::sync::Mutex<()>,
}

impl fmt::Display for DelayedStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Delayed({})", self.inner)
    }
}

#[async_trait]
impl ObjectStore for DelayedStore {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> object_store::Result<PutResult> {
        self.inner.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> object_store::Result<Box<dyn MultipartUpload>> {
        self.inner.put_multipart_opts(location, opts).await
    }

    async fn get_opts(
        &self,
        location: &Path,
        options: GetOptions,
    ) -> object_store::Result<GetResult> {
        let _turn = self.one_at_a_time.lock().await;
        tokio::time::sleep(self.delay).await;
        self.inner.get_opts(location, options).await
    }

    async fn get_ranges(
        &self,
        location: &Path,
        ranges: &[Range<u64>],
    ) -> object_store::Result<Vec<Bytes>> {
        let _turn = self.one_at_a_time.lock().await;
        tokio::time::sleep(self.delay).await;
        self.inner.get_ranges(location, ranges).await
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, object_store::Result<Path>>,
    ) -> BoxStream<'static, object_store::Result<Path>> {
        self.inner.delete_stream(locations)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        self.inner.list(prefix)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> object_store::Result<ListResult> {
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(
        &self,
        from: &Path,
        to: &Path,
        options: CopyOptions,
    ) -> object_store::Result<()> {
        self.inner.copy_opts(from, to, options).await
    }
}
