-- Export a filtered selection to Parquet with COPY, then read the file back.
COPY (
  SELECT dim_0 AS idx, value
  FROM read_zarr('tests/data/corpus/17_large_200k_zstd/data.zarr')
  WHERE value LIKE 'mar%'
) TO 'target/demo/mar.parquet' STORED AS PARQUET;

SELECT count(*) AS rows, min(value) AS first, max(value) AS last
FROM 'target/demo/mar.parquet';
