#!/usr/bin/env bash
# The Python package's tests (make test runs this after the Rust suite): installs what the
# package and its tests need from PyPI (ray for the one Ray sweep test), builds the
# extension as a debug wheel (it reuses the workspace's debug build: seconds, where a
# release build of every crate takes minutes), installs it, builds the `hetsched` binary
# the live tests start as a daemon, and runs pytest from the repository root.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
pip=("$PY" -m pip install -q --disable-pip-version-check --root-user-action=ignore)

"${pip[@]}" "maturin>=1.5,<2" "pytest>=7" "pandas>=1.5" "matplotlib>=3.5" "ray>=2.9"
mkdir -p "${CARGO_TARGET_DIR:-target}"
target=$(realpath "${CARGO_TARGET_DIR:-target}")
wheels="$target/python-test-wheels"
rm -rf "$wheels"
(cd python && maturin build --quiet --profile dev -o "$wheels")
"${pip[@]}" --force-reinstall --no-deps "$wheels"/hetsched-*.whl
cargo build --quiet --bin hetsched
export HETSCHED_BIN="$target/debug/hetsched"
"$PY" -m pytest -q python/tests
