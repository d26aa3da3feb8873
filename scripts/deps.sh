#!/usr/bin/env bash
# Installs what a fresh Debian machine lacks to build and test hetsched.
# As root it installs with apt-get; otherwise it prints the exact apt line and stops.
set -euo pipefail

APT_PACKAGES=(
  pkg-config
  libhwloc-dev libudev-dev hwloc   # topology discovery (hwlocality over libhwloc 2.9) + lstopo reference
  ocl-icd-opencl-dev pocl-opencl-icd clinfo  # OpenCL: a real CPU device through PoCL
  valgrind                         # lackey traces and cachegrind validation (signatures)
  qemu-user                        # the fast trace source (a TCG plugin) for signatures
  gcc libc6-dev binutils           # C ABI examples and tests (cc), objcopy for ELF notes
  gzip xz-utils bzip2 python3      # programs the signature validation traces
  python3-venv                     # the project's Python environment, .venv (scripts/venv.sh)
  libfontconfig1-dev libfreetype-dev fonts-dejavu-core  # PNG plots (plotters' ttf text)
  chromium                         # renders the reproduce report headless in its test (~12 s to install)
  g++ libsimgrid-dev               # SimGrid 3.32 (S4U), the peer `hetsched bench peers` runs beside the simulator
  starpu-examples                  # StarPU 1.3's overhead examples, which `hetsched bench daemon` runs beside the daemon
)

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  if [ "$(id -u)" -eq 0 ]; then
    echo "deps: installing ${missing[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "deps: missing Debian packages; run:" >&2
    echo "  sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
fi

if ! cargo nextest --version >/dev/null 2>&1; then
  echo "deps: installing cargo-nextest" >&2
  cargo install --locked cargo-nextest >/dev/null
fi
