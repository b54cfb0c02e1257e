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
venv="${SIFT_BENCH_VENV:-$HOME/.cache/sift-bench-venv}"
"$here/setup.sh"
if [[ " $* " != *" --no-build "* ]]; then
    # A release wheel installed into the venv (not an editable install, whose compiled
    # module lives in the source tree and is replaced by the test command's debug build).
    echo "python.sh: maturin build --release (crates/sift-python), pip install" >&2
    wheels="$(mktemp -d)"
    trap 'rm -rf "$wheels"' EXIT
    "$venv/bin/maturin" build --release --quiet --out "$wheels" \
        --manifest-path "$here/../crates/sift-python/Cargo.toml" >&2
    "$venv/bin/pip" install --quiet --force-reinstall --no-deps "$wheels"/*.whl >&2
fi
exec "$here/launch.sh" python.sh python.py "$@"
