#!/usr/bin/env python3
"""Late materialisation (issue #52) side by side in one run: zarr-sql with its filters evaluated
in the scan (the filter column decoded first, the other columns only for units with matches)
against zarr-sql with `pushdown = false` (every column of every chunk decoded, DataFusion's
`FilterExec` above), and against the Rust peer arrow-zarr (`benches/arrow_zarr/`, when its
binary is given), each a child process, alternating; prints medians of ZARR_BENCH_RUNS runs
(default 7) of wall time and peak RSS, and the ratios to ours; a side that cannot run a query
is reported with its error.

    python3 benches/late_filter.py target/release/zarr-sql [path/to/arrow-zarr-query]

The store (a group of three float64 arrays of 20,000,000 rows along `i`: `a` increasing from 0
to 20,000 in steps of 0.001, `b` uniform in [0, 1) from a fixed seed, `cc` repeating 0..99;
chunks of 1,000,000 rows, zstd 3) is written by our COPY into benches/data on the first run.
Every side's answers are checked equal before timing. The queries: a full sum, filters passing
50%, 2.5% (at the end and in the middle of `a`), 3% (`IN`) and no rows, a TopK, and a join with
a small table.
"""
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STORE = ROOT / "benches" / "data" / "floats_20m.zarr"
THREADS = int(os.environ.get("ZARR_BENCH_THREADS", "2"))
QUERIES = [
    ("full", "SELECT sum(a), sum(b), sum(cc) FROM t"),
    ("half", "SELECT count(*), sum(a) FROM t WHERE b > 0.5"),
    ("2.5%", "SELECT sum(b) FROM t WHERE a > 19500"),
    ("none", "SELECT count(*), sum(cc) FROM t WHERE b > 2"),
    ("middle", "SELECT count(*), sum(b) FROM t WHERE a BETWEEN 9000 AND 9499.999"),
    ("in", "SELECT count(*), sum(b) FROM t WHERE cc IN (3, 17, 42)"),
    ("topk", "SELECT a, b FROM t ORDER BY a DESC LIMIT 10"),
    ("join", "SELECT count(*), sum(t.b) FROM t JOIN (VALUES (1.0), (2.0)) s(x) ON t.cc = s.x"),
]


def make_store(zarr_sql: str) -> None:
    if STORE.exists():
        return
    STORE.parent.mkdir(parents=True, exist_ok=True)
    # b: a fixed-seed hash of the row number in [0, 1), so every run makes the same store.
    sql = (
        "COPY (SELECT v / 1000.0 AS a, "
        "CAST((v * 2654435761) % 4294967296 AS DOUBLE) / 4294967296.0 AS b, "
        "CAST(v % 100 AS DOUBLE) AS cc FROM generate_series(0, 19999999) t(v)) "
        f"TO '{STORE}' STORED AS ZARR OPTIONS ('chunk_rows' '1000000', "
        "'compression' 'zstd', 'compression_level' '3')"
    )
    subprocess.run([zarr_sql, "-q", "-c", sql], check=True)


class Failed(Exception):
    """A side could not run a query: its first line of error."""


def timed(cmd: list[str]) -> tuple[float, float, str]:
    """Wall seconds, peak RSS in MiB and standard output of `cmd`, by GNU time."""
    done = subprocess.run(["/usr/bin/time", "-f", "TIME %e %M", *cmd], capture_output=True, text=True)
    if done.returncode != 0:
        raise Failed(done.stderr.strip().splitlines()[0] if done.stderr.strip() else "failed")
    wall, rss = re.findall(r"TIME ([\d.]+) (\d+)", done.stderr)[-1]
    return float(wall), int(rss) / 1024, done.stdout


def answer(text: str) -> list[str]:
    """The numbers of a printed result, rounded to 6 significant digits."""
    numbers = re.findall(r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?", text.split("elapsed_ms")[0])
    return [f"{float(n):.6g}" for n in numbers]


def main() -> None:
    zarr_sql = sys.argv[1]
    peer = sys.argv[2] if len(sys.argv) > 2 else None
    runs = int(os.environ.get("ZARR_BENCH_RUNS", "7"))
    make_store(zarr_sql)

    def ours(sql: str, pushdown: bool) -> list[str]:
        options = [] if pushdown else ["-o", "pushdown=false"]
        return [zarr_sql, str(STORE), "-q", "--format", "csv", "-p", str(THREADS), *options, "-c", sql]

    sides = {"ours": lambda sql: ours(sql, True), "pushdown off": lambda sql: ours(sql, False)}
    if peer:
        sides["arrow-zarr"] = lambda sql: [peer, str(STORE), sql, "--threads", str(THREADS)]
    print(f"{THREADS} threads, {runs} runs, medians; ratios to ours")
    for name, sql in QUERIES:
        # A side that cannot run the query (the peer refuses some) is reported, not timed.
        answers, failed = {}, {}
        for side, cmd in sides.items():
            try:
                answers[side] = answer(timed(cmd(sql))[2])
            except Failed as e:
                failed[side] = str(e)
        if "ours" in failed:
            raise SystemExit(f"{name}: {failed['ours']}")
        if len({tuple(a) for a in answers.values()}) != 1:
            raise SystemExit(f"{name}: the answers differ: {answers}")
        times: dict[str, list[tuple[float, float]]] = {side: [] for side in answers}
        for _ in range(runs):
            for side in answers:
                wall, rss, _ = timed(sides[side](sql))
                times[side].append((wall, rss))
        base_wall = statistics.median(w for w, _ in times["ours"])
        base_rss = statistics.median(r for _, r in times["ours"])
        print(f"{name}: {sql}")
        for side, samples in times.items():
            wall = statistics.median(w for w, _ in samples)
            rss = statistics.median(r for _, r in samples)
            print(f"  {side:13} {wall:6.3f} s {rss:6.0f} MiB   {wall / base_wall:5.2f}x time {rss / base_rss:5.2f}x memory")
        for side, error in failed.items():
            print(f"  {side:13} cannot run it: {error}")


if __name__ == "__main__":
    main()
