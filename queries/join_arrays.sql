-- Join two string arrays of one group, each read as its own table, on their shared dimension.
-- Read as an array, `station` has the index column `station_index` (its name is taken by the
-- values); `label` has the index column `station`, named by its dimension.
SELECT s.station, l.label
FROM read_zarr('tests/data/corpus/13_group_consolidated_metadata/data.zarr', 'station') AS s
JOIN read_zarr('tests/data/corpus/13_group_consolidated_metadata/data.zarr', 'label') AS l
  ON s.station_index = l.station
WHERE l.label LIKE 'k%'
ORDER BY s.station;

-- The group read as one table does the same join for you: `station` is a coordinate.
SELECT station, label
FROM read_zarr('tests/data/corpus/13_group_consolidated_metadata/data.zarr')
WHERE label LIKE 'k%'
ORDER BY station;
