"""Differential test of `sift sql` (SQL through Apache DataFusion) against DuckDB: the 22
TPC-H queries of bench/tpch/ on all eight TPC-H tables at SF 0.01.

* Data: tpchgen-cli's Parquet files as generated, types unchanged (decimal(15,2) money,
  date32 dates, string_view strings), each converted to Sift with small blocks so that every
  table spans several blocks.
* Every query runs as
  ``sift sql --table lineitem=PATH ... --table region=PATH -o csv -- QUERY``
  (QUERY is the file's text unchanged; it starts with a ``--`` comment, hence the ``--``
  before it) once over the .sift files and once over the .parquet files. Its output, CSV with
  a header row, must equal DuckDB's result for the same text over the Parquet files: the same
  numbers of rows and columns, the same name for every column DuckDB names by a plain
  identifier, numbers within a relative 1e-6 or an absolute 0.005 (DataFusion's decimal
  averages keep 6 places where DuckDB's are doubles; decimals may print as decimal text),
  integers exactly, dates as ISO text, strings exactly, NULL as an empty field.
* Order: the columns of the query's ORDER BY must come in DuckDB's order; rows that tie on
  all of them may come in any order (they are compared as multisets, run by run).
* The queries with joins run again with ``--join-filters off``; ``--explain`` of Q17 shows the
  keys of the selected parts pushed into both lineitem scans.
* ``sift sql --explain`` of Q6 shows the whole WHERE clause pushed into the Sift scan; bad
  SQL and a missing file fail with a message naming the culprit.
"""

from __future__ import annotations

import csv
import datetime
import decimal
import io
import json
import math
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from difftools import REPO, find_tool, run_sift, sql_str

QUERY_DIR = REPO / "bench" / "tpch"
QUERIES = list(range(1, 23))
TABLES = ("lineitem", "orders", "customer", "part", "partsupp", "supplier", "nation", "region")
SOURCES = ["sift", "parquet"]

TPCH_SCALE = "0.01"
SIFT_BLOCKS = 6        # each table is written as about this many Sift blocks (region: 5)

REL_TOL = 1e-6
ABS_TOL = 0.005


def query_text(q: int) -> str:
    return (QUERY_DIR / f"q{q:02d}.sql").read_text()


# --------------------------------------------------------------------------- data


@dataclass
class TpchFiles:
    """The eight TPC-H tables, as tpchgen-cli's Parquet files and as Sift files."""

    parquet: dict[str, Path]
    sift: dict[str, Path]

    def files(self, source: str) -> dict[str, Path]:
        return {"sift": self.sift, "parquet": self.parquet}[source]


@pytest.fixture(scope="session")
def tpch(sift_bin, tmp_path_factory) -> TpchFiles:
    directory = tmp_path_factory.mktemp("tpch_all")
    subprocess.run(
        [find_tool("tpchgen-cli"), "parquet", "-s", TPCH_SCALE, "-o", str(directory), "--quiet"],
        check=True, timeout=300,
    )
    parquet, sift = {}, {}
    for name in TABLES:
        parquet[name] = directory / f"{name}.parquet"
        assert parquet[name].is_file(), f"tpchgen-cli wrote no {parquet[name].name}"
        rows = pq.ParquetFile(parquet[name]).metadata.num_rows
        sift[name] = directory / f"{name}.sift"
        block_rows = max(1, -(-rows // SIFT_BLOCKS))
        run_sift(sift_bin, "convert", parquet[name], sift[name], "--block-rows", block_rows)
    return TpchFiles(parquet, sift)


@pytest.fixture(scope="session")
def tpch_duck(duck, tpch):
    """The `duck` connection with a view per TPC-H table over its Parquet file (the other
    tests' DuckDB tables are named t_*, so the names do not collide)."""
    for name, path in tpch.parquet.items():
        duck.execute(f"create or replace view {name} as "
                     f"select * from read_parquet({sql_str(path)})")
    return duck


# --------------------------------------------------------------------------- results


def sift_sql(sift_bin: Path, tables: dict[str, Path], sql: str,
             *options: str) -> subprocess.CompletedProcess:
    """`sift sql` with one --table per entry of `tables`; the query goes last, after `--`."""
    args: list[object] = ["sql"]
    for name, path in tables.items():
        args += ["--table", f"{name}={path}"]
    return run_sift(sift_bin, *args, *options, "--", sql, check=False)


def parse_csv(text: str) -> tuple[list[str], list[list[str]]]:
    """The header and the rows of `sift sql -o csv`'s output."""
    records = list(csv.reader(io.StringIO(text)))
    if not records:
        pytest.fail("`sift sql -o csv` printed nothing, not even a header row", pytrace=False)
    header, rows = records[0], records[1:]
    # A one-column row holding NULL may be written as an empty line, which csv reads as [].
    if len(header) == 1:
        rows = [r or [""] for r in rows]
    return header, rows


def same_cell(expected: object, got: str) -> bool:
    """One CSV field against DuckDB's value for it."""
    if expected is None:
        return got == ""
    if isinstance(expected, bool):
        return got.lower() == str(expected).lower()
    if isinstance(expected, int):                      # keys, counts, years: exactly
        try:
            return decimal.Decimal(got) == expected
        except decimal.InvalidOperation:
            return False
    if isinstance(expected, (float, decimal.Decimal)):  # sums, averages, ratios
        try:
            value = float(got)
        except ValueError:
            return False
        return math.isclose(float(expected), value, rel_tol=REL_TOL, abs_tol=ABS_TOL)
    if isinstance(expected, datetime.date):
        return got == expected.isoformat()
    return got == str(expected)


def same_row(expected: tuple, got: list[str]) -> bool:
    return len(expected) == len(got) and all(map(same_cell, expected, got))


def order_by_columns(sql: str, names: list[str]) -> list[int]:
    """The output columns the query's outer ORDER BY sorts by ([] without one). In TPC-H
    only the outer query has an ORDER BY, and it names output columns (or their aliases)."""
    sql = re.sub(r"--[^\n]*", "", sql)
    starts = [m.end() for m in re.finditer(r"\border\s+by\b", sql, re.I)]
    if not starts:
        return []
    clause = re.sub(r"\blimit\s+\d+\s*;?\s*$|;\s*$", "", sql[starts[-1]:].strip(), flags=re.I)
    columns = []
    for key in clause.split(","):
        name = re.sub(r"\s+(asc|desc)$", "", key.strip(), flags=re.I)
        if name not in names:
            pytest.fail(f"ORDER BY {name!r} is not an output column {names}", pytrace=False)
        columns.append(names.index(name))
    return columns


def compare(expected: list[tuple], got: list[list[str]], keys: list[int]) -> list[str]:
    """Differences between DuckDB's rows and sift's CSV rows (empty when they agree). The
    ORDER BY columns `keys` must agree row by row; then, within each run of rows that tie on
    them (the whole result when there is no ORDER BY), every DuckDB row must match a
    distinct sift row."""
    if len(got) != len(expected):
        return [f"{len(got)} rows, DuckDB {len(expected)}"]
    for i, (e, g) in enumerate(zip(expected, got)):
        if not all(same_cell(e[k], g[k]) for k in keys):
            return [f"row {i}: ORDER BY columns {[g[k] for k in keys]}, DuckDB "
                    f"{[e[k] for k in keys]} (row missing, wrong or out of order)"]
    out = []
    start = 0
    while start < len(expected):
        end = start + 1
        while end < len(expected) and all(expected[end][k] == expected[start][k] for k in keys):
            end += 1
        unmatched = got[start:end]
        for e in expected[start:end]:
            j = next((j for j, g in enumerate(unmatched) if same_row(e, g)), None)
            if j is None:
                where = f"row {start}" if end == start + 1 else f"rows {start}..{end - 1}"
                out.append(f"{where}: DuckDB has {e!r}, sift {unmatched!r}")
                break
            del unmatched[j]
        start = end
    return out


# --------------------------------------------------------------------------- tests


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("q", QUERIES, ids=[f"q{q:02d}" for q in QUERIES])
def test_tpch_query(q: int, source: str, tpch, tpch_duck, sift_bin) -> None:
    check_query(q, source, tpch, tpch_duck, sift_bin)


# The queries with joins whose build side is filtered, where join filters apply.
JOIN_QUERIES = [2, 3, 5, 8, 9, 10, 17, 18, 20, 21]


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("q", JOIN_QUERIES, ids=[f"q{q:02d}" for q in JOIN_QUERIES])
def test_tpch_query_without_join_filters(q: int, source: str, tpch, tpch_duck,
                                         sift_bin) -> None:
    check_query(q, source, tpch, tpch_duck, sift_bin, "--join-filters", "off")


def test_q17_sends_the_part_keys_into_both_lineitem_scans(tpch, sift_bin) -> None:
    """Q17's parts of one brand and container filter the lineitem scan of the join and the
    one under the correlated subquery's aggregate; with --join-filters off, neither."""
    tables = {t: tpch.sift[t] for t in ("lineitem", "part")}
    for setting, expected in (("on", 2), ("off", 0)):
        p = sift_sql(sift_bin, tables, query_text(17), "--explain", "--join-filters", setting)
        assert p.returncode == 0, p.stderr
        scans = [line for line in p.stdout.splitlines()
                 if "SiftScan" in line and "lineitem" in line]
        assert len(scans) == 2, p.stdout
        with_keys = [line for line in scans if "join_filters=[l_partkey in keys of" in line]
        assert len(with_keys) == expected, f"--join-filters {setting}:\n{p.stdout}"


def test_join_filters_setting_must_be_on_or_off(tpch, sift_bin) -> None:
    p = sift_sql(sift_bin, {"part": tpch.sift["part"]}, "select count(*) from part",
                 "--join-filters", "maybe")
    assert p.returncode != 0, p.stdout
    assert "'maybe' is not on or off" in p.stderr, p.stderr


def check_query(q: int, source: str, tpch, tpch_duck, sift_bin, *options: str) -> None:
    """`sift sql` of query `q` over the `source` files gives DuckDB's result."""
    sql = query_text(q)
    cur = tpch_duck.execute(sql)
    names = [d[0] for d in cur.description]
    expected = cur.fetchall()

    p = sift_sql(sift_bin, tpch.files(source), sql, "-o", "csv", *options)
    if p.returncode != 0:
        pytest.fail(f"`sift sql` of q{q:02d} over the .{source} files exited {p.returncode}:\n"
                    f"{p.stderr.strip()}", pytrace=False)
    header, rows = parse_csv(p.stdout)

    assert len(header) == len(names), f"columns {header}, DuckDB {names}"
    bad = [i for i, r in enumerate(rows) if len(r) != len(names)]
    assert not bad, f"row {bad[0]} has {len(rows[bad[0]])} fields, expected {len(names)}"
    # DataFusion names an unaliased expression differently (`sum(lineitem.l_quantity)`);
    # columns and aliases must keep their names.
    for i, (h, n) in enumerate(zip(header, names)):
        if re.fullmatch(r"[a-z_][a-z0-9_]*", n):
            assert h == n, f"column {i} is named {h!r}, DuckDB {n!r}: {header}"

    diffs = compare(expected, rows, order_by_columns(sql, names))
    assert not diffs, (f"`sift sql` of q{q:02d} over the .{source} files differs from DuckDB:\n"
                       + "\n".join(diffs))


def test_explain_pushes_the_q6_filter_into_the_scan(tpch, sift_bin) -> None:
    """Q6's WHERE clause is all comparisons of lineitem columns with literals: the Sift scan
    evaluates all of it exactly, so the plan has no FilterExec above the scan."""
    p = sift_sql(sift_bin, {"lineitem": tpch.sift["lineitem"]}, query_text(6), "--explain")
    assert p.returncode == 0, f"`sift sql --explain` exited {p.returncode}:\n{p.stderr.strip()}"
    plan = p.stdout
    scans = [line for line in plan.splitlines() if "SiftScan" in line]
    assert scans, f"no SiftScan in the plan:\n{plan}"
    assert any("l_shipdate" in line for line in scans), f"no l_shipdate in the scan:\n{plan}"
    assert "FilterExec" not in plan, f"a FilterExec is left above the scan:\n{plan}"


def test_unknown_column_fails(tpch, sift_bin) -> None:
    p = sift_sql(sift_bin, {"lineitem": tpch.sift["lineitem"]}, "select nosuchcol from lineitem",
                 "-o", "csv")
    assert p.returncode != 0, f"bad SQL exited 0; stdout {p.stdout[:300]!r}"
    assert "nosuchcol" in p.stderr, p.stderr
    assert "panicked" not in p.stderr, p.stderr


def test_missing_file_fails(sift_bin) -> None:
    missing = "/nonexistent.sift"
    p = sift_sql(sift_bin, {"t": Path(missing)}, "select * from t", "-o", "csv")
    assert p.returncode != 0, f"a missing file exited 0; stdout {p.stdout[:300]!r}"
    assert missing in p.stderr, p.stderr
    assert "panicked" not in p.stderr, p.stderr


def test_query_files() -> None:
    """bench/tpch holds exactly q01.sql .. q22.sql, one statement each."""
    assert sorted(p.name for p in QUERY_DIR.glob("q*.sql")) == [f"q{q:02d}.sql" for q in QUERIES]
    for q in QUERIES:
        body = re.sub(r"--[^\n]*", "", query_text(q)).strip().rstrip(";")
        assert ";" not in body, f"q{q:02d}.sql holds more than one statement"


def test_tables_have_several_blocks(tpch, sift_bin) -> None:
    """The point of the small blocks: every Sift table spans several of them."""
    for name in TABLES:
        info = json.loads(run_sift(sift_bin, "inspect", tpch.sift[name], "--json").stdout)
        assert info["num_rows"] == pq.ParquetFile(tpch.parquet[name]).metadata.num_rows, name
        assert info["num_blocks"] >= 4, (name, info["num_blocks"])
