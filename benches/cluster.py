#!/usr/bin/env python3
"""The cost of the Ballista cluster on one machine: the same zarr-sql binary (built with the
`ballista` feature) single-node and through a scheduler and two executors on 127.0.0.1 (one
task slot each, so the cluster has the machine's cores, as single-node has), alternating in
one run: the scan bench's query, the full scan (every string transcoded) and the export, each
ZARR_BENCH_RUNS times (default 5) per side, the queries with `-p` = the cores on both sides (so
a scan is two tasks on the cluster, one per executor); the export with its defaults (the cores
locally, one task on the cluster) and again with `-p` = the cores. Prints medians, every run
and cluster / local.

    cargo build --release --features zarr-sql/ballista
    python3 benches/cluster.py target/release/zarr-sql [STORE]

STORE defaults to benches/data/strings_20m.zarr (`python3 benches/peer/make_store.py`).
ZARR_BENCH_SLOTS (default 1) sets each executor's task slots: Ballista runs an executor's tasks
on a runtime of that many threads.
The processes are stopped when the script ends; their logs stay in a temporary directory (the
shuffle files and the exported file are removed).
"""
import os
import shutil
import socket
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


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(argv: list[str]) -> float:
    """Wall seconds of one child, which must succeed."""
    start = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def start_cluster(binary: str, logs: Path) -> tuple[str, list[subprocess.Popen]]:
    scheduler = f"127.0.0.1:{free_port()}"
    children = [subprocess.Popen(
        [binary, "scheduler", "--bind", scheduler],
        stdout=subprocess.DEVNULL, stderr=open(logs / "scheduler.log", "w"))]
    executor_logs = []
    for i in (1, 2):
        log = logs / f"executor-{i}.log"
        executor_logs.append(log)
        children.append(subprocess.Popen(
            [binary, "executor", "--scheduler", scheduler,
             "--bind", f"127.0.0.1:{free_port()}",
             "--concurrent-tasks", os.environ.get("ZARR_BENCH_SLOTS", "1"),
             "--work-dir", str(logs / "work")],
            stdout=subprocess.DEVNULL, stderr=open(log, "w")))
    deadline = time.time() + 60
    while not all("Starting poll work loop" in log.read_text() for log in executor_logs):
        if time.time() > deadline:
            sys.exit(f"the executors did not start; logs in {logs}")
        time.sleep(0.1)
    return f"df://{scheduler}", children


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    binary = sys.argv[1]
    store = sys.argv[2] if len(sys.argv) > 2 else str(ROOT / "benches/data/strings_20m.zarr")
    runs = int(os.environ.get("ZARR_BENCH_RUNS", "5"))
    logs = Path(tempfile.mkdtemp(prefix="zarr-cluster-"))
    (logs / "work").mkdir()
    url, children = start_cluster(binary, logs)
    cores = os.cpu_count()
    try:
        commands = {
            name: lambda remote, sql=sql: [binary, store, "-q", "-p", str(cores), "-c", sql] + remote
            for name, sql in QUERIES.items()
        }
        # The export's defaults: the cores locally, one task on the cluster (its file is
        # written by one task); then the scan divided among `cores` tasks on both sides.
        commands["export"] = lambda remote: [
            binary, "export", store, str(logs / "out.parquet"), "--quiet"
        ] + remote
        commands[f"export -p {cores}"] = lambda remote: [
            binary, "export", store, str(logs / "out.parquet"), "--quiet", "-p", str(cores)
        ] + remote
        slots = os.environ.get("ZARR_BENCH_SLOTS", "1")
        print(f"store {store}; {runs} runs each, alternating; cluster {url}, "
              f"2 executors of {slots} task slot(s)\n")
        for name, command in commands.items():
            times = {"local": [], "cluster": []}
            for _ in range(runs):
                times["local"].append(run(command([])))
                times["cluster"].append(run(command(["--scheduler", url])))
            print(f"{name}:")
            for side in ("local", "cluster"):
                shown = ", ".join(f"{t:.2f}" for t in times[side])
                print(f"  {side:7} median {statistics.median(times[side]):6.2f} s   runs [{shown}]")
            ratio = statistics.median(times["cluster"]) / statistics.median(times["local"])
            print(f"  cluster / local: {ratio:.2f}x\n")
    finally:
        for child in children:
            child.terminate()
        for child in children:
            child.wait()
        # Shuffle files and the exported file: gigabytes per run.
        shutil.rmtree(logs / "work", ignore_errors=True)
        (logs / "out.parquet").unlink(missing_ok=True)
        print(f"logs in {logs}")


if __name__ == "__main__":
    main()
