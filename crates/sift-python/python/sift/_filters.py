"""Filters for a scan: Sift's filter text as it is, or a ``pyarrow.compute.Expression``
split into what Sift's scan evaluates and what pyarrow applies to the scan's result."""

from __future__ import annotations

from typing import Callable, Iterator, List, Optional, Sequence, Union

import pyarrow as pa
import pyarrow.compute as pc

from . import _sift

Filter = Union[str, pc.Expression, None]


def pickled_expression(expr: pc.Expression) -> Optional[bytes]:
    """The expression in pyarrow's own serialized form (what pickling it stores): an Arrow
    IPC file with the tree in its metadata and the literals, typed, in its columns. The
    Rust side reads it; ``None`` if this pyarrow does not serialize expressions so."""
    try:
        _, args = expr.__reduce__()
        return bytes(args[0])
    except Exception:  # pragma: no cover - depends on pyarrow's internals
        return None


class ScanPlan:
    """How one scan runs: what goes into Sift's scan and what is done after it."""

    def __init__(
        self,
        columns: Optional[List[str]],
        scan_columns: Optional[List[str]],
        text: Optional[str],
        pickled: Optional[bytes],
        pushed: Optional[str],
        residual: Optional[pc.Expression],
        limit: Optional[int],
    ) -> None:
        self.columns = columns
        self.scan_columns = scan_columns
        self.text = text
        self.pickled = pickled
        self.pushed = pushed
        self.residual = residual
        # The limit goes into the scan only when the scan's filter is the whole filter.
        self.final_limit = limit
        self.limit = limit if residual is None else None

    def output_schema(self, scan_schema: pa.Schema) -> pa.Schema:
        if self.residual is None or self.columns is None:
            return scan_schema
        return pa.schema([scan_schema.field(c) for c in self.columns])

    def _finish(self, table: pa.Table) -> pa.Table:
        if self.residual is not None:
            table = table.filter(self.residual)
            if self.columns is not None:
                table = table.select(self.columns)
        return table

    def finish_table(self, table: pa.Table) -> pa.Table:
        table = self._finish(table)
        if self.residual is not None and self.final_limit is not None:
            table = table.slice(0, self.final_limit)
        return table

    def finish_reader(self, reader: pa.RecordBatchReader) -> pa.RecordBatchReader:
        if self.residual is None:
            return reader
        schema = self.output_schema(reader.schema)

        def batches() -> Iterator[pa.RecordBatch]:
            left = self.final_limit
            for batch in reader:
                if left is not None and left <= 0:
                    break
                for out in self._finish(pa.Table.from_batches([batch])).to_batches():
                    if left is not None:
                        out = out.slice(0, left)
                        left -= out.num_rows
                    if out.num_rows:
                        yield out

        return pa.RecordBatchReader.from_batches(schema, batches())


def plan_scan(
    schema: Callable[[], pa.Schema],
    columns: Optional[Sequence[str]],
    filter: Filter,
    limit: Optional[int],
) -> ScanPlan:
    """Plans a scan of a file of ``schema()`` (asked for only when an expression needs it)."""
    columns = list(columns) if columns is not None else None
    if filter is None or isinstance(filter, str):
        return ScanPlan(columns, columns, filter, None, filter, None, limit)
    if not isinstance(filter, pc.Expression):
        raise TypeError(
            f"filter must be Sift's filter text or a pyarrow.compute.Expression, "
            f"not {type(filter).__name__}"
        )
    pickled = pickled_expression(filter)
    if pickled is None:
        translation = {"pushed": None, "complete": False, "columns": schema().names}
    else:
        translation = _sift.translate_expression(pickled, schema())
    residual = None if translation["complete"] else filter
    scan_columns = columns
    if residual is not None and columns is not None:
        scan_columns = columns + [c for c in translation["columns"] if c not in columns]
    return ScanPlan(
        columns,
        scan_columns,
        None,
        pickled if translation["pushed"] is not None else None,
        translation["pushed"],
        residual,
        limit,
    )
