//! Every number in real array metadata, set to the values at the edges of the integer types,
//! must give an array or an error: never a panic, never an abort, and never more memory than
//! the limits allow. The documents are every array's `zarr.json` / `.zarray` in the corpus and
//! the fixtures; each variant goes through the fuzz target's body (parse with
//! `max_chunk_bytes` = 1 MiB, then decode the fill chunk), under a counting allocator.

use std::path::Path;

use datafusion_zarr::ZarrOptions;
use serde_json::Value;

use zarr_test_support::*;

use zarr_test_support::counting_alloc;
/// The edge values: 0, 1, 2^31, 2^32, 2^53, 2^63, u64::MAX, and -1.
fn edges() -> Vec<Value> {
    let mut v: Vec<Value> = [0u64, 1, 1 << 31, 1 << 32, 1 << 53, 1 << 63, u64::MAX]
        .into_iter()
        .map(Value::from)
        .collect();
    v.push(Value::from(-1i64));
    v
}

/// Every array metadata document below `dir`.
fn documents(dir: &Path, out: &mut Vec<(String, Value)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            documents(&path, out);
            continue;
        }
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name != "zarr.json" && name != ".zarray" {
            continue;
        }
        let Ok(doc) = serde_json::from_slice::<Value>(&std::fs::read(&path).unwrap()) else {
            continue;
        };
        let is_array = name == ".zarray" || doc["node_type"] == "array";
        if is_array {
            out.push((path.display().to_string(), doc));
        }
    }
}

/// JSON pointers of every number in `v`.
fn numbers(v: &Value, at: String, out: &mut Vec<String>) {
    match v {
        Value::Number(_) => out.push(at),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                numbers(item, format!("{at}/{i}"), out);
            }
        }
        Value::Object(map) => {
            for (k, item) in map {
                let key = k.replace('~', "~0").replace('/', "~1");
                numbers(item, format!("{at}/{key}"), out);
            }
        }
        _ => {}
    }
}

#[test]
fn edge_numbers_in_metadata_are_errors_or_arrays_within_bounded_memory() {
    let _alone = counting_alloc::alone();
    let mut docs = Vec::new();
    documents(&root().join("tests/data/corpus"), &mut docs);
    documents(&root().join("tests/data/fixtures"), &mut docs);
    assert!(docs.len() > 40, "found {} documents", docs.len());
    let mut cases = 0usize;
    let mut worst = (0usize, String::new());
    for (file, doc) in &docs {
        let mut pointers = Vec::new();
        numbers(doc, String::new(), &mut pointers);
        for pointer in pointers {
            for edge in edges() {
                let mut variant = doc.clone();
                *variant.pointer_mut(&pointer).unwrap() = edge.clone();
                let bytes = serde_json::to_vec(&variant).unwrap();
                if std::env::var_os("EDGES_VERBOSE").is_some() {
                    eprintln!("{file} {pointer} = {edge}");
                }
                let (outcome, peak) = counting_alloc::peak_of(|| {
                    std::panic::catch_unwind(|| datafusion_zarr::fuzzing::metadata(&bytes))
                });
                let case = format!("{file} {pointer} = {edge}");
                assert!(outcome.is_ok(), "panicked: {case}");
                assert!(peak < 64 << 20, "{case}: peak allocation {peak} bytes");
                if peak > worst.0 {
                    worst = (peak, case);
                }
                cases += 1;
            }
        }
    }
    println!(
        "{cases} variants of {} documents; largest peak {} bytes ({})",
        docs.len(),
        worst.0,
        worst.1
    );
    assert!(cases > 1000, "{cases} variants");
}

/// A store of one `fixed_length_utf32` array with the given shape, chunk shape and
/// `length_bytes`, and no chunks.
fn hostile_store(dir: &Path, shape: u64, chunk: u64, length_bytes: u64) -> String {
    let metadata = serde_json::json!({
        "zarr_format": 3,
        "node_type": "array",
        "shape": [shape],
        "data_type": {"name": "fixed_length_utf32", "configuration": {"length_bytes": length_bytes}},
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [chunk]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": "",
        "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
        "attributes": {}
    });
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("zarr.json"), metadata.to_string()).unwrap();
    dir.display().to_string()
}

#[test]
fn sizes_declared_by_metadata_are_bounded_before_anything_is_allocated() {
    let _alone = counting_alloc::alone();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    // An element of 4 TiB (zarrs would allocate the fill value: the process aborted), and
    // 8 elements of 400 MB in one chunk (registration took 440 MB).
    let cases = [
        (
            hostile_store(&dir.path().join("huge_element"), 8, 8, 4 << 40),
            "one element of the data type is 4398046511104 bytes, more than max_chunk_bytes",
        ),
        (
            hostile_store(&dir.path().join("huge_chunk"), 8, 8, 400_000_000),
            "a chunk as declared (chunk shape × element size) is 3200000000 bytes, more than \
             max_chunk_bytes",
        ),
    ];
    for (store, message) in &cases {
        for how in ["read_zarr", "STORED AS ZARR", "inspect"] {
            let (error, peak) = counting_alloc::peak_of(|| {
                rt.block_on(async {
                    let ctx = context();
                    let result = match how {
                        "read_zarr" => {
                            query(&ctx, &format!("SELECT count(*) FROM read_zarr('{store}')"))
                                .await
                                .map(drop)
                        }
                        "STORED AS ZARR" => ctx
                            .sql(&format!(
                                "CREATE EXTERNAL TABLE t STORED AS ZARR LOCATION '{store}'"
                            ))
                            .await
                            .map(drop),
                        _ => datafusion_zarr::inspect(
                            &ctx.runtime_env(),
                            store,
                            &ZarrOptions::default(),
                        )
                        .await
                        .map(drop)
                        .map_err(Into::into),
                    };
                    result.unwrap_err().to_string()
                })
            });
            assert!(error.contains(message), "{how} {store}: {error}");
            assert!(
                error.contains(store.as_str()),
                "{how}: names the array: {error}"
            );
            assert!(
                peak < 64 << 20,
                "{how} {store}: peak allocation {peak} bytes"
            );
        }
    }
    // 2^63 rows, more than DataFusion counts: refused, where count(*) scanned without end.
    let store = hostile_store(&dir.path().join("too_many_rows"), 1 << 63, 1 << 20, 4);
    let error = rt.block_on(async {
        let sql = format!("SELECT count(*) FROM read_zarr('{store}')");
        query(&context(), &sql).await.unwrap_err().to_string()
    });
    assert!(
        error.contains("has more elements than a table has rows (at most 2^63 - 1)"),
        "{error}"
    );
    // 2^40 chunks of one element: planning and count(*) never look at each chunk.
    let store = hostile_store(&dir.path().join("many_chunks"), 1 << 40, 1, 4);
    let (rows, peak) = counting_alloc::peak_of(|| {
        rt.block_on(async {
            let ctx = context();
            let sql = |q: &str| format!("SELECT {q} FROM read_zarr('{store}')");
            let count = query(&ctx, &sql("count(*)")).await.unwrap();
            let first = query(&ctx, &(sql("dim_0") + " LIMIT 3")).await.unwrap();
            let picked = query(&ctx, &(sql("dim_0, value") + " WHERE dim_0 = 5 LIMIT 1"))
                .await
                .unwrap();
            (
                to_json(column(&count, "count(*)").as_ref()),
                to_json(column(&first, "dim_0").as_ref()),
                picked.iter().map(|b| b.num_rows()).sum::<usize>(),
            )
        })
    });
    assert_eq!(rows.0, vec![serde_json::json!(1u64 << 40)]);
    assert_eq!(
        rows.1,
        vec![
            serde_json::json!(0),
            serde_json::json!(1),
            serde_json::json!(2)
        ]
    );
    assert_eq!(rows.2, 1);
    assert!(peak < 64 << 20, "many chunks: peak allocation {peak} bytes");

    // 2^24 chunks, more than planning looks at one by one: an index predicate still prunes,
    // by blocks of 16 consecutive chunks (it read every chunk).
    let store = hostile_store(&dir.path().join("more_chunks"), 1 << 24, 1, 4);
    let (plan, last) = rt.block_on(async {
        let ctx = context();
        let sql = format!("SELECT dim_0 FROM read_zarr('{store}') WHERE dim_0 >= 16777213");
        let plan = query(&ctx, &format!("EXPLAIN {sql}")).await.unwrap();
        let plan = arrow::util::pretty::pretty_format_batches(&plan)
            .unwrap()
            .to_string();
        let rows = query(&ctx, &format!("{sql} ORDER BY dim_0")).await.unwrap();
        (plan, to_json(column(&rows, "dim_0").as_ref()))
    });
    assert!(
        plan.contains(
            "chunks=16, pruning_predicate=dim_0 >= UInt64(16777213), chunks_pruned=16777200"
        ),
        "{plan}"
    );
    assert_eq!(
        last,
        [16777213u64, 16777214, 16777215]
            .map(|n| serde_json::json!(n))
            .to_vec()
    );
    // In 2-D (2048 × 1023 one-element chunks: blocks of 2, every other one across the end of
    // a row), a block's box holds every row it may hold: the counts are the arithmetic ones.
    let grid = dir.path().join("grid_2d");
    let mut metadata: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(Path::new(&store).join("zarr.json")).unwrap(),
    )
    .unwrap();
    metadata["shape"] = serde_json::json!([2048, 1023]);
    metadata["chunk_grid"]["configuration"]["chunk_shape"] = serde_json::json!([1, 1]);
    std::fs::create_dir_all(&grid).unwrap();
    std::fs::write(grid.join("zarr.json"), metadata.to_string()).unwrap();
    let counts = rt.block_on(async {
        let ctx = context();
        let mut counts = Vec::new();
        for predicate in [
            "dim_0 BETWEEN 5 AND 7 AND dim_1 >= 1000",
            "dim_1 = 1022 AND dim_0 < 3",
            "dim_0 = 2047 AND dim_1 IN (0, 1, 513)",
            "dim_1 = 0",
        ] {
            let sql = format!(
                "SELECT count(*) AS n FROM read_zarr('{}') WHERE {predicate}",
                grid.display()
            );
            let n = query(&ctx, &sql).await.unwrap();
            counts.push(to_json(column(&n, "n").as_ref()));
        }
        counts
    });
    assert_eq!(
        counts,
        [69, 3, 3, 2048]
            .map(|n| vec![serde_json::json!(n)])
            .to_vec()
    );
}
