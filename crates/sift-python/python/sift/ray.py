"""Sift files in Ray Data: :func:`read_sift` and :class:`SiftDatasink`.

``read_sift`` splits a dataset (files, directories, globs or object-store URLs) into read
tasks by file and block range, sized from the footers, and pushes the projection and the
filter into each task's Sift scan: the columns Ray's optimizer keeps
(``Dataset.select_columns``) and the predicates it pushes down (``Dataset.filter(expr=…)``)
join the ``columns`` and ``filter`` given here, so every task reads only the blocks its
zone maps leave and only the chunks of the columns it needs.

``Dataset.write_datasink(SiftDatasink(directory))`` writes each write task's blocks to one
Sift file of the directory.

Requires ``ray[data]`` (not a dependency of the ``sift`` package).
"""

from __future__ import annotations

import functools
import os
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple, Union

import pyarrow as pa

from . import File, SiftError, _sift, write
from ._filters import Filter

try:
    from ray.data import Datasource, ReadTask
    from ray.data.block import BlockAccessor, BlockMetadata
    from ray.data.datasource import Datasink
except ImportError as e:  # pragma: no cover - depends on the environment
    raise ImportError("sift.ray needs Ray Data: pip install 'ray[data]'") from e

PathsLike = Union[str, os.PathLike, Sequence[Union[str, os.PathLike]]]

# The fewest rows a read task covers by default, unless its file has fewer.
MIN_TASK_ROWS = 1 << 20


def read_fragment(
    location: str,
    rows: Tuple[int, int],
    columns: Optional[List[str]],
    filter: Filter,
    post_filter: Any = None,
    storage_options: Optional[Dict[str, str]] = None,
) -> Tuple[pa.Table, Dict[str, int]]:
    """Scans rows ``rows`` of one file with ``columns`` and ``filter`` pushed into Sift's
    scan; ``post_filter`` (a ``pyarrow.compute.Expression``) is applied to the result.
    Returns the rows and the scan's statistics (blocks pruned, bytes read, requests, …).
    This is what each read task runs."""
    file = File(location, storage_options=storage_options)
    scanner = file.scanner(columns, filter, rows=rows, threads=1)
    table = scanner.to_table()
    if post_filter is not None:
        table = table.filter(post_filter)
    return table, dict(scanner.stats)


def _read(location, rows, columns, filter, post_filter, options) -> Iterable[pa.Table]:
    table, _ = read_fragment(location, rows, columns, filter, post_filter, options)
    yield table


def _files(source: Union[str, os.PathLike, Sequence[Union[str, os.PathLike]]],
           storage_options: Optional[Dict[str, str]] = None) -> List[Tuple[str, list]]:
    """The files a source names: a file, a directory (its Sift files, or its Parquet
    files when it holds none, recursively), a glob, an object-store URL
    (``s3://bucket/prefix/``, ``s3://bucket/t/*.sift``), or a list of those; each with its
    Hive partition values (``[(key, value or None), …]``)."""
    if isinstance(source, (str, os.PathLike)):
        options = list(storage_options.items()) if storage_options else None
        return _sift.resolve(os.fspath(source), options)
    out: List[Tuple[str, list]] = []
    for s in source:
        out.extend(_files(s, storage_options))
    if not out:
        raise SiftError("no files given")
    return out


class SiftDatasource(Datasource):
    """A Ray Data source of Sift files (see :func:`read_sift`)."""

    def __init__(
        self,
        paths: PathsLike,
        columns: Optional[Sequence[str]] = None,
        filter: Filter = None,
        blocks_per_task: Optional[int] = None,
        storage_options: Optional[Dict[str, str]] = None,
    ) -> None:
        super().__init__()
        self._storage_options = storage_options
        self._projection_map = None if columns is None else {c: c for c in columns}
        self._filter = filter
        self._blocks_per_task = blocks_per_task
        found = _files(paths, storage_options)
        partitioned = [(f, p) for f, p in found if p]
        if partitioned:
            f, p = partitioned[0]
            keys = "/".join(f"{k}={v}" for k, v in p)
            raise SiftError(
                f"{f} lies in a Hive partition directory ({keys}); read_sift does not add "
                "partition columns yet: name the files of one partition, or use "
                "sift.dataset or sift.sql, which do")
        self._locations = [f for f, _ in found]
        # The footers: rows per block and the schema, for planning and size estimates.
        self._layout = []
        schema = None
        for loc in self._locations:
            f = File(loc, storage_options=storage_options)
            if schema is None:
                schema = f.schema
            elif not f.schema.equals(schema):
                raise SiftError(f"{loc}: its schema differs from {self._locations[0]}'s")
            self._layout.append((loc, list(f._file.block_rows)))
        self._schema = schema

    def get_name(self) -> str:
        return "Sift"

    def supports_projection_pushdown(self) -> bool:
        return True

    def supports_predicate_pushdown(self) -> bool:
        return True

    def _columns(self) -> Optional[List[str]]:
        if self._projection_map is None:
            return None
        # No column at all (Ray counting rows): Ray's blocks lose the row count of a
        # table without columns, so the first column is read to carry it.
        return list(self._projection_map) or self._schema.names[:1]

    def _row_width(self) -> int:
        """Bytes per row in Arrow, roughly: fixed widths, 16 per variable-length value."""
        names = self._columns() or self._schema.names
        width = 0
        for name in names:
            t = self._schema.field(name).type
            try:
                width += max(t.bit_width // 8, 1)
            except ValueError:
                width += 16
        return width

    def estimate_inmemory_data_size(self) -> Optional[int]:
        rows = sum(sum(b) for _, b in self._layout)
        return rows * self._row_width()

    def _filters(self) -> Tuple[Filter, Any]:
        """The filter pushed into each scan, and one applied after it (Ray's predicate,
        when the caller's filter is Sift's filter text)."""
        pushed = self.get_current_predicate()
        if pushed is None:
            return self._filter, None
        expr = pushed.to_pyarrow()
        if self._filter is None:
            return expr, None
        if isinstance(self._filter, str):
            return self._filter, expr
        return self._filter & expr, None

    def get_read_tasks(
        self,
        parallelism: int,
        per_task_row_limit: Optional[int] = None,
        data_context: Any = None,
    ) -> List[ReadTask]:
        # Split into about `parallelism` tasks, ranges of blocks, of at least
        # MIN_TASK_ROWS rows (or a whole file): each task opens its file and Ray spends
        # milliseconds per task, more than scanning a block takes.
        total_blocks = sum(len(b) for _, b in self._layout)
        total_rows = sum(sum(b) for _, b in self._layout)
        step = self._blocks_per_task
        if step is None:
            rows_per_task = max(total_rows // max(parallelism, 1), MIN_TASK_ROWS)
            rows_per_block = max(total_rows // max(total_blocks, 1), 1)
            step = max(1, rows_per_task // rows_per_block)
        columns = self._columns()
        filter, post = self._filters()
        width = self._row_width()
        schema = self._schema if columns is None else pa.schema(
            [self._schema.field(c) for c in columns])
        tasks = []
        for loc, blocks in self._layout:
            starts = [0]
            for n in blocks:
                starts.append(starts[-1] + n)
            for first in range(0, max(len(blocks), 1), step):
                end = min(first + step, len(blocks))
                rows = (starts[first], starts[end])
                n = rows[1] - rows[0]
                meta = BlockMetadata(
                    num_rows=n if filter is None and post is None else None,
                    size_bytes=n * width,
                    input_files=[loc],
                    exec_stats=None,
                )
                fn = functools.partial(_read, loc, rows, columns, filter, post,
                                       self._storage_options)
                tasks.append(ReadTask(fn, meta, schema=schema,
                                      per_task_row_limit=per_task_row_limit))
        return tasks


def read_sift(
    paths: PathsLike,
    *,
    columns: Optional[Sequence[str]] = None,
    filter: Filter = None,
    blocks_per_task: Optional[int] = None,
    storage_options: Optional[Dict[str, str]] = None,
    **read_args: Any,
):
    """A ``ray.data.Dataset`` of Sift files: a file, a directory, a glob, an object-store
    URL, or a list of those. ``columns`` and ``filter`` (Sift's filter text or a
    ``pyarrow.compute.Expression``) are evaluated inside each task's scan; Ray's own
    projection and predicate pushdown add to them. ``blocks_per_task`` fixes the split
    (default: about one task per requested unit of parallelism, each of at least
    ``MIN_TASK_ROWS`` rows or a whole file); ``storage_options``
    configure object stores (see :func:`sift.open`). Other keyword arguments go to
    ``ray.data.read_datasource``."""
    import ray.data

    source = SiftDatasource(paths, columns, filter, blocks_per_task, storage_options)
    return ray.data.read_datasource(source, **read_args)


class SiftDatasink(Datasink):
    """Writes a Ray dataset as Sift files of a local directory, one per write task
    (``part-00000.sift``, …); each file appears only once complete."""

    def __init__(self, directory: Union[str, os.PathLike], **write_args: Any) -> None:
        self._dir = os.fspath(directory)
        self._write_args = write_args

    def on_write_start(self, schema: Any = None) -> None:
        os.makedirs(self._dir, exist_ok=True)

    def write(self, blocks: Iterable[Any], ctx: Any) -> Dict[str, Any]:
        tables = [BlockAccessor.for_block(b).to_arrow() for b in blocks]
        tables = [t for t in tables if t.num_rows > 0]
        if not tables:
            return {"path": None, "rows": 0}
        path = os.path.join(self._dir, f"part-{ctx.task_idx:05d}.sift")
        write(pa.concat_tables(tables), path, **self._write_args)
        return {"path": path, "rows": sum(t.num_rows for t in tables)}
