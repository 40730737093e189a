#!/usr/bin/env python3
"""netCDF character arrays side by side in one run: zarr-sql joining `name(station, strlen)`
(`S1`, `_Encoding: utf-8`) into strings, zarr-sql reading the same strings stored joined
(`name(station)` as `S16`, the baseline: the same bytes through the same conversion), and the
peer, xarray opening the character array and joining and decoding it (`CharacterArrayCoder`,
`EncodedStringCoder`). Each side counts the strings unequal to 'zzzz', so every one is read
and checked as UTF-8. Prints medians of ZARR_BENCH_RUNS runs (default 5) and the ratios.

    python3 benches/characters.py path/to/zarr-sql

The two stores (5,000,000 strings of up to 16 bytes, some beyond ASCII, chunks of 250,000
strings, zstd) are written into benches/data on the first run.
"""
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import zarr

from cf import medians, timed  # benches/cf.py, beside this script

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "benches" / "data"
N, WIDTH, CHUNK = 5_000_000, 16, 250_000
QUERY = "SELECT count(*) FROM t WHERE name <> 'zzzz'"


def names() -> np.ndarray:
    rng = np.random.default_rng(3)
    alphabet = np.array(list("abcdefghijklmnopqrstuvwxyzäöüß-"))
    pool = ["".join(rng.choice(alphabet, size=rng.integers(3, 9))) for _ in range(50_000)]
    encoded = np.array([s.encode()[:WIDTH] for s in pool], dtype=f"S{WIDTH}")
    return encoded[rng.integers(0, len(pool), size=N)]


def stores() -> tuple[Path, Path]:
    chars, joined = DATA / "chars_5m.zarr", DATA / "chars_joined_5m.zarr"
    if chars.exists() and joined.exists():
        return chars, joined
    values = names()
    group = zarr.open_group(chars, mode="w")
    a = group.create_array("name", shape=(N, WIDTH), chunks=(CHUNK, WIDTH), dtype="S1",
                           dimension_names=["station", "strlen"],
                           attributes={"_Encoding": "utf-8"})
    a[:] = values.view("S1").reshape(N, WIDTH)
    group = zarr.open_group(joined, mode="w")
    a = group.create_array("name", shape=(N,), chunks=(CHUNK,), dtype=f"S{WIDTH}",
                           dimension_names=["station"], attributes={"_Encoding": "utf-8"})
    a[:] = values
    return chars, joined


def peer(store: Path) -> int:
    import xarray as xr

    decoded = xr.open_zarr(store, consolidated=False)["name"].values
    return int((decoded != "zzzz").sum())


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    binary = sys.argv[1]
    runs = int(os.environ.get("ZARR_BENCH_RUNS", "5"))
    chars, joined = stores()

    def sql(store: Path):
        argv = [binary, str(store), "-q", "-c", QUERY]
        return lambda: subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)

    # The answers agree before anything is timed.
    counts = {
        subprocess.run([binary, str(s), "-q", "--format", "csv", "-c", QUERY], check=True,
                       capture_output=True, text=True).stdout.split()[-1]
        for s in (chars, joined)
    }
    assert counts == {str(peer(chars))}, counts
    sides = {"joined": sql(chars), "stored S16": sql(joined), "xarray": lambda: peer(chars)}
    walls = {k: [] for k in sides}
    for _ in range(runs):
        for k, run in sides.items():
            walls[k].append(timed(run))
    print(f"{N:,} strings, {runs} runs each, alternating; medians in seconds")
    m = medians(walls)
    print(f"  joined / stored S16 {m['joined'] / m['stored S16']:.2f}x   "
          f"xarray / joined {m['xarray'] / m['joined']:.2f}x")


if __name__ == "__main__":
    main()
