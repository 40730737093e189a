"""Several Python threads querying at once get the results of sequential runs."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import datafusion
from conftest import store

import datafusion_zarr

QUERIES = [
    "SELECT count(*) AS n FROM t WHERE value LIKE '%ab%'",
    "SELECT value, count(*) AS n FROM t GROUP BY value ORDER BY n DESC, value LIMIT 20",
    "SELECT min(value) AS lo, max(value) AS hi FROM t WHERE value <> ''",
    "SELECT count(DISTINCT value) AS n FROM t",
]


def test_threads_match_sequential() -> None:
    ctx = datafusion.SessionContext()
    ctx.register_table("t", datafusion_zarr.ZarrTable(store("17_large_200k_zstd")))

    def run(sql: str) -> list:
        return ctx.sql(sql).to_arrow_table().to_pylist()

    expected = {sql: run(sql) for sql in QUERIES}
    work = QUERIES * 6
    with ThreadPoolExecutor(max_workers=8) as pool:
        got = list(pool.map(run, work))
    for sql, rows in zip(work, got):
        assert rows == expected[sql], sql
    # Tables opened in threads too.
    with ThreadPoolExecutor(max_workers=4) as pool:
        counts = list(pool.map(lambda _: datafusion_zarr.ZarrTable(store("17_large_200k_zstd")).num_rows, range(8)))
    assert counts == [200_000] * 8
