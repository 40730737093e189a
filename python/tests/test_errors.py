"""Errors reach Python as exceptions carrying the reader's message, and the interpreter lives on."""

from __future__ import annotations

import importlib
import importlib.metadata
import sys

import datafusion
import pyarrow as pa
import pytest
from conftest import FIXTURES, MALFORMED, store

import datafusion_zarr
from datafusion_zarr import ZarrError, ZarrTable


def test_missing_store() -> None:
    with pytest.raises(ZarrError, match="no-such-store"):
        ZarrTable("/no-such-store.zarr")


def test_unknown_and_invalid_options() -> None:
    with pytest.raises(ZarrError, match="unknown option 'colour'"):
        ZarrTable(store("00_zarr_python_defaults_U7"), colour="red")
    with pytest.raises(ZarrError, match="io_concurrency '0' is not a number from 1 to 4096"):
        ZarrTable(store("00_zarr_python_defaults_U7"), io_concurrency=0)
    with pytest.raises(TypeError, match="option string_type"):
        ZarrTable(store("00_zarr_python_defaults_U7"), string_type=3.5)


def test_invalid_code_unit_names_the_chunk(ctx) -> None:
    invalid = str(FIXTURES / "invalid_utf32.zarr")
    ctx.register_table("bad", ZarrTable(invalid))
    for sql in ["SELECT * FROM bad", f"SELECT * FROM read_zarr('{invalid}')"]:
        with pytest.raises(Exception, match=r"code unit 0x0000D800 is not a Unicode scalar value") as e:
            ctx.sql(sql).collect()
        assert "chunk" in str(e.value), e.value
    with pytest.raises(pa.ArrowException, match="0x0000D800"):
        pa.table(datafusion_zarr.read(invalid))
    # The replacement policy reads it.
    t = ctx.sql(f"SELECT * FROM read_zarr('{invalid}', '', 'invalid_utf32', 'replace')").to_arrow_table()
    assert any("\ufffd" in v for v in t.column(t.num_columns - 1).to_pylist())


@pytest.mark.parametrize("name", ["gzip_bomb.zarr", "lzma_bomb.zarr", "crc32c_mismatch.zarr", "chunk_too_long.zarr"])
def test_hostile_chunks_fail_cleanly(ctx, name: str) -> None:
    path = str(MALFORMED / name)
    with pytest.raises(Exception, match="chunk") as e:
        ctx.sql(f"SELECT * FROM read_zarr('{path}')").collect()
    assert "panicked" not in str(e.value)


def test_read_zarr_arguments(ctx) -> None:
    with pytest.raises(Exception, match="must be a string literal"):
        ctx.sql("SELECT * FROM read_zarr(42)").collect()
    with pytest.raises(Exception, match="has no value"):
        ctx.sql(f"SELECT * FROM read_zarr('{store('00_zarr_python_defaults_U7')}', '', 'pushdown')").collect()


def test_interpreter_survives_and_still_queries(ctx) -> None:
    for _ in range(3):
        with pytest.raises(ZarrError):
            ZarrTable("/no-such-store.zarr")
    n = ctx.sql(f"SELECT count(*) AS n FROM read_zarr('{store('00_zarr_python_defaults_U7')}')")
    assert n.to_pydict() == {"n": [8]}


def test_datafusion_major_version_mismatch_is_an_import_error(monkeypatch) -> None:
    real = importlib.metadata.version

    def fake(name: str) -> str:
        return "54.1.0" if name == "datafusion" else real(name)

    monkeypatch.setattr(importlib.metadata, "version", fake)
    module = sys.modules.pop("datafusion_zarr")
    try:
        with pytest.raises(ImportError, match=r"built for DataFusion 55\.\d+\.\d+.*datafusion 54\.1\.0 is installed"):
            importlib.import_module("datafusion_zarr")
    finally:
        sys.modules["datafusion_zarr"] = module
    assert datafusion.__version__.split(".")[0] == datafusion_zarr.DATAFUSION_VERSION.split(".")[0]
