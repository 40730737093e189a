//! The N-D layout (option `dimensions`): the named columns become coordinate arrays of their
//! distinct values, sorted, and every other column an N-D array over them.

use datafusion::execution::runtime_env::RuntimeEnv;
use datafusion::physical_plan::SendableRecordBatchStream;

use super::options::WriteOptions;
use crate::error::{Result, ZarrError};

/// Writes `stream` in the N-D layout.
pub(crate) async fn write_grid(
    _runtime: &RuntimeEnv,
    _stream: SendableRecordBatchStream,
    _location: &str,
    _options: &WriteOptions,
) -> Result<u64> {
    Err(ZarrError::Option(
        "the N-D layout (dimensions) is not written yet".into(),
    ))
}
