"""Sift files as a ``pyarrow.dataset.Dataset``, so that DuckDB and Polars push their
projections and filters into Sift's scan.

DuckDB (``duckdb.sql("… from ds where …")``) and Polars (``pl.scan_pyarrow_dataset``)
call the dataset's ``scanner(columns=…, filter=…)`` with a ``pyarrow.compute.Expression``
and read the scanner's batches; both rely on the scanner applying the filter. Here the
scanner runs one Sift scan per fragment (a file, or a range of its blocks) with the
filter evaluated on the encoded data, and pyarrow applies the part Sift cannot evaluate.

The files form one table as in ``sift scan`` (the native ``_sift.Dataset``): their
schemas unify (a column missing from a file is null there, integers widen), and the
``key=value`` directories of a Hive-partitioned tree are columns, with each fragment's
values as its ``partition_expression``; a filter on them skips whole files.
"""

from __future__ import annotations

import os
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple, Union

import pyarrow as pa
import pyarrow.dataset as pads

from . import File, Scanner, SiftError, _sift
from ._filters import Filter, plan_scan


def _locations(source: Union[str, os.PathLike, Sequence[Union[str, os.PathLike]]]) -> List[str]:
    if isinstance(source, (str, os.PathLike)):
        return [os.fspath(source)]
    out = [os.fspath(s) for s in source]
    if not out:
        raise SiftError("no files given")
    return out


class SiftFragment(pads.Fragment):
    """A range of blocks of one file: the unit a dataset scan reads."""

    def __init__(self, dataset: "SiftDataset", index: int, blocks: Tuple[int, int],
                 rows: Tuple[int, int]) -> None:
        self._dataset = dataset
        self._index = index
        self._file = dataset._files[index]
        self._blocks = blocks
        self._rows = rows

    def __repr__(self) -> str:
        return f"<SiftFragment {self._file.path} blocks {self._blocks[0]}..{self._blocks[1]}>"

    @property
    def path(self) -> str:
        """The file."""
        return self._file.path

    @property
    def blocks(self) -> Tuple[int, int]:
        """The blocks, ``(first, end)``."""
        return self._blocks

    @property
    def rows(self) -> Tuple[int, int]:
        """The rows of the file, ``(start, end)``."""
        return self._rows

    @property
    def physical_schema(self) -> pa.Schema:
        """The file's schema."""
        return self._file.schema

    @property
    def partition_expression(self) -> Any:
        """The file's Hive partition values, as ``key == value`` (``is_null`` for a null
        value) joined by ``&``; true when it has none."""
        import pyarrow.compute as pc

        expr = pc.scalar(True)
        schema = self._dataset.schema
        for key, value in self._dataset._native.partitions(self._index):
            field = pc.field(key)
            if value is None:
                expr = expr & field.is_null()
            else:
                typed = pa.scalar(value).cast(schema.field(key).type)
                expr = expr & (field == typed)
        return expr

    def scanner(self, schema: Any = None, columns: Optional[Sequence[str]] = None,
                filter: Filter = None, **kwargs: Any):
        """A scan of the fragment's rows, in the dataset's columns (``schema`` is
        ignored)."""
        return self._dataset._scan(self._index, columns, filter, rows=self._rows,
                                   threads=kwargs.get("threads"))

    def to_table(self, schema: Any = None, columns: Optional[Sequence[str]] = None,
                 filter: Filter = None, **kwargs: Any) -> pa.Table:
        """The fragment's rows that pass ``filter``, as a table."""
        return self.scanner(columns=columns, filter=filter, **kwargs).to_table()

    def to_batches(self, schema: Any = None, columns: Optional[Sequence[str]] = None,
                   filter: Filter = None, **kwargs: Any) -> Iterator[pa.RecordBatch]:
        """The fragment's rows that pass ``filter``, batch by batch."""
        return self.scanner(columns=columns, filter=filter, **kwargs).to_batches()

    def count_rows(self, filter: Filter = None, **kwargs: Any) -> int:
        """Rows of the fragment (that pass ``filter``)."""
        if filter is None:
            return self._rows[1] - self._rows[0]
        return self.to_table(columns=[], filter=filter).num_rows

    def head(self, num_rows: int, columns: Optional[Sequence[str]] = None,
             filter: Filter = None, **kwargs: Any) -> pa.Table:
        """The first ``num_rows`` rows that pass ``filter``."""
        return self._dataset._scan(self._index, columns, filter, num_rows,
                                   rows=self._rows).to_table()


class SiftDataset(pads.Dataset):
    """A ``pyarrow.dataset.Dataset`` over Sift and Parquet files: their columns unified,
    then the Hive partition columns.

    Args:
        source: a file, a directory, a glob, or a list of them.
        threads: threads each scan uses (default: every core; a scanner called with
            ``use_threads=False`` uses one).
        blocks_per_fragment: blocks per fragment (default: a whole file per fragment).
        storage_options: object-store settings for URLs (see :func:`sift.open`).
    """

    def __init__(
        self,
        source: Union[str, os.PathLike, Sequence[Union[str, os.PathLike]]],
        *,
        threads: Optional[int] = None,
        blocks_per_fragment: Optional[int] = None,
        storage_options: Optional[Dict[str, str]] = None,
    ) -> None:
        options = list(storage_options.items()) if storage_options else None
        self._native = _sift.Dataset(_locations(source), options)
        self._files = [File._wrap(self._native.file(i))
                       for i in range(len(self._native.files))]
        self._schema = self._native.schema
        self._threads = threads
        self._blocks_per_fragment = blocks_per_fragment
        self.last_scan_stats: Optional[Dict[str, int]] = None

    def __repr__(self) -> str:
        return f"<SiftDataset {len(self._files)} file(s), {self.count_rows()} rows>"

    @property
    def schema(self) -> pa.Schema:
        """The files' columns (unified), then the partition columns."""
        return self._schema

    @property
    def files(self) -> List[str]:
        """The files, in scan order."""
        return [f.path for f in self._files]

    def get_fragments(self, filter: Filter = None) -> Iterator[SiftFragment]:
        """The fragments, in scan order: each file, or ranges of ``blocks_per_fragment``
        of its blocks (``filter`` is ignored: zone maps prune blocks inside each scan)."""
        for i, f in enumerate(self._files):
            # Only the block sizes: `metadata` would also convert every zone map.
            step = self._blocks_per_fragment or max(f.num_blocks, 1)
            starts = [0]
            for rows in f._file.block_rows:
                starts.append(starts[-1] + rows)
            for first in range(0, max(f.num_blocks, 1), step):
                end = min(first + step, f.num_blocks)
                yield SiftFragment(self, i, (first, end), (starts[first], starts[end]))

    def _scan(self, index: int, columns: Optional[Sequence[str]], filter: Filter,
              limit: Optional[int] = None, *, rows: Optional[Tuple[int, int]] = None,
              threads: Optional[int] = None, batch_size: Optional[int] = None) -> Scanner:
        """A scan of file ``index`` in the dataset's columns, the filter specialised to
        its partition values."""
        plan = plan_scan(lambda: self._schema, columns, filter, limit)
        native = self._native.scan(index, columns=plan.scan_columns, filter=plan.text,
                                   expression=plan.pickled, limit=plan.limit,
                                   threads=threads, batch_size=batch_size, rows=rows)
        return Scanner(native, plan)

    def scanner(
        self,
        columns: Optional[Sequence[str]] = None,
        filter: Filter = None,
        batch_size: Optional[int] = None,
        use_threads: bool = True,
        **kwargs: Any,
    ) -> "SiftDatasetScanner":
        """A scan of every fragment with ``columns`` and ``filter`` (a
        ``pyarrow.compute.Expression`` or Sift's filter text) pushed into Sift's scan."""
        threads = self._threads if use_threads else 1
        if isinstance(columns, dict):
            raise SiftError("column expressions (a dict for columns) are not supported")
        return SiftDatasetScanner(self, columns, filter, batch_size, threads)

    def to_table(self, columns=None, filter=None, **kwargs: Any) -> pa.Table:
        """The rows that pass ``filter``, as one table; arguments as :meth:`scanner`."""
        return self.scanner(columns, filter, **kwargs).to_table()

    def to_batches(self, columns=None, filter=None, **kwargs: Any) -> Iterator[pa.RecordBatch]:
        """The rows that pass ``filter``, batch by batch."""
        return self.scanner(columns, filter, **kwargs).to_batches()

    def head(self, num_rows: int, columns=None, filter=None, **kwargs: Any) -> pa.Table:
        """The first ``num_rows`` rows that pass ``filter``."""
        return self.scanner(columns, filter, **kwargs).head(num_rows)

    def take(self, indices, columns=None, filter=None, **kwargs: Any) -> pa.Table:
        """The rows at ``indices`` of the filtered rows."""
        return self.to_table(columns, filter).take(indices)

    def count_rows(self, filter: Filter = None, **kwargs: Any) -> int:
        """Rows (that pass ``filter``)."""
        if filter is None:
            return sum(f.num_rows for f in self._files)
        return self.scanner(columns=[], filter=filter).count_rows()


class SiftDatasetScanner:
    """A dataset scan: the fragments in order, each one Sift scan."""

    def __init__(self, dataset: SiftDataset, columns, filter, batch_size, threads) -> None:
        self._dataset = dataset
        self._columns = list(columns) if columns is not None else None
        self._filter = filter
        self._batch_size = batch_size
        self._threads = threads
        self.stats: Dict[str, int] = {}
        dataset.last_scan_stats = self.stats

    @property
    def dataset_schema(self) -> pa.Schema:
        """The dataset's schema."""
        return self._dataset.schema

    @property
    def projected_schema(self) -> pa.Schema:
        """The schema of the rows the scan returns."""
        if self._columns is None:
            return self._dataset.schema
        return pa.schema([self._dataset.schema.field(c) for c in self._columns])

    def _scanners(self, limit: Optional[int] = None):
        for fragment in self._dataset.get_fragments():
            yield self._dataset._scan(
                fragment._index,
                self._columns,
                self._filter,
                limit,
                rows=fragment.rows,
                threads=self._threads,
                batch_size=self._batch_size,
            )

    def _add(self, stats: Dict[str, int]) -> None:
        for k, v in stats.items():
            self.stats[k] = self.stats.get(k, 0) + v

    def to_batches(self) -> Iterator[pa.RecordBatch]:
        """The rows, batch by batch; :attr:`stats` adds each fragment's counters."""
        for scanner in self._scanners():
            try:
                yield from scanner.to_reader()
            finally:
                self._add(scanner.stats)

    def to_reader(self) -> pa.RecordBatchReader:
        """The rows as a ``pyarrow.RecordBatchReader``."""
        return pa.RecordBatchReader.from_batches(self.projected_schema, self.to_batches())

    def to_table(self) -> pa.Table:
        """The rows as one table."""
        tables = []
        for scanner in self._scanners():
            try:
                tables.append(scanner.to_table())
            finally:
                self._add(scanner.stats)
        if not tables:
            return self.projected_schema.empty_table()
        return pa.concat_tables(tables)

    def head(self, num_rows: int) -> pa.Table:
        """The first ``num_rows`` rows."""
        tables, left = [], num_rows
        for scanner in self._scanners(limit=num_rows):
            if left <= 0:
                break
            t = scanner.to_table().slice(0, left)
            self._add(scanner.stats)
            tables.append(t)
            left -= t.num_rows
        if not tables:
            return self.projected_schema.empty_table()
        return pa.concat_tables(tables)

    def count_rows(self) -> int:
        """The rows the scan returns."""
        return sum(b.num_rows for b in self.to_batches())

    def take(self, indices) -> pa.Table:
        """The rows at ``indices``."""
        return self.to_table().take(indices)

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        return self.to_reader().__arrow_c_stream__(requested_schema)
