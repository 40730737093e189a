"""numcodecs' numeric filters as xarray writes them (encoding={"filters": [...]}), Zarr V2 and
V3: every value read through read_zarr equals xarray's own reading of the store, to the bit."""

from __future__ import annotations

import numpy as np
import pytest

xr = pytest.importorskip("xarray")
numcodecs = pytest.importorskip("numcodecs")
pytest.importorskip("zarr")


def encodings(zarr_format: int) -> dict:
    """Kelvin stored as int32 hundredths (an offset float32 cannot hold), and wind speeds
    quantized (V2) or bit-rounded (V3)."""
    if zarr_format == 2:
        temp = numcodecs.FixedScaleOffset(offset=273.15, scale=100, dtype="<f8", astype="<i4")
        wind = numcodecs.Quantize(digits=2, dtype="<f4")
    else:
        import zarr.codecs.numcodecs as v3

        temp = v3.FixedScaleOffset(offset=273.15, scale=100, dtype="f8", astype="i4")
        wind = v3.BitRound(keepbits=9)
    return {
        "temp": {"filters": [temp], "chunks": (4, 10)},
        "wind": {"filters": [wind], "chunks": (3, 8)},
    }


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("zarr_format", [2, 3])
def test_numeric_filters_read_as_xarray_reads_them(ctx, tmp_path, zarr_format: int) -> None:
    rng = np.random.default_rng(3)
    ds = xr.Dataset(
        {
            "temp": (("station", "hour"), rng.normal(15, 8, size=(6, 24)) + 273.15),
            "wind": (("station", "hour"), rng.gamma(2, 3, size=(6, 24)).astype("f4")),
        },
        coords={"station": np.array([f"s{i}" for i in range(6)], dtype="<U3"), "hour": np.arange(24)},
    )
    path = tmp_path / "filters.zarr"
    consolidated = zarr_format == 2
    ds.to_zarr(path, zarr_format=zarr_format, consolidated=consolidated, encoding=encodings(zarr_format))
    back = xr.open_zarr(path, consolidated=consolidated).load()

    got = ctx.sql(f"SELECT * FROM read_zarr('{path}') ORDER BY station, hour").to_arrow_table()
    assert got.num_rows == 6 * 24
    for name in ("temp", "wind"):
        want = back[name].values.ravel().tolist()
        assert got.column(name).to_pylist() == want, name
