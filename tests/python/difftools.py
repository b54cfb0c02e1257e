"""Helpers of the DuckDB differential tests (test_queries.py, test_scan_filters.py,
test_sql_random.py); their fixtures are in conftest.py."""

from __future__ import annotations

import math
import os
import shutil
import struct
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

REPO = Path(__file__).resolve().parents[2]
REL_TOL = 1e-9


def default_bin() -> Path:
    target = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
    return target / "debug" / "sift"


def run_sift(sift_bin: Path, *args: object, check: bool = True) -> subprocess.CompletedProcess:
    p = subprocess.run(
        [str(sift_bin), "--quiet", *map(str, args)], capture_output=True, text=True, timeout=300
    )
    if check and p.returncode != 0:
        cmd = " ".join(["sift", *map(str, args)])
        pytest.fail(f"`{cmd}` exited {p.returncode}:\n{p.stderr.strip()}", pytrace=False)
    return p


def find_tool(name: str) -> str:
    """A console script of the test venv (next to its python), else from PATH."""
    cand = Path(sys.executable).parent / name
    if cand.is_file():
        return str(cand)
    found = shutil.which(name)
    if not found:
        pytest.fail(f"{name} not found: install tests/python/requirements.txt")
    return found


def sql_str(s: object) -> str:
    return "'" + str(s).replace("'", "''") + "'"


@dataclass
class DataFiles:
    """One test table: in memory, as Parquet (several row groups) and as Sift (several
    blocks)."""

    table: pa.Table
    parquet: Path
    sift: Path

    def file(self, fmt: str) -> Path:
        return {"sift": self.sift, "parquet": self.parquet}[fmt]


def write_files(
    sift_bin: Path, table: pa.Table, directory: Path, stem: str, row_group: int, block_rows: int
) -> DataFiles:
    directory.mkdir(parents=True, exist_ok=True)
    parquet = directory / f"{stem}.parquet"
    sift = directory / f"{stem}.sift"
    pq.write_table(table, parquet, row_group_size=row_group)
    run_sift(sift_bin, "convert", parquet, sift, "--block-rows", block_rows)
    return DataFiles(table, parquet, sift)


def normalize(t: pa.Table) -> pa.Table:
    """bench/harness.py's normalization: decimal -> float64, any string flavour -> utf8,
    date64 -> date32; no metadata."""
    fields, cols = [], []
    for f, col in zip(t.schema, t.columns):
        ty = f.type
        if pa.types.is_decimal(ty):
            ty = pa.float64()
        elif pa.types.is_string_view(ty) or pa.types.is_large_string(ty):
            ty = pa.string()
        elif pa.types.is_date64(ty):
            ty = pa.date32()
        cols.append(col.cast(ty) if ty != f.type else col)
        fields.append(pa.field(f.name, ty, nullable=f.nullable))
    return pa.Table.from_arrays(cols, schema=pa.schema(fields)).combine_chunks()


# --------------------------------------------------------------------------- query results


def same_value(a, b) -> bool:
    """Aggregate values: ints exactly, floats to a relative REL_TOL (NaN equals NaN)."""
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, (bool, str)) or isinstance(b, (bool, str)):
        return a == b
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    a, b = float(a), float(b)
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=0.0)


def compare_result_rows(expected: list[tuple], got: list[tuple], keys: int) -> list[str]:
    """Differences between two aggregate results (rows sorted by their `keys` leading
    columns first); empty when they agree."""
    def order(r):
        return tuple((v is not None, str(v)) for v in r[:keys])

    expected = sorted(expected, key=order)
    got = sorted(got, key=order)
    if len(got) != len(expected):
        return [f"{len(got)} rows, expected {len(expected)}: got {got!r}, expected {expected!r}"]
    out = []
    for i, (e, g) in enumerate(zip(expected, got)):
        if len(g) != len(e):
            out.append(f"row {i}: {len(g)} columns, expected {len(e)}")
            continue
        for j, (x, y) in enumerate(zip(e, g)):
            if not same_value(x, y):
                out.append(f"row {i} column {j}: {y!r}, expected {x!r}")
    return out


# --------------------------------------------------------------------------- row multisets

_NAN = "NaN"


def _cell(v):
    """A hashable, exact stand-in for a value: floats by bit pattern (so -0.0 and +0.0
    differ), every NaN the same."""
    if isinstance(v, float):
        return _NAN if math.isnan(v) else ("f", struct.pack("<d", v))
    return v


def _float_bits(col: pa.ChunkedArray) -> pa.ChunkedArray:
    """A float column as its bit patterns, all NaNs made one (DuckDB may not keep a NaN's
    sign or payload), so tables can be sorted and compared exactly."""
    col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    width = col.type.bit_width
    nan = pa.scalar(float("nan"), col.type)
    canon = pc.if_else(pc.is_nan(col), nan, col)
    return canon.view(pa.uint32() if width == 32 else pa.uint64() if width == 64 else pa.uint16())


def comparable(t: pa.Table) -> pa.Table:
    cols = [_float_bits(c) if pa.types.is_floating(c.type) else c.combine_chunks()
            for c in t.columns]
    return pa.Table.from_arrays(cols, names=t.column_names)


def sorted_table(t: pa.Table) -> pa.Table:
    t = comparable(t)
    if t.num_columns == 0 or t.num_rows == 0:
        return t
    return t.sort_by([(n, "ascending") for n in t.column_names])


def multiset_diff(got: pa.Table, expected: pa.Table, show: int = 5) -> str:
    """'' when both tables hold the same rows (as multisets), else a short account."""
    if got.num_rows == expected.num_rows and sorted_table(got).equals(sorted_table(expected)):
        return ""
    g = Counter(tuple(map(_cell, r)) for r in zip(*(c.to_pylist() for c in got.columns)))
    e = Counter(tuple(map(_cell, r)) for r in zip(*(c.to_pylist() for c in expected.columns)))
    if got.num_rows and not got.num_columns:
        g = Counter({(): got.num_rows})
    if expected.num_rows and not expected.num_columns:
        e = Counter({(): expected.num_rows})
    extra, missing = g - e, e - g
    if not extra and not missing:
        return ""

    def show_rows(c: Counter) -> str:
        rows = list(c.elements())[:show]
        pretty = [tuple(float("nan") if v == _NAN else struct.unpack("<d", v[1])[0]
                        if isinstance(v, tuple) and v and v[0] == "f" else v for v in r)
                  for r in rows]
        return ", ".join(map(repr, pretty))

    out = [f"{got.num_rows} rows, DuckDB {expected.num_rows}"]
    if extra:
        out.append(f"{sum(extra.values())} rows only in Sift's result, e.g. {show_rows(extra)}")
    if missing:
        out.append(f"{sum(missing.values())} rows only in DuckDB's result, e.g. "
                   f"{show_rows(missing)}")
    return "; ".join(out)
