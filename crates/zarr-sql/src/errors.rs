//! Errors as `zarr-sql` prints them: the message `datafusion_zarr::error_message` gives, with the
//! wrappers a cluster task's failure arrives in taken off.

use datafusion::error::DataFusionError;

/// Layers of the Debug text Ballista sends for an executor's error.
const WRAPPERS: [&str; 3] = ["DataFusionError(", "Shared(", "External("];

/// `e` as the user reads it. A failed cluster task reaches the client as the Debug text of the
/// executor's error, wrapped once per layer ("…: DataFusionError(Shared(External(array …,
/// chunk c/0: …)))"): the wrappers go, the job's words and the message stay.
pub(crate) fn message(e: &DataFusionError) -> String {
    unwrap_debug(datafusion_zarr::error_message(e))
}

fn unwrap_debug(text: String) -> String {
    let Some(start) = WRAPPERS.iter().filter_map(|w| text.find(w)).min() else {
        return text;
    };
    // Ballista ends the text with a line break.
    let (head, mut inner) = text.trim_end().split_at(start);
    let mut depth = 0;
    while let Some(wrapper) = WRAPPERS.iter().find(|w| inner.starts_with(**w)) {
        inner = &inner[wrapper.len()..];
        depth += 1;
    }
    let closing = inner.len() - inner.trim_end_matches(')').len();
    if closing < depth {
        return text;
    }
    format!("{head}{}", &inner[..inner.len() - depth])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cluster_tasks_error_loses_its_wrappers() {
        let sent = "Execution error: Job J failed: Task failed due to runtime execution error: \
                    DataFusionError(Shared(External(DataFusionError(External(array file:///b, \
                    chunk c/0: cannot decode (zstd))))))\n";
        assert_eq!(
            unwrap_debug(sent.into()),
            "Execution error: Job J failed: Task failed due to runtime execution error: array \
             file:///b, chunk c/0: cannot decode (zstd)"
        );
        let plain = "array file:///b, chunk c/0: External(x";
        assert_eq!(unwrap_debug(plain.into()), plain);
        assert_eq!(unwrap_debug("no wrapper".into()), "no wrapper");
    }
}
