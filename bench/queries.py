#!/usr/bin/env python3
"""End-to-end query benchmark of the scan engine: TPC-H Q1/Q6/Q12/Q14/Q19 on lineitem
(Q12/Q14/Q19: the lineitem side only), Q6 on lineitem with nulls, and the Parquet-Select
paper's filter/projection micro-benchmark, each on one core, on every engine/format:

  Sift (`sift query`), the Sift engine on the Parquet file, DuckDB on its native file,
  DuckDB on the Parquet file, pyarrow on the Parquet file, Vortex.

DuckDB native's result is the reference every other engine's result must equal (floats to a
relative 1e-9, rows ordered by their group keys).  Times are reported as ratios against Sift.

Every engine is timed the same way, in-process, like `sift query`: the file is opened (and
DuckDB's SQL prepared) once per query, untimed, then the query runs on it.  Reported: the
first run (the first run of the query in a fresh process, page cache warm: `sift query`'s
first run; for the Python engines a fresh `python queries.py first-run` process) and the
best and median of --runs runs that follow a first run in the same process.

Run through bench/queries.sh (venv, release build of sift, `taskset -c 0`).  Direct use:
    taskset -c 0 python bench/queries.py --scale 0.01 --sift target/release/sift
Results: bench/results/queries-sf{SF}.{md,json}.  Exit status 1 when any engine's result
differs from DuckDB's or an engine failed (an absent Sift binary or `sift query` is reported
as unavailable, not as a failure).
"""

from __future__ import annotations

import os

# Single-threaded everything, set before numpy/pyarrow/duckdb load (inherited by `sift`).
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
             "NUMEXPR_NUM_THREADS", "ARROW_IO_THREADS", "RAYON_NUM_THREADS",
             "TOKIO_WORKER_THREADS", "POLARS_MAX_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import datetime  # noqa: E402
import decimal  # noqa: E402
import gc  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import re  # noqa: E402
import shutil  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any, Callable  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness  # noqa: E402  (sets pyarrow to one CPU / one IO thread)
import querydata  # noqa: E402
from formats import SiftFormat  # noqa: E402

import pyarrow as pa  # noqa: E402
import pyarrow.acero  # noqa: E402,F401  (Table.group_by imports it on first use)
import pyarrow.compute as pc  # noqa: E402
import pyarrow.dataset  # noqa: E402,F401
import pyarrow.parquet as pq  # noqa: E402

BENCH_DIR = harness.BENCH_DIR
REPO_DIR = harness.REPO_DIR
log = harness.log
D = datetime.date
REL_TOL = 1e-9

# --------------------------------------------------------------------------- expressions


class PyArrowDialect:
    """Filter building blocks as pyarrow dataset expressions (pushed into pq.read_table)."""
    col = staticmethod(pc.field)

    @staticmethod
    def between(x, lo, hi):
        return (x >= lo) & (x <= hi)

    @staticmethod
    def isin(x, values):
        return x.isin(values)


class VortexDialect:
    """The same as Vortex expressions (pushed into the Vortex scan).  Vortex compares only
    equal types, so float columns need float literals: every filter below writes them so."""

    @staticmethod
    def col(name):
        import vortex.expr as ve
        return ve.column(name)

    @staticmethod
    def between(x, lo, hi):
        import vortex.expr as ve
        return ve.between(x, lo, hi)

    @staticmethod
    def isin(x, values):
        import vortex.expr as ve
        return ve.in_list(x, values)


# --------------------------------------------------------------------------- queries


@dataclass
class Query:
    """One query: its SQL (DuckDB), the name `sift query` knows it by, and the hand-written
    plan pyarrow and Vortex run: read `columns` of the rows passing `filter`, then
    `aggregate` the (small) filtered table with pyarrow.compute."""

    name: str                 # report / --queries name
    table: str                # lineitem | lineitem_nulls | micro
    sql: str                  # `{table}` stands for the table (or the Parquet view)
    sift_name: str            # NAME of `sift query NAME FILE`
    keys: int                 # leading group-key columns (rows sorted by them to compare)
    columns: list[str]        # columns the aggregate reads
    filter: Callable          # dialect -> filter expression
    aggregate: Callable[[pa.Table], list[tuple]]
    group: str                # tpch | nulls | micro (report section)
    f: int = 0                # micro: number of filters
    p: int = 0                # micro: number of projected columns


def _sum(a) -> Any:
    return pc.sum(a).as_py()


def _disc_price(t: pa.Table):
    return pc.multiply(t["l_extendedprice"], pc.subtract(1.0, t["l_discount"]))


def _sorted_rows(t: pa.Table, nkeys: int, cols: list[str]) -> list[tuple]:
    # Sorted in Python: the result is a handful of groups, and Arrow cannot sort the
    # string_view keys Vortex returns.
    return sorted(zip(*(t[c].to_pylist() for c in cols)), key=lambda r: r[:nkeys])


def q6_filter(d):
    c = d.col
    return ((c("l_shipdate") >= D(1994, 1, 1)) & (c("l_shipdate") < D(1995, 1, 1))
            & d.between(c("l_discount"), 0.05, 0.07) & (c("l_quantity") < 24.0))


def q6_agg(t):
    return [(_sum(pc.multiply(t["l_extendedprice"], t["l_discount"])),)]


def q1_filter(d):
    return d.col("l_shipdate") <= D(1998, 9, 2)


def q1_agg(t):
    dp = _disc_price(t)
    g = pa.table({"rf": t["l_returnflag"], "ls": t["l_linestatus"], "qty": t["l_quantity"],
                  "ep": t["l_extendedprice"], "dp": dp,
                  "ch": pc.multiply(dp, pc.add(1.0, t["l_tax"])), "disc": t["l_discount"]})
    g = g.group_by(["rf", "ls"], use_threads=False).aggregate(
        [("qty", "sum"), ("ep", "sum"), ("dp", "sum"), ("ch", "sum"), ("qty", "mean"),
         ("ep", "mean"), ("disc", "mean"), ([], "count_all")])
    return _sorted_rows(g, 2, ["rf", "ls", "qty_sum", "ep_sum", "dp_sum", "ch_sum",
                               "qty_mean", "ep_mean", "disc_mean", "count_all"])


def q12_filter(d):
    c = d.col
    return (d.isin(c("l_shipmode"), ["MAIL", "SHIP"])
            & (c("l_commitdate") < c("l_receiptdate")) & (c("l_shipdate") < c("l_commitdate"))
            & (c("l_receiptdate") >= D(1994, 1, 1)) & (c("l_receiptdate") < D(1995, 1, 1)))


def q12_agg(t):
    g = t.group_by(["l_shipmode"], use_threads=False).aggregate(
        [([], "count_all"), ("l_orderkey", "sum")])
    return _sorted_rows(g, 1, ["l_shipmode", "count_all", "l_orderkey_sum"])


def q14_filter(d):
    return (d.col("l_shipdate") >= D(1995, 9, 1)) & (d.col("l_shipdate") < D(1995, 10, 1))


def count_partkey_revenue(t):
    """count(*), sum(l_partkey), sum(l_extendedprice*(1-l_discount)) (Q14, Q19)."""
    return [(t.num_rows, _sum(t["l_partkey"]), _sum(_disc_price(t)))]


def q19_filter(d):
    # The conjuncts common to Q19's three disjuncts are factored out (as DuckDB's optimizer
    # does); the three quantity ranges stay as written.
    c = d.col
    q = c("l_quantity")
    return (d.isin(c("l_shipmode"), ["AIR", "AIR REG"])
            & (c("l_shipinstruct") == "DELIVER IN PERSON")
            & (d.between(q, 1.0, 11.0) | d.between(q, 10.0, 20.0) | d.between(q, 20.0, 30.0)))


Q6_SQL = ("select sum(l_extendedprice * l_discount) as revenue from {table} "
          "where l_shipdate >= date '1994-01-01' and l_shipdate < date '1995-01-01' "
          "and l_discount between 0.05 and 0.07 and l_quantity < 24")
DP = "l_extendedprice*(1-l_discount)"
Q19_TERM = ("(l_quantity between {lo} and {hi} and l_shipmode in ('AIR','AIR REG') "
            "and l_shipinstruct = 'DELIVER IN PERSON')")


def tpch_queries() -> list[Query]:
    q14_cols = ["l_partkey", "l_extendedprice", "l_discount"]
    return [
        Query("q1", "lineitem",
              "select l_returnflag, l_linestatus, sum(l_quantity), sum(l_extendedprice), "
              f"sum({DP}), sum({DP}*(1+l_tax)), avg(l_quantity), avg(l_extendedprice), "
              "avg(l_discount), count(*) from {table} "
              "where l_shipdate <= date '1998-09-02' group by 1,2 order by 1,2",
              "q1", 2, ["l_returnflag", "l_linestatus", "l_quantity", "l_extendedprice",
                        "l_discount", "l_tax"], q1_filter, q1_agg, "tpch"),
        Query("q6", "lineitem", Q6_SQL, "q6", 0, ["l_extendedprice", "l_discount"],
              q6_filter, q6_agg, "tpch"),
        Query("q12", "lineitem",
              "select l_shipmode, count(*), sum(l_orderkey) from {table} "
              "where l_shipmode in ('MAIL','SHIP') and l_commitdate < l_receiptdate "
              "and l_shipdate < l_commitdate and l_receiptdate >= date '1994-01-01' "
              "and l_receiptdate < date '1995-01-01' group by 1 order by 1",
              "q12", 1, ["l_shipmode", "l_orderkey"], q12_filter, q12_agg, "tpch"),
        Query("q14", "lineitem",
              f"select count(*), sum(l_partkey), sum({DP}) from {{table}} "
              "where l_shipdate >= date '1995-09-01' and l_shipdate < date '1995-10-01'",
              "q14", 0, q14_cols, q14_filter, count_partkey_revenue, "tpch"),
        Query("q19", "lineitem",
              f"select count(*), sum(l_partkey), sum({DP}) from {{table}} where "
              + " or ".join(Q19_TERM.format(lo=lo, hi=hi)
                            for lo, hi in ((1, 11), (10, 20), (20, 30))),
              "q19", 0, q14_cols, q19_filter, count_partkey_revenue, "tpch"),
        Query("q6-nulls", "lineitem_nulls", Q6_SQL, "q6", 0,
              ["l_extendedprice", "l_discount"], q6_filter, q6_agg, "nulls"),
    ]


# The paper's grid: vary filters 1-5 at 3 projections, vary projections 1-10 at 2 filters.
MICRO_F = (1, 2, 3, 4, 5)
MICRO_P = tuple(range(1, 11))
MICRO_F_AT_P, MICRO_P_AT_F = 3, 2


def micro_query(f: int, p: int) -> Query:
    proj = [f"c{10 + j}" for j in range(p)]

    def filt(d, f=f):
        e = d.col("c0") < 8
        for i in range(1, f):
            e = e & (d.col(f"c{i}") < 8)
        return e

    def agg(t, proj=proj):
        return [tuple(pc.max(t[c]).as_py() for c in proj)]

    sql = ("select " + ", ".join(f"max({c})" for c in proj) + " from {table} where "
           + " and ".join(f"c{i} < 8" for i in range(f)))
    name = f"micro-f{f}-p{p}"
    return Query(name, "micro", sql, name, 0, proj, filt, agg, "micro", f, p)


def micro_queries() -> list[Query]:
    pairs = [(f, MICRO_F_AT_P) for f in MICRO_F]
    pairs += [(MICRO_P_AT_F, p) for p in MICRO_P if (MICRO_P_AT_F, p) not in pairs]
    return [micro_query(f, p) for f, p in pairs]


def all_queries() -> list[Query]:
    return tpch_queries() + micro_queries()


# --------------------------------------------------------------------------- engines


class EngineUnavailable(Exception):
    pass


def timed(fn: Callable[[], list[tuple]], runs: int) -> dict:
    """This process's first run, untimed (its result is the one checked), then `runs` timed
    runs."""
    rows = fn()
    times = []
    for _ in range(runs):
        gc.collect()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return {"rows": rows, "times_ms": [t * 1e3 for t in times],
            "best_ms": min(times) * 1e3, "median_ms": statistics.median(times) * 1e3}


def first_run(engine: "Engine", q: Query) -> tuple[float, list[tuple]]:
    """(ms, rows) of the query's first run in a fresh Python process, which opens the file
    and prepares the query untimed and then times one run, as `sift query` does."""
    harness.warm_page_cache(engine.file(q))
    cmd = [sys.executable, str(Path(__file__).resolve()), "first-run", engine.key, q.name,
           str(engine.file(q))]
    out = harness.run_fresh(cmd, "import them at the top of queries.py")
    return float(out["ms"]), [tuple(r) for r in out["rows"]]


def first_run_main(argv: list[str]) -> int:
    """`first-run ENGINE QUERY FILE`: open FILE with ENGINE (untimed), run QUERY once, print
    {"ms": float, "rows": [...]}."""
    ap = argparse.ArgumentParser(prog="queries.py first-run")
    ap.add_argument("engine", choices=[k for k in ENGINE_KEYS if not k.startswith("sift")])
    ap.add_argument("query")
    ap.add_argument("file", type=Path)
    args = ap.parse_args(argv)
    q = next((q for q in all_queries() if q.name == args.query), None)
    if q is None:
        ap.error(f"unknown query {args.query}")
    cls = {c.key: c for c in (DuckDBNative, DuckDBParquet, PyArrowParquet, VortexEngine)}
    engine_cls = cls[args.engine]
    tables = {q.table: querydata.TableFiles(q.table, 0, args.file,
                                            files={engine_cls.fmt: args.file})}
    engine = engine_cls(tables)
    try:
        run = engine.runner(q)
        before = set(sys.modules)
        t0 = time.perf_counter()
        rows = run()
        ms = (time.perf_counter() - t0) * 1e3
    finally:
        engine.close()
    print(json.dumps({"ms": ms, "rows": [list(map(_norm, r)) for r in rows],
                      "imported": sorted(set(sys.modules) - before)}))
    return 0


class Engine:
    key = "?"
    name = "?"
    fmt = "?"      # format key of the file it reads
    note = ""

    def __init__(self, tables: dict[str, querydata.TableFiles]):
        self.tables = tables

    def file(self, q: Query) -> Path:
        tf = self.tables[q.table]
        if self.fmt not in tf.files:
            raise EngineUnavailable(tf.errors.get(self.fmt, f"no {self.fmt} file"))
        return tf.files[self.fmt]

    def measure(self, q: Query, runs: int) -> dict:
        first_ms, first_rows = first_run(self, q)
        try:
            res = timed(self.runner(q), runs)
        finally:
            self.close()
        return dict(res, first_ms=first_ms, first_rows=first_rows)

    def runner(self, q: Query) -> Callable[[], list[tuple]]:
        """Open the file (and prepare the query) for `q`, untimed; the returned function is
        one timed run."""
        raise NotImplementedError

    def close(self) -> None:
        pass


class DuckDBNative(Engine):
    key, name, fmt = "duckdb", "DuckDB native", "duckdb"
    note = ("DuckDB native = a read-only connection to the .duckdb file (`threads=1`) opened "
            "for each query, the query prepared once (`PREPARE`, untimed), each run "
            "`con.sql('EXECUTE …').fetchall()` (planning excluded, as `sift query` has none).")

    def __init__(self, tables):
        super().__init__(tables)
        self.cons: list[Any] = []

    def connect(self, q: Query):
        import duckdb
        return duckdb.connect(str(self.file(q)), read_only=True, config={"threads": 1})

    def runner(self, q):
        con = self.connect(q)
        self.cons.append(con)
        name = "q_" + re.sub(r"\W", "_", q.name)
        con.execute(f"PREPARE {name} AS {q.sql.format(table=q.table)}")
        return lambda: con.sql(f"EXECUTE {name}").fetchall()

    def close(self):
        for c in self.cons:
            c.close()
        self.cons.clear()


class DuckDBParquet(DuckDBNative):
    key, name, fmt = "duckdb-parquet", "DuckDB on Parquet", "parquet-zstd"
    note = ("DuckDB on Parquet = the same prepared SQL over a view `select * from "
            "read_parquet(file)` of the Parquet zstd file, in-memory connection with "
            "`threads=1`, opened for each query.")

    def connect(self, q):
        import duckdb
        con = duckdb.connect(config={"threads": 1})
        path = str(self.file(q)).replace("'", "''")
        con.execute(f"create view {q.table} as select * from read_parquet('{path}')")
        return con


class PyArrowParquet(Engine):
    key, name, fmt = "pyarrow", "pyarrow on Parquet", "parquet-zstd"
    note = ("pyarrow = `pyarrow.dataset.dataset(file)` opened for each query with its "
            "footer read (`ensure_complete_metadata`), each run `to_table(columns=..., "
            "filter=<expression>, use_threads=False)` (row-group pruning by statistics + row "
            "filter inside the reader, as `pq.read_table(filters=...)` does), then "
            "pyarrow.compute / `Table.group_by(use_threads=False)` for the aggregate.")

    def runner(self, q):
        import pyarrow.dataset as pads
        cols, filt = q.columns, q.filter(PyArrowDialect)
        dataset = pads.dataset(str(self.file(q)), format="parquet")
        for fragment in dataset.get_fragments():
            fragment.ensure_complete_metadata()

        def run():
            return q.aggregate(dataset.to_table(columns=cols, filter=filt, use_threads=False))
        return run


class VortexEngine(Engine):
    key, name, fmt = "vortex", "Vortex", "vortex"
    note = ("Vortex = `vortex.open(file, memory_map=True)` for each query, then per run "
            "`f.to_arrow(columns, expr=<filter>).read_all()` with the whole filter pushed "
            "into the scan (Vortex's expression API expresses every filter here, Q12's "
            "column-to-column comparisons included), then the same pyarrow.compute "
            "aggregate as the pyarrow row; strings stay string_view; "
            "`vortex.set_worker_threads(0)`.")

    def runner(self, q):
        import vortex
        vortex.set_worker_threads(0)
        f = vortex.open(str(self.file(q)), memory_map=True)
        cols, filt = q.columns, q.filter(VortexDialect)

        def run():
            return q.aggregate(f.to_arrow(cols, expr=filt).read_all())
        return run


class SiftEngine(Engine):
    key, name, fmt = "sift", "Sift", "sift"
    note = ("Sift = `sift query NAME FILE --runs N+1 --json` in a fresh process: the file "
            "opened once, untimed, then N+1 runs timed by sift itself; run 1 (which also "
            "verifies the segment checksums) is the first run, runs 2…N+1 give best and "
            "median.  Stats are those of that invocation.")

    def __init__(self, tables, sift_bin: Path | None, unavailable: str):
        super().__init__(tables)
        self.bin = sift_bin
        self.unavailable = unavailable

    def invoke(self, q: Query, runs: int) -> dict:
        args = [str(self.bin), "query", q.sift_name, str(self.file(q)), "--runs", str(runs),
                "--json"]
        p = subprocess.run(args, capture_output=True, text=True, timeout=1800)
        if p.returncode != 0:
            tail = " | ".join((p.stderr or "").strip().splitlines()[-3:])
            raise RuntimeError(f"`sift query {q.sift_name} {self.file(q).name}` exited "
                               f"{p.returncode}: {tail}")
        try:
            return json.loads(p.stdout)
        except ValueError as e:
            raise RuntimeError(f"`sift query` printed no JSON object ({e}): "
                               f"{p.stdout[:200]!r}") from None

    def measure(self, q, runs):
        if self.unavailable:
            raise EngineUnavailable(self.unavailable)
        harness.warm_page_cache(self.file(q))
        out = self.invoke(q, runs + 1)
        missing = [k for k in ("runs_ms", "first_ms", "rows") if k not in out]
        if missing:
            raise RuntimeError(f"`sift query --json` output lacks {', '.join(missing)}")
        if len(out["runs_ms"]) != runs + 1:
            raise RuntimeError(f"`sift query --runs {runs + 1}` reported "
                               f"{len(out['runs_ms'])} runs")
        times = [float(t) for t in out["runs_ms"][1:]]
        return {"rows": [tuple(r) for r in out["rows"]], "times_ms": times,
                "best_ms": min(times), "median_ms": statistics.median(times),
                "first_ms": float(out["first_ms"]), "columns": out.get("columns"),
                "stats": out.get("stats")}


class SiftOnParquet(SiftEngine):
    key, name, fmt = "sift-parquet", "Sift engine on Parquet", "parquet-zstd"
    note = ("Sift engine on Parquet = the same `sift query` on the Parquet zstd file the "
            "DuckDB-on-Parquet and pyarrow rows read.")


ENGINE_KEYS = ("sift", "sift-parquet", "duckdb", "duckdb-parquet", "pyarrow", "vortex")


# --------------------------------------------------------------------------- correctness


def _norm(v):
    if isinstance(v, (datetime.date, datetime.datetime)):
        return v.isoformat()
    if isinstance(v, decimal.Decimal):
        return float(v)
    return v


def _same(a, b) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, bool) or isinstance(b, bool) or isinstance(a, str) or isinstance(b, str):
        return a == b
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=0.0)
    return a == b


def _sort_key(keys: int):
    # None sorts first, values of mixed type by their text: only the order matters here.
    return lambda r: tuple((v is not None, str(v)) for v in r[:keys])


def compare_rows(ref: list[tuple], got: list[tuple], keys: int) -> str:
    """'yes' or 'NO: reason'.  Rows are sorted by their `keys` leading columns first."""
    ref = sorted([tuple(map(_norm, r)) for r in ref], key=_sort_key(keys))
    got = sorted([tuple(map(_norm, r)) for r in got], key=_sort_key(keys))
    if len(got) != len(ref):
        return f"NO: {len(got)} rows, expected {len(ref)}"
    for i, (r, g) in enumerate(zip(ref, got)):
        if len(g) != len(r):
            return f"NO: row {i} has {len(g)} columns, expected {len(r)}"
        for j, (a, b) in enumerate(zip(r, g)):
            if not _same(a, b):
                return f"NO: row {i} column {j + 1}: {b!r}, expected {a!r}"
    return "yes"


# --------------------------------------------------------------------------- driver


def sift_query_support(sift_bin: Path) -> str:
    """'' when `sift query` exists, else why not."""
    try:
        p = subprocess.run([str(sift_bin), "query", "--help"], capture_output=True,
                           text=True, timeout=30)
    except OSError as e:
        return f"cannot run {sift_bin}: {e}"
    if p.returncode != 0:
        return "the sift binary has no `query` subcommand yet"
    return ""


def resolve_sift(args, tmpdir: Path) -> tuple[Path | None, dict | None, str]:
    """(private copy of the sift binary or None, its origin, reason it is unavailable)."""
    target = Path(os.environ.get("CARGO_TARGET_DIR") or REPO_DIR / "target")
    if not target.is_absolute():
        target = REPO_DIR / target
    return harness.sift_binary(args.sift, target / "release" / "sift",
                               args.sift_missing_reason, tmpdir)


def prepare_tables(queries: list[Query], args, sift_bin, sift_mtime, sift_reason,
                   want_sift_files: bool) -> dict[str, querydata.TableFiles]:
    needed = {q.table for q in queries}
    keys = querydata.FORMAT_KEYS if want_sift_files else \
        tuple(k for k in querydata.FORMAT_KEYS if k != "sift")
    tables: dict[str, querydata.TableFiles] = {}
    if needed & {"lineitem", "lineitem_nulls"}:
        ds, tf = querydata.prepare_lineitem(args.scale, args.data_dir)
        querydata.ensure_files(tf, ds.workdir, lambda: ds.ref, sift_bin, sift_mtime,
                               sift_reason, keys)
        tables["lineitem"] = tf
        if "lineitem_nulls" in needed:
            nf = querydata.prepare_lineitem_nulls(args.scale, args.data_dir, lambda: ds.ref)
            querydata.ensure_files(nf, ds.workdir,
                                   lambda: pq.read_table(nf.input_parquet, use_threads=False),
                                   sift_bin, sift_mtime, sift_reason, keys)
            tables["lineitem_nulls"] = nf
        del ds
    if "micro" in needed:
        mf, work = querydata.prepare_micro(args.micro_rows, args.data_dir)
        querydata.ensure_files(mf, work,
                               lambda: pq.read_table(mf.input_parquet, use_threads=False),
                               sift_bin, sift_mtime, sift_reason, keys)
        tables["micro"] = mf
    if not want_sift_files:
        for tf in tables.values():
            tf.errors.setdefault("sift", sift_reason)
    gc.collect()
    return tables


def run(queries: list[Query], engines: list[Engine], reference: DuckDBNative, args,
        load: list[float]) -> dict:
    """results[query][engine key] = {best_ms, median_ms, rows, correct, ...} or {error}."""
    results: dict[str, dict] = {}
    for q in queries:
        res: dict[str, dict] = {}
        results[q.name] = res
        ref_rows = None
        for e in engines:
            log(f"{q.name}: {e.name} ...")
            try:
                r = e.measure(q, args.runs)
            except EngineUnavailable as ex:
                r = {"unavailable": str(ex)}
            except Exception as ex:
                log(traceback.format_exc())
                r = {"error": f"{type(ex).__name__}: {ex}"}
            if e is reference and "rows" in r:
                ref_rows = r["rows"]
            res[e.key] = r
            load.append(os.getloadavg()[0])
        ref_error = res.get(reference.key, {}).get("error", "")
        if ref_rows is None and reference.key not in res:
            try:                                # DuckDB not benchmarked: reference only
                ref_rows = reference.runner(q)()
            except Exception as ex:
                log(traceback.format_exc())
                ref_error = f"{type(ex).__name__}: {ex}"
        for key, r in res.items():
            if "rows" not in r:
                continue
            r["correct"] = (f"NO: no DuckDB reference ({ref_error})" if ref_rows is None
                            else compare_rows(ref_rows, r["rows"], q.keys))
            first_rows = r.pop("first_rows", None)
            if ref_rows is not None and first_rows is not None and r["correct"] == "yes":
                first = compare_rows(ref_rows, first_rows, q.keys)
                if first != "yes":
                    r["correct"] = f"NO: first run (fresh process): {first[4:]}"
        res["_reference"] = {"rows": ref_rows}
        for key, r in res.items():
            if key.startswith("_"):
                continue
            msg = (r.get("unavailable") and f"unavailable ({r['unavailable']})"
                   or r.get("error") or f"first {r['first_ms']:.2f} ms, best "
                                        f"{r['best_ms']:.2f} ms, median "
                                        f"{r['median_ms']:.2f} ms, correct: {r['correct']}")
            log(f"{q.name}: {key}: {msg}")
    return results


# --------------------------------------------------------------------------- report


def fnum(x, spec=".1f"):
    return "—" if x is None else format(x, spec)


ms = harness.ms


def ratio(r: dict, sift: dict | None):
    if sift is None or "best_ms" not in sift or "best_ms" not in r or not sift["best_ms"]:
        return None
    return r["best_ms"] / sift["best_ms"]


def status(r: dict) -> str:
    if "unavailable" in r:
        return "unavailable"
    if "error" in r:
        return "FAILED"
    c = r.get("correct", "not checked")
    return "**NO**" if c.startswith("NO") else c


def sift_stats(r: dict) -> str:
    s = r.get("stats") or {}
    if not s:
        return ""
    parts = []
    if "blocks_total" in s:
        parts.append(f"blocks pruned {s.get('blocks_pruned', '?'):,}/{s['blocks_total']:,}"
                     if isinstance(s.get("blocks_pruned"), int)
                     else f"blocks {s['blocks_total']}")
    if isinstance(s.get("values_decoded"), int):
        parts.append(f"{s['values_decoded']:,} values decoded")
    if isinstance(s.get("bytes_read"), int):
        parts.append(f"{s['bytes_read'] / 1e6:.1f} MB read")
    return "; ".join(parts)


def query_table(q: Query, res: dict, engines: list[Engine]) -> list[str]:
    out = [f"### {q.name}", "", f"`{q.sql.format(table=q.table)}`", "",
           "| engine | first run ms | best ms | median ms | time / Sift's | correct | notes |",
           "|---|---:|---:|---:|---:|---|---|"]
    sift = res.get("sift")
    for e in engines:
        r = res.get(e.key, {})
        rt = ratio(r, sift)
        note = r.get("unavailable") or r.get("error") or ""
        if not note and r.get("correct", "").startswith("NO"):
            note = r["correct"]
        if e.key.startswith("sift") and not note:
            note = sift_stats(r)
        out.append(f"| {e.name} | {ms(r.get('first_ms'))} | {ms(r.get('best_ms'))} | "
                   f"{ms(r.get('median_ms'))} | "
                   f"{fnum(rt, '.2f')}{'×' if rt else ''} | {status(r)} | "
                   f"{note.replace('|', '/')} |")
    return out + [""]


def micro_tables(queries: list[Query], results: dict, engines: list[Engine]) -> list[str]:
    by = {(q.f, q.p): q for q in queries if q.group == "micro"}
    if not by:
        return []
    heads = [e.name for e in engines]
    out = ["## Micro-benchmark (Parquet-Select): filters × projections", "",
           "`select max(c10), …, max(c{9+P}) from micro where c0 < 8 and … and c{F-1} < 8` "
           "(each filter keeps 25 %). Cells: best ms (time / Sift's); ✘ = result differs "
           "from DuckDB's, *failed* / *n/a* = engine failed / unavailable.", ""]

    def cell(e, q):
        r = results[q.name].get(e.key, {})
        if "unavailable" in r:
            return "*n/a*"
        if "error" in r:
            return "*failed*"
        rt = ratio(r, results[q.name].get("sift"))
        s = ms(r["best_ms"]) + (f" ({rt:.2f}×)" if rt and e.key != "sift" else "")
        return s + (" ✘" if r.get("correct", "").startswith("NO") else "")

    for title, pairs in ((f"Vary filters F, P = {MICRO_F_AT_P}",
                          [(f, MICRO_F_AT_P) for f in MICRO_F]),
                         (f"Vary projections P, F = {MICRO_P_AT_F}",
                          [(MICRO_P_AT_F, p) for p in MICRO_P])):
        pairs = [fp for fp in pairs if fp in by]
        if not pairs:
            continue
        out += [f"{title}:", "", "| F | P | " + " | ".join(heads) + " |",
                "|---:|---:|" + "---:|" * len(heads)]
        for f, p in pairs:
            out.append(f"| {f} | {p} | " + " | ".join(cell(e, by[(f, p)]) for e in engines)
                       + " |")
        out.append("")
    return out


def problems(queries, results, engines) -> list[str]:
    out = []
    for q in queries:
        for e in engines:
            r = results[q.name].get(e.key, {})
            if "error" in r:
                out.append(f"- {q.name} / {e.name}: FAILED: {r['error']}")
            elif r.get("correct", "").startswith("NO"):
                out.append(f"- {q.name} / {e.name}: **WRONG RESULT** {r['correct']}")
    return out


def nulls_line(results: dict) -> list[str]:
    a = results.get("q6-nulls", {}).get("sift", {})
    b = results.get("q6", {}).get("sift", {})
    if "best_ms" in a and "best_ms" in b:
        r = a["best_ms"] / b["best_ms"]
        mark = "✔" if r <= 1.3 else "✘"
        return [f"**Sift q6-nulls / q6 = {r:.2f}** (best {ms(a['best_ms'])} / "
                f"{ms(b['best_ms'])} ms; target ≤ 1.3) {mark}", ""]
    return ["Sift q6-nulls / q6: not measured (needs Sift results for both; target ≤ 1.3).",
            ""]


def report(queries, results, engines, tables, args, load, sift_fmt) -> str:
    sc = harness.scale_str(args.scale)
    out = [f"# End-to-end queries, TPC-H SF{sc}, one core", "",
           "Method: every engine runs in-process on one core, the same way: the file is "
           "opened once per query (DuckDB: connection opened and the SQL prepared), untimed, "
           "then the query runs on it. *first run ms* = the query's first run in a fresh "
           "process, page cache warm (Sift: run 1 of `sift query`; the others: a fresh "
           "`python bench/queries.py first-run` process); *best* / *median* = of "
           f"{args.runs} runs in one process that follow a first run there (Sift: runs 2…"
           f"{args.runs + 1} of the same `sift query --runs {args.runs + 1}`). "
           "*time / Sift's* = the engine's best time / Sift's best time (> 1: Sift is "
           "faster). *correct*: the result (and the fresh process's first-run result) equals "
           f"DuckDB native's (floats to a relative {REL_TOL:g}, rows ordered by group keys).",
           "", "Tables:"]
    out += [f"- `{tf.name}`: {tf.description}" for tf in tables.values()]
    out.append("")
    bad = problems(queries, results, engines)
    if bad:
        out += ["**PROBLEMS:**", *bad, ""]
    tpch = [q for q in queries if q.group == "tpch"]
    if tpch:
        out += ["## Summary (best ms, time / Sift's)", "",
                "| query | " + " | ".join(e.name for e in engines) + " |",
                "|---|" + "---:|" * len(engines)]
        for q in [*tpch, *[q for q in queries if q.group == "nulls"]]:
            cells = []
            for e in engines:
                r = results[q.name].get(e.key, {})
                if "best_ms" not in r:
                    cells.append("*n/a*" if "unavailable" in r else "*failed*")
                    continue
                rt = ratio(r, results[q.name].get("sift"))
                bad_mark = " ✘" if r.get("correct", "").startswith("NO") else ""
                cells.append(ms(r["best_ms"]) + (f" ({rt:.2f}×)" if rt and e.key != "sift"
                                                 else "") + bad_mark)
            out.append(f"| {q.name} | " + " | ".join(cells) + " |")
        out.append("")
        out += ["## Per query", ""]
        for q in tpch:
            out += query_table(q, results[q.name], engines)
    nq = [q for q in queries if q.group == "nulls"]
    if nq:
        out += ["## Q6 with nulls", "",
                f"Q6 on `lineitem_nulls` ({tables['lineitem_nulls'].description}).", ""]
        out += nulls_line(results)
        for q in nq:
            out += query_table(q, results[q.name], engines)
    out += micro_tables(queries, results, engines)
    out += ["## Notes", "",
            "- One core: the whole benchmark runs under `taskset -c 0`; thread env vars = 1, "
            "`pa.set_cpu_count(1)`, `pa.set_io_thread_count(1)`. Times exclude process "
            "start-up, opening the file or connection and planning, include reading the "
            "files (page cache warm: every file is read once before its first run) and "
            "producing the result rows.",
            "- Checksums: Sift verifies segment checksums in the first run only (the table "
            "stays open); DuckDB verifies a block's checksum when it reads it from the file, "
            "and keeps the blocks it read in its buffer pool for the later runs; pyarrow "
            "(Parquet page CRCs) and Vortex verify none by default.",
            "- Files: Parquet zstd and Vortex written from Arrow by pyarrow / vortex-data with "
            "default settings, DuckDB `CREATE TABLE AS` + `CHECKPOINT`, Sift `sift convert` of "
            "the input Parquet (lineitem's are the files bench/harness.py measures).",
            "- pyarrow and Vortex run hand-written plans (filter pushed into the reader, "
            "aggregate in pyarrow.compute); Q19's filter is given to them with the conjuncts "
            "common to its three disjuncts factored out; floats are compared with float "
            "literals (Vortex compares equal types only)."]
    out += [f"- {e.note}" for e in engines if e.note]
    out += ["", "Machine:", *harness.machine_info([sift_fmt], load), ""]
    return "\n".join(out)


def raw_results(queries, results, engines, tables, args, load) -> dict:
    return {
        "scale": args.scale, "runs": args.runs, "load_1min": load,
        "tables": {k: {"rows": t.rows, "description": t.description,
                       "files": {f: str(p) for f, p in t.files.items()},
                       "errors": t.errors} for k, t in tables.items()},
        "engines": [{"key": e.key, "name": e.name} for e in engines],
        "queries": [{"name": q.name, "table": q.table, "sql": q.sql.format(table=q.table),
                     "sift_name": q.sift_name, "results": results[q.name]} for q in queries],
    }


# --------------------------------------------------------------------------- main


def select_queries(spec: str) -> list[Query]:
    qs = all_queries()
    if not spec:
        return qs
    names = [s.strip() for s in spec.split(",") if s.strip()]
    known = {q.name for q in qs} | {"micro", "tpch"}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise SystemExit(f"queries.py: unknown quer{'y' if len(unknown) == 1 else 'ies'} "
                         f"{', '.join(unknown)} (known: {', '.join(sorted(known))})")
    return [q for q in qs if q.name in names or (q.group == "micro" and "micro" in names)
            or (q.group == "tpch" and "tpch" in names)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", type=float, default=1.0, help="TPC-H scale factor (default 1)")
    ap.add_argument("--runs", type=int, default=5, help="timed runs per query and engine")
    ap.add_argument("--queries", default="",
                    help="comma list (default all): q1,q6,q12,q14,q19,q6-nulls, tpch (= the "
                         "five), micro (= every micro-fF-pP), or single micro-fF-pP")
    ap.add_argument("--engines", default="", help="comma list (default all): "
                    + ",".join(ENGINE_KEYS) + " (DuckDB native always runs once per query "
                    "as the reference)")
    ap.add_argument("--micro-rows", type=int, default=None,
                    help="rows of the micro table (default 6,000,000 × scale)")
    ap.add_argument("--sift", default=os.environ.get("SIFT_BIN", ""),
                    help="sift binary (default ${CARGO_TARGET_DIR:-<repo>/target}/release/"
                         "sift; 'none' = skip Sift)")
    ap.add_argument("--sift-missing-reason", default="",
                    help="why the sift binary is absent (set by queries.sh on build failure)")
    ap.add_argument("--data-dir", type=Path, default=BENCH_DIR / "data")
    ap.add_argument("--results-dir", type=Path, default=BENCH_DIR / "results")
    args = ap.parse_args()
    if args.runs < 1:
        ap.error("--runs must be >= 1")
    if args.micro_rows is None:
        args.micro_rows = max(1, round(querydata.MICRO_ROWS_SF1 * args.scale))
    keys = [k.strip() for k in args.engines.split(",") if k.strip()] or list(ENGINE_KEYS)
    unknown = set(keys) - set(ENGINE_KEYS)
    if unknown:
        ap.error(f"unknown engine(s): {', '.join(sorted(unknown))}")
    queries = select_queries(args.queries)
    try:
        if len(os.sched_getaffinity(0)) > 1:
            log("warning: not pinned to one core (use bench/queries.sh or taskset -c 0)")
    except AttributeError:
        pass

    load = [os.getloadavg()[0]]
    tmpdir = Path(tempfile.mkdtemp(prefix="sift-queries-"))
    try:
        sift_bin, origin, reason = resolve_sift(args, tmpdir)
        if sift_bin is not None:
            reason = sift_query_support(sift_bin)
        sift_fmt = SiftFormat()
        if sift_bin is not None:
            sift_fmt.bin, sift_fmt.origin = sift_bin, origin
        wants_sift = "sift" in keys and not reason
        tables = prepare_tables(queries, args, sift_bin, origin and origin["mtime"],
                                reason, wants_sift)
        by_key = {"sift": lambda: SiftEngine(tables, sift_bin, reason),
                  "sift-parquet": lambda: SiftOnParquet(tables, sift_bin, reason),
                  "duckdb": lambda: DuckDBNative(tables),
                  "duckdb-parquet": lambda: DuckDBParquet(tables),
                  "pyarrow": lambda: PyArrowParquet(tables),
                  "vortex": lambda: VortexEngine(tables)}
        engines = [by_key[k]() for k in ENGINE_KEYS if k in keys]
        reference = next((e for e in engines if e.key == "duckdb"), None) \
            or DuckDBNative(tables)
        try:
            results = run(queries, engines, reference, args, load)
        finally:
            for e in {*engines, reference}:
                e.close()

        md = report(queries, results, engines, tables, args, load, sift_fmt)
        stem = f"queries-sf{harness.scale_str(args.scale)}"
        args.results_dir.mkdir(parents=True, exist_ok=True)
        (args.results_dir / f"{stem}.md").write_text(md)
        (args.results_dir / f"{stem}.json").write_text(json.dumps(
            raw_results(queries, results, engines, tables, args, load), indent=1,
            default=str))
        print(md)
        log(f"wrote {args.results_dir / stem}.md and .json")
        bad = problems(queries, results, engines)
        if bad:
            print("\nqueries.py: FAILED:\n" + "\n".join(bad), file=sys.stderr)
            return 1
        return 0
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["first-run"]:
        sys.exit(first_run_main(sys.argv[2:]))
    sys.exit(main())
