#!/usr/bin/env bash
# The 22 TPC-H queries through `sift sql` (on Sift files, on Parquet with Sift's scan, on
# Parquet with DataFusion's reader with and without its filter pushdown) and DuckDB (native,
# on Parquet), at 1 and 2 threads (taskset -c 0 / -c 0,1); plus `sift query`'s hand-written
# plans against SQL and the 1 -> 2 thread scaling of Q1 and of a full read.  Every engine is
# timed the same way: a fresh process per query opens and plans untimed, then N runs (run 1
# = first run, best and median of the rest); every result is checked against DuckDB native.
#
#   bench/sql.sh [--scale SF] [--no-build] [sql.py options...]
#
# SF defaults to 1; `bench/sql.sh --scale 0.01` is a quick smoke run.  The sift binary:
# $SIFT_BIN if set (never built here), else ${CARGO_TARGET_DIR:-~/.cache/sift-target}/
# release/sift, built first with `cargo build --release -p sift-cli` unless --no-build.
# sql.py options: --runs N (default 6), --threads 1,2, --queries 1,6,..., --engines a,b,
# --no-handwritten, --no-scaling, --timeout S (see `python bench/sql.py --help`).
# Data: bench/data/tpch-sf{SF}/ (tpchgen-cli Parquet, Sift files, DuckDB database; cached).
# Results: bench/results/sql-sf{SF}.{md,json}.  Exits non-zero when a result differs from
# DuckDB native's or an engine fails.
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

missing=""
if [[ -n "${SIFT_BIN:-}" ]]; then
    sift="$SIFT_BIN"
else
    target="${CARGO_TARGET_DIR:-$HOME/.cache/sift-target}"
    [[ "$target" = /* ]] || target="$repo/$target"
    sift="$target/release/sift"
    if [[ $build = 1 ]]; then
        echo "sql.sh: cargo build --release -p sift-cli (target $target)" >&2
        if ! (cd "$repo" && CARGO_TARGET_DIR="$target" cargo build --release -p sift-cli >&2); then
            echo "sql.sh: WARNING: cargo build failed; the sift engines are reported as not measured" >&2
            sift="none"
            missing="cargo build --release -p sift-cli failed"
        fi
    fi
fi

# The driver runs on CPU 0; it pins every engine process itself (taskset -c 0 or -c 0,1).
exec taskset -c 0 "$venv/bin/python" "$here/sql.py" --scale "$scale" --sift "$sift" \
    --sift-missing-reason "$missing" ${pass[@]+"${pass[@]}"}
