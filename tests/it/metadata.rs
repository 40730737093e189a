//! Where zarr-python is looser than the `fixed_length_utf32` specification, the reader follows
//! the specification and says so. Each case edits the zarr.json of corpus case 00 in a copy.

use serde_json::{Value, json};

use zarr_test_support::*;

/// Copies corpus case 00 into a temporary directory and applies `edit` to its zarr.json.
fn edited(edit: impl FnOnce(&mut Value)) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let src = corpus().join("00_zarr_python_defaults_U7/data.zarr");
    std::fs::create_dir_all(dir.path().join("c")).unwrap();
    std::fs::copy(src.join("c/0"), dir.path().join("c/0")).unwrap();
    let mut doc: Value =
        serde_json::from_str(&std::fs::read_to_string(src.join("zarr.json")).unwrap()).unwrap();
    edit(&mut doc);
    std::fs::write(dir.path().join("zarr.json"), doc.to_string()).unwrap();
    dir
}

async fn open_error(dir: &tempfile::TempDir) -> String {
    open_error_at(dir.path(), "").await
}

#[tokio::test]
async fn the_unedited_copy_reads() {
    let dir = edited(|_| {});
    let ctx = context();
    let b = query(
        &ctx,
        &format!("SELECT * FROM read_zarr('{}')", dir.path().display()),
    )
    .await
    .unwrap();
    assert_eq!(b.iter().map(|b| b.num_rows()).sum::<usize>(), 8);
}

#[tokio::test]
async fn a_fill_value_longer_than_the_capacity_is_rejected() {
    let dir = edited(|d| d["fill_value"] = json!("12345678"));
    let e = open_error(&dir).await;
    assert!(
        e.contains("fill_value has 8 code points, more than length_bytes / 4 = 7"),
        "{e}"
    );
    assert!(e.contains("specification"), "{e}");
}

#[tokio::test]
async fn length_bytes_must_be_a_positive_multiple_of_4() {
    for bad in [json!(0), json!(6), json!(-4), json!("8")] {
        let dir = edited(|d| d["data_type"]["configuration"]["length_bytes"] = bad.clone());
        let e = open_error(&dir).await;
        assert!(
            e.contains("length_bytes must be a positive multiple of 4"),
            "{bad}: {e}"
        );
    }
}

#[tokio::test]
async fn a_vlen_codec_on_this_type_is_rejected() {
    let dir = edited(|d| d["codecs"] = json!([{"name": "vlen-utf8"}]));
    let e = open_error(&dir).await;
    assert!(e.contains("codec 'vlen-utf8' is variable-length"), "{e}");
}

#[tokio::test]
async fn extra_configuration_keys_and_bare_names_are_rejected() {
    let dir = edited(|d| d["data_type"]["configuration"]["endian"] = json!("little"));
    let e = open_error(&dir).await;
    assert!(e.contains("unknown key 'endian'"), "{e}");
    let dir = edited(|d| d["data_type"] = json!("fixed_length_utf32"));
    let e = open_error(&dir).await;
    assert!(e.contains("needs a configuration with length_bytes"), "{e}");
}

#[tokio::test]
async fn wrong_zarr_format_and_bad_json_are_errors() {
    let dir = edited(|d| d["zarr_format"] = json!(2));
    let e = open_error(&dir).await;
    assert!(e.contains("zarr_format is 2, expected 3"), "{e}");
    let dir = edited(|_| {});
    std::fs::write(dir.path().join("zarr.json"), "{not json").unwrap();
    let e = open_error(&dir).await;
    assert!(e.contains("not valid JSON"), "{e}");
}

macro_rules! rejected {
    ($name:ident, |$d:ident| $edit:expr, $($needle:literal),+) => {
        #[tokio::test]
        async fn $name() {
            let dir = edited(|$d| { $edit; });
            let e = open_error(&dir).await;
            $(assert!(e.contains($needle), "expected {:?} in: {e}", $needle);)+
        }
    };
}

rejected!(
    missing_shape,
    |d| d.as_object_mut().unwrap().remove("shape"),
    "invalid array metadata",
    "shape"
);
rejected!(
    missing_data_type,
    |d| d.as_object_mut().unwrap().remove("data_type"),
    "no data_type"
);
rejected!(
    fill_value_null,
    |d| d["fill_value"] = json!(null),
    "fill_value must be a JSON string"
);
rejected!(
    fill_value_zero,
    |d| d["fill_value"] = json!(0),
    "fill_value must be a JSON string"
);
rejected!(
    unknown_codec,
    |d| d["codecs"] =
        json!([{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "frobnicate"}]),
    "frobnicate"
);
rejected!(
    unknown_top_level_key,
    |d| d["colour"] = json!("red"),
    "colour"
);
rejected!(
    unknown_storage_transformer,
    |d| d["storage_transformers"] = json!([{"name": "mystery"}]),
    "mystery"
);
rejected!(
    bytes_without_endian,
    |d| d["codecs"] = json!([{"name": "bytes"}]),
    "no endian"
);
rejected!(
    two_array_to_bytes_codecs,
    |d| d["codecs"] = json!([{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "bytes", "configuration": {"endian": "little"}}]),
    "invalid array metadata"
);
rejected!(
    transpose_with_c,
    |d| d["codecs"] = json!([{"name": "transpose", "configuration": {"order": "C"}}, {"name": "bytes", "configuration": {"endian": "little"}}]),
    "transpose order \"C\" is not a permutation of the array's dimensions (it has 1)"
);
rejected!(
    transpose_not_a_permutation,
    |d| d["codecs"] = json!([{"name": "transpose", "configuration": {"order": [1]}}, {"name": "bytes", "configuration": {"endian": "little"}}]),
    "transpose order [1] is not a permutation of the array's dimensions (it has 1)"
);
rejected!(
    transpose_repeating_a_dimension_inside_a_shard,
    |d| d["codecs"] = json!([{"name": "sharding_indexed", "configuration": {
        "chunk_shape": [2],
        "codecs": [{"name": "transpose", "configuration": {"order": [0, 0]}},
                   {"name": "bytes", "configuration": {"endian": "little"}}],
        "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}]}}]),
    "transpose order [0,0] is not a permutation of the array's dimensions (it has 1)"
);
rejected!(
    shard_inner_chunks_that_do_not_divide_the_shard,
    |d| {
        d["chunk_grid"]["configuration"]["chunk_shape"] = json!([10]);
        d["codecs"] = json!([{"name": "sharding_indexed", "configuration": {
            "chunk_shape": [3],
            "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}]}}]);
    },
    "inner chunk_shape [3] does not divide the shard shape [10], as the sharding codec requires"
);
rejected!(
    shard_inner_chunks_of_zero,
    |d| d["codecs"] = json!([{"name": "sharding_indexed", "configuration": {
        "chunk_shape": [0],
        "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
        "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}]}}]),
    "inner chunk_shape must hold positive integers"
);
rejected!(
    shuffle_of_no_bytes,
    |d| d["codecs"] = json!([{"name": "bytes", "configuration": {"endian": "little"}},
                             {"name": "numcodecs.shuffle", "configuration": {"elementsize": 0}}]),
    "shuffle elementsize 0 is not a positive integer"
);
rejected!(
    dimension_names_wrong_length,
    |d| d["dimension_names"] = json!(["a", "b"]),
    "invalid array metadata"
);
rejected!(
    chunk_shape_zero,
    |d| d["chunk_grid"]["configuration"]["chunk_shape"] = json!([0]),
    "invalid array metadata"
);
rejected!(
    chunk_shape_wrong_rank,
    |d| d["chunk_grid"]["configuration"]["chunk_shape"] = json!([4, 4]),
    "invalid array metadata"
);
rejected!(
    shape_overflows_u64,
    |d| d["shape"] = json!([4294967296u64, 4294967296u64]),
    "more elements than fit in u64"
);

#[tokio::test]
async fn lone_surrogate_fill_as_zarr_python_writes_it() {
    // zarr-python writes "\ud800" (a JSON escape of a lone surrogate), which is not a scalar value.
    let dir = edited(|_| {});
    let text = std::fs::read_to_string(dir.path().join("zarr.json")).unwrap();
    let text = text.replace("\"fill_value\":\"\"", "\"fill_value\":\"\\ud800\"");
    assert!(text.contains("\\ud800"));
    std::fs::write(dir.path().join("zarr.json"), text).unwrap();
    let e = open_error(&dir).await;
    assert!(
        e.contains("not valid JSON") && e.contains("surrogate"),
        "{e}"
    );
}

#[tokio::test]
async fn deeply_nested_json_is_an_error_not_a_crash() {
    let dir = edited(|_| {});
    let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
    std::fs::write(dir.path().join("zarr.json"), deep(100_000)).unwrap();
    let e = open_error(&dir).await;
    assert!(
        e.contains("not valid JSON") && e.contains("expected a JSON object"),
        "{e}"
    );
    // Within the document: a key read as a value and an attribute that is used reach
    // serde_json's nesting limit; an attribute that is not used is kept as written, unparsed.
    let nested = |edit: fn(&mut Value), n: usize| {
        let dir = edited(edit);
        let path = dir.path().join("zarr.json");
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, text.replace("\"NESTED\"", &deep(n))).unwrap();
        dir
    };
    let codecs = nested(|doc| doc["codecs"] = "NESTED".into(), 100_000);
    let e = open_error(&codecs).await;
    assert!(e.contains("recursion"), "{e}");
    let units = nested(|doc| doc["attributes"]["units"] = "NESTED".into(), 200);
    let e = open_error(&units).await;
    assert!(
        e.contains("its attribute units") && e.contains("recursion"),
        "{e}"
    );
    let history = nested(
        |doc| doc["attributes"]["history"] = "NESTED".into(),
        100_000,
    );
    let sql = format!(
        "SELECT count(*) AS n FROM read_zarr('{}')",
        history.path().display()
    );
    let batches = query(&context(), &sql).await.unwrap();
    assert_eq!(
        to_json(column(&batches, "n").as_ref()),
        [serde_json::json!(8)]
    );
}

#[tokio::test]
async fn oversized_metadata_is_refused_before_reading() {
    let dir = edited(|_| {});
    let file = std::fs::File::create(dir.path().join("zarr.json")).unwrap();
    file.set_len(100 << 20).unwrap(); // 100 MB, sparse
    let e = open_error(&dir).await;
    assert!(e.contains("more than max_metadata_bytes = 67108864"), "{e}");
}

/// A child array of a type we do not read, whose `bytes` codec names no byte order (raw bits,
/// an extension zarrs lacks, as zarr-python writes single-byte types), is left out of its
/// group's table; it was once refused as a multi-byte type, which failed the whole group.
#[tokio::test]
async fn a_child_of_a_type_we_do_not_read_leaves_its_group_readable() {
    let dir = tempfile::tempdir().unwrap();
    let group = dir.path();
    std::fs::write(
        group.join("zarr.json"),
        json!({"zarr_format": 3, "node_type": "group"}).to_string(),
    )
    .unwrap();
    let src = corpus().join("00_zarr_python_defaults_U7/data.zarr");
    std::fs::create_dir_all(group.join("a/c")).unwrap();
    std::fs::copy(src.join("c/0"), group.join("a/c/0")).unwrap();
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(src.join("zarr.json")).unwrap()).unwrap();
    std::fs::write(group.join("a/zarr.json"), doc.to_string()).unwrap();
    for (name, data_type, fill) in [
        ("raw", json!("r16"), json!([0, 0])),
        (
            "ext",
            json!({"name": "some.extension", "configuration": {"n": 1}}),
            json!(0),
        ),
    ] {
        let mut other = doc.clone();
        other["data_type"] = data_type;
        other["fill_value"] = fill;
        other["codecs"] = json!([{"name": "bytes"}]);
        std::fs::create_dir_all(group.join(name)).unwrap();
        std::fs::write(group.join(name).join("zarr.json"), other.to_string()).unwrap();
    }
    let ctx = context();
    let sql = format!("SELECT * FROM read_zarr('{}')", group.display());
    let batches = query(&ctx, &sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    let schema = batches[0].schema();
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    assert_eq!(names, ["dim_0", "a"]);
    let expected = corpus().join("00_zarr_python_defaults_U7/expected.json");
    let want: Value = serde_json::from_str(&std::fs::read_to_string(expected).unwrap()).unwrap();
    assert_eq!(
        Value::Array(to_json(column(&batches, "a").as_ref())),
        want["arrays"][0]["values"]
    );
    for (name, type_name) in [("raw", "r16"), ("ext", "some.extension")] {
        let sql = format!("SELECT * FROM read_zarr('{}', '{name}')", group.display());
        let e = match ctx.sql(&sql).await {
            Ok(df) => df.collect().await.map(|_| ()).unwrap_err().to_string(),
            Err(e) => e.to_string(),
        };
        assert!(
            e.contains(&format!("unsupported data type {type_name}")),
            "{sql}: {e}"
        );
    }
}

/// A coordinate whose length is not its dimension's: xarray refuses the dataset; an index
/// column under the coordinate's name would pass for its values. The array alone still reads.
#[tokio::test]
async fn a_coordinate_of_another_length_than_its_dimension_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let group = dir.path();
    let array =
        |shape: u64, dtype: &str| v3_array(&[shape], &[2], dtype, json!(0), json!(["time"]));
    write_node(group, "", &json!({"zarr_format": 3, "node_type": "group"}));
    write_node(group, "time", &array(5, "int64"));
    write_node(group, "v", &array(4, "float64"));
    let e = open_error_at(group, "").await;
    assert!(
        e.contains("coordinate time has 5 values, but dimension time of array v has 4"),
        "{e}"
    );
    let ctx = context();
    let sql = format!(
        "SELECT count(*) AS n FROM read_zarr('{}', 'v')",
        group.display()
    );
    let batches = query(&ctx, &sql).await.unwrap();
    assert_eq!(to_json(column(&batches, "n").as_ref()), vec![json!(4)]);
}

/// A V3 array's metadata: uncompressed little-endian chunks of `chunks`.
fn v3_array(shape: &[u64], chunks: &[u64], data_type: &str, fill: Value, dims: Value) -> Value {
    json!({"zarr_format": 3, "node_type": "array", "shape": shape,
           "data_type": data_type, "fill_value": fill, "dimension_names": dims,
           "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": chunks}},
           "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
           "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}]})
}

/// A V3 group holding `a(x)`, `n` int32 elements of the fill value 7 (no chunk written).
fn group_with_a(n: u64) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write_node(
        dir.path(),
        "",
        &json!({"zarr_format": 3, "node_type": "group"}),
    );
    let a = v3_array(&[n], &[n], "int32", json!(7), json!(["x"]));
    write_node(dir.path(), "a", &a);
    dir
}

/// Writes `doc` as the `zarr.json` of node `path` under `root`.
fn write_node(root: &std::path::Path, path: &str, doc: &Value) {
    std::fs::create_dir_all(root.join(path)).unwrap();
    std::fs::write(root.join(path).join("zarr.json"), doc.to_string()).unwrap();
}

async fn open_error_at(store: &std::path::Path, path: &str) -> String {
    error_of(&format!(
        "SELECT * FROM read_zarr('{}', '{path}')",
        store.display()
    ))
    .await
}

/// Arrays of the table's rank pair by dimension name, as xarray aligns them: `v(lon, lat)`
/// beside `u(lat, lon)` of a square grid is read transposed, not zipped by position. An array
/// of one shape along other dimensions is left out of the table, and named with `arrays` gives
/// xarray's product over the union of the dimensions.
#[tokio::test]
async fn arrays_of_the_tables_rank_pair_by_dimension_name() {
    let array =
        |shape: &[u64], dims: &Value| v3_array(shape, shape, "int64", json!(0), dims.clone());
    let chunk =
        |values: &[i64]| -> Vec<u8> { values.iter().flat_map(|v| v.to_le_bytes()).collect() };
    let dir = tempfile::tempdir().unwrap();
    let group = dir.path();
    write_node(group, "", &json!({"zarr_format": 3, "node_type": "group"}));
    write_node(group, "u", &array(&[2, 2], &json!(["lat", "lon"])));
    write_node(group, "v", &array(&[2, 2], &json!(["lon", "lat"])));
    for (name, values) in [("u", [1, 2, 3, 4]), ("v", [10, 20, 30, 40])] {
        std::fs::create_dir_all(group.join(name).join("c/0")).unwrap();
        std::fs::write(group.join(name).join("c/0/0"), chunk(&values)).unwrap();
    }
    let sql = format!(
        "SELECT lat, lon, u, v FROM read_zarr('{}') ORDER BY lat, lon",
        group.display()
    );
    let batches = query(&context(), &sql).await.unwrap();
    // v[lon][lat] beside u[lat][lon].
    assert_eq!(
        to_json(column(&batches, "u").as_ref()),
        [1, 2, 3, 4].map(|v| json!(v))
    );
    assert_eq!(
        to_json(column(&batches, "v").as_ref()),
        [10, 30, 20, 40].map(|v| json!(v))
    );

    let cases = [
        (
            vec![2, 3],
            json!(["time", "x"]),
            json!(["time", "y"]),
            false,
        ),
        (vec![3], json!(["x"]), json!(["y"]), false),
        // An unnamed dimension matches any name.
        (vec![2, 3], json!(["time", "x"]), json!([null, "x"]), true),
        (vec![2, 3], json!(["time", "x"]), json!(["time", "x"]), true),
    ];
    for (shape, dims_u, dims_v, ok) in cases {
        let dir = tempfile::tempdir().unwrap();
        let group = dir.path();
        write_node(group, "", &json!({"zarr_format": 3, "node_type": "group"}));
        write_node(group, "u", &array(&shape, &dims_u));
        write_node(group, "v", &array(&shape, &dims_v));
        let sql = format!("SELECT * FROM read_zarr('{}')", group.display());
        let result = query(&context(), &sql).await;
        if ok {
            let batches = result.unwrap_or_else(|e| panic!("{dims_u} {dims_v}: {e}"));
            let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
            assert_eq!(rows as u64, shape.iter().product::<u64>());
            // The index columns are named after the array naming the most dimensions.
            assert!(batches[0].schema().field_with_name("time").is_ok());
        } else {
            // Without `arrays`, v is left out of u's table, and named with why.
            let batches = result.unwrap_or_else(|e| panic!("{dims_u} {dims_v}: {e}"));
            assert!(batches[0].schema().field_with_name("v").is_err());
            let explained = query(&context(), &format!("EXPLAIN {sql}")).await.unwrap();
            let explained = show(column(&explained, "plan").as_ref()).join("\n");
            let left_out = format!("left_out=[v({}): dimension ", dims_list(&dims_v));
            assert!(explained.contains(&left_out), "{explained}");
            // Named with `arrays`: xarray's product over the union of the dimensions.
            let sql = format!(
                "SELECT count(*) AS n FROM read_zarr('{}', '', 'arrays', 'u,v')",
                group.display()
            );
            let n = values(&sql, "n").await;
            let extra = shape.last().copied().unwrap_or(1);
            assert_eq!(
                n,
                [json!(shape.iter().product::<u64>() * extra)],
                "{dims_u} {dims_v}"
            );
            // With the option 'arrays', one of them alone is a table.
            let sql = format!(
                "SELECT count(*) FROM read_zarr('{}', '', 'arrays', 'v')",
                group.display()
            );
            query(&context(), &sql)
                .await
                .unwrap_or_else(|e| panic!("{sql}: {e}"));
        }
    }
}

fn dims_list(dims: &Value) -> String {
    let names: Vec<&str> = dims
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_str().unwrap_or("?"))
        .collect();
    names.join(", ")
}
/// A group of a 2-D array `v(time, x)` and 1-D arrays: one along `x` is repeated along `time`
/// (as xarray's to_dataframe does); one along a dimension `v` does not have, or with no
/// dimension name, or of another length, is left out and named; named with `arrays`, the
/// first gives xarray's product, the others an error naming the shapes.
#[tokio::test]
async fn one_dimensional_arrays_repeat_along_the_tables_other_dimensions() {
    let dir = tempfile::tempdir().unwrap();
    let group = dir.path();
    let array = |shape: Vec<u64>, dims: Value, fill: i64| {
        v3_array(&shape, &shape, "int64", json!(fill), dims)
    };
    let write = |path: &str, doc: Value| write_node(group, path, &doc);
    write("", json!({"zarr_format": 3, "node_type": "group"}));
    // No chunks: every element is the fill value, which tells the arrays apart.
    write("v", array(vec![2, 3], json!(["time", "x"]), 1));
    write("a", array(vec![3], json!(["x"]), 7));
    let ctx = context();
    let sql = format!(
        "SELECT * FROM read_zarr('{}') ORDER BY time, x",
        group.display()
    );
    let batches = query(&ctx, &sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    let schema = batches[0].schema();
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    assert_eq!(names, ["time", "x", "a", "v"]);
    assert_eq!(to_json(column(&batches, "a").as_ref()), vec![json!(7); 6]);
    assert_eq!(
        to_json(column(&batches, "x").as_ref()),
        [0, 1, 2, 0, 1, 2].map(|i| json!(i))
    );
    for (name, shape, dims, why) in [
        (
            "b",
            vec![3],
            json!(["y"]),
            "b(y): dimension y not in the table",
        ),
        (
            "c",
            vec![3],
            json!([null]),
            "c(?): a dimension without a name",
        ),
        (
            "d",
            vec![2],
            json!(["x"]),
            "d(x): dimension x has 2 values, the table's 3",
        ),
    ] {
        write(name, array(shape, dims, 0));
        // Left out of the table, and named with why.
        let sql = format!("SELECT * FROM read_zarr('{}')", group.display());
        let explained = query(&context(), &format!("EXPLAIN {sql}")).await.unwrap();
        let explained = show(column(&explained, "plan").as_ref()).join("\n");
        assert!(
            explained.contains(&format!("left_out=[{why}]")),
            "{explained}"
        );
        // Named with `arrays`: the product over the union of the dimensions when there is
        // one (xarray's to_dataframe), else an error naming its shape.
        let sql = format!(
            "SELECT count(*) AS n FROM read_zarr('{}', '', 'arrays', 'v,{name}')",
            group.display()
        );
        match name {
            "b" => assert_eq!(values(&sql, "n").await, [json!(2 * 3 * 3)]),
            _ => {
                let e = error_of(&sql).await;
                assert!(
                    e.contains("different shapes") && e.contains(&format!("{name} [")),
                    "{name}: {e}"
                );
            }
        }
        std::fs::remove_dir_all(group.join(name)).unwrap();
    }
}

/// A group whose arrays are all in subgroups (a nested store's root) names them and says how
/// to read one.
#[tokio::test]
async fn a_group_of_only_subgroups_names_them() {
    let dir = tempfile::tempdir().unwrap();
    let group = dir.path();
    for path in ["", "forecast", "observed"] {
        write_node(
            group,
            path,
            &json!({"zarr_format": 3, "node_type": "group"}),
        );
    }
    let e = open_error_at(group, "").await;
    assert!(
        e.contains("no arrays") && e.contains("subgroups are forecast, observed"),
        "{e}"
    );
}

/// Bytes whose `_Encoding` says UTF-8 are strings; an element that is not UTF-8 is named, with
/// the attribute as the reason.
#[tokio::test]
async fn bytes_encoded_as_utf8_that_are_not_name_the_element() {
    let dir = tempfile::tempdir().unwrap();
    let zarray = json!({"zarr_format": 2, "shape": [2], "chunks": [2], "dtype": "|S2",
                        "compressor": null, "fill_value": "", "order": "C", "filters": null});
    std::fs::write(dir.path().join(".zarray"), zarray.to_string()).unwrap();
    let zattrs = json!({"_Encoding": "utf-8"});
    std::fs::write(dir.path().join(".zattrs"), zattrs.to_string()).unwrap();
    std::fs::write(dir.path().join("0"), b"ok\xff\xfe").unwrap();
    let e = open_error(&dir).await;
    assert!(
        e.contains("chunk 0") && e.contains("element 1 is not UTF-8, which its _Encoding"),
        "{e}"
    );
    // Without decode_cf, the bytes.
    let sql = format!(
        "SELECT encode(value, 'hex') AS v FROM read_zarr('{}', '', 'decode_cf', 'false')",
        dir.path().display()
    );
    let batches = query(&context(), &sql).await.unwrap();
    assert_eq!(
        to_json(column(&batches, "v").as_ref()),
        [json!("6f6b"), json!("fffe")]
    );
    // ASCII is checked as ASCII (xarray fails on such bytes too), not read as UTF-8.
    std::fs::write(
        dir.path().join(".zattrs"),
        json!({"_Encoding": "ascii"}).to_string(),
    )
    .unwrap();
    std::fs::write(dir.path().join("0"), b"ok\xc3\xa9").unwrap();
    let e = open_error(&dir).await;
    assert!(
        e.contains("chunk 0") && e.contains("element 1 is not ASCII, which its _Encoding"),
        "{e}"
    );
}

/// A coordinate is read whole to prune by it only within a bound (the smaller of
/// `max_chunk_bytes` and 128 MiB): metadata of a few hundred bytes can declare gigabytes.
/// Beyond it the filter is the scan's, with the same answer.
#[tokio::test]
async fn a_coordinate_beyond_the_bound_is_not_read_whole_to_prune() {
    let dir = tempfile::tempdir().unwrap();
    let group = dir.path();
    let (len, chunk) = (1u64 << 17, 1u64 << 14);
    write_node(group, "", &json!({"zarr_format": 3, "node_type": "group"}));
    // No chunks: x is 0.0 everywhere (1 MiB declared), v is 1.
    let x = v3_array(&[len], &[chunk], "float64", json!(0.0), json!(["x"]));
    write_node(group, "x", &x);
    write_node(
        group,
        "v",
        &v3_array(&[len], &[chunk], "int8", json!(1), json!(["x"])),
    );
    for (max_chunk_bytes, chunks) in [("1048576", 0), ("524288", len / chunk)] {
        let sql = format!(
            "SELECT v FROM read_zarr('{}', '', 'max_chunk_bytes', '{max_chunk_bytes}') \
             WHERE x = 5 OR x < -1",
            group.display()
        );
        let ctx = context();
        let plan = query(&ctx, &format!("EXPLAIN {sql}")).await.unwrap();
        let plan = arrow::util::pretty::pretty_format_batches(&plan)
            .unwrap()
            .to_string();
        assert!(plan.contains(&format!("chunks={chunks}")), "{plan}");
        let rows: usize = query(&ctx, &sql)
            .await
            .unwrap()
            .iter()
            .map(|b| b.num_rows())
            .sum();
        assert_eq!(rows, 0, "{sql}");
    }
}

/// xarray's `_ARRAY_DIMENSIONS` (Zarr V2) must be a list of strings (or nulls), one per
/// dimension; anything else is an error naming the attribute, as xarray refuses it.
#[tokio::test]
async fn array_dimensions_that_are_not_a_list_of_names_are_an_error() {
    for (dims, error) in [
        (
            json!("xy"),
            Some("_ARRAY_DIMENSIONS must be a list of strings"),
        ),
        (
            json!([1, null]),
            Some("_ARRAY_DIMENSIONS must be a list of strings"),
        ),
        (
            json!(["x"]),
            Some("_ARRAY_DIMENSIONS has 1 names for 2 dimensions"),
        ),
        (json!(["y", null]), None),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let zarray = json!({"zarr_format": 2, "shape": [2, 2], "chunks": [2, 2], "dtype": "<i4",
                            "compressor": null, "fill_value": 0, "order": "C", "filters": null});
        std::fs::write(dir.path().join(".zarray"), zarray.to_string()).unwrap();
        let zattrs = json!({ "_ARRAY_DIMENSIONS": dims });
        std::fs::write(dir.path().join(".zattrs"), zattrs.to_string()).unwrap();
        match error {
            Some(error) => {
                let e = open_error(&dir).await;
                assert!(e.contains(error), "{dims}: {e}");
            }
            None => {
                let sql = format!("SELECT * FROM read_zarr('{}')", dir.path().display());
                let batches = query(&context(), &sql).await.unwrap();
                let schema = batches[0].schema();
                let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
                assert_eq!(names, ["y", "dim_1", "value"]);
            }
        }
    }
}

/// One array of invalid metadata leaves its group readable: the table of every array names
/// it and why, the others can be chosen with `arrays`, and `inspect` lists it with why.
#[tokio::test]
async fn an_array_of_invalid_metadata_leaves_its_group_readable() {
    let dir = group_with_a(3);
    let group = dir.path();
    let mut bad = v3_array(&[3], &[3], "int32", json!(0), json!(["x"]));
    bad["chunk_grid"]["configuration"]["chunk_shape"] = json!([0]);
    write_node(group, "b", &bad);
    let e = open_error_at(group, "").await;
    assert!(
        e.contains("its array b cannot be read") && e.contains("option 'arrays'"),
        "{e}"
    );
    let sql = format!(
        "SELECT a FROM read_zarr('{}', '', 'arrays', 'a')",
        group.display()
    );
    let batches = query(&context(), &sql).await.unwrap();
    assert_eq!(to_json(column(&batches, "a").as_ref()), vec![json!(7); 3]);
    let e = error_of(&format!(
        "SELECT * FROM read_zarr('{}', '', 'arrays', 'a,b')",
        group.display()
    ))
    .await;
    assert!(e.contains("its array b cannot be read"), "{e}");

    let tree = datafusion_zarr::inspect(
        &datafusion::execution::runtime_env::RuntimeEnv::default(),
        group.to_str().unwrap(),
        &datafusion_zarr::ZarrOptions::default(),
    )
    .await
    .unwrap();
    let children = tree["children"].as_array().unwrap();
    assert_eq!(children[0]["path"], "a");
    assert_eq!(children[1]["path"], "b");
    assert!(
        children[1]["error"].as_str().unwrap().contains("/b: "),
        "{tree}"
    );
}

async fn error_of(sql: &str) -> String {
    match context().sql(sql).await {
        Ok(df) => match df.collect().await {
            Ok(_) => panic!("{sql} should fail"),
            Err(e) => e.to_string(),
        },
        Err(e) => e.to_string(),
    }
}

/// A `scale_factor` that is not a number is refused by name under `decode_cf` (xarray refuses
/// it too), rather than the stored numbers passing for decoded ones; `decode_cf = false` reads
/// them. A boolean `_FillValue` masks 1, as NumPy compares it.
#[tokio::test]
async fn packing_attributes_that_are_not_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let mut array = v3_array(&[3], &[3], "int8", json!(1), json!(["x"]));
    array["attributes"] = json!({"scale_factor": "0.5"});
    write_node(dir.path(), "", &array);
    let e = open_error(&dir).await;
    assert!(e.contains("scale_factor is \"0.5\", not a number"), "{e}");
    let sql = format!(
        "SELECT value FROM read_zarr('{}', '', 'decode_cf', 'false')",
        dir.path().display()
    );
    let batches = query(&context(), &sql).await.unwrap();
    assert_eq!(
        to_json(column(&batches, "value").as_ref()),
        vec![json!(1); 3]
    );

    array["attributes"] = json!({"_FillValue": true});
    write_node(dir.path(), "", &array);
    let sql = format!(
        "SELECT count(value) AS n FROM read_zarr('{}')",
        dir.path().display()
    );
    let batches = query(&context(), &sql).await.unwrap();
    assert_eq!(to_json(column(&batches, "n").as_ref()), [json!(0)]);
}

/// A netCDF character array whose strings are not whole in its chunks (chunks that split the
/// string length, a transpose moving it, V2's Fortran order) cannot be read joined as xarray
/// joins it: under `decode_cf` the array alone is an error naming the rule, its group keeps its
/// other arrays (a table of every array names it), and `decode_cf = false` reads its
/// characters, one per row.
#[tokio::test]
async fn character_arrays_whose_chunks_split_strings_are_named() {
    let characters = json!({"name": "null_terminated_bytes", "configuration": {"length_bytes": 1}});
    let character_array = |chunks: &[u64]| {
        let mut array = v3_array(&[2, 8], chunks, "int8", json!(""), json!(["x", "strlen"]));
        array["data_type"] = characters.clone();
        array
    };
    let mut moved = character_array(&[2, 8]);
    moved["codecs"] = json!([{"name": "transpose", "configuration": {"order": [1, 0]}},
                             {"name": "bytes"}]);
    for (array, rule) in [
        (
            character_array(&[2, 4]),
            "its chunk shape splits the 8 characters of a string into chunks of 4",
        ),
        (
            moved,
            "a transpose codec moves its string-length (last) dimension",
        ),
    ] {
        let dir = group_with_a(2);
        let group = dir.path();
        write_node(group, "s", &array);
        let e = open_error_at(group, "s").await;
        assert!(
            e.contains("/s: it is a netCDF character array")
                && e.contains(rule)
                && e.contains("decode_cf = false reads its characters"),
            "{e}"
        );
        let e = open_error_at(group, "").await;
        assert!(
            e.contains("its array s cannot be read") && e.contains(rule),
            "{e}"
        );
        let sql = format!(
            "SELECT a FROM read_zarr('{}', '', 'arrays', 'a')",
            group.display()
        );
        assert_eq!(values(&sql, "a").await, vec![json!(7); 2]);
        let sql = format!(
            "SELECT count(*) AS n FROM read_zarr('{}', '', 'decode_cf', 'false')",
            group.display()
        );
        assert_eq!(values(&sql, "n").await, [json!(16)]);
    }
    // Zarr V2 in Fortran order.
    let dir = tempfile::tempdir().unwrap();
    let zarray = json!({"zarr_format": 2, "shape": [2, 3], "chunks": [2, 3], "dtype": "|S1",
                        "compressor": null, "fill_value": null, "order": "F", "filters": null});
    std::fs::write(dir.path().join(".zarray"), zarray.to_string()).unwrap();
    let zattrs = json!({"_ARRAY_DIMENSIONS": ["x", "strlen"]});
    std::fs::write(dir.path().join(".zattrs"), zattrs.to_string()).unwrap();
    let e = open_error(&dir).await;
    assert!(e.contains("Fortran order"), "{e}");
    // Without dimension names it is not xarray's: bytes, one per element.
    std::fs::remove_file(dir.path().join(".zattrs")).unwrap();
    std::fs::write(dir.path().join("0.0"), b"aAbBcC").unwrap();
    let sql = format!(
        "SELECT encode(value, 'hex') AS v FROM read_zarr('{}') ORDER BY dim_0, dim_1",
        dir.path().display()
    );
    let batches = query(&context(), &sql).await.unwrap();
    let got = to_json(column(&batches, "v").as_ref());
    assert_eq!(got.len(), 6, "{got:?}");
}

/// xarray joins a character array only along a dimension it can "stack": none of the group's
/// arrays is named after it, and every array along it holds bytes with it last. A one-byte
/// flag beside numbers (`qc(time)` beside `t(time)`), or characters along a dimension with its
/// own coordinate, stay one character per row, in the group and opened alone, however chunked.
#[tokio::test]
async fn character_arrays_join_only_along_dimensions_xarray_stacks() {
    let characters = json!({"name": "null_terminated_bytes", "configuration": {"length_bytes": 1}});
    let dir = tempfile::tempdir().unwrap();
    let group = dir.path();
    write_node(group, "", &json!({"zarr_format": 3, "node_type": "group"}));
    let mut qc = v3_array(&[4], &[2], "int8", json!(""), json!(["time"]));
    qc["data_type"] = characters.clone();
    write_node(group, "qc", &qc);
    write_node(
        group,
        "t",
        &v3_array(&[4], &[4], "int32", json!(7), json!(["time"])),
    );
    // Characters along `n`, which has a coordinate of its own.
    let mut chars = v3_array(&[4, 2], &[4, 2], "int8", json!(""), json!(["time", "n"]));
    chars["data_type"] = characters;
    write_node(group, "chars", &chars);
    write_node(
        group,
        "n",
        &v3_array(&[2], &[2], "int32", json!(5), json!(["n"])),
    );
    for (array, chunk, bytes) in [
        ("qc", "c/0", &b"14"[..]),
        ("qc", "c/1", b"19"),
        ("chars", "c/0/0", b"abcdefgh"),
    ] {
        let path = group.join(array).join(chunk);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }
    let sql = format!(
        "SELECT DISTINCT time, encode(qc, 'hex') AS qc FROM read_zarr('{}', '', 'arrays', 'qc,t') \
         ORDER BY time",
        group.display()
    );
    let flags = ["31", "34", "31", "39"].map(|f| json!(f));
    assert_eq!(values(&sql, "qc").await, flags, "{sql}");
    let sql = format!(
        "SELECT encode(qc, 'hex') AS qc FROM read_zarr('{}', 'qc') ORDER BY time",
        group.display()
    );
    assert_eq!(values(&sql, "qc").await, flags, "{sql}");
    let sql = format!(
        "SELECT encode(chars, 'hex') AS c FROM read_zarr('{}', 'chars') ORDER BY time, n",
        group.display()
    );
    let got = values(&sql, "c").await;
    assert_eq!(got.len(), 8, "{got:?}");
    assert_eq!(got[1], json!("62"), "{got:?}");
}

/// A long string repeated on every row of a batch (a 0-D `history` beside 10,000 values) can
/// pass the 2 GiB a `Utf8` or `Binary` column holds: an error naming the column and the way
/// out, and `string_type = 'utf8view'` reads it.
#[tokio::test]
async fn a_long_string_repeated_past_two_gib_names_the_way_out() {
    let dir = tempfile::tempdir().unwrap();
    let group = dir.path();
    write_node(group, "", &json!({"zarr_format": 3, "node_type": "group"}));
    let mut history = v3_array(&[], &[], "int8", json!(""), json!([]));
    history["data_type"] =
        json!({"name": "null_terminated_bytes", "configuration": {"length_bytes": 300_000}});
    history["attributes"] = json!({"_Encoding": "utf-8"});
    write_node(group, "history", &history);
    std::fs::write(group.join("history").join("c"), vec![b'h'; 300_000]).unwrap();
    write_node(
        group,
        "v",
        &v3_array(&[10_000], &[10_000], "int32", json!(1), json!(["obs"])),
    );
    let sql = format!(
        "SELECT count(*) AS n, sum(octet_length(history)) AS s FROM read_zarr('{}')",
        group.display()
    );
    let e = error_of(&sql).await;
    assert!(
        e.contains("column history repeats") && e.contains("string_type = 'utf8view'"),
        "{e}"
    );
    let sql = format!(
        "SELECT count(*) AS n, sum(octet_length(history)) AS s \
         FROM read_zarr('{}', '', 'string_type', 'utf8view')",
        group.display()
    );
    let batches = query(&context(), &sql).await.unwrap();
    assert_eq!(
        to_json(column(&batches, "s").as_ref()),
        [json!(3_000_000_000u64)]
    );
}

/// Strings of no characters (a string length of 0, which netCDF allows) read as empty
/// strings, as xarray joins them: nothing is stored.
#[tokio::test]
async fn character_arrays_of_no_characters_are_empty_strings() {
    let dir = tempfile::tempdir().unwrap();
    let zarray = json!({"zarr_format": 2, "shape": [3, 0], "chunks": [2, 1], "dtype": "|S1",
                        "compressor": null, "fill_value": "eA==", "order": "C", "filters": null});
    std::fs::write(dir.path().join(".zarray"), zarray.to_string()).unwrap();
    let zattrs = json!({"_ARRAY_DIMENSIONS": ["x", "strlen"], "_Encoding": "utf-8"});
    std::fs::write(dir.path().join(".zattrs"), zattrs.to_string()).unwrap();
    // Objects where the joined strings' keys would be, outside the grid (a dimension of length
    // 0 has no chunks): never read (they were, as the strings "ab").
    std::fs::write(dir.path().join("0.0"), b"ab").unwrap();
    std::fs::write(dir.path().join("1.0"), b"ab").unwrap();
    let sql = format!(
        "SELECT value FROM read_zarr('{}') ORDER BY x",
        dir.path().display()
    );
    let batches = query(&context(), &sql).await.unwrap();
    assert_eq!(
        to_json(column(&batches, "value").as_ref()),
        vec![json!(""); 3]
    );
    let dir = tempfile::tempdir().unwrap();
    let mut array = v3_array(
        &[2, 0],
        &[1, 4],
        "int8",
        json!("eA=="),
        json!(["x", "strlen"]),
    );
    array["data_type"] =
        json!({"name": "null_terminated_bytes", "configuration": {"length_bytes": 1}});
    write_node(dir.path(), "", &array);
    std::fs::create_dir_all(dir.path().join("c/0")).unwrap();
    std::fs::write(dir.path().join("c/0/0"), b"ab").unwrap();
    let sql = format!(
        "SELECT encode(value, 'hex') AS v FROM read_zarr('{}') ORDER BY x",
        dir.path().display()
    );
    let batches = query(&context(), &sql).await.unwrap();
    assert_eq!(to_json(column(&batches, "v").as_ref()), vec![json!(""); 2]);
}

/// One check for every numcodecs configuration, wherever it appears: a V2 `compressor` of
/// `shuffle` with `elementsize` 0 divided by zero in zarrs (only `filters` were checked).
#[tokio::test]
async fn a_v2_compressor_is_checked_as_filters_are() {
    for (compressor, filters) in [
        (json!({"id": "shuffle", "elementsize": 0}), json!(null)),
        (json!(null), json!([{"id": "shuffle", "elementsize": 0}])),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let zarray = json!({"zarr_format": 2, "shape": [4], "chunks": [4], "dtype": "<i4",
                            "compressor": compressor, "fill_value": 0, "order": "C",
                            "filters": filters});
        std::fs::write(dir.path().join(".zarray"), zarray.to_string()).unwrap();
        std::fs::write(dir.path().join("0"), [0u8; 16]).unwrap();
        let e = open_error(&dir).await;
        assert!(
            e.contains("shuffle elementsize 0 is not a positive integer"),
            "{e}"
        );
    }
}

/// NCZarr's `dimrefs` of the wrong length are an error, as `_ARRAY_DIMENSIONS` of the wrong
/// length is (they were dropped, and a character array read one byte per row).
#[tokio::test]
async fn nczarr_dimrefs_of_the_wrong_length_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let zarray = json!({"zarr_format": 2, "shape": [2, 3], "chunks": [2, 3], "dtype": "|S1",
                        "compressor": null, "fill_value": null, "order": "C", "filters": null,
                        "_NCZARR_ARRAY": {"dimrefs": ["/station"], "storage": "chunked"}});
    std::fs::write(dir.path().join(".zarray"), zarray.to_string()).unwrap();
    let e = open_error(&dir).await;
    assert!(
        e.contains("_NCZARR_ARRAY.dimrefs has 1 names for 2 dimensions"),
        "{e}"
    );
}
