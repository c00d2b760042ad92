#!/usr/bin/env bash
# On an H100/H200: the wgmma16 ping-pong (/pp) beside the same tiles without it, in one device call.
# Builds the wgmma16 family (sm_90a, full list) with the full mma16 list and the small fp32 set
# (the two test binaries only, ptxas verbose), then: ptxas (registers and spills of every wgmma16
# kernel) and SASS (the /pp consumer loop in program order: HGMMA issues, their waits, the turn
# barriers, the exponentials), test (kernels_wgmma16_test: every instance, /ov and /pp twins on the
# KV-cache / grouped / causal shapes, no spills; the wgmma16 rows of kernels_inference_test),
# timing (the disabled seed-case timing of every wgmma16 config: /pp and its twin in one process,
# L2 flushed, median of 15), sanitize (synccheck and racecheck on a three-consumer /pp config).
# Every step under its own timeout so that the call ends inside the device's limit. Logs in $OUT
# (8 files: summary.txt, build.log.gz, ptxas.txt, sass.txt, test.log, timing.{log,json}, san.log).
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${OUT:-/tmp/wgmma16-pingpong}"
build="${BUILD:-/tmp/wg-pp}"
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
  timeout "${BUILD_TIMEOUT:-230}" cmake --build "$build" -j"$(nproc)" --target kernels_wgmma16_test kernels_inference_test; } \
  > "$blog" 2>&1
rc=$?
say "build rc=$rc ($(since))"
if [ $rc -ne 0 ]; then grep -E "error" "$blog" | head -20 | tee -a "$out/summary.txt"; tail -20 "$blog"; exit 2; fi
t="$build/tests"
grep -E "spill|Used [0-9]+ registers|Compiling entry" "$blog" | grep -A2 wgmma16_kernel > "$out/ptxas.txt"
say "wgmma16 ptxas: $(grep -c 'Compiling entry' "$out/ptxas.txt") kernels, nonzero spill lines: $(grep -cE '[1-9][0-9]* bytes spill' "$out/ptxas.txt")"
# The /pp kernels' ptxas lines (template arguments ...ELi<overlap>ELi1EEEv).
grep -A2 -E "Li[01]ELi1EEEvNS0_11WgmmaParams" "$out/ptxas.txt" | grep -E "Compiling|spill|Used" | sed -E 's/.*kernelILi/  /; s/EEEvNS0.*//' | tee -a "$out/summary.txt"
cuobjdump -sass "$t/kernels_wgmma16_test" 2> /dev/null | awk '/Function :/ { f = $3 } { print f "\t" $0 }' \
  | grep wgmma16_kernel > /tmp/wgmma16_sass.txt
say "SASS HGMMA: $(grep -c HGMMA /tmp/wgmma16_sass.txt)  BAR.ARV: $(grep -c 'BAR.ARV' /tmp/wgmma16_sass.txt)  LDL/STL: $(grep -cE '\b(LDL|STL)\b' /tmp/wgmma16_sass.txt)"
# d128 br128xbc128 s2 /pp and d64 br192xbc128 s2 /pp: the consumer loop in program order.
for k in "Li128ELi128ELi128ELNS_6LayoutE2ELi1ELi2ELi0ELi0ELi1E:sass-d128-br128-s2-pp" \
         "Li64ELi192ELi128ELNS_6LayoutE2ELi1ELi2ELi0ELi0ELi1E:sass-d64-br192-s2-pp"; do
  grep "${k%%:*}" /tmp/wgmma16_sass.txt | cut -f2 \
    | grep -E "HGMMA|WARPGROUP|DEPBAR|BAR\.|SYNCS|MUFU.EX2|BRA" | sed -E 's@/\*[0-9a-f]+\*/@@; s/ +/ /g' \
    | awk '{ k = $0; sub(/HGMMA.*/, "HGMMA", k); sub(/MUFU.EX2.*/, "MUFU.EX2", k); if (k == last) n++; else { if (last != "") print n "x " last; last = k; n = 1 } } END { print n "x " last }' \
    | sed "s/^/${k##*:} /" >> "$out/sass.txt"
done
timeout "${TEST_TIMEOUT:-90}" "$t/kernels_wgmma16_test" > "$out/test.log" 2>&1
say "wgmma16 test rc=$? ($(since))"; grep -E "worst rel|FAILED|PASSED|Failure|differ|tests ran" "$out/test.log" | head -30 | tee -a "$out/summary.txt"
FLASHTUNE_KERNEL_FILTER=wgmma16 timeout "${INF_TIMEOUT:-40}" "$t/kernels_inference_test" > /tmp/inference.log 2>&1
say "inference (wgmma16) rc=$? ($(since))"; cat /tmp/inference.log >> "$out/test.log"; grep -E "worst rel|FAILED|PASSED|Failure" /tmp/inference.log | head -8 | tee -a "$out/summary.txt"
FLASHTUNE_KERNEL_FILTER=wgmma16 FLASHTUNE_TIMING_REPORT="$out/timing.json" timeout "${TIMING_TIMEOUT:-80}" \
  "$t/kernels_wgmma16_test" --gtest_also_run_disabled_tests --gtest_filter='*Wgmma16Timing*' > "$out/timing.log" 2>&1
say "timing rc=$? ($(since))"
grep -E "TFLOP/s" "$out/timing.log" | grep -v BEST | tee -a "$out/summary.txt" > /dev/null
for cfg in ${SANITIZE:-wgmma16/d64/br192xbc128/swizzled/bf16/s2/pp}; do
  for tool in synccheck racecheck; do
    [ $(( $(date +%s) - start )) -gt "${SAN_DEADLINE:-330}" ] && { say "sanitize $tool $cfg: skipped (time)"; continue; }
    FLASHTUNE_TEST_QUICK=1 FLASHTUNE_KERNEL_FILTER="$cfg" timeout 45 compute-sanitizer --tool $tool --error-exitcode 3 \
      "$t/kernels_wgmma16_test" --gtest_filter='KernelsWgmma16.PingPong*' > /tmp/san.log 2>&1
    say "sanitize $tool $cfg rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' /tmp/san.log | head -1)"; cat /tmp/san.log >> "$out/san.log"
  done
done
gzip -f "$blog"
say "done ($(since))"
