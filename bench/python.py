#!/usr/bin/env python3
"""The Python package against pyarrow, DuckDB and Polars, from Python, on TPC-H lineitem.

All in this one process, on one core (launch.sh: `taskset -c 0`; every engine told to use
one thread), on the same data: the harnesses' lineitem table (tpchgen-cli's, decimals as
float64, as bench/harness.py prepares it), written once by `sift.write` and once by pyarrow
as an *uncompressed* Parquet file.

Q6's scan (the rows of l_extendedprice, l_discount that pass Q6's filter, as a pyarrow
table) by:

  sift-text         sift.open(p).to_table(columns, filter=Q6 as Sift's filter text)
  sift-expr         the same with the filter as a pyarrow.compute.Expression
  pyarrow           pyarrow.parquet.read_table(columns, filters=Q6) (uncompressed Parquet)
  duckdb-parquet    DuckDB `select … from read_parquet(…) where Q6` → .arrow()
  polars-parquet    pl.scan_parquet(…).filter(Q6).select(…).collect().to_arrow()

Q6 itself (the sum) by DuckDB and Polars over `sift.dataset` (the scan pushed into Sift)
and over the uncompressed Parquet file; the time to a pandas DataFrame (sift vs pyarrow);
and the Python layer's cost: `File.to_table` against `sift bench scan` (the same scan,
timed in a Rust process) on Q6 and on a query that reads one row.

Every measurement opens the file anew each run. The engines of one comparison run in rounds
(each once per round, in turn); run 1 is the *first run* (page cache warm, first call in
the process), *best* and *median* are of runs 2…N. Every result is checked against
pyarrow's.

    bench/python.sh [--scale SF] [--runs N]
Results: bench/results/python-sf{SF}.{md,json}.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

os.environ["POLARS_MAX_THREADS"] = "1"  # read when Polars is imported

import harness  # noqa: E402 - the shared data and machine helpers of the harnesses

import duckdb  # noqa: E402
import polars as pl  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.compute as pc  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

import sift  # noqa: E402

D = datetime.date
COLUMNS = ["l_extendedprice", "l_discount"]
Q6_TEXT = ("l_shipdate >= date '1994-01-01' and l_shipdate < date '1995-01-01' "
           "and l_discount between 0.05 and 0.07 and l_quantity < 24")
Q6_EXPR = ((pc.field("l_shipdate") >= pc.scalar(D(1994, 1, 1)))
           & (pc.field("l_shipdate") < pc.scalar(D(1995, 1, 1)))
           & (pc.field("l_discount") >= 0.05) & (pc.field("l_discount") <= 0.07)
           & (pc.field("l_quantity") < 24.0))
Q6_DNF = [("l_shipdate", ">=", D(1994, 1, 1)), ("l_shipdate", "<", D(1995, 1, 1)),
          ("l_discount", ">=", 0.05), ("l_discount", "<=", 0.07), ("l_quantity", "<", 24.0)]
Q6_SQL_WHERE = ("l_shipdate >= date '1994-01-01' and l_shipdate < date '1995-01-01' "
                "and l_discount between 0.05 and 0.07 and l_quantity < 24")
Q6_POLARS = ((pl.col("l_shipdate") >= D(1994, 1, 1)) & (pl.col("l_shipdate") < D(1995, 1, 1))
             & (pl.col("l_discount") >= 0.05) & (pl.col("l_discount") <= 0.07)
             & (pl.col("l_quantity") < 24.0))
TINY_TEXT = "l_orderkey = 1 and l_linenumber = 1"


def log(msg: str) -> None:
    print(f"[python] {msg}", file=sys.stderr, flush=True)


def timed(fns: dict, runs: int) -> dict:
    """Runs every function of `fns` `runs` times, in rounds (each function once per round,
    in turn), so that drift in the machine's state over the process's life falls on all of
    them alike. Garbage collection before every run, not timed. Returns per name the times
    and the last run's result."""
    times: dict = {name: [] for name in fns}
    results: dict = {}
    for _ in range(runs):
        for name, fn in fns.items():
            results[name] = None  # the previous run's result is freed before the clock starts
            gc.collect()
            start = time.perf_counter()
            results[name] = fn()
            times[name].append((time.perf_counter() - start) * 1e3)
    out = {}
    for name, t in times.items():
        rest = t[1:] or t
        out[name] = {"runs_ms": t, "first_ms": t[0], "best_ms": min(rest),
                     "median_ms": statistics.median(rest), "result": results[name]}
    return out


def q6_sum(t: pa.Table) -> float:
    return pc.sum(pc.multiply(t["l_extendedprice"].cast(pa.float64()),
                              t["l_discount"].cast(pa.float64()))).as_py()


def prepare(scale: float) -> tuple[Path, Path]:
    """The harnesses' lineitem (harness.prepare_lineitem: tpchgen-cli's, with decimals as
    float64, dates date32, strings utf8, cached), written by `sift.write` and by pyarrow as
    an uncompressed Parquet file."""
    ds = harness.prepare_lineitem(scale, harness.BENCH_DIR / "data")
    out = ds.workdir / "python"
    out.mkdir(exist_ok=True)
    sift_path, plain = out / "lineitem.sift", out / "lineitem-uncompressed.parquet"
    src = ds.input_parquet
    if not sift_path.is_file() or sift_path.stat().st_mtime < src.stat().st_mtime:
        log(f"sift.write → {sift_path}")
        sift.write(ds.ref, sift_path, progress=False)
    if not plain.is_file() or plain.stat().st_mtime < src.stat().st_mtime:
        log(f"pyarrow → {plain} (uncompressed)")
        pq.write_table(ds.ref, plain, compression="none")
    return sift_path, plain


def rust_scan(sift_bin: Path, path: Path, columns: list[str], filt: str, runs: int) -> dict:
    """`sift bench scan`: the same scan timed in a Rust process (file opened every run)."""
    p = subprocess.run([str(sift_bin), "--quiet", "bench", "scan", str(path), "--columns",
                        ",".join(columns), "--filter", filt, "--runs", str(runs),
                        "--threads", "1"], capture_output=True, text=True, check=True)
    r = json.loads(p.stdout)
    rest = r["runs_ms"][1:] or r["runs_ms"]
    return {"runs_ms": r["runs_ms"], "first_ms": r["first_ms"], "best_ms": min(rest),
            "median_ms": statistics.median(rest), "rows": r["rows"]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--runs", type=int, default=6)
    ap.add_argument("--sift", type=Path, required=True, help="the sift binary")
    ap.add_argument("--sift-missing-reason", default="")
    args = ap.parse_args()
    if args.sift_missing_reason:
        log(f"no sift binary: {args.sift_missing_reason}")
        return 1
    sift_path, plain = prepare(args.scale)
    harness.warm_page_cache(sift_path)
    harness.warm_page_cache(plain)
    runs = args.runs
    duck = duckdb.connect()
    duck.execute("set threads = 1")

    ref = pq.read_table(plain, columns=COLUMNS, filters=Q6_DNF, use_threads=False)
    ref_sum = q6_sum(ref)
    log(f"Q6 selects {ref.num_rows:,} rows; revenue {ref_sum:.4f}")

    scans = {
        "sift-text": lambda: sift.open(sift_path).to_table(COLUMNS, Q6_TEXT, threads=1),
        "sift-expr": lambda: sift.open(sift_path).to_table(COLUMNS, Q6_EXPR, threads=1),
        "pyarrow": lambda: pq.read_table(plain, columns=COLUMNS, filters=Q6_DNF,
                                         use_threads=False),
        "duckdb-parquet": lambda: duck.sql(
            f"select {', '.join(COLUMNS)} from read_parquet('{plain}') where {Q6_SQL_WHERE}"
        ).to_arrow_table(),
        "polars-parquet": lambda: pl.scan_parquet(plain).filter(Q6_POLARS).select(COLUMNS)
        .collect().to_arrow(),
    }
    results: dict = {"scale": args.scale, "rows_selected": ref.num_rows, "scan": {},
                     "q6": {}, "pandas": {}, "overhead": {}}
    failures = []

    def check(name: str, got_sum: float, rows: int | None = None) -> str:
        ok = abs(got_sum - ref_sum) <= 1e-6 * abs(ref_sum) and (rows in (None, ref.num_rows))
        if not ok:
            failures.append(name)
        return "yes" if ok else f"NO ({got_sum} vs {ref_sum}, rows {rows})"

    log("Q6's scan: " + ", ".join(scans))
    for name, r in timed(scans, runs).items():
        t = r.pop("result")
        r["correct"] = check(name, q6_sum(t), t.num_rows)
        results["scan"][name] = r

    ds = sift.dataset(sift_path, threads=1)
    duck.register("ds", ds)
    q6_sql = "select sum(l_extendedprice * l_discount) from {t} where " + Q6_SQL_WHERE
    q6 = {
        "duckdb-sift-dataset": lambda: duck.sql(q6_sql.format(t="ds")).fetchall()[0][0],
        "duckdb-parquet": lambda: duck.sql(
            q6_sql.format(t=f"read_parquet('{plain}')")).fetchall()[0][0],
        "polars-sift-dataset": lambda: pl.scan_pyarrow_dataset(ds).filter(Q6_POLARS).select(
            (pl.col("l_extendedprice") * pl.col("l_discount")).sum()).collect().item(),
        "polars-parquet": lambda: pl.scan_parquet(plain).filter(Q6_POLARS).select(
            (pl.col("l_extendedprice") * pl.col("l_discount")).sum()).collect().item(),
    }
    log("Q6: " + ", ".join(q6))
    for name, r in timed(q6, runs).items():
        r["correct"] = check(name, float(r.pop("result")))
        if "sift-dataset" in name:
            r["scan_stats"] = dict(ds.last_scan_stats or {})
        results["q6"][name] = r

    pandas = {
        "sift": lambda: sift.open(sift_path).to_table(COLUMNS, Q6_TEXT, threads=1).to_pandas(),
        "pyarrow": lambda: pq.read_table(plain, columns=COLUMNS, filters=Q6_DNF,
                                         use_threads=False).to_pandas(),
    }
    log("pandas: " + ", ".join(pandas))
    for name, r in timed(pandas, runs).items():
        df = r.pop("result")
        r["correct"] = check(f"pandas-{name}", float((df["l_extendedprice"].astype(float)
                                                      * df["l_discount"].astype(float)).sum()),
                             len(df))
        results["pandas"][name] = r

    for label, cols, filt in (("q6", COLUMNS, Q6_TEXT), ("one row", ["l_comment"], TINY_TEXT)):
        log(f"overhead: {label}")
        py = timed({"python": lambda: sift.open(sift_path).to_table(cols, filt, threads=1)},
                   runs)["python"]
        rows = py.pop("result").num_rows
        rs = rust_scan(args.sift, sift_path, cols, filt, runs)
        if rs["rows"] != rows:
            failures.append(f"overhead {label}")
        results["overhead"][label] = {"python": py, "rust": rs, "rows": rows}

    results["sizes"] = {"sift": sift_path.stat().st_size, "parquet-uncompressed":
                        plain.stat().st_size}
    results["failures"] = failures
    results["machine"] = harness.machine_info([], os.getloadavg())
    results["sift_module"] = sift._sift.__file__
    results["versions"] = {"sift": sift.__version__, "pyarrow": pa.__version__,
                           "duckdb": duckdb.__version__, "polars": pl.__version__,
                           "python": sys.version.split()[0]}
    write_report(results, args)
    return 1 if failures else 0


def ms(x: float) -> str:
    return f"{x:.1f}" if x >= 10 else f"{x:.2f}"


def write_report(r: dict, args) -> None:
    sf = harness.scale_str(args.scale)
    out = harness.BENCH_DIR / "results" / f"python-sf{sf}"
    md, js = out.parent / (out.name + ".md"), out.parent / (out.name + ".json")
    js.write_text(json.dumps(r, indent=1, default=str) + "\n")
    lines = [f"# The Python package on TPC-H lineitem SF{sf}", "",
             "Generated by `bench/python.sh`; see bench/python.py for the method. One core, "
             "one thread per engine, all in one Python process; every run opens the file "
             f"anew. First run, then best and median of runs 2…{args.runs}, in ms. "
             f"Q6 selects {r['rows_selected']:,} rows.", ""]
    lines += r["machine"] + [""]
    lines += ["Versions: " + ", ".join(f"{k} {v}" for k, v in r["versions"].items())
              + f" (sift's module: `{r['sift_module']}`)", ""]
    s = r["sizes"]
    lines += [f"Files: Sift {s['sift'] / 1e6:.1f} MB, uncompressed Parquet "
              f"{s['parquet-uncompressed'] / 1e6:.1f} MB.", ""]

    def table(title, rows, base):
        out = [f"## {title}", "", "| engine | first | best | median | vs " + base + " | correct |",
               "|---|---:|---:|---:|---:|---|"]
        b = rows[base]["best_ms"]
        for name, x in rows.items():
            out.append(f"| {name} | {ms(x['first_ms'])} | {ms(x['best_ms'])} | "
                       f"{ms(x['median_ms'])} | {b / x['best_ms']:.2f}× | {x['correct']} |")
        return out + [""]

    lines += table("Q6's scan to a pyarrow table", r["scan"], "pyarrow")
    lines += [f"**sift (filter text) vs pyarrow.parquet.read_table(filters=…) on uncompressed "
              f"Parquet: {r['scan']['pyarrow']['best_ms'] / r['scan']['sift-text']['best_ms']:.1f}× "
              "faster** (target: 5×).", ""]
    lines += table("Q6 (the sum) by DuckDB and Polars", r["q6"], "duckdb-parquet")
    for name, x in r["q6"].items():
        if "scan_stats" in x:
            st = x["scan_stats"]
            lines.append(f"- {name}: Sift's scan saw {st.get('rows_scanned', 0):,} rows, "
                         f"returned {st.get('rows_matched', 0):,}, decoded "
                         f"{st.get('values_decoded', 0):,} values, pruned "
                         f"{st.get('blocks_pruned', 0)} of {st.get('blocks_total', 0)} blocks.")
    lines += ["", "## Q6's scan to a pandas DataFrame", "",
              "| engine | first | best | median | correct |", "|---|---:|---:|---:|---|"]
    for name, x in r["pandas"].items():
        lines.append(f"| {name} | {ms(x['first_ms'])} | {ms(x['best_ms'])} | "
                     f"{ms(x['median_ms'])} | {x['correct']} |")
    lines += ["", "## The Python layer's cost", "",
              "`File.to_table` against `sift bench scan` (the same scan in a Rust process, "
              "also opening the file every run).", "",
              "| scan | rows | Python best | Rust best | best: Python − Rust | best: Python / Rust "
              "| Python median | Rust median | median: Python / Rust |",
              "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for label, x in r["overhead"].items():
        p, q = x["python"]["best_ms"], x["rust"]["best_ms"]
        pm, qm = x["python"]["median_ms"], x["rust"]["median_ms"]
        lines.append(f"| {label} | {x['rows']:,} | {ms(p)} | {ms(q)} | {p - q:+.2f} | "
                     f"{p / q:.3f} | {ms(pm)} | {ms(qm)} | {pm / qm:.3f} |")
    if r["failures"]:
        lines += ["", "**Wrong results: " + ", ".join(r["failures"]) + "**"]
    md.write_text("\n".join(lines) + "\n")
    log(f"wrote {md}")


if __name__ == "__main__":
    sys.exit(main())
