#!/usr/bin/env bash
# One device call: a kernel change against its baseline on the same GPU, same run. The working
# tree is the change; BASE_FILES=dir holds the baseline's versions of the changed files at their
# repository paths (e.g. `mkdir -p dir/kernels && git show HEAD~1:kernels/x.cuh > dir/kernels/x.cuh`,
# untracked and not ignored, so that it travels with the tree). Builds both (sm_90, the app only
# for the baseline; the whole tree with ptxas verbose for the change), runs ctest -R "$CTEST_REGEX"
# on the change, then times each bf16 SDPA-comparison case's best config of $BEST (an earlier
# sdpa_compare --out) twice per build, interleaved, with SDPA beside the change's first round.
# Results in $OUT: summary.txt, build.log (spills, wgmma serialization), ctest.log,
# base{1,2}.json, new{1,2}.json; the per-case table (medians, the change's speedup over the
# faster baseline round, its ratios to FLASH and CUDNN) at the end of the summary.
# Usage: OUT=dir BASE_FILES=dir BEST=benchmarks/results/h100-sdpa-compare-wgmma.json
#        [CTEST_REGEX=KernelsWgmma16] bash scripts/kernel_ab_check.sh
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"; cd "$root"
OUT="${OUT:?OUT=dir}"; BASE_FILES="${BASE_FILES:?BASE_FILES=dir}"; BEST="${BEST:?BEST=json}"
mkdir -p "$OUT"; S="$OUT/summary.txt"
say() { echo "$*" | tee -a "$S"; }
t0=$(date +%s); since() { echo "$(( $(date +%s) - t0 )) s"; }
export PATH=/usr/local/cuda/bin:$PATH
say "== $(nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader) =="
base=/tmp/flashtune-ab-base; rm -rf "$base"; mkdir -p "$base"
tar -C "$root" --exclude='./build*' -cf - . | tar -C "$base" -xf -
cp -r "$BASE_FILES"/. "$base"/
say "baseline files: $(cd "$BASE_FILES" && find . -type f | sed 's|^\./||' | tr '\n' ' ')"
( cmake -S "$base" -B /tmp/flashtune-ab-bb -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
    -DFLASHTUNE_PYTHON=OFF -DFLASHTUNE_BUILD_TESTS=OFF -DFLASHTUNE_BUILD_BENCH=OFF &&
  cmake --build /tmp/flashtune-ab-bb -j8 --target flashtune ) > /tmp/flashtune-ab-base.log 2>&1 &
bpid=$!
{ cmake -S . -B /tmp/flashtune-ab-bn -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
    -DFLASHTUNE_PTXAS_VERBOSE=ON -DPython3_EXECUTABLE="$(command -v python3)" &&
  cmake --build /tmp/flashtune-ab-bn -j16; } > "$OUT/build.log" 2>&1
say "change build rc=$? ($(since)); nonzero spill lines $(grep -cE '[1-9][0-9]* bytes spill' "$OUT/build.log"); wgmma serialization warnings $(grep -ciE 'C75|serializ' "$OUT/build.log")"
wait $bpid; say "baseline build rc=$? ($(since))"
(cd /tmp/flashtune-ab-bn && timeout 300 ctest -R "${CTEST_REGEX:-KernelsWgmma16}" --output-on-failure > "$OUT/ctest.log" 2>&1)
say "ctest -R ${CTEST_REGEX:-KernelsWgmma16} rc=$? ($(since)): $(grep -E 'tests passed' "$OUT/ctest.log")"
for r in 1 2; do
  python3 benchmarks/sdpa_compare.py --flashtune /tmp/flashtune-ab-bb/app/flashtune --dtype bf16 --best-only "$BEST" \
    --skip-sdpa --no-check --time-cap 0.3 --out "$OUT/base$r.json" > /tmp/flashtune-ab-base$r.md 2>&1
  sdpa=--skip-sdpa; [ $r = 1 ] && sdpa=
  python3 benchmarks/sdpa_compare.py --flashtune /tmp/flashtune-ab-bn/app/flashtune --dtype bf16 --best-only "$BEST" \
    $sdpa --time-cap 0.3 --out "$OUT/new$r.json" > /tmp/flashtune-ab-new$r.md 2>&1
done
python3 - "$OUT" <<'PY' | tee -a "$S"
import json, sys
out = sys.argv[1]
def cases(name):
    return {c["case"]: c for c in json.load(open(f"{out}/{name}.json"))["cases"]}
def ms(c):
    return c["best"]["time"]["median_ms"] if c.get("best") else float("nan")
b1, b2, n1, n2 = (cases(n) for n in ("base1", "base2", "new1", "new2"))
print("case             config                                          base ms (2 rounds)  change ms (2 rounds)  speedup  FLASH   CUDNN")
for k, c in n1.items():
    base, new = min(ms(b1[k]), ms(b2[k])), min(ms(c), ms(n2[k]))
    s = c.get("sdpa", {})
    fl = s.get("flash", {}).get("median_ms", float("nan")) / new
    cu = s.get("cudnn", {}).get("median_ms", float("nan")) / new
    print(f"{k:16s} {c['best']['config']:47s} {ms(b1[k]):.4f} {ms(b2[k]):.4f}      {ms(c):.4f} {ms(n2[k]):.4f}       "
          f"{base / new:.3f}   {fl:.2f}x  {cu:.2f}x")
PY
say "total $(since)"
