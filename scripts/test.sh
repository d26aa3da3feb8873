#!/usr/bin/env bash
# `make test` (and CI): every check, cheapest first, each phase's wall time on stderr.
# The project's Python environment (.venv, scripts/venv.sh: mostly downloads, ~2 min on a
# fresh machine) is made while clippy compiles, so a fresh clone does not wait for both.
set -euo pipefail
cd "$(dirname "$0")/.."
# One build per run: incremental caches would add 2.5 GB to target/ for nothing (CI machines
# have little disk; a CI run once failed on it).
export CARGO_INCREMENTAL=0

started=$SECONDS
phase() {
  local name=$1 t0=$SECONDS
  shift
  echo "test: $name ..." >&2
  "$@"
  echo "test: $name done in $((SECONDS - t0)) s ($((SECONDS - started)) s so far)" >&2
}

phase "standalone check" bash scripts/check-standalone.sh
phase "cargo fmt" cargo fmt --all -- --check

venv_log=$(mktemp)
trap 'rm -f "$venv_log"' EXIT
bash scripts/venv.sh >"$venv_log" 2>&1 &
venv=$!
phase "cargo clippy" cargo clippy --workspace --all-targets -- -D warnings
if ! wait "$venv"; then
  cat "$venv_log" >&2
  echo "test: making the Python environment (scripts/venv.sh) failed" >&2
  exit 1
fi
# The SimPy peer of `bench peers` (a Rust test) and the Python tests run in .venv
# (or under the $PYTHON you set).
PYTHON=${PYTHON:-$(tail -n 1 "$venv_log")}
export PYTHON

phase "Rust tests" cargo nextest run --workspace --no-fail-fast
phase "Python tests" bash scripts/python-test.sh
echo "test: all passed in $((SECONDS - started)) s" >&2
