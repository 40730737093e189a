-- Filter a fixed_length_utf32 column by prefix, by pattern and by length.
CREATE EXTERNAL TABLE words STORED AS ZARR
LOCATION 'tests/data/corpus/17_large_200k_zstd/data.zarr';

-- By prefix.
SELECT count(*) AS starts_with_mar FROM words WHERE starts_with(value, 'mar');

-- By pattern (LIKE and a regular expression).
SELECT count(*) AS contains_nix FROM words WHERE value LIKE '%nix%';
SELECT dim_0, value FROM words WHERE value ~ '^[A-Z][a-z]+ol$' ORDER BY dim_0 LIMIT 5;

-- By length in characters (code points), not bytes.
SELECT character_length(value) AS chars, count(*) AS n
FROM words WHERE character_length(value) >= 15
GROUP BY chars ORDER BY chars;
