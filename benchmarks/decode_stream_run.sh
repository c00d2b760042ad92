#!/bin/bash
# Device run for issue 26's streaming work: build, GPU tests, sanitizer, flag variants, SDPA compare.
set -o pipefail
export PATH=/usr/local/cuda/bin:$PATH
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv > $OUT/gpu.txt
T0=$(date +%s)
cmake --preset small -B /tmp/b -G Ninja -DFLASHTUNE_PYTHON=OFF > /tmp/cfg.log 2>&1 || { tail -20 /tmp/cfg.log; exit 1; }
cmake --build /tmp/b -j16 --target decode_bench kernels_decode_test > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
echo "build $(( $(date +%s) - T0 )) s"
B=/tmp/b/benchmarks/decode_bench
SH=${SHAPES:-'1,32,8,1,32768,128;1,12,12,1,65536,64;1,32,8,1,16384,128;1,32,8,1,65536,128;1,32,8,4,16384,128;1,32,8,4,65536,128;1,32,32,1,4096,128;1,32,32,1,8192,128;1,32,32,1,16384,128;4,32,8,4,16384,128'}
i=0
for f in ${FLAGS:-0 5 1 4 7 0}; do
  i=$((i + 1))
  if [ "$f" = "-" ]; then env -u FLASHTUNE_DECODE_FLAGS $B --dtype bf16 --shapes "$SH"; else FLASHTUNE_DECODE_FLAGS=$f $B --dtype bf16 --shapes "$SH"; fi | sed "s/^{/{\"flags\": \"$i:$f\", /" >> $OUT/flags.jsonl
done
echo "bench $(( $(date +%s) - T0 )) s"
timeout ${TEST_S:-120} /tmp/b/tests/kernels_decode_test > $OUT/test.txt 2>&1; echo "test rc $?"; tail -6 $OUT/test.txt
echo "test $(( $(date +%s) - T0 )) s"
if [ -n "$SANITIZE" ]; then
  for tool in memcheck racecheck; do
    FLASHTUNE_KERNEL_FILTER=decode/d128/br16xbc32/swizzled/bf16/s2 timeout 70 compute-sanitizer --tool $tool \
      /tmp/b/tests/kernels_decode_test --gtest_filter=KernelsDecode.StridedOperandsMatchTheDenseLaunch > $OUT/sanitizer-$tool.txt 2>&1
    echo "$tool rc $?"; tail -3 $OUT/sanitizer-$tool.txt
  done
fi
if [ -n "$COMPARE" ]; then
  PYTHONUNBUFFERED=1 timeout 150 python3 benchmarks/decode_compare.py --bench $B --dtype bf16 --anchors-only --out $OUT/compare.json > $OUT/compare.md 2>&1
  echo "compare rc $?"; cat $OUT/compare.md
fi
python3 - $OUT/flags.jsonl <<'PY'
import json, sys, collections
best = collections.defaultdict(dict)
for l in open(sys.argv[1]):
    if not l.startswith('{'): continue
    r = json.loads(l)
    k = (r['batch'], r['q_heads'], r['kv_heads'], r['nq'], r['keys'], r['d'])
    # the repeated flags 0 pass keeps both: first as 0, second as 0b
    f = r['flags']
    seen = best[k]
    cur = seen.get(f)
    if cur is None or r['median_ms'] < cur[0]:
        seen[f] = (r['median_ms'], r['copy_fraction'], '', r['config'][-12:], r['splits'])
print('shape | ' + ' | '.join('flags ' + f for f in sorted(next(iter(best.values())).keys())))
for k, v in best.items():
    print(k, ' | '.join('%s %.4f (%.0f%%) s%d' % (f, v[f][0], 100 * v[f][1], v[f][4]) for f in sorted(v)))
PY
