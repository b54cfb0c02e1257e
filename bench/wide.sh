#!/usr/bin/env bash
# Footer cost of a wide file: whole-process `sift cat FILE --columns c5 -o none` on a file of
# 10,000 int64 columns × 10,000 rows against one of 10 columns × 10,000 rows. Opening a file
# and reading one column should cost about the same whatever the file's width.
#
#   bench/wide.sh --sift PATH [--runs N] [--columns N] [--rows N]
#
# The files are generated once (pyarrow in the bench venv writes Parquet, `sift convert`
# makes the Sift files) under bench/data/wide/ and regenerated when the binary is newer.
# Reported per file: the first run and the best of N runs (wall time of the whole process),
# and the ratio wide / narrow of both.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="${SIFT_BENCH_VENV:-$HOME/.cache/sift-bench-venv}"
sift=""
runs=10
wide=10000
rows=10000
narrow=10
while [[ $# -gt 0 ]]; do
    case "$1" in
        --sift) sift="$2"; shift 2 ;;
        --runs) runs="$2"; shift 2 ;;
        --columns) wide="$2"; shift 2 ;;
        --rows) rows="$2"; shift 2 ;;
        -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
        *) echo "wide.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
if [[ -z "$sift" || ! -x "$sift" ]]; then
    echo "wide.sh: --sift PATH to a release sift binary is required" >&2
    exit 2
fi
if (( runs < 1 )); then
    echo "wide.sh: --runs must be at least 1" >&2
    exit 2
fi

"$here/setup.sh"
data="$here/data/wide"
mkdir -p "$data"

# Writes $data/c{COLUMNS}x{ROWS}.sift (via Parquet) unless it is newer than the binary.
make_file() {
    local columns="$1" base="$data/c${1}x${rows}"
    if [[ -f "$base.sift" && "$base.sift" -nt "$sift" ]]; then
        return
    fi
    echo "wide.sh: generating $columns columns × $rows rows" >&2
    "$venv/bin/python" - "$columns" "$rows" "$base.parquet" <<'EOF'
import sys
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

columns, rows, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
rng = np.random.default_rng(42)
arrays = [pa.array(rng.integers(0, 1 << 40, rows, dtype=np.int64)) for _ in range(columns)]
table = pa.Table.from_arrays(arrays, names=[f"c{i}" for i in range(columns)])
pq.write_table(table, out, compression="snappy")
EOF
    "$sift" convert "$base.parquet" "$base.sift" >/dev/null
}

# Prints "first best" (seconds) of `sift cat FILE --columns c5 -o none` over $runs runs.
time_cat() {
    "$venv/bin/python" - "$sift" "$1" "$runs" <<'EOF'
import subprocess, sys, time
sift, path, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
times = []
for _ in range(runs):
    start = time.perf_counter()
    subprocess.run([sift, "cat", path, "--columns", "c5", "-o", "none"],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    times.append(time.perf_counter() - start)
print(f"{times[0]:.6f} {min(times):.6f}")
EOF
}

make_file "$narrow"
make_file "$wide"
read -r n_first n_best < <(time_cat "$data/c${narrow}x${rows}.sift")
read -r w_first w_best < <(time_cat "$data/c${wide}x${rows}.sift")
awk -v nf="$n_first" -v nb="$n_best" -v wf="$w_first" -v wb="$w_best" \
    -v narrow="$narrow" -v wide="$wide" -v rows="$rows" -v runs="$runs" 'BEGIN {
    printf "sift cat FILE --columns c5 -o none (whole process, %d runs)\n", runs
    printf "%-28s %12s %12s\n", "file", "first ms", "best ms"
    printf "%-28s %12.2f %12.2f\n", narrow " columns x " rows " rows", nf * 1000, nb * 1000
    printf "%-28s %12.2f %12.2f\n", wide " columns x " rows " rows", wf * 1000, wb * 1000
    printf "%-28s %12.2f %12.2f\n", "ratio wide / narrow", wf / nf, wb / nb
}'
