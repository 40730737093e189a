#!/usr/bin/env python3
"""The peer we compare against: zarr-python + pyarrow doing what `zarr-sql` does.

    pip install -r benches/peer/requirements.txt
    python3 benches/peer/peer.py scan   benches/data/strings_20m.zarr --threads 2
    python3 benches/peer/peer.py export benches/data/strings_20m.zarr /tmp/peer.parquet --threads 2

`scan` counts the strings containing "ab": it reads the array chunk by chunk with zarr-python
(a `<U16` NumPy array per chunk), converts each chunk to a pyarrow string array, applies
`pyarrow.compute.match_substring(…, "ab")` and sums. Prints `{"op":"scan","count":N,"seconds":S}`.

`export OUT.parquet` streams the store chunk by chunk into one Parquet file with
`pyarrow.parquet.ParquetWriter` (zstd level 3, `--row-group-size` rows per row group, 1,000,000
by default as in DataFusion): an index column `i` (uint64) and the value column `value` (string),
the schema `zarr-sql export` writes. Prints `{"op":"export","rows":N,"seconds":S,...}`.

`export-nd STORE OUT.parquet` does the same for a 2-D array with dimension names (`--array`,
default `temp`): a row per element, its two coordinates (the group's arrays of those names, or
the positions) and its value, read one row of chunks at a time and written in C order within it.

`--threads N` (default 1) gives the peer every kind of parallelism zarr-python and pyarrow let
it use:
  * zarr-python: `async.concurrency = N` and `threading.max_workers = N` (its codec thread pool);
  * pyarrow: `set_cpu_count(N)` and `set_io_thread_count(N)`;
  * chunks are processed by N Python threads at once (a bounded, ordered window of 2·N chunks in
    flight, so memory stays bounded). Decompression (numcodecs zstd) and pyarrow kernels release
    the GIL; the NumPy→Arrow conversion of `<U` data mostly does not.
With N = 1 every chunk is processed in the main thread, one after the other.
`seconds` is measured inside the script, after the imports (Python start-up is not counted).
"""

import argparse
import json
import os
import sys
import time
import warnings
from collections import deque
from concurrent.futures import ThreadPoolExecutor

warnings.filterwarnings("ignore", message=".*does not have a Zarr V3 specification.*")

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.compute as pc  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
import zarr  # noqa: E402


def chunk_ranges(arr, per_read=1):
    """Slices of `per_read` chunks: zarr-python fetches the chunks of one slice concurrently."""
    (n,) = arr.shape
    (c,) = arr.chunks
    c *= per_read
    return [(s, min(s + c, n)) for s in range(0, n, c)]


def ordered_map(fn, items, threads):
    """Yields fn(item) in order, with at most 2·threads items in flight."""
    if threads <= 1:
        for it in items:
            yield fn(it)
        return
    with ThreadPoolExecutor(max_workers=threads) as pool:
        window = deque()
        for it in items:
            window.append(pool.submit(fn, it))
            if len(window) >= 2 * threads:
                yield window.popleft().result()
        while window:
            yield window.popleft().result()


def write_row_groups(tables, schema, args):
    """Writes `tables` to `args.out` (zstd level 3, `args.row_group_size` rows per row group) by
    way of a temporary file; returns the rows written."""
    rows = 0
    pending, pending_rows = [], 0
    tmp = args.out + ".tmp"
    with pq.ParquetWriter(tmp, schema, compression="zstd", compression_level=3) as writer:
        for t in tables:
            pending.append(t)
            pending_rows += t.num_rows
            if pending_rows >= args.row_group_size:
                writer.write_table(pa.concat_tables(pending), row_group_size=args.row_group_size)
                rows += pending_rows
                pending, pending_rows = [], 0
        if pending:
            writer.write_table(pa.concat_tables(pending), row_group_size=args.row_group_size)
            rows += pending_rows
    os.replace(tmp, args.out)
    return rows


def scan(args):
    arr = zarr.open_array(args.store, mode="r")
    pattern = args.pattern

    def count(rng):
        s, e = rng
        values = pa.array(arr[s:e], type=pa.string())
        return pc.sum(pc.match_substring(values, pattern)).as_py() or 0

    t0 = time.perf_counter()
    total = sum(ordered_map(count, chunk_ranges(arr, args.chunks_per_read), args.threads))
    seconds = time.perf_counter() - t0
    print(json.dumps({"op": "scan", "count": total, "seconds": round(seconds, 4), "threads": args.threads}))


def export(args):
    arr = zarr.open_array(args.store, mode="r")
    schema = pa.schema([("i", pa.uint64()), ("value", pa.string())])

    def table(rng):
        s, e = rng
        return pa.table(
            [pa.array(np.arange(s, e, dtype=np.uint64)), pa.array(arr[s:e], type=pa.string())],
            schema=schema,
        )

    t0 = time.perf_counter()
    rows = write_row_groups(ordered_map(table, chunk_ranges(arr), args.threads), schema, args)
    seconds = time.perf_counter() - t0
    print(
        json.dumps(
            {
                "op": "export",
                "rows": rows,
                "seconds": round(seconds, 4),
                "threads": args.threads,
                "out": args.out,
                "bytes": os.path.getsize(args.out),
            }
        )
    )


def export_nd(args):
    """Streams an N-D array and its coordinates into one Parquet file, a row per element."""
    group = zarr.open_group(args.store, mode="r")
    arr = group[args.array]
    dims = arr.metadata.dimension_names
    if arr.ndim != 2 or dims is None:
        sys.exit(f"export-nd takes a 2-D array with dimension_names, not {args.array}")
    outer, inner = (group[d][:] if d in group else np.arange(n) for d, n in zip(dims, arr.shape))

    def arrow_type(values):
        return pa.string() if values.dtype.kind == "U" else pa.from_numpy_dtype(values.dtype)

    schema = pa.schema(
        [(dims[0], arrow_type(outer)), (dims[1], arrow_type(inner)), (args.array, arrow_type(arr))]
    )
    n_inner = arr.shape[1]
    inner_col = pa.array(inner, type=schema.field(1).type)

    def table(rng):
        # One row of chunks along the outer dimension, every element in C order.
        s, e = rng
        outer_col = pa.array(outer[s:e], type=schema.field(0).type)
        repeat = pa.array(np.repeat(np.arange(e - s), n_inner))
        return pa.table(
            [outer_col.take(repeat), pa.concat_arrays([inner_col] * (e - s)), pa.array(arr[s:e].ravel())],
            schema=schema,
        )

    (n_outer, c_outer) = (arr.shape[0], arr.chunks[0])
    ranges = [(s, min(s + c_outer, n_outer)) for s in range(0, n_outer, c_outer)]
    t0 = time.perf_counter()
    rows = write_row_groups(ordered_map(table, ranges, args.threads), schema, args)
    seconds = time.perf_counter() - t0
    print(json.dumps({"op": "export-nd", "rows": rows, "seconds": round(seconds, 4), "threads": args.threads,
                      "out": args.out, "bytes": os.path.getsize(args.out)}))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="op", required=True)
    p = sub.add_parser("scan", help='count the strings containing "ab"')
    p.add_argument("store")
    p.add_argument("--pattern", default="ab")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument(
        "--chunks-per-read",
        type=int,
        default=1,
        help="chunks per slice read; over HTTP (an http:// store, through fsspec) a slice's "
        "chunks are fetched concurrently, up to async.concurrency",
    )
    p = sub.add_parser("export", help="stream the store into a Parquet file")
    p.add_argument("store")
    p.add_argument("out")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--row-group-size", type=int, default=1_000_000)
    p = sub.add_parser("export-nd", help="stream a 2-D array and its coordinates into a Parquet file")
    p.add_argument("store")
    p.add_argument("out")
    p.add_argument("--array", default="temp")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--row-group-size", type=int, default=1_000_000)
    args = ap.parse_args()
    args.threads = max(1, args.threads)
    concurrency = max(args.threads, getattr(args, "chunks_per_read", 1))
    zarr.config.set({"async.concurrency": concurrency, "threading.max_workers": args.threads})
    pa.set_cpu_count(args.threads)
    pa.set_io_thread_count(args.threads)
    {"scan": scan, "export": export, "export-nd": export_nd}[args.op](args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
