//! One test per rule of the data types and the table model, on committed fixtures written by
//! zarr-python 3.1.6, xarray and netCDF-C (`tests/data/fixtures/make_fixtures.py`) and by
//! zarr-python 2 (`make_zarr2_fixtures.py`).

use std::path::{Path, PathBuf};

use arrow::datatypes::DataType;
use serde_json::{Value, json};

use zarr_test_support::*;

fn expected() -> Value {
    let text = std::fs::read_to_string(root().join("tests/data/fixtures/expected.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

async fn error(sql: &str) -> String {
    let ctx = context();
    match ctx.sql(sql).await {
        Ok(df) => match df.collect().await {
            Ok(_) => panic!("{sql} should fail"),
            Err(e) => e.to_string(),
        },
        Err(e) => e.to_string(),
    }
}

/// The `value` column of the fixture `store`, in index order.
async fn store_values(store: &str) -> Vec<Value> {
    let sql = format!(
        "SELECT value FROM read_zarr('{}') ORDER BY dim_0",
        fixture(store)
    );
    values(&sql, "value").await
}

/// A copy in `dir` of the fixture `store` (its metadata and its first chunk only), with that
/// chunk changed by `edit`. Returns the copy and the chunk's key.
fn with_first_chunk(
    dir: &Path,
    store: &str,
    edit: impl FnOnce(Vec<u8>) -> Vec<u8>,
) -> (PathBuf, &'static str) {
    let src = root().join("tests/data/fixtures").join(store);
    let (meta, chunk) = match src.join("zarr.json").exists() {
        true => ("zarr.json", "c/0"),
        false => (".zarray", "0"),
    };
    let copy = dir.join(store);
    std::fs::create_dir_all(copy.join("c")).unwrap();
    std::fs::copy(src.join(meta), copy.join(meta)).unwrap();
    let bytes = std::fs::read(src.join(chunk)).unwrap();
    std::fs::write(copy.join(chunk), edit(bytes)).unwrap();
    (copy, chunk)
}

#[tokio::test]
async fn v2_big_endian_order_f_slash_separator_and_null_fill() {
    let store = fixture("v2_be_order_f.zarr");
    let got = values(
        &format!("SELECT * FROM read_zarr('{store}') ORDER BY dim_0, dim_1"),
        "value",
    )
    .await;
    assert_eq!(Value::Array(got), expected()["v2_be_order_f"]["values"]);
}

#[tokio::test]
async fn zero_d_array_has_one_row_and_no_index_column() {
    let store = fixture("zero_d.zarr");
    let ctx = context();
    let batches = query(&ctx, &format!("SELECT * FROM read_zarr('{store}')"))
        .await
        .unwrap();
    assert_eq!(batches[0].schema().fields().len(), 1);
    assert_eq!(
        to_json(column(&batches, "value").as_ref()),
        vec![json!("héllo")]
    );
}

#[tokio::test]
async fn numeric_bool_and_vlen_string_columns() {
    let store = fixture("types.zarr");
    let ctx = context();
    let batches = query(
        &ctx,
        &format!("SELECT * FROM read_zarr('{store}') ORDER BY i"),
    )
    .await
    .unwrap();
    let schema = batches[0].schema();
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    // The complex64 array is left out; the rest are sorted by name after the index column.
    assert_eq!(
        names,
        [
            "i", "b", "f16", "f32", "f64", "i16", "i32", "i64", "i8", "s", "u16", "u32", "u64",
            "u8"
        ]
    );
    let types = [
        ("b", DataType::Boolean),
        ("f16", DataType::Float16),
        ("f32", DataType::Float32),
        ("f64", DataType::Float64),
        ("i8", DataType::Int8),
        ("i64", DataType::Int64),
        ("u64", DataType::UInt64),
        ("s", DataType::Utf8),
    ];
    for (name, t) in types {
        assert_eq!(
            schema.field_with_name(name).unwrap().data_type(),
            &t,
            "{name}"
        );
    }
    let exp = expected();
    for (name, want) in exp["types"]["columns"].as_object().unwrap() {
        let got = to_json(column(&batches, name).as_ref());
        let want = want.as_array().unwrap();
        assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(want) {
            assert!(same(g, w), "{name}: got {g}, expected {w}");
        }
    }
}

#[tokio::test]
async fn unsupported_type_is_an_error_only_when_used() {
    let store = fixture("types.zarr");
    let e = error(&format!("SELECT * FROM read_zarr('{store}', 'c')")).await;
    assert!(
        e.contains("unsupported data type complex64 in array"),
        "{e}"
    );
    let e = error(&format!(
        "SELECT * FROM read_zarr('{store}', '', 'arrays', 'i8,c')"
    ))
    .await;
    assert!(e.contains("unsupported data type complex64"), "{e}");
}

#[tokio::test]
async fn columns_with_different_chunk_shapes_line_up() {
    let store = fixture("mixed_chunks.zarr");
    let exp = expected();
    let sql = format!("SELECT * FROM read_zarr('{store}') ORDER BY y, x");
    for name in ["a", "b", "c", "d"] {
        let got = values(&sql, name).await;
        assert_eq!(
            Value::Array(got),
            exp["mixed_chunks"][name],
            "column {name}"
        );
    }
    // A different grid array (the first of `arrays`) gives the same rows.
    let sql = format!("SELECT * FROM read_zarr('{store}', '', 'arrays', 'd,b,a') ORDER BY y, x");
    for name in ["a", "b", "d"] {
        let got = values(&sql, name).await;
        assert_eq!(
            Value::Array(got),
            exp["mixed_chunks"][name],
            "column {name}, grid d"
        );
    }
}

#[tokio::test]
async fn fill_as_null_turns_fill_values_into_nulls() {
    let store = fixture("fills.zarr");
    let exp = expected();
    let sql = format!("SELECT * FROM read_zarr('{store}', '', 'fill_as_null', 'true') ORDER BY i");
    for name in ["ints", "floats", "strs"] {
        let got = values(&sql, name).await;
        assert_eq!(Value::Array(got), exp["fills"][name], "column {name}");
    }
    // Without the option, fill values are values.
    let sql = format!("SELECT * FROM read_zarr('{store}') ORDER BY i");
    assert_eq!(
        values(&sql, "ints").await,
        [
            json!(5),
            json!(-1),
            json!(7),
            json!(8),
            json!(-1),
            json!(-1),
            json!(-1),
            json!(-1)
        ]
    );
    assert_eq!(values(&sql, "strs").await[1], json!("n/a"));
    // Corpus case 09: the fill "n/a" becomes NULL, the explicit "" at 29 does not.
    let store = corpus_store("09_fill_value_missing_chunks");
    let sql =
        format!("SELECT * FROM read_zarr('{store}', '', 'fill_as_null', 'true') ORDER BY dim_0");
    let got = values(&sql, "value").await;
    assert_eq!(got[29], json!(""));
    let nulls = got.iter().filter(|v| v.is_null()).count();
    assert!(nulls > 0);
}

#[tokio::test]
async fn invalid_code_units_under_each_mode() {
    let store = fixture("invalid_utf32.zarr");
    let e = error(&format!("SELECT * FROM read_zarr('{store}')")).await;
    assert!(
        e.contains("chunk c/0, element 1: code unit 0x0000D800 is not a Unicode scalar value"),
        "{e}"
    );
    assert!(e.contains("invalid_utf32.zarr"), "names the array: {e}");
    let exp = expected();
    for mode in ["replace", "null"] {
        for string_type in ["utf8", "large_utf8", "utf8view"] {
            let sql = format!(
                "SELECT * FROM read_zarr('{store}', '', 'invalid_utf32', '{mode}', 'string_type', '{string_type}') ORDER BY dim_0"
            );
            let got = values(&sql, "value").await;
            assert_eq!(
                Value::Array(got),
                exp["invalid_utf32"][mode],
                "{mode} {string_type}"
            );
        }
    }
}

#[tokio::test]
async fn string_types_give_the_same_strings() {
    let store = corpus_store("10_unicode");
    let base = values(
        &format!("SELECT * FROM read_zarr('{store}') ORDER BY dim_0"),
        "value",
    )
    .await;
    for t in ["utf8view", "large_utf8"] {
        let sql =
            format!("SELECT * FROM read_zarr('{store}', '', 'string_type', '{t}') ORDER BY dim_0");
        assert_eq!(values(&sql, "value").await, base, "{t}");
    }
    let ctx = context();
    let sql = format!(
        "SELECT * FROM read_zarr('{store}', '', 'string_type', 'fixed_size_binary') ORDER BY dim_0"
    );
    let batches = query(&ctx, &sql).await.unwrap();
    let col = column(&batches, "value");
    assert_eq!(col.data_type(), &DataType::FixedSizeBinary(40));
    let bin = col
        .as_any()
        .downcast_ref::<arrow::array::FixedSizeBinaryArray>()
        .unwrap();
    for (i, s) in base.iter().enumerate() {
        let decoded: String = bin
            .value(i)
            .chunks_exact(4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .take_while(|&u| u != 0)
            .map(|u| char::from_u32(u).unwrap())
            .collect();
        // The corpus has no interior NUL, so stopping at the first one is the trailing trim.
        assert_eq!(Value::String(decoded), *s, "element {i}");
    }
}

#[tokio::test]
async fn case_13_coordinate_table() {
    let store = corpus_store("13_group_consolidated_metadata");
    let ctx = context();
    let batches = query(&ctx, &format!("SELECT * FROM read_zarr('{store}')"))
        .await
        .unwrap();
    let schema = batches[0].schema();
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    assert_eq!(names, ["station", "label", "value"]);
    assert_eq!(schema.field(0).data_type(), &DataType::Utf8);
    let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
    assert_eq!(rows, 27);
    let text =
        std::fs::read_to_string(corpus().join("13_group_consolidated_metadata/expected.json"))
            .unwrap();
    let exp: Value = serde_json::from_str(&text).unwrap();
    let station = exp["arrays"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["path"] == "station")
        .unwrap();
    let sql = format!("SELECT * FROM read_zarr('{store}') ORDER BY station");
    let mut want = station["values"].as_array().unwrap().clone();
    want.sort_by(|a, b| a.as_str().cmp(&b.as_str()));
    assert_eq!(values(&sql, "station").await, want);
    // The array on its own: the index column is renamed to avoid the clash.
    let batches = query(
        &ctx,
        &format!("SELECT * FROM read_zarr('{store}', 'station')"),
    )
    .await
    .unwrap();
    let names: Vec<String> = batches[0]
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    assert_eq!(names, ["station_index", "station"]);
}

/// A scan pruned to no rows is not said to have exactly none: DataFusion 55 answers
/// `sum(1)` over an exact 0 rows from statistics as 0, where SQL's answer is NULL.
#[tokio::test]
async fn an_aggregate_over_a_scan_pruned_to_nothing_is_null() {
    let store = fixture("broadcast_v3.zarr");
    let sql = format!(
        "SELECT sum(x) AS s, count(*) AS n, max(x) AS m \
         FROM (SELECT 1 AS x FROM read_zarr('{store}') WHERE time > 1000)"
    );
    assert_eq!(values(&sql, "s").await, [Value::Null]);
    assert_eq!(values(&sql, "m").await, [Value::Null]);
    assert_eq!(values(&sql, "n").await, [json!(0)]);
}

/// Attributes holding NaN and infinities, which Python's json writes as bare `NaN` and
/// `Infinity`, on the array, its group or another array: the stores read as xarray reads them.
#[tokio::test]
async fn attributes_of_nan_and_infinity_as_python_writes_them() {
    let exp = &expected()["nan_attributes"];
    for store in exp["stores"].as_array().unwrap() {
        let store = fixture(store.as_str().unwrap());
        let sql = format!("SELECT sst, other FROM read_zarr('{store}') ORDER BY time");
        assert_eq!(Value::Array(values(&sql, "sst").await), exp["sst"], "{sql}");
        assert_eq!(
            Value::Array(values(&sql, "other").await),
            exp["other"],
            "{sql}"
        );
        let sql = format!("SELECT sst FROM read_zarr('{store}', 'sst') ORDER BY time");
        assert_eq!(Value::Array(values(&sql, "sst").await), exp["sst"], "{sql}");
    }
}

/// Asserts that each column of `names` of `SELECT {select} FROM read_zarr(store) ORDER BY
/// {order}` equals `want[name]`, with 1 and with 3 partitions; returns the last result.
async fn assert_columns(
    store: &str,
    select: &[String],
    order: &str,
    names: &[&str],
    want: &Value,
) -> Vec<arrow::array::RecordBatch> {
    let mut batches = Vec::new();
    for partitions in [1, 3] {
        let ctx = context_with_partitions(partitions);
        let sql = format!(
            "SELECT {} FROM read_zarr('{store}') ORDER BY {order}",
            select.join(", ")
        );
        batches = query(&ctx, &sql)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
        for name in names {
            let got = to_json(column(&batches, name).as_ref());
            assert_eq!(Value::Array(got), want[*name], "{store} {name}");
        }
    }
    batches
}

/// Arrays of fewer dimensions repeat along the table's others, as xarray's `to_dataframe`
/// repeats them: 2-D coordinates `lat(y, x)` beside `temp(time, y, x)`, `w(x, y)` in the
/// other order, `vt(x, time, y)` transposed, a 0-D `crs`, each chunked differently from the
/// table; also on the rows a string filter selects.
#[tokio::test]
async fn arrays_of_fewer_dimensions_repeat_as_xarrays_to_dataframe_repeats_them() {
    let exp = &expected()["broadcast"];
    let names = [
        "time", "y", "x", "temp", "flag", "w", "crs", "name", "lat", "lon",
    ];
    let want = &exp["columns"];
    for store in exp["stores"].as_array().unwrap() {
        let store = fixture(store.as_str().unwrap());
        let select = names.map(str::to_string);
        assert_columns(&store, &select, "time, y, x", &names, want).await;
        // The rows a string filter selects (read first, the rest transcoded for them only).
        let sql = format!(
            "SELECT time, y, x, w, crs, lat FROM read_zarr('{store}') \
             WHERE flag = 'hi' ORDER BY time, y, x"
        );
        let batches = query(&context(), &sql)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
        let hi: Vec<usize> = (0..want["flag"].as_array().unwrap().len())
            .filter(|&i| want["flag"][i] == "hi")
            .collect();
        for name in ["time", "y", "x", "w", "crs", "lat"] {
            let got = to_json(column(&batches, name).as_ref());
            let expected: Vec<Value> = hi.iter().map(|&i| want[name][i].clone()).collect();
            assert_eq!(got, expected, "{store} {name} where flag = 'hi'");
        }
    }
}

/// netCDF character arrays (`S1`, the last dimension the string length) read as xarray joins
/// them: `name(station, name_strlen)` with `_Encoding: utf-8` as strings (a chunk never
/// written reads as the fill), `code` as bytes (sharded in V3), a 1-D `title` as one string
/// in every row, and the character coordinate `station` as the station column; also on the
/// rows a filter on the joined strings selects. `decode_cf = false` reads the characters.
#[tokio::test]
async fn character_arrays_are_strings_as_xarray_joins_them() {
    let exp = &expected()["characters"];
    let want = &exp["columns"];
    let names = ["station", "time", "name", "title", "code", "qc", "temp"];
    let hex = |name: &str| match name {
        "station" | "title" | "code" | "qc" => format!("encode({name}, 'hex') AS {name}"),
        _ => name.to_string(),
    };
    let select: Vec<String> = names.iter().map(|n| hex(n)).collect();
    for store in exp["stores"].as_array().unwrap() {
        let store = fixture(store.as_str().unwrap());
        let batches = assert_columns(&store, &select, "station, time", &names, want).await;
        let schema = batches[0].schema();
        let name_type = schema.field_with_name("name").unwrap().data_type();
        assert_eq!(name_type, &DataType::Utf8, "{store}");
        let sql = format!(
            "SELECT encode(station, 'hex') AS station, time FROM read_zarr('{store}') \
             WHERE name = 'süd' ORDER BY time"
        );
        assert_eq!(
            values(&sql, "station").await,
            vec![json!("73742d62"); 3],
            "{sql}"
        );
        let sql = format!(
            "SELECT name FROM read_zarr('{store}') WHERE station = X'73742d64' AND time = 2"
        );
        assert_eq!(values(&sql, "name").await, [json!("Zugspitze")], "{sql}");
        // One array alone, and its characters as stored.
        let sql = format!("SELECT name FROM read_zarr('{store}', 'name') ORDER BY station");
        let joined: Vec<Value> = (0..6).map(|i| want["name"][i * 3].clone()).collect();
        assert_eq!(values(&sql, "name").await, joined, "{sql}");
        let sql = format!(
            "SELECT count(*) AS n, count(DISTINCT name_strlen) AS k \
             FROM read_zarr('{store}', 'name', 'decode_cf', 'false')"
        );
        assert_eq!(values(&sql, "n").await, [json!(60)], "{sql}");
        assert_eq!(values(&sql, "k").await, [json!(10)], "{sql}");
        // The one-byte flag stays one character per row, in its group and alone, as xarray
        // leaves it: `station` is a coordinate and other arrays lie along it.
        let flags: Vec<Value> = (0..6).map(|i| want["qc"][i * 3].clone()).collect();
        for path in ["", "qc"] {
            let sql = format!(
                "SELECT DISTINCT station, encode(qc, 'hex') AS qc \
                 FROM read_zarr('{store}', '{path}') ORDER BY station"
            );
            assert_eq!(values(&sql, "qc").await, flags, "{sql}");
        }
    }
}

/// netCDF-C's NCZarr as `nccopy` writes it (netCDF 4.9.0): `char` variables stored as `<U1`
/// of one byte per element, which zarr-python and xarray cannot read, are joined into the
/// CDL's strings (with `_Encoding`) and bytes; dimension names come from `_ARRAY_DIMENSIONS`
/// or, without xarray's attribute, from `_NCZARR_ARRAY.dimrefs`.
#[tokio::test]
async fn nczarr_character_arrays_and_dimension_names() {
    let exp = &expected()["nczarr"];
    for store in exp["stores"].as_array().unwrap() {
        let store = fixture(store.as_str().unwrap());
        let sql =
            format!("SELECT time, station, temp FROM read_zarr('{store}') ORDER BY time, station");
        let batches = query(&context(), &sql)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
        for name in ["station", "temp"] {
            let got = to_json(column(&batches, name).as_ref());
            assert_eq!(Value::Array(got), exp[name], "{store} {name}");
        }
        let time = column(&batches, "time");
        let time = arrow::compute::cast(&time, &DataType::Int64).unwrap();
        assert_eq!(Value::Array(to_json(time.as_ref())), exp["time"], "{store}");
        let sql = format!(
            "SELECT station_name, encode(code, 'hex') AS code FROM read_zarr('{store}') \
             WHERE time = TIMESTAMP '2000-01-01 06:00:00' ORDER BY station"
        );
        assert_eq!(
            Value::Array(values(&sql, "station_name").await),
            exp["station_name"],
            "{sql}"
        );
        assert_eq!(
            Value::Array(values(&sql, "code").await),
            exp["code"],
            "{sql}"
        );
    }
}

/// A group written by zarr-python 2 (`make_zarr2_fixtures.py`): object arrays of the `json2`
/// codec, structured, void and complex arrays are left out of the group's table as types we
/// do not read (naming one is an error that says so), and a `vlen-utf8` array whose fill is the
/// integer 0 reads its never-written chunk as "0", as zarr-python 3 reads it.
#[tokio::test]
async fn a_zarr_python_2_group_leaves_out_the_types_it_does_not_read() {
    let path = root().join("tests/data/fixtures/expected_zarr2.json");
    let text = std::fs::read_to_string(path).unwrap();
    let exp: Value = serde_json::from_str(&text).unwrap();
    let store = fixture("zarr2_group.zarr");
    let sql = format!("SELECT * FROM read_zarr('{store}') ORDER BY dim_0");
    let batches = query(&context(), &sql).await.unwrap();
    let schema = batches[0].schema();
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    assert_eq!(names, ["dim_0", "s", "words"]);
    for name in ["s", "words"] {
        let got = to_json(column(&batches, name).as_ref());
        assert_eq!(Value::Array(got), exp[name], "{name}");
    }
    for (array, shown) in [
        ("m", "unsupported data type |O (json2)"),
        (
            "st",
            "unsupported data type [[\"a\",\"<i4\"],[\"b\",\"<f8\"]]",
        ),
        ("v", "unsupported data type |V4"),
        ("c", "unsupported data type <c16"),
    ] {
        let e = error(&format!("SELECT * FROM read_zarr('{store}', '{array}')")).await;
        assert!(e.contains(shown), "{array}: {e}");
    }
}

#[tokio::test]
async fn xarray_coordinates_become_dimension_columns() {
    let exp = expected();
    for store in ["xarray_v3.zarr", "xarray_v2.zarr"] {
        let store = fixture(store);
        // Every array: the 1-D `name` along `station` is repeated along `hour`, as xarray's
        // to_dataframe repeats it.
        let sql = format!("SELECT * FROM read_zarr('{store}') ORDER BY station, hour");
        let ctx = context();
        let batches = query(&ctx, &sql).await.unwrap();
        let schema = batches[0].schema();
        let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
        assert_eq!(
            names,
            ["station", "hour", "label", "name", "temp"],
            "{store}"
        );
        for name in ["station", "hour", "label", "name", "temp"] {
            let got = to_json(column(&batches, name).as_ref());
            let want = exp["xarray"][name].as_array().unwrap();
            assert_eq!(got.len(), want.len(), "{store} {name}");
            assert!(
                got.iter().zip(want).all(|(g, w)| same(g, w)),
                "{store} {name}: {got:?}"
            );
        }
        let sql = format!(
            "SELECT count(*) AS n FROM read_zarr('{store}') WHERE name = 'Börde' AND hour > 0"
        );
        assert_eq!(values(&sql, "n").await, vec![json!(3)], "{sql}");
        let sql = format!(
            "SELECT * FROM read_zarr('{store}', '', 'arrays', 'temp,label') ORDER BY station, hour"
        );
        let ctx = context();
        let batches = query(&ctx, &sql).await.unwrap();
        let names: Vec<String> = batches[0]
            .schema()
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect();
        assert_eq!(names, ["station", "hour", "temp", "label"], "{store}");
        for name in ["station", "hour", "temp", "label"] {
            let got = to_json(column(&batches, name).as_ref());
            let want = exp["xarray"][name].as_array().unwrap();
            assert!(
                got.iter().zip(want).all(|(g, w)| same(g, w)),
                "{store} {name}: {got:?}"
            );
        }
    }
}

#[tokio::test]
async fn a_path_selects_a_node_and_bad_paths_are_errors() {
    let store = corpus_store("13_group_consolidated_metadata");
    let got = values(
        &format!("SELECT * FROM read_zarr('{store}', 'meta/source')"),
        "source",
    )
    .await;
    assert!(!got.is_empty());
    let e = error(&format!("SELECT * FROM read_zarr('{store}', 'nope')")).await;
    assert!(e.contains("no Zarr node here"), "{e}");
    let e = error(&format!("SELECT * FROM read_zarr('{store}', '../..')")).await;
    assert!(e.contains("'..'"), "{e}");
    let e = error(&format!(
        "SELECT * FROM read_zarr('{store}', '', 'colour', 'red')"
    ))
    .await;
    assert!(
        e.contains("unknown option 'colour'") && e.contains("string_type"),
        "{e}"
    );
    let e = error(&format!(
        "SELECT * FROM read_zarr('{store}', '', 'string_type', 'utf16')"
    ))
    .await;
    assert!(e.contains("utf16"), "{e}");
}

#[tokio::test]
async fn create_external_table_accepts_options_in_either_form() {
    let store = corpus_store("13_group_consolidated_metadata");
    let ctx = context();
    ctx.sql(&format!(
        "CREATE EXTERNAL TABLE t STORED AS ZARR LOCATION '{store}' OPTIONS ('PATH' 'label', 'format.string_type' 'utf8view')"
    ))
    .await
    .unwrap();
    let batches = query(&ctx, "SELECT label FROM t").await.unwrap();
    assert_eq!(
        batches[0].schema().field(0).data_type(),
        &DataType::Utf8View
    );
    let e = ctx
        .sql(&format!(
            "CREATE EXTERNAL TABLE u STORED AS ZARR LOCATION '{store}' OPTIONS ('bogus' '1')"
        ))
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("unknown option 'bogus'"), "{e}");
}

/// numcodecs' LZ4 (zarrs has none; `codecs/lz4.rs`): V2 compressor and V3 codec, and the
/// refusals of a header claiming more than the chunk declares and of a cut block.
#[tokio::test]
async fn numcodecs_lz4_v2_and_v3() {
    let exp = expected();
    for store in ["lz4_v2.zarr", "lz4_v3.zarr"] {
        let got = values(
            &format!(
                "SELECT value FROM read_zarr('{}') ORDER BY dim_0",
                fixture(store)
            ),
            "value",
        )
        .await;
        assert_eq!(Value::Array(got), exp["lz4"][store], "{store}");
    }
    // Corrupt copies of the V3 store's first chunk (3 elements of 24 bytes: 72 bytes).
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("lz4.zarr");
    let src = root().join("tests/data/fixtures/lz4_v3.zarr");
    std::fs::create_dir_all(copy.join("c")).unwrap();
    std::fs::copy(src.join("zarr.json"), copy.join("zarr.json")).unwrap();
    let chunk = std::fs::read(src.join("c/0")).unwrap();
    let cases: [(&str, Vec<u8>); 3] = [
        ("a header claiming 2 GiB", {
            let mut c = chunk.clone();
            c[..4].copy_from_slice(&(1u32 << 31).to_le_bytes());
            c
        }),
        ("a block cut short", chunk[..chunk.len() - 3].to_vec()),
        ("no header", chunk[..2].to_vec()),
    ];
    let wants = [
        "lz4 header claims 2147483648 decoded bytes, more than the 72 the chunk declares",
        "lz4 data cannot be decoded",
        "shorter than its 4-byte size header",
    ];
    for ((what, bytes), want) in cases.into_iter().zip(wants) {
        std::fs::write(copy.join("c/0"), bytes).unwrap();
        let e = error(&format!("SELECT * FROM read_zarr('{}')", copy.display())).await;
        assert!(e.contains(want) && e.contains("c/0"), "{what}: {e}");
    }
}

/// zarr-python 3's `numcodecs.zarr3` codecs write numcodecs' own configurations, which zarrs
/// refuses: `numcodecs.zstd` without `checksum`, `numcodecs.blosc` with an integer shuffle and
/// no `typesize`. Values (non-ASCII, and a chunk never written) against zarr-python, and a
/// corrupted chunk of each is an error naming the chunk.
#[tokio::test]
async fn numcodecs_zstd_and_blosc_as_zarr_python_3_writes_them() {
    let exp = expected();
    for (store, want) in [
        ("numcodecs_zstd_v3.zarr", "zstd"),
        ("numcodecs_blosc_v3.zarr", "blosc"),
    ] {
        let got = store_values(store).await;
        assert_eq!(Value::Array(got), exp["numcodecs_v3"][store], "{store}");
        assert!(
            !root()
                .join("tests/data/fixtures")
                .join(store)
                .join("c/3")
                .exists(),
            "{store}: chunk 3 is missing, read as the fill value"
        );
        // The first chunk with its middle bytes flipped.
        let dir = tempfile::tempdir().unwrap();
        let (copy, _) = with_first_chunk(dir.path(), store, |mut chunk| {
            let middle = chunk.len() / 2;
            for b in &mut chunk[middle.saturating_sub(4)..middle + 4] {
                *b ^= 0xA5;
            }
            chunk
        });
        let e = error(&format!(
            "SELECT value FROM read_zarr('{}')",
            copy.display()
        ))
        .await;
        assert!(e.contains("chunk c/0"), "{store}: names the chunk: {e}");
        assert!(
            e.to_lowercase().contains(want) || e.contains("cannot decode"),
            "{store}: {e}"
        );
    }
}

/// numcodecs' checksums (`codecs/checksum.rs`), V3 after the bytes codec and V2 as a filter:
/// values against zarr-python, and a flipped byte in a chunk is a checksum mismatch that names
/// the codec and the chunk.
#[tokio::test]
async fn numcodecs_checksums_v2_and_v3() {
    let exp = expected();
    let stores = exp["checksums"].as_object().unwrap();
    assert_eq!(stores.len(), 10);
    for (store, want) in stores {
        assert_eq!(&Value::Array(store_values(store).await), want, "{store}");
        let id = store
            .trim_start_matches("checksum_")
            .trim_end_matches("_v2.zarr")
            .trim_end_matches("_v3.zarr");
        let dir = tempfile::tempdir().unwrap();
        let (copy, chunk) = with_first_chunk(dir.path(), store, |mut bytes| {
            let middle = bytes.len() / 2;
            bytes[middle] ^= 0x01;
            bytes
        });
        let e = error(&format!(
            "SELECT value FROM read_zarr('{}')",
            copy.display()
        ))
        .await;
        assert!(
            e.contains(&format!("{id} checksum mismatch")),
            "{store}: {e}"
        );
        assert!(
            e.contains(&format!("chunk {chunk}:")),
            "{store}: names the chunk: {e}"
        );
    }
}

/// numcodecs' LZMA (`codecs/lzma.rs`): V2 `.xz` and `.lzma` containers and the V3 codec, with
/// values against zarr-python; a chunk cut short is an error naming the chunk. (The bomb is in
/// `bombs.rs`.)
#[tokio::test]
async fn numcodecs_lzma_v2_and_v3() {
    let exp = expected();
    let stores = exp["lzma"].as_object().unwrap();
    assert_eq!(stores.len(), 3);
    for (store, want) in stores {
        assert_eq!(&Value::Array(store_values(store).await), want, "{store}");
        let dir = tempfile::tempdir().unwrap();
        let (copy, chunk) =
            with_first_chunk(dir.path(), store, |bytes| bytes[..bytes.len() - 8].to_vec());
        let e = error(&format!(
            "SELECT value FROM read_zarr('{}')",
            copy.display()
        ))
        .await;
        assert!(e.contains("lzma data cannot be decoded"), "{store}: {e}");
        assert!(
            e.contains(&format!("chunk {chunk}:")),
            "{store}: names the chunk: {e}"
        );
    }
}

/// numcodecs' Delta (over the UTF-32 code units) and Categorize filters in Zarr V2
/// (`codecs/delta.rs`, `codecs/categorize.rs`): values against zarr-python, a delta chunk of
/// the wrong size and a categorize code that names no label are errors naming the chunk.
#[tokio::test]
async fn numcodecs_delta_and_categorize_v2() {
    let exp = expected();
    for (store, want) in exp["v2_filters"].as_object().unwrap() {
        assert_eq!(&Value::Array(store_values(store).await), want, "{store}");
    }
    let dir = tempfile::tempdir().unwrap();
    for (store, corrupt, message) in [
        (
            "delta_v2.zarr",
            (|mut b: Vec<u8>| {
                // Not zstd any more: a different frame of 4 fewer bytes.
                let raw = zstd::bulk::decompress(&b, 1 << 20).unwrap();
                b = zstd::bulk::compress(&raw[..raw.len() - 4], 1).unwrap();
                b
            }) as fn(Vec<u8>) -> Vec<u8>,
            // zstd, before delta, already sees the short chunk.
            "decompresses to 68 bytes, the chunk declares 72",
        ),
        (
            "categorize_v2.zarr",
            |mut b: Vec<u8>| {
                b[1] = 9;
                b
            },
            "categorize code 9 names no label (there are 3)",
        ),
    ] {
        let (copy, _) = with_first_chunk(dir.path(), store, corrupt);
        let e = error(&format!(
            "SELECT value FROM read_zarr('{}')",
            copy.display()
        ))
        .await;
        assert!(e.contains(message), "{store}: {e}");
        assert!(e.contains("chunk 0:"), "{store}: names the chunk: {e}");
    }
}

/// numcodecs' AsType (`codecs/astype.rs`) on numeric arrays: float64 stored as float32 (V3)
/// and int64 stored as int16 (V2), values against zarr-python; a chunk of the wrong size is an
/// error naming the chunk.
#[tokio::test]
async fn numcodecs_astype_v2_and_v3() {
    let exp = expected();
    let stores = exp["astype"].as_object().unwrap();
    assert_eq!(stores.len(), 2);
    let dir = tempfile::tempdir().unwrap();
    for (store, want) in stores {
        let got = store_values(store).await;
        let same = got.len() == want.as_array().unwrap().len()
            && got
                .iter()
                .zip(want.as_array().unwrap())
                .all(|(g, w)| same(g, w));
        assert!(same, "{store}: {got:?} vs {want}");
        let (copy, chunk) = with_first_chunk(dir.path(), store, |b| {
            b[..b.len().saturating_sub(1)].to_vec()
        });
        let e = error(&format!(
            "SELECT value FROM read_zarr('{}')",
            copy.display()
        ))
        .await;
        assert!(
            e.contains(&format!("chunk {chunk}:")),
            "{store}: names the chunk: {e}"
        );
    }
}

/// numcodecs' lossy numeric filters as zarr-python 2 and 3 write them (`codecs/
/// fixedscaleoffset.rs`, `codecs/astype.rs`'s quantize, `codecs/bitround.rs`,
/// `codecs/packbits.rs`), PCodec (`codecs/pcodec.rs`) and Delta on numbers (`codecs/delta.rs`):
/// every value equal to zarr-python's (NumPy's arithmetic, to the bit; for the big-endian V3
/// store, numcodecs' decoding of the stored values, which zarr-python 3.1.6 misreads); a chunk
/// that breaks a filter's rule is an error naming the chunk and the rule.
#[tokio::test]
async fn numcodecs_numeric_filters_and_pcodec_v2_and_v3() {
    let exp = expected();
    let stores = exp["lossy_filters"].as_object().unwrap();
    assert_eq!(stores.len(), 16);
    for (store, want) in stores {
        let got = store_values(store).await;
        let want = want.as_array().unwrap();
        let equal = got.len() == want.len() && got.iter().zip(want).all(|(g, w)| same(g, w));
        assert!(equal, "{store}: {got:?} vs {want:?}");
    }
    let dir = tempfile::tempdir().unwrap();
    for (store, corrupt, rule) in [
        (
            "packbits_v2.zarr",
            (|mut b: Vec<u8>| {
                b[0] = 9;
                b
            }) as fn(Vec<u8>) -> Vec<u8>,
            "packbits data says 9 bits pad its last byte; at most 7 can",
        ),
        (
            "packbits_v2.zarr",
            |mut b: Vec<u8>| {
                b.push(0);
                b
            },
            "packbits data of 4 bytes with 6 padding bits holds 18 booleans; the chunk declares",
        ),
        (
            "fixedscaleoffset_v2.zarr",
            |b: Vec<u8>| b[..b.len() - 1].to_vec(),
            "fixedscaleoffset data is 11 bytes of 4-byte elements",
        ),
        (
            "quantize_v2.zarr",
            |b: Vec<u8>| b[..b.len() - 4].to_vec(),
            "quantize data is 8 bytes of 4-byte elements",
        ),
    ] {
        let (copy, chunk) = with_first_chunk(dir.path(), store, corrupt);
        let e = error(&format!(
            "SELECT value FROM read_zarr('{}')",
            copy.display()
        ))
        .await;
        assert!(e.contains(rule), "{store}: {e}");
        assert!(
            e.contains(&format!("chunk {chunk}:")),
            "{store}: names the chunk: {e}"
        );
    }
}

/// Child arrays whose names are not plain ASCII words (`é`, `日本`, `a%b`, `a#b`, `a b`), as
/// zarr-python writes them: each read from its own directory in a V3 group found by listing
/// and in a consolidated V2 group, and by its path.
#[tokio::test]
async fn child_arrays_with_unusual_names() {
    let exp = expected();
    for (store, arrays) in exp["names"].as_object().unwrap() {
        let location = fixture(store);
        let sql = format!("SELECT * FROM read_zarr('{location}') ORDER BY dim_0");
        let ctx = context();
        let batches = query(&ctx, &sql)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
        for (name, want) in arrays.as_object().unwrap() {
            let got = to_json(column(&batches, name).as_ref());
            assert_eq!(&Value::Array(got), want, "{store}: {name}");
            let sql = format!("SELECT * FROM read_zarr('{location}', '{name}') ORDER BY dim_0");
            assert_eq!(&Value::Array(values(&sql, name).await), want, "{sql}");
        }
    }
}

/// NumPy's datetime64, timedelta64, `S` and variable-length bytes arrays, V2 and V3, read as
/// pyarrow maps them: each element's int64 (NaT is NULL) and the bytes zarr-python returns
/// (trailing NULs removed), against what zarr-python read when it wrote the fixture. A datetime64[h] has no
/// Arrow type: it is left out of the group table and refused by name when asked for.
#[tokio::test]
async fn numpy_datetime_timedelta_and_bytes_v2_and_v3() {
    let exp = expected();
    for (store, columns) in exp["numpy_types"].as_object().unwrap() {
        let location = fixture(store);
        // The V3 arrays name their dimension (V2 arrays outside xarray do not).
        let dim = if store.ends_with("v3.zarr") {
            "i"
        } else {
            "dim_0"
        };
        let ctx = context();
        let sql = format!(
            "SELECT arrow_typeof(ts_ns) AS ts_ns, arrow_typeof(ts_s) AS ts_s, \
                    arrow_typeof(day) AS day, arrow_typeof(td_ms) AS td_ms, \
                    arrow_typeof(code) AS code, arrow_typeof(blob) AS blob \
             FROM read_zarr('{location}') LIMIT 1"
        );
        let batches = query(&ctx, &sql)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
        let types: Vec<Value> = ["ts_ns", "ts_s", "day", "td_ms", "code", "blob"]
            .iter()
            .flat_map(|c| to_json(column(&batches, c).as_ref()))
            .collect();
        assert_eq!(
            Value::Array(types),
            json!([
                "Timestamp(ns)",
                "Timestamp(s)",
                "Date32",
                "Duration(ms)",
                "Binary",
                "Binary"
            ]),
            "{store}"
        );
        let sql = format!(
            "SELECT arrow_cast(ts_ns, 'Int64') AS ts_ns, arrow_cast(ts_s, 'Int64') AS ts_s, \
                    arrow_cast(day, 'Int32') AS day, arrow_cast(td_ms, 'Int64') AS td_ms, \
                    encode(code, 'hex') AS code, encode(blob, 'hex') AS blob \
             FROM read_zarr('{location}') ORDER BY {dim}"
        );
        let batches = query(&ctx, &sql)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
        for name in ["ts_ns", "ts_s", "day", "td_ms", "code", "blob"] {
            let got = to_json(column(&batches, name).as_ref());
            assert_eq!(Value::Array(got), columns[name], "{store}: {name}");
        }
        // NaT is NULL without fill_as_null; SQL compares the times as times.
        let sql = format!(
            "SELECT count(*) AS n FROM read_zarr('{location}') \
             WHERE ts_ns IS NULL OR day IS NULL OR td_ms IS NULL"
        );
        // Rows 1 and 2 hold a NaT; row 6 is the unwritten chunk's NaT fill.
        assert_eq!(values(&sql, "n").await, vec![json!(3)], "{sql}");
        let sql = format!(
            "SELECT {dim} AS dim_0 FROM read_zarr('{location}') \
             WHERE ts_s < TIMESTAMP '1900-03-02' AND day >= DATE '1900-03-04' ORDER BY {dim}"
        );
        assert_eq!(
            values(&sql, "dim_0").await,
            vec![json!(2), json!(5)],
            "{sql}"
        );
        // `S` as strings, and a comparison of bytes with a string literal.
        let sql = format!(
            "SELECT code FROM read_zarr('{location}', 'code', 'binary_as_string', 'true') \
             WHERE {dim} IN (0, 6) ORDER BY {dim}"
        );
        // Chunk 1 (rows 3 to 5), which holds bytes that are not UTF-8, is pruned.
        assert_eq!(
            values(&sql, "code").await,
            vec![json!("AB"), json!("zz")],
            "{sql}"
        );
        let sql = format!(
            "SELECT {dim} AS dim_0 FROM read_zarr('{location}', 'code') WHERE code = 'zz' ORDER BY {dim}"
        );
        assert_eq!(
            values(&sql, "dim_0").await,
            vec![json!(5), json!(6)],
            "{sql}"
        );
        let sql = format!(
            "SELECT count(code) AS n FROM read_zarr('{location}', 'code', 'fill_as_null', 'true')"
        );
        assert_eq!(values(&sql, "n").await, vec![json!(5)], "{sql}");
        // The element that is not UTF-8 is named when strings are asked for.
        let e = error(&format!(
            "SELECT * FROM read_zarr('{location}', 'code', 'binary_as_string', 'true')"
        ))
        .await;
        assert!(
            (e.contains("chunk 1:") || e.contains("chunk c/1:"))
                && e.contains("element 1 is not UTF-8"),
            "{store}: {e}"
        );
        // datetime64[h]: not in the table, refused by name.
        let sql = format!("SELECT * FROM read_zarr('{location}') LIMIT 1");
        let batches = query(&ctx, &sql).await.unwrap();
        assert!(batches[0].schema().field_with_name("hours").is_err());
        let e = error(&format!("SELECT * FROM read_zarr('{location}', 'hours')")).await;
        assert!(
            e.contains("unsupported data type") && e.contains("[h]"),
            "{store}: {e}"
        );
        assert_eq!(columns["hours"][0], json!(438293), "the fixture's hours");
    }
}

/// xarray's CF encodings, V3 and consolidated V2, read as xarray decodes them (`decode_cf`, on
/// by default): the time coordinate and a float time as `Timestamp(µs)` (NaT as NULL), a
/// timedelta as `Duration(s)`, packed int16 as `Float64` with the `_FillValue` as NULL; a
/// 360-day calendar keeps its numbers. With `decode_cf` off every column is as stored.
#[tokio::test]
async fn cf_times_timedeltas_and_packed_numbers_as_xarray_decodes_them() {
    let exp = expected();
    for (store, columns) in exp["cf"].as_object().unwrap() {
        let location = fixture(store);
        let ctx = context();
        let sql = format!(
            "SELECT arrow_typeof(time) AS time, arrow_typeof(\"when\") AS \"when\", \
                    arrow_typeof(lead) AS lead, arrow_typeof(model_day) AS model_day \
             FROM read_zarr('{location}', '', 'arrays', 'lead,when,model_day') LIMIT 1"
        );
        let batches = query(&ctx, &sql)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
        let types: Vec<Value> = ["time", "when", "lead", "model_day"]
            .iter()
            .flat_map(|c| to_json(column(&batches, c).as_ref()))
            .collect();
        assert_eq!(
            Value::Array(types),
            json!(["Timestamp(µs)", "Timestamp(µs)", "Duration(s)", "Int64"]),
            "{store}"
        );
        let sql = format!(
            "SELECT arrow_cast(time, 'Int64') AS time, arrow_cast(\"when\", 'Int64') AS \"when\", \
                    arrow_cast(lead, 'Int64') AS lead, model_day \
             FROM read_zarr('{location}', '', 'arrays', 'lead,when,model_day')"
        );
        let batches = query(&ctx, &sql)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
        for name in ["time", "when", "lead", "model_day"] {
            let got = to_json(column(&batches, name).as_ref());
            assert_eq!(Value::Array(got), columns[name], "{store}: {name}");
        }
        // The 2-D table: temp unpacked, in time-major order, filtered by time as a time.
        let sql = format!(
            "SELECT temp, arrow_typeof(temp) AS t FROM read_zarr('{location}', '', 'arrays', 'temp')"
        );
        let batches = query(&ctx, &sql)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
        assert_eq!(
            Value::Array(to_json(column(&batches, "temp").as_ref())),
            columns["temp"],
            "{store}"
        );
        assert_eq!(to_json(column(&batches, "t").as_ref())[0], json!("Float64"));
        let sql = format!(
            "SELECT count(*) AS n FROM read_zarr('{location}', '', 'arrays', 'temp') \
             WHERE time >= TIMESTAMP '2000-01-01 06:00:00' AND temp IS NOT NULL"
        );
        // Times from 06:00: rows 2, 3, 4, 6 and 7 (row 5 is NaT); temp is masked for one of
        // the two stations at even rows.
        assert_eq!(values(&sql, "n").await, vec![json!(7)], "{sql}");
        // Arrays other CF writers write: a packed time, _Unsigned (packed, and alone), a
        // _FillValue alone (the type kept, NULL where xarray has NaN), float seconds, uint8
        // read signed (_Unsigned "false").
        let arrays = "packed_time,flags,raw_u,level,lag,signed";
        let sql = format!(
            "SELECT arrow_cast(packed_time, 'Int64') AS packed_time, flags, raw_u, level, \
                    arrow_cast(lag, 'Int64') AS lag, signed, \
                    arrow_typeof(packed_time) AS t1, arrow_typeof(flags) AS t2, \
                    arrow_typeof(raw_u) AS t3, arrow_typeof(level) AS t4, \
                    arrow_typeof(lag) AS t5, arrow_typeof(signed) AS t6 \
             FROM read_zarr('{location}', '', 'arrays', '{arrays}')"
        );
        let batches = query(&ctx, &sql)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
        for name in arrays.split(',') {
            let got = to_json(column(&batches, name).as_ref());
            assert_eq!(Value::Array(got), columns[name], "{store}: {name}");
        }
        let types: Vec<Value> = ["t1", "t2", "t3", "t4", "t5", "t6"]
            .iter()
            .map(|c| to_json(column(&batches, c).as_ref())[0].clone())
            .collect();
        assert_eq!(
            Value::Array(types),
            json!([
                "Timestamp(µs)",
                "Float64",
                "UInt16",
                "Int16",
                "Duration(µs)",
                "Int8"
            ]),
            "{store}"
        );
        // decode_cf off: the stored numbers.
        let sql = format!(
            "SELECT time FROM read_zarr('{location}', '', 'arrays', 'lead', 'decode_cf', 'false')"
        );
        assert_eq!(
            Value::Array(values(&sql, "time").await),
            columns["time_stored"],
            "{sql}"
        );
        // Strings xarray wrote as UTF-8 bytes (|S6 with _Encoding) are strings; without
        // decode_cf, the bytes.
        let sql = format!(
            "SELECT site, arrow_typeof(site) AS t FROM read_zarr('{location}', '', 'arrays', 'site')"
        );
        assert_eq!(Value::Array(values(&sql, "site").await), columns["site"]);
        assert_eq!(values(&sql, "t").await[0], json!("Utf8"));
        let sql = format!(
            "SELECT arrow_typeof(site) AS t, encode(site, 'hex') AS n \
             FROM read_zarr('{location}', '', 'arrays', 'site', 'decode_cf', 'false')"
        );
        assert_eq!(values(&sql, "t").await[0], json!("Binary"));
        let hex: Vec<Value> = columns["site"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| {
                let bytes = s.as_str().unwrap().bytes();
                json!(bytes.map(|b| format!("{b:02x}")).collect::<String>())
            })
            .collect();
        assert_eq!(values(&sql, "n").await, hex, "{sql}");
    }
}
