#!/usr/bin/env python3
"""Variable-length strings (Zarr V3 `string`, which zarr-python 3 writes for `dtype=str` and
xarray for a pandas column of strings) side by side in one run: zarr-sql scanning them, zarr-sql
scanning the same strings as `fixed_length_utf32` (`<U16`, the baseline: our own type), and the
peer (`benches/peer/peer.py scan`: zarr-python reading each chunk, pyarrow matching). Each
counts the strings containing "ab" (`LIKE '%ab%'`), with 2 threads; the counts must agree.
Prints medians of ZARR_BENCH_RUNS runs (default 5) and the ratios.

    python3 benches/vlen_strings.py path/to/zarr-sql

The stores (5,000,000 strings of `make_store.py`, chunks of 100,000, zstd) are written into
benches/data on the first run.
"""
import os
import subprocess
import sys
from pathlib import Path

import zarr
from zarr.codecs import ZstdCodec

from cf import medians, timed  # benches/cf.py, beside this script

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "benches" / "data"
N = 5_000_000
QUERY = "SELECT count(*) FROM t WHERE value LIKE '%ab%'"


def stores() -> tuple[Path, Path]:
    fixed, vlen = DATA / "strings_5m.zarr", DATA / "strings_vlen_5m.zarr"
    if not fixed.exists():
        make = ROOT / "benches" / "peer" / "make_store.py"
        subprocess.run([sys.executable, str(make), "--n", str(N), "--out", str(fixed)],
                       check=True)
    if not vlen.exists():
        values = zarr.open_array(fixed, mode="r")[:].astype(object)
        a = zarr.create_array(vlen, shape=(N,), chunks=(100_000,), dtype=str,
                              compressors=ZstdCodec(level=3), dimension_names=["i"])
        a[:] = values
    return fixed, vlen


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    binary = sys.argv[1]
    runs = int(os.environ.get("ZARR_BENCH_RUNS", "5"))
    fixed, vlen = stores()
    peer = ROOT / "benches" / "peer" / "peer.py"

    def ours(store: Path):
        return [binary, str(store), "-q", "-p", "2", "--format", "csv", "-c", QUERY]

    def theirs(store: Path):
        return [sys.executable, str(peer), "scan", str(store), "--threads", "2"]

    sides = {"vlen": ours(vlen), "fixed <U16": ours(fixed), "peer vlen": theirs(vlen)}
    counts = {
        k: subprocess.run(argv, check=True, capture_output=True, text=True).stdout
        for k, argv in sides.items()
    }
    ours_count = {counts["vlen"].split()[-1], counts["fixed <U16"].split()[-1]}
    assert len(ours_count) == 1 and f'"count": {ours_count.pop()}' in counts["peer vlen"], counts
    walls = {k: [] for k in sides}
    for _ in range(runs):
        for k, argv in sides.items():
            walls[k].append(timed(lambda: subprocess.run(argv, check=True,
                                                         stdout=subprocess.DEVNULL)))
    print(f"{N:,} strings, LIKE '%ab%', 2 threads, {runs} runs each, alternating; medians in s")
    m = medians(walls)
    print(f"  vlen / fixed {m['vlen'] / m['fixed <U16']:.2f}x   "
          f"peer / vlen {m['peer vlen'] / m['vlen']:.2f}x")


if __name__ == "__main__":
    main()
