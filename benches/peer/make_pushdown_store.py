#!/usr/bin/env python3
"""Writes the store for benches/pushdown.rs: a group with a 2-D array and a string coordinate.

    python3 benches/peer/make_pushdown_store.py        # -> benches/data/stations.zarr

`temp(station, hour)`: float32, shape (10000, 1000), chunks (100, 100) (1,000 chunks), zstd;
`station`: `<U8` codes "ST-00000" .. "ST-09999" (sorted), chunks of 1,000, the coordinate of
the first dimension; `hour`: int64 0..999, the coordinate of the second. Written by zarr-python
with dimension_names, as xarray would.
"""

import argparse
import shutil
import warnings
from pathlib import Path

import numpy as np
import zarr
from zarr.codecs import ZstdCodec

warnings.filterwarnings("ignore", message=".*does not have a Zarr V3 specification.*")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", default="benches/data/stations.zarr")
    args = p.parse_args()
    out = Path(args.out)
    shutil.rmtree(out, ignore_errors=True)
    g = zarr.open_group(str(out), mode="w", zarr_format=3)
    rng = np.random.default_rng(42)
    n_st, n_h = 10_000, 1_000
    temp = g.create_array("temp", shape=(n_st, n_h), chunks=(100, 100), dtype="float32",
                          dimension_names=["station", "hour"], compressors=ZstdCodec(level=3))
    temp[:] = rng.normal(15.0, 8.0, size=(n_st, n_h)).astype("float32")
    st = g.create_array("station", shape=(n_st,), chunks=(1_000,), dtype="<U8",
                        dimension_names=["station"], compressors=ZstdCodec(level=3))
    st[:] = np.array([f"ST-{i:05d}" for i in range(n_st)], dtype="<U8")
    hour = g.create_array("hour", shape=(n_h,), chunks=(n_h,), dtype="int64", dimension_names=["hour"])
    hour[:] = np.arange(n_h, dtype="int64")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
