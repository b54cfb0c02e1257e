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
venv="${SIFT_BENCH_VENV:-$HOME/.cache/sift-bench-venv}"
"$here/setup.sh"
if [[ " $* " != *" --no-build "* ]]; then
    # A release wheel installed into the venv (not an editable install, whose compiled
    # module lives in the source tree and is replaced by the test command's debug build).
    echo "nested.sh: maturin build --release (crates/sift-python), pip install" >&2
    wheels="$(mktemp -d)"
    trap 'rm -rf "$wheels"' EXIT
    "$venv/bin/maturin" build --release --quiet --out "$wheels" \
        --manifest-path "$here/../crates/sift-python/Cargo.toml" >&2
    "$venv/bin/pip" install --quiet --force-reinstall --no-deps "$wheels"/*.whl >&2
fi
exec "$here/launch.sh" nested.sh nested.py "$@"
