#!/usr/bin/env bash
# What the decode combine kernel costs a call: the bf16 d = 128 s3 config at its default split on
# the 134 MB anchors and two shorter caches, L2 flushed by reads, timed with the combine kernel
# (FLASHTUNE_DECODE_FLAGS=1: evict-first, no cluster), without any combine (17: O is wrong, the
# split kernel alone) and with the combine in the split kernel (5), twice each; one JSON line per
# timing with its "flags". Needs a GPU and a build with benchmarks/decode_bench.
# Usage: benchmarks/decode_combine_cost.sh [build dir] > out.jsonl
set -euo pipefail
b="${1:-build}"
shapes="1,32,32,1,8192,128;1,32,8,1,32768,128;1,32,8,1,16384,128;1,32,32,1,4096,128"
for flags in 1 17 5 1 17; do
  FLASHTUNE_DECODE_FLAGS=$flags "$b/benchmarks/decode_bench" --dtype bf16 --config decode/d128/br16xbc32/swizzled/bf16/s3 \
    --flush read --shapes "$shapes" | sed "s/^{/{\"flags\": $flags, /"
done
