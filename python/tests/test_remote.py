"""A table over HTTP from Python: real nginx on 127.0.0.1 (installed by
tools/install-test-servers) serving the corpus; the table builds its own object store from the
URL and storage_options, since a foreign session's object stores are not ours."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time

import pyarrow.parquet as pq
import pytest
from conftest import CORPUS, ROOT

import datafusion_zarr


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def http_root(tmp_path_factory):
    """The corpus served by nginx with range requests and one-level WebDAV listing."""
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    if not os.path.exists(nginx):
        pytest.fail("nginx is missing: run tools/install-test-servers first")
    prefix = tmp_path_factory.mktemp("nginx")
    port = free_port()
    user = "user root;" if os.geteuid() == 0 else ""
    conf = prefix / "nginx.conf"
    template = ROOT / "crates/test-support/src/servers/nginx.conf"  # the Rust tests' too
    values = {"user": user, "prefix": str(prefix), "port": str(port), "root": str(CORPUS)}
    text = template.read_text()
    for key, value in values.items():
        text = text.replace("{" + key + "}", value)
    conf.write_text(text)
    process = subprocess.Popen([nginx, "-p", str(prefix), "-c", str(conf)])
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or process.poll() is not None:
                    pytest.fail(f"nginx did not start: {(prefix / 'error.log').read_text()}")
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(timeout=10)


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
