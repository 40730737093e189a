#!/usr/bin/env python3
"""CF decoding (`decode_cf`) side by side in one run: zarr-sql decoding packed numbers and times,
zarr-sql reading the stored numbers (`decode_cf=false`), and the peer, zarr-python reading the
same arrays and NumPy decoding them as xarray does (`value * scale_factor + add_offset` in
float64 with `_FillValue` masked; `units` since a date as datetime64). Prints medians of
ZARR_BENCH_RUNS runs (default 5) and the ratios to the stored-number scan.

    python3 benches/cf.py path/to/zarr-sql

The two stores (20,000,000 int16 packed values, 20,000,000 int64 minutes since 2000, chunks of
1,000,000, zstd) are written into benches/data on the first run.
"""
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import zarr

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "benches" / "data"
N = 20_000_000
PACKED = {"scale_factor": 0.01, "add_offset": 273.15, "_FillValue": -32767}
TIMES = {"units": "minutes since 2000-01-01", "calendar": "standard"}


def stores() -> tuple[Path, Path]:
    packed, times = DATA / "cf_packed_20m.zarr", DATA / "cf_times_20m.zarr"
    if not packed.exists():
        raw = np.random.default_rng(1).integers(-20000, 20000, size=N, dtype="i2")
        raw[::17] = -32767
        a = zarr.create_array(packed, shape=(N,), chunks=(1_000_000,), dtype="i2",
                              fill_value=0, attributes=PACKED)
        a[:] = raw
    if not times.exists():
        a = zarr.create_array(times, shape=(N,), chunks=(1_000_000,), dtype="i8",
                              fill_value=0, attributes=TIMES)
        a[:] = np.arange(N, dtype="i8")
    return packed, times


def peer_packed(store: Path) -> float:
    raw = zarr.open_array(store, mode="r")[:]
    values = raw.astype("f8") * PACKED["scale_factor"] + PACKED["add_offset"]
    values[raw == PACKED["_FillValue"]] = np.nan
    return float(np.nansum(values))


def peer_times(store: Path) -> np.datetime64:
    raw = zarr.open_array(store, mode="r")[:]
    return (np.datetime64("2000-01-01", "us") + raw.astype("m8[m]")).max()


def timed(run) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def medians(walls: dict[str, list[float]]) -> dict[str, float]:
    """Prints each side's median and runs, and returns the medians."""
    m = {k: statistics.median(v) for k, v in walls.items()}
    width = max(len(k) for k in walls)
    for k, v in walls.items():
        print(f"  {k:{width}} median {m[k]:.3f}   runs [{', '.join(f'{t:.3f}' for t in v)}]")
    return m


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    binary = sys.argv[1]
    runs = int(os.environ.get("ZARR_BENCH_RUNS", "5"))
    packed, times = stores()

    def sql(store: Path, query: str, decode: str):
        argv = [binary, str(store), "-q", "-o", f"decode_cf={decode}", "-c", query]
        return lambda: subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)

    cases = {
        "packed int16 -> float64, sum": (
            sql(packed, "SELECT sum(value) FROM t", "true"),
            sql(packed, "SELECT sum(value) FROM t", "false"),
            lambda: peer_packed(packed),
        ),
        "int64 minutes -> timestamp, max": (
            sql(times, "SELECT max(value) FROM t", "true"),
            sql(times, "SELECT max(value) FROM t", "false"),
            lambda: peer_times(times),
        ),
    }
    print(f"{runs} runs each, alternating; medians in seconds\n")
    for name, (decoded, stored, peer) in cases.items():
        walls = {"decoded": [], "stored": [], "peer": []}
        for _ in range(runs):
            walls["decoded"].append(timed(decoded))
            walls["stored"].append(timed(stored))
            walls["peer"].append(timed(peer))
        print(f"{name}:")
        m = medians(walls)
        print(f"  decoded / stored {m['decoded'] / m['stored']:.2f}x   "
              f"peer / decoded {m['peer'] / m['decoded']:.2f}x\n")


if __name__ == "__main__":
    main()
