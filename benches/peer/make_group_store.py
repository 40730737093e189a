#!/usr/bin/env python3
"""Writes the group-table store of the export bench: three arrays along one dimension.

    python3 benches/peer/make_store.py          # first: benches/data/strings_20m.zarr
    python3 benches/peer/make_group_store.py    # -> benches/data/group_20m.zarr (~30 s)

A Zarr V3 group with, along dimension "i" (20,000,000 rows, chunks of 100,000, zstd level 3):
`value`, the 20 M strings of strings_20m.zarr (`<U16`, copied chunk for chunk, its metadata
given the dimension name); `code`, `<U4` codes drawn from six ("AA", "BBB", "CCCC", "D", "EE",
"FFF"); `n`, int32 drawn from [-1000, 100000). A fixed seed: the same store on every machine.
"""

import argparse
import json
import shutil
import warnings
from pathlib import Path

import numpy as np
import zarr
from zarr.codecs import ZstdCodec

warnings.filterwarnings("ignore", message=".*does not have a Zarr V3 specification.*")

SEED = 20261203
CHUNK = 100_000


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--strings", default="benches/data/strings_20m.zarr")
    p.add_argument("--out", default="benches/data/group_20m.zarr")
    args = p.parse_args()
    src, out = Path(args.strings), Path(args.out)
    meta = json.loads((src / "zarr.json").read_text())
    (n,) = meta["shape"]
    shutil.rmtree(out, ignore_errors=True)
    g = zarr.open_group(str(out), mode="w", zarr_format=3)
    shutil.copytree(src, out / "value")
    meta["dimension_names"] = ["i"]
    (out / "value" / "zarr.json").write_text(json.dumps(meta, indent=2))
    code = g.create_array("code", shape=(n,), chunks=(CHUNK,), dtype="<U4", dimension_names=["i"],
                          compressors=ZstdCodec(level=3))
    num = g.create_array("n", shape=(n,), chunks=(CHUNK,), dtype="int32", dimension_names=["i"],
                         compressors=ZstdCodec(level=3))
    rng = np.random.default_rng(SEED)
    codes = np.array(["AA", "BBB", "CCCC", "D", "EE", "FFF"], dtype="<U4")
    step = 10 * CHUNK
    for start in range(0, n, step):
        stop = min(start + step, n)
        code[start:stop] = codes[rng.integers(0, len(codes), stop - start)]
        num[start:stop] = rng.integers(-1000, 100_000, stop - start).astype("int32")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
