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


@pytest.mark.parametrize("zarr_format", [3, 2])
def test_variable_length_strings_and_bytes_are_written_as_xarray_writes_them(tmp_path, zarr_format):
    import zarr

    frame = weather()
    frame["note"] = [f"n{i}" * (i % 4) + "é🦀"[: i % 3] for i in range(len(frame))]
    got = assert_same_as_xarray(tmp_path, frame, ["time", "station"], zarr_format=zarr_format, chunks=[4, 4], string_encoding="vlen")
    theirs_read = xr.open_zarr(tmp_path / "theirs.zarr")
    assert got["note"].dtype == theirs_read["note"].dtype and got["station"].dtype == theirs_read["station"].dtype
    want = frame.set_index(["time", "station"]).to_xarray()["note"]
    assert got["note"].values.tolist() == want.values.tolist()
    note = zarr.open_array(tmp_path / "ours.zarr" / "note", mode="r")
    theirs = zarr.open_array(tmp_path / "theirs.zarr" / "note", mode="r")
    if zarr_format == 3:
        assert note.metadata.data_type.to_json(zarr_format=3) == theirs.metadata.data_type.to_json(zarr_format=3)
    else:
        assert note.metadata.dtype == theirs.metadata.dtype and [f.codec_id for f in note.metadata.filters] == ["vlen-utf8"]
    # Bytes, in the same grid.
    frame["blob"] = [bytes([i % 256]) * (i % 5) for i in range(len(frame))]
    out = tmp_path / "bytes.zarr"
    datafusion_zarr.write_zarr(pa.Table.from_pandas(frame, preserve_index=False), out, dimensions=["time", "station"], zarr_format=zarr_format, chunks=[4, 4])
    blob = xr.open_zarr(out)["blob"].load()
    assert blob.values.tolist() == frame.set_index(["time", "station"]).to_xarray()["blob"].values.tolist()


def test_variable_length_cells_no_row_fills_take_null_value(tmp_path):
    frame = weather().drop(index=[1, 7])
    frame["note"] = [f"n{i}" for i in range(len(frame))]
    table = pa.Table.from_pandas(frame[["time", "station", "note"]], preserve_index=False)
    with pytest.raises(datafusion_zarr.ZarrError, match=r"column note: the grid has cells no row fills .* give the option null_value"):
        datafusion_zarr.write_zarr(table, tmp_path / "a.zarr", dimensions=["time", "station"], string_encoding="vlen")
    out = tmp_path / "b.zarr"
    datafusion_zarr.write_zarr(table, out, dimensions=["time", "station"], string_encoding="vlen", null_value="-")
    # zarr-python: xarray cannot decode a V3 string array's `_FillValue` attribute, which its
    # own to_zarr writes the same (see test_write_roundtrip's null_value test).
    import zarr

    notes = zarr.open_array(out / "note", mode="r")[...].ravel().tolist()
    assert notes.count("-") == 2 and sorted(n for n in notes if n != "-") == sorted(frame["note"])
