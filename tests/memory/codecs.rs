//! Numcodecs filters keep what their configuration holds at its own size: `categorize`'s
//! labels were each padded to the dtype's full width when the codec was built (a million
//! short labels of a `<U300` dtype took 1.7 GB).

use zarr_test_support::counting_alloc;
use zarr_test_support::*;

#[test]
fn categorize_keeps_labels_at_their_own_length() {
    let _alone = counting_alloc::alone();
    let dir = tempfile::tempdir().unwrap();
    // 100,000 labels of 6 characters: 2.4 MB as UTF-32, 120 MB padded to <U300.
    let labels: Vec<String> = (0..100_000).map(|i| format!("l{i:05}")).collect();
    let zarray = serde_json::json!({"zarr_format": 2, "shape": [4], "chunks": [4],
        "dtype": "<U300", "compressor": null, "fill_value": "", "order": "C",
        "filters": [{"id": "categorize", "labels": labels, "dtype": "<U300", "astype": "<u4"}]});
    std::fs::write(dir.path().join(".zarray"), zarray.to_string()).unwrap();
    let codes: Vec<u8> = [1u32, 100_000, 0, 42]
        .iter()
        .flat_map(|c| c.to_le_bytes())
        .collect();
    std::fs::write(dir.path().join("0"), codes).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let sql = format!(
        "SELECT value FROM read_zarr('{}') ORDER BY dim_0",
        dir.path().display()
    );
    let (values, peak) = counting_alloc::peak_of(|| {
        rt.block_on(async {
            let batches = query(&context(), &sql).await.unwrap();
            to_json(column(&batches, "value").as_ref())
        })
    });
    assert_eq!(values, ["l00000", "l99999", "", "l00041"]);
    assert!(peak < 48 << 20, "peak allocation {peak} bytes");
}
