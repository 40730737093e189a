"""Filter pushdown crosses DataFusion's FFI: the scan datafusion-python runs prunes chunks and
evaluates string predicates on UTF-32, for a registered table and for read_zarr, as in Rust."""

from __future__ import annotations

import re

import datafusion
import pytest
from conftest import store

import datafusion_zarr

LARGE = store("17_large_200k_zstd")  # 200,000 strings in 20 chunks of 10,000


def plan_text(ctx: datafusion.SessionContext, sql: str) -> str:
    """The physical plan of EXPLAIN [ANALYZE] as one string."""
    table = ctx.sql(sql).to_arrow_table()
    return "\n".join(str(v) for v in table.column(table.num_columns - 1).to_pylist())


def metric(plan: str, name: str) -> int:
    """The sum of a metric over the plan's lines (`name=N`)."""
    values = [int(v) for v in re.findall(rf"\b{name}=(\d+)", plan)]
    assert values, f"no {name} in {plan}"
    return sum(values)


@pytest.fixture(params=["registered", "read_zarr"])
def source(request, ctx) -> tuple[datafusion.SessionContext, str, str]:
    """The large case as a registered ZarrTable or through read_zarr, with its index column."""
    table = datafusion_zarr.ZarrTable(LARGE)
    index = table.index_columns[0]
    if request.param == "registered":
        ctx.register_table("t", table)
        return ctx, "t", index
    return ctx, f"read_zarr('{LARGE}')", index


def test_explain_shows_utf32_filters_and_pruned_chunks(source) -> None:
    ctx, table, index = source
    plan = plan_text(
        ctx,
        f"EXPLAIN SELECT count(*) FROM {table} WHERE \"{index}\" < 25000 AND value LIKE '%ab%'",
    )
    assert "ZarrScanExec" in plan, plan
    assert "utf32_filters=[" in plan, plan
    assert "value LIKE" in plan.split("utf32_filters=[", 1)[1], plan
    # 25,000 of 200,000 rows: chunks 0..2 of 20 are read, 17 pruned before the scan.
    assert metric(plan, "chunks_pruned") == 17, plan
    assert metric(plan, "chunks") == 3, plan


def test_explain_analyze_reads_fewer_chunks(source) -> None:
    """The metrics cross the FFI: 1 chunk of 20 read when an index range selects it."""
    ctx, table, index = source
    pruned = plan_text(
        ctx, f"EXPLAIN ANALYZE SELECT count(value) FROM {table} WHERE \"{index}\" >= 190000"
    )
    full = plan_text(ctx, f"EXPLAIN ANALYZE SELECT count(value) FROM {table}")
    assert metric(pruned, "chunks_read") == 1, pruned
    assert metric(full, "chunks_read") == 20, full


def test_pushed_filters_give_the_same_rows_as_no_pushdown(ctx) -> None:
    ctx.register_table("on", datafusion_zarr.ZarrTable(LARGE))
    ctx.register_table("off", datafusion_zarr.ZarrTable(LARGE, pushdown=False))
    index = datafusion_zarr.ZarrTable(LARGE).index_columns[0]
    for where in [
        "value LIKE '%ab%'",
        "value = 'kanix'",
        f"\"{index}\" BETWEEN 12345 AND 54321 AND value LIKE 'k%'",
        "value IN ('mar', 'wex', 'سلام')",
    ]:
        on = ctx.sql(f'SELECT "{index}", value FROM on WHERE {where} ORDER BY 1').to_arrow_table()
        off = ctx.sql(f'SELECT "{index}", value FROM off WHERE {where} ORDER BY 1').to_arrow_table()
        assert on.num_rows > 0, where
        assert on.column(1).to_pylist() == off.column(1).to_pylist(), where
        assert on.column(0).to_pylist() == off.column(0).to_pylist(), where


def test_a_predicate_on_a_data_variable_reads_the_other_columns_only_where_rows_match(ctx, tmp_path) -> None:
    """Late materialisation across the FFI: a filter on `a` is evaluated in the scan, and `b`
    is fetched only for the one unit of ten with matching rows."""
    import numpy as np
    import zarr

    path = tmp_path / "floats.zarr"
    group = zarr.open_group(path, mode="w", zarr_format=3)
    n = 100_000
    for name, values in {"a": np.arange(n) / 10.0, "b": np.arange(n) * 2.0}.items():
        array = group.create_array(name, shape=(n,), chunks=(10_000,), dtype="f8", dimension_names=["i"])
        array[:] = values
    ctx.register_table("floats", datafusion_zarr.ZarrTable(str(path)))
    sql = "SELECT sum(b) AS s FROM floats WHERE a >= 9500"
    plan = plan_text(ctx, f"EXPLAIN ANALYZE {sql}")
    assert "decoded_filters=[" in plan, plan
    assert metric(plan, "units_without_matches") == 9, plan
    assert metric(plan, "chunks_read") == 11, plan
    got = ctx.sql(sql).to_arrow_table().column("s").to_pylist()
    assert got == [float((np.arange(n)[95_000:] * 2.0).sum())]
