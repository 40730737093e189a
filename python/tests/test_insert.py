"""INSERT INTO a table on a store xarray wrote, and on one we wrote: xarray reads the appended
dataset equal to ``xr.concat`` of the old and the new rows, as ``to_zarr(append_dim=...)``
would have made it."""

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
import xarray as xr
from datafusion import SessionContext

import datafusion_zarr


def frame(start: int, count: int) -> pd.DataFrame:
    rows = np.arange(start, start + count)
    return pd.DataFrame(
        {
            "station": np.array([f"ST-{r:03d}-é🦀"[: 4 + r % 8] for r in rows], dtype="<U12"),
            "temp": np.where(rows % 5 == 0, np.nan, rows * 0.25),
            "count": (rows * 3).astype("int32"),
            "day": pd.to_datetime("2020-01-01") + pd.to_timedelta(rows, unit="D"),
        },
        index=pd.Index(rows, name="index"),
    )


def session(path) -> SessionContext:
    ctx = SessionContext()
    datafusion_zarr.register(ctx)
    ctx.sql(f"CREATE EXTERNAL TABLE t STORED AS ZARR LOCATION '{path}'").collect()
    return ctx


def insert(ctx: SessionContext, new: pd.DataFrame) -> None:
    ctx.register_record_batches("new", [pa.Table.from_pandas(new.reset_index()).to_batches()])
    ctx.sql(
        'INSERT INTO t (index, station, temp, count, day) SELECT index, station, temp, "count", day FROM new'
    ).collect()


@pytest.mark.parametrize("zarr_format", [3, 2])
def test_insert_into_a_store_xarray_wrote(tmp_path, zarr_format):
    path = tmp_path / "x.zarr"
    old, new = frame(0, 10), frame(10, 7)
    old.to_xarray().to_zarr(path, zarr_format=zarr_format, encoding={v: {"chunks": (4,)} for v in ["station", "temp", "count", "day"]})
    ctx = session(path)
    insert(ctx, new)
    got = xr.open_zarr(path).load()
    want = xr.concat([old.to_xarray(), new.to_xarray()], dim="index")
    xr.testing.assert_equal(got, want)
    # The session's table reads the appended rows too.
    count = ctx.sql("SELECT count(*) AS n, max(index) AS m FROM t").to_pydict()
    assert count == {"n": [17], "m": [16]}


def test_insert_into_a_store_we_wrote(tmp_path):
    path = tmp_path / "ours.zarr"
    old, new = frame(0, 10), frame(10, 7)
    table = pa.Table.from_pandas(old.reset_index(drop=True), preserve_index=False)
    datafusion_zarr.write_zarr(table, path, chunk_rows=4, string_length=12)
    ctx = session(path)
    ctx.register_record_batches("new", [pa.Table.from_pandas(new.reset_index(drop=True), preserve_index=False).to_batches()])
    ctx.sql('INSERT INTO t (station, temp, count, day) SELECT station, temp, "count", day FROM new').collect()
    got = xr.open_zarr(path).load()
    both = pd.concat([old, new]).reset_index(drop=True)
    both.index.name = "index"
    want = both.to_xarray().drop_vars("index")
    xr.testing.assert_equal(got, want)
    assert got["station"].dtype == np.dtype("<U12")


def test_a_failed_insert_changes_nothing(tmp_path):
    path = tmp_path / "x.zarr"
    old = frame(0, 10)
    old.to_xarray().to_zarr(path, zarr_format=3)
    before = xr.open_zarr(path).load()
    ctx = session(path)
    # A day that is not a whole number of the array's units (days since 2020-01-01).
    with pytest.raises(Exception, match=r"column day, row 10: the value is not a whole number"):
        ctx.sql(
            "INSERT INTO t (index, station, temp, count, day) VALUES "
            "(10, 'a', 1.0, 1, TIMESTAMP '2020-02-01 12:00:00')"
        ).collect()
    xr.testing.assert_identical(xr.open_zarr(path).load(), before)
