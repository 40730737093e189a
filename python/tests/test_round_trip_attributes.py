"""Zarr -> SQL -> Zarr keeps what xarray keeps (issue #48, first step): a store xarray wrote
(V3 and V2: float units, a masked int32 with its ``_FillValue``, a ``<U6`` string, an int16,
times, the group's attributes), read through ``read_zarr`` and written back by Python's
``write_zarr`` and by ``zarr-sql convert``, opens in xarray ``.identical()`` to the source; each
column carries its array's Zarr metadata as Arrow field metadata; a projected, filtered and
renamed copy keeps the kept columns' attributes, a computed column gets none, and
``keep_attributes=False`` writes only what the writer sets."""

import json
import subprocess

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
import xarray as xr
from datafusion import SessionContext

import datafusion_zarr

from conftest import ROOT

N = 12


def source(path, zarr_format: int) -> xr.Dataset:
    rows = np.arange(N)
    ds = xr.Dataset(
        {
            "temp": ("time", (rows * 1.5).astype("float32"), {"units": "K", "long_name": "air temperature", "standard_name": "air_temperature"}),
            "count": ("time", rows.astype("int16"), {"long_name": "a count"}),
            "masked": ("time", np.where(rows % 3 == 0, np.nan, rows), {"long_name": "masked int", "flag_values": [1, 2]}),
            "station": ("time", np.array([f"ST{r}" for r in rows], dtype="<U6"), {"long_name": "station code"}),
        },
        coords={"time": ("time", pd.date_range("2000-01-01", periods=N, freq="D"), {"long_name": "time", "axis": "T"})},
        attrs={"title": "weather", "Conventions": "CF-1.8", "history": "made by the tests"},
    )
    ds.to_zarr(path, zarr_format=zarr_format, consolidated=True, encoding={"masked": {"dtype": "int32", "_FillValue": -999}})
    return xr.open_zarr(path)


def session() -> SessionContext:
    ctx = SessionContext()
    datafusion_zarr.register(ctx)
    return ctx


@pytest.mark.parametrize("zarr_format", [3, 2])
def test_write_zarr_of_read_zarr_is_identical_in_xarray(tmp_path, zarr_format):
    src = tmp_path / "src.zarr"
    want = source(src, zarr_format)
    df = session().sql(f"SELECT * FROM read_zarr('{src}')")
    out = tmp_path / "copy.zarr"
    datafusion_zarr.write_zarr(df, str(out), dimensions="time", zarr_format=zarr_format)
    got = xr.open_zarr(out)
    xr.testing.assert_identical(got, want)
    assert got["station"].dtype == np.dtype("<U6"), "the string width stays"
    assert got["masked"].encoding["dtype"] == np.dtype("int32")
    assert got["masked"].encoding["_FillValue"] == -999


@pytest.mark.parametrize("zarr_format", [3, 2])
def test_zarr_sql_convert_keeps_the_attributes(tmp_path, zarr_format):
    src = tmp_path / "src.zarr"
    want = source(src, zarr_format)
    out = tmp_path / "converted.zarr"
    binary = ROOT / "target" / "debug" / "zarr-sql"
    assert binary.exists(), f"{binary}: built by `cargo test` (tools/test runs it first)"
    done = subprocess.run(
        [str(binary), "convert", str(src), str(out), "-w", "dimensions=time", "-w", f"zarr_format={zarr_format}"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    xr.testing.assert_identical(xr.open_zarr(out), want)


def test_each_column_carries_its_arrays_metadata(tmp_path):
    src = tmp_path / "src.zarr"
    source(src, 3)
    table = pa.table(session().sql(f"SELECT * FROM read_zarr('{src}')"))
    temp = table.schema.field("temp").metadata
    attributes = json.loads(temp[b"zarr.attributes"])
    # As xarray wrote them: a float's `_FillValue` is NaN in base64 (V3).
    assert attributes == {"units": "K", "long_name": "air temperature", "standard_name": "air_temperature", "_FillValue": "AAAAAAAA+H8="}
    assert temp[b"zarr.data_type"] == b"float32"
    assert json.loads(temp[b"zarr.dimension_names"]) == ["time"]
    assert temp[b"zarr.zarr_format"] == b"3"
    masked = json.loads(table.schema.field("masked").metadata[b"zarr.attributes"])
    assert masked["_FillValue"] == -999
    assert json.loads(table.schema.metadata[b"zarr.group_attributes"]) == {"title": "weather", "Conventions": "CF-1.8", "history": "made by the tests"}


def test_a_projected_filtered_renamed_copy_keeps_the_kept_columns_attributes(tmp_path):
    src = tmp_path / "src.zarr"
    source(src, 3)
    df = session().sql(
        f"SELECT time, temp AS air, count * 2 AS doubled FROM read_zarr('{src}') WHERE count > 3 ORDER BY time"
    )
    schema = pa.table(df).schema
    assert json.loads(schema.field("air").metadata[b"zarr.attributes"])["units"] == "K"
    assert not schema.field("doubled").metadata, "a computed column carries nothing"
    out = tmp_path / "subset.zarr"
    datafusion_zarr.write_zarr(df, str(out), dimensions="time")
    got = xr.open_zarr(out)
    assert got["air"].attrs == {"units": "K", "long_name": "air temperature", "standard_name": "air_temperature"}
    assert got["doubled"].attrs == {}
    assert got.attrs["title"] == "weather"
    assert got.sizes["time"] == N - 4

    bare = tmp_path / "bare.zarr"
    datafusion_zarr.write_zarr(df, str(bare), dimensions="time", keep_attributes=False)
    got = xr.open_zarr(bare)
    assert got["air"].attrs == {} and got.attrs == {}
