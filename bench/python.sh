#!/usr/bin/env bash
# The Python package (a release wheel, built and installed into the bench venv) against pyarrow, DuckDB and Polars on TPC-H lineitem, from Python, on one
# core: Q6's scan to a pyarrow table and to pandas, Q6 by DuckDB and Polars over
# `sift.dataset` and over Parquet, and the Python layer's cost against `sift bench scan`.
#
#   bench/python.sh [--scale SF] [--no-build] [--runs N]
#
# SF defaults to 1. Results: bench/results/python-sf{SF}.{md,json}.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
"$here/setup.sh"
if [[ " $* " != *" --no-build "* ]]; then
    "$here/wheel.sh" python.sh
fi
exec "$here/launch.sh" python.sh python.py "$@"
