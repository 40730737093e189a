#!/usr/bin/env python3
"""Many writers, one local store, side by side in one run (issue #47's targets):

- **one-row INSERT**: `zarr-sql STORE -c "INSERT INTO t … VALUES (…)"` with BEFORE (a build
  without the store lock) against AFTER (with it), alternating, ZARR_BENCH_RUNS (default 9)
  runs each; medians and after / before (target: at most 1.05);
- **4 concurrent appenders**: four AFTER processes each appending 1,000,000 rows at once
  against the same four appends one after another, on fresh copies of one store, alternating,
  ZARR_BENCH_RUNS (3) runs; every row checked there; medians and concurrent / serial (target:
  at most 1.3).

    python3 benches/many_writers.py BEFORE/zarr-sql AFTER/zarr-sql

Each store starts as 1,000 rows of an int64 key and a `<U8` string, chunks of 100,000 rows.
"""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROWS = 1_000_000
WRITERS = 4


def copy_sql(store: Path) -> str:
    return (
        "COPY (SELECT v AS k, concat('w', CAST(v % 997 AS VARCHAR)) AS s "
        f"FROM generate_series(0, 999) t(v)) TO '{store}' STORED AS ZARR "
        "OPTIONS ('chunk_rows' '100000', 'string_length' '8')"
    )


def insert_sql(start: int, rows: int) -> str:
    return (
        "INSERT INTO t (k, s) SELECT v, concat('w', CAST(v % 997 AS VARCHAR)) "
        f"FROM generate_series({start}, {start + rows - 1}) t(v)"
    )


def run(binary: str, args: list[str]) -> None:
    subprocess.run([binary, "-q", *args], check=True, stdout=subprocess.DEVNULL)


def timed(argvs: list[list[str]], at_once: bool) -> float:
    """Wall seconds of the processes `argvs`, all at once or one after another."""
    start = time.perf_counter()
    if at_once:
        children = [subprocess.Popen(a, stdout=subprocess.DEVNULL) for a in argvs]
        for child in children:
            if child.wait() != 0:
                sys.exit(f"a writer failed: {child.args}")
    else:
        for argv in argvs:
            subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def count(binary: str, store: Path) -> tuple[int, int]:
    out = subprocess.run(
        [binary, "-q", "--format", "csv", str(store), "-c",
         "SELECT count(*) AS n, count(DISTINCT k) AS d FROM t"],
        check=True, capture_output=True, text=True,
    ).stdout.splitlines()
    n, d = out[1].split(",")
    return int(n), int(d)


def main() -> None:
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    before, after = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        seed = tmp / "seed.zarr"
        run(after, ["-c", copy_sql(seed)])

        runs = int(os.environ.get("ZARR_BENCH_RUNS", "9"))
        times = {"before": [], "after": []}
        stores = {}
        for side, binary in (("before", before), ("after", after)):
            stores[side] = tmp / f"one_row_{side}.zarr"
            shutil.copytree(seed, stores[side])
        for i in range(runs):
            for side, binary in (("before", before), ("after", after)):
                sql = f"INSERT INTO t (k, s) VALUES ({10_000_000 + i}, 'x')"
                times[side].append(timed([[binary, "-q", str(stores[side]), "-c", sql]], False))
        b, a = statistics.median(times["before"]), statistics.median(times["after"])
        print(f"one-row INSERT: before {b * 1000:.1f} ms, after {a * 1000:.1f} ms, "
              f"after / before {a / b:.3f}")
        print(f"  before {[round(t * 1000, 1) for t in times['before']]}")
        print(f"  after  {[round(t * 1000, 1) for t in times['after']]}")

        runs = int(os.environ.get("ZARR_BENCH_RUNS", "3"))
        times = {"concurrent": [], "serial": []}
        for i in range(runs):
            for mode in ("concurrent", "serial"):
                store = tmp / f"{mode}_{i}.zarr"
                shutil.copytree(seed, store)
                argvs = [
                    [after, "-q", str(store), "-c", insert_sql((w + 1) * 10_000_000, ROWS)]
                    for w in range(WRITERS)
                ]
                times[mode].append(timed(argvs, mode == "concurrent"))
                expected = 1000 + WRITERS * ROWS
                if count(after, store) != (expected, expected):
                    sys.exit(f"{mode}: the store does not hold every row once")
                shutil.rmtree(store)
        c, s = statistics.median(times["concurrent"]), statistics.median(times["serial"])
        print(f"{WRITERS} appenders of {ROWS:,} rows: concurrent {c:.2f} s, serial {s:.2f} s, "
              f"concurrent / serial {c / s:.3f}")
        print(f"  concurrent {[round(t, 2) for t in times['concurrent']]}")
        print(f"  serial     {[round(t, 2) for t in times['serial']]}")


if __name__ == "__main__":
    main()
