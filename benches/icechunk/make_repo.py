"""Commits a Zarr store, key by key and byte for byte, to a new Icechunk repository (the
icechunk Python package, spec 2), for the Icechunk bench (crates/zarr-sql/benches/icechunk.rs):
the repository's chunks are the plain store's, so the two scans read the same bytes.

    python3.12 -m venv v && v/bin/pip install icechunk==2.3.0 zarr==3.4.2
    v/bin/python benches/icechunk/make_repo.py benches/data/strings_20m.zarr benches/data/strings_20m.icechunk
"""

import asyncio
import shutil
import sys
from pathlib import Path

import icechunk as ic
import zarr
from zarr.core.buffer import default_buffer_prototype
from zarr.storage import LocalStore


async def copy(source: Path, target: Path) -> int:
    plain = LocalStore(str(source), read_only=True)
    shutil.rmtree(target, ignore_errors=True)
    repo = ic.Repository.create(ic.local_filesystem_storage(str(target)))
    session = repo.writable_session("main")
    keys = [key async for key in plain.list()]
    prototype = default_buffer_prototype()
    # Metadata first, then the chunks, as zarr-python writes an array.
    for key in sorted(keys, key=lambda k: (not k.endswith("zarr.json"), k)):
        value = await plain.get(key, prototype)
        await session.store.set(key, value)
    session.commit(f"{source.name}, key by key")
    return len(keys)


if __name__ == "__main__":
    source, target = Path(sys.argv[1]), Path(sys.argv[2])
    n = asyncio.run(copy(source, target))
    print(f"{target}: {n} keys of {source} committed")
    # Read back through icechunk: the same shape as the plain store's.
    repo = ic.Repository.open(ic.local_filesystem_storage(str(target)))
    store = repo.readonly_session("main").store
    assert zarr.open_array(store, mode="r").shape == zarr.open_array(str(source), mode="r").shape
