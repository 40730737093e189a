"""polars reads what the package gives: the pyarrow table of a query (python/README.md's
`polars.from_arrow`), and a ZarrTable straight through the Arrow PyCapsule stream, with the
values zarr-python wrote (expected.json)."""

from __future__ import annotations

import json

import polars as pl
from conftest import CORPUS, store

import datafusion_zarr

CASE = "12_group_table_cities"


def expected_names() -> list[str]:
    expected = json.loads((CORPUS / CASE / "expected.json").read_text())
    array = next(a for a in expected["arrays"] if a["path"] == "name")
    return array["values"]


def test_polars_from_the_arrow_table_of_a_query(ctx):
    ctx.register_table("cities", datafusion_zarr.ZarrTable(store(CASE), string_type="utf8view"))
    table = ctx.sql("SELECT * FROM cities ORDER BY 1").to_arrow_table()
    frame = pl.from_arrow(table)
    assert isinstance(frame, pl.DataFrame)
    assert frame.height == len(expected_names())
    assert frame["name"].to_list() == expected_names()
    berlin = frame.filter(pl.col("name").str.starts_with("Ber"))
    assert berlin["name"].to_list() == [n for n in expected_names() if n.startswith("Ber")]


def test_polars_reads_a_zarr_table_through_the_arrow_stream():
    frame = pl.DataFrame(datafusion_zarr.ZarrTable(store(CASE)))
    frame = frame.sort(frame.columns[0])
    assert frame["name"].to_list() == expected_names()
    assert frame.schema["name"] == pl.String
