#!/usr/bin/env bash
# hetsched iobench side by side with fio on the same file and parameters: sequential
# direct reads (or writes: OP=write) of BLOCK bytes, DEPTH outstanding, JOBS instances, io_uring and libaio.
# Runs are interleaved (iobench, fio io_uring, fio libaio, the order rotating every round,
# ROUNDS rounds) so that a change in the machine's load or the host's caching hits all
# three alike; the median of each is printed with the ratio iobench / fio and the load
# average before and after (a shared virtual disk varies several-fold run to run). fio is not a build or
# test dependency: this is a measuring tool (`apt-get install fio`).
#
# usage: scripts/iobench-vs-fio.sh FILE [DEPTH] [BLOCK] [SECONDS] [JOBS] [ROUNDS] [OP]
# OP is read (the default) or write; writes overwrite FILE's data, so give a scratch file.
# FILE is created with 1 GiB of random data if it does not exist; it must be on a file
# system that takes O_DIRECT. Build first: cargo build --release -p hetsched-cli.
set -euo pipefail
file=${1:?usage: $0 FILE [DEPTH] [BLOCK] [SECONDS] [JOBS] [ROUNDS] [OP]}
depth=${2:-32}
block=${3:-1m}
seconds=${4:-10}
jobs=${5:-1}
rounds=${6:-6}
op=${7:-read}
case $op in read | write) ;; *) echo "OP: read or write, not $op" >&2; exit 2 ;; esac
here="$(cd "$(dirname "$0")/.." && pwd)"
bin=${HETSCHED:-"${CARGO_TARGET_DIR:-$here/target}/release/hetsched"}
command -v fio >/dev/null || { echo "fio is not installed (apt-get install fio)" >&2; exit 2; }
[ -x "$bin" ] || { echo "$bin: not built (cargo build --release -p hetsched-cli)" >&2; exit 2; }
if [ ! -e "$file" ]; then
  dd if=/dev/urandom of="$file" bs=1M count=1024 oflag=direct status=none
fi

iobench() {
  "$bin" iobench "$file" -n "$jobs" -q "$depth" -b "$block" --op "$op" --seconds "$seconds" --json |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["throughput_bytes_per_s"] / 1e6)'
}
fio_run() {
  fio --name=seq --filename="$file" --rw="$op" --bs="$block" --iodepth="$depth" --direct=1 \
      --ioengine="$1" --numjobs="$jobs" --size=1G --runtime="$seconds" --time_based \
      --group_reporting --output-format=json |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["jobs"][0][sys.argv[1]]["bw_bytes"] / 1e6)' "$op"
}

echo "file $file, $op, $jobs job(s), depth $depth, block $block, ${seconds} s x $rounds rounds"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
ours=() uring=() aio=()
for r in $(seq "$rounds"); do
  for k in 0 1 2; do
    case $(( (k + r) % 3 )) in
      0) ours+=("$(iobench)") ;;
      1) uring+=("$(fio_run io_uring)") ;;
      2) aio+=("$(fio_run libaio)") ;;
    esac
  done
  echo "round $r: iobench ${ours[-1]} MB/s, fio io_uring ${uring[-1]} MB/s, fio libaio ${aio[-1]} MB/s"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "${ours[*]}" "${uring[*]}" "${aio[*]}" <<'EOF'
import sys
import statistics
median = lambda s: statistics.median(map(float, s.split()))
o, u, a = (median(s) for s in sys.argv[1:4])
print(f"median: iobench {o:.1f} MB/s, fio io_uring {u:.1f} MB/s, fio libaio {a:.1f} MB/s")
print(f"ratio iobench/fio: io_uring {o / u:.3f}, libaio {o / a:.3f}")
EOF
