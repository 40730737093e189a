//! The Ballista cluster (feature `ballista`): `zarr-sql scheduler`, `zarr-sql executor` and
//! the client session of `--scheduler df://…`, each with the library's codecs
//! (`datafusion_zarr::distributed`) set over Ballista's own. docs/scaling.md says how a scan
//! becomes tasks.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ballista::prelude::{SessionConfigExt, SessionContextExt};
use ballista_core::config::TaskSchedulingPolicy;
use ballista_executor::executor_process::{ExecutorProcessConfig, start_executor_process};
use ballista_scheduler::cluster::BallistaCluster;
use ballista_scheduler::config::SchedulerConfig;
use ballista_scheduler::scheduler_process::start_server;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::SessionStateBuilder;
use datafusion::prelude::{SessionConfig, SessionContext};
use datafusion_zarr::distributed::{ZarrLogicalCodec, ZarrPhysicalCodec};
use datafusion_zarr::{ReadZarrFunction, ZarrTableFactory};

/// `zarr-sql scheduler`'s arguments.
#[derive(Debug, clap::Args)]
pub struct SchedulerArgs {
    /// The address to listen on for clients and executors.
    #[arg(long, default_value = "127.0.0.1:50050")]
    bind: SocketAddr,
}

/// `zarr-sql executor`'s arguments.
#[derive(Debug, clap::Args)]
pub struct ExecutorArgs {
    /// The scheduler's address.
    #[arg(long, default_value = "127.0.0.1:50050")]
    scheduler: String,
    /// The address to serve this executor's shuffle data (Arrow Flight) on; other executors
    /// and clients connect to it, so it must be reachable from them.
    #[arg(long, default_value = "127.0.0.1:50051")]
    bind: SocketAddr,
    /// Tasks run at once (default: the number of cores).
    #[arg(long)]
    concurrent_tasks: Option<usize>,
    /// The directory for shuffle files (default: a new temporary directory).
    #[arg(long)]
    work_dir: Option<PathBuf>,
}

/// Executors ask the scheduler for work, so an executor needs one port and the scheduler
/// none towards it; both sides must agree on this.
const POLICY: TaskSchedulingPolicy = TaskSchedulingPolicy::PullStaged;

fn ballista_error(what: &str, e: impl std::fmt::Display) -> DataFusionError {
    DataFusionError::Execution(format!("{what}: {e}"))
}

/// Ballista's log lines (which tasks each process runs) on stderr: `info` unless RUST_LOG
/// says otherwise.
fn start_logging() {
    let env = env_logger::Env::default().default_filter_or("info");
    let _ = env_logger::Builder::from_env(env).try_init();
}

/// Runs a scheduler until the process is stopped.
pub async fn run_scheduler(args: SchedulerArgs) -> Result<()> {
    start_logging();
    let config = SchedulerConfig {
        bind_host: args.bind.ip().to_string(),
        bind_port: args.bind.port(),
        external_host: args.bind.ip().to_string(),
        scheduling_policy: POLICY,
        override_logical_codec: Some(Arc::new(ZarrLogicalCodec::default())),
        override_physical_codec: Some(Arc::new(ZarrPhysicalCodec::default())),
        ..Default::default()
    };
    config
        .validate()
        .map_err(|e| ballista_error("the scheduler's configuration", e))?;
    let cluster = BallistaCluster::new_from_config(&config)
        .await
        .map_err(|e| ballista_error("starting the scheduler", e))?;
    eprintln!("zarr-sql scheduler listening on {}", args.bind);
    start_server(cluster, args.bind, Arc::new(config))
        .await
        .map_err(|e| ballista_error("the scheduler stopped", e))
}

/// Runs an executor until the process is stopped.
pub async fn run_executor(args: ExecutorArgs) -> Result<()> {
    start_logging();
    let (scheduler_host, scheduler_port) = args
        .scheduler
        .rsplit_once(':')
        .and_then(|(host, port)| Some((host.to_string(), port.parse::<u16>().ok()?)))
        .ok_or_else(|| {
            DataFusionError::Plan(format!(
                "--scheduler '{}' is not of the form host:port",
                args.scheduler
            ))
        })?;
    let config = ExecutorProcessConfig {
        bind_host: args.bind.ip().to_string(),
        external_host: Some(args.bind.ip().to_string()),
        port: args.bind.port(),
        scheduler_host,
        scheduler_port,
        task_scheduling_policy: POLICY,
        vcores: args.concurrent_tasks.unwrap_or(0),
        work_dir: args.work_dir.map(|d| d.to_string_lossy().into_owned()),
        override_logical_codec: Some(Arc::new(ZarrLogicalCodec::default())),
        override_physical_codec: Some(Arc::new(ZarrPhysicalCodec::default())),
        ..Default::default()
    };
    wait_for_scheduler(&args.scheduler).await?;
    start_executor_process(Arc::new(config))
        .await
        .map_err(|e| ballista_error("the executor stopped", e))
}

/// How long an executor waits for its scheduler to accept connections: scripts, compose files
/// and our tests start both at once, and Ballista's executor tries to connect only once (its
/// own waiting, `scheduler_connect_timeout_seconds`, never ends in Ballista 55: it measures
/// the time elapsed since an instant taken anew on every check).
const SCHEDULER_WAIT: Duration = Duration::from_secs(30);

/// Returns once something accepts TCP connections at `scheduler` (`host:port`), or an error
/// after [`SCHEDULER_WAIT`].
async fn wait_for_scheduler(scheduler: &str) -> Result<()> {
    let deadline = Instant::now() + SCHEDULER_WAIT;
    loop {
        match tokio::net::TcpStream::connect(scheduler).await {
            Ok(_) => return Ok(()),
            Err(_) if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => {
                return Err(DataFusionError::Execution(format!(
                    "no scheduler accepts connections at {scheduler} after {} s: {e}",
                    SCHEDULER_WAIT.as_secs()
                )));
            }
        }
    }
}

/// A session whose queries run on the cluster of the scheduler at `url` (`df://host:port`):
/// `STORED AS ZARR` and `read_zarr` open tables here (reading their metadata), and plans
/// travel with the Zarr codecs.
pub async fn remote_session(
    url: &str,
    partitions: Option<usize>,
    batch_size: Option<usize>,
) -> Result<SessionContext> {
    let mut config = SessionConfig::new_with_ballista()
        .with_ballista_logical_extension_codec(Arc::new(ZarrLogicalCodec::default()))
        .with_ballista_physical_extension_codec(Arc::new(ZarrPhysicalCodec::default()))
        .with_ballista_job_name("zarr-sql");
    if let Some(p) = partitions {
        config = config.with_target_partitions(p.max(1));
    }
    if let Some(b) = batch_size {
        config = config.with_batch_size(b.max(1));
    }
    // SET zarr.<option> = '…' (datafusion_zarr::ZarrSessionOptions), as in a local session.
    config
        .options_mut()
        .extensions
        .insert(datafusion_zarr::ZarrSessionOptions::new());
    let state = SessionStateBuilder::new()
        .with_default_features()
        .with_config(config)
        .with_table_factory("ZARR".to_string(), Arc::new(ZarrTableFactory))
        .build();
    // Like the local session (and datafusion-cli), files can be queried by path.
    let ctx = SessionContext::remote_with_state(url, state)
        .await?
        .enable_url_table();
    ctx.register_udtf("read_zarr", Arc::new(ReadZarrFunction));
    Ok(ctx)
}
