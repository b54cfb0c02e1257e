#!/usr/bin/env bash
# Filter scans on wide lineitem columns with their codes stored as byte slices
# (`sift convert --byteslice`) against the writer's default encodings, at selectivities
# from 0.1 % to 50 % (bench/byteslice.py). Venv setup, release build of sift (or $SIFT_BIN),
# then one process on one core (taskset -c 0).
#
#   bench/byteslice.sh [--scale SF] [--runs N] [--no-build]
#
# Results: bench/results/byteslice-sf{SF}.{md,json}.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec "$here/launch.sh" byteslice.sh byteslice.py "$@"
