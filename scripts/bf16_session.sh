#!/usr/bin/env bash
# One device call for the 16-bit family (issue 24): the full build, every test for real, the bf16
# sweep of the seed cases, the grid and the unseen set (with CUPTI counters; profiles and journals
# come back as profiles.tgz), and the SDPA comparison in bf16: 7 files under $OUT.
# Usage: OUT=dir bash scripts/bf16_session.sh [tune seconds, default 150]
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
OUT="${OUT:-$root/device-out}"; mkdir -p "$OUT"
tune_s="${1:-150}"
prof=/tmp/flashtune-bf16-profiles; mkdir -p "$prof"
b=/tmp/flashtune-bf16
summary="$OUT/summary.txt"
say() { echo "$*" | tee -a "$summary"; }
say "== $(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader) commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null) =="
start=$(date +%s)
( nvcc -O3 -arch=sm_90 -o /tmp/mma_sync_peak "$root/benchmarks/mma_sync_peak.cu" > "$OUT/peak.txt" 2>&1 ) &
{ cmake -S "$root" -B "$b" -G Ninja -DFLASHTUNE_PYTHON=OFF -DPython3_EXECUTABLE="$(command -v python3)" &&
  cmake --build "$b" -j"$(nproc)"; } > "$OUT/build-ctest.log" 2>&1 || { say "build failed"; tail -30 "$OUT/build-ctest.log"; exit 2; }
say "build: $(( $(date +%s) - start )) s; spill warnings: $(grep -c 'bytes spill' "$OUT/build-ctest.log")"
(cd "$b" && timeout 120 ctest -j8 --timeout 90 --output-on-failure >> "$OUT/build-ctest.log" 2>&1)
say "ctest rc=$? $(grep -E 'tests passed|tests failed' "$OUT/build-ctest.log" | tail -1)"
grep -A40 'The following tests FAILED' "$OUT/build-ctest.log" | head -40 | tee -a "$summary"
wait
timeout 60 /tmp/mma_sync_peak bf16 >> "$OUT/peak.txt" 2>&1
say "mma.sync bf16 peak: $(grep -E '^bf16 m16n8k16' "$OUT/peak.txt" | sort -k9 -n -r | head -1)"
ft="$b/app/flashtune"
w=configs/workloads
timeout "$tune_s" "$ft" tune --workloads $w/seed_cases_bf16.json $w/grid_bf16.json --profile "$prof/h100-bf16.json" \
  --time-cap 0.25 > "$OUT/tune.log" 2>&1
say "tune bf16 rc=$? $(tail -1 "$OUT/tune.log")"
timeout 50 "$ft" tune --workloads $w/unseen_bf16.json --profile "$prof/h100-unseen-bf16.json" --time-cap 0.25 >> "$OUT/tune.log" 2>&1
say "tune unseen bf16 rc=$? $(tail -1 "$OUT/tune.log")"
peak_arg=()
grep -q '^bf16 m16n8k16' "$OUT/peak.txt" && peak_arg=(--mma-peak-tflops "$OUT/peak.txt")
(cd "$root" && timeout 130 python3 benchmarks/sdpa_compare.py --flashtune "$ft" --dtype bf16 --time-cap 0.15 \
   "${peak_arg[@]}" --out "$OUT/sdpa-bf16.json" > "$OUT/sdpa-bf16.md" 2>&1)
say "sdpa rc=$?"; tail -16 "$OUT/sdpa-bf16.md" | tee -a "$summary"
tar czf "$OUT/profiles.tgz" -C "$prof" . ; say "profiles: $(ls "$prof" | tr "\n" " ")"
say "total: $(( $(date +%s) - start )) s"
