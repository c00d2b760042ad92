#!/usr/bin/env bash
# compute-sanitizer on every kernel family: memcheck, racecheck, initcheck and synccheck on every
# compiled (variant, d, layout) of the full build (the tensor-core mma_3xtf32 / mma_1xtf32 included),
# each on two workloads that reach the masked paths: odd N causal (B=2 N=77) and odd N non-causal
# (B=3 N=33, a single partial tile). Each run verifies the output (--check) and skips timing.
# Per (variant, d, layout) it takes the config with the largest tile (most shared memory, longest
# loops); PICK=all takes every compiled config instead (hours).
# Writes $OUT/sanitize-summary.txt (one line per run and the totals) and $OUT/sanitize/<run>.log.
# Needs the GPU machine (nvcc 13, compute-sanitizer on PATH); builds like scripts/tc_check.sh.
# Usage: OUT=dir [VARIANTS='regtile_2d mma_3xtf32'] [TOOLS='memcheck racecheck'] [PICK=largest|all]
#        bash scripts/sanitize_kernels.sh
# Exit 0 when every run reports 0 errors and 0 hazards, 1 otherwise, 2 when the build fails.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
OUT="${OUT:-$root/device-out}"
mkdir -p "$OUT/sanitize"
build="${BUILD:-/tmp/flashtune-sanitize}"
summary="$OUT/sanitize-summary.txt"
tools="${TOOLS:-memcheck racecheck initcheck synccheck}"
pick="${PICK:-largest}"
per_run_timeout="${RUN_TIMEOUT:-300}"
: > "$summary"
say() { echo "$*" | tee -a "$summary"; }
export PATH=/usr/local/cuda/bin:$PATH

say "== $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || echo 'no nvidia-smi') =="
say "== $(compute-sanitizer --version 2>/dev/null | tail -1) ; commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown) =="
start=$(date +%s)
# -lineinfo is already on for the kernels (kernels/CMakeLists.txt): reports name source lines.
cmake -S "$root" -B "$build" -G Ninja -DFLASHTUNE_SMALL_KERNEL_SET=OFF -DFLASHTUNE_BUILD_BENCH=OFF \
  -DFLASHTUNE_BUILD_TESTS=OFF > "$OUT/sanitize-build.log" 2>&1 &&
  cmake --build "$build" -j"$(nproc)" --target flashtune >> "$OUT/sanitize-build.log" 2>&1 || {
  say "build failed (see sanitize-build.log)"; grep -m20 -B2 -A8 "error" "$OUT/sanitize-build.log"; exit 2; }
say "build: $(( $(date +%s) - start )) s"
ft="$build/app/flashtune"

# variant d layout Br Bc precision, one line per config to run.
configs=$("$ft" list --json | PICK="$pick" VARIANTS="${VARIANTS:-}" python3 -c '
import json, os, sys
kernels = json.load(sys.stdin)["kernels"]
want = set(os.environ["VARIANTS"].split())
chosen = {}
for k in kernels:
    if want and k["variant"] not in want:
        continue
    key = (k["variant"], k["d"], k["layout"]) if os.environ["PICK"] != "all" else k["name"]
    size = k["Br"] * k["Bc"]
    if key not in chosen or size > chosen[key]["Br"] * chosen[key]["Bc"]:
        chosen[key] = k
for k in sorted(chosen.values(), key=lambda k: (k["variant"], k["d"], k["layout"], k["Br"], k["Bc"])):
    print(k["variant"], k["d"], k["layout"], k["Br"], k["Bc"], k["precision"])
')
[ -n "$configs" ] || { say "no compiled config matches VARIANTS='${VARIANTS:-}'"; exit 2; }
say "configs: $(echo "$configs" | wc -l) (pick: $pick); tools: $tools; workloads: B=2 N=77 causal, B=3 N=33"

runs=0 clean=0 dirty=0
while read -r variant d layout br bc precision; do
  for shape in "2 77 --causal" "3 33 "; do
    set -- $shape
    B=$1 N=$2 causal=${3:-}
    for tool in $tools; do
      name="${tool}-${variant}-d${d}-${br}x${bc}-${layout}-B${B}-N${N}${causal:+-causal}"
      log="$OUT/sanitize/$name.log"
      extra=()
      # racecheck reports shared-memory hazards only with this; synccheck/initcheck need nothing.
      [ "$tool" = racecheck ] && extra=(--racecheck-report all)
      [ "$tool" = initcheck ] && extra=(--track-unused-memory)
      timeout "$per_run_timeout" compute-sanitizer --tool "$tool" "${extra[@]}" --error-exitcode 9 \
        "$ft" run --variant "$variant" --precision "$precision" --d "$d" --Br "$br" --Bc "$bc" --layout "$layout" \
        --B "$B" --N "$N" $causal --check --no-time > "$log" 2>&1
      rc=$?
      # "ERROR SUMMARY: 0 errors"; racecheck: "RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)".
      result=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$log" | tail -1)
      check=$(grep -E "^check" "$log" | head -1 | tr -s ' ')
      runs=$((runs + 1))
      if [ "$rc" -eq 0 ] && echo "$result" | grep -qE "(ERROR SUMMARY: 0 errors|0 hazards displayed \(0 errors, 0 warnings\))"; then
        clean=$((clean + 1)); verdict=clean
      else
        dirty=$((dirty + 1)); verdict="NOT CLEAN (rc=$rc)"
      fi
      say "$(printf '%-10s %-44s %-16s %s | %s | %s' "$tool" "$variant/d$d/br${br}xbc${bc}/$layout" "B=$B N=$N${causal:+ causal}" "$verdict" "${result:-no summary line}" "${check:-no check line}")"
    done
  done
done <<< "$configs"
say "total: $runs runs, $clean clean, $dirty not clean, $(( $(date +%s) - start )) s"
[ "$dirty" -eq 0 ]
