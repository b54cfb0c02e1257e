#!/usr/bin/env bash
# Nested data (bench/nested.py): GitHub-events-like records with structs, lists of structs
# and maps, stored as Sift, Parquet zstd and Vortex, and a selective filter on a struct's
# field with a list column projected, through the Python package (a release wheel), pyarrow
# and DuckDB, in process, on one core.
#
#   bench/nested.sh [--rows N] [--runs N] [--no-build]
#
# Results: bench/results/nested.{md,json}.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
"$here/setup.sh"
if [[ " $* " != *" --no-build "* ]]; then
    "$here/wheel.sh" nested.sh
fi
exec "$here/launch.sh" nested.sh nested.py "$@"
