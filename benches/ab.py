#!/usr/bin/env python3
"""Two zarr-sql binaries side by side (a change's before and after), alternating in one run:
the scan bench's query, the full scan (every string transcoded) and the export, each run
ZARR_BENCH_RUNS times (default 5) on each side. Prints medians, every run and the ratios
after / before, with each child's CPU time (user + system, from wait4).

    python3 benches/ab.py BEFORE/zarr-sql AFTER/zarr-sql [STORE]

STORE defaults to benches/data/strings_20m.zarr (`python3 benches/peer/make_store.py`).
"""
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
QUERIES = {
    "scan LIKE '%ab%'": "SELECT count(*) FROM t WHERE value LIKE '%ab%'",
    "full scan": "SELECT count(value) FROM t WHERE value <> 'zzzz'",
}


def run(argv: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds of one child, which must succeed."""
    start = time.perf_counter()
    child = subprocess.Popen(argv, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - start
    if child.returncode != 0:
        sys.exit(f"{argv} failed with status {status}")
    return wall, usage.ru_utime + usage.ru_stime


def main() -> None:
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    before, after = sys.argv[1], sys.argv[2]
    store = sys.argv[3] if len(sys.argv) > 3 else str(ROOT / "benches/data/strings_20m.zarr")
    runs = int(os.environ.get("ZARR_BENCH_RUNS", "5"))
    out = Path(tempfile.mkdtemp(prefix="zarr-ab-"))
    commands = {
        name: lambda binary, sql=sql: [binary, store, "-q", "-c", sql]
        for name, sql in QUERIES.items()
    }
    commands["export"] = lambda binary: [
        binary, "export", store, str(out / "out.parquet"), "--quiet"
    ]
    print(f"store {store}; {runs} runs each, alternating\nbefore {before}\nafter  {after}\n")
    for name, command in commands.items():
        times = {"before": [], "after": []}
        cpu = {"before": [], "after": []}
        for _ in range(runs):
            for side, binary in (("before", before), ("after", after)):
                wall, used = run(command(binary))
                times[side].append(wall)
                cpu[side].append(used)
        b, a = statistics.median(times["before"]), statistics.median(times["after"])
        print(f"{name}:")
        for side in ("before", "after"):
            shown = ", ".join(f"{t:.2f}" for t in times[side])
            cpu_shown = ", ".join(f"{t:.2f}" for t in cpu[side])
            median = statistics.median(times[side])
            print(f"  {side:6} median {median:6.2f} s   runs [{shown}]   CPU [{cpu_shown}]")
        print(f"  after / before: {a / b:.2f}x\n")
    for f in out.iterdir():
        f.unlink()
    out.rmdir()


if __name__ == "__main__":
    main()
