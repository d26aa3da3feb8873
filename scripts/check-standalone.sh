#!/usr/bin/env bash
# Fails when a tracked file depends on something outside the repository: the developers'
# reference shelf in a folder beside the clone (absent from a user's clone), or an
# absolute path of the machine a file was written on (the checkout's own folder, a home
# folder, a scratch folder). A user clones hetsched onto a fresh machine with nothing
# beside it; tests, docs and defaults must read only what the repository holds.
# The daemon's documented runtime default (a hetsched-$UID folder in the scratch
# folder) is allowed.
set -euo pipefail
cd "$(dirname "$0")/.."

# The patterns are assembled from pieces so that this file does not name them itself.
shelf='\.\./'"sha"'red'
abs='(/'"wo"'rk/|/'"ho"'me/[A-Za-z]|/'"ro"'ot/|/'"tm"'p/(\$|[A-Za-z0-9_.-]))'
allowed='/'"tm"'p/hetsched-(\$UID|\{\})'
here=$(pwd)
files=(-- ':!Cargo.lock')

status=0
report() { echo "check-standalone: $1" >&2; status=1; }

if out=$(git grep -nI -E "$shelf" "${files[@]}"); then
  report "tracked files refer to the reference shelf beside the clone (copy what is needed into the repository):"
  echo "$out" >&2
fi
if out=$(git grep -nI -E "$abs" "${files[@]}" | grep -vE "$allowed"); then
  report "tracked files name an absolute path of a machine:"
  echo "$out" >&2
fi
if out=$(git grep -nIF "$here/" "${files[@]}"); then
  report "tracked files name this checkout's folder ($here):"
  echo "$out" >&2
fi
[ "$status" -eq 0 ] && echo "check-standalone: no tracked file refers to the shelf beside the clone or a machine's absolute path"
exit "$status"
