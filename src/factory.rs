//! `CREATE EXTERNAL TABLE … STORED AS ZARR` and the `read_zarr(…)` table function.

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::catalog::{
    Session, TableFunctionArgs, TableFunctionImpl, TableProvider, TableProviderFactory,
};
use datafusion::common::{Result as DFResult, ScalarValue, plan_err};
use datafusion::execution::runtime_env::RuntimeEnv;
use datafusion::logical_expr::{CreateExternalTable, Expr};

use crate::error::ZarrError;
use crate::options::ZarrOptions;
use crate::provider::ZarrTable;
use crate::session_options::ZarrSessionOptions;

/// Creates [`ZarrTable`]s for `CREATE EXTERNAL TABLE t STORED AS ZARR LOCATION '…'
/// OPTIONS ('path' 'a/b', 'string_type' 'utf8view', …)`.
#[derive(Debug, Default)]
pub struct ZarrTableFactory;

#[async_trait]
impl TableProviderFactory for ZarrTableFactory {
    async fn create(
        &self,
        state: &dyn Session,
        cmd: &CreateExternalTable,
    ) -> DFResult<Arc<dyn TableProvider>> {
        // The session's `zarr.*` values, then the statement's options (which win).
        let mut options =
            ZarrSessionOptions::from_config(state.config_options())?.read_options()?;
        let mut pairs: Vec<(&String, &String)> = cmd.options.iter().collect();
        pairs.sort();
        for (key, value) in pairs {
            options.set(key, value)?;
        }
        let [location] = cmd.locations.as_slice() else {
            return plan_err!(
                "a Zarr table has exactly one LOCATION, got {}",
                cmd.locations.len()
            );
        };
        let table = ZarrTable::open(state.runtime_env(), location, options).await?;
        if !cmd.schema.fields().is_empty() {
            let declared: Vec<&str> = cmd
                .schema
                .fields()
                .iter()
                .map(|f| f.name().as_str())
                .collect();
            let actual: Vec<String> = table
                .schema()
                .fields()
                .iter()
                .map(|f| f.name().clone())
                .collect();
            if declared != actual.iter().map(String::as_str).collect::<Vec<_>>() {
                return plan_err!(
                    "the declared columns {declared:?} differ from the columns of {}: {actual:?}; leave the column list out to use the store's",
                    table.model().display
                );
            }
        }
        Ok(Arc::new(table))
    }
}

/// The table function `read_zarr('location' [, 'path' [, 'option', 'value', …]])`.
#[derive(Debug, Default)]
pub struct ReadZarrFunction;

impl TableFunctionImpl for ReadZarrFunction {
    fn call_with_args(&self, args: TableFunctionArgs) -> DFResult<Arc<dyn TableProvider>> {
        let strings = string_arguments(
            args.exprs(),
            "read_zarr('location' [, 'path' [, 'option', 'value', ...]])",
        )?;
        let defaults = ZarrSessionOptions::from_config(args.session().config_options())?;
        let (location, options) = Self::arguments_with(defaults.read_options()?, &strings)?;
        let runtime = args.session().runtime_env().clone();
        let table = open_blocking(runtime, location, options)?;
        Ok(Arc::new(table))
    }
}

/// A table function's arguments, each a string literal (`usage` shows the call).
pub(crate) fn string_arguments(exprs: &[Expr], usage: &str) -> DFResult<Vec<String>> {
    let name = usage.split('(').next().unwrap_or(usage);
    exprs
        .iter()
        .enumerate()
        .map(|(i, expr)| match expr {
            Expr::Literal(ScalarValue::Utf8(Some(s)), _)
            | Expr::Literal(ScalarValue::LargeUtf8(Some(s)), _)
            | Expr::Literal(ScalarValue::Utf8View(Some(s)), _) => Ok(s.clone()),
            other => plan_err!(
                "{name} argument {} must be a string literal, got {other}; usage: {usage}",
                i + 1
            ),
        })
        .collect()
}

impl ReadZarrFunction {
    /// The location and options that `read_zarr`'s string arguments give:
    /// `'location' [, 'path' [, 'option', 'value', …]]` (for callers that take the arguments
    /// elsewhere, as the Python package's `read_zarr` does).
    pub fn arguments(strings: &[String]) -> DFResult<(String, ZarrOptions)> {
        Self::arguments_with(ZarrOptions::default(), strings)
    }

    /// [`ReadZarrFunction::arguments`] starting from `defaults` (the session's, as
    /// [`ZarrSessionOptions::read_options`] gives them) rather than the options' own: the
    /// arguments win.
    pub fn arguments_with(
        defaults: ZarrOptions,
        strings: &[String],
    ) -> DFResult<(String, ZarrOptions)> {
        let Some((location, rest)) = strings.split_first() else {
            return plan_err!("usage: read_zarr('location' [, 'path' [, 'option', 'value', ...]])");
        };
        let mut options = defaults;
        let pairs = match rest.split_first() {
            Some((path, pairs)) => {
                options.path = path.clone();
                pairs
            }
            None => &[],
        };
        if pairs.len() % 2 != 0 {
            return plan_err!(
                "read_zarr options come in 'option', 'value' pairs; '{}' has no value",
                pairs[pairs.len() - 1]
            );
        }
        for pair in pairs.chunks_exact(2) {
            options.set(&pair[0], &pair[1])?;
        }
        Ok((location.clone(), options))
    }
}

/// DataFusion calls table functions synchronously, possibly from inside an async runtime
/// (even a current-thread one), so the metadata is loaded on a separate thread with its own
/// small runtime rather than by blocking the caller's runtime threads.
pub(crate) fn open_blocking(
    runtime: Arc<RuntimeEnv>,
    location: String,
    options: ZarrOptions,
) -> Result<ZarrTable, ZarrError> {
    run_blocking("loading metadata", || async move {
        ZarrTable::open(&runtime, &location, options).await
    })
}

/// Runs the future `work` makes to completion on a thread of its own with a small runtime (see
/// [`open_blocking`]); `doing` names it in the error of a thread that panicked.
pub(crate) fn run_blocking<T, F, W>(doing: &str, work: W) -> Result<T, ZarrError>
where
    T: Send,
    F: std::future::Future<Output = Result<T, ZarrError>>,
    W: FnOnce() -> F + Send,
{
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|e| ZarrError::internal(format!("starting a runtime: {e}")))?;
                rt.block_on(work())
            })
            .join()
            .unwrap_or_else(|_| {
                Err(ZarrError::internal(format!(
                    "{doing} (the thread panicked)"
                )))
            })
    })
}
