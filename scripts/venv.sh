#!/usr/bin/env bash
# The project's Python environment, .venv at the repository root: the Python package's
# build and test tools (maturin, pytest), what its optional parts import (pandas,
# matplotlib, ray), SimPy, the peer `hetsched bench peers` runs, and wfcommons, which
# generates the workflows the task-graph tests run. make test installs
# nothing into the system Python; `make test` (scripts/test.sh) runs this script, which makes
# .venv and installs into it, again only when this list changes. Prints .venv's python on
# stdout. `hetsched bench peers` outside make test: PYTHON=.venv/bin/python.
set -euo pipefail
cd "$(dirname "$0")/.."

REQUIREMENTS=(
  "maturin>=1.5,<2"
  "pytest>=7"
  "pandas>=1.5"
  "matplotlib>=3.5"
  "simpy>=4,<5"
  "wfcommons>=1.5,<2"
)
# Optional: the Ray sweep test skips without it (Ray has no wheels for some platforms).
OPTIONAL=("ray>=2.9")

venv=.venv
py="$venv/bin/python"
if [ ! -x "$py" ]; then
  echo "venv: creating $venv with $(command -v python3)" >&2
  python3 -m venv "$venv"
fi
stamp="$venv/.hetsched-requirements"
if [ "$(cat "$stamp" 2>/dev/null)" != "${REQUIREMENTS[*]} ${OPTIONAL[*]}" ]; then
  echo "venv: installing ${REQUIREMENTS[*]} into $venv" >&2
  "$py" -m pip install -q --disable-pip-version-check --progress-bar off "${REQUIREMENTS[@]}"
  "$py" -m pip install -q --disable-pip-version-check --progress-bar off "${OPTIONAL[@]}" ||
    echo "venv: ${OPTIONAL[*]} not installed here; its test skips" >&2
  echo "${REQUIREMENTS[*]} ${OPTIONAL[*]}" >"$stamp"
fi
echo "$(pwd)/$py"
