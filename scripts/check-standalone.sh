#!/usr/bin/env bash
# Fails when a tracked file depends on something outside the repository: a `../shared`
# folder beside the clone (the developers' reference shelf, absent from a user's clone)
# or an absolute path of the machine a file was written on (the checkout's own folder, a
# home folder, a scratch folder). A user clones hetsched onto a fresh machine with nothing
# beside it; tests, docs and defaults must read only what the repository holds.
# The daemon's documented runtime default `/tmp/hetsched-$UID/` is allowed.
set -euo pipefail
cd "$(dirname "$0")/.."

shelf='\.\./shared'
abs='(/work/|/home/[A-Za-z]|/root/|/tmp/(\$|[A-Za-z0-9_.-]))'
here=$(pwd)
# Every tracked file but this one, which names the patterns.
files=(-- ':!Cargo.lock' ':!scripts/check-standalone.sh')

status=0
report() { echo "check-standalone: $1" >&2; status=1; }

if out=$(git grep -nI -E "$shelf" "${files[@]}"); then
  report "tracked files refer to ../shared (copy what is needed into the repository):"
  echo "$out" >&2
fi
if out=$(git grep -nI -E "$abs" "${files[@]}" | grep -vE '/tmp/hetsched-(\$UID|\{\})'); then
  report "tracked files name an absolute path of a machine:"
  echo "$out" >&2
fi
if out=$(git grep -nIF "$here/" "${files[@]}"); then
  report "tracked files name this checkout's folder ($here):"
  echo "$out" >&2
fi
[ "$status" -eq 0 ] && echo "check-standalone: no tracked file refers to ../shared or a machine's absolute path"
exit "$status"
