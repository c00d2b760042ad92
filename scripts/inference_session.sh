#!/usr/bin/env bash
# One device call for issue 26 (and wgmma16's inference operands): the small kernel set with the
# Python module and the benchmarks, kernels_inference_test (every family on KV-cache and grouped
# shapes), the wgmma16 and decode tests, compute-sanitizer (memcheck, racecheck, synccheck) on one
# config per family, d and dtype on a grouped KV-cache shape, the generation benchmark
# (benchmarks/generate_e2e.py) and the decode comparison beside SDPA (bf16 and fp32, every shape).
# Results in $OUT (8 files): summary.txt, tests.log, sanitize.log, generate.json, generate.log,
# decode-{bf16,fp32}.json, decode.md. Usage: OUT=dir bash scripts/inference_session.sh
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
OUT="${OUT:-$root/device-out}"; mkdir -p "$OUT"
b="${BUILD:-/tmp/flashtune-inference-session}"
summary="$OUT/summary.txt"
say() { echo "$*" | tee -a "$summary"; }
start=$(date +%s)
since() { echo "$(( $(date +%s) - start )) s"; }
say "== $(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader) commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null) =="
py="$(command -v python3)"
{ cmake -S "$root" -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
    -DFLASHTUNE_SMALL_KERNEL_SET=ON -DPython3_EXECUTABLE="$py" &&
  cmake --build "$b" -j"$(nproc)"; } > "$OUT/tests.log" 2>&1 || { say "build failed"; grep error "$OUT/tests.log" | head; exit 2; }
say "build ($(since))"
for t in kernels_inference_test kernels_wgmma16_test kernels_decode_test; do
  FLASHTUNE_TEST_QUICK=${QUICK:-0} timeout 200 "$b/tests/$t" >> "$OUT/tests.log" 2>&1
  say "$t rc=$? ($(since)): $(grep -cE '^\[       OK' "$OUT/tests.log") OK so far; $(grep -E '^\[  FAILED  \] [A-Z]' "$OUT/tests.log" | sort -u | tr '\n' ' ')"
done
grep -E "worst rel L2" "$OUT/tests.log" | tee -a "$summary"
ft="$b/app/flashtune"
configs=$("$ft" list --json | "$py" -c '
import json, sys
chosen = {}
for k in json.load(sys.stdin)["kernels"]:
    if k["variant"] in ("decode", "wgmma16", "mma16"):
        chosen.setdefault((k["variant"], k["d"], k["dtype"]), k["name"])
print("\n".join(f"{n} {k[1]} {k[2]}" for k, n in sorted(chosen.items())))')
: > "$OUT/sanitize.log"
while read -r name d dtype; do
  nq=4; [[ $name == decode/* ]] || nq=77
  for tool in memcheck racecheck synccheck; do
    extra=(); [ $tool = racecheck ] && extra=(--racecheck-report all)
    timeout 120 compute-sanitizer --tool $tool "${extra[@]}" --error-exitcode 9 "$ft" run --config "$name" --dtype "$dtype" \
      --B 2 --heads 8 --kv-heads 2 --N $nq --kv-len 1001 --d "$d" --causal --check --no-time > /tmp/san.log 2>&1
    rc=$?
    line="$tool $name Nq=$nq kv=1001 Hq=8 Hkv=2 causal rc=$rc | $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' /tmp/san.log | tail -1) | $(grep -E '^check' /tmp/san.log | head -1)"
    echo "$line" >> "$OUT/sanitize.log"
    [ $rc -ne 0 ] && tail -20 /tmp/san.log >> "$OUT/sanitize.log"
  done
done <<< "$configs"
say "sanitize ($(since)): $(grep -c ' rc=0 ' "$OUT/sanitize.log") clean of $(grep -cE '^(memcheck|racecheck|synccheck) ' "$OUT/sanitize.log")"
grep -E '^(memcheck|racecheck|synccheck) ' "$OUT/sanitize.log" | grep -v ' rc=0 ' | tee -a "$summary"
export PYTHONPATH="$b/python" PYTHONUNBUFFERED=1
(cd "$root" && timeout "${GEN_TIMEOUT:-200}" "$py" benchmarks/generate_e2e.py --json "$OUT/generate.json" > "$OUT/generate.log" 2>&1)
say "generate rc=$? ($(since))"; tail -20 "$OUT/generate.log" | tee -a "$summary"
: > "$OUT/decode.md"
for dt in bf16 fp32; do
  (cd "$root" && timeout "${DECODE_TIMEOUT:-150}" "$py" benchmarks/decode_compare.py --bench "$b/benchmarks/decode_bench" \
     --dtype $dt --out "$OUT/decode-$dt.json" >> "$OUT/decode.md" 2>> "$summary")
  say "decode $dt rc=$? ($(since))"
done
cat "$OUT/decode.md" >> "$summary"
say "total $(since)"
