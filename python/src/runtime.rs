//! This library's own tokio runtime, and running our futures on it from any thread.
//!
//! The extension module carries its own copy of tokio, distinct from datafusion-python's: a
//! future of ours polled on the host's runtime would find no reactor for its I/O and timers.
//! Everything async of ours (opening a table, planning a scan, creating a table from
//! `CREATE EXTERNAL TABLE`, the batches of a stream) therefore runs on this runtime.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::OnceLock;

use tokio::runtime::{Builder, Handle, Runtime};

static RUNTIME: OnceLock<Result<Runtime, String>> = OnceLock::new();

/// The runtime (multi-threaded, one worker per core), started on first use.
fn runtime() -> Result<&'static Runtime, String> {
    RUNTIME
        .get_or_init(|| {
            Builder::new_multi_thread()
                .thread_name("datafusion-zarr")
                .enable_all()
                .build()
                .map_err(|e| format!("cannot start the datafusion-zarr runtime: {e}"))
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// A handle to the runtime, for datafusion-ffi to enter when it executes our plans.
pub fn handle() -> Result<Handle, String> {
    runtime().map(|rt| rt.handle().clone())
}

/// Runs `future` to completion on the runtime and returns its output; a panic in it becomes an
/// error rather than unwinding into the FFI.
///
/// Callers come from Python threads and from datafusion-python's runtime, a different copy of
/// tokio that ours cannot see, so blocking here is allowed. Should a caller ever be inside a
/// runtime of this copy (where tokio refuses to block), the wait moves to a scoped thread.
pub fn block_on<T: Send>(future: impl Future<Output = T> + Send) -> Result<T, String> {
    let rt = runtime()?;
    let panicked = |_| "a datafusion-zarr task panicked".to_string();
    if Handle::try_current().is_ok() {
        std::thread::scope(|scope| scope.spawn(|| rt.block_on(future)).join().map_err(panicked))
    } else {
        std::panic::catch_unwind(AssertUnwindSafe(|| rt.block_on(future))).map_err(panicked)
    }
}

/// Runs `future` as a task on the runtime while the calling Python thread waits without the
/// GIL, looking every 100 ms for a signal, as Python code does between bytecodes, then calling
/// `every_wait` with the GIL. On Ctrl-C (or any signal handler that raises), or an error from
/// `every_wait`, the task is cancelled and waited for, so that its clean-up (an export's
/// temporary file) is done before the exception reaches the caller.
pub fn run_interruptible<T: Send + 'static>(
    py: pyo3::Python<'_>,
    future: impl Future<Output = T> + Send + 'static,
    mut every_wait: impl FnMut(pyo3::Python<'_>) -> pyo3::PyResult<()>,
) -> pyo3::PyResult<Result<T, String>> {
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(e) => return Ok(Err(e)),
    };
    let mut task = rt.spawn(future);
    loop {
        let waited = py.detach(|| {
            block_on(async {
                tokio::time::timeout(std::time::Duration::from_millis(100), &mut task).await
            })
        });
        match waited {
            Err(e) => return Ok(Err(e)),
            Ok(Ok(Ok(output))) => return Ok(Ok(output)),
            Ok(Ok(Err(e))) if e.is_panic() => {
                return Ok(Err("a datafusion-zarr task panicked".to_string()));
            }
            Ok(Ok(Err(e))) => return Ok(Err(format!("a datafusion-zarr task failed: {e}"))),
            Ok(Err(_elapsed)) => {
                if let Err(raised) = py.check_signals().and_then(|()| every_wait(py)) {
                    task.abort();
                    let _ = py.detach(|| block_on(async { (&mut task).await }));
                    return Err(raised);
                }
            }
        }
    }
}
