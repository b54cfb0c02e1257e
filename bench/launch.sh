#!/usr/bin/env bash
# Shared by bench/run.sh, queries.sh, sql.sh, corpus.sh, byteslice.sh, python.sh and nested.sh: venv setup,
# release build of sift (or $SIFT_BIN if set, never built here), then a harness script on one core
# (taskset -c 0) with single-threaded libraries (a harness pins each engine it runs).
#
#   bench/launch.sh NAME SCRIPT.py [--scale SF] [--no-build] [script options...]
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
name="$1"
script="$2"
shift 2
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
if [[ -n "${SIFT_BIN:-}" ]]; then
    sift="$SIFT_BIN"
elif [[ $build = 1 ]]; then
    echo "$name: cargo build --release -p sift-cli" >&2
    if ! (cd "$repo" && cargo build --release -p sift-cli >&2); then
        echo "$name: WARNING: cargo build failed; Sift is reported as not measured" >&2
        sift="none"
        missing="cargo build --release -p sift-cli failed"
    fi
fi

export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 RAYON_NUM_THREADS=1 \
    TOKIO_WORKER_THREADS=1 ARROW_IO_THREADS=1
exec taskset -c 0 "$venv/bin/python" "$here/$script" --scale "$scale" --sift "$sift" \
    --sift-missing-reason "$missing" ${pass[@]+"${pass[@]}"}
