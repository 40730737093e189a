//! `datafusion_zarr._internal`: the Python classes over the crate, and the PyCapsules through
//! which datafusion-python's `SessionContext` takes our table provider, table factory and
//! Arrow streams (DataFusion's FFI, datafusion-ffi 55, and the Arrow PyCapsule interface).

mod export;
mod provider;
mod runtime;
mod stream;

use std::ffi::CStr;
use std::path::PathBuf;
use std::ptr::NonNull;
use std::sync::Arc;

use arrow::ffi::FFI_ArrowSchema;
use arrow::ffi_stream::FFI_ArrowArrayStream;
use datafusion::catalog::TableProvider;
use datafusion::common::config::ExtensionOptions;
use datafusion::execution::TaskContext;
use datafusion::execution::runtime_env::RuntimeEnv;
use datafusion_ffi::config::extension_options::FFI_ExtensionOptions;
use datafusion_ffi::execution::FFI_TaskContextProvider;
use datafusion_ffi::proto::logical_extension_codec::FFI_LogicalExtensionCodec;
use datafusion_ffi::table_provider::FFI_TableProvider;
use datafusion_ffi::table_provider_factory::FFI_TableProviderFactory;
use pyo3::exceptions::{PyException, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyCapsule, PyDict, PyList, PyString, PyTuple};

use provider::{ExportedFactory, ExportedTable};

pyo3::create_exception!(
    datafusion_zarr,
    ZarrError,
    PyException,
    "A store, chunk or option that datafusion-zarr rejects; the message names the array, the chunk and the rule broken."
);

fn zarr_error(message: impl ToString) -> PyErr {
    ZarrError::new_err(message.to_string())
}

/// The logical extension codec datafusion-python passes to a capsule getter: a
/// `SessionContext` (which makes one) or, from `Schema.register_table` and table factories,
/// the codec's capsule itself.
fn logical_codec(session: &Bound<'_, PyAny>) -> PyResult<FFI_LogicalExtensionCodec> {
    let capsule = if session.hasattr("__datafusion_logical_extension_codec__")? {
        session.call_method0("__datafusion_logical_extension_codec__")?
    } else {
        session.clone()
    };
    let capsule = capsule.cast::<PyCapsule>().map_err(|_| {
        PyTypeError::new_err(
            "expected a datafusion SessionContext or a logical extension codec capsule",
        )
    })?;
    let pointer: NonNull<FFI_LogicalExtensionCodec> = capsule
        .pointer_checked(Some(c"datafusion_logical_extension_codec"))?
        .cast();
    // SAFETY: the capsule's name says it holds an FFI_LogicalExtensionCodec, which the capsule
    // keeps alive while we clone it (datafusion-python's own reading of these capsules).
    Ok(unsafe { pointer.as_ref() }.clone())
}

/// The `zarr.*` session defaults of a datafusion-python `SessionContext`, read from the
/// configuration its `__datafusion_task_context_provider__` carries across datafusion-ffi: the
/// values that `SET zarr.<option> = '…'` gave in a session whose `SessionConfig` holds
/// [`PyZarrSessionOptions`] (checked here: datafusion-ffi's options keep any value set).
fn session_defaults(session: &Bound<'_, PyAny>) -> PyResult<datafusion_zarr::ZarrSessionOptions> {
    let capsule = session.call_method0("__datafusion_task_context_provider__")?;
    let capsule = capsule
        .cast::<PyCapsule>()
        .map_err(|_| PyTypeError::new_err("expected a datafusion SessionContext for session"))?;
    let pointer: NonNull<FFI_TaskContextProvider> = capsule
        .pointer_checked(Some(c"datafusion_task_context_provider"))?
        .cast();
    // SAFETY: the capsule's name says it holds an FFI_TaskContextProvider, which the capsule
    // keeps alive while we ask it for a task context (datafusion-ffi's foreign side).
    let provider = unsafe { pointer.as_ref() };
    let task: Arc<TaskContext> = provider.try_into().map_err(zarr_error)?;
    datafusion_zarr::ZarrSessionOptions::from_config(task.session_config().options())
        .map_err(zarr_error)
}

fn capsule<'py, T: 'static + Send>(
    py: Python<'py>,
    value: T,
    name: &'static CStr,
) -> PyResult<Bound<'py, PyCapsule>> {
    PyCapsule::new_with_value(py, value, name)
}

/// `provider` for datafusion-python's `SessionContext.register_table` (and the tables table
/// functions return), through DataFusion's FFI with filter pushdown, on our runtime.
fn provider_capsule<'py>(
    py: Python<'py>,
    session: &Bound<'py, PyAny>,
    provider: Arc<dyn TableProvider + Send>,
) -> PyResult<Bound<'py, PyCapsule>> {
    let codec = logical_codec(session)?;
    let handle = runtime::handle().map_err(zarr_error)?;
    let ffi = FFI_TableProvider::new_with_ffi_codec(provider, true, Some(handle), codec);
    capsule(py, ffi, c"datafusion_table_provider")
}

/// One keyword option as the string the table options take: `True` → `"true"`, a list of
/// names → `"a,b"`, numbers as written.
fn option_value(key: &str, value: &Bound<'_, PyAny>) -> PyResult<String> {
    if let Ok(b) = value.cast::<PyBool>() {
        return Ok(b.is_true().to_string());
    }
    if let Ok(s) = value.cast::<PyString>() {
        return Ok(s.to_str()?.to_string());
    }
    if value.is_instance_of::<PyList>() || value.is_instance_of::<PyTuple>() {
        let names: Vec<String> = value.extract()?;
        return Ok(names.join(","));
    }
    if let Ok(n) = value.extract::<i64>() {
        return Ok(n.to_string());
    }
    Err(PyTypeError::new_err(format!(
        "option {key}: expected a str, bool, int or list of str, got {}",
        value.get_type().name()?
    )))
}

/// A Zarr array or group as a DataFusion table (see the package's docstrings).
#[pyclass(frozen, name = "ZarrTable", module = "datafusion_zarr")]
struct PyZarrTable {
    table: datafusion_zarr::ZarrTable,
}

#[pymethods]
impl PyZarrTable {
    #[new]
    #[pyo3(signature = (location, path=None, *, storage_options=None, **options))]
    fn new(
        py: Python<'_>,
        location: String,
        path: Option<String>,
        storage_options: Option<&Bound<'_, PyDict>>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let mut pairs: Vec<(String, String)> = Vec::new();
        if let Some(path) = path {
            pairs.push(("path".into(), path));
        }
        for dict in [options, storage_options].into_iter().flatten() {
            for (key, value) in dict.iter() {
                let key: String = key.extract()?;
                let value = option_value(&key, &value)?;
                pairs.push((key, value));
            }
        }
        let options = datafusion_zarr::ZarrOptions::from_pairs(pairs).map_err(zarr_error)?;
        Self::open(py, location, options)
    }

    /// The table `read_zarr('location' [, 'path' [, 'option', 'value', …]])` names, from its
    /// arguments as strings (the package's `read_zarr` table function), starting from the
    /// `zarr.*` defaults of `session` (the calling `SessionContext`) when given.
    #[staticmethod]
    #[pyo3(signature = (arguments, session=None))]
    fn _from_read_zarr(
        py: Python<'_>,
        arguments: Vec<String>,
        session: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let defaults = match session {
            Some(session) => session_defaults(session)?
                .read_options()
                .map_err(zarr_error)?,
            None => datafusion_zarr::ZarrOptions::default(),
        };
        let (location, options) =
            datafusion_zarr::ReadZarrFunction::arguments_with(defaults, &arguments)
                .map_err(zarr_error)?;
        Self::open(py, location, options)
    }

    /// The store's URL (a local path becomes a `file://` URL).
    #[getter]
    fn location(&self) -> &str {
        self.table.location()
    }

    /// The node's path inside the store (`""` for the root).
    #[getter]
    fn path(&self) -> &str {
        self.table.path()
    }

    /// The number of rows.
    #[getter]
    fn num_rows(&self) -> Option<u64> {
        self.table.num_rows()
    }

    /// The index columns (element indexes along a dimension).
    #[getter]
    fn index_columns(&self) -> Vec<String> {
        self.table
            .index_columns()
            .into_iter()
            .map(String::from)
            .collect()
    }

    fn __repr__(&self) -> String {
        format!(
            "ZarrTable(location={:?}, path={:?}, columns={:?})",
            self.table.location(),
            self.table.path(),
            self.table
                .schema()
                .fields()
                .iter()
                .map(|f| f.name().as_str())
                .collect::<Vec<_>>()
        )
    }

    /// Writes the rows to the Parquet file `path` with the export's writer (see the stub's
    /// docstring); returns the number of rows written.
    #[pyo3(signature = (
        path, *, columns=None, r#where=None, compression="zstd", compression_level=None,
        row_group_size=None, threads=None, progress=None
    ))]
    #[allow(clippy::too_many_arguments)]
    fn to_parquet(
        &self,
        py: Python<'_>,
        path: PathBuf,
        columns: Option<Vec<String>>,
        r#where: Option<String>,
        compression: &str,
        compression_level: Option<u32>,
        row_group_size: Option<usize>,
        threads: Option<usize>,
        progress: Option<Bound<'_, PyAny>>,
    ) -> PyResult<u64> {
        if let Some(callback) = progress.as_ref().filter(|c| !c.is_callable()) {
            return Err(PyTypeError::new_err(format!(
                "progress must be a callable taking (rows_read, total_rows), not {}",
                callback.get_type().name()?
            )));
        }
        for (name, value) in [("row_group_size", row_group_size), ("threads", threads)] {
            if value == Some(0) {
                return Err(PyValueError::new_err(format!(
                    "{name} must be at least 1, not 0"
                )));
            }
        }
        let request = export::ToParquet {
            path,
            columns: columns.unwrap_or_default(),
            predicate: r#where,
            compression: compression.parse().map_err(zarr_error)?,
            compression_level,
            row_group_size,
            threads,
        };
        // The scan counts rows as it reads them; the callback sees the counts on this thread,
        // with the GIL, between the waits for signals, when they have changed, and once more
        // at the end. An exception it raises cancels the export like Ctrl-C.
        let counter = Arc::new(datafusion_zarr::ProgressCounter::new());
        let table = match progress {
            Some(_) => self.table.clone().with_progress(counter.clone()),
            None => self.table.clone(),
        };
        let mut reported = None;
        let mut report = |_: Python<'_>| -> PyResult<()> {
            let now = counter.snapshot();
            if let Some(callback) = progress.as_ref().filter(|_| reported != Some(now)) {
                reported = Some(now);
                callback.call1((now.rows, now.total_rows))?;
            }
            Ok(())
        };
        let rows = runtime::run_interruptible(py, request.run(table), &mut report)?
            .map_err(zarr_error)?
            .map_err(|e| zarr_error(datafusion_zarr::error_message(&e)))?;
        report(py)?;
        Ok(rows)
    }

    /// The table for datafusion-python's `SessionContext.register_table`, with filter pushdown.
    fn __datafusion_table_provider__<'py>(
        &self,
        py: Python<'py>,
        session: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        provider_capsule(py, session, Arc::new(ExportedTable(self.table.clone())))
    }

    /// The table's Arrow schema (Arrow PyCapsule interface: `pyarrow.schema(table)`).
    fn __arrow_c_schema__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyCapsule>> {
        let schema = FFI_ArrowSchema::try_from(self.table.schema().as_ref())
            .map_err(|e| zarr_error(format!("exporting the schema: {e}")))?;
        capsule(py, schema, c"arrow_schema")
    }

    /// Every row, streamed (Arrow PyCapsule interface: `pyarrow.table(table)`,
    /// `polars.from_arrow(...)`). `requested_schema` is not supported and is ignored, as the
    /// interface allows.
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let _ = requested_schema;
        let table = self.table.clone();
        let reader = py
            .detach(|| stream::ScanReader::start(table))
            .map_err(zarr_error)?;
        let stream = FFI_ArrowArrayStream::new(Box::new(reader));
        capsule(py, stream, c"arrow_array_stream")
    }
}

impl PyZarrTable {
    /// Opens the table on our runtime, without the GIL. The table owns its store: a foreign
    /// session's runtime has none of the host's.
    fn open(
        py: Python<'_>,
        location: String,
        options: datafusion_zarr::ZarrOptions,
    ) -> PyResult<Self> {
        let table = py
            .detach(|| {
                runtime::block_on(datafusion_zarr::ZarrTable::open(
                    &RuntimeEnv::default(),
                    &location,
                    options,
                ))
            })
            .map_err(zarr_error)?
            .map_err(zarr_error)?;
        Ok(Self { table })
    }
}

/// `CREATE EXTERNAL TABLE … STORED AS ZARR` for `SessionContext.register_table_factory`.
#[pyclass(frozen, name = "ZarrTableFactory", module = "datafusion_zarr")]
struct PyZarrTableFactory;

#[pymethods]
impl PyZarrTableFactory {
    #[new]
    fn new() -> Self {
        Self
    }

    fn __datafusion_table_provider_factory__<'py>(
        &self,
        py: Python<'py>,
        codec: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let codec = logical_codec(codec)?;
        let handle = runtime::handle().map_err(zarr_error)?;
        let ffi = FFI_TableProviderFactory::new_with_ffi_codec(
            Arc::new(ExportedFactory),
            Some(handle),
            codec,
        );
        capsule(py, ffi, c"datafusion_table_provider_factory")
    }
}

/// Writes the Arrow C stream in `stream` (a PyCapsule from `__arrow_c_stream__`) as a Zarr
/// store at `location` (a path or URL), with `options` as `COPY … STORED AS ZARR` takes them,
/// over the `zarr.*` defaults of `session` when given (as `COPY` starts from its session's);
/// returns the rows written. datafusion-python cannot register a file format for `COPY`
/// across its FFI, so the package writes through this instead.
#[pyfunction]
#[pyo3(signature = (stream, location, options, session=None))]
fn _write_zarr(
    py: Python<'_>,
    stream: &Bound<'_, PyCapsule>,
    location: String,
    options: Vec<(String, String)>,
    session: Option<&Bound<'_, PyAny>>,
) -> PyResult<u64> {
    let defaults = match session {
        Some(session) => session_defaults(session)?,
        None => datafusion_zarr::ZarrSessionOptions::new(),
    };
    let given = options.iter().map(|(k, v)| (k.as_str(), v.as_str()));
    let pairs = defaults.write_pairs().into_iter().chain(given);
    let options = datafusion_zarr::write::WriteOptions::from_pairs(pairs).map_err(zarr_error)?;
    let pointer: NonNull<FFI_ArrowArrayStream> =
        stream.pointer_checked(Some(c"arrow_array_stream"))?.cast();
    // SAFETY: the capsule's name says it holds an FFI_ArrowArrayStream (the Arrow PyCapsule
    // interface); `from_raw` moves it out and leaves a released stream in its place.
    let ffi = unsafe { FFI_ArrowArrayStream::from_raw(pointer.as_ptr()) };
    let reader = arrow::ffi_stream::ArrowArrayStreamReader::try_new(ffi).map_err(zarr_error)?;
    let schema = arrow::array::RecordBatchReader::schema(&reader);
    // The producer may need the GIL to make its batches (a datafusion-python DataFrame runs
    // its plan on its own runtime): released while writing.
    let written = py.detach(move || {
        let batches = reader.map(|b| b.map_err(datafusion::error::DataFusionError::from));
        let stream = datafusion::physical_plan::stream::RecordBatchStreamAdapter::new(
            schema,
            futures::stream::iter(batches),
        );
        runtime::block_on(async move {
            datafusion_zarr::write::write_zarr(Box::pin(stream), &location, &options).await
        })
    });
    written
        .map_err(zarr_error)?
        .map_err(|e| zarr_error(e.to_string()))
}

/// The `zarr.*` session options for datafusion-python: `SessionConfig().with_extension(
/// ZarrSessionOptions(**defaults))` makes a session in which `SET zarr.<option> = '…'` works
/// (datafusion-ffi's extension options, which keep every `zarr.*` value set), read by
/// `read_zarr`, `CREATE EXTERNAL TABLE … STORED AS ZARR` and `write_zarr(…, session=ctx)`.
#[pyclass(frozen, name = "ZarrSessionOptions", module = "datafusion_zarr")]
struct PyZarrSessionOptions {
    options: datafusion_zarr::ZarrSessionOptions,
}

#[pymethods]
impl PyZarrSessionOptions {
    #[new]
    #[pyo3(signature = (**defaults))]
    fn new(defaults: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let mut options = datafusion_zarr::ZarrSessionOptions::new();
        for (key, value) in defaults.into_iter().flat_map(|d| d.iter()) {
            let key: String = key.extract()?;
            let value = option_value(&key, &value)?;
            options.set(&key, &value).map_err(zarr_error)?;
        }
        Ok(Self { options })
    }

    /// The options set, for `SessionConfig.with_extension`: datafusion-ffi's extension options
    /// holding `zarr.<option>` for each.
    fn __datafusion_extension_options__<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let mut ffi = FFI_ExtensionOptions::default();
        for entry in ExtensionOptions::entries(&self.options) {
            if let Some(value) = entry.value {
                ffi.set(&entry.key, &value).map_err(zarr_error)?;
            }
        }
        capsule(py, ffi, c"datafusion_extension_options")
    }

    fn __repr__(&self) -> String {
        let set: Vec<String> = ExtensionOptions::entries(&self.options)
            .into_iter()
            .filter_map(|e| {
                let value = e.value?.replace('\\', "\\\\").replace('\'', "\\'");
                Some(format!("{}='{value}'", e.key.strip_prefix("zarr.")?))
            })
            .collect();
        format!("ZarrSessionOptions({})", set.join(", "))
    }
}

/// A table of an Icechunk repository's history (`icechunk_snapshots`, `icechunk_refs`): an
/// Arrow stream (`pyarrow.table(...)`) and a table for datafusion-python's sessions.
#[pyclass(frozen, name = "IcechunkHistory", module = "datafusion_zarr")]
struct PyIcechunkHistory {
    batch: arrow::array::RecordBatch,
}

#[pymethods]
impl PyIcechunkHistory {
    fn __datafusion_table_provider__<'py>(
        &self,
        py: Python<'py>,
        session: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let table = datafusion::datasource::MemTable::try_new(
            self.batch.schema(),
            vec![vec![self.batch.clone()]],
        )
        .map_err(zarr_error)?;
        provider_capsule(py, session, Arc::new(table))
    }

    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let _ = requested_schema;
        let schema = self.batch.schema();
        let reader = arrow::array::RecordBatchIterator::new([Ok(self.batch.clone())], schema);
        let stream = FFI_ArrowArrayStream::new(Box::new(reader));
        capsule(py, stream, c"arrow_array_stream")
    }
}

/// `icechunk_snapshots` (`kind` "snapshots", with `branch`) or `icechunk_refs` ("refs") of the
/// repository at `location`, with `options` as `read_zarr` takes them.
#[pyfunction]
#[pyo3(signature = (kind, location, branch, options))]
fn _icechunk_history(
    py: Python<'_>,
    kind: &str,
    location: String,
    branch: Option<String>,
    options: Vec<(String, String)>,
) -> PyResult<PyIcechunkHistory> {
    let options = datafusion_zarr::ZarrOptions::from_pairs(options).map_err(zarr_error)?;
    let snapshots = kind == "snapshots";
    let batch = py
        .detach(|| {
            runtime::block_on(async move {
                let runtime = RuntimeEnv::default();
                if snapshots {
                    let branch = branch.as_deref().unwrap_or("main");
                    datafusion_zarr::icechunk_snapshots(&runtime, &location, branch, &options).await
                } else {
                    datafusion_zarr::icechunk_refs(&runtime, &location, &options).await
                }
            })
        })
        .map_err(zarr_error)?
        .map_err(zarr_error)?;
    Ok(PyIcechunkHistory { batch })
}

#[pymodule]
fn _internal(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_write_zarr, m)?)?;
    m.add_function(wrap_pyfunction!(_icechunk_history, m)?)?;
    m.add_class::<PyIcechunkHistory>()?;
    m.add_class::<PyZarrTable>()?;
    m.add_class::<PyZarrTableFactory>()?;
    m.add_class::<PyZarrSessionOptions>()?;
    m.add("ZarrError", m.py().get_type::<ZarrError>())?;
    // The DataFusion this module was built with; `__init__.py` refuses another major version.
    m.add("DATAFUSION_VERSION", datafusion::DATAFUSION_VERSION)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
