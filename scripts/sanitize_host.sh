#!/usr/bin/env bash
# The host-only code under AddressSanitizer and UndefinedBehaviorSanitizer (clang): builds the
# host libraries (model, profile, fit, plots, .npy) and their tests with -DFLASHTUNE_HOST_ONLY=ON,
# runs the tests (tests/host_tests.cmake: the profile's writer, journal, lock, store and merge among
# them), then every fuzz target for a few seconds (scripts/fuzz.sh). No CUDA needed; the
# flashtune binary itself is not in this build (it links the CUDA libraries).
# Usage: scripts/sanitize_host.sh [fuzz seconds per target, default 20; 0 skips fuzzing]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-20}
build=${BUILD:-$PWD/build-asan}
start=$(date +%s)
# -O1 -g1: line tables are enough for ASan's stack traces; full debug info and -O2 only cost
# compile time on the 2-core CI machine.
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=None -DCMAKE_CXX_FLAGS="-O1 -g1" -DCMAKE_CXX_COMPILER=clang++ \
  -DFLASHTUNE_HOST_ONLY=ON -DFLASHTUNE_SANITIZE=ON -DFLASHTUNE_FUZZ=ON -DFLASHTUNE_BUILD_BENCH=OFF > /dev/null
cmake --build "$build" -j "$(nproc)"
echo "sanitize_host: build $(( $(date +%s) - start )) s"
# detect_leaks: the tests own what they allocate; a leak is a defect like any other.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
t0=$(date +%s)
# The shipped-H200-profile checks (eight tests over 1915 measurements, ~30 s each under ASan) are
# data checks of code the fixture tests cover; the main suite runs them without sanitizers.
ctest --test-dir "$build" -j "$(nproc)" --output-on-failure --no-tests=error -E '^ShippedH200Profile[.]'
echo "sanitize_host: tests $(( $(date +%s) - t0 )) s"
if [ "$seconds" != 0 ]; then
  t0=$(date +%s)
  BUILD=$build scripts/fuzz.sh "$seconds"
  echo "sanitize_host: fuzzing $(( $(date +%s) - t0 )) s"
fi
echo "sanitize_host: total $(( $(date +%s) - start )) s"
