#!/usr/bin/env python3
"""Reference sets side by side (issue #49), in one run, alternating, medians of
ZARR_BENCH_RUNS (default 5) whole processes: zarr-sql over the kerchunk references of 100
netCDF-4 files (`refs.json`) against zarr-sql over the same values as a native Zarr store with
the same chunks and codecs (`native.zarr`), and against xarray over the same references
(fsspec's `reference://`, zarr-python 3, no dask), on two queries: the mean of all 20 M values,
and the mean of one station's 5,000. Answers are checked equal first.

    /tmp/kvenv/bin/python benches/references/make_data.py benches/data/refs_bench   # once
    python3 benches/references/bench.py target/release/zarr-sql /tmp/kvenv/bin/python
"""
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "benches" / "data" / "refs_bench"
THREADS = int(os.environ.get("ZARR_BENCH_THREADS", "2"))

QUERIES = {
    "all": ("SELECT avg(temp) AS m FROM t", "float(ds.temp.mean(dtype='f8'))"),
    "one station": (
        "SELECT avg(temp) AS m FROM t WHERE station = 'ST-00042'",
        "float(ds.temp.sel(station='ST-00042').mean(dtype='f8'))",
    ),
}

XARRAY = """
import sys, time, xarray as xr
start = time.perf_counter()
ds = xr.open_dataset("reference://", engine="zarr", chunks=None, backend_kwargs={{
    "consolidated": False, "zarr_format": 2,
    "storage_options": {{"fo": "{refs}", "remote_protocol": "file"}}}})
print({expr})
print("inside", time.perf_counter() - start, file=sys.stderr)
"""


def timed(cmd, cwd=None):
    done = subprocess.run(["/usr/bin/time", "-f", "TIME %e %M", *cmd], capture_output=True,
                          text=True, cwd=cwd)
    if done.returncode != 0:
        raise SystemExit(f"{cmd}: {done.stderr}")
    wall, rss = re.findall(r"TIME ([\d.]+) (\d+)", done.stderr)[-1]
    return float(wall), int(rss) / 1024, done.stdout


def answer(text):
    return [f"{float(n):.6g}" for n in re.findall(r"-?\d+\.\d+(?:e[-+]?\d+)?", text)]


def main():
    zarr_sql, python = str(Path(sys.argv[1]).resolve()), sys.argv[2]
    runs = int(os.environ.get("ZARR_BENCH_RUNS", "5"))

    def ours(location):
        return lambda sql: [zarr_sql, "-q", "--format", "csv", "-p", str(THREADS), "-c",
                            f"CREATE EXTERNAL TABLE t STORED AS ZARR LOCATION '{location}'; {sql}"]

    sides = {
        "ours, references": ours(DATA / "refs.json"),
        "ours, native Zarr": ours(DATA / "native.zarr"),
    }
    print(f"{THREADS} threads, {runs} runs, medians; ratios to ours over the references")
    for name, (sql, expr) in QUERIES.items():
        cmds = {side: make(sql) for side, make in sides.items()}
        cmds["xarray, references"] = [python, "-c", XARRAY.format(refs=DATA / "refs.json", expr=expr)]
        answers = {side: answer(timed(cmd, cwd=DATA)[2]) for side, cmd in cmds.items()}
        if len({tuple(a) for a in answers.values()}) != 1:
            raise SystemExit(f"{name}: the answers differ: {answers}")
        times = {side: [] for side in cmds}
        for _ in range(runs):
            for side, cmd in cmds.items():
                times[side].append(timed(cmd, cwd=DATA)[:2])
        base = statistics.median(w for w, _ in times["ours, references"])
        print(f"{name}: {sql}")
        for side, samples in times.items():
            wall = statistics.median(w for w, _ in samples)
            rss = statistics.median(r for _, r in samples)
            print(f"  {side:20} {wall:6.3f} s {rss:6.0f} MiB   {wall / base:5.2f}x")


if __name__ == "__main__":
    main()
