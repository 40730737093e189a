"""Writes the test store /tmp/az_small.zarr (or argv[1]): a Zarr V3 group of float64 arrays a, b, cc."""
import shutil
import sys

import numpy as np
import zarr

N = 2_000_000
path = sys.argv[1] if len(sys.argv) > 1 else "/tmp/az_small.zarr"
shutil.rmtree(path, ignore_errors=True)
group = zarr.open_group(path, mode="w", zarr_format=3)
rng = np.random.default_rng(42)
columns = {
    "a": np.arange(N, dtype="float64"),  # increasing 0..N
    "b": rng.random(N),  # uniform in [0, 1)
    "cc": (np.arange(N) % 100).astype("float64"),  # i % 100
}
for name, values in columns.items():
    arr = zarr.create_array(group.store, name=name, shape=(N,), chunks=(100_000,), dtype="float64",
                            compressors=zarr.codecs.ZstdCodec(level=3), dimension_names=["i"])
    arr[:] = values
print(f"wrote {path} with zarr {zarr.__version__}")
