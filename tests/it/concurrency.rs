//! Sixteen concurrent queries on one SessionContext over the same table give the results of
//! running them one by one.

use arrow::util::pretty::pretty_format_batches;

use zarr_test_support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixteen_concurrent_queries_match_sequential_results() {
    let ctx = context();
    let store = corpus_store("17_large_200k_zstd");
    ctx.sql(&format!(
        "CREATE EXTERNAL TABLE t STORED AS ZARR LOCATION '{store}'"
    ))
    .await
    .unwrap();
    let queries: Vec<String> = (0..16)
        .map(|i| match i % 4 {
            0 => format!(
                "SELECT count(*) FROM t WHERE value LIKE '%{}%'",
                (b'a' + i as u8) as char
            ),
            1 => format!("SELECT min(value), max(value) FROM t WHERE dim_0 % 16 = {i}"),
            2 => format!(
                "SELECT value, count(*) AS n FROM t GROUP BY value ORDER BY n DESC, value LIMIT {}",
                i + 1
            ),
            _ => format!(
                "SELECT sum(character_length(value)) FROM t WHERE dim_0 >= {}",
                i * 10000
            ),
        })
        .collect();
    let mut sequential = Vec::new();
    for q in &queries {
        let b = query(&ctx, q).await.unwrap();
        sequential.push(pretty_format_batches(&b).unwrap().to_string());
    }
    let handles: Vec<_> = queries
        .iter()
        .map(|q| {
            let ctx = ctx.clone();
            let q = q.clone();
            tokio::spawn(async move {
                let b = query(&ctx, &q).await.unwrap();
                pretty_format_batches(&b).unwrap().to_string()
            })
        })
        .collect();
    for (i, h) in handles.into_iter().enumerate() {
        assert_eq!(h.await.unwrap(), sequential[i], "query {i}: {}", queries[i]);
    }
}
