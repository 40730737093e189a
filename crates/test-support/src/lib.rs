//! Helpers shared by the tests and benches of every crate in the workspace: the test data's
//! paths, sessions and result comparison (here), real test servers (`servers`) and a counting
//! allocator for memory bounds (`counting_alloc`). Not published.

pub mod counting_alloc;
pub mod servers;

use std::path::PathBuf;

use arrow::array::{Array, ArrayRef, RecordBatch};
use arrow::util::display::{ArrayFormatter, FormatOptions};
use datafusion::common::ScalarValue;
use datafusion::prelude::{SessionConfig, SessionContext};
use serde_json::Value;

/// The repository root, which holds the shared test data (`tests/data`, `tests/slt`).
pub fn root() -> PathBuf {
    std::fs::canonicalize(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .expect("the repository root")
}

/// The corpus directory.
pub fn corpus() -> PathBuf {
    root().join("tests/data/corpus")
}

/// A store of the corpus by case name.
pub fn corpus_store(case: &str) -> String {
    corpus().join(case).join("data.zarr").display().to_string()
}

/// A committed fixture store.
pub fn fixture(name: &str) -> String {
    root()
        .join("tests/data/fixtures")
        .join(name)
        .display()
        .to_string()
}

/// A session with Zarr registered and a fixed number of partitions.
pub fn context() -> SessionContext {
    context_with_partitions(2)
}

/// A session with `read_zarr` registered and `partitions` target partitions.
pub fn context_with_partitions(partitions: usize) -> SessionContext {
    let config = SessionConfig::new().with_target_partitions(partitions);
    let ctx = SessionContext::new_with_config(config);
    datafusion_zarr::register(&ctx);
    ctx
}

/// A session whose writes see the rows in query order (one partition), `batch` rows at a time
/// (small batches: a failing row arrives after chunks were written).
pub fn context_writing_in_order(batch: usize) -> SessionContext {
    let config = SessionConfig::new()
        .with_target_partitions(1)
        .with_batch_size(batch);
    let ctx = SessionContext::new_with_config(config);
    datafusion_zarr::register(&ctx);
    ctx
}

/// Copies the directory `from` to `to`, recursively.
pub fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// Runs `sql` and collects the batches.
pub async fn query(ctx: &SessionContext, sql: &str) -> datafusion::error::Result<Vec<RecordBatch>> {
    ctx.sql(sql).await?.collect().await
}

/// Concatenates one column of `batches`.
pub fn column(batches: &[RecordBatch], name: &str) -> ArrayRef {
    let arrays: Vec<ArrayRef> = batches
        .iter()
        .map(|b| {
            b.column_by_name(name)
                .unwrap_or_else(|| panic!("no column {name}"))
                .clone()
        })
        .collect();
    let refs: Vec<&dyn Array> = arrays.iter().map(|a| a.as_ref()).collect();
    arrow::compute::concat(&refs).unwrap()
}

/// An Arrow array as JSON values: strings, numbers, booleans, null; NaN as the string "NaN".
pub fn to_json(array: &dyn Array) -> Vec<Value> {
    (0..array.len())
        .map(|i| {
            let s = ScalarValue::try_from_array(array, i).unwrap();
            if s.is_null() {
                return Value::Null;
            }
            match s {
                ScalarValue::Utf8(Some(v))
                | ScalarValue::LargeUtf8(Some(v))
                | ScalarValue::Utf8View(Some(v)) => Value::String(v),
                ScalarValue::Boolean(Some(b)) => Value::Bool(b),
                ScalarValue::Float64(Some(f)) => float(f),
                ScalarValue::Float32(Some(f)) => float(f as f64),
                ScalarValue::Float16(Some(f)) => float(f.to_f64()),
                other => {
                    let text = other.to_string();
                    serde_json::from_str(&text).unwrap_or(Value::String(text))
                }
            }
        })
        .collect()
}

fn float(f: f64) -> Value {
    if f.is_nan() {
        Value::String("NaN".into())
    } else {
        serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)
    }
}

/// Formats a column for messages.
pub fn show(array: &dyn Array) -> Vec<String> {
    let f = ArrayFormatter::try_new(array, &FormatOptions::default()).unwrap();
    (0..array.len()).map(|i| f.value(i).to_string()).collect()
}

/// Compares JSON values, treating numbers by value.
pub fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        _ => a == b,
    }
}

/// A deterministic generator (xorshift64), so failing random tests reproduce.
pub struct Rng(pub u64);

impl Rng {
    /// The next number. (An endless generator, not an `Iterator`: tests call it by name.)
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// The values of column `col` of `sql`'s result (in a default context), as JSON.
pub async fn values(sql: &str, col: &str) -> Vec<Value> {
    let ctx = context();
    let batches = query(&ctx, sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    to_json(column(&batches, col).as_ref())
}
