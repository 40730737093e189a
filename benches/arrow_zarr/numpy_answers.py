"""Prints NumPy's answers to the README's two queries, from the arrays of /tmp/az_small.zarr (or argv[1])."""
import math
import sys

import zarr

group = zarr.open_group(sys.argv[1] if len(sys.argv) > 1 else "/tmp/az_small.zarr", mode="r")
a, b = group["a"][:], group["b"][:]
q1 = b[a > 1950000]
print("SELECT sum(b) FROM t WHERE a > 1950000:", repr(float(q1.sum())), "(math.fsum:", repr(math.fsum(q1)) + ")")
m = b > 0.5
print("SELECT count(*), sum(a) FROM t WHERE b > 0.5:", int(m.sum()), repr(float(a[m].sum())))
