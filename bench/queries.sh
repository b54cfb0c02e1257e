#!/usr/bin/env bash
# Sift end-to-end query benchmark: venv setup, release build of sift, then bench/queries.py
# on one core (taskset -c 0).  Every engine in-process; first run in a fresh process, best
# and median of N; DuckDB through prepared statements.
#
#   bench/queries.sh [--scale SF] [--no-build] [queries.py options...]
#
# queries.py options: --runs N (default 5), --queries q1,q6,q12,q14,q19,q6-nulls,micro,
# --engines sift,sift-parquet,duckdb,duckdb-parquet,pyarrow,vortex, --micro-rows N,
# --sift PATH (see `bench/queries.sh --help`).  Quick check: bench/queries.sh --scale 0.01.
# Results: bench/results/queries-sf{SF}.{md,json}.  Exits non-zero when a result differs
# from DuckDB's or an engine fails.
set -euo pipefail

exec "$(dirname "${BASH_SOURCE[0]}")/launch.sh" queries.sh queries.py "$@"
