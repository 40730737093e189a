//! A description of a store's tree — groups, arrays, their metadata and the table each maps
//! to — for `zarr-sql inspect`.

use datafusion::execution::runtime_env::RuntimeEnv;
use serde_json::{Value, json};

use crate::error::Result;
use crate::limits::Limits;
use crate::node::{ArrayNode, ElementKind, Node, open_node};
use crate::options::ZarrOptions;
use crate::store::{ZarrStore, join_key};
use crate::table::{ColumnSource, TableModel};

/// Describes the node at `options.path` of the store at `location` and everything below it
/// as JSON: for each group and array its metadata (data type, shape, chunk and shard shape,
/// codecs, fill value, dimension names, attributes) and the table it maps to (columns and
/// rows, or why it maps to none), as `zarr-sql inspect` prints it.
///
/// ```
/// # async fn demo() -> datafusion_zarr::Result<()> {
/// use datafusion::execution::runtime_env::RuntimeEnv;
/// use datafusion_zarr::{ZarrOptions, inspect};
///
/// let store = "tests/data/corpus/00_zarr_python_defaults_U7/data.zarr";
/// let tree = inspect(&RuntimeEnv::default(), store, &ZarrOptions::default()).await?;
/// assert_eq!(tree["node_type"], "array");
/// assert_eq!(tree["data_type"]["capacity_code_points"], 7);
/// # Ok(()) }
/// # tokio::runtime::Runtime::new().unwrap().block_on(demo()).unwrap();
/// ```
pub async fn inspect(runtime: &RuntimeEnv, location: &str, options: &ZarrOptions) -> Result<Value> {
    let (store, options, root) =
        crate::icechunk::open_node_at(runtime, location, options.clone(), false).await?;
    let options = &options;
    let mut tree = describe(&store, root, options).await?;
    tree["store"] = json!(store.display_location());
    Ok(tree)
}

async fn describe(store: &ZarrStore, node: Node, options: &ZarrOptions) -> Result<Value> {
    let schema = table_schema(store, &node, options);
    match node {
        Node::Array(array) => {
            let mut v = describe_array(&array);
            v["table"] = schema;
            Ok(v)
        }
        Node::Group(group) => {
            let mut children = Vec::new();
            for array in &group.arrays {
                let mut v = describe_array(array);
                v["table"] = table_schema(store, &Node::Array(array.clone()), options);
                children.push(v);
            }
            // Arrays whose metadata is invalid are listed with why.
            for array in &group.unreadable {
                children.push(json!({
                    "node_type": "array",
                    "path": join_key(&group.path, &array.name),
                    "error": array.error,
                }));
            }
            for name in &group.groups {
                let mut child_options = options.clone();
                child_options.path = join_key(&group.path, name);
                child_options.arrays = None;
                let limits = Limits::of(&child_options);
                let child = open_node(store, &child_options.path, &limits, None).await?;
                children.push(Box::pin(describe(store, child, &child_options)).await?);
            }
            Ok(json!({
                "node_type": "group",
                "path": group.path,
                "zarr_format": group.zarr_format,
                "attributes": group.attributes.to_value(),
                "table": schema,
                "children": children,
            }))
        }
    }
}

fn table_schema(store: &ZarrStore, node: &Node, options: &ZarrOptions) -> Value {
    match TableModel::new(store.clone(), node.clone(), options.clone()) {
        Ok(model) => {
            let columns: Vec<Value> = (model.schema.fields().iter().zip(&model.columns))
                .map(|(f, c)| {
                    let mut column = json!({"name": f.name(), "type": f.data_type().to_string(), "nullable": f.is_nullable()});
                    // A coordinate of an ancestor group (DataTree's inheritance).
                    if let ColumnSource::Coordinate { array, .. } = &c.source {
                        let parent = array.path.rsplit_once('/').map_or("", |(p, _)| p);
                        if parent != model.path {
                            column["inherited_from"] = json!(format!("/{parent}"));
                        }
                    }
                    column
                })
                .collect();
            json!({"columns": columns, "rows": model.num_rows().ok(), "left_out": model.left_out})
        }
        Err(e) => json!({"error": e.to_string()}),
    }
}

fn describe_array(array: &ArrayNode) -> Value {
    let m = &array.document();
    let (chunk_shape, codecs, inner) = if array.zarr_format == 3 {
        let chunk_shape = m
            .pointer("/chunk_grid/configuration/chunk_shape")
            .cloned()
            .unwrap_or(Value::Null);
        let codecs = m.get("codecs").cloned().unwrap_or(Value::Null);
        let inner = codecs
            .as_array()
            .and_then(|c| c.iter().find(|c| c["name"] == "sharding_indexed"))
            .and_then(|c| c.pointer("/configuration/chunk_shape"))
            .cloned()
            .unwrap_or(Value::Null);
        (chunk_shape, codecs, inner)
    } else {
        let codecs = json!({
            "compressor": m.get("compressor"),
            "filters": m.get("filters"),
            "order": m.get("order"),
        });
        (
            m.get("chunks").cloned().unwrap_or(Value::Null),
            codecs,
            Value::Null,
        )
    };
    let (shard_shape, chunk_shape) = if inner.is_null() {
        (Value::Null, chunk_shape)
    } else {
        (chunk_shape, inner)
    };
    let data_type = match &array.kind {
        Some(ElementKind::Utf32 { length_bytes }) => json!({
            "name": "fixed_length_utf32",
            "length_bytes": length_bytes,
            "capacity_code_points": length_bytes / 4,
        }),
        Some(_) => json!({"name": array.data_type_name}),
        None => json!({"name": array.data_type_name, "unsupported": true}),
    };
    // A netCDF character array: the strings xarray (and the table under decode_cf) reads.
    let characters = match &array.characters {
        Some(Ok(_)) => json!({"string_length": array.shape.last()}),
        Some(Err(why)) => json!({"error": why}),
        None => Value::Null,
    };
    json!({
        "node_type": "array",
        "path": array.path,
        "characters": characters,
        "zarr_format": array.zarr_format,
        "data_type": data_type,
        "shape": array.shape,
        "chunk_shape": chunk_shape,
        "shard_shape": shard_shape,
        "codecs": codecs,
        "fill_value": m.get("fill_value"),
        "dimension_names": array.dimension_names,
        "attributes": array.attributes.to_value(),
    })
}
