"""A store written by xarray in the test, with a string coordinate, reads back through read_zarr
with xarray's own values."""

from __future__ import annotations

import numpy as np
import pytest

xr = pytest.importorskip("xarray")
pytest.importorskip("zarr")


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_xarray_string_coordinate(ctx, tmp_path, zarr_format: int) -> None:
    rng = np.random.default_rng(7)
    stations = np.array([f"st-{i:03d}-{'äöü'[i % 3]}" for i in range(50)], dtype="<U12")
    names = np.array([["Berlin", "Zürich", "東京", "🦀", ""][i % 5] for i in range(50)], dtype="<U8")
    ds = xr.Dataset(
        {"name": ("station", names), "temperature": ("station", rng.normal(size=50))},
        coords={"station": stations},
    )
    path = tmp_path / "x.zarr"
    ds.to_zarr(path, zarr_format=zarr_format, consolidated=zarr_format == 2, encoding={"name": {"chunks": (16,)}})
    back = xr.open_zarr(path, consolidated=zarr_format == 2).load()

    got = ctx.sql(f"SELECT * FROM read_zarr('{path}', 'station') ORDER BY 1").to_arrow_table()
    assert got.column(got.num_columns - 1).to_pylist() == [str(s) for s in back["station"].values]

    got = ctx.sql(
        f"SELECT name FROM read_zarr('{path}', 'name') WHERE name LIKE 'Z%' OR name = '' ORDER BY 1"
    ).to_arrow_table()
    want = sorted(str(n) for n in back["name"].values if n.startswith("Z") or n == "")
    assert got.column("name").to_pylist() == want
    assert len(want) == 20


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("zarr_format", [2, 3])
def test_cf_encodings_read_as_xarray_decodes_them(ctx, tmp_path, zarr_format: int) -> None:
    """A packed temperature (int16 with scale_factor, add_offset, _FillValue) over an hourly time
    coordinate: the table equals xarray's to_dataframe (NaN where xarray masks, NULL here)."""
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(11)
    temp = rng.normal(283, 12, size=(72, 5))
    temp[rng.random(temp.shape) < 0.1] = np.nan
    ds = xr.Dataset(
        {"temp": (("time", "station"), temp)},
        coords={
            "time": pd.date_range("1969-12-30", periods=72, freq="h"),
            "station": np.array([f"s{i}" for i in range(5)]),
        },
    )
    encoding = {
        "temp": {"dtype": "int16", "scale_factor": 0.05, "add_offset": 280.0, "_FillValue": -32768,
                 "chunks": (24, 5)},
        "time": {"units": "hours since 1970-01-01", "dtype": "int64"},
    }
    path = tmp_path / "cf.zarr"
    ds.to_zarr(path, zarr_format=zarr_format, consolidated=zarr_format == 2, encoding=encoding)
    want = xr.open_zarr(path, consolidated=zarr_format == 2).load().to_dataframe().reset_index()

    got = ctx.sql(
        f"SELECT time, station, temp FROM read_zarr('{path}') ORDER BY time, station"
    ).to_pandas()
    assert len(got) == 72 * 5
    assert (got["time"].to_numpy().astype("M8[ns]") == want["time"].to_numpy()).all()
    assert got["station"].tolist() == want["station"].tolist()
    assert got["temp"].isna().tolist() == want["temp"].isna().tolist()
    assert got["temp"].fillna(0).tolist() == want["temp"].fillna(0).tolist()
    assert want["temp"].isna().sum() > 0

    # A time predicate compares times; decode_cf=false reads the stored numbers.
    n = ctx.sql(
        f"SELECT count(*) AS n FROM read_zarr('{path}') WHERE time >= TIMESTAMP '1970-01-01 00:00:00'"
    ).to_pydict()["n"][0]
    assert n == int((want["time"] >= pd.Timestamp("1970-01-01")).sum())
    stored = ctx.sql(
        f"SELECT DISTINCT time FROM read_zarr('{path}', '', 'decode_cf', 'false') ORDER BY time"
    ).to_pydict()["time"]
    assert stored == list(range(-48, 24))


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("zarr_format", [2, 3])
def test_group_table_equals_to_dataframe(ctx, tmp_path, zarr_format: int) -> None:
    """A curvilinear grid as xarray writes it: temp(time, y, x), 2-D lat/lon coordinates, a
    variable stored transposed, a 0-D crs, station names written as UTF-8 bytes (the encoding a
    dataset from netCDF keeps), each chunked its own way. The table is xarray's to_dataframe."""
    rng = np.random.default_rng(5)
    t, ny, nx = 7, 5, 6
    ds = xr.Dataset(
        {
            "temp": (("time", "y", "x"), rng.normal(size=(t, ny, nx)).astype("float32")),
            "depth": (("x", "time", "y"), rng.integers(0, 500, size=(nx, t, ny)).astype("int32")),
            "crs": ((), np.int32(3035)),
            "site": (("y",), np.array(["Åre", "Bø", "Cádiz", "Dún", "Eš"])),
        },
        coords={
            "time": np.arange(t, dtype="int64") * 6,
            "lat": (("y", "x"), rng.uniform(40, 60, size=(ny, nx))),
            "lon": (("x", "y"), rng.uniform(-10, 30, size=(nx, ny))),
        },
    )
    encoding = {"temp": {"chunks": (3, 2, 4)}, "depth": {"chunks": (4, 2, 3)},
                "lat": {"chunks": (2, 3)}, "lon": {"chunks": (5, 2)}, "site": {"dtype": "S1"}}
    path = tmp_path / "grid.zarr"
    ds.to_zarr(path, zarr_format=zarr_format, consolidated=zarr_format == 2, encoding=encoding)
    want = xr.open_zarr(path, consolidated=zarr_format == 2).load().to_dataframe().reset_index()
    want = want.sort_values(["time", "y", "x"]).reset_index(drop=True)

    got = ctx.sql(f"SELECT * FROM read_zarr('{path}') ORDER BY time, y, x").to_pandas()
    assert len(got) == t * ny * nx
    for column in ["time", "y", "x", "temp", "depth", "crs", "lat", "lon"]:
        assert got[column].tolist() == want[column].tolist(), column
    assert got["site"].tolist() == [str(s) for s in want["site"]]


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("zarr_format", [2, 3])
def test_character_arrays_equal_xarrays_strings(ctx, tmp_path, zarr_format: int) -> None:
    """netCDF character arrays (S1, the last dimension the string length) as xarray writes
    them back from a netCDF dataset: random UTF-8 names (some empty) with _Encoding, codes
    without one (bytes), a character coordinate written with zarr-python, and one-byte flags
    xarray does not join. Every column equals xarray's to_dataframe of the store as xarray
    opens it."""
    import zarr

    rng = np.random.default_rng(11)
    n, t, width = 37, 4, 12
    letters = list("abcdefghijklmnopqrstuvwxyzåøüßé")
    names = ["".join(rng.choice(letters, size=rng.integers(0, 6))) for _ in range(n)]
    codes = [bytes(rng.integers(1, 256, size=rng.integers(0, 5)).tolist()) for _ in range(n)]
    stations = [f"st{i:03}".encode() for i in range(n)]

    def chars(values, size):
        return np.array(values, dtype=f"S{size}").view("S1").reshape(len(values), size)

    ds = xr.Dataset({
        "name": (("station", "strlen"), chars([s.encode() for s in names], width),
                 {"_Encoding": "utf-8"}),
        "code": (("station", "code_strlen"), chars(codes, 4)),
        "temp": (("time", "station"), rng.normal(size=(t, n))),
        # A one-byte flag per reading, which xarray keeps as characters (not joined).
        "qc": (("time", "station"), rng.choice(np.array([b"1", b"4", b"9"]), size=(t, n))),
    })
    encoding = {"name": {"chunks": (5, width)}, "code": {"chunks": (8, 4)},
                "temp": {"chunks": (3, 10)}, "qc": {"chunks": (2, 7)}}
    path = tmp_path / "stations.zarr"
    ds.to_zarr(path, zarr_format=zarr_format, consolidated=False, encoding=encoding)
    group = zarr.open_group(path, mode="a", zarr_format=zarr_format)
    dims = ["station", "station_strlen"]
    extra = {"dimension_names": dims} if zarr_format == 3 else {}
    station = group.create_array("station", shape=(n, 5), chunks=(7, 5), dtype="S1", **extra)
    station[:] = chars(stations, 5)
    if zarr_format == 2:
        station.attrs["_ARRAY_DIMENSIONS"] = dims
    want = xr.open_zarr(path, consolidated=False).load().to_dataframe().reset_index()
    want = want.sort_values(["time", "station"]).reset_index(drop=True)

    got = ctx.sql(f"SELECT * FROM read_zarr('{path}') ORDER BY time, station").to_pandas()
    assert sorted(got.columns) == sorted(want.columns)
    assert len(got) == n * t
    for column in want.columns:
        assert got[column].tolist() == want[column].tolist(), column
    assert any(s == "" for s in got["name"]) and any(len(s) > 2 for s in got["name"])


def _cmip(rng, t=6, ny=4, nx=5):
    time = np.array("2000-01-01", dtype="datetime64[ns]") + np.arange(t) * np.timedelta64(1, "D")
    ds = xr.Dataset(
        {
            "tas": (("time", "lat", "lon"), rng.normal(280, 5, size=(t, ny, nx)).astype("float32")),
            "time_bnds": (("time", "bnds"), np.stack([time, time + np.timedelta64(1, "D")], axis=1)),
            "lat_bnds": (("lat", "bnds"), rng.uniform(size=(ny, 2))),
            "lon_bnds": (("lon", "bnds"), rng.uniform(size=(nx, 2))),
        },
        coords={"time": time, "lat": np.linspace(-60, 60, ny), "lon": np.linspace(0, 300, nx), "height": 2.0},
    )
    ds.time.attrs["bounds"] = "time_bnds"
    return ds


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("zarr_format", [2, 3])
def test_cf_bounds_are_left_out_of_the_group_table(ctx, tmp_path, zarr_format: int) -> None:
    """A CMIP-style dataset: tas(time, lat, lon) beside time_bnds, lat_bnds, lon_bnds along
    bnds, and a scalar height. The group's table is xarray's to_dataframe of the variables
    without bnds; the bounds are left out, named in EXPLAIN, and readable by their path."""
    ds = _cmip(np.random.default_rng(11))
    path = tmp_path / "cmip.zarr"
    ds.to_zarr(path, zarr_format=zarr_format, consolidated=True, encoding={"tas": {"chunks": (2, 2, 5)}})
    back = xr.open_zarr(path).load()
    keep = [v for v in back.data_vars if "bnds" not in back[v].dims]
    want = back[keep].to_dataframe().reset_index().sort_values(["time", "lat", "lon"])

    got = ctx.sql(f"SELECT * FROM read_zarr('{path}') ORDER BY time, lat, lon").to_pandas()
    assert list(got.columns) == ["time", "lat", "lon", "height", "tas"]
    for column in got.columns:
        assert got[column].tolist() == want[column].tolist(), column

    mean = ctx.sql(f"SELECT avg(tas) AS m FROM read_zarr('{path}')").to_pandas()["m"][0]
    assert mean == pytest.approx(float(back["tas"].astype("float64").mean()), rel=1e-12)

    plan = ctx.sql(f"EXPLAIN SELECT avg(tas) FROM read_zarr('{path}')").to_pandas()
    text = " ".join(plan["plan"])
    for bounds, along in [("lat_bnds", "lat"), ("lon_bnds", "lon"), ("time_bnds", "time")]:
        assert f"{bounds}({along}, bnds): dimension bnds not in the table" in text, text

    n = ctx.sql(f"SELECT count(*) AS n FROM read_zarr('{path}', 'time_bnds')").to_pandas()["n"][0]
    assert n == back["time_bnds"].size

    # Named with `arrays`: xarray's product over the union of the dimensions.
    want = back[["tas", "time_bnds", "lat_bnds"]].to_dataframe().reset_index()
    want = want.sort_values(["time", "lat", "lon", "bnds"]).reset_index(drop=True)
    got = ctx.sql(
        f"SELECT * FROM read_zarr('{path}', '', 'arrays', 'tas,time_bnds,lat_bnds,height') "
        "ORDER BY time, lat, lon, bnds"
    ).to_pandas()
    assert sorted(got.columns) == sorted(want.columns)
    assert len(got) == len(want) == 2 * back["tas"].size
    for column in want.columns:
        assert got[column].tolist() == want[column].tolist(), column


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("zarr_format", [2, 3])
def test_datatree_groups_inherit_their_ancestors_coordinates(ctx, tmp_path, zarr_format: int) -> None:
    """A DataTree of three levels: time at the root, site in /sites, temp(time, site) in
    /sites/alpine, and /own with a time coordinate of its own. Each group's table is
    open_datatree(...)[path].to_dataset().to_dataframe(); a time filter prunes chunks."""
    rng = np.random.default_rng(12)
    t = 8
    time = np.array("2000-01-01", dtype="datetime64[ns]") + np.arange(t) * np.timedelta64(1, "D")
    tree = xr.DataTree.from_dict({
        "/": xr.Dataset(coords={"time": time}),
        "/sites": xr.Dataset({"pressure": (("time", "site"), rng.normal(size=(t, 3)))},
                             coords={"site": ["Åre", "Bø", "Cádiz"]}),
        "/sites/alpine": xr.Dataset({"temp": (("time", "site"), rng.normal(size=(t, 3)))}),
        "/own": xr.Dataset({"level": (("time",), rng.normal(size=t))}, coords={"time": time}),
    })
    path = tmp_path / "tree.zarr"
    encoding = {"/sites/alpine": {"temp": {"chunks": (2, 3)}}, "/sites": {"pressure": {"chunks": (2, 3)}}}
    tree.to_zarr(path, zarr_format=zarr_format, consolidated=True, encoding=encoding)
    back = xr.open_datatree(path, engine="zarr")

    for group, dims in [("sites", ["time", "site"]), ("sites/alpine", ["time", "site"]), ("own", ["time"])]:
        want = back[group].to_dataset().to_dataframe().reset_index().sort_values(dims)
        got = ctx.sql(f"SELECT * FROM read_zarr('{path}', '{group}') ORDER BY {', '.join(dims)}").to_pandas()
        assert sorted(got.columns) == sorted(want.columns), group
        for column in want.columns:
            assert got[column].tolist() == want[column].tolist(), (group, column)

    query = f"SELECT temp FROM read_zarr('{path}', 'sites/alpine') WHERE time >= TIMESTAMP '2000-01-07'"
    plan = " ".join(ctx.sql(f"EXPLAIN {query}").to_pandas()["plan"])
    assert "chunks_pruned=3" in plan, plan
    got = sorted(ctx.sql(query).to_pandas()["temp"].tolist())
    alpine = back["sites/alpine"].to_dataset()
    assert got == sorted(alpine["temp"].sel(time=slice("2000-01-07", None)).values.ravel().tolist())
