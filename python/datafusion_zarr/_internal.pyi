"""Type stubs of the native module ``datafusion_zarr._internal``."""

import os
from collections.abc import Callable
from typing import Any, Literal

DATAFUSION_VERSION: str
__version__: str

class ZarrError(Exception):
    """A store, chunk or option that datafusion-zarr rejects.

    The message names the array, the chunk and the rule broken, as the command-line tool prints
    it. Errors raised while a query runs reach Python through datafusion-python's exceptions
    with the same message.
    """

class ZarrTable:
    """A Zarr array or group as a DataFusion table.

    Opening reads metadata only. Register it with ``SessionContext.register_table``; scans
    read chunks in parallel, prune them with the query's filters on dimension columns and
    evaluate string predicates on the UTF-32 code units. It also exports the Arrow PyCapsule
    interfaces: ``pyarrow.table(t)`` reads every row, ``pyarrow.schema(t)`` gives the schema.

    Args:
        location: a local directory or a URL: ``s3://``, ``gs://``, ``az://``/``abfs://``,
            ``http(s)://``, ``file://``.
        path: the node inside the store (an array or a group); the root when omitted.
        storage_options: object store settings by their datafusion-cli names, e.g.
            ``{"aws.region": "eu-west-1", "aws.skip_signature": "true"}`` (also ``gcp.*``,
            ``azure.*``, ``http.*``, ``retry.*``); credentials also come from the environment.
        string_type: Arrow type of string columns: ``"utf8"`` (default), ``"large_utf8"`` or
            ``"utf8view"``.
        invalid_utf32: code units that are not Unicode scalar values: ``"error"`` (default),
            ``"replace"`` (U+FFFD) or ``"null"``.
        fill_as_null: read elements equal to the fill value as NULL.
        binary_as_string: read NumPy ``S`` (null-terminated bytes) arrays as strings, checked
            as UTF-8, instead of ``binary``.
        decode_cf: decode numbers as their CF attributes ask, as xarray does (default True):
            times (``units: "hours since 2000-01-01"``) and xarray's timedeltas become
            timestamps and durations, packed numbers (``scale_factor``, ``add_offset``) become
            float64 with ``_FillValue``/``missing_value`` as null.
        arrays: for a group, the arrays that form the value columns, in this order.
        max_chunk_bytes: the largest decoded chunk (or shard) accepted, in bytes.
        max_metadata_bytes: the largest metadata document accepted, in bytes.
        pushdown: push filters into the scan (default True).
        io_concurrency: chunk fetches kept in flight per partition (default 64).

    Raises:
        ZarrError: the store cannot be opened, or an option is unknown or invalid.
    """

    def __init__(
        self,
        location: str,
        path: str | None = None,
        *,
        storage_options: dict[str, str] | None = None,
        string_type: Literal["utf8", "large_utf8", "utf8view"] = ...,
        invalid_utf32: Literal["error", "replace", "null"] = ...,
        fill_as_null: bool = ...,
        binary_as_string: bool = ...,
        decode_cf: bool = ...,
        arrays: list[str] | str | None = ...,
        max_chunk_bytes: int = ...,
        max_metadata_bytes: int = ...,
        pushdown: bool = ...,
        io_concurrency: int = ...,
    ) -> None: ...
    @property
    def location(self) -> str:
        """The store's URL (a local path becomes a ``file://`` URL)."""
    @property
    def path(self) -> str:
        """The node's path inside the store (``""`` for the root)."""
    @property
    def num_rows(self) -> int | None:
        """The number of rows."""
    @property
    def index_columns(self) -> list[str]:
        """The index columns (element indexes along a dimension, ``uint64``)."""
    def to_parquet(
        self,
        path: str | os.PathLike[str],
        *,
        columns: list[str] | None = None,
        where: str | None = None,
        compression: Literal["zstd", "snappy", "lz4", "gzip", "none"] = "zstd",
        compression_level: int | None = None,
        row_group_size: int | None = None,
        threads: int | None = None,
        progress: Callable[[int, int], object] | None = None,
    ) -> int:
        """Writes the rows to the Parquet file ``path``; returns the number of rows written.

        The export of ``zarr-sql export``: rows in index order, strings dictionary-encoded and
        index columns delta-encoded by the crate's own Parquet writer, row groups encoded in
        parallel, the store, path and Zarr metadata in the footer (``zarr.store``,
        ``zarr.path``, ``zarr.metadata``). The file is written beside ``path`` and renamed over
        it only when complete: an error or Ctrl-C (``KeyboardInterrupt``, which cancels the
        export) leaves no partial file and keeps an existing one. The GIL is released while it
        runs. It uses a session of its own: ``COPY ... TO`` in a datafusion-python session
        writes with DataFusion's writer instead.

        Args:
            path: the Parquet file to write (replaced atomically).
            columns: the columns to write, in this order (default: all).
            where: a SQL predicate the rows must satisfy, e.g. ``"value LIKE 'Ber%'"``.
            compression: ``lz4`` is Parquet's ``LZ4_RAW``.
            compression_level: zstd 1-22, gzip 0-9.
            row_group_size: rows per row group (default 1,048,576; 0 raises ValueError).
            threads: partitions of the scan and row groups encoded at once (default: the
                cores; 0 raises ValueError).
            progress: called as ``progress(rows_read, total_rows)`` on the calling thread
                while the export runs (at most every 100 ms, when the counts have changed)
                and once when it is complete. ``total_rows`` counts the chunks the scan
                plans to read (those a predicate on the index rules out are not), so a
                predicate that skips chunks while scanning may leave ``rows_read`` below it at
                the end. An exception it raises cancels the export, as Ctrl-C does, and
                reaches the caller.

        Raises:
            ZarrError: an unknown column or option, a predicate that does not parse, a store
                or chunk that cannot be read, or a file that cannot be written.
            TypeError: ``progress`` is not callable.
        """
    @staticmethod
    def _from_read_zarr(arguments: list[str], session: Any | None = None) -> ZarrTable:
        """The table of ``read_zarr('location' [, 'path' [, 'option', 'value', ...]])``,
        starting from the ``zarr.*`` options of ``session`` (a ``SessionContext``) if given."""
    def __datafusion_table_provider__(self, session: Any) -> object: ...
    def __arrow_c_schema__(self) -> object: ...
    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object: ...

class ZarrTableFactory:
    """``CREATE EXTERNAL TABLE t STORED AS ZARR LOCATION '...' OPTIONS (...)``.

    Register with ``ctx.register_table_factory("ZARR", ZarrTableFactory())``, or call
    :func:`datafusion_zarr.register`.
    """

    def __init__(self) -> None: ...
    def __datafusion_table_provider_factory__(self, codec: Any) -> object: ...

def _write_zarr(
    stream: object, location: str, options: list[tuple[str, str]], session: Any | None = None
) -> int: ...

class ZarrSessionOptions:
    """The ``zarr.*`` session options: ``SessionConfig().with_extension(ZarrSessionOptions())``
    makes a session in which ``SET zarr.string_type = 'utf8view'`` (any option of reading or
    writing, docs/writing.md) sets a default that ``read_zarr``, ``CREATE EXTERNAL TABLE ...
    STORED AS ZARR`` and ``write_zarr(..., session=ctx)`` start from; their own options win.

    ``defaults`` are such values from the start (``ZarrSessionOptions(string_type="utf8view")``).
    Each is checked here; a value given with ``SET`` is checked when a statement uses it
    (datafusion-ffi keeps whatever is set). Storage options are not session options.

    Raises:
        ZarrError: an unknown option, a storage option, or a bad value.
    """

    def __init__(self, **defaults: Any) -> None: ...
    def __datafusion_extension_options__(self) -> object: ...

class IcechunkHistory:
    """A table of an Icechunk repository's history (``icechunk_snapshots``, ``icechunk_refs``)."""

    def __datafusion_table_provider__(self, session: Any) -> Any: ...
    def __arrow_c_stream__(self, requested_schema: Any | None = None) -> Any: ...

def _icechunk_history(
    kind: str, location: str, branch: str | None, options: list[tuple[str, str]]
) -> IcechunkHistory: ...
