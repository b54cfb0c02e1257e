#!/usr/bin/env bash
# Create (or reuse) the benchmark virtualenv and install bench/requirements.txt.
# Venv location: ${SIFT_BENCH_VENV:-$HOME/.cache/sift-bench-venv}
# Prints nothing but progress to stderr; safe to run repeatedly (fast when up to date).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="${SIFT_BENCH_VENV:-$HOME/.cache/sift-bench-venv}"
req="$here/requirements.txt"
python="${PYTHON:-python3}"

if [[ ! -x "$venv/bin/python" ]]; then
    echo "setup.sh: creating virtualenv at $venv" >&2
    mkdir -p "$(dirname "$venv")"
    "$python" -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --upgrade pip >&2
fi

# Skip pip entirely when the requirements file has not changed since the last install.
stamp="$venv/.sift-bench-requirements"
if [[ -f "$stamp" ]] && cmp -s "$req" "$stamp"; then
    exit 0
fi

echo "setup.sh: installing $req" >&2
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$req" >&2
cp "$req" "$stamp"
echo "setup.sh: done ($venv)" >&2
