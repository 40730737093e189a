"""datafusion_zarr.write_zarr, COPY … STORED AS ZARR's writer for Python: xarray and zarr-python
read the store as the query's rows, one data variable per column along `index`."""

from __future__ import annotations

import numpy as np
import pytest

xr = pytest.importorskip("xarray")
zarr = pytest.importorskip("zarr")


@pytest.mark.filterwarnings("ignore")
def test_xarray_reads_a_copied_query(ctx, tmp_path) -> None:
    path = tmp_path / "out.zarr"
    query = (
        "SELECT 'st-' || CAST(v AS VARCHAR) || CASE WHEN v % 3 = 0 THEN 'ü東' ELSE '' END AS station, "
        "CAST(v AS INT) AS n, CASE WHEN v % 5 = 0 THEN NULL ELSE v / 4.0 END AS x, v % 2 = 1 AS odd, "
        "to_timestamp_micros(v * 86400000000 + 7) AS t "
        "FROM generate_series(0, 99) t(v) ORDER BY v"
    )
    import datafusion_zarr

    assert datafusion_zarr.write_zarr(ctx.sql(query), path, chunk_rows=16) == 100
    want = ctx.sql(query).to_pandas()

    ds = xr.open_zarr(path).load()  # consolidated, as zarr-python writes it
    assert list(ds.dims) == ["index"]
    assert sorted(ds.data_vars) == ["n", "odd", "station", "t", "x"]
    assert ds["t"].dtype.kind == "M"
    assert ds["t"].values.astype("datetime64[us]").tolist() == want["t"].to_numpy().astype("datetime64[us]").tolist()
    assert ds["station"].dtype == np.dtype("<U7")  # "st-99ü東"
    assert ds["station"].values.tolist() == want["station"].tolist()
    assert ds["n"].dtype == np.int32 and ds["n"].values.tolist() == want["n"].tolist()
    assert ds["odd"].dtype == np.bool_ and ds["odd"].values.tolist() == want["odd"].tolist()
    expected_x = want["x"].to_numpy(dtype="float64", na_value=np.nan)
    np.testing.assert_array_equal(ds["x"].values, expected_x)

    # zarr-python reads the arrays, their chunks of 16 and their fill values.
    group = zarr.open_group(path, mode="r")
    assert group["station"].chunks == (16,)
    assert np.isnan(group["x"].fill_value)


def test_write_zarr_takes_pyarrow_tables_and_names_bad_rows(tmp_path) -> None:
    import pyarrow as pa

    import datafusion_zarr

    table = pa.table({"s": ["a", "bb", None]})
    with pytest.raises(datafusion_zarr.ZarrError, match="column s, row 2: NULL"):
        datafusion_zarr.write_zarr(table, tmp_path / "bad.zarr")
    assert not list(tmp_path.iterdir())
    assert datafusion_zarr.write_zarr(pa.table({"s": ["a", "bb"]}), tmp_path / "ok.zarr") == 2
    assert zarr.open_array(tmp_path / "ok.zarr" / "s", mode="r")[:].tolist() == ["a", "bb"]


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("zarr_format", [3, 2])
def test_a_column_named_c_is_read_back_by_zarr_python_and_xarray(ctx, tmp_path, zarr_format) -> None:
    import datafusion_zarr

    path = tmp_path / f"c{zarr_format}.zarr"
    query = "SELECT v AS c, 'n' || CAST(v AS VARCHAR) AS name FROM generate_series(0, 9) t(v) ORDER BY v"
    assert datafusion_zarr.write_zarr(ctx.sql(query), path, zarr_format=zarr_format) == 10
    group = zarr.open_group(path, mode="r")
    assert group["c"][:].tolist() == list(range(10))
    assert group["name"][:].tolist() == [f"n{v}" for v in range(10)]
    ds = xr.open_zarr(path, zarr_format=zarr_format).load()
    assert ds["c"].values.tolist() == list(range(10))
    assert ds["name"].values.tolist() == [f"n{v}" for v in range(10)]
    table = ctx.sql(f"SELECT sum(c) AS s FROM read_zarr('{path}')").to_pydict()
    assert table["s"] == [45]
