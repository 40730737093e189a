"""Kerchunk reference sets through datafusion-python: each set of tests/data/references (JSON
versions 0 and 1, templates, the Parquet layout, a set over three files) read as a group's
table equals xarray opening the netCDF files themselves (netCDF4), row for row."""

from __future__ import annotations

import math

import datafusion
import numpy as np
import pytest
import xarray as xr

import datafusion_zarr
from conftest import ROOT

REFS = ROOT / "tests" / "data" / "references"


def normalized(value):
    """A cell as plain Python: NaN as None, bytes as text, NumPy scalars as numbers."""
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, (float, np.floating)):
        return None if math.isnan(value) else float(value)
    if isinstance(value, np.integer):
        return int(value)
    return value


def same(a, b) -> bool:
    a, b = normalized(a), normalized(b)
    if isinstance(a, float) and isinstance(b, float):
        # float32 variables: compared at their own precision.
        return np.float32(a) == np.float32(b)
    return a == b


def ours(location: str, order: list[str]) -> list[dict]:
    ctx = datafusion.SessionContext()
    ctx.register_table("t", datafusion_zarr.ZarrTable(location))
    sql = f"SELECT * FROM t ORDER BY {', '.join(order)}"
    return ctx.sql(sql).to_arrow_table().to_pylist()


def xarrays(ds: xr.Dataset, order: list[str]) -> list[dict]:
    return ds.to_dataframe().reset_index().sort_values(order).to_dict("records")


def assert_same_rows(got: list[dict], want: list[dict]) -> None:
    assert len(got) == len(want) > 0
    assert set(got[0]) == set(want[0])
    for i, (g, w) in enumerate(zip(got, want)):
        for column in g:
            assert same(g[column], w[column]), (i, column, g[column], w[column])


@pytest.mark.parametrize(
    "name", ["grid.json", "grid_v0.json", "grid_templates.json", "grid.parq", "grid_cat.parq"]
)
def test_a_reference_set_reads_as_xarray_reads_its_netcdf_file(name) -> None:
    order = ["time", "lat", "lon"]
    # The calendar is `noleap`: both sides show the stored day numbers.
    with xr.open_dataset(REFS / "grid.nc", decode_times=False) as ds:
        want = xarrays(ds, order)
    assert_same_rows(ours(str(REFS / name), order), want)


def test_a_set_over_three_files_reads_as_xarray_joins_them() -> None:
    order = ["time", "lat", "lon"]
    parts = [xr.open_dataset(REFS / f"part{i}.nc", decode_times=False) for i in range(3)]
    try:
        joined = xr.concat(parts, dim="time", data_vars="minimal", coords="minimal")
        want = xarrays(joined, order)
    finally:
        for p in parts:
            p.close()
    assert_same_rows(ours(str(REFS / "multi.json"), order), want)


def test_a_reference_outside_the_allowed_places_is_refused(tmp_path) -> None:
    refs = (REFS / "grid.json").read_text().replace('"grid.nc"', f'"{REFS / "grid.nc"}"')
    (tmp_path / "moved.json").write_text(refs)
    with pytest.raises(Exception, match="reference_targets"):
        ours(str(tmp_path / "moved.json"), ["time", "lat", "lon"])
    ctx = datafusion.SessionContext()
    table = datafusion_zarr.ZarrTable(
        str(tmp_path / "moved.json"), reference_targets=f"file://{REFS}/"
    )
    ctx.register_table("t", table)
    assert ctx.sql("SELECT count(*) AS n FROM t").to_arrow_table().to_pylist() == [{"n": 120}]
