"""Reads the stores test_write_roundtrip.py::test_zarr_342_reads_the_written_stores wrote, with
zarr 3.4.2 (and xarray) under Python >= 3.12 (the virtualenv .venv-zarr34 that tools/test-python
makes), and checks every array against the manifest the Python 3.11 side wrote.

    .venv-zarr34/bin/python python/tests/zarr34/check_zarr34.py MANIFEST.json

The manifest: {"zarr": "3.4.2", "values": {key: [...]}, "stores": [store, ...]}; a store is
{"id", "path", "zarr_format", "arrays": {name: array}, "group_attrs"?, "consolidated"?,
"dimension"?, "xarray_npz"?}; an array is {"dtype" (NumPy dtype string, or "T" for zarr-python's
variable-length strings), "values" (a key of "values"), "chunks", "shards"?, "compressor"?,
"fill_value"?, "attrs"?}, or {} for an array checked through xarray only. Prints every mismatch
and exits 1 if there is one.
"""

from __future__ import annotations

import json
import math
import sys
import traceback
import warnings

import numpy as np
import zarr

# zarr warns that fixed_length_utf32 and numcodecs.lz4 have no Zarr V3 specification.
warnings.simplefilter("ignore")


def same_scalar(got, want) -> bool:
    """A fill value equals the manifest's (NaN equal to NaN, the JSON type kept)."""
    if isinstance(got, np.generic):
        got = got.item()
    if isinstance(want, float) and math.isnan(want):
        return isinstance(got, float) and math.isnan(got)
    return type(got) is type(want) and got == want


def compressor_names(array) -> list[str]:
    return [type(c).__name__.lower().removesuffix("codec") for c in array.compressors]


def check_array(array, spec: dict, values: list | None, zarr_format: int, dimension: str) -> None:
    if zarr_format == 3:
        assert array.metadata.dimension_names == (dimension,), array.metadata.dimension_names
    else:
        assert array.attrs["_ARRAY_DIMENSIONS"] == [dimension], dict(array.attrs)
    if "dtype" not in spec:  # checked through xarray only (CF-encoded times)
        return
    got = array[...]
    assert got.shape == (len(values),), f"shape {got.shape}, expected ({len(values)},)"
    if spec["dtype"] == "T":
        assert got.dtype.kind in "TO", f"dtype {got.dtype!r}, expected variable-length strings"
        assert got.tolist() == values, "values differ"
    elif spec["dtype"].startswith("<U"):
        assert got.dtype.str == spec["dtype"], f"dtype {got.dtype.str}, expected {spec['dtype']}"
        assert got.tolist() == values, "values differ"
    else:
        assert got.dtype.str == spec["dtype"], f"dtype {got.dtype.str}, expected {spec['dtype']}"
        want = np.array(values, dtype=spec["dtype"])
        np.testing.assert_array_equal(got, want)
    assert list(array.chunks) == spec["chunks"], f"chunks {array.chunks}, expected {spec['chunks']}"
    shards = array.shards
    assert (list(shards) if shards else None) == spec.get("shards"), f"shards {shards}"
    if "compressor" in spec:
        want_c = [] if spec["compressor"] == "none" else [spec["compressor"]]
        assert compressor_names(array) == want_c, f"compressors {array.compressors}"
    if "fill_value" in spec:
        assert same_scalar(
            array.fill_value, spec["fill_value"]
        ), f"fill_value {array.fill_value!r}, expected {spec['fill_value']!r}"
    for key, value in spec.get("attrs", {}).items():
        assert array.attrs.get(key) == value, f"attribute {key}: {array.attrs.get(key)!r}"


def check_xarray(path: str, npz_path: str) -> None:
    import xarray as xr

    want_vars = np.load(npz_path, allow_pickle=False)
    got = xr.open_zarr(path).load()
    assert sorted(got.variables) == sorted(want_vars.files), sorted(got.variables)
    want = xr.Dataset(
        {n: ("index", want_vars[n]) for n in want_vars.files if n != "index"},
        coords={"index": want_vars["index"]},
    )
    for name in want_vars.files:
        assert got[name].dtype.kind == want[name].dtype.kind, (
            name,
            got[name].dtype,
            want[name].dtype,
        )
    xr.testing.assert_identical(got, want)


def check_store(store: dict, values: dict) -> None:
    path, zarr_format = store["path"], store["zarr_format"]
    group = zarr.open_group(path, mode="r")
    assert group.metadata.zarr_format == zarr_format, group.metadata.zarr_format
    assert sorted(group.array_keys()) == sorted(store["arrays"]), sorted(group.array_keys())
    for name, spec in store["arrays"].items():
        try:
            check_array(
                group[name],
                spec,
                values.get(spec.get("values")),
                zarr_format,
                store.get("dimension", "index"),
            )
        except AssertionError as e:
            raise AssertionError(f"array {name}: {e}") from None
    if "group_attrs" in store:
        assert dict(group.attrs) == store["group_attrs"], f"group attributes {dict(group.attrs)}"
    if "consolidated" in store:
        if store["consolidated"]:
            cons = zarr.open_consolidated(path, mode="r", zarr_format=zarr_format)
            meta = cons.metadata.consolidated_metadata
            assert meta is not None and sorted(meta.metadata) == sorted(store["arrays"]), meta
        else:
            try:
                zarr.open_consolidated(path, mode="r", zarr_format=zarr_format)
            except ValueError:
                pass
            else:
                raise AssertionError(
                    "open_consolidated works on a store written with consolidated false"
                )
    if "xarray_npz" in store:
        check_xarray(path, store["xarray_npz"])


def main() -> int:
    manifest = json.load(open(sys.argv[1], encoding="utf-8"))
    if zarr.__version__ != manifest["zarr"]:
        print(f"zarr {zarr.__version__} is installed, the manifest is for zarr {manifest['zarr']}")
        return 2
    failures = 0
    for store in manifest["stores"]:
        try:
            check_store(store, manifest["values"])
        except Exception as e:  # report them all, not the first
            failures += 1
            detail = str(e) if isinstance(e, AssertionError) else traceback.format_exc(limit=3)
            print(f"FAIL {store['id']}: {detail}")
    arrays = sum(len(s["arrays"]) for s in manifest["stores"])
    print(
        f"zarr {zarr.__version__} (Python {sys.version.split()[0]}): "
        f"{len(manifest['stores']) - failures}/{len(manifest['stores'])} stores "
        f"({arrays} arrays) as expected"
    )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
