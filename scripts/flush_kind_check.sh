#!/usr/bin/env bash
# One device call: how a workload's configs rank under the two L2 flushes of the timing harness
# (tuner/timing_harness.h, L2Flush: write leaves the flush's lines dirty, read leaves them clean).
# Builds the app and cli_run_test (sm_90), runs the --l2-flush tests, then times every compiled
# config of the workload for VARIANT and DTYPE with `flashtune run --all-configs`, write and read
# in turns, twice; the table (medians in ms, each config's time over the round's best) ends
# $OUT/summary.txt, the raw JSON in $OUT/{write,read}{1,2}.json.
# Usage: OUT=dir [VARIANT=mma16] [DTYPE=bf16] [SHAPE="--B 594 --N 336 --d 32 --causal"] bash scripts/flush_kind_check.sh
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"; cd "$root"
OUT="${OUT:?OUT=dir}"; mkdir -p "$OUT"; S="$OUT/summary.txt"
say() { echo "$*" | tee -a "$S"; }
t0=$(date +%s)
export PATH=/usr/local/cuda/bin:$PATH
b=/tmp/flashtune-flush
say "== $(nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader) =="
{ cmake -S . -B $b -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DFLASHTUNE_PYTHON=OFF &&
  cmake --build $b -j16 --target flashtune cli_run_test; } > /tmp/flashtune-flush-build.log 2>&1
say "build rc=$? ($(( $(date +%s) - t0 )) s)"
$b/tests/cli_run_test --gtest_filter='CliRun.BadNumbers:CliRunGpu.L2Flush*' > /tmp/flashtune-flush-test.log 2>&1
say "cli_run_test --l2-flush tests rc=$?: $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' /tmp/flashtune-flush-test.log | tr '\n' ' ')"
shape=${SHAPE:---B 594 --N 336 --d 32 --causal}
for r in 1 2; do
  for f in write read; do
    $b/app/flashtune run --all-configs --variant "${VARIANT:-mma16}" --dtype "${DTYPE:-bf16}" $shape --l2-flush $f \
      --time-cap 0.5 --json > "$OUT/$f$r.json" 2>> "$S"
  done
done
python3 - "$OUT" "$shape" <<'PY' | tee -a "$S"
import json, sys
out, shape = sys.argv[1], sys.argv[2]
runs = {}
for f in ("write1", "read1", "write2", "read2"):
    runs[f] = {r["config"]: r["time"]["median_ms"] for r in json.load(open(f"{out}/{f}.json"))["results"] if r.get("time")}
best = {f: min(v.values()) for f, v in runs.items()}
print(f"{shape}: median ms (time over the round's best)")
print(f"{'config':48s} " + " ".join(f"{f:>16s}" for f in runs))
for c in runs["write1"]:
    print(f"{c:48s} " + " ".join(f"{runs[f][c]:.4f} ({runs[f][c] / best[f]:.3f})" for f in runs))
PY
say "total $(( $(date +%s) - t0 )) s"
