#!/usr/bin/env bash
# One call on a GPU machine for the decode family: build its test and bench (small kernel set),
# run the correctness test, sweep the split count on the anchors' decode shapes (bf16), and time
# every decode config beside SDPA's back ends on the decode shapes (bf16, fp32).
# Results in $OUT: decode-test.log, decode-test.json, bench-bf16-sweep.jsonl, compare-*.json|md, summary.txt.
# Usage: OUT=dir bash scripts/decode_check.sh [--no-test] [--no-sdpa] [--quick]
#   --quick: the test on the s3 configs only (every 16-bit path and the combine), no split sweep,
#   the SDPA comparison on the anchors' shapes only.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
OUT="${OUT:-$root/decode-out}"; mkdir -p "$OUT"
build=/tmp/flashtune-decode
summary="$OUT/summary.txt"
say() { echo "$*" | tee -a "$summary"; }
say "== $(nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader) =="
start=$(date +%s)
cmake -S "$root" -B "$build" -G Ninja -DFLASHTUNE_SMALL_KERNEL_SET=ON -DFLASHTUNE_BUILD_BENCH=ON \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 > "$OUT/build.log" 2>&1 &&
  cmake --build "$build" -j"$(nproc)" --target kernels_decode_test decode_bench >> "$OUT/build.log" 2>&1 ||
  { say "build failed"; tail -30 "$OUT/build.log" | tee -a "$summary"; exit 2; }
say "build: $(( $(date +%s) - start )) s"
if [[ " $* " != *" --no-test "* ]]; then
  filter=""; [[ " $* " == *" --quick "* ]] && filter=s3
  FLASHTUNE_KERNEL_FILTER=$filter FLASHTUNE_TEST_REPORT="$OUT/decode-test.json" timeout 240 "$build/tests/kernels_decode_test" > "$OUT/decode-test.log" 2>&1
  say "test rc=$? $(grep -E '^\[  (PASSED|FAILED)' "$OUT/decode-test.log" | tr '\n' ' ')"
  grep -E "worst rel L2" "$OUT/decode-test.log" | tee -a "$summary"
  grep -E "Failure|rel_l2 " "$OUT/decode-test.log" | head -20 | tee -a "$summary"
fi
say "test done: $(( $(date +%s) - start )) s"
anchors="1,32,32,1,8192,128;8,32,32,1,4096,128;1,32,8,1,32768,128;16,32,8,1,8192,128;64,12,12,1,1024,64;4,32,8,4,16384,128;1,12,12,1,65536,64"
quick=""; [[ " $* " == *" --quick "* ]] && quick=--anchors-only
if [ -z "$quick" ]; then
  timeout 150 "$build/benchmarks/decode_bench" --dtype bf16 --sweep --shapes "$anchors" > "$OUT/bench-bf16-sweep.jsonl" 2>&1
  say "bench bf16 sweep rc=$?"
fi
say "bench done: $(( $(date +%s) - start )) s"
if [[ " $* " != *" --no-sdpa "* ]]; then
  for dt in bf16 fp32; do
    (cd "$root" && timeout 200 python3 benchmarks/decode_compare.py --bench "$build/benchmarks/decode_bench" \
       --dtype $dt $quick --out "$OUT/compare-$dt.json" > "$OUT/compare-$dt.md" 2> "$OUT/compare-$dt.err")
    say "compare $dt rc=$?"; cat "$OUT/compare-$dt.md" | tee -a "$summary"; tail -3 "$OUT/compare-$dt.err" >> "$summary"
  done
fi
say "total: $(( $(date +%s) - start )) s"
