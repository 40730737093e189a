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


def cf_source(path, zarr_format: int) -> None:
    """A store whose values xarray encodes: packed int16 temperatures (with a masked one), times
    counted in hours, durations in minutes, and dates in the noleap calendar."""
    rows = np.arange(N)
    temps = (rows * 0.5 + 10).astype("float64")
    temps[4] = np.nan
    ds = xr.Dataset(
        {
            "packed": ("time", temps, {"units": "degC", "long_name": "packed temperature"}),
            "wait": ("time", pd.to_timedelta(rows * 15, unit="min").to_numpy(), {"long_name": "a wait"}),
            "noleap": ("time", rows.astype("int64"), {"units": "days since 2000-02-27", "calendar": "noleap", "long_name": "model day"}),
        },
        coords={"time": ("time", pd.date_range("2000-01-01", periods=N, freq="6h"), {"axis": "T"})},
        attrs={"title": "encoded"},
    )
    encoding = {
        "packed": {"dtype": "int16", "scale_factor": 0.5, "add_offset": 10.0, "_FillValue": -32767},
        "time": {"units": "hours since 2000-01-01", "dtype": "int64"},
        "wait": {"units": "minutes", "dtype": "int64"},
    }
    ds.to_zarr(path, zarr_format=zarr_format, consolidated=True, encoding=encoding)


def opened(path) -> xr.Dataset:
    return xr.open_zarr(path, decode_times=xr.coders.CFDatetimeCoder(use_cftime=None), decode_timedelta=True)


@pytest.mark.parametrize("zarr_format", [3, 2])
def test_cf_encoded_columns_are_encoded_again_as_their_source(tmp_path, zarr_format):
    src = tmp_path / "src.zarr"
    cf_source(src, zarr_format)
    want = opened(src)
    df = session().sql(f"SELECT * FROM read_zarr('{src}') WHERE time >= '2000-01-01T12:00:00'")
    out = tmp_path / "copy.zarr"
    datafusion_zarr.write_zarr(df, str(out), dimensions="time", zarr_format=zarr_format)
    got = opened(out)
    xr.testing.assert_identical(got, want.isel(time=slice(2, None)))
    # Stored as the source stored them, not as the writer would write their types.
    for name in ["packed", "time", "wait", "noleap"]:
        assert got[name].encoding["dtype"] == want[name].encoding["dtype"], name
    assert got["packed"].encoding["dtype"] == np.dtype("int16")
    assert (got["packed"].encoding["scale_factor"], got["packed"].encoding["add_offset"]) == (0.5, 10.0)
    assert got["packed"].encoding["_FillValue"] == -32767
    assert got["time"].encoding["units"] == "hours since 2000-01-01"
    assert got["wait"].encoding["units"] == "minutes"
    # Non-standard calendars read as numbers with their units: xarray decodes the copy to the
    # same cftime dates.
    assert got["noleap"].values[0].calendar == "noleap"
    assert str(got["noleap"].values[-1]) == str(want["noleap"].values[-1])
    import zarr

    stored = zarr.open_array(out / "packed", mode="r")[:]
    assert stored.dtype == np.int16 and stored[2] == -32767, "the masked value is the source's _FillValue"

    # keep_attributes=False: written as the writer writes floats and times.
    bare = tmp_path / "bare.zarr"
    datafusion_zarr.write_zarr(df, str(bare), dimensions="time", zarr_format=zarr_format, keep_attributes=False)
    assert opened(bare)["packed"].encoding["dtype"] == np.dtype("float64")


def test_a_value_its_source_encoding_cannot_hold_is_an_error_naming_the_row(tmp_path):
    def field(name, type_, attributes, data_type):
        return pa.field(name, type_, metadata={"zarr.attributes": json.dumps(attributes), "zarr.data_type": data_type, "zarr.zarr_format": "3"})

    packing = {"scale_factor": 0.5, "add_offset": 10.0, "_FillValue": -32767}
    table = pa.table({"p": [10.0, 10.5, 10.25]}, schema=pa.schema([field("p", pa.float64(), packing, "int16")]))
    with pytest.raises(datafusion_zarr.ZarrError, match=r"column p, row 2: the value does not fit its source's encoding \(int16, scale_factor 0.5, add_offset 10\)"):
        datafusion_zarr.write_zarr(table, str(tmp_path / "p.zarr"))
    beyond = pa.table({"p": [10.0, 1e9]}, schema=pa.schema([field("p", pa.float64(), packing, "int16")]))
    with pytest.raises(datafusion_zarr.ZarrError, match=r"column p, row 1: the value does not fit"):
        datafusion_zarr.write_zarr(beyond, str(tmp_path / "p.zarr"))
    days = {"units": "days since 2000-01-01", "calendar": "proleptic_gregorian"}
    times = pa.array([pd.Timestamp("2000-01-02"), pd.Timestamp("2000-01-02 12:00")], pa.timestamp("us"))
    table = pa.table({"t": times}, schema=pa.schema([field("t", pa.timestamp("us"), days, "int64")]))
    with pytest.raises(datafusion_zarr.ZarrError, match=r"column t, row 1: the value is not a whole number of its source's units"):
        datafusion_zarr.write_zarr(table, str(tmp_path / "t.zarr"))
    assert not any(tmp_path.iterdir()), "a refused write leaves nothing"
    # keep_attributes=False writes them as they are.
    datafusion_zarr.write_zarr(table, str(tmp_path / "t.zarr"), keep_attributes=False)
    assert pd.Timestamp(xr.open_zarr(tmp_path / "t.zarr")["t"].values[1]) == pd.Timestamp("2000-01-02 12:00")
