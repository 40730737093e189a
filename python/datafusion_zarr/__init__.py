"""Zarr string arrays (NumPy's ``<U``/``>U``, ``fixed_length_utf32``) as DataFusion tables.

The Python package of `datafusion-zarr`: the same table provider as the Rust crate, plugged into
datafusion-python's ``SessionContext`` through DataFusion's FFI, with the same filter pushdown
(chunks pruned, string predicates evaluated on UTF-32) and the same errors.

>>> import datafusion, datafusion_zarr
>>> ctx = datafusion.SessionContext()
>>> datafusion_zarr.register(ctx)          # read_zarr(...) and STORED AS ZARR
>>> ctx.register_table("cities", datafusion_zarr.ZarrTable("data.zarr", path="cities"))  # doctest: +SKIP
"""

from __future__ import annotations

import importlib.metadata
import json
from typing import TYPE_CHECKING, Any

from ._internal import (
    DATAFUSION_VERSION,
    IcechunkHistory,
    ZarrError,
    ZarrSessionOptions,
    ZarrTable,
    ZarrTableFactory,
    _icechunk_history,
    _write_zarr,
)
from ._internal import __version__ as __version__

if TYPE_CHECKING:
    import datafusion

__all__ = [
    "IcechunkHistory",
    "ZarrError",
    "ZarrSessionOptions",
    "ZarrTable",
    "ZarrTableFactory",
    "icechunk_refs",
    "icechunk_snapshots",
    "read",
    "read_zarr",
    "register",
    "write_zarr",
]


def _check_datafusion_version() -> None:
    """Refuses a datafusion-python of another major version than the one we were built with.

    DataFusion's FFI structures change between major versions; mixing them crashes the process
    (datafusion-python#1283), so the mismatch is an ImportError instead.
    """
    try:
        installed = importlib.metadata.version("datafusion")
    except importlib.metadata.PackageNotFoundError:
        return  # used without datafusion-python: ZarrTable still reads to Arrow
    if installed.split(".")[0] != DATAFUSION_VERSION.split(".")[0]:
        msg = (
            f"datafusion_zarr was built for DataFusion {DATAFUSION_VERSION} and needs "
            f"datafusion {DATAFUSION_VERSION.split('.')[0]}.x, but datafusion {installed} is "
            f"installed; install datafusion=={DATAFUSION_VERSION.split('.')[0]}.* or rebuild "
            "datafusion_zarr against it"
        )
        raise ImportError(msg)


_check_datafusion_version()


def read(location: str, path: str | None = None, **options: Any) -> ZarrTable:
    """Opens a Zarr node for reading without a session.

    The result exports the Arrow PyCapsule stream interface: ``pyarrow.table(read(...))`` or
    ``polars.from_arrow(...)`` scan every row with the same reader as SQL.
    """
    return ZarrTable(location, path, **options)


def read_zarr(*args: Any, session: datafusion.SessionContext | None = None) -> ZarrTable:
    """The table function ``read_zarr('location' [, 'path' [, 'option', 'value', ...]])``.

    Registered by :func:`register`. datafusion-python calls it with literal expressions and the
    calling ``session``, whose ``zarr.*`` options (see :class:`ZarrSessionOptions`) the
    arguments start from; it is a Python function (not an FFI table function) because
    datafusion-ffi turns filter pushdown off for the tables that FFI table functions return.
    The strings are read as the Rust ``read_zarr`` reads them
    (``ReadZarrFunction::arguments_with``).
    """
    values = []
    for i, arg in enumerate(args, start=1):
        value = arg.python_value() if hasattr(arg, "python_value") else arg
        value = value.as_py() if hasattr(value, "as_py") else value  # a pyarrow scalar
        if not isinstance(value, str):
            msg = (
                f"read_zarr argument {i} must be a string literal, got {arg}; usage: "
                "read_zarr('location' [, 'path' [, 'option', 'value', ...]])"
            )
            raise ZarrError(msg)
        values.append(value)
    return ZarrTable._from_read_zarr(values, session)


def register(ctx: datafusion.SessionContext) -> None:
    """Registers ``read_zarr(...)`` and ``CREATE EXTERNAL TABLE ... STORED AS ZARR`` on ``ctx``.

    Both start from the session's ``zarr.*`` options when its ``SessionConfig`` holds
    :class:`ZarrSessionOptions` (``SET zarr.string_type = 'utf8view'``).
    """
    from datafusion import udtf

    ctx.register_udtf(udtf(read_zarr, "read_zarr", with_session=True))
    ctx.register_udtf(udtf(_snapshots_function, "icechunk_snapshots"))
    ctx.register_udtf(udtf(_refs_function, "icechunk_refs"))
    ctx.register_table_factory("ZARR", ZarrTableFactory())


def _option_pairs(storage_options: dict[str, Any] | None, options: dict[str, Any]) -> list:
    pairs = [(key, str(value)) for key, value in (storage_options or {}).items()]
    return pairs + [(key, str(value)) for key, value in options.items()]


def icechunk_snapshots(
    location: str,
    branch: str = "main",
    *,
    storage_options: dict[str, str] | None = None,
    **options: Any,
) -> IcechunkHistory:
    """The snapshots of ``branch`` of the Icechunk repository at ``location``, newest first.

    Columns ``id``, ``parent_id``, ``written_at`` (UTC), ``message``, ``metadata`` (JSON), as
    ``repo.ancestry(branch=...)`` gives them; ``pyarrow.table(...)`` reads it, and
    ``ctx.register_table`` takes it. The SQL table function of the same name (``register``).
    """
    return _icechunk_history("snapshots", str(location), branch, _option_pairs(storage_options, options))


def icechunk_refs(
    location: str, *, storage_options: dict[str, str] | None = None, **options: Any
) -> IcechunkHistory:
    """The branches and tags of the Icechunk repository at ``location``: ``kind``, ``name``,
    ``snapshot``. The SQL table function of the same name (``register``)."""
    return _icechunk_history("refs", str(location), None, _option_pairs(storage_options, options))


def _strings(name: str, usage: str, args: tuple) -> list:
    """A table function's arguments as strings (each must be a string literal)."""
    values = []
    for i, arg in enumerate(args, start=1):
        value = arg.python_value() if hasattr(arg, "python_value") else arg
        value = value.as_py() if hasattr(value, "as_py") else value
        if not isinstance(value, str):
            msg = f"{name} argument {i} must be a string literal, got {arg}; usage: {usage}"
            raise ZarrError(msg)
        values.append(value)
    return values


def _snapshots_function(*args: Any) -> IcechunkHistory:
    usage = "icechunk_snapshots('repository' [, 'branch' [, 'option', 'value', ...]])"
    values = _strings("icechunk_snapshots", usage, args)
    if not values or len(values) % 2 != 0 and len(values) > 2:
        raise ZarrError(f"usage: {usage}")
    branch = values[1] if len(values) > 1 else "main"
    pairs = list(zip(values[2::2], values[3::2]))
    return _icechunk_history("snapshots", values[0], branch, pairs)


def _refs_function(*args: Any) -> IcechunkHistory:
    usage = "icechunk_refs('repository' [, 'option', 'value', ...])"
    values = _strings("icechunk_refs", usage, args)
    if not values or len(values) % 2 != 1:
        raise ZarrError(f"usage: {usage}")
    pairs = list(zip(values[1::2], values[2::2]))
    return _icechunk_history("refs", values[0], None, pairs)


def write_zarr(
    data: Any,
    location: str,
    *,
    mode: str | None = None,
    storage_options: dict[str, str] | None = None,
    session: datafusion.SessionContext | None = None,
    **options: Any,
) -> int:
    """Writes ``data`` as a Zarr store at ``location`` and returns the rows written.

    ``data`` is anything with the Arrow PyCapsule stream interface (``__arrow_c_stream__``): a
    datafusion-python ``DataFrame``, a pyarrow ``Table`` or ``RecordBatchReader``, a polars
    ``DataFrame``. ``location`` is a local path or an ``s3://``, ``gs://`` or ``az://`` URL.
    ``mode`` is ``"error"`` (the default: an existing store is an error) or ``"overwrite"`` (it
    is replaced once the new one is complete). ``storage_options`` configure the object store
    (``{"aws.region": "eu-west-1"}``, the keys of ``read``). ``options`` are those of
    ``COPY ... STORED AS ZARR`` (docs/writing.md): ``zarr_format``, ``chunk_rows``,
    ``compression``, ``string_length``, ``dimensions`` and the others; an unknown one is an
    error listing them. The GIL is released while writing. A ``location`` that holds an
    Icechunk repository gets one commit on ``branch`` (default ``"main"``) with ``message``
    (docs/icechunk.md). With ``session`` (a ``SessionContext`` whose ``SessionConfig`` holds
    :class:`ZarrSessionOptions`), the options start from its ``zarr.*`` values, as ``COPY``
    starts from its session's, and those given here win.

    datafusion-python cannot register a file format across DataFusion's FFI, so ``COPY`` to
    ``STORED AS ZARR`` in a datafusion-python session is not available; this is its way.
    """

    def text(value: Any) -> str:
        if isinstance(value, bool):
            return str(value).lower()
        if isinstance(value, dict):
            return json.dumps(value)
        if isinstance(value, (list, tuple)):
            return ",".join(str(v) for v in value)
        return str(value)

    pairs = [] if mode is None else [("mode", mode)]
    pairs += [(key, text(value)) for key, value in (storage_options or {}).items()]
    pairs += [(key, text(value)) for key, value in options.items()]
    return _write_zarr(data.__arrow_c_stream__(), str(location), pairs, session)

