//! `zarr-sql inspect LOCATION`: the tree of groups and arrays, with metadata and table schemas.

use datafusion::error::{DataFusionError, Result};
use datafusion_zarr::ZarrOptions;
use serde_json::Value;

use crate::output::{Format, print_text};
use crate::{GlobalArgs, session, table_options};

/// `zarr-sql inspect`'s arguments.
#[derive(Debug, clap::Args)]
pub struct InspectArgs {
    /// The Zarr store (directory or URL).
    location: String,
    /// The node inside the store to start from.
    #[arg(long, default_value = "")]
    path: String,
}

/// Runs the inspection: of the shared flags, `--format` (`table`, alias `text`, or `json`) and
/// `-o` (options) apply.
pub async fn run(args: InspectArgs, global: &GlobalArgs) -> Result<()> {
    let json = match global.format.unwrap_or(Format::Table) {
        Format::Table => false,
        Format::Json => true,
        other => {
            return Err(DataFusionError::Plan(format!(
                "inspect prints text (--format table) or json, not {other:?}"
            )));
        }
    };
    let ctx = session(None, None)?;
    let options = ZarrOptions {
        path: args.path.clone(),
        ..ZarrOptions::default()
    };
    let options = table_options(options, &global.options)?;
    let tree = datafusion_zarr::inspect(&ctx.runtime_env(), &args.location, &options).await?;
    if json {
        let text = serde_json::to_string_pretty(&tree)
            .map_err(|e| DataFusionError::Execution(e.to_string()))?;
        print_text(&format!("{text}\n"))?;
    } else {
        let mut out = format!("{}\n", tree["store"].as_str().unwrap_or(""));
        render(&tree, 0, &mut out);
        print_text(&out)?;
    }
    Ok(())
}

fn compact(v: &Value) -> String {
    v.to_string()
}

fn render(node: &Value, depth: usize, out: &mut String) {
    let pad = "  ".repeat(depth);
    let path = node["path"].as_str().unwrap_or("");
    let shown = if path.is_empty() { "/" } else { path };
    if node["node_type"] == "group" {
        out.push_str(&format!(
            "{pad}{shown} (group, zarr v{})\n",
            node["zarr_format"]
        ));
        if let Some(a) = node["attributes"].as_object().filter(|a| !a.is_empty()) {
            out.push_str(&format!(
                "{pad}  attributes: {}\n",
                compact(&Value::Object(a.clone()))
            ));
        }
        render_table(&node["table"], &pad, out);
        for child in node["children"].as_array().into_iter().flatten() {
            render(child, depth + 1, out);
        }
        return;
    }
    if let Some(e) = node["error"].as_str() {
        out.push_str(&format!("{pad}{shown} (array): cannot be read: {e}\n"));
        return;
    }
    let dt = &node["data_type"];
    let dtype = match dt["name"].as_str() {
        Some("fixed_length_utf32") => format!(
            "fixed_length_utf32 (length_bytes {}, up to {} code points)",
            dt["length_bytes"], dt["capacity_code_points"]
        ),
        Some(name) if dt["unsupported"] == true => format!("{name} (unsupported)"),
        Some(name) => name.to_string(),
        None => compact(&dt["name"]),
    };
    out.push_str(&format!(
        "{pad}{shown} (array, zarr v{}): {dtype}\n",
        node["zarr_format"]
    ));
    out.push_str(&format!("{pad}  shape: {}\n", compact(&node["shape"])));
    if node["shard_shape"].is_null() {
        out.push_str(&format!(
            "{pad}  chunks: {}\n",
            compact(&node["chunk_shape"])
        ));
    } else {
        out.push_str(&format!(
            "{pad}  shards: {}, inner chunks: {}\n",
            compact(&node["shard_shape"]),
            compact(&node["chunk_shape"])
        ));
    }
    out.push_str(&format!("{pad}  codecs: {}\n", compact(&node["codecs"])));
    out.push_str(&format!(
        "{pad}  fill value: {}\n",
        compact(&node["fill_value"])
    ));
    out.push_str(&format!(
        "{pad}  dimension names: {}\n",
        compact(&node["dimension_names"])
    ));
    let characters = &node["characters"];
    if let Some(e) = characters["error"].as_str() {
        out.push_str(&format!(
            "{pad}  netCDF characters: not joined into strings: {e}\n"
        ));
    } else if !characters.is_null() {
        out.push_str(&format!(
            "{pad}  netCDF characters: joined into strings of {} bytes (decode_cf)\n",
            characters["string_length"]
        ));
    }
    render_table(&node["table"], &pad, out);
}

fn render_table(table: &Value, pad: &str, out: &mut String) {
    if let Some(e) = table["error"].as_str() {
        out.push_str(&format!("{pad}  table: not available: {e}\n"));
        return;
    }
    let cols: Vec<String> = table["columns"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            let inherited = match c["inherited_from"].as_str() {
                Some(group) => format!(" (inherited from {group})"),
                None => String::new(),
            };
            format!(
                "{} {}{inherited}",
                c["name"].as_str().unwrap_or(""),
                c["type"].as_str().unwrap_or("")
            )
        })
        .collect();
    out.push_str(&format!(
        "{pad}  table ({} rows): {}\n",
        table["rows"],
        cols.join(", ")
    ));
    let left_out = table["left_out"].as_array().into_iter().flatten();
    for array in left_out.filter_map(Value::as_str) {
        out.push_str(&format!("{pad}  left out: {array}\n"));
    }
}
