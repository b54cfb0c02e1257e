#!/usr/bin/env bash
# Builds the Python package's release wheel (crates/sift-python) and installs it into the
# bench venv, for the harnesses that measure it from Python. A wheel, not an editable
# install: an editable install's compiled module lives in the source tree, where the test
# command's debug build replaces it.
#
#   bench/wheel.sh NAME      (NAME prefixes the progress message)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="${SIFT_BENCH_VENV:-$HOME/.cache/sift-bench-venv}"
echo "${1:-wheel.sh}: maturin build --release (crates/sift-python), pip install" >&2
wheels="$(mktemp -d)"
trap 'rm -rf "$wheels"' EXIT
"$venv/bin/maturin" build --release --quiet --out "$wheels" \
    --manifest-path "$here/../crates/sift-python/Cargo.toml" >&2
"$venv/bin/pip" install --quiet --force-reinstall --no-deps "$wheels"/*.whl >&2
