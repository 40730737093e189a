"""NumPy's datetime64, timedelta64, S (null-terminated bytes) and variable-length bytes arrays, written by zarr-python
in Zarr V2 and V3: read_zarr gives what pyarrow makes of the same NumPy arrays (NaT as null,
datetime64[D] as date32), S elements as NumPy returns them (trailing NULs removed), and
to_parquet writes files pyarrow reads back as the same values."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zarr
from zarr.core.dtype import VariableLengthBytes

import datafusion_zarr

TEMPORAL = {
    "ns": np.array(["2021-03-04T05:06:07.123456789", "NaT", "1969-07-20T20:17:40"] * 5, dtype="<M8[ns]"),
    "us": np.array(["1900-01-01T00:00:00.000001", "NaT", "2100-12-31"] * 5, dtype=">M8[us]"),
    "ms": np.array(["1970-01-01T00:00:00.001", "2000-02-29T12:00", "NaT"] * 5, dtype="<M8[ms]"),
    "day": np.array(["2024-02-29", "NaT", "1582-10-15"] * 5, dtype="<M8[D]"),
    "wait": np.array([3, "NaT", -7] * 5, dtype="<m8[us]"),
}
CODES = np.array([b"STN01", b"", b"A\x00B", b"XYZ\x00\x00", b"Q"] * 3, dtype="S5")


def write(path: Path, zarr_format: int) -> zarr.Group:
    group = zarr.open_group(path, mode="w", zarr_format=zarr_format)
    for name, values in TEMPORAL.items():
        group.create_array(name, shape=values.shape, chunks=(4,), dtype=values.dtype)[:] = values
    group.create_array("code", shape=CODES.shape, chunks=(4,), dtype="S5")[:] = CODES
    blobs = group.create_array("blob", shape=CODES.shape, chunks=(4,), dtype=VariableLengthBytes())
    blobs[:] = np.array([bytes(range(i * 7 % 256, i * 7 % 256 + i % 5)) for i in range(15)], dtype=object)
    return group


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("zarr_format", [2, 3])
def test_read_as_pyarrow_converts_numpy(ctx, tmp_path: Path, zarr_format: int) -> None:
    path = tmp_path / "types.zarr"
    group = write(path, zarr_format)
    got = ctx.sql(f"SELECT * FROM read_zarr('{path}') ORDER BY dim_0").to_arrow_table()
    for name in TEMPORAL:
        read = group[name][:]
        want = pa.array(read.astype(read.dtype.newbyteorder("=")))
        assert got.column(name).type == want.type, name
        assert got.column(name).combine_chunks().equals(want), name
    assert got.column("code").type == pa.binary()
    assert got.column("code").to_pylist() == group["code"][:].tolist()
    assert got.column("code").to_pylist()[2] == b"A\x00B"
    assert got.column("blob").type == pa.binary()
    assert got.column("blob").to_pylist() == group["blob"][:].tolist()

    strings = datafusion_zarr.ZarrTable(str(path), "code", binary_as_string=True)
    ctx.register_table("codes", strings)
    names = ctx.sql("SELECT code FROM codes WHERE code LIKE 'STN%' OR code = 'XYZ'").to_arrow_table()
    assert sorted(names.column("code").to_pylist()) == ["STN01"] * 3 + ["XYZ"] * 3


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("zarr_format", [2, 3])
def test_to_parquet_keeps_the_values(tmp_path: Path, zarr_format: int) -> None:
    path = tmp_path / "types.zarr"
    group = write(path, zarr_format)
    target = tmp_path / "types.parquet"
    rows = datafusion_zarr.ZarrTable(str(path)).to_parquet(target)
    assert rows == 15
    back = pq.read_table(target)
    for name in TEMPORAL:
        read = group[name][:]
        want = pa.array(read.astype(read.dtype.newbyteorder("=")))
        assert back.column(name).combine_chunks().equals(want), name
    assert back.column("code").to_pylist() == group["code"][:].tolist()
    assert back.column("blob").to_pylist() == group["blob"][:].tolist()
