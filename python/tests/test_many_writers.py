"""Many writers, one store, from Python: four processes INSERT INTO one store xarray wrote, at
once, through datafusion-python; xarray then reads every row of each, once (the store's lock
makes them take turns). ``write_zarr`` over a store another writer holds waits up to
``lock_timeout`` and then fails naming the holder, writing nothing."""

import fcntl
import subprocess
import sys

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
import xarray as xr

import datafusion_zarr

# One writer: appends rows [start, start + count) of `frame` to the store at argv[1].
APPEND = """
import sys
import numpy as np, pandas as pd, pyarrow as pa
from datafusion import SessionContext
import datafusion_zarr
path, start, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rows = np.arange(start, start + count)
new = pd.DataFrame({"index": rows, "temp": rows * 0.5, "count": (rows * 3).astype("int32")})
ctx = SessionContext()
datafusion_zarr.register(ctx)
ctx.sql(f"CREATE EXTERNAL TABLE t STORED AS ZARR LOCATION '{path}'").collect()
ctx.register_record_batches("new", [pa.Table.from_pandas(new, preserve_index=False).to_batches()])
ctx.sql('INSERT INTO t (index, temp, count) SELECT index, temp, "count" FROM new').collect()
"""


def frame(start: int, count: int) -> pd.DataFrame:
    rows = np.arange(start, start + count)
    return pd.DataFrame(
        {"temp": rows * 0.5, "count": (rows * 3).astype("int32")},
        index=pd.Index(rows, name="index"),
    )


def test_four_processes_inserting_at_once_keep_every_row(tmp_path):
    path = tmp_path / "shared.zarr"
    frame(0, 10).to_xarray().to_zarr(path, zarr_format=3, encoding={v: {"chunks": (4,)} for v in ["temp", "count"]})
    starts = [1_000 * (w + 1) for w in range(4)]
    writers = [
        subprocess.Popen([sys.executable, "-c", APPEND, str(path), str(start), "500"], stderr=subprocess.PIPE, text=True)
        for start in starts
    ]
    for writer in writers:
        _, err = writer.communicate(timeout=300)
        assert writer.returncode == 0, err
    got = xr.open_zarr(path).load().sortby("index")
    want = xr.concat([frame(0, 10).to_xarray()] + [frame(s, 500).to_xarray() for s in starts], dim="index")
    xr.testing.assert_equal(got, want)


def test_write_zarr_over_a_held_store_names_the_holder_and_writes_nothing(tmp_path):
    path = tmp_path / "held.zarr"
    frame(0, 10).to_xarray().to_zarr(path, zarr_format=3)
    before = xr.open_zarr(path).load()
    lock = tmp_path / ".held.zarr.lock"
    lock.write_text("process 4242 on elsewhere since 2026-12-07T10:00:00Z")
    with open(lock) as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        table = frame(100, 5).reset_index()
        with pytest.raises(datafusion_zarr.ZarrError, match=r"another writer holds it \(process 4242 on elsewhere since 2026-12-07T10:00:00Z\)"):
            datafusion_zarr.write_zarr(pa.Table.from_pandas(table, preserve_index=False), str(path), mode="overwrite", lock_timeout=0)
    xr.testing.assert_identical(xr.open_zarr(path).load(), before)
