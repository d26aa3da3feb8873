#!/usr/bin/env bash
# The Python package's tests (make test runs this after the Rust suite), in the project's
# environment .venv (scripts/venv.sh makes it if missing; $PYTHON overrides it): builds the
# extension as a debug wheel (it reuses the workspace's debug build: seconds, where a
# release build of every crate takes minutes), installs it, builds the `hetsched` binary
# the live tests start as a daemon, and runs pytest from the repository root.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-$(bash scripts/venv.sh)}
mkdir -p "${CARGO_TARGET_DIR:-target}"
target=$(realpath "${CARGO_TARGET_DIR:-target}")
wheels="$target/python-test-wheels"
rm -rf "$wheels"
(cd python && "$PY" -m maturin build --quiet --profile dev -o "$wheels")
"$PY" -m pip install -q --disable-pip-version-check --force-reinstall --no-deps "$wheels"/hetsched-*.whl
cargo build --quiet --bin hetsched
export HETSCHED_BIN="$target/debug/hetsched"
"$PY" -m pytest -q python/tests
