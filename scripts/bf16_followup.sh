#!/usr/bin/env bash
# The second device call of a 16-bit session: rebuild, rerun the tests named in $TESTS, resume an
# interrupted unseen-set tune ($RESUME: a profile whose journal holds the pairs measured so far),
# the SDPA comparison in fp16, and compute-sanitizer memcheck + racecheck on one mma16 config per d.
# Usage: OUT=dir TESTS='regex' RESUME=profiles/unseen/nvidia-h100-bf16.json bash scripts/bf16_followup.sh
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
OUT="${OUT:-$root/device-out}"; mkdir -p "$OUT"
b=/tmp/flashtune-bf16
s="$OUT/summary.txt"
say() { echo "$*" | tee -a "$s"; }
say "== $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader) =="
{ cmake -S "$root" -B "$b" -G Ninja -DFLASHTUNE_PYTHON=OFF -DPython3_EXECUTABLE="$(command -v python3)" &&
  cmake --build "$b" -j"$(nproc)"; } > "$OUT/build.log" 2>&1 || { say "build failed"; tail -30 "$OUT/build.log"; exit 2; }
(cd "$b" && timeout 120 ctest -j8 --timeout 90 -R "${TESTS:-Kernels}" --output-on-failure > "$OUT/ctest.log" 2>&1)
say "ctest rc=$? $(grep -E 'tests passed|tests failed' "$OUT/ctest.log" | tail -1)"
ft="$b/app/flashtune"
if [ -n "${RESUME:-}" ]; then
  timeout 120 "$ft" tune --workloads configs/workloads/unseen_bf16.json --profile "$RESUME" --time-cap 0.25 > "$OUT/tune.log" 2>&1
  say "resume rc=$? $(tail -1 "$OUT/tune.log")"; cp "$RESUME" "$OUT/resumed.json"
fi
(timeout 100 python3 benchmarks/sdpa_compare.py --flashtune "$ft" --dtype fp16 --time-cap 0.15 \
   --out "$OUT/sdpa-fp16.json" > "$OUT/sdpa-fp16.md" 2>&1); say "sdpa fp16 rc=$?"; tail -6 "$OUT/sdpa-fp16.md" | tee -a "$s"
for c in mma16/d32/br128xbc64/swizzled/bf16/s2 mma16/d64/br128xbc64/swizzled/bf16/s3 mma16/d128/br128xbc64/swizzled/bf16/s2/qsmem; do
  d=$(echo "$c" | sed 's|mma16/d\([0-9]*\)/.*|\1|')
  for tool in memcheck racecheck; do
    timeout 60 compute-sanitizer --tool $tool --error-exitcode 9 "$ft" run --config "$c" --dtype bf16 --B 2 --N 321 --d "$d" \
      --causal --check --no-time > "$OUT/san.log" 2>&1
    say "sanitizer $tool $c rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/san.log" | tail -1)"
  done
done
