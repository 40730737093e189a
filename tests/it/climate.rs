//! Climate layouts as their users see them, on fixtures xarray wrote
//! (`tests/data/fixtures/make_fixtures.py`, `climate_layouts`): CF bounds are left out of a
//! group's table and named, and a DataTree's groups inherit their ancestors' coordinates.

use serde_json::{Value, json};

use zarr_test_support::*;

fn expected() -> Value {
    let text = std::fs::read_to_string(root().join("tests/data/fixtures/expected.json")).unwrap();
    serde_json::from_str::<Value>(&text).unwrap()["climate_layouts"].clone()
}

/// EXPLAIN's text of `sql`.
async fn plan(sql: &str) -> String {
    let batches = query(&context(), &format!("EXPLAIN {sql}")).await.unwrap();
    show(column(&batches, "plan").as_ref()).join("\n")
}

#[tokio::test]
async fn cf_bounds_are_left_out_and_named() {
    let store = fixture("cf_bounds_v3.zarr");
    let sql = format!("SELECT count(*) AS n, avg(tas) AS m FROM read_zarr('{store}')");
    let batches = query(&context(), &sql).await.unwrap();
    let want = expected()["cf_bounds"].clone();
    assert_eq!(
        to_json(column(&batches, "n").as_ref()),
        [want["rows"].clone()]
    );
    let mean = to_json(column(&batches, "m").as_ref())[0].as_f64().unwrap();
    let want_mean = want["tas_mean"].as_f64().unwrap();
    assert!(
        (mean - want_mean).abs() < 1e-9 * want_mean,
        "{mean} vs {want_mean}"
    );

    let shown = plan(&format!("SELECT avg(tas) FROM read_zarr('{store}')")).await;
    assert!(
        shown.contains(
            "left_out=[lat_bnds(lat, bnds): dimension bnds not in the table, lon_bnds(lon, \
             bnds): dimension bnds not in the table, time_bnds(time, bnds): dimension bnds not \
             in the table]"
        ),
        "{shown}"
    );
    let columns = query(
        &context(),
        &format!("SELECT * FROM read_zarr('{store}') LIMIT 1"),
    )
    .await
    .unwrap();
    let names: Vec<String> = (columns[0].schema().fields().iter())
        .map(|f| f.name().clone())
        .collect();
    assert_eq!(names, ["time", "lat", "lon", "height", "tas"]);
    // Readable on its own by its path.
    let bounds = values(
        &format!("SELECT lat_bnds FROM read_zarr('{store}', 'lat_bnds') ORDER BY lat, bnds"),
        "lat_bnds",
    )
    .await;
    assert_eq!(bounds[..2], [json!(-80.0), json!(-40.0)]);
    // Named in `arrays`: xarray's product over the union of the dimensions, each tas value
    // once per bnds, the bounds beside it.
    let sql = format!(
        "SELECT CAST(time AS VARCHAR) AS t, bnds, tas, CAST(time_bnds AS VARCHAR) AS b \
         FROM read_zarr('{store}', '', 'arrays', 'tas,time_bnds') ORDER BY time, lat, lon, bnds"
    );
    let batches = query(&context(), &sql).await.unwrap();
    let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
    assert_eq!(rows, 2 * want["rows"].as_u64().unwrap() as usize);
    let tas = to_json(column(&batches, "tas").as_ref());
    assert_eq!(tas[0], tas[1]);
    assert_ne!(tas[1], tas[2]);
    assert_eq!(
        to_json(column(&batches, "bnds").as_ref())[..3],
        [json!(0), json!(1), json!(0)]
    );
    assert_eq!(
        to_json(column(&batches, "b").as_ref())[..2],
        [json!("2000-01-01T00:00:00"), json!("2000-01-02T00:00:00")]
    );
    // A filter on time prunes the product's units as the table's.
    let filtered = format!(
        "SELECT tas FROM read_zarr('{store}', '', 'arrays', 'tas,time_bnds') WHERE time >= \
         TIMESTAMP '2000-01-05'"
    );
    assert!(plan(&filtered).await.contains("chunks_pruned=4"));
    assert_eq!(values(&filtered, "tas").await.len(), 2 * 2 * 4 * 5);
    // A unit of the product (a chunk by the whole of bnds) is held to max_chunk_bytes as a
    // chunk is: 40 rows of 44 bytes here.
    let sql = format!(
        "SELECT count(*) FROM read_zarr('{store}', '', 'arrays', 'tas,time_bnds', \
         'max_chunk_bytes', '1000')"
    );
    let e = query(&context(), &sql).await.unwrap_err().to_string();
    assert!(
        e.contains("a unit of the table") && e.contains("1760 bytes"),
        "{e}"
    );
}

#[tokio::test]
async fn datatree_groups_inherit_coordinates_and_prune_by_them() {
    let store = fixture("datatree_v3.zarr");
    let sql = format!(
        "SELECT CAST(time AS VARCHAR) AS t, site, temp FROM read_zarr('{store}', 'sites/alpine') \
         ORDER BY time, temp"
    );
    let batches = query(&context(), &sql).await.unwrap();
    let want = expected()["datatree"]["alpine_temp"].clone();
    assert_eq!(
        Value::from(to_json(column(&batches, "temp").as_ref())),
        want
    );
    let times = to_json(column(&batches, "t").as_ref());
    assert_eq!(times[0], json!("2000-01-01T00:00:00"));
    assert_eq!(times[11], json!("2000-01-04T00:00:00"));
    let sites = to_json(column(&batches, "site").as_ref());
    assert_eq!(sites[..3], [json!("Åre"), json!("Bø"), json!("Cádiz")]);

    // A filter on the inherited coordinate prunes chunks as a local one does.
    let filtered = format!(
        "SELECT temp FROM read_zarr('{store}', 'sites/alpine') WHERE time >= TIMESTAMP \
         '2000-01-03'"
    );
    assert!(plan(&filtered).await.contains("chunks_pruned=1"));
    let got = values(&filtered, "temp").await;
    assert_eq!(got.len(), 6);

    // A group with a coordinate of its own reads it.
    let own = values(
        &format!("SELECT level FROM read_zarr('{store}', 'own') ORDER BY time"),
        "level",
    )
    .await;
    assert_eq!(own, [json!(0.0), json!(1.0), json!(2.0), json!(3.0)]);
}

/// Writes the V3 node `path` under `root`: a group, or a 1-D int64 array along `dim` holding
/// `values` in one chunk.
fn write(root: &std::path::Path, path: &str, array: Option<(&str, &[i64])>) {
    let dir = root.join(path);
    std::fs::create_dir_all(&dir).unwrap();
    let doc = match array {
        None => json!({"zarr_format": 3, "node_type": "group"}),
        Some((dim, values)) => {
            let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
            std::fs::create_dir_all(dir.join("c")).unwrap();
            std::fs::write(dir.join("c/0"), bytes).unwrap();
            json!({"zarr_format": 3, "node_type": "array", "shape": [values.len()],
                   "data_type": "int64", "fill_value": 0, "dimension_names": [dim],
                   "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [values.len()]}},
                   "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
                   "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}]})
        }
    };
    std::fs::write(dir.join("zarr.json"), doc.to_string()).unwrap();
}

/// The nearest ancestor's coordinate of the dimension's length is inherited; a group's own
/// coordinate wins over its ancestors'; one of another length is not inherited (the index).
#[tokio::test]
async fn inheritance_takes_the_nearest_coordinate_of_the_same_length() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "", None);
    write(root, "t", Some(("t", &[100, 200, 300])));
    write(root, "a", None);
    write(root, "a/t", Some(("t", &[10, 20, 30])));
    write(root, "a/b", None);
    write(root, "a/b/v", Some(("t", &[1, 2, 3])));
    write(root, "a/b/w", None);
    write(root, "a/b/w/v", Some(("t", &[4, 5])));
    write(root, "own", None);
    write(root, "own/t", Some(("t", &[7, 8, 9])));
    write(root, "own/v", Some(("t", &[1, 2, 3])));
    let column_of = |path: &str| {
        let sql = format!(
            "SELECT * FROM read_zarr('{}', '{path}') ORDER BY 1",
            root.display()
        );
        async move { values(&sql, "t").await }
    };
    // /a's t, not the root's.
    assert_eq!(column_of("a/b").await, [json!(10), json!(20), json!(30)]);
    // Neither ancestor's t has 2 values: the index.
    assert_eq!(column_of("a/b/w").await, [json!(0), json!(1)]);
    // Its own.
    assert_eq!(column_of("own").await, [json!(7), json!(8), json!(9)]);
}
