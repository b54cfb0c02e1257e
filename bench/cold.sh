#!/usr/bin/env bash
# Cold against warm: TPC-H Q6 on lineitem as a whole `sift query q6` process (start-up
# subtracted) against the same query warm in one process, on a file just written by `sift
# convert` and on the same file after an eviction and a sequential read (see cold.py).
#
#   bench/cold.sh [--scale SF] [--no-build] [cold.py options...]
#
# SF defaults to 1.  The sift binary: $SIFT_BIN if set (never built here), else
# ${CARGO_TARGET_DIR:-target}/release/sift, built first unless --no-build.
# cold.py options: --rounds N (default 5), --processes N per round (default 30).
# Data: tpchgen's lineitem.parquet in bench/data/tpch-sf{SF}/ (shared with sql.sh), converted
# into bench/data/cold-sf{SF}/.  Results: bench/results/cold-sf{SF}.{md,json}.
set -euo pipefail

exec "$(dirname "${BASH_SOURCE[0]}")/launch.sh" cold.sh cold.py "$@"
