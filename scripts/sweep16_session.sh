#!/usr/bin/env bash
# One device call: the bf16 sweep over every compiled 16-bit family (mma16 and, on sm_90, wgmma16)
# of the seed cases, the grid and the unseen set, with CUPTI counters, into fresh profiles that come
# back as profiles.tgz. Resumable: TUNE_S bounds each tune, a rerun continues from the journal.
# The unseen set is measured without counters (the fit scores it by time alone), and not at all
# with UNSEEN_S=0.
# Usage: OUT=dir [TUNE_S=240] [UNSEEN_S=90] bash scripts/sweep16_session.sh
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
OUT="${OUT:-$root/device-out}"; mkdir -p "$OUT"
b="${BUILD:-/tmp/flashtune-sweep16}"
prof=/tmp/flashtune-sweep16-profiles; mkdir -p "$prof"
summary="$OUT/summary.txt"
say() { echo "$*" | tee -a "$summary"; }
start=$(date +%s)
gpu="$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
tag=$(case "$gpu" in *H200*) echo h200;; *H100*) echo h100;; *) echo gpu;; esac)
say "== $(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader) commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null) =="
{ cmake -S "$root" -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DFLASHTUNE_PYTHON=OFF \
    -DFLASHTUNE_BUILD_TESTS=OFF -DFLASHTUNE_BUILD_BENCH=OFF &&
  cmake --build "$b" -j"$(nproc)" --target flashtune; } > "$OUT/build.log" 2>&1 || { say "build failed"; tail -30 "$OUT/build.log"; exit 2; }
say "build: $(( $(date +%s) - start )) s"
ft="$b/app/flashtune"
w="$root/configs/workloads"
timeout "${TUNE_S:-240}" "$ft" tune --workloads "$w/seed_cases_bf16.json" "$w/grid_bf16.json" --profile "$prof/$tag-bf16.json" \
  --time-cap 0.25 > "$OUT/tune.log" 2>&1
say "tune bf16 rc=$? ($(( $(date +%s) - start )) s) $(tail -1 "$OUT/tune.log")"
if [ "${UNSEEN_S:-90}" != 0 ]; then
  timeout "${UNSEEN_S:-90}" "$ft" tune --workloads "$w/unseen_bf16.json" --profile "$prof/$tag-unseen-bf16.json" \
    --time-cap 0.25 --no-counters >> "$OUT/tune.log" 2>&1
  say "tune unseen bf16 rc=$? ($(( $(date +%s) - start )) s) $(tail -1 "$OUT/tune.log")"
fi
tar czf "$OUT/profiles.tgz" -C "$prof" .
say "profiles: $(ls "$prof" | tr '\n' ' '); total $(( $(date +%s) - start )) s"
