#!/usr/bin/env python3
"""The 22 TPC-H queries through `sift sql` (DataFusion's SQL, Sift's scan underneath), against
DataFusion's own Parquet reader and DuckDB, at 1 and 2 threads.

Engines (each at every --threads count T; one thread = `taskset -c 0`, two = `taskset -c 0,1`):

  sift-sift                    `sift sql --threads T` on Sift files (`sift convert` of each
                               tpchgen Parquet file)
  sift-parquet                 `sift sql --threads T` on the tpchgen Parquet files (Sift's
                               own Parquet scan)
  datafusion-parquet           `sift sql --threads T --parquet-reader datafusion` (DataFusion's
                               Parquet reader, its filter pushdown off)
  datafusion-parquet-pushdown  the same plus `--datafusion-pushdown`
  duckdb-native                DuckDB (Python, in-process) on a DuckDB database of the 8 tables
  duckdb-parquet               DuckDB on views `select * from read_parquet(...)` of the same
                               Parquet files

Asked for with --engines only: sift-sift-nojf and sift-parquet-nojf (`--join-filters off`),
and sift-sift-noagg (`--scan-aggregates off`: every aggregate by DataFusion's own hash
aggregation).

Every engine is timed the same way: one fresh process per (engine, query, T) opens the
tables and plans the SQL once, untimed (`sift sql`: tables registered and the SQL planned;
DuckDB: connection, `SET threads = T`, `PREPARE`), then runs the query --runs times (default
6), each run timed in that process (`sift sql --runs N`; DuckDB `EXECUTE` + fetchall).  Run 1
is the *first run* (fresh process, page cache warm); *best* and *median* are of runs 2…N.
Every result is compared with DuckDB native's (numbers to a relative 1e-6 or an absolute
1e-4, in order when the query has an ORDER BY); a mismatch or a failure makes the exit
status 1.

Also measured, on the same Sift files: the hand-written plans of `sift query q1|q6|q12|q14|
q19` (one thread) against `sift sql --threads 1` (SQL / hand-written), and the scaling of Q1
and of a full read (`select * from lineitem`, materialised) from 1 to 2 threads.

Run through bench/sql.sh (venv, release build of sift unless SIFT_BIN is given).  Direct use:
    taskset -c 0 python bench/sql.py --scale 0.01 --sift ~/.cache/sift-target/release/sift
Results: bench/results/sql-sf{SF}.{md,json}.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import gc
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import harness  # the shared data and machine helpers of the harnesses

BENCH_DIR = harness.BENCH_DIR
REPO_DIR = harness.REPO_DIR
TPCH_DIR = BENCH_DIR / "tpch"

TABLES = ("region", "nation", "supplier", "customer", "part", "partsupp", "orders",
          "lineitem")
HANDWRITTEN = ("q1", "q6", "q12", "q14", "q19")
FULL_READ_SQL = "select * from lineitem"

# Thread settings inherited from the shell or set by harness.py at import: the children get
# none of them (their threads are set by --threads / SET threads and bounded by taskset).
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
               "NUMEXPR_NUM_THREADS", "ARROW_IO_THREADS", "RAYON_NUM_THREADS",
               "TOKIO_WORKER_THREADS", "POLARS_MAX_THREADS")


def log(msg: str) -> None:
    print(f"[sql] {msg}", file=sys.stderr, flush=True)


def child_env() -> dict:
    return {k: v for k, v in os.environ.items() if k not in THREAD_VARS}


def cpus(threads: int) -> str:
    """The CPUs a T-thread engine is pinned to: 0, then 0,1, …"""
    return ",".join(str(i) for i in range(threads))


def strip_sql(sql: str) -> str:
    return sql.strip().rstrip(";").strip()


def has_order_by(sql: str) -> bool:
    text = re.sub(r"--[^\n]*", " ", sql)
    return re.search(r"\border\s+by\b", text, re.IGNORECASE) is not None


# --------------------------------------------------------------------------- DuckDB worker


def duckdb_run_main(argv: list[str]) -> int:
    """`duckdb-run (--db FILE | --parquet-dir DIR) --threads T --runs N --sql FILE`: open,
    `SET threads`, PREPARE (untimed), then N timed `EXECUTE`s; prints one JSON line with the
    times and the first run's rows."""
    ap = argparse.ArgumentParser(prog="sql.py duckdb-run")
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--db", type=Path)
    src.add_argument("--parquet-dir", type=Path)
    ap.add_argument("--threads", type=int, required=True)
    ap.add_argument("--runs", type=int, required=True)
    ap.add_argument("--sql", type=Path, required=True)
    args = ap.parse_args(argv)
    import duckdb
    sql = strip_sql(args.sql.read_text())
    t0 = time.perf_counter()
    if args.db is not None:
        con = duckdb.connect(str(args.db), read_only=True, config={"threads": args.threads})
    else:
        con = duckdb.connect(config={"threads": args.threads})
        for t in TABLES:
            path = str(args.parquet_dir / f"{t}.parquet").replace("'", "''")
            con.execute(f"create view {t} as select * from read_parquet('{path}')")
    con.execute(f"SET threads = {args.threads}")
    con.execute(f"PREPARE q AS {sql}")
    prepare_ms = (time.perf_counter() - t0) * 1e3
    times, first_rows, nrows = [], None, 0
    for i in range(args.runs):
        gc.collect()
        t = time.perf_counter()
        rows = con.sql("EXECUTE q").fetchall()
        times.append((time.perf_counter() - t) * 1e3)
        nrows = len(rows)
        if i == 0:
            first_rows = rows
        del rows
    con.close()
    print(json.dumps({"prepare_ms": prepare_ms, "runs": times, "rows": nrows,
                      "result": [[harness.jsonable(v) for v in r] for r in first_rows or []]}))
    return 0


# --------------------------------------------------------------------------- correctness


# --------------------------------------------------------------------------- data


@dataclass
class Data:
    scale: float
    dir: Path
    parquet_dir: Path
    sift_dir: Path | None
    duckdb: Path
    rows: dict[str, int]
    parquet_info: dict
    sizes: dict[str, dict[str, int]]      # format -> table -> bytes
    sift_error: str = ""
    notes: list[str] = field(default_factory=list)


def manifest_ok(path: Path, params: dict) -> bool:
    try:
        return json.loads(path.read_text()) == params
    except (OSError, ValueError):
        return False


def generate_parquet(scale: float, base: Path) -> Path:
    """tpchgen-cli's Parquet files of all 8 tables at `scale`, as it writes them (default
    options), cached with a manifest."""
    out = base / "parquet"
    params = {"generator": harness.tpchgen_version(), "scale": harness.scale_str(scale),
              "command": "tpchgen-cli parquet -s SCALE -o DIR"}
    if manifest_ok(out / "manifest.json", params) and \
            all((out / f"{t}.parquet").is_file() for t in TABLES):
        return out
    tmp = base / "parquet.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    log(f"generating TPC-H SF{harness.scale_str(scale)} (all 8 tables) with tpchgen-cli ...")
    subprocess.run([harness.find_tool("tpchgen-cli"), "parquet", "-s", harness.scale_str(scale),
                    "-o", str(tmp), "--quiet"], check=True)
    missing = [t for t in TABLES if not (tmp / f"{t}.parquet").is_file()]
    if missing:
        raise RuntimeError(f"tpchgen-cli wrote no {', '.join(missing)}")
    (tmp / "manifest.json").write_text(json.dumps(params, indent=1) + "\n")
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    return out


def parquet_details(pqdir: Path) -> tuple[dict, dict]:
    """Per table: rows, row groups, codecs (pyarrow's view of the column chunks), writer."""
    import pyarrow.parquet as pq
    info, rows = {}, {}
    for t in TABLES:
        m = pq.ParquetFile(pqdir / f"{t}.parquet").metadata
        codecs: dict[str, int] = {}
        for i in range(m.num_row_groups):
            rg = m.row_group(i)
            for j in range(rg.num_columns):
                c = rg.column(j).compression
                codecs[c] = codecs.get(c, 0) + 1
        info[t] = {"rows": m.num_rows, "row_groups": m.num_row_groups, "codecs": codecs,
                   "created_by": m.created_by,
                   "bytes": (pqdir / f"{t}.parquet").stat().st_size}
        rows[t] = m.num_rows
    return info, rows


def convert_sift(pqdir: Path, base: Path, sift_bin: Path, sift_mtime: float) -> Path:
    """`sift convert X.parquet X.sift` for the 8 tables; redone when older than the Parquet
    file or the sift binary (whose file layout changes often)."""
    out = base / "sift"
    out.mkdir(exist_ok=True)
    for t in TABLES:
        src, dst = pqdir / f"{t}.parquet", out / f"{t}.sift"
        if dst.is_file() and dst.stat().st_mtime >= max(src.stat().st_mtime, sift_mtime):
            continue
        log(f"sift convert {src.name} {dst.name}")
        p = subprocess.run([str(sift_bin), "--quiet", "convert", str(src), str(dst)],
                           capture_output=True, text=True, env=child_env(), timeout=3600)
        if p.returncode != 0:
            raise RuntimeError(f"`sift convert {src.name} {dst.name}` exited {p.returncode}: "
                               + " | ".join(p.stderr.strip().splitlines()[-3:]))
    return out


def build_duckdb(pqdir: Path, base: Path) -> Path:
    """A native DuckDB database of the 8 tables (`create table X as select * from
    read_parquet(...)`, types kept), cached with a manifest."""
    import duckdb
    db = base / "tpch.duckdb"
    params = {"duckdb": duckdb.__version__,
              "parquet": json.loads((pqdir / "manifest.json").read_text())}
    man = base / "duckdb.json"
    if db.is_file() and manifest_ok(man, params):
        return db
    log(f"writing {db}")
    tmp = base / "tpch.writing.duckdb"
    for p in (tmp, Path(str(tmp) + ".wal")):
        p.unlink(missing_ok=True)
    con = duckdb.connect(str(tmp))
    for t in TABLES:
        path = str(pqdir / f"{t}.parquet").replace("'", "''")
        con.execute(f"create table {t} as select * from read_parquet('{path}')")
    con.execute("checkpoint")
    con.close()
    Path(str(tmp) + ".wal").unlink(missing_ok=True)
    tmp.replace(db)
    man.write_text(json.dumps(params, indent=1) + "\n")
    return db


def prepare_data(args, sift_bin: Path | None, sift_mtime: float | None,
                 sift_reason: str) -> Data:
    base = args.data_dir / f"tpch-sf{harness.scale_str(args.scale)}"
    base.mkdir(parents=True, exist_ok=True)
    pqdir = generate_parquet(args.scale, base)
    info, rows = parquet_details(pqdir)
    db = build_duckdb(pqdir, base)
    sift_dir, sift_error = None, sift_reason
    if sift_bin is not None and not sift_error:
        try:
            sift_dir = convert_sift(pqdir, base, sift_bin, sift_mtime or 0.0)
        except Exception as e:
            sift_error = f"{type(e).__name__}: {e}"
            log(traceback.format_exc())
    sizes = {"parquet": {t: info[t]["bytes"] for t in TABLES},
             "duckdb": {"(database)": db.stat().st_size}}
    if sift_dir is not None:
        sizes["sift"] = {t: (sift_dir / f"{t}.sift").stat().st_size for t in TABLES}
    return Data(args.scale, base, pqdir, sift_dir, db, rows, info, sizes, sift_error)


def warm(paths: list[Path]) -> None:
    """Read every byte, so that first runs find the files in the page cache."""
    for p in paths:
        harness.warm_page_cache(p)


# --------------------------------------------------------------------------- engines


class Unavailable(Exception):
    pass


class Engine:
    key = "?"
    title = "?"
    note = ""

    def files(self, data: Data) -> list[Path]:
        raise NotImplementedError

    def measure(self, sql_file: Path, threads: int, args, data: Data) -> dict:
        """{prepare_ms, first_ms, best_ms, median_ms, runs_ms, rows, result} (result: the rows
        to check, each a list of cells) or raises."""
        raise NotImplementedError


class SiftSql(Engine):
    fmt = "sift"            # sift | parquet
    extra: tuple[str, ...] = ()

    def __init__(self, sift_bin: Path | None, reason: str):
        self.bin = sift_bin
        self.reason = reason

    def files(self, data):
        d = data.sift_dir if self.fmt == "sift" else data.parquet_dir
        if d is None:
            raise Unavailable(data.sift_error or "no Sift files")
        return [d / f"{t}.{self.fmt}" for t in TABLES]

    def command(self, threads: int, data: Data) -> list[str]:
        if self.bin is None or self.reason:
            raise Unavailable(self.reason or "no sift binary")
        tables = []
        for t, p in zip(TABLES, self.files(data)):
            tables += ["--table", f"{t}={p}"]
        return ["taskset", "-c", cpus(threads), str(self.bin), "--quiet", "sql", "--threads",
                str(threads), *tables, *self.extra]

    def timed(self, sql_file: Path, threads: int, args, data: Data) -> dict:
        cmd = self.command(threads, data) + ["--runs", str(args.runs), "-f", str(sql_file)]
        p = harness.run_child(cmd, args.timeout, child_env())
        if p.returncode != 0:
            raise harness.failure(p, f"`sift sql --runs {args.runs}`")
        out = harness.last_json(p.stdout)
        times = [float(t) for t in out["runs"]]
        if len(times) != args.runs:
            raise RuntimeError(f"`sift sql --runs {args.runs}` reported {len(times)} runs")
        res = harness.summarize_runs(times, float(out["first_ms"]), out.get("prepare_ms"),
                        int(out["rows"]))
        res["scans"] = out.get("scans", {})
        return res

    def result(self, sql_file: Path, threads: int, args, data: Data) -> list[list[str]]:
        cmd = self.command(threads, data) + ["-o", "csv", "-f", str(sql_file)]
        p = harness.run_child(cmd, args.timeout, child_env())
        if p.returncode != 0:
            raise harness.failure(p, "`sift sql -o csv`")
        rows = list(csv.reader(io.StringIO(p.stdout)))
        if not rows:
            raise RuntimeError("`sift sql -o csv` printed no header row")
        return rows[1:]

    def measure(self, sql_file, threads, args, data):
        warm(self.files(data))
        result = self.result(sql_file, threads, args, data)
        res = self.timed(sql_file, threads, args, data)
        res["result"] = result
        return res


class SiftOnSift(SiftSql):
    key, title, fmt = "sift-sift", "sift-sift", "sift"
    note = "`sift sql --threads T` on the Sift files (`sift convert` of each Parquet file)."


class SiftOnParquet(SiftSql):
    key, title, fmt = "sift-parquet", "sift-parquet", "parquet"
    note = "`sift sql --threads T` on the tpchgen Parquet files (Sift's own Parquet scan)."


class SiftOnSiftNoJoinFilters(SiftSql):
    key, title, fmt = "sift-sift-nojf", "sift-sift-nojf", "sift"
    extra = ("--join-filters", "off")
    note = "sift-sift with `--join-filters off` (no join keys pushed into the scans)."


class SiftOnParquetNoJoinFilters(SiftSql):
    key, title, fmt = "sift-parquet-nojf", "sift-parquet-nojf", "parquet"
    extra = ("--join-filters", "off")
    note = "sift-parquet with `--join-filters off`."


class SiftOnSiftNoScanAggregates(SiftSql):
    key, title, fmt = "sift-sift-noagg", "sift-sift-noagg", "sift"
    extra = ("--scan-aggregates", "off")
    note = ("sift-sift with `--scan-aggregates off` (every aggregate by DataFusion's hash "
            "aggregation).")


class DataFusionParquet(SiftSql):
    key, title, fmt = "datafusion-parquet", "datafusion-parquet", "parquet"
    extra = ("--parquet-reader", "datafusion")
    note = ("`sift sql --threads T --parquet-reader datafusion` on the same Parquet files: "
            "DataFusion's own Parquet reader (its `pushdown_filters` off, DataFusion's "
            "default).")


class DataFusionPushdown(SiftSql):
    key, title, fmt = "datafusion-parquet-pushdown", "datafusion-parquet-pushdown", "parquet"
    extra = ("--parquet-reader", "datafusion", "--datafusion-pushdown")
    note = "the same plus `--datafusion-pushdown` (DataFusion's `pushdown_filters` on)."


class DuckDBEngine(Engine):
    native = True

    def files(self, data):
        return [data.duckdb] if self.native else \
            [data.parquet_dir / f"{t}.parquet" for t in TABLES]

    def measure(self, sql_file, threads, args, data, warm_files: bool = True):
        if warm_files:
            warm(self.files(data))
        src = ["--db", str(data.duckdb)] if self.native else \
            ["--parquet-dir", str(data.parquet_dir)]
        cmd = ["taskset", "-c", cpus(threads), sys.executable, str(Path(__file__).resolve()),
               "duckdb-run", *src, "--threads", str(threads), "--runs", str(args.runs),
               "--sql", str(sql_file)]
        p = harness.run_child(cmd, args.timeout, child_env())
        if p.returncode != 0:
            raise harness.failure(p, "the DuckDB process")
        out = harness.last_json(p.stdout)
        times = [float(t) for t in out["runs"]]
        res = harness.summarize_runs(times, times[0], out["prepare_ms"], int(out["rows"]))
        res["result"] = out["result"]
        return res


class DuckDBNative(DuckDBEngine):
    key, title, native = "duckdb-native", "duckdb-native", True
    note = ("DuckDB (Python, in-process) on a native database holding the 8 tables (`create "
            "table X as select * from read_parquet(...)`, types kept), opened read-only.")


class DuckDBParquet(DuckDBEngine):
    key, title, native = "duckdb-parquet", "duckdb-parquet", False
    note = ("DuckDB on the same Parquet files: an in-memory connection with a view `select * "
            "from read_parquet('X.parquet')` per table.")


ENGINE_KEYS = ("sift-sift", "sift-sift-nojf", "sift-sift-noagg", "sift-parquet",
               "sift-parquet-nojf",
               "datafusion-parquet", "datafusion-parquet-pushdown", "duckdb-native",
               "duckdb-parquet")
# Run when --engines is not given; the -nojf and -noagg engines (join filters or scan
# aggregates off) only when asked.
DEFAULT_ENGINES = tuple(k for k in ENGINE_KEYS if not k.endswith(("-nojf", "-noagg")))


# --------------------------------------------------------------------------- driver


@dataclass
class Query:
    name: str          # q01 … q22
    path: Path
    title: str
    ordered: bool


def tpch_queries(spec: str) -> list[Query]:
    qs = []
    for p in sorted(TPCH_DIR.glob("q[0-9][0-9].sql")):
        text = p.read_text()
        first = text.splitlines()[0] if text else ""
        title = first[3:].strip() if first.startswith("-- ") else p.stem
        qs.append(Query(p.stem, p, title, has_order_by(text)))
    if not spec:
        return qs
    want = set()
    for s in spec.split(","):
        s = s.strip().lower().lstrip("q")
        if s:
            want.add(f"q{int(s):02d}")
    unknown = want - {q.name for q in qs}
    if unknown:
        raise SystemExit(f"sql.py: unknown queries {', '.join(sorted(unknown))}")
    return [q for q in qs if q.name in want]


class Run:
    """Everything measured, for the report and the JSON."""

    def __init__(self):
        self.results: dict[int, dict[str, dict[str, dict]]] = {}   # T -> query -> engine
        self.handwritten: dict[str, dict] = {}
        self.scaling: dict[str, dict] = {}
        self.load: list[float] = [os.getloadavg()[0]]
        self.problems: list[str] = []


def describe(r: dict) -> str:
    if "unavailable" in r:
        return f"unavailable ({r['unavailable']})"
    if "error" in r:
        return f"FAILED: {r['error']}"
    return (f"first {r['first_ms']:.2f} ms, best {r['best_ms']:.2f} ms, median "
            f"{r['median_ms']:.2f} ms, {r['rows']} rows, correct: {r.get('correct', '?')}")


def attempt(fn) -> dict:
    try:
        return fn()
    except Unavailable as e:
        return {"unavailable": str(e)}
    except Exception as e:
        log(traceback.format_exc())
        return {"error": f"{type(e).__name__}: {e}"}


def reference(q: Query, run: Run, ref_engine: DuckDBNative, args, data: Data,
              cache: dict) -> tuple[list | None, str]:
    """DuckDB native's result at the fewest threads measured (one thread unless --threads
    says otherwise); run on its own when DuckDB native is not among --engines."""
    if q.name in cache:
        return cache[q.name]
    for t in sorted(run.results):
        r = run.results[t].get(q.name, {}).get(ref_engine.key)
        if r is not None:
            break
    else:
        r = attempt(lambda: ref_engine.measure(q.path, min(args.thread_counts), args, data))
    out = (r.get("result"), "") if "result" in r else \
        (None, r.get("error") or r.get("unavailable") or "?")
    cache[q.name] = out
    return out


def check(res: dict, ref: list | None, ref_error: str, ordered: bool) -> None:
    if "result" not in res:
        return
    got = res.pop("result")
    if ref is None:
        res["correct"] = f"NO: no DuckDB native reference ({ref_error})"
        return
    c = harness.compare_rows(ref, got, ordered)
    if c == "yes" and res.get("rows") is not None and res["rows"] != len(ref):
        c = f"NO: the timed runs returned {res['rows']} rows, expected {len(ref)}"
    res["correct"] = c


def run_tpch(queries: list[Query], engines: list[Engine], ref_engine: DuckDBNative, args,
             data: Data, run: Run) -> None:
    cache: dict = {}
    for t in args.thread_counts:
        per_q = run.results.setdefault(t, {})
        for q in queries:
            res = per_q.setdefault(q.name, {})
            for e in engines:
                log(f"T={t} {q.name}: {e.key} ...")
                res[e.key] = attempt(lambda: e.measure(q.path, t, args, data))
                run.load.append(os.getloadavg()[0])
            ref, ref_error = reference(q, run, ref_engine, args, data, cache)
            for key, r in res.items():
                check(r, ref, ref_error, q.ordered)
                log(f"T={t} {q.name}: {key}: {describe(r)}")


def handwritten(sift_bin: Path | None, reason: str, args, data: Data, run: Run,
                ref_engine: DuckDBNative, tmpdir: Path) -> None:
    """`sift query qN lineitem.sift --runs N --json` (one thread) against `sift sql
    --threads 1`: the TPC-H query of the same number (from the main table) and the SQL of
    exactly what the hand-written plan computes (bench/queries.py's lineitem-side SQL)."""
    import queries as qmod                           # the lineitem-side SQL of the five
    sql_of = {q.name: q.sql.format(table="lineitem") for q in qmod.tpch_queries()}
    engine = SiftOnSift(sift_bin, reason)
    for name in HANDWRITTEN:
        entry: dict = {"lineitem_sql": sql_of[name]}
        run.handwritten[name] = entry
        if sift_bin is None or reason or data.sift_dir is None:
            entry["unavailable"] = reason or data.sift_error or "no sift binary"
            continue
        path = data.sift_dir / "lineitem.sift"
        sql_file = tmpdir / f"lineitem-{name}.sql"
        sql_file.write_text(sql_of[name] + "\n")
        log(f"hand-written {name} ...")

        def hand():
            warm([path])
            cmd = ["taskset", "-c", "0", str(sift_bin), "--quiet", "query", name, str(path),
                   "--runs", str(args.runs), "--json"]
            p = harness.run_child(cmd, args.timeout, child_env())
            if p.returncode != 0:
                raise harness.failure(p, f"`sift query {name}`")
            out = harness.last_json(p.stdout)
            times = [float(x) for x in out["runs_ms"]]
            res = harness.summarize_runs(times, float(out["first_ms"]), out.get("open_ms"),
                            len(out["rows"]))
            res["result"] = out["rows"]
            return res

        entry["hand"] = attempt(hand)
        entry["sql_lineitem"] = attempt(lambda: engine.measure(sql_file, 1, args, data))
        ref = attempt(lambda: ref_engine.measure(sql_file, 1, args, data))
        for k in ("hand", "sql_lineitem"):
            check(entry[k], ref.get("result"), ref.get("error", "?"), False)
        tq = f"q{int(name[1:]):02d}"
        entry["sql_tpch"] = {k: v for k, v in run.results.get(1, {}).get(tq, {})
                             .get("sift-sift", {}).items()}
        if not entry["sql_tpch"]:
            entry["sql_tpch"] = {"unavailable": "not measured (needs sift-sift at --threads 1 "
                                                f"and {tq})"}
        for k in ("hand", "sql_lineitem"):
            log(f"hand-written {name}: {k}: {describe(entry[k])}")


def scaling(sift_bin: Path | None, reason: str, args, data: Data, run: Run,
            tmpdir: Path) -> None:
    """Q1 (from the main table) and a full read of lineitem through `sift sql` on the Sift
    files at 1 and at 2 threads."""
    engine = SiftOnSift(sift_bin, reason)
    q1 = {t: run.results.get(t, {}).get("q01", {}).get("sift-sift") for t in (1, 2)}
    run.scaling["q01"] = {str(t): (r if r is not None else
                                   {"unavailable": f"not measured at --threads {t}"})
                          for t, r in q1.items()}
    sql_file = tmpdir / "full-read.sql"
    sql_file.write_text(FULL_READ_SQL + "\n")
    full: dict[str, dict] = {}
    for t in (1, 2):
        log(f"full read, T={t} ...")

        def measure(t=t):
            warm(engine.files(data))
            r = engine.timed(sql_file, t, args, data)
            want = data.rows["lineitem"]
            r["correct"] = "yes" if r["rows"] == want else \
                f"NO: {r['rows']:,} rows, expected {want:,}"
            return r
        full[str(t)] = attempt(measure)
        log(f"full read, T={t}: {describe(full[str(t)])}")
    run.scaling["full_read"] = full


# --------------------------------------------------------------------------- report


def bad(r: dict) -> bool:
    return str(r.get("correct", "")).startswith("NO")


def cell(r: dict | None, base: dict | None, key: str, is_base: bool) -> str:
    if r is None:
        return "—"
    if "unavailable" in r:
        return "*n/a*"
    if "error" in r:
        return "*failed*"
    s = harness.ms(r[key])
    if not is_base and base and base.get(key):
        s += f" ({r[key] / base[key]:.2f}×)"
    return s + (" ✘" if bad(r) else "")


def totals(per_q: dict, queries: list[Query], key: str, engine: str) -> tuple[float, int]:
    vals = [per_q[q.name][engine][key] for q in queries
            if key in per_q.get(q.name, {}).get(engine, {})]
    return sum(vals), len(vals)


def total_cell(per_q: dict, queries: list[Query], key: str, engine: str, base: str) -> str:
    tot, n = totals(per_q, queries, key, engine)
    if n == 0:
        return "—"
    s = f"**{harness.ms(tot)}**"
    if n < len(queries):
        s += f" ({n} of {len(queries)})"
    if engine != base:
        # The ratio over the queries both engines completed.
        common = [q for q in queries if key in per_q.get(q.name, {}).get(engine, {})
                  and key in per_q.get(q.name, {}).get(base, {})]
        b = sum(per_q[q.name][base][key] for q in common)
        o = sum(per_q[q.name][engine][key] for q in common)
        if b and common:
            s += f" ({o / b:.2f}×" + ("" if len(common) == len(queries)
                                      else f" on {len(common)}") + ")"
    return s


def join_filter_table(run: Run, queries: list[Query], engines: list[Engine]) -> list[str]:
    """Per query and thread count, each format with join filters on against off."""
    keys = {e.key for e in engines}
    pairs = [(on, on + "-nojf") for on in ("sift-sift", "sift-parquet")
             if on in keys and on + "-nojf" in keys]
    if not pairs:
        return []
    out = ["| T | query | files | best ms on | off | off / on | rows into plan on | off "
           "| values decoded on | off | scans filtered |", "|---|---|---|" + "---:|" * 8]
    for t in sorted(run.results):
        for q in queries:
            res = run.results[t].get(q.name, {})
            for on, off in pairs:
                a, b = res.get(on, {}), res.get(off, {})
                if "best_ms" not in a or "best_ms" not in b:
                    continue
                sa, sb = a.get("scans", {}), b.get("scans", {})
                n = lambda d, k: f"{d[k]:,}" if k in d else "—"
                out.append(f"| {t} | {q.name} | {on.split('-')[1]} | {harness.ms(a['best_ms'])}"
                           f"{' ✘' if bad(a) else ''} | {harness.ms(b['best_ms'])}{' ✘' if bad(b) else ''}"
                           f" | {b['best_ms'] / a['best_ms']:.2f}× | {n(sa, 'rows_matched')} | "
                           f"{n(sb, 'rows_matched')} | {n(sa, 'values_decoded')} | "
                           f"{n(sb, 'values_decoded')} | {n(sa, 'join_filters')} |")
    return out


def engine_table(per_q: dict, queries: list[Query], engines: list[Engine], key: str) -> list[str]:
    heads = [e.key for e in engines]
    out = ["| query | " + " | ".join(heads) + " |", "|---|" + "---:|" * len(heads)]
    for q in queries:
        res = per_q.get(q.name, {})
        base = res.get("sift-sift")
        out.append(f"| {q.name} | " + " | ".join(
            cell(res.get(e.key), base, key, e.key == "sift-sift") for e in engines) + " |")
    out.append(f"| **total** | " + " | ".join(
        total_cell(per_q, queries, key, e.key, "sift-sift") for e in engines) + " |")
    return out + [""]


def machine_lines(args, run: Run, sift_bin: Path | None, origin: dict | None) -> list[str]:
    import platform
    import duckdb
    import pyarrow as pa
    try:
        model = next((ln.split(":", 1)[1].strip()
                      for ln in Path("/proc/cpuinfo").read_text().splitlines()
                      if ln.startswith("model name")), "?")
    except OSError:
        model = platform.processor() or "?"
    try:
        aff = ",".join(map(str, sorted(os.sched_getaffinity(0))))
    except AttributeError:
        aff = "?"
    version, built, rev, df = harness.sift_provenance(sift_bin, origin)
    return [
        f"- CPU: {model} ({os.cpu_count()} logical CPUs; the driver pinned to CPU {aff}; "
        "engines at T threads pinned to CPUs 0…T-1 with taskset)",
        f"- Kernel: {platform.system()} {platform.release()}; Python "
        f"{platform.python_version()}",
        f"- duckdb {duckdb.__version__}, pyarrow {pa.__version__}, DataFusion {df} "
        f"(Cargo.lock), {harness.tpchgen_version()}",
        f"- sift: {version or 'n/a'}{built} (repo HEAD {rev})",
        "- Load average (1 min) at start / max after a measurement / end: "
        f"{run.load[0]:.2f} / {max(run.load):.2f} / {os.getloadavg()[0]:.2f} (> 1 on one "
        f"thread or > 2 on two means other processes competed for the {os.cpu_count()} "
        "CPUs)",
        f"- Date: {datetime.datetime.now().astimezone().isoformat(timespec='seconds')}",
    ]


def parquet_line(data: Data) -> str:
    codecs: dict[str, int] = {}
    for t in TABLES:
        for c, n in data.parquet_info[t]["codecs"].items():
            codecs[c] = codecs.get(c, 0) + n
    codec = ", ".join(f"{c} ({n} column chunks)" for c, n in sorted(codecs.items()))
    writer = sorted({data.parquet_info[t]["created_by"] for t in TABLES})
    li = data.parquet_info["lineitem"]
    return (f"Parquet files: written by `tpchgen-cli parquet -s {harness.scale_str(data.scale)}` with "
            f"its default options, one file per table, compression as pyarrow reads it from "
            f"the column chunks: **{codec}**; writer {', '.join(writer)}; lineitem "
            f"{li['row_groups']} row groups. Types as tpchgen writes them: decimals "
            "decimal128(15,2), dates date32, strings (Arrow string_view in the file's schema), "
            "keys int64/int32.")


def sizes_table(data: Data) -> list[str]:
    fmts = [f for f in ("parquet", "sift") if f in data.sizes]
    out = ["| table | rows | " + " | ".join(f"{f} MB" for f in fmts) + " |",
           "|---|---:|" + "---:|" * len(fmts)]
    for t in TABLES:
        out.append(f"| {t} | {data.rows[t]:,} | " + " | ".join(
            f"{data.sizes[f][t] / 1e6:.3f}" for f in fmts) + " |")
    out.append("| **all** | " + f"{sum(data.rows.values()):,} | " + " | ".join(
        f"**{sum(data.sizes[f].values()) / 1e6:.3f}**" for f in fmts) + " |")
    db = data.sizes["duckdb"]["(database)"]
    return out + ["", f"DuckDB database: {db / 1e6:.3f} MB.", ""]


def handwritten_table(run: Run) -> list[str]:
    out = ["| query | hand-written first ms | hand-written best ms | SQL (TPC-H query) best "
           "ms | SQL / hand-written | SQL (lineitem side) best ms | SQL / hand-written | "
           "correct (hand / SQL lineitem side) |",
           "|---|---:|---:|---:|---:|---:|---:|---|"]
    for name in HANDWRITTEN:
        e = run.handwritten.get(name)
        if e is None:
            continue
        if "unavailable" in e:
            out.append(f"| {name} | *n/a* | *n/a* | *n/a* | | *n/a* | | {e['unavailable']} |")
            continue
        h, st, sl = e["hand"], e["sql_tpch"], e["sql_lineitem"]

        def best(r):
            return cell(r, None, "best_ms", True)

        def ratio(r):
            if "best_ms" in r and "best_ms" in h and h["best_ms"]:
                return f"{r['best_ms'] / h['best_ms']:.2f}×"
            return "—"

        def ok(r):
            return r.get("correct") or r.get("error") or r.get("unavailable") or "?"
        out.append(f"| {name} | {cell(h, None, 'first_ms', True)} | {best(h)} | {best(st)} | "
                   f"{ratio(st)} | {best(sl)} | {ratio(sl)} | "
                   f"{ok(h)} / {ok(sl)} |".replace("\n", " "))
    return out + [""]


def scaling_table(run: Run, data: Data) -> list[str]:
    out = ["| query | T=1 best ms | T=2 best ms | speed-up | efficiency per thread | T=1 "
           "first ms | T=2 first ms |", "|---|---:|---:|---:|---:|---:|---:|"]
    labels = {"q01": "Q1", "full_read": f"full read (`{FULL_READ_SQL}`, "
                                        f"{data.rows['lineitem']:,} rows materialised)"}
    for k, label in labels.items():
        r = run.scaling.get(k)
        if not r:
            continue
        a, b = r.get("1", {}), r.get("2", {})
        if "best_ms" in a and "best_ms" in b:
            sp = a["best_ms"] / b["best_ms"]
            spd, eff = f"{sp:.2f}×", f"{sp / 2 * 100:.0f} %"
        else:
            spd = eff = "—"
        out.append(f"| {label} | {cell(a, None, 'best_ms', True)} | "
                   f"{cell(b, None, 'best_ms', True)} | {spd} | {eff} | "
                   f"{cell(a, None, 'first_ms', True)} | {cell(b, None, 'first_ms', True)} |")
    return out + [""]


def collect_problems(run: Run, queries: list[Query], engines: list[Engine]) -> list[str]:
    out = []
    for t, per_q in sorted(run.results.items()):
        for q in queries:
            for e in engines:
                r = per_q.get(q.name, {}).get(e.key, {})
                if "error" in r:
                    out.append(f"- T={t} {q.name} / {e.key}: FAILED: {r['error']}")
                elif bad(r):
                    out.append(f"- T={t} {q.name} / {e.key}: **WRONG RESULT** {r['correct']}")
    for name, entry in run.handwritten.items():
        for k, label in (("hand", "`sift query`"), ("sql_lineitem", "`sift sql` lineitem "
                                                                    "side")):
            r = entry.get(k, {})
            if "error" in r:
                out.append(f"- hand-written {name} / {label}: FAILED: {r['error']}")
            elif bad(r):
                out.append(f"- hand-written {name} / {label}: **WRONG RESULT** {r['correct']}")
    for k, per_t in run.scaling.items():
        if k == "q01":
            continue
        for t, r in per_t.items():
            if "error" in r:
                out.append(f"- scaling {k} T={t}: FAILED: {r['error']}")
            elif bad(r):
                out.append(f"- scaling {k} T={t}: **WRONG RESULT** {r['correct']}")
    return out


def report(run: Run, queries: list[Query], engines: list[Engine], data: Data, args,
           sift_bin, origin) -> str:
    sc = harness.scale_str(args.scale)
    n = args.runs
    out = [f"# TPC-H SF{sc}: 22 queries through `sift sql`, DataFusion's Parquet reader and "
           "DuckDB", "",
           f"Method: every engine runs each query in a fresh process per (engine, query, "
           f"thread count T) that first opens the tables and plans the query, untimed, then "
           f"runs it {n} times, each run timed in that process. *first* = run 1 (the first "
           f"run in the fresh process; page cache warm: every file the engine reads is read "
           f"once before); *best* / *median* = of runs 2…{n} (the {n - 1} runs after the "
           "first), the same for every engine. `sift sql --runs N` plans the SQL and opens "
           "the files before its runs (like a prepared statement); each run re-optimises, "
           "plans physically and executes, collecting the result as Arrow. DuckDB (Python, "
           "in-process): connect, `SET threads = T`, `PREPARE` once, untimed; each run is "
           "`EXECUTE` + fetchall. T threads = `taskset -c 0…T-1` and `--threads T` / `SET "
           "threads = T`. Every result, at every thread count, is checked against DuckDB "
           f"native's (at {min(args.thread_counts)} thread{'s' if min(args.thread_counts) > 1 else ''}): "
           f"numbers to a relative {harness.REL_TOL:g} or an absolute {harness.ABS_TOL:g} (integers exactly, "
           "decimals and floats after conversion to float: Q1's averages and Q8's mkt_share "
           "are decimals in DataFusion and doubles in DuckDB), strings and dates exactly, in "
           "order when the query has an ORDER BY, as a multiset otherwise; the `sift sql` "
           "engines' results come from a separate `sift sql -o csv` run (plus the row count "
           "of the timed runs), DuckDB's from its first timed run. Cells: best ms and, in "
           "parentheses, the time / sift-sift's; ✘ = result differs from DuckDB native's; "
           "*failed* = the engine failed (see Problems).", "",
           parquet_line(data), "", "Engines:"]
    out += [f"- **{e.key}**: {e.note}" for e in engines]
    out.append("")
    probs = collect_problems(run, queries, engines)
    out += ["## Problems", ""] + (probs or ["None: every result matched DuckDB native's."])
    out.append("")
    for t in sorted(run.results):
        out += [f"## {t} thread{'s' if t > 1 else ''}: best ms (time / sift-sift's)", ""]
        out += engine_table(run.results[t], queries, engines, "best_ms")
    for t in sorted(run.results):
        out += [f"## {t} thread{'s' if t > 1 else ''}: first run ms (time / sift-sift's)", ""]
        out += engine_table(run.results[t], queries, engines, "first_ms")
    jf = join_filter_table(run, queries, engines)
    if jf:
        out += ["## Join filters on and off (Sift's scan counters, last run)", "",
                "Rows into the plan: rows the Sift scans passed on (all scans summed); values "
                "decoded: by the scans; scans filtered: scans that started with a join "
                "filter. Time: best ms; ratio: off / on.", "", *jf, ""]
    if run.handwritten:
        out += ["## Hand-written plans against SQL (one thread, Sift files)", "",
                f"`sift query qN lineitem.sift --runs {n} --json` (one thread, `taskset -c 0`; "
                f"first = run 1, best of runs 2…{n}) against `sift sql --threads 1` on the same "
                "Sift files. *SQL (TPC-H query)*: the full TPC-H query of that number "
                "(bench/tpch/qNN.sql, the sift-sift cell of the one-thread table); Q12, Q14 "
                "and Q19 join orders or part there, while the hand-written plans compute only "
                "their lineitem side. *SQL (lineitem side)*: the SQL of exactly what the "
                "hand-written plan computes (bench/queries.py's SQL of the same name), through "
                "`sift sql --threads 1`. Both hand-written and lineitem-side SQL results are "
                "checked against DuckDB native running that SQL.", ""]
        out += handwritten_table(run)
    if run.scaling:
        out += ["## Scaling: `sift sql` on the Sift files, 1 → 2 threads", "",
                "Speed-up = best at 1 thread / best at 2 threads; efficiency per thread = "
                "speed-up / 2. Q1 from the tables above; the full read materialises every "
                "column of every row as Arrow batches (the row count is checked).", ""]
        out += scaling_table(run, data)
    out += ["## Data", "", *sizes_table(data)]
    out += ["Machine:", *machine_lines(args, run, sift_bin, origin), ""]
    return "\n".join(out)


def summary(run: Run, queries: list[Query], engines: list[Engine]) -> str:
    lines = ["", "=== sql.py summary: total of best ms over the queries (× sift-sift) ==="]
    for t in sorted(run.results):
        per_q = run.results[t]
        cells = []
        base, n_base = totals(per_q, queries, "best_ms", "sift-sift")
        for e in engines:
            tot, n = totals(per_q, queries, "best_ms", e.key)
            if n == 0:
                cells.append(f"{e.key} n/a")
                continue
            s = f"{e.key} {harness.ms(tot)}"
            if n < len(queries):
                s += f" ({n}/{len(queries)})"
            if e.key != "sift-sift" and n == len(queries) == n_base and base:
                s += f" ({tot / base:.2f}×)"
            cells.append(s)
        lines.append(f"T={t}: " + "; ".join(cells))
    if run.handwritten:
        parts = []
        for name, e in run.handwritten.items():
            h = e.get("hand", {})
            st, sl = e.get("sql_tpch", {}), e.get("sql_lineitem", {})
            if "best_ms" in h:
                a = f"{st['best_ms'] / h['best_ms']:.2f}×" if "best_ms" in st else "—"
                b = f"{sl['best_ms'] / h['best_ms']:.2f}×" if "best_ms" in sl else "—"
                parts.append(f"{name} {a} (lineitem side {b})")
            else:
                parts.append(f"{name} n/a")
        lines.append("SQL / hand-written (T=1, best): " + "; ".join(parts))
    for k, label in (("q01", "Q1"), ("full_read", "full read")):
        r = run.scaling.get(k, {})
        a, b = r.get("1", {}), r.get("2", {})
        if "best_ms" in a and "best_ms" in b:
            sp = a["best_ms"] / b["best_ms"]
            lines.append(f"scaling {label}: {harness.ms(a['best_ms'])} → {harness.ms(b['best_ms'])} ms, "
                         f"speed-up {sp:.2f}×, efficiency {sp / 2 * 100:.0f} %")
    return "\n".join(lines)


# --------------------------------------------------------------------------- main


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", type=float, default=1.0, help="TPC-H scale factor (default 1)")
    ap.add_argument("--runs", type=int, default=6,
                    help="runs per process: run 1 = first run, best/median of the rest "
                         "(default 6)")
    ap.add_argument("--threads", default="1,2", help="thread counts (default 1,2)")
    ap.add_argument("--queries", default="", help="e.g. 1,6,12 (default: all 22)")
    ap.add_argument("--engines", default="", help="comma list (default: all but the -nojf "
                    "and -noagg ones): " + ",".join(ENGINE_KEYS))
    ap.add_argument("--no-handwritten", action="store_true",
                    help="skip the `sift query` comparison")
    ap.add_argument("--no-scaling", action="store_true", help="skip the full-read scaling")
    ap.add_argument("--timeout", type=float, default=900,
                    help="seconds per engine process (default 900)")
    ap.add_argument("--sift", default=os.environ.get("SIFT_BIN", ""),
                    help="sift binary (default $SIFT_BIN or ~/.cache/sift-target/release/"
                         "sift; 'none' = skip the sift engines)")
    ap.add_argument("--sift-missing-reason", default="")
    ap.add_argument("--data-dir", type=Path, default=BENCH_DIR / "data")
    ap.add_argument("--results-dir", type=Path, default=BENCH_DIR / "results")
    args = ap.parse_args()
    if args.runs < 2:
        ap.error("--runs must be >= 2 (run 1 is the first run)")
    args.thread_counts = sorted({int(x) for x in args.threads.split(",") if x.strip()})
    if not args.thread_counts or min(args.thread_counts) < 1 or \
            max(args.thread_counts) > (os.cpu_count() or 1):
        ap.error(f"--threads: counts between 1 and {os.cpu_count()}")
    keys = [k.strip() for k in args.engines.split(",") if k.strip()] or list(DEFAULT_ENGINES)
    unknown = set(keys) - set(ENGINE_KEYS)
    if unknown:
        ap.error(f"unknown engine(s): {', '.join(sorted(unknown))}")
    queries = tpch_queries(args.queries)
    sys.path.insert(0, str(BENCH_DIR))

    tmpdir = Path(tempfile.mkdtemp(prefix="sift-sql-"))
    run = Run()
    try:
        # A private copy of the binary: a concurrent rebuild cannot swap it mid-run.
        sift_bin, origin, reason = harness.sift_binary(
            args.sift, Path.home() / ".cache/sift-target/release/sift",
            args.sift_missing_reason, tmpdir)
        if sift_bin:
            reason = harness.sql_unavailable(sift_bin, child_env())
        if reason:
            log(f"sift engines unavailable: {reason}")
        data = prepare_data(args, sift_bin, origin and origin["mtime"], reason)
        by_key = {"sift-sift": SiftOnSift, "sift-parquet": SiftOnParquet,
                  "sift-sift-nojf": SiftOnSiftNoJoinFilters,
                  "sift-parquet-nojf": SiftOnParquetNoJoinFilters,
                  "sift-sift-noagg": SiftOnSiftNoScanAggregates,
                  "datafusion-parquet": DataFusionParquet,
                  "datafusion-parquet-pushdown": DataFusionPushdown}
        engines: list[Engine] = []
        for k in ENGINE_KEYS:
            if k not in keys:
                continue
            if k in by_key:
                engines.append(by_key[k](sift_bin, reason))
            else:
                engines.append(DuckDBNative() if k == "duckdb-native" else DuckDBParquet())
        ref_engine = next((e for e in engines if isinstance(e, DuckDBNative)), DuckDBNative())

        run_tpch(queries, engines, ref_engine, args, data, run)
        if not args.no_handwritten:
            handwritten(sift_bin, reason, args, data, run, ref_engine, tmpdir)
        if not args.no_scaling:
            scaling(sift_bin, reason, args, data, run, tmpdir)

        md = report(run, queries, engines, data, args, sift_bin, origin)
        stem = f"sql-sf{harness.scale_str(args.scale)}"
        args.results_dir.mkdir(parents=True, exist_ok=True)
        (args.results_dir / f"{stem}.md").write_text(md)
        raw = {
            "scale": args.scale, "runs": args.runs, "threads": args.thread_counts,
            "timing": (f"per (engine, query, T): one fresh process, {args.runs} runs; "
                       f"first_ms = run 1, best_ms / median_ms = of runs 2..{args.runs}"),
            "engines": [{"key": e.key, "note": e.note} for e in engines],
            "queries": [{"name": q.name, "title": q.title, "ordered": q.ordered}
                        for q in queries],
            "results": {str(t): v for t, v in run.results.items()},
            "handwritten": run.handwritten, "scaling": run.scaling,
            "data": {"dir": str(data.dir), "rows": data.rows, "parquet": data.parquet_info,
                     "sizes": data.sizes, "sift_error": data.sift_error},
            "sift": {"binary": origin, "unavailable": reason},
            "load_1min": run.load,
            "problems": collect_problems(run, queries, engines),
        }
        (args.results_dir / f"{stem}.json").write_text(json.dumps(raw, indent=1, default=str))
        log(f"wrote {args.results_dir / stem}.md and .json")
        print(summary(run, queries, engines))
        probs = collect_problems(run, queries, engines)
        if probs:
            print("\nsql.py: PROBLEMS:\n" + "\n".join(probs))
            return 1
        return 0
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["duckdb-run"]:
        sys.exit(duckdb_run_main(sys.argv[2:]))
    sys.exit(main())
