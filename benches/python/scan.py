"""The Python binding's bench (issue #13): the scan query from datafusion-python through
datafusion_zarr, beside the same query in `zarr-sql` and zarr-python + pyarrow (peer.py), in one
run, alternating, each in its own child process.

    python benches/python/scan.py [--store benches/data/strings_20m.zarr] [--runs 3]
        [--threads 2] [--zarr-sql target/release/zarr-sql]

Run it with the interpreter of a virtualenv where `pip install ./python` (the release build)
installed datafusion_zarr. It prints each side's wall time (the whole child process) and, for
the two Python sides, their own timer around the query (after imports), with the ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
QUERY = "SELECT count(*) AS n FROM t WHERE value LIKE '%ab%'"

CHILD = """
import json, sys, time
import datafusion, datafusion_zarr
store, threads, query = sys.argv[1], int(sys.argv[2]), sys.argv[3]
start = time.perf_counter()
config = datafusion.SessionConfig().with_target_partitions(threads)
ctx = datafusion.SessionContext(config)
ctx.register_table("t", datafusion_zarr.ZarrTable(store))
n = ctx.sql(query).to_pydict()["n"][0]
print(json.dumps({"count": n, "seconds": time.perf_counter() - start}))
"""


def timed(cmd: list[str]) -> tuple[float, str]:
    start = time.perf_counter()
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return time.perf_counter() - start, out.stdout


def last_json(out: str) -> dict:
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", default=str(ROOT / "benches/data/strings_20m.zarr"))
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--zarr-sql", default=str(ROOT / "target/release/zarr-sql"))
    parser.add_argument("--peer-python", default="python3", help="interpreter with zarr + pyarrow")
    args = parser.parse_args()
    if not (Path(args.store) / "zarr.json").exists():
        sys.exit(f"no store at {args.store}: python3 benches/peer/make_store.py")
    threads = str(args.threads)
    ours = [args.zarr_sql, args.store, "-q", "--format", "csv", "-p", threads, "-c", QUERY]
    python = [sys.executable, "-c", CHILD, args.store, threads, QUERY]
    peer = [args.peer_python, str(ROOT / "benches/peer/peer.py"), "scan", args.store, "--threads", threads]

    _, warm = timed(ours)  # page cache
    want = int(warm.strip().splitlines()[-1])
    rows: dict[str, list[float]] = {"zarr-sql": [], "python": [], "python own": [], "peer": [], "peer own": []}
    for _ in range(args.runs):
        s, out = timed(ours)
        assert int(out.strip().splitlines()[-1]) == want
        rows["zarr-sql"].append(s)
        s, out = timed(python)
        assert last_json(out)["count"] == want, out
        rows["python"].append(s)
        rows["python own"].append(last_json(out)["seconds"])
        s, out = timed(peer)
        assert last_json(out)["count"] == want, out
        rows["peer"].append(s)
        rows["peer own"].append(last_json(out)["seconds"])

    med = {k: statistics.median(v) for k, v in rows.items()}
    print(f"store {args.store}, {threads} threads each side, {args.runs} runs; count = {want}")
    for k, v in rows.items():
        shown = ", ".join(f"{x:.2f}" for x in v)
        print(f"{k:<11} median {med[k]:.2f} s  [{shown}]  {med[k] / med['zarr-sql']:.2f}x zarr-sql")


if __name__ == "__main__":
    main()
