"""Differential test of `sift query` against DuckDB: the benchmark queries of
bench/queries.py, small enough for CI.

* TPC-H Q1, Q6, Q12, Q14, Q19 (the lineitem side) on lineitem SF 0.01;
* Q1, Q6, Q12 and Q14 on lineitem with 12.5 % nulls (seeded, independently per column) in
  l_shipdate, l_discount, l_quantity and l_extendedprice;
* the Parquet-Select micro-benchmark micro-fF-pP (F filters `c_i < 8`, the max of P columns
  c10..) on 50,000 rows of 20 int64 columns with values in 0..31 (seeded).

Every query runs as ``sift query NAME FILE --runs 1 --json`` on the .sift file and on the
.parquet file (the engine reads both), and its rows must equal DuckDB's result for the same
SQL over the Parquet file: integers exactly, floats to a relative 1e-9, rows ordered by
their group keys. The scan statistics must be consistent with the data: ``rows_scanned``
is at most the table's rows and ``rows_matched`` is the number of rows passing the WHERE
clause (as DuckDB counts them).

The SQL is bench/queries.py's (not imported: that module sets process-wide thread limits
as it loads); keep the two in step.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from difftools import DataFiles, compare_result_rows, run_sift, write_files


@dataclass(frozen=True)
class Query:
    name: str      # `sift query NAME`
    select: str    # select list
    where: str     # WHERE clause (rows_matched counts the rows passing it)
    tail: str      # group by / order by
    keys: int      # leading group-key columns

    def sql(self, table: str) -> str:
        return f"select {self.select} from {table} where {self.where}{self.tail}"


DP = "l_extendedprice*(1-l_discount)"
Q6_WHERE = ("l_shipdate >= date '1994-01-01' and l_shipdate < date '1995-01-01' "
            "and l_discount between 0.05 and 0.07 and l_quantity < 24")
Q19_TERM = ("(l_quantity between {lo} and {hi} and l_shipmode in ('AIR','AIR REG') "
            "and l_shipinstruct = 'DELIVER IN PERSON')")

TPCH = {
    q.name: q for q in [
        Query("q1",
              "l_returnflag, l_linestatus, sum(l_quantity), sum(l_extendedprice), "
              f"sum({DP}), sum({DP}*(1+l_tax)), avg(l_quantity), avg(l_extendedprice), "
              "avg(l_discount), count(*)",
              "l_shipdate <= date '1998-09-02'", " group by 1,2 order by 1,2", 2),
        Query("q6", "sum(l_extendedprice * l_discount) as revenue", Q6_WHERE, "", 0),
        Query("q12", "l_shipmode, count(*), sum(l_orderkey)",
              "l_shipmode in ('MAIL','SHIP') and l_commitdate < l_receiptdate "
              "and l_shipdate < l_commitdate and l_receiptdate >= date '1994-01-01' "
              "and l_receiptdate < date '1995-01-01'", " group by 1 order by 1", 1),
        Query("q14", f"count(*), sum(l_partkey), sum({DP})",
              "l_shipdate >= date '1995-09-01' and l_shipdate < date '1995-10-01'", "", 0),
        Query("q19", f"count(*), sum(l_partkey), sum({DP})",
              " or ".join(Q19_TERM.format(lo=lo, hi=hi)
                          for lo, hi in ((1, 11), (10, 20), (20, 30))), "", 0),
    ]
}


def micro_query(f: int, p: int) -> Query:
    proj = [f"c{10 + j}" for j in range(p)]
    return Query(f"micro-f{f}-p{p}", ", ".join(f"max({c})" for c in proj),
                 " and ".join(f"c{i} < 8" for i in range(f)), "", 0)


MICRO = [micro_query(1, 1), micro_query(2, 3), micro_query(5, 10)]

# lineitem_nulls: as bench/querydata.py (fraction, columns), with Python's generator.
NULLS_SEED = 20240605
NULLS_FRACTION = 0.125
NULLS_COLUMNS = ("l_shipdate", "l_discount", "l_quantity", "l_extendedprice")

MICRO_SEED = 20240606
MICRO_ROWS = 50_000
MICRO_COLUMNS = 20
MICRO_MAX = 31


def with_nulls(t: pa.Table) -> pa.Table:
    cols, fields = [], []
    for i, (f, col) in enumerate(zip(t.schema, t.columns)):
        if f.name in NULLS_COLUMNS:
            rng = random.Random(NULLS_SEED + i)
            mask = pa.array([rng.random() < NULLS_FRACTION for _ in range(len(col))])
            col = pc.if_else(mask, pa.scalar(None, f.type), col.combine_chunks())
            f = f.with_nullable(True)
        cols.append(col)
        fields.append(f)
    return pa.Table.from_arrays(cols, schema=pa.schema(fields)).combine_chunks()


def micro_table() -> pa.Table:
    rng = random.Random(MICRO_SEED)
    cols = {f"c{i}": pa.array([rng.randrange(MICRO_MAX + 1) for _ in range(MICRO_ROWS)],
                              pa.int64())
            for i in range(MICRO_COLUMNS)}
    schema = pa.schema([pa.field(n, pa.int64(), nullable=False) for n in cols])
    return pa.Table.from_pydict(cols, schema=schema)


@pytest.fixture(scope="module")
def lineitem_nulls(lineitem_table, sift_bin, tmp_path_factory) -> DataFiles:
    t = with_nulls(lineitem_table)
    for name in NULLS_COLUMNS:
        assert 0.10 < t[name].null_count / t.num_rows < 0.15
    return write_files(sift_bin, t, tmp_path_factory.mktemp("lineitem_nulls"),
                       "lineitem_nulls", 20_000, 7_000)


@pytest.fixture(scope="module")
def micro(sift_bin, tmp_path_factory) -> DataFiles:
    return write_files(sift_bin, micro_table(), tmp_path_factory.mktemp("micro"), "micro",
                       16_384, 8_192)


def sift_query(sift_bin: Path, name: str, path: Path) -> dict:
    p = run_sift(sift_bin, "query", name, path, "--runs", "1", "--json")
    try:
        out = json.loads(p.stdout)
    except ValueError as e:
        pytest.fail(f"`sift query {name} {path.name} --json` printed no JSON object ({e}): "
                    f"{p.stdout[:300]!r}")
    assert isinstance(out, dict), out
    for key in ("columns", "rows", "stats"):
        assert key in out, f"`sift query --json` output lacks {key!r}: {sorted(out)}"
    return out


def check(q: Query, data: DataFiles, fmt: str, sift_bin: Path, duck) -> None:
    view = f"read_parquet('{data.parquet}')"
    expected = duck.execute(q.sql(view)).fetchall()
    matched = duck.execute(f"select count(*) from {view} where {q.where}").fetchone()[0]

    out = sift_query(sift_bin, q.name, data.file(fmt))
    rows = [tuple(r) for r in out["rows"]]
    assert all(len(r) == len(out["columns"]) for r in rows), (out["columns"], rows)
    diffs = compare_result_rows(expected, rows, q.keys)
    assert not diffs, (f"`sift query {q.name}` on {data.file(fmt).name} differs from DuckDB "
                       f"({q.sql('t')}):\n" + "\n".join(diffs))

    stats = out["stats"]
    assert stats.get("rows_matched") == matched, (
        f"stats.rows_matched {stats.get('rows_matched')}, DuckDB counts {matched} rows "
        f"where {q.where}: {stats}")
    assert matched <= stats.get("rows_scanned", -1) <= data.table.num_rows, stats


FORMATS = ["sift", "parquet"]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("name", list(TPCH))
def test_tpch(name: str, fmt: str, lineitem, sift_bin, duck) -> None:
    check(TPCH[name], lineitem, fmt, sift_bin, duck)


# Sums and averages skip rows whose operands are null (a q14 regression: null slots were
# summed); count(*) counts every row.
@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("name", ["q1", "q6", "q12", "q14"])
def test_tpch_nulls(name: str, fmt: str, lineitem_nulls, sift_bin, duck) -> None:
    check(TPCH[name], lineitem_nulls, fmt, sift_bin, duck)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("q", MICRO, ids=[q.name for q in MICRO])
def test_micro(q: Query, fmt: str, micro, sift_bin, duck) -> None:
    check(q, micro, fmt, sift_bin, duck)


def test_files_have_several_blocks(lineitem, lineitem_nulls, micro, sift_bin) -> None:
    """The point of the small block size: every table spans several blocks."""
    for data in (lineitem, lineitem_nulls, micro):
        info = json.loads(run_sift(sift_bin, "inspect", data.sift, "--json").stdout)
        assert info["num_rows"] == data.table.num_rows
        assert info["num_blocks"] >= 4, (data.sift.name, info["num_blocks"])
