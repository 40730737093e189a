//! A repository's history as tables: `icechunk_snapshots('repo' [, 'branch'])` (a branch's
//! ancestry, newest first, as `repo.ancestry()` gives it) and `icechunk_refs('repo')` (its
//! branches and tags with the snapshot each names).

use std::sync::Arc;

use arrow::array::{ArrayRef, RecordBatch, StringArray, TimestampMicrosecondArray};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use datafusion::catalog::{TableFunctionArgs, TableFunctionImpl, TableProvider};
use datafusion::common::{Result as DFResult, plan_err};
use datafusion::datasource::MemTable;
use datafusion::execution::runtime_env::RuntimeEnv;
use futures::TryStreamExt;
use icechunk::repository::VersionInfo;

use super::layout::{Layout, detect};
use super::repository::{OpenRepository, open, repository_error};
use crate::error::{Result, ZarrError};
use crate::factory::{run_blocking, string_arguments};
use crate::limits::Limits;
use crate::options::ZarrOptions;
use crate::store::ZarrStore;

const SNAPSHOTS_USAGE: &str =
    "icechunk_snapshots('repository' [, 'branch' [, 'option', 'value', ...]])";
const REFS_USAGE: &str = "icechunk_refs('repository' [, 'option', 'value', ...])";

/// The table function `icechunk_snapshots('repository' [, 'branch' [, 'option', 'value', …]])`:
/// one row per snapshot of the branch (default `main`), newest first: `id`, `parent_id`,
/// `written_at` (UTC), `message`, `metadata` (JSON). Options are the storage options of a
/// remote repository and the size limits.
#[derive(Debug, Default)]
pub struct IcechunkSnapshotsFunction;

/// The table function `icechunk_refs('repository' [, 'option', 'value', …])`: one row per
/// branch and tag: `kind` (`branch` or `tag`), `name`, `snapshot` (its id).
#[derive(Debug, Default)]
pub struct IcechunkRefsFunction;

impl TableFunctionImpl for IcechunkSnapshotsFunction {
    fn call_with_args(&self, args: TableFunctionArgs) -> DFResult<Arc<dyn TableProvider>> {
        let strings = string_arguments(args.exprs(), SNAPSHOTS_USAGE)?;
        let Some((location, rest)) = strings.split_first() else {
            return plan_err!("usage: {SNAPSHOTS_USAGE}");
        };
        let (branch, pairs) = match rest.split_first() {
            Some((branch, pairs)) => (branch.clone(), pairs),
            None => ("main".to_string(), rest),
        };
        let options = options_of(pairs, SNAPSHOTS_USAGE)?;
        let runtime = Arc::clone(args.session().runtime_env());
        let location = location.clone();
        let batch = run_blocking("reading a repository's history", || async move {
            icechunk_snapshots(&runtime, &location, &branch, &options).await
        })?;
        Ok(Arc::new(MemTable::try_new(
            batch.schema(),
            vec![vec![batch]],
        )?))
    }
}

impl TableFunctionImpl for IcechunkRefsFunction {
    fn call_with_args(&self, args: TableFunctionArgs) -> DFResult<Arc<dyn TableProvider>> {
        let strings = string_arguments(args.exprs(), REFS_USAGE)?;
        let Some((location, pairs)) = strings.split_first() else {
            return plan_err!("usage: {REFS_USAGE}");
        };
        let options = options_of(pairs, REFS_USAGE)?;
        let runtime = Arc::clone(args.session().runtime_env());
        let location = location.clone();
        let batch = run_blocking("reading a repository's refs", || async move {
            icechunk_refs(&runtime, &location, &options).await
        })?;
        Ok(Arc::new(MemTable::try_new(
            batch.schema(),
            vec![vec![batch]],
        )?))
    }
}

fn options_of(pairs: &[String], usage: &str) -> DFResult<ZarrOptions> {
    if !pairs.len().is_multiple_of(2) {
        return plan_err!("options come in 'option', 'value' pairs; usage: {usage}");
    }
    let mut options = ZarrOptions::default();
    for pair in pairs.chunks_exact(2) {
        if let [key, value] = pair {
            options.set(key, value)?;
        }
    }
    Ok(options)
}

/// The snapshots of `branch` of the repository at `location`, newest first, as
/// `icechunk_snapshots` gives them (`options`: storage options and size limits).
///
/// ```
/// # async fn demo() -> datafusion_zarr::Result<()> {
/// use datafusion::execution::runtime_env::RuntimeEnv;
/// use datafusion_zarr::{ZarrOptions, icechunk_snapshots};
///
/// let repository = "tests/data/icechunk/strings.icechunk";
/// let history =
///     icechunk_snapshots(&RuntimeEnv::default(), repository, "main", &ZarrOptions::default())
///         .await?;
/// assert_eq!(history.num_rows(), 4); // three commits and the repository's first snapshot
/// # Ok(()) }
/// # tokio::runtime::Runtime::new().unwrap().block_on(demo()).unwrap();
/// ```
pub async fn icechunk_snapshots(
    runtime: &RuntimeEnv,
    location: &str,
    branch: &str,
    options: &ZarrOptions,
) -> Result<RecordBatch> {
    let repository = open_at(runtime, location, options).await?;
    snapshots(&repository, branch).await
}

/// The branches and tags of the repository at `location` with the snapshot each names, as
/// `icechunk_refs` gives them.
pub async fn icechunk_refs(
    runtime: &RuntimeEnv,
    location: &str,
    options: &ZarrOptions,
) -> Result<RecordBatch> {
    let repository = open_at(runtime, location, options).await?;
    refs(&repository).await
}

/// The repository at `location`, or an error saying that it is none.
async fn open_at(
    runtime: &RuntimeEnv,
    location: &str,
    options: &ZarrOptions,
) -> Result<OpenRepository> {
    let store = ZarrStore::open(runtime, location, &options.storage)?;
    match detect(&store, Limits::of(options).metadata.bytes).await? {
        Layout::Repository { spec_version, seen } => {
            open(&store, spec_version, seen, options).await
        }
        Layout::Plain => Err(repository_error(
            &store,
            "there is no repository here (no `repo` file of Icechunk's, nor a \
             `refs/branch.main/ref.json`)",
        )),
    }
}

fn snapshots_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("id", DataType::Utf8, false),
        Field::new("parent_id", DataType::Utf8, true),
        Field::new(
            "written_at",
            DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
            false,
        ),
        Field::new("message", DataType::Utf8, false),
        Field::new("metadata", DataType::Utf8, false),
    ]))
}

async fn snapshots(repository: &OpenRepository, branch: &str) -> Result<RecordBatch> {
    let version = VersionInfo::BranchTipRef(branch.to_string());
    let doing = format!("the history of branch '{branch}'");
    let ancestry = repository
        .repository
        .ancestry(&version)
        .await
        .map_err(|e| repository.icechunk_error(&doing, &e))?;
    let infos: Vec<_> = ancestry
        .try_collect()
        .await
        .map_err(|e| repository.icechunk_error(&doing, &e))?;
    let metadata = infos
        .iter()
        .map(|info| {
            serde_json::to_string(&info.metadata)
                .map_err(|e| repository.error(format!("snapshot {}: its metadata: {e}", info.id)))
        })
        .collect::<Result<Vec<_>>>()?;
    let columns: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from_iter_values(
            infos.iter().map(|i| i.id.to_string()),
        )),
        Arc::new(StringArray::from_iter(
            infos
                .iter()
                .map(|i| i.parent_id.as_ref().map(|p| p.to_string())),
        )),
        Arc::new(
            TimestampMicrosecondArray::from_iter_values(
                infos.iter().map(|i| i.flushed_at.timestamp_micros()),
            )
            .with_timezone("UTC"),
        ),
        Arc::new(StringArray::from_iter_values(
            infos.iter().map(|i| i.message.as_str()),
        )),
        Arc::new(StringArray::from_iter_values(metadata)),
    ];
    RecordBatch::try_new(snapshots_schema(), columns)
        .map_err(|e| ZarrError::internal(format!("building {doing}: {e}")))
}

async fn refs(repository: &OpenRepository) -> Result<RecordBatch> {
    let repo = &repository.repository;
    let branches = repo
        .list_branches()
        .await
        .map_err(|e| repository.icechunk_error("listing its branches", &e))?;
    let tags = repo
        .list_tags()
        .await
        .map_err(|e| repository.icechunk_error("listing its tags", &e))?;
    let mut rows: Vec<(&str, String, String)> = Vec::new();
    for (kind, names) in [("branch", branches), ("tag", tags)] {
        for name in names {
            let id = match kind {
                "branch" => repo.lookup_branch(&name).await,
                _ => repo.lookup_tag(&name).await,
            };
            let id = id.map_err(|e| repository.icechunk_error(&format!("{kind} '{name}'"), &e))?;
            rows.push((kind, name, id.to_string()));
        }
    }
    let schema = Arc::new(Schema::new(vec![
        Field::new("kind", DataType::Utf8, false),
        Field::new("name", DataType::Utf8, false),
        Field::new("snapshot", DataType::Utf8, false),
    ]));
    let columns: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from_iter_values(rows.iter().map(|r| r.0))),
        Arc::new(StringArray::from_iter_values(
            rows.iter().map(|r| r.1.as_str()),
        )),
        Arc::new(StringArray::from_iter_values(
            rows.iter().map(|r| r.2.as_str()),
        )),
    ];
    RecordBatch::try_new(schema, columns)
        .map_err(|e| ZarrError::internal(format!("building the refs table: {e}")))
}
