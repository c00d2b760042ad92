#!/usr/bin/env bash
# On a GPU machine: build the mma16 family (the fp32 kernels in their small set unless FULL=1),
# check every mma16 instance against the reference (tests/kernels_mma16_test.cu), the host traits
# and registry tests, ptxas registers/spills and SASS (HMMA.16816, no local memory), time the seed
# cases in bf16 (L2 flushed, median) and PyTorch SDPA FLASH on the same shapes. Logs under $OUT.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${OUT:-/tmp/mma16-check}"
build="${BUILD:-$root/build-dev}"
mkdir -p "$out"
cd "$root"
nvidia-smi -L > "$out/gpu.txt" 2>&1; cat "$out/gpu.txt"
small=ON; [ "${FULL:-0}" = 1 ] && small=OFF
{ time cmake -S . -B "$build" -G Ninja -DCMAKE_CUDA_ARCHITECTURES=90 -DFLASHTUNE_PYTHON=OFF -DFLASHTUNE_PTXAS_VERBOSE=ON \
    -DFLASHTUNE_SMALL_KERNEL_SET=$small -DCMAKE_CXX_FLAGS=-DFLASHTUNE_MMA16_FULL_SET=1 \
    -DCMAKE_CUDA_FLAGS=-DFLASHTUNE_MMA16_FULL_SET=1 &&
  time cmake --build "$build" -j16 --target kernels_mma16_test; } \
  > "$out/build.log" 2>&1 || { tail -40 "$out/build.log"; exit 2; }
tail -3 "$out/build.log"
# The host tests link the model library, which others edit at the same time: built apart, so that a
# broken model build costs only these two.
timeout 240 cmake --build "$build" -j16 --target kernels_traits_test kernels_registry_test > "$out/build_host.log" 2>&1 ||
  { echo "host test build failed:"; grep -E "error" "$out/build_host.log" | head -5; }
grep -E "spill|Used [0-9]+ registers|Compiling entry" "$out/build.log" | grep -A2 mma16_kernel > "$out/ptxas.txt"
echo "mma16 ptxas: $(grep -c 'Compiling entry' "$out/ptxas.txt") kernels, nonzero spills: $(grep -cE '[1-9][0-9]* bytes spill stores' "$out/ptxas.txt")"
sass="$out/sass_counts.txt"
cuobjdump -sass "$build/tests/kernels_mma16_test" 2> /dev/null | awk '/Function :/ { f = $3 } { print f "\t" $0 }' \
  | grep mma16_kernel > /tmp/mma16_sass.txt
echo "HMMA.16816.F32.BF16: $(grep -c 'HMMA.16816.F32.BF16' /tmp/mma16_sass.txt)  HMMA.16816.F32 (fp16): $(grep -cE 'HMMA.16816.F32 ' /tmp/mma16_sass.txt)  LDSM: $(grep -c LDSM /tmp/mma16_sass.txt)  LDL/STL: $(grep -cE '\b(LDL|STL)\b' /tmp/mma16_sass.txt)" | tee "$sass"
t="$build/tests"
timeout 60 "$t/kernels_traits_test" > "$out/traits.log" 2>&1; echo "traits rc=$? $(grep -E 'PASSED|FAILED' "$out/traits.log" | head -5 | xargs)"
timeout 60 "$t/kernels_registry_test" > "$out/registry.log" 2>&1; echo "registry rc=$? $(grep -E 'PASSED|FAILED' "$out/registry.log" | head -5 | xargs)"
FLASHTUNE_TEST_REPORT="$out/mma16_errors.json" timeout "${TEST_TIMEOUT:-200}" "$t/kernels_mma16_test" > "$out/mma16_test.log" 2>&1
echo "mma16 test rc=$?"; grep -E "worst rel|FAILED|PASSED|Failure|rel_l2" "$out/mma16_test.log" | head -30
grep -E "regs" "$out/mma16_test.log" | head -80 > "$out/resources.txt"
FLASHTUNE_TIMING_REPORT="$out/mma16_timing.json" timeout "${TIME_TIMEOUT:-150}" "$t/kernels_mma16_test" \
  --gtest_also_run_disabled_tests --gtest_filter='*Mma16Timing*' > "$out/timing.log" 2>&1
echo "timing rc=$?"; grep BEST "$out/timing.log"
PYTHONUNBUFFERED=1 timeout 120 python3 scripts/mma16_sdpa.py > "$out/sdpa.log" 2>&1; echo "sdpa rc=$?"; cat "$out/sdpa.log" | tail -20
