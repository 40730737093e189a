//! A metadata document within `max_metadata_bytes` costs at most 4× its size to open and
//! query: a `.zmetadata` of many nested groups, a V3 `consolidated_metadata` of many arrays,
//! and an array's `zarr.json` whose attributes hold a long list of numbers. Each was 20–110×
//! its size (serde_json values of the whole document, then copies of it).

use std::path::Path;

use serde_json::{Value, json};
use zarr_test_support::counting_alloc;
use zarr_test_support::*;

/// Runs `sql` and returns `count(*)` with the peak of bytes allocated meanwhile.
fn count_with_peak(sql: &str) -> (i64, usize) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let (count, peak) = counting_alloc::peak_of(|| {
        rt.block_on(async {
            let batches = query(&context(), sql).await.unwrap();
            to_json(column(&batches, "n").as_ref())
        })
    });
    (count[0].as_i64().unwrap(), peak)
}

fn write(path: &Path, doc: &Value) -> usize {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let text = doc.to_string();
    std::fs::write(path, &text).unwrap();
    text.len()
}

fn v2_array(n: u64) -> Value {
    json!({"zarr_format": 2, "shape": [n], "chunks": [n], "dtype": "<U4", "compressor": null,
           "fill_value": "", "order": "C", "filters": null})
}

fn v3_array(n: u64, attributes: Value) -> Value {
    json!({"zarr_format": 3, "node_type": "array", "shape": [n],
           "data_type": {"name": "fixed_length_utf32", "configuration": {"length_bytes": 16}},
           "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [n]}},
           "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
           "fill_value": "", "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
           "attributes": attributes, "dimension_names": ["index"]})
}

/// Asserts the peak is within 4× the document's size (and names both).
fn within_four_times(what: &str, peak: usize, size: usize) {
    eprintln!(
        "{what}: {peak} bytes for {size} ({:.2}×)",
        peak as f64 / size as f64
    );
    assert!(
        peak <= 4 * size,
        "{what}: peak allocation {peak} bytes for a {size}-byte document ({:.1}×)",
        peak as f64 / size as f64
    );
}

#[test]
fn consolidated_v2_metadata_of_nested_groups_costs_at_most_four_times_its_size() {
    let _alone = counting_alloc::alone();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(&root.join(".zgroup"), &json!({"zarr_format": 2}));
    write(&root.join("x/.zarray"), &v2_array(3));
    write(
        &root.join("x/.zattrs"),
        &json!({"_ARRAY_DIMENSIONS": ["i"]}),
    );
    // 20,000 groups, four levels deep, each with attributes and an array.
    let mut metadata = serde_json::Map::new();
    metadata.insert(".zgroup".into(), json!({"zarr_format": 2}));
    metadata.insert("x/.zarray".into(), v2_array(3));
    metadata.insert("x/.zattrs".into(), json!({"_ARRAY_DIMENSIONS": ["i"]}));
    for g in 0..20_000 {
        let path = format!("a{}/b{}/c{}/g{g}", g % 7, g % 11, g % 13);
        metadata.insert(format!("{path}/.zgroup"), json!({"zarr_format": 2}));
        metadata.insert(
            format!("{path}/.zattrs"),
            json!({"title": format!("group {g}"), "history": "made by a test"}),
        );
        metadata.insert(format!("{path}/v/.zarray"), v2_array(5));
        metadata.insert(
            format!("{path}/v/.zattrs"),
            json!({"_ARRAY_DIMENSIONS": ["j"]}),
        );
    }
    let size = write(
        &root.join(".zmetadata"),
        &json!({"zarr_consolidated_format": 1, "metadata": metadata}),
    );
    let sql = format!("SELECT count(*) AS n FROM read_zarr('{}')", root.display());
    let (n, peak) = count_with_peak(&sql);
    assert_eq!(n, 3);
    within_four_times(".zmetadata of nested groups", peak, size);
}

#[test]
fn consolidated_v3_metadata_of_many_arrays_costs_at_most_four_times_its_size() {
    let _alone = counting_alloc::alone();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let mut metadata = serde_json::Map::new();
    for a in 0..10_000 {
        metadata.insert(
            format!("g/a{a}"),
            v3_array(7, json!({"long_name": format!("array {a}")})),
        );
    }
    metadata.insert(
        "g".into(),
        json!({"zarr_format": 3, "node_type": "group", "attributes": {}}),
    );
    metadata.insert("x".into(), v3_array(3, json!({})));
    write(
        &root.join("g/zarr.json"),
        &json!({"zarr_format": 3, "node_type": "group", "attributes": {}}),
    );
    write(&root.join("x/zarr.json"), &v3_array(3, json!({})));
    let size = write(
        &root.join("zarr.json"),
        &json!({"zarr_format": 3, "node_type": "group", "attributes": {},
                "consolidated_metadata": {"kind": "inline", "must_understand": false,
                                          "metadata": metadata}}),
    );
    let sql = format!("SELECT count(*) AS n FROM read_zarr('{}')", root.display());
    let (n, peak) = count_with_peak(&sql);
    assert_eq!(n, 3);
    within_four_times("consolidated_metadata of many arrays (root)", peak, size);
    // The group the document describes, with the arrays named: only those are opened.
    let sql = format!(
        "SELECT count(*) AS n FROM read_zarr('{}', 'g', 'arrays', 'a7,a9999')",
        root.display()
    );
    let (n, peak) = count_with_peak(&sql);
    assert_eq!(n, 7);
    within_four_times(
        "consolidated_metadata of many arrays (g, two named)",
        peak,
        size,
    );
    // All of them, past max_arrays: an error naming it, before they are opened.
    let sql = format!(
        "SELECT count(*) AS n FROM read_zarr('{}', 'g', 'max_arrays', '1000')",
        root.display()
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let (e, peak) = counting_alloc::peak_of(|| {
        rt.block_on(async { query(&context(), &sql).await.unwrap_err() })
    });
    assert!(
        e.to_string()
            .contains("more than 1000 arrays, the most a table opens (max_arrays)"),
        "{e}"
    );
    within_four_times(
        "consolidated_metadata of many arrays (g, past max_arrays)",
        peak,
        size,
    );
    // All of them, within max_arrays: a table of 10,000 columns, each array's parsed
    // metadata and codecs (zarrs') a few KB beside its text.
    let sql = format!(
        "SELECT count(*) AS n FROM read_zarr('{}', 'g')",
        root.display()
    );
    let (n, peak) = count_with_peak(&sql);
    assert_eq!(n, 7);
    let per_array = (peak.saturating_sub(4 * size)) / 10_000;
    eprintln!("g, every array: {peak} bytes, {per_array} bytes per array beyond 4× the document");
    assert!(per_array < 8 << 10, "{per_array} bytes per opened array");
}

#[test]
fn attributes_holding_a_long_list_of_numbers_cost_at_most_four_times_their_size() {
    let _alone = counting_alloc::alone();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let numbers: Vec<u64> = (0..1_000_000).map(|i| i % 10).collect();
    let size = write(
        &root.join("zarr.json"),
        &v3_array(3, json!({"flag_values": numbers, "units": "1"})),
    );
    let sql = format!("SELECT count(*) AS n FROM read_zarr('{}')", root.display());
    let (n, peak) = count_with_peak(&sql);
    assert_eq!(n, 3);
    within_four_times("zarr.json with a long attribute", peak, size);
}
