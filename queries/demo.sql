-- The demo: filter the city names of a store written by zarr-python and export them to Parquet.
-- Run from the repository root:  cargo run -q -- -f queries/demo.sql
CREATE EXTERNAL TABLE cities STORED AS ZARR
LOCATION 'tests/data/corpus/12_group_table_cities/data.zarr';

-- Cities whose English name starts with S, or whose local name is not ASCII.
SELECT name, name_local, country, population
FROM cities
WHERE name LIKE 'S%' OR (country IN ('JP', 'CN') AND population > 10000000)
ORDER BY population DESC;

COPY (SELECT city, name, name_local, country FROM cities WHERE name_local <> name)
TO 'target/demo/cities_local_names.parquet' STORED AS PARQUET;
