#!/usr/bin/env bash
# On an H100/H200: build the wgmma16 family (sm_90a) with the full mma16 list beside it (the fp32
# kernels in their small set), check every wgmma16 instance against the reference
# (tests/kernels_wgmma16_test.cu), ptxas registers/spills and SASS (HGMMA, no local memory), then,
# by STEPS (a comma list; default all): time=the seed cases beside mma16 (L2 flushed, median),
# sdpa=benchmarks/sdpa_compare.py --dtype bf16 (SDPA FLASH / CUDNN and flashtune's best),
# sanitize=compute-sanitizer memcheck, racecheck, synccheck on one config per d. Logs under $OUT.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${OUT:-/tmp/wgmma16-check}"
build="${BUILD:-$root/build-dev}"
steps="${STEPS:-test,time,sdpa,sanitize}"
mkdir -p "$out"
cd "$root"
nvidia-smi -L > "$out/gpu.txt" 2>&1; cat "$out/gpu.txt"
{ time cmake -S . -B "$build" -G Ninja -DCMAKE_CUDA_ARCHITECTURES=90 -DFLASHTUNE_PYTHON=OFF -DFLASHTUNE_PTXAS_VERBOSE=ON \
    -DFLASHTUNE_SMALL_KERNEL_SET=ON -DFLASHTUNE_BUILD_BENCH=OFF -DCMAKE_CXX_FLAGS=-DFLASHTUNE_MMA16_FULL_SET=1 \
    -DCMAKE_CUDA_FLAGS=-DFLASHTUNE_MMA16_FULL_SET=1 &&
  time cmake --build "$build" -j16 --target kernels_wgmma16_test flashtune; } \
  > "$out/build.log" 2>&1 || { grep -E "error" "$out/build.log" | head -20; tail -30 "$out/build.log"; exit 2; }
tail -3 "$out/build.log"
grep -E "spill|Used [0-9]+ registers|Compiling entry" "$out/build.log" | grep -A2 wgmma16_kernel > "$out/ptxas.txt"
echo "wgmma16 ptxas: $(grep -c 'Compiling entry' "$out/ptxas.txt") kernels, nonzero spills: $(grep -cE '[1-9][0-9]* bytes spill stores' "$out/ptxas.txt")"
grep -iE "C75|serializ" "$out/build.log" | sort | uniq -c | head -5
cuobjdump -sass "$build/tests/kernels_wgmma16_test" 2> /dev/null | awk '/Function :/ { f = $3 } { print f "\t" $0 }' \
  | grep wgmma16_kernel > /tmp/wgmma16_sass.txt
echo "HGMMA: $(grep -c 'HGMMA' /tmp/wgmma16_sass.txt)  UTMALDG: $(grep -c UTMALDG /tmp/wgmma16_sass.txt)  UTMASTG: $(grep -c UTMASTG /tmp/wgmma16_sass.txt)  LDL/STL: $(grep -cE '\b(LDL|STL)\b' /tmp/wgmma16_sass.txt)" | tee "$out/sass_counts.txt"
t="$build/tests"
if [[ ",$steps," == *",test,"* ]]; then
  timeout "${TEST_TIMEOUT:-200}" "$t/kernels_wgmma16_test" > "$out/test.log" 2>&1
  echo "wgmma16 test rc=$?"; grep -E "worst rel|FAILED|PASSED|Failure|rel_l2|regs" "$out/test.log" | head -40
fi
if [[ ",$steps," == *",time,"* ]]; then
  FLASHTUNE_TIMING_REPORT="$out/timing.json" timeout "${TIME_TIMEOUT:-200}" "$t/kernels_wgmma16_test" \
    --gtest_also_run_disabled_tests --gtest_filter='*Wgmma16Timing*' > "$out/timing.log" 2>&1
  echo "timing rc=$?"; grep BEST "$out/timing.log"
fi
if [[ ",$steps," == *",sdpa,"* ]]; then
  PYTHONUNBUFFERED=1 timeout "${SDPA_TIMEOUT:-200}" python3 benchmarks/sdpa_compare.py --flashtune "$build/app/flashtune" \
    --dtype bf16 --mma-peak-tflops 643 --out "$out/sdpa-bf16.json" > "$out/sdpa.log" 2>&1
  echo "sdpa rc=$?"; grep -E "^\| |speed vs|error within" "$out/sdpa.log" | tail -16
fi
if [[ ",$steps," == *",sanitize,"* ]]; then
  for cfg in "${SAN_D64:-wgmma16/d64/br128xbc128/swizzled/bf16/s2}" "${SAN_D128:-wgmma16/d128/br128xbc128/swizzled/bf16/s2}"; do
    for tool in memcheck racecheck synccheck; do
      FLASHTUNE_TEST_QUICK=1 FLASHTUNE_KERNEL_FILTER="$cfg" timeout 120 compute-sanitizer --tool $tool --error-exitcode 3 \
        "$t/kernels_wgmma16_test" --gtest_filter='KernelsWgmma16.EveryInstance*' > "$out/san-$tool-$(echo $cfg | cut -d/ -f2).log" 2>&1
      echo "sanitizer $tool $cfg rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/san-$tool-$(echo $cfg | cut -d/ -f2).log" | head -1)"
    done
  done
fi
