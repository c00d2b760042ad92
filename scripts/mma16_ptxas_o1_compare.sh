#!/usr/bin/env bash
# Times the mma16 d = 128 bf16 configs built at ptxas -O3 (the default) against the same source
# built with FLASHTUNE_MMA16_D128_PTXAS_O1 (ptxas -O1 for that instance file: no spill), on the
# d = 128 seed shapes, the two builds alternated twice (A B A B) so that drift hits both. Appends
# the spill lines of the -O1 build and one line per (case, config) to $OUT/summary.txt.
# PHASE=build builds the -O1 tree only, PHASE=time times only (an -O1 tree built before), so that the
# build can run beside another job's; default both.
# Usage: [PHASE=build|time] OUT=dir bash scripts/mma16_ptxas_o1_compare.sh <build dir at -O3, with app/flashtune>
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
base="${1:?usage: mma16_ptxas_o1_compare.sh <build dir at -O3>}"
o1="${BUILD_O1:-/tmp/flashtune-o1}"
summary="$OUT/summary.txt"
say() { echo "$*" | tee -a "$summary"; }
phase="${PHASE:-all}"
if [ "$phase" != time ]; then
{ cmake -S "$root" -B "$o1" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
    -DFLASHTUNE_PTXAS_VERBOSE=ON -DFLASHTUNE_MMA16_D128_PTXAS_O1=ON && cmake --build "$o1" -j"$(nproc)" --target flashtune; } \
  > /tmp/o1-build.log 2>&1
rc=$?
say "mma16 -O1 build rc=$rc; nonzero spill lines in the whole -O1 build: $(grep -cE '[1-9][0-9]* bytes spill (stores|loads)' /tmp/o1-build.log)"
[ $rc -ne 0 ] && { grep -E "error" /tmp/o1-build.log | head -10 | tee -a "$summary"; exit 2; }
fi
[ "$phase" = build ] && exit 0
cases=("n1k_d128:--B 64 --N 1024" "n1k_d128_causal:--B 64 --N 1024 --causal" "n4k_d128:--B 16 --N 4096")
for round in 1 2; do
  for c in "${cases[@]}"; do
    name="${c%%:*}"; args="${c#*:}"
    for build in O3 O1; do
      dir="$base"; [ $build = O1 ] && dir="$o1"
      # shellcheck disable=SC2086
      "$dir/app/flashtune" run --variant mma16 --d 128 --dtype bf16 --all-configs $args --time-cap 0.3 --json \
        > "/tmp/o1-$build-$name-$round.json" 2>/dev/null
    done
  done
done
python3 - "$summary" <<'PY'
import glob, json, statistics, sys
rows = {}
for path in glob.glob("/tmp/o1-*.json"):
    build, case, _ = path[len("/tmp/o1-"):-len(".json")].split("-", 2)
    try:
        doc = json.load(open(path))
    except ValueError:
        continue
    for r in doc.get("results", []):
        if "time" in r:
            rows.setdefault((case, r["config"]), {}).setdefault(build, []).append(r["time"]["median_ms"])
with open(sys.argv[1], "a") as out:
    for (case, cfg), by in sorted(rows.items()):
        if "O3" in by and "O1" in by:
            a, b = statistics.median(by["O3"]), statistics.median(by["O1"])
            line = f"mma16 O1/O3 {case} {cfg}: O3 {a:.4f} ms, O1 {b:.4f} ms, O1 time / O3 time {b / a:.3f}"
            print(line)
            out.write(line + "\n")
PY
