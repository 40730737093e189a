//! Embedding datafusion-zarr in a DataFusion application.
//!
//! Run from the repository root:  cargo run --example query_store
use std::sync::Arc;

use datafusion::error::Result;
use datafusion::prelude::SessionContext;
use datafusion_zarr::{StringType, ZarrOptions, ZarrTable};

#[tokio::main]
async fn main() -> Result<()> {
    let ctx = SessionContext::new();
    // `STORED AS ZARR` and `read_zarr(...)` in SQL.
    datafusion_zarr::register(&ctx);

    // A table provider built in code, with options.
    let options = ZarrOptions {
        string_type: StringType::Utf8View,
        ..ZarrOptions::default()
    };
    let cities = ZarrTable::open(
        &ctx.runtime_env(),
        "tests/data/corpus/12_group_table_cities/data.zarr",
        options,
    )
    .await?;
    ctx.register_table("cities", Arc::new(cities))?;
    ctx.sql("SELECT country, count(*) AS n FROM cities GROUP BY country ORDER BY n DESC, country LIMIT 3")
        .await?
        .show()
        .await?;

    // The table function, joined with the table.
    ctx.sql(
        "SELECT c.name, s.label \
         FROM cities c \
         JOIN read_zarr('tests/data/corpus/13_group_consolidated_metadata/data.zarr') s \
           ON substr(c.name, 1, 1) = upper(substr(s.label, 1, 1)) \
         ORDER BY c.name, s.label LIMIT 5",
    )
    .await?
    .show()
    .await?;
    Ok(())
}
