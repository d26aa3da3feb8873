#!/usr/bin/env bash
# Builds a profile-guided (PGO) release of `hetsched`: an instrumented build runs the
# simulator's own workloads (a smaller `bench sim` under cfs and fcfs, and every example
# scenario under every policy), then the release build is optimised with that profile.
# The code is the same as `cargo build --release`'s; the compiler lays out branches and
# inlines by measured use.
# Output: target/pgo/release/hetsched. Needs the llvm-tools rustup component (installed
# here if missing) for llvm-profdata.
set -euo pipefail
cd "$(dirname "$0")/.."

host=$(rustc -vV | sed -n 's/^host: //p')
profdata="$(rustc --print sysroot)/lib/rustlib/$host/bin/llvm-profdata"
if [ ! -x "$profdata" ]; then
  rustup component add llvm-tools >&2
fi

# With whole-program optimisation: profile-guided indirect-call promotion turns the
# engine's hot `dyn Policy` calls into direct ones, and only LTO inlines those across the
# sim and policies crates (without LTO, PGO gave about a third of the gain; see
# docs/dev/simulator-performance.md, "`make pgo` when it was introduced").
export CARGO_PROFILE_RELEASE_LTO=fat CARGO_PROFILE_RELEASE_CODEGEN_UNITS=1

root=$(pwd)/target/pgo
rm -rf "$root/profiles"
mkdir -p "$root/profiles"

echo "pgo: instrumented build (target/pgo-gen)" >&2
RUSTFLAGS="-Cprofile-generate=$root/profiles" \
  cargo build --release -p hetsched-cli --target-dir target/pgo-gen
gen=target/pgo-gen/release/hetsched

echo "pgo: training runs" >&2
# Not the measured run: a smaller machine at another load.
"$gen" bench sim --tasks 200000 --packages 16 --load 0.8 --repeat 1 >/dev/null
policies=(fcfs cfs random ws dmda affinity)
# The example scenarios (files naming a machine; the others are machine files).
for s in $(grep -l '^machine\|^\[machine\]' scenarios/*.toml); do
  for p in "${policies[@]}"; do
    "$gen" simulate "$s" --policy "$p" --out "$root/train-out" >/dev/null
  done
done
"$profdata" merge -o "$root/merged.profdata" "$root/profiles"

echo "pgo: optimised build (target/pgo)" >&2
RUSTFLAGS="-Cprofile-use=$root/merged.profdata" \
  cargo build --release -p hetsched-cli --target-dir target/pgo
echo "pgo: built target/pgo/release/hetsched" >&2
