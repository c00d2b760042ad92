#!/usr/bin/env bash
# On an H100/H200: the wgmma16 persistent grid (/pe) beside the same tiles without it, in one device
# call. Builds the wgmma16 family (sm_90a, full list) with the full mma16 list and the small fp32 set
# (kernels_wgmma16_test only, ptxas verbose), then: ptxas (registers and spills of every wgmma16
# kernel), test (kernels_wgmma16_test on the /pe instances: against the reference, bit for bit
# against their twins on KV-cache / grouped shapes and grids of more tiles than SMs, causal refused,
# strided operands, no spills), timing (the disabled seed-case timing of every wgmma16 config: /pe and
# its twin in one process, L2 flushed, median of 15), sanitize (synccheck and racecheck on a /pe
# config, quick shape). SRC: the source tree to build (default: this checkout). Every step under its
# own timeout so that the call ends inside the device's limit. Logs in $OUT (summary.txt,
# build.log.gz, ptxas.txt, test.log, timing.{log,json}, san.log).
set -uo pipefail
root="${SRC:-$(cd "$(dirname "$0")/.." && pwd)}"
out="${OUT:-/tmp/wgmma16-persistent}"
build="${BUILD:-/tmp/wg-pe}"
mkdir -p "$out"
blog="$out/build.log"
start=$(date +%s)
since() { echo "$(( $(date +%s) - start )) s"; }
cd "$root"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee "$out/summary.txt"
say() { echo "$*" | tee -a "$out/summary.txt"; }
{ cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DFLASHTUNE_PYTHON=OFF \
    -DFLASHTUNE_PTXAS_VERBOSE=ON -DFLASHTUNE_SMALL_KERNEL_SET=ON -DFLASHTUNE_BUILD_BENCH=OFF \
    -DCMAKE_CXX_FLAGS=-DFLASHTUNE_MMA16_FULL_SET=1 -DCMAKE_CUDA_FLAGS=-DFLASHTUNE_MMA16_FULL_SET=1 &&
  timeout "${BUILD_TIMEOUT:-230}" cmake --build "$build" -j"$(nproc)" ${TARGETS:+--target $TARGETS}; } > "$blog" 2>&1
rc=$?
say "build rc=$rc ($(since))"
if [ $rc -ne 0 ]; then grep -E "error" "$blog" | head -20 | tee -a "$out/summary.txt"; tail -20 "$blog"; gzip -f "$blog"; exit 2; fi
t="$build/tests"
grep -E "spill|Used [0-9]+ registers|Compiling entry" "$blog" | grep -A2 wgmma16_kernel > "$out/ptxas.txt"
say "wgmma16 ptxas: $(grep -c 'Compiling entry' "$out/ptxas.txt") kernels, nonzero spill lines: $(grep -cE '[1-9][0-9]* bytes spill' "$out/ptxas.txt")"
# The /pe kernels' ptxas lines (template arguments ...ELi<pingpong>ELi1EEEv).
grep -A2 -E "Li[01]ELi1EEEvNS0_11WgmmaParams" "$out/ptxas.txt" | grep -E "Compiling|spill|Used" | sed -E 's/.*kernelILi/  /; s/EEEvNS0.*//' | tee -a "$out/summary.txt"
FLASHTUNE_KERNEL_FILTER=/pe timeout "${TEST_TIMEOUT:-100}" "$t/kernels_wgmma16_test" > "$out/test.log" 2>&1
say "wgmma16 test (/pe instances) rc=$? ($(since))"; grep -E "worst rel|FAILED|PASSED|Failure|differ|tests ran|regs" "$out/test.log" | head -40 | tee -a "$out/summary.txt"
FLASHTUNE_KERNEL_FILTER=wgmma16 FLASHTUNE_TIMING_REPORT="$out/timing.json" timeout "${TIMING_TIMEOUT:-90}" \
  "$t/kernels_wgmma16_test" --gtest_also_run_disabled_tests --gtest_filter='*Wgmma16Timing*' > "$out/timing.log" 2>&1
say "timing rc=$? ($(since))"
grep -E "TFLOP/s" "$out/timing.log" | grep -v BEST | tee -a "$out/summary.txt" > /dev/null
for cfg in ${SANITIZE:-wgmma16/d128/br128xbc128/swizzled/bf16/s3/ov/pp/pe}; do
  for tool in synccheck racecheck; do
    [ $(( $(date +%s) - start )) -gt "${SAN_DEADLINE:-330}" ] && { say "sanitize $tool $cfg: skipped (time)"; continue; }
    FLASHTUNE_TEST_QUICK=1 FLASHTUNE_KERNEL_FILTER="$cfg" timeout 45 compute-sanitizer --tool $tool --error-exitcode 3 \
      "$t/kernels_wgmma16_test" --gtest_filter='KernelsWgmma16.Persistent*' > /tmp/san.log 2>&1
    say "sanitize $tool $cfg rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' /tmp/san.log | head -1)"; cat /tmp/san.log >> "$out/san.log"
  done
done
# The model's predictions of the seed cases (H100 spec, shipped bf16 profile), every wgmma16 config.
if [ -x "$build/app/flashtune" ]; then
  for c in "10 2048 64" "500 2048 64" "2 32768 64" "16 4096 64" "64 1024 128" "64 1024 128 --causal" \
           "24 1999 64 --causal" "16 4096 128" "8 8192 128"; do
    set -- $c
    echo "== B=$1 N=$2 d=$3 ${4:-}" >> "$out/predict.txt"
    "$build/app/flashtune" predict --gpu nvidia-h100-sxm --profile profiles/nvidia-h100-sxm-bf16.json --B "$1" --N "$2" \
      --d "$3" ${4:-} --dtype bf16 --all --variant wgmma16 >> "$out/predict.txt" 2>&1
  done
  say "predict rc=$? ($(since))"
fi
# The CPU tests (GPU tests skip without a visible device).
if [ -n "${CTEST:-}" ]; then
  (cd "$build" && CUDA_VISIBLE_DEVICES= timeout "${CTEST_TIMEOUT:-90}" ctest -j"$(nproc)" --timeout 80 > /tmp/ctest.log 2>&1)
  say "ctest rc=$? ($(since))"; grep -E "tests passed|tests failed|Failed|\*\*\*" /tmp/ctest.log | head -20 | tee -a "$out/summary.txt"
fi
gzip -f "$blog"
say "done ($(since))"
