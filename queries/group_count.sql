-- Group and count labels: the most common strings of a 200,000-string array.
SELECT value, count(*) AS n
FROM read_zarr('tests/data/corpus/17_large_200k_zstd/data.zarr')
GROUP BY value
ORDER BY n DESC, value
LIMIT 10;
