"""A store written by xarray in the test, with a string coordinate, reads back through read_zarr
with xarray's own values."""

from __future__ import annotations

import numpy as np
import pytest

xr = pytest.importorskip("xarray")
pytest.importorskip("zarr")


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_xarray_string_coordinate(ctx, tmp_path, zarr_format: int) -> None:
    rng = np.random.default_rng(7)
    stations = np.array([f"st-{i:03d}-{'äöü'[i % 3]}" for i in range(50)], dtype="<U12")
    names = np.array([["Berlin", "Zürich", "東京", "🦀", ""][i % 5] for i in range(50)], dtype="<U8")
    ds = xr.Dataset(
        {"name": ("station", names), "temperature": ("station", rng.normal(size=50))},
        coords={"station": stations},
    )
    path = tmp_path / "x.zarr"
    ds.to_zarr(path, zarr_format=zarr_format, consolidated=zarr_format == 2, encoding={"name": {"chunks": (16,)}})
    back = xr.open_zarr(path, consolidated=zarr_format == 2).load()

    got = ctx.sql(f"SELECT * FROM read_zarr('{path}', 'station') ORDER BY 1").to_arrow_table()
    assert got.column(got.num_columns - 1).to_pylist() == [str(s) for s in back["station"].values]

    got = ctx.sql(
        f"SELECT name FROM read_zarr('{path}', 'name') WHERE name LIKE 'Z%' OR name = '' ORDER BY 1"
    ).to_arrow_table()
    want = sorted(str(n) for n in back["name"].values if n.startswith("Z") or n == "")
    assert got.column("name").to_pylist() == want
    assert len(want) == 20
