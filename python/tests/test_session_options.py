"""`SET zarr.<option>` in datafusion-python sessions: a `SessionConfig` holding
`ZarrSessionOptions` takes the `zarr.*` keys (datafusion-ffi's extension options), and
`read_zarr`, `CREATE EXTERNAL TABLE … STORED AS ZARR` and `write_zarr(…, session=ctx)` start
from them, their own options winning. Values set with SET are checked when used."""

from __future__ import annotations

import json

import datafusion
import pyarrow as pa
import pytest

import datafusion_zarr
from conftest import store

CITIES = store("12_group_table_cities")


def zarr_session(**defaults) -> datafusion.SessionContext:
    config = datafusion.SessionConfig({"datafusion.catalog.information_schema": "true"})
    config = config.with_extension(datafusion_zarr.ZarrSessionOptions(**defaults))
    ctx = datafusion.SessionContext(config)
    datafusion_zarr.register(ctx)
    return ctx


def names(ctx: datafusion.SessionContext, sql: str) -> tuple[pa.DataType, list]:
    """The type of the `name` column of `sql`'s rows, and its values, sorted."""
    table = ctx.sql(sql).to_arrow_table()
    return table.schema.field("name").type, sorted(table.column("name").to_pylist())


def test_set_string_type_is_the_default_of_read_zarr_and_create_external_table() -> None:
    ctx = zarr_session()
    read = f"SELECT name FROM read_zarr('{CITIES}')"
    kind, cities = names(ctx, read)
    assert kind == pa.string() and len(cities) == 41 and "Seoul" in cities

    ctx.sql("SET zarr.string_type = 'utf8view'")
    assert ctx.sql("SHOW zarr.string_type").to_pydict()["value"] == ["utf8view"]
    assert names(ctx, read) == (pa.string_view(), cities)
    ctx.sql(f"CREATE EXTERNAL TABLE cities STORED AS ZARR LOCATION '{CITIES}'")
    assert names(ctx, "SELECT name FROM cities") == (pa.string_view(), cities)

    # The statement's own options win.
    explicit = f"SELECT name FROM read_zarr('{CITIES}', '', 'string_type', 'large_utf8')"
    assert names(ctx, explicit) == (pa.large_string(), cities)
    ctx.sql(
        f"CREATE EXTERNAL TABLE cities_utf8 STORED AS ZARR LOCATION '{CITIES}' "
        "OPTIONS ('string_type' 'utf8')"
    )
    assert names(ctx, "SELECT name FROM cities_utf8") == (pa.string(), cities)

    # An empty value unsets.
    ctx.sql("SET zarr.string_type = ''")
    assert names(ctx, read) == (pa.string(), cities)


def test_defaults_given_with_the_extension_are_checked_there() -> None:
    ctx = zarr_session(string_type="large_utf8", fill_as_null=True)
    assert names(ctx, f"SELECT name FROM read_zarr('{CITIES}')")[0] == pa.large_string()
    shown = repr(datafusion_zarr.ZarrSessionOptions(string_type="large_utf8"))
    assert shown == "ZarrSessionOptions(string_type='large_utf8')"
    with pytest.raises(datafusion_zarr.ZarrError, match=r"zarr\.string_type: .*utf8view"):
        datafusion_zarr.ZarrSessionOptions(string_type="utf16")
    with pytest.raises(datafusion_zarr.ZarrError, match=r"unknown option 'zarr\.nonsense'"):
        datafusion_zarr.ZarrSessionOptions(nonsense=1)
    with pytest.raises(datafusion_zarr.ZarrError, match="storage options") as e:
        datafusion_zarr.ZarrSessionOptions(**{"aws.secret_access_key": "s3cr3t"})
    assert "s3cr3t" not in str(e.value)


def test_a_bad_value_set_with_set_fails_when_used_naming_the_key() -> None:
    # datafusion-ffi's extension options keep whatever SET gives them.
    ctx = zarr_session()
    ctx.sql("SET zarr.string_type = 'utf16'")
    with pytest.raises(Exception, match=r"zarr\.string_type: string_type 'utf16' is not one of"):
        ctx.sql(f"SELECT name FROM read_zarr('{CITIES}')").collect()
    with pytest.raises(Exception, match=r"zarr\.string_type"):
        ctx.sql(f"CREATE EXTERNAL TABLE cities STORED AS ZARR LOCATION '{CITIES}'")
    ctx.sql("SET zarr.string_type = 'utf8'")
    ctx.sql("SET zarr.nonsense = '1'")
    with pytest.raises(Exception, match=r"unknown option 'zarr\.nonsense'"):
        ctx.sql(f"SELECT name FROM read_zarr('{CITIES}')").collect()


def compressor(array) -> str:
    doc = json.loads((array / "zarr.json").read_text())
    return doc["codecs"][-1]["name"]


def test_write_zarr_starts_from_the_sessions_options(tmp_path) -> None:
    ctx = zarr_session()
    ctx.sql("SET zarr.compression = 'gzip'")
    ctx.sql("SET zarr.chunk_rows = '8'")
    rows = f"SELECT name, country FROM read_zarr('{CITIES}')"
    assert datafusion_zarr.write_zarr(ctx.sql(rows), tmp_path / "a.zarr", session=ctx) == 41
    assert compressor(tmp_path / "a.zarr" / "name") == "gzip"
    doc = json.loads((tmp_path / "a.zarr" / "name" / "zarr.json").read_text())
    assert doc["chunk_grid"]["configuration"]["chunk_shape"] == [8]
    # Keywords win; without the session, the options' own defaults.
    datafusion_zarr.write_zarr(ctx.sql(rows), tmp_path / "b.zarr", session=ctx, compression="lz4")
    assert compressor(tmp_path / "b.zarr" / "name") == "numcodecs.lz4"
    datafusion_zarr.write_zarr(ctx.sql(rows), tmp_path / "c.zarr")
    assert compressor(tmp_path / "c.zarr" / "name") == "zstd"
    # A session mode: overwrite replaces the first store.
    ctx.sql("SET zarr.mode = 'overwrite'")
    datafusion_zarr.write_zarr(ctx.sql(rows), tmp_path / "a.zarr", session=ctx, compression="none")
    assert compressor(tmp_path / "a.zarr" / "name") == "bytes"


def test_a_session_without_the_options_is_as_before(ctx) -> None:
    with pytest.raises(Exception, match="zarr"):
        ctx.sql("SET zarr.string_type = 'utf8view'")
    assert names(ctx, f"SELECT name FROM read_zarr('{CITIES}')")[0] == pa.string()
