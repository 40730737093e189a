#!/usr/bin/env python3
"""The reference-set bench's data (issue #49): 100 netCDF-4 files written by netCDF4-python,
20,000,000 float32 values in all (`temp(time, station)`, 50 time steps of 4,000 stations per
file, chunks of 10 x 4,000, zlib 4 + shuffle) with a variable-length string coordinate
`station`; their kerchunk references joined along time (`refs.json`, kerchunk 0.2.10's
`SingleHdf5ToZarr` and `MultiZarrToZarr`); and the same values as a native Zarr V2 store with
the same chunks and codecs (`native.zarr`, zarr-python), so that the two differ only in where
the chunks are.

    /tmp/kvenv/bin/python benches/references/make_data.py benches/data/refs_bench

(the virtualenv of tools/kerchunk-fixtures/README.md)
"""
import json
import os
import sys
from pathlib import Path

import netCDF4
import numcodecs
import numpy as np
import xarray as xr
from kerchunk.combine import MultiZarrToZarr
from kerchunk.hdf import SingleHdf5ToZarr

FILES, STEPS, STATIONS, CHUNK_STEPS = 100, 50, 4000, 10


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    os.chdir(out)
    rng = np.random.default_rng(52)
    names = np.array([f"ST-{i:05d}" for i in range(STATIONS)], dtype=object)
    parts = []
    for f in range(FILES):
        path = f"part{f:03d}.nc"
        with netCDF4.Dataset(path, "w") as ds:
            ds.createDimension("time", STEPS)
            ds.createDimension("station", STATIONS)
            t = ds.createVariable("time", "f8", ("time",))
            t.units = "hours since 2000-01-01"
            t[:] = np.arange(f * STEPS, (f + 1) * STEPS)
            s = ds.createVariable("station", str, ("station",))
            s[:] = names
            v = ds.createVariable(
                "temp", "f4", ("time", "station"), zlib=True, complevel=4, shuffle=True,
                chunksizes=(CHUNK_STEPS, STATIONS),
            )
            v.units = "K"
            v[:] = (273.15 + 30 * rng.random((STEPS, STATIONS))).astype("f4")
        parts.append(SingleHdf5ToZarr(path, inline_threshold=300).translate())
    refs = MultiZarrToZarr(parts, concat_dims=["time"], identical_dims=["station"]).translate()
    Path("refs.json").write_text(json.dumps(refs))
    datasets = [xr.open_dataset(f"part{f:03d}.nc") for f in range(FILES)]
    joined = xr.concat(datasets, dim="time", data_vars="minimal", coords="minimal")
    encoding = {
        "temp": {
            "chunks": (CHUNK_STEPS, STATIONS),
            "compressors": [numcodecs.Zlib(level=4)],
            "filters": [numcodecs.Shuffle(elementsize=4)],
        }
    }
    joined.to_zarr("native.zarr", mode="w", zarr_format=2, encoding=encoding, consolidated=True)
    for d in datasets:
        d.close()
    print(f"{out}: {FILES} files, refs.json ({Path('refs.json').stat().st_size} bytes), native.zarr")


if __name__ == "__main__":
    main()
