"""Writes the Icechunk repositories the tests read, with the Python packages users write them
with, and what those packages read back at every version (expected.json).

    python3.12 -m venv v && v/bin/pip install icechunk==2.3.0 zarr==3.4.2 xarray==2026.9.0 pandas==3.1.1
    v/bin/python tests/data/icechunk/make_icechunk_fixtures.py spec2
    python3.11 -m venv w && w/bin/pip install icechunk==1.1.21 zarr==3.1.6
    w/bin/python tests/data/icechunk/make_icechunk_fixtures.py spec1

spec2 writes `strings.icechunk` (icechunk 2.3.0, spec version 2): three commits on `main` (a
`fixed_length_utf32` array `labels` written, then appended, then some strings corrected), a
branch `dev` with a different value, a tag `v1`, a group `weather` written by xarray (a string
coordinate `station` and float data `temp` with a NaN), a sharded array `sharded`, an array
`codes` small enough for its chunks to live inline in the manifest (`labels`' chunks are objects
of the repository's own), and a snapshot with metadata. spec1 writes `spec1.icechunk` (icechunk
1.1.21, spec version 1): two commits, a tag and a branch. expected.json (one per repository)
holds every snapshot of every branch (`repo.ancestry()`), the refs, and each array's values at
each snapshot, as icechunk + zarr-python read them.
"""

import json
import shutil
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import icechunk as ic
import numpy as np
import zarr

HERE = Path(__file__).resolve().parent
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def label(i: int) -> str:
    # Varied widths and scripts, so a chunk does not compress below the inline threshold.
    words = ["Zürich", "Ōsaka", "Reykjavík", "Dakar", "Łódź", "Ushuaia", "Hồ Chí Minh", "Tromsø"]
    return f"{words[i % len(words)]}-{i * 7919 % 100003:05d}"


def values(store, path: str):
    a = zarr.open_array(store, path=path, mode="r")
    data = a[...]
    if data.dtype.kind == "U":
        return [str(x) for x in data.reshape(-1)]
    return [None if (isinstance(x, float) and x != x) else x for x in data.reshape(-1).tolist()]


def read_all(repo, snapshot_id: str, arrays):
    session = repo.readonly_session(snapshot_id=snapshot_id)
    try:
        group = zarr.open_group(session.store, mode="r")
    except zarr.errors.GroupNotFoundError:  # the repository's first, empty snapshot
        return None
    present = set()

    def walk(g, prefix=""):
        for name, member in g.members():
            full = f"{prefix}{name}"
            if isinstance(member, zarr.Array):
                present.add(full)
            else:
                walk(member, full + "/")

    walk(group)
    return {path: values(session.store, path) for path in arrays if path in present}


def describe(repo, path: Path, arrays):
    ancestry = {}
    for branch in sorted(repo.list_branches()):
        ancestry[branch] = [
            {
                "id": s.id,
                "parent_id": s.parent_id,
                "written_at": s.written_at.isoformat(),
                "written_at_micros": (s.written_at - EPOCH) // timedelta(microseconds=1),
                "message": s.message,
                "metadata": s.metadata,
            }
            for s in repo.ancestry(branch=branch)
        ]
    refs = [{"kind": "branch", "name": b, "snapshot": repo.lookup_branch(b)} for b in sorted(repo.list_branches())]
    refs += [{"kind": "tag", "name": t, "snapshot": repo.lookup_tag(t)} for t in sorted(repo.list_tags())]
    snapshots = {s["id"] for history in ancestry.values() for s in history}
    contents = {sid: read_all(repo, sid, arrays) for sid in sorted(snapshots)}
    expected = {
        "writer": f"icechunk {ic.__version__}, zarr {zarr.__version__}",
        "ancestry": ancestry,
        "refs": refs,
        "contents": contents,
    }
    (path.parent / (path.name.replace(".icechunk", "") + ".expected.json")).write_text(
        json.dumps(expected, indent=1, ensure_ascii=False, sort_keys=True) + "\n"
    )


def spec2():
    import pandas as pd
    import xarray as xr

    path = HERE / "strings.icechunk"
    shutil.rmtree(path, ignore_errors=True)
    repo = ic.Repository.create(ic.local_filesystem_storage(str(path)))

    s = repo.writable_session("main")
    root = zarr.group(s.store)
    root.attrs["title"] = "datafusion-zarr Icechunk fixture"
    labels = root.create_array("labels", shape=(3000,), chunks=(1000,), dtype="<U24", dimension_names=["row"])
    labels[:] = np.array([label(i) for i in range(3000)])
    codes = root.create_array("codes", shape=(10,), chunks=(5,), dtype="<U4")
    codes[:] = np.array(["AB", "CD", "EF", "GH", "IJ", "KL", "MN", "OP", "QR", "ST"])
    first = s.commit("labels written", metadata={"author": "fixture", "step": 1})
    time.sleep(0.05)

    s = repo.writable_session("main")
    labels = zarr.open_array(s.store, path="labels")
    labels.resize((3500,))
    labels[3000:] = np.array([label(i) for i in range(3000, 3500)])
    # A sharded array (inner chunks of 100 in shards of 400), and xarray's group.
    sharded = zarr.open_group(s.store).create_array(
        "sharded", shape=(1000,), chunks=(100,), shards=(400,), dtype="<U12"
    )
    sharded[:] = np.array([f"s{i:04d}-{'αβγ'[i % 3]}" for i in range(1000)])
    weather = xr.Dataset(
        {"temp": ("station", np.array([12.5, np.nan, -3.25, 30.0]))},
        coords={"station": np.array(["ZRH", "KIX", "REK", "DKR"])},
    )
    weather.to_zarr(s.store, group="weather", zarr_format=3, consolidated=False)
    second = s.commit("append 500 labels, add sharded and weather")
    time.sleep(0.05)

    repo.create_branch("dev", second)
    s = repo.writable_session("dev")
    zarr.open_array(s.store, path="labels")[7] = "dev-only value"
    s.commit("dev: one label changed")
    time.sleep(0.05)

    s = repo.writable_session("main")
    labels = zarr.open_array(s.store, path="labels")
    labels[0] = "Zürich (fixed)"
    labels[3499] = "last, fixed"
    third = s.commit("fix two labels", metadata={"author": "fixture", "ticket": "ZARR-39"})
    repo.create_tag("v1", first)
    describe(repo, path, ["labels", "codes", "sharded", "weather/temp", "weather/station"])
    print("spec2:", first, second, third)


def spec1():
    path = HERE / "spec1.icechunk"
    shutil.rmtree(path, ignore_errors=True)
    repo = ic.Repository.create(ic.local_filesystem_storage(str(path)))
    s = repo.writable_session("main")
    root = zarr.group(s.store)
    labels = root.create_array("labels", shape=(2000,), chunks=(500,), dtype="<U24")
    labels[:] = np.array([label(i) for i in range(2000)])
    first = s.commit("spec 1: labels written", metadata={"author": "fixture"})
    time.sleep(0.05)
    s = repo.writable_session("main")
    zarr.open_array(s.store, path="labels")[5] = "changed in spec 1"
    second = s.commit("spec 1: one label changed")
    repo.create_tag("v1", first)
    repo.create_branch("dev", first)
    describe(repo, path, ["labels"])
    print("spec1:", first, second)


if __name__ == "__main__":
    {"spec2": spec2, "spec1": spec1}[sys.argv[1]]()
