//! Runs the sqllogictest files in `tests/slt/` against a session with Zarr registered.
//!
//! Plans read the same on every machine: `target_partitions` is pinned to 2 and the
//! repository's absolute path is shown as `$ROOT`.

use std::sync::Arc;

use arrow::array::{Array, RecordBatch};
use arrow::datatypes::DataType;
use arrow::util::display::{ArrayFormatter, FormatOptions};
use async_trait::async_trait;
use datafusion::error::DataFusionError;
use datafusion::prelude::{SessionConfig, SessionContext};
use sqllogictest::{DBOutput, DefaultColumnType};

struct Zarr {
    ctx: Arc<SessionContext>,
    root: String,
}

fn cell(array: &dyn Array, row: usize) -> String {
    if array.is_null(row) {
        return "NULL".into();
    }
    let f = ArrayFormatter::try_new(array, &FormatOptions::default()).unwrap();
    let s = f.value(row).to_string();
    if s.is_empty() {
        return "(empty)".into();
    }
    if !s.trim_end().contains('\n') {
        return s.trim_end().to_string();
    }
    // Multi-line cells (plans) as DataFusion's own sqllogictests show them: numbered lines,
    // indentation as dashes.
    let mut out = String::new();
    for (i, line) in s.trim_end().lines().enumerate() {
        let body = line.trim_start();
        let indent = line.len() - body.len();
        out.push_str(&format!("\n{:02}){}{}", i + 1, "-".repeat(indent), body));
    }
    out
}

#[async_trait]
impl sqllogictest::AsyncDB for Zarr {
    type Error = DataFusionError;
    type ColumnType = DefaultColumnType;

    async fn run(&mut self, sql: &str) -> Result<DBOutput<DefaultColumnType>, DataFusionError> {
        let df = self.ctx.sql(sql).await?;
        let schema = df.schema().as_arrow().clone();
        let batches: Vec<RecordBatch> = df.collect().await?;
        let types = schema
            .fields()
            .iter()
            .map(|f| match f.data_type() {
                t if t.is_integer() => DefaultColumnType::Integer,
                DataType::Float16 | DataType::Float32 | DataType::Float64 => {
                    DefaultColumnType::FloatingPoint
                }
                _ => DefaultColumnType::Text,
            })
            .collect();
        let mut rows = Vec::new();
        for batch in &batches {
            for r in 0..batch.num_rows() {
                rows.push(
                    batch
                        .columns()
                        .iter()
                        .map(|c| cell(c.as_ref(), r).replace(&self.root, "$ROOT"))
                        .collect(),
                );
            }
        }
        if schema.fields().is_empty() {
            return Ok(DBOutput::StatementComplete(0));
        }
        Ok(DBOutput::Rows { types, rows })
    }

    async fn shutdown(&mut self) {}
}

/// Compares rows line by line, so multi-line cells (plans) match the lines of the file.
fn validator(_: sqllogictest::Normalizer, actual: &[Vec<String>], expected: &[String]) -> bool {
    let actual: Vec<String> = actual
        .iter()
        .flat_map(|row| {
            row.join(" ")
                .lines()
                .map(|l| l.trim_end().to_string())
                .collect::<Vec<_>>()
        })
        .collect();
    let expected: Vec<String> = expected.iter().map(|l| l.trim_end().to_string()).collect();
    actual == expected
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqllogictests() {
    let root = std::fs::canonicalize(env!("CARGO_MANIFEST_DIR"))
        .unwrap()
        .display()
        .to_string();
    // The .slt files name stores relative to the workspace root (this binary's one test).
    std::env::set_current_dir(&root).unwrap();
    let dir = std::path::Path::new(&root).join("tests/slt");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "slt"))
        .collect();
    files.sort();
    assert!(!files.is_empty());
    for file in files {
        let root = root.clone();
        let mut runner = sqllogictest::Runner::new(move || {
            let root = root.clone();
            async move {
                let config = SessionConfig::new()
                    .with_target_partitions(2)
                    .with_batch_size(8192);
                let ctx = SessionContext::new_with_config(config);
                datafusion_zarr::register(&ctx);
                Ok(Zarr {
                    ctx: Arc::new(ctx),
                    root,
                })
            }
        });
        runner.with_validator(validator);
        // `SLT_UPDATE=1 cargo test --test slt` rewrites the expected results in place (review
        // the diff before committing it).
        if std::env::var_os("SLT_UPDATE").is_some() {
            runner
                .update_test_file(
                    &file,
                    " ",
                    validator,
                    sqllogictest::default_normalizer,
                    sqllogictest::default_column_validator,
                )
                .await
                .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            continue;
        }
        runner
            .run_file_async(&file)
            .await
            .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    }
}
