#!/usr/bin/env bash
# The 22 TPC-H queries through `sift sql` (on Sift files, on Parquet with Sift's scan, on
# Parquet with DataFusion's reader with and without its filter pushdown) and DuckDB (native,
# on Parquet), at 1 and 2 threads (taskset -c 0 / -c 0,1); plus `sift query`'s hand-written
# plans against SQL and the 1 -> 2 thread scaling of Q1 and of a full read.  Every engine is
# timed the same way: a fresh process per query opens and plans untimed, then N runs (run 1
# = first run, best and median of the rest); every result is checked against DuckDB native.
#
#   bench/sql.sh [--scale SF] [--no-build] [sql.py options...]
#
# SF defaults to 1; `bench/sql.sh --scale 0.01` is a quick smoke run.  The sift binary:
# $SIFT_BIN if set (never built here), else ${CARGO_TARGET_DIR:-target}/release/sift,
# built first with `cargo build --release -p sift-cli` unless --no-build.
# sql.py options: --runs N (default 6), --threads 1,2, --queries 1,6,..., --engines a,b,
# --no-handwritten, --no-scaling, --timeout S (see `python bench/sql.py --help`).
# Data: bench/data/tpch-sf{SF}/ (tpchgen-cli Parquet, Sift files, DuckDB database; cached).
# Results: bench/results/sql-sf{SF}.{md,json}.  Exits non-zero when a result differs from
# DuckDB native's or an engine fails.
set -euo pipefail

exec "$(dirname "${BASH_SOURCE[0]}")/launch.sh" sql.sh sql.py "$@"
