//! Every case of the conformance corpus (written by zarr-python 3.1.6) read through SQL and
//! compared with its `expected.json` / `expected.parquet`.

use std::collections::BTreeMap;
use std::fs::File;

use arrow::array::{Array, RecordBatch};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use serde_json::Value;
use sha2::{Digest, Sha256};

use zarr_test_support::*;

fn cases() -> Vec<(String, Value)> {
    let mut cases: Vec<(String, Value)> = std::fs::read_dir(corpus())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("expected.json").exists())
        .map(|e| {
            let name = e.file_name().to_string_lossy().to_string();
            let text = std::fs::read_to_string(e.path().join("expected.json")).unwrap();
            (name, serde_json::from_str(&text).unwrap())
        })
        .collect();
    cases.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(cases.len(), 18, "the corpus has 18 cases");
    cases
}

/// Reads one array through `read_zarr(store, path)`, ordered by its index columns.
async fn read_array(store: &str, path: &str) -> (Vec<RecordBatch>, String) {
    let ctx = context();
    let sql = format!("SELECT * FROM read_zarr('{store}', '{path}')");
    let df = ctx.sql(&sql).await.unwrap();
    let fields: Vec<String> = df
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    let value = fields.last().unwrap().clone();
    let order: Vec<String> = fields[..fields.len() - 1]
        .iter()
        .map(|f| format!("\"{f}\""))
        .collect();
    let sql = if order.is_empty() {
        sql
    } else {
        format!("{sql} ORDER BY {}", order.join(", "))
    };
    (query(&ctx, &sql).await.unwrap(), value)
}

#[tokio::test]
async fn every_array_of_every_case_matches_expected_json() {
    let mut checked = 0;
    for (case, expected) in cases() {
        let store = corpus_store(&case);
        for array in expected["arrays"].as_array().unwrap() {
            let path = array["path"].as_str().unwrap();
            let (batches, value_column) = read_array(&store, path).await;
            let values = column(&batches, &value_column);
            let count = array["count"].as_u64().unwrap() as usize;
            assert_eq!(values.len(), count, "{case}/{path}: row count");
            assert_eq!(values.null_count(), 0, "{case}/{path}: no NULLs by default");
            if let Some(expected_values) = array["values"].as_array() {
                let got = to_json(values.as_ref());
                for (i, (g, e)) in got.iter().zip(expected_values).enumerate() {
                    assert!(
                        same(g, e),
                        "{case}/{path}: element {i}: got {g}, expected {e}"
                    );
                }
            } else {
                check_stats(&case, values.as_ref(), &array["stats"]);
            }
            // Index columns are the C-order coordinates.
            let shape: Vec<u64> = array["shape"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_u64().unwrap())
                .collect();
            let schema = batches[0].schema();
            let index_columns: Vec<String> = schema.fields()[..schema.fields().len() - 1]
                .iter()
                .map(|f| f.name().clone())
                .collect();
            assert_eq!(
                index_columns.len(),
                shape.len(),
                "{case}/{path}: one index column per dimension"
            );
            if let Some(last) = index_columns.last() {
                let idx = column(&batches, last);
                let idx = idx
                    .as_any()
                    .downcast_ref::<arrow::array::UInt64Array>()
                    .unwrap();
                let n = *shape.last().unwrap();
                for i in 0..idx.len().min(1000) {
                    assert_eq!(idx.value(i), i as u64 % n, "{case}/{path}: index column");
                }
            }
            checked += 1;
        }
    }
    assert!(checked >= 25, "checked {checked} arrays");
}

fn check_stats(case: &str, values: &dyn Array, stats: &Value) {
    let strings: Vec<String> = to_json(values)
        .into_iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    let joined = strings.join("\n");
    let digest = Sha256::digest(joined.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(
        hex,
        stats["sha256_newline_joined_utf8"].as_str().unwrap(),
        "{case}: sha256"
    );
    let total_bytes: usize = strings.iter().map(String::len).sum();
    assert_eq!(
        total_bytes as u64,
        stats["total_utf8_bytes"].as_u64().unwrap(),
        "{case}: utf8 bytes"
    );
    let code_points: usize = strings.iter().map(|s| s.chars().count()).sum();
    assert_eq!(
        code_points as u64,
        stats["total_code_points"].as_u64().unwrap(),
        "{case}: code points"
    );
    let empty = strings.iter().filter(|s| s.is_empty()).count();
    assert_eq!(
        empty as u64,
        stats["empty_count"].as_u64().unwrap(),
        "{case}: empty strings"
    );
    let distinct: std::collections::HashSet<&String> = strings.iter().collect();
    assert_eq!(
        distinct.len() as u64,
        stats["distinct_count"].as_u64().unwrap(),
        "{case}: distinct"
    );
    assert_eq!(
        strings.iter().max().unwrap(),
        stats["max"].as_str().unwrap()
    );
    assert_eq!(
        strings.iter().min().unwrap(),
        stats["min"].as_str().unwrap()
    );
    for (i, v) in stats["samples"].as_object().unwrap() {
        let i: usize = i.parse().unwrap();
        assert_eq!(&strings[i], v.as_str().unwrap(), "{case}: sample {i}");
    }
}

#[tokio::test]
async fn tables_match_expected_parquet() {
    let mut checked = 0;
    for (case, expected) in cases() {
        let Some(spec) = expected["expected_parquet"].as_object() else {
            continue;
        };
        let file = corpus().join(&case).join(spec["file"].as_str().unwrap());
        let reader = ParquetRecordBatchReaderBuilder::try_new(File::open(&file).unwrap())
            .unwrap()
            .build()
            .unwrap();
        let parquet: Vec<RecordBatch> = reader.map(|b| b.unwrap()).collect();

        let ctx = context();
        let store = corpus_store(&case);
        let df = ctx
            .sql(&format!("SELECT * FROM read_zarr('{store}')"))
            .await
            .unwrap();
        let first = df.schema().field(0).name().clone();
        let ours = query(
            &ctx,
            &format!("SELECT * FROM read_zarr('{store}') ORDER BY \"{first}\""),
        )
        .await
        .unwrap();
        let columns: Vec<&str> = spec["columns"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_str().unwrap())
            .collect();
        let mut by_name = BTreeMap::new();
        for name in &columns {
            let want = column(&parquet, name);
            let got = column(&ours, name);
            assert_eq!(got.data_type(), want.data_type(), "{case}: type of {name}");
            assert_eq!(
                to_json(got.as_ref()),
                to_json(want.as_ref()),
                "{case}: column {name}"
            );
            by_name.insert(name.to_string(), got.len());
        }
        checked += 1;
    }
    assert_eq!(checked, 2, "cases 12 and 17 have expected.parquet");
}
