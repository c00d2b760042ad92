#!/usr/bin/env bash
# One device call for the tensor-core family: build, correctness of every mma_* instance against
# the double reference (full shapes), registers/spills, HMMA in the SASS, compute-sanitizer on one
# config per d, the whole GPU test suite, `run --auto` on the seed cases, and flashtune's mma configs
# against SDPA. Results in $OUT. Usage: OUT=dir bash scripts/tc_check.sh [--no-sanitizer] [--no-sdpa] [--no-ctest]
set -uo pipefail
args=" $* "
root="$(cd "$(dirname "$0")/.." && pwd)"
OUT="${OUT:-$root/device-out}"; mkdir -p "$OUT"
build=/tmp/flashtune-tc
summary="$OUT/tc-summary.txt"
say() { echo "$*" | tee -a "$summary"; }
say "== $(nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader) =="
start=$(date +%s)
cmake -S "$root" -B "$build" -G Ninja -DFLASHTUNE_SMALL_KERNEL_SET=OFF -DFLASHTUNE_BUILD_BENCH=OFF \
  -DFLASHTUNE_PTXAS_VERBOSE=ON > "$OUT/tc-build.log" 2>&1 &&
  cmake --build "$build" -j"$(nproc)" >> "$OUT/tc-build.log" 2>&1 || { say "build failed"; grep -m20 -B2 -A8 "error" "$OUT/tc-build.log"; exit 2; }
say "build: $(( $(date +%s) - start )) s; ptxas reports with nonzero spills: $(grep -E '[1-9][0-9]* bytes spill stores' "$OUT/tc-build.log" | wc -l)"
ft="$build/app/flashtune"
FLASHTUNE_KERNEL_FILTER=mma_ FLASHTUNE_TEST_REPORT="$OUT/tc-correctness.json" timeout 300 \
  "$build/tests/kernels_correctness_test" --gtest_filter='KernelsCorrectness.Every*:KernelsCorrectness.Device*' > "$OUT/tc-correctness.log" 2>&1
say "correctness rc=$?"; grep -E "worst rel|FAILED|Failure|PASSED" "$OUT/tc-correctness.log" | head -20 | tee -a "$summary"
grep -E "^mma_" "$OUT/tc-correctness.log" | tee -a "$summary" | head -40
obj=$(find "$build" -name 'mma_3xtf32_d64.cu.o' | head -1)
if [ -n "$obj" ]; then
  cuobjdump -sass "$obj" > /tmp/tc.sass 2>/dev/null
  say "SASS mma_3xtf32_d64: HMMA $(grep -c HMMA /tmp/tc.sass), LDL/STL $(grep -cE 'LDL|STL' /tmp/tc.sass), LDS.128 $(grep -c 'LDS.128' /tmp/tc.sass), FFMA $(grep -c FFMA /tmp/tc.sass)"
  grep -m3 HMMA /tmp/tc.sass | tee -a "$summary"
fi
if [[ "$args" != *" --no-sanitizer "* ]]; then
  for cfg in "3 32 64 64 swizzled" "3 64 64 64 padded" "3 128 128 64 swizzled" "1 64 64 64 swizzled"; do
    set -- $cfg
    for tool in memcheck racecheck; do
      r=$(timeout 120 compute-sanitizer --tool $tool --error-exitcode 9 "$ft" run --variant mma_${1}xtf32 --precision $([ $1 = 1 ] && echo tf32 || echo fp32) \
          --d $2 --Br $3 --Bc $4 --layout $5 --B 2 --N 77 --causal --check --no-time 2>&1 | tail -3 | tr '\n' ' ')
      say "sanitizer $tool mma_${1}xtf32 d$2 $3x$4 $5: $r"
    done
  done
fi
if [[ "$args" != *" --no-ctest "* ]]; then
  (cd "$build" && timeout 400 ctest --output-on-failure -j1 > "$OUT/tc-ctest.log" 2>&1)
  say "ctest rc=$? $(grep -E 'tests passed|tests failed' "$OUT/tc-ctest.log" | tail -1); skipped: $(grep -c '(Skipped)' "$OUT/tc-ctest.log")"
  grep -E '\(Skipped\)|\(Failed\)' "$OUT/tc-ctest.log" | tee -a "$summary" | head -20
  for c in "10 2048 64" "13600 128 32" "500 2048 64" "4 32768 32" "2 32768 64" "64 1024 128" "64 1024 128 --causal"; do
    set -- $c
    "$ft" run --auto --B $1 --N $2 --d $3 ${4:-} --check --time-cap 0.3 2>&1 | grep -E "^(config|check|time|choice|chosen)" | tr '\n' ' ' | sed "s/^/auto B=$1 N=$2 d=$3 ${4:-}: /" | tee -a "$summary"; echo | tee -a "$summary"
  done
fi
if [[ "$args" != *" --no-sdpa "* ]]; then
  cfgs=$("$ft" list --json | python3 -c 'import json,sys; print(",".join(c["name"] for c in json.load(sys.stdin)["kernels"] if c["name"].startswith("mma_")))' 2>/dev/null)
  (cd "$root" && timeout 300 python3 benchmarks/sdpa_compare.py --flashtune "$ft" --time-cap 0.2 --configs "$cfgs" \
     --out "$OUT/tc-sdpa.json" > "$OUT/tc-sdpa.md" 2>&1)
  say "sdpa rc=$?"; tail -12 "$OUT/tc-sdpa.md" | tee -a "$summary"
fi
say "total: $(( $(date +%s) - start )) s"
