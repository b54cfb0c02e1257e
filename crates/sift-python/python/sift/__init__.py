"""Sift: columnar files that are filtered while they are still compressed.

Write Arrow data (pyarrow, pandas, Polars) into Sift files, scan Sift and Parquet files
with filters evaluated on the encoded data, query them with SQL, and hand them to DuckDB
and Polars with projections and filters pushed into Sift's scan::

    import sift, pyarrow.compute as pc
    sift.write(table, "lineitem.sift")
    f = sift.open("lineitem.sift")
    t = f.to_table(columns=["l_extendedprice"], filter="l_quantity < 24")
    t = f.to_table(filter=pc.field("l_quantity") < 24)

The work happens in Rust without holding the interpreter's lock, and results reach
pyarrow through the Arrow C data interface, without copies.
"""

from __future__ import annotations

import os
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Union

import pyarrow as pa

from . import _sift
from ._sift import (
    CorruptFileError,
    FilterError,
    SiftError,
    SqlError,
    UnsupportedTypeError,
    __version__,
)
from ._filters import Filter, plan_scan

__all__ = [
    "File",
    "open",
    "write",
    "convert",
    "sql",
    "dataset",
    "SiftError",
    "CorruptFileError",
    "UnsupportedTypeError",
    "FilterError",
    "SqlError",
    "__version__",
]

PathLike = Union[str, "os.PathLike[str]"]


class File:
    """An open Sift or Parquet file (chosen by the extension: ``.sift``, ``.parquet``).

    The footer is read once when the file is opened; every scan reuses it. Parquet files
    go through Sift's own Parquet scan (filters on the encoded pages where it can).

    Also an Arrow stream: ``pa.table(f)``, ``pl.from_arrow(f)`` and DuckDB read the whole
    file through ``__arrow_c_stream__``.
    """

    def __init__(self, path: PathLike, *, verify_checksums: bool = True,
                 storage_options: Optional[Mapping[str, str]] = None) -> None:
        options = list(storage_options.items()) if storage_options else None
        self._file = _sift.File(os.fspath(path), verify_checksums, options)
        self._last_stats: Optional[Dict[str, int]] = None

    @classmethod
    def _wrap(cls, native: Any) -> "File":
        """A file opened natively (by a dataset)."""
        f = cls.__new__(cls)
        f._file = native
        f._last_stats = None
        return f

    def __repr__(self) -> str:
        return f"sift.File({os.fspath(self.path)!r}, {self.num_rows} rows, {self.num_blocks} blocks)"

    @property
    def path(self) -> str:
        """The path the file was opened from."""
        return os.fspath(self._file.path)

    @property
    def schema(self) -> pa.Schema:
        """The file's schema, as a ``pyarrow.Schema``."""
        return self._file.schema

    @property
    def num_rows(self) -> int:
        """Rows in the file."""
        return self._file.num_rows

    @property
    def num_blocks(self) -> int:
        """Blocks (Parquet: row groups): the units a scan reads and prunes."""
        return self._file.num_blocks

    @property
    def metadata(self) -> Dict[str, Any]:
        """The file's layout: ``format``, ``num_rows``, ``num_blocks``, ``schema``, and
        ``blocks``, a list of ``{"index", "rows", "columns"}`` where each column is
        ``{"name", "encoding", "stored_bytes", "null_count", "min", "max"}`` (``encoding``
        and ``stored_bytes`` are ``None`` for Parquet files; ``min``/``max`` are the zone
        map's bounds as Python values, ``None`` where the file keeps none)."""
        return self._file.metadata()

    @property
    def last_scan_stats(self) -> Optional[Dict[str, int]]:
        """What the last finished ``to_table`` did: ``blocks_total``, ``blocks_pruned``
        (skipped by zone maps), ``blocks_empty``, ``rows_scanned``, ``rows_matched``,
        ``values_decoded``, ``bytes_read``."""
        return self._last_stats

    def scanner(
        self,
        columns: Optional[Sequence[str]] = None,
        filter: Filter = None,
        limit: Optional[int] = None,
        *,
        read_dictionary: Optional[Sequence[str]] = None,
        threads: Optional[int] = None,
        batch_size: Optional[int] = None,
        rows: Optional[tuple] = None,
    ) -> "Scanner":
        """A scan of the file, not yet read; see :meth:`to_table` for the arguments.
        ``rows=(start, end)`` limits it to a row range."""
        plan = plan_scan(lambda: self._file.schema, columns, filter, limit)
        native = self._file.scan(
            columns=plan.scan_columns,
            filter=plan.text,
            expression=plan.pickled,
            limit=plan.limit,
            read_dictionary=list(read_dictionary) if read_dictionary else None,
            threads=threads,
            batch_size=batch_size,
            rows=rows,
        )
        return Scanner(native, plan, self)

    def to_table(
        self,
        columns: Optional[Sequence[str]] = None,
        filter: Filter = None,
        limit: Optional[int] = None,
        *,
        read_dictionary: Optional[Sequence[str]] = None,
        threads: Optional[int] = None,
    ) -> pa.Table:
        """Reads the file into a ``pyarrow.Table``.

        Args:
            columns: the columns to return, in this order (default: all).
            filter: only rows where this is true: Sift's filter text
                (``"l_shipdate >= date '1994-01-01' and l_quantity < 24"``) or a
                ``pyarrow.compute.Expression``. Filters are evaluated on the encoded data;
                of an expression, what Sift cannot evaluate exactly is applied by pyarrow
                to the scan's result.
            limit: at most this many rows.
            read_dictionary: columns returned as dictionary arrays over the stored
                dictionaries (like pyarrow's ``read_dictionary``).
            threads: threads scanning blocks at once (default: every core).

        Raises ``KeyboardInterrupt`` on Ctrl-C, ``sift.FilterError`` for a filter that does
        not parse or fit the schema, ``sift.CorruptFileError`` for a damaged file.
        """
        return self.scanner(
            columns, filter, limit, read_dictionary=read_dictionary, threads=threads
        ).to_table()

    def to_reader(
        self,
        columns: Optional[Sequence[str]] = None,
        filter: Filter = None,
        limit: Optional[int] = None,
        *,
        read_dictionary: Optional[Sequence[str]] = None,
        threads: Optional[int] = None,
        batch_size: Optional[int] = None,
    ) -> pa.RecordBatchReader:
        """The scan as a ``pyarrow.RecordBatchReader``, read lazily; arguments as
        :meth:`to_table`, with ``batch_size`` the most rows per batch."""
        return self.scanner(
            columns,
            filter,
            limit,
            read_dictionary=read_dictionary,
            threads=threads,
            batch_size=batch_size,
        ).to_reader()

    def to_batches(self, *args: Any, **kwargs: Any) -> Iterator[pa.RecordBatch]:
        """The scan's record batches, one by one; arguments as :meth:`to_reader`."""
        return iter(self.to_reader(*args, **kwargs))

    def to_pandas(self, *args: Any, **kwargs: Any):
        """The scan as a pandas DataFrame; arguments as :meth:`to_table`."""
        return self.to_table(*args, **kwargs).to_pandas()

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        return self.to_reader().__arrow_c_stream__(requested_schema)


class Scanner:
    """One scan of a file: read it once with :meth:`to_table` or :meth:`to_reader`;
    :attr:`stats` says what it did."""

    def __init__(self, native: Any, plan: Any, file: Optional[File] = None) -> None:
        self._native = native
        self._plan = plan
        self._file = file

    @property
    def schema(self) -> pa.Schema:
        """The schema of the rows the scan returns."""
        return self._plan.output_schema(self._native.schema)

    @property
    def stats(self) -> Dict[str, int]:
        """Counters of the scan so far (see :attr:`File.last_scan_stats`)."""
        return self._native.stats

    @property
    def pushed_filter(self) -> Optional[str]:
        """The filter evaluated inside Sift's scan, in Sift's filter syntax."""
        return self._plan.pushed

    def to_table(self) -> pa.Table:
        """The scan's rows as a ``pyarrow.Table``."""
        try:
            table = self._native.read_all()
        finally:
            if self._file is not None:
                self._file._last_stats = self._native.stats
        return self._plan.finish_table(table)

    def to_reader(self) -> pa.RecordBatchReader:
        """The scan as a ``pyarrow.RecordBatchReader``."""
        return self._plan.finish_reader(self._native.to_reader())

    def to_batches(self) -> Iterator[pa.RecordBatch]:
        """The scan's record batches."""
        return iter(self.to_reader())

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        return self.to_reader().__arrow_c_stream__(requested_schema)


def open(path: PathLike, *, verify_checksums: bool = True,
         storage_options: Optional[Mapping[str, str]] = None) -> File:
    """Opens a Sift (``.sift``) or Parquet (``.parquet``) file for scanning: a local path,
    or a Sift object's URL (``s3://bucket/key.sift``, ``gs://…``, ``az://…``,
    ``https://…``), the store configured by its usual environment variables and
    ``storage_options`` (the client's keys: ``aws_endpoint``, ``aws_region``, …)."""
    return File(path, verify_checksums=verify_checksums, storage_options=storage_options)


def _arrow_stream(data: Any) -> Any:
    """`data` as an object with ``__arrow_c_stream__``."""
    if hasattr(data, "__arrow_c_stream__"):
        return data
    module = type(data).__module__.split(".")[0]
    if module == "pandas":
        return pa.Table.from_pandas(data, preserve_index=False)
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    if isinstance(data, (dict, list)):
        return pa.table(data) if isinstance(data, dict) else pa.Table.from_pylist(data)
    raise TypeError(
        f"cannot write a {type(data).__name__}: expected a pyarrow Table or "
        "RecordBatchReader, a pandas or Polars DataFrame, or an object with __arrow_c_stream__"
    )


def _column_names(names: Optional[Sequence[str]]) -> Optional[List[str]]:
    """A column list argument: one name or a sequence of names."""
    if names is None:
        return None
    return [names] if isinstance(names, str) else [str(n) for n in names]


def write(
    data: Any,
    path: PathLike,
    *,
    block_rows: Optional[int] = None,
    compression: Optional[str] = None,
    threads: Optional[int] = None,
    progress: Optional[bool] = None,
    byteslice: Optional[Sequence[str]] = None,
) -> Dict[str, Any]:
    """Writes ``data`` to ``path``: a ``.sift`` file (or ``.parquet``, ``.arrow``,
    ``.arrows``, by the extension).

    ``data`` is a ``pyarrow.Table``, ``RecordBatch`` or ``RecordBatchReader``, a pandas or
    Polars DataFrame, or any object with ``__arrow_c_stream__``. It is streamed: memory
    stays bounded by about one block. The file appears at ``path`` only once complete; on
    an error or Ctrl-C nothing is left behind and ``path`` keeps what it held.

    Args:
        block_rows: rows per Sift block (1..=65536; default 65536).
        compression: Parquet codec, ``"zstd"`` (default), ``"snappy"`` or ``"none"``.
        threads: threads encoding a block's columns at once (default: every core); the
            file is the same for any count.
        progress: a progress bar on stderr; by default only when stderr is a terminal.
        byteslice: Sift columns whose codes are stored as byte slices: range filters on
            wide codes (keys, prices, timestamps) compare a byte or two per value instead
            of every bit, for a larger file (``sift convert --byteslice``).

    Returns ``{"path", "rows", "bytes", "seconds"}``.
    """
    return _sift.write(
        _arrow_stream(data),
        os.fspath(path),
        block_rows=block_rows,
        compression=compression,
        threads=threads,
        progress=progress,
        byteslice=_column_names(byteslice),
    )


def convert(
    src: PathLike,
    dst: PathLike,
    *,
    block_rows: Optional[int] = None,
    compression: Optional[str] = None,
    threads: Optional[int] = None,
    progress: Optional[bool] = None,
    byteslice: Optional[Sequence[str]] = None,
) -> Dict[str, Any]:
    """Converts a file, as ``sift convert`` does: Sift, Parquet, CSV and Arrow IPC
    (``.arrow``/``.feather``/``.ipc``, ``.arrows``) in; Sift, Parquet and Arrow IPC out.
    Arguments and result as :func:`write`."""
    return _sift.convert(
        os.fspath(src),
        os.fspath(dst),
        block_rows=block_rows,
        compression=compression,
        threads=threads,
        progress=progress,
        byteslice=_column_names(byteslice),
    )


def sql(
    query: str,
    tables: Optional[Mapping[str, Union[PathLike, File]]] = None,
    *,
    threads: Optional[int] = None,
) -> pa.Table:
    """Runs SQL over Sift and Parquet files (through DataFusion, with filters,
    projections and limits pushed into Sift's scan) and returns a ``pyarrow.Table``.

    Files can be named in ``FROM`` (``select count(*) from 'data/*.sift'``) or
    registered by name in ``tables`` (``{"lineitem": "lineitem.sift"}``). ``threads``
    partitions run at once (default: every core). Raises ``sift.SqlError`` with the
    line and column of bad SQL.
    """
    named: Dict[str, str] = {}
    for name, source in (tables or {}).items():
        named[name] = source.path if isinstance(source, File) else os.fspath(source)
    return _sift.sql(query, named, threads)


def dataset(source: Union[PathLike, Sequence[PathLike]], **kwargs: Any):
    """A ``pyarrow.dataset.Dataset`` over Sift (and Parquet) files: one path, a list of
    paths, a directory, a glob or an object-store URL (``s3://bucket/lineitem/``; object
    stores configured as for :func:`open`, with ``storage_options=``). DuckDB and Polars
    push projections and filters into Sift's scan through it::

        ds = sift.dataset("lineitem.sift")
        duckdb.sql("select sum(l_extendedprice) from ds where l_quantity < 24")
        pl.scan_pyarrow_dataset(ds).filter(pl.col("l_quantity") < 24).collect()
    """
    from ._dataset import SiftDataset

    return SiftDataset(source, **kwargs)
