#!/usr/bin/env bash
# Executed warp instructions (ncu smsp__inst_executed.sum) of one decode split-kernel launch per
# config at 8 x 32 heads x {1024, 4096} keys, Nq 1, one split (256 K/V entries fill the GPU): the
# counts `flashtune fit --decode-instructions` splits into each fp32 config's compiled extras per
# (warp, tile) and per warp of a block (configs/kernels/compiled_instructions.json), and the 16-bit
# reference tile's own issue (model/decode_model.cpp, kReferenceTileWarpInstructions).
# One JSON object a line on stdout (docs/results/h200-decode-instructions.jsonl).
# Usage: benchmarks/decode_instructions.sh <build dir> > counts.jsonl
set -euo pipefail
b="${1:?usage: decode_instructions.sh <build dir>}"
bench="$b/benchmarks/decode_bench"
[ -x "$bench" ] || { echo "decode_instructions.sh: no $bench (build the decode_bench target)" >&2; exit 2; }
command -v ncu > /dev/null || { echo "decode_instructions.sh: ncu not found" >&2; exit 2; }
gpu="$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
for cfg in decode/d128/br1xbc16/swizzled/s2:fp32:128 decode/d128/br4xbc16/swizzled/s2:fp32:128 \
           decode/d128/br16xbc16/swizzled/s2:fp32:128 decode/d64/br1xbc32/swizzled/s2:fp32:64 \
           decode/d64/br4xbc32/swizzled/s2:fp32:64 decode/d64/br16xbc32/swizzled/s2:fp32:64 \
           decode/d128/br16xbc32/swizzled/bf16/s3:bf16:128 decode/d64/br16xbc32/swizzled/bf16/s3:bf16:64; do
  IFS=: read -r name dt d <<< "$cfg"
  for keys in 1024 4096; do
    # Metrics print sorted: grid size, the slowest SM's cycles, the instructions.
    log="$(timeout 120 ncu --kernel-name regex:decode_split_kernel --launch-count 1 \
        --metrics smsp__inst_executed.sum,sm__cycles_elapsed.max,launch__grid_size \
        "$bench" --dtype "$dt" --config "$name" --shapes "8,32,32,1,$keys,$d" 2>&1 || true)"
    values="$( (grep -E "smsp__inst_executed.sum|launch__grid_size|sm__cycles_elapsed.max" <<< "$log" || true) | awk '{print $NF}' | tr -d , | tr '\n' ' ')"
    read -r grid cycles inst <<< "$values" || true
    if [ -z "${inst:-}" ]; then
      echo "decode_instructions.sh: no counts for $name at $keys keys; ncu said:" >&2
      (grep -E "ERR|rror" <<< "$log" || tail -3 <<< "$log") | head -5 >&2
      exit 1
    fi
    echo "{\"gpu\": \"$gpu\", \"config\": \"$name\", \"batch\": 8, \"q_heads\": 32, \"kv_heads\": 32, \"nq\": 1, \"keys\": $keys, \"d\": $d, \"splits\": 1, \"grid\": $grid, \"cycles_max\": $cycles, \"inst_executed\": $inst}"
  done
done
