#!/usr/bin/env python3
"""Sift's scan engine on unmodified Parquet files against DuckDB, Polars, pyarrow and
DataFusion's own Parquet reader (its filter pushdown off and on), every engine on one core.

Engines (each single-threaded, each process pinned to CPU 0 with `taskset -c 0`):

  sift                 `sift sql --threads 1` on the Parquet files (Sift's own Parquet scan,
                       default options)
  sift-rows            micro, sweep and nulls only: the same with `--scan-extremes off`, so
                       the scan returns the selected rows' values and the aggregate folds
                       them (by default an ungrouped MIN/MAX takes only each row group's
                       extremes from the scan, folded from the dictionary codes, or read
                       from its exact statistics where the filter holds for every row)
  sift-file            micro, sweep and nulls only: `sift sql --threads 1` on a `.sift`
                       conversion of the Parquet file (`sift convert`, untimed, cached next
                       to it): the same query on Sift's own format, for reference
  datafusion           `sift sql --threads 1 --parquet-reader datafusion`: DataFusion's own
                       Parquet reader, its `pushdown_filters` off (DataFusion's default)
  datafusion-pushdown  the same plus `--datafusion-pushdown`: filters evaluated inside the
                       Parquet reader (arrow-rs's RowFilter / late materialisation)
  duckdb               DuckDB (Python, in-process), `SET threads = 1`, one view `select *
                       from read_parquet(...)` per table, the query PREPAREd once
  polars               Polars (POLARS_MAX_THREADS=1), lazy `pl.scan_parquet` frames; the
                       query through `pl.SQLContext` (explicit joins, literal dates), or when
                       Polars' SQL cannot run it, the same query as lazy expressions
  pyarrow              micro, repeated and string columns only: `pyarrow.dataset` (footer
                       read untimed), `to_table(columns=..., filter=..., use_threads=False)`,
                       then pyarrow.compute (repeated column: read a1 and r, then filter)

Query sets:

  tpch      TPC-H Q1, Q6, Q12, Q14, Q19 (bench/tpch/qNN.sql, joins included) at --scale on
            lineitem, orders and part (tpchgen-cli data, decimals as it writes them) written
            four ways: pyarrow uncompressed, pyarrow snappy, pyarrow zstd (pyarrow's
            defaults otherwise; strings written as plain utf8), and DuckDB's `COPY ... (FORMAT
            parquet)` with its defaults (snappy, 122,880-row row groups).
  micro     The Parquet-Select micro-benchmark: --micro-rows rows (default 2^24), 20 int64
            columns a1..a20 uniform in [0, 2^w), written by pyarrow (dictionary encoding,
            2^20-row row groups, required columns); `select max(a10), max(a11), max(a12)
            from t where a1 < X and a2 < Y` with X, Y powers of two so that the conjunction
            selects 1/1, 1/2, ... 1/128 of the rows.  Headline: w = 5 uncompressed and w = 5
            snappy at all eight selectivities.
  sweep     The same query for the other bit widths (--widths, default 1,2,4,8,12,16) at
            --sweep-selectivities (default 1/1, 1/4, 1/16, 1/128; a selectivity a width cannot
            reach with power-of-two bounds, 2^-k with k > 2w, is left out), uncompressed.
  nulls     The w = 5 table with nulls in every column (independent per column, optional
            columns), same values otherwise: ~10 % nulls at the eight selectivities, and
            the other --null-fractions (default 1 % and 50 %) at --sweep-selectivities;
            reported as nullable / non-null per engine.
  repeated  The micro table at w = 8 plus `r` list<int64> (0-8 elements per row, values
            uniform in [0, 2^16)); `select r from t where a1 < X` at 1/8 and 1/128,
            materialised by every engine.  (w = 8: one 5-bit column cannot select 1/128.)
  strings   The micro table at w = 8 plus `s` utf8 drawn from 20,000 distinct 20-byte
            strings (one dictionary page per column chunk, ~50 data pages); `select max(s)
            from t where a1 < X` at 1/2, 1/8 and 1/128: the string column decoded at the
            selected rows.
  types     The micro table at w = 8 plus float32 `f` (uniform in [0, 1): its dictionary
            overflows, so most pages are PLAIN), float32 `fq` (64 quarter values:
            dictionary pages), uint32 `u32` (the whole range), uint64 `u64` (below 2^63)
            and int64 `i64` (below 2^40: PLAIN pages after the dictionary overflows): a
            filter on each (`f < 0.125`, a double compared with a float column) and `max`
            of the first four at the rows `a1 < X` selects (1/8).

Timing, as bench/sql.py: one fresh process per (engine, case, file) opens the files and
plans the query untimed (`sift sql --runs N`: tables registered and the SQL planned; DuckDB:
connection, views, PREPARE; Polars: the LazyFrame built; pyarrow: the dataset opened and its
footer read), then runs it --runs times (default 6), each run timed in that process.  Run 1
is the *first run* (fresh process, page cache warm: every file the engine reads is read once
before); *best* and *median* are of runs 2..N.  Every result is compared with DuckDB's
(numbers to a relative 1e-6 or an absolute 1e-4 — DataFusion's decimal averages keep six
digits —, integers exactly, in order for ORDER BY queries; the repeated column's selected
lists compared as a multiset through an order-independent digest of every row's list).  The
`sift sql` engines' results come from a separate `sift sql -o csv` (lists: `--out x.arrow`)
run, plus the row count of the timed runs.  A mismatch or a failure makes the exit status 1;
the report is written all the same, with the failure marked.

Run through bench/parquet.sh (venv, release build of sift unless SIFT_BIN is given, one
core).  Direct use:
    taskset -c 0 python bench/parquet.py --scale 0.01 --micro-rows 100000 --sift /tmp/bench-sift
Data: bench/data/parquet-sf{SF}/ (TPC-H) and bench/data/parquet-micro-r{ROWS}/ (cached, with
manifests).  Results: bench/results/parquet-sf{SF}.{md,json} and the micro figure
bench/results/parquet-micro.png (parquet-micro-r{ROWS}.png when --micro-rows is not 2^24);
with --engines or --cases, the same names ending in -partial, beside the full report.
"""

from __future__ import annotations

import os

# Single-threaded libraries in this process and in the Python workers it starts.
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
               "NUMEXPR_NUM_THREADS", "ARROW_IO_THREADS", "RAYON_NUM_THREADS",
               "TOKIO_WORKER_THREADS", "POLARS_MAX_THREADS")
for _var in THREAD_VARS:
    os.environ[_var] = "1"

import argparse  # noqa: E402
import csv  # noqa: E402
import datetime  # noqa: E402
import gc  # noqa: E402
import io  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness  # noqa: E402  (the shared helpers; sets pyarrow to one CPU / one I/O thread)

BENCH_DIR = Path(__file__).resolve().parent
REPO_DIR = BENCH_DIR.parent
TPCH_DIR = BENCH_DIR / "tpch"

ENGINE_KEYS = ("sift", "sift-rows", "sift-file", "datafusion", "datafusion-pushdown", "duckdb",
               "polars", "pyarrow")
SIFT_ENGINES = ("sift", "sift-rows", "sift-file", "datafusion", "datafusion-pushdown")
# Case groups whose query is an ungrouped MIN/MAX, where `sift-rows` differs from `sift`;
# `sift-file` runs them on `.sift` conversions.
ROWS_GROUPS = ("micro", "sweep", "nulls")
ROWS_ENGINES = ("sift-rows", "sift-file")
SIFT_EXTRA = {"sift": (), "sift-rows": ("--scan-extremes", "off"), "sift-file": (),
              "datafusion": ("--parquet-reader", "datafusion"),
              "datafusion-pushdown": ("--parquet-reader", "datafusion",
                                      "--datafusion-pushdown")}
ENGINE_NOTES = {
    "sift": "`sift sql --threads 1` on the Parquet files: Sift's own page-level Parquet scan "
            "(default options: filters on the encoded pages, scan aggregates and join filters "
            "on).",
    "sift-rows": "the same with `--scan-extremes off` (micro, sweep and nulls cases): the "
                 "scan returns the selected rows of a10, a11 and a12, decoded, and Sift's "
                 "aggregate folds them; `sift` takes from the scan only each row group's "
                 "smallest and largest selected value, folded from the dictionary codes "
                 "(or, where the footer statistics prove the filter true for every row of a "
                 "row group, read from that row group's exact statistics, no page read).",
    "sift-file": "`sift sql --threads 1` on a `.sift` conversion of the same Parquet file "
                 "(`sift convert` with its defaults, untimed; micro, sweep and nulls cases): "
                 "the query on Sift's own format, its MIN/MAX folded from the chunks' codes.",
    "datafusion": "`sift sql --threads 1 --parquet-reader datafusion`: DataFusion's own "
                  "Parquet reader (ListingTable), `pushdown_filters` off (DataFusion's "
                  "default: row-group and page-index pruning, then the filter after decoding).",
    "datafusion-pushdown": "the same plus `--datafusion-pushdown` (DataFusion's "
                           "`pushdown_filters` on: arrow-rs's RowFilter, i.e. the filter "
                           "columns decoded first and the other columns only for the rows "
                           "that pass).",
    "duckdb": "DuckDB (Python, in-process): an in-memory connection, `SET threads = 1`, a view "
              "`select * from read_parquet('X.parquet')` per table, `PREPARE` once (untimed); "
              "each run `EXECUTE` + fetchall (repeated column: fetched as an Arrow table).",
    "polars": "Polars, `POLARS_MAX_THREADS=1`: `pl.scan_parquet` per table (untimed), the "
              "query through `pl.SQLContext(...).execute(sql, eager=False)` — the same SQL "
              "with literal dates and explicit JOIN ... ON —, or when Polars' SQL fails, the "
              "same query written as lazy expressions (the report says which); each run "
              "`.collect()`.",
    "pyarrow": "pyarrow (one CPU, one I/O thread): `pyarrow.dataset.dataset(file)` with its "
               "footer read (untimed); micro: each run `to_table(columns=[a10, a11, a12], "
               "filter=(a1 < X) & (a2 < Y), use_threads=False)` (row-group pruning by "
               "statistics, the filter applied after decoding, as `pq.read_table(filters=...)` "
               "does) then `pc.max` of each column; repeated column: `to_table(columns=[a1, "
               "r])` then `Table.filter(a1 < X)` and the r column; string column: "
               "`to_table(columns=[s], filter=a1 < X)` then `pc.max`.",
}

TPCH_TABLES = ("lineitem", "orders", "part")
TPCH_QUERIES = {"q01": ("lineitem",), "q06": ("lineitem",), "q12": ("orders", "lineitem"),
                "q14": ("lineitem", "part"), "q19": ("lineitem", "part")}
TPCH_ORDERED = {"q01": True, "q06": False, "q12": True, "q14": False, "q19": False}
# key -> (label, writer, codec)
TPCH_FILES = {"pyarrow-none": ("pyarrow uncompressed", "pyarrow", "none"),
              "pyarrow-snappy": ("pyarrow snappy", "pyarrow", "snappy"),
              "pyarrow-zstd": ("pyarrow zstd", "pyarrow", "zstd"),
              "duckdb": ("DuckDB COPY defaults (snappy)", "duckdb", "snappy"),
              # Format version 2: DELTA_BINARY_PACKED keys and prices, DELTA_LENGTH_BYTE_ARRAY
              # comments, where the dictionary does not pay.
              "duckdb-v2": ("DuckDB COPY, PARQUET_VERSION V2 (snappy)", "duckdb-v2", "snappy")}
# The COPY options of each DuckDB-written file.
DUCKDB_COPY = {"duckdb": "(FORMAT parquet)", "duckdb-v2": "(FORMAT parquet, PARQUET_VERSION V2)"}

MICRO_ROWS = 1 << 24
MICRO_COLUMNS = 20
MICRO_WIDTH = 5
ROW_GROUP = 1 << 20            # pyarrow's default maximum row group length
MICRO_SEED = 20240611
NULL_SEED = 20240612
LIST_SEED = 20240613
STRING_SEED = 20240614
STRING_DISTINCT = 20_000
NULL_FRACTION = 0.10           # the nullable micro's headline fraction (the target's)
NULL_FRACTIONS = (0.01, 0.10, 0.50)
LIST_MAX_LEN = 8
LIST_VALUE_BITS = 16
REPEATED_WIDTH = 8
HEADLINE_DENOMS = (1, 2, 4, 8, 16, 32, 64, 128)
SWEEP_WIDTHS = (1, 2, 4, 8, 12, 16)
SWEEP_DENOMS = (1, 4, 16, 128)
REPEATED_DENOMS = (8, 128)
STRINGS_DENOMS = (2, 8, 128)
STRINGS_WIDTH = 8
TYPES_SEED = 20240615
TYPES_WIDTH = 8
TYPES_DENOM = 8
# The `types` queries: key, report label, SQL (`{x}`: the bound selecting 1/TYPES_DENOM).
TYPES_QUERIES = (
    ("f32-plain", "float32, PLAIN pages: `f < 0.125`",
     "select count(*), max(f) from t where f < 0.125"),
    ("f32-dict", "float32, dictionary: `fq between -2.5 and 3.25`",
     "select count(*), max(fq) from t where fq between -2.5 and 3.25"),
    ("u32", "uint32: `u32 > 4000000000`",
     "select count(*), max(u32) from t where u32 > 4000000000"),
    ("u64", "uint64: `u64 < 10^18`",
     "select count(*), max(u64) from t where u64 < 1000000000000000000"),
    ("i64-plain", "int64, PLAIN pages: `i64 < 2^37`",
     "select count(*), max(i64) from t where i64 < 137438953472"),
    ("select", f"all four at 1/{TYPES_DENOM} of the rows: `a1 < X`",
     "select max(f), max(fq), max(u32), max(u64) from t where a1 < {x}"),
)
SMOKE_WIDTHS = (1, 16)
SMOKE_DENOMS = (1, 8, 128)

CASE_GROUPS = ("tpch", "micro", "sweep", "nulls", "repeated", "strings", "types")

# Polars SQL texts of the five TPC-H queries: the same queries as bench/tpch/qNN.sql with
# the date arithmetic folded into literals and the joins written as JOIN ... ON (a comma
# join is a cross join in Polars' SQL; Q19's key sits in each of its three disjuncts).
POLARS_SQL = {
    "q01": """
select l_returnflag, l_linestatus, sum(l_quantity) as sum_qty,
    sum(l_extendedprice) as sum_base_price,
    sum(l_extendedprice * (1 - l_discount)) as sum_disc_price,
    sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) as sum_charge,
    avg(l_quantity) as avg_qty, avg(l_extendedprice) as avg_price,
    avg(l_discount) as avg_disc, count(*) as count_order
from lineitem
where l_shipdate <= date '1998-09-02'
group by l_returnflag, l_linestatus
order by l_returnflag, l_linestatus""",
    "q06": """
select sum(l_extendedprice * l_discount) as revenue
from lineitem
where l_shipdate >= date '1994-01-01' and l_shipdate < date '1995-01-01'
    and l_discount between 0.05 and 0.07 and l_quantity < 24""",
    "q12": """
select l_shipmode,
    sum(case when o_orderpriority = '1-URGENT' or o_orderpriority = '2-HIGH' then 1 else 0
        end) as high_line_count,
    sum(case when o_orderpriority <> '1-URGENT' and o_orderpriority <> '2-HIGH' then 1
        else 0 end) as low_line_count
from lineitem join orders on o_orderkey = l_orderkey
where l_shipmode in ('MAIL', 'SHIP') and l_commitdate < l_receiptdate
    and l_shipdate < l_commitdate and l_receiptdate >= date '1994-01-01'
    and l_receiptdate < date '1995-01-01'
group by l_shipmode
order by l_shipmode""",
    "q14": """
select 100.00 * sum(case when p_type like 'PROMO%' then l_extendedprice * (1 - l_discount)
        else 0 end) / sum(l_extendedprice * (1 - l_discount)) as promo_revenue
from lineitem join part on l_partkey = p_partkey
where l_shipdate >= date '1995-09-01' and l_shipdate < date '1995-10-01'""",
    "q19": """
select sum(l_extendedprice * (1 - l_discount)) as revenue
from lineitem join part on p_partkey = l_partkey
where (p_brand = 'Brand#12' and p_container in ('SM CASE', 'SM BOX', 'SM PACK', 'SM PKG')
        and l_quantity >= 1 and l_quantity <= 11 and p_size between 1 and 5
        and l_shipmode in ('AIR', 'AIR REG') and l_shipinstruct = 'DELIVER IN PERSON')
    or (p_brand = 'Brand#23' and p_container in ('MED BAG', 'MED BOX', 'MED PKG', 'MED PACK')
        and l_quantity >= 10 and l_quantity <= 20 and p_size between 1 and 10
        and l_shipmode in ('AIR', 'AIR REG') and l_shipinstruct = 'DELIVER IN PERSON')
    or (p_brand = 'Brand#34' and p_container in ('LG CASE', 'LG BOX', 'LG PACK', 'LG PKG')
        and l_quantity >= 20 and l_quantity <= 30 and p_size between 1 and 15
        and l_shipmode in ('AIR', 'AIR REG') and l_shipinstruct = 'DELIVER IN PERSON')""",
}


def log(msg: str) -> None:
    print(f"[parquet] {msg}", file=sys.stderr, flush=True)


def micro_sql(x: int, y: int) -> str:
    return f"select max(a10), max(a11), max(a12) from t where a1 < {x} and a2 < {y}"


def repeated_sql(x: int) -> str:
    return f"select r from t where a1 < {x}"


def strings_sql(x: int) -> str:
    return f"select max(s) from t where a1 < {x}"


def micro_bounds(width: int, denom: int) -> tuple[int, int] | None:
    """X, Y (powers of two) with P(a1 < X and a2 < Y) = 1/denom for values uniform in
    [0, 2^width); None when the width cannot reach it."""
    k = denom.bit_length() - 1
    if 1 << k != denom:
        raise ValueError(f"selectivity 1/{denom}: not a power of two")
    kx, ky = (k + 1) // 2, k // 2
    if kx > width:
        return None
    return 1 << (width - kx), 1 << (width - ky)


# =========================================================================== the worker
# `parquet.py worker SPEC.json`: one (engine, case) in this fresh process: open/plan
# untimed, then N timed runs; prints one JSON line.  Imports only what its engine needs.


def list_digest(arr) -> dict:
    """An order-independent digest of a list<int> column: row and element counts, nulls,
    the sum of the elements and a 64-bit sum over rows of a hash of (length, elements in
    order)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks else pa.array([], arr.type)
    if pa.types.is_list_view(arr.type) or pa.types.is_large_list_view(arr.type):
        arr = arr.cast(pa.large_list(arr.type.value_type))
    n = len(arr)
    lens = pc.fill_null(pc.list_value_length(arr), 0).to_numpy(zero_copy_only=False) \
        .astype(np.int64)
    flat = pc.list_flatten(arr)
    flat_nulls = flat.null_count
    vals = pc.fill_null(flat, -1).to_numpy(zero_copy_only=False).astype(np.int64)
    if len(vals) != int(lens.sum()):
        raise RuntimeError(f"list digest: {len(vals)} elements, lengths say {lens.sum()}")
    m64 = np.uint64(0xFFFFFFFFFFFFFFFF)

    def mix(x):
        x = x.astype(np.uint64)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return (x ^ (x >> np.uint64(31))) & m64

    with np.errstate(over="ignore"):
        starts = np.cumsum(lens) - lens
        pos = np.arange(len(vals), dtype=np.int64) - np.repeat(starts, lens)
        elem = mix(vals.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
                   + pos.astype(np.uint64) * np.uint64(0xD1B54A32D192ED03))
        row = np.zeros(n, dtype=np.uint64)
        nonempty = lens > 0
        if len(vals):
            row[nonempty] = np.add.reduceat(elem, starts[nonempty])
        row = mix(row + lens.astype(np.uint64) * np.uint64(0x8CB92BA72F3D8DD7))
        h = int(row.sum(dtype=np.uint64)) if n else 0
    return {"rows": n, "null_rows": arr.null_count, "elements": int(lens.sum()),
            "null_elements": flat_nulls, "sum": int(vals[vals >= 0].sum()) if len(vals) else 0,
            "hash": f"{h:016x}"}


def polars_lazy(name: str, frames: dict, params: dict):
    """The lazy-expression form of each query, for when Polars' SQL cannot run it."""
    import polars as pl
    D = datetime.date
    c = pl.col
    if name == "micro":
        t = frames["t"]
        return t.filter((c("a1") < params["x"]) & (c("a2") < params["y"])).select(
            c("a10").max(), c("a11").max(), c("a12").max())
    if name == "repeated":
        return frames["t"].filter(c("a1") < params["x"]).select("r")
    if name == "strings":
        return frames["t"].filter(c("a1") < params["x"]).select(c("s").max())
    li = frames.get("lineitem")
    dp = c("l_extendedprice") * (1 - c("l_discount"))
    if name == "q01":
        return li.filter(c("l_shipdate") <= D(1998, 9, 2)).group_by(
            "l_returnflag", "l_linestatus").agg(
            c("l_quantity").sum().alias("sum_qty"),
            c("l_extendedprice").sum().alias("sum_base_price"),
            dp.sum().alias("sum_disc_price"),
            (dp * (1 + c("l_tax"))).sum().alias("sum_charge"),
            c("l_quantity").cast(pl.Float64).mean().alias("avg_qty"),
            c("l_extendedprice").cast(pl.Float64).mean().alias("avg_price"),
            c("l_discount").cast(pl.Float64).mean().alias("avg_disc"),
            pl.len().alias("count_order")).sort("l_returnflag", "l_linestatus")
    if name == "q06":
        disc = c("l_discount").cast(pl.Float64)
        return li.filter((c("l_shipdate") >= D(1994, 1, 1)) & (c("l_shipdate") < D(1995, 1, 1))
                         & (disc >= 0.05 - 1e-9) & (disc <= 0.07 + 1e-9)
                         & (c("l_quantity").cast(pl.Float64) < 24)).select(
            (c("l_extendedprice") * c("l_discount")).sum().alias("revenue"))
    if name == "q12":
        prio = c("o_orderpriority")
        high = prio.is_in(["1-URGENT", "2-HIGH"])
        return li.filter(c("l_shipmode").is_in(["MAIL", "SHIP"])
                         & (c("l_commitdate") < c("l_receiptdate"))
                         & (c("l_shipdate") < c("l_commitdate"))
                         & (c("l_receiptdate") >= D(1994, 1, 1))
                         & (c("l_receiptdate") < D(1995, 1, 1))).join(
            frames["orders"], left_on="l_orderkey", right_on="o_orderkey").group_by(
            "l_shipmode").agg(high.cast(pl.Int64).sum().alias("high_line_count"),
                              (~high).cast(pl.Int64).sum().alias("low_line_count")).sort(
            "l_shipmode")
    if name == "q14":
        rev = dp.cast(pl.Float64)
        return li.filter((c("l_shipdate") >= D(1995, 9, 1))
                         & (c("l_shipdate") < D(1995, 10, 1))).join(
            frames["part"], left_on="l_partkey", right_on="p_partkey").select(
            (100.0 * pl.when(c("p_type").str.starts_with("PROMO")).then(rev).otherwise(0.0)
             .sum() / rev.sum()).alias("promo_revenue"))
    if name == "q19":
        q = c("l_quantity").cast(pl.Float64)

        def term(brand, containers, lo, size):
            return ((c("p_brand") == brand) & c("p_container").is_in(containers)
                    & (q >= lo) & (q <= lo + 10) & (c("p_size") >= 1) & (c("p_size") <= size))
        common = c("l_shipmode").is_in(["AIR", "AIR REG"]) & (
            c("l_shipinstruct") == "DELIVER IN PERSON")
        return li.filter(common).join(frames["part"], left_on="l_partkey",
                                      right_on="p_partkey").filter(
            term("Brand#12", ["SM CASE", "SM BOX", "SM PACK", "SM PKG"], 1, 5)
            | term("Brand#23", ["MED BAG", "MED BOX", "MED PKG", "MED PACK"], 10, 10)
            | term("Brand#34", ["LG CASE", "LG BOX", "LG PACK", "LG PKG"], 20, 15)).select(
            dp.sum().alias("revenue"))
    raise ValueError(f"no lazy form for {name}")


def worker_setup(spec: dict):
    """(run, to_result, via): `run()` is one timed run; `to_result(x)` turns its return
    value into (rows, payload) after the clock stopped."""
    engine, kind = spec["engine"], spec["kind"]
    tables = {k: str(v) for k, v in spec["tables"].items()}
    if engine == "duckdb":
        import duckdb
        con = duckdb.connect(config={"threads": 1})
        con.execute("SET threads = 1")
        for name, path in tables.items():
            p = path.replace("'", "''")
            con.execute(f"create view {name} as select * from read_parquet('{p}')")
        con.execute(f"PREPARE q AS {spec['sql']}")
        if kind == "lists":
            rel_arrow = "to_arrow_table" if hasattr(con.sql("select 1"), "to_arrow_table") \
                else "fetch_arrow_table"
            return (lambda: getattr(con.sql("EXECUTE q"), rel_arrow)(),
                    lambda t: (t.num_rows, {"digest": list_digest(t.column(0))}), "sql")
        return (lambda: con.sql("EXECUTE q").fetchall(),
                lambda rows: (len(rows), {"result": [[harness.jsonable(v) for v in r] for r in rows]}),
                "sql")
    if engine == "polars":
        import polars as pl
        frames = {name: pl.scan_parquet(path) for name, path in tables.items()}
        if spec.get("polars_lazy"):
            lf = polars_lazy(spec["lazy"]["name"], frames, spec["lazy"])
            via = f"lazy (SQL failed: {spec['polars_lazy']})"
        else:
            ctx = pl.SQLContext(frames)
            lf = ctx.execute(spec["polars_sql"], eager=False)
            lf.explain()             # optimised plan, untimed: most SQL failures show here
            via = "sql"
        if kind == "lists":
            return (lf.collect, lambda df: (df.height, {"digest": list_digest(
                df.to_arrow().column(0))}), via)
        return (lf.collect, lambda df: (df.height, {"result": [[harness.jsonable(v) for v in r]
                                                               for r in df.rows()]}), via)
    if engine == "pyarrow":
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.dataset as pads
        pa.set_cpu_count(1)
        pa.set_io_thread_count(1)
        ds = pads.dataset(tables["t"], format="parquet")
        for frag in ds.get_fragments():
            frag.ensure_complete_metadata()
        lz = spec["lazy"]
        if lz["name"] == "micro":
            filt = (pc.field("a1") < lz["x"]) & (pc.field("a2") < lz["y"])

            def run():
                t = ds.to_table(columns=["a10", "a11", "a12"], filter=filt, use_threads=False)
                return [tuple(pc.max(t[c]).as_py() for c in ("a10", "a11", "a12"))]
            return run, lambda rows: (len(rows), {"result": [list(r) for r in rows]}), \
                "dataset"
        if lz["name"] == "repeated":
            x = lz["x"]

            def run():
                t = ds.to_table(columns=["a1", "r"], use_threads=False)
                return t.filter(pc.less(t["a1"], x)).select(["r"])
            return run, lambda t: (t.num_rows, {"digest": list_digest(t.column(0))}), \
                "dataset"
        if lz["name"] == "strings":
            filt = pc.field("a1") < lz["x"]

            def run():
                t = ds.to_table(columns=["s"], filter=filt, use_threads=False)
                return [(pc.max(t["s"]).as_py(),)]
            return run, lambda rows: (len(rows), {"result": [list(r) for r in rows]}), \
                "dataset"
        raise ValueError(f"pyarrow: no plan for {lz['name']}")
    raise ValueError(f"unknown worker engine {engine}")


def short_error(e: Exception) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0][:200] if text else ''}"


def timed_runs(spec: dict) -> tuple:
    t0 = time.perf_counter()
    run, to_result, via = worker_setup(spec)
    prepare_ms = (time.perf_counter() - t0) * 1e3
    times, first = [], None
    for i in range(spec["runs"]):
        gc.collect()
        t = time.perf_counter()
        res = run()
        times.append((time.perf_counter() - t) * 1e3)
        if i == 0:
            first = res
        del res
    return prepare_ms, times, first, to_result, via


def worker_main(argv: list[str]) -> int:
    spec = json.loads(Path(argv[0]).read_text())
    try:
        prepare_ms, times, first, to_result, via = timed_runs(spec)
    except Exception as e:  # noqa: BLE001
        if spec["engine"] != "polars" or spec.get("polars_lazy"):
            raise
        # Polars' SQL could not run the query: the same query as lazy expressions, timed
        # from the start again (a fresh LazyFrame; the files' pages are cached either way).
        spec["polars_lazy"] = short_error(e)
        prepare_ms, times, first, to_result, via = timed_runs(spec)
    rows, payload = to_result(first)
    print(json.dumps({"prepare_ms": prepare_ms, "runs": times, "rows": rows, "via": via,
                      **payload}))
    return 0


# =========================================================================== data


def manifest_ok(path: Path, params: dict) -> bool:
    try:
        return json.loads(path.read_text())["params"] == params
    except (OSError, ValueError, KeyError, TypeError):
        return False


def parquet_meta(path: Path) -> dict:
    import pyarrow.parquet as pq
    m = pq.ParquetFile(path).metadata
    codecs: dict[str, int] = {}
    for i in range(m.num_row_groups):
        rg = m.row_group(i)
        for j in range(rg.num_columns):
            cc = rg.column(j).compression
            codecs[cc] = codecs.get(cc, 0) + 1
    return {"rows": m.num_rows, "row_groups": m.num_row_groups, "codecs": codecs,
            "created_by": m.created_by, "bytes": path.stat().st_size}


def prepare_tpch(scale: float, base: Path) -> dict[str, dict[str, Path]]:
    """{file key: {table: path}}: tpchgen-cli's lineitem, orders and part at `scale`,
    rewritten by pyarrow (none, snappy, zstd) and by DuckDB's COPY (its defaults, and
    format version 2)."""
    import harness
    import pyarrow as pa
    import pyarrow.parquet as pq
    base.mkdir(parents=True, exist_ok=True)
    src = base / "tpchgen"
    gen = {"generator": harness.tpchgen_version(), "scale": harness.scale_str(scale),
           "tables": list(TPCH_TABLES)}
    if not (manifest_ok(src / "manifest.json", gen)
            and all((src / f"{t}.parquet").is_file() for t in TPCH_TABLES)):
        tmp = base / "tpchgen.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        log(f"generating TPC-H SF{harness.scale_str(scale)} ({', '.join(TPCH_TABLES)}) with "
            "tpchgen-cli ...")
        subprocess.run([harness.find_tool("tpchgen-cli"), "parquet", "-s",
                        harness.scale_str(scale), "--tables", ",".join(TPCH_TABLES),
                        "-o", str(tmp), "--quiet"], check=True)
        (tmp / "manifest.json").write_text(json.dumps({"params": gen}, indent=1) + "\n")
        shutil.rmtree(src, ignore_errors=True)
        tmp.rename(src)
    out: dict[str, dict[str, Path]] = {}
    for key, (_label, writer, codec) in TPCH_FILES.items():
        d = base / key
        if writer == "pyarrow":
            params = {"source": gen, "writer": f"pyarrow {pa.__version__}", "codec": codec,
                      "strings": "utf8"}
        else:
            import duckdb
            params = {"source": gen, "writer": f"duckdb {duckdb.__version__}",
                      "copy": DUCKDB_COPY[writer]}
        if not (manifest_ok(d / "manifest.json", params)
                and all((d / f"{t}.parquet").is_file() for t in TPCH_TABLES)):
            tmp = base / f"{key}.tmp"
            shutil.rmtree(tmp, ignore_errors=True)
            tmp.mkdir()
            for t in TPCH_TABLES:
                log(f"writing {key}/{t}.parquet")
                if writer == "pyarrow":
                    table = pq.read_table(src / f"{t}.parquet", use_threads=False)
                    table = table.cast(pa.schema([
                        pa.field(f.name, pa.string() if pa.types.is_string_view(f.type)
                                 or pa.types.is_large_string(f.type) else f.type,
                                 nullable=f.nullable) for f in table.schema]))
                    pq.write_table(table, tmp / f"{t}.parquet", compression=codec)
                    del table
                else:
                    import duckdb
                    con = duckdb.connect()
                    s = str(src / f"{t}.parquet").replace("'", "''")
                    o = str(tmp / f"{t}.parquet").replace("'", "''")
                    con.execute(f"COPY (select * from read_parquet('{s}')) TO '{o}' "
                                f"{DUCKDB_COPY[writer]}")
                    con.close()
            (tmp / "manifest.json").write_text(json.dumps({"params": params}, indent=1) + "\n")
            shutil.rmtree(d, ignore_errors=True)
            tmp.rename(d)
        out[key] = {t: d / f"{t}.parquet" for t in TPCH_TABLES}
    return out


@dataclass(frozen=True)
class MicroSpec:
    width: int
    codec: str = "none"
    nulls: float = 0.0             # the fraction of each column's values that are null
    lists: bool = False
    strings: bool = False
    types: bool = False            # + float32 f, fq, uint32 u32, uint64 u64, int64 i64

    @property
    def name(self) -> str:
        nulls = "" if not self.nulls else (
            "-nulls" if self.nulls == NULL_FRACTION else f"-nulls{self.nulls * 100:g}")
        return (f"w{self.width}" + nulls
                + ("-list" if self.lists else "") + ("-strings" if self.strings else "")
                + ("-types" if self.types else "") + f"-{self.codec}")

    @property
    def label(self) -> str:
        s = f"w={self.width}"
        if self.nulls:
            s += f", {self.nulls:.0%} nulls"
        if self.lists:
            s += ", + r list<int64>"
        if self.strings:
            s += f", + s utf8 ({STRING_DISTINCT:,} distinct)"
        if self.types:
            s += ", + float32 f, fq, uint32 u32, uint64 u64, int64 i64"
        return s + (", uncompressed" if self.codec == "none" else f", {self.codec}")


def micro_chunk(spec: MicroSpec, chunk: int, n: int):
    """Columns a1..a20 (and r) of rows [chunk * ROW_GROUP, + n): the same values for every
    file of one width; nulls and lists from their own seeds."""
    import numpy as np
    import pyarrow as pa
    cols, masks = [], []
    for j in range(MICRO_COLUMNS):
        rng = np.random.default_rng([MICRO_SEED, spec.width, chunk, j])
        v = rng.integers(0, 1 << spec.width, size=n, dtype=np.int64)
        mask = None
        if spec.nulls:
            mask = np.random.default_rng([NULL_SEED, chunk, j]).random(n) < spec.nulls
        cols.append(pa.array(v, type=pa.int64(), mask=mask))
        masks.append(mask)
    if spec.lists:
        rng = np.random.default_rng([LIST_SEED, chunk])
        lens = rng.integers(0, LIST_MAX_LEN + 1, size=n, dtype=np.int64)
        values = rng.integers(0, 1 << LIST_VALUE_BITS, size=int(lens.sum()), dtype=np.int64)
        offsets = np.zeros(n + 1, dtype=np.int32)
        np.cumsum(lens, out=offsets[1:])
        cols.append(pa.ListArray.from_arrays(pa.array(offsets), pa.array(values)))
    if spec.strings:
        vocab = np.array([f"value-{i:08d}-{(i * 7919) % 100_000:05d}"
                          for i in range(STRING_DISTINCT)])
        rng = np.random.default_rng([STRING_SEED, chunk])
        cols.append(pa.array(vocab[rng.integers(0, STRING_DISTINCT, size=n)], type=pa.utf8()))
    if spec.types:
        rng = np.random.default_rng([TYPES_SEED, chunk])
        cols.append(pa.array(rng.random(n, dtype=np.float32), type=pa.float32()))
        quarters = rng.integers(0, 64, size=n).astype(np.float32) / 4 - 8
        cols.append(pa.array(quarters, type=pa.float32()))
        cols.append(pa.array(rng.integers(0, 1 << 32, size=n, dtype=np.uint64)
                             .astype(np.uint32), type=pa.uint32()))
        cols.append(pa.array(rng.integers(0, 1 << 63, size=n, dtype=np.uint64),
                             type=pa.uint64()))
        cols.append(pa.array(rng.integers(0, 1 << 40, size=n, dtype=np.int64),
                             type=pa.int64()))
    return cols, masks


def micro_schema(spec: MicroSpec):
    import pyarrow as pa
    fields = [pa.field(f"a{j + 1}", pa.int64(), nullable=bool(spec.nulls))
              for j in range(MICRO_COLUMNS)]
    if spec.lists:
        fields.append(pa.field("r", pa.list_(pa.int64()), nullable=False))
    if spec.strings:
        fields.append(pa.field("s", pa.utf8(), nullable=False))
    if spec.types:
        fields += [pa.field("f", pa.float32(), nullable=False),
                   pa.field("fq", pa.float32(), nullable=False),
                   pa.field("u32", pa.uint32(), nullable=False),
                   pa.field("u64", pa.uint64(), nullable=False),
                   pa.field("i64", pa.int64(), nullable=False)]
    return pa.schema(fields)


def prepare_micro(spec: MicroSpec, rows: int, base: Path) -> tuple[Path, dict]:
    """The micro file of `spec` (cached with a manifest) and its manifest: the rows each
    selectivity's bounds select, counted while writing."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq
    base.mkdir(parents=True, exist_ok=True)
    path = base / f"{spec.name}.parquet"
    man = base / f"{spec.name}.json"
    params = {"rows": rows, "width": spec.width, "codec": spec.codec, "nulls": bool(spec.nulls),
              "null_fraction": spec.nulls, "lists": spec.lists,
              "strings": spec.strings, "string_distinct": STRING_DISTINCT,
              "seeds": [MICRO_SEED, NULL_SEED, LIST_SEED], "row_group": ROW_GROUP,
              "list_max_len": LIST_MAX_LEN, "list_value_bits": LIST_VALUE_BITS,
              "writer": f"pyarrow {pa.__version__}", "columns": MICRO_COLUMNS}
    if spec.types:
        # Only then: the other files' manifests (and caches) stay as they were.
        params["types_seed"] = TYPES_SEED
        params["types_columns"] = [f.name for f in micro_schema(spec)][MICRO_COLUMNS:]
    if path.is_file() and manifest_ok(man, params):
        return path, json.loads(man.read_text())
    log(f"writing micro file {path.name} ({rows:,} rows)")
    pairs = {d: micro_bounds(spec.width, d) for d in HEADLINE_DENOMS}
    pairs = {d: b for d, b in pairs.items() if b is not None}
    singles = {d: (1 << spec.width) // d for d in HEADLINE_DENOMS if d <= 1 << spec.width}
    counts2 = dict.fromkeys(pairs, 0)
    counts1 = dict.fromkeys(singles, 0)
    tmp = path.with_name(path.stem + ".writing.parquet")
    schema = micro_schema(spec)
    with pq.ParquetWriter(tmp, schema, compression=spec.codec) as w:
        for chunk, start in enumerate(range(0, rows, ROW_GROUP)):
            n = min(ROW_GROUP, rows - start)
            cols, masks = micro_chunk(spec, chunk, n)
            a1 = cols[0].to_numpy(zero_copy_only=False)
            a2 = cols[1].to_numpy(zero_copy_only=False)
            ok1 = ~masks[0] if masks[0] is not None else np.ones(n, dtype=bool)
            ok2 = ~masks[1] if masks[1] is not None else np.ones(n, dtype=bool)
            for d, (x, y) in pairs.items():
                counts2[d] += int(np.count_nonzero(ok1 & ok2 & (a1 < x) & (a2 < y)))
            for d, x in singles.items():
                counts1[d] += int(np.count_nonzero(ok1 & (a1 < x)))
            w.write_table(pa.Table.from_arrays(cols, schema=schema), row_group_size=ROW_GROUP)
            del cols, masks, a1, a2
    tmp.replace(path)
    meta = {"params": params,
            "pairs": {str(d): {"x": x, "y": y, "selected": counts2[d]}
                      for d, (x, y) in pairs.items()},
            "singles": {str(d): {"x": x, "selected": counts1[d]} for d, x in singles.items()}}
    man.write_text(json.dumps(meta, indent=1) + "\n")
    return path, meta


# =========================================================================== cases


@dataclass
class Case:
    id: str              # unique key in the results
    group: str           # tpch | micro | sweep | nulls | repeated | strings | types
    label: str           # report row label
    file: str            # file label (report) / file key
    sql: str
    tables: dict         # table name -> Path
    kind: str            # rows | lists
    ordered: bool
    engines: tuple
    polars_sql: str
    lazy: dict
    query: str = ""      # q01 ... / micro / repeated / strings / types
    width: int | None = None
    denom: int | None = None
    selected: int | None = None
    rows: int | None = None
    nulls: float = 0.0   # the fraction of null values in each column of the file

    @property
    def fraction(self) -> float | None:
        if self.selected is None or not self.rows:
            return None
        return self.selected / self.rows


def qname(q: str) -> str:
    """q01 -> Q1."""
    return f"Q{int(q[1:])}"


def tpch_sql(q: str) -> str:
    text = (TPCH_DIR / f"{q}.sql").read_text()
    return text.strip().rstrip(";").strip()


def build_cases(args, tpch_files: dict | None, micro_files: dict) -> list[Case]:
    engines = [e for e in ENGINE_KEYS if e in args.engine_keys]
    no_pa = tuple(e for e in engines if e != "pyarrow" and e not in ROWS_ENGINES)
    cases: list[Case] = []
    if tpch_files:
        for q in args.tpch_queries:
            for key, (label, _w, _c) in TPCH_FILES.items():
                tabs = {t: tpch_files[key][t] for t in TPCH_QUERIES[q]}
                cases.append(Case(f"{q}/{key}", "tpch", f"{qname(q)} · {label}", key,
                                  tpch_sql(q), tabs, "rows", TPCH_ORDERED[q], no_pa,
                                  POLARS_SQL[q].strip(), {"name": q}, q))

    def file_cases(group: str, spec: MicroSpec, denoms, bounds: str, sql, kind: str,
                   query: str) -> None:
        """One case per selectivity 1/d of the file of `spec`: `sql(X, Y)` with the two
        filters' bounds of the manifest's `pairs`, or `sql(X)` with one filter's (`singles`)."""
        if spec not in micro_files:
            return
        path, meta = micro_files[spec]
        for d in denoms:
            b = meta[bounds].get(str(d))
            if b is None:
                continue
            xy = (b["x"], b["y"]) if bounds == "pairs" else (b["x"],)
            lazy = {"name": query, **dict(zip(("x", "y"), xy))}
            eng = tuple(e for e in engines if e not in ROWS_ENGINES or group in ROWS_GROUPS)
            cases.append(Case(f"{group}/{spec.name}/1-{d}", group, f"{spec.label} · 1/{d}",
                              spec.name, sql(*xy), {"t": path}, kind, False, eng,
                              sql(*xy), lazy, query, spec.width, d, b["selected"],
                              meta["params"]["rows"], spec.nulls))

    def micro_cases(group: str, spec: MicroSpec, denoms) -> None:
        file_cases(group, spec, denoms, "pairs", micro_sql, "rows", "micro")

    if "micro" in args.case_groups:
        micro_cases("micro", MicroSpec(MICRO_WIDTH), args.headline_denoms)
        micro_cases("micro", MicroSpec(MICRO_WIDTH, "snappy"), args.headline_denoms)
    if "sweep" in args.case_groups:
        for w in args.widths:
            if w != MICRO_WIDTH:
                micro_cases("sweep", MicroSpec(w), args.sweep_denoms)
    if "nulls" in args.case_groups:
        for f in args.null_fractions:
            micro_cases("nulls", MicroSpec(MICRO_WIDTH, nulls=f),
                        args.headline_denoms if f == NULL_FRACTION else args.sweep_denoms)
    if "repeated" in args.case_groups:
        file_cases("repeated", MicroSpec(REPEATED_WIDTH, lists=True), REPEATED_DENOMS,
                   "singles", repeated_sql, "lists", "repeated")
    if "strings" in args.case_groups:
        file_cases("strings", MicroSpec(STRINGS_WIDTH, strings=True), STRINGS_DENOMS,
                   "singles", strings_sql, "rows", "strings")
    spec = MicroSpec(TYPES_WIDTH, types=True)
    if "types" in args.case_groups and spec in micro_files:
        path, meta = micro_files[spec]
        bound = meta["singles"][str(TYPES_DENOM)]
        for key, label, sql in TYPES_QUERIES:
            text = sql.format(x=bound["x"])
            sel = key == "select"
            cases.append(Case(f"types/{spec.name}/{key}", "types", label, spec.name, text,
                              {"t": path}, "rows", False, no_pa, text, {"name": key},
                              "types", spec.width, TYPES_DENOM if sel else None,
                              bound["selected"] if sel else None, meta["params"]["rows"]))
    return cases


def micro_specs(args) -> list[MicroSpec]:
    specs = []
    if "micro" in args.case_groups:
        specs += [MicroSpec(MICRO_WIDTH), MicroSpec(MICRO_WIDTH, "snappy")]
    if "sweep" in args.case_groups:
        specs += [MicroSpec(w) for w in args.widths if w != MICRO_WIDTH]
    if "nulls" in args.case_groups:
        specs += [MicroSpec(MICRO_WIDTH, nulls=f) for f in args.null_fractions]
        if MicroSpec(MICRO_WIDTH) not in specs:
            specs.append(MicroSpec(MICRO_WIDTH))
    if "repeated" in args.case_groups:
        specs.append(MicroSpec(REPEATED_WIDTH, lists=True))
    if "strings" in args.case_groups:
        specs.append(MicroSpec(STRINGS_WIDTH, strings=True))
    if "types" in args.case_groups:
        specs.append(MicroSpec(TYPES_WIDTH, types=True))
    return specs


# =========================================================================== measuring


class Unavailable(Exception):
    pass


def sift_env() -> dict:
    """The sift processes get none of the thread settings: --threads 1 and taskset decide."""
    return {k: v for k, v in os.environ.items() if k not in THREAD_VARS}


def worker_env() -> dict:
    env = dict(os.environ)
    env.update({k: "1" for k in THREAD_VARS})
    return env


def warm(paths) -> None:
    import harness
    for p in paths:
        harness.warm_page_cache(Path(p))


class Runner:
    """Runs one engine on one case in fresh processes."""

    def __init__(self, args, sift_bin: Path | None, sift_reason: str, tmpdir: Path):
        self.args = args
        self.sift_bin = sift_bin
        self.sift_reason = sift_reason
        self.tmpdir = tmpdir
        self.n = 0

    def sql_file(self, case: Case) -> Path:
        p = self.tmpdir / (re.sub(r"[^\w.-]", "_", case.id) + ".sql")
        p.write_text(case.sql + "\n")
        return p

    def measure(self, engine: str, case: Case, runs: int | None = None) -> dict:
        if engine in SIFT_ENGINES:
            return self.sift(engine, case)
        warm(case.tables.values())
        return self.worker(engine, case, runs or self.args.runs)

    def converted(self, parquet: Path) -> Path:
        """The `.sift` conversion of `parquet` (`sift convert`, untimed), made again when
        older than the file or the binary."""
        out = parquet.with_suffix(".sift")
        newest = max(parquet.stat().st_mtime, self.sift_bin.stat().st_mtime)
        if not out.is_file() or out.stat().st_mtime < newest:
            log(f"converting {parquet.name} to {out.name}")
            p = harness.run_child([str(self.sift_bin), "--quiet", "convert", str(parquet),
                                   str(out)], self.args.timeout, sift_env())
            if p.returncode != 0:
                raise harness.failure(p, "`sift convert`")
        return out

    def sift(self, engine: str, case: Case) -> dict:
        if self.sift_bin is None or self.sift_reason:
            raise Unavailable(self.sift_reason or "no sift binary")
        paths = dict(case.tables)
        if engine == "sift-file":
            paths = {name: self.converted(path) for name, path in paths.items()}
        warm(paths.values())
        tables = []
        for name, path in paths.items():
            tables += ["--table", f"{name}={path}"]
        base = ["taskset", "-c", "0", str(self.sift_bin), "--quiet", "sql", "--threads", "1",
                *tables, *SIFT_EXTRA[engine]]
        sql = self.sql_file(case)
        timeout = self.args.timeout
        if case.kind == "lists":
            self.n += 1
            out = self.tmpdir / f"result-{self.n}.arrow"
            p = harness.run_child(base + ["--out", str(out), "-f", str(sql)], timeout, sift_env())
            if p.returncode != 0:
                raise harness.failure(p, "`sift sql --out result.arrow`")
            import pyarrow as pa
            with pa.memory_map(str(out)) as src:
                t = pa.ipc.open_file(src).read_all()
            payload = {"digest": list_digest(t.column(0))}
            del t
            out.unlink(missing_ok=True)
        else:
            p = harness.run_child(base + ["-o", "csv", "-f", str(sql)], timeout, sift_env())
            if p.returncode != 0:
                raise harness.failure(p, "`sift sql -o csv`")
            rows = list(csv.reader(io.StringIO(p.stdout)))
            if not rows:
                raise RuntimeError("`sift sql -o csv` printed no header row")
            payload = {"result": rows[1:]}
        runs = self.args.runs
        p = harness.run_child(base + ["--runs", str(runs), "-f", str(sql)], timeout, sift_env())
        if p.returncode != 0:
            raise harness.failure(p, f"`sift sql --runs {runs}`")
        out = harness.last_json(p.stdout)
        times = [float(t) for t in out["runs"]]
        if len(times) != runs:
            raise RuntimeError(f"`sift sql --runs {runs}` reported {len(times)} runs")
        res = harness.summarize_runs(times, float(out["first_ms"]), out.get("prepare_ms"), int(out["rows"]))
        res["scans"] = out.get("scans", {})
        res.update(payload)
        return res

    def worker(self, engine: str, case: Case, runs: int) -> dict:
        self.n += 1
        spec = {"engine": engine, "kind": case.kind, "runs": runs, "sql": case.sql,
                "polars_sql": case.polars_sql, "lazy": case.lazy,
                "tables": {k: str(v) for k, v in case.tables.items()}}
        sf = self.tmpdir / f"spec-{self.n}.json"
        sf.write_text(json.dumps(spec))
        cmd = ["taskset", "-c", "0", sys.executable, str(Path(__file__).resolve()), "worker",
               str(sf)]
        p = harness.run_child(cmd, self.args.timeout, worker_env())
        if p.returncode != 0:
            raise harness.failure(p, f"the {engine} process")
        out = harness.last_json(p.stdout)
        times = [float(t) for t in out["runs"]]
        res = harness.summarize_runs(times, times[0], out["prepare_ms"], int(out["rows"]))
        res["via"] = out.get("via", "")
        for k in ("result", "digest"):
            if k in out:
                res[k] = out[k]
        return res


def attempt(fn) -> dict:
    try:
        return fn()
    except Unavailable as e:
        return {"unavailable": str(e)}
    except Exception as e:  # noqa: BLE001
        log(traceback.format_exc())
        return {"error": f"{type(e).__name__}: {e}"}


# --------------------------------------------------------------------------- correctness


def check(res: dict, ref: dict | None, case: Case) -> None:
    """Sets res['correct'] from DuckDB's result `ref` (a measurement dict)."""
    if "best_ms" not in res:
        res.pop("result", None)
        res.pop("digest", None)
        return
    if ref is None or ("result" not in ref and "digest" not in ref):
        why = (ref or {}).get("error") or (ref or {}).get("unavailable") or "not run"
        res["correct"] = f"NO: no DuckDB reference ({why})"
        return
    if case.kind == "lists":
        got, want = res.get("digest"), ref.get("digest")
        if got == want:
            c = "yes"
        else:
            diff = [f"{k} {got.get(k) if got else None} (expected {want.get(k)})"
                    for k in want if not got or got.get(k) != want.get(k)]
            c = "NO: " + ", ".join(diff)
        if c == "yes" and res.get("rows") != want["rows"]:
            c = f"NO: the timed runs returned {res.get('rows')} rows, expected {want['rows']}"
    else:
        c = harness.compare_rows(ref["result"], res.get("result", []), case.ordered)
        if c == "yes" and res.get("rows") is not None and res["rows"] != len(ref["result"]):
            c = f"NO: the timed runs returned {res['rows']} rows, expected {len(ref['result'])}"
    res["correct"] = c


def bad(r: dict | None) -> bool:
    return bool(r) and str(r.get("correct", "")).startswith("NO")


def run_cases(cases: list[Case], runner: Runner, args, results: dict, load: list) -> None:
    total = sum(len(c.engines) for c in cases)
    done = 0
    started = time.time()
    for case in cases:
        res = results.setdefault(case.id, {})
        for e in case.engines:
            done += 1
            log(f"[{done}/{total}] {case.id}: {e} ...")
            res[e] = attempt(lambda: runner.measure(e, case))
            load.append(os.getloadavg()[0])
        ref = res.get("duckdb")
        if ref is None:
            ref = attempt(lambda: runner.measure("duckdb", case, runs=1))
        ref = dict(ref)
        for e, r in res.items():
            check(r, ref, case)
            log(f"{case.id}: {e}: {describe(r)}")
        # Once checked, only DuckDB's digest of the lists (the reference) is kept.
        for e, r in res.items():
            r.pop("result", None)
            if e != "duckdb":
                r.pop("digest", None)
    log(f"{done} measurements in {time.time() - started:.0f} s")


def describe(r: dict) -> str:
    if "unavailable" in r:
        return f"unavailable ({r['unavailable']})"
    if "error" in r:
        return f"FAILED: {r['error']}"
    via = f", via {r['via']}" if r.get("via") and r["via"] not in ("sql", "dataset") else ""
    return (f"first {r['first_ms']:.2f} ms, best {r['best_ms']:.2f} ms, median "
            f"{r['median_ms']:.2f} ms, {r['rows']} rows, correct: {r.get('correct', '?')}{via}")


# =========================================================================== report


def cell(r: dict | None) -> str:
    if r is None:
        return "—"
    if "unavailable" in r:
        return "*n/a*"
    if "error" in r:
        return "*failed*"
    s = f"{harness.ms(r['best_ms'])} ({harness.ms(r['first_ms'])})"
    if str(r.get("via", "")).startswith("lazy"):
        s += " ᴸ"
    return s + (" ✘" if bad(r) else "")


def ratio(a: dict | None, b: dict | None, key: str = "best_ms") -> float | None:
    """a / b of `key` when both were measured (a wrong result still gives a ratio; the
    cell says ✘)."""
    if not a or not b or key not in a or key not in b or not b[key]:
        return None
    return a[key] / b[key]


def fx(x: float | None) -> str:
    return "—" if x is None else f"{x:.2f}×"


def frac_label(case: Case) -> str:
    f = case.fraction
    return f"1/{case.denom}" + (f" ({f:.4f})" if f is not None else "")


def engine_cols(cases: list[Case]) -> list[str]:
    seen = set()
    for c in cases:
        seen.update(c.engines)
    return [e for e in ENGINE_KEYS if e in seen]


def case_table(cases: list[Case], results: dict, first_col: str, label) -> list[str]:
    engines = engine_cols(cases)
    ratios = [("duckdb", "DuckDB/Sift"), ("polars", "Polars/Sift")]
    if "pyarrow" in engines:
        ratios.append(("pyarrow", "pyarrow/Sift"))
    ratios = [(e, h) for e, h in ratios if e in engines and "sift" in engines]
    head = f"| {first_col} | " + " | ".join(engines) + " | " + " | ".join(h for _, h in ratios)
    out = [head + " |", "|---|" + "---:|" * (len(engines) + len(ratios))]
    for c in cases:
        res = results.get(c.id, {})
        out.append(f"| {label(c)} | " + " | ".join(cell(res.get(e)) for e in engines) + " | "
                   + " | ".join(fx(ratio(res.get(e), res.get("sift"))) for e, _ in ratios)
                   + " |")
    return out + [""]


def nulls_ratio_table(cases: list[Case], results: dict, fraction: float | None = None,
                      min_denom: int = 1) -> tuple[list[str], dict]:
    """nullable / non-null best time per engine, null fraction and selectivity (only the
    files of `fraction` when given, only selectivities 1/`min_denom` and below)."""
    nulls = [c for c in cases if c.group == "nulls" and fraction in (None, c.nulls)
             and c.denom >= min_denom]
    base = {(c.denom): c for c in cases if c.group == "micro" and c.file == f"w{MICRO_WIDTH}-none"}
    engines = engine_cols(nulls)
    out = ["| nulls · selectivity (nullable / non-null actual) | " + " | ".join(engines) + " |",
           "|---|" + "---:|" * len(engines)]
    ratios: dict[str, list[float]] = {e: [] for e in engines}
    for c in nulls:
        b = base.get(c.denom)
        if b is None:
            continue
        rn, rb = results.get(c.id, {}), results.get(b.id, {})
        cells = []
        for e in engines:
            x = ratio(rn.get(e), rb.get(e))
            if x is not None:
                ratios[e].append(x)
            cells.append(fx(x))
        out.append(f"| {c.nulls:.0%} · 1/{c.denom} ({c.fraction or 0:.4f} / "
                   f"{b.fraction or 0:.4f}) | " + " | ".join(cells) + " |")
    return out + [""], ratios


def targets(cases: list[Case], results: dict, args) -> list[tuple[str, str, str]]:
    """(target, measured, verdict) for each target the report checks."""
    by_id = {c.id: c for c in cases}
    out = []

    def r(cid, e):
        return results.get(cid, {}).get(e)

    def verdict(ok: bool | None, note: str = "") -> str:
        v = "n/a" if ok is None else ("**met**" if ok else "**NOT met**")
        return v + (f" ({note})" if note else "")

    def tpch_target(q, fkey, need, title):
        cid = f"{q}/{fkey}"
        if cid not in by_id:
            return
        x = ratio(r(cid, "duckdb"), r(cid, "sift"))
        wrong = bad(r(cid, "sift"))
        out.append((title, f"DuckDB {harness.ms((r(cid, 'duckdb') or {}).get('best_ms'))} ms / Sift "
                           f"{harness.ms((r(cid, 'sift') or {}).get('best_ms'))} ms = {fx(x)}",
                    verdict(None if x is None else (x >= need and not wrong),
                            "Sift's result differs" if wrong else "")))

    tpch_target("q06", "pyarrow-none", 3.0, "Q6 on uncompressed Parquet (pyarrow): Sift ≥ 3× "
                                            "faster than DuckDB")
    tpch_target("q06", "pyarrow-snappy", 1.5, "Q6 on snappy Parquet (pyarrow): Sift ≥ 1.5× "
                                              "faster than DuckDB")
    tpch_target("q06", "duckdb", 1.5, "Q6 on DuckDB-written Parquet (snappy; for "
                                      "information): Sift ≥ 1.5× faster than DuckDB")
    # micro
    mic = [c for c in cases if c.group == "micro" and c.file == f"w{MICRO_WIDTH}-none"]
    if mic:
        xs = [(c, ratio(r(c.id, "duckdb"), r(c.id, "sift"))) for c in mic]
        got = [(c, x) for c, x in xs if x is not None]
        note = "" if args.micro_rows == MICRO_ROWS else \
            f"measured at {args.micro_rows:,} rows, not {MICRO_ROWS:,}"
        # The verdict leaves out 1/1: its bounds cover the whole value range, so the filter
        # is provably true from the footer statistics and an engine may answer the maxima
        # from the statistics without scanning (DuckDB does).
        sel = [(c, x) for c, x in got if c.denom != 1]
        one = next((x for c, x in got if c.denom == 1), None)

        def rows_note(sel) -> str:
            # The same ratios with the selected values decoded and returned (sift-rows).
            xs = [x for x in (ratio(r(c.id, "duckdb"), r(c.id, "sift-rows")) for c, _ in sel)
                  if x is not None]
            if not xs:
                return ""
            return (f"; sift-rows (`--scan-extremes off`, the selected values decoded): "
                    f"DuckDB/sift-rows {fx(min(xs))} … {fx(max(xs))}")
        if sel:
            lo = min(sel, key=lambda t: t[1])
            hi = max(sel, key=lambda t: t[1])
            geo = math.exp(statistics.fmean(math.log(x) for _, x in sel))
            ok = all(x >= 5 for _, x in sel) and not any(bad(r(c.id, "sift")) for c in mic)
            n_ok = sum(1 for _, x in sel if x >= 5)
            if note:
                ok = None
            out.append((f"Micro w={MICRO_WIDTH} uncompressed, {MICRO_ROWS:,} rows: Sift ≥ 5× "
                         "faster than DuckDB (selectivities 1/2 … 1/128)",
                         f"DuckDB/Sift {fx(lo[1])} (1/{lo[0].denom}) … {fx(hi[1])} "
                         f"(1/{hi[0].denom}), geometric mean {fx(geo)}, ≥ 5× at {n_ok} of "
                         f"{len(sel)}; at 1/1 {fx(one)} (not in the verdict: X and Y cover the "
                         "whole value range, so the footer statistics prove the filter true "
                         "and an engine may answer max() from them without a scan)"
                         + rows_note(sel),
                         verdict(ok, note)))
        else:
            out.append((f"Micro w={MICRO_WIDTH} uncompressed: Sift ≥ 5× faster than DuckDB",
                        "not measured", verdict(None)))
    # Q1/Q12/Q14/Q19 faster than DuckDB and Polars
    for q in ("q01", "q12", "q14", "q19"):
        cs = [c for c in cases if c.group == "tpch" and c.query == q]
        if not cs:
            continue
        parts, oks = [], []
        for c in cs:
            d = ratio(r(c.id, "duckdb"), r(c.id, "sift"))
            p = ratio(r(c.id, "polars"), r(c.id, "sift"))
            parts.append(f"{TPCH_FILES[c.file][0]}: DuckDB/Sift {fx(d)}, Polars/Sift {fx(p)}")
            if d is None or p is None:
                oks.append(None)
            else:
                oks.append(d > 1 and p > 1 and not bad(r(c.id, "sift")))
        known = [o for o in oks if o is not None]
        ok = None if not known else all(known)
        n_ok = sum(1 for o in known if o)
        out.append((f"{qname(q)}: Sift faster than DuckDB and Polars (every file)",
                    "; ".join(parts), verdict(ok, f"{n_ok} of {len(oks)} files")))
    # nulls
    _, nr = nulls_ratio_table(cases, results, NULL_FRACTION)
    if nr.get("sift"):
        worst = max(nr["sift"])
        others = ", ".join(f"{e} {fx(max(v))}" for e, v in nr.items() if v and e != "sift")
        # Sift's ratios below 1/1, where the non-null query reads pages too.
        scanned = nulls_ratio_table(cases, results, NULL_FRACTION, min_denom=2)[1].get("sift")
        below = (f"; at 1/2 … 1/128 {fx(min(scanned))} … {fx(max(scanned))} (at 1/1 the "
                 "non-null file's footer statistics answer the query without a page read, "
                 "while the nullable filter columns' nulls must be read)") if scanned else ""
        out.append((f"Nullable micro (w={MICRO_WIDTH}, {NULL_FRACTION:.0%} nulls) costs ≤ 1.3× "
                    "the non-null one (Sift, every selectivity)",
                    f"Sift nullable/non-null worst {fx(worst)}, best {fx(min(nr['sift']))}"
                    f"{below}; worst of the others: {others or '—'}", verdict(worst <= 1.3)))
    # repeated
    rep = [c for c in cases if c.group == "repeated"]
    if rep:
        parts, oks = [], []
        for c in rep:
            x = ratio(r(c.id, "pyarrow"), r(c.id, "sift"))
            sres = r(c.id, "sift") or {}
            if "error" in sres:
                m = re.search(r"column '[^']*': .*", sres["error"])
                why = m.group(0) if m else sres["error"][-160:]
                parts.append(f"1/{c.denom}: Sift failed ({why[:160]})")
                oks.append(False)
                continue
            parts.append(f"1/{c.denom}: pyarrow/Sift {fx(x)}")
            oks.append(None if x is None else (x >= 5 and not bad(sres)))
        known = [o for o in oks if o is not None]
        out.append(("Repeated column (`select r ... where a1 < X`): Sift ≥ 5× faster than "
                    "pyarrow", "; ".join(parts), verdict(all(known) if known else None)))
    return out


def collect_problems(cases: list[Case], results: dict) -> list[str]:
    out = []
    # Engines that could not run (a binary not built, a package missing): one line per
    # engine and reason, so that a report with empty cells never says all is well.
    missing: dict[tuple[str, str], int] = {}
    for c in cases:
        for e in c.engines:
            r = results.get(c.id, {}).get(e, {})
            if "error" in r:
                out.append(f"- {c.id} / {e}: FAILED: {r['error']}")
            elif "unavailable" in r:
                key = (e, str(r["unavailable"]))
                missing[key] = missing.get(key, 0) + 1
            elif bad(r):
                out.append(f"- {c.id} / {e}: **WRONG RESULT** {r['correct']}")
    for (e, why), n in missing.items():
        out.append(f"- {e}: not measured in {n} case(s): {why}")
    return out


def polars_notes(cases: list[Case], results: dict) -> list[str]:
    lazy = {}
    for c in cases:
        r = results.get(c.id, {}).get("polars", {})
        via = str(r.get("via", ""))
        if via.startswith("lazy"):
            lazy.setdefault(c.query, via)
    return [f"- Polars ran {q} as lazy expressions (ᴸ in the tables): {v}"
            for q, v in sorted(lazy.items())]


def machine_lines(args, load: list[float], sift_bin: Path | None, origin: dict | None) -> list[str]:
    import duckdb
    import harness
    import polars
    import pyarrow as pa
    try:
        aff = ",".join(map(str, sorted(os.sched_getaffinity(0))))
    except AttributeError:
        aff = "?"
    version, built, rev, df = harness.sift_provenance(sift_bin, origin)
    return [
        f"- CPU: {harness.cpu_model()} ({os.cpu_count()} logical CPUs; the driver pinned to "
        f"CPU {aff}; every engine process pinned to CPU 0 with taskset)",
        f"- Kernel: {platform.system()} {platform.release()}; Python "
        f"{platform.python_version()}",
        f"- duckdb {duckdb.__version__}, polars {polars.__version__}, pyarrow {pa.__version__}, "
        f"DataFusion {df} (Cargo.lock), {harness.tpchgen_version()}",
        f"- sift: {version or 'n/a'}{built} (repo HEAD {rev})",
        "- Load average (1 min) at start / max after a measurement / end: "
        f"{load[0]:.2f} / {max(load):.2f} / {os.getloadavg()[0]:.2f} (> 1 means other "
        f"processes competed for the {os.cpu_count()} CPUs)",
        f"- Date: {datetime.datetime.now().astimezone().isoformat(timespec='seconds')}",
    ]


def files_table(files: dict[str, dict]) -> list[str]:
    out = ["| file | rows | row groups | column chunks by codec | writer | MB |",
           "|---|---:|---:|---|---|---:|"]
    for name, m in files.items():
        codecs = ", ".join(f"{c} {n}" for c, n in sorted(m["codecs"].items()))
        out.append(f"| {name} | {m['rows']:,} | {m['row_groups']} | {codecs} | "
                   f"{m['created_by']} | {m['bytes'] / 1e6:.2f} |")
    return out + [""]


def report(cases: list[Case], results: dict, args, files: dict, load: list[float],
           sift_bin, origin, elapsed: float) -> str:
    import harness
    sc = harness.scale_str(args.scale)
    n = args.runs
    eng = engine_cols(cases)
    out = [f"# Parquet: Sift's scan against DuckDB, Polars, pyarrow and DataFusion "
           f"(TPC-H SF{sc}, Parquet-Select micro {args.micro_rows:,} rows)", "",
           "Method: every engine is single-threaded and pinned to one core (`taskset -c 0`; "
           "`sift sql --threads 1`, DuckDB `SET threads = 1`, `POLARS_MAX_THREADS=1`, pyarrow "
           "one CPU and one I/O thread, `use_threads=False`). Each (engine, case, file) runs "
           "in a fresh process that opens the files and plans the query untimed (`sift sql "
           "--runs N`: tables registered and SQL planned, each run then optimises, plans "
           "physically and executes; DuckDB: views and `PREPARE`; Polars: the LazyFrame; "
           f"pyarrow: the dataset and its footer), then runs it {n} times, each run timed in "
           "that process. *first* = run 1 (page cache warm: every file the engine reads is "
           f"read once before the process starts); *best* / *median* = of runs 2…{n}. Cells: "
           "**best ms (first ms)**; ratio columns = the other engine's best / Sift's best "
           "(> 1: Sift faster). Every result is compared with DuckDB's: numbers to a relative "
           f"{harness.REL_TOL:g} or an absolute {harness.ABS_TOL:g}, integers exactly, in order when the query "
           "has an ORDER BY; the repeated column's lists through an order-independent digest "
           "(rows, elements, nulls, sum, a 64-bit hash of every row's list). ✘ = differs "
           "from DuckDB's; *failed* = the engine failed (see Problems); ᴸ = Polars ran the "
           "lazy-expression form (its SQL failed).", "", "Engines:"]
    out += [f"- **{e}**: {ENGINE_NOTES[e]}" for e in eng]
    out += polars_notes(cases, results)
    out += ["", "## Done-when targets", "", "| target | measured (best times) | verdict |",
            "|---|---|---|"]
    out += [f"| {t} | {m} | {v} |" for t, m, v in targets(cases, results, args)]
    out.append("")
    probs = collect_problems(cases, results)
    out += ["## Problems", ""] + (probs or ["None: every result matched DuckDB's."]) + [""]
    tp = [c for c in cases if c.group == "tpch"]
    if tp:
        out += [f"## TPC-H SF{sc}: best ms (first ms)", "",
                "bench/tpch/qNN.sql as written (Q12 joins orders, Q14 and Q19 join part) for "
                "the `sift sql` engines and DuckDB; Polars the same queries with literal dates "
                "and JOIN ... ON. Files: tpchgen-cli's lineitem, orders and part rewritten "
                "by pyarrow (uncompressed / snappy / zstd, pyarrow's defaults: dictionary "
                "encoding, ≤ 1,048,576-row row groups; decimals decimal128(15,2) and dates "
                "date32 as tpchgen writes them, strings as utf8) and by DuckDB's `COPY ... "
                "(FORMAT parquet)` with its defaults.", ""]
        out += case_table(tp, results, "query · file", lambda c: c.label)
    mic = [c for c in cases if c.group == "micro"]
    if mic:
        out += [f"## Parquet-Select micro, w = {MICRO_WIDTH}: best ms (first ms)", "",
                f"`select max(a10), max(a11), max(a12) from t where a1 < X and a2 < Y`; "
                f"{args.micro_rows:,} rows × 20 int64 columns uniform in [0, 2^w), written "
                "by pyarrow (dictionary encoding, 1,048,576-row row groups, required "
                "columns). Selectivity: nominal (actual fraction of rows selected). At 1/1, X "
                "= Y = 2^w: the footer statistics prove the filter true, so an engine may "
                "answer the maxima from the statistics without scanning (DuckDB and Sift "
                "do).", ""]
        out += case_table(mic, results, "file · selectivity (actual)",
                          lambda c: f"{c.label.split(' · ')[0]} · {frac_label(c)}")
    sw = [c for c in cases if c.group == "sweep"]
    if sw:
        out += ["## Bit-width sweep (uncompressed): best ms (first ms)", "",
                "The same query and writer at the other widths (w = 5: the table above); "
                "selectivities " + ", ".join(f"1/{d}" for d in args.sweep_denoms)
                + " where the width reaches them with power-of-two bounds.", ""]
        out += case_table(sw, results, "width · selectivity (actual)",
                          lambda c: f"w={c.width} · {frac_label(c)}")
    nl = [c for c in cases if c.group == "nulls"]
    if nl:
        fracs = sorted({c.nulls for c in nl})
        out += [f"## Nullable micro (w = {MICRO_WIDTH}, "
                + ", ".join(f"{f:.0%}" for f in fracs) + " nulls per column): best ms (first ms)",
                "",
                "The same values as the w = 5 table with every column optional and about that "
                "fraction of its values null (independently per column; the nulls of a smaller "
                f"fraction are among those of a larger one); {NULL_FRACTION:.0%} at every "
                "selectivity, the others at " + ", ".join(f"1/{d}" for d in args.sweep_denoms)
                + ". The filter drops the nulls, so at p nulls each selectivity selects about "
                "(1 − p)² of the non-null table's rows.", ""]
        out += case_table(nl, results, "nulls · selectivity (actual)",
                          lambda c: f"{c.nulls:.0%} · {frac_label(c)}")
        tab, _ = nulls_ratio_table(cases, results)
        out += ["Nullable / non-null (best ms, same selectivity bounds):", ""] + tab
    rp = [c for c in cases if c.group == "repeated"]
    if rp:
        out += ["## Repeated column: best ms (first ms)", "",
                f"`select r from t where a1 < X`: the micro table at w = {REPEATED_WIDTH} "
                f"(so that one column selects 1/128) plus `r` list<int64> (0–{LIST_MAX_LEN} "
                f"elements per row, values uniform in [0, 2^{LIST_VALUE_BITS})), "
                "uncompressed; every engine materialises the selected lists (sift: `sift sql "
                "--runs` collects the batches; DuckDB: Arrow table; Polars: DataFrame; "
                "pyarrow: reads a1 and r, then `Table.filter`).", ""]
        out += case_table(rp, results, "selectivity (actual)", frac_label)
    st = [c for c in cases if c.group == "strings"]
    if st:
        out += ["## String dictionary column: best ms (first ms)", "",
                f"`select max(s) from t where a1 < X`: the micro table at w = {STRINGS_WIDTH} "
                f"plus `s` utf8 drawn uniformly from {STRING_DISTINCT:,} distinct 20-byte "
                "strings (pyarrow writes one dictionary page per column chunk), uncompressed; "
                "the string column decoded at the selected rows.", ""]
        out += case_table(st, results, "selectivity (actual)", frac_label)
    ty = [c for c in cases if c.group == "types"]
    if ty:
        out += ["## Float and unsigned integer columns: best ms (first ms)", "",
                f"The micro table at w = {TYPES_WIDTH} plus float32 `f` (uniform in [0, 1): "
                "pyarrow's dictionary overflows, so most of its pages are PLAIN), float32 "
                "`fq` (64 quarter values, dictionary pages), uint32 `u32` (the whole range), "
                "uint64 `u64` (below 2^63) and int64 `i64` (below 2^40: most pages PLAIN), "
                "uncompressed; `count(*)` and `max` of the filtered column, and `max` of "
                f"`f`, `fq`, `u32` and `u64` at the rows `a1 < X` selects (1/{TYPES_DENOM}).",
                ""]
        out += case_table(ty, results, "column: query", lambda c: c.label)
    out += ["## Files", ""] + files_table(files)
    m, s = divmod(int(elapsed), 60)
    out += [f"Whole harness: {m} min {s} s.", "", "Machine:",
            *machine_lines(args, load, sift_bin, origin), ""]
    return "\n".join(out)


def chart(cases: list[Case], results: dict, args, png: Path, rows: int) -> bool:
    import harness
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter
    panels: list[tuple[str, list[Case]]] = []
    widths = sorted({c.width for c in cases if c.group in ("micro", "sweep")})
    for w in widths:
        cs = [c for c in cases if c.width == w and (
            (c.group == "micro" and c.file == f"w{w}-none") or c.group == "sweep")]
        if cs:
            panels.append((f"w = {w} ({1 << w:,} distinct values), uncompressed", cs))
    nl = [c for c in cases if c.group == "nulls" and c.nulls == NULL_FRACTION]
    if nl:
        panels.append((f"w = {MICRO_WIDTH}, {NULL_FRACTION:.0%} nulls, uncompressed", nl))
    sn = [c for c in cases if c.group == "micro" and c.file == f"w{MICRO_WIDTH}-snappy"]
    if sn:
        panels.append((f"w = {MICRO_WIDTH}, snappy", sn))
    if not panels:
        return False
    ncol = min(3, len(panels))
    nrow = math.ceil(len(panels) / ncol)
    fig, axes = plt.subplots(nrow, ncol, figsize=(5.2 * ncol, 3.9 * nrow), squeeze=False)
    colors = {"sift": "tab:red", "sift-rows": "tab:orange", "sift-file": "tab:brown",
              "datafusion": "tab:blue", "datafusion-pushdown": "tab:cyan",
              "duckdb": "tab:olive", "polars": "tab:purple", "pyarrow": "tab:gray"}
    marks = {"sift": "o", "sift-rows": "P", "sift-file": "*", "datafusion": "s",
             "datafusion-pushdown": "D", "duckdb": "^",
             "polars": "v", "pyarrow": "x"}
    all_denoms = sorted({c.denom for c in cases if c.denom})
    for i, (title, cs) in enumerate(panels):
        ax = axes[i // ncol][i % ncol]
        cs = sorted(cs, key=lambda c: c.denom)
        for e in engine_cols(cs):
            pts = [(1 / c.denom, results[c.id][e]["best_ms"]) for c in cs
                   if "best_ms" in results.get(c.id, {}).get(e, {})]
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker=marks.get(e, "."),
                        color=colors.get(e), label=e, lw=1.5 if e == "sift" else 1,
                        ms=5)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        plain = FuncFormatter(lambda v, _pos: f"{v:g}")
        ax.yaxis.set_major_formatter(plain)
        ax.yaxis.set_minor_formatter(plain)
        ax.tick_params(axis="y", which="both", labelsize=7)
        ax.set_xlim(1.35, 1 / (max(all_denoms) * 1.35))
        ax.set_xticks([1 / d for d in all_denoms])
        ax.set_xticklabels([f"1/{d}" for d in all_denoms], fontsize=8)
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("selectivity (nominal)", fontsize=8)
        ax.set_ylabel("best ms (log scale)", fontsize=8)
        ax.grid(alpha=0.3, which="both")
        if i == 0:
            ax.legend(fontsize=7)
    for j in range(len(panels), nrow * ncol):
        axes[j // ncol][j % ncol].axis("off")
    fig.suptitle("Parquet-Select micro: select max(a10), max(a11), max(a12) from t where "
                 f"a1 < X and a2 < Y — {rows:,} rows × 20 int64, pyarrow-written, "
                 f"one core ({harness.cpu_model()})", fontsize=10)
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    plt.close(fig)
    return True


def summary(cases: list[Case], results: dict, args) -> str:
    lines = ["", "=== parquet.py summary ==="]
    for t, m, v in targets(cases, results, args):
        lines.append(f"- {t}: {m} → {v.replace('**', '')}")
    return "\n".join(lines)


# =========================================================================== main


def parse_list(text: str, what: str) -> list[int]:
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise SystemExit(f"parquet.py: {what}: a comma list of integers") from None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", type=float, default=1.0, help="TPC-H scale factor (default 1)")
    ap.add_argument("--runs", type=int, default=None,
                    help="runs per process: run 1 = first run, best/median of the rest "
                         "(default 6; 3 with --smoke)")
    ap.add_argument("--engines", default="", help="comma list (default all): "
                    + ",".join(ENGINE_KEYS))
    ap.add_argument("--cases", default="",
                    help="comma list of query sets (" + ",".join(CASE_GROUPS) + ") and/or "
                         "TPC-H queries (q1,q6,q12,q14,q19: only those of tpch); default all")
    ap.add_argument("--micro-rows", type=int, default=MICRO_ROWS,
                    help=f"rows of the micro tables (default {MICRO_ROWS:,})")
    ap.add_argument("--widths", default=None,
                    help="bit widths of the sweep (default " + ",".join(map(str, SWEEP_WIDTHS))
                         + f"; w={MICRO_WIDTH} is the headline, always measured with micro)")
    ap.add_argument("--sweep-selectivities", default=None,
                    help="denominators of the sweep's selectivities (default "
                         + ",".join(map(str, SWEEP_DENOMS)) + ")")
    ap.add_argument("--null-fractions", default=None,
                    help="null fractions of the nullable micro (default "
                         + ",".join(f"{f:g}" for f in NULL_FRACTIONS) + f"; {NULL_FRACTION:g} "
                         "at every selectivity, the others at the sweep's)")
    ap.add_argument("--smoke", action="store_true",
                    help="a quick check of the whole harness: 3 runs, sweep widths "
                         f"{','.join(map(str, SMOKE_WIDTHS))}, headline selectivities "
                         f"{','.join('1/%d' % d for d in SMOKE_DENOMS)}, sweep 1/1 and 1/128 "
                         "(pair it with a small --scale and --micro-rows)")
    ap.add_argument("--timeout", type=float, default=600,
                    help="seconds per engine process (default 600)")
    ap.add_argument("--sift", default=os.environ.get("SIFT_BIN", ""),
                    help="sift binary (default $SIFT_BIN or ~/.cache/sift-target/release/"
                         "sift; 'none' = skip the sift engines)")
    ap.add_argument("--sift-missing-reason", default="")
    ap.add_argument("--data-dir", type=Path, default=BENCH_DIR / "data")
    ap.add_argument("--results-dir", type=Path, default=BENCH_DIR / "results")
    args = ap.parse_args()
    if args.runs is None:
        args.runs = 3 if args.smoke else 6
    if args.runs < 2:
        ap.error("--runs must be >= 2 (run 1 is the first run)")
    if args.micro_rows < 1:
        ap.error("--micro-rows must be positive")
    args.engine_keys = [k.strip() for k in args.engines.split(",") if k.strip()] or \
        list(ENGINE_KEYS)
    unknown = set(args.engine_keys) - set(ENGINE_KEYS)
    if unknown:
        ap.error(f"unknown engine(s): {', '.join(sorted(unknown))}")
    groups, queries = set(), []
    for tok in (t.strip().lower() for t in args.cases.split(",") if t.strip()):
        if tok in CASE_GROUPS:
            groups.add(tok)
        elif re.fullmatch(r"q?\d+", tok) and f"q{int(tok.lstrip('q')):02d}" in TPCH_QUERIES:
            queries.append(f"q{int(tok.lstrip('q')):02d}")
        else:
            ap.error(f"--cases: unknown {tok!r} (sets: {', '.join(CASE_GROUPS)}; queries: "
                     "q1,q6,q12,q14,q19)")
    if queries:
        groups.add("tpch")
    args.case_groups = groups or set(CASE_GROUPS)
    args.tpch_queries = queries or list(TPCH_QUERIES)
    widths = args.widths or ",".join(map(str, SMOKE_WIDTHS if args.smoke else SWEEP_WIDTHS))
    args.widths = parse_list(widths, "--widths")
    if any(not 1 <= w <= 62 for w in args.widths):
        ap.error("--widths: between 1 and 62")
    sweep = args.sweep_selectivities or ("1,128" if args.smoke else
                                         ",".join(map(str, SWEEP_DENOMS)))
    args.sweep_denoms = parse_list(sweep, "--sweep-selectivities")
    if any(d < 1 or d & (d - 1) or d > 128 for d in args.sweep_denoms):
        ap.error("--sweep-selectivities: powers of two from 1 to 128")
    args.headline_denoms = list(SMOKE_DENOMS if args.smoke else HEADLINE_DENOMS)
    try:
        args.null_fractions = sorted({float(f) for f in (args.null_fractions or ",".join(
            map(str, NULL_FRACTIONS))).split(",") if f.strip()})
    except ValueError:
        ap.error("--null-fractions: a comma list of numbers")
    if any(not 0 < f < 1 for f in args.null_fractions):
        ap.error("--null-fractions: fractions between 0 and 1 (exclusive)")

    import harness  # noqa: F401  (one CPU for pyarrow in this process)
    try:
        if len(os.sched_getaffinity(0)) > 1:
            log("warning: the driver is not pinned to one core (use bench/parquet.sh)")
    except AttributeError:
        pass
    started = time.time()
    load = [os.getloadavg()[0]]
    tmpdir = Path(tempfile.mkdtemp(prefix="sift-parquet-"))
    try:
        # A private copy of the binary: a concurrent rebuild cannot swap it mid-run.
        sift_bin, origin, reason = None, None, ""
        want_sift = any(e in SIFT_ENGINES for e in args.engine_keys)
        if want_sift:
            sift_bin, origin, reason = harness.sift_binary(
                args.sift, Path.home() / ".cache/sift-target/release/sift",
                args.sift_missing_reason, tmpdir)
        if sift_bin:
            reason = harness.sql_unavailable(sift_bin, sift_env(), ("--parquet-reader",))
        if reason:
            log(f"sift engines unavailable: {reason}")

        files: dict[str, dict] = {}
        tpch_files = None
        sc = harness.scale_str(args.scale)
        if "tpch" in args.case_groups:
            tpch_files = prepare_tpch(args.scale, args.data_dir / f"parquet-sf{sc}")
            for key, tabs in tpch_files.items():
                for t, p in tabs.items():
                    files[f"TPC-H SF{sc} {key}/{t}"] = parquet_meta(p)
        micro_files = {}
        mdir = args.data_dir / f"parquet-micro-r{args.micro_rows}"
        for spec in micro_specs(args):
            micro_files[spec] = prepare_micro(spec, args.micro_rows, mdir)
            files[f"micro {spec.name}"] = parquet_meta(micro_files[spec][0])

        cases = build_cases(args, tpch_files, micro_files)
        results: dict[str, dict] = {}
        runner = Runner(args, sift_bin, reason, tmpdir)
        run_cases(cases, runner, args, results, load)
        elapsed = time.time() - started

        # A run of some engines or cases writes beside the full report, not over it.
        partial = "-partial" if args.engines.strip() or args.cases.strip() else ""
        stem = f"parquet-sf{sc}{partial}"
        args.results_dir.mkdir(parents=True, exist_ok=True)
        md = report(cases, results, args, files, load, sift_bin, origin, elapsed)
        (args.results_dir / f"{stem}.md").write_text(md)
        png_name = (f"parquet-micro{partial}.png" if args.micro_rows == MICRO_ROWS else
                    f"parquet-micro-r{args.micro_rows}{partial}.png")
        png = args.results_dir / png_name
        try:
            plotted = chart(cases, results, args, png, args.micro_rows)
        except Exception as e:  # noqa: BLE001 - the numbers matter more than the figure
            log(f"the figure failed: {type(e).__name__}: {e}")
            plotted = False
        probs = collect_problems(cases, results)
        raw = {
            "scale": args.scale, "runs": args.runs, "micro_rows": args.micro_rows,
            "smoke": args.smoke, "widths": args.widths, "sweep_denoms": args.sweep_denoms,
            "headline_denoms": args.headline_denoms, "null_fractions": args.null_fractions,
            "timing": (f"per (engine, case): one fresh process, {args.runs} runs; first_ms = "
                       f"run 1, best_ms / median_ms = of runs 2..{args.runs}"),
            "engines": [{"key": e, "note": ENGINE_NOTES[e]} for e in engine_cols(cases)],
            "cases": [{"id": c.id, "group": c.group, "label": c.label, "file": c.file,
                       "sql": c.sql, "polars_sql": c.polars_sql, "kind": c.kind,
                       "tables": {k: str(v) for k, v in c.tables.items()},
                       "width": c.width, "selectivity": f"1/{c.denom}" if c.denom else None,
                       "selected_rows": c.selected, "rows": c.rows, "fraction": c.fraction,
                       "null_fraction": c.nulls}
                      for c in cases],
            "results": results,
            "targets": [{"target": t, "measured": m, "verdict": v}
                        for t, m, v in targets(cases, results, args)],
            "files": files,
            "sift": {"binary": origin, "unavailable": reason},
            "load_1min": load, "elapsed_s": elapsed,
            "figure": str(png) if plotted else None,
            "problems": probs,
        }
        (args.results_dir / f"{stem}.json").write_text(json.dumps(raw, indent=1, default=str))
        log(f"wrote {args.results_dir / stem}.md and .json" + (f", {png}" if plotted else ""))
        print(summary(cases, results, args))
        if probs:
            print("\nparquet.py: PROBLEMS:\n" + "\n".join(probs))
            return 1
        return 0
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["worker"]:
        sys.exit(worker_main(sys.argv[2:]))
    sys.path.insert(0, str(BENCH_DIR))
    sys.exit(main())
