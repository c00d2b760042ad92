#!/usr/bin/env bash
# Installs every build and test dependency of flashtune from Debian packages.
# nvcc (CUDA 13.0) is expected to be installed already (/usr/local/cuda); this script checks for it.
# Usage: scripts/install-deps.sh            (as root, or with sudo available)
set -euo pipefail

packages=(cmake g++ make ninja-build libeigen3-dev nlohmann-json3-dev libgtest-dev libgmock-dev
          libcli11-dev libbenchmark-dev gnuplot-nox python3
          python3-dev pybind11-dev python3-pytest  # the Python module (python/) and its tests
          munge slurmctld slurmd slurm-client  # the Slurm test's single-node cluster (tests/slurm/)
          clang libclang-rt-dev llvm)  # the ASan/UBSan build and libFuzzer (scripts/sanitize_host.sh)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}" >&2
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "install-deps: all Debian packages present" >&2
fi

nvcc_path=$(command -v nvcc || true)
[ -n "$nvcc_path" ] || [ -x /usr/local/cuda/bin/nvcc ] || {
  echo "install-deps: nvcc not found (expected CUDA 13.0 under /usr/local/cuda); install the CUDA toolkit" >&2
  exit 1
}
echo "install-deps: done" >&2
