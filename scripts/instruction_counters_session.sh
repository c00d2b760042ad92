#!/usr/bin/env bash
# One device call: build the full kernel set, run every test on the GPU, then tune the eight
# workloads of configs/workloads/instruction_counters.json exhaustively (tf32: every config) with
# the counters, instruction counts per pipe included, into $OUT/nvidia-h200-instructions.json.
# Usage: OUT=dir bash scripts/instruction_counters_session.sh   (results: summary.txt, ctest.log,
# tune.log, the profile)
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
OUT="${OUT:-$root/device-out}"; mkdir -p "$OUT"
build=/tmp/flashtune-counters
summary="$OUT/summary.txt"
say() { echo "$*" | tee -a "$summary"; }
say "== $(nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader) =="
start=$(date +%s)
cmake -S "$root" -B "$build" -G Ninja -DFLASHTUNE_BUILD_BENCH=OFF -DPython3_EXECUTABLE="$(command -v python3)" \
  -DFLASHTUNE_GIT_COMMIT="${COMMIT:-unknown}" > "$OUT/ctest.log" 2>&1 &&
  cmake --build "$build" -j"$(nproc)" >> "$OUT/ctest.log" 2>&1 || { say "build failed"; tail -40 "$OUT/ctest.log"; exit 2; }
say "build: $(( $(date +%s) - start )) s"
t=$(date +%s)
(cd "$build" && timeout 240 ctest -j8 --output-on-failure >> "$OUT/ctest.log" 2>&1)
say "ctest rc=$? $(grep -E 'tests passed|tests failed' "$OUT/ctest.log" | tail -1) $(( $(date +%s) - t )) s"
grep -E '^\s+[0-9]+ - .*\(Failed|Timeout|SEGFAULT\)' "$OUT/ctest.log" | tee -a "$summary"
t=$(date +%s)
profile="$OUT/nvidia-h200-instructions.json"
(cd "$root" && timeout "${TUNE_LIMIT_S:-360}" "$build/app/flashtune" tune --workloads configs/workloads/instruction_counters.json \
   --precision tf32 --time-cap 0.2 --profile "$profile" > "$OUT/tune.log" 2>&1)
say "tune rc=$? $(( $(date +%s) - t )) s: $(tail -1 "$OUT/tune.log")"
say "total: $(( $(date +%s) - start )) s"
