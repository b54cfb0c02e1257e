#!/usr/bin/env bash
# The project's test command (README): formatting, lints, Rust tests, and the Python
# differential tests against pyarrow. Installs what it needs (a Python venv via pip).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

export CARGO_TERM_COLOR=never
export RUST_BACKTRACE=1
target_dir="${CARGO_TARGET_DIR:-$root/target}"
venv="${SIFT_TEST_VENV:-$HOME/.cache/sift-test-venv}"

step() { printf '\n==> %s\n' "$*"; }

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy (all targets, warnings are errors)"
cargo clippy --workspace --all-targets -- -D warnings

step "sift-scan without its parquet feature: lints (warnings are errors) and unit tests"
cargo clippy -p sift-scan --no-default-features --all-targets -- -D warnings
cargo test -p sift-scan --no-default-features --lib

step "cargo doc (warnings are errors: no broken or private links)"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --quiet

step "cargo test"
cargo test --workspace

if [ -f fuzz/Cargo.toml ]; then
  step "fuzz targets compile"
  cargo check --manifest-path fuzz/Cargo.toml --target-dir "$target_dir/fuzz"
fi

step "Python tests: differential (pyarrow, DuckDB) and the Python package"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
"$venv/bin/pip" install --quiet --disable-pip-version-check -r tests/python/requirements.txt
# `cargo test` above built the binary (the CLI's integration tests run it).
if [ ! -x "$target_dir/debug/sift" ]; then
  cargo build -p sift-cli
fi

step "Python package: build and install into the test environment (maturin develop)"
# A debug build, like the tests': crates/sift-python pins the shared dependencies'
# features so that this reuses the compiled dependencies of `cargo test` above.
VIRTUAL_ENV="$venv" PATH="$venv/bin:$PATH" \
  "$venv/bin/maturin" develop --quiet --manifest-path crates/sift-python/Cargo.toml
set +e
SIFT_BIN="$target_dir/debug/sift" "$venv/bin/python" -m pytest -q tests/python
rc=$?
set -e
if [ "$rc" -eq 5 ]; then
  echo "pytest collected no tests: treating as a failure" >&2
  exit 1
fi
exit "$rc"
