"""ZarrTable.to_parquet: the export's writer from Python. The files are read back with pyarrow and
compared with the arrays as zarr-python reads them; a failed or interrupted export leaves no file
and keeps an existing one."""

from __future__ import annotations

import _thread
import json
import signal
import threading
import time
from pathlib import Path

import numpy as np
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
import zarr
from conftest import CORPUS, store

import datafusion_zarr

LARGE = "17_large_200k_zstd"
CITIES = "12_group_table_cities"


def zarr_values(case: str, path: str) -> list:
    """The array's elements in C order, as zarr-python reads them."""
    return zarr.open_array(CORPUS / case / "data.zarr", path=path, mode="r")[...].ravel().tolist()


def test_export_equals_zarr_python_in_index_order(tmp_path: Path) -> None:
    target = tmp_path / "large.parquet"
    table = datafusion_zarr.ZarrTable(store(LARGE))
    rows = table.to_parquet(target, threads=2)
    assert rows == 200_000
    got = pq.read_table(target)
    assert got.column_names == ["dim_0", "value"]
    assert got.column("dim_0").to_pylist() == list(range(200_000))
    assert got.column("value").to_pylist() == zarr_values(LARGE, "")
    # The writer's file: zstd, dictionary-encoded strings, the index delta-encoded, the source
    # named in the footer.
    metadata = pq.ParquetFile(target).metadata
    column = metadata.row_group(0).column(1)
    assert column.compression == "ZSTD"
    assert column.has_dictionary_page
    assert "DELTA_BINARY_PACKED" in metadata.row_group(0).column(0).encodings
    footer = {k.decode(): v.decode() for k, v in metadata.metadata.items()}
    assert footer["zarr.store"].endswith("data.zarr")
    assert json.loads(footer["zarr.metadata"])["data_type"]["name"] == "fixed_length_utf32"


def test_columns_where_and_options(tmp_path: Path) -> None:
    target = tmp_path / "cities.parquet"
    table = datafusion_zarr.ZarrTable(store(CITIES))
    rows = table.to_parquet(
        str(target),
        columns=["name", "population"],
        where="population > 5000000 AND country <> 'CN'",
        compression="snappy",
        row_group_size=4,
    )
    names = zarr_values(CITIES, "name")
    population = zarr_values(CITIES, "population")
    country = zarr_values(CITIES, "country")
    keep = [i for i in range(len(names)) if population[i] > 5_000_000 and country[i] != "CN"]
    assert 0 < len(keep) < len(names)
    got = pq.read_table(target)
    assert rows == len(keep) == got.num_rows
    assert got.column_names == ["name", "population"]
    assert got.column("name").to_pylist() == [names[i] for i in keep]
    assert got.column("population").to_pylist() == [population[i] for i in keep]
    metadata = pq.ParquetFile(target).metadata
    assert metadata.row_group(0).column(0).compression == "SNAPPY"
    assert metadata.row_group(0).num_rows == 4


def test_a_failed_export_keeps_the_existing_file(tmp_path: Path) -> None:
    target = tmp_path / "kept.parquet"
    target.write_bytes(b"the old file")
    table = datafusion_zarr.ZarrTable(store(CITIES))
    with pytest.raises(datafusion_zarr.ZarrError, match="No field named nope"):
        table.to_parquet(target, where="nope > 1")
    with pytest.raises(datafusion_zarr.ZarrError, match="compression 'brotli' is not one of"):
        table.to_parquet(target, compression="brotli")
    with pytest.raises(ValueError, match="row_group_size must be at least 1, not 0"):
        table.to_parquet(target, row_group_size=0)
    with pytest.raises(ValueError, match="threads must be at least 1, not 0"):
        table.to_parquet(target, threads=0)
    assert target.read_bytes() == b"the old file"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept.parquet"]


def big_store(path: Path) -> np.ndarray:
    """A store whose export takes seconds in the test build: 4 M strings in chunks of 100,000,
    written by zarr-python to ``path``. Returns its values."""
    rng = np.random.default_rng(7)
    words = np.array([f"w{i:05d}" for i in range(20_000)], dtype="<U8")
    values = words[rng.integers(0, len(words), 4_000_000)]
    array = zarr.create_array(path, shape=values.shape, chunks=(100_000,), dtype=values.dtype)
    array[...] = values
    return values


def test_progress_reports_rows_read_until_all_are(tmp_path: Path) -> None:
    big_store(tmp_path / "big.zarr")
    table = datafusion_zarr.ZarrTable(str(tmp_path / "big.zarr"))
    calls: list[tuple[int, int]] = []
    rows = table.to_parquet(
        tmp_path / "big.parquet", threads=1, progress=lambda *c: calls.append(c)
    )
    assert rows == 4_000_000
    # Reports while the export ran (it takes seconds here), then the final one.
    assert len(calls) >= 2, calls
    assert calls[-1] == (4_000_000, 4_000_000)
    assert all(0 <= done <= total == 4_000_000 for done, total in calls), calls
    assert [done for done, _ in calls] == sorted(done for done, _ in calls)
    assert len(set(calls)) == len(calls), "a report repeated the one before it"
    # With a predicate the chunks it rules out are not read, nor counted.
    calls.clear()
    small = datafusion_zarr.ZarrTable(store(LARGE))
    small.to_parquet(
        tmp_path / "none.parquet", where="dim_0 >= 300000", progress=lambda *c: calls.append(c)
    )
    assert calls == [(0, 0)]


def test_an_exception_in_progress_cancels_the_export(tmp_path: Path) -> None:
    big_store(tmp_path / "big.zarr")
    table = datafusion_zarr.ZarrTable(str(tmp_path / "big.zarr"))
    target = tmp_path / "big.parquet"
    target.write_bytes(b"the old file")
    seen: list[int] = []

    def stop(done: int, total: int) -> None:
        seen.append(done)
        raise ValueError(f"stopped at {done} of {total}")

    started = time.monotonic()
    with pytest.raises(ValueError, match="stopped at"):
        table.to_parquet(target, threads=1, progress=stop)
    assert time.monotonic() - started < 5, "the export was not cancelled promptly"
    assert len(seen) == 1 and seen[0] < 4_000_000
    assert target.read_bytes() == b"the old file"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big.parquet", "big.zarr"]
    with pytest.raises(TypeError, match="progress must be a callable"):
        table.to_parquet(target, progress=42)
    assert target.read_bytes() == b"the old file"


def test_ctrl_c_cancels_the_export_and_leaves_no_file(tmp_path: Path) -> None:
    path = tmp_path / "big.zarr"
    values = big_store(path)
    table = datafusion_zarr.ZarrTable(str(path))
    target = tmp_path / "big.parquet"
    target.write_bytes(b"the old file")
    # Python raises KeyboardInterrupt only where SIGINT has its default handler, which an
    # interpreter started in the background (SIGINT ignored, as in CI) does not install.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    started = time.monotonic()
    timer = threading.Timer(0.3, _thread.interrupt_main)
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            table.to_parquet(target, threads=1)
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)
    assert time.monotonic() - started < 5, "the export was not cancelled promptly"
    assert target.read_bytes() == b"the old file"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big.parquet", "big.zarr"]
    # The table still works after the cancelled export.
    assert table.to_parquet(target, columns=["value"], where="value = 'w00001'") == int(
        pc.sum(pc.equal(values, "w00001")).as_py()
    )
