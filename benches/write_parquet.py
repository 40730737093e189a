#!/usr/bin/env python3
"""Writing Zarr from Parquet and from Zarr, against the targets of issue #38, side by side in one
run: every side is a child process, the sides alternate, ZARR_BENCH_RUNS runs (default 3);
prints each side's median and every run (wall seconds), its CPU seconds and its peak RSS, then
the ratios against the targets. Every side's output is checked equal before anything is timed.

    python3 benches/write_parquet.py path/to/zarr-sql [--floor path/to/write-floor] [--part 1|2]

1. Parquet -> Zarr: the 20,000,000 strings of benches/data/strings_20m.parquet (an export of
   strings_20m.zarr: columns `i` uint64 and `value`) to a store of chunks of 100,000, zstd 3.
   - ours: `zarr-sql convert strings_20m.parquet out.zarr -w chunk_rows=100000
     -w compression=zstd -w compression_level=3 -w mode=overwrite` (writes `i` and `value`; the
     strings as wide as the longest), the same with `-w string_length=16` (the width fixed: no
     chunk is rewritten), and with `--columns value` (the peer's and the floor's work: the
     strings alone);
   - peer: zarr-python + pyarrow, `pq.read_table` -> the column `to_numpy(zero_copy_only=False)
     .astype('<U16')` -> `zarr.create_array(out, chunks=(100000,), dtype='<U16',
     compressors=ZstdCodec(level=3))[:] = values` (the whole array in memory);
   - floor: benches/write_floor (parquet-rs's Arrow reader, `zarr_utf32::utf8_to_utf32` to 64
     bytes a string, zstd level 3, on all cores, nothing written): its own timer and the process.
   Targets: peer / ours >= 5x; ours / floor <= 1.3x; ours' peak RSS <= 512 MiB. peer / floor
   is printed too: no writer doing the same compression on these cores can exceed it.
2. Zarr -> Zarr: strings_20m.zarr rechunked from 100,000 to 1,000,000 rows a chunk.
   - ours: `zarr-sql convert strings_20m.zarr out.zarr -w chunk_rows=1000000 -w mode=overwrite`;
     also with `--columns value` (the strings alone, as the peer writes);
   - peer: zarr-python copying block by block: `dst = zarr.create_array(out, chunks=(1000000,),
     dtype='<U16', compressors=ZstdCodec(level=3))`; `dst[i:j] = src[i:j]` for each block;
   - floor: `write_floor --rechunk` (the chunk files read, zstd-decompressed into chunks of
     1,000,000 and compressed again with zstd 3, on all cores; no transcoding, nothing written).
   Target: peer / ours >= 5x (and ours' peak RSS <= 512 MiB).

Each output is removed before each run, outside the timer (so `mode=overwrite` never has a
store to replace). Before each part the script waits, at most 20 minutes, for the 1-minute load
average to fall below 1.5, and prints the load at the start of each run.

The inputs are made when absent: strings_20m.zarr by benches/peer/make_store.py (~20 s) and
strings_20m.parquet by `zarr-sql export`. The floor is built with
`(cd benches/write_floor && cargo build --release)`.
"""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "benches" / "data"
STORE = DATA / "strings_20m.zarr"
PARQUET = DATA / "strings_20m.parquet"
FLOOR = ROOT / "benches" / "write_floor" / "target" / "release" / "write-floor"
CHUNK, BIG_CHUNK = 100_000, 1_000_000
MiB = 1024 * 1024

warnings.filterwarnings("ignore", message=".*does not have a Zarr V3 specification.*")


# ---------------------------------------------------------------------------------------------
# The peer (run as a child process: this script with --peer-parquet or --peer-rechunk).

def peer_parquet(src: str, out: str) -> None:
    import numpy as np  # noqa: F401
    import pyarrow.parquet as pq
    import zarr
    from zarr.codecs import ZstdCodec

    start = time.perf_counter()
    column = pq.read_table(src, columns=["value"]).column("value")
    values = column.to_numpy(zero_copy_only=False).astype("<U16")
    del column
    dst = zarr.create_array(out, shape=values.shape, chunks=(CHUNK,), dtype="<U16",
                            compressors=ZstdCodec(level=3), dimension_names=["index"],
                            zarr_format=3, overwrite=True)
    dst[:] = values
    print(f"own timer {time.perf_counter() - start:.3f}")


def peer_rechunk(src: str, out: str) -> None:
    import zarr
    from zarr.codecs import ZstdCodec

    start = time.perf_counter()
    source = zarr.open_array(src, mode="r")
    n = source.shape[0]
    dst = zarr.create_array(out, shape=source.shape, chunks=(BIG_CHUNK,), dtype="<U16",
                            compressors=ZstdCodec(level=3), dimension_names=["index"],
                            zarr_format=3, overwrite=True)
    for i in range(0, n, BIG_CHUNK):
        j = min(i + BIG_CHUNK, n)
        dst[i:j] = source[i:j]
    print(f"own timer {time.perf_counter() - start:.3f}")


# ---------------------------------------------------------------------------------------------
# Running sides.

def load() -> float:
    return os.getloadavg()[0]


def wait_quiet(limit_s: int = 20 * 60, below: float = 1.5) -> None:
    """Waits (at most limit_s) until the 1-minute load average is below `below`."""
    deadline = time.monotonic() + limit_s
    while True:
        up = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
        if load() < below:
            print(f"quiet: {up}", flush=True)
            return
        if time.monotonic() >= deadline:
            print(f"still busy after {limit_s // 60} min, measuring anyway: {up}", flush=True)
            return
        print(f"waiting for a quiet machine: {up}", flush=True)
        time.sleep(30)


class Result:
    def __init__(self, wall: float, cpu: float, rss: int, stdout: str):
        self.wall, self.cpu, self.rss, self.stdout = wall, cpu, rss, stdout


def run(argv: list[str], out: Path | None = None) -> Result:
    """Runs argv as a child process under /usr/bin/time: wall seconds (our clock), CPU seconds
    and peak RSS (bytes) as time reports them, and stdout. (The ru_maxrss that wait4 returns
    for a child of this process would be at least this process's RSS at the fork: exec keeps
    the high-water mark of the memory it replaces.)"""
    if out is not None:
        shutil.rmtree(out, ignore_errors=True)
    with tempfile.TemporaryFile() as captured, tempfile.NamedTemporaryFile("r") as usage:
        start = time.perf_counter()
        code = subprocess.run(["/usr/bin/time", "-f", "%M %U %S", "-o", usage.name, *map(str, argv)],
                              stdout=captured, cwd=ROOT).returncode
        wall = time.perf_counter() - start
        captured.seek(0)
        text = captured.read().decode()
        fields = usage.read().split()
    if code != 0:
        sys.exit(f"{' '.join(map(str, argv))} failed ({code}):\n{text}")
    rss_kib, user, system = int(fields[-3]), float(fields[-2]), float(fields[-1])
    return Result(wall, user + system, rss_kib * 1024, text)


def own_timer(text: str, prefix: str) -> float | None:
    for line in text.splitlines():
        if line.startswith(prefix):
            return float(line[len(prefix):].split()[0])
    return None


def measure(sides: dict, runs: int) -> dict[str, list[Result]]:
    results = {k: [] for k in sides}
    for r in range(runs):
        print(f"  run {r + 1}/{runs}, load {load():.2f}", flush=True)
        for name, (argv, out) in sides.items():
            results[name].append(run(argv, out))
    return results


def report(results: dict[str, list[Result]], timers: dict[str, str]) -> dict[str, float]:
    """Prints each side's median wall time, every run, CPU and peak RSS; returns the medians."""
    width = max(len(k) for k in results)
    medians = {}
    for name, rs in results.items():
        walls = [r.wall for r in rs]
        medians[name] = m = statistics.median(walls)
        cpu = statistics.median(r.cpu for r in rs)
        rss = max(r.rss for r in rs) / MiB
        line = (f"  {name:{width}}  median {m:7.3f} s   runs [{', '.join(f'{w:.3f}' for w in walls)}]"
                f"   CPU {cpu:.2f} s   peak RSS {rss:,.0f} MiB")
        if name in timers:
            own = [own_timer(r.stdout, timers[name]) for r in rs]
            if all(t is not None for t in own):
                medians[name + " (own timer)"] = statistics.median(own)
                line += f"\n  {'':{width}}  own timer median {statistics.median(own):.3f} s   runs [{', '.join(f'{t:.3f}' for t in own)}]"
        print(line)
    return medians


def target(label: str, value: float, op: str, bound: float) -> None:
    met = value >= bound if op == ">=" else value <= bound
    print(f"  {label:44} {value:6.2f}{'x' if bound < 100 else ''}  (target {op} {bound:g})  {'met' if met else 'MISSED'}")


# ---------------------------------------------------------------------------------------------
# Equality.

def values(path: Path, array: str | None):
    import zarr

    node = zarr.open(str(path), mode="r")
    return node[array] if array else node


def assert_equal(a, b, what: str, block: int = 2_000_000) -> None:
    """Compares two 1-D string arrays block by block (every value), their shapes and dtypes."""
    import numpy as np

    assert a.shape == b.shape, f"{what}: shapes {a.shape} and {b.shape}"
    assert a.dtype == b.dtype, f"{what}: dtypes {a.dtype} and {b.dtype}"
    for i in range(0, a.shape[0], block):
        x, y = a[i:i + block], b[i:i + block]
        if not np.array_equal(x, y):
            k = int(np.flatnonzero(x != y)[0])
            sys.exit(f"{what}: element {i + k} differs: {x[k]!r} != {y[k]!r}")
    print(f"  equal: {what} ({a.shape[0]:,} values, {a.dtype}, chunks {a.chunks} and {b.chunks})")


def assert_index(path: Path) -> None:
    import numpy as np

    index = values(path, "i")
    n = index.shape[0]
    for i in range(0, n, 5_000_000):
        got = index[i:min(i + 5_000_000, n)]
        assert np.array_equal(got, np.arange(i, i + len(got), dtype=got.dtype)), f"{path}/i"


# ---------------------------------------------------------------------------------------------
# The parts.

def inputs(binary: str) -> None:
    if not STORE.exists():
        print(f"making {STORE} with benches/peer/make_store.py", flush=True)
        subprocess.run([sys.executable, str(ROOT / "benches/peer/make_store.py")], check=True, cwd=ROOT)
    if not PARQUET.exists():
        print(f"exporting {PARQUET}", flush=True)
        subprocess.run([binary, "-q", "export", str(STORE), str(PARQUET)], check=True, cwd=ROOT)


def part1(binary: str, floor: str, work: Path, runs: int) -> None:
    print(f"\n1. Parquet -> Zarr: {PARQUET.relative_to(ROOT)} "
          f"({PARQUET.stat().st_size / MiB:.0f} MiB), chunks of {CHUNK:,}, zstd 3")
    convert = [binary, "-q", "convert", str(PARQUET)]
    opts = ["-w", f"chunk_rows={CHUNK}", "-w", "compression=zstd", "-w", "compression_level=3",
            "-w", "mode=overwrite"]
    outs = {k: work / f"p_{k}.zarr" for k in ("ours", "fixed", "value", "peer")}
    sides = {
        "ours": (convert + [str(outs["ours"])] + opts, outs["ours"]),
        "ours string_length=16": (convert + [str(outs["fixed"])] + opts + ["-w", "string_length=16"], outs["fixed"]),
        "ours --columns value": (convert + [str(outs["value"])] + opts + ["--columns", "value"], outs["value"]),
        "peer (zarr-python + pyarrow)": ([sys.executable, __file__, "--peer-parquet", str(PARQUET), str(outs["peer"])], outs["peer"]),
        "floor (write_floor)": ([floor, str(PARQUET)], None),
    }

    # Every output is checked before anything is timed.
    first = {name: run(argv, out) for name, (argv, out) in sides.items()}
    peer = values(outs["peer"], None)
    for k in ("ours", "fixed", "value"):
        assert_equal(values(outs[k], "value"), peer, f"{outs[k].name}/value = the peer's")
    assert_index(outs["ours"])
    print(f"  {outs['ours'].name}/i = 0..{peer.shape[0]:,}; floor: {first['floor (write_floor)'].stdout.strip()}")

    wait_quiet()
    results = measure(sides, runs)
    m = report(results, {"peer (zarr-python + pyarrow)": "own timer", "floor (write_floor)": "floor:"})
    print("  targets (medians of wall time; the floor by its own timer and as a process):")
    peer_t, floor_t, floor_p = m["peer (zarr-python + pyarrow)"], m["floor (write_floor) (own timer)"], m["floor (write_floor)"]
    for k in ("ours", "ours string_length=16", "ours --columns value"):
        target(f"peer / {k}", peer_t / m[k], ">=", 5)
        target(f"{k} / floor (own timer)", m[k] / floor_t, "<=", 1.3)
        target(f"{k} / floor (process)", m[k] / floor_p, "<=", 1.3)
        target(f"{k} peak RSS, MiB", max(r.rss for r in results[k]) / MiB, "<=", 512)
    print(f"  {'peer / floor (the most a writer could gain)':44} {peer_t / floor_p:6.2f}x")


def part2(binary: str, floor: str, work: Path, runs: int) -> None:
    print(f"\n2. Zarr -> Zarr: {STORE.relative_to(ROOT)} rechunked from {CHUNK:,} to {BIG_CHUNK:,} rows a chunk")
    outs = {k: work / f"r_{k}.zarr" for k in ("ours", "value", "peer")}
    convert = [binary, "-q", "convert", str(STORE)]
    opts = ["-w", f"chunk_rows={BIG_CHUNK}", "-w", "mode=overwrite"]
    n = values(STORE, None).shape[0]
    sides = {
        "ours": (convert + [str(outs["ours"])] + opts, outs["ours"]),
        "ours --columns value": (convert + [str(outs["value"])] + opts + ["--columns", "value"], outs["value"]),
        "peer (zarr-python, block by block)": ([sys.executable, __file__, "--peer-rechunk", str(STORE), str(outs["peer"])], outs["peer"]),
        "floor (write_floor --rechunk)": ([floor, "--rechunk", str(STORE), "--rows", str(n), "--from", str(CHUNK),
                                           "--to", str(BIG_CHUNK), "--width", "64"], None),
    }
    first = {name: run(argv, out) for name, (argv, out) in sides.items()}
    source = values(STORE, None)
    for k in ("ours", "value"):
        assert_equal(values(outs[k], "value"), source, f"{outs[k].name}/value = {STORE.name}")
    assert_equal(values(outs["peer"], None), source, f"{outs['peer'].name} = {STORE.name}")
    assert_index(outs["ours"])
    print(f"  {outs['ours'].name}/i = 0..{n:,}; floor: {first['floor (write_floor --rechunk)'].stdout.strip()}")

    wait_quiet()
    results = measure(sides, runs)
    m = report(results, {"peer (zarr-python, block by block)": "own timer", "floor (write_floor --rechunk)": "floor:"})
    print("  targets (medians of wall time):")
    peer_t, floor_t = m["peer (zarr-python, block by block)"], m["floor (write_floor --rechunk)"]
    for k in ("ours", "ours --columns value"):
        target(f"peer / {k}", peer_t / m[k], ">=", 5)
        target(f"{k} peak RSS, MiB", max(r.rss for r in results[k]) / MiB, "<=", 512)
        print(f"  {k + ' / floor (process)':44} {m[k] / floor_t:6.2f}x")
    print(f"  {'peer / floor (the most a writer could gain)':44} {peer_t / floor_t:6.2f}x")


def main() -> None:
    if len(sys.argv) >= 4 and sys.argv[1] == "--peer-parquet":
        return peer_parquet(sys.argv[2], sys.argv[3])
    if len(sys.argv) >= 4 and sys.argv[1] == "--peer-rechunk":
        return peer_rechunk(sys.argv[2], sys.argv[3])
    args = sys.argv[1:]
    if not args or args[0].startswith("-"):
        sys.exit(__doc__)
    binary = str(Path(args[0]).resolve())
    floor = str(FLOOR)
    parts = {"1", "2"}
    i = 1
    while i < len(args):
        if args[i] == "--floor":
            floor, i = str(Path(args[i + 1]).resolve()), i + 2
        elif args[i] == "--part":
            parts, i = {args[i + 1]}, i + 2
        else:
            sys.exit(f"unknown argument {args[i]}\n{__doc__}")
    if not Path(floor).exists():
        sys.exit(f"{floor} is absent: (cd benches/write_floor && cargo build --release)")
    runs = int(os.environ.get("ZARR_BENCH_RUNS", "3"))
    inputs(binary)
    print(f"zarr-sql: {binary}; {runs} runs each, alternating; {os.cpu_count()} cores")
    work = Path(tempfile.mkdtemp(prefix="write-parquet-bench-", dir=DATA))
    try:
        if "1" in parts:
            part1(binary, floor, work, runs)
        if "2" in parts:
            part2(binary, floor, work, runs)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
