#!/usr/bin/env bash
# Ray Data: sift.ray.read_sift on Sift files against ray.data.read_parquet on the Parquet
# files they came from, TPC-H lineitem SF1 in 8 files, Q6's and Q1's projection and filter
# (bench/ray_read.py), on a local Ray cluster of 2 CPUs.
#
#   bench/ray.sh [--no-build] [--runs N]
#
# Builds the release `sift` binary and the release wheel of the Python package (installed
# into the bench venv, like bench/python.sh). Results: bench/results/ray/tpch-sf1.{md,json}.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
venv="${SIFT_BENCH_VENV:-$HOME/.cache/sift-bench-venv}"
"$here/setup.sh"
target="${CARGO_TARGET_DIR:-$repo/target}"
[[ "$target" = /* ]] || target="$repo/$target"

pass=()
build=1
for a in "$@"; do
    case "$a" in
        --no-build) build=0 ;;
        *) pass+=("$a") ;;
    esac
done
if [[ $build = 1 ]]; then
    echo "ray.sh: cargo build --release -p sift-cli; maturin build --release (crates/sift-python)" >&2
    (cd "$repo" && cargo build --release -p sift-cli >&2)
    "$here/wheel.sh" ray.sh
fi
cd "$repo"
exec "$venv/bin/python" "$here/ray_read.py" --sift "$target/release/sift" ${pass[@]+"${pass[@]}"}
