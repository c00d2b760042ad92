#!/usr/bin/env bash
# Builds everything (full kernel set, GPU tests included) and runs the whole test suite.
# GPU tests skip themselves (GTEST_SKIP with the reason) where no CUDA device is present.
# Usage: scripts/test.sh [preset]      (preset: default | small; default is the full kernel set)
set -euo pipefail
cd "$(dirname "$0")/.."
preset=${1:-default}
scripts/install-deps.sh
export PATH=/usr/local/cuda/bin:$PATH
# Debian's Python (its pytest and pybind11 come from install-deps.sh), not one earlier on PATH.
python_args=()
[ -x /usr/bin/python3 ] && python_args=(-DPython3_EXECUTABLE=/usr/bin/python3)
cmake --preset "$preset" -G Ninja "${python_args[@]}"
cmake --build --preset "$preset" -j "$(nproc)"
ctest --preset "$preset" -j "$(nproc)"
# The host-only code under ASan + UBSan (clang) and every fuzz target for a bounded time; the
# executions per target are in the log. FLASHTUNE_FUZZ_SECONDS=0 skips fuzzing,
# FLASHTUNE_SANITIZE_HOST=0 the whole step.
if [ "$preset" = default ] && [ "${FLASHTUNE_SANITIZE_HOST:-1}" = 1 ]; then
  scripts/sanitize_host.sh "${FLASHTUNE_FUZZ_SECONDS:-10}"
fi
