#!/usr/bin/env python3
"""Writing Zarr side by side in one run: zarr-sql's `COPY … TO 'out.zarr' STORED AS ZARR` of a
table of strings and numbers read from a Zarr store, the same query counted without writing
(the baseline: what reading costs), and the peer, xarray opening the store and writing it back
with `to_zarr` (the same chunks, zstd, Zarr V3). Every side's output is checked equal before
anything is timed. Prints medians of ZARR_BENCH_RUNS runs (default 5) and the ratios.

    python3 benches/write.py path/to/zarr-sql

The source store (5,000,000 rows: a `<U16` name, some beyond ASCII, and an int64; chunks of
250,000, zstd) is written into benches/data on the first run.
"""
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import zarr

from cf import medians, timed  # benches/cf.py, beside this script

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "benches" / "data"
N, CHUNK = 5_000_000, 250_000
SELECT = "SELECT name, n FROM read_zarr('{store}')"


def source() -> Path:
    store = DATA / "write_source_5m.zarr"
    if store.exists():
        return store
    rng = np.random.default_rng(38)
    alphabet = np.array(list("abcdefghijklmnopqrstuvwxyzäöüß-"))
    pool = np.array(["".join(rng.choice(alphabet, size=rng.integers(3, 17))) for _ in range(50_000)])
    group = zarr.open_group(store, mode="w")
    name = group.create_array("name", shape=(N,), chunks=(CHUNK,), dtype="<U16", dimension_names=["index"])
    name[:] = pool[rng.integers(0, len(pool), size=N)]
    n = group.create_array("n", shape=(N,), chunks=(CHUNK,), dtype="int64", dimension_names=["index"])
    n[:] = np.arange(N, dtype="int64") * 7
    zarr.consolidate_metadata(store)
    return store


def peer(store: Path, out: Path) -> None:
    import xarray as xr

    ds = xr.open_zarr(store)
    ds.to_zarr(out, mode="w", zarr_format=3, consolidated=True,
               encoding={v: {"chunks": (CHUNK,)} for v in ds.data_vars})


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    binary = sys.argv[1]
    runs = int(os.environ.get("ZARR_BENCH_RUNS", "5"))
    store = source()
    work = Path(tempfile.mkdtemp(prefix="zarr-write-bench-"))
    ours, theirs = work / "ours.zarr", work / "xarray.zarr"
    select = SELECT.format(store=store)

    def copy():
        sql = f"COPY ({select}) TO '{ours}' STORED AS ZARR OPTIONS ('chunk_rows' '{CHUNK}', 'mode' 'overwrite')"
        subprocess.run([binary, "-q", "-c", sql], check=True, stdout=subprocess.DEVNULL)

    def read_only():
        sql = f"SELECT count(*) FROM ({select}) WHERE name <> 'zzzz' AND n >= 0"
        subprocess.run([binary, "-q", "-c", sql], check=True, stdout=subprocess.DEVNULL)

    # The outputs agree before anything is timed.
    copy()
    peer(store, theirs)
    a, b = zarr.open_group(ours, mode="r"), zarr.open_group(theirs, mode="r")
    for v in ("name", "n"):
        assert np.array_equal(a[v][:], b[v][:]), v
    sides = {"copy (zarr-sql)": copy, "read only (zarr-sql)": read_only,
             "xarray to_zarr": lambda: peer(store, theirs)}
    walls = {k: [] for k in sides}
    try:
        for _ in range(runs):
            for k, run in sides.items():
                walls[k].append(timed(run))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"{N:,} rows (<U16 name, int64), chunks of {CHUNK:,}, {runs} runs each, alternating; "
          "medians in seconds")
    m = medians(walls)
    print(f"  copy / read only {m['copy (zarr-sql)'] / m['read only (zarr-sql)']:.2f}x   "
          f"xarray / copy {m['xarray to_zarr'] / m['copy (zarr-sql)']:.2f}x")


if __name__ == "__main__":
    main()
