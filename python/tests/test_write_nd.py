"""The N-D layout (``dimensions``): the store equals what
``df.set_index([...]).to_xarray().to_zarr(...)`` writes, ``xr.open_zarr(ours).identical(...)``
of theirs, for a weather-like case: a string station coordinate, a time coordinate, floats with
NaN, integers and booleans, with and without cells no row fills, in V3 and V2."""

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
import xarray as xr

import datafusion_zarr


def weather() -> pd.DataFrame:
    rng = np.random.default_rng(1)
    times = pd.date_range("2024-01-01", periods=6, freq="6h")
    stations = ["ST-é1", "ST-02", "Zürich", "🦀-x", "A", ""]
    frame = pd.DataFrame([(t, s) for t in times for s in stations], columns=["time", "station"])
    frame["temp"] = rng.normal(size=len(frame))
    frame.loc[[3, 11], "temp"] = np.nan
    frame["count"] = np.arange(len(frame), dtype="int64")
    frame["flag"] = frame["count"] % 3 == 0
    # Rows in no particular order: the layout sorts the coordinates.
    return frame.sample(frac=1, random_state=2).reset_index(drop=True)


def assert_same_as_xarray(tmp_path, frame, dims, **options):
    theirs, ours = tmp_path / "theirs.zarr", tmp_path / "ours.zarr"
    frame.set_index(dims).to_xarray().to_zarr(theirs, zarr_format=options.get("zarr_format", 3))
    table = pa.Table.from_pandas(frame, preserve_index=False)
    rows = datafusion_zarr.write_zarr(table, ours, dimensions=dims, **options)
    assert rows == len(frame)
    got, want = xr.open_zarr(ours).load(), xr.open_zarr(theirs).load()
    xr.testing.assert_identical(got, want)
    return got


@pytest.mark.parametrize("zarr_format", [3, 2])
def test_a_full_grid_is_identical_to_xarrays(tmp_path, zarr_format):
    got = assert_same_as_xarray(tmp_path, weather(), ["time", "station"], zarr_format=zarr_format, chunks=[4, 4])
    assert got["count"].dtype == np.int64 and got["flag"].dtype == bool


def test_cells_no_row_fills_are_nan_as_pandas_makes_them(tmp_path):
    frame = weather().drop(columns=["flag"]).drop(index=[1, 7, 8])
    got = assert_same_as_xarray(tmp_path, frame, ["time", "station"])
    # Integers with holes become floats with NaN, as in pandas.
    assert got["count"].dtype == np.float64 and int(got["count"].isnull().sum()) == 3


def test_one_dimension_keeps_the_rows_order(tmp_path):
    frame = weather().drop_duplicates("station")[["station", "temp"]]
    assert_same_as_xarray(tmp_path, frame, ["station"])


def test_errors_name_the_cell_and_the_option(tmp_path):
    frame = weather()
    twice = pa.Table.from_pandas(pd.concat([frame, frame.iloc[[4]]]), preserve_index=False)
    row = frame.iloc[4]
    with pytest.raises(Exception, match=r"a second row for the cell .*" + str(row["station"])):
        datafusion_zarr.write_zarr(twice, tmp_path / "a.zarr", dimensions=["time", "station"])
    table = pa.Table.from_pandas(frame, preserve_index=False)
    with pytest.raises(Exception, match=r"36 cells or more, more than max_cells = 10 \(raise the option max_cells"):
        datafusion_zarr.write_zarr(table, tmp_path / "b.zarr", dimensions=["time", "station"], max_cells=10)
    with pytest.raises(Exception, match=r"dimensions: the query has no column day"):
        datafusion_zarr.write_zarr(table, tmp_path / "c.zarr", dimensions=["day"])
    assert not any(tmp_path.iterdir())
