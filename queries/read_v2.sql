-- Read Zarr V2 `<U12` arrays (zarr-python 2's native string dtype): the second has blosc
-- chunks and the fill value "n/a" for chunks never written.
SELECT * FROM read_zarr('tests/data/corpus/15_zarr_v2_U12/data.zarr') ORDER BY dim_0 LIMIT 5;

SELECT dim_0, dim_1, value
FROM read_zarr('tests/data/corpus/16_zarr_v2_U12_2d_blosc_fill/data.zarr', '', 'fill_as_null', 'true')
WHERE value IS NOT NULL
ORDER BY dim_0, dim_1
LIMIT 6;
