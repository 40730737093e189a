"""Every array and group table of the corpus, read through datafusion-python, equals
expected.json / expected.parquet (values written by zarr-python)."""

from __future__ import annotations

import hashlib

import datafusion
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from conftest import CORPUS, corpus_cases, store

import datafusion_zarr

CASES = corpus_cases()
ARRAYS = [(case, a) for case, expected in CASES for a in expected["arrays"]]


def same(got, want) -> bool:
    """Equality with NaN equal to NaN, as expected.json writes floats."""
    if isinstance(got, float) and got != got:
        return want == "NaN" or (isinstance(want, float) and want != want)
    return got == want


def read_ordered(ctx: datafusion.SessionContext, sql_from: str) -> pa.Table:
    """All rows of a table expression, ordered by its index columns (all but the last)."""
    names = ctx.sql(f"SELECT * FROM {sql_from} LIMIT 0").schema().names
    order = ", ".join(f'"{n}"' for n in names[:-1])
    sql = f"SELECT * FROM {sql_from}" + (f" ORDER BY {order}" if order else "")
    return ctx.sql(sql).to_arrow_table()


def check_values(case: str, array: dict, table: pa.Table) -> None:
    values = table.column(table.num_columns - 1)
    assert len(values) == array["count"], f"{case}/{array['path']}: row count"
    assert values.null_count == 0
    if "values" in array:
        got = values.to_pylist()
        for i, (g, w) in enumerate(zip(got, array["values"])):
            assert same(g, w), f"{case}/{array['path']}: element {i}: got {g!r}, expected {w!r}"
    else:
        stats = array["stats"]
        joined = "\n".join(values.to_pylist()).encode()
        assert hashlib.sha256(joined).hexdigest() == array["values_sha256"]
        assert pc.count_distinct(values).as_py() == stats["distinct_count"]
    # The index columns are the C-order coordinates.
    assert table.num_columns - 1 == len(array["shape"])
    if array["shape"]:
        last = table.column(table.num_columns - 2).to_pylist()[:1000]
        n = array["shape"][-1]
        assert last == [i % n for i in range(len(last))]


@pytest.mark.parametrize(("case", "array"), ARRAYS, ids=[f"{c}/{a['path']}" for c, a in ARRAYS])
def test_registered_table_matches_expected_json(case: str, array: dict) -> None:
    ctx = datafusion.SessionContext()
    ctx.register_table("t", datafusion_zarr.ZarrTable(store(case), array["path"] or None))
    check_values(case, array, read_ordered(ctx, "t"))


@pytest.mark.parametrize(("case", "array"), ARRAYS, ids=[f"{c}/{a['path']}" for c, a in ARRAYS])
def test_read_zarr_matches_expected_json(ctx, case: str, array: dict) -> None:
    check_values(case, array, read_ordered(ctx, f"read_zarr('{store(case)}', '{array['path']}')"))


@pytest.mark.parametrize(("case", "array"), ARRAYS, ids=[f"{c}/{a['path']}" for c, a in ARRAYS])
def test_arrow_stream_matches_expected_json(case: str, array: dict) -> None:
    """pyarrow reads the table's Arrow C stream (no session): same values, in index order."""
    table = pa.table(datafusion_zarr.read(store(case), array["path"] or None))
    index = table.column_names[:-1]
    if index:
        table = table.sort_by([(n, "ascending") for n in index])
    check_values(case, array, table)


def test_group_tables_match_expected_parquet(ctx) -> None:
    checked = 0
    for case, expected in CASES:
        spec = expected["expected_parquet"]
        if not spec:
            continue
        want = pq.read_table(CORPUS / case / spec["file"])
        ctx.register_table(case, datafusion_zarr.ZarrTable(store(case)))
        for sql_from in (f"read_zarr('{store(case)}')", f'"{case}"'):
            first = ctx.sql(f"SELECT * FROM {sql_from} LIMIT 0").schema().names[0]
            got = ctx.sql(f'SELECT * FROM {sql_from} ORDER BY "{first}"').to_arrow_table()
            for name in spec["columns"]:
                assert got.column(name).type == want.column(name).type, f"{case}: type of {name}"
                assert got.column(name).to_pylist() == want.column(name).to_pylist(), (
                    f"{case}: column {name} from {sql_from}"
                )
        checked += 1
    assert checked == 2, "cases 12 and 17 have expected.parquet"


def test_stored_as_zarr(ctx) -> None:
    case = "12_group_table_cities"
    ctx.sql(
        f"CREATE EXTERNAL TABLE cities STORED AS ZARR LOCATION '{store(case)}' "
        "OPTIONS ('string_type' 'utf8view')"
    ).collect()
    got = ctx.sql("SELECT name FROM cities WHERE name LIKE 'S%' ORDER BY name").to_arrow_table()
    assert got.schema.field("name").type == pa.string_view()
    want = pq.read_table(CORPUS / case / "expected.parquet").column("name").to_pylist()
    assert got.column("name").to_pylist() == sorted(n for n in want if n.startswith("S"))
    assert got.num_rows > 0


def test_options_and_properties() -> None:
    t = datafusion_zarr.ZarrTable(
        store("13_group_consolidated_metadata"), path="label", string_type="large_utf8"
    )
    assert t.num_rows == 27
    assert t.index_columns == ["station"]
    assert t.path == "label"
    assert t.location.startswith("file://")
    assert pa.schema(t).field("label").type == pa.large_string()
    group = datafusion_zarr.ZarrTable(
        store("12_group_table_cities"), arrays=["country", "name"], fill_as_null=True
    )
    assert pa.schema(group).names[-2:] == ["country", "name"]
