#!/usr/bin/env bash
# wgmma16's row sums on the tensor pipe (P times a tile of ones) against the FADD row sums, in one
# device call: two builds of the tree (FLASHTUNE_WGMMA_ROW_SUMS 1 and 0), the wgmma16 GPU tests on
# the first, then each case's config timed on both builds in turns (L2 flushed, median), twice.
# Results in $OUT/summary.txt. Usage: OUT=dir bash scripts/wgmma16_row_sums_check.sh
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
OUT="${OUT:-$root/device-out}"; mkdir -p "$OUT"
sum="$OUT/summary.txt"
say() { echo "$*" | tee -a "$sum"; }
say "== $(nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader) =="
build() {  # dir, value
  cmake -S "$root" -B "$1" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DFLASHTUNE_PTXAS_VERBOSE=ON \
    -DCMAKE_CUDA_FLAGS="-DFLASHTUNE_WGMMA_ROW_SUMS=$2" > "$OUT/build-$2.log" 2>&1 &&
    cmake --build "$1" -j8 >> "$OUT/build-$2.log" 2>&1
}
build /tmp/ft-rs1 1 & build /tmp/ft-rs0 0 & wait
for v in 1 0; do
  say "build $v: $(tail -1 "$OUT/build-$v.log" | cut -c1-80); spill lines: $(grep -cE '[1-9][0-9]* bytes spill (stores|loads)' "$OUT/build-$v.log")"
done
gzip -f "$OUT"/build-*.log
(cd /tmp/ft-rs1 && timeout 200 ctest -j8 --timeout 150 -R "Wgmma16|KernelTraits|Decode|Persistent" > "$OUT/ctest.log" 2>&1)
say "ctest (row sums on): $(grep -E 'tests passed|tests failed' "$OUT/ctest.log" | tail -1)"
grep -A20 'The following tests FAILED' "$OUT/ctest.log" | head -20 | tee -a "$sum"
cases=(
  "t30 2 32768 64 - wgmma16/d64/br192xbc128/swizzled/bf16/s2"
  "h16k 16 4096 64 - wgmma16/d64/br192xbc128/swizzled/bf16/s2"
  "t22 500 2048 64 - wgmma16/d64/br192xbc128/swizzled/bf16/s2/pe"
  "t10 10 2048 64 - wgmma16/d64/br192xbc128/swizzled/bf16/s2"
  "t11 13600 128 32 - wgmma16/d32/br128xbc128/swizzled/bf16/s2/pe"
  "t29 4 32768 32 - wgmma16/d32/br192xbc128/swizzled/bf16/s2"
  "n1k 64 1024 128 - wgmma16/d128/br128xbc128/swizzled/bf16/s2/pe"
  "n1kc 64 1024 128 c wgmma16/d128/br128xbc64/swizzled/bf16/s3"
  "n1kc 64 1024 128 c wgmma16/d128/br128xbc128/swizzled/bf16/s3/ov/pp"
  "n1999c 24 1999 64 c wgmma16/d64/br192xbc128/swizzled/bf16/s2"
)
for c in "${cases[@]}"; do
  read -r name B N d causal cfg <<< "$c"
  extra=(); [ "$causal" = c ] && extra=(--causal)
  line="$name $cfg:"
  for round in 1 2; do
    for v in 1 0; do
      ms=$(/tmp/ft-rs$v/app/flashtune run --config "$cfg" --dtype bf16 --B "$B" --N "$N" --d "$d" "${extra[@]}" --check \
             --time-cap 0.5 --json 2>/dev/null | python3 -c "
import json,sys
t=sys.stdin.read(); i=t.find('{'); j=json.loads(t[i:])
r=j['results'][0] if 'results' in j else j
tm=r.get('timing') or r.get('time') or {}
chk=r.get('verify') or r.get('check') or {}
print('%.4f(%s)'%(tm.get('median_ms',float('nan')), ('%.1e'%chk['rel_l2']) if 'rel_l2' in chk else '?'))" 2>/dev/null)
      line="$line rs$v=$ms"
    done
  done
  say "$line"
done
