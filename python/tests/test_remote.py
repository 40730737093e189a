"""A table over HTTP from Python: real nginx on 127.0.0.1 (installed by
tools/install-test-servers; the fixture ``http_root`` of conftest.py) serving the corpus; the table builds its own object store from the
URL and storage_options, since a foreign session's object stores are not ours."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest
from conftest import CORPUS

import datafusion_zarr


def test_group_table_over_http(ctx, http_root: str) -> None:
    case = "12_group_table_cities"
    url = f"{http_root}/{case}/data.zarr"
    ctx.register_table("cities", datafusion_zarr.ZarrTable(url, storage_options={"retry.max_retries": "2"}))
    got = ctx.sql("SELECT * FROM cities ORDER BY 1").to_arrow_table()
    want = pq.read_table(CORPUS / case / "expected.parquet")
    for name in want.column_names:
        assert got.column(name).to_pylist() == want.column(name).to_pylist(), name


def test_read_zarr_over_http_with_pushdown(ctx, http_root: str) -> None:
    url = f"{http_root}/17_large_200k_zstd/data.zarr"
    local = ctx.sql(
        f"SELECT count(*) AS n FROM read_zarr('{CORPUS}/17_large_200k_zstd/data.zarr') WHERE value LIKE '%ab%'"
    ).to_pydict()
    remote = ctx.sql(f"SELECT count(*) AS n FROM read_zarr('{url}') WHERE value LIKE '%ab%'").to_pydict()
    assert remote == local and local["n"][0] > 0
    plan = ctx.sql(f"EXPLAIN SELECT count(*) FROM read_zarr('{url}') WHERE value LIKE '%ab%'").to_arrow_table()
    assert "utf32_filters" in str(plan.to_pylist())


def test_missing_remote_store_names_the_url(http_root: str) -> None:
    with pytest.raises(datafusion_zarr.ZarrError, match=r"127\.0\.0\.1.*no-such"):
        datafusion_zarr.ZarrTable(f"{http_root}/no-such.zarr", storage_options={"retry.max_retries": "0"})


def test_to_parquet_of_a_store_over_http_equals_the_local_export(http_root: str, tmp_path) -> None:
    case = "12_group_table_cities"
    remote = datafusion_zarr.ZarrTable(f"{http_root}/{case}/data.zarr")
    local = datafusion_zarr.ZarrTable(str(CORPUS / case / "data.zarr"))
    assert remote.to_parquet(tmp_path / "remote.parquet") == 41
    assert local.to_parquet(tmp_path / "local.parquet") == 41
    got = pq.read_table(tmp_path / "remote.parquet")
    assert got.equals(pq.read_table(tmp_path / "local.parquet"))
    want = pq.read_table(CORPUS / case / "expected.parquet")
    for name in want.column_names:
        assert got.column(name).to_pylist() == want.column(name).to_pylist(), name
    footer = pq.ParquetFile(tmp_path / "remote.parquet").metadata.metadata
    assert footer[b"zarr.store"].decode().startswith(http_root)
