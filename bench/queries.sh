#!/usr/bin/env bash
# Sift end-to-end query benchmark (issue 5): venv setup, release build of sift, then
# bench/queries.py on one core (taskset -c 0).
#
#   bench/queries.sh [--scale SF] [--no-build] [queries.py options...]
#
# queries.py options: --runs N (default 5), --queries q1,q6,q12,q14,q19,q6-nulls,micro,
# --engines sift,sift-parquet,duckdb,duckdb-parquet,pyarrow,vortex, --micro-rows N,
# --sift PATH (see `bench/queries.sh --help`).  Quick check: bench/queries.sh --scale 0.01.
# Results: bench/results/queries-sf{SF}.{md,json}.  Exits non-zero when a result differs
# from DuckDB's or an engine fails.
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
    echo "queries.sh: cargo build --release -p sift-cli" >&2
    if ! (cd "$repo" && cargo build --release -p sift-cli >&2); then
        echo "queries.sh: WARNING: cargo build failed; Sift will be reported as unavailable" >&2
        sift="none"
        missing="cargo build --release -p sift-cli failed"
    fi
fi

export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 RAYON_NUM_THREADS=1 \
    TOKIO_WORKER_THREADS=1 ARROW_IO_THREADS=1
exec taskset -c 0 "$venv/bin/python" "$here/queries.py" --scale "$scale" --sift "$sift" \
    --sift-missing-reason "$missing" ${pass[@]+"${pass[@]}"}
