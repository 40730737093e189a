//! Times zarrs 0.23 reading every chunk of one Zarr array through an Icechunk repository
//! (`zarrs_icechunk`) against the same chunks in a plain Zarr V3 store (`zarrs_object_store` over
//! object_store's `LocalFileSystem`), on a tokio runtime of 2 worker threads.
//!
//! The two sides hold the same array (`benches/data/strings_20m.zarr` and
//! `benches/data/strings_20m.icechunk`, branch `main`): 20,000,000 `fixed_length_utf32` strings
//! of 64 bytes, in 200 chunks of 100,000, bytes + zstd level 3, byte for byte the same chunks.
//! Each run, for each side (the side that goes first alternates from run to run):
//!
//! - **decode**: open the array (the repository, a read-only session on the branch's tip and
//!   `Array::async_open`, or the object store and `Array::async_open`: timed apart), then
//!   `async_retrieve_chunk` every chunk, each as a tokio task, at most 4 in flight (2 a worker
//!   thread), and sum the decoded bytes (asserted: 20,000,000 × 64);
//! - **fetch**: open it again, then `async_retrieve_encoded_chunk` every chunk the same way, no
//!   decoding, and sum the encoded bytes (asserted the same on both sides).
//!
//! Every side opens its store anew for each phase, so icechunk's manifest is read within the
//! timed loop each time, as a first query would. Prints every run, the medians and the ratios
//! repository / plain.
//!
//! ```sh
//! cd benches/icechunk_zarrs
//! RUNS=5 cargo run --release -- ../data/strings_20m.zarr ../data/strings_20m.icechunk
//! ICECHUNK_REQUEST_BYTES=16777216 cargo run --release   # one read a chunk in the repository
//! ```

use std::collections::HashMap;
use std::error::Error;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use futures::{StreamExt, TryStreamExt, stream};
use icechunk::repository::VersionInfo;
use icechunk::storage::{ConcurrencySettings, Settings};
use object_store::local::LocalFileSystem;
use zarrs::array::{Array, ArrayBytes};
use zarrs::storage::AsyncReadableStorageTraits;
use zarrs_icechunk::AsyncIcechunkStore;
use zarrs_object_store::AsyncObjectStore;

type Result<T> = std::result::Result<T, Box<dyn Error + Send + Sync>>;
type DynArray = Array<dyn AsyncReadableStorageTraits>;

/// Chunks in flight at once: 2 a worker thread.
const IN_FLIGHT: usize = 4;
/// Tokio worker threads.
const WORKERS: usize = 2;
/// The decoded size of the whole array: 20,000,000 strings of 64 bytes.
const DECODED_BYTES: usize = 20_000_000 * 64;

#[derive(Clone, Copy, PartialEq)]
enum Side {
    Plain,
    Repo,
}

impl Side {
    fn name(self) -> &'static str {
        match self {
            Side::Plain => "plain",
            Side::Repo => "repository",
        }
    }
}

/// One phase's times, in seconds: opening the store, opening the array, reading the chunks.
#[derive(Clone, Copy, Default)]
struct Times {
    store: f64,
    array: f64,
    chunks: f64,
}

/// The repository's configuration: icechunk's own (`None`) unless `ICECHUNK_REQUEST_BYTES` is
/// set, which then replaces the local filesystem backend's `ideal_concurrent_request_size` (4 KiB
/// by default, with at most 5 requests an object: each chunk is read as 5 ranged reads).
fn repo_config() -> Result<Option<icechunk::RepositoryConfig>> {
    let Ok(bytes) = std::env::var("ICECHUNK_REQUEST_BYTES") else {
        return Ok(None);
    };
    let concurrency = ConcurrencySettings {
        max_concurrent_requests_for_object: None,
        ideal_concurrent_request_size: Some(bytes.parse()?),
    };
    let storage = Settings {
        concurrency: Some(concurrency),
        ..Default::default()
    };
    Ok(Some(icechunk::RepositoryConfig {
        storage: Some(storage),
        ..Default::default()
    }))
}

/// Opens the array of one side: returns it and the seconds spent opening the store and the array.
async fn open(side: Side, plain: &Path, repo: &Path) -> Result<(Arc<DynArray>, f64, f64)> {
    let start = Instant::now();
    let storage: Arc<dyn AsyncReadableStorageTraits> = match side {
        Side::Plain => Arc::new(AsyncObjectStore::new(LocalFileSystem::new_with_prefix(
            plain,
        )?)),
        Side::Repo => {
            let storage = icechunk::new_local_filesystem_storage(repo).await?;
            let repository =
                icechunk::Repository::open(repo_config()?, storage, HashMap::new()).await?;
            let session = repository
                .readonly_session(&VersionInfo::BranchTipRef("main".into()))
                .await?;
            Arc::new(AsyncIcechunkStore::new(session))
        }
    };
    let store = start.elapsed().as_secs_f64();
    let start = Instant::now();
    let array = Array::async_open(storage, "/").await?;
    Ok((Arc::new(array), store, start.elapsed().as_secs_f64()))
}

/// Reads every chunk of `array`, decoded or only fetched, each a tokio task, `IN_FLIGHT` at once;
/// returns the bytes summed.
async fn read_all(array: &Arc<DynArray>, decode: bool) -> Result<usize> {
    let chunks = array.chunk_grid_shape()[0];
    stream::iter(0..chunks)
        .map(|i| {
            let array = array.clone();
            tokio::spawn(async move {
                let len = if decode {
                    array
                        .async_retrieve_chunk::<ArrayBytes<'static>>(&[i])
                        .await?
                        .size()
                } else {
                    array
                        .async_retrieve_encoded_chunk(&[i])
                        .await?
                        .ok_or_else(|| format!("chunk {i} is missing"))?
                        .len()
                };
                Ok::<usize, Box<dyn Error + Send + Sync>>(len)
            })
        })
        .buffer_unordered(IN_FLIGHT)
        .map(|joined| joined?)
        .try_fold(0usize, |sum, len| async move { Ok(sum + len) })
        .await
}

/// One phase of one side: open, then read every chunk; returns the times and the bytes summed.
async fn phase(side: Side, decode: bool, plain: &Path, repo: &Path) -> Result<(Times, usize)> {
    let (array, store, array_open) = open(side, plain, repo).await?;
    let start = Instant::now();
    let bytes = read_all(&array, decode).await?;
    let chunks = start.elapsed().as_secs_f64();
    Ok((
        Times {
            store,
            array: array_open,
            chunks,
        },
        bytes,
    ))
}

fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn list(values: &[f64]) -> String {
    values
        .iter()
        .map(|v| format!("{v:.3}"))
        .collect::<Vec<_>>()
        .join(" ")
}

fn main() -> Result<()> {
    let here = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut args = std::env::args().skip(1);
    let plain = args
        .next()
        .map_or_else(|| here.join("../data/strings_20m.zarr"), PathBuf::from);
    let repo = args
        .next()
        .map_or_else(|| here.join("../data/strings_20m.icechunk"), PathBuf::from);
    let (plain, repo) = (plain.canonicalize()?, repo.canonicalize()?);
    let runs: usize = std::env::var("RUNS").ok().map_or(Ok(5), |s| s.parse())?;

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(WORKERS)
        .enable_all()
        .build()?;
    println!(
        "plain: {}\nrepository: {} (branch main, ICECHUNK_REQUEST_BYTES {})\n{runs} runs, {WORKERS} worker threads, \
         {IN_FLIGHT} chunks in flight; seconds",
        plain.display(),
        repo.display(),
        std::env::var("ICECHUNK_REQUEST_BYTES").unwrap_or_else(|_| "unset".into())
    );

    // [side][phase]: phase 0 decodes, 1 only fetches.
    let mut times: [[Vec<Times>; 2]; 2] = Default::default();
    let mut encoded = [0usize; 2];
    runtime.block_on(async {
        // One untimed pass of each side, so the files are in the page cache for both.
        for side in [Side::Plain, Side::Repo] {
            phase(side, false, &plain, &repo).await?;
        }
        for run in 0..runs {
            let order = if run % 2 == 0 {
                [Side::Plain, Side::Repo]
            } else {
                [Side::Repo, Side::Plain]
            };
            for decode in [true, false] {
                for side in order {
                    let (t, bytes) = phase(side, decode, &plain, &repo).await?;
                    let s = (side == Side::Repo) as usize;
                    if decode {
                        assert_eq!(bytes, DECODED_BYTES, "{} decoded bytes", side.name());
                    } else {
                        encoded[s] = bytes;
                    }
                    println!(
                        "run {run} {:<10} {:<6} store {:.4} array {:.4} chunks {:.3}",
                        side.name(),
                        if decode { "decode" } else { "fetch" },
                        t.store,
                        t.array,
                        t.chunks
                    );
                    times[s][!decode as usize].push(t);
                }
            }
        }
        Ok::<_, Box<dyn Error + Send + Sync>>(())
    })?;
    assert_eq!(
        encoded[0], encoded[1],
        "encoded bytes differ between the sides"
    );
    println!(
        "encoded bytes {} (both sides), decoded bytes {DECODED_BYTES}",
        encoded[0]
    );

    let mut medians = [[0f64; 2]; 2];
    for (p, phase) in ["decode", "fetch"].into_iter().enumerate() {
        for (s, side) in [Side::Plain, Side::Repo].into_iter().enumerate() {
            let t = &times[s][p];
            let chunks: Vec<f64> = t.iter().map(|t| t.chunks).collect();
            let store: Vec<f64> = t.iter().map(|t| t.store).collect();
            let array: Vec<f64> = t.iter().map(|t| t.array).collect();
            medians[s][p] = median(&chunks);
            println!(
                "{phase:<6} {:<10} median {:.3} s  runs [{}]  open: store {:.4} array {:.4}",
                side.name(),
                medians[s][p],
                list(&chunks),
                median(&store),
                median(&array)
            );
        }
        println!(
            "{phase:<6} ratio repository/plain {:.3}",
            medians[1][p] / medians[0][p]
        );
    }
    Ok(())
}
