#!/usr/bin/env bash
# Sift's scan engine on unmodified Parquet files (bench/parquet.py) against DuckDB, Polars,
# pyarrow and DataFusion's own Parquet reader with its filter pushdown off and on
# (arrow-rs's RowFilter), every engine single-threaded on one core (taskset -c 0):
#   - TPC-H Q1, Q6, Q12, Q14, Q19 on lineitem/orders/part written by pyarrow (uncompressed,
#     snappy, zstd) and by DuckDB's COPY (defaults, and format version 2: DELTA pages);
#   - the Parquet-Select micro-benchmark (20 int64 columns, `select max(a10), max(a11),
#     max(a12) from t where a1 < X and a2 < Y` at selectivities 1/1 ... 1/128): w = 5
#     uncompressed and snappy, a bit-width sweep, nullable variants (1 %, 10 %, 50 % of
#     every column null) and a repeated (list<int64>) column.
# Every engine is timed the same way: a fresh process per (engine, case, file) opens and
# plans untimed, then N runs (run 1 = first run, best and median of the rest); every result
# is checked against DuckDB's.
#
#   bench/parquet.sh [--scale SF] [--no-build] [parquet.py options...]
#
# SF defaults to 1.  Quick smoke run (about two minutes):
#   bench/parquet.sh --scale 0.01 --micro-rows 100000 --smoke
# The sift binary: $SIFT_BIN if set (never built here), else
# ${CARGO_TARGET_DIR:-target}/release/sift, built first with `cargo build --release -p
# sift-cli` unless --no-build.
# parquet.py options: --runs N (default 6), --engines a,b (sift, datafusion,
# datafusion-pushdown, duckdb, polars, pyarrow), --cases (tpch, micro, sweep, nulls,
# repeated, strings, types, or TPC-H queries q1,q6,...), --micro-rows N (default
# 16777216), --widths 1,2,... (sweep), --sweep-selectivities 1,4,16,128,
# --null-fractions 0.01,0.1,0.5, --smoke, --timeout S (see `python bench/parquet.py
# --help`).
# Data: bench/data/parquet-sf{SF}/ and bench/data/parquet-micro-r{ROWS}/ (cached).
# Results: bench/results/parquet-sf{SF}.{md,json} and bench/results/parquet-micro.png
# (parquet-micro-r{ROWS}.png for other --micro-rows); with --engines or --cases, the same
# names ending in -partial.  Exits non-zero when a result differs
# from DuckDB's or an engine fails.
set -euo pipefail

exec "$(dirname "${BASH_SOURCE[0]}")/launch.sh" parquet.sh parquet.py "$@"
